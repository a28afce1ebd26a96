// Tests of model/flops: hand-worked examples of each formula, and properties.
#include "model/flops.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <stdexcept>

using namespace stepcast;

namespace {

/// A GPT with ffn = 4h, multi-head attention, no gating: the shape of Narayanan et al.'s
/// closed form. L = 2, h = 64, a = 4, V = 1000.
TransformerSpec tiny_gpt() {
  TransformerSpec s;
  s.name = "tiny-gpt";
  s.layers = 2;
  s.hidden = 64;
  s.heads = 4;
  s.kv_heads = 4;
  s.ffn_hidden = 256;
  s.vocab = 1000;
  s.seq_len = 128;
  s.positional = Positional::learned;
  s.max_positions = 128;
  s.linear_bias = true;
  return s;
}

const TransformerSpec& catalog_model(const char* name) {
  const TransformerSpec* spec = find_model(name);
  REQUIRE_MESSAGE(spec != nullptr, name);
  return *spec;
}

FlopsOptions opts(Recompute r, bool causal, const LoraSpec* lora = nullptr) {
  FlopsOptions o;
  o.recompute = r;
  o.causal_halving = causal;
  o.lora = lora;
  return o;
}

}  // namespace

TEST_CASE("headline FLOPs are 6PD") {
  // 6 · 1e9 parameters · 1e6 tokens = 6e15.
  CHECK(headline_training_flops(1e9, 1e6) == doctest::Approx(6e15));
  CHECK(headline_training_flops(0, 1e6) == 0);
}

TEST_CASE("refined count equals Narayanan's closed form for a GPT with ffn 4h, MHA, no halving") {
  // B = 4 sequences of s = 128 tokens, L = 2, h = 64, V = 1000:
  //   72·B·s·L·h²·(1 + s/6h + V/12Lh) = 72·512·2·4096·(1 + 128/384 + 1000/1536)
  //   = 301989888 · (1 + 0.333333 + 0.651042) = 599261184.
  const TransformerSpec spec = tiny_gpt();
  const double tokens = 4 * 128;
  const StepFlops f = training_flops(spec, 128, tokens, opts(Recompute::none, false));
  CHECK(f.forward + f.backward == doctest::Approx(599261184.0));
  CHECK(f.recompute == 0);
  CHECK(f.backward == doctest::Approx(2 * f.forward));
}

TEST_CASE("refined count equals Megatron's general GQA/SwiGLU form (no causal halving)") {
  // Megatron-LM num_floating_point_operations:
  //   12·T·L·h²·[(1 + g/a + s/h)·q/h + (f/h)·3/2 + V/(2Lh)], Llama-3-8B, T = 8192, s = 8192:
  //   h = 4096, a = 32, g = 8, q = h, f = 14336, V = 128256, L = 32.
  const TransformerSpec& spec = catalog_model("llama-3-8b");
  const double T = 8192, s = 8192, L = 32, h = 4096, a = 32, g = 8, f = 14336, V = 128256;
  const double megatron = 12 * T * L * h * h * ((1 + g / a + s / h) * 1.0 + (f / h) * 1.5 + V / (2 * L * h));
  const StepFlops out = training_flops(spec, 8192, T, opts(Recompute::none, false));
  CHECK(out.hardware() == doctest::Approx(megatron).epsilon(1e-12));
}

TEST_CASE("causal halving removes half of the attention-score work") {
  // Forward attention core = L·4·s·q per token; halving saves L·2·s·q forward, ·3 with the
  // backward: tiny GPT, 512 tokens, s = 128: 3·2·2·128·64·512 = 50331648.
  const TransformerSpec spec = tiny_gpt();
  const StepFlops full = training_flops(spec, 128, 512, opts(Recompute::none, false));
  const StepFlops half = training_flops(spec, 128, 512, opts(Recompute::none, true));
  CHECK(full.hardware() - half.hardware() == doctest::Approx(50331648.0));
  CHECK(full.model == half.model);
}

TEST_CASE("a sliding window keeps window_pair_share of its layers' causal attention work") {
  // Tiny GPT (2 layers, q = 64), s = 128, 512 tokens, one layer windowed to 16 keys: that
  // layer's core (2·s·q per token forward under halving, x3 with the backward) shrinks to
  // window_pair_share(128, 16) of itself; the model convention (no halving) counts 16 keys
  // for each query where it counted 128.
  TransformerSpec spec = tiny_gpt();
  const StepFlops full = training_flops(spec, 128, 512, opts(Recompute::none, true));
  spec.sliding_window = SlidingWindow{16, 1};
  const StepFlops windowed = training_flops(spec, 128, 512, opts(Recompute::none, true));
  CHECK(full.hardware() - windowed.hardware() ==
        doctest::Approx(3.0 * 2 * 128 * 64 * 512 * (1 - window_pair_share(128, 16))));
  CHECK(full.model - windowed.model == doctest::Approx(12.0 * 64 * 128 * 512 * (1 - 16.0 / 128)));
  spec.sliding_window = SlidingWindow{128, 2};  // a window as long as the sequence changes nothing
  CHECK(training_flops(spec, 128, 512, opts(Recompute::none, true)).hardware() == doctest::Approx(full.hardware()));
}

TEST_CASE("full recompute adds one forward of the layers (Narayanan's 96 form)") {
  // 96·B·s·L·h²·(1 + s/6h + V/16Lh) = 96·512·2·4096·(1 + 1/3 + 1000/2048) = 733478912.
  const TransformerSpec spec = tiny_gpt();
  const StepFlops none = training_flops(spec, 128, 512, opts(Recompute::none, false));
  const StepFlops full = training_flops(spec, 128, 512, opts(Recompute::full, false));
  CHECK(full.hardware() == doctest::Approx(733478912.0));
  // The extra work is the forward without the LM head (2·V·h per token).
  CHECK(full.recompute == doctest::Approx(none.forward - 2.0 * 1000 * 64 * 512));
}

TEST_CASE("selective recompute redoes only the attention core") {
  // L·4·s·q per token, halved for causal: 2·4·128·64/2·512 = 16777216.
  const TransformerSpec spec = tiny_gpt();
  const StepFlops sel = training_flops(spec, 128, 512, opts(Recompute::selective, true));
  CHECK(sel.recompute == doctest::Approx(16777216.0));
}

TEST_CASE("selective recompute's modules add their forward GEMMs: MLA's up-projections, the dense MLP") {
  const TransformerSpec* dsv3 = find_model("deepseek-v3");
  REQUIRE(dsv3 != nullptr);
  FlopsOptions up = opts(Recompute::selective, true);
  up.recompute_modules.mla_up_proj = true;
  const double core = training_flops(*dsv3, 4096, 4096, opts(Recompute::selective, true)).recompute;
  // 2·L·(r_q·H·(d_n + d_r) + r_kv·H·(d_n + d_v)) per token = 2·61·(1536·128·192 + 512·128·256).
  const double up_flops = 2.0 * 61 * (1536.0 * 128 * 192 + 512.0 * 128 * 256);
  CHECK(recompute_gemm_flops_per_token(*dsv3, up.recompute_modules) == doctest::Approx(up_flops));
  CHECK(training_flops(*dsv3, 4096, 4096, up).recompute - core == doctest::Approx(up_flops * 4096));
  // The dense MLP's GEMMs in DeepSeek-V3's 3 dense layers: 2·3·3·h·f.
  RecomputeModules mlp{false};
  mlp.mlp = true;
  CHECK(recompute_gemm_flops_per_token(*dsv3, mlp) == doctest::Approx(2.0 * 3 * 3 * 7168.0 * 18432));
  CHECK(recompute_gemm_flops_per_token(*dsv3, RecomputeModules{}) == 0);
}

TEST_CASE("LoRA parameters for rank r on q and v are L·2·r·(h + h) for MHA") {
  // Llama-2-7B, r = 8, q and v: 32·2·8·(4096 + 4096) = 4194304 (PEFT prints the same).
  const LoraSpec lora{8, {"q", "v"}};
  CHECK(lora_parameter_count(catalog_model("llama-2-7b"), lora) == 4194304);
  // GQA: k and v are h -> kv_dim = 1024 on Llama-3-8B: 32·8·((4096+1024)·2) = 2621440.
  CHECK(lora_parameter_count(catalog_model("llama-3-8b"), LoraSpec{8, {"k", "v"}}) == 2621440);
  // MLP targets: gate, up (h -> f) and down (f -> h), 32·8·3·(4096 + 11008) = 11599872.
  CHECK(lora_parameter_count(catalog_model("llama-2-7b"), LoraSpec{8, {"gate", "up", "down"}}) == 11599872);
}

TEST_CASE("LoRA rejects unknown, repeated or absent targets and rank 0") {
  const TransformerSpec& llama = catalog_model("llama-2-7b");
  CHECK_THROWS_AS(lora_parameter_count(llama, LoraSpec{8, {"qkv"}}), std::invalid_argument);
  CHECK_THROWS_AS(lora_parameter_count(llama, LoraSpec{8, {"q", "q"}}), std::invalid_argument);
  CHECK_THROWS_AS(lora_parameter_count(llama, LoraSpec{0, {"q"}}), std::invalid_argument);
  CHECK_THROWS_AS(lora_parameter_count(tiny_gpt(), LoraSpec{8, {"gate"}}), std::invalid_argument);
}

TEST_CASE("LoRA backward skips frozen weight gradients but adapters add their own work") {
  // Llama-2-7B, 4096 tokens: backward = 2·W + 2·A + 4·P_a per token, where the full
  // backward is 4·W + 2·A; so LoRA saves 2·W - 4·P_a per token.
  const TransformerSpec& spec = catalog_model("llama-2-7b");
  const LoraSpec lora{16, {"q", "k", "v", "o"}};
  const double tokens = 4096;
  const StepFlops base = training_flops(spec, 4096, tokens, opts(Recompute::none, true));
  const StepFlops lo = training_flops(spec, 4096, tokens, opts(Recompute::none, true, &lora));
  CHECK(lo.backward < base.backward);
  const double p_a = static_cast<double>(lora_parameter_count(spec, lora));
  CHECK(lo.forward - base.forward == doctest::Approx(2 * p_a * tokens));
  const double w = 32.0 * (4 * 4096.0 * 4096 + 3 * 4096.0 * 11008) + 32000.0 * 4096;
  CHECK(base.backward - lo.backward == doctest::Approx((2 * w - 4 * p_a) * tokens));
  // MFU under LoRA counts the work LoRA asks for: 4·N + 6·P_a per token instead of 6·N
  // (no weight gradients for the frozen N), so MFU cannot exceed 1 for a fine-tune.
  const double n = static_cast<double>(parameter_count(spec));
  CHECK(base.model - lo.model == doctest::Approx((2 * n - 6 * p_a) * tokens));
}

TEST_CASE("model FLOPs follow llm-foundry: 6N + 12Lhs per token with N = all parameters") {
  // MPT-70b, seq 2048, H100 BF16 (989 TFLOP/s): 1007 tokens/s/GPU at MFU 0.4125 means
  // 0.4125·989e12/1007 = 4.0513e11 FLOPs per token; 6·64862437376 + 12·80·8192·2048
  // = 4.0528e11 (within 0.05%).
  const TransformerSpec& spec = catalog_model("mpt-70b");
  const StepFlops f = training_flops(spec, 2048, 1.0, opts(Recompute::full, true));
  CHECK(f.model == doctest::Approx(6.0 * 64862437376 + 12.0 * 80 * 8192 * 2048));
  CHECK(f.model == doctest::Approx(0.4125 * 989e12 / 1007).epsilon(0.001));
}

TEST_CASE("layer GEMMs reproduce the forward GEMM FLOPs") {
  // Σ 2·m·n·k·count over the layer GEMMs · L + the LM head = forward − attention core.
  const TransformerSpec& spec = catalog_model("llama-3-8b");
  const std::int64_t tokens = 2048;
  double gemm = 0;
  for (const GemmShape& g : layer_gemms(spec, tokens)) {
    const double flops =
        2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) * g.count_per_layer;
    gemm += g.name == "lm_head" ? flops : flops * static_cast<double>(spec.layers);
    CHECK(g.m == tokens);
  }
  const StepFlops f = training_flops(spec, 2048, tokens, opts(Recompute::none, false));
  const double attn = 32.0 * 4 * 2048 * 4096 * tokens;
  CHECK(gemm == doctest::Approx(f.forward - attn));
  const auto gemms = layer_gemms(spec, tokens);
  REQUIRE(gemms.size() == 5);
  CHECK(gemms[0].n == 4096 + 2 * 1024);  // fused QKV with 8 KV heads of 128
  CHECK(gemms[2].count_per_layer == 2);  // gate and up
}

TEST_CASE("more tokens never give fewer FLOPs") {
  for (const auto& spec : model_catalog()) {
    double prev_hw = -1, prev_model = -1;
    for (double tokens : {0.0, 1.0, 512.0, 4096.0, 1e6}) {
      const StepFlops f = training_flops(spec, spec.seq_len, tokens, opts(Recompute::none, true));
      CHECK_MESSAGE(f.hardware() >= prev_hw, spec.name);
      CHECK_MESSAGE(f.model >= prev_model, spec.name);
      prev_hw = f.hardware();
      prev_model = f.model;
    }
  }
}

TEST_CASE("recompute never lowers hardware FLOPs and never changes model FLOPs") {
  for (const auto& spec : model_catalog()) {
    for (bool causal : {false, true}) {
      const auto none = training_flops(spec, spec.seq_len, 8192, opts(Recompute::none, causal));
      const auto sel = training_flops(spec, spec.seq_len, 8192, opts(Recompute::selective, causal));
      const auto full = training_flops(spec, spec.seq_len, 8192, opts(Recompute::full, causal));
      CHECK_MESSAGE(sel.hardware() >= none.hardware(), spec.name);
      CHECK_MESSAGE(full.hardware() >= sel.hardware(), spec.name);
      CHECK_MESSAGE(none.model == sel.model, spec.name);
      CHECK_MESSAGE(none.model == full.model, spec.name);
      CHECK_MESSAGE(none.forward == full.forward, spec.name);
    }
  }
}

TEST_CASE("int64 products of counts are checked: a wrapped product never passes for a small count") {
  const std::int64_t big = std::int64_t{1} << 62;
  CHECK(checked_product(big, 1, "x") == big);
  CHECK(checked_product(std::int64_t{1} << 31, std::int64_t{1} << 31, "x") == std::int64_t{1} << 62);
  CHECK_THROWS_AS(checked_product(big, 2, "x"), std::invalid_argument);
  CHECK_THROWS_AS(checked_product(std::int64_t{1} << 32, std::int64_t{1} << 32, "x"), std::invalid_argument);
  // A LoRA rank near 2^62 no longer wraps to a negative or small adapter count.
  CHECK_THROWS_AS(lora_parameter_count(tiny_gpt(), LoraSpec{big, {"q"}}), std::invalid_argument);
  CHECK(lora_parameter_count(tiny_gpt(), LoraSpec{1 << 20, {"q"}}) == 2 * (1 << 20) * 128);
}

// Fuzz finding F4 (a record with micro_batch 0): an error, never an assert.
TEST_CASE("GEMM shapes and training FLOPs refuse empty batches with an error") {
  CHECK_THROWS_AS(layer_gemms(tiny_gpt(), 0), std::invalid_argument);
  CHECK_THROWS_AS(training_flops(tiny_gpt(), 0, 1, opts(Recompute::none, false)), std::invalid_argument);
  CHECK_THROWS_AS(training_flops(tiny_gpt(), 128, -1, opts(Recompute::none, false)), std::invalid_argument);
  CHECK(layer_gemms(tiny_gpt(), 1).size() == 5);
}

namespace stepcast {
namespace {

TEST_CASE(
    "HFU's FLOPs are MFU's plus recompute in the same attention convention: >= model FLOPs, equal "
    "without recompute, whatever the kernel's causal halving") {
  const LoraSpec lora{8, {"q", "v"}};
  for (const auto& spec : model_catalog()) {
    for (bool causal : {false, true}) {
      for (const LoraSpec* l : {static_cast<const LoraSpec*>(nullptr), &lora}) {
        const double tokens = 4.0 * static_cast<double>(spec.seq_len);
        const auto none = training_flops(spec, spec.seq_len, tokens, opts(Recompute::none, causal, l));
        const auto sel = training_flops(spec, spec.seq_len, tokens, opts(Recompute::selective, causal, l));
        const auto full = training_flops(spec, spec.seq_len, tokens, opts(Recompute::full, causal, l));
        CHECK_MESSAGE(none.hfu_flops() == none.model, spec.name);
        CHECK_MESSAGE(sel.hfu_flops() > sel.model, spec.name);
        CHECK_MESSAGE(full.hfu_flops() > sel.hfu_flops(), spec.name);
        // Selective recompute re-does the attention core's forward: 4·L·q·s per token, a
        // third of MFU's 12·L·q·s attention term (q = heads·head_dim, h unless head_dim is
        // given), with or without causal halving.
        // MLA: Q·K^T over qk_nope + qk_rope and P·V over v_head, their mean in place of head_dim.
        const double q =
            spec.mla
                ? static_cast<double>(spec.heads) *
                      static_cast<double>(spec.mla->qk_nope_dim + spec.mla->qk_rope_dim + spec.mla->v_head_dim) / 2.0
                : static_cast<double>(spec.heads * spec.head_dim());
        // Windowed layers (gpt-oss) count their window's keys in place of s.
        const double s_len = static_cast<double>(spec.seq_len);
        const double windowed =
            spec.sliding_window ? static_cast<double>(spec.sliding_window->layers) / static_cast<double>(spec.layers)
                                : 0.0;
        const double keys =
            spec.sliding_window
                ? 1 - windowed + windowed * std::min(static_cast<double>(spec.sliding_window->tokens), s_len) / s_len
                : 1.0;
        const double attention_forward = 4.0 * static_cast<double>(spec.layers) * q * s_len * tokens * keys;
        CHECK_MESSAGE(sel.hfu_flops() - sel.model == doctest::Approx(attention_forward).epsilon(1e-12), spec.name);
      }
    }
  }
}

TEST_CASE("full recompute adds one forward of the layers' GEMMs and the uncausal attention core") {
  // tiny GPT: L 2, h 64, 4 heads, ffn 4h, no gating: layer GEMM weights 4h² + 2·h·4h = 12h².
  const TransformerSpec spec = tiny_gpt();
  const double tokens = 64, s = 64, h = 64, L = 2;
  const auto full = training_flops(spec, 64, tokens, opts(Recompute::full, true));
  CHECK(full.model_recompute == doctest::Approx((2 * L * 12 * h * h + 4 * L * h * s) * tokens).epsilon(1e-12));
}

}  // namespace
}  // namespace stepcast
