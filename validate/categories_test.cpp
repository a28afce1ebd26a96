// A probe record's kernel categories are read from its secondary metrics, compared with the
// prediction's split (each category, not only the total), and LoRA runs are named by extras.
#include "validate/categories.hpp"

#include "base/json_input.hpp"
#include "validate/validation.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

using namespace stepcast;

namespace {

/// A synthetic probe record (calibrate/probe/record.py's shape): GPT-2 XL on one H100,
/// eager, micro-batch 4 x 1024, with a measured split by kernel category.
nlohmann::json probe_record() {
  nlohmann::json r = {{"id", "stepcast-probe-test-gpt2-xl-ddp-g1-mb4-s1024-t0"},
                      {"source",
                       {{"type", "repo"},
                        {"repo", "stepcast"},
                        {"path", "calibrate/data/test/runs.jsonl"},
                        {"locator", "train_probe.py run t0"}}},
                      {"trust", "high"},
                      {"model",
                       {{"name", "gpt2-xl"},
                        {"arch", "gpt2"},
                        {"params", 1557611200},
                        {"layers", 48},
                        {"hidden", 1600},
                        {"heads", 25},
                        {"kv_heads", 25},
                        {"ffn_hidden", 6400},
                        {"vocab", 50257},
                        {"seq_len", 1024}}},
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
                      {"batch", {{"micro_batch", 4}, {"grad_accum", 1}, {"global_batch", 4}}},
                      {"measured",
                       {{"metric", "step_time_s"},
                        {"value", 0.30},
                        {"definition", "median step"},
                        {"secondary",
                         {{{"metric", "tokens_per_s_per_gpu"}, {"value", 13653.3}, {"unit", "tokens/s"}},
                          {{"metric", "gemm_time_s"}, {"value", 0.20}, {"unit", "s"}},
                          {{"metric", "attention_time_s"}, {"value", 0.03}, {"unit", "s"}},
                          {{"metric", "memory_bound_time_s"}, {"value", 0.05}, {"unit", "s"}},
                          {{"metric", "communication_time_s"}, {"value", 0.0}, {"unit", "s"}},
                          {{"metric", "idle_time_s"}, {"value", 0.02}, {"unit", "s"}}}}}},
                      {"notes", "synthetic"},
                      {"raw", nullptr}};
  return r;
}

}  // namespace

TEST_CASE("categories_from_secondary: the five categories are read, other metrics left alone") {
  const auto k = categories_from_secondary(probe_record()["measured"]["secondary"]);
  REQUIRE(k);
  CHECK(*k->gemm_s == 0.20);
  CHECK(*k->attention_s == 0.03);
  CHECK(*k->memory_bound_s == 0.05);
  CHECK(*k->communication_s == 0.0);
  CHECK(*k->idle_s == 0.02);
  CHECK_FALSE(categories_from_secondary(nlohmann::json::array({{{"metric", "step_time_max"}, {"value", 1}}})));
  CHECK_FALSE(categories_from_secondary(nlohmann::json()));
  CHECK_THROWS_AS(categories_from_secondary(nlohmann::json::array({{{"metric", "gemm_time_s"}, {"value", -1}}})),
                  std::invalid_argument);
}

TEST_CASE("predicted_categories: the prediction's split; memory-bound holds the optimizer, idle the rest") {
  Prediction p;
  p.compute_by_kernel.gemm_s = 0.2;
  p.compute_by_kernel.attention_s = 0.05;
  p.compute_by_kernel.memory_s = 0.04;
  p.compute_by_kernel.launch_s = 0.01;
  p.optimizer_s = 0.01;
  p.comm_busy_s = 0.03;
  p.comm_exposed_s = 0.005;
  p.step_time_s = 0.33;
  const KernelCategories k = predicted_categories(p);
  CHECK(*k.memory_bound_s == doctest::Approx(0.05));
  CHECK(*k.communication_s == doctest::Approx(0.03));
  CHECK(*k.idle_s == doctest::Approx(0.33 - 0.2 - 0.05 - 0.05 - 0.005));
  p.step_time_s = 0.1;  // never negative
  CHECK(*predicted_categories(p).idle_s == 0);
}

TEST_CASE("validate: a probe record is compared category by category, not only in total") {
  const MeasuredRun run = parse_measured_run(probe_record().dump(), "runs.jsonl", 1);
  REQUIRE(run.categories);
  const ValidationRow row = validate_run(run);
  REQUIRE(row.status == "ok");
  REQUIRE(row.categories.size() == 5);
  const char* order[] = {"gemm", "attention", "memory_bound", "communication", "idle"};
  for (std::size_t i = 0; i < 5; ++i) CHECK(row.categories[i].category == order[i]);
  const CategoryComparison& gemm = row.categories[0];
  CHECK(gemm.measured_s == 0.20);
  CHECK(gemm.predicted_s > 0);
  REQUIRE(gemm.error_pct);
  CHECK(*gemm.error_pct == doctest::Approx(100 * (gemm.predicted_s - 0.20) / 0.20));
  // Nothing measured: no error to give, the prediction still shown (one GPU: no collective).
  CHECK_FALSE(row.categories[3].error_pct);
  CHECK(row.categories[3].predicted_s == 0);
  const auto sums = summarize_categories({row.categories, row.categories});
  REQUIRE(sums.size() == 4);  // communication has no error to summarise
  CHECK(sums[0].count == 2);
  CHECK(sums[0].median_abs_error_pct == doctest::Approx(std::abs(*gemm.error_pct)));
  // A malformed category value is bad input naming the secondary list.
  nlohmann::json bad = probe_record();
  bad["measured"]["secondary"][1]["value"] = "fast";
  CHECK_THROWS_AS(parse_measured_run(bad.dump(), "runs.jsonl", 1), InputError);
}

TEST_CASE("lora_from_extras: lora_r<rank>_<targets> names the probe's LoRA runs") {
  const auto l = lora_from_extras({"flash_attention", "lora_r16_q_k_v_o"});
  REQUIRE(l);
  CHECK(l->rank == 16);
  CHECK(l->targets == std::vector<std::string>{"q", "k", "v", "o"});
  CHECK_FALSE(lora_from_extras({"flash_attention"}));
  CHECK_THROWS_AS(lora_from_extras({"lora_r16"}), std::invalid_argument);
  CHECK_THROWS_AS(lora_from_extras({"lora_rx_q"}), std::invalid_argument);
  CHECK_THROWS_AS(lora_from_extras({"lora_r8_q_query"}), std::invalid_argument);
  // A validated LoRA record predicts a LoRA step: fewer weight-gradient GEMMs than full training.
  nlohmann::json r = probe_record();
  const ValidationRow full = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 1));
  r["strategy"]["extras"] = {"flash_attention", "lora_r16_q_k_v_o"};
  const ValidationRow lora = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 1));
  REQUIRE(lora.status == "ok");
  CHECK(lora.categories[0].predicted_s < full.categories[0].predicted_s);
}
