#include "model/kernels.hpp"

#include "model/transformer.hpp"
#include "topologies/gpu.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace stepcast {

std::string_view name(KernelProfile p) {
  switch (p) {
    case KernelProfile::eager:
      return "eager";
    case KernelProfile::compiled:
      return "compiled";
    case KernelProfile::fused:
      return "fused";
  }
  return "?";
}

KernelProfile parse_kernel_profile(std::string_view s) {
  for (KernelProfile p : {KernelProfile::eager, KernelProfile::compiled, KernelProfile::fused})
    if (s == name(p)) return p;
  throw std::invalid_argument("unknown kernel profile \"" + std::string(s) + "\"; expected one of " +
                              kernel_profile_names());
}

std::string kernel_profile_names() { return "eager, compiled, fused"; }

std::string_view name(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::flash2:
      return "flash2";
    case AttentionKernel::flash3:
      return "flash3";
    case AttentionKernel::cudnn:
      return "cudnn";
    case AttentionKernel::mem_efficient:
      return "mem_efficient";
    case AttentionKernel::triton:
      return "triton";
    case AttentionKernel::unfused:
      return "unfused";
  }
  return "?";
}

AttentionKernel parse_attention_kernel(std::string_view s) {
  for (AttentionKernel k : {AttentionKernel::flash2, AttentionKernel::flash3, AttentionKernel::cudnn,
                            AttentionKernel::mem_efficient, AttentionKernel::triton, AttentionKernel::unfused})
    if (s == name(k)) return k;
  throw std::invalid_argument("unknown attention kernel \"" + std::string(s) + "\"; expected one of " +
                              attention_kernel_names());
}

std::string attention_kernel_names() { return "flash2, flash3, cudnn, mem_efficient, triton, unfused"; }

AttentionKernel default_flash_kernel(const GpuSpec& gpu) {
  if (gpu.arch == GpuArch::volta || gpu.arch == GpuArch::turing) return AttentionKernel::mem_efficient;
  const bool datacenter_blackwell = gpu.arch == GpuArch::blackwell && gpu.sm_arch >= 100 && gpu.sm_arch < 110;
  return datacenter_blackwell ? AttentionKernel::cudnn : AttentionKernel::flash2;
}

bool attention_kernel_runs_on(AttentionKernel kernel, GpuArch arch) {
  const bool nvidia_sm80 =
      arch == GpuArch::ampere || arch == GpuArch::ada || arch == GpuArch::hopper || arch == GpuArch::blackwell;
  switch (kernel) {
    case AttentionKernel::flash2:
      return nvidia_sm80 || arch == GpuArch::cdna3;
    case AttentionKernel::flash3:
      return arch == GpuArch::hopper;
    case AttentionKernel::cudnn:
      return nvidia_sm80;
    case AttentionKernel::mem_efficient:
    case AttentionKernel::triton:
    case AttentionKernel::unfused:
      return true;
  }
  return false;
}

std::string attention_kernels_on(GpuArch arch) {
  std::string out;
  for (AttentionKernel k : {AttentionKernel::flash2, AttentionKernel::flash3, AttentionKernel::cudnn,
                            AttentionKernel::mem_efficient, AttentionKernel::triton, AttentionKernel::unfused})
    if (attention_kernel_runs_on(k, arch)) out += (out.empty() ? "" : ", ") + std::string(name(k));
  return out;
}

namespace {

/// A curve's TFLOP/s at `seq`: linear in log(seq) between points, flat beyond the ends.
double curve_at(const AttentionCurve& c, double seq) {
  const auto& p = c.tflops_by_seq;
  assert(!p.empty());
  if (seq <= p.front().first) return p.front().second;
  if (seq >= p.back().first) return p.back().second;
  auto hi = std::lower_bound(p.begin(), p.end(), seq, [](const auto& a, double s) { return a.first < s; });
  auto lo = hi - 1;
  const double t = (std::log(seq) - std::log(lo->first)) / (std::log(hi->first) - std::log(lo->first));
  return lo->second + t * (hi->second - lo->second);
}

/// The curves of one pass, preferring the requested causality.
std::vector<const AttentionCurve*> curves_of(const AttentionRates& r, bool causal, AttentionPass pass) {
  std::vector<const AttentionCurve*> same, other;
  for (const AttentionCurve& c : r.curves) {
    if (c.pass != pass) continue;
    (c.causal == causal ? same : other).push_back(&c);
  }
  return same.empty() ? other : same;
}

}  // namespace

double attention_tflops(const AttentionRates& rates, std::int64_t head_dim, bool causal, AttentionPass pass,
                        double seq_len) {
  const std::vector<const AttentionCurve*> cs = curves_of(rates, causal, pass);
  if (cs.empty())
    throw std::invalid_argument("attention kernel " + std::string(name(rates.kernel)) + " has no " +
                                (pass == AttentionPass::forward ? "forward" : "backward") + " curve");
  const double d = static_cast<double>(head_dim);
  const AttentionCurve* below = nullptr;
  const AttentionCurve* above = nullptr;
  for (const AttentionCurve* c : cs) {
    if (c->head_dim <= d && (!below || c->head_dim > below->head_dim)) below = c;
    if (c->head_dim >= d && (!above || c->head_dim < above->head_dim)) above = c;
  }
  double tf = 0;
  if (!below) {
    tf = curve_at(*above, seq_len);
  } else if (!above || above->head_dim == below->head_dim) {
    tf = curve_at(*below, seq_len);
  } else {
    const double t = (d - below->head_dim) / static_cast<double>(above->head_dim - below->head_dim);
    tf = (1 - t) * curve_at(*below, seq_len) + t * curve_at(*above, seq_len);
  }
  return tf * rates.scale * (pass == AttentionPass::backward ? rates.backward_scale : 1.0);
}

namespace {

/// Bytes a GEMM moves at least: batch·(m·k + k·n + m·n) elements of its operands.
double gemm_bytes(double m, double n, double k, double batch, double elem_bytes) {
  return batch * (m * k + k * n + m * n) * elem_bytes;
}

}  // namespace

double gemm_time_s(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, double elem_bytes,
                   double ceiling_tflops, int sm_count, double memory_GBps) {
  if (m < 1 || n < 1 || k < 1 || batch < 1 || !(ceiling_tflops > 0) || sm_count < 1 || !(memory_GBps > 0))
    throw std::invalid_argument("gemm_time_s needs positive sizes, ceiling, SM count and bandwidth");
  constexpr std::array<std::array<double, 2>, 3> kTiles{{{256, 128}, {128, 256}, {128, 128}}};
  constexpr int kMaxSplitK = 16;  // cuBLAS's split-K heuristics stay within a few tens
  const double sms = sm_count;
  const double per_sm_flops = ceiling_tflops * 1e12 / sms;
  const double bw = memory_GBps * 1e9;
  const double M = static_cast<double>(m), N = static_cast<double>(n), K = static_cast<double>(k);
  const double B = static_cast<double>(batch);
  double best = std::numeric_limits<double>::infinity();
  auto cut = [](double tile, double dim) { return std::min(tile, 16.0 * std::ceil(dim / 16.0)); };
  for (const auto& full : kTiles) {
    const std::array<double, 2> tile{cut(full[0], M), cut(full[1], N)};
    const double blocks = B * std::ceil(M / tile[0]) * std::ceil(N / tile[1]);
    for (int p = 1; p <= kMaxSplitK; ++p) {
      if (p > 1 && blocks * (p - 1) >= sms) break;  // splitting only helps while SMs idle
      const double waves = std::ceil(blocks * p / sms);
      double t = waves * 2.0 * tile[0] * tile[1] * std::ceil(K / p) / per_sm_flops;
      if (p > 1) t += p * B * M * N * 4.0 / bw;
      best = std::min(best, t);
    }
  }
  return std::max(best, gemm_bytes(M, N, K, B, elem_bytes) / bw);
}

bool gemm_rows_aligned(std::int64_t n, std::int64_t k, double elem_bytes) {
  constexpr double kAlignment_bytes = 16;
  const auto aligned = [&](std::int64_t elems) {
    return std::fmod(static_cast<double>(elems) * elem_bytes, kAlignment_bytes) == 0;
  };
  return aligned(n) && aligned(k);
}

double misaligned_gemm_time_s(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, double elem_bytes,
                              double rate_tflops, double memory_GBps) {
  if (m < 1 || n < 1 || k < 1 || batch < 1 || !(rate_tflops > 0) || !(memory_GBps > 0))
    throw std::invalid_argument("misaligned_gemm_time_s needs positive sizes, rate and bandwidth");
  const double M = static_cast<double>(m), N = static_cast<double>(n), K = static_cast<double>(k);
  const double B = static_cast<double>(batch);
  const double compute_s = 2.0 * B * M * N * K / (rate_tflops * 1e12);
  return std::max(compute_s, gemm_bytes(M, N, K, B, elem_bytes) / (memory_GBps * 1e9));
}

double attention_flops(const TransformerSpec& spec, double b, double s, bool causal, AttentionPass pass) {
  // MLA: Q·K^T over qk_nope + qk_rope and P·V over v_head, 2·b·s²·heads·(qk + v).
  const double width =
      spec.mla ? static_cast<double>(spec.mla->qk_nope_dim + spec.mla->qk_rope_dim + spec.mla->v_head_dim) / 2.0
               : static_cast<double>(spec.head_dim());
  const double fwd = 4.0 * b * s * s * static_cast<double>(spec.heads) * width * (causal ? 0.5 : 1.0);
  return pass == AttentionPass::forward ? fwd : 2.5 * fwd;
}

namespace {

/// Bytes per token of one norm's forward.
double norm_bytes(const TransformerSpec& spec, double w, KernelProfile profile) {
  const double h = static_cast<double>(spec.hidden);
  if (spec.norm == Norm::rmsnorm && profile == KernelProfile::eager) return (28.0 + 4.0 * w) * h;
  return 2.0 * w * h;
}

double norm_kernels(const TransformerSpec& spec, KernelProfile profile) {
  return spec.norm == Norm::rmsnorm && profile == KernelProfile::eager ? 7.0 : 1.0;
}

/// Bytes per token of one norm's forward on autocast's fp32 residual stream: eager, it reads
/// and writes fp32 (LayerNorm 8; Hugging Face's RMSNorm without its up- and downcast, which
/// do nothing on fp32: 28 over 5 kernels); compiled or fused, one kernel reads fp32 and
/// writes the next GEMM's w-byte input, (4 + w).
double autocast_norm_bytes(const TransformerSpec& spec, double w, KernelProfile profile) {
  const double h = static_cast<double>(spec.hidden);
  if (profile != KernelProfile::eager) return (4.0 + w) * h;
  return (spec.norm == Norm::rmsnorm ? 28.0 : 8.0) * h;
}

double autocast_norm_kernels(const TransformerSpec& spec, KernelProfile profile) {
  return spec.norm == Norm::rmsnorm && profile == KernelProfile::eager ? 5.0 : 1.0;
}

}  // namespace

double autocast_cast_bytes(double params, double w) { return (4.0 + w) * params; }

AutocastCasts autocast_casts(const TransformerSpec& spec) {
  const ParameterBreakdown p = parameter_breakdown(spec);
  AutocastCasts out;
  out.per_layer = static_cast<double>(p.attention + p.mlp) / static_cast<double>(spec.layers);
  out.head = static_cast<double>(p.lm_head > 0 ? p.lm_head : p.embedding);
  out.kernels_per_layer = spec.linear_bias ? 8.0 : 4.0;  // QKV, out, up, down: weights (and biases)
  out.total = out.per_layer * static_cast<double>(spec.layers) + out.head;
  return out;
}

namespace {

/// Bytes the MLP's activation moves per element of its inner width: GELU reads and writes
/// (2w); SwiGLU eager, SiLU then the product (5w), fused (3w).
double mlp_activation_bytes(const TransformerSpec& spec, double w, KernelProfile profile) {
  if (!spec.gated_mlp) return 2.0 * w;
  return (profile == KernelProfile::eager ? 5.0 : 3.0) * w;
}

}  // namespace

double gemm_cast_bytes(Precision precision) {
  const bool low = precision == Precision::fp8_mixed || precision == Precision::fp4_mixed;
  return low ? 2.0 * gemm_operand_bytes(precision) : 0.0;
}

MemoryWork layer_memory_work(const TransformerSpec& spec, double tokens, double w, KernelProfile profile,
                             double cast_bytes, int tp, bool sp, bool autocast) {
  if (tp < 1) throw std::invalid_argument("layer_memory_work: tp must be >= 1");
  if (cast_bytes < 0) throw std::invalid_argument("layer_memory_work: cast bytes must be >= 0");
  if (autocast && (tp > 1 || cast_bytes > 0))
    throw std::invalid_argument("layer_memory_work: autocast is modelled without tensor parallelism or fp8");
  const bool eager = profile == KernelProfile::eager;
  const double t = tp;
  const double h_share = sp ? 1.0 / t : 1.0;  // h-wide work: replicated, or split by SP
  const double h = static_cast<double>(spec.hidden);
  const double q = static_cast<double>(spec.heads * spec.head_dim()) / t;
  const double kv = static_cast<double>(spec.kv_dim()) / t;
  const double f = static_cast<double>(spec.ffn_hidden) / t;
  const double norms = spec.parallel_attn_mlp ? 1.0 : 2.0;

  const double stream_bytes = autocast ? 4.0 : w;  // per element of the residual stream
  double bytes = norms * h_share * (autocast ? autocast_norm_bytes(spec, w, profile) : norm_bytes(spec, w, profile));
  double kernels = norms * (autocast ? autocast_norm_kernels(spec, profile) : norm_kernels(spec, profile));
  if (spec.positional == Positional::rope) {
    bytes += (eager ? 10.0 : 2.0) * w * (q + kv);
    kernels += eager ? 10.0 : 1.0;
  }
  // two residual adds (fused into the norms): read the stream and the branch, write the stream
  bytes += (eager ? 2.0 * stream_bytes + w : stream_bytes) * h * 2.0 * h_share;
  kernels += eager ? 2.0 : 0.0;
  if (autocast && eager) {  // the normed inputs of the QKV and MLP-up GEMMs cast to w bytes
    bytes += autocast_cast_bytes(2.0 * h, w);
    kernels += 2.0;
  }
  bytes += mlp_activation_bytes(spec, w, profile) * f;
  kernels += spec.gated_mlp && eager ? 2.0 : 1.0;
  if (cast_bytes > 0) {
    bytes += (w + cast_bytes) * (h * h_share + q + h * h_share + f);  // casts of the qkv, out, up and down inputs
    kernels += 4.0;
  }
  // Backward reductions with no forward counterpart: each norm's weight (and bias)
  // gradient re-reads its input and the incoming gradient (PyTorch's layer_norm backward
  // runs them as a second kernel), and each biased projection's bias gradient sums its
  // output gradient over the tokens.
  double extra_bwd = norms * 2.0 * stream_bytes * h * h_share;
  double extra_kernels = norms;
  if (spec.linear_bias) {
    extra_bwd += w * ((q + 2.0 * kv) + h * h_share + f * (spec.gated_mlp ? 2.0 : 1.0) + h * h_share);
    extra_kernels += 4.0;
  }
  MemoryWork out;
  out.bytes_forward = bytes * tokens;
  out.bytes_backward = 2.0 * out.bytes_forward + extra_bwd * tokens;
  out.kernels_forward = kernels;
  out.kernels_backward = 2.0 * kernels + extra_kernels;
  return out;
}

double moe_mlp_memory_delta_bytes(const TransformerSpec& spec, double tokens, double routed_rows, double w,
                                  KernelProfile profile, double cast_bytes, int tp, bool sp) {
  if (!spec.moe) throw std::invalid_argument("moe_mlp_memory_delta_bytes: a MoE model");
  if (tp < 1 || tokens < 0 || routed_rows < 0 || w <= 0 || cast_bytes < 0)
    throw std::invalid_argument("moe_mlp_memory_delta_bytes: tp >= 1, counts >= 0, w > 0");
  const MoeSpec& m = *spec.moe;
  const double t = tp;
  const double h = static_cast<double>(spec.hidden);
  const double h_share = sp ? 1.0 / t : 1.0;
  const double act = mlp_activation_bytes(spec, w, profile);
  const double cast = cast_bytes > 0 ? w + cast_bytes : 0.0;
  const double f_dense = static_cast<double>(spec.ffn_hidden) / t;
  const double f_expert = static_cast<double>(m.expert_ffn);
  const double f_shared = static_cast<double>(m.shared_experts * (m.shared_ffn > 0 ? m.shared_ffn : m.expert_ffn)) / t;
  const double dense = tokens * (act * f_dense + cast * (h * h_share + f_dense));
  const double routed = routed_rows * (act * f_expert + cast * (h + f_expert));
  const double shared = m.shared_experts > 0 ? tokens * (act * f_shared + cast * (h * h_share + f_shared)) : 0.0;
  return routed + shared - dense;
}

MemoryWork loss_memory_work(const TransformerSpec& spec, double tokens, double w, KernelProfile profile, int tp) {
  if (tp < 1) throw std::invalid_argument("loss_memory_work: tp must be >= 1");
  const double logits = tokens * static_cast<double>(spec.vocab) / tp;
  MemoryWork out;
  switch (profile) {
    case KernelProfile::eager:
      out.bytes_forward = (12.0 + w) * logits;
      out.bytes_backward = (20.0 + w) * logits;
      out.kernels_forward = 3;
      out.kernels_backward = 3;
      break;
    case KernelProfile::compiled:
      out.bytes_forward = 2.0 * w * logits;
      out.bytes_backward = 2.0 * w * logits;
      out.kernels_forward = 1;
      out.kernels_backward = 1;
      break;
    case KernelProfile::fused:
      out.bytes_forward = 2.0 * w * logits;
      out.kernels_forward = 2;
      break;
  }
  return out;
}

}  // namespace stepcast
