/// \file
/// One training step as data: rank classes, their streams and link resources, and tasks
/// with dependencies (compute kernels, collectives, memory events). The lowering builds it
/// from a scenario (lowering.hpp); the simulation plays it (simulation.hpp).
///
/// Semantics, as on a GPU: a stream runs its tasks one at a time in the order they were
/// added; a task starts when it is at the head of its stream and all its dependencies have
/// ended. A collective is one task per rank class joined by a CollectiveOp: it starts when
/// every member is ready (NCCL kernels wait for their peers) and ends for all at once.
#pragma once

#include "model/collective.hpp"

#include <string>
#include <vector>

namespace stepcast::sim {

/// Data-parallel ranks that behave alike, simulated once.
struct RankClass {
  std::string name;           ///< "all ranks", "straggler"
  int ranks = 1;              ///< GPUs in this class
  int nodes = 1;              ///< nodes they span (for reports)
  double compute_speed = 1.0; ///< relative to the GPU's modelled speed (a straggler: < 1)
  /// Fraction of compute throughput lost while a collective runs on the same GPU: NCCL
  /// runs one CUDA block per channel on its own SM (NCCL_MIN/MAX_NCHANNELS docs), so
  /// channels / SMs of the GPU.
  double comm_slowdown = 0.0;
  int intra_resource = -1;    ///< this class's intra-node ring link (-1: none)
  int nic_resource = -1;      ///< this class's node NICs (-1: one node)
  double static_memory_bytes = 0;  ///< weights, gradients, optimizer, buffers: held all step
};

enum class StreamKind { compute, communication };

struct Stream {
  std::string name;           ///< "compute", "nccl all-gather", "nccl reduce-scatter"
  StreamKind kind = StreamKind::compute;
  int rank_class = 0;
};

enum class TaskKind { compute, collective };

struct Task {
  std::string name;           ///< "fwd L12", "all-gather L12 (fwd)"
  std::string category;       ///< "forward", "backward", "recompute", "optimizer", "head",
                              ///< "all_gather", "reduce_scatter", "all_reduce"
  TaskKind kind = TaskKind::compute;
  int stream = 0;
  double work_s = 0;          ///< compute: duration at full speed, seconds
  double flops = 0;           ///< compute: FLOPs (for reports)
  int op = -1;                ///< collective: index into StepGraph::ops
  std::vector<int> deps;      ///< tasks that must end first
  double alloc_bytes = 0;     ///< memory allocated when the task starts
  double free_bytes = 0;      ///< memory freed when it ends
};

/// A collective across rank classes (one member task per class taking part).
struct CollectiveOp {
  std::string name;                     ///< "all-gather L12 (fwd)"
  std::string purpose;                  ///< "parameter all-gather (forward)", for summaries
  FabricScope level = FabricScope::all;  ///< which GPUs it spans
  Collective collective = Collective::all_reduce;
  double bytes = 0;                     ///< nccl-tests S
  std::vector<CollectivePhase> phases;  ///< latency, rate and link loads (model/)
  std::vector<int> members;             ///< task ids
};

/// A link resource of the simulated step.
struct LinkResource {
  std::string name;
  double capacity_GBps = 0;   ///< per direction, GB/s (1e9 B/s)
};

struct StepGraph {
  std::vector<RankClass> classes;
  std::vector<Stream> streams;
  std::vector<LinkResource> links;
  std::vector<Task> tasks;
  std::vector<CollectiveOp> ops;
  /// Collectives no schedule can hide: they must end before the first compute kernel or
  /// start after the last one but the optimizer (the closed-form lower bound adds them).
  std::vector<int> unhideable_ops;

  int add_stream(std::string name, StreamKind kind, int rank_class);
  int add_link(std::string name, double capacity_GBps);
  /// Adds a compute task; returns its id.
  int add_compute(int stream, std::string name, std::string category, double work_s, double flops,
                  std::vector<int> deps = {});
  /// Adds a collective with one member per (stream, deps) pair, one per rank class; returns
  /// the member task ids in that order.
  std::vector<int> add_collective(std::string name, std::string purpose, FabricScope level,
                                  Collective c, double bytes,
                                  std::vector<CollectivePhase> phases,
                                  const std::vector<std::pair<int, std::vector<int>>>& members);
};

}  // namespace stepcast::sim
