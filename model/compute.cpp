#include "model/compute.hpp"

#include "base/json_input.hpp"
#include "base/limits.hpp"
#include "model/flops.hpp"
#include "model/memory.hpp"

#include <cassert>
#include <stdexcept>
#include <string>

namespace stepcast {

GemmEfficiency default_gemm_efficiency(GpuArch arch, Dtype dtype) {
  // Large-GEMM fractions of dense peak that cuBLAS reaches, per generation. These are
  // defaults to be replaced by calibrate/ fits; the half-size is where small GEMMs stop
  // filling the SMs (about one wave of 128x128x32 tiles: 108-132 SMs x 2·128·128·k).
  GemmEfficiency e;
  e.half_flops = 2e9;
  switch (arch) {
    case GpuArch::volta:
      // V100 fp16 tensor cores: ~90-100 TFLOP/s of 125 reached by large cuBLAS HGEMMs
      // (NVIDIA "Deep Learning Performance Documentation: Matrix Multiplication Background").
      e.max_fraction = 0.75;
      e.half_flops = 1e9;
      break;
    case GpuArch::turing:
    case GpuArch::ada:
      // Guess: no published cuBLAS fraction found for GeForce/Ada parts; set a little below
      // the data-centre parts. To be replaced by a calibrate/ fit.
      e.max_fraction = 0.70;
      e.half_flops = 1e9;
      break;
    case GpuArch::ampere:
      // A100: ~230-260 of 312 TFLOP/s bf16 for large square GEMMs (NVIDIA Matrix
      // Multiplication Background guide, Fig. "A100 GEMM performance").
      e.max_fraction = 0.78;
      break;
    case GpuArch::hopper:
      // H100 SXM: ~650-750 of 989 TFLOP/s bf16 for large cuBLASLt GEMMs (NVIDIA H100
      // Transformer Engine blog and cuBLAS 12 release notes report ~ 70-75%).
      e.max_fraction = 0.72;
      e.half_flops = 4e9;
      break;
    case GpuArch::blackwell:
      // Guess: Hopper's fraction, slightly lower for a larger tile wave; no measurement yet.
      e.max_fraction = 0.70;
      e.half_flops = 8e9;
      break;
  }
  // Guesses until calibrate/ measures them: CUDA-core SGEMM sits close to its (low) peak;
  // fp8 GEMMs reach a lower fraction of their doubled peak than bf16 does.
  if (dtype == Dtype::fp32) e.max_fraction = 0.85;
  if (dtype == Dtype::fp8) e.max_fraction *= 0.85;
  e.source = "default for " + std::string(name(arch)) + "/" + std::string(name(dtype)) +
             " (model/compute.cpp; replace with a calibrate/ fit)";
  return e;
}

double gemm_efficiency(const GemmEfficiency& e, double gemm_flops) {
  assert(gemm_flops >= 0);
  return e.max_fraction * gemm_flops / (gemm_flops + e.half_flops);
}

double default_attention_efficiency(GpuArch arch) {
  switch (arch) {
    case GpuArch::ampere:
      // FlashAttention-2 forward+backward on A100: 50-73% of peak forward, lower backward
      // (Dao 2023, arXiv 2307.08691, Fig. 4-6, head dims 64-128); the middle of the range.
      return 0.55;
    case GpuArch::hopper:
      // FlashAttention-2 on H100 SXM5: up to 335 TFLOP/s forward+backward of 989 (same
      // paper, Fig. 7): it does not use Hopper's wgmma/TMA.
      return 0.34;
    case GpuArch::blackwell:
      // Guess: the Hopper figure (FA2-class kernels); no measurement yet.
      return 0.34;
    case GpuArch::ada:
      // Guess: a little below Ampere (FA2 runs on sm89 without changes).
      return 0.5;
    case GpuArch::volta:
    case GpuArch::turing:
      // Guess: FlashAttention-2 does not run on Volta/Turing; fused attention from xFormers
      // or PyTorch SDPA's memory-efficient kernel reaches less.
      return 0.35;
  }
  return 0.5;
}

namespace {

std::vector<FittedEfficiency> load_fitted() {
  const JsonDoc doc = JsonDoc::load(data_dir() / "model" / "catalog" / "fitted.json");
  JsonObject root(doc.root(), doc.file(), "");
  root.ignore("about");
  JsonArray list = root.array("fitted");
  root.finish();
  std::vector<FittedEfficiency> out;
  auto fraction = [](JsonObject& o, const char* key) -> std::optional<double> {
    return o.optional_number(key, limits::kMinEfficiency, limits::kMaxEfficiency);
  };
  for (std::size_t i = 0; i < list.size(); ++i) {
    JsonObject e = list.object(i);
    FittedEfficiency f;
    f.arch = parse_gpu_arch(e.string("arch"));
    f.gemm_max_fraction = fraction(e, "gemm_max_fraction");
    f.attention_efficiency = fraction(e, "attention_efficiency");
    f.memory_efficiency = fraction(e, "memory_efficiency");
    f.fitted_on = e.string("fitted_on");
    e.finish();
    for (const FittedEfficiency& g : out)
      if (g.arch == f.arch) throw list.error(i, "a second entry for " + std::string(name(f.arch)));
    out.push_back(f);
  }
  return out;
}

}  // namespace

const FittedEfficiency* fitted_efficiency(GpuArch arch) {
  static const std::vector<FittedEfficiency> fitted = load_fitted();
  for (const FittedEfficiency& f : fitted)
    if (f.arch == arch) return &f;
  return nullptr;
}

double default_memory_efficiency(GpuArch arch) {
  // Large device-to-device copies reach ~80-90% of HBM datasheet bandwidth (e.g. A100
  // 1.3-1.4 of 1.56 TB/s, H100 ~2.6-3.0 of 3.35 TB/s in the CUDA bandwidthTest sample).
  return arch == GpuArch::hopper || arch == GpuArch::blackwell ? 0.85 : 0.82;
}

/// FlashAttention-2's backward does 5 matmuls to the forward's 2 (it recomputes the scores):
/// Dao 2023, arXiv 2307.08691, Sec. 3.1-3.2.
constexpr double kFlashBackwardRatio = 2.5;

MicroStepTimes micro_step_times(const TransformerSpec& spec, std::int64_t micro_batch,
                                std::int64_t seq_len, Precision precision, const FlopsOptions& opts,
                                bool flash_attention, const DeviceRates& device) {
  if (!(device.peak_tflops > 0) || !(device.memory_bw_GBps > 0))
    throw std::invalid_argument("micro-step times need a peak and a memory bandwidth > 0");
  if (micro_batch < 1 || seq_len < 1)
    throw std::invalid_argument("micro-step times need micro_batch >= 1 and seq_len >= 1, got " +
                                std::to_string(micro_batch) + " and " + std::to_string(seq_len));
  const std::int64_t rows = checked_product(micro_batch, seq_len, "tokens per micro-batch (micro_batch x seq_len)");
  const double tokens = static_cast<double>(rows);
  const double peak = device.peak_tflops * 1e12;

  // GEMM time at each GEMM's own efficiency, forward only; backward GEMMs have the same
  // shapes transposed: an input-gradient and a weight-gradient GEMM per weight (2x), or,
  // under LoRA, the input gradient only (1x: frozen weights get no weight gradient).
  double gemm_fwd_s = 0, gemm_flops_fwd = 0, head_fwd_s = 0;
  for (const GemmShape& g : layer_gemms(spec, rows)) {
    const double f = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
    const double calls =
        g.name == "lm_head" ? 1.0 : static_cast<double>(g.count_per_layer) * static_cast<double>(spec.layers);
    const double s = calls * f / (peak * gemm_efficiency(device.gemm, f));
    gemm_fwd_s += s;
    if (g.name == "lm_head") head_fwd_s = s;
    gemm_flops_fwd += calls * f;
  }
  const double frozen_bwd_ratio = opts.lora != nullptr ? 1.0 : 2.0;

  // LoRA adapters: their own thin GEMMs at the efficiency of their size; backward, per
  // GEMM, its input gradient and its weight gradient (same FLOPs each, so 2x forward).
  double adapter_fwd_s = 0, adapter_flops_fwd = 0;
  if (opts.lora != nullptr) {
    for (const GemmShape& g : lora_adapter_gemms(spec, *opts.lora, rows)) {
      const double f = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
      const double calls = static_cast<double>(g.count_per_layer) * static_cast<double>(spec.layers);
      adapter_fwd_s += calls * f / (peak * gemm_efficiency(device.gemm, f));
      adapter_flops_fwd += calls * f;
    }
  }
  const double adapter_bwd_s = 2.0 * adapter_fwd_s;

  const StepFlops flops = training_flops(spec, seq_len, tokens, opts);
  // Whatever the refined count has beyond the GEMMs and adapters (attention scores and
  // their product with V) runs as one batched call per layer (bmm over sequences and heads,
  // or one fused attention kernel), at the efficiency of a GEMM of that size.
  const double attn_fwd = std::max(0.0, flops.forward - gemm_flops_fwd - adapter_flops_fwd);
  const double attn_call = attn_fwd / static_cast<double>(spec.layers);
  const double attn_eff = flash_attention ? device.attention_efficiency : gemm_efficiency(device.gemm, attn_call);
  const double attn_peak = device.attention_peak_tflops > 0 ? device.attention_peak_tflops * 1e12 : peak;
  const double attn_fwd_s = attn_fwd > 0 ? attn_fwd / (attn_peak * attn_eff) : 0;

  // Memory-bound work: activations written and read once in forward, twice in backward.
  const double act_bytes =
      activation_bytes_per_layer(spec, micro_batch, seq_len, Recompute::none, flash_attention) *
      static_cast<double>(spec.layers);
  const double bw = device.memory_bw_GBps * 1e9 * device.memory_efficiency;
  const double mem_fwd_s = 2.0 * act_bytes / bw * (working_bytes(precision) / 2.0);

  MicroStepTimes t;
  t.forward_s = gemm_fwd_s + attn_fwd_s + mem_fwd_s + adapter_fwd_s;
  // Attention backward: both operands of each product need gradients (2x), or
  // FlashAttention-2's 2.5x; frozen weights do not change it.
  const double attn_bwd_s = (flash_attention ? kFlashBackwardRatio : 2.0) * attn_fwd_s;
  t.backward_s = frozen_bwd_ratio * gemm_fwd_s + attn_bwd_s + 2.0 * mem_fwd_s + adapter_bwd_s;
  t.recompute_s = flops.forward > 0 ? flops.recompute / flops.forward * t.forward_s : 0;
  t.head_forward_s = head_fwd_s;
  t.head_backward_s = frozen_bwd_ratio * head_fwd_s;
  return t;
}

double optimizer_bytes_per_param(Precision precision, bool fp32_gradients, bool sgd) {
  const double grad = fp32_gradients || precision == Precision::fp32 ? 4 : 2;
  const double copy = precision == Precision::fp32 ? 0 : 2;
  if (sgd) return 4 + 4 + grad + 4 + 4 + copy;  // master r/w, momentum r/w, grad read, copy write
  return 4 * 3 + grad + 4 * 3 + copy;           // master, m, v read; grad read; master, m, v, copy write
}

double optimizer_time_s(double local_params, double bytes_per_param, const DeviceRates& device) {
  return local_params * bytes_per_param / (device.memory_bw_GBps * 1e9 * device.memory_efficiency);
}

}  // namespace stepcast
