// Tests of model/memory: the DeepSpeed estimators, the ZeRO paper's 7.5B example,
// Korthikanti's activation count, and ordering properties between strategies.
#include "model/memory.hpp"
#include "model/kernels.hpp"
#include "model/compute.hpp"
#include "model/moe.hpp"
#include "model/transformer.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace stepcast {
namespace {

// GPT-2 XL (Radford et al. 2019; HF gpt2-xl config): 48 layers, h 1600, 25 heads, ffn 4h,
// V 50257, 1024 learned positions, tied embeddings, LayerNorm, biases.
TransformerSpec gpt2_xl() {
  TransformerSpec s;
  s.name = "gpt2-xl-test";
  s.kind = ModelKind::decoder;
  s.layers = 48;
  s.hidden = 1600;
  s.heads = 25;
  s.kv_heads = 25;
  s.ffn_hidden = 6400;
  s.gated_mlp = false;
  s.vocab = 50257;
  s.seq_len = 1024;
  s.max_positions = 1024;
  s.tied_embeddings = true;
  s.positional = Positional::learned;
  s.norm = Norm::layernorm;
  s.linear_bias = true;
  s.parallel_attn_mlp = false;
  s.dropout = 0.1;  // GPT-2's config.json resid_pdrop
  s.published_params = 1557611200;
  s.source = "test";
  return s;
}

// Llama-2-7B shape (Touvron et al. 2023): 32 layers, h 4096, 32 heads (MHA), SwiGLU ffn 11008,
// V 32000, RoPE, RMSNorm, untied head, no biases.
TransformerSpec llama2_7b() {
  TransformerSpec s;
  s.name = "llama-2-7b-test";
  s.kind = ModelKind::decoder;
  s.layers = 32;
  s.hidden = 4096;
  s.heads = 32;
  s.kv_heads = 32;
  s.ffn_hidden = 11008;
  s.gated_mlp = true;
  s.vocab = 32000;
  s.seq_len = 4096;
  s.max_positions = 0;
  s.tied_embeddings = false;
  s.positional = Positional::rope;
  s.norm = Norm::rmsnorm;
  s.linear_bias = false;
  s.parallel_attn_mlp = false;
  s.published_params = 6738415616;
  s.source = "test";
  return s;
}

MemoryInputs base_inputs(const TransformerSpec& spec, Strategy strategy, std::int64_t gpus) {
  MemoryInputs in;
  in.model = &spec;
  in.micro_batch = 1;
  in.seq_len = 1024;
  in.precision = Precision::bf16_mixed;
  in.optimizer = OptimizerKind::adam_mixed_16;
  in.recompute = Recompute::none;
  in.flash_attention = true;
  in.strategy = strategy;
  in.gpus = gpus;
  in.gpus_per_node = 8;
  in.capacity_bytes = 80e9;
  in.cuda_context_bytes = 0.5e9;
  return in;
}

double model_states(const MemoryInputs& in) { return model_state_bytes(param_counts(*in.model, in.lora), in).total(); }

double total(const MemoryInputs& in) { return memory_per_gpu(in).total_bytes; }

double term(const MemoryBreakdown& b, const std::string& name) {
  for (const MemoryTerm& t : b.terms)
    if (t.name == name) return t.bytes;
  FAIL("no term " << name);
  return 0;
}

const std::int64_t kGpuCounts[] = {1, 2, 4, 8, 16, 64, 512};

}  // namespace

TEST_CASE("test fixtures have the published parameter counts") {
  // GPT-2 XL: 48·30,740,800 (block) + 80,411,200 (wte) + 1,638,400 (wpe) + 3,200 (ln_f).
  CHECK(parameter_count(gpt2_xl()) == 1557611200);
  CHECK(parameter_count(llama2_7b()) == 6738415616);
  // DeepSpeed's largest_layer_params for GPT-2 XL is the wte embedding, 50257·1600.
  CHECK(largest_module_params(gpt2_xl()) == 80411200);
  // Llama-2-7B: embedding and untied head are both 32000·4096.
  CHECK(largest_module_params(llama2_7b()) == 131072000);
}

TEST_CASE("DeepSpeed ZeRO-2 estimator: model states = 4P + 16P/N (adam_deepspeed)") {
  // estimate_zero2_model_states_mem_needs, no offload: gpu_mem = 4·P + 16·P/N
  // (2 B fp16 params + 2 B fp16 grads, full; 4 B fp32 grads + 12 B Adam states, sharded).
  const TransformerSpec spec = gpt2_xl();
  const double p = static_cast<double>(parameter_count(spec));
  for (std::int64_t n : kGpuCounts) {
    MemoryInputs in = base_inputs(spec, Strategy::zero2, n);
    in.optimizer = OptimizerKind::adam_deepspeed_18;
    CAPTURE(n);
    CHECK(model_states(in) == doctest::Approx(4 * p + 16 * p / n).epsilon(1e-12));
  }
}

TEST_CASE("DeepSpeed ZeRO-3 estimator: model states = 18P/N + 4·largest_layer (adam_deepspeed)") {
  // estimate_zero3_model_states_mem_needs, no offload:
  // gpu_mem = 4·largest_layer_params + 18·P/N; for GPT-2 XL largest_layer = wte = 80,411,200.
  const TransformerSpec spec = gpt2_xl();
  const double p = static_cast<double>(parameter_count(spec));
  const double largest = 80411200.0;
  for (std::int64_t n : kGpuCounts) {
    MemoryInputs in = base_inputs(spec, Strategy::zero3, n);
    in.optimizer = OptimizerKind::adam_deepspeed_18;
    CAPTURE(n);
    CHECK(model_states(in) == doctest::Approx(18 * p / n + 4 * largest).epsilon(1e-12));
  }
}

TEST_CASE("ZeRO paper Fig. 1: 7.5B params on 64 GPUs, K = 12") {
  // Ψ = 7.5e9, N = 64, 2 + 2 + K bytes/param:
  //   DDP          (2 + 2 + K)Ψ          = 120 GB
  //   P_os          (2 + 2)Ψ + KΨ/N      = 31.4 GB
  //   P_os+g        2Ψ + (2 + K)Ψ/N      = 16.6 GB
  //   P_os+g+p      (2 + 2 + K)Ψ/N       = 1.9 GB
  // The paper's figure counts weights + gradients + optimizer only (no gathered working set).
  ParamCounts c;
  c.stored = c.trainable = 7.5e9;
  const TransformerSpec spec = gpt2_xl();  // unused by model_state_bytes
  auto states = [&](Strategy s) {
    MemoryInputs in = base_inputs(spec, s, 64);
    const ModelStateBytes m = model_state_bytes(c, in);
    return m.weights + m.gradients + m.optimizer;
  };
  auto gb1 = [](double bytes) { return std::round(bytes / 1e8) / 10.0; };  // GB, 1 decimal
  CHECK(states(Strategy::ddp) == doctest::Approx(120e9));
  CHECK(states(Strategy::zero1) == doctest::Approx(4 * 7.5e9 + 12 * 7.5e9 / 64));
  CHECK(states(Strategy::zero2) == doctest::Approx(2 * 7.5e9 + 14 * 7.5e9 / 64));
  CHECK(states(Strategy::zero3) == doctest::Approx(16 * 7.5e9 / 64));
  CHECK(gb1(states(Strategy::ddp)) == doctest::Approx(120.0));
  CHECK(gb1(states(Strategy::zero1)) == doctest::Approx(31.4));
  CHECK(gb1(states(Strategy::zero2)) == doctest::Approx(16.6));
  CHECK(gb1(states(Strategy::zero3)) == doctest::Approx(1.9));
}

TEST_CASE("Korthikanti: activations per layer = s·b·h·(34 + 5·a·s/h) for ffn = 4h, MHA") {
  // Korthikanti et al. 2022, Sec. 4.1: attention 11sbh + 5as²b, MLP 19sbh, norms 4sbh.
  const TransformerSpec gpt3 = [] {
    TransformerSpec s = gpt2_xl();
    s.layers = 96, s.hidden = 12288, s.heads = 96, s.kv_heads = 96, s.ffn_hidden = 4 * 12288;
    return s;
  }();
  for (const TransformerSpec& spec : {gpt2_xl(), gpt3}) {
    const double h = static_cast<double>(spec.hidden), a = static_cast<double>(spec.heads);
    for (std::int64_t b : {1, 4}) {
      for (std::int64_t s : {512, 2048}) {
        const double sbh = static_cast<double>(s * b) * h;
        CAPTURE(spec.hidden);
        CAPTURE(b);
        CAPTURE(s);
        CHECK(activation_bytes_per_layer(spec, b, s, Recompute::none, false) ==
              doctest::Approx(sbh * (34 + 5 * a * s / h)));
        // Flash attention: no score matrix, an fp32 logsumexp per row and head (4·a·s·b).
        CHECK(activation_bytes_per_layer(spec, b, s, Recompute::none, true) ==
              doctest::Approx(34 * sbh + 4 * a * s * b));
        // Selective recompute (Korthikanti Sec. 5): 34·s·b·h.
        CHECK(activation_bytes_per_layer(spec, b, s, Recompute::selective, false) == doctest::Approx(34 * sbh));
        // Full recompute: the 2·s·b·h layer input only.
        CHECK(activation_bytes_per_layer(spec, b, s, Recompute::full, false) == doctest::Approx(2 * sbh));
      }
    }
  }
}

TEST_CASE("generalised activations: GQA width d and SwiGLU width f replace h and 4h") {
  // Per token (bytes, 16-bit, dropout masks 1 B): attention 6h + 4d + mask h, gated MLP
  // 2h + 8f + mask h, norms 4h. Llama-2-70B shape: h 8192, a 64, kv 8 (d = 1024), f 28672.
  TransformerSpec spec = llama2_7b();
  spec.hidden = 8192, spec.heads = 64, spec.kv_heads = 8, spec.ffn_hidden = 28672;
  spec.dropout = 0.1;
  const double h = 8192, d = 1024, f = 28672;
  const std::int64_t b = 2, s = 4096;
  CHECK(activation_bytes_per_layer(spec, b, s, Recompute::selective, true) ==
        doctest::Approx(s * b * (14 * h + 4 * d + 8 * f)));
  // Plain MLP, parallel block (one shared norm, MLP input shared with attention):
  // attention 7h + 4d, MLP 1h + 4f (mask + activation in/out), norm 2h.
  spec.gated_mlp = false;
  spec.parallel_attn_mlp = true;
  CHECK(activation_bytes_per_layer(spec, b, s, Recompute::selective, true) ==
        doctest::Approx(s * b * (10 * h + 4 * d + 4 * f)));
}

TEST_CASE("a model without dropout stores no masks: 2h per token less, and scores without their mask and output") {
  // PyTorch's dropout at p = 0 returns its input: no 1-byte mask per residual branch, no
  // embedding mask, and materialised scores keep only the softmax output (a·s²·b·w).
  TransformerSpec spec = gpt2_xl();
  const double h = static_cast<double>(spec.hidden), a = static_cast<double>(spec.heads);
  const std::int64_t b = 2, s = 1024;
  const double sbh = static_cast<double>(s * b) * h;
  const double with = activation_bytes_per_layer(spec, b, s, Recompute::none, false);
  spec.dropout = 0.0;
  CHECK(activation_bytes_per_layer(spec, b, s, Recompute::selective, true) == doctest::Approx(32 * sbh));
  CHECK(with - activation_bytes_per_layer(spec, b, s, Recompute::none, false) ==
        doctest::Approx(2 * sbh + 3 * a * s * s * b));
  // Any probability above 0 keeps the masks (their size does not depend on it).
  spec.dropout = 1e-3;
  CHECK(activation_bytes_per_layer(spec, b, s, Recompute::none, false) == doctest::Approx(with));
}

TEST_CASE("ZeRO stage k+1 never needs more memory than stage k") {
  // ZeRO paper Sec. 5: each stage shards one more state, never adds one.
  for (const TransformerSpec& spec : {gpt2_xl(), llama2_7b()}) {
    for (OptimizerKind opt :
         {OptimizerKind::adam_mixed_16, OptimizerKind::adam_deepspeed_18, OptimizerKind::sgd_momentum}) {
      for (std::int64_t n : kGpuCounts) {
        CAPTURE(spec.name);
        CAPTURE(name(opt));
        CAPTURE(n);
        auto in = [&](Strategy s) {
          MemoryInputs x = base_inputs(spec, s, n);
          x.optimizer = opt;
          return x;
        };
        CHECK(model_states(in(Strategy::zero1)) <= model_states(in(Strategy::ddp)));
        CHECK(model_states(in(Strategy::zero2)) <= model_states(in(Strategy::zero1)));
        CHECK(model_states(in(Strategy::zero3)) <= model_states(in(Strategy::zero2)));
        CHECK(total(in(Strategy::zero1)) <= total(in(Strategy::ddp)));
        CHECK(total(in(Strategy::zero2)) <= total(in(Strategy::zero1)));
        CHECK(total(in(Strategy::zero3)) <= total(in(Strategy::zero2)));
      }
    }
  }
}

TEST_CASE("FSDP: FULL_SHARD <= SHARD_GRAD_OP <= NO_SHARD") {
  for (const TransformerSpec& spec : {gpt2_xl(), llama2_7b()}) {
    for (std::int64_t n : kGpuCounts) {
      CAPTURE(spec.name);
      CAPTURE(n);
      const double full = total(base_inputs(spec, Strategy::fsdp_full_shard, n));
      const double sgo = total(base_inputs(spec, Strategy::fsdp_shard_grad_op, n));
      const double none = total(base_inputs(spec, Strategy::fsdp_no_shard, n));
      CHECK(full <= sgo);
      CHECK(sgo <= none);
    }
  }
}

TEST_CASE("more GPUs never need more memory per GPU under a sharded strategy") {
  const TransformerSpec spec = llama2_7b();
  for (Strategy s : {Strategy::zero1, Strategy::zero2, Strategy::zero3, Strategy::fsdp_full_shard,
                     Strategy::fsdp_shard_grad_op, Strategy::fsdp_hybrid_shard}) {
    for (OptimizerKind opt : {OptimizerKind::adam_mixed_16, OptimizerKind::adam_deepspeed_18}) {
      double previous = 0;
      for (std::int64_t n = 1; n <= 1024; n *= 2) {
        MemoryInputs in = base_inputs(spec, s, n);
        in.optimizer = opt;
        const double t = total(in);
        CAPTURE(name(s));
        CAPTURE(n);
        if (n > 1) CHECK(t <= previous);
        previous = t;
      }
    }
  }
}

TEST_CASE("on one GPU the sharded strategies hold the unsharded model states") {
  // ZeRO paper: the 1/N terms at N = 1 are the DDP terms (16Ψ); FSDP falls back to NO_SHARD.
  // adam_deepspeed ZeRO-3 is excluded: the estimator adds 4·largest_layer even at N = 1.
  const TransformerSpec spec = gpt2_xl();
  for (OptimizerKind opt :
       {OptimizerKind::adam_mixed_16, OptimizerKind::sgd_momentum, OptimizerKind::adam_deepspeed_18}) {
    MemoryInputs ddp = base_inputs(spec, Strategy::ddp, 1);
    ddp.optimizer = opt;
    const double unsharded = model_states(ddp);
    for (Strategy s : {Strategy::zero1, Strategy::zero2, Strategy::zero3, Strategy::fsdp_full_shard,
                       Strategy::fsdp_shard_grad_op, Strategy::fsdp_hybrid_shard, Strategy::fsdp_no_shard}) {
      if (opt == OptimizerKind::adam_deepspeed_18 && s == Strategy::zero3) continue;
      MemoryInputs in = base_inputs(spec, s, 1);
      in.optimizer = opt;
      CAPTURE(name(s));
      CAPTURE(name(opt));
      CHECK(model_states(in) == doctest::Approx(unsharded).epsilon(1e-12));
    }
  }
  // And the DDP figure itself is 16 B/param for Adam mixed (ZeRO paper, K = 12).
  CHECK(model_states(base_inputs(spec, Strategy::ddp, 1)) == doctest::Approx(16.0 * 1557611200.0));
}

TEST_CASE("SHARD_GRAD_OP holds full weights at the peak, FULL_SHARD a 1/N shard plus gathered blocks") {
  const TransformerSpec spec = llama2_7b();
  const ParamCounts c = param_counts(spec, nullptr);
  const MemoryInputs sgo = base_inputs(spec, Strategy::fsdp_shard_grad_op, 8);
  const MemoryInputs full = base_inputs(spec, Strategy::fsdp_full_shard, 8);
  CHECK(model_state_bytes(c, sgo).weights == doctest::Approx(2 * c.stored));
  CHECK(model_state_bytes(c, sgo).gathered_params == 0);
  CHECK(model_state_bytes(c, full).weights == doctest::Approx(2 * c.stored / 8));
  // (prefetch_layers + 1) blocks of 16-bit parameters: 2 · 2 · per_layer.
  CHECK(model_state_bytes(c, full).gathered_params == doctest::Approx(2 * 2 * c.per_layer));
  // HYBRID_SHARD shards over the 8 GPUs of a node, whatever the world size.
  MemoryInputs hybrid = base_inputs(spec, Strategy::fsdp_hybrid_shard, 64);
  CHECK(model_state_bytes(c, hybrid).total() ==
        doctest::Approx(model_state_bytes(c, base_inputs(spec, Strategy::fsdp_full_shard, 8)).total()));
}

TEST_CASE("recompute and flash attention never increase activations") {
  for (const TransformerSpec& spec : {gpt2_xl(), llama2_7b()}) {
    MemoryInputs in = base_inputs(spec, Strategy::ddp, 8);
    in.micro_batch = 4;
    in.flash_attention = false;
    auto act = [&](Recompute r, bool flash) {
      MemoryInputs x = in;
      x.recompute = r;
      x.flash_attention = flash;
      return term(memory_per_gpu(x), "activations");
    };
    CHECK(act(Recompute::full, false) < act(Recompute::none, false));
    CHECK(act(Recompute::full, true) < act(Recompute::none, true));
    CHECK(act(Recompute::full, false) < act(Recompute::selective, false));
    CHECK(act(Recompute::selective, false) < act(Recompute::none, false));
    CHECK(act(Recompute::none, true) < act(Recompute::none, false));
  }
}

TEST_CASE("fits: a step fits when neither the GPU nor the host runs out; the verdict is the worse of the two") {
  MemoryBreakdown m;
  CHECK(fits(m));
  m.host_verdict = MemoryVerdict::oom;  // CPU offload past the host's memory
  CHECK_FALSE(fits(m));
  CHECK(overall_verdict(m) == MemoryVerdict::oom);
  m.host_verdict = MemoryVerdict::tight;
  CHECK(fits(m));
  CHECK(overall_verdict(m) == MemoryVerdict::tight);
  m.verdict = MemoryVerdict::oom;
  CHECK_FALSE(fits(m));
}

TEST_CASE("verdict: tight when total > 0.9·capacity, oom when total > capacity") {
  CHECK(memory_verdict(72e9, 80e9) == MemoryVerdict::fits);  // exactly 90%: fits
  CHECK(memory_verdict(72e9 + 1, 80e9) == MemoryVerdict::tight);
  CHECK(memory_verdict(80e9, 80e9) == MemoryVerdict::tight);  // exactly full: tight
  CHECK(memory_verdict(80e9 + 1, 80e9) == MemoryVerdict::oom);
  CHECK_THROWS_AS(memory_verdict(1, 0), std::invalid_argument);
  // Through memory_per_gpu: capacity placed at the total itself, then just below it.
  const TransformerSpec spec = gpt2_xl();
  MemoryInputs in = base_inputs(spec, Strategy::zero3, 8);
  const MemoryBreakdown b = memory_per_gpu(in);
  in.capacity_bytes = b.total_bytes;
  CHECK(memory_per_gpu(in).verdict == MemoryVerdict::tight);
  in.capacity_bytes = b.total_bytes * 0.999;
  CHECK(memory_per_gpu(in).verdict == MemoryVerdict::oom);
  in.capacity_bytes = b.total_bytes * 2;
  CHECK(memory_per_gpu(in).verdict == MemoryVerdict::fits);
}

TEST_CASE("LoRA needs less memory than full fine-tuning") {
  const TransformerSpec spec = llama2_7b();
  LoraSpec lora;
  lora.rank = 16;
  lora.targets = {"q", "v"};
  for (Strategy s : {Strategy::ddp, Strategy::zero2, Strategy::zero3, Strategy::fsdp_full_shard}) {
    MemoryInputs full = base_inputs(spec, s, 8);
    MemoryInputs adapted = full;
    adapted.lora = &lora;
    CAPTURE(name(s));
    const MemoryBreakdown bf = memory_per_gpu(full), bl = memory_per_gpu(adapted);
    CHECK(bl.total_bytes < bf.total_bytes);
    // Frozen base weights are still stored: weights grow by the adapters only.
    CHECK(term(bl, "weights") >= term(bf, "weights"));
    // Gradients and optimizer cover only the adapters: 16 B/param in total for adam.
    const double adapters = static_cast<double>(lora_parameter_count(spec, lora));
    const std::int64_t n = shard_degree(s, 8, 8);
    CHECK(term(bl, "optimizer") == doctest::Approx(12 * adapters / (shards_optimizer(s) ? n : 1)));
  }
}

TEST_CASE("memory_per_gpu: fixed term order, total is the sum, largest terms named") {
  const TransformerSpec spec = llama2_7b();
  MemoryInputs in = base_inputs(spec, Strategy::ddp, 8);
  const MemoryBreakdown b = memory_per_gpu(in);
  const char* order[] = {"weights", "gradients",    "optimizer",    "gathered_params", "activations",
                         "logits",  "comm_buffers", "cuda_context", "fragmentation"};
  REQUIRE(b.terms.size() == 9);
  double sum = 0;
  for (std::size_t i = 0; i < b.terms.size(); ++i) {
    CHECK(b.terms[i].name == order[i]);
    sum += b.terms[i].bytes;
  }
  CHECK(b.total_bytes == doctest::Approx(sum));
  // DDP Adam on 6.74B params: optimizer 12P, then weights 2P = gradients 2P = bucket copy 2P.
  REQUIRE(b.largest.size() == 3);
  CHECK(b.largest[0] == "optimizer");
  CHECK(b.verdict == MemoryVerdict::oom);
  // Fragmentation is the named fraction of everything but the CUDA context.
  CHECK(term(b, "fragmentation") ==
        doctest::Approx(kAllocatorFragmentation * (sum - term(b, "fragmentation") - 0.5e9)));
  // gradient_as_bucket_view removes DDP's second gradient copy.
  in.gradient_as_bucket_view = true;
  CHECK(term(memory_per_gpu(in), "comm_buffers") == 0);
}

TEST_CASE("memory_per_gpu rejects impossible inputs") {
  const TransformerSpec spec = gpt2_xl();
  MemoryInputs in = base_inputs(spec, Strategy::ddp, 1);
  in.model = nullptr;
  CHECK_THROWS_AS(memory_per_gpu(in), std::invalid_argument);
  in = base_inputs(spec, Strategy::ddp, 1);
  in.capacity_bytes = 0;
  CHECK_THROWS_AS(memory_per_gpu(in), std::invalid_argument);
  in = base_inputs(spec, Strategy::ddp, 0);
  CHECK_THROWS_AS(memory_per_gpu(in), std::invalid_argument);
}

TEST_CASE("optimizer and verdict names round-trip") {
  for (const std::string& n : optimizer_names()) CHECK(name(parse_optimizer(n)) == n);
  CHECK(optimizer_names() == std::vector<std::string>{"adam", "adam_deepspeed", "sgd"});
  CHECK(parse_optimizer("adam") == OptimizerKind::adam_mixed_16);
  CHECK_THROWS_AS(parse_optimizer("adamw"), std::invalid_argument);
  CHECK(name(MemoryVerdict::fits) == "fits");
  CHECK(name(MemoryVerdict::tight) == "tight");
  CHECK(name(MemoryVerdict::oom) == "oom");
}

TEST_CASE("micro-step times: micro_batch x seq_len is checked, huge but valid ones stay finite") {
  const TransformerSpec& spec = *find_model("llama-2-7b");
  const DeviceRates d = catalog_device_rates(*find_gpu("a100-sxm4-80gb"), Dtype::bf16, AttentionKernel::flash2);
  const KernelChoice k;
  FlopsOptions o;
  CHECK_THROWS_AS(micro_step_times(spec, std::int64_t{1} << 40, std::int64_t{1} << 30, Precision::bf16_mixed, o, k, d),
                  std::invalid_argument);
  // Fuzz finding F4: micro_batch 0 from a record is an error, never an assert.
  CHECK_THROWS_AS(micro_step_times(spec, 0, 1024, Precision::bf16_mixed, o, k, d), std::invalid_argument);
  CHECK_THROWS_AS(micro_step_times(spec, 4, 0, Precision::bf16_mixed, o, k, d), std::invalid_argument);
  // seq_len 1e9: an absurd context, but finite and positive times (the reader bounds it).
  const MicroStepTimes t = micro_step_times(spec, 1, 1'000'000'000, Precision::bf16_mixed, o, k, d);
  CHECK(std::isfinite(t.forward_s));
  CHECK(t.forward_s > 0);
  CHECK(t.backward_s > t.forward_s);
}

TEST_CASE("context parallelism: activations and logits are those of s/cp tokens; model states shard over DP x CP") {
  const TransformerSpec spec = *find_model("llama-2-7b");
  MemoryInputs whole = base_inputs(spec, Strategy::zero1, 8);
  whole.seq_len = 8192;
  MemoryInputs quarter = whole;
  quarter.seq_len = 2048;
  MemoryInputs cp = whole;
  cp.cp = 4;
  const MemoryBreakdown c = memory_per_gpu(cp), q = memory_per_gpu(quarter);
  CHECK(term(c, "activations") == doctest::Approx(term(q, "activations")));
  CHECK(term(c, "logits") == doctest::Approx(term(q, "logits")));
  CHECK(term(c, "optimizer") == doctest::Approx(term(memory_per_gpu(whole), "optimizer")));
  cp.cp = 3;  // does not divide 8192
  CHECK_THROWS_AS(memory_per_gpu(cp), std::invalid_argument);
}

TEST_CASE(
    "CPU offload: the optimizer leaves the GPU for the host, which holds 16 B per parameter of every "
    "GPU's partition; the verdict names what runs out") {
  const TransformerSpec spec = *find_model("llama-2-7b");
  MemoryInputs in = base_inputs(spec, Strategy::zero2, 8);
  const MemoryBreakdown gpu_only = memory_per_gpu(in);
  in.offload = OffloadKind::optimizer;
  in.gpus_per_host = 8;
  in.host_capacity_bytes = 1e12;
  const MemoryBreakdown off = memory_per_gpu(in);
  CHECK(term(off, "optimizer") == 0);
  CHECK(term(off, "weights") == term(gpu_only, "weights"));
  const double P = static_cast<double>(parameter_count(spec));
  CHECK(off.host_total_bytes == doctest::Approx(8 * 16 * P / 8));  // 8 GPUs x 16 B x P/8
  CHECK(off.host_verdict == MemoryVerdict::fits);
  CHECK(out_of_memory(off).empty());
  in.host_capacity_bytes = 100e9;  // 112 GB of host states do not fit
  CHECK(memory_per_gpu(in).host_verdict == MemoryVerdict::oom);
  CHECK(out_of_memory(memory_per_gpu(in)) == "host");
  // Parameter offload takes the 16-bit shards too.
  in.strategy = Strategy::zero3;
  in.offload = OffloadKind::parameters;
  in.host_capacity_bytes = 1e12;
  const MemoryBreakdown params = memory_per_gpu(in);
  CHECK(term(params, "weights") == 0);
  CHECK(params.host_total_bytes == doctest::Approx(8 * 18 * P / 8));
  in.host_capacity_bytes = 0;  // a host of unknown size is refused
  CHECK_THROWS_AS(memory_per_gpu(in), std::invalid_argument);
}

TEST_CASE("MoE memory: a GPU holds 1/ep of the routed experts; ZeRO shards them over the gpus/ep expert-DP ranks") {
  const TransformerSpec* mix = find_model("mixtral-8x7b");
  REQUIRE(mix != nullptr);
  const double p = static_cast<double>(parameter_count(*mix));
  const double routed = routed_expert_parameters(*mix);
  CHECK(routed == doctest::Approx(32.0 * 8 * 3 * 4096 * 14336));
  // ep = 1: the experts shard as the dense part does; the states are those of all P.
  MemoryInputs one = base_inputs(*mix, Strategy::zero1, 8);
  one.capacity_bytes = 1e12;
  const MemoryBreakdown m1 = memory_per_gpu(one);
  CHECK(term(m1, "weights") == doctest::Approx(2 * p));
  CHECK(term(m1, "optimizer") == doctest::Approx(12 * p / 8));
  // ep = 8 on 8 GPUs: each GPU holds one expert per layer (weights, gradients 2 B each);
  // the expert-DP group is one rank, so ZeRO-1 has nothing left to shard in the experts: their
  // optimizer states are 1/8 through EP, the dense part's 1/8 through ZeRO.
  MemoryInputs ep8 = one;
  ep8.ep = 8;
  const MemoryBreakdown m8 = memory_per_gpu(ep8);
  CHECK(term(m8, "weights") == doctest::Approx(2 * (p - routed + routed / 8)));
  CHECK(term(m8, "gradients") == doctest::Approx(2 * (p - routed + routed / 8)));
  CHECK(term(m8, "optimizer") == doctest::Approx(12 * ((p - routed) / 8 + routed / 8)));
  // The gradient row counts what this GPU holds, as its bytes do.
  for (const MemoryTerm& t : m8.terms)
    if (t.name == "gradients")
      CHECK(t.note.find(fmt::format("{:.4g} trainable", p - routed + routed / 8)) != std::string::npos);
  // ep = 2 on 8 GPUs: experts 1/2 per GPU, their optimizer states over 4 expert-DP ranks.
  MemoryInputs ep2 = one;
  ep2.ep = 2;
  CHECK(term(memory_per_gpu(ep2), "optimizer") == doctest::Approx(12 * ((p - routed) / 8 + routed / 2 / 4)));
  ep2.ep = 3;  // does not divide the 8 ranks
  CHECK_THROWS_AS(memory_per_gpu(ep2), std::invalid_argument);
}

TEST_CASE("fused MoE experts keep no outputs for the combine: the probabilities weight the SwiGLU instead") {
  const TransformerSpec* mix = find_model("mixtral-8x7b");
  REQUIRE(mix != nullptr);
  MemoryInputs in = base_inputs(*mix, Strategy::zero1, 8);
  in.capacity_bytes = 1e12;
  const double eager = term(memory_per_gpu(in), "activations");
  in.fused_swiglu = true;
  const double fused = term(memory_per_gpu(in), "activations");
  // Per token and layer the fused profile drops SwiGLU's output (one of its k·f_e-wide
  // tensors, as in a dense layer) and the k expert outputs before combine, k·h, at w = 2.
  CHECK(eager - fused == doctest::Approx(32.0 * 1024 * (2.0 * 14336 + 2.0 * 4096) * 2));
}

TEST_CASE("SP keeping the gathered GEMM inputs stores the QKV and MLP-up inputs whole: 2 x 2h(1 - 1/t) more a token") {
  const TransformerSpec spec = llama2_7b();
  MemoryInputs in = base_inputs(spec, Strategy::zero1, 8);
  in.capacity_bytes = 1e12;
  in.tp = 4;
  in.sp = true;
  const double sharded = term(memory_per_gpu(in), "activations");
  in.sp_keep_gathered = true;
  const double gathered = term(memory_per_gpu(in), "activations");
  const double tokens = static_cast<double>(in.micro_batch * in.seq_len);
  const double h = static_cast<double>(spec.hidden);
  CHECK(gathered - sharded ==
        doctest::Approx(static_cast<double>(spec.layers) * tokens * 2 * (2 * h) * (1 - 1.0 / in.tp)));
  in.sp = false;  // only sequence parallelism shards them in the first place
  CHECK_THROWS_AS(memory_per_gpu(in), std::invalid_argument);
}

TEST_CASE("MoE memory under TP (expert TP 1): experts whole, 1/ep each; the rest 1/t; expert-DP over t·dp/ep") {
  const TransformerSpec* mix = find_model("mixtral-8x7b");
  REQUIRE(mix != nullptr);
  const double p = static_cast<double>(parameter_count(*mix));
  const double routed = routed_expert_parameters(*mix);
  // tp 2 x dp 4 = 8 ranks of one stage, ep 8: every rank one expert per layer, folded over
  // the TP ranks; the expert-DP group is one rank.
  MemoryInputs in = base_inputs(*mix, Strategy::zero1, 4);
  in.capacity_bytes = 1e12;
  in.tp = 2;
  in.sp = true;
  in.ep = 8;
  const MemoryBreakdown m = memory_per_gpu(in);
  CHECK(term(m, "weights") == doctest::Approx(2 * ((p - routed) / 2 + routed / 8)));
  CHECK(term(m, "optimizer") == doctest::Approx(12 * ((p - routed) / 2 / 4 + routed / 8)));
  // ep 2: experts 1/2 per GPU (not split by TP), their states over 2 x 4 / 2 = 4 expert-DP ranks.
  in.ep = 2;
  CHECK(term(memory_per_gpu(in), "optimizer") == doctest::Approx(12 * ((p - routed) / 2 / 4 + routed / 2 / 4)));
  in.ep = 16;  // more than the 8 ranks of the stage
  CHECK_THROWS_AS(memory_per_gpu(in), std::invalid_argument);
}

TEST_CASE(
    "MoE activations grow with the capacity factor: c·k expert-widths of inner activations and dispatch "
    "copies") {
  const TransformerSpec* mix = find_model("mixtral-8x7b");
  REQUIRE(mix != nullptr);
  MemoryInputs in = base_inputs(*mix, Strategy::zero1, 8);
  in.capacity_bytes = 1e12;
  const double a1 = term(memory_per_gpu(in), "activations");
  in.moe_capacity_factor = 1.5;
  const double a15 = term(memory_per_gpu(in), "activations");
  // Per token and layer the factor scales (4·k·f_e + 2·k·h)·w: 0.5 x (4·2·14336 + 2·2·4096)·2.
  CHECK(a15 - a1 == doctest::Approx(32.0 * 1024 * 0.5 * (4.0 * 2 * 14336 + 2.0 * 2 * 4096) * 2));
}

}  // namespace stepcast

namespace stepcast {
namespace {

TEST_CASE("a pipeline's GPU is its fullest stage: the first holds the embedding, the last the head and logits") {
  const TransformerSpec spec = llama2_7b();  // 32 layers, untied head
  const ParameterBreakdown bd = parameter_breakdown(spec);
  MemoryInputs in = base_inputs(spec, Strategy::ddp, 1);
  in.pp = 4;
  in.stage_layers = {8, 8, 8, 8};
  in.stage_in_flight = {1, 1, 1, 1};  // the same activations on every stage
  const MemoryBreakdown m = memory_per_gpu(in);
  CHECK(m.stage == 3);  // the head (untied, as large as the embedding) and the logits
  CHECK(term(m, "logits") > 0);
  const double w = 2.0;
  const double last = 8.0 * static_cast<double>(bd.per_layer) + static_cast<double>(bd.total()) -
                      32.0 * static_cast<double>(bd.per_layer) - static_cast<double>(bd.embedding);
  CHECK(term(m, "weights") == doctest::Approx(w * last));
  // 1F1B keeps p micro-batches in flight on the first stage: it becomes the fullest one,
  // without logits.
  in.stage_in_flight = {4, 3, 2, 1};
  const MemoryBreakdown first = memory_per_gpu(in);
  CHECK(first.stage == 0);
  CHECK(term(first, "logits") == 0);
  CHECK(first.activation_layers == 32);
  CHECK(term(first, "weights") ==
        doctest::Approx(w * (8.0 * static_cast<double>(bd.per_layer) + static_cast<double>(bd.embedding))));
  in.stage_layers = {8, 8, 8};  // one stage missing
  CHECK_THROWS_AS(memory_per_gpu(in), std::invalid_argument);
}

TEST_CASE("every stage's total is listed, stage 0 first; its allocator bytes leave out the CUDA context") {
  const TransformerSpec spec = llama2_7b();
  MemoryInputs in = base_inputs(spec, Strategy::ddp, 1);
  in.pp = 4;
  in.stage_layers = {8, 8, 8, 8};
  in.stage_in_flight = {1, 1, 1, 1};
  const MemoryBreakdown m = memory_per_gpu(in);
  REQUIRE(m.stage_total_bytes.size() == 4);
  CHECK(m.stage_total_bytes[3] == doctest::Approx(m.total_bytes));  // the reported, fullest stage
  CHECK(m.stage_total_bytes[0] < m.stage_total_bytes[3]);           // no head, no logits
  CHECK(allocator_bytes(m, 3) == doctest::Approx(allocator_bytes(m)));
  CHECK(allocator_bytes(m, 0) == doctest::Approx(m.stage_total_bytes[0] - term(m, "cuda_context")));
  // Without a pipeline: no list, and any stage reads the one breakdown.
  const MemoryBreakdown flat = memory_per_gpu(base_inputs(spec, Strategy::ddp, 1));
  CHECK(flat.stage_total_bytes.empty());
  CHECK(allocator_bytes(flat, 0) == allocator_bytes(flat));
}

TEST_CASE("a loss that subtracts the maximum out of place holds a second fp32 copy: b·s·V·(w + 8)") {
  const TransformerSpec spec = llama2_7b();
  MemoryInputs in = base_inputs(spec, Strategy::ddp, 1);
  in.tp = 2;
  const double rows = static_cast<double>(in.micro_batch * in.seq_len), v = 32000.0 / 2;
  CHECK(term(memory_per_gpu(in), "logits") == doctest::Approx(rows * v * (2 + 4)));
  in.loss_fp32_copies = 2;
  CHECK(term(memory_per_gpu(in), "logits") == doctest::Approx(rows * v * (2 + 8)));
  in.fused_loss = true;  // a fused kernel keeps no copy of the logits in fp32
  CHECK(term(memory_per_gpu(in), "logits") == doctest::Approx(rows * (v * 2 + 4)));
}

TEST_CASE("PyTorch's cross-entropy on upcast logits holds three fp32 copies at its backward: b·s·V·(w + 12)") {
  const TransformerSpec spec = llama2_7b();
  MemoryInputs in = base_inputs(spec, Strategy::ddp, 1);
  in.loss_fp32_copies = 3;
  const double rows = static_cast<double>(in.micro_batch * in.seq_len);
  CHECK(term(memory_per_gpu(in), "logits") == doctest::Approx(rows * 32000.0 * (2 + 12)));
}

TEST_CASE("autocast: fp32 parameters beside their 16-bit casts, Adam's moments alone, fp32 gradients and buckets") {
  const TransformerSpec spec = llama2_7b();
  MemoryInputs in = base_inputs(spec, Strategy::ddp, 8);
  in.fp32_gradients = true;
  const MemoryBreakdown master = memory_per_gpu(in);
  in.autocast = true;
  const MemoryBreakdown amp = memory_per_gpu(in);
  const double p = param_counts(spec, nullptr).stored;
  const double cast = autocast_casts(spec).total;  // the Linears and the untied head, not norms
  CHECK(cast < p);
  CHECK(term(amp, "weights") == doctest::Approx(4 * p + 2 * cast));
  CHECK(term(amp, "optimizer") == doctest::Approx(8 * p));
  CHECK(term(amp, "gradients") == doctest::Approx(4 * p));
  CHECK(term(amp, "comm_buffers") == doctest::Approx(4 * p));  // DDP's buckets have the parameters' dtype
  CHECK(term(master, "comm_buffers") == doctest::Approx(2 * p));
  // The two norms of each layer save their fp32 inputs: 2 bytes more each, per token.
  const double tokens = static_cast<double>(in.micro_batch * in.seq_len);
  CHECK(term(amp, "activations") - term(master, "activations") ==
        doctest::Approx(spec.layers * tokens * 2.0 * spec.hidden * (4 - 2)));
  in.precision = Precision::fp32;
  CHECK_THROWS_AS(memory_per_gpu(in), std::invalid_argument);
  in.precision = Precision::bf16_mixed;
  in.fp32_gradients = false;  // autocast's gradients are its parameters' fp32
  CHECK_THROWS_AS(memory_per_gpu(in), std::invalid_argument);
}

TEST_CASE("gradients created by the backward count at the peak only beyond the activations and logits freed") {
  const TransformerSpec spec = llama2_7b();
  MemoryInputs in = base_inputs(spec, Strategy::ddp, 8);
  const MemoryBreakdown held = memory_per_gpu(in);
  in.gradients_created_by_backward = true;
  const double freed = term(held, "activations") + term(held, "logits");
  CHECK(term(memory_per_gpu(in), "gradients") == doctest::Approx(std::max(0.0, term(held, "gradients") - freed)));
  CHECK(term(held, "gradients") > freed);  // a 7B model at 1k tokens: the backward's end is the peak
  in.micro_batch = 16;                     // 16k tokens: the loss is
  CHECK(term(memory_per_gpu(in), "gradients") == 0);
}

TEST_CASE("fp32 main gradients hold 4 bytes per gradient, sharded as the strategy shards gradients") {
  const TransformerSpec spec = llama2_7b();
  for (Strategy s : {Strategy::ddp, Strategy::zero1, Strategy::zero2}) {
    MemoryInputs in = base_inputs(spec, s, 8);
    const double bf16 = term(memory_per_gpu(in), "gradients");
    in.fp32_gradients = true;
    CHECK(term(memory_per_gpu(in), "gradients") == doctest::Approx(2.0 * bf16));
  }
}

TEST_CASE("the allocator's peak is every term but the CUDA context") {
  const MemoryBreakdown m = memory_per_gpu(base_inputs(llama2_7b(), Strategy::zero1, 8));
  CHECK(allocator_bytes(m) == doctest::Approx(m.total_bytes - term(m, "cuda_context")));
  CHECK(allocator_bytes(m) < m.total_bytes);
}

TEST_CASE("a fused SwiGLU keeps 3 f-wide tensors per token of a gated MLP, eager PyTorch 4") {
  const TransformerSpec spec = llama2_7b();  // gated, f = 11008
  MemoryInputs in = base_inputs(spec, Strategy::zero1, 8);
  const double eager = term(memory_per_gpu(in), "activations");
  in.fused_swiglu = true;
  const double fused = term(memory_per_gpu(in), "activations");
  const double tokens = static_cast<double>(in.micro_batch * in.seq_len);
  CHECK(eager - fused == doctest::Approx(static_cast<double>(spec.layers) * tokens * spec.ffn_hidden * 2.0));
  TransformerSpec plain = spec;  // an ungated MLP has nothing to fuse
  plain.gated_mlp = false;
  in.model = &plain;
  const double fused_plain = term(memory_per_gpu(in), "activations");
  in.fused_swiglu = false;
  CHECK(term(memory_per_gpu(in), "activations") == doctest::Approx(fused_plain));
}

TEST_CASE("fp8 GEMM inputs: the QKV, MLP and down-projection inputs keep 1 byte, the context an fp8 copy more") {
  // Per token and layer at w = 2: QKV input h and MLP input h at 1 B save 2h, the down
  // projection's input f saves f, and the output projection's fp8 input adds q = h.
  TransformerSpec spec = llama2_7b();
  MemoryInputs in = base_inputs(spec, Strategy::zero1, 8);
  in.precision = Precision::fp8_mixed;
  in.fused_swiglu = true;
  const double w16 = term(memory_per_gpu(in), "activations");
  in.gemm_input_bytes = 1.0;
  const double w8 = term(memory_per_gpu(in), "activations");
  const double tokens = static_cast<double>(in.micro_batch * in.seq_len);
  const double h = static_cast<double>(spec.hidden), f = static_cast<double>(spec.ffn_hidden);
  CHECK(w16 - w8 == doctest::Approx(static_cast<double>(spec.layers) * tokens * (2 * h + f - h)));
  // A MoE layer's dispatched copies are the experts' first GEMM input: k·h more saved.
  spec.moe = MoeSpec{8, 2, 0, 1024, 0, 0, 1};
  in.gemm_input_bytes = 0.0;
  const double moe16 = term(memory_per_gpu(in), "activations");
  in.gemm_input_bytes = 1.0;
  const double moe8 = term(memory_per_gpu(in), "activations");
  CHECK(moe16 - moe8 == doctest::Approx(static_cast<double>(spec.layers) * tokens * (2 * h + 2 * 1024 + 2 * h - h)));
}

namespace {

// A DeepSeek-V3-shaped MLA layer (its config.json widths), dense, 4 layers, no MoE.
TransformerSpec mla_test() {
  TransformerSpec s = llama2_7b();
  s.name = "mla-test";
  s.layers = 4;
  s.hidden = 7168;
  s.heads = 128;
  s.kv_heads = 128;
  s.ffn_hidden = 18432;
  s.mla = MlaSpec{1536, 512, 128, 64, 128};
  s.head_width = 192;
  return s;
}

double activations_with(const TransformerSpec& spec, Recompute r, RecomputeModules m) {
  MemoryInputs in = base_inputs(spec, Strategy::zero1, 8);
  in.recompute = r;
  in.recompute_modules = m;
  return term(memory_per_gpu(in), "activations");
}

}  // namespace

TEST_CASE("MLA keeps its true widths: Q and K of 128 x 192, V and the context of 128 x 128, and its latents") {
  const TransformerSpec spec = mla_test();
  const double tokens = 1024, L = 4, w = 2;
  TransformerSpec plain = spec;  // the same layer with every head 192 wide: K, V and context at H x 192
  plain.mla.reset();
  const double mla = activations_with(spec, Recompute::none, RecomputeModules{false});
  const double wide = activations_with(plain, Recompute::none, RecomputeModules{false});
  // V and the context are 64 narrower per head (128 x 64 x 2 tensors); the latents add r·(w + g) + d_r·w.
  const double latents = (1536 + 512) * (w + w) + 64 * w;
  CHECK(wide - mla == doctest::Approx(L * tokens * (2 * 128 * 64 * w - latents)));
}

TEST_CASE("recomputing MLA's up-projections drops Q, K and V; the latents and the context stay") {
  const TransformerSpec spec = mla_test();
  RecomputeModules up;
  up.mla_up_proj = true;
  const double kept = activations_with(spec, Recompute::selective, RecomputeModules{});
  const double dropped = activations_with(spec, Recompute::selective, up);
  const double qk = 128 * 192, v = 128 * 128;
  CHECK(kept - dropped == doctest::Approx(4.0 * 1024 * (2 * qk + v) * 2));
  // Without a query latent the query is projected from h directly and stays.
  TransformerSpec no_latent = spec;
  no_latent.mla->q_lora_rank = 0;
  const double kept0 = activations_with(no_latent, Recompute::selective, RecomputeModules{});
  const double dropped0 = activations_with(no_latent, Recompute::selective, up);
  CHECK(kept0 - dropped0 == doctest::Approx(4.0 * 1024 * (qk + v) * 2));
}

TEST_CASE("recomputing the norms drops the two normed GEMM inputs; the MLP's recompute keeps only its input") {
  const TransformerSpec spec = llama2_7b();
  const double tokens = 1024, L = 32, h = 4096, f = 11008, w = 2;
  const double base = activations_with(spec, Recompute::selective, RecomputeModules{});
  RecomputeModules norms;
  norms.layernorm = true;
  CHECK(base - activations_with(spec, Recompute::selective, norms) == doctest::Approx(L * tokens * 2 * h * w));
  RecomputeModules mlp;
  mlp.mlp = true;  // eager gated MLP: gate, up, SiLU and the product (4f) no longer kept
  CHECK(base - activations_with(spec, Recompute::selective, mlp) == doctest::Approx(L * tokens * 4 * f * w));
  mlp.layernorm = true;  // the MLP's checkpoint keeps its normed input: only attention's goes
  CHECK(base - activations_with(spec, Recompute::selective, mlp) == doctest::Approx(L * tokens * (4 * f + h) * w));
  // Selective recompute without the core keeps flash attention's log-sum-exp, 4·a·s·b.
  CHECK(activations_with(spec, Recompute::selective, RecomputeModules{false, false, true}) -
            activations_with(spec, Recompute::selective, norms) ==
        doctest::Approx(L * 4.0 * spec.heads * tokens));
}

TEST_CASE("recomputing the experts' activation keeps their first GEMM's output, 2 x k x f_e per token") {
  TransformerSpec spec = llama2_7b();
  spec.moe = MoeSpec{8, 2, 0, 1024, 0, 0, 1};  // 8 experts, top 2, width 1024, every layer MoE
  const double base = activations_with(spec, Recompute::selective, RecomputeModules{});
  RecomputeModules act;
  act.moe_act = true;
  // Eager gated experts keep gate, up, SiLU and the product (4·k·f_e); moe_act keeps gate and up.
  CHECK(base - activations_with(spec, Recompute::selective, act) == doctest::Approx(32.0 * 1024 * 2 * 2 * 1024 * 2));
}

TEST_CASE("torchtitan's op-level checkpointing keeps the input, the odd matmuls' outputs and attention's") {
  const TransformerSpec spec = llama2_7b();  // h = q = d = 4096 (MHA), gated f = 11008, 32 layers
  RecomputeModules op{false};
  op.op_sac = true;
  // Per token: input h, then wq q, wv d, w1 f, w2 h (the 1st, 3rd, 5th and 7th matmul), attention's
  // output q, at 2 bytes; flash attention's log-sum-exp 4·a.
  const double per_token = (4096.0 + 4096 + 4096 + 11008 + 4096 + 4096) * 2 + 4.0 * 32;
  CHECK(activations_with(spec, Recompute::selective, op) ==
        doctest::Approx(32 * 1024 * per_token + 1024 * 4096.0 * 2 * 2));  // + the final norm and head inputs
}

}  // namespace
}  // namespace stepcast
