// Rules of playing a step graph: stream order, cross-stream dependencies, collectives as
// flows that wait for every class, compute slowdown under NCCL, memory, critical path.
#include "simulator/simulation.hpp"

#include <doctest/doctest.h>

#include <stdexcept>

using namespace stepcast;
using namespace stepcast::sim;

namespace {

constexpr Time kS = kNsPerSecond;

/// One phase moving `bytes` at up to `algbw_GBps`, loading the NIC 1:1, no latency.
CollectivePhase phase(double bytes, double algbw_GBps, double latency_s = 0) {
  CollectivePhase ph;
  ph.collective = Collective::all_reduce;
  ph.level = FabricScope::all;
  ph.bytes = bytes;
  ph.latency_s = latency_s;
  ph.algbw_GBps = algbw_GBps;
  ph.inter_load = 1.0;
  return ph;
}

/// One class on one node pair: a compute stream, two NCCL streams, a NIC of `nic_GBps`.
StepGraph one_class(double nic_GBps = 1.0, double slowdown = 0.0) {
  StepGraph g;
  RankClass rc;
  rc.name = "all";
  rc.ranks = 16;
  rc.nodes = 2;
  rc.comm_slowdown = slowdown;
  g.classes.push_back(rc);
  g.classes[0].nic_resource = g.add_link("nic", nic_GBps);
  g.add_stream("compute", StreamKind::compute, 0);
  g.add_stream("nccl", StreamKind::communication, 0);
  g.add_stream("nccl 2", StreamKind::communication, 0);
  return g;
}

int collective(StepGraph& g, int stream, double bytes, double algbw_GBps, std::vector<int> deps = {},
               double latency_s = 0) {
  return g.add_collective("ar", "test", FabricScope::all, Collective::all_reduce, bytes,
                          {phase(bytes, algbw_GBps, latency_s)}, {{stream, std::move(deps)}})[0];
}

}  // namespace

TEST_CASE("a stream runs its tasks one at a time in the order they were added") {
  StepGraph g = one_class();
  const int a = g.add_compute(0, "a", TaskCategory::forward, 1.0, 0);
  const int b = g.add_compute(0, "b", TaskCategory::forward, 2.0, 0);
  const SimResult r = simulate(g);
  CHECK(r.tasks[a].start == 0);
  CHECK(r.tasks[a].end == 1 * kS);
  CHECK(r.tasks[b].start == 1 * kS);
  CHECK(r.step_ns == 3 * kS);
  CHECK(r.streams[0].busy_ns == 3 * kS);
}

TEST_CASE("work on two streams overlaps, and a dependency across streams waits") {
  StepGraph g = one_class(10.0);
  const int c = g.add_compute(0, "fwd", TaskCategory::forward, 1.0, 0);
  const int ar = collective(g, 1, 5e9, 10.0, {c});  // 0.5 s after fwd
  const int next = g.add_compute(0, "fwd 2", TaskCategory::forward, 1.0, 0);
  const int opt = g.add_compute(0, "opt", TaskCategory::optimizer, 0.25, 0, {ar});
  const SimResult r = simulate(g);
  CHECK(r.tasks[ar].start == 1 * kS);
  CHECK(r.tasks[ar].end == 1 * kS + kS / 2);
  CHECK(r.tasks[next].end == 2 * kS);  // overlapped the all-reduce
  CHECK(r.tasks[opt].start == 2 * kS);
  CHECK(r.step_ns == 2 * kS + kS / 4);
  // Representative rank: 0.5 s of communication, all of it under compute.
  CHECK(r.comm_busy_ns == kS / 2);
  CHECK(r.overlap_ns == kS / 2);
  CHECK(r.overlap_ratio() == doctest::Approx(1.0));
  CHECK(r.comm_exposed_s() == doctest::Approx(0.0));
}

TEST_CASE("a collective's latency comes before its bytes") {
  StepGraph g = one_class(1.0);
  const int ar = collective(g, 1, 1e9, 1.0, {}, 0.25);
  const SimResult r = simulate(g);
  CHECK(r.tasks[ar].end == kS + kS / 4);
}

TEST_CASE("two collectives at once on one 1 Gb/s uplink each get half of it") {
  StepGraph g = one_class(0.125);
  const int a = collective(g, 1, 125e6, 10.0);  // alone: 1 s
  const int b = collective(g, 2, 125e6, 10.0);
  const SimResult r = simulate(g);
  CHECK(r.tasks[a].end == 2 * kS);
  CHECK(r.tasks[b].end == 2 * kS);
  CHECK(r.links[0].bytes == doctest::Approx(250e6));
}

TEST_CASE("compute slows down by comm_slowdown while a collective runs on its GPU") {
  // 1 s of compute beside a 0.5 s collective at 20% slowdown: 0.4 s of work done in the
  // first 0.5 s, the remaining 0.6 s at full speed: ends at 1.1 s.
  StepGraph g = one_class(1.0, 0.2);
  const int c = g.add_compute(0, "fwd", TaskCategory::forward, 1.0, 0);
  collective(g, 1, 0.5e9, 1.0);
  const SimResult r = simulate(g);
  CHECK(r.tasks[c].end == 1'100'000'000);
  CHECK(r.compute_busy_ns == 1'100'000'000);
}

TEST_CASE("a collective starts only when every rank class has reached it; classes are simulated apart") {
  StepGraph g;
  for (int k = 0; k < 2; ++k) {
    RankClass rc;
    rc.name = k == 0 ? "fast" : "straggler";
    rc.ranks = k == 0 ? 15 : 1;
    rc.compute_speed = k == 0 ? 1.0 : 0.5;
    g.classes.push_back(rc);
    g.classes[k].nic_resource = g.add_link("nic " + rc.name, 1.0);
    g.add_stream("compute", StreamKind::compute, k);     // stream 2k
    g.add_stream("nccl", StreamKind::communication, k);  // stream 2k+1
  }
  const int c0 = g.add_compute(0, "bwd", TaskCategory::backward, 1.0, 0);
  const int c1 = g.add_compute(2, "bwd", TaskCategory::backward, 1.0, 0);  // takes 2 s
  const auto ar = g.add_collective("ar", "test", FabricScope::all, Collective::all_reduce, 1e9, {phase(1e9, 10.0)},
                                   {{1, {c0}}, {3, {c1}}});
  const SimResult r = simulate(g);
  CHECK(r.tasks[c0].end == 1 * kS);
  CHECK(r.tasks[c1].end == 2 * kS);
  CHECK(r.tasks[ar[0]].start == 2 * kS);  // the fast class waits
  CHECK(r.tasks[ar[1]].start == 2 * kS);
  // One flow charged on both classes' NICs (1 GB/s each): 1 s.
  CHECK(r.tasks[ar[0]].end == 3 * kS);
  CHECK(r.links[0].bytes == doctest::Approx(1e9));
  CHECK(r.links[1].bytes == doctest::Approx(1e9));
  // The critical path runs through the straggler's compute.
  REQUIRE(r.critical_path.size() == 2);
  CHECK(r.critical_path[0] == c1);
}

TEST_CASE("a slower link in one class slows the whole collective") {
  StepGraph g;
  for (int k = 0; k < 2; ++k) {
    RankClass rc;
    rc.name = std::to_string(k);
    g.classes.push_back(rc);
    g.classes[k].nic_resource = g.add_link("nic", k == 0 ? 1.0 : 0.5);
    g.add_stream("nccl", StreamKind::communication, k);
  }
  const auto ar = g.add_collective("ar", "test", FabricScope::all, Collective::all_reduce, 1e9, {phase(1e9, 10.0)},
                                   {{0, {}}, {1, {}}});
  const SimResult r = simulate(g);
  CHECK(r.tasks[ar[0]].end == 2 * kS);
}

TEST_CASE("memory: the peak is the static part plus the most live allocations at once") {
  StepGraph g = one_class();
  g.classes[0].static_memory_bytes = 10;
  const int a = g.add_compute(0, "fwd", TaskCategory::forward, 1.0, 0);
  g.tasks[a].alloc_bytes = 5;  // activations
  const int b = g.add_compute(0, "bwd", TaskCategory::backward, 1.0, 0);
  g.tasks[b].alloc_bytes = 2;
  g.tasks[b].free_bytes = 7;
  const SimResult r = simulate(g, SimOptions{true, false});
  CHECK(r.peak_memory_bytes[0] == 17);
  // Samples: 15 at 0 s (static 10 + 5 at once), 17 at 1 s, 10 at 2 s.
  REQUIRE(r.memory_timeline.size() == 3);
  CHECK(r.memory_timeline[0].bytes == 15);
  CHECK(r.memory_timeline[1].at == 1 * kS);
  CHECK(r.memory_timeline[1].bytes == 17);
  CHECK(r.memory_timeline[2].bytes == 10);
}

TEST_CASE("free communication: collectives take no time") {
  StepGraph g = one_class(0.001);
  const int c = g.add_compute(0, "fwd", TaskCategory::forward, 1.0, 0);
  collective(g, 1, 1e12, 0.001, {c});
  SimOptions o;
  o.free_communication = true;
  CHECK(simulate(g, o).step_ns == 1 * kS);
}

TEST_CASE("a graph that cannot finish is a lowering bug, reported with the stuck task") {
  StepGraph g = one_class();
  const int a = g.add_compute(0, "a", TaskCategory::forward, 1.0, 0);
  const int b = g.add_compute(1, "b", TaskCategory::forward, 1.0, 0, {a});
  g.tasks[a].deps.push_back(b);  // a cycle
  CHECK_THROWS_AS(simulate(g), std::logic_error);
}

TEST_CASE("the same graph gives the same result bit for bit") {
  StepGraph g = one_class(0.3, 0.1);
  for (int i = 0; i < 20; ++i) {
    const int c = g.add_compute(0, "c", TaskCategory::forward, 0.013 * (i + 1), 0);
    collective(g, 1 + i % 2, 1e7 * (i + 1), 0.7, {c}, 1e-5);
  }
  const SimResult a = simulate(g), b = simulate(g);
  CHECK(a.step_ns == b.step_ns);
  for (std::size_t t = 0; t < g.tasks.size(); ++t) CHECK(a.tasks[t].end == b.tasks[t].end);
}
