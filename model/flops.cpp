/// \file
/// Training FLOPs: headline 6PD, the per-GEMM count, recompute, LoRA and MFU model FLOPs.
/// A FLOP is one multiply or one add; a multiply-add is 2 FLOPs.
#include "model/flops.hpp"

#include "model/moe.hpp"

#include <cassert>
#include <set>
#include <stdexcept>

namespace stepcast {

namespace {

/// FLOPs per multiply-add (one multiply + one add).
constexpr double kFlopsPerMac = 2.0;

/// Width of the query (and attention output) projection: heads·head_dim.
std::int64_t q_dim(const TransformerSpec& spec) { return spec.head_dim() * spec.heads; }

/// Attention-core width per head summed over Q·K^T and P·V: 2·head_dim, or for MLA
/// (qk_nope + qk_rope) + v_head (DeepSeek-V3: 192 + 128).
double core_width_per_head(const TransformerSpec& spec) {
  if (spec.mla) return static_cast<double>(spec.mla->qk_nope_dim + spec.mla->qk_rope_dim + spec.mla->v_head_dim);
  return 2.0 * static_cast<double>(spec.head_dim());
}

/// layer_gemm_weights of a MoE or MLA model, the mean over its layers: attention's GEMM
/// weights (MLA: its projections, attention_parameters_per_layer less the two bottleneck
/// norms; otherwise h·q + 2·h·kv + q·h) plus the MLP weights one token multiplies: the
/// dense MLP in dense layers, in MoE layers top_k routed experts + the shared experts + the
/// h x E router (moe_mlp_active_parameters).
double moe_mla_layer_gemm_weights(const TransformerSpec& spec) {
  const double h = static_cast<double>(spec.hidden);
  double attention = 0;
  if (spec.mla) {
    attention =
        static_cast<double>(attention_parameters_per_layer(spec) - spec.mla->q_lora_rank - spec.mla->kv_lora_rank);
  } else {
    const double q = static_cast<double>(q_dim(spec)), kv = static_cast<double>(spec.kv_dim());
    attention = h * q + 2 * h * kv + q * h;
  }
  const double dense_mlp = (spec.gated_mlp ? 3 : 2) * h * static_cast<double>(spec.ffn_hidden);
  if (!spec.moe) return attention + dense_mlp;
  const double layers = static_cast<double>(spec.layers);
  const double moe_layers = static_cast<double>(moe_layer_count(spec.layers, *spec.moe));
  const double moe_mlp = static_cast<double>(moe_mlp_active_parameters(spec, *spec.moe));
  return attention + ((layers - moe_layers) * dense_mlp + moe_layers * moe_mlp) / layers;
}

/// Weights of one layer that every token multiplies once in the forward pass:
/// h·q (Q) + 2·h·kv (K, V) + q·h (O) + (3 if gated else 2)·h·f (MLP). Biases and norms are
/// not GEMM work and are left out, as in Narayanan et al. 2021 and Megatron-LM.
double layer_gemm_weights(const TransformerSpec& spec) {
  if (spec.moe || spec.mla) return moe_mla_layer_gemm_weights(spec);
  const double h = static_cast<double>(spec.hidden);
  const double q = static_cast<double>(q_dim(spec));
  const double kv = static_cast<double>(spec.kv_dim());
  const double f = static_cast<double>(spec.ffn_hidden);
  return h * q + 2 * h * kv + q * h + (spec.gated_mlp ? 3 : 2) * h * f;
}

/// LM head (output projection) weights: V·h, executed whether or not it is tied.
double lm_head_weights(const TransformerSpec& spec) {
  return static_cast<double>(spec.vocab) * static_cast<double>(spec.hidden);
}

/// The mean over layers of the keys a query attends to, against a layer without a window:
/// (L − L_w + L_w·r) / L for L_w windowed layers of L, where r is window_pair_share(s, w) when
/// the masked half is skipped and min(w, s) / s when it is not (each query then counts w keys
/// where a full layer counts s). 1 without a sliding window.
double window_factor(const TransformerSpec& spec, std::int64_t seq_len, bool causal_halving) {
  if (!spec.sliding_window) return 1.0;
  const double s = static_cast<double>(seq_len);
  const double w = static_cast<double>(spec.sliding_window->tokens);
  const double r = causal_halving ? window_pair_share(s, w) : std::min(w, s) / s;
  const double windowed = windowed_layer_share(spec);
  return 1.0 - windowed + windowed * r;
}

/// Forward attention-core FLOPs per token per layer: Q·K^T (2·s·q) and softmax·V (2·s·q),
/// i.e. 4·s·q, halved when a causal kernel skips the masked half (Megatron-LM training.py
/// num_floating_point_operations, causal correction), times window_factor. Encoders attend
/// to everything.
double attention_core_forward_per_token(const TransformerSpec& spec, std::int64_t seq_len, bool causal_halving) {
  const bool halve = causal_halving && spec.kind == ModelKind::decoder;
  const double full = spec.mla ? kFlopsPerMac * static_cast<double>(seq_len) * static_cast<double>(spec.heads) *
                                     core_width_per_head(spec)
                               : 2 * kFlopsPerMac * static_cast<double>(seq_len) * static_cast<double>(q_dim(spec));
  return (halve ? full / 2 : full) * window_factor(spec, seq_len, halve);
}

/// (d_in, d_out) of a LoRA target projection; throws std::invalid_argument for a name that
/// is not a projection of this model.
std::pair<std::int64_t, std::int64_t> projection_shape(const TransformerSpec& spec, const std::string& target) {
  const std::int64_t h = spec.hidden, q = q_dim(spec), kv = spec.kv_dim(), f = spec.ffn_hidden;
  if (target == "q") return {h, q};
  if (target == "k" || target == "v") return {h, kv};
  if (target == "o") return {q, h};
  if (target == "up") return {h, f};
  if (target == "down") return {f, h};
  if (target == "gate") {
    if (!spec.gated_mlp)
      throw std::invalid_argument("LoRA target \"gate\": model \"" + spec.name + "\" has no gated MLP");
    return {h, f};
  }
  throw std::invalid_argument("unknown LoRA target \"" + target +
                              "\"; expected one of \"q\", \"k\", \"v\", \"o\", \"gate\", "
                              "\"up\", \"down\"");
}

}  // namespace

std::int64_t checked_product(std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out))
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(a) + " x " + std::to_string(b) +
                                " overflows a 64-bit integer");
  return out;
}

/// Trainable LoRA parameters over all layers (Hu et al. 2021, arXiv 2106.09685, Sec. 4.1):
/// L · Σ_targets r·(d_in + d_out), since A is r×d_in and B is d_out×r. For q and v of a
/// multi-head model this is L·2·r·(h + h). Throws std::invalid_argument on a rank < 1, an
/// unknown or repeated target, or "gate" on a model without a gated MLP.
std::int64_t lora_parameter_count(const TransformerSpec& spec, const LoraSpec& lora) {
  if (lora.rank < 1) throw std::invalid_argument("LoRA rank must be >= 1, got " + std::to_string(lora.rank));
  std::set<std::string> seen;
  std::int64_t per_layer = 0;
  for (const auto& target : lora.targets) {
    if (!seen.insert(target).second) throw std::invalid_argument("LoRA target \"" + target + "\" listed twice");
    auto [d_in, d_out] = projection_shape(spec, target);
    per_layer += checked_product(lora.rank, d_in + d_out, "LoRA parameters per target");
    if (per_layer < 0) throw std::invalid_argument("LoRA parameters per layer overflow a 64-bit integer");
  }
  return checked_product(spec.layers, per_layer, "LoRA parameters");
}

/// 6·P·D: 2·P·D forward + 4·P·D backward (Kaplan et al. 2020, arXiv 2001.08361, Sec. 2.1;
/// EleutherAI "Transformer Math 101").
double headline_training_flops(double params, double tokens) {
  if (!(params >= 0) || !(tokens >= 0))
    throw std::invalid_argument("headline FLOPs of " + std::to_string(params) + " parameters and " +
                                std::to_string(tokens) + " tokens");
  return 6.0 * params * tokens;
}

/// The refined count for `tokens` tokens at context s = seq_len (per token, L layers,
/// W = L·layer weights + V·h LM-head weights, A = L·attention_core_forward_per_token):
///   - forward  = 2·W + A
///   - backward = 2·forward (activation and weight gradients: 2 FLOPs each per weight per
///     token; the attention core needs gradients for both of its operands).
///   With MHA, ffn = 4h, no gating and no causal halving, forward + backward is Narayanan et
///   al. 2021 (arXiv 2104.04473) eq. 72·B·s·L·h²·(1 + s/6h + V/12Lh) with B·s = tokens; in
///   general it is Megatron-LM training.py num_floating_point_operations,
///   12·T·L·h²·[(1 + g/a + s/h)·q/h + (f/h)·(3/2 if SwiGLU) + V/(2Lh)].
///   - recompute, full: one extra forward of the transformer layers, LM head excluded
///     (Narayanan: 96·B·s·L·h²·(1 + s/6h + V/16Lh)); selective: the attention core
///     (Q·K^T, softmax, dropout, ·V) is recomputed, i.e. A (Korthikanti et al. 2022, arXiv
///     2205.05198, "Selective Activation Recomputation"; the recomputed work is the s² terms),
///     when core_attn is among the modules, plus recompute_gemm_flops_per_token.
///   - LoRA (frozen base, P_a adapter parameters): forward = 2·W + A + 2·P_a; backward =
///     2·W (activation gradients through the frozen weights, no weight gradients) + 2·A +
///     4·P_a (adapters: activation and weight gradients). The first layer's input gradient,
///     not needed when nothing before it trains, is still counted (an upper bound).
///   - model (MFU) = (6·N + 12·L·q·s) per token, q = heads·head_dim (h unless head_dim is given), N =
///   parameter_count(spec): llm-foundry's
///     collect_results.py, where n_params is the model's total parameter count. The measured
///     runs confirm it: MPT-70b at seq 2048 ran 1007 tokens/s/GPU at MFU 0.4125 of 989
///     TFLOP/s, i.e. 0.4125·989e12/1007 = 405.1e9 FLOPs/token; 6·64862437376 + 12·80·8192·2048
///     = 405.3e9 (ratio 0.9996), whereas non-embedding N gives 402.7e9 (ratio 1.006), and
///     MPT-125m at seq 65536 fits total N to 0.01% but non-embedding N only to 7%.
///     Under LoRA: (4·N + 6·P_a + 12·L·h·s) per token (no weight gradients for frozen N).
double recompute_gemm_flops_per_token(const TransformerSpec& spec, const RecomputeModules& modules) {
  if (!modules.op_sac && !modules.mla_up_proj && !modules.mlp) return 0.0;  // no GEMM recomputed
  const double dense = 1.0 - moe_layer_share(spec);
  double macs = 0;
  if (modules.op_sac) {  // the even-numbered matmuls: wk, wo and w3 (gated) or w2
    const double h = static_cast<double>(spec.hidden), f = static_cast<double>(spec.ffn_hidden);
    const double q = static_cast<double>(q_dim(spec)), d = static_cast<double>(spec.kv_dim());
    macs += h * d + q * h + h * f;
  }
  for (const GemmShape& g : layer_gemms(spec, 1)) {
    const double per_layer = static_cast<double>(g.count_per_layer) * static_cast<double>(g.n * g.k);
    if (modules.mla_up_proj && (g.name == "q_b" || g.name == "kv_b")) macs += per_layer;
    if (modules.mlp && (g.name == "mlp_up" || g.name == "mlp_down")) macs += dense * per_layer;
  }
  return kFlopsPerMac * static_cast<double>(spec.layers) * macs;
}

StepFlops training_flops(const TransformerSpec& spec, std::int64_t seq_len, double tokens,
                         const FlopsOptions& options) {
  if (seq_len < 1 || !(tokens >= 0))
    throw std::invalid_argument("training FLOPs need seq_len >= 1 and tokens >= 0, got " + std::to_string(seq_len) +
                                " and " + std::to_string(tokens));
  const double layers = static_cast<double>(spec.layers);
  const double layer_w = layers * layer_gemm_weights(spec);
  const double head_w = lm_head_weights(spec);
  const double attn = layers * attention_core_forward_per_token(spec, seq_len, options.causal_halving);

  const double gemm_forward = kFlopsPerMac * (layer_w + head_w);  // per token
  StepFlops out;
  double adapter_forward = 0;  // per token
  if (options.lora == nullptr) {
    out.forward = (gemm_forward + attn) * tokens;
    out.backward = 2 * out.forward;
  } else {
    const double adapters = static_cast<double>(lora_parameter_count(spec, *options.lora));
    adapter_forward = kFlopsPerMac * adapters;
    out.forward = (gemm_forward + attn + adapter_forward) * tokens;
    out.backward = (gemm_forward + 2 * attn + 2 * adapter_forward) * tokens;
  }
  switch (options.recompute) {
    case Recompute::none:
      out.recompute = 0;
      break;
    case Recompute::selective:
      out.recompute = ((options.recompute_modules.core_attn ? attn : 0.0) +
                       recompute_gemm_flops_per_token(spec, options.recompute_modules)) *
                      tokens;
      break;
    case Recompute::full:
      out.recompute = (kFlopsPerMac * layer_w + attn + adapter_forward) * tokens;
      break;
  }
  // N: the parameters a token uses (a MoE model's active ones; all of a dense model's).
  const double n = static_cast<double>(active_parameter_count(spec));
  // 12·L·h·s with the attention width q = heads·head_dim in place of h (the two are equal
  // unless head_dim is given, as for Gemma 2 and Qwen3); MLA 6·L·s·heads·(qk + v_head);
  // windowed layers count their window's keys in place of s (window_factor, no halving).
  const double mfu_attention =
      (spec.mla
           ? 6.0 * layers * static_cast<double>(spec.heads) * core_width_per_head(spec) * static_cast<double>(seq_len)
           : 12.0 * layers * static_cast<double>(q_dim(spec)) * static_cast<double>(seq_len)) *
      window_factor(spec, seq_len, false);
  if (options.lora == nullptr) {
    out.model = (6.0 * n + mfu_attention) * tokens;
  } else {
    // Frozen weights get no weight gradients, so "6·N" would credit work that LoRA never
    // asks for (and give MFU above 1). The model FLOPs of LoRA training are 4·N (forward
    // and activation gradients) + 6·P_a per token, with the same attention term.
    const double adapters = static_cast<double>(lora_parameter_count(spec, *options.lora));
    out.model = (4.0 * n + 6.0 * adapters + mfu_attention) * tokens;
  }
  // Recompute in the model convention: the attention core's forward is a third of the
  // 12·L·h·s term (forward 4·L·h·s, backward 8·L·h·s).
  const double model_attention_forward = mfu_attention / 3.0;
  switch (options.recompute) {
    case Recompute::none:
      out.model_recompute = 0;
      break;
    case Recompute::selective:
      out.model_recompute = ((options.recompute_modules.core_attn ? model_attention_forward : 0.0) +
                             recompute_gemm_flops_per_token(spec, options.recompute_modules)) *
                            tokens;
      break;
    case Recompute::full:
      out.model_recompute = (kFlopsPerMac * layer_w + model_attention_forward + adapter_forward) * tokens;
      break;
  }
  return out;
}

/// Forward GEMMs of one layer for `tokens` rows: fused QKV (h → q + 2·kv), attention output
/// (q → h), MLP up (h → f, twice when gated: gate and up), MLP down (f → h), and the LM
/// head (h → V) once per model.
std::vector<GemmShape> layer_gemms(const TransformerSpec& spec, std::int64_t tokens) {
  if (tokens < 1) throw std::invalid_argument("GEMM shapes need >= 1 token, got " + std::to_string(tokens));
  const std::int64_t h = spec.hidden, q = q_dim(spec), kv = spec.kv_dim(), f = spec.ffn_hidden;
  if (spec.mla) {  // MLA's projections (attention_parameters_per_layer), then the MLP
    const MlaSpec& m = *spec.mla;
    const std::int64_t heads = spec.heads;
    std::vector<GemmShape> out;
    if (m.q_lora_rank > 0) {
      out.push_back(GemmShape{"q_a", tokens, m.q_lora_rank, h, 1});
      out.push_back(GemmShape{"q_b", tokens, q, m.q_lora_rank, 1});
    } else {
      out.push_back(GemmShape{"q", tokens, q, h, 1});
    }
    out.push_back(GemmShape{"kv_a", tokens, m.kv_lora_rank + m.qk_rope_dim, h, 1});
    out.push_back(GemmShape{"kv_b", tokens, heads * (m.qk_nope_dim + m.v_head_dim), m.kv_lora_rank, 1});
    out.push_back(GemmShape{"attn_out", tokens, h, heads * m.v_head_dim, 1});
    out.push_back(GemmShape{"mlp_up", tokens, f, h, spec.gated_mlp ? 2 : 1});
    out.push_back(GemmShape{"mlp_down", tokens, h, f, 1});
    out.push_back(GemmShape{"lm_head", tokens, spec.vocab, h, 1});
    return out;
  }
  return {
      GemmShape{"qkv", tokens, q + 2 * kv, h, 1},
      GemmShape{"attn_out", tokens, h, q, 1},
      GemmShape{"mlp_up", tokens, f, h, spec.gated_mlp ? 2 : 1},
      GemmShape{"mlp_down", tokens, h, f, 1},
      GemmShape{"lm_head", tokens, spec.vocab, h, 1},
  };
}

std::vector<GemmShape> lora_adapter_gemms(const TransformerSpec& spec, const LoraSpec& lora, std::int64_t tokens) {
  if (tokens < 1) throw std::invalid_argument("GEMM shapes need >= 1 token, got " + std::to_string(tokens));
  lora_parameter_count(spec, lora);  // validates rank and targets
  std::vector<GemmShape> out;
  for (const auto& target : lora.targets) {
    auto [d_in, d_out] = projection_shape(spec, target);
    out.push_back(GemmShape{"lora_" + target + "_a", tokens, lora.rank, d_in, 1});
    out.push_back(GemmShape{"lora_" + target + "_b", tokens, d_out, lora.rank, 1});
  }
  return out;
}

}  // namespace stepcast
