/// \file
/// Boxes (one server: GPUs, NVLink/NVSwitch, PCIe switches, CPUs, NICs) and clusters (N
/// boxes on a network) as data, built into one Boost.Graph graph, and the per-level view
/// the collective model needs (ranks, bottleneck bandwidth, hops, link class) derived
/// from that graph. The graph is the one representation of the hardware. The nodes of a
/// cluster are identical, so by default the graph holds one node and the network switches
/// its NICs join (its cost does not grow with the node count); the whole graph, every node
/// in it, is built on request and gives the same per-level view.
#pragma once

#include "topologies/fabric.hpp"
#include "topologies/gpu.hpp"
#include "topologies/link.hpp"

#include <boost/graph/adjacency_list.hpp>

#include <array>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace stepcast {

class JsonDoc;
class JsonObject;

/// How the GPUs of a box talk to each other.
enum class IntraFabric {
  nvswitch,     ///< every GPU has links into a switch plane (DGX-2, DGX A100, DGX H100, HGX)
  nvlink_mesh,  ///< direct GPU-GPU NVLink edges (DGX-1 hybrid cube-mesh, NVLink bridges)
  pcie,         ///< PCIe only
};
std::string_view name(IntraFabric);

/// One server, as data (topologies/catalog/boxes.json).
/// The host of a box (its CPUs and their memory), what CPU offload runs on. Optional in
/// the catalog: a box without it cannot be predicted with offload.
struct HostSpec {
  std::string cpu;        ///< "2x AMD EPYC 7742"
  int cores = 0;          ///< physical cores, all sockets
  double memory_GiB = 0;  ///< host memory
  /// DRAM wire rate of all sockets, GB/s: channels x MT/s x 8 bytes.
  double memory_bw_GBps = 0;
  std::string source;
  bool operator==(const HostSpec&) const = default;
};

/// A published price of a box's GPU-hour ("price" in the catalog), the default of a
/// scenario's price_per_gpu_hour_usd: a cloud instance's on-demand list price over its GPUs,
/// or, for a box one buys, a dated rental rate of its GPU class.
struct PriceSpec {
  double usd_per_gpu_hour = 0;
  std::string kind;  ///< "cloud_on_demand" or "reference"
  std::string date;  ///< when the figure applies, "2025-06"
  std::string source;
  bool operator==(const PriceSpec&) const = default;
};

struct BoxSpec {
  std::string name;  ///< "dgx-a100"
  std::string display_name;
  std::string gpu;  ///< GPU catalog key
  int gpus = 0;
  IntraFabric fabric = IntraFabric::pcie;
  std::string nvlink;     ///< link kind of NVLink edges (nvswitch / nvlink_mesh)
  int nvswitches = 0;     ///< switch chips (nvswitch)
  int links_per_gpu = 0;  ///< NVLink links from each GPU into the switch plane (nvswitch)
  /// Direct NVLink edges (nvlink_mesh): {gpu a, gpu b, number of links}.
  std::vector<std::array<int, 3>> nvlink_edges;
  std::string pcie;       ///< link kind of GPU/NIC PCIe connections
  int pcie_switches = 0;  ///< 0: GPUs hang off CPU root ports directly
  int cpus = 1;
  std::string cpu_link;            ///< link kind between CPU sockets (UPI/xGMI), "" with one CPU
  bool p2p = true;                 ///< GPU peer-to-peer over PCIe allowed (false: via host memory)
  std::string nic;                 ///< default NIC link kind ("" = none)
  int nics = 0;                    ///< NICs per box
  std::optional<HostSpec> host;    ///< the CPUs and host memory ("host"); absent: not catalogued
  std::optional<PriceSpec> price;  ///< "price"; absent: none published in the catalog
  std::string source;
  bool operator==(const BoxSpec&) const = default;
};

/// PCIe bandwidth between one GPU and host memory when every GPU of the box copies at once,
/// GB/s per direction: the box's PCIe link at NCCL's effective rate, shared by the GPUs
/// behind one PCIe switch's uplink (gpus / pcie_switches; no switch: the GPU's own link).
double host_link_GBps_per_gpu(const BoxSpec& box);

BoxSpec parse_box(JsonObject& obj);
/// The box catalog (topologies/catalog/boxes.json, then add_boxes and add_inline_box;
/// entries never move).
const std::deque<BoxSpec>& box_catalog();
const BoxSpec* find_box(const std::string& name);
/// Adds the boxes of a user catalog file ({"boxes": [...]}); their GPUs and link kinds
/// must be in the catalog already. A name already in the catalog is an InputError naming
/// the file and the entry. All or nothing.
void add_boxes(const JsonDoc& doc);
/// Adds a box given inline in a scenario and returns the catalog's entry; throws
/// std::invalid_argument when a different box has that name.
const BoxSpec& add_inline_box(const BoxSpec& box);
/// The first catalog box holding `gpu` (with that intra-node fabric when given), or nullptr.
const BoxSpec* box_with_gpu(const std::string& gpu, std::optional<IntraFabric> fabric = std::nullopt);

/// How boxes are joined.
enum class NetworkTopology {
  single_switch,  ///< every NIC on one non-blocking switch
  rail_fat_tree,  ///< NIC i of every box on leaf (rail) switch i, leaves joined by spines
};
std::string_view name(NetworkTopology);

struct NetworkSpec {
  std::string nic;  ///< link kind of each NIC and its switch port
  int nics_per_node = 1;
  NetworkTopology topology = NetworkTopology::single_switch;
  /// Leaf-to-spine oversubscription (rail_fat_tree): 1 = non-blocking.
  double oversubscription = 1.0;
  /// Nodes under one leaf switch per rail (rail_fat_tree): the scalable unit of the NVIDIA
  /// DGX SuperPOD reference architecture, 32 DGX H100 nodes (the DGX A100 one's is 20).
  int nodes_per_leaf = kDefaultNodesPerLeaf;
  static constexpr int kDefaultNodesPerLeaf = 32;
  bool operator==(const NetworkSpec&) const = default;
};

/// The network `nodes` of `box` are assumed to sit on when none is stated: the box's own NICs
/// on one switch up to one leaf group (NetworkSpec::kDefaultNodesPerLeaf nodes), where that is
/// what a leaf switch per rail is; beyond it the rail-optimised, non-blocking fat tree of
/// NVIDIA's DGX SuperPOD reference architecture (scalable units of 32 nodes on their leaf
/// switches, spines above, oversubscription 1). The box must have NICs.
NetworkSpec default_network(const BoxSpec& box, std::int64_t nodes);

/// The Assumptions line for default_network's choice.
std::string default_network_assumption(const BoxSpec& box, const NetworkSpec& network);

/// N boxes on a network (topologies/catalog/clusters.json, or a scenario's hardware).
struct ClusterSpec {
  std::string name;
  std::string box;  ///< box catalog key
  int nodes = 1;
  std::optional<NetworkSpec> network;  ///< required when nodes > 1
  std::string source;
};

/// A network object ({nic, nics_per_node, topology, and for rail_fat_tree oversubscription
/// and optional nodes_per_leaf}), every key checked.
NetworkSpec parse_network(JsonObject& obj);
ClusterSpec parse_cluster(JsonObject& obj);
/// The cluster catalog (topologies/catalog/clusters.json, then add_clusters).
const std::deque<ClusterSpec>& cluster_catalog();
/// Adds the clusters of a user catalog file ({"clusters": [...]}); a name already in the
/// catalog is an InputError naming the file and the entry. All or nothing.
void add_clusters(const JsonDoc& doc);
const ClusterSpec* find_cluster(const std::string& name);

/// Vertices of the hardware graph.
enum class DeviceKind { gpu, nvswitch, pcie_switch, cpu, nic, network_switch };
std::string_view name(DeviceKind);

struct Device {
  DeviceKind kind = DeviceKind::gpu;
  int node = -1;  ///< box index, -1 for network switches
  int index = 0;  ///< index within the box (or switch number)
};

/// A full-duplex connection: `bw_GBps` in each direction.
struct Connection {
  const LinkSpec* link = nullptr;
  int lanes = 1;          ///< parallel links bundled in this edge (e.g. 2 NVLinks)
  double bw_GBps = 0;     ///< effective bandwidth per direction = lanes x link effective
  double latency_us = 0;  ///< the link kind's added latency
};

using HardwareGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, Device, Connection>;

/// The built hardware of a cluster.
class Topology {
 public:
  /// Builds the graph of node 0 and the network switches (the leaf-spine bundles sized
  /// for the whole cluster); throws InputError-free std::invalid_argument on inconsistent
  /// specs (unknown GPU or link kinds, multi-node without a network). The other nodes are
  /// copies of node 0 and join the network only through switches, so no shortest route
  /// between two devices of node 0 passes through them: fabric() is the same as on the
  /// whole graph (checked against build_every_node for every catalog box and cluster).
  static Topology build(const ClusterSpec& cluster);
  /// Builds the whole graph, every node of the cluster in it (cost linear in the nodes).
  static Topology build_every_node(const ClusterSpec& cluster);

  const HardwareGraph& graph() const { return graph_; }
  const BoxSpec& box() const { return box_; }
  const GpuSpec& gpu() const { return *gpu_; }
  const ClusterSpec& cluster() const { return cluster_; }
  int nodes() const { return cluster_.nodes; }
  int gpus_per_node() const { return box_.gpus; }
  /// Nodes whose devices are in graph(): 1 after build(), nodes() after build_every_node().
  int graph_nodes() const { return graph_nodes_; }

  /// What a collective over the first `gpus_per_node` GPUs of each of the first `nodes`
  /// boxes sees: the intra level from ring routes through the box's graph (the slowest
  /// rank's bandwidth into the ring, NVLink where the GPUs are NVLink-connected, else the
  /// PCIe/host path with every shared edge's load counted), the inter level from the NICs
  /// (their summed effective rate per box), and on a rail fat tree the spine level: the
  /// fraction of the inter-node bytes leaving the leaf group (spine_crossing) and the
  /// node's share of its leaf's uplinks, read from the graph's leaf-spine edge.
  /// `node_stride`: the distance between consecutive member nodes of the group (1:
  /// adjacent nodes; a pipeline's stages lie dp·tp / gpus_per_node nodes apart), which
  /// sets how much of its traffic crosses a rail fat tree's spine (spine_crossing).
  CommFabric fabric(int nodes, int gpus_per_node, int node_stride = 1) const;

  /// Fraction of a node's inter-node bytes that leave its leaf group in a rail-aligned
  /// ring over `nodes` member nodes `node_stride` apart, nodes numbered in leaf-group order
  /// (P = nodes_per_leaf, span = nodes x stride):
  ///   0                 one switch, one leaf group in the cluster, or span dividing P
  ///                     (every group inside one leaf group);
  ///   min(1, stride/P)  otherwise: a ring leaves each leaf group it passes once, and
  ///                     a leaf group holds P/stride member nodes of it.
  /// Trees and NVLSTree are counted as rings (a leaf group's nodes form one subtree).
  double spine_crossing(int nodes, int node_stride = 1) const;

  /// A GPU vertex of one of the graph_nodes() nodes in the graph.
  HardwareGraph::vertex_descriptor gpu_vertex(int node, int index) const;

 private:
  Topology() = default;
  /// The graph of the first `graph_nodes` nodes (1..cluster.nodes) and the network.
  static Topology build_nodes(const ClusterSpec& cluster, int graph_nodes);
  int graph_nodes_ = 1;
  ClusterSpec cluster_;
  BoxSpec box_;
  const GpuSpec* gpu_ = nullptr;
  HardwareGraph graph_;
  std::vector<HardwareGraph::vertex_descriptor> gpu_vertices_;  ///< node * gpus + index
  std::vector<HardwareGraph::vertex_descriptor> cpu_vertices_;  ///< node * cpus + index
};

}  // namespace stepcast
