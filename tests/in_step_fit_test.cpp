// model/catalog/in_step.json is reproducible from the rule its "method" states: on the run it
// was fitted on (scenarios/reference/mleng-h200-llama31-8b-zero2-8k.json), the isolated
// attention time over the measured one gives attention_fraction, and with both fractions the
// simulated step lands on the measured step.
#include "predict/predict.hpp"
#include "scenario/scenario.hpp"

#include <doctest/doctest.h>

#include <filesystem>

using namespace stepcast;

namespace {

// Measured (ml-engineering, 'Step decomposition @ 8k', H200): per GPU and step, model FLOPs
// with causal attention 6·s²·d·h·L, and the total and attention rates in model TFLOP/s.
constexpr double kSeq = 8192, kHeadDim = 128, kHeads = 32, kLayers = 32;
constexpr double kAttentionModelFlops = 6 * kSeq * kSeq * kHeadDim * kHeads * kLayers;  // 5.28e13
constexpr double kAttentionTflops = 447, kTotalTflops = 461;
constexpr double kParams = 8.03e9;

Scenario fitted_run() {
  return load_scenario(std::filesystem::path(STEPCAST_SOURCE_DIR) / "scenarios" / "reference" /
                       "mleng-h200-llama31-8b-zero2-8k.json");
}

}  // namespace

TEST_CASE("in-step fractions: attention_fraction = isolated attention time / measured in-step attention time") {
  Scenario s = fitted_run();
  s.training.in_step_rates = false;
  const double measured_s = kAttentionModelFlops / (kAttentionTflops * 1e12);  // 0.1181 s
  const double isolated_s = predict(s).compute_by_kernel.attention_s;
  CHECK(in_step_fractions().attention == doctest::Approx(isolated_s / measured_s).epsilon(0.005));
}

TEST_CASE("in-step fractions: with both fractions the fitted run's simulated step is its measured step") {
  const double model_flops = 6 * kParams * kSeq + kAttentionModelFlops;  // 4.475e14 per GPU
  const double measured_step_s = model_flops / (kTotalTflops * 1e12);    // 0.9706 s
  CHECK(predict(fitted_run()).step_time_s == doctest::Approx(measured_step_s).epsilon(0.01));
}
