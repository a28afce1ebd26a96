/// \file
/// Time of NCCL collectives (all-reduce, all-gather, reduce-scatter, broadcast) on a
/// two-level fabric (inside a node, between nodes), following the structure of NCCL's own
/// tuning model (src/graph/tuning.cc, NCCL 2.30.7): a base latency per algorithm and
/// protocol, a hardware latency per hop and link class, a bandwidth per channel capped per
/// GPU generation and protocol, and time = latency + bytes / algorithm bandwidth.
/// Byte counts and bandwidths follow nccl-tests (doc/PERFORMANCE.md): algbw = S / t with S
/// the total buffer size (count x n x type size for all-gather/reduce-scatter),
/// busbw = algbw x factor (2(n-1)/n all-reduce, (n-1)/n all-gather/reduce-scatter, 1 bcast).
#pragma once

#include "model/types.hpp"

#include <optional>
#include <string>
#include <vector>

namespace stepcast {

enum class Collective { all_reduce, all_gather, reduce_scatter, broadcast };
std::string_view name(Collective);
Collective parse_collective(std::string_view);

/// One level of the fabric as the collective model sees it, derived from the topology graph.
struct FabricLevel {
  int ranks = 1;                  ///< members: GPUs in a node (intra) or nodes (inter)
  LinkClass link = LinkClass::nvlink;  ///< which NCCL hardware-latency row applies
  /// Ring bottleneck bandwidth, GB/s (1e9 B/s) per direction: what one rank (intra) or one
  /// node (inter, all its NICs together) can push around a ring, at the link kind's
  /// effective rate (NCCL's per-link figures, or line rate x efficiency for networks).
  double bw_GBps = 0;
  /// Extra latency per hop beyond NCCL's hardware rows, µs (e.g. a TCP socket stack).
  double latency_us = 0;
  std::string kind;               ///< link kind name for reports, e.g. "nvlink3", "eth-1g"
  /// Channels NCCL would build (0: derive). Intra: rings inside the node (derived as
  /// round(bw_GBps / 20), 2..32). Inter: NICs per node, used as NVLSTree heads (derived as
  /// one per GPU when 0).
  int channels = 0;
};

struct CommFabric {
  GpuArch arch = GpuArch::ampere;
  FabricLevel intra;                  ///< ranks = GPUs per node taking part
  std::optional<FabricLevel> inter;   ///< ranks = nodes; absent on one node
  bool nvls = false;                  ///< NVLink SHARP in the node's NVSwitches
  /// Identical collectives that share the node's NICs at once (one per GPU of the node, as
  /// in the rails of a hierarchical collective); inter.bw_GBps is already divided by it.
  int nic_sharing = 1;
  int ranks() const { return intra.ranks * (inter ? inter->ranks : 1); }
  int nodes() const { return inter ? inter->ranks : 1; }
};

/// Channels NCCL runs a collective on over this fabric (the intra level's, or the NICs'
/// with one GPU per node); each channel is one CUDA block on its own SM.
int nccl_channels(const CommFabric& fabric);

/// nccl-tests' bus-bandwidth factor: 2(n-1)/n, (n-1)/n, (n-1)/n, 1.
double bus_bandwidth_factor(Collective c, int ranks);

struct CollectiveCost {
  double time_s = 0;
  std::string algorithm;  ///< "ring", "tree", "nvls", "hierarchical" (the one chosen)
  std::string protocol;   ///< "LL", "LL128", "Simple"
  double algbw_GBps = 0;  ///< bytes / time_s (nccl-tests convention)
  double busbw_GBps = 0;  ///< algbw x bus_bandwidth_factor
};

/// Names of the registered algorithms with a one-line description each.
struct AlgorithmInfo {
  std::string name;
  std::string description;
};
const std::vector<AlgorithmInfo>& collective_algorithms();

/// Time of one collective of `bytes` (the nccl-tests S: whole output buffer for all-gather,
/// whole input buffer for reduce-scatter) on `fabric`. `algorithm` is a registered name or
/// "auto" (NCCL's choice: the fastest eligible algorithm and protocol). One rank costs 0.
/// time = per-call launch overhead (fitted per GPU generation) + NCCL-style latency +
/// bytes / algbw; see collective.cpp for each formula and its source line.
/// Throws std::invalid_argument for an unknown algorithm or one that cannot run (e.g. "nvls"
/// without NVLS hardware, "tree" for all-gather).
CollectiveCost collective_cost(Collective c, double bytes, const CommFabric& fabric,
                               const std::string& algorithm = "auto");

/// The fabric seen by a collective over one level: "all" (every GPU), "intra-node" (the
/// GPUs of one node) or "inter-node" (one GPU per node; the node's GPUs run one such
/// collective each at once, so each sees 1/ppn of the node's NICs).
CommFabric restrict_fabric(const CommFabric& f, std::string_view level);

/// One phase of a collective as the simulator plays it: a fixed latency, then S bytes at up
/// to `algbw_GBps`, loading the links as follows. A single-phase algorithm (ring, tree,
/// nvls) is one phase; hierarchical is its intra and inter phases in order.
/// Invariant: latency_s + bytes / algbw equals the phase's time in collective_cost, and
/// level bandwidth / load >= algbw on each level, so alone the phase runs at algbw.
struct CollectivePhase {
  Collective collective = Collective::all_reduce;
  std::string level;        ///< "all", "intra-node", "inter-node"
  double bytes = 0;         ///< S of this phase (nccl-tests convention)
  double latency_s = 0;     ///< launch overhead + NCCL latency
  double algbw_GBps = 0;    ///< rate alone, S per second / 1e9
  double intra_load = 0;    ///< bytes one GPU sends on its intra-node ring link per byte of S
  double inter_load = 0;    ///< bytes through one node's NICs (all rails) per byte of S
  std::string algorithm;    ///< "ring", "tree", "nvls"
  std::string protocol;     ///< "LL", "LL128", "Simple"
  double time_s() const { return latency_s + (bytes > 0 ? bytes / (algbw_GBps * 1e9) : 0.0); }
};

/// The phases of one collective (empty when one rank or zero bytes); same choice of
/// algorithm and protocol as collective_cost, whose time_s equals the sum of the phases'.
std::vector<CollectivePhase> collective_phases(Collective c, double bytes, const CommFabric& fabric,
                                               const std::string& algorithm = "auto");

}  // namespace stepcast
