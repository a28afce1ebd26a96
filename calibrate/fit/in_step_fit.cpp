#include "calibrate/fit/in_step_fit.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <set>

namespace stepcast {

InStepCategoryFit fit_in_step_category(std::vector<InStepRatio> runs) {
  assert(!runs.empty());
  double weighted_log = 0, weight = 0;
  for (const InStepRatio& r : runs) {
    assert(r.isolated_s > 0 && r.measured_s > 0);
    weighted_log += r.measured_s * std::log(r.ratio());
    weight += r.measured_s;
  }
  InStepCategoryFit out;
  out.unclamped = std::exp(weighted_log / weight);
  out.fraction = std::min(1.0, out.unclamped);
  double sq = 0;
  for (const InStepRatio& r : runs) sq += std::pow(r.ratio() / out.unclamped - 1, 2);
  out.rms_rel_residual = std::sqrt(sq / static_cast<double>(runs.size()));
  out.runs = std::move(runs);
  return out;
}

namespace {

/// The ratio of one category of a record, if it has both times > 0.
std::optional<InStepRatio> ratio_of(const InStepObservation& o, const std::optional<double>& isolated_s,
                                    const std::optional<double>& measured_s) {
  if (!isolated_s || !measured_s || !(*isolated_s > 0) || !(*measured_s > 0)) return std::nullopt;
  return InStepRatio{o.run_id, *isolated_s, *measured_s};
}

}  // namespace

InStepFit fit_in_step(const std::vector<InStepObservation>& records) {
  InStepFit fit;
  std::vector<InStepRatio> gemm, attention;
  std::set<std::string> gpus;
  for (const InStepObservation& o : records) {
    if (!o.skip_reason.empty()) {
      fit.skipped.push_back(o.run_id + ": " + o.skip_reason);
      continue;
    }
    auto g = ratio_of(o, o.isolated_gemm_s, o.measured_gemm_s);
    auto a = ratio_of(o, o.isolated_attention_s, o.measured_attention_s);
    if (!g && !a) {
      fit.skipped.push_back(o.run_id + ": no GEMM or fused-attention time both measured and predicted (> 0)");
      continue;
    }
    if (g) gemm.push_back(*g);
    if (a) attention.push_back(*a);
    gpus.insert(o.gpu);
    const std::pair<std::string, std::string> source{o.repo, o.path};
    if (std::find(fit.sources.begin(), fit.sources.end(), source) == fit.sources.end()) fit.sources.push_back(source);
  }
  if (gpus.size() > 1) {
    std::string list;
    for (const std::string& g : gpus) list += (list.empty() ? "" : ", ") + g;
    throw InStepFitError("records of several GPUs (" + list +
                         "): the fractions are one machine's; fit each "
                         "machine's probe file on its own");
  }
  if (gemm.empty())
    throw InStepFitError(
        "no record has a GEMM time both measured (gemm_time_s > 0) and predicted; "
        "records of the training probe (calibrate/probe/train_probe.py) carry it");
  if (attention.empty())
    throw InStepFitError(
        "no record has a fused-attention time both measured (attention_time_s > 0) and "
        "predicted (a flash-class attention kernel); records of the training probe carry it");
  fit.gpu = *gpus.begin();
  fit.gemm = fit_in_step_category(std::move(gemm));
  fit.attention = fit_in_step_category(std::move(attention));
  return fit;
}

namespace {

std::string method_text(const InStepFit& fit) {
  auto part = [](const char* name, const char* category, const InStepCategoryFit& c) {
    std::string s = fmt::format(
        "{}: per probe record, stepcast's isolated {} time for that step (training.kernel_rates \"isolated\") "
        "over the probe's measured in-step {} kernel time per step; over the {} records the measured-time-weighted "
        "geometric mean, exp(sum m_i ln(p_i/m_i) / sum m_i) = {:.4f} (RMS relative residual {:.1f}%)",
        name, category, category, c.runs.size(), c.unclamped, 100 * c.rms_rel_residual);
    if (c.unclamped > 1) s += fmt::format(", clamped to 1 (a step cannot beat the isolated benchmark)");
    return s + ". ";
  };
  return part("gemm_fraction", "GEMM", fit.gemm) + part("attention_fraction", "attention", fit.attention) +
         "The probe measures each category's kernel time directly (torch.profiler, calibrate/probe/categories.py), "
         "so both fractions are direct per-category ratios; the whole-step fit the catalog's gemm_fraction needed "
         "(model/catalog/in_step.json) is not used. Fitted on one machine (" +
         fit.gpu + "): the fractions apply to the GPU they were measured on. Bounds: (0, 1].";
}

nlohmann::ordered_json runs_json(const InStepFit& fit) {
  nlohmann::ordered_json runs = nlohmann::ordered_json::array();
  auto add = [&](const char* category, const InStepCategoryFit& c) {
    for (const InStepRatio& r : c.runs)
      runs.push_back({{"id", r.run_id},
                      {"category", category},
                      {"isolated_s", r.isolated_s},
                      {"measured_s", r.measured_s},
                      {"ratio", r.ratio()}});
  };
  add("gemm", fit.gemm);
  add("attention", fit.attention);
  return runs;
}

}  // namespace

nlohmann::ordered_json in_step_json(const InStepFit& fit, const InStepProvenance& provenance) {
  nlohmann::ordered_json fitted_on = nlohmann::ordered_json::array();
  for (const auto& [repo, path] : fit.sources)
    fitted_on.push_back({{"repo", repo},
                         {"path", path},
                         {"commit", provenance.commit},
                         {"machine", provenance.machine},
                         {"probe_file", provenance.probe_file},
                         {"locator", fmt::format("{} GEMM and {} attention ratios of the training probe's records "
                                                 "(gemm_time_s, attention_time_s)",
                                                 fit.gemm.runs.size(), fit.attention.runs.size())}});
  nlohmann::ordered_json doc = nlohmann::ordered_json::object();
  doc["about"] =
      "What fraction of an isolated benchmark's rate a kernel keeps inside a training step on one machine, fitted "
      "by `stepcast fit in-step` from its training probe (the shape of model/catalog/in_step.json; use it with "
      "--in-step FILE). GEMMs against the best achievable matmul, attention against the attention kernel curves, "
      "both as the scenario's rates give them (the catalog's, or a calibration file's).";
  doc["gemm_fraction"] = fit.gemm.fraction;
  doc["attention_fraction"] = fit.attention.fraction;
  doc["fitted_on"] = std::move(fitted_on);
  doc["method"] = method_text(fit);
  doc["runs"] = runs_json(fit);
  return doc;
}

std::string in_step_report_text(const InStepFit& fit, const std::string& output_file) {
  std::string out =
      fmt::format("In-step fractions on {} (isolated predicted / measured kernel time per step)\n\n", fit.gpu);
  auto category = [&](const char* name, const InStepCategoryFit& c) {
    out +=
        fmt::format("{}: {:.6f} over {} records (RMS relative residual {:.1f}%){}\n", name, c.fraction, c.runs.size(),
                    100 * c.rms_rel_residual, c.unclamped > 1 ? fmt::format("; clamped from {:.6f}", c.unclamped) : "");
    for (const InStepRatio& r : c.runs)
      out += fmt::format("  {:<60} isolated {:9.3f} ms  measured {:9.3f} ms  ratio {:.4f}\n", r.run_id,
                         1e3 * r.isolated_s, 1e3 * r.measured_s, r.ratio());
  };
  category("gemm_fraction", fit.gemm);
  category("attention_fraction", fit.attention);
  if (!fit.skipped.empty()) {
    out += fmt::format("\nrecords left out: {}\n", fit.skipped.size());
    for (const std::string& s : fit.skipped) out += "  " + s + "\n";
  }
  out += "\nWrote " + output_file + "\n";
  return out;
}

}  // namespace stepcast
