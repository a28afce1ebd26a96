// Rules of the hardware graph and of the per-level view derived from it.
#include "topologies/topology.hpp"

#include "base/json_input.hpp"

#include <doctest/doctest.h>

using namespace stepcast;

namespace {

/// The InputError message of parsing the cluster file `text` ("c.json"), or "(no InputError)".
std::string cluster_error(const std::string& text) {
  JsonDoc doc = JsonDoc::parse(text, "c.json");
  JsonObject o(doc.root(), doc.file(), "");
  try {
    parse_cluster(o);
  } catch (const InputError& e) {
    return std::string(e.what());
  }
  return std::string("(no InputError)");
}

ClusterSpec one_box(const std::string& box) {
  ClusterSpec c;
  c.name = box;
  c.box = box;
  c.nodes = 1;
  return c;
}

int count_gpus(const HardwareGraph& g) {
  int gpus = 0;
  for (auto [v, end] = boost::vertices(g); v != end; ++v) gpus += g[*v].kind == DeviceKind::gpu;
  return gpus;
}

/// Field by field, exactly: the one-node graph must give the very same doubles.
void check_same_level(const FabricLevel& a, const FabricLevel& b) {
  CHECK(a.ranks == b.ranks);
  CHECK(a.link == b.link);
  CHECK(a.bw_GBps == b.bw_GBps);
  CHECK(a.latency_us == b.latency_us);
  CHECK(a.kind == b.kind);
  CHECK(a.channels == b.channels);
}

/// fabric() of build() and of build_every_node() for every node count up to the cluster's
/// (1, 2, the cluster's) and every GPU count of the box.
void check_same_fabrics(const ClusterSpec& c) {
  CAPTURE(c.name);
  CAPTURE(c.nodes);
  const Topology one = Topology::build(c);
  const Topology every = Topology::build_every_node(c);
  REQUIRE(count_gpus(one.graph()) == one.gpus_per_node());
  REQUIRE(count_gpus(every.graph()) == c.nodes * every.gpus_per_node());
  for (int nodes : {1, std::min(2, c.nodes), c.nodes})
    for (int gpus = 1; gpus <= one.gpus_per_node(); ++gpus) {
      CAPTURE(nodes);
      CAPTURE(gpus);
      const CommFabric a = one.fabric(nodes, gpus), b = every.fabric(nodes, gpus);
      CHECK(a.arch == b.arch);
      CHECK(a.nvls == b.nvls);
      CHECK(a.nic_sharing == b.nic_sharing);
      check_same_level(a.intra, b.intra);
      REQUIRE(a.inter.has_value() == b.inter.has_value());
      if (a.inter) check_same_level(*a.inter, *b.inter);
      REQUIRE(a.spine.has_value() == b.spine.has_value());
      if (a.spine) {
        CHECK(a.spine->crossing == b.spine->crossing);
        CHECK(a.spine->bw_GBps == doctest::Approx(b.spine->bw_GBps));
      }
    }
}

}  // namespace

TEST_CASE("every catalog box and cluster builds into a graph with one vertex per GPU") {
  for (const BoxSpec& b : box_catalog()) {
    CAPTURE(b.name);
    Topology t = Topology::build(one_box(b.name));
    int gpus = 0;
    for (auto [v, end] = boost::vertices(t.graph()); v != end; ++v) gpus += t.graph()[*v].kind == DeviceKind::gpu;
    CHECK(gpus == b.gpus);
    CHECK_FALSE(b.source.empty());
  }
  for (const ClusterSpec& c : cluster_catalog()) {
    CAPTURE(c.name);
    ClusterSpec small = c;
    small.nodes = std::min(c.nodes, 4);  // the rules do not depend on the node count
    Topology t = Topology::build(small);
    CHECK(t.fabric(small.nodes, t.gpus_per_node()).ranks() == small.nodes * t.gpus_per_node());
  }
}

TEST_CASE("the one-node graph gives the whole graph's fabric for every box, cluster and node count") {
  for (const ClusterSpec& c : cluster_catalog())
    for (int nodes : {2, 3, 16, c.nodes}) {
      ClusterSpec sized = c;
      sized.nodes = nodes;
      check_same_fabrics(sized);
    }
  // Every box on each kind of network, with one NIC, two, and one per GPU per node.
  for (const BoxSpec& b : box_catalog()) {
    check_same_fabrics(one_box(b.name));
    for (NetworkTopology topology : {NetworkTopology::single_switch, NetworkTopology::rail_fat_tree})
      for (int nics : {1, 2, b.gpus})
        for (int nodes : {2, 5}) {
          ClusterSpec c = one_box(b.name);
          c.nodes = nodes;
          c.network = NetworkSpec{"ib-ndr", nics, topology, topology == NetworkTopology::rail_fat_tree ? 3.0 : 1.0};
          check_same_fabrics(c);
          c.network->nodes_per_leaf = 2;  // several leaf groups: the spine level
          check_same_fabrics(c);
        }
  }
}

TEST_CASE("the graph build() makes does not grow with the node count: one node and the switches") {
  ClusterSpec c = *find_cluster("dgx-h100-16k");  // 2,048 nodes, 8 NICs each on a rail fat-tree
  const std::size_t full_size = boost::num_vertices(Topology::build(c).graph());
  c.nodes = 2;
  CHECK(boost::num_vertices(Topology::build(c).graph()) == full_size);
  // 2 CPUs + 4 PCIe switches + 8 GPUs + 4 NVSwitches + 8 NICs, then 8 leaves and a spine.
  CHECK(full_size == 2 + 4 + 8 + 4 + 8 + 8 + 1);
  CHECK(Topology::build(c).graph_nodes() == 1);
  CHECK(Topology::build_every_node(c).graph_nodes() == 2);
}

TEST_CASE("an NVSwitch box gives each GPU all its NVLinks: DGX A100 12 x 20 GB/s, DGX H100 18 x 20.6 GB/s") {
  // NCCL's per-link rates (topo.h SM80 20, SM90 20.6) times the links per GPU.
  CHECK(Topology::build(one_box("dgx-a100")).fabric(1, 8).intra.bw_GBps == doctest::Approx(240.0));
  CommFabric h100 = Topology::build(one_box("dgx-h100")).fabric(1, 8);
  CHECK(h100.intra.bw_GBps == doctest::Approx(18 * 20.6));
  CHECK(h100.intra.link == LinkClass::nvlink);
  CHECK(h100.nvls);
  CHECK_FALSE(Topology::build(one_box("dgx-a100")).fabric(1, 8).nvls);
}

TEST_CASE("the DGX-1 cube-mesh counts only the NVLinks that lead to the GPUs taking part") {
  Topology t = Topology::build(one_box("dgx-1-v100"));
  // All 8: every GPU has 6 links at 20 GB/s into the group.
  CHECK(t.fabric(1, 8).intra.bw_GBps == doctest::Approx(120.0));
  // GPUs 0 and 1 share one link: 20 GB/s.
  CHECK(t.fabric(1, 2).intra.bw_GBps == doctest::Approx(20.0));
  // The quad 0-3: GPU 0 reaches 1 (1 link), 2 (1), 3 (2) = 4 links; GPU 1: 0 (1), 2 (2), 3 (1) = 4.
  CHECK(t.fabric(1, 4).intra.bw_GBps == doctest::Approx(80.0));
}

TEST_CASE("without peer-to-peer the PCIe ring goes through host memory and the CPU link limits it") {
  // 8x RTX 4090 on the root ports of two EPYC sockets (4 each), ring 0..7: the hops 3->4 and
  // 7->0 each cross the xGMI link once per direction; NCCL's AMD inter-socket rate is 16 GB/s,
  // below the 24 GB/s of each GPU's gen4 x16 port.
  CommFabric f = Topology::build(one_box("rtx4090-pcie-8x")).fabric(1, 8);
  CHECK(f.intra.link == LinkClass::pcie);
  CHECK(f.intra.bw_GBps == doctest::Approx(16.0));
  // Four GPUs on one socket stay off the CPU link: each GPU port carries one send and one
  // receive, 24 GB/s each way.
  CHECK(Topology::build(one_box("rtx4090-pcie-8x")).fabric(1, 4).intra.bw_GBps == doctest::Approx(24.0));
}

TEST_CASE("two GPUs on an NVLink bridge use it; without the bridge they use PCIe") {
  CHECK(Topology::build(one_box("titan-rtx-2x-nvlink")).fabric(1, 2).intra.link == LinkClass::nvlink);
  CHECK(Topology::build(one_box("titan-rtx-2x-nvlink")).fabric(1, 2).intra.bw_GBps == doctest::Approx(40.0));
  CHECK(Topology::build(one_box("titan-rtx-2x-pcie")).fabric(1, 2).intra.link == LinkClass::pcie);
}

TEST_CASE("the inter-node level is the sum of a node's NICs") {
  const ClusterSpec* slow = find_cluster("2x-dgx1-1gbe");
  REQUIRE(slow);
  CommFabric f = Topology::build(*slow).fabric(2, 8);
  REQUIRE(f.inter);
  CHECK(f.inter->ranks == 2);
  CHECK(f.inter->link == LinkClass::network);
  CHECK(f.inter->bw_GBps == doctest::Approx(find_link("eth-1g")->effective_GBps));
  CHECK(f.inter->bw_GBps < 0.125);  // below 1 Gb/s line rate

  const ClusterSpec* p4d = find_cluster("aws-p4d-4");
  REQUIRE(p4d);
  CHECK(Topology::build(*p4d).fabric(4, 8).inter->bw_GBps ==
        doctest::Approx(4 * find_link("efa-100g")->effective_GBps));
}

TEST_CASE("more GPUs than the box or nodes than the cluster is rejected") {
  Topology t = Topology::build(one_box("dgx-a100"));
  CHECK_THROWS_AS(t.fabric(1, 9), std::invalid_argument);
  CHECK_THROWS_AS(t.fabric(2, 8), std::invalid_argument);
  CHECK_THROWS_AS(t.fabric(1, 0), std::invalid_argument);
}

TEST_CASE("a box with an unknown link kind names the JSON path") {
  JsonDoc doc = JsonDoc::parse(R"({"name": "x", "display_name": "x", "gpu": "a100-sxm4-80gb", "gpus": 2,
    "fabric": "pcie", "pcie": "pcie9-x16", "pcie_switches": 0, "cpus": 1, "p2p": true, "source": "test"})",
                               "box.json");
  JsonObject o(doc.root(), doc.file(), "");
  try {
    parse_box(o);
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("box.json: /pcie") != std::string::npos);
  }
}

TEST_CASE("a multi-node cluster without a network is rejected") {
  JsonDoc doc = JsonDoc::parse(R"({"name": "c", "box": "dgx-a100", "nodes": 2, "source": "t"})", "c.json");
  JsonObject o(doc.root(), doc.file(), "");
  CHECK_THROWS_AS(parse_cluster(o), InputError);
}

TEST_CASE("box and cluster counts are checked against int range and physical bounds, never wrapped") {
  const auto box_path = [](const std::string& gpus) {
    JsonDoc doc = JsonDoc::parse(R"({"name": "x", "display_name": "x", "gpu": "a100-sxm4-80gb", "gpus": )" + gpus +
                                     R"(, "fabric": "pcie", "pcie": "pcie4-x16", "pcie_switches": 0,
      "cpus": 1, "p2p": true, "nics": 0, "source": "test"})",
                                 "box.json");
    JsonObject o(doc.root(), doc.file(), "");
    try {
      parse_box(o);
    } catch (const InputError& e) {
      return e.json_path();
    }
    return std::string("(no InputError)");
  };
  CHECK(box_path("2") == "(no InputError)");
  CHECK(box_path("4294967298") == "/gpus");  // 2^32 + 2 is not 2
  CHECK(box_path("100000") == "/gpus");      // above limits::kMaxGpusPerBox
  const auto cluster_what = [](const std::string& nodes) {
    return cluster_error(R"({"name": "c", "box": "dgx-a100", "nodes": )" + nodes +
                         R"(, "network": {"nic": "ib-hdr", "nics_per_node": 8, "topology": "single_switch"},
                         "source": "t"})");
  };
  CHECK(cluster_what("2") == "(no InputError)");
  CHECK(cluster_what("4294967298").find("c.json: /nodes") != std::string::npos);
  CHECK(cluster_what("1000000").find("kMaxClusterGpus") != std::string::npos);
  // NICs in proportion to the GPUs: a thousand NICs on an 8-GPU node is no machine.
  JsonDoc doc = JsonDoc::parse(R"({"name": "c", "box": "dgx-a100", "nodes": 2, "network": {"nic": "ib-hdr",
    "nics_per_node": 1000, "topology": "single_switch"}, "source": "t"})",
                               "n.json");
  JsonObject o(doc.root(), doc.file(), "");
  try {
    parse_cluster(o);
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(e.json_path() == "/network/nics_per_node");
  }
}

TEST_CASE("a box's host: catalogued with its source where offload needs it; PCIe per GPU shares a switch's uplink") {
  const BoxSpec& a100 = *find_box("dgx-a100");
  REQUIRE(a100.host);
  CHECK(a100.host->memory_bw_GBps == doctest::Approx(2 * 8 * 3200e6 * 8 / 1e9));  // 2 sockets x 8 channels DDR4-3200
  CHECK_FALSE(a100.host->source.empty());
  CHECK(host_link_GBps_per_gpu(a100) == doctest::Approx(24.0 / 2));  // 4 switches for 8 GPUs
  const BoxSpec& h100 = *find_box("dgx-h100");
  REQUIRE(h100.host);
  CHECK(h100.host->memory_bw_GBps == doctest::Approx(2 * 8 * 4800e6 * 8 / 1e9));  // DDR5-4800
  // GPUs on the CPU's root ports: each its own link.
  CHECK(host_link_GBps_per_gpu(*find_box("rtx4090-pcie-8x")) == doctest::Approx(24.0));
  CHECK_FALSE(find_box("rtx4090-pcie-8x")->host);  // not catalogued: offload is refused there
}

namespace {

/// DGX H100 nodes, 8 NDR NICs each (47 GB/s effective), on a rail fat tree.
ClusterSpec rail_cluster(int nodes, double oversubscription, int nodes_per_leaf = 32) {
  ClusterSpec c = one_box("dgx-h100");
  c.nodes = nodes;
  c.network = NetworkSpec{"ib-ndr", 8, NetworkTopology::rail_fat_tree, oversubscription};
  c.network->nodes_per_leaf = nodes_per_leaf;
  return c;
}

}  // namespace

TEST_CASE("spine crossing: 0 inside one leaf group, stride / P of a node's bytes across leaf groups") {
  // A rail-aligned ring leaves each leaf group it passes once; a leaf group of P nodes holds
  // P / stride of its member nodes, so stride / P of a node's bytes leave (at most all).
  const Topology big = Topology::build(rail_cluster(128, 8));  // 4 leaf groups of 32
  CHECK(big.spine_crossing(1) == 0);                           // one node: nothing crosses the network
  CHECK(big.spine_crossing(4) == 0);                           // 4 nodes tile a leaf group of 32
  CHECK(big.spine_crossing(32) == 0);                          // exactly one leaf group
  CHECK(big.spine_crossing(64) == doctest::Approx(1.0 / 32));  // two leaf groups, adjacent nodes
  CHECK(big.spine_crossing(128) == doctest::Approx(1.0 / 32));
  CHECK(big.spine_crossing(2, 16) == 0);                           // span 32 = one leaf group
  CHECK(big.spine_crossing(4, 16) == doctest::Approx(16.0 / 32));  // span 64: 2 members per leaf group
  CHECK(big.spine_crossing(2, 64) == 1.0);                    // every member in its own leaf group: every byte crosses
  CHECK(big.spine_crossing(3) == doctest::Approx(1.0 / 32));  // 3 does not tile 32: groups straddle leaves
  // One leaf group in the whole cluster, or one switch: nothing climbs to a spine.
  CHECK(Topology::build(rail_cluster(32, 8)).spine_crossing(32) == 0);
  ClusterSpec single = rail_cluster(128, 1);
  single.network->topology = NetworkTopology::single_switch;
  CHECK(Topology::build(single).spine_crossing(128) == 0);
}

TEST_CASE("the spine level: a node's share of its leaf's uplinks is NICs x NIC rate / oversubscription") {
  // Leaf uplinks (graph edge leaf -> spine) = 32 nodes x 47 GB/s / 8; a node's share over
  // its 8 rails = 8 x 47 / 8 = 47 GB/s against 376 GB/s of NICs.
  const CommFabric f = Topology::build(rail_cluster(64, 8)).fabric(64, 8);
  REQUIRE(f.spine.has_value());
  CHECK(f.spine->bw_GBps == doctest::Approx(8 * 47.0 / 8));
  CHECK(f.spine->crossing == doctest::Approx(1.0 / 32));
  CHECK(f.spine->oversubscription == 8);
  CHECK(f.inter->bw_GBps == doctest::Approx(8 * 47.0));
  // 1:1 never binds below the NICs (a node's share = its NICs' rate): no spine level; nor
  // when the group stays inside a leaf group.
  CHECK_FALSE(Topology::build(rail_cluster(64, 1)).fabric(64, 8).spine.has_value());
  CHECK_FALSE(Topology::build(rail_cluster(64, 8)).fabric(4, 8).spine.has_value());
  // A small leaf group's uplinks: 2 nodes x 47 / 4 per rail, a node's share 8 x 47 / 4.
  const CommFabric small = Topology::build(rail_cluster(8, 4, 2)).fabric(8, 8);
  REQUIRE(small.spine.has_value());
  CHECK(small.spine->bw_GBps == doctest::Approx(8 * 47.0 / 4));
  CHECK(small.spine->crossing == doctest::Approx(0.5));
}

TEST_CASE("oversubscription and nodes_per_leaf belong to a rail fat tree: one switch is non-blocking") {
  const auto what = [](const std::string& network) {
    return cluster_error(R"({"name": "c", "box": "dgx-a100", "nodes": 4, "network": )" + network +
                         R"(, "source": "t"})");
  };
  CHECK(what(R"({"nic": "ib-hdr", "nics_per_node": 8, "topology": "rail_fat_tree", "oversubscription": 8,
                 "nodes_per_leaf": 2})") == "(no InputError)");
  const std::string e = what(R"({"nic": "ib-hdr", "nics_per_node": 8, "topology": "single_switch",
                                 "oversubscription": 8})");
  CHECK_MESSAGE(e.find("/network/oversubscription: applies to rail_fat_tree only") != std::string::npos, e);
  CHECK(what(R"({"nic": "ib-hdr", "nics_per_node": 8, "topology": "rail_fat_tree", "oversubscription": 1,
                 "nodes_per_leaf": 0})")
            .find("/network/nodes_per_leaf") != std::string::npos);
}

TEST_CASE("an unstated network: one switch up to a leaf group of 32 nodes, the SuperPOD rail fat tree beyond") {
  const BoxSpec& dgx = *find_box("dgx-h100");
  const NetworkSpec small = default_network(dgx, NetworkSpec::kDefaultNodesPerLeaf);
  CHECK(small.topology == NetworkTopology::single_switch);
  CHECK(small.nic == dgx.nic);
  CHECK(small.nics_per_node == dgx.nics);
  const NetworkSpec large = default_network(dgx, NetworkSpec::kDefaultNodesPerLeaf + 1);
  CHECK(large.topology == NetworkTopology::rail_fat_tree);
  CHECK(large.oversubscription == 1.0);
  CHECK(large.nodes_per_leaf == 32);
  CHECK(default_network_assumption(dgx, large).find("rail-optimised fat tree") != std::string::npos);
  CHECK(default_network_assumption(dgx, small).find("all on one switch") != std::string::npos);
}
