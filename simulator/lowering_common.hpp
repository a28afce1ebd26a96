/// \file
/// What every strategy family's lowering shares (lowering.hpp): the graph under
/// construction with its rank classes and streams, collectives and compute tasks replicated
/// over the rank classes, and the micro-step program (forward, LM head, recompute and
/// backward compute tasks in the order a framework issues them) with hooks where a family
/// adds its collectives. Internal to simulator/.
#pragma once

#include "simulator/lowering.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stepcast::sim::lowering {

/// A gradient (or parameter) chunk that becomes ready when `task` ends.
struct Chunk {
  int task = -1;
  double bytes = 0;
};

/// Which NCCL stream of a class a collective goes to.
enum class Lane { gather, reduce };

/// The communication streams a family uses per rank class.
struct StreamLayout {
  std::string gather_name = "nccl";  ///< "nccl" or "nccl all-gather"
  bool separate_reduce = false;      ///< a second stream "nccl reduce"
};

/// One TP collective of the plan's lists as the lowerings play it, costed once.
struct TpCosted {
  std::string purpose;                  ///< "tensor-parallel <collective>" (+ " (exposed part)")
  std::vector<CollectivePhase> phases;  ///< over the plan's TP fabric
};

/// The purpose and phases of one TP collective over the plan's TP fabric; under overlap
/// (tc.overlap) one latency-only phase of what its GEMM leaves exposed (model/parallel.hpp
/// tp_overlap_exposed_s of the phases' time alone), its purpose marked " (exposed part)".
TpCosted cost_tp_collective(const CostedStep& p, const TpCollective& tc);

/// The graph under construction. Task ids returned are class 0's; class c's copy of a task
/// is that id + c (the copies of one task are added together).
class Builder {
 public:
  Builder(const CostedStep& plan, const StreamLayout& layout);

  const CostedStep& step() const { return p_; }
  StepGraph& graph() { return g_; }

  /// A collective across every rank class; `deps` are class-0 task ids.
  int collective(Lane lane, std::string name, std::string purpose, Collective c, double bytes, FabricScope level,
                 const std::vector<int>& deps, double alloc = 0, double free = 0);
  /// A tensor-parallel collective on every rank class's compute stream (the layers wait for
  /// it), over the plan's TP fabric; `deps` are class-0 task ids.
  /// Under overlap (c.overlap) only the part its GEMM leaves exposed (tp_phases). Its
  /// purpose is "tensor-parallel <collective>"; its phases are costed once per entry of the
  /// plan's lists.
  int tp_collective(std::string name, const TpCollective& c, const std::vector<int>& deps);
  /// A costed layer collective (CostedStep::exchange_forward, ...) on every rank class's compute
  /// stream; `deps` are class-0 task ids.
  int layer_collective(std::string name, const LayerCollective& c, const std::vector<int>& deps);
  /// A compute task on every rank class.
  int compute(const std::string& name, TaskCategory category, double s, double flops, const std::vector<int>& deps = {},
              double alloc = 0, double free = 0);
  /// Adds `bytes` to what every class's copy of `task` frees when it ends.
  void add_free(int task, double bytes);
  /// Marks the collective of class-0 task `task` as unhideable (bounds.hpp).
  void mark_unhideable(int task) { g_.unhideable_ops.push_back(g_.tasks[task].op); }

  /// Per-layer compute times of one micro-step at full speed.
  double forward_s() const { return fwd_s_; }
  double backward_s() const { return bwd_s_; }
  double recompute_s() const { return rec_s_; }

  /// The last gradient reduction issued (the optimizer waits for it); -1: none.
  int last_reduce = -1;

  StepGraph take() { return std::move(g_); }

 private:
  void add_class(const RankGroup& grp, bool several, const StreamLayout& layout);
  void use_measurement(CollectivePhase& ph, const CommFabric& f) const;

  /// cost_tp_collective of a list entry of the plan, once per entry.
  const TpCosted& tp_costed(const TpCollective& c);

  const CostedStep& p_;
  StepGraph g_;
  std::vector<std::pair<const TpCollective*, TpCosted>> tp_costed_;
  std::vector<int> compute_, gather_, reduce_;  ///< streams per class
  int classes_ = 1;
  double fwd_s_ = 0, bwd_s_ = 0, rec_s_ = 0;
};

/// A node's share of an oversubscribed rail fat tree's spine uplinks (GB/s per direction,
/// all rails) when any of the plan's fabrics (data-parallel, tensor-parallel, pipeline)
/// sends bytes across it; 0 when none does (then no class gets a spine resource).
double spine_GBps(const CostedStep& p);

/// A node's NICs, all rails (GB/s per direction): the inter level of the data-parallel,
/// else the tensor-parallel, else the pipeline fabric, times its NIC sharing; 0 on one node.
double node_nic_GBps(const CostedStep& p);

/// The micro-step suffix of task names: " m3" when there are several micro-steps.
std::string micro_suffix(const CostedStep& p, std::int64_t k);

/// Ids of one micro-step's compute tasks (index 1..layers; 0 unused); under context
/// parallelism a layer's backward is its K/V exchange, after which its gradients are ready.
struct MicroStepTasks {
  std::vector<int> forward, backward;
  int head_backward = -1;
};

/// Where a family adds its work to the micro-step program, and the memory its compute
/// tasks allocate and free beyond activations and logits.
struct ProgramHooks {
  /// Before `fwd L{i}`: issue what it needs; returns its dependencies.
  std::function<std::vector<int>(int layer, const MicroStepTasks&)> before_forward;
  double forward_free_bytes = 0;  ///< freed when each layer's forward ends
  std::vector<int> head_forward_deps;
  /// Before `recompute L{i}` / `bwd L{i}`: issue what it needs; returns their dependencies.
  std::function<std::vector<int>(int layer, const MicroStepTasks&)> before_backward;
  double backward_alloc_bytes = 0;       ///< allocated when each layer's backward starts
  double backward_extra_free_bytes = 0;  ///< freed (beyond activations) when it ends
  /// After `bwd L{i}` was added.
  std::function<void(int layer, int bwd_task)> after_backward;
};

/// The common micro-step program: fwd L1..L, fwd head, bwd head, then for L..1 an optional
/// recompute and the backward, with the hooks in between.
MicroStepTasks micro_step_program(Builder& b, std::int64_t k, const ProgramHooks& hooks);

/// One micro-step with replicated parameters (DDP, NO_SHARD, ZeRO-1/2, or any strategy on
/// one GPU): the program without collectives; returns the gradient chunks in ready order
/// (LM head, layers last to first, the embeddings with layer 1).
std::vector<Chunk> replicated_micro_step(Builder& b, std::int64_t k, const ProgramHooks& hooks = {});

/// Fills buckets in ready order; each bucket is reduced when its last gradient exists.
void reduce_buckets(Builder& b, const std::vector<Chunk>& chunks, Collective c, const std::string& purpose,
                    double first_cap, const std::string& suffix, bool mark_last_unhideable);

/// A strategy family's lowering: its streams, one micro-step, and what follows the optimizer.
class StrategyLowering {
 public:
  virtual ~StrategyLowering() = default;
  /// The family's name, for tests and messages.
  virtual std::string_view name() const = 0;
  virtual StreamLayout streams() const = 0;
  /// Micro-step `k` (0-based) of the optimizer step; `last`: the last one.
  virtual void micro_step(Builder& b, std::int64_t k, bool last) const = 0;
  /// After the optimizer step task `opt`.
  virtual void after_optimizer(Builder& b, int opt) const { (void)b, (void)opt; }
};

/// The registered families (lowering_ddp.cpp, lowering_zero.cpp, lowering_fsdp.cpp).
std::unique_ptr<StrategyLowering> replicated_lowering(Strategy s);
std::unique_ptr<StrategyLowering> zero12_lowering(Strategy s);
std::unique_ptr<StrategyLowering> sharded_lowering(Strategy s);

/// The pipeline-parallel lowering (lowering_pipeline.cpp), for plans with pp > 1.
/// Throws std::invalid_argument for what it does not lower (sharding other than ddp or
/// zero1, rank classes, an unknown schedule, ...). The steady state's units after the first
/// `repeat_unit` in closed form (StepGraph::repeat_count), where the micro-batches are enough;
/// repeat_unit < 0: every micro-batch lowered.
StepGraph lower_pipeline(const CostedStep& plan, int repeat_unit);

/// The first unit lower_pipeline repeats by default: the units of p + 1 micro-batches, at
/// least 3 (lowering_pipeline.cpp): p + 1 under 1f1b and zb-h1, 3 interleaved.
int first_repeat_unit(const CostedStep& plan);

/// The family that lowers strategy `s`.
std::unique_ptr<StrategyLowering> lowering_for(Strategy s);

}  // namespace stepcast::sim::lowering
