// `stepcast fit in-step` recovers known fractions: probe records whose measured GEMM and
// attention times are stepcast's own isolated predictions divided by 0.8 and 0.9 give back
// gemm_fraction 0.8 and attention_fraction 0.9, and the written file, used as the in-step
// fractions, predicts those measured times.
#include "calibrate/fit/in_step_fit.hpp"
#include "model/compute.hpp"
#include "predict/predict.hpp"
#include "validate/in_step_probe.hpp"
#include "validate/validation.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

using namespace stepcast;

namespace {

constexpr double kGemmFraction = 0.8, kAttentionFraction = 0.9;

/// A probe record (calibrate/probe/record.py's shape) of `model` on one H100, eager, with
/// the given GEMM and attention kernel time per step.
nlohmann::json probe_record(const std::string& id, const nlohmann::json& model, int micro_batch, double gemm_s,
                            double attention_s) {
  auto metric = [](const char* name, double v) {
    return nlohmann::json{{"metric", name}, {"value", v}, {"unit", "s"}};
  };
  return {
      {"id", id},
      {"source",
       {{"type", "repo"},
        {"repo", "stepcast"},
        {"path", "calibrate/data/synthetic/runs.jsonl"},
        {"locator", "synthetic"}}},
      {"trust", "high"},
      {"model", model},
      {"hardware",
       {{"gpu", "h100-sxm5-80gb"},
        {"gpus", 1},
        {"gpus_per_node", 1},
        {"nodes", 1},
        {"intra_node", nullptr},
        {"inter_node", nullptr}}},
      {"strategy",
       {{"data_parallel", "ddp"},
        {"tp", 1},
        {"pp", 1},
        {"sp", false},
        {"activation_checkpointing", "none"},
        {"precision", "bf16_mixed"},
        {"offload", "none"},
        {"framework", "pytorch-ddp"},
        {"extras", {"flash_attention"}}}},
      {"batch", {{"micro_batch", micro_batch}, {"grad_accum", 1}, {"global_batch", micro_batch}}},
      {"measured",
       {{"metric", "step_time_s"},
        {"value", 1.0},
        {"definition", "median step"},
        {"secondary",
         {metric("gemm_time_s", gemm_s), metric("attention_time_s", attention_s), metric("memory_bound_time_s", 0.01),
          metric("communication_time_s", 0.0), metric("idle_time_s", 0.001)}}}},
      {"notes", "synthetic"},
      {"raw", nullptr}};
}

// GPT-2 shapes with nanoGPT's padded vocabulary (50,304): every GEMM then scales with the
// fraction (an eager LM head over 50,257 runs at the misaligned rate, which no fraction scales).
const nlohmann::json kGpt2Xl = {{"name", "gpt2-xl"}, {"arch", "gpt2"}, {"params", 1557611200}, {"layers", 48},
                                {"hidden", 1600},    {"heads", 25},    {"kv_heads", 25},       {"ffn_hidden", 6400},
                                {"vocab", 50304},    {"seq_len", 1024}};
const nlohmann::json kGpt2M = {{"name", "gpt2-medium"}, {"arch", "gpt2"}, {"params", 354823168}, {"layers", 24},
                               {"hidden", 1024},        {"heads", 16},    {"kv_heads", 16},      {"ffn_hidden", 4096},
                               {"vocab", 50304},        {"seq_len", 1024}};

MeasuredRun parse(const nlohmann::json& r) { return parse_measured_run(r.dump(), "runs.jsonl", 1); }

/// Records measured at isolated / fraction: the isolated prediction of each first, then the
/// record again with those measured times.
std::vector<MeasuredRun> synthetic_probe() {
  std::vector<MeasuredRun> out;
  const std::vector<std::pair<nlohmann::json, int>> runs = {{kGpt2Xl, 4}, {kGpt2M, 8}};
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::string id = "synthetic-" + std::to_string(i);
    const ProbeKernelTimes t = probe_kernel_times(parse(probe_record(id, runs[i].first, runs[i].second, 1, 1)));
    REQUIRE(t.skip_reason.empty());
    REQUIRE(t.fused_attention);
    out.push_back(parse(probe_record(id, runs[i].first, runs[i].second, t.isolated_gemm_s / kGemmFraction,
                                     t.isolated_attention_s / kAttentionFraction)));
  }
  return out;
}

InStepFit fit(const std::vector<MeasuredRun>& runs) {
  std::vector<InStepObservation> obs;
  for (const MeasuredRun& run : runs) {
    const ProbeKernelTimes t = probe_kernel_times(run);
    InStepObservation o;
    o.run_id = run.id;
    o.repo = "stepcast";
    o.path = "calibrate/data/synthetic/runs.jsonl";
    o.gpu = run.gpu;
    o.measured_gemm_s = t.measured_gemm_s;
    o.isolated_gemm_s = t.isolated_gemm_s;
    o.measured_attention_s = t.measured_attention_s;
    o.isolated_attention_s = t.isolated_attention_s;
    obs.push_back(o);
  }
  return fit_in_step(obs);
}

}  // namespace

TEST_CASE("fit in-step: records measured at stepcast's isolated times / 0.8 and / 0.9 give back 0.8 and 0.9") {
  const InStepFit f = fit(synthetic_probe());
  CHECK(f.gemm.runs.size() == 2);
  CHECK(f.attention.runs.size() == 2);
  CHECK(std::abs(f.gemm.fraction - kGemmFraction) < 1e-6);
  CHECK(std::abs(f.attention.fraction - kAttentionFraction) < 1e-6);
}

TEST_CASE("fit in-step: the written file, read back as the in-step fractions, predicts the measured kernel times") {
  const std::vector<MeasuredRun> runs = synthetic_probe();
  const auto file = std::filesystem::temp_directory_path() / "stepcast_in_step_probe_fit_test.json";
  std::ofstream(file) << in_step_json(fit(runs), {"runs.jsonl", "synthetic", "test"}).dump(2);
  const auto fractions = std::make_shared<const InStepFractions>(load_in_step_fractions(file, "in_step test"));
  std::filesystem::remove(file);
  CHECK(fractions->gemm == doctest::Approx(kGemmFraction).epsilon(1e-9));
  REQUIRE(fractions->fitted_on.size() == 1);
  CHECK(fractions->fitted_on[0] == runs[0].source);  // validate's leave-one-source-out sees it
  for (const MeasuredRun& run : runs) {
    Scenario s = *scenario_for(run).scenario;
    s.training.in_step = fractions;
    const Prediction p = predict(s);
    // The fraction scales the GEMM ceiling, not the time: a GEMM the model finds bound by
    // memory bandwidth keeps its time, so the step's GEMM time comes back within 0.1%.
    CHECK(p.compute_by_kernel.gemm_s == doctest::Approx(*run.categories->gemm_s).epsilon(1e-3));
    CHECK(p.compute_by_kernel.attention_s == doctest::Approx(*run.categories->attention_s).epsilon(1e-6));
  }
}
