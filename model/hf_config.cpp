/// \file
/// Hugging Face config.json -> TransformerSpec. Key names and defaults follow the
/// configuration classes of huggingface/transformers (configuration_llama.py,
/// configuration_mistral.py, configuration_qwen2.py, configuration_gemma.py,
/// configuration_gemma2.py, configuration_gpt2.py, configuration_gpt_neox.py,
/// configuration_falcon.py, configuration_mpt.py, configuration_phi.py,
/// configuration_phi3.py).
#include "model/hf_config.hpp"

#include "base/json_input.hpp"
#include "base/limits.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

namespace stepcast {

namespace {

using limits::kMaxFfnHidden;
using limits::kMaxHidden;
using limits::kMaxLayers;
using limits::kMaxSeqLen;
using limits::kMaxVocab;

enum class Family { llama, mistral, qwen2, qwen3, gemma, gemma2, gemma3, phi3, gpt2, gpt_neox, falcon, mpt, phi };

/// model_type values (and the architectures[0] class names of configs without one).
const std::map<std::string, Family> kFamilies = {
    {"llama", Family::llama},
    {"LlamaForCausalLM", Family::llama},
    {"mistral", Family::mistral},
    {"MistralForCausalLM", Family::mistral},
    {"qwen2", Family::qwen2},
    {"Qwen2ForCausalLM", Family::qwen2},
    {"gemma", Family::gemma},
    {"GemmaForCausalLM", Family::gemma},
    {"gemma2", Family::gemma2},
    {"Gemma2ForCausalLM", Family::gemma2},
    {"qwen3", Family::qwen3},
    {"Qwen3ForCausalLM", Family::qwen3},
    {"gemma3_text", Family::gemma3},
    {"Gemma3ForCausalLM", Family::gemma3},
    {"phi3", Family::phi3},
    {"Phi3ForCausalLM", Family::phi3},
    {"gpt2", Family::gpt2},
    {"GPT2LMHeadModel", Family::gpt2},
    {"gpt_neox", Family::gpt_neox},
    {"GPTNeoXForCausalLM", Family::gpt_neox},
    {"falcon", Family::falcon},
    {"FalconForCausalLM", Family::falcon},
    {"RefinedWeb", Family::falcon},
    {"RefinedWebModel", Family::falcon},
    {"mpt", Family::mpt},
    {"MPTForCausalLM", Family::mpt},
    {"MptForCausalLM", Family::mpt},
    {"phi", Family::phi},
    {"PhiForCausalLM", Family::phi},
};

/// Keys that make a config a mixture of experts (Mixtral, Qwen2-MoE/Qwen3-MoE, DeepSeek, DBRX).
const std::vector<std::string> kMoeKeys = {"num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"};

/// Typed reads of a config.json object where a key may be absent or null (both mean "the
/// architecture's default"). Unknown keys are fine: config.json carries many that do not
/// shape the parameters (dropout, token ids, dtype).
class Config {
 public:
  Config(const nlohmann::json& root, const std::string& file) : root_(root), obj_(root, file, "") {}

  bool present(const std::string& key) const { return root_.contains(key) && !root_.at(key).is_null(); }
  std::int64_t integer(const std::string& key, std::int64_t max) { return obj_.integer(read(key), 1, max); }
  std::optional<std::int64_t> optional_integer(const std::string& key, std::int64_t max) {
    if (!present(key)) return std::nullopt;
    return obj_.integer(read(key), 1, max);
  }
  /// The first of `keys` that is present (older configs spell some keys differently).
  std::int64_t integer_of(const std::vector<std::string>& keys, std::int64_t max) {
    for (const auto& key : keys)
      if (present(key)) return obj_.integer(read(key), 1, max);
    throw obj_.error(keys.front(), "missing (a positive integer)");
  }
  bool flag(const std::string& key, bool fallback) { return present(key) ? obj_.boolean(read(key)) : fallback; }
  double number(const std::string& key, double fallback, double max) {
    return present(key) ? obj_.number(read(key), 0.0, max) : fallback;
  }
  std::optional<JsonObject> object(const std::string& key) {
    if (!present(key)) return std::nullopt;
    return obj_.object(read(key));
  }
  std::optional<JsonArray> array(const std::string& key) {
    if (!present(key)) return std::nullopt;
    return obj_.array(read(key));
  }
  std::optional<std::string> string(const std::string& key) {
    if (!present(key)) return std::nullopt;
    return obj_.string(read(key));
  }
  InputError error(const std::string& key, const std::string& what) const { return obj_.error(key, what); }
  /// The keys whose values were read, in the order first read.
  const std::vector<std::string>& keys_read() const { return read_; }

 private:
  const std::string& read(const std::string& key) {
    if (std::find(read_.begin(), read_.end(), key) == read_.end()) read_.push_back(key);
    return key;
  }
  const nlohmann::json& root_;
  JsonObject obj_;
  std::vector<std::string> read_;
};

Family family_of(Config& c) {
  if (auto type = c.string("model_type")) {
    auto it = kFamilies.find(*type);
    if (it != kFamilies.end()) return it->second;
    throw c.error("model_type", "architecture \"" + *type +
                                    "\" is not one stepcast reads (known: llama, mistral, qwen2, "
                                    "qwen3, gemma, gemma2, gemma3_text, phi3, gpt2, gpt_neox, falcon, "
                                    "mpt, phi)" +
                                    (*type == "gemma3" ? std::string("; a multimodal Gemma 3 config: give its "
                                                                     "text model as a gemma3_text config")
                                                       : std::string()));
  }
  if (auto archs = c.array("architectures"); archs && archs->size() > 0) {
    // No model_type: the class name of the first architecture decides.
    auto it = kFamilies.find(archs->string(0));
    if (it != kFamilies.end()) return it->second;
    throw archs->error(0, "architecture \"" + archs->string(0) + "\" is not one stepcast reads");
  }
  throw c.error("model_type", "missing (this does not look like a Hugging Face config.json)");
}

void refuse_moe(Config& c) {
  for (const auto& key : kMoeKeys) {
    if (!c.present(key)) continue;
    const std::int64_t experts = c.integer(key, std::int64_t{1} << 30);
    if (experts > 1)
      throw c.error(key, std::to_string(experts) +
                             " experts: a mixture-of-experts model, whose config.json is not imported yet (give the "
                             "catalog model, e.g. mixtral-8x7b, or a model object with its moe keys)");
  }
}

/// The pre-training context: the original length a RoPE scaling extends, else
/// max_position_embeddings (e.g. Llama 3.1: 8192, not 131072).
std::int64_t rope_context(Config& c, std::int64_t fallback) {
  if (auto original = c.optional_integer("original_max_position_embeddings", kMaxSeqLen)) return *original;
  if (auto scaling = c.object("rope_scaling"))
    if (scaling->has("original_max_position_embeddings") && !scaling->raw("original_max_position_embeddings").is_null())
      return scaling->integer("original_max_position_embeddings", 1, kMaxSeqLen);
  return c.optional_integer("max_position_embeddings", kMaxSeqLen).value_or(fallback);
}

/// Checks the head layout TransformerSpec can hold: kv_heads | heads, and heads | hidden
/// unless an explicit head_dim gives the head width (Gemma, Mistral Nemo, Qwen3: head_dim
/// x heads need not be the hidden size); a head_dim equal to hidden / heads changes nothing.
void check_heads(Config& c, TransformerSpec& s, const std::string& heads_key, const std::string& kv_key) {
  if (auto head_dim = c.optional_integer("head_dim", kMaxHidden);
      head_dim && (s.hidden % s.heads != 0 || *head_dim != s.hidden / s.heads)) {
    if (*head_dim * s.heads > kMaxHidden)
      throw c.error("head_dim", "expected head_dim x heads at most " + std::to_string(kMaxHidden) + ", got " +
                                    std::to_string(*head_dim) + " x " + std::to_string(s.heads));
    s.head_width = *head_dim;
  }
  if (s.head_width == 0 && s.hidden % s.heads != 0)
    throw c.error(heads_key, "expected a divisor of the hidden size " + std::to_string(s.hidden) + ", got " +
                                 std::to_string(s.heads) + " (and no head_dim)");
  if (s.kv_heads > s.heads || s.heads % s.kv_heads != 0)
    throw c.error(kv_key, "expected a divisor of the " + std::to_string(s.heads) + " attention heads, got " +
                              std::to_string(s.kv_heads));
}

/// Llama and its descendants (Mistral, Qwen2, Qwen3, Gemma, Gemma 2, Gemma 3, Phi-3): RoPE,
/// RMSNorm, gated MLP, no biases except Qwen2's Q/K/V and Llama's optional attention_bias /
/// mlp_bias (Qwen3 has attention_bias false). Not counted: Gemma 2/3's extra post-attention
/// and post-MLP norms (2h per layer) and Qwen3/Gemma 3's per-head Q and K norms (2·head_dim
/// per layer), each under 0.1% of the parameters.
void read_llama_like(Config& c, Family f, TransformerSpec& s) {
  s.hidden = c.integer("hidden_size", kMaxHidden);
  s.layers = c.integer("num_hidden_layers", kMaxLayers);
  s.heads = c.integer("num_attention_heads", kMaxHidden);
  s.kv_heads = c.optional_integer("num_key_value_heads", kMaxHidden).value_or(s.heads);
  s.ffn_hidden = c.integer("intermediate_size", kMaxFfnHidden);
  s.vocab = c.integer("vocab_size", kMaxVocab);
  s.seq_len = rope_context(c, 2048);
  s.positional = Positional::rope;
  s.norm = Norm::rmsnorm;
  s.gated_mlp = true;
  const bool gemma = f == Family::gemma || f == Family::gemma2 || f == Family::gemma3;
  s.tied_embeddings = c.flag("tie_word_embeddings", gemma);
  const bool attention_bias = c.flag("attention_bias", false);
  // mlp_bias implies biases everywhere in TransformerSpec; attention_bias alone maps to the
  // Q/K/V biases (the output projection's h per layer is not counted).
  s.linear_bias = c.flag("mlp_bias", false);
  s.qkv_bias = f == Family::qwen2 || attention_bias;
  check_heads(c, s, "num_attention_heads", "num_key_value_heads");
}

/// GPT-2: learned positions, LayerNorm, biases everywhere, tied LM head; n_inner null = 4h.
void read_gpt2(Config& c, TransformerSpec& s) {
  s.hidden = c.integer("n_embd", kMaxHidden);
  s.layers = c.integer("n_layer", kMaxLayers);
  s.heads = c.integer("n_head", kMaxHidden);
  s.kv_heads = s.heads;
  s.ffn_hidden = c.optional_integer("n_inner", kMaxFfnHidden).value_or(4 * s.hidden);
  s.vocab = c.integer("vocab_size", kMaxVocab);
  s.max_positions = c.integer("n_positions", kMaxSeqLen);
  s.seq_len = c.optional_integer("n_ctx", kMaxSeqLen).value_or(s.max_positions);
  s.positional = Positional::learned;
  s.norm = Norm::layernorm;
  s.linear_bias = true;
  s.tied_embeddings = c.flag("tie_word_embeddings", true);
  check_heads(c, s, "n_head", "n_head");
}

/// GPT-NeoX / Pythia: rotary (rotary_pct of each head, no parameters), LayerNorm, biases,
/// untied embed_out. use_parallel_residual keeps two norms per layer, so it is not
/// TransformerSpec's one-norm parallel block.
void read_gpt_neox(Config& c, TransformerSpec& s) {
  s.hidden = c.integer("hidden_size", kMaxHidden);
  s.layers = c.integer("num_hidden_layers", kMaxLayers);
  s.heads = c.integer("num_attention_heads", kMaxHidden);
  s.kv_heads = s.heads;
  s.ffn_hidden = c.integer("intermediate_size", kMaxFfnHidden);
  s.vocab = c.integer("vocab_size", kMaxVocab);
  s.seq_len = c.optional_integer("max_position_embeddings", kMaxSeqLen).value_or(2048);
  s.positional = Positional::rope;
  s.norm = Norm::layernorm;
  s.linear_bias = true;  // attention_bias false drops h + 3h per layer, not counted
  s.tied_embeddings = c.flag("tie_word_embeddings", false);
  check_heads(c, s, "num_attention_heads", "num_attention_heads");
}

/// Falcon: multi-query (one KV head) unless new_decoder_architecture, which reads
/// num_kv_heads; parallel attention and MLP sharing one LayerNorm unless the new
/// architecture gives each its own; RoPE or ALiBi; tied LM head.
void read_falcon(Config& c, TransformerSpec& s) {
  s.hidden = c.integer_of({"hidden_size", "n_embd"}, kMaxHidden);
  s.layers = c.integer_of({"num_hidden_layers", "n_layer"}, kMaxLayers);
  s.heads = c.integer_of({"num_attention_heads", "n_head"}, kMaxHidden);
  const bool new_arch = c.flag("new_decoder_architecture", false);
  std::string kv_key = "num_kv_heads";
  if (new_arch) {
    if (!c.present(kv_key) && c.present("n_head_kv")) kv_key = "n_head_kv";
    s.kv_heads = c.optional_integer(kv_key, kMaxHidden).value_or(s.heads);
  } else {
    kv_key = "multi_query";
    s.kv_heads = c.flag("multi_query", true) ? 1 : s.heads;
  }
  s.ffn_hidden = c.optional_integer("ffn_hidden_size", kMaxFfnHidden).value_or(4 * s.hidden);
  s.vocab = c.integer("vocab_size", kMaxVocab);
  s.seq_len = c.optional_integer("max_position_embeddings", kMaxSeqLen).value_or(2048);
  s.positional = c.flag("alibi", false) ? Positional::alibi : Positional::rope;
  s.norm = Norm::layernorm;
  s.linear_bias = c.flag("bias", false);
  const std::int64_t parallel_norms = c.optional_integer("num_ln_in_parallel_attn", 2).value_or(new_arch ? 2 : 1);
  s.parallel_attn_mlp = c.flag("parallel_attn", true) && parallel_norms == 1;
  s.tied_embeddings = c.flag("tie_word_embeddings", true);
  check_heads(c, s, "num_attention_heads", kv_key);
}

/// MPT: d_model, n_heads, n_layers, ffn = expansion_ratio * d_model; ALiBi (no position
/// table) or a learned table of max_seq_len rows; no_bias (default true) drops the linear
/// biases; LayerNorm (its bias, h per norm, is counted even under no_bias); tied embeddings.
void read_mpt(Config& c, TransformerSpec& s) {
  s.hidden = c.integer("d_model", kMaxHidden);
  s.layers = c.integer("n_layers", kMaxLayers);
  s.heads = c.integer("n_heads", kMaxHidden);
  s.kv_heads = s.heads;
  bool alibi = false;
  bool rope = false;
  std::string kv_key = "n_heads";
  if (auto attn = c.object("attn_config")) {
    alibi = attn->has("alibi") && attn->boolean("alibi");
    rope = attn->has("rope") && attn->boolean("rope");
    const std::string type = attn->has("attn_type") ? attn->string("attn_type") : "";
    if (type == "multiquery_attention") s.kv_heads = 1;
    if (type == "grouped_query_attention") {
      s.kv_heads = attn->integer("kv_n_heads", 1, kMaxHidden);
      kv_key = "attn_config";
    }
  }
  const double ratio = c.number("expansion_ratio", 4.0, 1024.0);
  s.ffn_hidden = static_cast<std::int64_t>(ratio * static_cast<double>(s.hidden));
  if (s.ffn_hidden < 1 || static_cast<double>(s.ffn_hidden) != ratio * static_cast<double>(s.hidden))
    throw c.error("expansion_ratio", "expected a ratio giving a whole MLP width");
  s.vocab = c.integer("vocab_size", kMaxVocab);
  s.seq_len = c.optional_integer("max_seq_len", kMaxSeqLen).value_or(2048);
  if (alibi)
    s.positional = Positional::alibi;
  else if (c.flag("learned_pos_emb", true) && !rope)
    s.positional = Positional::learned;
  else
    s.positional = Positional::rope;
  if (s.positional == Positional::learned) s.max_positions = s.seq_len;
  const std::string norm_type = c.string("norm_type").value_or("low_precision_layernorm");
  s.norm = norm_type.find("rms") != std::string::npos ? Norm::rmsnorm : Norm::layernorm;
  s.linear_bias = !c.flag("no_bias", true);
  s.tied_embeddings = c.flag("tie_word_embeddings", true);
  check_heads(c, s, "n_heads", kv_key);
}

/// Phi (phi-1, phi-1.5, phi-2): attention and MLP in parallel from one shared LayerNorm,
/// partial rotary (no parameters), biases everywhere, untied LM head (its V-element bias is
/// not counted).
void read_phi(Config& c, TransformerSpec& s) {
  s.hidden = c.integer("hidden_size", kMaxHidden);
  s.layers = c.integer("num_hidden_layers", kMaxLayers);
  s.heads = c.integer("num_attention_heads", kMaxHidden);
  s.kv_heads = c.optional_integer("num_key_value_heads", kMaxHidden).value_or(s.heads);
  s.ffn_hidden = c.integer("intermediate_size", kMaxFfnHidden);
  s.vocab = c.integer("vocab_size", kMaxVocab);
  s.seq_len = c.optional_integer("max_position_embeddings", kMaxSeqLen).value_or(2048);
  s.positional = Positional::rope;
  s.norm = Norm::layernorm;
  s.linear_bias = true;
  s.parallel_attn_mlp = true;
  s.tied_embeddings = c.flag("tie_word_embeddings", false);
  check_heads(c, s, "num_attention_heads", "num_key_value_heads");
}

/// "llama-3-8b" for .../llama-3-8b.json, "Meta-Llama-3-8B" for .../Meta-Llama-3-8B/config.json.
std::string name_from_file(const std::string& file) {
  const std::filesystem::path p(file);
  if (p.filename() == "config.json" && p.has_parent_path() && !p.parent_path().filename().empty())
    return p.parent_path().filename().string();
  return p.stem().string();
}

}  // namespace

TransformerSpec spec_from_hf_config(const nlohmann::json& config, const std::string& file) {
  if (!config.is_object()) throw InputError(file, "", "expected a config.json object, got " + summary(config));
  Config c(config, file);
  refuse_moe(c);
  const Family f = family_of(c);
  TransformerSpec s;
  s.name = name_from_file(file);
  if (auto name_or_path = c.string("_name_or_path"); name_or_path && !name_or_path->empty() && *name_or_path != s.name)
    s.aliases.push_back(*name_or_path);
  s.source = file;
  s.kind = ModelKind::decoder;
  switch (f) {
    case Family::gpt2:
      read_gpt2(c, s);
      break;
    case Family::gpt_neox:
      read_gpt_neox(c, s);
      break;
    case Family::falcon:
      read_falcon(c, s);
      break;
    case Family::mpt:
      read_mpt(c, s);
      break;
    case Family::phi:
      read_phi(c, s);
      break;
    default:
      read_llama_like(c, f, s);
      break;
  }
  // The largest dropout probability the config names (families spell it differently).
  for (const char* key : {"resid_pdrop", "embd_pdrop", "attn_pdrop", "hidden_dropout", "hidden_dropout_prob",
                          "attention_dropout", "attention_probs_dropout_prob", "dropout"})
    s.dropout = std::max(s.dropout, c.number(key, 0.0, 0.999));
  std::string keys;
  for (const std::string& k : c.keys_read()) keys += (keys.empty() ? "" : ", ") + k;
  s.source = file + " (keys read: " + keys + ")";
  return s;
}

TransformerSpec load_hf_config(const std::filesystem::path& path) {
  const JsonDoc doc = JsonDoc::load(path);
  return spec_from_hf_config(doc.root(), doc.file());
}

}  // namespace stepcast
