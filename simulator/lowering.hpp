/// \file
/// Lowering: one optimizer step of a data-parallel strategy as a StepGraph. The plan holds
/// plain numbers (compute times from model/compute, byte counts, the fabric) so the lowering
/// itself is pure and testable with hand-made plans.
///
/// Per strategy (the order each framework issues its work in):
///  - DDP: gradients bucketed in the order they become ready (LM head, layers last to first,
///    embeddings), the first bucket capped at 1 MiB and the others at bucket_bytes
///    (torch/nn/parallel/distributed.py: _DEFAULT_FIRST_BUCKET_BYTES, bucket_cap_mb = 25);
///    each bucket all-reduced on the NCCL stream when its last gradient exists, during the
///    last micro-step only (no_sync before it); optimizer after the last bucket.
///  - FSDP NO_SHARD: each unit's gradients all-reduced after its backward.
///  - ZeRO-1/2 (DeepSpeed stage_1_and_2, overlap_comm): buckets reduce-scattered on the
///    reduction stream during backward (ZeRO-2 every micro-step, ZeRO-1 the last), sharded
///    optimizer step, then the updated parameters all-gathered in buckets.
///  - ZeRO-3 / FSDP FULL_SHARD: per unit (each layer; a root unit with the embeddings, final
///    norm and LM head) an all-gather before forward and again before backward, issued up to
///    prefetch_layers units ahead, parameters freed after use, each unit's gradients
///    reduce-scattered on a second NCCL stream after its backward. SHARD_GRAD_OP keeps the
///    forward's parameters for backward; HYBRID_SHARD gathers and reduces inside the node
///    and all-reduces each unit's gradient shard across nodes.
///  - Gradient accumulation: micro-steps in sequence; recompute: a recompute task before
///    each layer's backward; LoRA: frozen weights still gathered, adapter gradients reduced.
///
/// One lowering per strategy family (lowering_common.hpp): replicated (lowering_ddp.cpp),
/// ZeRO-1/2 (lowering_zero.cpp), sharded (lowering_fsdp.cpp), sharing the micro-step
/// program. With pp > 1 the pipeline lowering (lowering_pipeline.cpp) plays the stages of
/// a pipeline schedule as rank classes instead (ddp or zero1 within each stage). Gradient accumulation in closed form:
/// of more than max_explicit_micro_steps micro-steps, the graph holds the first ones and the last; the middle
/// micro-steps beyond are identical to the last explicit middle one (same tasks, durations, dependencies) and the graph
/// says how many (StepGraph::repeat_count), so that lowering and simulating cost the same for any number of
/// micro-steps. Where the simulation finds that the middle micro-steps do not repeat exactly (a backlog of collectives
/// whose contention drifts from one micro-step to the next), lower_step_explicit lowers every micro-step instead
/// (exact) when the whole step has at most kMaxExplicitTasks tasks; beyond, the closed form extrapolates
/// (SimResult::repetition_exact false). The lowering itself never simulates.
#pragma once

#include "model/collective.hpp"
#include "model/compute.hpp"
#include "model/parallel.hpp"
#include "base/types.hpp"
#include "simulator/step_graph.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stepcast::sim {

/// Most gradient buckets one reduction may use: a guard against absurd vectors (the
/// scenario reader bounds bucket_mb). 10^6 buckets of 4 MB hold the bf16 gradient of a
/// 2-trillion-parameter model; simulating them takes seconds.
constexpr double kMaxBuckets = 1e6;

/// Most tasks of a step lowered micro-step by micro-step when the middle micro-steps do not
/// repeat exactly: about a second of simulation.
constexpr double kMaxExplicitTasks = 1e6;

/// Ranks that behave alike: simulated once, as one RankClass.
struct RankGroup {
  std::string name;
  int ranks = 1;
  int nodes = 1;
  double compute_speed = 1.0;  ///< relative to the modelled GPU (a straggler: < 1)
  double link_speed = 1.0;     ///< relative to the modelled links (a degraded NIC: < 1)
};

/// A collective measured on the machine (calibrate/, `stepcast fit`): where a single-phase
/// collective of the step matches it (collective, ranks, nodes), the measurement's latency
/// and algbw replace the model's.
struct MeasuredCollective {
  Collective collective = Collective::all_reduce;
  int ranks = 1;
  int nodes = 1;
  double latency_s = 0;
  double algbw_GBps = 0;
};

/// A collective a layer issues on the compute stream with its phases already costed (the
/// context-parallel K/V exchange): the layers wait for it.
struct LayerCollective {
  std::string purpose;  ///< "context-parallel K/V ring (exposed)"
  Collective op = Collective::all_gather;
  double bytes = 0;  ///< nccl-tests S, for reports
  int ranks = 1;     ///< GPUs of the group
  std::vector<CollectivePhase> phases;
  std::string tag = "cp";  ///< task-name prefix: "cp" (K/V exchange), "ep" (MoE all-to-all)
  /// Its phases' times alone, one after another.
  double time_s() const {
    double t = 0;
    for (const CollectivePhase& ph : phases) t += ph.time_s();
    return t;
  }
};

struct CostedStep {
  /// The parallel layout: dp_sharding picks the lowering family; tp, pp, vpp and the
  /// schedule shape the step (below); dp, cp and ep are the costs' business (the fabrics and
  /// the exchanges below carry them).
  ParallelLayout layout;
  std::int64_t micro_steps = 1;
  /// Micro-steps held explicitly when there are more (>= 4: the first, at least two middle
  /// ones to check that the middle ones repeat, the last); the others in closed form.
  int max_explicit_micro_steps = 6;
  int layers = 1;
  MicroStepTimes micro;  ///< one micro-step on one GPU at full speed
  /// FLOPs of one micro-step, for reports: per layer and for the LM head.
  double layer_flops_forward = 0;
  double layer_flops_backward = 0;
  double layer_flops_recompute = 0;
  double head_flops_forward = 0;
  double head_flops_backward = 0;
  double optimizer_s = 0;  ///< local optimizer step

  double layer_param_bytes = 0;  ///< one layer's weights, working dtype
  double root_param_bytes = 0;   ///< embeddings, final norm, untied LM head
  double head_param_bytes = 0;   ///< untied LM head only (its gradient is ready first)
  /// Bytes of one layer's all-gather of its parameters (ZeRO-3, FSDP); <= 0: layer_param_bytes
  /// (fp8 all-gather: the linear weights in 1 byte).
  double layer_gather_bytes = 0;
  double layer_grad_bytes = 0;  ///< trainable gradient bytes per layer
  double root_grad_bytes = 0;   ///< trainable gradient bytes of the root unit
  double head_grad_bytes = 0;   ///< trainable gradient bytes of the untied LM head

  double bucket_bytes = 25e6;
  double first_bucket_bytes = 1024.0 * 1024.0;
  int prefetch_layers = 1;
  /// ZeRO-1/2: the updated parameters' all-gather runs at the next step's start beside the
  /// forward, each bucket before the first layer that needs it, instead of after the
  /// optimizer (Megatron-Core's --overlap-param-gather; lowering_zero.cpp).
  bool overlap_param_gather = false;
  /// Under pipeline parallelism: each stage reduces its gradients in buckets during its
  /// last micro-batch's backward, as Megatron-Core's --overlap-grad-reduce does, instead of
  /// after it (DeepSpeed's pipeline engine; lowering_pipeline.cpp). Without PP the DDP and
  /// ZeRO lowerings reduce during the backward already.
  bool overlap_grad_reduce = false;

  int gpus = 1;
  int nodes = 1;
  int gpus_per_node = 1;
  CommFabric fabric;  ///< what the data-parallel collectives span
  /// Tensor parallelism: the TP group's fabric and, per layer and micro-step, its
  /// collectives (model/parallel.hpp tp_layer_comm), played on the compute stream between
  /// the layers' compute (nothing overlaps them). layout.tp = 1: none.
  CommFabric tp_fabric;
  std::vector<TpCollective> tp_forward, tp_backward, tp_recompute;
  std::vector<TpCollective> tp_head_forward, tp_head_backward;  ///< vocab-parallel head and loss
  /// Per layer and micro-step, the exchanges after each layer's forward, backward and
  /// recompute, on the compute stream (empty: none): context parallelism's K/V exchange
  /// (full and selective recompute rerun the attention) and expert parallelism's dispatch and
  /// combine all-to-alls (full recompute reruns the dispatch).
  std::vector<LayerCollective> exchange_forward, exchange_backward, exchange_recompute;
  std::string algorithm = "auto";

  double activation_bytes_per_layer = 0;  ///< kept from forward to backward, per micro-step
  double logits_bytes = 0;
  double static_memory_bytes = 0;  ///< held all step (weights shard, grads, optimizer, ...)
  double comm_slowdown = 0;        ///< RankClass::comm_slowdown

  /// Rank classes; empty: all ranks alike (one class). The first is the representative
  /// rank of the reports; list the most numerous first.
  std::vector<RankGroup> groups;

  std::vector<MeasuredCollective> measured_collectives;

  /// Limiting case: every collective on the compute stream (nothing overlaps).
  bool comm_on_compute_stream = false;

  /// Pipeline parallelism (lowering_pipeline.cpp): pp stages of vpp model chunks each,
  /// played in the named schedule (schedules.hpp: "gpipe", "1f1b", "interleaved",
  /// "zb-h1") over micro_steps micro-batches. pp = 1: no pipeline (every other field here
  /// is ignored). With pp > 1, `layers`, `micro`, `optimizer_s` and `static_memory_bytes`
  /// are the whole model's on one GPU (the lowering gives each stage its share), `gpus` and
  /// `nodes` the whole run's, and `fabric` is one stage's data-parallel group.
  /// Layers of each chunk k = c·pp + i (model/parallel.hpp split_layers_per_chunk); empty:
  /// layers_per_chunk(layers, pp, vpp).
  std::vector<int> chunk_layers;
  /// Bytes one GPU sends to the next virtual stage per micro-batch (the activation forward,
  /// the same again as its gradient backward; model/parallel.hpp pipeline_p2p_bytes).
  double p2p_bytes = 0;
  /// Fixed latency of one send/receive pair, seconds (launch + NCCL's per-hop latency).
  double p2p_latency_s = 0;
  /// The link between adjacent stages as one sending GPU sees it: inter present when the
  /// stages sit on different nodes (inter.bw_GBps already divided by the GPUs of the node
  /// that send at once), else the intra-node link.
  CommFabric pp_fabric;
  /// Static memory of each stage's GPUs (size pp); empty: static_memory_bytes x the
  /// stage's share of the parameter bytes (its layers; the root unit on the first stage, the
  /// LM head on the last).
  std::vector<double> stage_static_memory_bytes;
};

/// The step graph of `plan`: a pipeline's stages as rank classes, or the micro-steps of one
/// strategy family, the repeated middle ones in closed form (StepGraph::repeat_count).
StepGraph lower_step(const CostedStep& plan);

/// The same step with every micro-step explicit, for a `closed_form` (lower_step of `plan`)
/// whose middle micro-steps (a pipeline's steady-state units) the simulation found not to
/// repeat exactly; nullopt when it holds none in closed form or would take more than
/// kMaxExplicitTasks tasks.
std::optional<StepGraph> lower_step_explicit(const CostedStep& plan, const StepGraph& closed_form);

/// The same step with more of it explicit, for a `closed_form` whose repeated part the
/// simulation found not to repeat exactly: a pipeline's steady state repeated from unit
/// 2R + 1 instead of R, once (every micro-batch explicit when they are too few; after that
/// the simulation takes the units' mean period, repetition.hpp), else lower_step_explicit.
/// nullopt when there is nothing more to lower: nothing in closed form, a pipeline doubled
/// once already, or more than kMaxExplicitTasks tasks.
std::optional<StepGraph> lower_step_longer(const CostedStep& plan, const StepGraph& closed_form);

/// The name of the lowering family of strategy `s` ("replicated (DDP, FSDP NO_SHARD)",
/// "ZeRO-1/2", "sharded (ZeRO-3, FSDP FULL_SHARD, SHARD_GRAD_OP, HYBRID_SHARD)").
std::string_view lowering_family(Strategy s);

/// How many buckets `total_bytes` fills when the first holds up to `first_bytes` and the
/// others up to `cap_bytes`, in closed form (no vector). InternalError above kMaxBuckets.
double bucket_count(double total_bytes, double first_bytes, double cap_bytes);

/// Sizes of the buckets `total_bytes` fills when the first holds up to `first_bytes` and
/// the others up to `cap_bytes` (all full but the last).
std::vector<double> bucket_sizes(double total_bytes, double first_bytes, double cap_bytes);

}  // namespace stepcast::sim
