// Unit tests of the NCCL collective cost model on hand-built fabrics (the numbers the
// topology layer derives for the same boxes: DGX A100 12 x 20 GB/s NVLink = 240, DGX H100
// 18 x 20.6 = 370.8 with NVLS, 8 x NDR ~47 = 376, 4 x EFA ~7.4 = 29.6, PCIe gen4 24).
#include "model/collective.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

using namespace stepcast;

namespace {

CommFabric node(GpuArch arch, int gpus, double bw_GBps, LinkClass link = LinkClass::nvlink, bool nvls = false) {
  CommFabric f;
  f.arch = arch;
  f.intra.ranks = gpus;
  f.intra.link = link;
  f.intra.bw_GBps = bw_GBps;
  f.nvls = nvls;
  return f;
}

CommFabric cluster(CommFabric f, int nodes, double nic_GBps, double latency_us = 0) {
  FabricLevel inter;
  inter.ranks = nodes;
  inter.link = LinkClass::network;
  inter.bw_GBps = nic_GBps;
  inter.latency_us = latency_us;
  f.inter = inter;
  return f;
}

CommFabric dgx_a100() { return node(GpuArch::ampere, 8, 240.0); }
CommFabric dgx_h100() { return node(GpuArch::hopper, 8, 370.8, LinkClass::nvlink, true); }
CommFabric h100_ndr(int nodes) { return cluster(dgx_h100(), nodes, 376.0); }
CommFabric p4d_efa(int nodes) { return cluster(dgx_a100(), nodes, 29.6, 5.0); }
CommFabric pcie4(int gpus) { return node(GpuArch::ada, gpus, 24.0, LinkClass::pcie); }

std::vector<CommFabric> fabrics() {
  return {dgx_a100(), dgx_h100(), h100_ndr(2), h100_ndr(4),
          p4d_efa(2), p4d_efa(3), pcie4(6),    cluster(node(GpuArch::volta, 8, 120.0), 4, 5.0, 25.0)};
}

const std::vector<Collective> kAll = {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter,
                                      Collective::broadcast};

/// Algorithms that can run `c` on `f` (probing with a call).
std::vector<std::string> runnable(Collective c, const CommFabric& f) {
  std::vector<std::string> out = {"auto"};
  for (const auto& a : collective_algorithms()) {
    try {
      collective_cost(c, 1e6, f, a.name);
      out.push_back(a.name);
    } catch (const std::invalid_argument&) {
    }
  }
  return out;
}

}  // namespace

TEST_CASE("collective names round-trip and bad names throw") {
  for (Collective c : kAll) CHECK(parse_collective(name(c)) == c);
  CHECK(name(Collective::all_reduce) == "all_reduce");
  CHECK_THROWS_AS(parse_collective("allreduce"), std::invalid_argument);
}

TEST_CASE("bus bandwidth factors follow nccl-tests") {
  // All-reduce on a ring: each rank sends (and receives) 2(n-1)/n of the buffer, so
  // busbw = algbw x 2(n-1)/n; n = 8 -> 2 x 7 / 8 = 1.75; n = 2 -> 1.
  CHECK(bus_bandwidth_factor(Collective::all_reduce, 8) == doctest::Approx(1.75));
  CHECK(bus_bandwidth_factor(Collective::all_reduce, 2) == doctest::Approx(1.0));
  CHECK(bus_bandwidth_factor(Collective::all_reduce, 16) == doctest::Approx(1.875));
  // All-gather / reduce-scatter: each rank receives (sends) the n-1 shards it lacks:
  // (n-1)/n of S; n = 8 -> 0.875, n = 4 -> 0.75.
  CHECK(bus_bandwidth_factor(Collective::all_gather, 8) == doctest::Approx(0.875));
  CHECK(bus_bandwidth_factor(Collective::reduce_scatter, 4) == doctest::Approx(0.75));
  // Broadcast: every rank receives S once: factor 1.
  CHECK(bus_bandwidth_factor(Collective::broadcast, 8) == doctest::Approx(1.0));
  // A single rank moves nothing.
  CHECK(bus_bandwidth_factor(Collective::all_reduce, 1) == 0.0);
}

TEST_CASE("the algorithm registry lists every variant with its constants") {
  const auto& algos = collective_algorithms();
  REQUIRE(algos.size() == 4);
  std::vector<std::string> names;
  for (const auto& a : algos) {
    names.push_back(a.name);
    CHECK(a.description.size() > 40);
  }
  CHECK(names == std::vector<std::string>{"ring", "tree", "nvls", "hierarchical"});
}

TEST_CASE("a collective on one rank costs nothing") {
  const CommFabric one = node(GpuArch::hopper, 1, 0.0);
  for (Collective c : kAll) {
    const CollectiveCost cost = collective_cost(c, 1e9, one);
    CHECK(cost.time_s == 0.0);
    CHECK(cost.busbw_GBps == 0.0);
  }
  CHECK(collective_cost(Collective::all_reduce, 1e9, one, "ring").time_s == 0.0);
  // Zero bytes move nothing either.
  CHECK(collective_cost(Collective::all_reduce, 0.0, dgx_a100()).time_s == 0.0);
}

TEST_CASE("ineligible or unknown algorithms throw std::invalid_argument") {
  CHECK_THROWS_AS(collective_cost(Collective::all_reduce, 1e6, dgx_a100(), "nvls"),
                  std::invalid_argument);  // no NVLS switch on A100
  CHECK_THROWS_AS(collective_cost(Collective::all_gather, 1e6, dgx_h100(), "tree"),
                  std::invalid_argument);  // tree is all-reduce only
  CHECK_THROWS_AS(collective_cost(Collective::broadcast, 1e6, dgx_h100(), "nvls"), std::invalid_argument);
  CHECK_THROWS_AS(collective_cost(Collective::all_reduce, 1e6, dgx_h100(), "hierarchical"),
                  std::invalid_argument);  // needs two levels
  CHECK_THROWS_AS(collective_cost(Collective::all_reduce, 1e6, pcie4(4), "nvls"), std::invalid_argument);
  CHECK_THROWS_AS(collective_cost(Collective::all_reduce, 1e6, dgx_a100(), "butterfly"), std::invalid_argument);
  CHECK_THROWS_AS(collective_cost(Collective::all_reduce, -1.0, dgx_a100()), std::invalid_argument);
  CommFabric broken = dgx_a100();
  broken.intra.bw_GBps = 0;
  CHECK_THROWS_AS(collective_cost(Collective::all_reduce, 1e6, broken), std::invalid_argument);
  // The registered variants that can run do run.
  CHECK_NOTHROW(collective_cost(Collective::all_reduce, 1e6, h100_ndr(2), "hierarchical"));
  CHECK_NOTHROW(collective_cost(Collective::all_reduce, 1e6, h100_ndr(2), "nvls"));
  CHECK_NOTHROW(collective_cost(Collective::all_reduce, 1e6, dgx_a100(), "tree"));
}

TEST_CASE("more bandwidth is never slower, more bytes never faster") {
  const std::vector<double> sizes = {8, 1024, 65536, 1 << 20, 16 << 20, 1e9, 8e9};
  for (const CommFabric& f : fabrics()) {
    for (Collective c : kAll) {
      for (const std::string& algo : runnable(c, f)) {
        CAPTURE(algo);
        CAPTURE(name(c));
        CAPTURE(f.ranks());
        double previous = 0;
        for (double bytes : sizes) {
          const double t = collective_cost(c, bytes, f, algo).time_s;
          CHECK(t >= previous);
          previous = t;
          CommFabric faster = f;
          faster.intra.bw_GBps *= 1.5;
          if (faster.inter) faster.inter->bw_GBps *= 1.5;
          CHECK(collective_cost(c, bytes, faster, algo).time_s <= t);
          if (f.inter) {
            CommFabric faster_nics = f;
            faster_nics.inter->bw_GBps *= 2;
            CHECK(collective_cost(c, bytes, faster_nics, algo).time_s <= t);
          }
        }
      }
    }
  }
}

TEST_CASE("auto is never slower than any single NCCL algorithm") {
  for (const CommFabric& f : fabrics()) {
    for (double bytes : {8.0, 1048576.0, 1e9}) {
      const double t_auto = collective_cost(Collective::all_reduce, bytes, f).time_s;
      for (const char* a : {"ring", "tree"})
        CHECK(t_auto <= collective_cost(Collective::all_reduce, bytes, f, a).time_s);
    }
  }
  // "hierarchical" is registered but never NCCL's own choice.
  CHECK(collective_cost(Collective::all_reduce, 1e9, h100_ndr(4)).algorithm != "hierarchical");
}

TEST_CASE("ring all-reduce = reduce-scatter + all-gather for large messages") {
  // A ring all-reduce is a ring reduce-scatter followed by a ring all-gather over the same
  // buffer: 2(n-1) steps of S/n each. The bandwidth terms are identical; the all-reduce saves
  // one base latency and one launch, which vanish at 8 GB.
  for (const CommFabric& f : {dgx_a100(), dgx_h100(), h100_ndr(4), p4d_efa(3), pcie4(6)}) {
    const double S = 8e9;
    const double ar = collective_cost(Collective::all_reduce, S, f, "ring").time_s;
    const double rs = collective_cost(Collective::reduce_scatter, S, f, "ring").time_s;
    const double ag = collective_cost(Collective::all_gather, S, f, "ring").time_s;
    // (Across nodes NCCL's x1.4 Simple-ring latency factor makes the all-reduce slightly
    // slower than the two halves; on one node it saves one base latency and one launch.)
    CHECK(ar == doctest::Approx(rs + ag).epsilon(0.03));
    if (!f.inter) CHECK(ar <= rs + ag);
    // Whatever NCCL picks never loses to doing the two halves separately (within the same
    // latency slack).
    CHECK(collective_cost(Collective::all_reduce, S, f).time_s <= 1.03 * (rs + ag));
    // And an all-reduce moves at least what either half moves.
    CHECK(ar >= std::max(rs, ag));
  }
}

TEST_CASE("latency dominates at 8 B, bandwidth at 8 GB") {
  for (const CommFabric& f : fabrics()) {
    const double t8 = collective_cost(Collective::all_reduce, 8, f).time_s;
    const double t16 = collective_cost(Collective::all_reduce, 16, f).time_s;
    CHECK(t16 == doctest::Approx(t8).epsilon(0.01));  // doubling 8 B changes ~nothing
    CHECK(t8 > 5e-6);                                 // and it costs microseconds
    const double big = collective_cost(Collective::all_reduce, 8e9, f).time_s;
    const double bigger = collective_cost(Collective::all_reduce, 16e9, f).time_s;
    CHECK(bigger == doctest::Approx(2 * big).epsilon(0.01));  // linear in bytes
  }
}

TEST_CASE("single-node figures match NCCL's structure") {
  // Ring/Simple busbw = the per-GPU NVLink rate: 12 x 20 = 240 on A100.
  const CollectiveCost a100 = collective_cost(Collective::all_reduce, 8e9, dgx_a100());
  CHECK(a100.algorithm == "ring");
  CHECK(a100.protocol == "Simple");
  CHECK(a100.busbw_GBps == doctest::Approx(240.0).epsilon(0.01));
  // NVLS on 8 H100: algbw = 370.8 x 0.85 x 8/9 = 280.2, busbw x 1.75 = 490.
  const CollectiveCost nvls = collective_cost(Collective::all_reduce, 16e9, dgx_h100());
  CHECK(nvls.algorithm == "nvls");
  CHECK(nvls.busbw_GBps == doctest::Approx(490.0).epsilon(0.01));
  // With NVLS forced off, ring at 370.8.
  CHECK(collective_cost(Collective::all_reduce, 16e9, dgx_h100(), "ring").busbw_GBps ==
        doctest::Approx(370.8).epsilon(0.01));
  // Tiny all-reduce on 8 GPUs: ring LL 6.6 + 14 x 0.6 = 15 us of NCCL latency plus the
  // launch overhead (30 us before Hopper, 6.5 us on Hopper).
  CHECK(collective_cost(Collective::all_reduce, 8, dgx_a100()).time_s * 1e6 == doctest::Approx(45.0).epsilon(0.01));
  CHECK(collective_cost(Collective::all_reduce, 8, dgx_h100()).time_s * 1e6 == doctest::Approx(21.5).epsilon(0.01));
  // PCIe: no LL128 (not NVLink), Simple at the PCIe rate.
  const CollectiveCost pcie = collective_cost(Collective::all_reduce, 1e9, pcie4(6));
  CHECK(pcie.protocol == "Simple");
  CHECK(pcie.busbw_GBps == doctest::Approx(24.0).epsilon(0.02));
  // All-gather busbw on the same ring is the same link rate.
  CHECK(collective_cost(Collective::all_gather, 8e9, dgx_a100()).busbw_GBps == doctest::Approx(240.0).epsilon(0.01));
  CHECK(collective_cost(Collective::broadcast, 8e9, dgx_a100()).busbw_GBps == doctest::Approx(240.0).epsilon(0.01));
}

TEST_CASE("multi-node: ring at the slower level, two-node tree above the NIC rate") {
  // Ring across nodes: busbw = min(intra 240, NICs 29.6).
  const CollectiveCost ring = collective_cost(Collective::all_reduce, 1e9, p4d_efa(2), "ring");
  CHECK(ring.busbw_GBps == doctest::Approx(29.6).epsilon(0.02));
  // Two-node tree: each byte crosses the NICs once per direction, so algbw reaches the NIC
  // rate and busbw = 2(n-1)/n x 29.6 = 1.875 x 29.6 = 55.5.
  const CollectiveCost tree = collective_cost(Collective::all_reduce, 1e9, p4d_efa(2));
  CHECK(tree.algorithm == "tree");
  CHECK(tree.busbw_GBps == doctest::Approx(55.5).epsilon(0.02));
  CHECK(tree.busbw_GBps > 29.6);
  // On three or more nodes NCCL prefers the ring for large messages.
  CHECK(collective_cost(Collective::all_reduce, 1e9, p4d_efa(3)).algorithm == "ring");
  // Tiny all-reduce on 2 x 8 H100: tree LL 6.8 + 2 (7 x 0.6 + 5.0) = 25.2 us + 6.5 launch.
  const CollectiveCost tiny = collective_cost(Collective::all_reduce, 8, h100_ndr(2));
  CHECK(tiny.algorithm == "tree");
  CHECK(tiny.protocol == "LL");
  CHECK(tiny.time_s * 1e6 == doctest::Approx(31.7).epsilon(0.01));
  // Extra per-hop network latency (sockets) only slows things down.
  CHECK(collective_cost(Collective::all_reduce, 8, cluster(dgx_a100(), 2, 5.0, 50.0)).time_s >
        collective_cost(Collective::all_reduce, 8, cluster(dgx_a100(), 2, 5.0, 0.0)).time_s);
}

TEST_CASE("hierarchical: intra reduce-scatter, rail all-reduce on S/ppn, intra all-gather") {
  const CommFabric f = p4d_efa(4);
  const double S = 1e9;
  const CollectiveCost h = collective_cost(Collective::all_reduce, S, f, "hierarchical");
  CHECK(h.algorithm == "hierarchical");
  // The inter phase moves S/8 per rail at 29.6/8 GB/s: at least the time of a 4-rank ring
  // all-reduce of S/8 at 3.7 GB/s per rank: 2 x 3/4 x S/8 / 3.7 GB/s.
  const double rail_lower_bound_s = 2.0 * 3.0 / 4.0 * (S / 8) / (29.6 / 8 * 1e9);
  CHECK(h.time_s > rail_lower_bound_s);
  // Same NIC bytes as the flat ring, so within a factor of the flat ring's time.
  const double flat = collective_cost(Collective::all_reduce, S, f, "ring").time_s;
  CHECK(h.time_s == doctest::Approx(flat).epsilon(0.25));
  // All-gather and reduce-scatter run too.
  CHECK(collective_cost(Collective::all_gather, S, f, "hierarchical").time_s > 0);
  CHECK(collective_cost(Collective::reduce_scatter, S, f, "hierarchical").time_s > 0);
}

TEST_CASE("the phases of a collective add up to its cost, and alone each runs at its algbw") {
  const std::vector<CommFabric> fabrics = {
      dgx_a100(), dgx_h100(), h100_ndr(2), h100_ndr(16), p4d_efa(4), pcie4(4), cluster(dgx_a100(), 2, 0.117)};
  for (const CommFabric& f : fabrics) {
    for (Collective c : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter}) {
      for (const std::string algo : {"auto", "ring", "tree", "nvls", "hierarchical"}) {
        for (double bytes : {8.0, 65536.0, 25e6, 4e9}) {
          CollectiveCost cost;
          try {
            cost = collective_cost(c, bytes, f, algo);
          } catch (const std::invalid_argument&) {
            CHECK_THROWS_AS(collective_phases(c, bytes, f, algo), std::invalid_argument);
            continue;
          }
          const auto phases = collective_phases(c, bytes, f, algo);
          double sum = 0;
          for (const CollectivePhase& ph : phases) {
            sum += ph.time_s();
            // Level bandwidth / load never binds below algbw: alone, the phase is unhindered.
            if (ph.intra_load > 0) CHECK(f.intra.bw_GBps / ph.intra_load >= ph.algbw_GBps * (1 - 1e-12));
            if (ph.inter_load > 0) CHECK(f.inter->bw_GBps / ph.inter_load >= ph.algbw_GBps * (1 - 1e-12));
          }
          CAPTURE(name(c));
          CAPTURE(algo);
          CAPTURE(bytes);
          CHECK(sum == doctest::Approx(cost.time_s).epsilon(1e-12));
          CHECK(phases.size() ==
                (algo == "hierarchical" || cost.algorithm == "hierarchical" ? 2u + (c == Collective::all_reduce) : 1u));
        }
      }
    }
  }
}

TEST_CASE("an inter-node collective per GPU shares the node's NICs: its load counts all rails") {
  const CommFabric f = h100_ndr(4);
  const CommFabric rails = restrict_fabric(f, FabricScope::inter_node);
  CHECK(rails.intra.ranks == 1);
  CHECK(rails.nic_sharing == 8);
  CHECK(rails.inter->bw_GBps == doctest::Approx(376.0 / 8));
  const auto phases = collective_phases(Collective::all_reduce, 1e9, rails, "ring");
  REQUIRE(phases.size() == 1);
  // Ring all-reduce over 4 nodes: 2(n-1)/n = 1.5 per rail, 8 rails through the node's NICs.
  CHECK(phases[0].inter_load == doctest::Approx(1.5 * 8));
}

TEST_CASE("the spine: spine_load = inter_load x crossing, algbw <= the node's spine share / spine_load") {
  // 64 DGX H100 on 8 NDR rails (376 GB/s a node). A ring over adjacent nodes in leaf groups
  // of 2 sends half of each node's inter-node bytes up the spine (crossing = stride / P
  // = 1/2); at 8:1 the node's share of its leaf's uplinks is 376 / 8 = 47 GB/s.
  CommFabric f = restrict_fabric(h100_ndr(64), FabricScope::inter_node);  // the rails
  const auto open = collective_phases(Collective::all_reduce, 1e9, f, "ring");
  f.spine = SpineLevel{0.5, 376.0 / 8, 8};
  const auto capped = collective_phases(Collective::all_reduce, 1e9, f, "ring");
  REQUIRE(open.size() == 1);
  REQUIRE(capped.size() == 1);
  CHECK(open[0].spine_load == 0);
  CHECK(capped[0].inter_load == doctest::Approx(open[0].inter_load));
  CHECK(capped[0].spine_load == doctest::Approx(capped[0].inter_load * 0.5));
  // inter_load = 2(n-1)/n x 8 rails = 15.75: the spine allows 47 / (15.75 x 0.5) = 5.97 GB/s.
  CHECK(capped[0].algbw_GBps == doctest::Approx(std::min(open[0].algbw_GBps, 47.0 / (2.0 * 63 / 64 * 8 * 0.5))));
  CHECK(capped[0].algbw_GBps < open[0].algbw_GBps);
  // A crossing too small to bind (1/32 at 8:1: 47 / (15.75 / 32) = 95 GB/s > the rail's rate).
  f.spine->crossing = 1.0 / 32;
  CHECK(collective_phases(Collective::all_reduce, 1e9, f, "ring")[0].algbw_GBps == doctest::Approx(open[0].algbw_GBps));
  // collective_cost sees the same cap as the phases it is the sum of.
  f.spine->crossing = 0.5;
  CHECK(collective_cost(Collective::all_reduce, 1e9, f, "ring").time_s == doctest::Approx(capped[0].time_s()));
}

TEST_CASE("all-to-all: one phase, NVLink for the node's peers, the node's NICs shared by its ranks for the rest") {
  CommFabric f;
  f.arch = GpuArch::hopper;
  f.intra = FabricLevel{8, LinkClass::nvlink, 370, 0, "nvlink4", 0};
  f.inter = FabricLevel{8, LinkClass::network, 400, 0, "ib", 0};  // 64 ranks on 8 nodes
  const double S = 1e9;
  const CollectivePhase ph = all_to_all_phase(S, f);
  const double nvlink = S * 7 / 63 / 370e9;
  const double nic = S * 56 / 63 / (400e9 / 8);
  CHECK(ph.collective == Collective::all_to_all);
  CHECK(ph.time_s() - ph.latency_s == doctest::Approx(std::max(nvlink, nic)));
  CHECK(ph.inter_load == doctest::Approx(8.0 * 56 / 63));
  CHECK(ph.latency_s > 0);
  const auto phases = collective_phases(Collective::all_to_all, S, f);
  REQUIRE(phases.size() == 1);
  CHECK(collective_cost(Collective::all_to_all, S, f).time_s == doctest::Approx(ph.time_s()));
  // One node: NVLink only, 7 peers of 7.
  CommFabric node = f;
  node.inter.reset();
  CHECK(all_to_all_phase(S, node).time_s() - all_to_all_phase(S, node).latency_s == doctest::Approx(S / 370e9));
  CHECK(all_to_all_phase(S, node).inter_load == 0);
}

TEST_CASE("across a Simple-only transport no algorithm runs LL or LL128; inside a node they still may") {
  CommFabric efa = p4d_efa(4);
  efa.inter->simple_only = true;
  for (double bytes : {8.0, 65536.0, 33554432.0, 8589934592.0})
    for (Collective c : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter}) {
      CAPTURE(bytes);
      CHECK(collective_cost(c, bytes, efa).protocol == "Simple");
    }
  CHECK(collective_cost(Collective::all_reduce, 8, p4d_efa(4)).protocol != "Simple");  // LL where allowed
  CHECK(collective_cost(Collective::all_reduce, 8, dgx_a100()).protocol != "Simple");
}
