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

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stepcast::sim {

/// Data-parallel ranks that behave alike, simulated once.
struct RankClass {
  std::string name;            ///< "all ranks", "straggler"
  int ranks = 1;               ///< GPUs in this class
  int nodes = 1;               ///< nodes they span (for reports)
  double compute_speed = 1.0;  ///< relative to the GPU's modelled speed (a straggler: < 1)
  /// Fraction of compute throughput lost while a collective runs on the same GPU: NCCL
  /// runs one CUDA block per channel on its own SM (NCCL_MIN/MAX_NCHANNELS docs), so
  /// channels / SMs of the GPU.
  double comm_slowdown = 0.0;
  int intra_resource = -1;  ///< this class's intra-node ring link (-1: none)
  int nic_resource = -1;    ///< this class's node NICs (-1: one node)
  /// This class's node's share of a rail fat tree's spine uplinks (-1: none crossed)
  int spine_resource = -1;
  double static_memory_bytes = 0;  ///< weights, gradients, optimizer, buffers: held all step
};

enum class StreamKind { compute, communication };

struct Stream {
  std::string name;  ///< "compute", "nccl all-gather", "nccl reduce-scatter"
  StreamKind kind = StreamKind::compute;
  int rank_class = 0;
};

enum class TaskKind { compute, collective };

/// What a task does, for reports and bounds. Collectives take the category of their
/// collective (all_reduce, all_gather, reduce_scatter, broadcast).
enum class TaskCategory : std::uint8_t {
  forward,
  backward,
  recompute,
  optimizer,
  head,
  all_reduce,
  all_gather,
  reduce_scatter,
  broadcast,
  all_to_all,
};

/// The printed name: "forward", "backward", "recompute", "optimizer", "head", "all_reduce",
/// "all_gather", "reduce_scatter", "broadcast", "all_to_all" (the trace's "cat", the reports' rows).
std::string_view name(TaskCategory c);
/// The category of a collective's member tasks.
TaskCategory category_of(Collective c);

/// The category printed as `n`; InternalError if none is.
TaskCategory parse_task_category(std::string_view n);

/// A task's category as the graph stores it: the enum, converting to its printed name for
/// the readers that print it (trace, reports), so that they need not know the enum.
class Category {
 public:
  constexpr Category(TaskCategory c = TaskCategory::forward) : c_(c) {}  // NOLINT: implicit
  constexpr TaskCategory value() const { return c_; }
  operator std::string() const { return std::string(name(c_)); }  // NOLINT: implicit
  friend constexpr bool operator==(Category a, Category b) { return a.c_ == b.c_; }

 private:
  TaskCategory c_;
};

struct Task {
  std::string name;   ///< "fwd L12", "all-gather L12 (fwd)"
  Category category;  ///< forward, backward, ..., all_gather (printed by name())
  TaskKind kind = TaskKind::compute;
  int stream = 0;
  double work_s = 0;       ///< compute: duration at full speed, seconds
  double flops = 0;        ///< compute: FLOPs (for reports)
  int op = -1;             ///< collective: index into StepGraph::ops
  std::vector<int> deps;   ///< tasks that must end first
  double alloc_bytes = 0;  ///< memory allocated when the task starts
  double free_bytes = 0;   ///< memory freed when it ends
};

/// A collective across rank classes (one member task per class taking part).
struct CollectiveOp {
  std::string name;                      ///< "all-gather L12 (fwd)"
  std::string purpose;                   ///< "parameter all-gather (forward)", for summaries
  FabricScope level = FabricScope::all;  ///< which GPUs it spans
  Collective collective = Collective::all_reduce;
  double bytes = 0;                     ///< nccl-tests S
  int ranks = 0;                        ///< GPUs it spans when not the step fabric's scope (TP groups); 0: from `level`
  std::vector<CollectivePhase> phases;  ///< latency, rate and link loads (model/)
  std::vector<int> members;             ///< task ids
};

/// Calls use(resource, load) for each link of class `rc` that phase `ph` loads (bytes on
/// the link per byte of the phase): the intra-node ring link, the node's NICs, the node's
/// share of the spine.
template <class Use>
void for_each_link_load(const RankClass& rc, const CollectivePhase& ph, Use use) {
  if (rc.intra_resource >= 0 && ph.intra_load > 0) use(rc.intra_resource, ph.intra_load);
  if (rc.nic_resource >= 0 && ph.inter_load > 0) use(rc.nic_resource, ph.inter_load);
  if (rc.spine_resource >= 0 && ph.spine_load > 0) use(rc.spine_resource, ph.spine_load);
}

/// A link resource of the simulated step.
struct LinkResource {
  std::string name;
  double capacity_GBps = 0;  ///< per direction, GB/s (1e9 B/s)
};

/// Most tasks a step graph may hold: 2^23, about 1.5 GB and ten seconds of simulation. The
/// scenario reader bounds layers, rank classes and buckets well below; a graph that grows
/// past it is an internal error, never an exhausted machine.
constexpr int kMaxTasks = 1 << 23;

/// The tasks of one micro-step that the graph holds explicitly: ids [first_task, end_task).
struct MicroStepSpan {
  std::int64_t index = 0;  ///< which micro-step of the optimizer step (0-based)
  int first_task = 0;
  int end_task = 0;
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
  /// The rank classes are pipeline stages (lowering_pipeline.cpp): they take turns rather
  /// than run alike, so the bound that nothing overlaps adds up every class's compute.
  bool pipeline = false;

  /// Gradient accumulation in closed form (lowering.hpp): the micro-steps held explicitly,
  /// in order; after the one at `repeat_after` come `repeat_count` more micro-steps
  /// identical to it that the graph does not hold (their tasks, durations and dependencies
  /// are those of a middle micro-step). repeat_count 0: every micro-step is explicit.
  std::vector<MicroStepSpan> micro_steps;
  int repeat_after = -1;
  std::int64_t repeat_count = 0;

  /// How many tasks of the step `task` stands for: 1 + repeat_count in the repeated
  /// micro-step, else 1.
  double multiplicity(int task) const;
  /// The same for a collective (its members' multiplicity).
  double op_multiplicity(int op) const { return multiplicity(ops[op].members.front()); }

  int add_stream(std::string name, StreamKind kind, int rank_class);
  int add_link(std::string name, double capacity_GBps);
  /// Adds a compute task; returns its id.
  int add_compute(int stream, std::string name, Category category, double work_s, double flops,
                  std::vector<int> deps = {});
  /// The same with the category by its printed name (hand-made graphs in tests).
  int add_compute(int stream, std::string name, const char* category, double work_s, double flops,
                  std::vector<int> deps = {}) {
    return add_compute(stream, std::move(name), Category(parse_task_category(category)), work_s, flops,
                       std::move(deps));
  }
  /// Adds a collective with one member per (stream, deps) pair, one per rank class; returns
  /// the member task ids in that order.
  std::vector<int> add_collective(std::string name, std::string purpose, FabricScope level, Collective c, double bytes,
                                  std::vector<CollectivePhase> phases,
                                  std::vector<std::pair<int, std::vector<int>>> members);
};

}  // namespace stepcast::sim
