/// \file
/// Validation against measured runs: reads measured-run records (the format of
/// data/validation/runs.jsonl, "measured-run record v1", documented in data/validation/SCHEMA.md), turns
/// each into a scenario where stepcast can represent it, predicts the record's metric with
/// the same definition, and summarises the errors. Anything stepcast cannot represent is
/// skipped with its reason, never dropped.
#pragma once

#include "predict/predict.hpp"
#include "scenario/scenario.hpp"
#include "validate/categories.hpp"
#include "validate/collectives.hpp"

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace stepcast {

/// One measured-run record, the fields stepcast reads (nullable ones as optional).
struct MeasuredRun {
  std::string id;
  std::string source;   ///< "repo · path", or the URL: groups records for ordering
  std::string locator;  ///< where in the source (a table and row), if stated
  std::string trust;    ///< "high", "medium", "low"
  // model
  std::string model_name;
  std::string arch;
  std::optional<std::int64_t> params, layers, hidden, heads, kv_heads, ffn_hidden, vocab, seq_len;
  // hardware
  std::string gpu;
  std::optional<std::int64_t> gpus, gpus_per_node, nodes;
  std::optional<std::string> intra_node;
  bool multi_node_fabric_given = false;  ///< inter_node object present
  std::optional<std::string> inter_fabric;
  std::optional<double> inter_gbps_per_node;
  // strategy
  std::string data_parallel;
  std::optional<std::int64_t> tp, pp;
  std::optional<bool> sp;
  std::optional<std::string> checkpointing, precision, offload, framework;
  /// Under selective checkpointing, the modules recomputed, where a framework default names
  /// them (validate/record_defaults.hpp); not a record field.
  std::optional<RecomputeModules> recompute_modules;
  std::vector<std::string> extras;
  std::string notes;  ///< the record's free-text notes (kernels a source names)
  // batch
  std::optional<std::int64_t> micro_batch, grad_accum, global_batch;
  // measured
  std::string metric;
  double value = 0;
  std::string definition;
  std::optional<KernelCategories> categories;  ///< per-step kernel time by category (probe records)
  /// Peak memory per GPU the run reported (`measured.secondary` metric "gpu_memory", unit
  /// "GB" = 1e9 bytes or "GiB"), bytes; null when the record gives none.
  std::optional<double> memory_measured_bytes;
  /// A collective measurement record (validate/collectives.hpp) instead of a training run:
  /// the model, strategy and batch fields are then unset.
  std::optional<CollectiveBenchmark> collective;
  std::string file;  ///< where it was read from
  int line = 0;
};

/// Reads every record of a .jsonl file, or of every .jsonl file in a folder (regular files
/// of bounded size only). Throws InputError (file, line and JSON path) on malformed records,
/// unknown keys, duplicate keys, names outside the format's vocabulary, counts outside the
/// bounds a scenario's counts have (base/limits.hpp) and a measured value that is not > 0.
std::vector<MeasuredRun> load_measured_runs(const std::filesystem::path& path);
MeasuredRun parse_measured_run(const std::string& json_line, const std::string& file, int line);

/// A record as a scenario, or why it cannot be one. The scenario goes through
/// check_scenario, the checks every scenario file goes through, with the record's file,
/// line and JSON paths: a record that fails them is an InputError, never a skip.
struct RunScenario {
  std::optional<Scenario> scenario;
  std::string skip_reason;               ///< set when scenario is empty
  std::vector<std::string> assumptions;  ///< what was inferred to build it
};
/// `calibration` (optional): a `stepcast fit` hardware file, used for records on its GPU.
/// `assume_host`: a record with CPU offload, which states no host (its CPUs and memory
/// bandwidth set the offload's cost), is predicted on the host of the catalog box of its GPU
/// (the default, printed as an assumption); false: skipped with that reason.
RunScenario scenario_for(const MeasuredRun& run, const std::shared_ptr<const HardwareFile>& calibration = nullptr,
                         const std::string& calibration_file = "", bool assume_host = true);

/// What a collective measurement's row (validate/collectives.hpp) has beyond the rest.
struct CollectiveFields {
  std::int64_t nodes = 0;
  double bytes = 0;                         ///< nccl-tests' size S
  std::string network;                      ///< the NICs' link kind; "nvlink" inside one node
  std::string chosen;                       ///< the algorithm/protocol the model ran ("ring/Simple"); "" if skipped
  std::optional<std::string> fed_constant;  ///< the constant set from this record, if any
};

/// The prediction of a record's metric, with the record's definition.
struct ValidationRow {
  std::vector<CategoryComparison> categories;  ///< the record's measured categories vs predicted
  std::string id;
  std::string source;
  std::string trust;
  std::string strategy;
  std::string gpu;
  std::string metric;
  double measured = 0;
  std::optional<double> predicted;
  std::optional<double> error_pct;  ///< 100 (predicted - measured) / measured
  /// The same with the isolated benchmarks' kernel rates (nothing fitted to any run).
  std::optional<double> predicted_fit_free;
  std::optional<double> error_pct_fit_free;
  std::string status;  ///< "ok" or "skipped: <reason>"
  std::vector<std::string> assumptions;
  // Knobs for ordering pairs.
  std::int64_t gpus = 0;
  double link_gbps = 0;
  std::int64_t micro_batch = 0;
  std::int64_t tp = 0, pp = 0;   ///< parallel layout as stated (0: not stated)
  std::int64_t cp = 1, vpp = 1;  ///< context parallelism and model chunks per stage
  std::string attention;         ///< the attention kernel the record's scenario runs
  std::int64_t global_batch = 0;
  std::string model;
  std::int64_t seq_len = 0;
  std::string precision;
  /// Where the predicted step goes (seconds per step, one GPU), for "ok" rows: the
  /// simulated step, its compute and collectives, and compute split by kernel.
  struct Breakdown {
    double step_s = 0, compute_busy_s = 0, comm_busy_s = 0, comm_exposed_s = 0;
    double gemm_s = 0, attention_s = 0, memory_s = 0, launch_s = 0, optimizer_s = 0;
  };
  std::optional<Breakdown> breakdown;
  /// Memory per GPU, for "ok" rows: the predicted verdict (fits, tight, oom: every measured
  /// run ran, so oom is a false out-of-memory verdict) and, where the record reports its peak,
  /// the peak as the caching allocator sees it (memory_allocator_bytes) beside the measured one.
  std::optional<MemoryVerdict> memory_verdict;
  std::optional<double> memory_measured_bytes;
  std::optional<double> memory_predicted_bytes;
  std::optional<double> memory_error_pct;  ///< 100 (predicted - measured) / measured
  /// What a collective measurement's row has beyond the rest (validate/collectives.hpp).
  std::optional<CollectiveFields> collective;
};

/// Marks `row` "ok" with `predicted` and its error against the record's measured value.
/// Throws std::logic_error (an internal error, exit 1) when either is not finite: a record
/// is never "ok" with a NaN or infinite error.
void set_prediction(ValidationRow& row, const MeasuredRun& run, double predicted);

/// The record's row: "ok" with a finite prediction, or "skipped: <reason>" where stepcast
/// cannot represent the record. Throws InputError for a bad record, std::logic_error for a
/// prediction that is not finite (a bug), and lets any other exception of the prediction
/// through: only an explicit reason skips a record.
/// `in_step` (optional): in-step fractions from a file (`--in-step`) instead of the catalog's;
/// records of the sources it was fitted on are then the ones predicted with isolated rates.
ValidationRow validate_run(const MeasuredRun& run, const std::shared_ptr<const HardwareFile>& calibration = nullptr,
                           const std::string& calibration_file = "", bool assume_host = true,
                           const std::shared_ptr<const InStepFractions>& in_step = nullptr);

/// validate_run over every record, on `threads` threads (0: one per hardware thread), rows in
/// record order. Records are independent, so this is linear in their number. When records
/// throw, the exception of the first such record (in record order) is rethrown, as a
/// sequential loop would. `progress(done, total)` (optional) is called under a lock.
std::vector<ValidationRow> validate_runs(const std::vector<MeasuredRun>& runs,
                                         const std::shared_ptr<const HardwareFile>& calibration = nullptr,
                                         const std::string& calibration_file = "", unsigned threads = 0,
                                         const std::function<void(std::size_t, std::size_t)>& progress = {},
                                         bool assume_host = true,
                                         const std::shared_ptr<const InStepFractions>& in_step = nullptr);

/// The q-quantile (q in [0, 1]) of `v`, linear between the two nearest ranks; 0 for none.
double percentile(std::vector<double> v, double q);

struct ErrorSummary {
  std::string group;  ///< "all", "source: ...", "strategy: ...", "gpu: ..."
  int count = 0;      ///< rows compared (ok, trusted)
  int skipped = 0;
  double median_abs_error_pct = 0;
  double p90_abs_error_pct = 0;
  double max_abs_error_pct = 0;
  /// Pairs one knob apart (GPUs, strategy, link, micro-batch or TP/PP/CP/chunks layout) with different
  /// measured values.
  std::int64_t ordering_pairs = 0;
  double ordering_accuracy = 0;  ///< fraction of them predicted in the same strict order (1 if none)
};

/// Summary of the training rows of `rows` (low-trust rows shown but kept out; collective
/// rows have summarize_collectives): overall, then per source, per strategy and per GPU. Nothing in the model is fitted
/// to measured runs (device rates come from kernel tables and datasheets), so every record is predicted without its own
/// source: the overall figure is the leave-one-source-out figure and the fit-free one at once. Ordering pairs are rows
/// one knob apart (GPU count, strategy, link speed, micro-batch or TP/PP layout; source, metric, model, sequence,
/// precision, GPU and attention kernel equal) whose measured values differ; a pair is right when the prediction orders
/// it strictly the same way. O(n log n) in the rows.
std::vector<ErrorSummary> summarize(const std::vector<ValidationRow>& rows);

/// Predicted against measured peak memory per GPU, and the false out-of-memory verdicts.
struct MemorySummary {
  std::string group;  ///< "all" or "source: ..."
  int count = 0;      ///< rows with a measured peak and a prediction
  double median_abs_error_pct = 0;
  double p90_abs_error_pct = 0;
  double max_abs_error_pct = 0;
  int predicted = 0;                   ///< rows predicted ("ok"), measured peak or not
  std::vector<std::string> false_oom;  ///< ids of the predicted rows whose verdict is oom
};

/// Memory summary of `rows`: overall, then per source (every row, low trust included: a
/// run that ran is evidence that it fit). Nothing in the memory model is fitted to measured
/// runs, so the figure is already leave one source out.
std::vector<MemorySummary> summarize_memory(const std::vector<ValidationRow>& rows);

/// One ordering pair of summarize's overall figure: `low` measured below `high`.
struct OrderingPair {
  std::string knob;  ///< the one that differs: "gpus", "strategy", "link", "micro_batch", "layout"
  const ValidationRow* low = nullptr;
  const ValidationRow* high = nullptr;
  bool right = false;  ///< low predicted strictly below high
};

/// Every ordering pair counted in summarize(rows)[0] (ok rows, low-trust ones left out), the
/// wrong ones first, then by the records' order. O(n log n + pairs): a listing, not a
/// summary (the Ultra-Scale Playbook file has 6,871 pairs). The pointers point into
/// `rows`.
std::vector<OrderingPair> ordering_pair_list(const std::vector<ValidationRow>& rows);

/// `rows` with each prediction replaced by its fit-free one (isolated kernel rates).
std::vector<ValidationRow> fit_free_rows(std::vector<ValidationRow> rows);

}  // namespace stepcast
