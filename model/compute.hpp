/// \file
/// Compute time on one GPU: FLOPs over achieved throughput, where achieved = dense peak x
/// an efficiency that grows with the GEMM size and saturates; memory-bound work (norms,
/// activations, softmax, the optimizer step) as bytes over achieved memory bandwidth.
#pragma once

#include "model/flops.hpp"
#include "model/transformer.hpp"
#include "base/types.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace stepcast {

/// A saturating efficiency curve for GEMMs: eff(F) = max_fraction · F / (F + half_flops),
/// with F the FLOPs of one GEMM call. `max_fraction` is what the largest GEMMs reach;
/// `half_flops` the size at which half of that is reached.
struct GemmEfficiency {
  double max_fraction = 0.7;
  double half_flops = 1e9;
  std::string source;
};

/// Documented defaults per GPU generation and dtype until calibrate/ fits them.
GemmEfficiency default_gemm_efficiency(GpuArch arch, Dtype dtype);

/// eff(F) = max_fraction · F / (F + half_flops)
double gemm_efficiency(const GemmEfficiency& e, double gemm_flops);

/// Fraction of datasheet memory bandwidth that streaming kernels reach (documented default).
double default_memory_efficiency(GpuArch arch);

/// What the compute model needs to know about the GPU (plain numbers: the model does not
/// depend on the hardware catalog).
struct DeviceRates {
  GpuArch arch = GpuArch::ampere;
  double peak_tflops = 0;          ///< dense peak for the GEMM dtype, TFLOP/s
  double memory_bw_GBps = 0;       ///< datasheet memory bandwidth, GB/s
  GemmEfficiency gemm;
  double memory_efficiency = 0.8;
  /// Fraction of dense peak a fused (flash) attention kernel reaches on the attention-score
  /// work; used when flash attention is on.
  double attention_efficiency = 0.5;
  /// Dense peak the attention scores run at, TFLOP/s (0: peak_tflops). Under fp8 training
  /// only the linear layers run in fp8; attention stays in bf16 (TransformerEngine).
  double attention_peak_tflops = 0;
};

/// Documented defaults per GPU generation for fused attention (FlashAttention-2).
double default_attention_efficiency(GpuArch arch);

/// Efficiencies fitted to measured runs, per GPU generation (model/catalog/fitted.json,
/// written by tests/fit_validation.py from the fitting part of the validation records).
/// An absent value keeps the documented default.
struct FittedEfficiency {
  GpuArch arch = GpuArch::ampere;
  std::optional<double> gemm_max_fraction;     ///< GemmEfficiency::max_fraction (bf16/fp16)
  std::optional<double> attention_efficiency;  ///< DeviceRates::attention_efficiency
  std::optional<double> memory_efficiency;     ///< DeviceRates::memory_efficiency
  std::string fitted_on;                       ///< which records, which objective
};
/// The fitted values of `arch`, or nullptr when none were fitted.
const FittedEfficiency* fitted_efficiency(GpuArch arch);

/// Time of one micro-step on one GPU, seconds.
struct MicroStepTimes {
  double forward_s = 0;
  double backward_s = 0;
  double recompute_s = 0;
  /// The LM-head GEMM's share of forward_s and backward_s (the rest is spread evenly over
  /// the layers), for simulators that play the step layer by layer.
  double head_forward_s = 0;
  double head_backward_s = 0;
};

/// Forward/backward/recompute time of one micro-batch (`micro_batch` sequences of `seq_len`).
/// GEMM work: each GEMM of layer_gemms() at its own efficiency, backward 2x (input and
/// weight gradients) or, under LoRA, 1x (frozen weights: the input gradient only); LoRA's
/// adapters as their own thin GEMMs (lora_adapter_gemms()) at their own GEMM efficiency,
/// backward 2x (input and weight gradients of A and B); attention-score work at the
/// efficiency of a GEMM of the same FLOPs, or with flash attention at
/// DeviceRates::attention_efficiency, its backward 2x its forward, or 2.5x (FlashAttention-2
/// recomputes the scores: 5 matmuls against 2; Dao 2023, arXiv 2307.08691, Sec. 3.1); memory-bound work: the activations of every layer
/// written once and read once in forward, twice that in backward
/// (activation_bytes_per_layer, model/memory.hpp), over achieved memory bandwidth.
MicroStepTimes micro_step_times(const TransformerSpec& spec, std::int64_t micro_batch,
                                std::int64_t seq_len, Precision precision, const FlopsOptions& opts,
                                bool flash_attention, const DeviceRates& device);

/// Bytes an Adam step moves per parameter of the local shard. PyTorch's AdamW
/// (torch/optim/adamw.py, the foreach and fused paths alike) reads param, grad, exp_avg and
/// exp_avg_sq and updates param, exp_avg and exp_avg_sq in place; under mixed precision the
/// param it steps is the fp32 master and the 16-bit working weight is written afterwards
/// (Megatron-LM's copy of main params to model params, DeepSpeed's bf16 optimizer):
///   read  fp32 master 4 + m 4 + v 4 + 16-bit gradient 2 = 14
///   write fp32 master 4 + m 4 + v 4 + 16-bit weight   2 = 14
///   = 28 B per parameter. fp32 gradients (adam_deepspeed_18): the gradient read is 4, 30 B.
///   fp32 training: a 4-byte gradient and no 16-bit copy, 16 + 12 = 28 B.
/// SGD with momentum: master and momentum read and written (16), gradient read, 16-bit copy
/// written: 20 B under mixed precision.
double optimizer_bytes_per_param(Precision precision, bool fp32_gradients, bool sgd);

/// Optimizer step over `local_params` parameters as a memory-bound pass.
double optimizer_time_s(double local_params, double bytes_per_param, const DeviceRates& device);

}  // namespace stepcast
