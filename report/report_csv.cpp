/// \file
/// CSV reports of the table commands (scale, plan, compare, validate): one header row whose
/// every column name carries its unit (`_s`, `_bytes`, `_usd`, `_fraction`, `_x`, `_pct`;
/// plain counts are named for what they count: gpus, nodes, tp), then one row per table
/// row. RFC 4180 but for the line ends ("\n"): comma separated, a field with a comma, quote
/// or line break quoted with its quotes doubled. Numbers are written in full (the shortest
/// text that reads back to the same double); an absent or non-finite figure is an empty field.

#include "report/report.hpp"

#include <fmt/format.h>

#include <cmath>

namespace stepcast::cli {

namespace {

/// One field, quoted when it must be.
std::string field(std::string_view text) {
  if (text.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string number(double v) { return std::isfinite(v) ? fmt::format("{}", v) : ""; }
std::string number(const std::optional<double>& v) { return v ? number(*v) : ""; }
std::string count(std::int64_t v) { return std::to_string(v); }
std::string flag(bool v) { return v ? "true" : "false"; }

/// One line of fields, each quoted as needed.
std::string line(const std::vector<std::string>& fields) {
  std::string out;
  bool first = true;
  for (const std::string& f : fields) {
    if (!first) out += ',';
    out += field(f);
    first = false;
  }
  return out + "\n";
}

}  // namespace

std::string scale_csv(const std::vector<ScaleRow>& rows) {
  std::string out =
      line({"gpus", "nodes", "step_time_s", "comm_exposed_s", "tokens_per_s", "tokens_per_s_per_gpu", "mfu_fraction",
            "time_per_epoch_s", "cost_per_epoch_usd", "usd_per_million_tokens", "baseline_bool", "speedup_x",
            "scaling_efficiency_fraction", "memory_per_gpu_bytes", "memory_verdict", "fits_bool",
            "micro_batch_sequences", "grad_accum_steps", "global_batch_sequences"});
  for (const ScaleRow& r : rows)
    out += line({count(r.gpus), count(r.nodes), number(r.step_time_s), number(r.comm_exposed_s), number(r.tokens_per_s),
                 number(r.tokens_per_s_per_gpu), number(r.mfu), number(r.time_per_epoch_s),
                 number(r.cost_per_epoch_usd), number(r.usd_per_million_tokens), flag(r.baseline), number(r.speedup),
                 number(r.scaling_efficiency), number(r.memory_per_gpu_bytes), std::string(name(r.verdict)),
                 flag(r.fits()), count(r.micro_batch), count(r.grad_accum), count(r.global_batch)});
  return out;
}

namespace {

/// The objective's column: its figure and unit.
std::string objective_column(PlanObjective o) {
  switch (o) {
    case PlanObjective::time:
      return "objective_step_time_s";
    case PlanObjective::tokens_per_s:
      return "objective_tokens_per_s_per_gpu";
    case PlanObjective::cost:
      return "objective_usd_per_million_tokens";
  }
  return "objective";
}

}  // namespace

namespace {

/// The plan table's columns, after `first` (a column naming the plan, or none).
std::vector<std::string> plan_header(PlanObjective objective, std::vector<std::string> first = {}) {
  for (const char* c : {"rank",
                        "layout",
                        "strategy",
                        "tp",
                        "sp_bool",
                        "dp",
                        "pp",
                        "vpp",
                        "schedule",
                        "cp",
                        "ep",
                        "offload",
                        "micro_batch_sequences",
                        "grad_accum_steps",
                        "recompute",
                        "step_time_s",
                        "lower_bound_s",
                        "tokens_per_s_per_gpu",
                        "mfu_fraction",
                        "memory_per_gpu_bytes",
                        "comm_exposed_s"})
    first.emplace_back(c);
  first.push_back(objective_column(objective));
  return first;
}

/// One line per ranked layout of `r`, each after the cells of `first`.
std::string plan_lines(const PlanResult& r, const std::vector<std::string>& first = {}) {
  std::string out;
  int rank = 0;
  for (const PlanRow& row : r.top) {
    const PlanPoint& pt = row.point;
    const ParallelLayout& l = pt.layout;
    const Prediction& p = row.prediction;
    std::vector<std::string> cells = first;
    for (std::string cell : {count(++rank),
                             pt.describe(),
                             std::string(name(l.dp_sharding)),
                             count(l.tp),
                             flag(l.sp),
                             count(l.dp),
                             count(l.pp),
                             count(l.vpp),
                             std::string(name(l.schedule)),
                             count(l.cp),
                             count(l.ep),
                             std::string(name(pt.offload)),
                             count(pt.micro_batch),
                             count(pt.grad_accum),
                             std::string(name(pt.recompute)),
                             number(p.step_time_s),
                             number(row.lower_bound_s),
                             number(p.tokens_per_s_per_gpu),
                             number(p.mfu),
                             number(p.memory.total_bytes),
                             number(p.comm_exposed_s),
                             number(row.objective)})
      cells.push_back(std::move(cell));
    out += line(cells);
  }
  return out;
}

}  // namespace

std::string plan_csv(const PlanResult& r) { return line(plan_header(r.objective)) + plan_lines(r); }

std::string plan_range_csv(const std::vector<PlanResult>& results) {
  std::string out = line(plan_header(results.empty() ? PlanObjective::time : results.front().objective, {"gpus"}));
  for (const PlanResult& r : results) out += plan_lines(r, {count(r.gpus)});
  return out;
}

std::string compare_csv(const std::vector<CompareRow>& rows) {
  std::string out = line({"scenario",
                          "file",
                          "model",
                          "hardware",
                          "gpu",
                          "gpus",
                          "step_time_s",
                          "time_per_epoch_s",
                          "tokens_per_s",
                          "tokens_per_step",
                          "cost_per_epoch_usd",
                          "usd_per_million_tokens",
                          "memory_per_gpu_bytes",
                          "memory_verdict",
                          "fits_bool",
                          "price_per_gpu_hour_usd",
                          "compute_busy_s",
                          "comm_exposed_s",
                          "speedup_x",
                          "break_even_price_per_gpu_hour_usd"});
  for (const CompareRow& r : rows)
    out += line({r.scenario,
                 r.file,
                 r.model,
                 r.hardware,
                 r.gpu,
                 count(r.gpus),
                 number(r.step_time_s),
                 number(r.time_per_epoch_s),
                 number(r.tokens_per_s),
                 number(r.tokens_per_step),
                 number(r.cost_per_epoch_usd),
                 number(r.usd_per_million_tokens),
                 number(r.memory_per_gpu_bytes),
                 std::string(name(r.verdict)),
                 flag(r.verdict != MemoryVerdict::oom),
                 number(r.price_per_gpu_hour_usd),
                 number(r.compute_busy_s),
                 number(r.comm_exposed_s),
                 number(r.speedup),
                 number(r.break_even_price_per_gpu_hour_usd)});
  return out;
}

std::string validate_csv(const std::vector<ValidationRow>& rows) {
  std::string out = line({"id", "metric", "measured_in_metric_unit", "predicted_in_metric_unit", "error_pct", "status",
                          "source", "trust", "strategy", "gpu"});
  for (const ValidationRow& r : rows)
    out += line({r.id, r.metric, number(r.measured), number(r.predicted), number(r.error_pct), r.status, r.source,
                 r.trust, r.strategy, r.gpu});
  return out;
}

}  // namespace stepcast::cli
