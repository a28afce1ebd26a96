/// \file
/// `stepcast plan`: the best parallel layout of one job on a fixed number of GPUs and a fixed
/// global batch. A layout is a data-parallel strategy x tensor-parallel degree x sequence
/// parallelism x context parallelism (cp) x expert parallelism (ep, MoE models) x pipeline
/// (stages pp, model chunks vpp, a
/// registered schedule) x CPU offload x micro-batch x recompute (grad accumulation follows
/// from the global batch).
///
/// Context parallelism: cp >= 2 dividing the GPUs over tp with at least
/// PlanOptions::min_cp_tokens tokens of the sequence per CP rank (seq_len / cp; a search
/// bound, not a model constant); ranks in Megatron order (TP fastest, then CP), so a CP
/// group fills the node beside its TP group before it crosses nodes. Offload: each kind the
/// strategy can take (model/offload.hpp offload_supported: the optimizer with zero1/2/3,
/// parameters with zero3 and FSDP's sharded modes).
///
/// The search: enumerate every layout, reject what does not divide or does not fit memory
/// (the cost stage's memory, no simulation), screen the rest with closed-form lower bounds
/// of the step, then simulate (the full predict() composition) in order of lower bound
/// until the next lower bound (x (1 + gap)) is above the K-th simulated step, so that no
/// layout left unsimulated can enter the top K (by more than the gap; branch and bound).
/// The bounds come in two tiers: the cost stage's compute time (compute_s <= the graph's
/// compute <= perfect-overlap bound, bounds.hpp), for every layout; and the lowered bound
/// (lower + bound stages: the larger of the perfect-overlap bound and the critical path of
/// the step graph at its tasks' durations alone, which sees a pipeline's bubble), computed
/// lazily, only for the layouts whose compute bound reaches the front of the queue. The
/// simulation order is exactly the order of the lowered bound, as if every layout had been
/// lowered. The hardware's
/// topology is built once per plan; resolve() runs on it once per (strategy, tp, sp, cp, ep, pp,
/// offload) family, never per layout (micro-batch, grad accumulation and recompute
/// are not read by it); the micro-step's compute is costed once per (tp, sp, cp, ep,
/// micro-batch, recompute), which neither the strategy, the pipeline nor the offload changes.
#pragma once

#include "predict/predict.hpp"
#include "scenario/scenario.hpp"
#include "simulator/schedules.hpp"
#include "predict/stages.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <tuple>
#include <string>
#include <string_view>
#include <vector>

namespace stepcast {

/// What the plan minimises. At a fixed GPU count and global batch the three rank layouts
/// alike (each is monotone in the step time); they differ in the figure reported.
enum class PlanObjective {
  time,          ///< step time at the global batch, s (lower is better)
  tokens_per_s,  ///< tokens/s per GPU (higher is better)
  cost,          ///< USD per million tokens (needs price_per_gpu_hour_usd; lower is better)
};
std::string_view name(PlanObjective);
/// "time", "tokens_per_s", "cost"; throws std::invalid_argument naming the choices.
PlanObjective parse_plan_objective(std::string_view);

struct PlanOptions {
  int gpus = 0;  ///< 0: the scenario's
  /// Sequences per optimizer step; 0: the scenario's micro_batch x grad_accum x (gpus / tp).
  std::int64_t global_batch = 0;
  PlanObjective objective = PlanObjective::time;
  double max_memory_fraction = 0.9;  ///< of the GPU's capacity, in (0, 1]
  int top = 5;                       ///< rows ranked (K)
  /// Most layouts simulated, whatever the bounds say (the branch and bound stops there and
  /// PlanResult::exact says so).
  int max_simulations = 2000;
  bool enumerate_cp = true;       ///< false: no context parallelism (cp 1), as --no-cp
  bool enumerate_offload = true;  ///< false: no CPU offload, as --no-offload
  /// Fewest tokens of a sequence on one CP rank (seq_len / cp) the search tries: 1,024 by
  /// default, stepcast's search bound (below it the K/V exchange of cp - 1 ring steps
  /// competes with an attention chunk of few tokens; set lower to search further).
  std::int64_t min_cp_tokens = 1024;
  /// Relative optimality gap of the branch and bound, >= 0: a layout is left unsimulated
  /// once its lower bound x (1 + gap) is above the K-th simulated step, so none left out
  /// can beat the K-th by more than the gap. 0: exact (every layout whose bound could enter
  /// the top K is simulated). The default, 1%, is below the model's own error (docs/accuracy.md:
  /// accuracy) and stops the search from lowering the many pipelines whose bounds sit within
  /// a percent of the winner.
  double gap = 0.01;
  /// Called now and then with the work done and the work in all (layouts screened, then
  /// simulations), from 0 to 1 of each phase; empty: not called. The library prints nothing.
  std::function<void(std::string_view phase, std::int64_t done, std::int64_t total)> progress;
};

/// One point of the search space: a parallel layout (sharding, tp, sp, cp, pp, vpp, schedule;
/// ep for a MoE model; dp = gpus / (tp·cp·pp)) and the batch shape, recompute and offload
/// around it.
struct PlanPoint {
  ParallelLayout layout;
  std::int64_t micro_batch = 1;  ///< sequences per GPU per micro-step
  std::int64_t grad_accum = 1;   ///< global batch / (micro_batch x dp)
  Recompute recompute = Recompute::none;
  OffloadKind offload = OffloadKind::none;
  /// "zero2 tp2 sp mb4 ga2 selective", "zero1 tp8 pp16 vpp4 interleaved mb1 ga32 full",
  /// "zero3 cp2 mb1 ga8 none offload_optimizer", "zero1 ep8 mb1 ga4 none" (tp, sp, cp, ep, the
  /// pipeline and the offload shown only when used; recompute always).
  std::string describe() const;
};

/// The scenario run at `point` (its layout, offload, micro-batch, grad_accum, recompute); a
/// bucket size given for DDP/ZeRO is dropped under FSDP, which has none.
Scenario with_layout(const Scenario& base, const PlanPoint& point);

/// Why layouts were rejected, in the order the checks run.
enum class PlanRejectReason {
  tp_model,           ///< tp does not divide heads, KV heads and MLP width
  sp_sequence,        ///< sequence parallelism: tp x cp does not divide seq_len
  cp_sequence,        ///< context parallelism: 2 x cp (causal; cp otherwise) does not divide seq_len
  cp_attention,       ///< context parallelism without a flash-class attention kernel
  pipeline_strategy,  ///< a pipeline with a strategy other than ddp or zero1
  ep_ranks,           ///< expert parallelism: ep does not divide the TP x CP x DP ranks of a stage
  offload_host,       ///< CPU offload on a box with no host in the catalog
  offload_pipeline,   ///< CPU offload with a pipeline (not modelled)
  batch,              ///< micro_batch x dp does not divide the global batch
  pipeline_groups,    ///< interleaved schedule: grad_accum not a multiple of pp
  invalid,            ///< the scenario's own checks refuse it (check_scenario)
  memory,             ///< memory per GPU above the fraction of capacity
  host_memory,        ///< CPU offload: the host's memory runs out (memory.hpp fits)
};
inline constexpr int kPlanRejectReasons = 13;
/// One sentence: "tp does not divide the heads, KV heads and MLP width".
std::string_view describe(PlanRejectReason);
/// Its name in JSON: "tp_model", "sp_sequence", ...
std::string_view key(PlanRejectReason);

/// The dimensions the options leave out of the search (each at its default: cp 1, no
/// offload), for the report: "context parallelism (cp, --no-cp)", "CPU offload (offload,
/// --no-offload)"; empty when every dimension is searched.
std::vector<std::string> plan_dimensions_not_enumerated(const PlanOptions& options);

/// A layout that passed the screen, with its closed-form figures.
struct PlanCandidate {
  PlanPoint point;
  int index = 0;         ///< enumeration order (ties break on it)
  int family = 0;        ///< index of its resolved (strategy, tp, sp, pp) Job
  double compute_s = 0;  ///< cost stage: forward + backward + recompute + optimizer, s
  /// Lowered bound of the step, s (lowered_bound_s); NaN until computed (screen_layouts with
  /// `full_bounds`, or plan() when the candidate reaches the front).
  double lower_bound_s = 0;
  /// Under a pipeline, the schedule's replay with each send at its time alone (pipeline_bound_s), s;
  /// NaN until computed.
  double pipeline_bound_s = 0;
  double memory_bytes = 0;  ///< per GPU (cost stage)
};

/// The space after the screen: the resolved families, the candidates sorted by their bound
/// (the lowered bound with `full_bounds`, else compute_s; ties by enumeration
/// order), and the rejections.
struct PlanScreen {
  Scenario base;  ///< on the planned GPUs, tp 1, no pipeline
  int gpus = 1;
  std::int64_t global_batch = 1;
  /// One resolve() per (strategy, tp, sp, cp, pp, offload) that passed; a candidate's vpp and schedule
  /// are its layout's.
  std::vector<Job> families;
  std::vector<PlanCandidate> candidates;
  std::int64_t enumerated = 0;  ///< layouts enumerated
  std::int64_t rejected[kPlanRejectReasons] = {};
  std::string invalid_example;  ///< the first check_scenario message, if any
};

/// Enumerates and screens. Throws std::invalid_argument for options no plan can take (a GPU
/// count the hardware cannot take, a global batch below 1, a memory fraction outside (0, 1],
/// top below 1, the cost objective without a price).
PlanScreen screen_layouts(const Scenario& base, const PlanOptions& options, bool full_bounds = false);

/// Stage programs by (schedule, pp, micro-batches, vpp), built and checked once per plan.
using ScheduleCache = std::map<std::tuple<PipelineScheduleKind, int, int, int>, sim::CheckedPrograms>;

/// The pipeline bound of a candidate with pp >= 2: its schedule replayed (schedules.hpp
/// replay), each chunk's forward and backward its layers x the cost stage's per-layer
/// forward, backward and recompute at full speed plus the layer's TP collectives at their
/// modelled time alone and its context-parallel exchanges at their phases' time alone, the
/// LM head (and its TP collectives) on the last chunk, and each send between virtual stages
/// at its time alone (the p2p latency, then its bytes at the pp link's rate: the lowering
/// makes the receiving op wait for it); then stage 0's tail after its last backward:
/// gradient reduction, optimizer share, zero1's all-gather. The simulation plays the same
/// programs with tasks and sends no shorter, so the step is no shorter. With measured
/// collectives (a calibration) only the compute counts.
double pipeline_bound_s(const PlanScreen& screen, const PlanCandidate& candidate, ScheduleCache& programs);

/// The lowered bound of a candidate: its family's Job with the layout, cost, lower, then
/// the larger of the perfect-overlap bound and the critical path alone (bounds.hpp).
double lowered_bound_s(const PlanScreen& screen, const PlanCandidate& candidate);

/// One simulated layout.
struct PlanRow {
  PlanPoint point;
  Prediction prediction;
  double lower_bound_s = 0;
  double objective = 0;  ///< in the objective's unit (s, tokens/s/GPU, USD/Mtok)
};

/// Time the representative rank (stage 0 under a pipeline) neither computes nor runs an
/// exposed collective, s: step - compute busy - exposed communication, at least 0. The
/// pipeline bubble; about 0 without a pipeline.
double bubble_s(const Prediction&);

struct PlanResult {
  std::string scenario;
  int gpus = 1;
  std::int64_t global_batch = 1;
  PlanObjective objective = PlanObjective::time;
  double max_memory_fraction = 0.9;
  std::int64_t enumerated = 0;
  std::int64_t rejected[kPlanRejectReasons] = {};
  std::string invalid_example;
  std::vector<std::string> not_enumerated;  ///< plan_dimensions_not_enumerated(options)
  std::int64_t screened = 0;                ///< layouts that passed to the lower bound
  std::int64_t bounded = 0;                 ///< layouts lowered for their lowered bound
  std::int64_t simulated = 0;
  /// True when every layout left unsimulated has a lower bound no better than the K-th
  /// simulated one divided by (1 + gap): with gap 0 the top K are the top K of an exhaustive
  /// simulation; otherwise no layout left out beats the K-th by more than the gap.
  bool exact = true;
  double gap = 0;            ///< PlanOptions::gap the search ran with
  std::vector<PlanRow> top;  ///< best first, at most `top`
  /// Why the winner beats the runner-up (empty with fewer than two rows).
  std::string why;
};

/// screen_layouts, then the simulation of the best candidates by lower bound.
PlanResult plan(const Scenario& base, const PlanOptions& options);

/// The objective's figure of a prediction (its unit as PlanRow::objective).
double objective_value(PlanObjective, const Prediction&, const Scenario&);

/// GPU counts of `--gpus-range`: "A:B" is A, 2A, 4A, ... up to B (B included when it is
/// on the series); "A,B,C" the counts listed, sorted, repeats dropped. Throws
/// std::invalid_argument for anything else (a count below 1, A above B, an empty list).
std::vector<int> parse_gpu_range(std::string_view text);

/// The plan on each GPU count at one global batch: options.global_batch, else the
/// scenario's micro_batch x grad_accum x data-parallel ranks on its own GPUs. The progress
/// callback sees each count's phases in turn.
std::vector<PlanResult> plan_range(const Scenario& base, const std::vector<int>& gpus, const PlanOptions& options);

}  // namespace stepcast
