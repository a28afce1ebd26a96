#include "calibrate/fit/in_step_fit.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>

using namespace stepcast;

namespace {

InStepObservation record(const std::string& id, double gemm_isolated_s, double gemm_fraction,
                         double attention_isolated_s, double attention_fraction) {
  InStepObservation o;
  o.run_id = id;
  o.repo = "stepcast";
  o.path = "calibrate/data/h100-x1/runs.jsonl";
  o.gpu = "h100-sxm5-80gb";
  o.isolated_gemm_s = gemm_isolated_s;
  o.measured_gemm_s = gemm_isolated_s / gemm_fraction;
  o.isolated_attention_s = attention_isolated_s;
  o.measured_attention_s = attention_isolated_s / attention_fraction;
  return o;
}

}  // namespace

TEST_CASE("in-step fit: records measured at isolated / 0.8 and / 0.9 give back 0.8 and 0.9") {
  const InStepFit fit = fit_in_step({record("a", 0.120, 0.8, 0.030, 0.9), record("b", 0.011, 0.8, 0.002, 0.9)});
  CHECK(fit.gemm.fraction == doctest::Approx(0.8).epsilon(1e-12));
  CHECK(fit.attention.fraction == doctest::Approx(0.9).epsilon(1e-12));
  CHECK(fit.gemm.rms_rel_residual < 1e-12);
  CHECK(fit.sources.size() == 1);
}

TEST_CASE("in-step fit: the fraction is the measured-time-weighted geometric mean of the ratios") {
  // ratios 0.5 (m = 0.3 s) and 1.0 (m = 0.1 s): ln f = (0.3 ln 0.5 + 0.1 ln 1) / 0.4.
  const InStepCategoryFit c = fit_in_step_category({{"a", 0.15, 0.3}, {"b", 0.1, 0.1}});
  CHECK(c.fraction == doctest::Approx(std::exp(0.75 * std::log(0.5))));
}

TEST_CASE("in-step fit: a fraction above 1 is clamped to the bound 1 and the unclamped value kept") {
  const InStepCategoryFit c = fit_in_step_category({{"a", 0.2, 0.1}});
  CHECK(c.fraction == 1.0);
  CHECK(c.unclamped == doctest::Approx(2.0));
}

TEST_CASE("in-step fit: records without a category ratio are left out with why; none at all is an error") {
  InStepObservation no_attention = record("c", 0.1, 0.8, 0.01, 0.9);
  no_attention.measured_attention_s = 0;  // probe measured no attention kernel
  InStepObservation skipped = record("d", 0.1, 0.5, 0.01, 0.5);
  skipped.skip_reason = "no per-category times";
  const InStepFit fit = fit_in_step({record("a", 0.1, 0.8, 0.01, 0.9), no_attention, skipped});
  CHECK(fit.gemm.runs.size() == 2);
  CHECK(fit.attention.runs.size() == 1);
  REQUIRE(fit.skipped.size() == 1);
  CHECK(fit.skipped[0] == "d: no per-category times");
  CHECK_THROWS_WITH_AS(fit_in_step({no_attention}), doctest::Contains("attention_time_s"), InStepFitError);
  CHECK_THROWS_WITH_AS(fit_in_step({skipped}), doctest::Contains("gemm_time_s"), InStepFitError);
}

TEST_CASE("in-step fit: records of two GPUs are one file of two machines, an error") {
  InStepObservation other = record("b", 0.1, 0.8, 0.01, 0.9);
  other.gpu = "a100-sxm4-80gb";
  CHECK_THROWS_WITH_AS(fit_in_step({record("a", 0.1, 0.8, 0.01, 0.9), other}), doctest::Contains("several GPUs"),
                       InStepFitError);
}

TEST_CASE("in-step fit: the document has in_step.json's keys, provenance in fitted_on, the direct ratio in method") {
  const InStepFit fit = fit_in_step({record("a", 0.1, 0.8, 0.01, 0.9)});
  const nlohmann::ordered_json doc = in_step_json(fit, {"runs.jsonl", "1x H100 SXM5, driver 580", "0123abc"});
  CHECK(doc["gemm_fraction"].get<double>() == doctest::Approx(0.8));
  CHECK(doc["attention_fraction"].get<double>() == doctest::Approx(0.9));
  REQUIRE(doc["fitted_on"].size() == 1);
  CHECK(doc["fitted_on"][0]["repo"] == "stepcast");
  CHECK(doc["fitted_on"][0]["machine"] == "1x H100 SXM5, driver 580");
  CHECK(doc["fitted_on"][0]["probe_file"] == "runs.jsonl");
  CHECK(doc["fitted_on"][0]["commit"] == "0123abc");
  CHECK(doc["method"].get<std::string>().find("direct per-category ratios") != std::string::npos);
  CHECK(doc["runs"].size() == 2);
}
