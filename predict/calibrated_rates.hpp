/// \file
/// The kernel model's rates from a calibration file: the "kernel_model" section of a
/// `stepcast fit` hardware file (topologies/kernel_calibration.hpp) laid over the catalog's
/// DeviceRates. Each rate the file names replaces the catalog's, its source saying
/// "calibration file X"; rates the file does not name stay as they were.
#pragma once

#include "model/kernels.hpp"
#include "topologies/kernel_calibration.hpp"
#include "base/types.hpp"

#include <optional>
#include <string>

namespace stepcast {

/// Which of DeviceRates' rates a calibration replaced.
struct CalibratedRates {
  bool sm_count = false;
  bool gemm = false;       ///< gemm_ceiling_tflops (and the attention GEMMs' ceiling)
  bool attention = false;  ///< the attention kernel's curves
  bool memory = false;     ///< memory_efficiency
  bool launch = false;     ///< launch_s, eager_forward_op_s, eager_backward_op_s (any of them)
};

/// "calibration file X" (X: the file as named on the command line or in the scenario).
std::string calibration_source(const std::string& calibration_file);

/// Lays `k` over `device` for GEMMs in `dtype` and attention by `kernel`:
///   sm_count            -> sm_count
///   gemm[dtype]         -> gemm_ceiling_tflops; gemm[bf16] (else fp16) -> the ceiling of
///                          attention's batched GEMMs (attention stays 16-bit under fp8)
///   attention curves    -> attention (scale 1), only curves of `kernel`, only if any
///   memory_bound.efficiency -> memory_efficiency
///   launch.launch_s, eager_forward_op_s, eager_backward_op_s -> the same fields
CalibratedRates apply_kernel_calibration(DeviceRates& device, const KernelCalibration& k, Dtype dtype,
                                         AttentionKernel kernel, const std::string& calibration_file);

/// The calibrated slowdown of compute while a collective runs, if the file measured one.
std::optional<double> calibrated_comm_slowdown(const KernelCalibration& k);

}  // namespace stepcast
