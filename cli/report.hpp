/// \file
/// Reports of the `stepcast` command: pure functions from the library's results (a
/// Prediction with its Scenario, the rows of a scaling sweep, the catalogs) to text. The
/// library never prints; main.cpp writes what these functions return. Text reports are in
/// report_text.cpp, JSON reports in report_json.cpp (the only translation unit of the
/// command that includes nlohmann/json).
#pragma once

#include "model/memory.hpp"
#include "simulator/plan.hpp"
#include "simulator/predict.hpp"
#include "simulator/scenario.hpp"
#include "validate/validation.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stepcast::cli {

/// One row of `stepcast scale`: the scenario predicted on one GPU count.
struct ScaleRow {
  int gpus = 1;
  int nodes = 1;
  double step_time_s = 0;           ///< simulated
  double comm_exposed_s = 0;        ///< simulated communication not hidden behind compute
  double tokens_per_s = 0;
  double time_per_epoch_s = 0;      ///< NaN when the scenario has no dataset
  double speedup = 1;               ///< tokens/s relative to the first row (x)
  double scaling_efficiency = 1;    ///< speedup / (gpus / first row's gpus), as a fraction
  double memory_per_gpu_bytes = 0;
  MemoryVerdict verdict = MemoryVerdict::fits;
  bool fits() const { return verdict != MemoryVerdict::oom; }
};

/// Rows for predictions made on increasing GPU counts of one scenario; speedup and scaling
/// efficiency are relative to the first prediction (throughput ratio, so they hold for a
/// fixed per-GPU batch, i.e. weak scaling of the global batch, as stepcast::with_gpus does).
inline std::vector<ScaleRow> scale_rows(const std::vector<Prediction>& predictions) {
  std::vector<ScaleRow> rows;
  rows.reserve(predictions.size());
  for (const Prediction& p : predictions) {
    ScaleRow r;
    r.gpus = p.gpus;
    r.nodes = p.nodes;
    r.step_time_s = p.step_time_s;
    r.comm_exposed_s = p.comm_exposed_s;
    r.tokens_per_s = p.tokens_per_s;
    r.time_per_epoch_s = p.time_per_epoch_s;
    r.memory_per_gpu_bytes = p.memory.total_bytes;
    r.verdict = p.memory.verdict;
    if (!rows.empty() && rows.front().tokens_per_s > 0 && rows.front().gpus > 0) {
      r.speedup = r.tokens_per_s / rows.front().tokens_per_s;
      const double ideal = static_cast<double>(r.gpus) / rows.front().gpus;
      r.scaling_efficiency = ideal > 0 ? r.speedup / ideal : 0;
    }
    rows.push_back(r);
  }
  return rows;
}

/// One column of `stepcast compare`: one scenario file's prediction as written.
struct CompareRow {
  std::string scenario;             ///< name
  std::string file;
  std::string model;
  std::string hardware;             ///< "2 x dgx-a100 (...)"
  std::string gpu;                  ///< catalog GPU
  int gpus = 1;
  double step_time_s = 0;
  double time_per_epoch_s = 0;      ///< NaN without a dataset
  double tokens_per_s = 0;
  double tokens_per_step = 0;
  std::optional<double> cost_per_epoch_usd;          ///< needs a dataset and a price
  /// price x GPUs x step / 3600 / (tokens per step / 1e6); needs a price
  std::optional<double> usd_per_million_tokens;
  double memory_per_gpu_bytes = 0;
  MemoryVerdict verdict = MemoryVerdict::fits;
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
  if (s.price_per_gpu_hour_usd)
    r.usd_per_million_tokens = *s.price_per_gpu_hour_usd * p.gpus * p.step_time_s / 3600.0 / (p.tokens_per_step / 1e6);
  r.memory_per_gpu_bytes = p.memory.total_bytes;
  r.verdict = p.memory.verdict;
  return r;
}

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
std::string predict_text(const Scenario& scenario, const Prediction& prediction,
                         const std::string& trace_file = "");

/// The table of a scaling sweep.
std::string scale_text(const Scenario& scenario, const std::vector<ScaleRow>& rows);

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
std::string predict_json(const Scenario& scenario, const Prediction& prediction,
                         const std::string& trace_file = "");

/// {"scenario": name, "rows": [{gpus, nodes, step_time_s, comm_exposed_s, tokens_per_s,
/// time_per_epoch_s, speedup, scaling_efficiency, memory_per_gpu_bytes, fits}, ...]}.
std::string scale_json(const Scenario& scenario, const std::vector<ScaleRow>& rows);

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

/// `stepcast validate`: every record with its status, then the error summaries of the
/// checking part, the fitting part and all records (low-trust records shown, not summarised).
std::string validate_text(const std::vector<ValidationRow>& rows);
/// {"runs": [{id, metric, measured, predicted, error_pct, status, split, source, trust,
///  strategy, gpu, assumptions}], "summary": {count, skipped, median_abs_error_pct,
///  p90_abs_error_pct, max_abs_error_pct, ordering_accuracy, ordering_pairs} (checking part),
///  "summary_fit": {...}, "summary_all": {...}, "groups": [{group, ...}] (checking part)}
std::string validate_json(const std::vector<ValidationRow>& rows);

}  // namespace stepcast::cli
