/// \file
/// The "kernel_model" section of the hardware file ("stepcast-hardware-v1"): what `stepcast
/// fit` measured for each parameter of the kernel model (model/kernels.hpp, DeviceRates) on
/// one machine: the GEMM ceiling per dtype and how well tile/wave quantization explains the
/// sweep, attention curves in the shape of model/catalog/attention_kernels.json rows,
/// achieved bandwidth of memory-bound kernels, launch and eager per-op CPU cost, and the
/// slowdown of a GEMM running beside an NCCL collective. Every part is optional: absent, the
/// catalog's figure stays. Plain data (kernel names as text): hardware knows no workload.
#pragma once

#include "base/types.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace stepcast {

class JsonObject;

/// The best achievable matmul of one dtype, fitted to a GEMM sweep through the kernel
/// model's tile and wave formula (gemm_time_s).
struct CalibratedGemm {
  double ceiling_tflops = 0;         ///< fitted ceiling: feeds DeviceRates::gemm_ceiling_tflops
  double best_measured_tflops = 0;   ///< the fastest row of the sweep (informational)
  double wave_rms_rel_residual = 0;  ///< RMS of (gemm_time_s - measured) / measured over the sweep
  std::int64_t points = 0;           ///< rows of the sweep
};

/// One attention curve as measured: the shape of an attention_kernels.json row.
struct CalibratedAttentionCurve {
  std::string kernel;  ///< "flash2", "flash3", "cudnn", "mem_efficient", ...
  std::int64_t head_dim = 128;
  bool causal = true;
  bool backward = false;                                 ///< "pass": "backward" (else "forward")
  std::vector<std::pair<double, double>> tflops_by_seq;  ///< (seq_len, TFLOP/s), ascending
  double rms_rel_residual = 0;                           ///< spread of the rows around each point's median
  std::int64_t points = 0;                               ///< rows behind the curve
  std::string source;
};

/// Achieved bandwidth of one memory-bound op class at its largest measured size.
struct CalibratedMemoryOp {
  std::string op;       ///< "copy", "add", "layernorm", "rmsnorm", "softmax", "cross_entropy", "adamw"
  std::string profile;  ///< "eager" or "compiled"
  double GBps = 0;      ///< bytes as the kernel model counts them / time
  double fraction_of_datasheet = 0;
  std::int64_t points = 0;
};

struct KernelCalibration {
  std::optional<std::int64_t> sm_count;  ///< feeds DeviceRates::sm_count
  std::map<Dtype, CalibratedGemm> gemm;
  std::vector<CalibratedAttentionCurve> attention;  ///< feeds DeviceRates::attention
  /// Median achieved fraction of datasheet bandwidth over memory_ops: feeds
  /// DeviceRates::memory_efficiency (ahead of the copy-based memory.memory_efficiency).
  std::optional<double> memory_efficiency;
  std::vector<CalibratedMemoryOp> memory_ops;  ///< per op class (informational)
  std::optional<double> launch_s;              ///< CPU cost of one kernel launch: DeviceRates::launch_s
  std::optional<double> graph_launch_s;        ///< per kernel replayed from a CUDA graph (informational)
  std::optional<double> eager_forward_op_s;    ///< DeviceRates::eager_forward_op_s
  std::optional<double> eager_backward_op_s;   ///< DeviceRates::eager_backward_op_s
  /// Throughput a GEMM loses beside a collective (1 - t_alone / t_beside): feeds the
  /// simulator's compute slowdown while a collective runs.
  std::optional<double> compute_slowdown;
  std::optional<double> collective_slowdown;  ///< the collective's loss beside a GEMM (informational)
  std::int64_t overlap_points = 0;

  bool empty() const {
    return !sm_count && gemm.empty() && attention.empty() && !memory_efficiency && memory_ops.empty() && !launch_s &&
           !graph_launch_s && !eager_forward_op_s && !eager_backward_op_s && !compute_slowdown && !collective_slowdown;
  }
};

/// Reads the "kernel_model" object strictly (unknown keys are errors with their JSON path).
KernelCalibration parse_kernel_calibration(JsonObject& obj);
/// The "kernel_model" object, absent parts left out.
nlohmann::ordered_json kernel_calibration_document(const KernelCalibration& k);

}  // namespace stepcast
