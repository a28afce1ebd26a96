#include "timing.hpp"

#include <algorithm>
#include <cmath>

namespace stepcast::cal {

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

Timing measure(const std::function<double(std::int64_t)>& batch, const TimingConfig& config) {
  // Calibration: a single call's time overestimates the time per call of a long batch (launch
  // latency is not yet hidden), so the estimate may fall short; repeat until long enough.
  std::int64_t n = 1;
  double elapsed = batch(n);
  while (elapsed < config.min_measurement_s && n < config.max_iterations) {
    // Aim 25% above the target so that the next batch usually suffices; grow at least 2x and
    // at most 1000x per step (our choices: a bounded number of steps, no runaway on a 0 s read).
    const double wanted = elapsed > 0.0 ? static_cast<double>(n) * 1.25 * config.min_measurement_s / elapsed
                                        : static_cast<double>(n) * 1000.0;
    const double grown = std::clamp(std::ceil(wanted), 2.0 * static_cast<double>(n), 1000.0 * static_cast<double>(n));
    n = static_cast<std::int64_t>(std::min(grown, static_cast<double>(config.max_iterations)));
    elapsed = batch(n);
  }
  std::vector<double> per_call;
  per_call.reserve(static_cast<std::size_t>(config.repeats));
  for (int r = 0; r < config.repeats; ++r) per_call.push_back(batch(n) / static_cast<double>(n));
  Timing t;
  t.iterations = n;
  t.median_s = median(per_call);
  t.min_s = per_call.empty() ? 0.0 : *std::min_element(per_call.begin(), per_call.end());
  t.max_s = per_call.empty() ? 0.0 : *std::max_element(per_call.begin(), per_call.end());
  return t;
}

}  // namespace stepcast::cal
