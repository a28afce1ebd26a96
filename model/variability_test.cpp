#include "model/variability.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>

using namespace stepcast;

TEST_CASE("the expected maximum of n standard normals: 0 for one draw, 1/sqrt(pi) for two, tabulated values") {
  CHECK(expected_max_standard_normal(1) == 0.0);
  CHECK(expected_max_standard_normal(2) == doctest::Approx(1.0 / std::sqrt(M_PI)).epsilon(1e-9));
  CHECK(expected_max_standard_normal(3) == doctest::Approx(1.5 / std::sqrt(M_PI)).epsilon(1e-9));
  // Order-statistics tables (Harter 1961): 10 -> 1.53875, 100 -> 2.50759, 1000 -> 3.24144.
  CHECK(expected_max_standard_normal(10) == doctest::Approx(1.53875).epsilon(1e-5));
  CHECK(expected_max_standard_normal(100) == doctest::Approx(2.50759).epsilon(1e-5));
  CHECK(expected_max_standard_normal(1000) == doctest::Approx(3.24144).epsilon(1e-5));
  CHECK_THROWS_AS(expected_max_standard_normal(0), std::invalid_argument);
}

TEST_CASE("the slowest of n grows with n and with the spread, never faster than the typical GPU") {
  double last = 1.0;
  for (std::int64_t n : {1, 2, 8, 64, 1024, 16384, 1 << 20}) {
    const double s = slowest_of_n_speed(0.02, n);
    CHECK(s <= last);
    CHECK(s > 0.85);
    last = s;
  }
  CHECK(slowest_of_n_speed(0.0, 16384) == 1.0);
  CHECK(slowest_of_n_speed(0.02, 1) == 1.0);
  CHECK(slowest_of_n_speed(0.04, 1024) < slowest_of_n_speed(0.02, 1024));
  CHECK_THROWS_AS(slowest_of_n_speed(-0.01, 8), std::invalid_argument);
  CHECK_THROWS_AS(slowest_of_n_speed(0.6, 8), std::invalid_argument);
}

TEST_CASE("the slowest GPU's rates: compute-bound ceilings scaled, memory bandwidth and launch cost kept") {
  DeviceRates d;
  d.gemm_ceiling_tflops = 600;
  d.attention_gemm_ceiling_tflops = 600;
  d.memory_bw_GBps = 3350;
  d.launch_s = 5e-6;
  const DeviceRates s = slowest_of_n_rates(d, 0.95);
  CHECK(s.gemm_ceiling_tflops == doctest::Approx(570));
  CHECK(s.attention_gemm_ceiling_tflops == doctest::Approx(570));
  CHECK(s.attention.scale == doctest::Approx(0.95));
  CHECK(s.memory_bw_GBps == 3350);
  CHECK(s.launch_s == 5e-6);
}
