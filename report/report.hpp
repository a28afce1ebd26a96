/// \file
/// Reports of the `stepcast` command: pure functions from the library's results (a
/// Prediction with its Scenario, the rows of a scaling sweep, the catalogs) to text. The
/// library never prints; main.cpp writes what these functions return. Text reports are in
/// report_text.cpp, JSON reports in report_json.cpp (the only translation unit of the
/// command that includes nlohmann/json).
#pragma once

#include "model/memory.hpp"
#include "planner/plan.hpp"
#include "predict/predict.hpp"
#include "scenario/scenario.hpp"
#include "validate/validation.hpp"

#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stepcast::cli {

/// One row of `stepcast scale`: the scenario predicted on one GPU count.
struct ScaleRow {
  int gpus = 1;
  int nodes = 1;
  double step_time_s = 0;     ///< simulated
  double comm_exposed_s = 0;  ///< simulated communication not hidden behind compute
  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;                                ///< model FLOPs / (step time x GPUs x dense peak), a fraction
  double time_per_epoch_s = 0;                   ///< NaN when the scenario has no dataset
  std::optional<double> cost_per_epoch_usd;      ///< needs a dataset and a price
  std::optional<double> usd_per_million_tokens;  ///< needs a price
  /// tokens/s relative to the baseline row (x); NaN for a row that does not fit or when no
  /// row fits
  double speedup = 1;
  double scaling_efficiency = 1;  ///< speedup / (gpus / baseline's gpus), a fraction; NaN as speedup
  bool baseline = false;          ///< the row the speedups are relative to
  double memory_per_gpu_bytes = 0;
  MemoryVerdict verdict = MemoryVerdict::fits;
  std::int64_t micro_batch = 0;   ///< sequences per GPU per micro-step
  std::int64_t grad_accum = 0;    ///< micro-steps per optimizer step
  std::int64_t global_batch = 0;  ///< sequences per optimizer step
  bool fits() const { return verdict != MemoryVerdict::oom; }
};

/// The baseline of a scaling sweep: the index of the row with the fewest GPUs among those
/// that fit in memory (the first such row on a tie); nullopt when none fits. A count that
/// does not fit cannot run, so no speedup is measured against it.
inline std::optional<std::size_t> scale_baseline(const std::vector<ScaleRow>& rows) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].fits() && (!best || rows[i].gpus < rows[*best].gpus)) best = i;
  return best;
}

/// Rows for predictions made on several GPU counts of one scenario. Speedup and scaling
/// efficiency are relative to the baseline (scale_baseline: the fewest GPUs that fit),
/// throughput ratio, so they hold for a fixed per-GPU batch, i.e. weak scaling of the global
/// batch, as stepcast::with_gpus does; rows that do not fit get NaN. Costs need
/// `price_per_gpu_hour_usd` (and a dataset for the cost per epoch).
inline std::vector<ScaleRow> scale_rows(const std::vector<Prediction>& predictions,
                                        std::optional<double> price_per_gpu_hour_usd = std::nullopt) {
  std::vector<ScaleRow> rows;
  rows.reserve(predictions.size());
  for (const Prediction& p : predictions) {
    ScaleRow r;
    r.gpus = p.gpus;
    r.nodes = p.nodes;
    r.step_time_s = p.step_time_s;
    r.comm_exposed_s = p.comm_exposed_s;
    r.tokens_per_s = p.tokens_per_s;
    r.tokens_per_s_per_gpu = p.tokens_per_s_per_gpu;
    r.mfu = p.mfu;
    r.time_per_epoch_s = p.time_per_epoch_s;
    r.cost_per_epoch_usd = p.cost_per_epoch_usd;
    if (price_per_gpu_hour_usd && p.tokens_per_step > 0)
      r.usd_per_million_tokens = usd_per_million_tokens(*price_per_gpu_hour_usd, p);
    r.memory_per_gpu_bytes = p.memory.total_bytes;
    r.verdict = overall_verdict(p.memory);
    rows.push_back(r);
  }
  const auto base = scale_baseline(rows);
  for (ScaleRow& r : rows) {
    r.speedup = r.scaling_efficiency = std::nan("");
    if (!base || !r.fits() || rows[*base].tokens_per_s <= 0) continue;
    r.speedup = r.tokens_per_s / rows[*base].tokens_per_s;
    r.scaling_efficiency = r.speedup / (static_cast<double>(r.gpus) / rows[*base].gpus);
  }
  if (base) rows[*base].baseline = true;
  return rows;
}

/// scale_rows with each row's batch (micro-batch, accumulation, global batch) from the scenario
/// it predicts, scenarios[i] for predictions[i].
inline std::vector<ScaleRow> scale_rows(const std::vector<Scenario>& scenarios,
                                        const std::vector<Prediction>& predictions,
                                        std::optional<double> price_per_gpu_hour_usd = std::nullopt) {
  std::vector<ScaleRow> rows = scale_rows(predictions, price_per_gpu_hour_usd);
  for (std::size_t i = 0; i < rows.size() && i < scenarios.size(); ++i) {
    rows[i].micro_batch = scenarios[i].training.micro_batch;
    rows[i].grad_accum = scenarios[i].training.grad_accum;
    rows[i].global_batch = global_batch_sequences(scenarios[i]);
  }
  return rows;
}

/// One column of `stepcast compare`: one scenario file's prediction as written.
struct CompareRow {
  std::string scenario;  ///< name
  std::string file;
  std::string model;
  std::string hardware;  ///< "2 x dgx-a100 (...)"
  std::string gpu;       ///< catalog GPU
  int gpus = 1;
  double step_time_s = 0;
  double time_per_epoch_s = 0;  ///< NaN without a dataset
  double tokens_per_s = 0;
  double tokens_per_step = 0;
  std::optional<double> cost_per_epoch_usd;  ///< needs a dataset and a price
  /// price x GPUs x step / 3600 / (tokens per step / 1e6); needs a price
  std::optional<double> usd_per_million_tokens;
  double memory_per_gpu_bytes = 0;
  MemoryVerdict verdict = MemoryVerdict::fits;
  std::optional<double> price_per_gpu_hour_usd;  ///< the scenario's
  double compute_busy_s = 0;                     ///< simulated compute per step
  double comm_exposed_s = 0;                     ///< simulated communication not hidden per step
  /// Against the first row (compare_against_first): tokens/s over the first's, x.
  double speedup = 1;
  /// The price per GPU-hour at which this row's cost per token equals the first's:
  /// first's USD per Mtok x tokens/s / 1e6 x 3600 / GPUs; needs the first's price.
  std::optional<double> break_even_price_per_gpu_hour_usd;
  /// One line on what makes the difference to the first row (empty on the first).
  std::string why;
};

inline CompareRow compare_row(const Scenario& s, const Prediction& p) {
  CompareRow r;
  r.scenario = s.name;
  r.file = s.file;
  r.model = s.model.name;
  r.hardware = p.hardware;
  r.gpu = p.gpu;
  r.gpus = p.gpus;
  r.step_time_s = p.step_time_s;
  r.time_per_epoch_s = p.time_per_epoch_s;
  r.tokens_per_s = p.tokens_per_s;
  r.tokens_per_step = p.tokens_per_step;
  r.cost_per_epoch_usd = p.cost_per_epoch_usd;
  if (s.price_per_gpu_hour_usd) r.usd_per_million_tokens = usd_per_million_tokens(*s.price_per_gpu_hour_usd, p);
  r.memory_per_gpu_bytes = p.memory.total_bytes;
  r.verdict = overall_verdict(p.memory);
  r.price_per_gpu_hour_usd = s.price_per_gpu_hour_usd;
  r.compute_busy_s = p.compute_busy_s;
  r.comm_exposed_s = p.comm_exposed_s;
  return r;
}

/// Each row against the first: speedup, break-even price and the line saying why
/// (report_text.cpp compare_why).
void compare_against_first(std::vector<CompareRow>& rows);

/// Sections of `stepcast catalog`, in the order they are listed.
enum class CatalogSection { models, gpus, boxes, clusters, links, algorithms };
std::string_view name(CatalogSection);
/// Every section name, in order (for the command line's choices).
std::vector<std::string> catalog_section_names();
/// Throws std::invalid_argument naming the valid sections.
CatalogSection parse_catalog_section(std::string_view);

// ---- text (report_text.cpp) ----

/// The human-readable report of one prediction: header, simulated step-time table and the
/// closed-form bounds, the simulation (busy times, overlap, streams, links, critical path,
/// peak memory), throughput, epoch, memory per GPU with the verdict, collectives, fabric,
/// assumptions and, when the scenario carries measured figures, measured vs predicted.
/// `trace_file`: where the step's trace was written, named in the report ("" for none).
std::string predict_text(const Scenario& scenario, const Prediction& prediction, const std::string& trace_file = "");

/// The line a view leads with when the step does not fit (model/memory.hpp fits and its
/// verdict): "OUT OF MEMORY: 183.7 GiB per GPU of 80.0 GiB (largest: weights 38.5 GiB,
/// gradients 38.5 GiB); ..." or "TIGHT: ...", the host's under CPU offload; "" when it fits.
std::string memory_warning(const MemoryBreakdown& memory);

/// The table of a scaling sweep; `fixed_batch`: the global batch was held (strong scaling;
/// each row's micro-batch x accumulation shown), else the micro-batch per GPU (weak scaling).
std::string scale_text(const Scenario& scenario, const std::vector<ScaleRow>& rows, bool fixed_batch = false);

/// `stepcast plan`: the ranked table (layout, step time, tokens/s/GPU, MFU, memory/GPU,
/// exposed communication, the objective), the rejections per reason, the search's counts and
/// why the winner wins.
std::string plan_text(const Scenario& scenario, const PlanResult& result);

/// `stepcast plan --gpus-range`: each count's plan_text, then the winners side by side (GPUs,
/// layout, step time, tokens/s/GPU, MFU, memory/GPU, exposed comm, bubble).
std::string plan_range_text(const Scenario& scenario, const std::vector<PlanResult>& results);

/// `stepcast compare`: one row per scenario (step time, time per epoch, tokens/s, cost per
/// epoch and per million tokens, memory per GPU and verdict), and a note where the rows are
/// not the same model or tokens per step.
std::string compare_text(const std::vector<CompareRow>& rows);

/// The catalog sections listed with their key figures and sources.
std::string catalog_text(const std::vector<CatalogSection>& sections);

// ---- JSON (report_json.cpp) ----

/// One JSON object with every field of the prediction (and the scenario's measured
/// figures compared with it); top-level keys include gpus, nodes, strategy, step_time_s,
/// time_per_epoch_s, tokens_per_s_per_gpu, mfu, memory_per_gpu_bytes, fits, simulation
/// (busy times, overlap, streams, links, critical path, peak memory), collectives (each
/// with its cost per call and the phases the simulation played: op, level, bytes,
/// algorithm, protocol, latency_s, algbw_GBps, time_s) and trace_file (the trace written,
/// or null). Reads the Prediction only: nothing is re-costed.
std::string predict_json(const Scenario& scenario, const Prediction& prediction, const std::string& trace_file = "");

/// {"scenario": name, "baseline_gpus": the baseline's GPUs (null when no count fits),
/// "price_per_gpu_hour_usd", "rows": [{gpus, nodes, step_time_s, comm_exposed_s,
/// tokens_per_s, tokens_per_s_per_gpu, mfu, time_per_epoch_s, cost_per_epoch_usd,
/// usd_per_million_tokens, baseline, speedup, scaling_efficiency, memory_per_gpu_bytes,
/// verdict, fits, micro_batch, grad_accum, global_batch}, ...], "global_batch_fixed"} (absent
/// figures are null; the batch fields 0 where rows were made without their scenarios).
std::string scale_json(const Scenario& scenario, const std::vector<ScaleRow>& rows, bool fixed_batch = false);

/// {"scenario", "gpus", "global_batch", "objective", "max_memory_fraction", "enumerated",
///  "screened", "bounded", "simulated", "exact", "rejected": [{reason, description, count}],
///  "invalid_example", "rows": [{rank, layout: {strategy, tp, sp, micro_batch, grad_accum,
///  recompute, dp}, step_time_s, lower_bound_s, tokens_per_s_per_gpu, mfu,
///  memory_per_gpu_bytes, comm_exposed_s, objective}], "why"}
std::string plan_json(const Scenario& scenario, const PlanResult& result);

/// `stepcast plan --gpus-range`: {"scenario", "global_batch", "plans": [plan_json's object
/// per count], "summary": [{gpus, layout, step_time_s, tokens_per_s_per_gpu, mfu,
/// memory_per_gpu_bytes, comm_exposed_s, bubble_s}] (null figures where nothing fits)}.
std::string plan_range_json(const Scenario& scenario, const std::vector<PlanResult>& results);

/// {"rows": [{scenario, file, model, hardware, gpu, gpus, step_time_s, time_per_epoch_s,
///  tokens_per_s, tokens_per_step, cost_per_epoch_usd, usd_per_million_tokens,
///  memory_per_gpu_bytes, verdict, fits}]} (absent figures are null).
std::string compare_json(const std::vector<CompareRow>& rows);

/// {"<section>": [entries...], ...} for the requested sections.
std::string catalog_json(const std::vector<CatalogSection>& sections);

/// The items separated by `sep` ("a, b, c").
std::string join(const std::vector<std::string>& items, std::string_view sep);

/// `stepcast validate`: every record with its status, then the leave-one-source-out and
/// fit-free summaries (low-trust records shown, not summarised), and with `pairs` every
/// ordering pair, the wrong ones first (ordering_pair_list).
/// `in_step_file`: the in-step fractions used (`--in-step`); empty: model/catalog/in_step.json.
std::string validate_text(const std::vector<ValidationRow>& rows, const std::string& in_step_file = "",
                          bool pairs = false);
/// {"runs": [{id, metric, measured, predicted, error_pct, predicted_fit_free, ..., status,
///  source, trust, strategy, gpu, assumptions, predicted_breakdown_s, memory_verdict and,
///  where the record reports its peak, memory_measured_gib, memory_predicted_gib,
///  memory_error_pct}], "summary" and "summary_loso": {count, skipped, median_abs_error_pct,
///  p90_abs_error_pct, max_abs_error_pct, ordering_accuracy, ordering_pairs},
///  "summary_fit_free": {...}, "sources": [{source, ...}], "groups": [{group, ...}],
///  "summary_memory": {count, median_abs_error_pct, p90_abs_error_pct, max_abs_error_pct,
///  predicted, false_oom, false_oom_ids, sources: [{source, ...}]}; with `pairs` also "pairs":
///  [{knob, low_id, high_id, measured_low, measured_high, predicted_low, predicted_high, right}].
std::string validate_json(const std::vector<ValidationRow>& rows, bool pairs = false);

// ---- CSV (report_csv.cpp) ----
// One header row, every column name with its unit (_s, _bytes, _usd, _fraction, _x, _pct,
// _bool; counts named for what they count), then one row per row of the table; absent
// figures are empty fields.

/// gpus, nodes, step_time_s, comm_exposed_s, tokens_per_s, tokens_per_s_per_gpu,
/// mfu_fraction, time_per_epoch_s, cost_per_epoch_usd, usd_per_million_tokens,
/// baseline_bool, speedup_x, scaling_efficiency_fraction, memory_per_gpu_bytes,
/// memory_verdict, fits_bool, micro_batch_sequences, grad_accum_steps, global_batch_sequences.
std::string scale_csv(const std::vector<ScaleRow>& rows);
/// rank, layout, strategy, tp, sp_bool, dp, pp, vpp, schedule, micro_batch_sequences, grad_accum_steps,
/// recompute, step_time_s, lower_bound_s, tokens_per_s_per_gpu, mfu_fraction,
/// memory_per_gpu_bytes, comm_exposed_s, objective_<figure and unit>.
std::string plan_csv(const PlanResult& result);
/// `plan --gpus-range`: the columns of plan_csv after a first one, gpus; the ranked rows of
/// each count in turn.
std::string plan_range_csv(const std::vector<PlanResult>& results);
/// scenario, file, model, hardware, gpu, gpus, step_time_s, time_per_epoch_s, tokens_per_s,
/// tokens_per_step, cost_per_epoch_usd, usd_per_million_tokens, memory_per_gpu_bytes,
/// memory_verdict, fits_bool.
std::string compare_csv(const std::vector<CompareRow>& rows);
/// id, metric, measured_in_metric_unit, predicted_in_metric_unit, error_pct, status, source,
/// trust, strategy, gpu (one row per record, skipped ones included).
std::string validate_csv(const std::vector<ValidationRow>& rows);

}  // namespace stepcast::cli
