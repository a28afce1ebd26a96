/// \file
/// A transformer's shape as data, its parameter count, and the model catalog
/// (model/catalog/models.json, every entry with its source).
#pragma once

#include "base/types.hpp"

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace stepcast {

class JsonDoc;
class JsonObject;

enum class Positional { learned, rope, alibi };
enum class Norm { layernorm, rmsnorm };
enum class ModelKind { decoder, encoder };

/// The expert part of a MoE transformer. A MoE layer replaces the dense MLP with `experts`
/// routed experts (each a gated or plain MLP of width `expert_ffn`), of which each token
/// uses `top_k`, plus `shared_experts` that every token uses (width `shared_ffn`, 0: the
/// routed width), and a router (a hidden x experts matrix, no bias).
struct MoeSpec {
  std::int64_t experts = 1;             ///< routed experts per MoE layer
  std::int64_t top_k = 1;               ///< routed experts per token
  std::int64_t shared_experts = 0;      ///< experts every token passes through
  std::int64_t expert_ffn = 0;          ///< inner width of one routed expert
  std::int64_t shared_ffn = 0;          ///< inner width of one shared expert (0: expert_ffn)
  std::int64_t first_dense_layers = 0;  ///< leading layers that keep the dense MLP (DeepSeek-V3: 3)
  std::int64_t moe_every = 1;           ///< after those, every k-th layer is MoE (1: all)
};

/// Multi-head latent attention (DeepSeek-V2/V3, arXiv 2405.04434 Sec. 2.1): queries through
/// a low-rank bottleneck (h -> q_lora_rank -> heads·(qk_nope + qk_rope); none when 0), keys
/// and values from a shared latent (h -> kv_lora_rank + qk_rope, the rope part one shared
/// key head; latent -> heads·(qk_nope + v_head)), the output from heads·v_head. Each
/// bottleneck has an RMSNorm. For the attention kernel and the activation memory a head is
/// taken as qk_nope + qk_rope wide with kv_heads = heads (training decompresses K and V per
/// head); the attention core's FLOPs use the true widths (Q·K^T over qk, P·V over v_head).
struct MlaSpec {
  std::int64_t q_lora_rank = 0;  ///< 0: queries projected straight from h
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_dim = 0;
  std::int64_t qk_rope_dim = 0;
  std::int64_t v_head_dim = 0;
};

/// Sliding-window attention ("sliding_window"): `layers` of the model's layers let each
/// query attend to the `tokens` keys before it (itself included) instead of the whole causal
/// prefix (gpt-oss: every other layer, 128 tokens; Mistral 7B v0.1: all, 4,096).
struct SlidingWindow {
  std::int64_t tokens = 0;
  std::int64_t layers = 0;
};

/// Share of a causal layer's (query, key) pairs that a window of `window` keys keeps over a
/// sequence of `s` tokens: [w·s − w·(w−1)/2] / [s·(s+1)/2] with w = min(window, s), 1 when
/// the window covers the sequence. (Query i attends to min(i+1, w) keys.)
double window_pair_share(double s, double window);
/// Share of a model's layers with a sliding window (0 without one).
double windowed_layer_share(const struct TransformerSpec& spec);

/// The shape of a transformer (dense unless `moe` is set). Counts are plain integers; sizes are in elements.
struct TransformerSpec {
  std::string name;                  ///< catalog key, e.g. "llama-2-7b"
  std::vector<std::string> aliases;  ///< other names it goes by, e.g. "Llama-2-7B", "MPT-7b"
  /// Hugging Face Hub ids of the checkpoints with this shape ("meta-llama/Meta-Llama-3-8B"):
  /// names the model is found by, like aliases, each "organisation/name" and unique.
  std::vector<std::string> hf_ids;
  ModelKind kind = ModelKind::decoder;
  std::int64_t layers = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;  ///< == heads for multi-head attention; fewer for GQA/MQA
  /// Width of one attention head when it is not hidden / heads (Gemma, Mistral Nemo, Qwen3:
  /// config.json's head_dim); 0: hidden / heads.
  std::int64_t head_width = 0;
  std::int64_t ffn_hidden = 0;  ///< MLP inner width
  bool gated_mlp = false;       ///< SwiGLU/GeGLU: three MLP matrices instead of two
  std::int64_t vocab = 0;
  std::int64_t seq_len = 0;        ///< default training context (tokens)
  std::int64_t max_positions = 0;  ///< rows of a learned position table (0 unless learned)
  bool tied_embeddings = true;     ///< LM head shares the input embedding
  Positional positional = Positional::rope;
  Norm norm = Norm::layernorm;
  bool embedding_norm = false;     ///< a norm right after the embeddings (BLOOM, BERT)
  bool linear_bias = false;        ///< biases on the attention and MLP projections
  bool qkv_bias = false;           ///< biases on Q, K, V only (Qwen2); implied by linear_bias
  bool parallel_attn_mlp = false;  ///< Falcon/GPT-J style parallel block (one shared norm)
  std::int64_t type_vocab = 0;     ///< BERT token-type embeddings (0 if none)
  /// Dropout probability of the residual branches, embeddings and attention scores (0: the
  /// model trains without dropout, so no masks are stored for the backward).
  double dropout = 0.0;
  bool pooler = false;                           ///< BERT pooler (hidden x hidden + bias)
  std::optional<std::int64_t> published_params;  ///< count stated by the source
  /// Mixture of experts ("moe"): which layers route tokens to experts; ffn_hidden is then
  /// the width of the dense layers' MLP. A "moe" of one expert, top-1, no shared expert
  /// routes nothing and is read as the dense MLP of the expert's width (moe left empty).
  std::optional<MoeSpec> moe;
  std::optional<MlaSpec> mla;                           ///< multi-head latent attention ("mla")
  std::optional<SlidingWindow> sliding_window;          ///< windowed attention in some layers
  std::optional<std::int64_t> published_active_params;  ///< active count stated (MoE)
  std::string source;                                   ///< where the dimensions come from

  std::int64_t head_dim() const { return head_width > 0 ? head_width : hidden / heads; }
  std::int64_t kv_dim() const { return head_dim() * kv_heads; }
};

/// Parameters of each part of the model (elements).
struct ParameterBreakdown {
  std::int64_t embedding = 0;   ///< token (+ type) embedding table
  std::int64_t positional = 0;  ///< learned position table
  std::int64_t attention = 0;   ///< all layers: Q, K, V, O (+ biases)
  std::int64_t mlp = 0;         ///< all layers: up (+ gate), down (+ biases)
  std::int64_t norms = 0;       ///< all norms, including the final one
  std::int64_t lm_head = 0;     ///< untied output projection (0 when tied)
  std::int64_t other = 0;       ///< pooler etc.
  std::int64_t total() const { return embedding + positional + attention + mlp + norms + lm_head + other; }
  /// Parameters of one transformer block (attention + MLP + its norms).
  std::int64_t per_layer = 0;
};

/// Parameter count from the shape. With `moe`, mlp counts every expert and router (the
/// total, what memory holds); per_layer is the layers' mean.
ParameterBreakdown parameter_breakdown(const TransformerSpec& spec);
std::int64_t parameter_count(const TransformerSpec& spec);
/// Parameters one token uses: parameter_count with each MoE layer's experts cut to its top_k
/// routed and its shared experts (and router); parameter_count for a dense model.
std::int64_t active_parameter_count(const TransformerSpec& spec);
/// Attention parameters of one layer, biases included (MLA: its projections and two norms).
std::int64_t attention_parameters_per_layer(const TransformerSpec& spec);

/// Reads a spec from a JSON object (catalog entry or a scenario's inline model).
/// Unknown keys and missing required keys throw InputError with the JSON path.
TransformerSpec parse_transformer(JsonObject& obj);

/// The model catalog, loaded once from model/catalog/models.json under data_dir(), then
/// any user catalogs added by add_models. Entries never move (a deque), so pointers from
/// find_model stay valid after an addition.
const std::deque<TransformerSpec>& model_catalog();
/// Finds a model by catalog name, alias or Hugging Face id (case-insensitive); nullptr if
/// unknown.
const TransformerSpec* find_model(const std::string& name);
/// Adds the models of a user catalog file ({"models": [...]}, the format of models.json),
/// handed in by the front end. A name, alias or Hugging Face id already in the catalog
/// (built-in or added before) is an InputError naming the file and the entry's path: user
/// catalogs extend the built-in one and never redefine an entry. All or nothing.
void add_models(const JsonDoc& doc);

std::string_view name(Positional);
std::string_view name(Norm);

}  // namespace stepcast
