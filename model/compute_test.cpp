// Tests of model/compute: the optimizer step's bytes per parameter and the LoRA GEMM
// backward, each against a hand count.
#include "model/compute.hpp"
#include "model/flops.hpp"
#include "model/transformer.hpp"

#include <doctest/doctest.h>

#include <stdexcept>

namespace stepcast {
namespace {

TEST_CASE("an Adam step moves 28 bytes per parameter: fp32 master, m, v read and written, "
          "16-bit gradient read, 16-bit weight written") {
  // read 4+4+4+2, write 4+4+4+2 (compute.hpp, PyTorch AdamW's reads and in-place updates).
  CHECK(optimizer_bytes_per_param(Precision::bf16_mixed, false, false) == 28);
  CHECK(optimizer_bytes_per_param(Precision::fp16_mixed, false, false) == 28);
  // fp32 gradients: the gradient read grows from 2 to 4 bytes.
  CHECK(optimizer_bytes_per_param(Precision::bf16_mixed, true, false) == 30);
  // fp32 training: 4-byte gradient, no 16-bit copy.
  CHECK(optimizer_bytes_per_param(Precision::fp32, false, false) == 28);
  // SGD with momentum: master and momentum r/w (16) + gradient 2 + copy 2.
  CHECK(optimizer_bytes_per_param(Precision::bf16_mixed, false, true) == 20);
}

/// One layer, h 8, 2 heads of 4, ffn 16, V 32, no gating: GEMM weights per layer
/// h·(q+2kv) 192 + q·h 64 + h·f 128 + f·h 128 = 512, LM head V·h 256.
TransformerSpec small_gpt() {
  TransformerSpec s;
  s.name = "small";
  s.layers = 1;
  s.hidden = 8;
  s.heads = 2;
  s.kv_heads = 2;
  s.ffn_hidden = 16;
  s.vocab = 32;
  s.seq_len = 4;
  return s;
}

/// 1 FLOP/s at every GEMM size (efficiency max_fraction · F/(F + 0) = 1) and a memory so
/// fast that the memory-bound work is ~1e-18 s: times in seconds are FLOP counts.
DeviceRates unit_device(double attention_efficiency) {
  DeviceRates d;
  d.peak_tflops = 1e-12;
  d.memory_bw_GBps = 1e12;
  d.memory_efficiency = 1;
  d.gemm = GemmEfficiency{1.0, 0.0, "unit"};
  d.attention_efficiency = attention_efficiency;
  return d;
}

TEST_CASE("LoRA backward = one input-gradient GEMM per frozen weight + the adapters' input and weight "
          "gradients; attention backward unchanged") {
  const TransformerSpec spec = small_gpt();
  const LoraSpec lora{2, {"q", "v"}};
  FlopsOptions o;
  o.lora = &lora;
  o.causal_halving = false;
  // 4 tokens. Frozen GEMMs forward 2·(512 + 256)·4 = 6144, backward 6144 (no weight
  // gradients). Adapters q (8 -> 8) and v (8 -> 8) of rank 2: forward 2·2·(8+8)·2·4 = 512,
  // backward 1024. Attention core 4·s·q = 4·4·8 = 128 per token: 512 forward, 1024 backward.
  const MicroStepTimes t = micro_step_times(spec, 1, 4, Precision::bf16_mixed, o, false, unit_device(1));
  CHECK(t.forward_s == doctest::Approx(6144 + 512 + 512).epsilon(1e-12));
  CHECK(t.backward_s == doctest::Approx(6144 + 1024 + 1024).epsilon(1e-12));
  // With unit efficiencies the times are the FLOP count's forward and backward.
  const StepFlops f = training_flops(spec, 4, 4, o);
  CHECK(t.backward_s == doctest::Approx(f.backward).epsilon(1e-12));
  CHECK(t.head_forward_s == doctest::Approx(2 * 256 * 4));
  CHECK(t.head_backward_s == doctest::Approx(2 * 256 * 4));  // frozen head: input gradient only

  // Flash attention at half of peak: only the attention core slows (causal: 256 forward,
  // backward 2.5x); the adapters stay at the GEMM efficiency.
  o.causal_halving = true;
  const MicroStepTimes flash = micro_step_times(spec, 1, 4, Precision::bf16_mixed, o, true, unit_device(0.5));
  CHECK(flash.forward_s == doctest::Approx(6144 + 512 + 256 / 0.5).epsilon(1e-12));
  CHECK(flash.backward_s == doctest::Approx(6144 + 1024 + 2.5 * 256 / 0.5).epsilon(1e-12));
}

TEST_CASE("LoRA adapters are two thin GEMMs per target: tokens x r (k = d_in) and tokens x d_out (k = r)") {
  const auto g = lora_adapter_gemms(small_gpt(), LoraSpec{2, {"q", "v"}}, 4);
  REQUIRE(g.size() == 4);
  CHECK(g[0].m == 4);
  CHECK(g[0].n == 2);
  CHECK(g[0].k == 8);
  CHECK(g[1].n == 8);
  CHECK(g[1].k == 2);
  CHECK_THROWS_AS(lora_adapter_gemms(small_gpt(), LoraSpec{2, {"gate"}}, 4), std::invalid_argument);
}

TEST_CASE("without LoRA, backward is twice the forward GEMMs (input and weight gradients)") {
  const TransformerSpec spec = small_gpt();
  FlopsOptions o;
  o.causal_halving = false;
  const MicroStepTimes t = micro_step_times(spec, 1, 4, Precision::bf16_mixed, o, false, unit_device(1));
  CHECK(t.forward_s == doctest::Approx(6144 + 512).epsilon(1e-12));
  CHECK(t.backward_s == doctest::Approx(2 * 6144 + 1024).epsilon(1e-12));
  CHECK(t.head_backward_s == doctest::Approx(2 * 2 * 256 * 4));
}

}  // namespace
}  // namespace stepcast
