#include "predict/calibrated_rates.hpp"

#include <fmt/format.h>

namespace stepcast {

std::string calibration_source(const std::string& calibration_file) { return "calibration file " + calibration_file; }

namespace {

bool apply_attention(DeviceRates& device, const KernelCalibration& k, AttentionKernel kernel,
                     const std::string& source) {
  AttentionRates rates;
  rates.kernel = kernel;
  for (const CalibratedAttentionCurve& c : k.attention) {
    if (c.kernel != name(kernel)) continue;
    AttentionCurve curve;
    curve.head_dim = static_cast<int>(c.head_dim);
    curve.causal = c.causal;
    curve.pass = c.backward ? AttentionPass::backward : AttentionPass::forward;
    curve.tflops_by_seq = c.tflops_by_seq;
    curve.source = source;
    rates.curves.push_back(std::move(curve));
  }
  if (rates.curves.empty()) return false;
  // A kernel measured one way only keeps the catalog's curves for the other pass.
  for (AttentionPass pass : {AttentionPass::forward, AttentionPass::backward}) {
    bool has = false;
    for (const AttentionCurve& c : rates.curves) has = has || c.pass == pass;
    if (has) continue;
    for (const AttentionCurve& c : device.attention.curves) {
      if (c.pass != pass) continue;
      AttentionCurve scaled = c;
      const double f = device.attention.scale * (pass == AttentionPass::backward ? device.attention.backward_scale : 1);
      for (auto& point : scaled.tflops_by_seq) point.second *= f;
      rates.curves.push_back(std::move(scaled));
    }
  }
  rates.source = fmt::format("{} measured: {}", name(kernel), source);
  device.attention = std::move(rates);
  return true;
}

}  // namespace

CalibratedRates apply_kernel_calibration(DeviceRates& device, const KernelCalibration& k, Dtype dtype,
                                         AttentionKernel kernel, const std::string& calibration_file) {
  const std::string source = calibration_source(calibration_file);
  CalibratedRates out;
  if (k.sm_count) {
    device.sm_count = static_cast<int>(*k.sm_count);
    out.sm_count = true;
  }
  if (auto it = k.gemm.find(dtype); it != k.gemm.end()) {
    device.gemm_ceiling_tflops = it->second.ceiling_tflops;
    device.gemm_source = fmt::format(
        "{} (the ceiling fitted to its GEMM sweep through tile and wave quantization, "
        "RMS residual {:.1f}%)",
        source, 100 * it->second.wave_rms_rel_residual);
    out.gemm = true;
  }
  const auto sixteen = k.gemm.count(Dtype::bf16) ? k.gemm.find(Dtype::bf16) : k.gemm.find(Dtype::fp16);
  if (sixteen != k.gemm.end() && (dtype == Dtype::fp8 || dtype == sixteen->first)) {
    device.attention_gemm_ceiling_tflops = sixteen->second.ceiling_tflops;
    out.gemm = true;
  }
  if (kernel != AttentionKernel::unfused) out.attention = apply_attention(device, k, kernel, source);
  if (k.memory_efficiency) {
    device.memory_efficiency = *k.memory_efficiency;
    device.memory_source = source + " (median achieved bandwidth of its memory-bound kernels)";
    out.memory = true;
  }
  if (k.launch_s) device.launch_s = *k.launch_s;
  if (k.eager_forward_op_s) device.eager_forward_op_s = *k.eager_forward_op_s;
  if (k.eager_backward_op_s) device.eager_backward_op_s = *k.eager_backward_op_s;
  out.launch = k.launch_s || k.eager_forward_op_s || k.eager_backward_op_s;
  if (out.launch) {
    const bool all = k.launch_s && k.eager_forward_op_s && k.eager_backward_op_s;
    device.launch_source = all ? source : source + " (the rest: " + device.launch_source + ")";
  }
  return out;
}

std::optional<double> calibrated_comm_slowdown(const KernelCalibration& k) { return k.compute_slowdown; }

}  // namespace stepcast
