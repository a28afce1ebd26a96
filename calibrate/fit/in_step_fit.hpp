/// \file
/// `stepcast fit in-step`: the in-step fractions of one machine (the shape of
/// model/catalog/in_step.json) from its training probe's per-category kernel times, by the
/// rule the catalog file states, with the probe measuring each category directly:
///
///   fraction_c = isolated_c / measured_c
///
/// per record, where measured_c is the probe's GPU kernel time of category c (GEMM or
/// attention) per step (calibrate/probe/categories.py) and isolated_c the time stepcast
/// predicts for the same step at the isolated benchmarks' rates (training.kernel_rates
/// "isolated"). Over several records the fraction is the f minimising
/// sum_i m_i ln²(f m_i / p_i) (weighted by measured time, as the kernel fit weights its GEMM
/// rows: the records that fill most of the GPU count most), in closed form
///
///   ln f = sum_i m_i ln(p_i / m_i) / sum_i m_i,
///
/// kept in the bounds (0, 1]: a fraction above 1 would claim a step beats the isolated
/// benchmark, so it is clamped to 1 and reported. Pure: the predictions come from the caller.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace stepcast {

/// One probe record: what it measured and what stepcast predicts at isolated rates, seconds
/// per step. A category without both (not recorded, measured 0, no fused attention kernel)
/// gives no ratio.
struct InStepObservation {
  std::string run_id;
  std::string repo, path;  ///< the record's source ("repo", "path"), for fitted_on
  std::string gpu;         ///< catalog GPU of the record
  std::optional<double> measured_gemm_s, isolated_gemm_s;
  std::optional<double> measured_attention_s, isolated_attention_s;
  std::string skip_reason;  ///< set: the record gives nothing (why)
};

/// One record's ratio isolated / measured for one category.
struct InStepRatio {
  std::string run_id;
  double isolated_s = 0, measured_s = 0;
  double ratio() const { return isolated_s / measured_s; }
};

/// The fit of one category.
struct InStepCategoryFit {
  double fraction = 1;          ///< in (0, 1]
  double unclamped = 1;         ///< before the bound; > 1 means clamped
  double rms_rel_residual = 0;  ///< sqrt(mean (ratio_i / unclamped - 1)²) over the records
  std::vector<InStepRatio> runs;
};

/// Where the fit came from, for `fitted_on`.
struct InStepProvenance {
  std::string probe_file;  ///< the probe's records as named on the command line
  std::string machine;     ///< one line describing the machine
  std::string commit;      ///< stepcast commit the probe ran at
};

struct InStepFit {
  InStepCategoryFit gemm, attention;
  std::vector<std::string> skipped;  ///< "run id: why"
  /// The records' distinct (repo, path) sources, in first-seen order.
  std::vector<std::pair<std::string, std::string>> sources;
  std::string gpu;
};

/// Input the fit cannot use (no record measured a category, records of several GPUs);
/// the command line reports it as bad input naming the file.
class InStepFitError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// The weighted fraction of one category (formula in the file comment). `runs` non-empty,
/// every ratio's times > 0.
InStepCategoryFit fit_in_step_category(std::vector<InStepRatio> runs);

/// Both fractions from the records. Throws InStepFitError when no record gives a GEMM or an
/// attention ratio, or when the records are of several GPUs (one machine per file).
InStepFit fit_in_step(const std::vector<InStepObservation>& records);

/// The in_step.json-shaped document: about, gemm_fraction, attention_fraction, fitted_on
/// (one entry per source: repo, path, commit, machine, probe_file, locator), method, runs
/// (each record's ratios, for the reader).
nlohmann::ordered_json in_step_json(const InStepFit& fit, const InStepProvenance& provenance);

/// The report `stepcast fit in-step` prints: each fraction with its records and residual,
/// clamps, skipped records.
std::string in_step_report_text(const InStepFit& fit, const std::string& output_file);

}  // namespace stepcast
