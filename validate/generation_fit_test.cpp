// Rules of the leave-one-source-out fit of a generation's GEMM fraction.
#include "validate/generation_fit.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>

using namespace stepcast;

namespace {

/// `n` records of `source` whose |error| is 100·|f - best| percent.
void add(std::vector<SourceError>& out, const std::string& source, int n, double best, double f) {
  for (int i = 0; i < n; ++i) out.push_back({source, 100.0 * std::abs(f - best)});
}

/// Sources A and B, 3 records each, best at `a` and `b`.
FractionEvaluator two_sources(double a, double b) {
  return [a, b](double f) {
    std::vector<SourceError> out;
    add(out, "A", 3, a, f);
    add(out, "B", 3, b, f);
    return out;
  };
}

double without(const GenerationFitResult& r, const std::string& source) {
  for (const auto& [label, fraction] : r.fit.without)
    if (label == source) return fraction;
  FAIL("no fit without " << source);
  return 0;
}

}  // namespace

TEST_CASE("generation fit: a source's fraction is fitted on the other sources' records only") {
  // A's records are best at 0.80, B's at 0.60: without A the fit sees only B, and the other way.
  const GenerationFitOptions o{GpuArch::ampere, 0.5, 1.0, 0.02, 0.005};
  const GenerationFitResult r = fit_generation_gemm(two_sources(0.80, 0.60), o, 0.7);
  CHECK(without(r, "A") == doctest::Approx(0.60));
  CHECK(without(r, "B") == doctest::Approx(0.80));
  // Every source together: the median of {|f-0.8|} x 3 and {|f-0.6|} x 3 is their mean, 10%
  // anywhere in [0.6, 0.8]; ties go to the smaller fraction.
  CHECK(r.fit.gemm == doctest::Approx(0.60));
  // Moving A's optimum moves the fit without B, never the fit without A.
  const GenerationFitResult m = fit_generation_gemm(two_sources(0.90, 0.60), o, 0.7);
  CHECK(without(m, "A") == doctest::Approx(0.60));
  CHECK(without(m, "B") == doctest::Approx(0.90));
  REQUIRE(r.records_per_source.size() == 2);
  CHECK(r.records_per_source[0].second == 3);
}

TEST_CASE("generation fit: the coarse minimum is refined on the fine grid within one coarse step") {
  // Best at 0.713: the 0.02 grid lands on 0.72, the 0.005 grid around it on 0.715.
  const auto evaluate = [](double f) {
    std::vector<SourceError> out;
    add(out, "A", 1, 0.713, f);
    add(out, "B", 1, 0.713, f);
    return out;
  };
  CHECK(fit_generation_gemm(evaluate, {GpuArch::ampere, 0.5, 1.0, 0.02, 0.005}, 1.0).fit.gemm ==
        doctest::Approx(0.715));
  CHECK(fit_generation_gemm(evaluate, {GpuArch::ampere, 0.5, 1.0, 0.02, 0.0}, 1.0).fit.gemm == doctest::Approx(0.72));
}

TEST_CASE("generation fit: the search stays in its range, and a lone source keeps the fallback") {
  double lowest = 1, highest = 0;
  const auto evaluate = [&](double f) {
    lowest = std::min(lowest, f);
    highest = std::max(highest, f);
    std::vector<SourceError> out;
    add(out, "A", 2, 0.95, f);  // best beyond the range: the fit stops at its top
    return out;
  };
  const GenerationFitResult r = fit_generation_gemm(evaluate, {GpuArch::ampere, 0.6, 0.9, 0.05, 0.01}, 0.708);
  CHECK(lowest >= 0.6);
  CHECK(highest <= 0.9 + 1e-12);
  CHECK(r.fit.gemm == doctest::Approx(0.9));
  CHECK(without(r, "A") == doctest::Approx(0.708));  // nothing left to fit on
}

TEST_CASE("generation fit: a range outside (0, 1], a bad grid or nothing compared is refused") {
  const auto none = [](double) { return std::vector<SourceError>{}; };
  const auto one = [](double f) { return std::vector<SourceError>{{"A", f}}; };
  CHECK_THROWS_AS(fit_generation_gemm(one, {GpuArch::ampere, 0.0, 1.0, 0.02, 0.005}, 1), std::invalid_argument);
  CHECK_THROWS_AS(fit_generation_gemm(one, {GpuArch::ampere, 0.5, 1.2, 0.02, 0.005}, 1), std::invalid_argument);
  CHECK_THROWS_AS(fit_generation_gemm(one, {GpuArch::ampere, 0.5, 1.0, 0.0, 0.0}, 1), std::invalid_argument);
  CHECK_THROWS_AS(fit_generation_gemm(one, {GpuArch::ampere, 0.5, 1.0, 0.02, 0.05}, 1), std::invalid_argument);
  CHECK_THROWS_AS(fit_generation_gemm(none, {GpuArch::ampere, 0.5, 1.0, 0.02, 0.005}, 1), std::invalid_argument);
}
