/// \file
/// The kernel model's part of `stepcast fit`: the raw rows of the kernel microbenchmarks
/// (GEMM wave sweep, attention, memory-bound kernels, launch and eager op cost, a GEMM beside
/// a collective) and the fits that turn them into the hardware file's "kernel_model"
/// section (topologies/kernel_calibration.hpp):
///
///  - GEMM ceiling per dtype: the C that minimises sum_i t_i ln²(gemm_time_s(m,n,k; C, SMs, bw)
///    / t_i) over every GEMM row of the dtype, i.e. the best achievable matmul as the kernel
///    model's tile and wave formula sees it; the residual says how well waves explain the sweep;
///  - attention: per (kernel, head_dim, causal, pass) and sequence length the median TFLOP/s
///    in the flash-attention convention (4·b·s²·heads·d, halved causal, x2.5 backward);
///  - memory-bound kernels: per (op, profile) the median bytes / time at the largest size,
///    and the median fraction of datasheet bandwidth over all ops but plain copies;
///  - launch: the median time per kernel (launch, CUDA-graph replay) and per eager op;
///  - overlap: the median 1 - t_alone / t_beside of the GEMM and of the collective.
#pragma once

#include "topologies/kernel_calibration.hpp"
#include "base/types.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace stepcast {

class JsonObject;
struct GpuSpec;

/// "launch" rows: `ops` kernels (or eager ops) per timed loop.
struct RawLaunch {
  std::string kind;  ///< launch, graph_launch, eager_forward_op, eager_backward_op
  std::int64_t ops = 1;
  std::int64_t iterations = 1;
  double time_s_median = 0;  ///< one loop of `ops`
  double time_s_per_op = 0;  ///< as the benchmark computed it
  std::string check;
  std::string json_path;
};

/// "attention" rows (calibrate/bench/torch_bench.py).
struct RawAttention {
  std::string kernel;   ///< the kernel model's name: flash2, flash3, cudnn, mem_efficient, ...
  std::string backend;  ///< how it was called: "sdpa:flash", "flash_attn", ...
  std::string dtype;
  std::int64_t batch = 1, heads = 1, seq_len = 1, head_dim = 64;
  bool causal = true;
  bool backward = false;
  std::int64_t iterations = 1;
  double time_s_median = 0;
  double tflops = 0;
  std::string check;
  std::string json_path;
  /// 4·b·s²·heads·d, halved when causal, x2.5 backward (model/kernels.hpp attention_flops).
  double flops() const;
};

/// "memory_kernels" rows: one memory-bound op, bytes as the kernel model counts them.
struct RawMemoryKernel {
  std::string op;
  std::string profile;  ///< eager, compiled
  std::string dtype;
  std::int64_t elements = 1;
  std::int64_t bytes = 1;
  std::int64_t iterations = 1;
  double time_s_median = 0;
  double GBps = 0;
  std::string check;
  std::string json_path;
};

/// "overlap" rows: a GEMM and a collective, each alone and side by side.
struct RawOverlap {
  std::string collective;
  std::int64_t ranks = 2;
  std::int64_t bytes = 1;
  std::int64_t gemm_m = 1, gemm_n = 1, gemm_k = 1;
  std::string dtype;
  double gemm_time_s_alone = 0, gemm_time_s_beside = 0;
  double collective_time_s_alone = 0, collective_time_s_beside = 0;
  std::string check;
  std::string json_path;
};

RawLaunch parse_raw_launch(JsonObject& o);
RawAttention parse_raw_attention(JsonObject& o);
RawMemoryKernel parse_raw_memory_kernel(JsonObject& o);
RawOverlap parse_raw_overlap(JsonObject& o);

/// One measured GEMM for the ceiling fit.
struct GemmTiming {
  std::int64_t m = 1, n = 1, k = 1;
  double time_s = 0;
};

/// The ceiling C (TFLOP/s) minimising sum t_i · ln²(gemm_time_s(C) / t_i) by golden-section
/// search on ln C (convex in ln C: each term is flat where bytes bound the GEMM and a
/// parabola where tiles do). The weight t_i makes the GEMMs that take a step's time count
/// most, so that a few tiny launch-bound shapes do not drag the ceiling down;
/// wave_rms_rel_residual is the unweighted RMS of (model - t) / t over all rows. `elem_bytes`
/// per operand element. Throws FitError when no row is given.
CalibratedGemm fit_gemm_ceiling(const std::vector<GemmTiming>& rows, double elem_bytes, int sm_count,
                                double memory_GBps);

/// The attention curves of `rows` (rows whose check is not "ok" are left out).
std::vector<CalibratedAttentionCurve> fit_attention_curves(const std::vector<RawAttention>& rows,
                                                           const std::string& raw_file);

/// Per (op, profile) achieved bandwidth at the largest size; `datasheet_GBps` for fractions.
std::vector<CalibratedMemoryOp> fit_memory_ops(const std::vector<RawMemoryKernel>& rows, double datasheet_GBps);

/// The median fraction over `ops` leaving out plain copies; nullopt when none is left.
std::optional<double> kernel_memory_efficiency(const std::vector<CalibratedMemoryOp>& ops);

/// Fills k.launch_s, graph_launch_s, eager_forward_op_s, eager_backward_op_s from the
/// medians of time_s_median / ops per kind.
void fit_launch(const std::vector<RawLaunch>& rows, KernelCalibration& k);

/// Fills k.compute_slowdown, collective_slowdown, overlap_points (medians, >= 0).
void fit_overlap(const std::vector<RawOverlap>& rows, KernelCalibration& k);

/// The report's "Kernel model" part: each fitted parameter with its unit, residual and the
/// DeviceRates field it feeds ("" when nothing was measured).
std::string kernel_model_report_text(const KernelCalibration& k);

}  // namespace stepcast
