#include "validate/in_step_probe.hpp"

namespace stepcast {

ProbeKernelTimes probe_kernel_times(const MeasuredRun& run, const std::shared_ptr<const HardwareFile>& calibration,
                                    const std::string& calibration_file) {
  ProbeKernelTimes out;
  if (!run.categories || (!run.categories->gemm_s && !run.categories->attention_s)) {
    out.skip_reason = "no per-category kernel times (gemm_time_s, attention_time_s)";
    return out;
  }
  RunScenario rs = scenario_for(run, calibration, calibration_file);
  if (!rs.scenario) {
    out.skip_reason = rs.skip_reason;
    return out;
  }
  Scenario& sc = *rs.scenario;
  sc.training.in_step_rates = false;
  const Prediction p = predict(sc);
  out.measured_gemm_s = run.categories->gemm_s;
  out.measured_attention_s = run.categories->attention_s;
  out.isolated_gemm_s = p.compute_by_kernel.gemm_s;
  out.fused_attention = sc.training.flash_attention;
  out.isolated_attention_s = out.fused_attention ? p.compute_by_kernel.attention_s : 0;
  return out;
}

}  // namespace stepcast
