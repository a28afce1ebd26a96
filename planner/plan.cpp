/// \file
/// The layout search of plan.hpp: enumerate, reject, screen by lower bound, simulate the
/// best by branch and bound.
#include "planner/plan.hpp"

#include "base/json_input.hpp"
#include "model/parallel.hpp"
#include "simulator/schedules.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <utility>

namespace stepcast {

namespace {

/// The strategies the plan enumerates, in the order ties break.
constexpr Strategy kPlanStrategies[] = {Strategy::ddp,   Strategy::zero1,           Strategy::zero2,
                                        Strategy::zero3, Strategy::fsdp_full_shard, Strategy::fsdp_shard_grad_op};
constexpr Recompute kPlanRecompute[] = {Recompute::none, Recompute::selective, Recompute::full};
/// Most model chunks per stage the interleaved schedule is tried with (Megatron's
/// Llama-3.1-405B and GPT-3 175B layouts use 4 to 8 layers per chunk, i.e. vpp of a few).
constexpr int kMaxVpp = 8;

/// One pipeline of the search: stages, chunks per stage, schedule.
struct PipeChoice {
  int pp = 1;
  int vpp = 1;
  PipelineScheduleKind schedule = PipelineScheduleKind::one_f_one_b;
};

/// No pipeline; then, for each pp >= 2 dividing `ranks` (the GPUs over tp) with a layer per
/// stage, every registered schedule: vpp 1 for the plain ones, 2..kMaxVpp for the
/// interleaved one (while pp x vpp <= layers; none under the balanced split, which places
/// one chunk per stage).
std::vector<PipeChoice> pipe_choices(std::int64_t ranks, std::int64_t layers, StageSplit split) {
  std::vector<PipeChoice> out{PipeChoice{}};
  for (std::int64_t pp = 2; pp <= std::min(ranks, layers); ++pp) {
    if (ranks % pp != 0) continue;
    for (const sim::ScheduleInfo& info : sim::pipeline_schedules()) {
      const PipelineScheduleKind kind = parse_pipeline_schedule(info.name);
      if (kind != PipelineScheduleKind::interleaved) {
        out.push_back({static_cast<int>(pp), 1, kind});
        continue;
      }
      if (split == StageSplit::balanced) continue;
      for (int v = 2; v <= kMaxVpp && pp * v <= layers; ++v) out.push_back({static_cast<int>(pp), v, kind});
    }
  }
  return out;
}
/// Divisors of n >= 1, ascending.
std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> low, high;
  for (std::int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    low.push_back(d);
    if (d != n / d) high.push_back(n / d);
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

/// The base scenario on the planned GPUs, tensor parallelism off (each layout sets its own).
Scenario planned_base(const Scenario& base, const PlanOptions& options) {
  Scenario s = base;
  s.strategy.layout.tp = 1;
  s.strategy.layout.sp = false;
  s.strategy.layout.pp = 1;
  s.strategy.layout.vpp = 1;
  s.strategy.layout.schedule = PipelineScheduleKind::one_f_one_b;
  s.strategy.layout.cp = 1;  // each layout sets its own cp (its K/V exchange: the ring) and offload
  s.strategy.cp_comm = CpCommKind::ring;
  s.strategy.offload = OffloadKind::none;
  s.strategy.delayed_update = false;
  const int gpus = options.gpus > 0 ? options.gpus : base.hardware.gpus();
  if (gpus != s.hardware.gpus()) s = with_gpus(s, gpus);
  return s;
}

void check_options(const Scenario& base, const PlanOptions& o) {
  if (o.global_batch < 0) throw std::invalid_argument(fmt::format("global batch must be >= 1, got {}", o.global_batch));
  if (!(o.max_memory_fraction > 0 && o.max_memory_fraction <= 1))
    throw std::invalid_argument(fmt::format("max memory fraction must be in (0, 1], got {}", o.max_memory_fraction));
  if (o.top < 1) throw std::invalid_argument(fmt::format("top must be >= 1, got {}", o.top));
  if (o.min_cp_tokens < 1)
    throw std::invalid_argument(fmt::format("the fewest tokens per CP rank must be >= 1, got {}", o.min_cp_tokens));
  if (o.objective == PlanObjective::cost && !base.price_per_gpu_hour_usd)
    throw std::invalid_argument("the cost objective needs price_per_gpu_hour_usd in the scenario");
}

/// A family of layouts: everything but the micro-batch and recompute.
struct FamilyChoice {
  ParallelLayout layout;  ///< dp set from the GPUs
  OffloadKind offload = OffloadKind::none;
};

/// The reason a family is refused before any micro-batch, or none, in the order of
/// PlanRejectReason. `host`: the box has a host in the catalog.
/// The reject count of a broken layout rule; none for the rules the enumeration never
/// breaks or that the scenario's checks count as `invalid`.
std::optional<PlanRejectReason> plan_reason(LayoutRule rule) {
  switch (rule) {
    case LayoutRule::tp_model:
      return PlanRejectReason::tp_model;
    case LayoutRule::sp_sequence:
      return PlanRejectReason::sp_sequence;
    case LayoutRule::cp_sequence:
      return PlanRejectReason::cp_sequence;
    case LayoutRule::cp_attention:
      return PlanRejectReason::cp_attention;
    case LayoutRule::pipeline_strategy:
      return PlanRejectReason::pipeline_strategy;
    case LayoutRule::ep_ranks:
      return PlanRejectReason::ep_ranks;
    default:
      return std::nullopt;
  }
}

/// The reason a family is refused before any micro-batch, or none, in the order of
/// PlanRejectReason. `host`: the box has a host in the catalog. The micro-batches are not
/// known yet (dividing_micro_batches counts the interleaved grouping per micro-batch).
std::optional<PlanRejectReason> family_reason(const Scenario& s, const FamilyChoice& f, bool host) {
  LayoutContext context = layout_context(s);
  context.micro_batches = 0;
  for (LayoutRule rule : layout_violations(f.layout, s.model, context))
    if (auto why = plan_reason(rule)) return why;
  if (f.offload != OffloadKind::none && !host) return PlanRejectReason::offload_host;
  if (f.offload != OffloadKind::none && f.layout.pp > 1) return PlanRejectReason::offload_pipeline;
  return std::nullopt;
}

/// Context-parallel degrees of the search for `ranks` GPUs over tp: 1, then every cp >= 2
/// dividing them with seq_len / cp >= min_tokens (none with enumerate_cp off).
std::vector<int> cp_choices(std::int64_t ranks, std::int64_t seq_len, const PlanOptions& o) {
  std::vector<int> out{1};
  if (!o.enumerate_cp) return out;
  for (std::int64_t cp = 2; cp <= ranks && seq_len / cp >= o.min_cp_tokens; ++cp)
    if (ranks % cp == 0) out.push_back(static_cast<int>(cp));
  return out;
}

/// Offloads of the search under `st`: none, then each kind the strategy can take
/// (offload_supported), with enumerate_offload on.
std::vector<OffloadKind> offload_choices(Strategy st, const PlanOptions& o) {
  std::vector<OffloadKind> out{OffloadKind::none};
  if (!o.enumerate_offload) return out;
  for (OffloadKind k : {OffloadKind::optimizer, OffloadKind::parameters})
    if (offload_supported(k, st)) out.push_back(k);
  return out;
}

/// The micro-batches of a family that divide (micro_batch x dp divides the global batch; the
/// interleaved schedule's grad_accum a multiple of pp), each counted as `recompute` layouts;
/// the others' rejections counted.
std::vector<std::size_t> dividing_micro_batches(PlanScreen& out, const std::vector<std::int64_t>& micro_batches,
                                                const ParallelLayout& pipe) {
  const int dp = pipe.dp;
  std::vector<std::size_t> keep;
  const auto per_mb = static_cast<std::int64_t>(std::size(kPlanRecompute));
  const std::int64_t per_replica = out.global_batch % dp == 0 ? out.global_batch / dp : 0;
  for (std::size_t i = 0; i < micro_batches.size(); ++i) {
    const std::int64_t mb = micro_batches[i];
    if (per_replica == 0 || per_replica % mb != 0) {
      out.rejected[static_cast<int>(PlanRejectReason::batch)] += per_mb;
    } else if (pipe.vpp > 1 && (per_replica / mb) % pipe.pp != 0) {
      out.rejected[static_cast<int>(PlanRejectReason::pipeline_groups)] += per_mb;
    } else {
      keep.push_back(i);
    }
  }
  return keep;
}

/// The micro-step of each (tp, sp, micro-batch, recompute), costed once per screen: it reads
/// the model, micro-batch, sequence, precision, recompute, device and kernels (whose choice
/// reads tp and sp), which neither the strategy nor the pipeline changes. `base` selects the
/// (tp, sp, cp, ep) block of slots.
struct MicroCache {
  std::vector<MicroStepTimes> times;
  std::vector<char> known;
  std::size_t base = 0;
  const MicroStepTimes& get(const Job& job, std::size_t slot) {
    slot += base;
    if (!known[slot]) {
      times[slot] = micro_step_times(job);
      known[slot] = 1;
    }
    return times[slot];
  }
};

/// The last (strategy, tp, sp, cp, pp, offload) resolved, for its pipeline variants:
/// resolve() and the scenario's checks read no vpp or schedule but through what
/// dividing_micro_batches and pipe_choices already ensure (interleaved with vpp >= 2, pp x
/// vpp <= layers, grad_accum in groups of pp), so the variants share one family (its Job's
/// vpp and schedule set per variant) or one refusal.
struct LastResolve {
  FamilyChoice choice;
  int family = -2;  ///< index in PlanScreen::families; -1: refused; -2: none yet
};

/// The same family but for the pipeline's vpp and schedule.
bool same_family(const FamilyChoice& a, const FamilyChoice& b) {
  const ParallelLayout &x = a.layout, &y = b.layout;
  return x.dp_sharding == y.dp_sharding && x.tp == y.tp && x.sp == y.sp && x.pp == y.pp && x.cp == y.cp &&
         x.ep == y.ep && a.offload == b.offload;
}

/// Screens one resolved family: every dividing micro-batch and recompute, each costed and
/// checked against memory. `first_index` is the family's first layout in enumeration order.
void screen_family(PlanScreen& out, Job& job, int family, const std::vector<std::int64_t>& micro_batches,
                   const std::vector<std::size_t>& dividing, double memory_limit_bytes, int first_index,
                   MicroCache& micro) {
  const std::int64_t per_replica = out.global_batch / job.layout().dp;
  constexpr std::size_t kRc = std::size(kPlanRecompute);
  const StrategySpec& st = job.scenario.strategy;
  for (std::size_t i : dividing) {
    const std::int64_t mb = micro_batches[i];
    for (std::size_t r = 0; r < kRc; ++r) {
      TrainingSpec& tr = job.scenario.training;
      tr.micro_batch = mb;
      tr.grad_accum = per_replica / mb;
      tr.recompute = kPlanRecompute[r];
      const Costs costs = cost(job, micro.get(job, i * kRc + r));
      if (costs.memory.total_bytes > memory_limit_bytes) {
        ++out.rejected[static_cast<int>(PlanRejectReason::memory)];
        continue;
      }
      if (costs.memory.host_verdict == MemoryVerdict::oom) {
        ++out.rejected[static_cast<int>(PlanRejectReason::host_memory)];
        continue;
      }
      PlanCandidate c;
      c.point = PlanPoint{job.layout(), mb, tr.grad_accum, tr.recompute, st.offload};
      c.index = first_index + static_cast<int>(i * kRc + r);
      c.family = family;
      c.compute_s = costs.compute_s;
      c.lower_bound_s = std::numeric_limits<double>::quiet_NaN();
      c.pipeline_bound_s = std::numeric_limits<double>::quiet_NaN();
      c.memory_bytes = costs.memory.total_bytes;
      out.candidates.push_back(std::move(c));
    }
  }
}

/// The family of a layout's (strategy, tp, sp, pp), resolved on the plan's topology, or -1
/// with the layouts counted when it cannot run: its scenario's own checks on its first
/// dividing layout (the checks read no micro-batch but through the token bound, which the
/// fixed global batch keeps constant, and the interleaved grouping, checked before).
int resolve_family(PlanScreen& out, const Topology& topo, const FamilyChoice& f, const PlanPoint& first,
                   std::int64_t layouts, LastResolve& last) {
  if (last.family != -2 && same_family(last.choice, f)) {
    if (last.family < 0) out.rejected[static_cast<int>(PlanRejectReason::invalid)] += layouts;
    return last.family;
  }
  last = LastResolve{f, -1};
  const Scenario s = with_layout(out.base, first);
  ScenarioSource where;
  where.file = s.file;
  try {
    check_scenario(s, where);
  } catch (const InputError& e) {
    out.rejected[static_cast<int>(PlanRejectReason::invalid)] += layouts;
    if (out.invalid_example.empty()) out.invalid_example = e.what();
    return -1;
  }
  out.families.push_back(resolve(s, topo));
  last.family = static_cast<int>(out.families.size()) - 1;
  return last.family;
}

/// The candidate's bound: the lowered one when known, else the compute time.
double step_score(const PlanCandidate& c) {
  if (!std::isnan(c.lower_bound_s)) return c.lower_bound_s;
  return std::isnan(c.pipeline_bound_s) ? c.compute_s : std::max(c.compute_s, c.pipeline_bound_s);
}

/// The family's Job with the layout's vpp, schedule, micro-batch, grad accumulation and
/// recompute (the rest of the layout is the family's).
Job layout_job(const PlanScreen& screen, const PlanCandidate& c) {
  Job job = screen.families[static_cast<std::size_t>(c.family)];
  job.scenario.strategy.layout.vpp = c.point.layout.vpp;
  job.scenario.strategy.layout.schedule = c.point.layout.schedule;
  job.scenario.training.micro_batch = c.point.micro_batch;
  job.scenario.training.grad_accum = c.point.grad_accum;
  job.scenario.training.recompute = c.point.recompute;
  return job;
}

}  // namespace

namespace {

/// A collective's time alone at its modelled rate (Σ phases' latency + bytes / algbw): no
/// longer than the simulation plays it (phase_alone_s is this or slower).
double modelled_s(Collective op, double bytes, const CommFabric& fabric, const std::string& algorithm) {
  if (bytes <= 0 || fabric.ranks() < 2) return 0;
  double t = 0;
  for (const CollectivePhase& ph : collective_phases(op, bytes, fabric, algorithm)) t += ph.time_s();
  return t;
}

double tp_layer_s(const sim::CostedStep& plan, const std::vector<TpCollective>& list) {
  double t = 0;
  if (plan.layout.tp > 1)
    for (const TpCollective& c : list)
      t += c.count * tp_overlap_exposed_s(c, modelled_s(c.op, c.bytes, plan.tp_fabric, plan.algorithm));
  return t;
}

/// A layer's context-parallel exchanges (the ring's exposed part, or the all-gathers) at
/// their phases' times alone, as the lowering chains them after the layer's task.
double cp_layer_s(const std::vector<sim::LayerCollective>& list) {
  double t = 0;
  for (const sim::LayerCollective& c : list) t += c.time_s();
  return t;
}

/// One pipeline send alone (lowering_pipeline.cpp's p2p phase): its latency, then its
/// bytes at the pp link's rate (the NICs across nodes, else the intra-node link); a spine
/// can only slow it.
double p2p_alone_s(const sim::CostedStep& p) {
  const double GBps = p.pp_fabric.inter ? p.pp_fabric.inter->bw_GBps : p.pp_fabric.intra.bw_GBps;
  return p.p2p_latency_s + (p.p2p_bytes > 0 && GBps > 0 ? p.p2p_bytes / (GBps * 1e9) : 0.0);
}

/// Stage 0 after its last backward: its gradient reduction over the data-parallel group,
/// its optimizer share, and under zero1 the parameter all-gather (lowering_pipeline.cpp's
/// pass 3, with stage 0's bytes and parameter share).
double stage0_tail_s(const sim::CostedStep& p, const std::vector<int>& stage_layers) {
  const double grad = stage_layers[0] * p.layer_grad_bytes + p.root_grad_bytes - p.head_grad_bytes;
  const double params = stage_layers[0] * p.layer_param_bytes + p.root_param_bytes - p.head_param_bytes;
  const double all = p.layers * p.layer_param_bytes + p.root_param_bytes;
  const double share = all > 0 ? params / all : static_cast<double>(stage_layers[0]) / p.layers;
  const bool zero1 = p.layout.dp_sharding == Strategy::zero1;
  double t = p.optimizer_s * share;
  t += modelled_s(zero1 ? Collective::reduce_scatter : Collective::all_reduce, grad, p.fabric, p.algorithm);
  if (zero1) t += modelled_s(Collective::all_gather, params, p.fabric, p.algorithm);
  return t;
}

}  // namespace

double pipeline_bound_s(const PlanScreen& screen, const PlanCandidate& c, ScheduleCache& programs) {
  const Job job = layout_job(screen, c);
  const Costs costs = cost(job);
  const ParallelLayout& l = c.point.layout;
  const int m = static_cast<int>(c.point.grad_accum);
  const auto key = std::make_tuple(l.schedule, l.pp, m, l.vpp);
  auto it = programs.find(key);
  if (it == programs.end())
    it = programs.emplace(key, sim::CheckedPrograms(sim::schedule(name(l.schedule), l.pp, m, l.vpp), m, l.vpp)).first;
  const sim::CostedStep plan = costed_step(job, costs, PredictOptions{});
  // Measured collectives (a calibration) may beat the model: then compute alone.
  const bool modelled = job.measured_collectives.empty();
  // Per layer at full speed: the forward and its TP collectives, the backward and its TP
  // collectives, which zb-h1 plays with B, and under recompute the layer's recompute and
  // its collectives, with B too. The layer's context-parallel exchanges run before its TP
  // collectives, chained alike.
  const LayerTimes& lt = costs.per_layer;
  const double f =
      lt.forward_s + (modelled ? tp_layer_s(plan, plan.tp_forward) + cp_layer_s(plan.exchange_forward) : 0);
  const double tb = modelled ? tp_layer_s(plan, plan.tp_backward) + cp_layer_s(plan.exchange_backward) : 0;
  const double b = lt.backward_s;
  const double rec =
      lt.recompute_s > 0
          ? lt.recompute_s + (modelled ? tp_layer_s(plan, plan.tp_recompute) + cp_layer_s(plan.exchange_recompute) : 0)
          : 0;
  // The LM head on the last chunk: its forward after the layers, its backward (with B) before.
  const double head_f = lt.head_forward_s + (modelled ? tp_layer_s(plan, plan.tp_head_forward) : 0);
  const double head_b = lt.head_backward_s + (modelled ? tp_layer_s(plan, plan.tp_head_backward) : 0);
  const double send = modelled ? p2p_alone_s(plan) : 0;
  // The chunks' layers as the lowering splits them (strategy.pp_split).
  const std::vector<int> chunks =
      split_layers_per_chunk(job.scenario.model, l.pp, l.vpp, job.scenario.strategy.pp_split);
  std::vector<sim::PipeOpDurations> per_chunk;
  std::vector<int> stage_layers(static_cast<std::size_t>(l.pp), 0);
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    const int n = chunks[k];
    const double head = k + 1 == chunks.size() ? 1 : 0;
    per_chunk.push_back({n * f + head * head_f, n * (b + tb + rec) + head * head_b,
                         n * (b / 2 + tb + rec) + head * head_b, n * b / 2, send});
    stage_layers[k % static_cast<std::size_t>(l.pp)] += n;
  }
  const sim::PipeReplay r = sim::replay(it->second, per_chunk);
  const double tail = modelled ? stage0_tail_s(plan, stage_layers) : 0.0;
  return std::max(r.step, r.stage_finish.front() + tail);
}

namespace {

/// The lowered bound of a lowered step: the larger of the perfect-overlap bound and the
/// critical path, less the simulation's rounding.
double lowered_bound_of(const Lowered& lowered) {
  // The simulation rounds each task to whole ns: the critical path less 1 ns per task.
  const double rounding_s = 1e-9 * static_cast<double>(lowered.graph.tasks.size());
  return std::max(bound(lowered.graph).perfect_overlap_s, sim::critical_path_s(lowered.graph) - rounding_s);
}

}  // namespace

double lowered_bound_s(const PlanScreen& screen, const PlanCandidate& c) {
  const Job job = layout_job(screen, c);
  return lowered_bound_of(lower(job, cost(job), PredictOptions{}));
}

std::string_view name(PlanObjective o) {
  switch (o) {
    case PlanObjective::time:
      return "time";
    case PlanObjective::tokens_per_s:
      return "tokens_per_s";
    case PlanObjective::cost:
      return "cost";
  }
  return "?";
}

PlanObjective parse_plan_objective(std::string_view s) {
  for (PlanObjective o : {PlanObjective::time, PlanObjective::tokens_per_s, PlanObjective::cost})
    if (name(o) == s) return o;
  throw std::invalid_argument(fmt::format("unknown objective \"{}\"; expected one of time, tokens_per_s, cost", s));
}

std::string_view describe(PlanRejectReason r) {
  switch (r) {
    case PlanRejectReason::tp_model:
      return "tp does not divide the heads, KV heads and MLP width";
    case PlanRejectReason::sp_sequence:
      return "sequence parallelism: tp x cp does not divide seq_len";
    case PlanRejectReason::cp_sequence:
      return "context parallelism: 2 x cp (causal attention's load-balanced chunks) does not divide seq_len";
    case PlanRejectReason::cp_attention:
      return "context parallelism needs a flash-class attention kernel (training.flash_attention)";
    case PlanRejectReason::pipeline_strategy:
      return "a pipeline runs ddp or zero1 within each stage";
    case PlanRejectReason::ep_ranks:
      return "expert parallelism: ep does not divide the TP x CP x DP ranks of a stage";
    case PlanRejectReason::offload_host:
      return "CPU offload: the box has no host (CPU, memory bandwidth) in the catalog";
    case PlanRejectReason::offload_pipeline:
      return "CPU offload with a pipeline is not modelled";
    case PlanRejectReason::batch:
      return "micro_batch x dp does not divide the global batch";
    case PlanRejectReason::pipeline_groups:
      return "interleaved schedule: grad_accum is not a multiple of pp";
    case PlanRejectReason::invalid:
      return "the scenario's checks refuse it";
    case PlanRejectReason::memory:
      return "memory per GPU above the limit";
    case PlanRejectReason::host_memory:
      return "CPU offload: the host's memory runs out";
  }
  return "?";
}

std::string_view key(PlanRejectReason r) {
  switch (r) {
    case PlanRejectReason::tp_model:
      return "tp_model";
    case PlanRejectReason::sp_sequence:
      return "sp_sequence";
    case PlanRejectReason::cp_sequence:
      return "cp_sequence";
    case PlanRejectReason::cp_attention:
      return "cp_attention";
    case PlanRejectReason::offload_host:
      return "offload_host";
    case PlanRejectReason::offload_pipeline:
      return "offload_pipeline";
    case PlanRejectReason::pipeline_strategy:
      return "pipeline_strategy";
    case PlanRejectReason::ep_ranks:
      return "ep_ranks";
    case PlanRejectReason::batch:
      return "batch";
    case PlanRejectReason::pipeline_groups:
      return "pipeline_groups";
    case PlanRejectReason::invalid:
      return "invalid";
    case PlanRejectReason::memory:
      return "memory";
    case PlanRejectReason::host_memory:
      return "host_memory";
  }
  return "?";
}

std::vector<std::string> plan_dimensions_not_enumerated(const PlanOptions& options) {
  std::vector<std::string> out;
  if (!options.enumerate_cp) out.emplace_back("context parallelism (cp, --no-cp)");
  if (!options.enumerate_offload) out.emplace_back("CPU offload (offload, --no-offload)");
  return out;
}

std::string PlanPoint::describe() const {
  const ParallelLayout& l = layout;
  std::string out(name(l.dp_sharding));
  if (l.tp > 1) out += fmt::format(" tp{}", l.tp);
  if (l.sp) out += " sp";
  if (l.cp > 1) out += fmt::format(" cp{}", l.cp);
  if (l.ep > 1) out += fmt::format(" ep{}", l.ep);
  if (l.pp > 1)
    out += l.vpp > 1 ? fmt::format(" pp{} vpp{} {}", l.pp, l.vpp, name(l.schedule))
                     : fmt::format(" pp{} {}", l.pp, name(l.schedule));
  out += fmt::format(" mb{} ga{} {}", micro_batch, grad_accum, name(recompute));
  if (offload != OffloadKind::none) out += fmt::format(" offload_{}", name(offload));
  return out;
}

Scenario with_layout(const Scenario& base, const PlanPoint& point) {
  Scenario s = base;
  const ParallelLayout& l = point.layout;
  s.strategy.layout = l;
  // --tp-comm-overlap needs SP: the scenario's overlap applies to the layouts with SP.
  s.strategy.tp_comm_overlap = base.strategy.tp_comm_overlap && l.sp;
  // Megatron's async backward needs TP; nanotron's gathered inputs need SP.
  s.strategy.tp_backward_overlap = base.strategy.tp_backward_overlap && l.tp > 1 && !s.strategy.tp_comm_overlap;
  s.strategy.sp_keep_gathered = base.strategy.sp_keep_gathered && l.sp;
  // --overlap-param-gather is the distributed optimizer's: it applies to ZeRO-1/2 layouts.
  s.strategy.overlap_param_gather =
      base.strategy.overlap_param_gather && (l.dp_sharding == Strategy::zero1 || l.dp_sharding == Strategy::zero2);
  // --overlap-grad-reduce changes the pipeline's reduction only: layouts with PP take it.
  s.strategy.overlap_grad_reduce = base.strategy.overlap_grad_reduce && l.pp > 1;
  s.strategy.moe_a2a_overlap = base.strategy.moe_a2a_overlap && moe_a2a_overlap_runs(l, point.recompute);
  s.strategy.offload = point.offload;
  if (is_fsdp(l.dp_sharding) && s.strategy.bucket_given) {
    s.strategy.bucket_given = false;
    s.strategy.bucket_bytes = StrategySpec{}.bucket_bytes;
  }
  s.training.micro_batch = point.micro_batch;
  s.training.grad_accum = point.grad_accum;
  s.training.recompute = point.recompute;
  return s;
}

namespace {

/// The global batch of the plan: the option, else the scenario's micro_batch x grad_accum x
/// data-parallel ranks on `gpus`.
std::int64_t planned_global_batch(const Scenario& base, const PlanOptions& options, int gpus) {
  if (options.global_batch > 0) return options.global_batch;
  const int model_ranks = std::max(1, base.strategy.layout.tp) * std::max(1, base.strategy.layout.pp) *
                          std::max(1, base.strategy.layout.cp);
  return base.training.micro_batch * base.training.grad_accum * (gpus / model_ranks);
}

/// Enumerates, rejects and costs one family of layouts.
void screen_one_family(PlanScreen& out, const Topology& topo, const PlanOptions& options, const FamilyChoice& f,
                       const std::vector<std::int64_t>& micro_batches, int& index, MicroCache& micro,
                       LastResolve& last) {
  const auto per_family = static_cast<std::int64_t>(micro_batches.size() * std::size(kPlanRecompute));
  const int first_index = index;
  index += static_cast<int>(per_family);
  out.enumerated += per_family;
  if (auto why = family_reason(out.base, f, topo.box().host.has_value())) {
    out.rejected[static_cast<int>(*why)] += per_family;
    return;
  }
  const int dp = f.layout.dp;
  const std::vector<std::size_t> dividing = dividing_micro_batches(out, micro_batches, f.layout);
  if (dividing.empty()) return;
  const std::int64_t mb = micro_batches[dividing.front()];
  const PlanPoint first{f.layout, mb, out.global_batch / dp / mb, Recompute::none, f.offload};
  const auto layouts = static_cast<std::int64_t>(dividing.size() * std::size(kPlanRecompute));
  const int family = resolve_family(out, topo, f, first, layouts, last);
  if (family < 0) return;
  Job& job = out.families[static_cast<std::size_t>(family)];
  job.scenario.strategy.layout.vpp = f.layout.vpp;
  job.scenario.strategy.layout.schedule = f.layout.schedule;
  const double limit = options.max_memory_fraction * job.gpu.memory_bytes;
  screen_family(out, job, family, micro_batches, dividing, limit, first_index, micro);
}

/// The (tp, sp, cp, ep) blocks of the search in enumeration order, each with its pipelines.
struct ParallelBlock {
  int tp = 1;
  bool sp = false;
  int cp = 1;
  int ep = 1;
  const std::vector<PipeChoice>* pipes = nullptr;
};

/// Expert-parallel degrees of the search over `ranks`, the GPUs (tp x cp x dp x pp): 1 for a
/// dense model; for a MoE model every divisor of the ranks that divides the experts (a
/// pipeline whose tp x cp x dp it does not divide is refused as ep_ranks).
std::vector<int> ep_choices(const TransformerSpec& model, std::int64_t ranks) {
  std::vector<int> out{1};
  if (!model.moe) return out;
  for (std::int64_t ep = 2; ep <= ranks && ep <= model.moe->experts; ++ep)
    if (ranks % ep == 0 && model.moe->experts % ep == 0) out.push_back(static_cast<int>(ep));
  return out;
}

/// Every (tp, sp, cp, ep) of the search: tp dividing the node, sp with tp >= 2 (only sp for
/// a MoE model, which Megatron-Core requires, and an MLA model, modelled with it only),
/// cp_choices of the GPUs over tp, ep_choices of the GPUs; `pipes` holds the pipelines of
/// each (tp, cp).
std::vector<ParallelBlock> parallel_blocks(const PlanScreen& out, const PlanOptions& options,
                                           std::vector<std::vector<PipeChoice>>& pipes) {
  std::vector<ParallelBlock> blocks;
  const std::vector<std::int64_t> tps = divisors(out.base.hardware.gpus_per_node);
  std::size_t count = 0;
  for (std::int64_t tp : tps) count += cp_choices(out.gpus / tp, out.base.training.seq_len, options).size();
  pipes.reserve(count);  // blocks point into it
  for (std::int64_t tp : tps) {
    const std::size_t first = blocks.size();
    for (int cp : cp_choices(out.gpus / tp, out.base.training.seq_len, options)) {
      pipes.push_back(pipe_choices(out.gpus / (tp * cp), out.base.model.layers, out.base.strategy.pp_split));
      for (int ep : ep_choices(out.base.model, out.gpus))
        blocks.push_back({static_cast<int>(tp), false, cp, ep, &pipes.back()});
    }
    if (tp == 1) continue;
    if (out.base.model.moe || out.base.model.mla) {  // modelled with SP only (LayoutRule::moe_sp, mla_tp)
      for (std::size_t b = first; b < blocks.size(); ++b) blocks[b].sp = true;
      continue;
    }
    const std::size_t plain = blocks.size();
    for (std::size_t b = first; b < plain; ++b) {
      ParallelBlock with_sp = blocks[b];
      with_sp.sp = true;
      blocks.push_back(with_sp);
    }
  }
  return blocks;
}

}  // namespace

PlanScreen screen_layouts(const Scenario& base, const PlanOptions& options, bool full_bounds) {
  check_options(base, options);
  PlanScreen out;
  out.base = planned_base(base, options);
  out.gpus = out.base.hardware.gpus();
  out.global_batch = planned_global_batch(base, options, out.gpus);
  if (out.global_batch < 1) throw std::invalid_argument("global batch must be >= 1");
  const std::vector<std::int64_t> micro_batches = divisors(out.global_batch);
  const Topology topo = resolved_topology(out.base);  // once per hardware
  std::vector<std::vector<PipeChoice>> pipes;
  const std::vector<ParallelBlock> blocks = parallel_blocks(out, options, pipes);
  const std::size_t per_block = micro_batches.size() * std::size(kPlanRecompute);
  MicroCache micro{std::vector<MicroStepTimes>(blocks.size() * per_block),
                   std::vector<char>(blocks.size() * per_block, 0), 0};
  LastResolve last;
  std::int64_t families = 0, done = 0;
  for (Strategy st : kPlanStrategies)
    for (const ParallelBlock& b : blocks)
      families += static_cast<std::int64_t>(b.pipes->size() * offload_choices(st, options).size());
  int index = 0;
  for (Strategy st : kPlanStrategies) {
    const std::vector<OffloadKind> offloads = offload_choices(st, options);
    for (std::size_t k = 0; k < blocks.size(); ++k) {
      const ParallelBlock& b = blocks[k];
      micro.base = k * per_block;
      for (const PipeChoice& pipe : *b.pipes) {
        for (OffloadKind off : offloads) {
          FamilyChoice f;
          f.layout.dp_sharding = st;
          f.layout.tp = b.tp, f.layout.sp = b.sp, f.layout.cp = b.cp, f.layout.ep = b.ep;
          f.layout.pp = pipe.pp, f.layout.vpp = pipe.vpp, f.layout.schedule = pipe.schedule;
          f.layout.dp = out.gpus / (b.tp * b.cp * pipe.pp);
          f.offload = off;
          screen_one_family(out, topo, options, f, micro_batches, index, micro, last);
          if (options.progress && (++done % 64 == 0 || done == families)) options.progress("screen", done, families);
        }
      }
    }
  }
  if (full_bounds)
    for (PlanCandidate& c : out.candidates) c.lower_bound_s = lowered_bound_s(out, c);
  std::stable_sort(out.candidates.begin(), out.candidates.end(), [](const PlanCandidate& a, const PlanCandidate& b) {
    return step_score(a) != step_score(b) ? step_score(a) < step_score(b) : a.index < b.index;
  });
  return out;
}

double objective_value(PlanObjective o, const Prediction& p, const Scenario& s) {
  switch (o) {
    case PlanObjective::time:
      return p.step_time_s;
    case PlanObjective::tokens_per_s:
      return p.tokens_per_s_per_gpu;
    case PlanObjective::cost:
      return usd_per_million_tokens(s.price_per_gpu_hour_usd.value_or(std::numeric_limits<double>::quiet_NaN()), p);
  }
  return 0;
}

namespace {

/// The prediction of one candidate from its family's resolved Job: the stages of predict()
/// with the layout's micro-batch, grad accumulation and recompute (bit for bit predict() on
/// with_layout: resolve reads none of the three).
/// `lowered`: the candidate's step as lower() gives it, when already lowered for its bound.
Prediction simulate_candidate(const PlanScreen& screen, const PlanCandidate& c, std::optional<Lowered> lowered) {
  const Job job = layout_job(screen, c);
  const Costs costs = cost(job);
  if (!lowered) lowered = lower(job, costs, PredictOptions{});
  PredictOptions play;
  play.lower_pipelines_long = true;
  sim::SimResult result = simulate(*lowered, play);
  const sim::StepBounds bounds = bound(lowered->graph);
  return assemble(job, costs, std::move(*lowered), std::move(result), bounds, PredictOptions{});
}

/// Why the winner beats the runner-up: the step's terms (compute at full speed, its
/// slowdown and idle time, exposed communication) side by side, the largest saving named.
std::string why_winner(const PlanRow& a, const PlanRow& b) {
  struct Term {
    const char* name;
    double winner_s, runner_s;
  };
  const Prediction& p = a.prediction;
  const Prediction& q = b.prediction;
  const Term terms[] = {
      {"compute", p.compute_s, q.compute_s},
      {"exposed communication", p.comm_exposed_s, q.comm_exposed_s},
      {"compute slowdown under communication", p.compute_busy_s - p.compute_s, q.compute_busy_s - q.compute_s},
      {"pipeline bubble and idle time", bubble_s(p), bubble_s(q)},
  };
  if (q.step_time_s == p.step_time_s)
    return fmt::format(
        "{} and {} tie at {:.4g} s per step; the first is ranked first by the objective, then by "
        "enumeration order",
        a.point.describe(), b.point.describe(), p.step_time_s);
  const Term* best = &terms[0];
  for (const Term& t : terms)
    if (t.runner_s - t.winner_s > best->runner_s - best->winner_s) best = &t;
  return fmt::format("{} beats {} by {:.4g} s per step; the largest difference is {}: {:.4g} s against {:.4g} s",
                     a.point.describe(), b.point.describe(), q.step_time_s - p.step_time_s, best->name, best->winner_s,
                     best->runner_s);
}

/// Most lowered steps kept for their simulation: a long pipeline's step graph holds some
/// 10^5 tasks, tens of MB (405B on 16,384 H100: 5 kept add about 0.2 GB to 0.4 GB).
constexpr std::size_t kMaxKeptLowered = 5;

/// Lowered steps kept from their bound for their simulation, by enumeration index, with
/// their lowered bound.
using LoweredCache = std::map<int, std::pair<double, Lowered>>;

/// Keeps `c`'s lowered step among the `most` of lowest lowered bound (the likeliest to be
/// simulated next; a step lowered again costs time, never a different result).
void keep_lowered(LoweredCache& kept, const PlanCandidate& c, Lowered lowered, std::size_t most) {
  kept.emplace(c.index, std::make_pair(c.lower_bound_s, std::move(lowered)));
  if (kept.size() <= most) return;
  auto worst = kept.begin();
  for (auto it = kept.begin(); it != kept.end(); ++it)
    if (it->second.first > worst->second.first) worst = it;
  kept.erase(worst);
}

/// Better under the objective, ties by step time then enumeration order.
bool better(PlanObjective o, const PlanRow& a, int ai, const PlanRow& b, int bi) {
  if (a.objective != b.objective)
    return o == PlanObjective::tokens_per_s ? a.objective > b.objective : a.objective < b.objective;
  return ai < bi;
}

}  // namespace

PlanResult plan(const Scenario& base, const PlanOptions& options) {
  const PlanScreen screen = screen_layouts(base, options);
  PlanResult r;
  r.scenario = base.name;
  r.gpus = screen.gpus;
  r.global_batch = screen.global_batch;
  r.objective = options.objective;
  r.max_memory_fraction = options.max_memory_fraction;
  r.enumerated = screen.enumerated;
  std::copy(std::begin(screen.rejected), std::end(screen.rejected), std::begin(r.rejected));
  r.invalid_example = screen.invalid_example;
  r.not_enumerated = plan_dimensions_not_enumerated(options);
  r.gap = options.gap;
  r.screened = static_cast<std::int64_t>(screen.candidates.size());

  const std::size_t k = static_cast<std::size_t>(options.top);
  std::vector<std::pair<PlanRow, int>> rows;  // with the enumeration index
  std::vector<double> steps;                  // simulated steps, sorted
  // Min-queue on (bound, enumeration index): a candidate with only its compute bound is
  // lowered when it reaches the front and goes back with its lowered bound (never smaller),
  // so candidates reach the simulation in the order of that bound.
  std::vector<PlanCandidate> queue = screen.candidates;
  auto later = [](const PlanCandidate& a, const PlanCandidate& b) {
    return step_score(a) != step_score(b) ? step_score(a) > step_score(b) : a.index > b.index;
  };
  std::make_heap(queue.begin(), queue.end(), later);
  ScheduleCache programs;
  LoweredCache kept;
  // Every objective is monotone in the step: a bound above the K-th step prunes (the
  // rounding slack of check_simulation kept).
  auto pruned = [&](const PlanCandidate& c) {
    return steps.size() >= k && step_score(c) * (1 + options.gap) * (1 - 1e-9) > steps[k - 1];
  };
  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end(), later);
    PlanCandidate c = queue.back();
    queue.pop_back();
    if (pruned(c)) break;
    if (c.point.layout.pp > 1 && std::isnan(c.pipeline_bound_s) && std::isnan(c.lower_bound_s)) {
      c.pipeline_bound_s = pipeline_bound_s(screen, c, programs);
      queue.push_back(c);
      std::push_heap(queue.begin(), queue.end(), later);
      continue;
    }
    if (std::isnan(c.lower_bound_s)) {
      const Job job = layout_job(screen, c);
      Lowered lowered = lower(job, cost(job), PredictOptions{});
      c.lower_bound_s = std::max(lowered_bound_of(lowered), step_score(c));
      ++r.bounded;
      keep_lowered(kept, c, std::move(lowered), std::min<std::size_t>(k, kMaxKeptLowered));
      queue.push_back(c);
      std::push_heap(queue.begin(), queue.end(), later);
      continue;
    }
    if (static_cast<int>(rows.size()) >= options.max_simulations) {
      r.exact = false;
      break;
    }
    if (options.progress) options.progress("simulate", static_cast<std::int64_t>(rows.size()), r.screened);
    std::optional<Lowered> lowered;
    if (auto it = kept.find(c.index); it != kept.end()) {
      lowered = std::move(it->second.second);
      kept.erase(it);
    }
    PlanRow row{c.point, simulate_candidate(screen, c, std::move(lowered)), c.lower_bound_s, 0};
    row.objective = objective_value(options.objective, row.prediction, screen.base);
    steps.insert(std::upper_bound(steps.begin(), steps.end(), row.prediction.step_time_s), row.prediction.step_time_s);
    rows.emplace_back(std::move(row), c.index);
  }
  r.simulated = static_cast<std::int64_t>(rows.size());
  if (options.progress) options.progress("simulate", r.simulated, r.simulated);
  std::stable_sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) {
    return better(options.objective, a.first, a.second, b.first, b.second);
  });
  for (std::size_t i = 0; i < rows.size() && i < k; ++i) r.top.push_back(std::move(rows[i].first));
  if (r.top.size() >= 2) r.why = why_winner(r.top[0], r.top[1]);
  return r;
}

double bubble_s(const Prediction& p) { return std::max(0.0, p.step_time_s - p.compute_busy_s - p.comm_exposed_s); }

namespace {

int parse_count(std::string_view text, std::string_view whole) {
  int v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || v < 1)
    throw std::invalid_argument(fmt::format("GPU range \"{}\": expected A:B or a list A,B,C of counts >= 1", whole));
  return v;
}

}  // namespace

std::vector<int> parse_gpu_range(std::string_view text) {
  std::vector<int> out;
  if (const auto colon = text.find(':'); colon != std::string_view::npos) {
    const int a = parse_count(text.substr(0, colon), text);
    const int b = parse_count(text.substr(colon + 1), text);
    if (a > b) throw std::invalid_argument(fmt::format("GPU range \"{}\": {} is above {}", text, a, b));
    for (std::int64_t n = a; n <= b; n *= 2) out.push_back(static_cast<int>(n));
    return out;
  }
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    out.push_back(parse_count(text.substr(at, comma - at), text));
    at = comma + 1;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<PlanResult> plan_range(const Scenario& base, const std::vector<int>& gpus, const PlanOptions& options) {
  if (gpus.empty()) throw std::invalid_argument("a GPU range needs at least one count");
  PlanOptions o = options;
  o.global_batch = planned_global_batch(base, options, base.hardware.gpus());
  std::vector<PlanResult> out;
  for (int n : gpus) {
    o.gpus = n;
    out.push_back(plan(base, o));
  }
  return out;
}

}  // namespace stepcast
