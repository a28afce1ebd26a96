// Rules of validation: records read strictly, a record stepcast cannot represent is skipped
// with its reason, the split is fixed, summaries and ordering follow their definitions.
#include "validate/validation.hpp"

#include "base/json_input.hpp"

#include <doctest/doctest.h>

using namespace stepcast;

namespace {

// GCC 12 reports a false -Wrestrict on short string assignments here (GCC bug 105651).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

ValidationRow row(const std::string& id, double measured, double predicted, int gpus, std::string trust = "high") {
  ValidationRow r;
  r.id = id;
  r.source = "s";
  r.trust = std::move(trust);
  r.strategy = "ddp";
  r.gpu = "a100-sxm4-80gb";
  r.metric = "tokens_per_s_per_gpu";
  r.measured = measured;
  r.predicted = predicted;
  r.error_pct = 100 * (predicted - measured) / measured;
  r.status = "ok";
  r.split = "check";
  r.gpus = gpus;
  r.model = "m";
  return r;
}

}  // namespace

TEST_CASE("records are read strictly and each becomes a prediction or a skip with its reason") {
  const auto runs = load_measured_runs(data_dir() / "tests" / "data" / "good" / "runs.jsonl");
  REQUIRE(runs.size() == 2);
  const ValidationRow ok = validate_run(runs[0]);
  CHECK(ok.status == "ok");
  REQUIRE(ok.predicted);
  CHECK(*ok.error_pct == doctest::Approx(100 * (*ok.predicted - ok.measured) / ok.measured));
  const ValidationRow skipped = validate_run(runs[1]);
  CHECK(skipped.status.rfind("skipped: tensor/pipeline parallelism", 0) == 0);
  CHECK_FALSE(skipped.predicted);
  CHECK_THROWS_AS(parse_measured_run(R"({"id": "x"})", "f.jsonl", 3), InputError);
}

TEST_CASE("the fit/check split is a fixed function of the id") {
  CHECK(split_of("llmfoundry-h10080-70b-s2048-g512-amp_bf16") == split_of("llmfoundry-h10080-70b-s2048-g512-amp_bf16"));
  int fit = 0;
  for (int i = 0; i < 200; ++i) fit += split_of("run-" + std::to_string(i)) == "fit";
  CHECK(fit > 70);   // roughly half each way
  CHECK(fit < 130);
}

TEST_CASE("summary: median and p90 of |error|, low-trust rows shown but left out, ordering over one-knob pairs") {
  // |errors| 10, 20, 30, 40 (%); a low-trust 90% row is left out.
  std::vector<ValidationRow> rows = {row("a", 100, 110, 8), row("b", 100, 80, 16), row("c", 100, 130, 32),
                                     row("d", 100, 60, 64), row("e", 100, 190, 8, "low")};
  rows[1].measured = 90;  // b: measured 90, predicted 80
  rows[1].error_pct = 100.0 * (80 - 90) / 90;
  const ErrorSummary s = summarize(rows, "check")[0];
  CHECK(s.count == 4);
  // errors 10, 11.1, 30, 40: median = (11.1 + 30) / 2; p90 by linear interpolation.
  CHECK(s.median_abs_error_pct == doctest::Approx((100.0 / 9 + 30) / 2));
  CHECK(s.p90_abs_error_pct == doctest::Approx(30 + 0.7 * 10));
  CHECK(s.max_abs_error_pct == doctest::Approx(40));
  // Pairs differing only in GPU count: (a,b) measured 100 > 90, predicted 110 > 80: right;
  // (a,c), (a,d), (c,d) etc. have equal measured values and do not count; (b,c), (b,d):
  // measured 90 < 100, predicted 80 < 130 right, 80 > 60 wrong.
  CHECK(s.ordering_pairs == 3);
  CHECK(s.ordering_accuracy == doctest::Approx(2.0 / 3));
}
