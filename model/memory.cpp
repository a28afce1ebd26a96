// Memory per GPU: model states (ZeRO paper / DeepSpeed estimators), activations (Korthikanti
// et al. 2022, generalised to GQA and gated MLPs), logits, communication buffers, CUDA
// context and allocator overhead. Every term is a pure function of its inputs.
#include "model/memory.hpp"

#include "model/kernels.hpp"

#include "model/moe.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace stepcast {

namespace {

constexpr std::array<std::string_view, 3> kOptimizerNames{"adam", "adam_deepspeed", "sgd"};
constexpr std::array<std::string_view, 3> kVerdictNames{"fits", "tight", "oom"};

bool is_mixed(Precision p) { return p != Precision::fp32; }

/// The strategy that actually runs: FSDP with a shard group of one GPU falls back to
/// NO_SHARD (PyTorch FSDP warns "switching to use NO_SHARD instead of ... since the world
/// size is 1"); everything else runs as asked.
Strategy effective_strategy(Strategy s, std::int64_t shard_n) {
  if (is_fsdp(s) && shard_n == 1) return Strategy::fsdp_no_shard;
  return s;
}

/// True when the DeepSpeed estimator accounting applies: adam_deepspeed under a mixed
/// precision (with fp32 training the fp32 gradient *is* the working gradient, so the kind
/// degenerates to plain Adam).
bool deepspeed_accounting(const MemoryInputs& in) {
  return in.optimizer == OptimizerKind::adam_deepspeed_18 && is_mixed(in.precision);
}

// ---------------------------------------------------------------------------------------
// Model-state terms. P = stored params, T = trainable params, n = shard degree,
// w = working_bytes(precision) (2 mixed, 4 fp32).
// ---------------------------------------------------------------------------------------

/// Weights: w·P bytes, divided by n only where parameters stay sharded at the memory peak
/// (ZeRO-3, FSDP FULL_SHARD, HYBRID_SHARD over the node). DDP, ZeRO-1/2, NO_SHARD hold the
/// full working copy; FSDP SHARD_GRAD_OP gathers once for forward and keeps the unsharded
/// parameters through backward, so its peak holds full weights too. LoRA: the frozen base
/// is stored (and sharded) like any weight. Under FSDP mixed precision the at-rest shard is
/// fp32 and doubles as the master copy, counted in the optimizer's 4 B. Source: ZeRO paper
/// (Rajbhandari et al. 2020) Sec. 3.1/5; PyTorch FSDP ShardingStrategy docs.
double weights_bytes(const ParamCounts& c, Strategy s, Precision p, std::int64_t n) {
  const double w = working_bytes(p);
  return w * c.stored / (shards_parameters(s) ? static_cast<double>(n) : 1.0);
}

/// Gradients, only for trainable parameters (LoRA: adapters only).
///  * adam / sgd: w·T, divided by n where gradients are sharded (ZeRO-2+, FSDP but NO_SHARD).
///    ZeRO paper Sec. 5: DDP 2Ψ, P_os 2Ψ, P_os+g 2Ψ/N, P_os+g+p 2Ψ/N.
///  * adam_deepspeed (mixed): DeepSpeed keeps an fp32 gradient partition (4T/n) beside the
///    16-bit gradients; ZeRO-1/2 (stage_1_and_2.py) also keep the full 16-bit gradients (2T),
///    so ZeRO-1/2 = 2T + 4T/n and DDP/NO_SHARD = 2T + 4T (the n = 1 limit); ZeRO-3 and FSDP
///    reduce-scatter each unit's 16-bit gradient at once, leaving 4T/n (the 16-bit gradient
///    of the unit in flight is in gathered_params / comm_buffers). With 2 B weights and 12 B
///    optimizer this reproduces DeepSpeed estimate_zero2_model_states_mem_needs:
///    4P + 16P/N, and estimate_zero3_model_states_mem_needs: 18P/N + 4·largest_layer.
double gradients_bytes(const ParamCounts& c, Strategy s, const MemoryInputs& in, std::int64_t n) {
  const double dn = static_cast<double>(n);
  if (deepspeed_accounting(in)) {
    const bool full16 =
        s == Strategy::ddp || s == Strategy::fsdp_no_shard || s == Strategy::zero1 || s == Strategy::zero2;
    return (full16 ? 2.0 * c.trainable : 0.0) + 4.0 * c.trainable / dn;
  }
  const double w = in.fp32_gradients ? 4.0 : working_bytes(in.precision);
  return w * c.trainable / (shards_gradients(s) ? dn : 1.0);
}

/// Optimizer bytes per trainable parameter K: Adam mixed 12 (fp32 master + m + v; ZeRO
/// paper Sec. 3.1, K = 12), Adam fp32 8 (m, v; the weight is the master); SGD-momentum mixed
/// 8 (master + momentum), fp32 4 (momentum). adam_deepspeed has Adam's K.
double optimizer_bytes_per_param(OptimizerKind k, Precision p) {
  const bool mixed = is_mixed(p);
  switch (k) {
    case OptimizerKind::adam_mixed_16:
    case OptimizerKind::adam_deepspeed_18:
      return mixed ? 12.0 : 8.0;
    case OptimizerKind::sgd_momentum:
      return mixed ? 8.0 : 4.0;
  }
  return 12.0;
}

/// Optimizer states: K·T, divided by n where optimizer states are sharded (ZeRO-1+, FSDP but
/// NO_SHARD). Source: ZeRO paper Sec. 5 (P_os: KΨ/N).
double optimizer_bytes(const ParamCounts& c, Strategy s, const MemoryInputs& in, std::int64_t n) {
  const double k = optimizer_bytes_per_param(in.optimizer, in.precision);
  return k * c.trainable / (shards_optimizer(s) ? static_cast<double>(n) : 1.0);
}

/// Parameters gathered for use when parameters are sharded at rest (ZeRO-3, FSDP FULL_SHARD,
/// HYBRID_SHARD):
///  * adam / sgd: w·(prefetch_layers + 1)·per_layer: the block being computed plus the
///    blocks prefetched ahead of it (FSDP's forward/backward prefetch; DeepSpeed's
///    stage3_prefetch_bucket_size), each a full transformer block — the usual wrap unit.
///    Zero when n = 1: nothing to gather (FSDP runs as NO_SHARD), so the sharded model states
///    equal the unsharded ones (ZeRO paper: 16Ψ/N at N = 1 is DDP's 16Ψ).
///  * adam_deepspeed on ZeRO-3: 4·largest_layer, DeepSpeed's estimator term (2 B gathered
///    16-bit parameters + 2 B their 16-bit gradients for the single largest module, where
///    "module" is an nn.Module's own parameters — usually the embedding table), at every N
///    as the estimator writes it. It models one module live at a time, ignoring prefetch and
///    stage3_max_live_parameters; ours models whole blocks and prefetch, without the
///    embedding (the non-block root unit) — so for big-vocabulary models the two differ in
///    both directions: DeepSpeed's is larger when V·h > (prefetch+1)·block/2.
/// Source: DeepSpeed estimate_zero3_model_states_mem_needs; PyTorch FSDP docs
/// (forward_prefetch, backward_prefetch).
double gathered_params_bytes(const ParamCounts& c, Strategy s, const MemoryInputs& in, std::int64_t n) {
  if (!shards_parameters(s)) return 0.0;
  if (deepspeed_accounting(in) && s == Strategy::zero3) return 4.0 * c.largest_module;
  if (n == 1) return 0.0;
  const double w = working_bytes(in.precision);
  return w * static_cast<double>(in.prefetch_layers + 1) * c.per_layer;
}

// ---------------------------------------------------------------------------------------
// Activations. s = seq, b = micro-batch, h = hidden, a = heads, d = kv_heads·head_dim,
// f = ffn_hidden, w = bytes per activation element (2 in Korthikanti), masks 1 B/element.
// ---------------------------------------------------------------------------------------

/// Bytes per element of what a layer stores: w for activations, gemm_input for the inputs
/// the GEMMs keep for their weight gradients; the MoE capacity factor; a fused SwiGLU.
struct StoredWidths {
  double w = 2.0;
  double gemm_input = 2.0;
  double capacity = 1.0;
  bool fused_swiglu = false;
  double norm_input = 2.0;             ///< a norm's saved input: w, or 4 for autocast's fp32 residual stream
  RecomputeModules recomputed{false};  ///< what selective recompute drops (nothing otherwise)
};

double mlp_inner_bytes(const TransformerSpec& spec, const StoredWidths& sw, double f);

/// Bytes stored per token by one layer (layer_bytes_per_token), excluding the attention
/// scores. Korthikanti et al. 2022 (arXiv 2205.05198) Sec. 4.1 count, per token, with w = 2:
///   attention 11h: LN output h·w (QKV input), Q h·w and K h·w (for QKᵀ), V h·w (for the
///     score·V product), context h·w (output-projection input), dropout mask h;
///   MLP 19h: input h·w, GeLU input 4h·w, GeLU output 4h·w, dropout mask h;
///   norms 4h: the two LayerNorm inputs 2·h·w.
/// Generalised term by term, with m = 1 when the model has dropout and 0 when not (a
/// dropout of probability 0 returns its input and keeps no mask: PyTorch's dropout) and g
/// the bytes of a GEMM input kept for the weight gradient (w, or 1 under fp8, below):
///   attention: h·g + 2q·w + 2d·w + m·h — Q and the context have width q = heads·head_dim
///                                  (h unless head_dim is given), K and V d = kv_heads·head_dim;
///   MLP plain: h·g + f·w + f·g + m·h — activation input and output (down input), width f;
///   MLP gated: h·g + 3f·w + f·g + m·h — eager SwiGLU/GeGLU stores gate (for act'), act(gate)
///                                  and up (for the product), and the product (down input);
///                                  a parallel block shares the MLP input with attention;
///   norms: 2h·w (h·w for a parallel block's one shared norm; 4 bytes in place of w where
///          autocast keeps the residual stream in fp32).
/// With d = h, f = 4h, w = g = 2, m = 1, sequential: 11h + 19h + 4h = 34h (Korthikanti's
/// 34·s·b·h); without dropout 32h.
/// MoE layers (the share φ = moe_layer_share of the layers) keep, per token, in place of the
/// dense MLP's: the MLP input h·g + its dropout mask m·h, the router's fp32 logits 4·E, the
/// dispatched copies (the experts' first GEMM input) c·k·h·g, the experts' outputs before
/// combine c·k·h·w for the routing probabilities' gradient (none under the fused profile:
/// Megatron-Core's TEGroupedMLP weights the SwiGLU by the probabilities,
/// weighted_bias_swiglu_impl in moe/experts.py, so the combine keeps nothing), and the
/// experts' inner activations as a dense MLP of width F = c·k·f_e + S·f_s (c the capacity
/// factor, k of E routed experts of width f_e, S shared of width f_s); the layer's mean is
/// (1 - φ)·dense + φ·MoE. Recomputing the experts' activation (moe_act) keeps of the routed
/// experts' inner tensors their first GEMM's output alone, (1 + gated)·c·k·f_e·w.
double moe_mlp_bytes_per_token(const TransformerSpec& spec, const StoredWidths& sw, double dense_mlp) {
  const MoeSpec& m = *spec.moe;
  const double h = static_cast<double>(spec.hidden);
  const double k = static_cast<double>(m.top_k);
  const double c = sw.capacity;
  const double routed = c * k * static_cast<double>(m.expert_ffn);
  const double shared =
      static_cast<double>(m.shared_experts) * static_cast<double>(m.shared_ffn > 0 ? m.shared_ffn : m.expert_ffn);
  // Recomputing the experts' activation keeps their first GEMM's output alone.
  const double routed_inner =
      sw.recomputed.moe_act ? (spec.gated_mlp ? 2.0 : 1.0) * routed * sw.w : mlp_inner_bytes(spec, sw, routed);
  const double mlp_input = spec.parallel_attn_mlp || sw.recomputed.layernorm ? 0.0 : h;
  const double mask = spec.dropout > 0 ? h : 0.0;
  const double moe = mlp_input * sw.gemm_input + routed_inner + mlp_inner_bytes(spec, sw, shared) + mask +
                     4.0 * static_cast<double>(m.experts) +
                     c * k * h * (sw.gemm_input + (sw.fused_swiglu ? 0.0 : sw.w));
  const double share = moe_layer_share(spec);
  return (1.0 - share) * dense_mlp + share * moe;
}

/// The MLP's inner tensors per token at width f: a plain MLP keeps the activation's input
/// (f·w) and output, the down projection's input (f·g); a gated MLP keeps 4 f-wide tensors
/// (gate and up outputs for SiLU and the product, SiLU's output, the product for the down
/// projection), 3 under a fused SwiGLU kernel, which keeps its input and recomputes the
/// activation in backward (Megatron-Core's SwiGLUFunction: save_for_backward(input),
/// fused_bias_swiglu.py; Liger's alike): 2f + the product f.
double mlp_inner_bytes(const TransformerSpec& spec, const StoredWidths& sw, double f) {
  const double widths = !spec.gated_mlp ? 2.0 : sw.fused_swiglu ? 3.0 : 4.0;
  return (widths - 1.0) * f * sw.w + f * sw.gemm_input;
}

/// Attention's bytes per token and layer, the scores aside: the normed input h·g (none when
/// the norm is recomputed: layernorm), Q and the context of width q = heads·head_dim, K and V
/// of width d = kv_heads·head_dim, 2q·w + 2d·w, the fp8 copy of the context q·g where g < w,
/// the dropout mask. Multi-head latent attention (DeepSeek-V2/V3, arXiv 2405.04434 Sec. 2.1)
/// keeps its true widths: each latent's norm input and normed copy r·(w + g) for the query's
/// r_q and the key-value's r_kv, the shared rotary key d_r·w, Q and K of H·(d_n + d_r), V and
/// the context of H·d_v; recomputing the up-projections (mla_up_proj, DeepSeek-V3 arXiv
/// 2412.19437 Sec. 3.2.3) drops Q (when the query has a latent), K and V.
double attention_bytes_per_token(const TransformerSpec& spec, const StoredWidths& sw) {
  const double w = sw.w, g = sw.gemm_input;
  const RecomputeModules& r = sw.recomputed;
  const double h = static_cast<double>(spec.hidden);
  const double input = r.layernorm ? 0.0 : h * g;
  const double mask = spec.dropout > 0 ? h : 0.0;
  if (!spec.mla) {
    const double q = static_cast<double>(spec.heads * spec.head_dim());
    const double d = static_cast<double>(spec.kv_dim());
    return input + (2.0 * q + 2.0 * d) * w + (g < w ? q * g : 0.0) + mask;
  }
  const MlaSpec& m = *spec.mla;
  const double heads = static_cast<double>(spec.heads);
  const double qk = heads * static_cast<double>(m.qk_nope_dim + m.qk_rope_dim);
  const double v = heads * static_cast<double>(m.v_head_dim);
  const double latents =
      static_cast<double>(m.q_lora_rank + m.kv_lora_rank) * (w + g) + static_cast<double>(m.qk_rope_dim) * w;
  const double q_kept = r.mla_up_proj && m.q_lora_rank > 0 ? 0.0 : qk;
  const double kv_kept = r.mla_up_proj ? 0.0 : qk + v;
  return input + latents + (q_kept + kv_kept + v) * w + (g < w ? v * g : 0.0) + mask;
}

/// torchtitan's op-level selective checkpointing (torchtitan/parallelisms/parallelize_llama.py
/// @ 9dec370: _save_list and a policy that recomputes every second mm): per token a layer keeps
/// its input h (the checkpoint's), its odd-numbered matmuls' outputs in forward order (wq q,
/// wk d, wv d, wo h, then w1 f, w3 f, w2 h gated, w1 f, w2 h plain: q + d + f + h gated,
/// q + d + h plain) and attention's output q, at w bytes each; its log-sum-exp is
/// score_bytes'. Dense sequential layers without MLA (scenario checks).
double op_sac_bytes_per_token(const TransformerSpec& spec, const StoredWidths& sw) {
  const double h = static_cast<double>(spec.hidden), f = static_cast<double>(spec.ffn_hidden);
  const double q = static_cast<double>(spec.heads * spec.head_dim()), d = static_cast<double>(spec.kv_dim());
  const double kept = spec.gated_mlp ? q + d + f + h : q + d + h;
  return (h + kept + q) * sw.w;
}

/// Per token and layer, excluding the attention scores. The GEMM inputs kept for the weight
/// gradients (the normed inputs of QKV and of the MLP, the down projection's input, the
/// dispatched tokens) are g bytes each: w, or 1 (fp8) or 0.5625 (NVFP4) under Transformer
/// Engine's low-precision recipes, which save the cast of a Linear's input for its backward
/// (transformer_engine/pytorch/module/linear.py, layernorm_linear.py, layernorm_mlp.py); the
/// output projection's cast input is then a copy beside the w-byte context flash attention
/// keeps, q bytes more. Selective recompute's modules drop what they recompute: layernorm the
/// normed inputs of attention and the MLP, mlp everything inside the dense MLP (its input
/// kept), mla_up_proj and moe_act above.
double layer_bytes_per_token(const TransformerSpec& spec, const StoredWidths& sw) {
  const RecomputeModules& r = sw.recomputed;
  if (r.op_sac) return op_sac_bytes_per_token(spec, sw);
  const double h = static_cast<double>(spec.hidden);
  const double f = static_cast<double>(spec.ffn_hidden);
  const double mask = spec.dropout > 0 ? h : 0.0;  // one 1-byte dropout mask per token and branch
  const double attention = attention_bytes_per_token(spec, sw);
  // The MLP's normed input goes with the norm's recompute, unless the MLP's own recompute keeps it.
  const double mlp_input = spec.parallel_attn_mlp || (r.layernorm && !r.mlp) ? 0.0 : h;
  double mlp = mlp_input * sw.gemm_input + (r.mlp ? 0.0 : mlp_inner_bytes(spec, sw, f) + mask);
  if (spec.moe) mlp = moe_mlp_bytes_per_token(spec, sw, mlp);
  const double norms = (spec.parallel_attn_mlp ? 1.0 : 2.0) * h * sw.norm_input;
  return attention + mlp + norms;
}

/// Attention-score bytes of one layer. Materialised scores (Korthikanti Sec. 4.1): softmax
/// output a·s²·b·w, dropout mask a·s²·b, dropout output a·s²·b·w: with w = 2, 5·a·s²·b;
/// without dropout the softmax output alone, a·s²·b·w (it is also the score·V input).
/// Flash attention (Dao et al. 2022; FlashAttention-2, Dao 2023, Alg. 1) keeps only the
/// fp32 logsumexp per row and head: 4·a·s·b. Selective recompute of the core attention
/// (Korthikanti Sec. 5; the core_attn module) stores neither.
double score_bytes(const TransformerSpec& spec, double b, double s, bool core_recomputed, bool flash, double w) {
  if (core_recomputed) return 0.0;
  const double a = static_cast<double>(spec.heads);
  if (flash) return 4.0 * a * s * b;
  return (spec.dropout > 0 ? 2.0 * w + 1.0 : w) * a * s * s * b;
}

/// One layer's activation bytes at element width w (see activation_bytes_per_layer).
/// Full recompute (Korthikanti Sec. 4.2 / 5): only the layer input, s·b·h·w.
double layer_activation_bytes(const TransformerSpec& spec, double b, double s, Recompute r, bool flash,
                              const StoredWidths& sw, int tp = 1, bool sp = false, bool sp_keep_gathered = false) {
  const double t = tp;
  const double h = static_cast<double>(spec.hidden);
  if (r == Recompute::full) return s * b * h * sw.w / (sp ? t : 1.0);
  // Under TP without SP the h-wide tensors stay whole on every rank (Korthikanti Table 2:
  // 10sbh of 34sbh at w = 2): norm inputs 2hw, block inputs 2hg, dropout masks 2h.
  const double per_token = layer_bytes_per_token(spec, sw);
  const double masks = spec.dropout > 0 ? 2.0 * h : 0.0;
  const double block_inputs = sw.recomputed.layernorm ? 0.0 : 2.0 * h * sw.gemm_input;
  // Under SP the block inputs stay whole only where the GEMMs keep their gathered input.
  const double whole = sp ? (sp_keep_gathered ? std::min(per_token, block_inputs) : 0.0)
                          : std::min(per_token, 2.0 * h * sw.w + block_inputs + masks);
  return s * b * (whole + (per_token - whole) / t) + score_bytes(spec, b, s, sw.recomputed.core_attn, flash, sw.w) / t;
}

/// Activations outside the blocks (Korthikanti Sec. 4.1, end): embedding dropout mask
/// s·b·h (1 B, with dropout only), final-norm input s·b·h·w, output-projection input s·b·h·w.
double outer_activation_bytes(const TransformerSpec& spec, double b, double s, double w) {
  return s * b * static_cast<double>(spec.hidden) * ((spec.dropout > 0 ? 1.0 : 0.0) + 2.0 * w);
}

/// All activations of a stage: `stage_layers` (its layers x micro-batches in flight) x (per
/// layer) + outside-block terms, plus under full recompute one layer's full activations (the
/// layer being recomputed in backward).
double activations_bytes(const TransformerSpec& spec, const MemoryInputs& in, double stage_layers) {
  const double b = static_cast<double>(in.micro_batch);
  const double s = static_cast<double>(in.seq_len / in.cp);  // the tokens on this GPU
  const double w = working_bytes(in.precision);
  const StoredWidths sw{w,
                        in.gemm_input_bytes > 0 ? in.gemm_input_bytes : w,
                        in.moe_capacity_factor,
                        in.fused_swiglu,
                        in.autocast ? 4.0 : w,
                        in.recompute == Recompute::selective ? in.recompute_modules : RecomputeModules{false}};
  double bytes = stage_layers * layer_activation_bytes(spec, b, s, in.recompute, in.flash_attention, sw, in.tp, in.sp,
                                                       in.sp_keep_gathered);
  if (in.recompute == Recompute::full)  // nothing selective recomputed: sw.recomputed is empty
    bytes +=
        layer_activation_bytes(spec, b, s, Recompute::none, in.flash_attention, sw, in.tp, in.sp, in.sp_keep_gathered);
  return bytes + outer_activation_bytes(spec, b, s, w);
}

/// Logits: b·s·V·(w + 4): the LM head's w-byte output plus the fp32 copy the cross-entropy
/// upcasts to and saves (softmax / log-softmax output) for backward; both are alive at the
/// cast. Korthikanti Sec. 4.1 counts the fp32 cross-entropy as 4·s·b·V; we add the w-byte
/// head output (HF causal-LM heads compute `logits.float()` from it). A fused cross-entropy
/// kernel reads the w-byte logits and saves one fp32 log-sum-exp per row (flash-attn's
/// xentropy, Liger's): b·s·(V·w + 4). A loss that subtracts the row maximum out of place
/// holds a second fp32 copy at its peak, b·s·V·(w + 8) (nanotron's sharded_cross_entropy,
/// src/nanotron/parallel/tensor_parallel/functional.py @ a27e8fe8); PyTorch's cross_entropy on
/// upcast logits three at its backward's peak, b·s·V·(w + 12).
double logits_bytes(const TransformerSpec& spec, const MemoryInputs& in) {
  const double w = working_bytes(in.precision);
  const double rows = static_cast<double>(in.micro_batch) * static_cast<double>(in.seq_len / in.cp);
  const double v = static_cast<double>(spec.vocab) / in.tp;  // vocab-parallel under TP
  return in.fused_loss ? rows * (v * w + 4.0) : rows * v * (w + 4.0 * in.loss_fp32_copies);
}

/// Communication buffers not already in another term:
///  * DDP: with gradient_as_bucket_view = false (PyTorch's default) the flat buckets are a
///    second copy of all trainable gradients, w·T (4·T for autocast's fp32 parameters: a
///    bucket has its parameters' dtype); with true, 0 (PyTorch DDP docs: the option saves
///    "the total gradients size").
///  * FSDP NO_SHARD: 0 (the flat gradient is all-reduced in place).
///  * ZeRO-1/2: 2·bucket_bytes, the reduce bucket and the all-gather bucket (DeepSpeed
///    reduce_bucket_size, allgather_bucket_size; the caller passes bytes).
///  * ZeRO-3: bucket_bytes, the reduce bucket; parameter all-gathers are gathered_params.
///  * FSDP SHARD_GRAD_OP/FULL_SHARD/HYBRID_SHARD: one block's unsharded gradient before its
///    reduce-scatter, w·per_layer_trainable (FSDP reduce-scatters per wrapped unit).
double comm_buffer_bytes(const ParamCounts& c, Strategy s, const MemoryInputs& in) {
  const double w = working_bytes(in.precision);
  switch (s) {
    case Strategy::ddp:
      return in.gradient_as_bucket_view ? 0.0 : (in.autocast ? 4.0 : w) * c.trainable;
    case Strategy::fsdp_no_shard:
      return 0.0;
    case Strategy::zero1:
    case Strategy::zero2:
      return 2.0 * in.bucket_bytes;
    case Strategy::zero3:
      return in.bucket_bytes;
    case Strategy::fsdp_shard_grad_op:
    case Strategy::fsdp_full_shard:
    case Strategy::fsdp_hybrid_shard:
      return w * c.per_layer_trainable;
  }
  return 0.0;
}

void require(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(std::string("memory_per_gpu: ") + what);
}

std::string shard_note(bool sharded, std::int64_t n) {
  return sharded && n > 1 ? fmt::format("sharded 1/{}", n) : std::string("replicated");
}

/// Host memory under offload, per host: every GPU's partition of the fp32 master, Adam's
/// moments (optimizer_bytes_per_param) and the fp32 gradient (4 B), and with parameter
/// offload its 16-bit shard (w B) (model/offload.hpp host_bytes_per_param).
void host_memory(const ParamCounts& c, std::int64_t n, const MemoryInputs& in, MemoryBreakdown& out) {
  const double gpus = in.gpus_per_host, dn = static_cast<double>(n), w = working_bytes(in.precision);
  out.host_terms.push_back({"optimizer",
                            gpus * optimizer_bytes_per_param(in.optimizer, in.precision) * c.trainable / dn,
                            fmt::format("fp32 master and moments of {} GPUs' partitions", in.gpus_per_host)});
  out.host_terms.push_back({"gradients", gpus * 4.0 * c.trainable / dn, "fp32 gradient partitions"});
  if (in.offload == OffloadKind::parameters)
    out.host_terms.push_back({"weights", gpus * w * c.stored / dn, "16-bit parameter shards"});
  for (const MemoryTerm& t : out.host_terms) out.host_total_bytes += t.bytes;
  out.host_capacity_bytes = in.host_capacity_bytes;
  out.host_verdict = memory_verdict(out.host_total_bytes, in.host_capacity_bytes);
}

}  // namespace

std::string out_of_memory(const MemoryBreakdown& m) {
  const bool gpu = m.verdict == MemoryVerdict::oom, host = m.host_verdict == MemoryVerdict::oom;
  return gpu && host ? "GPU and host" : gpu ? "GPU" : host ? "host" : "";
}

MemoryVerdict overall_verdict(const MemoryBreakdown& m) { return std::max(m.verdict, m.host_verdict); }

bool fits(const MemoryBreakdown& m) { return overall_verdict(m) != MemoryVerdict::oom; }

std::string_view name(OptimizerKind k) { return kOptimizerNames[static_cast<int>(k)]; }

OptimizerKind parse_optimizer(std::string_view text) {
  for (std::size_t i = 0; i < kOptimizerNames.size(); ++i)
    if (kOptimizerNames[i] == text) return static_cast<OptimizerKind>(i);
  std::string msg = "unknown optimizer \"" + std::string(text) + "\"; expected one of ";
  for (std::size_t i = 0; i < kOptimizerNames.size(); ++i)
    msg += (i ? ", \"" : "\"") + std::string(kOptimizerNames[i]) + "\"";
  throw std::invalid_argument(msg);
}

std::vector<std::string> optimizer_names() { return {kOptimizerNames.begin(), kOptimizerNames.end()}; }

std::string_view name(MemoryVerdict v) { return kVerdictNames[static_cast<int>(v)]; }

std::int64_t largest_module_params(const TransformerSpec& spec) {
  const std::int64_t h = spec.hidden, v = spec.vocab, f = spec.ffn_hidden, d = spec.kv_dim();
  const std::int64_t q = checked_product(spec.heads, spec.head_dim(), "parameters of one module");
  const std::int64_t bias = spec.linear_bias ? 1 : 0;
  // Products of model dimensions, checked: a wrapped one would pass for a small module.
  auto mul = [](std::int64_t a, std::int64_t b) { return checked_product(a, b, "parameters of one module"); };
  auto add = [](std::int64_t a, std::int64_t b) {
    std::int64_t out = 0;
    if (__builtin_add_overflow(a, b, &out))
      throw std::invalid_argument("parameters of one module overflow a 64-bit integer");
    return out;
  };
  const std::array<std::int64_t, 10> modules{
      mul(v, h),  // token embedding
      spec.positional == Positional::learned ? mul(spec.max_positions, h) : 0,
      mul(spec.type_vocab, h),               // BERT token types
      spec.tied_embeddings ? 0 : mul(v, h),  // untied LM head
      add(mul(q, h), bias * q),              // q (and o)
      add(mul(d, h), bias * d),              // k, v
      add(mul(f, h), bias * f),              // up (gate)
      add(mul(h, f), bias * h),              // down
      spec.pooler ? add(mul(h, h), h) : 0,   // pooler
      0,
  };
  return *std::max_element(modules.begin(), modules.end());
}

ParamCounts param_counts(const TransformerSpec& spec, const LoraSpec* lora) {
  if (spec.layers < 1) throw std::invalid_argument("model \"" + spec.name + "\" needs layers >= 1");
  const ParameterBreakdown bd = parameter_breakdown(spec);
  const double layers = static_cast<double>(spec.layers);
  ParamCounts c;
  c.stored = static_cast<double>(bd.total());
  c.per_layer = static_cast<double>(bd.per_layer);
  c.largest_module = static_cast<double>(largest_module_params(spec));
  if (lora != nullptr) {
    const double adapters = static_cast<double>(lora_parameter_count(spec, *lora));
    c.stored += adapters;
    c.per_layer += adapters / layers;
    c.trainable = adapters;
    c.per_layer_trainable = adapters / layers;
  } else {
    c.trainable = c.stored;
    c.per_layer_trainable = c.per_layer;
  }
  return c;
}

std::int64_t shard_degree(Strategy strategy, std::int64_t gpus, std::int64_t gpus_per_node) {
  if (gpus < 1 || gpus_per_node < 1) throw std::invalid_argument("shard degree needs gpus >= 1 and gpus_per_node >= 1");
  switch (strategy) {
    case Strategy::ddp:
    case Strategy::fsdp_no_shard:
      return 1;
    case Strategy::fsdp_hybrid_shard:
      return std::min(gpus, gpus_per_node);
    default:
      return gpus;
  }
}

ModelStateBytes model_state_bytes(const ParamCounts& c, const MemoryInputs& in) {
  const std::int64_t n = shard_degree(in.strategy, in.gpus, in.gpus_per_node);
  const Strategy s = effective_strategy(in.strategy, n);
  ModelStateBytes m;
  m.weights = weights_bytes(c, s, in.precision, n);
  m.gradients = gradients_bytes(c, s, in, n);
  m.optimizer = optimizer_bytes(c, s, in, n);
  m.gathered_params = gathered_params_bytes(c, s, in, n);
  if (in.autocast) {  // the fp32 master is the parameter itself, beside autocast's 16-bit casts
    require(s == Strategy::ddp && !in.lora && !in.model->moe && in.tp == 1 && in.pp == 1 && in.fp32_gradients &&
                is_mixed(in.precision) && in.precision != Precision::fp8_mixed,
            "autocast is modelled for DDP full training of a dense model in 16 bits, with fp32 gradients");
    m.weights = 4.0 * c.stored + working_bytes(in.precision) * autocast_casts(*in.model).total;
    m.optimizer -= 4.0 * c.trainable;
  }
  return m;
}

double allocator_bytes(const MemoryBreakdown& m) {
  double bytes = m.total_bytes;
  for (const MemoryTerm& t : m.terms)
    if (t.name == "cuda_context") bytes -= t.bytes;
  return bytes;
}

double allocator_bytes(const MemoryBreakdown& m, int stage) {
  if (m.stage_total_bytes.empty()) return allocator_bytes(m);
  const double context = m.total_bytes - allocator_bytes(m);
  return m.stage_total_bytes.at(static_cast<std::size_t>(stage)) - context;
}

MemoryVerdict memory_verdict(double total_bytes, double capacity_bytes) {
  if (!(capacity_bytes > 0)) throw std::invalid_argument("memory capacity must be > 0 bytes");
  if (total_bytes > capacity_bytes) return MemoryVerdict::oom;
  if (total_bytes > kTightFraction * capacity_bytes) return MemoryVerdict::tight;
  return MemoryVerdict::fits;
}

double activation_bytes_per_layer(const TransformerSpec& spec, std::int64_t micro_batch, std::int64_t seq_len,
                                  Recompute recompute, bool flash_attention) {
  StoredWidths sw;
  if (recompute == Recompute::selective) sw.recomputed = RecomputeModules{};
  return layer_activation_bytes(spec, static_cast<double>(micro_batch), static_cast<double>(seq_len), recompute,
                                flash_attention, sw);
}

namespace {

/// Model states of a MoE model: the dense part as any model's over `gpus`; the stage's routed
/// experts (`layer_share` of the layers'), 1/ep of them whole on each GPU (expert TP 1: `c`
/// holds them split 1/t like every matrix, which they are not), sharded by the strategy over
/// the t·gpus/ep ranks of the expert-data-parallel group (MemoryInputs::ep; parallel folding
/// under TP). Gathered parameters (ZeRO-3/FSDP) count a layer's dense part and its local
/// experts.
ModelStateBytes moe_model_state_bytes(const TransformerSpec& spec, const ParamCounts& c, const MemoryInputs& in,
                                      double layer_share) {
  require(in.ep >= 1 && (in.gpus * in.tp) % in.ep == 0, "ep must be >= 1 and divide the TP x DP x CP ranks");
  require(in.lora == nullptr, "MoE memory under LoRA is not modelled");
  const double t = in.tp;
  const double routed = routed_expert_parameters(spec) * layer_share;
  const double routed_per_layer = routed_expert_parameters(spec) / static_cast<double>(spec.layers);
  ParamCounts dense = c;
  dense.stored -= routed / t;
  dense.trainable -= routed / t;
  dense.per_layer += routed_per_layer * (1.0 / in.ep - 1.0 / t);
  dense.per_layer_trainable = dense.per_layer;
  ParamCounts experts;
  experts.stored = experts.trainable = routed / in.ep;
  MemoryInputs group = in;
  group.gpus = in.gpus * in.tp / in.ep;
  const ModelStateBytes d = model_state_bytes(dense, in);
  const ModelStateBytes e = model_state_bytes(experts, group);
  ModelStateBytes m;
  m.weights = d.weights + e.weights;
  m.gradients = d.gradients + e.gradients;
  m.optimizer = d.optimizer + e.optimizer;
  m.gathered_params = d.gathered_params;
  return m;
}

/// What one GPU of a pipeline stage holds: its layers, its share of the layers, the micro-
/// batches in flight, and whether it is the first (embedding) or last (final norm, LM head,
/// logits) stage. Without a pipeline: the whole model, one stage both first and last.
struct StageShare {
  int index = 0;
  double layers = 1;
  double in_flight = 1;
  bool first = true, last = true;
  bool even = false;  ///< 1/pp of every parameter and the logits (no stage list given)
};

/// The parameters of stage `st` (tp-split already applied to `c`): its layers, the embedding
/// and position table on the first stage, the final norm and LM head on the last (the word
/// embeddings again when tied, as Megatron-LM keeps them there for the output layer).
void stage_params(const TransformerSpec& spec, const MemoryInputs& in, const StageShare& st, ParamCounts& c) {
  if (in.pp == 1) return;
  if (st.even) {
    c.stored /= in.pp;
    c.trainable /= in.pp;
    return;
  }
  const ParameterBreakdown bd = parameter_breakdown(spec);
  const double t = in.tp;
  const double layers_total = static_cast<double>(bd.per_layer) * static_cast<double>(spec.layers);
  const double input = static_cast<double>(bd.embedding + bd.positional + bd.other);
  const double output = static_cast<double>(bd.total()) - layers_total - input +
                        (bd.lm_head == 0 ? static_cast<double>(bd.embedding) : 0.0);
  const double stored =
      (static_cast<double>(bd.per_layer) * st.layers + (st.first ? input : 0.0) + (st.last ? output : 0.0)) / t;
  const double adapters = c.stored - static_cast<double>(bd.total()) / t;  // LoRA (no pipeline: 0)
  c.stored = stored + adapters * st.layers / static_cast<double>(spec.layers);
  c.trainable = in.lora ? c.trainable * st.layers / static_cast<double>(spec.layers) : c.stored;
}

MemoryBreakdown stage_memory(const MemoryInputs& in, const StageShare& stage, bool with_notes);

}  // namespace

MemoryBreakdown memory_per_gpu(const MemoryInputs& in) {
  require(in.model != nullptr, "no model");
  require(in.pp >= 1 && in.in_flight >= 1, "pp and in_flight must be >= 1");
  const TransformerSpec& spec = *in.model;
  if (in.pp == 1) return stage_memory(in, StageShare{0, static_cast<double>(spec.layers), 1.0, true, true}, true);
  require(in.stage_layers.empty() || static_cast<int>(in.stage_layers.size()) == in.pp,
          "stage_layers must list every stage");
  require(in.stage_in_flight.size() == in.stage_layers.size(), "stage_in_flight must match stage_layers");
  if (in.stage_layers.empty()) {  // the even split, stage 0's micro-batches in flight
    const double layers = std::ceil(static_cast<double>(spec.layers) / in.pp);
    return stage_memory(in, StageShare{0, layers, in.in_flight, true, true, true}, true);
  }
  // A stage's bytes are linear in its layers L, its layer-micro-batches L·F and whether it is
  // the first or the last: total = base + L·per_layer + L·F·per_activation + first + last.
  // Five probes give the coefficients, whatever the stages; the fullest is costed in full.
  const auto probe = [&](double layers, double in_flight, bool first, bool last) {
    return stage_memory(in, StageShare{0, layers, in_flight, first, last, false}, false).total_bytes;
  };
  const double base = probe(0, 1, false, false), one = probe(1, 1, false, false);
  const double per_activation = probe(1, 2, false, false) - one;
  const double per_layer = one - base - per_activation;
  const double first = probe(0, 1, true, false) - base, last = probe(0, 1, false, true) - base;
  StageShare worst;
  double worst_bytes = -1;
  std::vector<double> totals;
  for (int i = 0; i < in.pp; ++i) {
    const auto k = static_cast<std::size_t>(i);
    require(in.stage_layers[k] >= 0 && in.stage_in_flight[k] >= 1, "a stage's layers >= 0 and in flight >= 1");
    const StageShare share{i,    static_cast<double>(in.stage_layers[k]), in.stage_in_flight[k], i == 0, i == in.pp - 1,
                           false};
    const double bytes = base + share.layers * per_layer + share.layers * share.in_flight * per_activation +
                         (share.first ? first : 0.0) + (share.last ? last : 0.0);
    totals.push_back(bytes);
    if (bytes > worst_bytes) worst = share, worst_bytes = bytes;
  }
  MemoryBreakdown out = stage_memory(in, worst, true);
  out.stage_total_bytes = std::move(totals);
  return out;
}

namespace {

/// Gradients created by the backward (MemoryInputs::gradients_created_by_backward): the
/// gradient term becomes what they exceed the activations, the logits and autocast's 16-bit
/// casts of the weights (`casts_bytes`), all freed by the backward's end, by.
void gradients_at_peak(MemoryBreakdown& out, double casts_bytes, bool with_notes) {
  const auto find = [&](const char* name) -> MemoryTerm& {
    for (MemoryTerm& t : out.terms)
      if (t.name == name) return t;
    throw std::logic_error(std::string("memory_per_gpu: no term ") + name);
  };
  MemoryTerm& gradients = find("gradients");
  const double at_loss = find("activations").bytes + find("logits").bytes + casts_bytes;
  if (with_notes)
    gradients.note +=
        fmt::format("; created by the backward: {} at the peak",
                    gradients.bytes > at_loss ? "what they exceed the freed activations and logits by" : "none");
  gradients.bytes = std::max(0.0, gradients.bytes - at_loss);
}

/// The inputs' own ranges (the layout's are checked where they are used).
void require_inputs(const MemoryInputs& in) {
  require(in.model != nullptr, "no model");
  require(in.micro_batch >= 1, "micro_batch must be >= 1");
  require(in.seq_len >= 1, "seq_len must be >= 1");
  require(in.gpus >= 1, "gpus must be >= 1");
  require(in.gpus_per_node >= 1, "gpus_per_node must be >= 1");
  require(in.prefetch_layers >= 0, "prefetch_layers must be >= 0");
  require(in.bucket_bytes >= 0, "bucket_bytes must be >= 0");
  require(in.cuda_context_bytes >= 0, "cuda_context_bytes must be >= 0");
  require(in.allocator_fragmentation >= 0, "allocator_fragmentation must be >= 0");
  require(in.capacity_bytes > 0, "capacity_bytes must be > 0");
}

MemoryBreakdown stage_memory(const MemoryInputs& in, const StageShare& stage, bool with_notes) {
  require_inputs(in);
  const TransformerSpec& spec = *in.model;

  require(in.tp >= 1 && (!in.sp || in.tp >= 2), "tp must be >= 1, and >= 2 with sequence parallelism");
  require(!in.sp_keep_gathered || in.sp, "sp_keep_gathered needs sequence parallelism");
  ParamCounts c = param_counts(spec, in.lora);
  require(in.pp >= 1 && in.in_flight >= 1, "pp and in_flight must be >= 1");
  if (in.tp > 1) {  // Megatron splits every weight matrix and the vocabulary t ways
    for (double* v : {&c.stored, &c.per_layer, &c.largest_module, &c.trainable, &c.per_layer_trainable}) *v /= in.tp;
  }
  stage_params(spec, in, stage, c);  // a pipeline stage holds its layers and, at the ends, the rest
  const double layer_share = stage.even ? 1.0 / in.pp : stage.layers / static_cast<double>(spec.layers);
  require(in.cp >= 1 && in.seq_len % in.cp == 0, "cp must be >= 1 and divide seq_len");
  const std::int64_t n = shard_degree(in.strategy, in.gpus, in.gpus_per_node);
  const Strategy s = effective_strategy(in.strategy, n);
  ModelStateBytes m = model_state_bytes(c, in);
  if (spec.moe) m = moe_model_state_bytes(spec, c, in, layer_share);
  const bool offload = in.offload != OffloadKind::none;
  require(!offload || (in.gpus_per_host >= 1 && in.host_capacity_bytes > 0),
          "offload needs gpus_per_host >= 1 and a host capacity > 0");
  if (offload) {  // the optimizer states (and fp32 gradient partition) live on the host
    m.optimizer = 0;
    if (deepspeed_accounting(in)) m.gradients -= 4.0 * c.trainable / static_cast<double>(n);
    if (in.offload == OffloadKind::parameters) m.weights = 0;
  }
  const int w = working_bytes(in.precision);
  const bool ds = deepspeed_accounting(in);

  MemoryBreakdown out;
  out.capacity_bytes = in.capacity_bytes;
  // The notes are formatted only for the breakdown reported (the stages of a pipeline are
  // compared on their bytes first).
  auto add = [&](const char* term, double bytes, const auto& note) {
    assert(bytes >= 0);
    if constexpr (std::is_invocable_v<decltype(note)>)
      out.terms.push_back({term, bytes, with_notes ? std::string(note()) : std::string()});
    else
      out.terms.push_back({term, bytes, std::string(note)});
  };
  // A MoE GPU holds the dense part and 1/ep of the stage's routed experts, whole.
  const double held =
      spec.moe ? c.stored + routed_expert_parameters(spec) * layer_share * (1.0 / in.ep - 1.0 / in.tp) : c.stored;
  const std::int64_t expert_dp = in.gpus * in.tp / in.ep;  // moe_model_state_bytes' group
  add("weights", m.weights, [&] {
    if (in.autocast)
      return fmt::format("fp32 parameters and autocast's {}-bit casts of {:.4g} params, replicated", 8 * w, held);
    return fmt::format(
        "{}-bit working copy of {:.4g} params{}{}, {}{}", 8 * w, held,
        spec.moe ? fmt::format(" (routed experts 1/{}: expert parallelism; {})", in.ep,
                               expert_dp == 1 ? std::string("one expert-DP rank")
                                              : fmt::format("their states sharded over {} expert-DP ranks", expert_dp))
                 : "",
        in.tp > 1 ? fmt::format(" (1/{} of each {}matrix: tensor parallelism)", in.tp, spec.moe ? "other " : "") : "",
        shard_note(shards_parameters(s), n),
        s == Strategy::fsdp_shard_grad_op ? " (SHARD_GRAD_OP keeps them gathered)" : "");
  });
  add("gradients", m.gradients, [&] {
    return fmt::format("{} for {:.4g} trainable params, {}",
                       ds                  ? std::string("16-bit + fp32 partition (DeepSpeed)")
                       : in.fp32_gradients ? std::string("32-bit (fp32 main gradients)")
                                           : fmt::format("{}-bit", 8 * w),
                       spec.moe ? held : c.trainable, shard_note(shards_gradients(s), n));
  });
  add("optimizer", m.optimizer, [&] {
    return offload ? std::string("on the host (CPU offload)")
                   : fmt::format("{} B/param ({}{}), {}",
                                 optimizer_bytes_per_param(in.optimizer, in.precision) - (in.autocast ? 4.0 : 0.0),
                                 name(in.optimizer), in.autocast ? ": the fp32 parameters are the master" : "",
                                 shard_note(shards_optimizer(s), n));
  });
  add("gathered_params", m.gathered_params, [&] {
    return m.gathered_params == 0       ? std::string("none")
           : ds && s == Strategy::zero3 ? std::string("4 x largest module (DeepSpeed estimator)")
                                        : fmt::format("{} gathered block(s)", in.prefetch_layers + 1);
  });
  out.stage = stage.index;
  out.activation_layers = stage.layers * stage.in_flight;
  add("activations", activations_bytes(spec, in, out.activation_layers), [&] {
    const std::string held = in.pp == 1 ? fmt::format("{} layers", spec.layers)
                                        : fmt::format("stage {}: {:g} layers x {:g} micro-batches in flight",
                                                      stage.index + 1, stage.layers, stage.in_flight);
    return fmt::format("Korthikanti per layer, {}, recompute {}, flash {}{}{}", held,
                       recompute_text(in.recompute, in.recompute_modules), in.flash_attention ? "on" : "off",
                       in.gemm_input_bytes > 0 ? fmt::format(", GEMM inputs at {:g} B", in.gemm_input_bytes) : "",
                       spec.moe ? fmt::format(", MoE capacity factor {:g}", in.moe_capacity_factor) : "");
  });
  add("logits", stage.last ? logits_bytes(spec, in) : 0.0, [&] {
    return !stage.last                ? std::string("on the last stage")
           : in.fused_loss            ? fmt::format("b*s*V*{} (fused cross-entropy)", w)
           : in.loss_fp32_copies == 1 ? fmt::format("b*s*V*({} + 4 fp32 loss)", w)
                                      : fmt::format("b*s*V*({} + {} x 4 fp32 loss copies)", w, in.loss_fp32_copies);
  });
  if (in.gradients_created_by_backward)
    gradients_at_peak(out, in.autocast ? w * autocast_casts(spec).total : 0.0, with_notes);
  ParamCounts local = c;  // what this GPU's gradient buffers hold: 1/ep of a MoE model's experts
  local.trainable = spec.moe ? held : c.trainable;
  add("comm_buffers", comm_buffer_bytes(local, s, in), [&] { return fmt::format("{} buffers", name(s)); });
  double allocated = 0;
  for (const MemoryTerm& t : out.terms) allocated += t.bytes;
  add("cuda_context", in.cuda_context_bytes, "caller-supplied");
  add("fragmentation", in.allocator_fragmentation * allocated,
      [&] { return fmt::format("{:.0f}% of allocated bytes", 100.0 * in.allocator_fragmentation); });

  for (const MemoryTerm& t : out.terms) out.total_bytes += t.bytes;
  out.verdict = memory_verdict(out.total_bytes, in.capacity_bytes);
  if (offload) host_memory(c, n, in, out);

  std::vector<const MemoryTerm*> order;
  for (const MemoryTerm& t : out.terms)
    if (t.bytes > 0) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(),
                   [](const MemoryTerm* a, const MemoryTerm* b) { return a->bytes > b->bytes; });
  for (std::size_t i = 0; i < order.size() && i < 3; ++i) out.largest.push_back(order[i]->name);
  return out;
}

}  // namespace

}  // namespace stepcast
