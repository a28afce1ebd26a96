/// \file
/// NCCL collective cost model (see collective.hpp). Every formula below is re-derived from
/// the structure of NCCL's tuning model (src/graph/tuning.cc, NCCL 2.30.7, line numbers as
/// in ../shared/reference/nccl-cost-model.md beside the repository) or from counting the
/// bytes each link carries; no NCCL code is used.
///
/// Conventions. n = ranks, N = nodes, ppn = GPUs per node, I = intra.bw_GBps (what one GPU
/// pushes into a ring inside the node), E = inter.bw_GBps (one node's NICs together),
/// C = channels. "B" is NCCL's per-algorithm bus bandwidth (GB/s): for Ring it equals the
/// nccl-tests busbw; the algorithm bandwidth (algbw = S / t) follows from it per algorithm.
/// Time of one call = launch overhead + latency + S / algbw.
///
/// Not modelled: CollNet/SHARP, PAT, NCCL's mid-size treeCorrectionFactor (tuning.cc @
/// 5067397c L623; tried in the choice of algorithm: the published runs moved by 0.5% at
/// most, the p4dn two-node tree away from its measurement), channel/thread trimming for
/// small messages, the CPU vendor (Intel assumed for the network post overhead and
/// multi-node llMaxBw).
#include "model/collective.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace stepcast {

namespace {

enum class Algo { ring, tree, nvls, hierarchical };
/// NCCL's protocols, in its order [LL, LL128, Simple].
enum class Proto { ll, ll128, simple };
constexpr std::array<Proto, 3> kProtos = {Proto::ll, Proto::ll128, Proto::simple};
constexpr std::array<std::string_view, 3> kProtoNames = {"LL", "LL128", "Simple"};
constexpr std::array<std::string_view, 4> kAlgoNames = {"ring", "tree", "nvls", "hierarchical"};

int idx(Proto p) { return static_cast<int>(p); }

// ---------------------------------------------------------------------------------------
// Constants of NCCL's tuning model. Units: µs and GB/s. Protocol order [LL, LL128, Simple].
// ---------------------------------------------------------------------------------------

/// Row of NCCL's per-generation cap tables: 0 Volta, 1 Ampere, 2 Hopper, 3 Blackwell.
/// Turing is grouped with Volta and Ada with Ampere (NCCL indexes by compute capability:
/// below sm80 -> Volta row, sm80-sm89 -> Ampere row).
/// Source: tuning.cc L177-211 (cap tables indexed by compute-capability class).
int cap_row(GpuArch a) {
  switch (a) {
    case GpuArch::volta:
    case GpuArch::turing:
      return 0;
    case GpuArch::ampere:
    case GpuArch::ada:
      return 1;
    case GpuArch::hopper:
      return 2;
    case GpuArch::blackwell:
      return 3;
    case GpuArch::cdna3:
      return 2;  // RCCL keeps NCCL's tuning tables; MI300 takes Hopper's row (guess)
  }
  return 1;
}

/// Column of the node-count-dependent caps: nNodes = 1 / 2 / >= 3.
/// Source: tuning.cc L177-211.
int node_col(int nodes) { return nodes <= 1 ? 0 : (nodes == 2 ? 1 : 2); }

/// Base latency per algorithm and protocol, µs: Tree 6.8/14.0/8.4, Ring 6.6/14.0/8.4,
/// NVLS/NVLSTree 0. Source: tuning.cc L150-155.
double base_latency_us(Algo a, Proto p) {
  static constexpr double tree[3] = {6.8, 14.0, 8.4};
  static constexpr double ring[3] = {6.6, 14.0, 8.4};
  switch (a) {
    case Algo::tree:
      return tree[idx(p)];
    case Algo::ring:
      return ring[idx(p)];
    default:
      return 0.0;
  }
}

/// Hardware latency per hop, µs, per algorithm, link class and protocol:
/// NVLink: Tree .6/1.25/4.0, Ring .6/1.9/3.4, NVLS 25; PCIe: Tree 1.0/1.9/4.0,
/// Ring 1.0/2.5/5.7, NVLS 0; network: Tree 5.0/8.5/14, Ring 2.7/4.0/14.0, NVLS 18 (NVLSTree
/// 20.9, NVLink 25). `nvls_tree` selects the NVLSTree column for Algo::nvls.
/// Source: tuning.cc L156-176.
double hw_latency_us(Algo a, LinkClass link, Proto p, bool nvls_tree = false) {
  static constexpr double tree[3][3] = {{0.6, 1.25, 4.0}, {1.0, 1.9, 4.0}, {5.0, 8.5, 14.0}};
  static constexpr double ring[3][3] = {{0.6, 1.9, 3.4}, {1.0, 2.5, 5.7}, {2.7, 4.0, 14.0}};
  static constexpr double nvls[3] = {25.0, 0.0, 18.0};
  static constexpr double nvls_tree_row[3] = {25.0, 0.0, 20.9};
  const int l = static_cast<int>(link);
  switch (a) {
    case Algo::tree:
      return tree[l][idx(p)];
    case Algo::ring:
      return ring[l][idx(p)];
    case Algo::nvls:
      return nvls_tree ? nvls_tree_row[l] : nvls[l];
    default:
      return 0.0;
  }
}

/// Network post overhead per ring step, µs: 1.0 on Intel hosts (2.0 on AMD), x3 for
/// Simple; multi-node Ring only. The fabric does not carry the CPU vendor, so Intel's value
/// is assumed. Source: tuning.cc L225-233.
double net_overhead_us(Proto p) { return p == Proto::simple ? 3.0 : 1.0; }

/// LL's bandwidth ceiling, GB/s, per generation and node count (1 / 2 / >=3):
/// Volta 39/39/20.4, Ampere 87.7/22.5/19.0, Hopper 141/45/35, Blackwell 282/90/70. On
/// several nodes NCCL picks the row by CPU vendor for pre-Hopper GPUs (Intel: the Volta row);
/// Intel is assumed. Source: tuning.cc L177-211, L268-271.
double ll_max_bw_GBps(GpuArch arch, int nodes) {
  static constexpr double table[4][3] = {
      {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
  int row = cap_row(arch);
  if (nodes > 1 && row < 2) row = 0;
  return table[row][node_col(nodes)];
}

/// Per-channel LL128 ring cap, GB/s: 20 / 20 / 36.7 / 40. Source: tuning.cc L177-211.
double per_ch_ring_ll128_GBps(GpuArch arch) {
  static constexpr double table[4] = {20.0, 20.0, 36.7, 40.0};
  return table[cap_row(arch)];
}

/// Per-channel Tree (all protocols) cap, GB/s: Volta 26.5/18.5/10, Ampere 24/23.6/17.8,
/// Hopper 38.7/41.4/36, Blackwell 70/42.8/24. Source: tuning.cc L177-211.
double per_ch_tree_GBps(GpuArch arch, int nodes) {
  static constexpr double table[4][3] = {
      {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
  return table[cap_row(arch)][node_col(nodes)];
}

/// Per-channel Tree LL128 cap, GB/s: Volta 20, Ampere 20, Hopper 36.7/36.7/29,
/// Blackwell 55.6/31.67/20. Source: tuning.cc L177-211.
double per_ch_tree_ll128_GBps(GpuArch arch, int nodes) {
  static constexpr double table[4][3] = {
      {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
  return table[cap_row(arch)][node_col(nodes)];
}

/// Per-channel NVLSTree cap, GB/s (0 = none): Hopper 0/57.7/45.5, Blackwell 0/96/80.
/// Source: tuning.cc L177-211.
double per_ch_nvls_tree_GBps(GpuArch arch, int nodes) {
  static constexpr double table[4][3] = {{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}};
  return table[cap_row(arch)][node_col(nodes)];
}

/// NVLS efficiency: 0.85 Hopper, 0.74 Blackwell. Source: tuning.cc L138-144.
double nvls_efficiency(GpuArch arch) { return arch == GpuArch::blackwell ? 0.74 : 0.85; }

/// NVLSTree channels ("heads"): one per NIC, each head GPU feeding one NIC — the level's
/// `channels` when the topology sets it (NICs per node), else one per GPU (the rail layout
/// of HGX/DGX boxes, one NIC per GPU). NCCL's per-channel NVLSTree cap then bounds
/// B = busbw <= heads x perChMaxNVLSTree. Source: search.cc (NVLS search, one head per NIC),
/// tuning.cc L177-211.
int nvls_heads(const CommFabric& f) {
  if (f.inter && f.inter->channels > 0) return f.inter->channels;
  return std::max(1, f.intra.ranks);
}

/// Per-call host overhead, µs: kernel launch, proxy wake-up and nccl-tests' per-iteration
/// timing, none of which NCCL's tuning model contains. FITTED, one value per GPU generation
/// group (not per row): pre-Hopper 30 µs, fitted on "A100 NVSwitch 1x8 1 KB ~45 µs" and
/// "2x DGX A100 Ring 8 B 93 µs" (both pre-Hopper software stacks, NCCL 2.16-2.18);
/// Hopper/Blackwell 6.5 µs, fitted on "H200 1x8 1 KB ~30 µs", "H100 2x8 8 B 24.7 µs" and
/// "H100 4x8 8 B 34.5 µs" (the centre of the interval that keeps all three within 30%).
double launch_overhead_us(GpuArch arch) { return (arch == GpuArch::hopper || arch == GpuArch::blackwell) ? 6.5 : 30.0; }

/// Whether NCCL enables LL128 by default: only when the GPUs inside the node are joined by
/// NVLink and are sm70/sm80/sm90/sm100 (Volta, Ampere, Hopper, Blackwell; not Turing/Ada).
/// Source: tuning.cc, protocol-enable block after the bandwidth loop (LL128 default).
bool ll128_enabled(const CommFabric& f) {
  const bool arch_ok = f.arch == GpuArch::volta || f.arch == GpuArch::ampere || f.arch == GpuArch::hopper ||
                       f.arch == GpuArch::blackwell;
  return arch_ok && (f.intra.ranks == 1 || f.intra.link == LinkClass::nvlink);
}

// ---------------------------------------------------------------------------------------
// Small pure building blocks.
// ---------------------------------------------------------------------------------------

/// Ring steps: 2(n-1) all-reduce, n-1 all-gather/reduce-scatter, n broadcast.
/// Source: tuning.cc L289.
int ring_steps(Collective c, int n) {
  switch (c) {
    case Collective::all_reduce:
      return 2 * (n - 1);
    case Collective::all_gather:
    case Collective::reduce_scatter:
      return n - 1;
    case Collective::broadcast:
      return n;
    case Collective::all_to_all:
      return n - 1;
  }
  return n;
}

/// Channels assumed: the level's `channels` if set, else C = clamp(round(bw / 20), 2, 32):
/// NCCL's search ends with per-channel bandwidths near one NVLink's effective rate (20 GB/s
/// on SM70-SM90; topo.h L19-24) — DGX A100: 240 / 20 = 12 channels, DGX H100: 18 — never
/// fewer than 2 rings and at most 32 (MAXCHANNELS). Source: search.cc L1036-1067.
int channels_for(const FabricLevel& level) {
  if (level.channels > 0) return level.channels;
  const long c = std::lround(level.bw_GBps / 20.0);
  return static_cast<int>(std::clamp<long>(c, 2, 32));
}

/// Busiest node's inter-node load in a double binary tree, in units of S per direction:
/// k = (most tree edges at one node over both trees) / 2, each edge carrying S/2 each way.
/// N = 2: every node has one edge per tree -> k = 1 (so algbw can reach the full NIC rate
/// and busbw = 2(n-1)/n x NIC, above the NIC rate: each byte crosses the inter-node link
/// once per direction instead of ring's 2(n-1)/n times — p4dn 2 nodes 57.2 GB/s busbw over
/// 4x100G EFA); N = 3: chain + shifted chain -> 3 edges, k = 1.5; N >= 4: a node is inner
/// (parent + 2 children) in one tree and a leaf in the other -> 4 edges, k = 2.
/// Source: NCCL trees.cc (double binary tree layout), byte counting.
double tree_inter_load(int nodes) {
  if (nodes <= 1) return 0.0;
  if (nodes == 2) return 1.0;
  if (nodes == 3) return 1.5;
  return 2.0;
}

/// Fraction of the bytes on the wire that are payload: LL 1/2 (an 8-byte flag per 8 bytes of
/// data), LL128 120/128 (8 flag bytes per 128-byte line), Simple 1. These are the same
/// factors NCCL applies to LL/LL128 bandwidth. Source: tuning.cc L306-382 (0.5, 120/128).
double payload_fraction(Proto p) {
  switch (p) {
    case Proto::ll:
      return 0.5;
    case Proto::ll128:
      return 120.0 / 128.0;
    case Proto::simple:
      return 1.0;
  }
  return 1.0;
}

/// Ring bus bandwidth per protocol, B (= nccl-tests busbw):
/// LL: min(llMaxBw, 0.5 B0); LL128: min(0.92 B0, C x perChMaxRingLL128); Simple: B0, where
/// B0 = I on one node and min(I, E) across nodes (the slower of the ring's NVLink hops and
/// the node's NICs; multi-node busbw ~ min(intra busbw, NICs x NIC_eff), nccl-tests #309).
/// Source: tuning.cc L306-382.
double ring_bus_bw_GBps(Proto p, double b0_GBps, int channels, GpuArch arch, int nodes) {
  switch (p) {
    case Proto::ll:
      return std::min(ll_max_bw_GBps(arch, nodes), 0.5 * b0_GBps);
    case Proto::ll128:
      return std::min(0.92 * b0_GBps, channels * per_ch_ring_ll128_GBps(arch));
    case Proto::simple:
      return b0_GBps;
  }
  return b0_GBps;
}

/// Tree all-reduce algorithm bandwidth: B = min(0.92 B0, C x perChMaxTree[N]), then
/// LL: min(B / 3.8, llMaxBw); LL128: min(B x (7/9 if N = 1 else 120/128),
/// C x perChMaxTreeLL128[N]); Simple: B; algbw = B / 2. The tree is NCCL's balanced tree
/// (init.cc searches BALANCED_TREE first), which tuning.cc's 0.85 for a plain TREE leaves
/// alone. Across nodes C is the inter level's channels where it states them, one per NIC
/// (the tree takes the ring search's channels, init.cc; each crosses one NIC), so the
/// per-channel caps bound each NIC: 8 NICs x 24 GB/s on Blackwell beyond two nodes, 8 x
/// 42.8 on two (B200 over 8x 400G InfiniBand measured 193-196 and 335 GB/s busbw, half of
/// ring's, at 4-64 and 2 nodes), 4 x 36 on Hopper (150 measured over 4x 400G RoCE, 5
/// nodes): data/validation/collectives.jsonl.
/// B0 = I for N <= 2 (NCCL's bwIntra: on two nodes the NICs carry each byte once per
/// direction, so the intra chain is the limit) and min(I, E) for N >= 3 (bwInter).
/// Finally algbw <= payload x E / k(N), the NICs' share (tree_inter_load) at the protocol's
/// payload fraction, which NCCL's per-channel search enforces implicitly and which binds on
/// two nodes with slow NICs (no 0.92 there: E is already a measured effective rate).
/// Source: tuning.cc L306-382 (Tree), byte counting for the NIC bound.
double tree_alg_bw_GBps(Proto p, double intra_GBps, double inter_GBps, int nodes, int channels, GpuArch arch) {
  const double b0 = nodes <= 2 ? intra_GBps : std::min(intra_GBps, inter_GBps);
  double b = std::min(0.92 * b0, channels * per_ch_tree_GBps(arch, nodes));
  switch (p) {
    case Proto::ll:
      b = std::min(b / 3.8, ll_max_bw_GBps(arch, nodes));
      break;
    case Proto::ll128:
      b = std::min(b * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), channels * per_ch_tree_ll128_GBps(arch, nodes));
      break;
    case Proto::simple:
      break;
  }
  double alg = 0.5 * b;
  if (nodes > 1) alg = std::min(alg, payload_fraction(p) * inter_GBps / tree_inter_load(nodes));
  return alg;
}

/// NVLS (NVLink SHARP) algorithm bandwidth, Simple only, by counting NVLink bytes per GPU.
/// All-reduce: each GPU sends its whole input to the switch for reduction (S) and stores its
/// reduced shard for multicast (S/ppn); it receives its reduced shard (S/ppn) and every
/// multicast shard (S): t = S (1 + 1/ppn) / (I x eff), algbw = I x eff x ppn / (ppn + 1).
/// All-gather / reduce-scatter: S per GPU in one direction: algbw = I x eff.
/// (NCCL writes the same with bwIntra x eff x (C-1)/C x 2 per channel; the per-byte form
/// reproduces the GPU-count trend of nccl #1455: 420/440/460/480 GB/s at 5-8 GPUs.)
/// Across nodes (NVLSTree, all-reduce): also algbw <= E / k(N) (tree_inter_load) and
/// B = algbw x factor <= heads x perChMaxNVLSTree[N] (57.7 / 45.5 GB/s per head on Hopper
/// at 2 / >= 3 nodes; nvls_heads). eff = nvlsEfficiency.
/// Source: tuning.cc L138-144, L306-382 (NVLS, NVLSTree).
double nvls_alg_bw_GBps(Collective c, const CommFabric& f) {
  const int ppn = f.intra.ranks;
  const double eff = nvls_efficiency(f.arch);
  if (c != Collective::all_reduce) return f.intra.bw_GBps * eff;
  double alg = f.intra.bw_GBps * eff * ppn / (ppn + 1.0);
  const int nodes = f.nodes();
  if (nodes > 1) {
    alg = std::min(alg, f.inter->bw_GBps / tree_inter_load(nodes));
    const double cap = per_ch_nvls_tree_GBps(f.arch, nodes);
    if (cap > 0) alg = std::min(alg, nvls_heads(f) * cap / bus_bandwidth_factor(c, f.ranks()));
  }
  return alg;
}

/// Network latency of one inter-node hop, µs: NCCL's network row for the algorithm (Tree's
/// row when ppn = 1) plus the fabric's extra per-hop latency (socket stack), counted twice
/// for Simple. Source: tuning.cc L384-435 (interLat).
double inter_latency_us(Algo a, Proto p, const CommFabric& f, bool nvls_tree = false) {
  const Algo row = (f.intra.ranks == 1 && a == Algo::ring) ? Algo::tree : a;
  const double extra = f.inter ? f.inter->latency_us : 0.0;
  return hw_latency_us(row, LinkClass::network, p, nvls_tree) + extra * (p == Proto::simple ? 2.0 : 1.0);
}

/// Intra-node latency of one hop, µs: NCCL's row for the link class plus the level's extra.
/// Source: tuning.cc L156-176.
double intra_latency_us(Algo a, Proto p, const CommFabric& f, bool nvls_tree = false) {
  return hw_latency_us(a, f.intra.link, p, nvls_tree) + f.intra.latency_us;
}

/// Ring latency, µs: one node: base + nsteps x hwI; several nodes:
/// base + (nsteps - s) x max(hwI, netOverhead) + s x interLat, s = 2(N-1) all-reduce else
/// N-1; multi-node all-reduce Simple x1.4 (x1.9 before Ampere) once S / (C n) >= 64 B.
/// Broadcast uses the same step count with nsteps = n.
/// Source: tuning.cc L225-233, L384-435, L630-655.
double ring_latency_us(Collective c, Proto p, const CommFabric& f, double bytes, int channels) {
  const int n = f.ranks();
  const int nodes = f.nodes();
  const int nsteps = ring_steps(c, n);
  const double base = base_latency_us(Algo::ring, p);
  const double hw_intra = intra_latency_us(Algo::ring, p, f);
  if (nodes == 1) return base + nsteps * hw_intra;
  const int s = c == Collective::all_reduce ? 2 * (nodes - 1) : nodes - 1;
  double lat = base + (nsteps - s) * std::max(hw_intra, net_overhead_us(p)) + s * inter_latency_us(Algo::ring, p, f);
  if (c == Collective::all_reduce && p == Proto::simple && bytes / (channels * n) >= 64.0)
    lat *= cap_row(f.arch) == 0 ? 1.9 : 1.4;
  return lat;
}

/// Tree all-reduce latency, µs: base + 2 [(ppn - 1) hwI + log2(N) interLat].
/// Source: tuning.cc L384-435.
double tree_latency_us(Proto p, const CommFabric& f) {
  const int ppn = f.intra.ranks;
  const double hops = f.nodes() > 1 ? std::log2(static_cast<double>(f.nodes())) : 0.0;
  const double inter = f.nodes() > 1 ? inter_latency_us(Algo::tree, p, f) : 0.0;
  return base_latency_us(Algo::tree, p) + 2.0 * ((ppn - 1) * intra_latency_us(Algo::tree, p, f) + hops * inter);
}

/// NVLS latency, µs: one node: hwI (25 µs on NVLink); NVLSTree across nodes:
/// base (0) + hwI + 2 log2(N) interLat (20.9 µs per network hop).
/// Source: tuning.cc L384-435.
double nvls_latency_us(const CommFabric& f) {
  if (f.nodes() == 1) return intra_latency_us(Algo::nvls, Proto::simple, f);
  const double hops = std::log2(static_cast<double>(f.nodes()));
  return base_latency_us(Algo::nvls, Proto::simple) + intra_latency_us(Algo::nvls, Proto::simple, f, true) +
         2.0 * hops * inter_latency_us(Algo::nvls, Proto::simple, f, true);
}

// ---------------------------------------------------------------------------------------
// Evaluation of one (algorithm, protocol) pair.
// ---------------------------------------------------------------------------------------

struct Candidate {
  double time_s = std::numeric_limits<double>::infinity();
  Algo algo = Algo::ring;
  Proto proto = Proto::simple;
};

/// Why `a` cannot run collective `c` on `f`; empty if it can.
std::string ineligible_reason(Algo a, Collective c, const CommFabric& f) {
  switch (a) {
    case Algo::ring:
      return {};
    case Algo::tree:
      if (c != Collective::all_reduce) return "NCCL's tree runs all_reduce only, not " + std::string(name(c));
      return {};
    case Algo::nvls:
      if (!f.nvls) return "the fabric has no NVLink SHARP (NVLS) switches";
      if (f.arch != GpuArch::hopper && f.arch != GpuArch::blackwell) return "NVLS needs Hopper or Blackwell GPUs";
      if (f.intra.link != LinkClass::nvlink || f.intra.ranks < 2)
        return "NVLS needs at least 2 NVLink-connected GPUs per node";
      if (c == Collective::broadcast) return "NVLS does not run broadcast";
      if (f.nodes() > 1 && c != Collective::all_reduce)
        return "multi-node NVLS is modelled for all_reduce only (NVLSTree)";
      return {};
    case Algo::hierarchical:
      if (f.nodes() < 2) return "hierarchical needs at least 2 nodes";
      if (c == Collective::broadcast) return "hierarchical does not run broadcast";
      return {};
  }
  return "unknown algorithm";
}

/// Protocols an algorithm can use: NVLS Simple only; Simple only across nodes whose transport
/// delivers out of order (EFA: aws/aws-ofi-nccl #76, "EFA doesn't support LL and LL128");
/// LL128 where NCCL enables it.
bool protocol_allowed(Algo a, Proto p, const CommFabric& f) {
  if (a == Algo::nvls) return p == Proto::simple;
  if (f.inter && f.inter->simple_only && p != Proto::simple) return false;
  if (p == Proto::ll128) return ll128_enabled(f);
  return true;
}

/// One single-phase algorithm's latency, bandwidth and link loads (see CollectivePhase).
struct PhaseParts {
  double latency_us = 0;  ///< launch overhead + NCCL latency
  double alg_GBps = 0;
  double intra_load = 0;  ///< bytes on one GPU's ring link per byte of S
  double inter_load = 0;  ///< bytes through one node's NICs per byte of S (all rails)
  double spine_load = 0;  ///< bytes through the node's share of the spine per byte of S
};

/// The spine's share of a phase on a rail fat tree: spine_load = inter_load x crossing
/// (the node's inter-node bytes that leave its leaf group), and the phase runs no faster
/// than the node's share of the uplinks allows: algbw <= spine bw / spine_load. With 1:1
/// the cap never binds (spine bw = the NICs' rate, spine_load <= inter_load). Source: byte
/// counting on the rail-aligned ring (topology.hpp spine_crossing).
void apply_spine(PhaseParts& out, const CommFabric& f) {
  if (!f.spine || !(out.inter_load > 0)) return;
  out.spine_load = out.inter_load * f.spine->crossing;
  if (out.spine_load > 0) out.alg_GBps = std::min(out.alg_GBps, f.spine->bw_GBps / out.spine_load);
}

/// Latency, algbw and loads of (a, p) for a single-phase algorithm (ring, tree, nvls).
/// Loads count the bytes each level carries per byte of S, so that level bandwidth / load
/// >= algbw: ring 2(n-1)/n (all-reduce) or (n-1)/n on both levels (nccl-tests busbw);
/// tree 2 inside the node (a chain carries S up and S down) and k(N) across nodes
/// (tree_inter_load); NVLS (ppn+1)/ppn for all-reduce (multicast shard + reduced shard), 1
/// for all-gather/reduce-scatter, k(N) across nodes. Source: byte counting, as for busbw.
PhaseParts phase_parts(Algo a, Proto p, Collective c, double bytes, const CommFabric& f) {
  const int nodes = f.nodes();
  const int ppn = f.intra.ranks;
  const double e = nodes > 1 ? f.inter->bw_GBps : 0.0;
  // With one GPU per node the intra level carries nothing: the NICs are the only limit.
  const double intra = ppn > 1 ? f.intra.bw_GBps : std::numeric_limits<double>::infinity();
  const int channels = channels_for(ppn > 1 ? f.intra : *f.inter);
  PhaseParts out;
  double lat = 0;
  switch (a) {
    case Algo::ring: {
      const double b0 = nodes > 1 ? std::min(intra, e) : intra;
      const double factor = bus_bandwidth_factor(c, f.ranks());
      out.alg_GBps = ring_bus_bw_GBps(p, b0, channels, f.arch, nodes) / factor;
      lat = ring_latency_us(c, p, f, bytes, channels);
      out.intra_load = ppn > 1 ? factor : 0.0;
      out.inter_load = nodes > 1 ? factor : 0.0;
      break;
    }
    case Algo::tree:
      // Across nodes the per-channel caps bound each NIC, where the level states its NICs.
      out.alg_GBps = tree_alg_bw_GBps(p, intra, e, nodes,
                                      nodes > 1 && f.inter->channels > 0 ? f.inter->channels : channels, f.arch);
      lat = tree_latency_us(p, f);
      out.intra_load = ppn > 1 ? 2.0 : 0.0;
      out.inter_load = nodes > 1 ? tree_inter_load(nodes) : 0.0;
      break;
    case Algo::nvls:
      out.alg_GBps = nvls_alg_bw_GBps(c, f);
      lat = nvls_latency_us(f);
      out.intra_load = c == Collective::all_reduce ? (ppn + 1.0) / ppn : 1.0;
      out.inter_load = nodes > 1 ? tree_inter_load(nodes) : 0.0;
      break;
    case Algo::hierarchical:
      break;
  }
  out.latency_us = launch_overhead_us(f.arch) + lat;
  out.inter_load *= f.nic_sharing;
  apply_spine(out, f);
  return out;
}

/// Time of (a, p) for a single-phase algorithm (ring, tree, nvls), seconds.
/// time = launch overhead + latency + S / algbw. Source: tuning.cc L630-655.
double phase_time_s(Algo a, Proto p, Collective c, double bytes, const CommFabric& f) {
  const PhaseParts parts = phase_parts(a, p, c, bytes, f);
  return parts.latency_us * 1e-6 + bytes / (parts.alg_GBps * 1e9);
}

/// Fastest protocol of a single-phase algorithm, or of every eligible one for "auto".
Candidate best_single(Collective c, double bytes, const CommFabric& f, const std::vector<Algo>& algos) {
  Candidate best;
  for (Algo a : algos) {
    for (Proto p : kProtos) {
      if (!protocol_allowed(a, p, f)) continue;
      const double t = phase_time_s(a, p, c, bytes, f);
      if (t < best.time_s) best = {t, a, p};
    }
  }
  return best;
}

/// NCCL's automatic choice among single-phase algorithms: every eligible one of ring, tree
/// and NVLS, every allowed protocol, smallest time. Source: enqueue.cc L2035-2113.
Candidate best_auto(Collective c, double bytes, const CommFabric& f) {
  std::vector<Algo> algos;
  for (Algo a : {Algo::ring, Algo::tree, Algo::nvls})
    if (ineligible_reason(a, c, f).empty()) algos.push_back(a);
  return best_single(c, bytes, f, algos);
}

/// The node's own GPUs as a one-node fabric.
CommFabric intra_only(const CommFabric& f) { return restrict_fabric(f, FabricScope::intra_node); }

/// The rails across nodes: ppn independent collectives of N ranks, one GPU per node, each
/// with the node's NIC rate shared ppn ways.
CommFabric rails(const CommFabric& f) { return restrict_fabric(f, FabricScope::inter_node); }

/// Hierarchical (2-D) collective, the way HYBRID_SHARD / 2D all-reduce do it:
/// all-reduce = intra reduce-scatter (S) + inter all-reduce over the rails (S / ppn)
///            + intra all-gather (S);
/// all-gather = inter all-gather (S / ppn) + intra all-gather (S);
/// reduce-scatter = intra reduce-scatter (S) + inter reduce-scatter (S / ppn).
/// Each phase is a separate NCCL call at its own best algorithm and protocol (and pays its
/// own launch overhead). Reports the protocol of the inter-node phase.
Candidate hierarchical(Collective c, double bytes, const CommFabric& f) {
  const CommFabric in = intra_only(f);
  const CommFabric across = rails(f);
  const double shard = bytes / f.intra.ranks;
  auto phase = [](Collective pc, double b, const CommFabric& g) {
    if (g.ranks() <= 1) return Candidate{0.0, Algo::ring, Proto::simple};
    return best_auto(pc, b, g);
  };
  Candidate inter;
  double t = 0;
  switch (c) {
    case Collective::all_reduce:
      inter = phase(Collective::all_reduce, shard, across);
      t = phase(Collective::reduce_scatter, bytes, in).time_s + inter.time_s +
          phase(Collective::all_gather, bytes, in).time_s;
      break;
    case Collective::all_gather:
      inter = phase(Collective::all_gather, shard, across);
      t = inter.time_s + phase(Collective::all_gather, bytes, in).time_s;
      break;
    case Collective::reduce_scatter:
      inter = phase(Collective::reduce_scatter, shard, across);
      t = phase(Collective::reduce_scatter, bytes, in).time_s + inter.time_s;
      break;
    case Collective::broadcast:
    case Collective::all_to_all:
      break;
  }
  return {t, Algo::hierarchical, inter.proto};
}

void validate(const CommFabric& f) {
  if (f.intra.ranks < 1) throw std::invalid_argument("collective fabric: intra.ranks must be >= 1");
  if (f.intra.ranks > 1 && !(f.intra.bw_GBps > 0))
    throw std::invalid_argument("collective fabric: intra.bw_GBps must be > 0 with " + std::to_string(f.intra.ranks) +
                                " GPUs per node");
  if (f.inter) {
    if (f.inter->ranks < 1) throw std::invalid_argument("collective fabric: inter.ranks must be >= 1");
    if (f.inter->ranks > 1 && !(f.inter->bw_GBps > 0))
      throw std::invalid_argument("collective fabric: inter.bw_GBps must be > 0 across " +
                                  std::to_string(f.inter->ranks) + " nodes");
  }
}

}  // namespace

int nccl_channels(const CommFabric& f) { return channels_for(f.intra.ranks > 1 || !f.inter ? f.intra : *f.inter); }

/// busbw / algbw: all-reduce 2(n-1)/n (each rank sends and receives 2(n-1)/n of S on a
/// ring), all-gather and reduce-scatter (n-1)/n, broadcast 1.
/// Source: nccl-tests doc/PERFORMANCE.md L134-145.
double bus_bandwidth_factor(Collective c, int ranks) {
  if (ranks <= 1) return c == Collective::broadcast ? 1.0 : 0.0;
  const double n = ranks;
  switch (c) {
    case Collective::all_reduce:
      return 2.0 * (n - 1.0) / n;
    case Collective::all_gather:
    case Collective::reduce_scatter:
      return (n - 1.0) / n;
    case Collective::broadcast:
      return 1.0;
    case Collective::all_to_all:
      return (n - 1.0) / n;
  }
  return 1.0;
}

const std::vector<AlgorithmInfo>& collective_algorithms() {
  static const std::vector<AlgorithmInfo> infos = {
      {"ring",
       "NCCL ring: busbw = min(I, E) capped per protocol (LL 0.5 & llMaxBw, LL128 0.92 & "
       "C x perChMaxRingLL128, Simple 1); latency base 6.6/14/8.4 + per-hop .6/1.9/3.4 "
       "(NVLink) 1/2.5/5.7 (PCIe) 2.7/4/14 (net) us; C = round(I/20) in [2, 32]"},
      {"tree",
       "NCCL double binary tree over nodes, chains inside (all_reduce only): "
       "B = 0.85 x min(0.92 B0, C x perChMaxTree), LL /3.8, LL128 x7/9 or 120/128, "
       "algbw = B/2 <= E/k(N) (k = 1, 1.5, 2 for N = 2, 3, >=4); latency base 6.8/14/8.4 + "
       "2[(ppn-1) hwI + log2 N x net 5/8.5/14] us"},
      {"nvls",
       "NVLink SHARP (Hopper+, Simple): all_reduce algbw = I x eff x ppn/(ppn+1), "
       "all_gather/reduce_scatter I x eff, eff 0.85 Hopper / 0.74 Blackwell; NVLSTree across "
       "nodes <= E/k(N) and busbw <= NICs x perChMaxNVLSTree (57.7/45.5); latency 25 us (+ 2 log2 N x 20.9 us)"},
      {"hierarchical",
       "2-D: intra reduce-scatter (S) + inter collective over rails on S/ppn with E/ppn per "
       "rail + intra all-gather (S), each phase NCCL's best algorithm and its own launch "
       "overhead (HYBRID_SHARD style; never NCCL's auto choice)"},
  };
  return infos;
}

namespace {

/// Checks the inputs and picks the algorithm and protocol: NCCL's choice for "auto", else
/// the named algorithm at its fastest protocol. Requires ranks > 1 and bytes > 0.
Candidate choose(Collective c, double bytes, const CommFabric& fabric, const std::string& algorithm) {
  if (algorithm == "auto") return best_auto(c, bytes, fabric);
  const auto it = std::find(kAlgoNames.begin(), kAlgoNames.end(), algorithm);
  const Algo algo = static_cast<Algo>(it - kAlgoNames.begin());
  if (const std::string why = ineligible_reason(algo, c, fabric); !why.empty())
    throw std::invalid_argument("collective algorithm \"" + algorithm + "\" cannot run " + std::string(name(c)) + ": " +
                                why);
  return algo == Algo::hierarchical ? hierarchical(c, bytes, fabric) : best_single(c, bytes, fabric, {algo});
}

Algo parse_algo(const std::string& algorithm) {
  const auto it = std::find(kAlgoNames.begin(), kAlgoNames.end(), algorithm);
  if (it == kAlgoNames.end()) {
    std::string msg = "unknown collective algorithm \"" + algorithm + "\"; valid: \"auto\"";
    for (auto n : kAlgoNames) msg += ", \"" + std::string(n) + "\"";
    throw std::invalid_argument(msg);
  }
  return static_cast<Algo>(it - kAlgoNames.begin());
}

void check_inputs(double bytes, const CommFabric& fabric, const std::string& algorithm) {
  if (!(bytes >= 0) || !std::isfinite(bytes))
    throw std::invalid_argument("collective bytes must be a finite number >= 0");
  validate(fabric);
  if (algorithm != "auto") parse_algo(algorithm);
}

CollectivePhase make_phase(Collective c, double bytes, const CommFabric& f, Algo a, Proto p, FabricScope level) {
  const PhaseParts parts = phase_parts(a, p, c, bytes, f);
  CollectivePhase ph;
  ph.collective = c;
  ph.level = level;
  ph.bytes = bytes;
  ph.latency_s = parts.latency_us * 1e-6;
  ph.algbw_GBps = parts.alg_GBps;
  ph.intra_load = parts.intra_load;
  ph.inter_load = parts.inter_load;
  ph.spine_load = parts.spine_load;
  ph.algorithm = std::string(kAlgoNames[static_cast<std::size_t>(a)]);
  ph.protocol = std::string(kProtoNames[idx(p)]);
  return ph;
}

}  // namespace

CollectivePhase all_to_all_phase(double bytes_out, const CommFabric& f) {
  if (!(bytes_out >= 0) || f.ranks() <= 1)
    throw std::invalid_argument("all-to-all: bytes must be >= 0 and the group must have >= 2 ranks");
  const double e = f.ranks();
  const double ppn = f.intra.ranks;
  const double peers = e - 1;
  double t = 0;  // seconds per byte of S
  if (ppn > 1) t = (ppn - 1) / peers / (f.intra.bw_GBps * 1e9);
  if (f.inter) t = std::max(t, (e - ppn) / peers / (f.inter->bw_GBps / ppn * 1e9));
  const double hop_us =
      f.inter ? inter_latency_us(Algo::ring, Proto::simple, f) : intra_latency_us(Algo::ring, Proto::simple, f);
  CollectivePhase ph;
  ph.collective = Collective::all_to_all;
  ph.level = FabricScope::all;
  ph.bytes = bytes_out;
  ph.latency_s = (launch_overhead_us(f.arch) + base_latency_us(Algo::ring, Proto::simple) + hop_us) * 1e-6;
  ph.algbw_GBps = 1.0 / t / 1e9;
  ph.intra_load = (ppn - 1) / peers;
  ph.inter_load = f.inter ? ppn * (e - ppn) / peers : 0.0;
  ph.spine_load = f.spine ? ph.inter_load * f.spine->crossing : 0.0;
  ph.algorithm = "p2p";
  ph.protocol = "Simple";
  return ph;
}

std::string algorithm_unavailable(Collective c, const CommFabric& fabric, const std::string& algorithm) {
  if (algorithm == "auto" || fabric.ranks() <= 1) return {};
  return ineligible_reason(parse_algo(algorithm), c, fabric);
}

CollectiveCost collective_cost(Collective c, double bytes, const CommFabric& fabric, const std::string& algorithm) {
  check_inputs(bytes, fabric, algorithm);
  CollectiveCost out;
  out.algorithm = algorithm == "auto" ? "ring" : algorithm;
  out.protocol = "Simple";
  if (fabric.ranks() <= 1 || bytes == 0) return out;  // nothing moves
  if (c == Collective::all_to_all) {
    const CollectivePhase ph = all_to_all_phase(bytes, fabric);
    out.time_s = ph.time_s();
    out.algorithm = ph.algorithm;
    out.algbw_GBps = bytes / out.time_s / 1e9;
    out.busbw_GBps = out.algbw_GBps * bus_bandwidth_factor(c, fabric.ranks());
    return out;
  }

  const Candidate best = choose(c, bytes, fabric, algorithm);
  out.time_s = best.time_s;
  out.algorithm = std::string(kAlgoNames[static_cast<std::size_t>(best.algo)]);
  out.protocol = std::string(kProtoNames[idx(best.proto)]);
  out.algbw_GBps = bytes / best.time_s / 1e9;
  out.busbw_GBps = out.algbw_GBps * bus_bandwidth_factor(c, fabric.ranks());
  return out;
}

std::vector<CollectivePhase> collective_phases(Collective c, double bytes, const CommFabric& fabric,
                                               const std::string& algorithm) {
  check_inputs(bytes, fabric, algorithm);
  std::vector<CollectivePhase> out;
  if (fabric.ranks() <= 1 || bytes == 0) return out;
  if (c == Collective::all_to_all) return {all_to_all_phase(bytes, fabric)};
  const Candidate best = choose(c, bytes, fabric, algorithm);
  if (best.algo != Algo::hierarchical) {
    out.push_back(make_phase(c, bytes, fabric, best.algo, best.proto, FabricScope::all));
    return out;
  }
  // The phases of hierarchical(), in the same order and with the same choices.
  const CommFabric in = intra_only(fabric);
  const CommFabric across = rails(fabric);
  const double shard = bytes / fabric.intra.ranks;
  auto phase = [&](Collective pc, double b, const CommFabric& g, FabricScope level) {
    if (g.ranks() <= 1) return;
    const Candidate k = best_auto(pc, b, g);
    out.push_back(make_phase(pc, b, g, k.algo, k.proto, level));
  };
  switch (c) {
    case Collective::all_reduce:
      phase(Collective::reduce_scatter, bytes, in, FabricScope::intra_node);
      phase(Collective::all_reduce, shard, across, FabricScope::inter_node);
      phase(Collective::all_gather, bytes, in, FabricScope::intra_node);
      break;
    case Collective::all_gather:
      phase(Collective::all_gather, shard, across, FabricScope::inter_node);
      phase(Collective::all_gather, bytes, in, FabricScope::intra_node);
      break;
    case Collective::reduce_scatter:
      phase(Collective::reduce_scatter, bytes, in, FabricScope::intra_node);
      phase(Collective::reduce_scatter, shard, across, FabricScope::inter_node);
      break;
    case Collective::broadcast:
    case Collective::all_to_all:
      break;
  }
  return out;
}

}  // namespace stepcast
