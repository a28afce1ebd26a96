// Tests of model/compute: the optimizer step's bytes per parameter and the LoRA GEMM
// backward, each against a hand count.
#include "model/compute.hpp"
#include "model/flops.hpp"
#include "model/moe.hpp"
#include "model/transformer.hpp"

#include <doctest/doctest.h>

#include "base/json_input.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <stdexcept>
#include <string>

namespace stepcast {
namespace {

TEST_CASE(
    "an Adam step moves 28 bytes per parameter: fp32 master, m, v read and written, "
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

TEST_CASE(
    "gradient accumulation: autograd adds 3 passes from the second micro-step on, fused none, "
    "DeepSpeed's bf16 optimizer 18 bytes per 2-byte gradient every micro-step") {
  const double g = 1000;  // bytes of local gradients
  // One micro-step: autograd's first gradient is stored as it comes, nothing is added.
  CHECK(grad_accumulation_bytes(GradAccumulation::autograd, g, 1) == 0);
  // m = 4: three adds of read + read + write, spread over four micro-steps: 3·g·3/4.
  CHECK(grad_accumulation_bytes(GradAccumulation::autograd, g, 4) == doctest::Approx(2250));
  // Many micro-steps: tends to 3 passes each.
  CHECK(grad_accumulation_bytes(GradAccumulation::autograd, g, 1000000) == doctest::Approx(3 * g).epsilon(1e-5));
  CHECK(grad_accumulation_bytes(GradAccumulation::fused, g, 8) == 0);
  // bf16 -> fp32 cast (read 2, write 4) and add (read 4 + 4, write 4) = 18 B per 2 B: 9x,
  // on the first micro-step too.
  CHECK(grad_accumulation_bytes(GradAccumulation::bf16_optimizer, g, 1) == 9 * g);
  CHECK(grad_accumulation_bytes(GradAccumulation::bf16_optimizer, g, 7) == 9 * g);
  for (const std::string& n : grad_accumulation_names()) CHECK(name(parse_grad_accumulation(n)) == n);
  CHECK_THROWS_AS(parse_grad_accumulation("apex"), std::invalid_argument);
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

/// A device with one SM at 1 TFLOP/s, memory so fast that memory-bound work is ~free, no
/// launch cost, and flash attention at a flat 0.5 TFLOP/s.
DeviceRates unit_device() {
  DeviceRates d;
  d.sm_count = 1;
  d.peak_tflops = 1;
  d.gemm_ceiling_tflops = 1;
  d.attention_gemm_ceiling_tflops = 1;
  d.memory_bw_GBps = 1e15;
  d.memory_efficiency = 1;
  d.launch_s = 0;
  d.attention.curves.push_back({64, true, AttentionPass::forward, {{1, 0.5}}, "flat"});
  d.attention.curves.push_back({64, true, AttentionPass::backward, {{1, 0.5}}, "flat"});
  return d;
}

double gemm_s(std::int64_t m, std::int64_t n, std::int64_t k) { return gemm_time_s(m, n, k, 1, 2, 1, 1, 1e15); }

TEST_CASE(
    "LoRA backward = one input-gradient GEMM per frozen weight + the adapters' input and weight "
    "gradients; attention backward unchanged") {
  const TransformerSpec spec = small_gpt();
  const LoraSpec lora{2, {"q", "v"}};
  FlopsOptions full, frozen;
  frozen.lora = &lora;
  const KernelChoice k{AttentionKernel::flash2, KernelProfile::compiled, true};  // launches at the device's (0) cost
  const MicroStepTimes a = micro_step_times(spec, 1, 4, Precision::bf16_mixed, full, k, unit_device());
  const MicroStepTimes b = micro_step_times(spec, 1, 4, Precision::bf16_mixed, frozen, k, unit_device());
  // Full training minus LoRA, backward: every weight-gradient GEMM (n x k from n x m · m x k)
  // of the layers and the head, minus the adapters' input and weight gradients.
  double weight_grads = 0, adapters = 0, adapters_fwd = 0;
  for (const GemmShape& g : layer_gemms(spec, 4)) weight_grads += g.count_per_layer * gemm_s(g.n, g.k, g.m);
  for (const GemmShape& g : lora_adapter_gemms(spec, lora, 4)) {
    adapters += g.count_per_layer * (gemm_s(g.m, g.k, g.n) + gemm_s(g.n, g.k, g.m));
    adapters_fwd += g.count_per_layer * gemm_s(g.m, g.n, g.k);
  }
  CHECK(a.backward_s - b.backward_s == doctest::Approx(weight_grads - adapters).epsilon(1e-9));
  CHECK(b.forward_s - a.forward_s == doctest::Approx(adapters_fwd).epsilon(1e-9));
  CHECK(b.head_backward_s == doctest::Approx(gemm_s(4, 8, 32)).epsilon(1e-9));  // input gradient only
}

TEST_CASE(
    "flash attention takes its published rate: forward 4·b·s²·heads·d/2 FLOPs at the curve, "
    "backward 2.5x the FLOPs at the backward curve") {
  const TransformerSpec spec = small_gpt();
  const FlopsOptions o;
  const KernelChoice flash{AttentionKernel::flash2, KernelProfile::compiled, true};
  DeviceRates slow = unit_device();
  for (AttentionCurve& c : slow.attention.curves) c.tflops_by_seq[0].second = 0.25;  // half the rate
  const MicroStepTimes fast_t = micro_step_times(spec, 1, 4, Precision::bf16_mixed, o, flash, unit_device());
  const MicroStepTimes slow_t = micro_step_times(spec, 1, 4, Precision::bf16_mixed, o, flash, slow);
  const double fwd_flops = 4.0 * 1 * 4 * 4 * 8 / 2;  // heads·d = 8, causal
  CHECK(slow_t.forward_s - fast_t.forward_s == doctest::Approx(fwd_flops / 0.25e12 - fwd_flops / 0.5e12));
  CHECK(slow_t.backward_s - fast_t.backward_s == doctest::Approx(2.5 * (fwd_flops / 0.25e12 - fwd_flops / 0.5e12)));
}

TEST_CASE("full recompute adds one forward of the layers (head excluded); selective the attention forward") {
  const TransformerSpec spec = small_gpt();
  FlopsOptions o;
  const KernelChoice k{AttentionKernel::flash2, KernelProfile::compiled, true};  // launches at the device's (0) cost
  const MicroStepTimes none = micro_step_times(spec, 1, 4, Precision::bf16_mixed, o, k, unit_device());
  o.recompute = Recompute::full;
  const MicroStepTimes full = micro_step_times(spec, 1, 4, Precision::bf16_mixed, o, k, unit_device());
  CHECK(full.recompute_s == doctest::Approx(none.forward_s - none.head_forward_s));
  o.recompute = Recompute::selective;
  const MicroStepTimes sel = micro_step_times(spec, 1, 4, Precision::bf16_mixed, o, k, unit_device());
  CHECK(sel.recompute_s == doctest::Approx(4.0 * 4 * 4 * 8 / 2 / 0.5e12));
}

TEST_CASE("an unfused loss is PyTorch's eager cross-entropy whatever the profile; a fused one is one kernel") {
  const TransformerSpec spec = small_gpt();
  DeviceRates d = unit_device();
  d.memory_bw_GBps = 1000;  // 1e12 B/s: bytes show as time
  KernelChoice k{AttentionKernel::flash2, KernelProfile::compiled, true};
  k.fused_loss = true;
  const MicroStepTimes fused = micro_step_times(spec, 1, 4, Precision::bf16_mixed, {}, k, d);
  k.fused_loss = false;
  const MicroStepTimes eager = micro_step_times(spec, 1, 4, Precision::bf16_mixed, {}, k, d);
  const double logits = 4.0 * 32;  // tokens x vocab
  // eager (12 + w) + (20 + w) = 36 B per logit, fused 2w + 2w = 8.
  CHECK(eager.kernels.memory_s - fused.kernels.memory_s == doctest::Approx((36.0 - 8.0) * logits / 1e12));
}

TEST_CASE("a layer whose kernels are shorter than their launches is launch-bound") {
  const TransformerSpec spec = small_gpt();
  const FlopsOptions o;
  const KernelChoice k{AttentionKernel::flash2, KernelProfile::eager, true};
  DeviceRates d = unit_device();
  d.launch_s = 1;  // 1 s per launch dwarfs every kernel
  const MicroStepTimes t = micro_step_times(spec, 1, 4, Precision::bf16_mixed, o, k, d);
  // Forward of the one layer: 4 GEMMs + 1 attention + eager memory-bound kernels: 2 norms,
  // 10 rotary (rope is the default position scheme), 2 residual adds, 1 GELU = 20.
  CHECK(t.forward_s - t.head_forward_s == doctest::Approx(20));
  // Backward: 8 GEMMs + 3 attention kernels + twice the 15 memory-bound kernels + the 2
  // norms' weight-gradient reductions = 43.
  CHECK(t.backward_s - t.head_backward_s == doctest::Approx(43));
}

TEST_CASE("blocking launches add each op's CPU cost to the GPU time instead of overlapping it") {
  const TransformerSpec spec = small_gpt();
  const FlopsOptions o;
  KernelChoice k{AttentionKernel::flash2, KernelProfile::compiled, true};
  DeviceRates d = unit_device();
  d.launch_s = 1e-3;  // 1 ms per launch dwarfs this layer's kernels
  const MicroStepTimes async = micro_step_times(spec, 1, 4, Precision::bf16_mixed, o, k, d);
  // Asynchronous, the layer is launch-bound: compiled, 9 kernels forward and 21 backward.
  CHECK(async.forward_s - async.head_forward_s == doctest::Approx(9e-3));
  CHECK(async.backward_s - async.head_backward_s == doctest::Approx(21e-3));
  // Blocking: the same launches plus the layer's GPU time (the step with free launches).
  DeviceRates free_launches = d;
  free_launches.launch_s = 0;
  const MicroStepTimes gpu = micro_step_times(spec, 1, 4, Precision::bf16_mixed, o, k, free_launches);
  k.launch_blocking = true;
  const MicroStepTimes blocking = micro_step_times(spec, 1, 4, Precision::bf16_mixed, o, k, d);
  CHECK(gpu.forward_s - gpu.head_forward_s > 0);
  CHECK(blocking.forward_s - blocking.head_forward_s == doctest::Approx(9e-3 + (gpu.forward_s - gpu.head_forward_s)));
  CHECK(blocking.backward_s - blocking.head_backward_s ==
        doctest::Approx(21e-3 + (gpu.backward_s - gpu.head_backward_s)));
  CHECK(blocking.kernels.launch_s > async.kernels.launch_s);
}

TEST_CASE(
    "CUDA graphs: a captured block costs the CPU one launch per pass; a full-iteration graph nothing, "
    "so a launch-bound layer runs at its GPU time") {
  const TransformerSpec spec = small_gpt();
  const FlopsOptions o;
  KernelChoice k{AttentionKernel::flash2, KernelProfile::compiled, true};
  DeviceRates d = unit_device();
  d.launch_s = 1e-3;  // 1 ms per launch dwarfs this layer's kernels: 9 forward, 21 backward
  const MicroStepTimes eager = micro_step_times(spec, 1, 4, Precision::bf16_mixed, o, k, d);
  CHECK(eager.forward_s - eager.head_forward_s == doctest::Approx(9e-3));
  k.graphs.attn = true;  // half a dense layer's ops (4.5) become one launch
  const MicroStepTimes attn = micro_step_times(spec, 1, 4, Precision::bf16_mixed, o, k, d);
  CHECK(attn.forward_s - attn.head_forward_s == doctest::Approx(5.5e-3));
  k.graphs.mlp = true;  // the whole layer: two launches
  const MicroStepTimes both = micro_step_times(spec, 1, 4, Precision::bf16_mixed, o, k, d);
  CHECK(both.backward_s - both.head_backward_s == doctest::Approx(2e-3));
  k.graphs = CudaGraphs{true};
  const MicroStepTimes full = micro_step_times(spec, 1, 4, Precision::bf16_mixed, o, k, d);
  CHECK(full.kernels.launch_s == 0);
  CHECK(full.forward_s < eager.forward_s);
}

TEST_CASE(
    "a MoE layer's CPU work: the dispatcher's Python ops at the op cost and each local expert's launches at "
    "the driver's; graphs of the router and preprocessing take their ops, a graph of the block all of them") {
  const TransformerSpec* q = find_model("qwen3-30b-a3b");
  REQUIRE(q != nullptr);
  const FlopsOptions o;
  KernelChoice k{AttentionKernel::flash2, KernelProfile::fused, true};
  k.ep = 8;  // 128 experts: 16 local
  DeviceRates d = unit_device();
  d.launch_s = 1;  // 1 s per launch (and per op: an op costs at least a launch) dwarfs every kernel
  const MicroStepTimes plain = micro_step_times(*q, 1, 64, Precision::bf16_mixed, o, k, d);
  const MoeHostOps h = moe_host_ops(MoeDispatcher::alltoall, false);
  const double L = 48;
  // A graph of the whole block leaves one launch of its Python ops and 16 experts' launches.
  k.graphs.moe = true;
  const MicroStepTimes block = micro_step_times(*q, 1, 64, Precision::bf16_mixed, o, k, d);
  CHECK((plain.forward_s - block.forward_s) / L == doctest::Approx(h.python_forward + 16 * h.per_expert_forward - 1));
  CHECK((plain.backward_s - block.backward_s) / L ==
        doctest::Approx(h.python_backward + 16 * h.per_expert_backward - 1));
  // The router and preprocessing graphs: two launches, their Python ops gone.
  d.launch_s = 1e-9;
  d.eager_forward_op_s = d.eager_backward_op_s = 1;
  k.graphs = CudaGraphs{};
  const MicroStepTimes ops = micro_step_times(*q, 1, 64, Precision::bf16_mixed, o, k, d);
  k.graphs.moe_router = k.graphs.moe_preprocess = true;
  const MicroStepTimes graphed = micro_step_times(*q, 1, 64, Precision::bf16_mixed, o, k, d);
  CHECK((ops.forward_s - graphed.forward_s) / L == doctest::Approx(h.captured_forward).epsilon(1e-6));
  CHECK(moe_host_ops(MoeDispatcher::hybridep, true).python_forward <
        moe_host_ops(MoeDispatcher::alltoall, true).python_forward);
}

TEST_CASE("the catalog's GEMM ceiling: measured where published, else the mean measured fraction of peak") {
  const GpuSpec* a100 = find_gpu("a100-sxm4-80gb");
  REQUIRE(a100 != nullptr);
  CHECK(gemm_ceiling(*a100, Dtype::bf16).first == 271.2);
  CHECK(gemm_ceiling(*a100, Dtype::fp16).first == 271.2);  // equal fp16/bf16 peaks
  const GpuSpec* v100 = find_gpu("v100-sxm2-16gb");
  REQUIRE(v100 != nullptr);
  CHECK(gemm_ceiling(*v100, Dtype::fp16).first == doctest::Approx(0.814 * 125));
  // NVFP4: measured on B200 only; the other Blackwell GPUs take its fraction of the fp4 peak.
  CHECK(gemm_ceiling(*find_gpu("b200-sxm-180gb"), Dtype::fp4).first == 4453.2);
  CHECK(gemm_ceiling(*find_gpu("gb300-288gb"), Dtype::fp4).first == doctest::Approx(15000 * 4453.2 / 9000));
}

TEST_CASE(
    "attention curves: a GPU without its own rows borrows the nearest generation's, scaled by the "
    "GEMM ceiling ratio; Triton FlashAttention is FlashAttention-2 / 1.4 forward, / 2 backward") {
  const GpuSpec& a40 = *find_gpu("a100-sxm4-40gb");
  const GpuSpec& a80 = *find_gpu("a100-sxm4-80gb");
  const AttentionRates own = attention_rates(a80, AttentionKernel::flash2);
  const AttentionRates borrowed = attention_rates(a40, AttentionKernel::flash2);
  CHECK(own.scale == 1);
  CHECK(borrowed.scale == doctest::Approx(1.0));  // same chip, same ceiling
  const AttentionRates triton = attention_rates(a80, AttentionKernel::triton);
  for (AttentionPass p : {AttentionPass::forward, AttentionPass::backward}) {
    const double ratio = attention_tflops(own, 128, true, p, 2048) / attention_tflops(triton, 128, true, p, 2048);
    CHECK(ratio == doctest::Approx(p == AttentionPass::forward ? 1.4 : 2.0));
  }
  CHECK(attention_rates(a80, AttentionKernel::unfused).curves.empty());
}

TEST_CASE("every kernel that runs on a catalog GPU has forward and backward rates there") {
  // B200's cuDNN rows are its own, forward and backward (cudnn-frontend's B200 results, cuDNN 9.13).
  const GpuSpec& b200 = *find_gpu("b200-sxm-180gb");
  const AttentionRates cudnn = attention_rates(b200, AttentionKernel::cudnn);
  CHECK(attention_tflops(cudnn, 128, true, AttentionPass::backward, 4096) == doctest::Approx(701.265));
  CHECK(attention_tflops(cudnn, 128, true, AttentionPass::forward, 8192) == doctest::Approx(1171.278));
  CHECK(cudnn.source.find("cudnn-frontend") != std::string::npos);
  for (const GpuSpec& gpu : gpu_catalog())
    for (AttentionKernel k : {AttentionKernel::flash2, AttentionKernel::flash3, AttentionKernel::cudnn,
                              AttentionKernel::mem_efficient, AttentionKernel::triton}) {
      if (!attention_kernel_runs_on(k, gpu.arch)) continue;
      CAPTURE(gpu.name);
      CAPTURE(name(k));
      const AttentionRates r = attention_rates(gpu, k);
      for (AttentionPass p : {AttentionPass::forward, AttentionPass::backward})
        CHECK(attention_tflops(r, 128, true, p, 4096) > 0);
    }
}

TEST_CASE("FlashAttention-3 runs on Hopper only, FlashAttention-2 and cuDNN from Ampere on") {
  CHECK(attention_kernel_runs_on(AttentionKernel::flash3, GpuArch::hopper));
  CHECK_FALSE(attention_kernel_runs_on(AttentionKernel::flash3, GpuArch::ampere));
  CHECK_FALSE(attention_kernel_runs_on(AttentionKernel::flash3, GpuArch::blackwell));
  CHECK_FALSE(attention_kernel_runs_on(AttentionKernel::flash2, GpuArch::turing));
  CHECK(attention_kernel_runs_on(AttentionKernel::flash2, GpuArch::ampere));
  CHECK_FALSE(attention_kernel_runs_on(AttentionKernel::cudnn, GpuArch::volta));
  CHECK(attention_kernel_runs_on(AttentionKernel::mem_efficient, GpuArch::volta));
  CHECK(attention_kernels_on(GpuArch::blackwell) == "flash2, cudnn, mem_efficient, triton, unfused");
}

/// Micro-step time of Llama-3-8B, one sequence of 4096, FlashAttention-2, compiled kernels,
/// GEMMs in `p` (16-bit: the GPU's own 16-bit type).
Dtype dtype16(const GpuSpec& gpu) { return gpu.supports(Dtype::bf16) ? Dtype::bf16 : Dtype::fp16; }

double llama_step_s(const GpuSpec& gpu, bool in_step, Precision p) {
  const Dtype dtype = p == Precision::bf16_mixed ? dtype16(gpu) : gemm_dtype(p);
  DeviceRates d = catalog_device_rates(gpu, dtype, AttentionKernel::flash2);
  if (in_step) d = in_step_rates(d, in_step_fractions());
  const KernelChoice k{AttentionKernel::flash2, KernelProfile::compiled, true};  // launches at the device's (0) cost
  const MicroStepTimes t = micro_step_times(*find_model("llama-3-8b"), 1, 4096, p, {}, k, d);
  return t.forward_s + t.backward_s;
}

TEST_CASE(
    "a job's speed-up between two GPUs stays within the ratios of their GEMM ceilings, memory "
    "bandwidths and attention rates, in bf16 and in fp8") {
  const char* pairs[][2] = {{"a100-sxm4-80gb", "h100-sxm5-80gb"},
                            {"h100-sxm5-80gb", "b200-sxm-180gb"},
                            {"b200-sxm-180gb", "gb200-186gb"},
                            {"v100-sxm2-32gb", "a100-sxm4-40gb"},
                            {"a100-sxm4-40gb", "h200-sxm-141gb"}};
  for (const auto& pair : pairs)
    for (const Precision p : {Precision::bf16_mixed, Precision::fp8_mixed}) {
      const GpuSpec& slow = *find_gpu(pair[0]);
      const GpuSpec& fast = *find_gpu(pair[1]);
      if (p == Precision::fp8_mixed && !(slow.supports(Dtype::fp8) && fast.supports(Dtype::fp8))) continue;
      const Dtype gemm_s = p == Precision::bf16_mixed ? dtype16(slow) : Dtype::fp8;
      const Dtype gemm_f = p == Precision::bf16_mixed ? dtype16(fast) : Dtype::fp8;
      // Attention runs in 16 bits either way: its rates come with the 16-bit device.
      const DeviceRates ds = catalog_device_rates(slow, gemm_s, AttentionKernel::flash2);
      const DeviceRates df = catalog_device_rates(fast, gemm_f, AttentionKernel::flash2);
      const double ratios[] = {df.gemm_ceiling_tflops / ds.gemm_ceiling_tflops,
                               df.achieved_memory_GBps() / ds.achieved_memory_GBps(),
                               attention_tflops(df.attention, 128, true, AttentionPass::forward, 4096) /
                                   attention_tflops(ds.attention, 128, true, AttentionPass::forward, 4096),
                               attention_tflops(df.attention, 128, true, AttentionPass::backward, 4096) /
                                   attention_tflops(ds.attention, 128, true, AttentionPass::backward, 4096)};
      const double lo = *std::min_element(std::begin(ratios), std::end(ratios));
      const double hi = *std::max_element(std::begin(ratios), std::end(ratios));
      // At isolated rates and at the in-step rates scenarios use (each generation's own GEMM
      // fraction where it has one): the benchmarks' ratios bound both.
      for (const bool in_step : {false, true}) {
        const double speedup = llama_step_s(slow, in_step, p) / llama_step_s(fast, in_step, p);
        INFO(std::string(pair[0]) << " -> " << pair[1] << " " << std::string(name(p))
                                  << (in_step ? " in-step" : " isolated") << ": speed-up " << speedup << " in [" << lo
                                  << ", " << hi << "]");
        CHECK(speedup >= lo * (1 - 1e-9));
        CHECK(speedup <= hi * (1 + 1e-9));
      }
    }
}

TEST_CASE("fp8 to NVFP4 on one GPU speeds a step up by more than 1 and less than the GEMM ceilings' ratio") {
  // Attention stays in bf16 and the casts grow lighter, so only the GEMMs (and casts) move.
  for (const char* key : {"b200-sxm-180gb", "gb200-186gb", "b300-sxm-288gb", "gb300-288gb"}) {
    const GpuSpec& gpu = *find_gpu(key);
    const KernelChoice k{AttentionKernel::flash2, KernelProfile::fused, true};
    auto step_s = [&](Precision p) {
      const DeviceRates d = catalog_device_rates(gpu, gemm_dtype(p), AttentionKernel::flash2);
      const MicroStepTimes t = micro_step_times(*find_model("llama-3-8b"), 2, 8192, p, {}, k, d);
      return t.forward_s + t.backward_s;
    };
    const double speedup = step_s(Precision::fp8_mixed) / step_s(Precision::fp4_mixed);
    const double bound = gemm_ceiling(gpu, Dtype::fp4).first / gemm_ceiling(gpu, Dtype::fp8).first;
    INFO(key << ": fp8 -> fp4 speed-up " << speedup << ", GEMM ceilings " << bound);
    CHECK(speedup > 1.0);
    CHECK(speedup < bound);
  }
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

TEST_CASE("eager GPT-2 on Hopper runs its LM head misaligned; compiled, padded or on Ampere it does not") {
  const TransformerSpec gpt2 = *find_model("gpt2");
  REQUIRE(gpt2.vocab == 50257);
  const DeviceRates h200 = catalog_device_rates(*find_gpu("h200-sxm-141gb"), Dtype::bf16, AttentionKernel::cudnn);
  CHECK(h200.misaligned_gemm_tflops == doctest::Approx(kMisalignedGemmFractionHopper * 989.4));
  const KernelChoice eager{AttentionKernel::cudnn, KernelProfile::eager, true};
  const KernelChoice compiled{AttentionKernel::cudnn, KernelProfile::compiled, true};
  const auto gemm_s = [&](const TransformerSpec& spec, const KernelChoice& k, const DeviceRates& d) {
    return micro_step_times(spec, 8, 1024, Precision::bf16_mixed, {}, k, d).kernels.gemm_s;
  };
  // The three LM-head GEMMs (2·8192·50257·768 FLOP each) at the misaligned rate.
  const double head_s =
      3 * misaligned_gemm_time_s(8192, 50257, 768, 1, 2, h200.misaligned_gemm_tflops, h200.achieved_memory_GBps());
  CHECK(head_s == doctest::Approx(3 * 2.0 * 8192 * 50257 * 768 / (h200.misaligned_gemm_tflops * 1e12)));
  const double eager_s = gemm_s(gpt2, eager, h200), compiled_s = gemm_s(gpt2, compiled, h200);
  CHECK(eager_s > 1.8 * compiled_s);  // measured on an H200: 21.65 against 9.07 ms
  TransformerSpec padded = gpt2;
  padded.vocab = 50304;
  CHECK(gemm_s(padded, eager, h200) == doctest::Approx(gemm_s(padded, compiled, h200)));
  const DeviceRates a100 = catalog_device_rates(*find_gpu("a100-sxm4-80gb"), Dtype::bf16, AttentionKernel::flash2);
  CHECK(a100.misaligned_gemm_tflops == 0);  // not measured there: the aligned model
  // The same rule names the GEMMs it slows (printed as an assumption).
  CHECK(misaligned_gemms(gpt2, Precision::bf16_mixed, eager, h200) == std::vector<std::string>{"lm_head"});
  CHECK(misaligned_gemms(gpt2, Precision::bf16_mixed, compiled, h200).empty());
  CHECK(misaligned_gemms(padded, Precision::fp8_mixed, eager, h200).empty());  // 50,304 B rows in fp8
  CHECK(misaligned_gemms(gpt2, Precision::bf16_mixed, eager, a100).empty());
}

TEST_CASE("a sliding window: its layers' share of the causal pairs, at the kernel's rate on the window's length") {
  TransformerSpec spec = *find_model("llama-2-7b");
  DeviceRates d = unit_device();
  d.gemm_ceiling_tflops = 1e9;
  d.attention_gemm_ceiling_tflops = 1e9;
  d.attention = attention_rates(*find_gpu("h100-sxm5-80gb"), AttentionKernel::flash2);
  KernelChoice k{AttentionKernel::flash2, KernelProfile::compiled, true};
  const MicroStepTimes full = micro_step_times(spec, 1, 4096, Precision::bf16_mixed, {}, k, d);
  spec.sliding_window = SlidingWindow{4096, spec.layers};  // covers the sequence: no change
  CHECK(micro_step_times(spec, 1, 4096, Precision::bf16_mixed, {}, k, d).kernels.attention_s ==
        doctest::Approx(full.kernels.attention_s));
  spec.sliding_window = SlidingWindow{1024, spec.layers / 2};
  const MicroStepTimes half = micro_step_times(spec, 1, 4096, Precision::bf16_mixed, {}, k, d);
  const double share = window_pair_share(4096, 1024);
  const auto head = spec.head_dim();
  auto rate = [&](AttentionPass p, double s) { return attention_tflops(d.attention, head, true, p, s); };
  CHECK(half.layer_attention_forward_s ==
        doctest::Approx(full.layer_attention_forward_s *
                        (0.5 + 0.5 * share * rate(AttentionPass::forward, 4096) / rate(AttentionPass::forward, 1024))));
  CHECK(half.layer_attention_backward_s ==
        doctest::Approx(full.layer_attention_backward_s * (0.5 + 0.5 * share * rate(AttentionPass::backward, 4096) /
                                                                     rate(AttentionPass::backward, 1024))));
  k.cp = 2;
  CHECK_THROWS_AS(micro_step_times(spec, 1, 4096, Precision::bf16_mixed, {}, k, d), std::invalid_argument);
}

}  // namespace
}  // namespace stepcast

namespace stepcast {
namespace {

TEST_CASE("compute by kernel adds up to forward + backward + recompute, launch-bound or not, any recompute") {
  const TransformerSpec& spec = *find_model("llama-2-7b");
  const DeviceRates a100 = catalog_device_rates(*find_gpu("a100-sxm4-80gb"), Dtype::bf16, AttentionKernel::flash2);
  DeviceRates slow_launch = a100;
  slow_launch.launch_s = 1e-2;  // every layer launch-bound
  for (const DeviceRates* d : std::initializer_list<const DeviceRates*>{&a100, &slow_launch})
    for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full})
      for (AttentionKernel att : {AttentionKernel::flash2, AttentionKernel::unfused}) {
        FlopsOptions o;
        o.recompute = r;
        const KernelChoice k{att, KernelProfile::eager, true};
        const MicroStepTimes t = micro_step_times(spec, 2, 2048, Precision::bf16_mixed, o, k, *d);
        CHECK(t.kernels.total_s() == doctest::Approx(t.forward_s + t.backward_s + t.recompute_s).epsilon(1e-12));
        CHECK((t.kernels.launch_s > 0) == (d == &slow_launch));
      }
}

TEST_CASE("selective recompute's modules run their forward again: GEMMs and memory-bound work, in the kernels") {
  const TransformerSpec& spec = *find_model("deepseek-v3");
  const DeviceRates h100 = catalog_device_rates(*find_gpu("h100-sxm5-80gb"), Dtype::bf16, AttentionKernel::flash2);
  KernelChoice k{AttentionKernel::flash2, KernelProfile::fused, true};
  k.ep = 64;
  FlopsOptions o;
  o.recompute = Recompute::selective;
  const MicroStepTimes core = micro_step_times(spec, 1, 4096, Precision::bf16_mixed, o, k, h100);
  double previous = core.recompute_s;
  for (auto add : {&RecomputeModules::mla_up_proj, &RecomputeModules::layernorm, &RecomputeModules::mlp,
                   &RecomputeModules::moe_act}) {
    o.recompute_modules.*add = true;
    const MicroStepTimes t = micro_step_times(spec, 1, 4096, Precision::bf16_mixed, o, k, h100);
    CHECK(t.recompute_s > previous);
    CHECK(t.forward_s == doctest::Approx(core.forward_s));
    CHECK(t.kernels.total_s() == doctest::Approx(t.forward_s + t.backward_s + t.recompute_s).epsilon(1e-12));
    previous = t.recompute_s;
  }
}

}  // namespace
}  // namespace stepcast

namespace stepcast {
namespace {

TEST_CASE("a small eager step is CPU-bound at the dispatch cost per op; compiled code launches at the driver's") {
  // Llama-3.2-1B (16 layers, h 2048, 32 heads / 8 KV, SwiGLU 8192, V 128256, tied), one
  // sequence of 512 on a B200: the case the per-op costs come from (compute.hpp).
  TransformerSpec s = *find_model("llama-3-8b");
  s.name = "llama-3.2-1b";
  s.layers = 16;
  s.hidden = 2048;
  s.heads = 32;
  s.kv_heads = 8;
  s.ffn_hidden = 8192;
  s.tied_embeddings = true;
  const DeviceRates b200 = catalog_device_rates(*find_gpu("b200-sxm-180gb"), Dtype::bf16, AttentionKernel::flash2);
  const KernelChoice eager{AttentionKernel::flash2, KernelProfile::eager, true};
  const MicroStepTimes t = micro_step_times(s, 1, 512, Precision::bf16_mixed, {}, eager, b200);
  // 548 forward ops and 1,141 backward ops at the eager costs: 8.1 ms and 40.7 ms.
  CHECK(t.forward_s == doctest::Approx(548 * kEagerForwardOp_s).epsilon(0.01));
  CHECK(t.backward_s == doctest::Approx(1141 * kEagerBackwardOp_s).epsilon(0.01));
  CHECK(t.kernels.launch_s > 0.5 * (t.forward_s + t.backward_s));
  // The same step compiled is no longer launch-bound at 5 µs per launch of fewer kernels.
  const KernelChoice compiled{AttentionKernel::flash2, KernelProfile::compiled, true};
  const MicroStepTimes c = micro_step_times(s, 1, 512, Precision::bf16_mixed, {}, compiled, b200);
  CHECK(c.forward_s + c.backward_s < 0.4 * (t.forward_s + t.backward_s));
}

}  // namespace
}  // namespace stepcast

namespace stepcast {
namespace {

TEST_CASE("tensor parallelism: each rank runs 1/t of the attention FLOPs at the same kernel rate") {
  const TransformerSpec& spec = *find_model("llama-2-7b");
  DeviceRates d = unit_device();
  d.gemm_ceiling_tflops = 1e9;  // GEMMs and memory ~free: the attention alone remains
  d.attention_gemm_ceiling_tflops = 1e9;
  KernelChoice k{AttentionKernel::flash2, KernelProfile::compiled, true};
  const MicroStepTimes one = micro_step_times(spec, 1, 4096, Precision::bf16_mixed, {}, k, d);
  k.tp = 4;
  const MicroStepTimes four = micro_step_times(spec, 1, 4096, Precision::bf16_mixed, {}, k, d);
  CHECK(four.kernels.attention_s == doctest::Approx(one.kernels.attention_s / 4));
  k.tp = 1;
  k.sp = true;
  CHECK_THROWS_AS(micro_step_times(spec, 1, 4096, Precision::bf16_mixed, {}, k, d), std::invalid_argument);
}

}  // namespace
}  // namespace stepcast

namespace stepcast {
namespace {

TEST_CASE(
    "context parallelism: a rank runs 1/cp of the whole sequence's attention in kernels of s/cp, and "
    "GEMMs of b·s/cp rows") {
  const TransformerSpec& spec = *find_model("llama-2-7b");
  const DeviceRates d = unit_device();  // flat attention rate: the FLOPs decide
  KernelChoice k{AttentionKernel::flash2, KernelProfile::compiled, true};
  const MicroStepTimes one = micro_step_times(spec, 1, 8192, Precision::bf16_mixed, {}, k, d);
  const MicroStepTimes half_seq = micro_step_times(spec, 1, 4096, Precision::bf16_mixed, {}, k, d);
  k.cp = 2;
  const MicroStepTimes two = micro_step_times(spec, 1, 8192, Precision::bf16_mixed, {}, k, d);
  // Causal attention of 8192 tokens split over 2 ranks: each does half of it, which is
  // twice the attention of a 4096-token sequence (attention FLOPs grow as s^2).
  CHECK(two.layer_attention_forward_s == doctest::Approx(one.layer_attention_forward_s / 2));
  CHECK(two.layer_attention_forward_s == doctest::Approx(2 * half_seq.layer_attention_forward_s));
  CHECK(two.kernels.gemm_s == doctest::Approx(half_seq.kernels.gemm_s));  // 4096 rows per rank
  k.attention = AttentionKernel::unfused;
  CHECK_THROWS_AS(micro_step_times(spec, 1, 8192, Precision::bf16_mixed, {}, k, d), std::invalid_argument);
  k.attention = AttentionKernel::flash2;
  k.cp = 3;  // does not divide 8192
  CHECK_THROWS_AS(micro_step_times(spec, 1, 8192, Precision::bf16_mixed, {}, k, d), std::invalid_argument);
}

}  // namespace
}  // namespace stepcast

namespace stepcast {
namespace {

TEST_CASE(
    "one expert, top-1, no shared expert: the MoE layer's GEMMs are the dense MLP's plus the 1-wide router; "
    "a busier rank's experts take longer") {
  const TransformerSpec dense = small_gpt();
  TransformerSpec moe = dense;
  moe.moe = MoeSpec{1, 1, 0, dense.ffn_hidden, 0, 0, 1};
  const KernelChoice k{AttentionKernel::flash2, KernelProfile::compiled, true};
  FlopsOptions o;
  const MicroStepTimes d = micro_step_times(dense, 1, 4, Precision::bf16_mixed, o, k, unit_device());
  const MicroStepTimes m = micro_step_times(moe, 1, 4, Precision::bf16_mixed, o, k, unit_device());
  // Router: (4 tokens x h)·(h x 1) forward; backward its input and weight gradients.
  const std::int64_t h = dense.hidden;
  const double router = gemm_s(4, 1, h) + gemm_s(4, h, 1) + gemm_s(1, h, 4);
  CHECK(m.kernels.gemm_s - d.kernels.gemm_s == doctest::Approx(dense.layers * router));
  // 8 experts of the dense width, top-2, over 2 ranks: 4 local experts of 4·2·2/8 = 2 rows
  // each; imbalance 2 doubles them. (Rows this few fit one tile, so time grows only weakly.)
  moe.moe = MoeSpec{8, 2, 0, dense.ffn_hidden, 0, 0, 1};
  CHECK(moe_layer_gemms(moe, *moe.moe, 4, 2, 1.0)[1].shape.m == 2);
  CHECK(moe_layer_gemms(moe, *moe.moe, 4, 2, 2.0)[1].shape.m == 4);
  KernelChoice ep2 = k;
  ep2.ep = 2;
  KernelChoice busy = ep2;
  busy.moe_imbalance = 8.0;
  const MicroStepTimes balanced = micro_step_times(moe, 1, 4, Precision::bf16_mixed, o, ep2, unit_device());
  const MicroStepTimes skewed = micro_step_times(moe, 1, 4, Precision::bf16_mixed, o, busy, unit_device());
  CHECK(skewed.kernels.gemm_s >= balanced.kernels.gemm_s);
  CHECK_THROWS_AS(micro_step_times(dense, 1, 4, Precision::bf16_mixed, o, ep2, unit_device()), std::invalid_argument);
}

}  // namespace
}  // namespace stepcast

namespace stepcast {
namespace {

/// `text` written to a file of its own under the temporary directory.
std::filesystem::path written(const std::string& name, const std::string& text) {
  const auto file = std::filesystem::temp_directory_path() / ("stepcast-compute-test-" + name + ".json");
  std::ofstream(file) << text;
  return file;
}

const char* kKernelFit = R"("gemm_fraction": 0.7, "attention_fraction": 0.9, "arch": "hopper", "fitted_on": [])";

TEST_CASE(
    "in-step fractions: a generation's end-to-end fit replaces the GEMM fraction of its GPUs only, and a "
    "record sees the fit without its own source") {
  const auto file = written("gen", std::string("{") + kKernelFit + R"(, "generations": [{"arch": "ampere",
      "gemm_fraction": 0.82, "records": 4, "without": [{"source": "a/b · c.md", "gemm_fraction": 0.9, "records": 3},
      {"source": "OPT paper", "gemm_fraction": 0.8, "records": 1}], "grid": {}, "method": "m"}]})");
  const InStepFractions f = load_in_step_fractions(file, "t.json");
  CHECK(gemm_fraction(f, GpuArch::ampere) == 0.82);
  CHECK(gemm_fraction(f, GpuArch::hopper) == 0.7);  // the kernel-level fraction's own generation
  // Without a fraction of its own, the nearest generation's in catalog order, the older on a
  // tie: volta and turing -> ampere; ada (one from ampere, one from hopper) -> ampere;
  // blackwell and cdna3 -> hopper.
  CHECK(gemm_fraction(f, GpuArch::volta) == 0.82);
  CHECK(gemm_fraction(f, GpuArch::turing) == 0.82);
  CHECK(gemm_fraction(f, GpuArch::ada) == 0.82);
  CHECK(gemm_fraction(f, GpuArch::blackwell) == 0.7);
  CHECK(gemm_fraction(f, GpuArch::cdna3) == 0.7);
  CHECK(gemm_fraction_from(f, GpuArch::ada) == GpuArch::ampere);
  // A file stating no generation at all (a probe fit): its fraction everywhere.
  const InStepFractions plain = load_in_step_fractions(written("plain", R"({"gemm_fraction": 0.6,
      "attention_fraction": 0.9, "fitted_on": []})"),
                                                       "t.json");
  CHECK(gemm_fraction(plain, GpuArch::volta) == 0.6);
  CHECK(gemm_fraction(plain, GpuArch::blackwell) == 0.6);
  CHECK(gemm_fraction(without_source(f, "a/b · c.md"), GpuArch::ampere) == 0.9);
  CHECK(gemm_fraction(without_source(f, "OPT paper"), GpuArch::ampere) == 0.8);
  CHECK(gemm_fraction(without_source(f, "another source"), GpuArch::ampere) == 0.82);
  // Scaled rates say which fit they come from; attention keeps the kernel-level fraction.
  DeviceRates d;
  d.arch = GpuArch::ampere;
  d.gemm_ceiling_tflops = 100;
  d.attention.scale = 1;
  const DeviceRates s = in_step_rates(d, without_source(f, "OPT paper"));
  CHECK(s.gemm_ceiling_tflops == doctest::Approx(80));
  CHECK(s.attention.scale == doctest::Approx(0.9));
  CHECK(s.gemm_source.find("fitted without OPT paper") != std::string::npos);
}

TEST_CASE("in-step fractions: a generation entry out of range, unknown, or given twice is an input error") {
  const auto bad = [](const std::string& name, const std::string& generations) {
    return written(name, std::string("{") + kKernelFit + R"(, "generations": [)" + generations + "]}");
  };
  const std::string ok = R"({"arch": "ampere", "gemm_fraction": 0.8, "without": []})";
  CHECK_NOTHROW(load_in_step_fractions(bad("ok", ok), "t.json"));
  CHECK_THROWS_WITH_AS(
      load_in_step_fractions(bad("range", R"({"arch": "ampere", "gemm_fraction": 1.2, "without": []})"), "t.json"),
      doctest::Contains("/generations/0/gemm_fraction"), InputError);
  CHECK_THROWS_WITH_AS(
      load_in_step_fractions(bad("arch", R"({"arch": "amper", "gemm_fraction": 0.8, "without": []})"), "t.json"),
      doctest::Contains("ampere"), InputError);
  CHECK_THROWS_WITH_AS(load_in_step_fractions(bad("key", R"({"arch": "ampere", "gemm_fraction": 0.8, "without": [],
                                                            "gemm_fractoin": 1})"),
                                              "t.json"),
                       doctest::Contains("did you mean"), InputError);
  CHECK_THROWS_WITH_AS(load_in_step_fractions(bad("twice", ok + ", " + ok), "t.json"), doctest::Contains("given twice"),
                       InputError);
}

}  // namespace
}  // namespace stepcast
