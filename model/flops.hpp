/// \file
/// Training FLOPs of a transformer step: the 6·P·D headline, the refined per-GEMM count
/// (attention scores, causal halving, LM head), activation recompute and LoRA.
/// A FLOP is one multiply or one add (a multiply-add is 2 FLOPs).
#pragma once

#include "model/transformer.hpp"
#include "base/types.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace stepcast {

/// LoRA fine-tuning (Hu et al. 2021, arXiv 2106.09685): the base weights are frozen, each
/// targeted projection W (d_out x d_in) gains trainable A (r x d_in) and B (d_out x r).
struct LoraSpec {
  std::int64_t rank = 0;
  /// Targeted projections, any of "q", "k", "v", "o", "gate", "up", "down".
  std::vector<std::string> targets;
};

/// Trainable adapter parameters of LoRA over all layers: sum over targets of r·(d_in+d_out).
/// a·b for counts (tokens, parameters, elements) that must fit an int64; throws
/// std::invalid_argument naming `what` when the product would overflow (inputs that large
/// are refused upstream; this keeps a wrapped product from becoming a plausible number).
std::int64_t checked_product(std::int64_t a, std::int64_t b, const char* what);

std::int64_t lora_parameter_count(const TransformerSpec& spec, const LoraSpec& lora);

/// The 6·P·D headline (Kaplan et al. 2020; EleutherAI "Transformer Math 101"): 2PD forward,
/// 4PD backward.
double headline_training_flops(double params, double tokens);

/// FLOPs of one training step for `tokens` tokens at context `seq_len`, split by phase.
struct StepFlops {
  double forward = 0;    ///< forward pass (GEMMs + attention scores + LM head)
  double backward = 0;   ///< backward pass (activation grads; weight grads unless frozen)
  double recompute = 0;  ///< extra forward work re-done by activation recompute
  /// Model FLOPs for MFU, the llm-foundry definition (scripts/train/benchmarking/
  /// collect_results.py; PaLM, Chowdhery et al. 2022, App. B, for the attention term):
  /// (6·N + 12·L·q·s) per token (q = heads·head_dim, = h unless head_dim is given) with N =
  /// active_parameter_count(spec), i.e. ALL parameters of a dense model (a MoE model's active ones; MLA's attention
  /// term 6·L·s·heads·(qk + v_head)), embeddings and a learned position table included; no recompute, no causal
  /// halving, Under LoRA the frozen weights get no weight gradients: (4·N + 6·P_a + 12·L·h·s).
  /// See training_flops().
  double model = 0;
  /// Recompute FLOPs under the attention convention of `model` (one convention for MFU and
  /// HFU: attention core 4·h·s per token and layer forward, no causal halving, PaLM App. B):
  /// none 0; selective 4·L·h·s per token (the attention core, Korthikanti et al. 2022);
  /// full 2·W_layers + 4·L·h·s (+ 2·P_a under LoRA) per token, W_layers the layers' GEMM
  /// weights (one forward of the layers, LM head excluded; Narayanan et al. 2021).
  double model_recompute = 0;
  /// Executed FLOPs under the refined count (causal halving when the kernel skips the
  /// masked half): forward + backward + recompute. For timing, not for HFU.
  double hardware() const { return forward + backward + recompute; }
  /// HFU's FLOPs: model + model_recompute, the same attention convention as MFU, so that
  /// HFU >= MFU always and HFU == MFU without recompute (the Megatron-LM SC'21 and PaLM
  /// definitions: hardware FLOPs are model FLOPs plus the recomputed forward).
  double hfu_flops() const { return model + model_recompute; }
};

struct FlopsOptions {
  Recompute recompute = Recompute::none;
  /// Under selective recompute, what runs again in the backward (recompute_gemm_flops_per_token).
  RecomputeModules recompute_modules;
  /// Causal masking halves the attention-score work that a masked kernel (e.g. flash
  /// attention) executes; stated explicitly because conventions differ.
  bool causal_halving = true;
  const LoraSpec* lora = nullptr;  ///< non-null: frozen base, adapters trained
};

StepFlops training_flops(const TransformerSpec& spec, std::int64_t seq_len, double tokens, const FlopsOptions& options);

/// Forward GEMM FLOPs per token that selective recompute's modules run again, all layers:
/// 2·L·Σ n·k over MLA's query and key-value up-projections (mla_up_proj) and, in the dense
/// layers' share, the MLP's GEMMs (mlp), torchtitan's op_sac its even-numbered matmuls
/// (wk h·d, wo q·h, then w3 or a plain MLP's w2 h·f); core_attn's attention core is counted apart.
double recompute_gemm_flops_per_token(const TransformerSpec& spec, const RecomputeModules& modules);

/// One GEMM of a transformer layer, for efficiency lookups: (m x k) · (k x n).
struct GemmShape {
  std::string name;  ///< "qkv", "attn_out", "mlp_up", "mlp_down", "lm_head"
  std::int64_t m = 0, n = 0, k = 0;
  int count_per_layer = 1;  ///< (lm_head: per model)
};

/// The forward GEMMs of one layer for `tokens` tokens per micro-batch, plus the LM head;
/// MLA's five projections in place of qkv under `mla`; the dense MLP even under `moe`
/// (model/compute.hpp replaces it in the MoE layers).
std::vector<GemmShape> layer_gemms(const TransformerSpec& spec, std::int64_t tokens);

/// The forward GEMMs of one layer's LoRA adapters for `tokens` rows: per target (d_in ->
/// d_out) the thin down-projection x·A^T (tokens x r, k = d_in) and up-projection (·B^T:
/// tokens x d_out, k = r); Hu et al. 2021, arXiv 2106.09685, Sec. 4.1. Their backward is,
/// per GEMM, an input-gradient and a weight-gradient GEMM of the same FLOPs. Throws
/// std::invalid_argument as lora_parameter_count does.
std::vector<GemmShape> lora_adapter_gemms(const TransformerSpec& spec, const LoraSpec& lora, std::int64_t tokens);

}  // namespace stepcast
