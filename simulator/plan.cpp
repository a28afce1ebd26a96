/// \file
/// The layout search of plan.hpp: enumerate, reject, screen by lower bound, simulate the
/// best by branch and bound.
#include "simulator/plan.hpp"

#include "base/json_input.hpp"

#include <fmt/format.h>

#include <algorithm>
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

bool is_fsdp(Strategy st) {
  return st == Strategy::fsdp_full_shard || st == Strategy::fsdp_shard_grad_op || st == Strategy::fsdp_hybrid_shard ||
         st == Strategy::fsdp_no_shard;
}

/// The base scenario on the planned GPUs, tensor parallelism off (each layout sets its own).
Scenario planned_base(const Scenario& base, const PlanOptions& options) {
  Scenario s = base;
  s.strategy.tp = 1;
  s.strategy.sp = false;
  const int gpus = options.gpus > 0 ? options.gpus : base.hardware.gpus();
  if (gpus != s.hardware.gpus()) s = with_gpus(s, gpus);
  return s;
}

void check_options(const Scenario& base, const PlanOptions& o) {
  if (o.global_batch < 0) throw std::invalid_argument(fmt::format("global batch must be >= 1, got {}", o.global_batch));
  if (!(o.max_memory_fraction > 0 && o.max_memory_fraction <= 1))
    throw std::invalid_argument(
        fmt::format("max memory fraction must be in (0, 1], got {}", o.max_memory_fraction));
  if (o.top < 1) throw std::invalid_argument(fmt::format("top must be >= 1, got {}", o.top));
  if (o.objective == PlanObjective::cost && !base.price_per_gpu_hour_usd)
    throw std::invalid_argument("the cost objective needs price_per_gpu_hour_usd in the scenario");
}

/// The reason a (strategy, tp, sp) family is refused before any micro-batch, or none.
std::optional<PlanRejectReason> family_reason(const Scenario& s, int tp, bool sp) {
  const TransformerSpec& m = s.model;
  if (m.heads % tp != 0 || m.kv_heads % tp != 0 || m.ffn_hidden % tp != 0) return PlanRejectReason::tp_model;
  if (sp && s.training.seq_len % tp != 0) return PlanRejectReason::sp_sequence;
  return std::nullopt;
}

/// Screens one resolved family: every micro-batch and recompute, each costed and checked
/// against memory. `index` counts the enumeration order.
void screen_family(PlanScreen& out, Job& job, int family, const std::vector<std::int64_t>& micro_batches,
                   double memory_limit_bytes, int& index) {
  const std::int64_t per_replica = out.global_batch / job.dp;
  for (std::int64_t mb : micro_batches) {
    for (Recompute rc : kPlanRecompute) {
      const int at = index++;
      if (out.global_batch % job.dp != 0 || per_replica % mb != 0) {
        ++out.rejected[static_cast<int>(PlanRejectReason::batch)];
        continue;
      }
      TrainingSpec& tr = job.scenario.training;
      tr.micro_batch = mb;
      tr.grad_accum = per_replica / mb;
      tr.recompute = rc;
      const Costs costs = cost(job);
      if (costs.memory.total_bytes > memory_limit_bytes) {
        ++out.rejected[static_cast<int>(PlanRejectReason::memory)];
        continue;
      }
      PlanCandidate c;
      c.layout = Layout{job.scenario.strategy.kind, job.tp, job.scenario.strategy.sp, mb, tr.grad_accum, rc, job.dp};
      c.index = at;
      c.family = family;
      c.compute_s = costs.compute_s;
      c.lower_bound_s = std::numeric_limits<double>::quiet_NaN();
      c.memory_bytes = costs.memory.total_bytes;
      out.candidates.push_back(std::move(c));
    }
  }
}

/// Resolves one (strategy, tp, sp) family, or counts why it cannot run: its scenario's own
/// checks on the first micro-batch (the checks read no micro-batch but through the token
/// bound, which the fixed global batch keeps constant).
std::optional<Job> resolve_family(PlanScreen& out, const Layout& first, std::int64_t layouts) {
  const Scenario s = with_layout(out.base, first);
  ScenarioSource where;
  where.file = s.file;
  try {
    check_scenario(s, where);
  } catch (const InputError& e) {
    out.rejected[static_cast<int>(PlanRejectReason::invalid)] += layouts;
    if (out.invalid_example.empty()) out.invalid_example = e.what();
    return std::nullopt;
  }
  return resolve(s);
}

/// The candidate's bound: the perfect-overlap one when known, else the compute time.
double step_score(const PlanCandidate& c) { return std::isnan(c.lower_bound_s) ? c.compute_s : c.lower_bound_s; }

/// The family's Job with the layout's micro-batch, grad accumulation and recompute.
Job layout_job(const PlanScreen& screen, const PlanCandidate& c) {
  Job job = screen.families[static_cast<std::size_t>(c.family)];
  job.scenario.training.micro_batch = c.layout.micro_batch;
  job.scenario.training.grad_accum = c.layout.grad_accum;
  job.scenario.training.recompute = c.layout.recompute;
  return job;
}

}  // namespace

double perfect_overlap_bound_s(const PlanScreen& screen, const PlanCandidate& c) {
  const Job job = layout_job(screen, c);
  const Costs costs = cost(job);
  return bound(lower(job, costs, PredictOptions{}).graph).perfect_overlap_s;
}

std::string_view name(PlanObjective o) {
  switch (o) {
    case PlanObjective::time: return "time";
    case PlanObjective::tokens_per_s: return "tokens_per_s";
    case PlanObjective::cost: return "cost";
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
    case PlanRejectReason::tp_model: return "tp does not divide the heads, KV heads and MLP width";
    case PlanRejectReason::sp_sequence: return "sequence parallelism: tp does not divide seq_len";
    case PlanRejectReason::batch: return "micro_batch x dp does not divide the global batch";
    case PlanRejectReason::invalid: return "the scenario's checks refuse it";
    case PlanRejectReason::memory: return "memory per GPU above the limit";
  }
  return "?";
}

std::string Layout::describe() const {
  std::string out(name(strategy));
  if (tp > 1) out += fmt::format(" tp{}", tp);
  if (sp) out += " sp";
  out += fmt::format(" mb{} ga{} {}", micro_batch, grad_accum, name(recompute));
  return out;
}

Scenario with_layout(const Scenario& base, const Layout& layout) {
  Scenario s = base;
  s.strategy.kind = layout.strategy;
  s.strategy.tp = layout.tp;
  s.strategy.sp = layout.sp;
  if (is_fsdp(layout.strategy) && s.strategy.bucket_given) {
    s.strategy.bucket_given = false;
    s.strategy.bucket_bytes = StrategySpec{}.bucket_bytes;
  }
  s.training.micro_batch = layout.micro_batch;
  s.training.grad_accum = layout.grad_accum;
  s.training.recompute = layout.recompute;
  return s;
}

PlanScreen screen_layouts(const Scenario& base, const PlanOptions& options, bool full_bounds) {
  check_options(base, options);
  PlanScreen out;
  out.base = planned_base(base, options);
  out.gpus = out.base.hardware.gpus();
  const int base_tp = std::max(1, base.strategy.tp);
  const int cp = std::max(1, base.strategy.cp);  // kept from the scenario: cp ranks share each sequence
  out.global_batch = options.global_batch > 0
                         ? options.global_batch
                         : base.training.micro_batch * base.training.grad_accum * (out.gpus / (base_tp * cp));
  if (out.global_batch < 1) throw std::invalid_argument("global batch must be >= 1");
  const std::vector<std::int64_t> micro_batches = divisors(out.global_batch);
  const auto per_family = static_cast<std::int64_t>(micro_batches.size() * std::size(kPlanRecompute));
  int index = 0;
  for (Strategy st : kPlanStrategies) {
    for (std::int64_t tp : divisors(out.base.hardware.gpus_per_node)) {
      for (bool sp : {false, true}) {
        if (sp && tp == 1) continue;
        out.enumerated += per_family;
        if (auto why = family_reason(out.base, static_cast<int>(tp), sp)) {
          out.rejected[static_cast<int>(*why)] += per_family;
          index += static_cast<int>(per_family);
          continue;
        }
        const int dp = std::max(1, out.gpus / (static_cast<int>(tp) * cp));
        const Layout first{st, static_cast<int>(tp), sp, 1, std::max<std::int64_t>(1, out.global_batch / dp),
                           Recompute::none, dp};
        std::optional<Job> job = resolve_family(out, first, per_family);
        if (!job) {
          index += static_cast<int>(per_family);
          continue;
        }
        out.families.push_back(std::move(*job));
        const double limit = options.max_memory_fraction * out.families.back().gpu.memory_bytes;
        screen_family(out, out.families.back(), static_cast<int>(out.families.size()) - 1, micro_batches, limit,
                      index);
      }
    }
  }
  if (full_bounds)
    for (PlanCandidate& c : out.candidates) c.lower_bound_s = perfect_overlap_bound_s(out, c);
  std::stable_sort(out.candidates.begin(), out.candidates.end(), [](const PlanCandidate& a, const PlanCandidate& b) {
    return step_score(a) != step_score(b) ? step_score(a) < step_score(b) : a.index < b.index;
  });
  return out;
}

double objective_value(PlanObjective o, const Prediction& p, const Scenario& s) {
  switch (o) {
    case PlanObjective::time: return p.step_time_s;
    case PlanObjective::tokens_per_s: return p.tokens_per_s_per_gpu;
    case PlanObjective::cost: {
      // USD per million tokens = price x GPUs x step / 3600 / (tokens per step / 1e6)
      const double price = s.price_per_gpu_hour_usd.value_or(std::numeric_limits<double>::quiet_NaN());
      return price * p.gpus * p.step_time_s / 3600.0 / (p.tokens_per_step / 1e6);
    }
  }
  return 0;
}

namespace {

/// The prediction of one candidate from its family's resolved Job: the stages of predict()
/// with the layout's micro-batch, grad accumulation and recompute (bit for bit predict() on
/// with_layout: resolve reads none of the three).
Prediction simulate_candidate(const PlanScreen& screen, const PlanCandidate& c) {
  const Job job = layout_job(screen, c);
  const Costs costs = cost(job);
  Lowered lowered = lower(job, costs, PredictOptions{});
  sim::SimResult result = simulate(lowered.graph, PredictOptions{});
  const sim::StepBounds bounds = bound(lowered.graph);
  return assemble(job, costs, std::move(lowered), std::move(result), bounds, PredictOptions{});
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
      {"compute slowdown and idle", p.step_time_s - p.compute_s - p.comm_exposed_s,
       q.step_time_s - q.compute_s - q.comm_exposed_s},
  };
  const Term* best = &terms[0];
  for (const Term& t : terms)
    if (t.runner_s - t.winner_s > best->runner_s - best->winner_s) best = &t;
  return fmt::format("{} beats {} by {:.4g} s per step; the largest difference is {}: {:.4g} s against {:.4g} s",
                     a.layout.describe(), b.layout.describe(), q.step_time_s - p.step_time_s, best->name,
                     best->winner_s, best->runner_s);
}

/// Better under the objective, ties by step time then enumeration order.
bool better(PlanObjective o, const PlanRow& a, int ai, const PlanRow& b, int bi) {
  if (a.objective != b.objective) return o == PlanObjective::tokens_per_s ? a.objective > b.objective
                                                                           : a.objective < b.objective;
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
  r.screened = static_cast<std::int64_t>(screen.candidates.size());

  const std::size_t k = static_cast<std::size_t>(options.top);
  const std::size_t at_least = 3 * k;
  std::vector<std::pair<PlanRow, int>> rows;  // with the enumeration index
  std::vector<double> steps;                  // simulated steps, sorted
  // Min-queue on (bound, enumeration index): a candidate with only its compute bound is
  // lowered when it reaches the front and goes back with its perfect-overlap bound (never
  // smaller), so candidates reach the simulation in perfect-overlap order.
  std::vector<PlanCandidate> queue = screen.candidates;
  auto later = [](const PlanCandidate& a, const PlanCandidate& b) {
    return step_score(a) != step_score(b) ? step_score(a) > step_score(b) : a.index > b.index;
  };
  std::make_heap(queue.begin(), queue.end(), later);
  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end(), later);
    PlanCandidate c = queue.back();
    queue.pop_back();
    // Every objective is monotone in the step: a bound above the K-th step prunes (the
    // rounding slack of check_simulation kept).
    if (rows.size() >= at_least && steps.size() >= k && step_score(c) * (1 - 1e-9) > steps[k - 1]) break;
    if (std::isnan(c.lower_bound_s)) {
      c.lower_bound_s = perfect_overlap_bound_s(screen, c);
      ++r.bounded;
      queue.push_back(c);
      std::push_heap(queue.begin(), queue.end(), later);
      continue;
    }
    if (static_cast<int>(rows.size()) >= options.max_simulations) {
      r.exact = false;
      break;
    }
    PlanRow row{c.layout, simulate_candidate(screen, c), c.lower_bound_s, 0};
    row.objective = objective_value(options.objective, row.prediction, screen.base);
    steps.insert(std::upper_bound(steps.begin(), steps.end(), row.prediction.step_time_s), row.prediction.step_time_s);
    rows.emplace_back(std::move(row), c.index);
  }
  r.simulated = static_cast<std::int64_t>(rows.size());
  std::stable_sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) {
    return better(options.objective, a.first, a.second, b.first, b.second);
  });
  for (std::size_t i = 0; i < rows.size() && i < k; ++i) r.top.push_back(std::move(rows[i].first));
  if (r.top.size() >= 2) r.why = why_winner(r.top[0], r.top[1]);
  return r;
}

}  // namespace stepcast
