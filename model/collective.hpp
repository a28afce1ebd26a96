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

#include "base/types.hpp"
#include "topologies/fabric.hpp"

#include <optional>
#include <string>
#include <vector>

namespace stepcast {

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

/// Why the named `algorithm` cannot run collective `c` on `fabric` (e.g. NCCL's tree runs
/// all-reduce only; hierarchical needs two nodes); empty when it can, for "auto", and when
/// nothing moves (one rank). Throws std::invalid_argument for an unregistered name.
std::string algorithm_unavailable(Collective c, const CommFabric& fabric, const std::string& algorithm);

/// One phase of a collective as the simulator plays it: a fixed latency, then S bytes at up
/// to `algbw_GBps`, loading the links as follows. A single-phase algorithm (ring, tree,
/// nvls) is one phase; hierarchical is its intra and inter phases in order.
/// Invariant: latency_s + bytes / algbw equals the phase's time in collective_cost, and
/// level bandwidth / load >= algbw on each level, so alone the phase runs at algbw.
struct CollectivePhase {
  Collective collective = Collective::all_reduce;
  FabricScope level = FabricScope::all;  ///< which GPUs the phase spans
  double bytes = 0;                      ///< S of this phase (nccl-tests convention)
  double latency_s = 0;                  ///< launch overhead + NCCL latency
  double algbw_GBps = 0;                 ///< rate alone, S per second / 1e9
  double intra_load = 0;                 ///< bytes one GPU sends on its intra-node ring link per byte of S
  double inter_load = 0;                 ///< bytes through one node's NICs (all rails) per byte of S
  /// bytes through the node's share of a rail fat tree's spine uplinks per byte of S
  /// (inter_load x CommFabric::spine crossing; 0 without a spine level)
  double spine_load = 0;
  std::string algorithm;  ///< "ring", "tree", "nvls"
  std::string protocol;   ///< "LL", "LL128", "Simple"
  double time_s() const { return latency_s + (bytes > 0 ? bytes / (algbw_GBps * 1e9) : 0.0); }
};

/// The phases of one collective (empty when one rank or zero bytes); same choice of
/// algorithm and protocol as collective_cost, whose time_s equals the sum of the phases'.
std::vector<CollectivePhase> collective_phases(Collective c, double bytes, const CommFabric& fabric,
                                               const std::string& algorithm = "auto");

/// One all-to-all over `f` in which every rank sends `bytes_out` bytes (S), split evenly
/// over the other e - 1 ranks. NCCL runs it as grouped ncclSend/ncclRecv to every peer
/// (nccl-tests' alltoall; busbw = algbw·(e - 1)/e), all peers at once, so its latency is
/// one hop: launch + NCCL's ring Simple base + the slowest level's hop latency. The ppn - 1
/// peers in the node are reached over NVLink at the rank's intra rate; the e - ppn peers in
/// other nodes over the node's NICs, shared by the group's ppn ranks of the node (with PXN
/// the bytes first cross NVLink to the GPU on the destination's rail; the NIC load is the
/// same):
///   t_bw = max(S·(ppn - 1)/(e - 1) / intra_GBps, S·(e - ppn)/(e - 1) / (inter_GBps / ppn))
/// Loads per byte of S: intra (ppn - 1)/(e - 1), inter ppn·(e - ppn)/(e - 1), spine the
/// inter load x the spine's crossing fraction. Throws std::invalid_argument for bytes < 0
/// or a group of one rank.
CollectivePhase all_to_all_phase(double bytes_out, const CommFabric& f);

}  // namespace stepcast
