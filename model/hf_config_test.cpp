// Tests of model/hf_config: real config.json files of public models (tests/data/hf, sources
// in its README.md) give parameter counts within 1% of the published counts, and configs
// stepcast cannot represent are refused with the key that says so.
#include "model/hf_config.hpp"

#include "base/json_input.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

using namespace stepcast;

namespace {

TransformerSpec fixture(const std::string& name) {
  return load_hf_config(data_dir() / "tests" / "data" / "hf" / (name + ".json"));
}

std::string what_of(const std::string& text) {
  try {
    spec_from_hf_config(nlohmann::json::parse(text), "config.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

/// A minimal Llama config; `extra` is spliced in before the closing brace.
std::string llama(const std::string& extra) {
  return R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
    "vocab_size": 1000, "max_position_embeddings": 256)" +
         extra + "}";
}

}  // namespace

TEST_CASE("config.json of public models: parameter counts within 1% of the published counts") {
  struct Row {
    const char* file;
    double published;
    double tolerance;
    const char* source;
  };
  const Row rows[] = {
      {"gpt2", 124e6, 0.01, "karpathy/nanoGPT README 'gpt2 | 124M'"},
      {"llama-3-8b", 8.03e9, 0.01, "HF meta-llama/Meta-Llama-3-8B 'Model size 8.03B params'"},
      {"mistral-7b", 7.24e9, 0.01, "HF mistralai/Mistral-7B-v0.1 'Model size 7.24B params'"},
      {"qwen2-7b-instruct", 7.61e9, 0.01, "Qwen2.5-7B model card 'Number of Parameters: 7.61B' (same shape)"},
      {"falcon-7b", 7e9, 0.02,
       "model card '7B parameters' (nominal; the shape gives 6.92B, as the catalog's falcon-7b)"},
      {"mpt-7b", 6.7e9, 0.01, "HF mosaicml/mpt-7b model card table 'n_parameters 6.7B'"},
      {"phi-2", 2.78e9, 0.01, "HF microsoft/phi-2 'Model size 2.78B params'"},
      {"phi-3-mini-4k", 3.8e9, 0.01, "Phi-3-mini-4k-instruct model card '3.8B parameters'"},
      {"pythia-1b", 1011781632, 0.01, "EleutherAI/pythia README table '1,011,781,632' total params"},
      {"gemma-2-2b", 2.61e9, 0.01, "HF google/gemma-2-2b 'Model size 2.61B params'"},
      {"gemma-3-1b", 1.0e9, 0.01,
       "Gemma 3 technical report (arXiv 2503.19786) Table 1: 302M embedding + 698M non-embedding"},
      {"mistral-nemo-12b", 12.2e9, 0.01, "HF mistralai/Mistral-Nemo-Base-2407 'Model size 12.2B params'"},
      {"qwen3-8b", 8.2e9, 0.01, "HF Qwen/Qwen3-8B model card 'Number of Parameters: 8.2B'"},
      {"phi-4", 14.7e9, 0.01, "HF microsoft/phi-4 'Model size 14.7B params'"},
  };
  for (const Row& row : rows) {
    const TransformerSpec spec = fixture(row.file);
    const double count = static_cast<double>(parameter_count(spec));
    const double error = std::abs(count / row.published - 1);
    CHECK_MESSAGE(error <= row.tolerance,
                  row.file << ": " << count << " vs " << row.published << " (" << row.source << ")");
  }
}

TEST_CASE("Pythia-1B's count from its config.json is exact: 16 x 50358272 + 4096 + 2 x 50304 x 2048") {
  // Per layer: 4h^2 + 4h (attention) + 2hf + f + h (MLP) + 2 x 2h (two LayerNorms), h 2048, f 8192.
  CHECK(parameter_count(fixture("pythia-1b")) == 16 * 50358272LL + 4096 + 2 * 50304LL * 2048);
}

TEST_CASE("architecture facts read from the configs") {
  const TransformerSpec gpt2 = fixture("gpt2");
  CHECK(gpt2.positional == Positional::learned);
  CHECK(gpt2.max_positions == 1024);
  CHECK(gpt2.ffn_hidden == 4 * 768);  // n_inner null
  CHECK(gpt2.tied_embeddings);
  CHECK(gpt2.linear_bias);
  CHECK(gpt2.aliases == std::vector<std::string>{"openai-community/gpt2"});
  CHECK(gpt2.name == "gpt2");
  CHECK(gpt2.source.find("gpt2.json") != std::string::npos);
  // Dropout: the largest probability the config names, whatever the family's key.
  CHECK(gpt2.dropout == 0.1);                   // resid_pdrop
  CHECK(fixture("phi-2").dropout == 0.1);       // resid_pdrop
  CHECK(fixture("llama-3-8b").dropout == 0.0);  // attention_dropout
  CHECK(fixture("mpt-7b").dropout == 0.0);      // resid_pdrop, emb_pdrop
  CHECK(fixture("falcon-7b").dropout == 0.0);   // hidden_dropout

  const TransformerSpec falcon = fixture("falcon-7b");
  CHECK(falcon.kv_heads == 1);  // multi_query wins over num_kv_heads 71 in the old architecture
  CHECK(falcon.parallel_attn_mlp);
  CHECK(falcon.tied_embeddings);

  const TransformerSpec mpt = fixture("mpt-7b");
  CHECK(mpt.positional == Positional::alibi);  // ALiBi: no position table
  CHECK(mpt.max_positions == 0);
  CHECK(mpt.ffn_hidden == 4 * 4096);
  CHECK_FALSE(mpt.linear_bias);

  const TransformerSpec qwen = fixture("qwen2-7b-instruct");
  CHECK(qwen.qkv_bias);
  CHECK(qwen.kv_heads == 4);
  CHECK_FALSE(qwen.tied_embeddings);

  const TransformerSpec phi = fixture("phi-2");
  CHECK(phi.parallel_attn_mlp);
  CHECK(phi.norm == Norm::layernorm);
  const TransformerSpec neox = fixture("pythia-1b");
  CHECK_FALSE(neox.parallel_attn_mlp);  // two norms per layer

  const TransformerSpec gemma2 = fixture("gemma-2-2b");
  CHECK(gemma2.head_dim() == 256);  // not 2304 / 8 = 288
  CHECK(gemma2.tied_embeddings);    // Gemma's default
  CHECK(gemma2.kv_dim() == 4 * 256);
  const TransformerSpec gemma3 = fixture("gemma-3-1b");
  CHECK(gemma3.head_dim() == 256);
  CHECK(gemma3.kv_heads == 1);
  const TransformerSpec nemo = fixture("mistral-nemo-12b");
  CHECK(nemo.head_dim() == 128);  // not 5120 / 32 = 160
  CHECK_FALSE(nemo.tied_embeddings);
  const TransformerSpec qwen3 = fixture("qwen3-8b");
  CHECK_FALSE(qwen3.qkv_bias);   // Qwen2 has Q/K/V biases, Qwen3 does not
  CHECK(qwen3.head_width == 0);  // 4096 / 32 = 128 = head_dim
  const TransformerSpec phi4 = fixture("phi-4");
  CHECK(phi4.kv_heads == 10);
  CHECK(phi4.seq_len == 16384);
  CHECK(fixture("llama-3-8b").seq_len == 8192);
  CHECK(fixture("phi-3-mini-4k").gated_mlp);
}

TEST_CASE("the pre-training context comes from rope_scaling's original length when given") {
  const auto spec =
      spec_from_hf_config(nlohmann::json::parse(llama(R"(, "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
        "original_max_position_embeddings": 128})")),
                          "x.json");
  CHECK(spec.seq_len == 128);
  CHECK(spec_from_hf_config(nlohmann::json::parse(llama("")), "x.json").seq_len == 256);
}

TEST_CASE("head_dim equal to hidden / heads changes nothing; any other becomes the head width") {
  const TransformerSpec same = spec_from_hf_config(nlohmann::json::parse(llama(R"(, "head_dim": 16)")), "x.json");
  CHECK(same.head_dim() == 16);
  CHECK(same.head_width == 0);
  // Gemma 7B: hidden 3072, 16 heads, head_dim 256 (not 3072 / 16 = 192): Q is 16 x 256 = 4096 wide.
  const TransformerSpec gemma = spec_from_hf_config(nlohmann::json::parse(R"({"model_type": "gemma",
    "hidden_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 16,
    "head_dim": 256, "intermediate_size": 24576, "vocab_size": 256000})"),
                                                    "x.json");
  CHECK(gemma.head_dim() == 256);
  // Per layer: Q and O 2 x 3072 x 4096, K and V 2 x 3072 x 4096, MLP 3 x 3072 x 24576, 2 norms.
  CHECK(parameter_breakdown(gemma).per_layer == 4 * 3072LL * 4096 + 3 * 3072LL * 24576 + 2 * 3072);
  // Heads that do not divide hidden are fine with a head_dim, refused without one.
  const std::string six_heads = R"({"model_type": "qwen3", "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 6, "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 1000)";
  CHECK(spec_from_hf_config(nlohmann::json::parse(six_heads + R"(, "head_dim": 32})"), "x.json").head_dim() == 32);
  const std::string what = what_of(six_heads + "}");
  CHECK_MESSAGE(what.find("/num_attention_heads") != std::string::npos, what);
}

TEST_CASE("a multimodal Gemma 3 config is refused with the hint to give its text part") {
  const std::string what = what_of(R"({"model_type": "gemma3", "text_config": {}})");
  CHECK_MESSAGE(what.find("gemma3_text") != std::string::npos, what);
}

TEST_CASE("mixture-of-experts configs are refused naming the key; one expert is dense") {
  const std::string what = what_of(llama(R"(, "num_local_experts": 8, "num_experts_per_tok": 2)"));
  CHECK_MESSAGE(what.find("/num_local_experts") != std::string::npos, what);
  CHECK_MESSAGE(what.find("config.json is not imported yet") != std::string::npos, what);
  CHECK(what_of(llama(R"(, "model_type": "qwen2_moe", "num_experts": 60)")).find("/num_experts") != std::string::npos);
  CHECK(what_of(llama(R"(, "num_experts": null)")) == "(no InputError)");
}

TEST_CASE("unknown architectures and missing or bad keys are InputErrors with the JSON path") {
  std::string what = what_of(R"({"model_type": "t5", "d_model": 512})");
  CHECK_MESSAGE(what.find("/model_type") != std::string::npos, what);
  CHECK_MESSAGE(what.find("config.json") != std::string::npos, what);
  what = what_of(R"({"architectures": ["GPT2LMHeadModel"], "n_embd": 64, "n_layer": 2,
    "n_head": 4, "n_positions": 128, "vocab_size": 100})");
  CHECK(what == "(no InputError)");  // no model_type: the architecture class decides
  what = what_of(R"({"model_type": "llama", "hidden_size": 64})");
  CHECK_MESSAGE(what.find("/num_hidden_layers") != std::string::npos, what);
  what = what_of(llama(R"(, "num_key_value_heads": 3)"));  // the later key wins
  CHECK_MESSAGE(what.find("/num_key_value_heads") != std::string::npos, what);
  what = what_of(R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 5,
    "n_positions": 128, "vocab_size": 100})");
  CHECK_MESSAGE(what.find("/n_head") != std::string::npos, what);
  CHECK(what_of("[1, 2]").find("expected a config.json object") != std::string::npos);
}
