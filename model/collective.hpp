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
  int ranks() const { return intra.ranks * (inter ? inter->ranks : 1); }
  int nodes() const { return inter ? inter->ranks : 1; }
};

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

}  // namespace stepcast
