/// \file
/// The time of each kind of kernel a training step runs on one GPU, from what the hardware
/// does: GEMMs by shape against the GPU's best achievable matmul (tile and wave
/// quantization on its SMs), attention kernels from published per-kernel tables by sequence
/// length and head size, memory-bound work as bytes over achieved memory bandwidth, and a
/// CPU launch cost per kernel. A kernel profile (eager PyTorch, torch.compile, fused
/// kernels) says what is fused, so it is an input, not a fitted constant.
#pragma once

#include "base/types.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stepcast {

struct TransformerSpec;
struct GpuSpec;

/// What runs a layer's memory-bound work and the loss.
enum class KernelProfile {
  eager,     ///< PyTorch eager: one kernel per op, fp32 upcasts in norms and the loss
  compiled,  ///< torch.compile (Inductor): element-wise chains and norms fused, fused loss
  fused,     ///< hand-fused kernels (Liger, Transformer Engine, Megatron, DeepSpeed's)
};
std::string_view name(KernelProfile);
KernelProfile parse_kernel_profile(std::string_view);  ///< throws std::invalid_argument
/// "eager, compiled, fused"
std::string kernel_profile_names();

/// Which kernel computes attention.
enum class AttentionKernel {
  flash2,         ///< FlashAttention-2 (Dao 2023): Ampere, Ada, Hopper (no wgmma), Blackwell
  flash3,         ///< FlashAttention-3 (Shah et al. 2024): Hopper
  cudnn,          ///< cuDNN fused attention (Transformer Engine, PyTorch SDPA's cuDNN path)
  mem_efficient,  ///< xFormers / PyTorch SDPA memory-efficient kernel (runs on Volta, Turing)
  triton,         ///< a Triton port of FlashAttention (llm-foundry's flash_attn_triton)
  unfused,        ///< batched GEMMs with the score matrix in memory (bmm, softmax, bmm)
};
std::string_view name(AttentionKernel);
AttentionKernel parse_attention_kernel(std::string_view);  ///< throws std::invalid_argument
std::string attention_kernel_names();

/// The flash-class kernel a GPU runs when a scenario asks for flash attention without naming
/// one: the memory-efficient kernel before Ampere (FlashAttention needs sm80+:
/// Dao-AILab/flash-attention README, "Requirements"); cuDNN's fused attention on data-center
/// Blackwell (sm_100 family), which PyTorch's SDPA puts first there (pytorch/torchtitan pull
/// request 1209: cuDNN attention is the default priority on B200) and Transformer Engine
/// prefers from sm90 on; FlashAttention-2 otherwise (SDPA's first choice on Ampere, Ada,
/// Hopper, where cuDNN attention is opt-in since pytorch/pytorch pull request 138522, and on
/// consumer Blackwell, sm_120).
AttentionKernel default_flash_kernel(const GpuSpec& gpu);

/// Whether `kernel` runs on a GPU generation: FlashAttention-2 and cuDNN's fused attention
/// from Ampere on (sm80+: flash-attention README "Requirements"; cuDNN's fused flash
/// attention, NVIDIA only), FlashAttention-3 on Hopper only (its README: H100/H800), the
/// memory-efficient, Triton and unfused kernels everywhere. FlashAttention-2 also has a
/// ROCm build for CDNA (the same README).
bool attention_kernel_runs_on(AttentionKernel kernel, GpuArch arch);
/// The kernels that run on `arch`, comma-separated, in attention_kernel_names' order.
std::string attention_kernels_on(GpuArch arch);

enum class AttentionPass { forward, backward };

/// Published throughput of one attention kernel on one GPU at one head size, causal or not,
/// forward or backward, by sequence length. TFLOP/s in the flash-attention benchmark
/// convention: forward 4·b·s²·heads·d FLOPs (half of it when causal), backward 2.5x that.
struct AttentionCurve {
  int head_dim = 128;
  bool causal = true;
  AttentionPass pass = AttentionPass::forward;
  std::vector<std::pair<double, double>> tflops_by_seq;  ///< (seq_len, TFLOP/s), seq ascending
  std::string source;
};

/// The attention kernel a GPU runs and its published curves (all of one GPU and kernel).
/// `scale` multiplies every curve: 1 when the curves were measured on this GPU; the ratio of
/// GEMM ceilings when they were measured on another GPU of the same kernel (stated in
/// `source`).
struct AttentionRates {
  AttentionKernel kernel = AttentionKernel::flash2;
  std::vector<AttentionCurve> curves;
  double scale = 1;
  double backward_scale = 1;  ///< a further factor on the backward curves
  std::string source;
};

/// TFLOP/s of the attention kernel at (head_dim, causal, pass, seq): the curve of the same
/// pass and causality (else the other causality) nearest in head size, interpolated
/// linearly in log(seq) between its points and held flat beyond its ends; head sizes between
/// two curves are interpolated linearly; times `scale` (and `backward_scale` backward). Throws std::invalid_argument
/// when no curve has the pass.
double attention_tflops(const AttentionRates& rates, std::int64_t head_dim, bool causal, AttentionPass pass,
                        double seq_len);

/// What the kernel model needs to know about the GPU, with where each number comes from.
/// Plain numbers: the model does not depend on the hardware catalog.
struct DeviceRates {
  GpuArch arch = GpuArch::ampere;
  int sm_count = 108;
  double peak_tflops = 0;          ///< dense datasheet peak of the GEMM dtype, TFLOP/s (for MFU)
  double gemm_ceiling_tflops = 0;  ///< best achievable matmul of the GEMM dtype, TFLOP/s
  std::string gemm_source;
  double memory_bw_GBps = 0;        ///< datasheet memory bandwidth, GB/s
  double memory_efficiency = 0.85;  ///< achieved fraction of it on streaming kernels
  std::string memory_source;
  double launch_s = 5e-6;  ///< CPU cost of launching one kernel, s
  /// CPU cost of one op dispatched by eager PyTorch (Python, dispatcher, autograd, launch),
  /// forward and backward, s: catalog_device_rates sets kEagerForwardOp_s and
  /// kEagerBackwardOp_s (model/compute.hpp); a calibration file measures them.
  double eager_forward_op_s = 14.8e-6;
  double eager_backward_op_s = 35.7e-6;
  std::string launch_source;  ///< where launch_s and the eager op costs come from
  AttentionRates attention;   ///< the flash-class kernel's curves (unused when unfused)
  /// Attention's achievable matmul rate for unfused attention's batched GEMMs, TFLOP/s: the
  /// 16-bit ceiling (under fp8 training attention stays in bf16, Transformer Engine).
  double attention_gemm_ceiling_tflops = 0;
  /// Rate of eager GEMMs whose rows are not 16-byte aligned (gemm_rows_aligned), TFLOP/s;
  /// 0 where it is not known, and such GEMMs take the aligned model.
  double misaligned_gemm_tflops = 0;
  std::string misaligned_gemm_source;
  double achieved_memory_GBps() const { return memory_bw_GBps * memory_efficiency; }
};

/// Time of one GEMM (batch x (m x k)·(k x n)) with operands of `elem_bytes`, seconds:
///   t = max(t_tiles, bytes / achieved memory bandwidth)
///   t_tiles = min over tiles T in {256x128, 128x256, 128x128} and split-K factors p:
///             ceil(batch·ceil(m/Tm)·ceil(n/Tn)·p / SMs) waves x 2·Tm·Tn·(k/p) / (ceiling / SMs)
///             + (p > 1: p·m·n·4 fp32 partial-sum bytes / bandwidth)
/// A tile larger than the output is cut to it in steps of 16 (the tensor-core granule).
/// A partial last wave costs a full one (NVIDIA "Matrix Multiplication Background" guide;
/// Anthony et al. 2024, arXiv 2401.14489); the ceiling is the measured best achievable
/// matmul, so the best shapes land on it. Bytes: batch·(m·k + k·n + m·n)·elem_bytes.
double gemm_time_s(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, double elem_bytes,
                   double ceiling_tflops, int sm_count, double memory_GBps);

/// Whether a GEMM's row-major operands have 16-byte aligned rows: X[m x k], W[n x k] and
/// Y[m x n] have row strides of k, k and n elements (the backward GEMMs use the same two), and
/// Hopper's tensor memory accelerator copies only tiles whose global strides are multiples of
/// 16 bytes (CUDA C++ Programming Guide, "Tensor Memory Access": cuTensorMapEncodeTiled
/// requires globalStrides % 16 == 0). GPT-2's vocabulary of 50,257 is the common offender.
bool gemm_rows_aligned(std::int64_t n, std::int64_t k, double elem_bytes);

/// Time of a GEMM whose rows are not 16-byte aligned, seconds: 2·batch·m·n·k / rate, with
/// `rate` the misaligned rate of DeviceRates (cuBLAS falls back to kernels without the
/// tensor memory accelerator), and never below the memory-bound time of gemm_time_s.
double misaligned_gemm_time_s(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, double elem_bytes,
                              double rate_tflops, double memory_GBps);

/// Executed FLOPs of attention's forward over b sequences of s tokens: 4·b·s²·heads·d,
/// halved when causal (the kernel skips the masked half); backward 2.5x (FlashAttention-2
/// recomputes the scores: 5 matmuls against 2; Dao 2023, arXiv 2307.08691, Sec. 3.1-3.2).
/// MLA: d is the mean of the Q·K^T width (qk_nope + qk_rope) and the P·V width (v_head).
double attention_flops(const TransformerSpec& spec, double b, double s, bool causal, AttentionPass pass);

/// Memory-bound work of one layer or of the loss: bytes moved and kernels launched.
struct MemoryWork {
  double bytes_forward = 0;
  double bytes_backward = 0;
  double kernels_forward = 0;
  double kernels_backward = 0;
};

/// Bytes a cast of one GEMM input element writes under `precision` (layer_memory_work): a
/// rowwise copy for the GEMM that consumes it and a columnwise one for the weight gradient
/// (Transformer Engine's cast-transpose under fp8; NVFP4 scales 16-element blocks along
/// each copy's own axis), gemm_operand_bytes each: 2 under fp8, 1.125 under fp4; 0 for 16-
/// and 32-bit GEMMs, which cast nothing.
double gemm_cast_bytes(Precision precision);

/// One transformer layer's memory-bound work for `tokens` tokens at `w` bytes per element,
/// attention and GEMMs excluded. Per token, in elements of the layer's widths (h hidden, q
/// the query width, kv the key/value width, f the MLP inner width, g = 2 when gated):
///   norm     eager LayerNorm: read h, write h (one kernel); eager RMSNorm (HF): fp32
///            upcast, square, mean, rsqrt-scale, downcast, weight: 7 kernels, 18 element
///            passes at mixed widths (counted in bytes below); fused/compiled: read h, write h
///   rotary   eager: rotate-half and two products on q and k, about 11 bytes per element
///            read+written per kernel over 5 kernels each; fused/compiled: read and write once
///   residual each of 2 adds reads 2h and writes h (fused into the norm when compiled/fused)
///   act      GELU reads f, writes f; SwiGLU eager: SiLU (f in, f out) and the product
///            (2f in, f out); fused: 2f in, f out
///   cast     under fp8 or fp4 GEMMs Transformer Engine casts each GEMM input (qkv, out, up,
///            down): reads w, writes `cast_bytes` (gemm_cast_bytes; 0: 16-bit GEMMs, no cast)
/// Backward moves twice the forward bytes in twice the kernels (each op reads its saved
/// input and the incoming gradient and writes the outgoing one), plus the reductions that
/// have no forward counterpart: per norm its weight gradient re-reads input and gradient
/// (2h, one kernel); per biased projection (linear_bias) its bias gradient reads the
/// output gradient (q + 2kv + h + g·f + h, four kernels).
/// Under tensor parallelism of degree `tp` (Megatron) the q-, kv- and f-wide work is split
/// across the t ranks; the h-wide work (norms, residuals, the out- and down-projection
/// biases) runs on every rank over all tokens, or over tokens/t under sequence parallelism
/// (`sp`, Korthikanti et al. 2022, arXiv 2205.05198, Sec. 4.2.2).
/// Under torch.autocast over fp32 parameters (`autocast`; DDP, tp = 1) the residual stream
/// is fp32: eager norms read and write 4 bytes per element (an RMSNorm skips its up- and
/// downcast), and a norm's weight gradient re-reads fp32; each residual add reads the fp32
/// stream and the w-byte branch output and writes fp32 (8 + w; compiled: the 4-byte write);
/// eager autocast casts the normed input of attention's and the MLP's first GEMM to w bytes
/// (4 + w each, two kernels), where compiled code writes the cast from the norm's kernel.
MemoryWork layer_memory_work(const TransformerSpec& spec, double tokens, double w, KernelProfile profile,
                             double cast_bytes, int tp = 1, bool sp = false, bool autocast = false);

/// Bytes of one autocast cast of `params` fp32 parameters to w-byte elements: read 4, write
/// w, (4 + w)·params. torch.autocast casts each weight a GEMM uses once per forward (its cast
/// cache lives for one autocast region: torch/amp/autocast_mode.py), and the backward casts
/// the w-byte weight gradient back to the fp32 parameter's dtype, the same bytes.
double autocast_cast_bytes(double params, double w);

/// The parameters torch.autocast casts to 16 bits in each forward: every Linear's weight
/// and bias of a layer (attention and MLP: `per_layer`, in `kernels_per_layer` casts) and the
/// LM head's (`head`; a tied head casts the embedding table). Norms run in fp32 and the
/// embedding lookup is not cast.
struct AutocastCasts {
  double per_layer = 0;
  double head = 0;
  double kernels_per_layer = 0;
  double total = 0;  ///< per_layer over the layers, and the head
};
AutocastCasts autocast_casts(const TransformerSpec& spec);

/// Forward bytes by which one MoE layer's MLP memory-bound work differs from the dense MLP
/// that layer_memory_work counts (per token: the activation a·f/t, a = 2w plain, 3w fused
/// or 5w eager gated; under low-precision GEMMs the casts (w + c)·(h·h_share + f/t) of the
/// up and down inputs): the routed experts run the activation over their `routed_rows`
/// token copies at width f_e and cast those rows (h up, f_e down), the shared experts act
/// like a dense MLP of width S·f_s split by TP. The backward moves twice the difference.
double moe_mlp_memory_delta_bytes(const TransformerSpec& spec, double tokens, double routed_rows, double w,
                                  KernelProfile profile, double cast_bytes, int tp, bool sp);

/// The loss over V logits per token: eager: the fp32 upcast (read w, write 4), log-softmax
/// (read 4, write 4) and the loss (read 4), backward softmax gradient (read 8, write 4),
/// downcast (read 4, write w): 32 + 2w bytes per logit over 6 kernels; compiled: one fused
/// forward and one fused backward kernel, 4w bytes per logit; fused linear cross-entropy
/// (Liger): the logits are consumed in chunks, 2w per logit.
/// Under tensor parallelism the vocab-parallel loss holds V/t logits per token on each rank.
MemoryWork loss_memory_work(const TransformerSpec& spec, double tokens, double w, KernelProfile profile, int tp = 1);

}  // namespace stepcast
