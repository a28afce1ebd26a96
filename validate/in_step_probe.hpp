/// \file
/// What a training-probe record says about the in-step fractions (`stepcast fit in-step`,
/// calibrate/fit/in_step_fit.hpp): the GEMM and attention kernel time it measured per step
/// and the time stepcast predicts for the same step at the isolated benchmarks' rates
/// (training.kernel_rates "isolated"), so that isolated / measured is the fraction a kernel
/// keeps inside that step.
#pragma once

#include "validate/validation.hpp"

#include <memory>
#include <optional>
#include <string>

namespace stepcast {

struct ProbeKernelTimes {
  std::string skip_reason;                                      ///< set: the record gives nothing (why)
  std::optional<double> measured_gemm_s, measured_attention_s;  ///< the record's gemm_time_s, attention_time_s
  double isolated_gemm_s = 0;       ///< Prediction::compute_by_kernel.gemm_s at isolated rates
  double isolated_attention_s = 0;  ///< ... attention_s; 0 when the attention is not a fused kernel
  bool fused_attention = false;     ///< a flash-class kernel (the attention fraction scales only those)
};

/// The record's times. Skipped (with why) when it has no per-category times or stepcast
/// cannot represent it (scenario_for's reasons); InputError for a bad record, as validate.
/// `calibration` (optional): the machine's `stepcast fit` hardware file, so that "isolated"
/// means the machine's own measured rates.
ProbeKernelTimes probe_kernel_times(const MeasuredRun& run,
                                    const std::shared_ptr<const HardwareFile>& calibration = nullptr,
                                    const std::string& calibration_file = "");

}  // namespace stepcast
