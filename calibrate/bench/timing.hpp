// The measurement loop shared by every microbenchmark: grow the number of back-to-back calls
// until one timed measurement lasts TimingConfig::min_measurement_s, then take
// TimingConfig::repeats measurements of that many calls and summarise the time per call.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common.hpp"

namespace stepcast::cal {

struct Timing {
  std::int64_t iterations = 0;  // calls per timed measurement
  double median_s = 0.0;        // time per call, median over the measurements
  double min_s = 0.0;
  double max_s = 0.0;
};

// `batch(n)` enqueues n calls, waits for them and returns their elapsed seconds (for a
// collective, already the maximum over devices and ranks, so every rank takes the same
// decisions). It is called for calibration first; those calls are not part of the result.
Timing measure(const std::function<double(std::int64_t)>& batch, const TimingConfig& config);

double median(std::vector<double> values);

}  // namespace stepcast::cal
