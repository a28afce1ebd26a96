// Tests of model/kernels: each kernel-time formula against its hand-worked value.
#include "model/kernels.hpp"
#include "model/transformer.hpp"
#include "topologies/gpu.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>

namespace stepcast {
namespace {

// GCC 12 reports a false -Wrestrict on short string assignments here (GCC bug 105651).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

// A GPU of 4 SMs at 4 TFLOP/s (1 TFLOP/s per SM) and 1000 GB/s: a 128x128 tile of depth k
// takes 2·128·128·k / 1e12 s on one SM.
constexpr double kCeiling = 4, kBw = 1000;
constexpr int kSms = 4;
double tile_s(double k) { return 2.0 * 128 * 128 * k / 1e12; }

TEST_CASE("a low-precision cast writes a rowwise and a columnwise copy: 2 B under fp8, 1.125 B under NVFP4") {
  CHECK(gemm_operand_bytes(Precision::fp4_mixed) == 0.5625);  // 4 bits + a 1-byte scale per 16
  CHECK(gemm_operand_bytes(Precision::fp8_mixed) == 1.0);
  CHECK(gemm_operand_bytes(Precision::bf16_mixed) == 2.0);
  CHECK(gemm_operand_bytes(Precision::fp32) == 4.0);
  CHECK(operand_bytes(Dtype::tf32) == 4.0);
  CHECK(gemm_cast_bytes(Precision::fp8_mixed) == 2.0);
  CHECK(gemm_cast_bytes(Precision::fp4_mixed) == 1.125);
  CHECK(gemm_cast_bytes(Precision::bf16_mixed) == 0.0);
  CHECK(gemm_cast_bytes(Precision::fp32) == 0.0);
}

TEST_CASE("a GEMM of exactly one full wave of tiles runs at the ceiling") {
  // 256 x 512 output: 2 x 2 tiles of 128x256 (or 2 x 4 of 128x128): 4 blocks on 4 SMs.
  const double t = gemm_time_s(256, 512, 4096, 1, 2, kCeiling, kSms, kBw);
  CHECK(t == doctest::Approx(2.0 * 256 * 512 * 4096 / (kCeiling * 1e12)));
}

TEST_CASE("one tile more than a wave costs a whole extra wave (wave quantization)") {
  // 128 x 640 output with 128x128 tiles: 5 blocks on 4 SMs = 2 waves of one 128x128 tile;
  // 128x256 tiles: 3 blocks, 1 wave of 2x the work = the same. Split-K cannot help (no SM
  // idles at p = 1 with 5 blocks... one wave of 5 would need 5 SMs).
  const double t = gemm_time_s(128, 640, 4096, 1, 2, kCeiling, kSms, kBw);
  CHECK(t == doctest::Approx(2 * tile_s(4096)));
  // 4/5 of the work in the same time as 1.25 waves' worth: 62.5% of the ceiling.
  CHECK(2.0 * 128 * 640 * 4096 / t / 1e12 == doctest::Approx(0.625 * kCeiling));
}

TEST_CASE("a GEMM with fewer tiles than SMs splits K to fill them, paying the fp32 partial sums") {
  // 128 x 128 output, one tile: split 4 ways, each SM does k/4, plus 4·128·128·4 bytes.
  const double k = 1 << 20;
  const double t = gemm_time_s(128, 128, static_cast<std::int64_t>(k), 1, 2, kCeiling, kSms, kBw);
  const double split = tile_s(k / 4) + 4.0 * 128 * 128 * 4 / (kBw * 1e9);
  CHECK(t == doctest::Approx(split));
  CHECK(t < tile_s(k));  // better than one SM doing it all
}

TEST_CASE("a GEMM's rows are aligned when n and k are whole multiples of 16 bytes") {
  CHECK(gemm_rows_aligned(50304, 768, 2));        // nanoGPT's padded GPT-2 vocabulary
  CHECK_FALSE(gemm_rows_aligned(50257, 768, 2));  // GPT-2's own: 100,514 B rows
  CHECK_FALSE(gemm_rows_aligned(768, 50257, 2));  // as the contracted dimension too
  CHECK(gemm_rows_aligned(8, 8, 2));
  CHECK_FALSE(gemm_rows_aligned(8, 8, 1));  // fp8 needs 16 elements
  CHECK(gemm_rows_aligned(16, 16, 1));
  CHECK(gemm_rows_aligned(4, 4, 4));  // fp32
  CHECK_FALSE(gemm_rows_aligned(4, 6, 4));
}

TEST_CASE("a misaligned GEMM runs its FLOPs at the misaligned rate, never faster than its bytes") {
  // 2·8192·50257·768 FLOP at 125 TFLOP/s.
  CHECK(misaligned_gemm_time_s(8192, 50257, 768, 1, 2, 125, 4000) ==
        doctest::Approx(2.0 * 8192 * 50257 * 768 / 125e12));
  // At 1 GB/s the same GEMM is bound by its (m·k + k·n + m·n)·2 bytes.
  const double bytes = (8192.0 * 768 + 768.0 * 50257 + 8192.0 * 50257) * 2;
  CHECK(misaligned_gemm_time_s(8192, 50257, 768, 1, 2, 125, 1) == doctest::Approx(bytes / 1e9));
  CHECK_THROWS_AS(misaligned_gemm_time_s(8192, 50257, 768, 1, 2, 0, 1), std::invalid_argument);
}

TEST_CASE("a GEMM whose bytes take longer than its tiles is bound by memory bandwidth") {
  // At 1000 TFLOP/s and 1 GB/s: (256·4096 + 4096·512 + 256·512)·2 B = 6,553,600 B -> 6.5536 ms.
  CHECK(gemm_time_s(256, 512, 4096, 1, 2, 1000, kSms, 1) == doctest::Approx(6'553'600 / 1e9));
}

TEST_CASE("an output smaller than a tile uses a tile cut to it (16-row tensor-core steps)") {
  // 8 x 4096 output, k = 4096 (a LoRA rank-8 projection): tiles 16 x 128 (or 16 x 256): 32
  // blocks of 128 wide over 4 SMs = 8 waves of 2·16·128·4096.
  const double t = gemm_time_s(8, 4096, 4096, 1, 2, kCeiling, kSms, kBw);
  CHECK(t == doctest::Approx(8 * 2.0 * 16 * 128 * 4096 / 1e12));
}

TEST_CASE("batched GEMMs count their tiles together") {
  // 8 batches of one 128x128 tile: 8 blocks on 4 SMs = 2 waves.
  CHECK(gemm_time_s(128, 128, 64, 8, 2, kCeiling, kSms, kBw) == doctest::Approx(2 * tile_s(64)));
}

TEST_CASE("gemm_time_s refuses sizes below 1 and a zero ceiling") {
  CHECK_THROWS_AS(gemm_time_s(0, 1, 1, 1, 2, kCeiling, kSms, kBw), std::invalid_argument);
  CHECK_THROWS_AS(gemm_time_s(1, 1, 1, 1, 2, 0, kSms, kBw), std::invalid_argument);
}

AttentionRates two_curves() {
  AttentionRates r;
  r.curves.push_back({64, true, AttentionPass::forward, {{1024, 100}, {4096, 200}}, "test"});
  r.curves.push_back({128, true, AttentionPass::forward, {{1024, 200}, {4096, 400}}, "test"});
  r.curves.push_back({128, false, AttentionPass::backward, {{1024, 300}}, "test"});
  return r;
}

TEST_CASE("attention rate: linear in log(seq) between points, flat beyond the ends") {
  const AttentionRates r = two_curves();
  CHECK(attention_tflops(r, 64, true, AttentionPass::forward, 2048) == doctest::Approx(150));  // log-midpoint
  CHECK(attention_tflops(r, 64, true, AttentionPass::forward, 512) == doctest::Approx(100));
  CHECK(attention_tflops(r, 64, true, AttentionPass::forward, 65536) == doctest::Approx(200));
}

TEST_CASE("attention rate: head sizes between curves interpolate, beyond them take the nearest") {
  const AttentionRates r = two_curves();
  CHECK(attention_tflops(r, 96, true, AttentionPass::forward, 1024) == doctest::Approx(150));
  CHECK(attention_tflops(r, 256, true, AttentionPass::forward, 1024) == doctest::Approx(200));
  CHECK(attention_tflops(r, 32, true, AttentionPass::forward, 1024) == doctest::Approx(100));
}

TEST_CASE("attention rate: a missing causality borrows the other one; a missing pass is an error") {
  AttentionRates r = two_curves();
  CHECK(attention_tflops(r, 128, true, AttentionPass::backward, 1024) == doctest::Approx(300));
  r.scale = 0.5;
  r.backward_scale = 0.5;
  CHECK(attention_tflops(r, 128, true, AttentionPass::backward, 1024) == doctest::Approx(75));
  CHECK(attention_tflops(r, 128, true, AttentionPass::forward, 1024) == doctest::Approx(100));
  r.curves.pop_back();
  CHECK_THROWS_AS(attention_tflops(r, 128, true, AttentionPass::backward, 1024), std::invalid_argument);
}

TransformerSpec gpt(Norm norm, bool gated, Positional pos) {
  TransformerSpec s;
  s.name = "t";
  s.layers = 2;
  s.hidden = 64;
  s.heads = 4;
  s.kv_heads = 4;
  s.ffn_hidden = 256;
  s.vocab = 1000;
  s.norm = norm;
  s.gated_mlp = gated;
  s.positional = pos;
  return s;
}

TEST_CASE("a MoE layer's MLP memory work runs at its experts' widths: k copies of f_e, the shared experts beside") {
  TransformerSpec s = gpt(Norm::rmsnorm, true, Positional::rope);  // h 64, dense f 256, gated
  s.moe = MoeSpec{8, 2, 0, 128, 0, 0, 1};                          // k 2 x f_e 128 = the dense 256
  // Fused SwiGLU moves 3w per element: 2 routed copies of 128 match one dense 256, no casts.
  CHECK(moe_mlp_memory_delta_bytes(s, 10, 20, 2, KernelProfile::fused, 0, 1, false) == doctest::Approx(0));
  // Under fp8 (casts of 2 + 2 bytes) the routed copies cast k·h up-inputs instead of h.
  CHECK(moe_mlp_memory_delta_bytes(s, 10, 20, 2, KernelProfile::fused, 2, 1, false) ==
        doctest::Approx(20 * 4 * (64 + 128) - 10 * 4 * (64 + 256)));
  // k 4 of f_e 256 (gpt-oss's shape: k·f_e four times the dense width) and one shared expert.
  s.moe = MoeSpec{8, 4, 1, 256, 0, 0, 1};
  CHECK(moe_mlp_memory_delta_bytes(s, 10, 40, 2, KernelProfile::fused, 0, 1, false) ==
        doctest::Approx(40 * 6 * 256 + 10 * 6 * 256 - 10 * 6 * 256));
  s.moe.reset();
  CHECK_THROWS_AS(moe_mlp_memory_delta_bytes(s, 10, 20, 2, KernelProfile::fused, 0, 1, false), std::invalid_argument);
}

TEST_CASE("attention FLOPs: 4·b·s²·heads·d forward, half when causal, backward 2.5x") {
  const TransformerSpec s = gpt(Norm::layernorm, false, Positional::learned);
  CHECK(attention_flops(s, 2, 128, false, AttentionPass::forward) == 4.0 * 2 * 128 * 128 * 64);
  CHECK(attention_flops(s, 2, 128, true, AttentionPass::forward) == 2.0 * 2 * 128 * 128 * 64);
  CHECK(attention_flops(s, 2, 128, true, AttentionPass::backward) == 2.5 * 2.0 * 2 * 128 * 128 * 64);
}

TEST_CASE("memory-bound work of an eager GPT layer: 2 norms, 2 residual adds, GELU") {
  // per token at w = 2: norms 2·(2·2·64) = 512, residual 2·(3·2·64) = 768, GELU 2·2·256 = 1024.
  const MemoryWork m =
      layer_memory_work(gpt(Norm::layernorm, false, Positional::learned), 10, 2, KernelProfile::eager, false);
  CHECK(m.bytes_forward == doctest::Approx(10 * (512 + 768 + 1024)));
  // Backward: twice that, plus each norm's weight gradient re-reading input and gradient
  // (2 norms x 2·2·64 = 512 per token); no biases here.
  CHECK(m.bytes_backward == doctest::Approx(2 * m.bytes_forward + 10 * 512));
  CHECK(m.kernels_forward == 5);
  CHECK(m.kernels_backward == 2 * 5 + 2);
}

TEST_CASE("autocast keeps the residual stream in fp32 and casts two GEMM inputs: 28h bytes more per token, eager") {
  const TransformerSpec s = gpt(Norm::layernorm, false, Positional::learned);  // h = 64
  const MemoryWork plain = layer_memory_work(s, 10, 2, KernelProfile::eager, false);
  const MemoryWork amp = layer_memory_work(s, 10, 2, KernelProfile::eager, false, 1, false, true);
  // norms 2·(2·4 - 2·2)·64 = 512, residual adds 2·((8 + 2) - 3·2)·64 = 512, casts 2·(4 + 2)·64 = 768.
  CHECK(amp.bytes_forward - plain.bytes_forward == doctest::Approx(10 * (512 + 512 + 768)));
  // Backward: twice that, and each norm's weight gradient re-reads fp32: 2·2·(4 - 2)·64 = 512.
  CHECK(amp.bytes_backward - plain.bytes_backward == doctest::Approx(2 * 10 * (512 + 512 + 768) + 10 * 512));
  CHECK(amp.kernels_forward - plain.kernels_forward == 2);
  // Compiled: each norm reads fp32 and writes the 2-byte GEMM input (2·(4 + 2 - 2·2)·64 = 256),
  // the residual's one write at 4 bytes (2·(4 - 2)·64 = 256).
  const MemoryWork compiled = layer_memory_work(s, 10, 2, KernelProfile::compiled, false);
  const MemoryWork compiled_amp = layer_memory_work(s, 10, 2, KernelProfile::compiled, false, 1, false, true);
  CHECK(compiled_amp.bytes_forward - compiled.bytes_forward == doctest::Approx(10 * (256 + 256)));
  // An eager RMSNorm on fp32 skips its up- and downcast: 28 bytes per element over 5 kernels.
  const TransformerSpec llama = gpt(Norm::rmsnorm, true, Positional::rope);
  const MemoryWork llama_amp = layer_memory_work(llama, 1, 2, KernelProfile::eager, false, 1, false, true);
  const MemoryWork llama_plain = layer_memory_work(llama, 1, 2, KernelProfile::eager, false);
  CHECK(llama_amp.bytes_forward - llama_plain.bytes_forward ==
        doctest::Approx(2 * (28 - 36) * 64 + 512 + 768));  // norms, residual adds, casts
  CHECK(llama_amp.kernels_forward - llama_plain.kernels_forward == 2 * (5 - 7) + 2);
  CHECK_THROWS_AS(layer_memory_work(s, 10, 2, KernelProfile::eager, false, 2, false, true), std::invalid_argument);
}

TEST_CASE("an autocast cast reads 4 bytes and writes w per parameter") {
  CHECK(autocast_cast_bytes(1e6, 2) == 6e6);
  CHECK(autocast_cast_bytes(0, 2) == 0);
}

TEST_CASE("biased projections add their bias gradients to the backward: one read of each output gradient") {
  TransformerSpec biased = gpt(Norm::layernorm, false, Positional::learned);
  biased.linear_bias = true;
  const MemoryWork plain =
      layer_memory_work(gpt(Norm::layernorm, false, Positional::learned), 1, 2, KernelProfile::eager, false);
  const MemoryWork with = layer_memory_work(biased, 1, 2, KernelProfile::eager, false);
  // qkv 3·64 + out 64 + up 256 + down 64 = 576 elements of 2 bytes.
  CHECK(with.bytes_backward - plain.bytes_backward == doctest::Approx(2 * 576));
  CHECK(with.kernels_backward - plain.kernels_backward == 4);
}

TEST_CASE("fusing a Llama layer removes the RMSNorm upcasts, the rotary chain and the residual passes") {
  const TransformerSpec llama = gpt(Norm::rmsnorm, true, Positional::rope);
  const MemoryWork eager = layer_memory_work(llama, 1, 2, KernelProfile::eager, false);
  const MemoryWork fused = layer_memory_work(llama, 1, 2, KernelProfile::fused, false);
  // eager: norms 2·36·64 = 4608, rotary 10·2·128 = 2560, residual 768, SwiGLU 5·2·256 = 2560.
  CHECK(eager.bytes_forward == doctest::Approx(4608 + 2560 + 768 + 2560));
  // fused: norms 2·4·64 = 512, rotary 2·2·128 = 512, residual 2·2·64 = 256, SwiGLU 3·2·256 = 1536.
  CHECK(fused.bytes_forward == doctest::Approx(512 + 512 + 256 + 1536));
  CHECK(eager.kernels_forward == 2 * 7 + 10 + 2 + 2);
  CHECK(fused.kernels_forward == 2 + 1 + 0 + 1);
}

TEST_CASE("the eager loss moves 32 + 2w bytes per logit, a fused one far less") {
  const TransformerSpec s = gpt(Norm::layernorm, false, Positional::learned);
  const MemoryWork eager = loss_memory_work(s, 3, 2, KernelProfile::eager);
  CHECK(eager.bytes_forward + eager.bytes_backward == doctest::Approx(3 * 1000 * (32 + 2 * 2)));
  const MemoryWork compiled = loss_memory_work(s, 3, 2, KernelProfile::compiled);
  CHECK(compiled.bytes_forward + compiled.bytes_backward == doctest::Approx(3 * 1000 * 4 * 2));
}

TEST_CASE("kernel profile and attention kernel names round-trip; unknown names are errors") {
  for (KernelProfile p : {KernelProfile::eager, KernelProfile::compiled, KernelProfile::fused})
    CHECK(parse_kernel_profile(name(p)) == p);
  for (AttentionKernel k : {AttentionKernel::flash2, AttentionKernel::flash3, AttentionKernel::cudnn,
                            AttentionKernel::mem_efficient, AttentionKernel::triton, AttentionKernel::unfused})
    CHECK(parse_attention_kernel(name(k)) == k);
  CHECK_THROWS_AS(parse_kernel_profile("jit"), std::invalid_argument);
  CHECK_THROWS_AS(parse_attention_kernel("flash"), std::invalid_argument);
}

TEST_CASE("the default flash-class kernel: memory-efficient before Ampere, cuDNN on sm_100 Blackwell, else FA2") {
  CHECK(default_flash_kernel(*find_gpu("v100-sxm2-32gb")) == AttentionKernel::mem_efficient);
  CHECK(default_flash_kernel(*find_gpu("a100-sxm4-80gb")) == AttentionKernel::flash2);
  CHECK(default_flash_kernel(*find_gpu("h100-sxm5-80gb")) == AttentionKernel::flash2);
  for (const char* key : {"b200-sxm-180gb", "gb200-186gb", "b300-sxm-288gb", "gb300-288gb"})
    CHECK(default_flash_kernel(*find_gpu(key)) == AttentionKernel::cudnn);
  CHECK(default_flash_kernel(*find_gpu("rtx-5090-32gb")) == AttentionKernel::flash2);  // consumer sm_120
}

}  // namespace
}  // namespace stepcast

namespace stepcast {
namespace {

TEST_CASE("under TP with SP every memory-bound byte of a layer is split t ways; without SP the h-wide ones stay") {
  const TransformerSpec s = gpt(Norm::rmsnorm, true, Positional::rope);
  const MemoryWork one = layer_memory_work(s, 8, 2, KernelProfile::eager, false);
  const MemoryWork sp = layer_memory_work(s, 8, 2, KernelProfile::eager, false, 4, true);
  CHECK(sp.bytes_forward == doctest::Approx(one.bytes_forward / 4));
  CHECK(sp.bytes_backward == doctest::Approx(one.bytes_backward / 4));
  CHECK(sp.kernels_forward == one.kernels_forward);  // same ops, smaller tensors
  const MemoryWork no_sp = layer_memory_work(s, 8, 2, KernelProfile::eager, false, 4, false);
  // Without SP the norms (2·36·64) and residuals (768) per token stay whole; rotary and
  // SwiGLU split: 4608 + 768 + (2560 + 2560) / 4 = 6656 per token.
  CHECK(no_sp.bytes_forward == doctest::Approx(8 * (4608 + 768 + (2560 + 2560) / 4.0)));
  // The vocab-parallel loss holds V/t logits per rank.
  CHECK(loss_memory_work(s, 8, 2, KernelProfile::eager, 4).bytes_forward ==
        doctest::Approx(loss_memory_work(s, 8, 2, KernelProfile::eager).bytes_forward / 4));
}

}  // namespace
}  // namespace stepcast
