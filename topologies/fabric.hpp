/// \file
/// The fabric a group of ranks sees, as the collective model consumes it: one level inside a
/// node and, across nodes, one level of NICs, each with its NCCL link class, ring bandwidth
/// and extra latency. Derived from the topology graph (Topology::fabric); knows no workload.
#pragma once

#include "base/types.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace stepcast {

/// Which GPUs of a fabric a collective (or one phase of it) spans.
enum class FabricScope {
  all,         ///< every GPU of the fabric
  intra_node,  ///< the GPUs of one node
  inter_node,  ///< one GPU per node (one rail)
};
/// "all", "intra-node", "inter-node" (the names in reports and traces).
std::string_view name(FabricScope);

/// One level of the fabric as the collective model sees it, derived from the topology graph.
struct FabricLevel {
  int ranks = 1;                       ///< members: GPUs in a node (intra) or nodes (inter)
  LinkClass link = LinkClass::nvlink;  ///< which NCCL hardware-latency row applies
  /// Ring bottleneck bandwidth, GB/s (1e9 B/s) per direction: what one rank (intra) or one
  /// node (inter, all its NICs together) can push around a ring, at the link kind's
  /// effective rate (NCCL's per-link figures, or line rate x efficiency for networks).
  double bw_GBps = 0;
  /// Extra latency per hop beyond NCCL's hardware rows, µs: NCCL's latencyInter (a TCP socket
  /// stack; the latency a network plugin reports, as AWS's for EFA).
  double latency_us = 0;
  std::string kind;          ///< link kind name for reports, e.g. "nvlink3", "eth-1g"
  bool simple_only = false;  ///< the NICs' transport runs NCCL's Simple protocol only (LinkSpec)
  /// Channels NCCL would build (0: derive). Intra: rings inside the node (derived as
  /// round(bw_GBps / 20), 2..32). Inter: NICs per node, used as NVLSTree heads (derived as
  /// one per GPU when 0).
  int channels = 0;
};

/// The spine of a rail-optimised fat tree as one node of a group sees it. NCCL keeps rings
/// and trees rail-aligned (GPU i of a node talks to GPU i of the next over NIC i, one leaf
/// switch per rail and leaf group), so traffic between nodes of one leaf group stays on
/// the leaf and only the bytes leaving the leaf group climb to the spine, whose uplinks
/// carry the leaf's down bandwidth / oversubscription (NVIDIA DGX SuperPOD reference
/// architecture: rail-optimised, 32 nodes per scalable unit, 1:1).
struct SpineLevel {
  /// Fraction of a node's inter-level bytes that leave its leaf group (Topology::fabric).
  double crossing = 0;
  /// The node's share of its leaf group's uplinks, all rails: NICs x NIC rate /
  /// oversubscription, GB/s per direction (a node's resource: not divided by nic_sharing).
  double bw_GBps = 0;
  double oversubscription = 1;  ///< leaf down / up bandwidth
};

struct CommFabric {
  GpuArch arch = GpuArch::ampere;
  FabricLevel intra;                 ///< ranks = GPUs per node taking part
  std::optional<FabricLevel> inter;  ///< ranks = nodes; absent on one node
  /// Present when some of the inter level's bytes cross an oversubscribed rail fat tree's
  /// spine (at 1:1 a node's share of the uplinks equals its NICs' rate, below what the
  /// NICs already cap, so the level is left out).
  std::optional<SpineLevel> spine;
  bool nvls = false;  ///< NVLink SHARP in the node's NVSwitches
  /// Identical collectives that share the node's NICs at once (one per GPU of the node, as
  /// in the rails of a hierarchical collective); inter.bw_GBps is already divided by it.
  int nic_sharing = 1;
  int ranks() const { return intra.ranks * (inter ? inter->ranks : 1); }
  int nodes() const { return inter ? inter->ranks : 1; }
};

/// The fabric seen by a collective over one scope: all (every GPU), intra_node (the
/// GPUs of one node) or inter_node (one GPU per node; the node's GPUs run one such
/// collective each at once, so each sees 1/ppn of the node's NICs).
CommFabric restrict_fabric(const CommFabric& f, FabricScope scope);

}  // namespace stepcast
