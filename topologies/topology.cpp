#include "topologies/topology.hpp"

#include "base/suggest.hpp"

#include "base/catalog_store.hpp"
#include "base/json_input.hpp"
#include "base/limits.hpp"

#include <fmt/format.h>

#include <boost/graph/breadth_first_search.hpp>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

namespace stepcast {

namespace {

constexpr std::array<std::string_view, 3> kIntraFabric{"nvswitch", "nvlink_mesh", "pcie"};
constexpr std::array<std::string_view, 2> kNetwork{"single_switch", "rail_fat_tree"};
constexpr std::array<std::string_view, 6> kDevice{"gpu", "nvswitch", "pcie_switch", "cpu", "nic", "network_switch"};

template <std::size_t N>
std::vector<std::string> names_of(const std::array<std::string_view, N>& a) {
  return {a.begin(), a.end()};
}

template <typename E, std::size_t N>
E enum_of(const std::string& s, const std::array<std::string_view, N>& a) {
  for (std::size_t i = 0; i < N; ++i)
    if (a[i] == s) return static_cast<E>(i);
  assert(false && "choice() validated the name");
  return static_cast<E>(0);
}

/// Checks that a link kind exists in the catalog, naming the JSON path if not.
std::string link_kind(JsonObject& obj, const std::string& key) {
  std::string kind = obj.string(key);
  if (!find_link(kind)) {
    std::vector<std::string> names;
    for (const LinkSpec& l : link_catalog()) names.push_back(l.name);
    throw obj.error(
        key, "unknown link kind \"" + kind + "\"" + did_you_mean(kind, names) + " (see `stepcast catalog links`)");
  }
  return kind;
}

const LinkSpec& link_or_throw(const std::string& kind, const std::string& where) {
  const LinkSpec* l = find_link(kind);
  if (!l) throw std::invalid_argument(where + ": unknown link kind \"" + kind + "\"");
  return *l;
}

/// The catalog of one kind: the built-in file `relative` under data_dir(), read once, then
/// whatever add_* appended (base/catalog_store.hpp).
template <typename T>
std::deque<T>& catalog_of(const char* relative, const char* list_key, T (*parse)(JsonObject&), const char* kind) {
  static_assert(!std::is_reference_v<T>);
  static std::deque<T> store = [&] {
    std::deque<T> out;
    catalog_store::append(JsonDoc::load(data_dir() / relative), list_key, parse, out, kind);
    return out;
  }();
  return store;
}

std::deque<BoxSpec>& box_store() {
  return catalog_of<BoxSpec>("topologies/catalog/boxes.json", "boxes", &parse_box, "box");
}

std::deque<ClusterSpec>& cluster_store() {
  return catalog_of<ClusterSpec>("topologies/catalog/clusters.json", "clusters", &parse_cluster, "cluster");
}

}  // namespace

std::string_view name(IntraFabric f) { return kIntraFabric[static_cast<int>(f)]; }
std::string_view name(NetworkTopology t) { return kNetwork[static_cast<int>(t)]; }
std::string_view name(DeviceKind k) { return kDevice[static_cast<int>(k)]; }

BoxSpec parse_box(JsonObject& obj) {
  BoxSpec b;
  b.name = obj.string("name");
  b.display_name = obj.string("display_name");
  b.gpu = obj.string("gpu");
  if (!find_gpu(b.gpu)) throw obj.error("gpu", "unknown GPU \"" + b.gpu + "\" (see `stepcast catalog`)");
  b.gpus = obj.int32("gpus", 1, limits::kMaxGpusPerBox);
  b.fabric = enum_of<IntraFabric>(obj.choice("fabric", names_of(kIntraFabric)), kIntraFabric);
  if (b.fabric == IntraFabric::nvswitch) {
    b.nvlink = link_kind(obj, "nvlink");
    b.nvswitches = obj.int32("nvswitches", 1, limits::kMaxDevicesPerBox);
    b.links_per_gpu = obj.int32("links_per_gpu", 1, limits::kMaxNvlinkLinks);
  } else if (b.fabric == IntraFabric::nvlink_mesh) {
    b.nvlink = link_kind(obj, "nvlink");
    JsonArray edges = obj.array("nvlink_edges");
    for (std::size_t i = 0; i < edges.size(); ++i) {
      JsonObject e = edges.object(i);
      int a = e.int32("a", 0, limits::kMaxGpusPerBox - 1);
      int c = e.int32("b", 0, limits::kMaxGpusPerBox - 1);
      int links = e.int32("links", 1, limits::kMaxNvlinkLinks);
      e.finish();
      if (a >= b.gpus || c >= b.gpus || a == c)
        throw edges.error(i, "expected two different GPU indices below " + std::to_string(b.gpus));
      b.nvlink_edges.push_back({a, c, links});
    }
  }
  b.pcie = link_kind(obj, "pcie");
  b.pcie_switches = obj.int32("pcie_switches", 0, limits::kMaxDevicesPerBox);
  b.cpus = obj.int32("cpus", 1, limits::kMaxDevicesPerBox);
  if (b.cpus > 1) b.cpu_link = link_kind(obj, "cpu_link");
  b.p2p = obj.boolean("p2p");
  b.nics = obj.int32("nics", 0, limits::kMaxNicsPerGpu * b.gpus);
  if (b.nics > 0) b.nic = link_kind(obj, "nic");
  if (obj.has("host")) {
    JsonObject h = obj.object("host");
    HostSpec host;
    host.cpu = h.string("cpu");
    host.cores = h.int32("cores", 1, 100000);
    host.memory_GiB = h.number("memory_GiB", 1, 1e6);
    host.memory_bw_GBps = h.number("memory_bw_GBps", 1, 1e6);
    host.source = h.string("source");
    h.finish();
    b.host = host;
  }
  if (obj.has("price")) {
    JsonObject p = obj.object("price");
    PriceSpec price;
    price.usd_per_gpu_hour = p.number("usd_per_gpu_hour", 1e-3, 1e4);
    price.kind = p.choice("kind", {"cloud_on_demand", "reference"});
    price.date = p.string("date");
    price.source = p.string("source");
    p.finish();
    b.price = price;
  }
  b.source = obj.string("source");
  obj.finish();
  return b;
}

double host_link_GBps_per_gpu(const BoxSpec& box) {
  const LinkSpec* link = find_link(box.pcie);
  if (!link) throw std::invalid_argument("box " + box.name + ": unknown PCIe link \"" + box.pcie + "\"");
  const double sharing = box.pcie_switches > 0 ? std::max(1.0, static_cast<double>(box.gpus) / box.pcie_switches) : 1.0;
  return link->effective_GBps / sharing;
}

const std::deque<BoxSpec>& box_catalog() { return box_store(); }

const BoxSpec* find_box(const std::string& name) { return catalog_store::find(box_store(), name); }

void add_boxes(const JsonDoc& doc) { catalog_store::append(doc, "boxes", &parse_box, box_store(), "box"); }

const BoxSpec& add_inline_box(const BoxSpec& box) { return catalog_store::add_inline(box_store(), box, "box"); }

const BoxSpec* box_with_gpu(const std::string& gpu, std::optional<IntraFabric> fabric) {
  for (const BoxSpec& b : box_catalog())
    if (b.gpu == gpu && (!fabric || b.fabric == *fabric)) return &b;
  return nullptr;
}

NetworkSpec default_network(const BoxSpec& box, std::int64_t nodes) {
  if (box.nics < 1) throw std::invalid_argument("box " + box.name + " has no NICs to assume a network of");
  NetworkSpec n{box.nic, box.nics, NetworkTopology::single_switch, 1.0};
  if (nodes > n.nodes_per_leaf) n.topology = NetworkTopology::rail_fat_tree;
  return n;
}

std::string default_network_assumption(const BoxSpec& box, const NetworkSpec& network) {
  const std::string nics =
      fmt::format("the {}'s own NICs, {} x {} per node", box.name, network.nics_per_node, network.nic);
  if (network.topology == NetworkTopology::single_switch)
    return fmt::format(
        "hardware.network: {}, all on one switch (single_switch: up to {} nodes, one leaf switch per "
        "rail; set hardware.network)",
        nics, network.nodes_per_leaf);
  return fmt::format(
      "hardware.network: {}, on a rail-optimised fat tree: leaf groups of {} nodes, non-blocking spines "
      "(rail_fat_tree, oversubscription 1: the DGX SuperPOD reference architecture's scalable units; "
      "set hardware.network)",
      nics, network.nodes_per_leaf);
}

NetworkSpec parse_network(JsonObject& obj) {
  NetworkSpec n;
  n.nic = link_kind(obj, "nic");
  n.nics_per_node = obj.int32("nics_per_node", 1, limits::kMaxDevicesPerBox);
  n.topology = enum_of<NetworkTopology>(obj.choice("topology", names_of(kNetwork)), kNetwork);
  if (n.topology == NetworkTopology::rail_fat_tree) {
    n.oversubscription = obj.number("oversubscription", 1, limits::kMaxOversubscription);
    if (auto p = obj.optional_int32("nodes_per_leaf", 1, static_cast<int>(limits::kMaxClusterGpus)))
      n.nodes_per_leaf = *p;
  } else {
    for (const char* key : {"oversubscription", "nodes_per_leaf"})
      if (obj.has(key)) throw obj.error(key, "applies to rail_fat_tree only: single_switch is one non-blocking switch");
  }
  obj.finish();
  return n;
}

ClusterSpec parse_cluster(JsonObject& obj) {
  ClusterSpec c;
  c.name = obj.string("name");
  c.box = obj.string("box");
  const BoxSpec* box = find_box(c.box);
  if (!box) throw obj.error("box", "unknown box \"" + c.box + "\" (see `stepcast catalog`)");
  c.nodes = obj.int32("nodes", 1);
  if (static_cast<std::int64_t>(c.nodes) * box->gpus > limits::kMaxClusterGpus)
    throw obj.error("nodes", "expected at most " + std::to_string(limits::kMaxClusterGpus) +
                                 " GPUs in a cluster (limits::kMaxClusterGpus), got " + std::to_string(c.nodes) +
                                 " nodes x " + std::to_string(box->gpus) + " GPUs");
  if (auto net = obj.optional_object("network")) {
    c.network = parse_network(*net);
    if (c.network->nics_per_node > limits::kMaxNicsPerGpu * box->gpus)
      throw net->error("nics_per_node", "expected at most " + std::to_string(limits::kMaxNicsPerGpu) +
                                            " NICs per GPU " + "(limits::kMaxNicsPerGpu) of " + box->name + " (" +
                                            std::to_string(box->gpus) + " GPUs), got " +
                                            std::to_string(c.network->nics_per_node));
  }
  if (c.nodes > 1 && !c.network) throw obj.error("network", "missing; a cluster of more than one node needs a network");
  c.source = obj.string("source");
  obj.finish();
  return c;
}

const std::deque<ClusterSpec>& cluster_catalog() { return cluster_store(); }

const ClusterSpec* find_cluster(const std::string& name) { return catalog_store::find(cluster_store(), name); }

void add_clusters(const JsonDoc& doc) {
  catalog_store::append(doc, "clusters", &parse_cluster, cluster_store(), "cluster");
}

// ---------------------------------------------------------------------------------------
// Building the graph

namespace {

using Vertex = HardwareGraph::vertex_descriptor;
using EdgeDesc = HardwareGraph::edge_descriptor;

Vertex add_device(HardwareGraph& g, DeviceKind kind, int node, int index) {
  return boost::add_vertex(Device{kind, node, index}, g);
}

void connect(HardwareGraph& g, Vertex a, Vertex b, const LinkSpec& link, int lanes) {
  boost::add_edge(a, b, Connection{&link, lanes, lanes * link.effective_GBps, link.latency_us}, g);
}

/// Node `node`'s devices and their edges (CPUs, PCIe switches, GPUs, NVLink, NICs), in
/// that order; appends its GPU, CPU and NIC vertices.
void add_node(HardwareGraph& g, const BoxSpec& box, int node, int nics, std::vector<Vertex>& gpu_vertices,
              std::vector<Vertex>& cpu_vertices, std::vector<Vertex>& nic_vertices) {
  const LinkSpec& pcie = link_or_throw(box.pcie, box.name);
  const LinkSpec* nvlink = box.nvlink.empty() ? nullptr : &link_or_throw(box.nvlink, box.name);
  std::vector<Vertex> cpus, switches, gpus;
  for (int c = 0; c < box.cpus; ++c) cpus.push_back(add_device(g, DeviceKind::cpu, node, c));
  for (int c = 1; c < box.cpus; ++c) connect(g, cpus[c - 1], cpus[c], link_or_throw(box.cpu_link, box.name), 1);
  for (int s = 0; s < box.pcie_switches; ++s) {
    switches.push_back(add_device(g, DeviceKind::pcie_switch, node, s));
    connect(g, switches.back(), cpus[s * box.cpus / box.pcie_switches], pcie, 1);
  }
  // GPUs spread evenly over PCIe switches (or CPU root ports), in index order.
  for (int i = 0; i < box.gpus; ++i) {
    gpus.push_back(add_device(g, DeviceKind::gpu, node, i));
    Vertex up = box.pcie_switches > 0 ? switches[i * box.pcie_switches / box.gpus] : cpus[i * box.cpus / box.gpus];
    connect(g, gpus.back(), up, pcie, 1);
  }
  if (box.fabric == IntraFabric::nvswitch) {
    assert(nvlink);
    std::vector<Vertex> planes;
    for (int s = 0; s < box.nvswitches; ++s) planes.push_back(add_device(g, DeviceKind::nvswitch, node, s));
    // Each GPU's links are spread evenly over the switch chips.
    for (int i = 0; i < box.gpus; ++i)
      for (int s = 0; s < box.nvswitches; ++s) {
        int lanes = box.links_per_gpu / box.nvswitches + (s < box.links_per_gpu % box.nvswitches ? 1 : 0);
        if (lanes > 0) connect(g, gpus[i], planes[s], *nvlink, lanes);
      }
  } else if (box.fabric == IntraFabric::nvlink_mesh) {
    for (const auto& e : box.nvlink_edges) connect(g, gpus[e[0]], gpus[e[1]], *nvlink, e[2]);
  }
  for (int i = 0; i < nics; ++i) {
    nic_vertices.push_back(add_device(g, DeviceKind::nic, node, i));
    Vertex up = box.pcie_switches > 0 ? switches[i * box.pcie_switches / nics] : cpus[i * box.cpus / nics];
    connect(g, nic_vertices.back(), up, pcie, 1);
  }
  gpu_vertices.insert(gpu_vertices.end(), gpus.begin(), gpus.end());
  cpu_vertices.insert(cpu_vertices.end(), cpus.begin(), cpus.end());
}

/// The network switches of a cluster of `cluster.nodes` nodes and their edges to the NICs
/// in `nic_vertices` (node * nics + i, for the nodes in the graph). Rail fat tree: one leaf
/// switch per rail and leaf group of nodes_per_leaf nodes (those of the graph's nodes), each
/// joined to one spine by an uplink bundle of (the leaf group's nodes x NIC rate) /
/// oversubscription, however few of its nodes are in the graph.
void add_network(HardwareGraph& g, const ClusterSpec& cluster, const LinkSpec& nic_link, int nics,
                 const std::vector<Vertex>& nic_vertices) {
  const NetworkSpec& net = *cluster.network;
  const int graph_nodes = nics > 0 ? static_cast<int>(nic_vertices.size()) / nics : 0;
  if (net.topology == NetworkTopology::single_switch) {
    Vertex sw = add_device(g, DeviceKind::network_switch, -1, 0);
    for (Vertex v : nic_vertices) connect(g, v, sw, nic_link, 1);
    return;
  }
  const int per_leaf = net.nodes_per_leaf;
  const int leaf_groups = (cluster.nodes + per_leaf - 1) / per_leaf;
  Vertex spine = add_device(g, DeviceKind::network_switch, -1, leaf_groups * nics);
  for (int group = 0; group * per_leaf < std::max(1, graph_nodes); ++group) {
    const int first = group * per_leaf, end = std::min(cluster.nodes, first + per_leaf);
    for (int r = 0; r < nics; ++r) {
      Vertex leaf = add_device(g, DeviceKind::network_switch, -1, group * nics + r);
      for (int node = first; node < std::min(end, graph_nodes); ++node)
        connect(g, nic_vertices[node * nics + r], leaf, nic_link, 1);
      const int down = end - first;
      connect(g, leaf, spine, nic_link, std::max(1, static_cast<int>(std::ceil(down / net.oversubscription))));
      Connection& up = g[boost::edge(leaf, spine, g).first];
      up.bw_GBps = down * nic_link.effective_GBps / net.oversubscription;
    }
  }
}

}  // namespace

Topology Topology::build(const ClusterSpec& cluster) { return build_nodes(cluster, 1); }

Topology Topology::build_every_node(const ClusterSpec& cluster) { return build_nodes(cluster, cluster.nodes); }

Topology Topology::build_nodes(const ClusterSpec& cluster, int graph_nodes) {
  Topology t;
  t.cluster_ = cluster;
  const BoxSpec* box = find_box(cluster.box);
  if (!box) throw std::invalid_argument("unknown box \"" + cluster.box + "\"");
  t.box_ = *box;
  t.gpu_ = find_gpu(box->gpu);
  if (!t.gpu_) throw std::invalid_argument("box " + box->name + ": unknown GPU \"" + box->gpu + "\"");
  if (cluster.nodes > 1 && !cluster.network)
    throw std::invalid_argument("cluster " + cluster.name + ": several nodes need a network");
  t.graph_nodes_ = std::clamp(graph_nodes, 1, std::max(1, cluster.nodes));

  // NICs per node and their kind: the cluster's network overrides the box's NICs.
  const LinkSpec* nic_link = nullptr;
  int nics = 0;
  if (cluster.network) {
    nic_link = &link_or_throw(cluster.network->nic, cluster.name);
    nics = cluster.network->nics_per_node;
  } else if (box->nics > 0) {
    nic_link = &link_or_throw(box->nic, box->name);
    nics = box->nics;
  }
  std::vector<Vertex> nic_vertices;  // node * nics + i
  for (int node = 0; node < t.graph_nodes_; ++node)
    add_node(t.graph_, *box, node, nics, t.gpu_vertices_, t.cpu_vertices_, nic_vertices);
  if (cluster.nodes > 1) add_network(t.graph_, cluster, *nic_link, nics, nic_vertices);
  return t;
}

HardwareGraph::vertex_descriptor Topology::gpu_vertex(int node, int index) const {
  assert(node >= 0 && node < graph_nodes_ && index >= 0 && index < gpus_per_node());
  return gpu_vertices_[static_cast<std::size_t>(node * box_.gpus + index)];
}

// ---------------------------------------------------------------------------------------
// Deriving what the collective model needs

namespace {

/// Shortest path (fewest hops) from `from` to `to` over edges accepted by `usable`;
/// returns the edges in order, empty if unreachable.
template <typename Usable>
std::vector<EdgeDesc> route(const HardwareGraph& g, Vertex from, Vertex to, Usable usable) {
  std::vector<EdgeDesc> via(boost::num_vertices(g));
  std::vector<char> seen(boost::num_vertices(g), 0);
  std::vector<Vertex> queue{from};
  seen[from] = 1;
  for (std::size_t head = 0; head < queue.size() && !seen[to]; ++head) {
    Vertex u = queue[head];
    for (auto [e, end] = boost::out_edges(u, g); e != end; ++e) {
      Vertex v = boost::target(*e, g);
      if (seen[v] || !usable(*e, v)) continue;
      seen[v] = 1;
      via[v] = *e;
      queue.push_back(v);
    }
  }
  std::vector<EdgeDesc> path;
  if (!seen[to]) return path;
  for (Vertex v = to; v != from;) {
    path.push_back(via[v]);
    v = boost::source(via[v], g) == v ? boost::target(via[v], g) : boost::source(via[v], g);
  }
  std::reverse(path.begin(), path.end());
  return path;
}

bool is_nvlink(const HardwareGraph& g, const EdgeDesc& e) { return g[e].link->nccl_class == LinkClass::nvlink; }

bool contains(const std::vector<Vertex>& members, Vertex v) {
  return std::find(members.begin(), members.end(), v) != members.end();
}

/// The slowest member's NVLink bandwidth into the ring: every NVLink of a GPU that leads
/// to another member (directly, or into the switch plane), the way NCCL spreads channels
/// over links. Infinite with no member; 0 for a member without such a link.
double nvlink_ring_bw(const HardwareGraph& g, const std::vector<Vertex>& members) {
  double nvlink_bw = std::numeric_limits<double>::infinity();
  for (Vertex m : members) {
    double bw = 0;
    for (auto [e, end] = boost::out_edges(m, g); e != end; ++e) {
      Vertex peer = boost::target(*e, g);
      if (is_nvlink(g, *e) && (g[peer].kind == DeviceKind::nvswitch || contains(members, peer))) bw += g[*e].bw_GBps;
    }
    nvlink_bw = std::min(nvlink_bw, bw);
  }
  return nvlink_bw;
}

/// Whether the members form one NVLink-connected group (through switches or each other).
bool nvlink_connected(const HardwareGraph& g, const std::vector<Vertex>& members) {
  for (std::size_t i = 1; i < members.size(); ++i) {
    const auto path = route(g, members[0], members[i], [&](const EdgeDesc& e, Vertex v) {
      return is_nvlink(g, e) && (g[v].kind == DeviceKind::nvswitch || contains(members, v));
    });
    if (path.empty()) return false;
  }
  return true;
}

/// A ring over PCIe: each neighbour pair's transfer routed through the graph (staged in
/// the host memory of the CPU nearest the sender when peer-to-peer is off), each directed
/// edge's load counted; the ring runs at the most loaded edge's share of its bandwidth,
/// and pays the slowest edge's latency.
FabricLevel pcie_ring_level(const HardwareGraph& g, const BoxSpec& box, const std::vector<Vertex>& members,
                            const std::vector<Vertex>& cpu_vertices) {
  std::map<std::pair<Vertex, Vertex>, int> load;  // directed edge -> ring transfers on it
  auto not_nvlink = [&](const EdgeDesc& e, Vertex) { return !is_nvlink(g, e); };
  auto add_path = [&](Vertex a, Vertex b) {
    auto path = route(g, a, b, not_nvlink);
    if (path.empty()) throw std::invalid_argument("box " + box.name + ": GPUs are not connected");
    Vertex at = a;
    for (const auto& e : path) {
      Vertex next = boost::source(e, g) == at ? boost::target(e, g) : boost::source(e, g);
      ++load[{at, next}];
      at = next;
    }
  };
  for (std::size_t i = 0; i < members.size(); ++i) {
    Vertex a = members[i], b = members[(i + 1) % members.size()];
    if (box.p2p) {
      add_path(a, b);
      continue;
    }
    // Without peer-to-peer the data is staged in host memory of the sender's CPU.
    auto to_cpu = route(g, a, cpu_vertices[0], not_nvlink);
    Vertex cpu = cpu_vertices[0];
    for (int c = 0; c < box.cpus; ++c) {
      auto p = route(g, a, cpu_vertices[c], not_nvlink);
      if (p.size() < to_cpu.size()) to_cpu = p, cpu = cpu_vertices[c];
    }
    add_path(a, cpu);
    add_path(cpu, b);
  }
  FabricLevel intra;
  intra.ranks = static_cast<int>(members.size());
  intra.link = LinkClass::pcie;
  intra.bw_GBps = std::numeric_limits<double>::infinity();
  for (const auto& [dir, count] : load) {
    auto [e, ok] = boost::edge(dir.first, dir.second, g);
    assert(ok);
    intra.bw_GBps = std::min(intra.bw_GBps, g[e].bw_GBps / count);
    intra.latency_us = std::max(intra.latency_us, g[e].latency_us);
  }
  intra.kind = box.pcie + (box.p2p ? "" : " (via host memory)");
  return intra;
}

/// Inter level: every NIC of a box carries one ring channel across the boundary, so a
/// node's bandwidth into the ring is its NICs' summed effective rate (the multi-node rule
/// of thumb busbw ~ min(intra busbw, NICs x NIC rate), nccl-tests #309). On a rail fat
/// tree NCCL keeps each ring channel on its own rail; what crosses the spine is the
/// separate SpineLevel (spine_level).
FabricLevel inter_level(const ClusterSpec& cluster, int nodes) {
  const NetworkSpec& net = *cluster.network;
  const LinkSpec& nic = link_or_throw(net.nic, cluster.name);
  FabricLevel inter;
  inter.ranks = nodes;
  inter.link = LinkClass::network;
  inter.bw_GBps = net.nics_per_node * nic.effective_GBps;
  inter.latency_us = nic.latency_us;
  inter.simple_only = nic.simple_only;
  inter.kind = std::to_string(net.nics_per_node) + "x " + nic.name;
  inter.channels = net.nics_per_node;
  return inter;
}

/// Intra level. NVLink: every GPU drives the ring through all its NVLinks that lead to the
/// other members; the slowest GPU bounds the ring. If the members are not all joined by
/// NVLink, the ring runs over PCIe (pcie_ring_level).
FabricLevel intra_level(const HardwareGraph& g, const BoxSpec& box, const std::vector<Vertex>& members,
                        const std::vector<Vertex>& cpu_vertices) {
  const int gpus_per_node = static_cast<int>(members.size());
  const double nvlink_bw = nvlink_ring_bw(g, members);
  FabricLevel intra;
  intra.ranks = gpus_per_node;
  if (gpus_per_node == 1) {
    const bool pcie = box.fabric == IntraFabric::pcie;
    intra.link = pcie ? LinkClass::pcie : LinkClass::nvlink;
    intra.bw_GBps = pcie ? link_or_throw(box.pcie, box.name).effective_GBps : nvlink_bw;
    intra.kind = pcie ? box.pcie : box.nvlink;
  } else if (box.fabric != IntraFabric::pcie && nvlink_connected(g, members)) {
    intra.link = LinkClass::nvlink;
    intra.bw_GBps = nvlink_bw;
    intra.kind = box.nvlink;
  } else {
    intra = pcie_ring_level(g, box, members, cpu_vertices);
  }
  return intra;
}

}  // namespace

double Topology::spine_crossing(int nodes, int node_stride) const {
  const auto& net = cluster_.network;
  if (!net || net->topology != NetworkTopology::rail_fat_tree || nodes <= 1) return 0;
  const std::int64_t per_leaf = net->nodes_per_leaf;
  if (cluster_.nodes <= per_leaf) return 0;  // one leaf group: every rail stays on its leaf
  const std::int64_t stride = std::max(1, node_stride);
  const std::int64_t span = static_cast<std::int64_t>(nodes) * stride;
  if (span <= per_leaf && per_leaf % span == 0) return 0;  // groups tile the leaf groups
  return std::min(1.0, static_cast<double>(stride) / static_cast<double>(per_leaf));
}

namespace {

/// The spine as node 0 sees it: the uplink bundle of the leaf switch its NIC 0 hangs from
/// (read from the graph), shared by the leaf group's nodes, times the node's rails.
std::optional<SpineLevel> spine_level(const HardwareGraph& g, const ClusterSpec& cluster, double crossing) {
  const NetworkSpec& net = *cluster.network;
  if (!(crossing > 0) || !(net.oversubscription > 1)) return std::nullopt;  // 1:1 never binds
  for (auto [v, vend] = boost::vertices(g); v != vend; ++v) {
    if (g[*v].kind != DeviceKind::nic || g[*v].node != 0 || g[*v].index != 0) continue;
    for (auto [e, end] = boost::out_edges(*v, g); e != end; ++e) {
      const Vertex leaf = boost::target(*e, g);
      if (g[leaf].kind != DeviceKind::network_switch) continue;
      for (auto [u, uend] = boost::out_edges(leaf, g); u != uend; ++u) {
        if (g[boost::target(*u, g)].kind != DeviceKind::network_switch) continue;
        const int leaf_nodes = std::min(cluster.nodes, net.nodes_per_leaf);
        return SpineLevel{crossing, g[*u].bw_GBps / leaf_nodes * net.nics_per_node, net.oversubscription};
      }
    }
  }
  throw std::logic_error("rail fat tree without a leaf uplink for node 0");
}

}  // namespace

CommFabric Topology::fabric(int nodes, int gpus_per_node, int node_stride) const {
  if (nodes < 1 || nodes > this->nodes())
    throw std::invalid_argument("fabric: " + std::to_string(nodes) + " nodes requested, the cluster has " +
                                std::to_string(this->nodes()));
  if (gpus_per_node < 1 || gpus_per_node > box_.gpus)
    throw std::invalid_argument("fabric: " + std::to_string(gpus_per_node) + " GPUs per node requested, the box has " +
                                std::to_string(box_.gpus));
  CommFabric f;
  f.arch = gpu_->arch;
  std::vector<Vertex> members;
  for (int i = 0; i < gpus_per_node; ++i) members.push_back(gpu_vertex(0, i));
  f.intra = intra_level(graph_, box_, members, cpu_vertices_);
  const LinkSpec* nvlink = box_.nvlink.empty() ? nullptr : find_link(box_.nvlink);
  f.nvls = box_.fabric == IntraFabric::nvswitch && gpus_per_node > 1 && nvlink && nvlink->nvls;
  if (nodes > 1) {
    f.inter = inter_level(cluster_, nodes);
    f.spine = spine_level(graph_, cluster_, spine_crossing(nodes, node_stride));
  }
  return f;
}

}  // namespace stepcast
