/// \file
/// The slowest of N GPUs (variability.hpp).
#include "model/variability.hpp"

#include "base/limits.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace stepcast {

double expected_max_standard_normal(std::int64_t n) {
  if (n < 1) throw std::invalid_argument("expected_max_standard_normal: n must be >= 1");
  if (n == 1) return 0.0;
  // The density of the maximum, n φ(x) Φ(x)^(n-1), by Simpson's rule on [-10, 10]: beyond,
  // it is below 1e-20 for every n up to 2^40. Φ^(n-1) as exp((n-1) log Φ) keeps large n exact.
  constexpr int kSteps = 1200;  // even; within 1e-10 of 8,000 steps for n up to 2^20
  constexpr double kLo = -10.0, kHi = 10.0;
  const double h = (kHi - kLo) / kSteps;
  const double m = static_cast<double>(n - 1);
  auto integrand = [&](double x) {
    const double phi = std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
    const double log_cdf = std::log(0.5 * std::erfc(-x / std::sqrt(2.0)));
    return x * static_cast<double>(n) * phi * std::exp(m * log_cdf);
  };
  double sum = integrand(kLo) + integrand(kHi);
  for (int i = 1; i < kSteps; ++i) sum += (i % 2 ? 4.0 : 2.0) * integrand(kLo + i * h);
  return sum * h / 3.0;
}

double slowest_of_n_speed(double cv, std::int64_t n) {
  if (!(cv >= 0.0 && cv <= limits::kMaxGpuSpeedCv))
    throw std::invalid_argument(fmt::format("slowest_of_n_speed: cv {} outside [0, {}]", cv, limits::kMaxGpuSpeedCv));
  return 1.0 / (1.0 + cv * expected_max_standard_normal(n));
}

DeviceRates slowest_of_n_rates(DeviceRates d, double speed) {
  d.gemm_ceiling_tflops *= speed;
  d.attention_gemm_ceiling_tflops *= speed;
  d.attention.scale *= speed;
  d.gemm_source = fmt::format("{} x {:.4f} (the slowest GPU)", d.gemm_source, speed);
  return d;
}

}  // namespace stepcast
