#include "simulator/lowering.hpp"

#include "simulator/internal_error.hpp"
#include "simulator/lowering_common.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace stepcast::sim {

double bucket_count(double total_bytes, double first_bytes, double cap_bytes) {
  if (!(first_bytes > 0) || !(cap_bytes > 0) || !(total_bytes >= 0) || !std::isfinite(total_bytes))
    throw InternalError(
        fmt::format("bucket sizes: total {} B, first bucket {} B, cap {} B", total_bytes, first_bytes, cap_bytes));
  if (total_bytes == 0) return 0;
  const double rest = std::max(0.0, total_bytes - first_bytes);
  const double n = 1 + std::ceil(rest / cap_bytes * (1 - 1e-12));
  if (n > kMaxBuckets)
    throw InternalError(fmt::format("{:.3g} B of gradients in buckets of {:.3g} B: {:.3g} buckets, more than {:.0g}",
                                    total_bytes, cap_bytes, n, kMaxBuckets));
  return n;
}

std::vector<double> bucket_sizes(double total_bytes, double first_bytes, double cap_bytes) {
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(bucket_count(total_bytes, first_bytes, cap_bytes)));
  double left = total_bytes;
  double cap = first_bytes;
  while (left > 0) {
    const double take = std::min(left, cap);
    out.push_back(take);
    left -= take;
    cap = cap_bytes;
    if (left <= total_bytes * 1e-12) break;  // rounding crumbs
  }
  return out;
}

namespace lowering {

std::unique_ptr<StrategyLowering> lowering_for(Strategy s) {
  switch (s) {
    case Strategy::ddp:
    case Strategy::fsdp_no_shard:
      return replicated_lowering(s);
    case Strategy::zero1:
    case Strategy::zero2:
      return zero12_lowering(s);
    case Strategy::zero3:
    case Strategy::fsdp_full_shard:
    case Strategy::fsdp_shard_grad_op:
    case Strategy::fsdp_hybrid_shard:
      return sharded_lowering(s);
  }
  throw InternalError(fmt::format("no lowering for strategy {}", static_cast<int>(s)));
}

namespace {

/// The micro-steps the graph holds: all of them, or the first e-1 and the last.
std::vector<std::int64_t> explicit_micro_steps(const CostedStep& p, std::int64_t e) {
  const std::int64_t n = p.micro_steps;
  std::vector<std::int64_t> ks;
  for (std::int64_t k = 0; k < (n <= e ? n : e - 1); ++k) ks.push_back(k);
  if (n > e) ks.push_back(n - 1);
  return ks;
}

}  // namespace

}  // namespace lowering

std::string_view lowering_family(Strategy s) {
  return lowering::lowering_for(s)->name();  // a string literal: outlives the lowering
}

namespace {

StepGraph lower_micro_steps(const CostedStep& plan, const std::vector<std::int64_t>& ks) {
  using namespace lowering;
  const std::unique_ptr<StrategyLowering> family = lowering_for(plan.layout.dp_sharding);
  Builder b(plan, family->streams());
  for (std::int64_t k : ks) {
    const int first = static_cast<int>(b.graph().tasks.size());
    family->micro_step(b, k, k + 1 == plan.micro_steps);
    b.graph().micro_steps.push_back(MicroStepSpan{k, first, static_cast<int>(b.graph().tasks.size())});
  }
  if (static_cast<std::int64_t>(ks.size()) < plan.micro_steps) {
    b.graph().repeat_after = static_cast<int>(ks.size()) - 2;
    b.graph().repeat_count = plan.micro_steps - static_cast<std::int64_t>(ks.size());
  }
  std::vector<int> grads_done;  // the last reduction before the optimizer
  if (b.last_reduce >= 0) grads_done.push_back(b.last_reduce);
  const int opt = b.compute("optimizer step", TaskCategory::optimizer, plan.optimizer_s, 0, grads_done);
  family->after_optimizer(b, opt);
  return b.take();
}

}  // namespace

StepGraph lower_step(const CostedStep& plan) {
  if (plan.layers < 1 || plan.micro_steps < 1 || plan.gpus < 1)
    throw InternalError(fmt::format("lowering a step of {} layers, {} micro-steps on {} GPUs", plan.layers,
                                    plan.micro_steps, plan.gpus));
  if (plan.layout.pp < 1)
    throw std::invalid_argument(fmt::format("pipeline stages pp {} must be >= 1", plan.layout.pp));
  if (plan.layout.pp > 1) return lowering::lower_pipeline(plan, lowering::first_repeat_unit(plan));
  const std::vector<std::int64_t> ks = lowering::explicit_micro_steps(plan, std::max(4, plan.max_explicit_micro_steps));
  // At least a forward and a backward task per layer, micro-step and rank class: refuse a
  // graph past kMaxTasks before building any of it.
  const double classes = std::max<double>(1, static_cast<double>(plan.groups.size()));
  const double least_tasks = 2.0 * plan.layers * static_cast<double>(ks.size()) * classes;
  if (least_tasks > kMaxTasks)
    throw InternalError(fmt::format("a step of {} layers, {} micro-steps held and {} rank classes: more than {} tasks",
                                    plan.layers, ks.size(), classes, kMaxTasks));
  return lower_micro_steps(plan, ks);
}

namespace {

/// Tasks of `closed_form` with `copies` more of its repeated micro-step (or unit) explicit.
double tasks_with_copies(const StepGraph& closed_form, double copies) {
  const MicroStepSpan& repeated = closed_form.micro_steps[static_cast<std::size_t>(closed_form.repeat_after)];
  return static_cast<double>(closed_form.tasks.size()) +
         static_cast<double>(repeated.end_task - repeated.first_task) * copies;
}

}  // namespace

std::optional<StepGraph> lower_step_explicit(const CostedStep& plan, const StepGraph& closed_form) {
  if (closed_form.repeat_count == 0) return std::nullopt;
  if (tasks_with_copies(closed_form, static_cast<double>(closed_form.repeat_count)) > kMaxExplicitTasks)
    return std::nullopt;
  if (plan.layout.pp > 1) return lowering::lower_pipeline(plan, -1);
  return lower_micro_steps(plan, lowering::explicit_micro_steps(plan, plan.micro_steps));
}

std::optional<StepGraph> lower_step_longer(const CostedStep& plan, const StepGraph& closed_form) {
  if (plan.layout.pp == 1 || closed_form.repeat_count == 0) return lower_step_explicit(plan, closed_form);
  const int R = closed_form.repeat_after;
  if (R > lowering::first_repeat_unit(plan)) return std::nullopt;  // doubled once already
  if (tasks_with_copies(closed_form, R + 1) > kMaxExplicitTasks) return std::nullopt;
  return lowering::lower_pipeline(plan, 2 * R + 1);
}

}  // namespace stepcast::sim
