/// \file
/// Transformer shapes: strict JSON parsing, parameter counts and the model catalog.
#include "model/transformer.hpp"

#include "base/json_input.hpp"
#include "base/limits.hpp"
#include "model/moe.hpp"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <map>
#include <set>

namespace stepcast {

namespace {

// Bounds on a model's shape (base/limits.hpp, workload section) keep the parameter
// arithmetic (products of layers, hidden, ffn_hidden and vocab in int64) far from overflow.
using limits::kMaxFfnHidden;
using limits::kMaxHidden;
using limits::kMaxLayers;
using limits::kMaxSeqLen;
using limits::kMaxVocab;
/// Largest published parameter count: 1e15, a thousand times the largest models.
constexpr std::int64_t kMaxPublishedParams = 1'000'000'000'000'000LL;

const std::vector<std::string> kPositionalNames = {"learned", "rope", "alibi"};
const std::vector<std::string> kNormNames = {"layernorm", "rmsnorm"};
const std::vector<std::string> kKindNames = {"decoder", "encoder"};

Positional positional_from(const std::string& s) {
  if (s == "learned") return Positional::learned;
  if (s == "alibi") return Positional::alibi;
  assert(s == "rope");
  return Positional::rope;
}

Norm norm_from(const std::string& s) {
  if (s == "rmsnorm") return Norm::rmsnorm;
  assert(s == "layernorm");
  return Norm::layernorm;
}

/// Parameters of one norm over `hidden` features: LayerNorm has a weight and a bias (2h),
/// RMSNorm only a weight (h) (Zhang & Sennrich 2019, arXiv 1910.07467).
std::int64_t norm_params(Norm norm, std::int64_t hidden) { return norm == Norm::layernorm ? 2 * hidden : hidden; }

/// Reads a model's "moe" object (keys of MoeSpec; experts, top_k and expert_ffn required).
/// One expert, top-1, no shared expert, as wide as the dense layers (or every layer MoE):
/// a router over one expert decides nothing (its softmax is 1), no token is permuted or
/// sent anywhere, so the layer is the dense MLP of that width, and is read as one.
bool routes_nothing(const TransformerSpec& spec) {
  const MoeSpec& m = *spec.moe;
  const bool every_layer = m.first_dense_layers == 0 && m.moe_every == 1;
  return m.experts == 1 && m.top_k == 1 && m.shared_experts == 0 && (every_layer || m.expert_ffn == spec.ffn_hidden);
}

MoeSpec parse_moe(JsonObject& o) {
  MoeSpec m;
  m.experts = o.integer("experts", 1, limits::kMaxHidden);
  m.top_k = o.integer("top_k", 1, m.experts);
  m.expert_ffn = o.integer("expert_ffn", 1, kMaxFfnHidden);
  m.shared_experts = o.optional_integer("shared_experts", 0, limits::kMaxHidden).value_or(0);
  m.shared_ffn = o.optional_integer("shared_ffn", 1, kMaxFfnHidden).value_or(0);
  m.first_dense_layers = o.optional_integer("first_dense_layers", 0, kMaxLayers).value_or(0);
  m.moe_every = o.optional_integer("moe_every", 1, kMaxLayers).value_or(1);
  o.finish();
  return m;
}

/// Reads a model's "mla" object (every key of MlaSpec but q_lora_rank required).
MlaSpec parse_mla(JsonObject& o) {
  MlaSpec m;
  m.q_lora_rank = o.optional_integer("q_lora_rank", 1, kMaxHidden).value_or(0);
  m.kv_lora_rank = o.integer("kv_lora_rank", 1, kMaxHidden);
  m.qk_nope_dim = o.integer("qk_nope_dim", 1, kMaxHidden);
  m.qk_rope_dim = o.integer("qk_rope_dim", 1, kMaxHidden);
  m.v_head_dim = o.integer("v_head_dim", 1, kMaxHidden);
  o.finish();
  return m;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

std::string_view name(Positional p) {
  switch (p) {
    case Positional::learned:
      return "learned";
    case Positional::rope:
      return "rope";
    case Positional::alibi:
      return "alibi";
  }
  assert(false && "unknown Positional");
  return "";
}

std::string_view name(Norm n) {
  switch (n) {
    case Norm::layernorm:
      return "layernorm";
    case Norm::rmsnorm:
      return "rmsnorm";
  }
  assert(false && "unknown Norm");
  return "";
}

/// Reads a TransformerSpec from `obj` and then rejects any key it did not read.
///
/// Required keys: `name` (string), `source` (string: the config or paper the dimensions come
/// from), `layers`, `hidden`, `heads`, `ffn_hidden`, `vocab`, `seq_len` (integers >= 1),
/// `positional` ("learned" | "rope" | "alibi"), `norm` ("layernorm" | "rmsnorm"),
/// `gated_mlp`, `tied_embeddings`, `linear_bias` (booleans), and `max_positions`
/// (integer >= 1) exactly when `positional` is "learned" (it is rejected otherwise).
/// Every count is bounded above by the shape bounds of base/limits.hpp.
///
/// Optional keys and their defaults (the defaults of TransformerSpec):
///   - `kv_heads`: defaults to `heads` (multi-head attention) when ABSENT; it must divide
///     `heads`.
///   - `aliases` (array of strings): none; `hf_ids` (array of "organisation/name" Hugging
///     Face ids): none; `kind` ("decoder" | "encoder"): "decoder";
///   - `head_dim` (integer >= 1): the width of one head when it is not hidden / heads
///     (Gemma 2, Mistral Nemo, Qwen3); absent: hidden / heads, and heads must divide hidden;
///   - `embedding_norm`, `qkv_bias`, `parallel_attn_mlp`, `pooler`: false;
///     `type_vocab` (integer >= 0): 0;
///   - `dropout` (number in [0, 1)): 0, no dropout (the masks a dropout keeps for the
///     backward are then not stored);
///   - `published_params` (integer >= 1): none; `published_active_params` (MoE only): none;
///   - `moe` (object): none, a dense model. Keys: `experts`, `top_k` (<= experts),
///     `expert_ffn` (required), `shared_experts` (0), `shared_ffn` (0: expert_ffn),
///     `first_dense_layers` (0, fewer than layers), `moe_every` (1); unknown keys rejected;
///   - `mla` (object): none, standard attention. Keys: `kv_lora_rank`, `qk_nope_dim`,
///     `qk_rope_dim`, `v_head_dim` (required), `q_lora_rank` (0: no query bottleneck); it
///     sets head_dim = qk_nope_dim + qk_rope_dim and kv_heads = heads, so neither may be given;
///   - `sliding_window` (object, decoders): none, every layer attends to its whole causal
///     prefix. Keys: `tokens` (the window, >= 1) and `layers` (how many layers use it, 1 to
///     `layers`), both required;
///   - `notes` (string): free documentation, read and discarded.
/// Checks: `heads` divides `hidden` unless `head_dim` is given.
TransformerSpec parse_transformer(JsonObject& obj) {
  TransformerSpec spec;
  {
    // Every problem of the required keys at once (the reads below stop at the first).
    InputErrors errors;
    for (const char* key : {"name", "source"}) errors.attempt([&] { obj.string(key); });
    errors.attempt([&] { obj.choice("positional", kPositionalNames); });
    errors.attempt([&] { obj.choice("norm", kNormNames); });
    for (const char* key : {"gated_mlp", "tied_embeddings", "linear_bias"}) errors.attempt([&] { obj.boolean(key); });
    errors.attempt([&] { obj.integer("layers", 1, kMaxLayers); });
    errors.attempt([&] { obj.integer("hidden", 1, kMaxHidden); });
    errors.attempt([&] { obj.integer("heads", 1, kMaxHidden); });
    errors.attempt([&] { obj.integer("ffn_hidden", 1, kMaxFfnHidden); });
    errors.attempt([&] { obj.integer("vocab", 1, kMaxVocab); });
    errors.attempt([&] { obj.integer("seq_len", 1, kMaxSeqLen); });
    errors.raise();
  }
  spec.name = obj.string("name");
  if (spec.name.empty()) throw obj.error("name", "expected a non-empty model name");
  spec.source = obj.string("source");
  if (spec.source.empty()) throw obj.error("source", "expected the source of the dimensions");
  if (auto aliases = obj.optional_array("aliases"))
    for (std::size_t i = 0; i < aliases->size(); ++i) spec.aliases.push_back(aliases->string(i));
  if (auto kind = obj.optional_choice("kind", kKindNames))
    spec.kind = *kind == "encoder" ? ModelKind::encoder : ModelKind::decoder;

  if (auto ids = obj.optional_array("hf_ids"))
    for (std::size_t i = 0; i < ids->size(); ++i) {
      std::string id = ids->string(i);
      if (std::count(id.begin(), id.end(), '/') != 1 || id.front() == '/' || id.back() == '/')
        throw ids->error(i, "expected a Hugging Face id \"organisation/name\", got \"" + id + "\"");
      spec.hf_ids.push_back(std::move(id));
    }

  spec.layers = obj.integer("layers", 1, kMaxLayers);
  spec.hidden = obj.integer("hidden", 1, kMaxHidden);
  spec.heads = obj.integer("heads", 1, kMaxHidden);
  spec.head_width = obj.optional_integer("head_dim", 1, kMaxHidden).value_or(0);
  if (spec.head_width == 0 && spec.hidden % spec.heads != 0)
    throw obj.error("heads", "expected a divisor of hidden (" + std::to_string(spec.hidden) + "), got " +
                                 std::to_string(spec.heads) + " (or give head_dim, the width of one head)");
  if (spec.head_width > 0 && spec.head_width * spec.heads > kMaxHidden)
    throw obj.error("head_dim", "expected heads x head_dim at most " + std::to_string(kMaxHidden) +
                                    " (limits::kMaxHidden), got " + std::to_string(spec.heads) + " x " +
                                    std::to_string(spec.head_width));
  spec.kv_heads = obj.optional_integer("kv_heads", 1, kMaxHidden).value_or(spec.heads);
  if (spec.kv_heads > spec.heads || spec.heads % spec.kv_heads != 0)
    throw obj.error("kv_heads", "expected a divisor of heads (" + std::to_string(spec.heads) + "), got " +
                                    std::to_string(spec.kv_heads));
  spec.ffn_hidden = obj.integer("ffn_hidden", 1, kMaxFfnHidden);
  spec.gated_mlp = obj.boolean("gated_mlp");
  spec.vocab = obj.integer("vocab", 1, kMaxVocab);
  spec.seq_len = obj.integer("seq_len", 1, kMaxSeqLen);

  spec.positional = positional_from(obj.choice("positional", kPositionalNames));
  if (spec.positional == Positional::learned) {
    spec.max_positions = obj.integer("max_positions", 1, kMaxSeqLen);
  } else if (obj.has("max_positions")) {
    throw obj.error("max_positions", "only allowed with \"positional\": \"learned\"");
  }
  spec.tied_embeddings = obj.boolean("tied_embeddings");
  spec.norm = norm_from(obj.choice("norm", kNormNames));
  spec.embedding_norm = obj.optional_boolean("embedding_norm").value_or(false);
  spec.linear_bias = obj.boolean("linear_bias");
  spec.qkv_bias = obj.optional_boolean("qkv_bias").value_or(false);
  spec.parallel_attn_mlp = obj.optional_boolean("parallel_attn_mlp").value_or(false);
  spec.type_vocab = obj.optional_integer("type_vocab", 0, kMaxVocab).value_or(0);
  spec.pooler = obj.optional_boolean("pooler").value_or(false);
  spec.dropout = obj.optional_number("dropout", 0.0, 0.999).value_or(0.0);
  spec.published_params = obj.optional_integer("published_params", 1, kMaxPublishedParams);
  spec.published_active_params = obj.optional_integer("published_active_params", 1, kMaxPublishedParams);
  if (auto moe = obj.optional_object("moe")) {
    spec.moe = parse_moe(*moe);
    if (spec.moe->first_dense_layers >= spec.layers)
      throw moe->error("first_dense_layers", "expected fewer than the " + std::to_string(spec.layers) + " layers");
    if (routes_nothing(spec)) {
      spec.ffn_hidden = spec.moe->expert_ffn;
      spec.moe.reset();
    }
  } else if (spec.published_active_params) {
    throw obj.error("published_active_params", "only allowed with \"moe\"");
  }
  if (auto mla = obj.optional_object("mla")) {
    if (obj.has("head_dim") || obj.has("kv_heads"))
      throw obj.error("mla", "multi-head latent attention sets the head widths: give neither head_dim nor kv_heads");
    spec.mla = parse_mla(*mla);
    spec.head_width = spec.mla->qk_nope_dim + spec.mla->qk_rope_dim;
    spec.kv_heads = spec.heads;
    if (spec.head_width * spec.heads > kMaxHidden)
      throw mla->error("qk_nope_dim",
                       "expected heads x (qk_nope_dim + qk_rope_dim) at most " + std::to_string(kMaxHidden));
  }
  if (auto window = obj.optional_object("sliding_window")) {
    if (spec.kind != ModelKind::decoder)
      throw obj.error("sliding_window", "only decoders (causal attention) are modelled with a window");
    SlidingWindow w;
    w.tokens = window->integer("tokens", 1, kMaxSeqLen);
    w.layers = window->integer("layers", 1, spec.layers);
    window->finish();
    spec.sliding_window = w;
  }
  obj.optional_string("notes");
  obj.finish();
  return spec;
}

double windowed_layer_share(const TransformerSpec& spec) {
  return spec.sliding_window ? static_cast<double>(spec.sliding_window->layers) / static_cast<double>(spec.layers)
                             : 0.0;
}

double window_pair_share(double s, double window) {
  if (!(s >= 1) || !(window >= 1)) throw std::invalid_argument("window_pair_share needs s >= 1 and window >= 1");
  if (window >= s) return 1.0;
  return (window * s - window * (window - 1) / 2) / (s * (s + 1) / 2);
}

/// Parameter count by part, from the shape alone (elements):
///   - embedding  = V·h + type_vocab·h
///   - positional = max_positions·h for a learned table, else 0 (RoPE/ALiBi have none)
///   - attention  = L·[h·q + 2·h·kv + q·h + biases], q = heads·head_dim, kv = kv_heads·head_dim;
///                  biases = q + 2·kv + h with linear_bias, q + 2·kv with qkv_bias only
///   - mlp        = L·[(3 if gated else 2)·h·f + biases], biases = (2f + h gated, f + h not)
///   - norms      = L·(1 if parallel_attn_mlp else 2)·n + n (final norm, decoders only)
///                  + n (embedding_norm), n = 2h for LayerNorm, h for RMSNorm
///   - lm_head    = V·h when untied, else 0
///   - other      = h·h + h for a BERT pooler
/// Checked exactly against GPT-2 124439808 (HF gpt2), Llama-2-7B 6738415616 (HF), BLOOM
/// 176247271424 (model card) and llm-foundry's MPT table (see transformer_test.cpp).
ParameterBreakdown parameter_breakdown(const TransformerSpec& spec) {
  assert(spec.layers >= 1 && spec.hidden >= 1 && spec.heads >= 1 && spec.kv_heads >= 1);
  const std::int64_t h = spec.hidden;
  const std::int64_t f = spec.ffn_hidden;
  const std::int64_t n = norm_params(spec.norm, h);

  const std::int64_t attn = attention_parameters_per_layer(spec);

  std::int64_t mlp = (spec.gated_mlp ? 3 : 2) * h * f;
  if (spec.linear_bias) mlp += spec.gated_mlp ? 2 * f + h : f + h;

  const std::int64_t layer_norms = (spec.parallel_attn_mlp ? 1 : 2) * n;

  ParameterBreakdown b;
  b.embedding = spec.vocab * h + spec.type_vocab * h;
  b.positional = spec.positional == Positional::learned ? spec.max_positions * h : 0;
  b.attention = spec.layers * attn;
  b.mlp = spec.layers * mlp;
  b.norms = spec.layers * layer_norms + (spec.kind == ModelKind::decoder ? n : 0) + (spec.embedding_norm ? n : 0);
  b.lm_head = spec.tied_embeddings ? 0 : spec.vocab * h;
  b.other = spec.pooler ? h * h + h : 0;
  b.per_layer = attn + mlp + layer_norms;
  if (spec.moe) {  // the MoE layers' MLPs: every expert and the router
    const MoeParameters m = moe_parameters(spec, *spec.moe);
    b.mlp += m.total - b.total();
    b.per_layer = (b.attention + b.mlp + spec.layers * layer_norms) / spec.layers;
  }
  return b;
}

std::int64_t parameter_count(const TransformerSpec& spec) { return parameter_breakdown(spec).total(); }

std::int64_t active_parameter_count(const TransformerSpec& spec) {
  return spec.moe ? moe_parameters(spec, *spec.moe).active : parameter_count(spec);
}

/// Standard attention: h·q (Q) + 2·h·kv (K, V) + q·h (O), biases q + 2·kv + h with
/// linear_bias, q + 2·kv with qkv_bias only. MLA (DeepSeek-V3's modeling_deepseek.py
/// DeepseekV3Attention): q_a h·r_q + norm r_q + q_b r_q·H·(d_n + d_r) (or h·H·(d_n + d_r)
/// without a query bottleneck), kv_a h·(r_kv + d_r) + norm r_kv, kv_b r_kv·H·(d_n + d_v),
/// o H·d_v·h; no biases.
std::int64_t attention_parameters_per_layer(const TransformerSpec& spec) {
  const std::int64_t h = spec.hidden;
  if (spec.mla) {
    const MlaSpec& m = *spec.mla;
    const std::int64_t heads = spec.heads, qk = m.qk_nope_dim + m.qk_rope_dim;
    const std::int64_t q =
        m.q_lora_rank > 0 ? h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * heads * qk : h * heads * qk;
    return q + h * (m.kv_lora_rank + m.qk_rope_dim) + m.kv_lora_rank +
           m.kv_lora_rank * heads * (m.qk_nope_dim + m.v_head_dim) + heads * m.v_head_dim * h;
  }
  const std::int64_t q = spec.head_dim() * spec.heads;
  const std::int64_t kv = spec.kv_dim();
  std::int64_t attn = 2 * h * q + 2 * h * kv;
  if (spec.linear_bias)
    attn += q + 2 * kv + h;
  else if (spec.qkv_bias)
    attn += q + 2 * kv;
  return attn;
}

namespace {

/// Every name an entry is found by: its name, aliases and Hugging Face ids.
std::vector<std::string> names_of(const TransformerSpec& spec) {
  std::vector<std::string> names{spec.name};
  names.insert(names.end(), spec.aliases.begin(), spec.aliases.end());
  names.insert(names.end(), spec.hf_ids.begin(), spec.hf_ids.end());
  return names;
}

/// Reads {"models": [entry, ...]} and appends its entries to `out`; every name, alias and
/// Hugging Face id must be new (case-insensitively) to `out` and to the file. Nothing is
/// appended when an entry is refused.
void append_models(const JsonDoc& doc, std::deque<TransformerSpec>& out) {
  JsonObject root(doc.root(), doc.file(), "");
  JsonArray models = root.array("models");
  root.finish();
  std::map<std::string, std::string> owner;  // lower-cased name, alias or id -> entry name
  for (const TransformerSpec& spec : out)
    for (const auto& n : names_of(spec)) owner.emplace(lower(n), spec.name);
  std::vector<TransformerSpec> added;
  for (std::size_t i = 0; i < models.size(); ++i) {
    JsonObject entry = models.object(i);
    TransformerSpec spec = parse_transformer(entry);
    std::set<std::string> own;  // an alias may repeat the entry's name in another case
    for (const auto& n : names_of(spec)) {
      if (!own.insert(lower(n)).second) continue;
      auto [it, inserted] = owner.emplace(lower(n), spec.name);
      if (!inserted)
        throw models.error(i, "name, alias or Hugging Face id \"" + n + "\" is already used by \"" + it->second +
                                  "\" (catalogs add entries and never redefine one)");
    }
    added.push_back(std::move(spec));
  }
  for (auto& spec : added) out.push_back(std::move(spec));
}

/// Loads data_dir()/model/catalog/models.json once.
std::deque<TransformerSpec>& catalog_store() {
  static std::deque<TransformerSpec> catalog = [] {
    std::deque<TransformerSpec> out;
    append_models(JsonDoc::load(data_dir() / "model" / "catalog" / "models.json"), out);
    return out;
  }();
  return catalog;
}

}  // namespace

const std::deque<TransformerSpec>& model_catalog() { return catalog_store(); }

void add_models(const JsonDoc& doc) { append_models(doc, catalog_store()); }

const TransformerSpec* find_model(const std::string& name) {
  const std::string key = lower(name);
  for (const auto& spec : model_catalog())
    for (const auto& n : names_of(spec))
      if (lower(n) == key) return &spec;
  return nullptr;
}

}  // namespace stepcast
