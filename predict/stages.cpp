/// \file
/// The stages of one prediction (see stages.hpp). Each stage keeps the arithmetic of the
/// single function it was cut from, in the same order, so predictions are unchanged to the
/// last bit.
#include "predict/stages.hpp"

#include "predict/calibrated_rates.hpp"

#include "model/moe.hpp"
#include "model/parallel.hpp"

#include "topologies/hardware_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <utility>

namespace stepcast {

namespace {

/// Per-process GPU memory outside the model: CUDA context, cuBLAS workspace and NCCL
/// channel buffers. Default 1.0 GiB: an idle PyTorch CUDA context takes 0.3-0.6 GiB on
/// CUDA 11/12 (nvidia-smi on `torch.cuda.init()`), NCCL adds NCCL_BUFFSIZE = 4 MiB per
/// channel and peer (NCCL environment-variable docs), cuBLAS a workspace per stream.
/// A default until calibrate/ measures it.
constexpr double kCudaContextBytes = 1.0 * 1024 * 1024 * 1024;

/// DeepSpeed's reduce_bucket_size and allgather_bucket_size defaults, elements
/// (deepspeed/runtime/zero/config.py, ZeRO docs "reduce_bucket_size: default 5e8").
constexpr double kDeepSpeedBucketElements = 5e8;

/// PyTorch DDP's bucket_cap_mb default, 25 MiB: torch/nn/parallel/distributed.py takes
/// bucket_bytes_cap = int(bucket_cap_mb * 1024 * 1024).
constexpr double kDdpBucketBytes = 25.0 * 1024.0 * 1024.0;

/// PyTorch DDP's first bucket: torch.distributed._DEFAULT_FIRST_BUCKET_BYTES = 1 MiB
/// (torch/nn/parallel/distributed.py), so the first all-reduce starts early.
constexpr double kFirstBucketBytes = 1024.0 * 1024.0;

/// NCCL_MAX_NCHANNELS tops out at 32 channels, fewer than half of any catalog GPU's SMs
/// except the smallest (T4: 40): the slowdown of compute while NCCL runs is capped at half.
constexpr double kMaxCommSlowdown = 0.5;

bool zero12(Strategy st) { return st == Strategy::zero1 || st == Strategy::zero2; }

FlopsOptions flops_options(const TrainingSpec& tr) {
  FlopsOptions opts;
  opts.recompute = tr.recompute;
  opts.causal_halving = tr.flash_attention;
  opts.lora = tr.lora ? &*tr.lora : nullptr;
  return opts;
}

// ---- resolve ----------------------------------------------------------------------------

/// Throws std::invalid_argument naming the field when the count `value` is below 1.
void require_count(const Scenario& s, const char* field, long long value) {
  if (value < 1)
    throw std::invalid_argument(
        fmt::format("scenario \"{}\": {} must be at least 1 to be predicted (got {})", s.name, field, value));
}

/// Throws std::invalid_argument naming the field when `value` is not a positive number.
void require_positive(const Scenario& s, const char* field, double value) {
  if (!(value > 0) || !std::isfinite(value))
    throw std::invalid_argument(
        fmt::format("scenario \"{}\": {} must be a finite number > 0 to be predicted (got {})", s.name, field, value));
}

/// Throws std::invalid_argument when a × b does not fit in `T`, the type the stages compute
/// it in (GPU counts in int, token and sample counts in int64).
template <typename T>
void require_product_fits(const Scenario& s, const char* what, long long a, long long b) {
  T product = 0;
  if (__builtin_mul_overflow(a, b, &product))
    throw std::invalid_argument(
        fmt::format("scenario \"{}\": {} = {} x {} is too large to be predicted", s.name, what, a, b));
}

/// The preconditions of every later stage (counts that divide, sizes that exist). A
/// scenario read by parse_scenario meets them; a Scenario built another way (a measured
/// record, a test) that does not is refused here instead of reaching an assert, a division
/// by zero or an empty optional.
void check_predictable(const Scenario& s) {
  const TransformerSpec& m = s.model;
  require_count(s, "model.layers", m.layers);
  require_count(s, "model.hidden", m.hidden);
  require_count(s, "model.heads", m.heads);
  require_count(s, "model.kv_heads", m.kv_heads);
  require_count(s, "model.ffn_hidden", m.ffn_hidden);
  require_count(s, "model.vocab", m.vocab);
  const TrainingSpec& tr = s.training;
  require_count(s, "training.micro_batch", tr.micro_batch);
  require_count(s, "training.grad_accum", tr.grad_accum);
  require_count(s, "training.seq_len", tr.seq_len);
  const HardwareChoice& hw = s.hardware;
  require_count(s, "hardware.nodes", hw.nodes);
  require_count(s, "hardware.gpus_per_node", hw.gpus_per_node);
  require_product_fits<int>(s, "GPUs (nodes x gpus_per_node)", hw.nodes, hw.gpus_per_node);
  require_product_fits<std::int64_t>(s, "tokens per micro-batch (micro_batch x seq_len)", tr.micro_batch, tr.seq_len);
  require_product_fits<std::int64_t>(s, "sequences per GPU and step (micro_batch x grad_accum)", tr.micro_batch,
                                     tr.grad_accum);
  long long straggling = 0;
  for (const StragglerSpec& st : hw.stragglers) {
    require_count(s, "hardware.stragglers[].nodes", st.nodes);
    require_positive(s, "hardware.stragglers[].compute_speed", st.compute_speed);
    require_positive(s, "hardware.stragglers[].link_speed", st.link_speed);
    straggling += st.nodes;
  }
  require_count(s, "the number of nodes that are not stragglers", hw.nodes - straggling);
  if (s.dataset.tokens || s.dataset.samples)
    require_positive(s, "dataset size", s.dataset.samples ? *s.dataset.samples : *s.dataset.tokens);
}

/// The bucket size the step uses, with the framework default it assumed when none is given.
void resolve_buckets(Job& job) {
  const StrategySpec& strat = job.scenario.strategy;
  const Strategy st = strat.kind;
  const double wb = working_bytes(job.scenario.training.precision);
  job.bucket_bytes = sim::StepPlan{}.bucket_bytes;
  if (strat.bucket_given) {
    job.bucket_bytes = strat.bucket_bytes;
  } else if (zero12(st) && strat.overlap_param_gather) {
    // Megatron-Core's distributed optimizer (megatron/core/distributed/
    // distributed_data_parallel.py at core_r0.8.0): max(40M, 1M x DP size) elements.
    const double elements = std::max(40e6, 1e6 * job.dp * job.cp);
    job.bucket_bytes = elements * (strat.reduce_fp32 ? 4.0 : wb);
    job.assumptions.push_back(fmt::format("overlap_param_gather: the updated parameters' all-gather runs at the "
                                          "step's start beside the forward, bucket by bucket in forward order, not "
                                          "after the optimizer step; buckets of max(40M, 1M x {} DP ranks) = {:g}M "
                                          "elements (Megatron-Core's default; set strategy.bucket_mb)",
                                          job.dp * job.cp, elements / 1e6));
  } else if (zero12(st)) {
    job.bucket_bytes = kDeepSpeedBucketElements * wb;
    job.assumptions.push_back("reduce/all-gather bucket 5e8 elements (DeepSpeed reduce_bucket_size and "
                              "allgather_bucket_size defaults; set strategy.bucket_mb)");
  } else if (st == Strategy::zero3) {
    job.bucket_bytes = kDeepSpeedBucketElements * wb;
    job.assumptions.push_back("reduce bucket 5e8 elements (DeepSpeed reduce_bucket_size default, at most the "
                              "gradients; set strategy.bucket_mb)");
  } else if (st == Strategy::ddp) {
    job.bucket_bytes = kDdpBucketBytes;
    job.assumptions.push_back("gradient bucket 25 MiB, the first 1 MiB (PyTorch DDP bucket_cap_mb and "
                              "_DEFAULT_FIRST_BUCKET_BYTES defaults; set strategy.bucket_mb)");
  }
  job.first_bucket_bytes = st == Strategy::ddp ? std::min(kFirstBucketBytes, job.bucket_bytes) : job.bucket_bytes;
}

/// Rank groups: the typical nodes first, then each straggler group as its own class.
void resolve_groups(Job& job) {
  const std::vector<StragglerSpec>& stragglers = job.scenario.hardware.stragglers;
  if (stragglers.empty()) return;
  int typical = job.nodes;
  for (const StragglerSpec& st : stragglers) typical -= st.nodes;
  job.groups.push_back(sim::RankGroup{"typical nodes", typical * job.gpus_per_node, typical, 1.0, 1.0});
  for (const StragglerSpec& st : stragglers) {
    job.groups.push_back(
        sim::RankGroup{st.name, st.nodes * job.gpus_per_node, st.nodes, st.compute_speed, st.link_speed});
    job.assumptions.push_back(fmt::format("{}: {} node(s) at {:.0f}% compute and {:.0f}% link speed, simulated as "
                                          "their own rank class",
                                          st.name, st.nodes, 100 * st.compute_speed, 100 * st.link_speed));
  }
}

/// NCCL's channels and the compute they take: one CUDA block per channel on its own SM, or
/// the slowdown a calibration file measured for a GEMM beside an all-reduce.
void resolve_comm_slowdown(Job& job, const Scenario& s) {
  job.nccl_channels = job.gpus > 1 ? nccl_channels(job.fabric) : 0;
  job.comm_slowdown = std::min(kMaxCommSlowdown, static_cast<double>(job.nccl_channels) / job.gpu.sm_count);
  if (job.gpus < 2) return;
  if (const HardwareFile* cal = s.hardware.calibration.get())
    if (auto slowdown = calibrated_comm_slowdown(cal->kernel_model)) {
      job.comm_slowdown = *slowdown;
      job.provenance.comm_slowdown = RateSource::calibration;
      job.assumptions.push_back(fmt::format("compute runs {:.0f}% slower while a collective runs: {} (a GEMM beside "
                                            "an all-reduce)",
                                            100 * *slowdown, calibration_source(s.hardware.calibration_file)));
      return;
    }
  job.assumptions.push_back(fmt::format("compute runs {:.0f}% slower while a collective runs: {} NCCL channels "
                                        "of {} SMs (one CUDA block per channel)",
                                        100 * job.comm_slowdown, job.nccl_channels, job.gpu.sm_count));
}

std::vector<sim::MeasuredCollective> measured_collectives(const HardwareFile* cal) {
  std::vector<sim::MeasuredCollective> out;
  if (!cal) return out;
  for (const FittedCollective& fc : cal->collectives)
    out.push_back(sim::MeasuredCollective{fc.collective, static_cast<int>(fc.ranks), static_cast<int>(fc.nodes),
                                          fc.latency_us * 1e-6, fc.algbw_GBps});
  return out;
}

// ---- cost -------------------------------------------------------------------------------

/// Optimizer step of the local shard of the trainable parameters.
double optimizer_step_s(const Job& job, double trainable) {
  const TrainingSpec& tr = job.scenario.training;
  const Strategy st = job.scenario.strategy.kind;
  const double optimizer_shards =
      job.tp * (!shards_optimizer(st)                 ? 1.0
                : st == Strategy::fsdp_hybrid_shard ? std::max(1, job.gpus_per_node / job.tp)
                                                    : static_cast<double>(job.dp) * job.cp);
  if (job.scenario.strategy.offload != OffloadKind::none) return 0.0;  // the host runs it (cost_offload)
  const bool fp32_grads = tr.optimizer == OptimizerKind::adam_deepspeed_18;
  return optimizer_time_s(trainable / optimizer_shards,
                          optimizer_bytes_per_param(tr.precision, fp32_grads, tr.optimizer == OptimizerKind::sgd_momentum),
                          job.device);
}

/// FLOPs per layer and of the LM head for one micro-step, and per optimizer step on all GPUs.
void cost_flops(const Job& job, Costs& c) {
  const TransformerSpec& model = job.scenario.model;
  const TrainingSpec& tr = job.scenario.training;
  const double tokens = static_cast<double>(tr.micro_batch * tr.seq_len);
  const StepFlops mf = training_flops(model, tr.seq_len, tokens, flops_options(tr));
  const double head = 2.0 * tokens * static_cast<double>(model.hidden) * static_cast<double>(model.vocab);
  // The LM head's backward: input and weight gradients (2x), or the input gradient only
  // when LoRA freezes it (1x).
  const double bwd_ratio = tr.lora ? 1.0 : 2.0;
  const double L = static_cast<double>(model.layers);
  c.head_flops_forward = head;
  c.head_flops_backward = bwd_ratio * head;
  c.layer_flops_forward = std::max(0.0, mf.forward - head) / L;
  c.layer_flops_backward = std::max(0.0, mf.backward - bwd_ratio * head) / L;
  c.layer_flops_recompute = mf.recompute / L;
  const double m = static_cast<double>(tr.grad_accum);
  // Each data-parallel replica (a TP group) trains on its own micro-batches.
  c.model_flops_per_step = mf.model * m * job.dp;
  c.hardware_flops_per_step = mf.hardware() * m * job.dp;
  c.causal_model_flops_per_step = (mf.forward + mf.backward) * m * job.dp;
  c.hfu_flops_per_step = mf.hfu_flops() * m * job.dp;  // MFU's convention plus recompute
}

/// A MoE layer's bytes (the mean over layers): a GPU holds 1/ep of the routed experts. Their
/// gradients reduce over the expert-data-parallel group of n_e = dp·cp/ep ranks, dense ones
/// over the n = dp·cp ranks; the lowering reduces a layer's gradients in one bucket stream
/// over the DP fabric, so the experts' bytes there are scaled by the ratio of a ring's
/// per-rank traffic in the two groups, ((n_e - 1)/n_e) / ((n - 1)/n): 0 when each expert
/// lives on one rank per stage (n_e = 1). The expert-DP group's own fabric is not modelled.
void moe_layer_bytes(const Job& job, double layer_params, Costs& c) {
  const TransformerSpec& model = job.scenario.model;
  const double wb = working_bytes(job.scenario.training.precision);
  const double routed = routed_expert_parameters(model) / static_cast<double>(model.layers);
  const double local = routed / job.ep;
  const double n = static_cast<double>(job.dp) * job.cp;
  const double n_e = n / job.ep;
  const double ratio = n_e > 1 ? ((n_e - 1) / n_e) / ((n - 1) / n) : 0.0;
  c.layer_param_bytes = (layer_params - routed + local) * wb;
  c.layer_grad_bytes = (layer_params - routed + local * ratio) * wb;
}

/// Bytes of weights and trainable gradients per layer, root unit and untied LM head.
void cost_bytes(const Job& job, Costs& c) {
  const TransformerSpec& model = job.scenario.model;
  const TrainingSpec& tr = job.scenario.training;
  const double wb = working_bytes(tr.precision);
  const ParameterBreakdown pb = parameter_breakdown(model);
  const double layer_params = static_cast<double>(pb.per_layer);
  const double root_params = c.parameters - layer_params * static_cast<double>(model.layers);
  const double t = job.tp;  // a TP rank holds 1/t of every matrix and of the vocabulary
  c.layer_param_bytes = layer_params * wb / t;
  c.root_param_bytes = root_params * wb / t;
  c.head_param_bytes = static_cast<double>(pb.lm_head) * wb / t;
  if (tr.lora) {
    c.layer_grad_bytes = c.trainable * wb / static_cast<double>(model.layers);  // adapters only
  } else {
    c.layer_grad_bytes = c.layer_param_bytes;
    c.root_grad_bytes = c.root_param_bytes;
    c.head_grad_bytes = c.head_param_bytes;
  }
  if (job.scenario.strategy.fp8_all_gather) {  // linear weights gathered in fp8, 1 byte each
    const double linear = static_cast<double>(pb.attention + pb.mlp) / static_cast<double>(model.layers);
    c.layer_gather_bytes = (linear * 1.0 + (layer_params - linear) * wb) / t;
  }
  if (model.moe) moe_layer_bytes(job, layer_params, c);
  if (job.scenario.strategy.reduce_fp32) {  // gradients cast up and reduced in fp32
    const double up = 4.0 / wb;
    c.layer_grad_bytes *= up;
    c.root_grad_bytes *= up;
    c.head_grad_bytes *= up;
  }
}

/// Memory per GPU, term by term, and the parts the simulation plays as events.
void cost_memory(const Job& job, Costs& c) {
  const Scenario& s = job.scenario;
  const TrainingSpec& tr = s.training;
  const double grad_bytes = c.trainable * working_bytes(tr.precision) / job.tp;
  MemoryInputs mem;
  mem.model = &s.model;
  mem.micro_batch = tr.micro_batch;
  mem.seq_len = tr.seq_len;
  mem.precision = tr.precision;
  mem.optimizer = tr.optimizer;
  mem.recompute = tr.recompute;
  mem.flash_attention = tr.flash_attention;
  mem.lora = tr.lora ? &*tr.lora : nullptr;
  mem.strategy = s.strategy.kind;
  mem.gpus = static_cast<std::int64_t>(job.dp) * job.cp;  // the gradient group: DP x CP ranks
  mem.gpus_per_node = std::max(1, job.gpus_per_node / job.tp);  // DP ranks per node (1 with TP across nodes)
  mem.cp = job.cp;
  mem.ep = job.ep;
  mem.moe_capacity_factor = s.strategy.moe_capacity_factor;
  mem.offload = s.strategy.offload;
  mem.gpus_per_host = job.gpus_per_node;
  mem.host_capacity_bytes = job.host_memory_bytes;
  mem.tp = job.tp;
  mem.sp = s.strategy.sp;
  mem.bucket_bytes = zero12(s.strategy.kind) || s.strategy.kind == Strategy::zero3
                         ? std::min(job.bucket_bytes, grad_bytes)
                         : job.bucket_bytes;
  mem.prefetch_layers = s.strategy.prefetch_layers;
  mem.capacity_bytes = job.gpu.memory_bytes;
  mem.cuda_context_bytes = kCudaContextBytes;
  if (job.pp > 1) {
    mem.pp = job.pp;
    mem.in_flight = in_flight_microbatches(parse_pipeline_schedule(s.strategy.schedule), 0, job.pp,
                                           static_cast<int>(tr.grad_accum), s.strategy.vpp);
  }
  c.memory = memory_per_gpu(mem);
  c.assumptions.push_back("CUDA context, cuBLAS workspace and NCCL buffers: 1.0 GiB per GPU (default)");
  auto term = [&](const char* name) {
    for (const MemoryTerm& t : c.memory.terms)
      if (t.name == name) return t.bytes;
    return 0.0;
  };
  // Per layer and micro-batch (under a pipeline the term holds stage 0's layers for every
  // micro-batch in flight).
  c.activation_bytes_per_layer = term("activations") / (job.pp > 1 ? std::ceil(static_cast<double>(s.model.layers) / job.pp) * mem.in_flight
                                                                   : static_cast<double>(s.model.layers));
  c.logits_bytes = term("logits");
  c.static_memory_bytes = c.memory.total_bytes - term("activations") - term("logits") - term("gathered_params") -
                          term("fragmentation");
}

// ---- assemble ---------------------------------------------------------------------------

/// The simulation's cross-check: a finite, non-negative step within its closed-form bounds,
/// up to rounding (relative 1e-9, plus the engine's 1 ns per task); with free communication
/// (a limiting case the bounds do not know) the lower bound is the compute alone. A step
/// outside them is a broken invariant of the simulator (or of the checks on its inputs),
/// not bad input.
void check_simulation(const sim::StepGraph& graph, const sim::SimResult& r, const sim::StepBounds& b,
                      const PredictOptions& options) {
  const double step = r.step_s();
  const double lower = options.free_communication ? b.compute_s : b.perfect_overlap_s;
  // 1 ns per event the step stands for (the micro-steps in closed form included).
  const double slack_s = 1e-9 * static_cast<double>(std::max<std::uint64_t>(graph.tasks.size(), r.events_represented));
  const bool ok = std::isfinite(step) && step >= 0 && std::isfinite(b.no_overlap_s) &&
                  step >= lower * (1 - 1e-9) - slack_s && step <= b.no_overlap_s * (1 + 1e-9) + slack_s;
  if (!ok)
    throw std::logic_error(fmt::format("simulated step {} s lies outside its closed-form bounds [{}, {}] s; "
                                       "please report this with the scenario",
                                       step, lower, b.no_overlap_s));
}

/// The simulated figures of the representative rank: busy times, critical path, streams,
/// links and peak memory.
void assemble_simulation(const sim::StepGraph& graph, const sim::SimResult& r, Prediction& p) {
  p.step_time_s = r.step_s();
  p.comm_busy_s = sim::to_seconds(r.comm_busy_ns);
  p.comm_hidden_s = sim::to_seconds(r.overlap_ns);
  p.comm_exposed_s = r.comm_exposed_s();
  p.overlap_ratio = r.overlap_ratio();
  p.compute_busy_s = sim::to_seconds(r.compute_busy_ns);
  p.simulated_peak_memory_bytes = r.peak_memory_bytes.empty() ? 0.0 : r.peak_memory_bytes[0];
  p.simulation_events = r.events;
  p.simulation_tasks = static_cast<int>(graph.tasks.size());
  for (int t : r.critical_path)
    p.critical_path.push_back({graph.tasks[t].name, graph.tasks[t].category, sim::to_seconds(r.tasks[t].start),
                               sim::to_seconds(r.tasks[t].end)});
  for (std::size_t i = 0; i < graph.streams.size(); ++i) {
    const std::string& cls = graph.classes[graph.streams[i].rank_class].name;
    p.streams.push_back({graph.classes.size() > 1 ? cls + ": " + graph.streams[i].name : graph.streams[i].name,
                         sim::to_seconds(r.streams[i].busy_ns)});
  }
  for (std::size_t i = 0; i < graph.links.size(); ++i)
    p.links.push_back({graph.links[i].name, graph.links[i].capacity_GBps, sim::to_seconds(r.links[i].busy_ns),
                       r.links[i].bytes});
}

/// Tokens and samples per second, MFU/HFU, and the epoch with its price. MFU and HFU share
/// one attention convention (StepFlops::model: 12·L·h·s per token, no causal halving, PaLM
/// App. B / llm-foundry), HFU adding the recomputed forward in that convention
/// (StepFlops::hfu_flops), so HFU >= MFU, with equality without recompute.
void assemble_throughput(const Job& job, const Costs& c, Prediction& p) {
  const Scenario& s = job.scenario;
  const TrainingSpec& tr = s.training;
  const int gpus = job.gpus;
  p.global_batch_samples = static_cast<double>(tr.micro_batch * tr.grad_accum) * job.dp;  // per DP replica
  p.tokens_per_step = p.global_batch_samples * static_cast<double>(tr.seq_len);
  p.model_flops_per_step = c.model_flops_per_step;
  p.hardware_flops_per_step = c.hardware_flops_per_step;
  p.causal_model_flops_per_step = c.causal_model_flops_per_step;
  p.tokens_per_s = p.tokens_per_step / p.step_time_s;
  p.tokens_per_s_per_gpu = p.tokens_per_s / gpus;
  p.samples_per_s = p.global_batch_samples / p.step_time_s;
  p.mfu = p.model_flops_per_step / (p.step_time_s * gpus * job.device.peak_tflops * 1e12);
  p.hfu = c.hfu_flops_per_step / (p.step_time_s * gpus * job.device.peak_tflops * 1e12);

  if (!s.dataset.samples && !s.dataset.tokens) {  // no dataset: no epoch, never an invented one
    p.steps_per_epoch = p.time_per_epoch_s = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  const double samples = s.dataset.samples ? *s.dataset.samples : *s.dataset.tokens / static_cast<double>(tr.seq_len);
  p.steps_per_epoch = std::ceil(samples / p.global_batch_samples);
  p.time_per_epoch_s = p.steps_per_epoch * p.step_time_s;
  if (s.price_per_gpu_hour_usd) p.cost_per_epoch_usd = *s.price_per_gpu_hour_usd * gpus * p.time_per_epoch_s / 3600.0;
}

}  // namespace

std::string_view name(RateSource s) {
  switch (s) {
    case RateSource::catalog: return "catalog";
    case RateSource::calibration: return "calibration";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------
// resolve

DeviceRates device_rates(const GpuSpec& gpu, Dtype dtype, AttentionKernel kernel, const HardwareFile* cal,
                         const std::string& calibration_file, RateProvenance& provenance,
                         std::vector<std::string>& assumptions) {
  DeviceRates device = catalog_device_rates(gpu, dtype, kernel);
  provenance = RateProvenance{};
  if (cal) {
    if (auto it = cal->gemm.find(dtype); it != cal->gemm.end()) {
      device.gemm_ceiling_tflops = it->second.max_fraction * device.peak_tflops;
      device.gemm_source = "measured: " + calibration_file + " (its large-GEMM fraction of peak)";
      provenance.gemm = RateSource::calibration;
    }
    if (cal->memory.memory_efficiency) {
      device.memory_efficiency = *cal->memory.memory_efficiency;
      device.memory_source = "measured: " + calibration_file;
      provenance.memory = RateSource::calibration;
    }
    const CalibratedRates k = apply_kernel_calibration(device, cal->kernel_model, dtype, kernel, calibration_file);
    auto mark = [](bool measured, RateSource& source) {
      if (measured) source = RateSource::calibration;
    };
    mark(k.gemm, provenance.gemm);
    mark(k.attention, provenance.attention);
    mark(k.memory, provenance.memory);
    mark(k.sm_count, provenance.sm_count);
    mark(k.launch, provenance.launch);
    if (k.launch)
      assumptions.push_back(fmt::format("{:.1f} µs per kernel launch, {:.1f} / {:.1f} µs per eager op forward / "
                                        "backward: {}",
                                        1e6 * device.launch_s, 1e6 * device.eager_forward_op_s,
                                        1e6 * device.eager_backward_op_s, device.launch_source));
    assumptions.push_back(fmt::format("calibration {} (measured on {}, {}): GEMM ceiling, memory bandwidth "
                                      "and measured collectives replace the catalog's",
                                      calibration_file, cal->machine.hostname, cal->machine.date_utc));
  }
  return device;
}

namespace {

/// The kernels the scenario runs, each default printed under Assumptions.
KernelChoice resolve_kernels(const Scenario& s, GpuArch arch, std::vector<std::string>& assumptions) {
  const TrainingSpec& tr = s.training;
  KernelChoice k;
  k.causal = s.model.kind == ModelKind::decoder;
  k.tp = s.strategy.tp;
  k.sp = s.strategy.sp;
  k.cp = s.strategy.cp;
  if (!tr.flash_attention) {
    k.attention = AttentionKernel::unfused;
  } else if (tr.attention_kernel) {
    k.attention = *tr.attention_kernel;
  } else {
    k.attention = default_flash_kernel(arch);
    assumptions.push_back(fmt::format("attention kernel {} (the flash-class kernel a {} GPU runs; name another "
                                      "with training.attention_kernel)",
                                      name(k.attention), name(arch)));
  }
  if (tr.kernel_profile) {
    k.profile = *tr.kernel_profile;
  } else {
    k.profile = KernelProfile::eager;
    assumptions.push_back("kernels: eager PyTorch (one kernel per op; set training.kernels to compiled or fused)");
  }
  k.fused_loss = tr.fused_loss.value_or(k.profile != KernelProfile::eager);
  k.metric_loss_passes = tr.metric_loss_passes;
  k.launch_blocking = tr.launch_blocking;
  if (k.launch_blocking)
    assumptions.push_back("launch_blocking: CUDA_LAUNCH_BLOCKING=1, each op's CPU dispatch adds to its kernel's time");
  return k;
}

void describe_rates(const Job& job, std::vector<std::string>& assumptions) {
  const DeviceRates& d = job.device;
  assumptions.push_back(fmt::format("GEMMs against a ceiling of {:.0f} TFLOP/s {} ({:.0f}% of the {:.0f} TFLOP/s "
                                    "peak) on {} SMs, tile and wave quantized: {}",
                                    d.gemm_ceiling_tflops, name(job.dtype),
                                    100 * d.gemm_ceiling_tflops / d.peak_tflops, d.peak_tflops, d.sm_count,
                                    d.gemm_source));
  if (job.kernels.attention != AttentionKernel::unfused)
    assumptions.push_back("attention: " + d.attention.source);
  assumptions.push_back(fmt::format("memory-bound kernels reach {:.0f}% of {:.0f} GB/s ({}); {:.0f} µs per kernel "
                                    "launch",
                                    100 * d.memory_efficiency, d.memory_bw_GBps, d.memory_source, 1e6 * d.launch_s));
}

}  // namespace

namespace {

/// A group's fabric from its placement (model/parallel.hpp group_placement): the nodes it
/// spans, its GPUs per node, the node's NICs shared by the groups with members there, and
/// `node_stride` nodes between its member nodes (the spine's share, Topology::fabric).
CommFabric group_fabric(const Topology& topo, const GroupPlacement& g, int node_stride = 1) {
  CommFabric f = topo.fabric(g.nodes_spanned, g.ranks_per_node, node_stride);
  if (f.inter && g.groups_sharing_a_node > 1) {
    f.inter->bw_GBps /= g.groups_sharing_a_node;
    f.nic_sharing *= g.groups_sharing_a_node;
  }
  return f;
}

/// Nodes between consecutive member nodes of a `kind` group: its rank stride over the
/// node's GPUs, at least 1 (members on adjacent nodes).
int node_stride(const ParallelLayout& layout, GroupKind kind, int gpus_per_node) {
  return static_cast<int>(std::max<std::int64_t>(1, group_stride(layout, kind) / gpus_per_node));
}

/// Fabrics of the data-parallel, tensor-parallel and pipeline groups in Megatron order (TP
/// fastest, then DP, then PP): the DP fabric is what the lowering's collectives span; the
/// TP group's is one node's GPUs or, wider than a node, whole nodes joined by their NICs
/// (NCCL's ring over NVLink then the NICs); the pipeline link is one GPU's path to the next
/// stage (NVLink inside a node, else its share of the NICs).
void resolve_parallel_fabrics(Job& job, const Topology& topo) {
  if (job.tp == 1 && job.pp == 1 && job.cp == 1) {
    job.fabric = topo.fabric(job.nodes, job.gpus_per_node);
    return;
  }
  ParallelLayout layout;
  layout.dp = job.dp;
  layout.tp = job.tp;
  layout.pp = job.pp;
  layout.cp = job.cp;
  const int gpn = job.gpus_per_node;
  // Gradients reduce over the DP x CP ranks of a TP rank and stage.
  const ParallelLayout gradients = gradient_group_layout(layout);
  job.fabric = group_fabric(topo, group_placement(gradients, GroupKind::dp, gpn),
                            node_stride(gradients, GroupKind::dp, gpn));
  if (job.cp > 1) {
    const GroupPlacement cp = group_placement(layout, GroupKind::cp, gpn);
    job.cp_fabric = group_fabric(topo, cp, node_stride(layout, GroupKind::cp, gpn));
    // A ring step's slowest hop: NVLink when the group sits in one node, else the NICs.
    job.cp_hop_fabric = cp.nodes_spanned == 1 ? topo.fabric(1, 2)
                                              : group_fabric(topo, GroupPlacement{2, 1, 2, cp.groups_sharing_a_node});
    job.assumptions.push_back(fmt::format("context parallelism cp {} ({} exchange of K/V per layer), gradients "
                                          "reduced over the {} DP x CP ranks",
                                          job.cp, name(job.scenario.strategy.cp_comm), job.dp * job.cp));
  }
  if (job.tp > 1)
    job.tp_fabric = job.tp <= gpn ? topo.fabric(1, job.tp) : group_fabric(topo, group_placement(layout, GroupKind::tp, gpn));
  if (job.pp > 1) {
    const GroupPlacement pp = group_placement(layout, GroupKind::pp, gpn);
    job.pp_fabric = pp.ranks_per_node >= 2 ? topo.fabric(1, 2)
                                           : group_fabric(topo, GroupPlacement{2, 1, 2, pp.groups_sharing_a_node},
                                                          node_stride(layout, GroupKind::pp, gpn));
  }
  job.assumptions.push_back(fmt::format(
      "parallel layout tp {} x dp {} x pp {} in Megatron order (TP fastest, then data, then pipeline stages); {}",
      job.tp, job.dp, job.pp,
      job.scenario.strategy.tp_comm_overlap
          ? "tp_comm_overlap: each layer's TP collectives run beside the GEMMs they feed or drain (Transformer "
            "Engine's userbuffers: ring exchange on the copy engines, pipelined and bulk reduce-scatters and "
            "re-gathers on 16 SMs) and cost what those leave exposed; the head's block"
      : job.scenario.strategy.tp_backward_overlap
          ? "tp_backward_overlap: the QKV and MLP-up backward's TP collectives run beside their input- and "
            "weight-gradient GEMMs (Megatron's LinearWithGradAccumulationAndAsyncCommunication), the others block "
            "the layers"
          : "TP collectives block the layers"));
  if (job.tp > gpn)
    job.assumptions.push_back(fmt::format("tensor-parallel groups span {} nodes: their collectives run NCCL's ring "
                                          "(or tree) over NVLink, then the NICs",
                                          job.tp / gpn));
  if (job.pp > 1) {
    const StrategySpec& st = job.scenario.strategy;
    std::string layers;
    for (int n : split_layers_per_chunk(job.scenario.model, job.pp, st.vpp, st.pp_split))
      layers += (layers.empty() ? "" : ", ") + std::to_string(n);
    job.assumptions.push_back(fmt::format("pipeline split {}: layers per chunk {}{}", name(st.pp_split), layers,
                                          st.pp_split == StageSplit::balanced
                                              ? fmt::format(" (the LM head counted as {:.1f} layers of GEMM work)",
                                                            head_cost_in_layers(job.scenario.model))
                                              : ""));
    job.assumptions.push_back(st.overlap_grad_reduce
                                  ? "overlap_grad_reduce: each stage reduces its gradients in buckets during its last "
                                    "micro-batch's backward (Megatron-Core's --overlap-grad-reduce)"
                                  : "each stage reduces its gradients after its last backward (DeepSpeed's pipeline "
                                    "engine; overlap_grad_reduce: during it, as Megatron-Core's --overlap-grad-reduce)");
  }
}

/// Expert parallelism of a MoE model: the EP group's fabric (ep consecutive ranks of the DP
/// x CP group, model/parallel.hpp expert_parallel_layout) and the MoE assumptions.
void resolve_expert_parallel(Job& job, const Topology& topo) {
  const TransformerSpec& model = job.scenario.model;
  if (!model.moe) return;
  const StrategySpec& st = job.scenario.strategy;
  job.ep = st.ep;
  job.kernels.ep = st.ep;
  job.kernels.moe_imbalance = st.moe_imbalance;
  ParallelLayout layout;
  layout.dp = job.dp;
  layout.pp = job.pp;
  layout.cp = job.cp;
  const ParallelLayout experts = expert_parallel_layout(layout, job.ep);
  if (job.ep > 1)
    job.ep_fabric = group_fabric(topo, group_placement(experts, GroupKind::tp, job.gpus_per_node));
  job.assumptions.push_back(fmt::format(
      "MoE: {} of {} layers route to {} experts (top {}{}); expert parallelism ep {} ({} experts per GPU, dispatch and "
      "combine all-to-alls on the compute stream, spread evenly over the layers), expert gradients reduced over the "
      "{} expert-data-parallel ranks",
      moe_layer_count(model.layers, *model.moe), model.layers, model.moe->experts, model.moe->top_k,
      model.moe->shared_experts > 0 ? fmt::format(", {} shared", model.moe->shared_experts) : "", job.ep,
      model.moe->experts / job.ep, experts.dp));
  job.assumptions.push_back(fmt::format("moe_imbalance {:g}: the busiest EP rank's routed tokens over the mean{}",
                                        st.moe_imbalance,
                                        st.moe_imbalance == 1.0 ? " (default: routing balanced, as auxiliary-loss-free "
                                                                  "balancing aims for; an assumption, not a measurement)"
                                                                : ""));
  job.assumptions.push_back(st.moe_shared_expert_overlap
                                ? "moe_shared_expert_overlap: the all-to-alls run beside the shared experts' GEMMs "
                                  "and cost what those leave exposed"
                                : "moe_shared_expert_overlap off (default): the all-to-alls block the layers");
  job.assumptions.push_back(fmt::format("moe_capacity_factor {:g}{}", st.moe_capacity_factor,
                                        st.moe_capacity_factor == 1.0 ? " (default: dropless, balanced routing)" : ""));
}

/// The host under CPU offload: its memory bandwidth and size from the box catalog, the PCIe
/// rate per GPU from the box's PCIe link and switches.
void resolve_host(Job& job, const BoxSpec& box) {
  const StrategySpec& st = job.scenario.strategy;
  if (st.offload == OffloadKind::none) return;
  if (!box.host)
    throw std::invalid_argument(fmt::format("scenario \"{}\": offload needs the host of box {} (not in the catalog)",
                                            job.scenario.name, box.name));
  job.host_memory_GBps = box.host->memory_bw_GBps;
  job.host_cores = box.host->cores;
  job.host_memory_bytes = box.host->memory_GiB * 1024.0 * 1024.0 * 1024.0;
  job.pcie_GBps = host_link_GBps_per_gpu(box);
  job.assumptions.push_back(fmt::format(
      "CPU offload ({}{}): host {} with {:.0f} GB/s of DRAM at {:.0f}% (STREAM-class efficiency), {:.0f} GiB; "
      "{:.1f} GB/s of PCIe per GPU ({} shared by {} GPUs); {}",
      name(st.offload), st.delayed_update ? ", delayed parameter update" : "", box.host->cpu, box.host->memory_bw_GBps,
      100 * kHostMemoryEfficiency, box.host->memory_GiB, job.pcie_GBps, box.pcie,
      box.pcie_switches > 0 ? box.gpus / box.pcie_switches : 1, box.host->source));
}

/// On a rail fat tree, the spine model as an assumption: leaf groups, oversubscription, and
/// which groups' traffic climbs to the spine.
void describe_spine(Job& job, const ClusterSpec& used) {
  if (!used.network || used.network->topology != NetworkTopology::rail_fat_tree || job.nodes <= 1) return;
  const NetworkSpec& n = *used.network;
  std::string crossing;
  for (const auto& [what, f] : {std::pair<const char*, const CommFabric*>{"data-parallel", &job.fabric},
                                {"tensor-parallel", &job.tp_fabric}, {"pipeline", &job.pp_fabric}})
    if (f->spine) crossing += fmt::format("{}{} {:.3g}", crossing.empty() ? "" : ", ", what, f->spine->crossing);
  job.assumptions.push_back(fmt::format(
      "rail fat tree: leaf groups of {} nodes (nodes_per_leaf; DGX SuperPOD scalable unit), rail-aligned rings, "
      "nodes in leaf-group order; spine uplinks at leaf bandwidth / {:g}{}",
      n.nodes_per_leaf, n.oversubscription,
      crossing.empty() ? " (no traffic limited by the spine)" : "; share of NIC bytes crossing it: " + crossing));
}

}  // namespace

Topology resolved_topology(const Scenario& s) {
  ClusterSpec used = s.hardware.cluster;
  used.nodes = s.hardware.nodes;
  return Topology::build(used);
}

Job resolve(const Scenario& s) {
  check_predictable(s);
  return resolve(s, resolved_topology(s));
}

Job resolve(const Scenario& s, const Topology& topo) {
  check_predictable(s);
  Job job;
  job.scenario = s;
  job.nodes = s.hardware.nodes;
  job.gpus_per_node = s.hardware.gpus_per_node;
  job.gpus = job.nodes * job.gpus_per_node;
  job.gpu = topo.gpu();
  job.assumptions = s.defaults;
  job.tp = s.strategy.tp;
  job.pp = s.strategy.pp;
  job.cp = s.strategy.cp;
  job.dp = s.strategy.dp(job.gpus);
  resolve_parallel_fabrics(job, topo);
  resolve_host(job, topo.box());
  describe_spine(job, topo.cluster());
  // Named by the whole cluster's network (a DP group of one node has no inter level).
  job.hardware = job.nodes > 1 ? fmt::format("{} x {} ({})", job.nodes, topo.box().name,
                                             topo.fabric(job.nodes, job.gpus_per_node).inter->kind)
                               : topo.box().name;

  const TrainingSpec& tr = s.training;
  job.dtype = gemm_dtype(tr.precision);
  job.kernels = resolve_kernels(s, job.gpu.arch, job.assumptions);
  resolve_expert_parallel(job, topo);
  job.device = device_rates(job.gpu, job.dtype, job.kernels.attention, s.hardware.calibration.get(),
                            s.hardware.calibration_file, job.provenance, job.assumptions);
  if (tr.in_step_rates) job.device = in_step_rates(job.device, tr.in_step ? *tr.in_step : in_step_fractions());
  describe_rates(job, job.assumptions);
  resolve_buckets(job);
  resolve_groups(job);
  job.measured_collectives = measured_collectives(s.hardware.calibration.get());
  resolve_comm_slowdown(job, s);
  return job;
}

// ---------------------------------------------------------------------------------------
// cost

double LayerTimes::micro_step_s() const {
  return layers * (forward_s + backward_s + recompute_s) + head_forward_s + head_backward_s;
}

LayerTimes layer_times(const MicroStepTimes& micro, int layers) {
  LayerTimes t;
  const double L = layers;
  t.layers = layers;
  t.forward_s = std::max(0.0, micro.forward_s - micro.head_forward_s) / L;
  t.backward_s = std::max(0.0, micro.backward_s - micro.head_backward_s) / L;
  t.recompute_s = micro.recompute_s / L;
  t.head_forward_s = micro.head_forward_s;
  t.head_backward_s = micro.head_backward_s;
  return t;
}

/// The layers of stage 0 (all its chunks), the report's representative rank under a pipeline.
double stage_zero_layers(const Job& job) {
  const StrategySpec& st = job.scenario.strategy;
  const std::vector<int> chunks = split_layers_per_chunk(job.scenario.model, job.pp, st.vpp, st.pp_split);
  double layers0 = 0;
  for (std::size_t k = 0; k < chunks.size(); k += static_cast<std::size_t>(job.pp)) layers0 += chunks[k];
  return layers0;
}

/// Under a pipeline the report's compute parts are those of stage 0's GPU (the report's
/// representative rank): its layers (layers_per_stage), no LM head; the plan keeps c.micro
/// whole. The optimizer and the kernel split scale by the same share of the compute.
void stage_zero_share(const Job& job, Costs& c) {
  const double m = static_cast<double>(job.scenario.training.grad_accum);
  const double layers0 = stage_zero_layers(job);
  const double whole = c.forward_s + c.backward_s + c.recompute_s;
  c.forward_s = m * layers0 * c.per_layer.forward_s;
  c.backward_s = m * layers0 * c.per_layer.backward_s;
  c.recompute_s = m * layers0 * c.per_layer.recompute_s;
  const double share = whole > 0 ? (c.forward_s + c.backward_s + c.recompute_s) / whole : 1.0 / job.pp;
  for (double* v : {&c.optimizer_s, &c.kernels.gemm_s, &c.kernels.attention_s, &c.kernels.memory_s,
                    &c.kernels.launch_s})
    *v *= share;
}

/// The context-parallel K/V exchange of one layer per micro-batch (model/parallel.hpp):
/// ring, one op per pass whose phase is the part the attention chunks do not hide
/// (cp_ring_exposed_s, a ring step = the hop's latency + bytes / its rate); all_gather,
/// the collectives on the CP group, exposed.
void cost_context_parallel(const Job& job, Costs& c) {
  if (job.cp == 1) return;
  const TrainingSpec& tr = job.scenario.training;
  const TransformerSpec& model = job.scenario.model;
  const std::int64_t tokens = tr.micro_batch * tr.seq_len;
  const double w = working_bytes(tr.precision);
  const std::string algorithm = job.scenario.strategy.algorithm;
  if (job.scenario.strategy.cp_comm == CpCommKind::all_gather) {
    const TpLayerComm comm = cp_all_gather_comm(model, tokens, w, job.cp, job.tp);
    auto ops = [&](const std::vector<TpCollective>& list, const char* pass) {
      std::vector<sim::LayerCollective> out;
      for (const TpCollective& t : list)
        out.push_back({fmt::format("context-parallel K/V {} ({})", name(t.op), pass), t.op, t.bytes, job.cp,
                       collective_phases(t.op, t.bytes, job.cp_fabric, algorithm)});
      return out;
    };
    c.cp_forward = ops(comm.forward, "forward");
    c.cp_backward = ops(comm.backward, "backward");
    return;
  }
  const CpLayerComm ring = cp_layer_comm(model, tokens, w, job.cp, job.tp);
  const FabricLevel& hop = job.cp_hop_fabric.inter ? *job.cp_hop_fabric.inter : job.cp_hop_fabric.intra;
  const auto probe = collective_phases(Collective::all_gather, 1.0, job.cp_hop_fabric, "auto");
  const double latency_s = probe.empty() ? 0.0 : probe.front().latency_s;
  auto op = [&](double step_bytes, double attention_s, const char* pass) {
    const double step_s = latency_s + step_bytes / (hop.bw_GBps * 1e9);
    CollectivePhase ph;
    ph.collective = Collective::all_gather;
    ph.latency_s = cp_ring_exposed_s(ring.steps, step_s, attention_s, job.cp);  // no bytes left to move
    ph.algbw_GBps = hop.bw_GBps;
    ph.algorithm = "ring attention (exposed part)";
    ph.protocol = "p2p";
    return sim::LayerCollective{fmt::format("context-parallel K/V ring ({}, exposed part)", pass), Collective::all_gather,
                                ring.steps * step_bytes, job.cp, {ph}};
  };
  c.cp_forward = {op(ring.forward_bytes_per_step, c.micro.layer_attention_forward_s, "forward")};
  c.cp_backward = {op(ring.backward_bytes_per_step, c.micro.layer_attention_backward_s, "backward")};
}

/// Expert parallelism per layer and micro-batch: dispatch and combine, each an all-to-all
/// of moe_all_to_all_bytes (tokens·k·h·w·(ep - 1)/ep per GPU) over the EP group's fabric
/// (model/collective.hpp all_to_all_phase), forward, and their gradients the same backward
/// (GShard; Megatron-Core's alltoall token dispatcher). The lowering plays the collectives
/// of a layer after each layer, so each carries the mean over the layers (the MoE layers'
/// share of them: DeepSeek-V3's first 3 dense layers have none). With
/// moe_shared_expert_overlap each pass's all-to-alls cost only what the shared experts'
/// GEMMs of that pass leave exposed (hide_behind).
/// One MoE layer's shared-expert GEMMs on one GPU (model/moe.hpp moe_layer_gemms, shared_up
/// and shared_down), forward and backward (input and weight gradients), seconds.
std::pair<double, double> shared_expert_s(const Job& job, std::int64_t tokens) {
  const TransformerSpec& model = job.scenario.model;
  const Precision pr = job.scenario.training.precision;
  const double elem = pr == Precision::fp8_mixed ? 1.0 : working_bytes(pr);
  const DeviceRates& d = job.device;
  auto t = [&](std::int64_t m, std::int64_t n, std::int64_t k) {
    return gemm_time_s(m, n, k, 1, elem, d.gemm_ceiling_tflops, d.sm_count, d.achieved_memory_GBps());
  };
  double fwd = 0, bwd = 0;
  for (const GroupedGemm& gg : moe_layer_gemms(model, *model.moe, tokens, job.ep, job.kernels.moe_imbalance)) {
    const GemmShape& g = gg.shape;
    if (g.name != "shared_up" && g.name != "shared_down") continue;
    fwd += g.count_per_layer * t(g.m, g.n, g.k);
    bwd += g.count_per_layer * (t(g.m, g.k, g.n) + t(g.n, g.k, g.m));
  }
  return {fwd, bwd};
}

/// The all-to-alls of one pass with `budget_s` of shared-expert work beside them, in order:
/// each costs what is left of it after the budget still unspent (an "exposed part" phase, as
/// the context-parallel ring's), so a pass exposes max(0, all-to-alls - shared experts).
void hide_behind(std::vector<sim::LayerCollective>& ops, double budget_s) {
  for (sim::LayerCollective& op : ops) {
    double t = 0;
    for (const CollectivePhase& ph : op.phases) t += ph.time_s();
    CollectivePhase ph = op.phases.front();
    ph.latency_s = std::max(0.0, t - budget_s);  // no bytes left to move
    ph.bytes = 0;
    ph.algorithm = "p2p (exposed part beside the shared experts)";
    budget_s = std::max(0.0, budget_s - t);
    op.phases = {ph};
    op.purpose += " (exposed part)";
  }
}

void cost_expert_parallel(const Job& job, Costs& c) {
  const TransformerSpec& model = job.scenario.model;
  if (!model.moe || job.ep == 1) return;
  const TrainingSpec& tr = job.scenario.training;
  const double tokens = static_cast<double>(tr.micro_batch * (tr.seq_len / job.cp));
  const double bytes = moe_layer_share(model) *
                       moe_all_to_all_bytes(model, *model.moe, tokens, working_bytes(tr.precision), job.ep);
  auto op = [&](const char* what) {
    return sim::LayerCollective{fmt::format("expert-parallel {} all-to-all", what), Collective::all_to_all, bytes,
                                job.ep, collective_phases(Collective::all_to_all, bytes, job.ep_fabric), "ep"};
  };
  c.ep_forward = {op("dispatch"), op("combine")};
  c.ep_backward = {op("combine gradient"), op("dispatch gradient")};
  if (job.scenario.strategy.moe_shared_expert_overlap) {  // the layers' mean, as the bytes
    const auto [fwd, bwd] = shared_expert_s(job, static_cast<std::int64_t>(tokens));
    hide_behind(c.ep_forward, moe_layer_share(model) * fwd);
    hide_behind(c.ep_backward, moe_layer_share(model) * bwd);
  }
}

/// CPU offload per optimizer step (model/offload.hpp offload_times): one GPU's partition of
/// the trainable parameters, its micro-step's forward and backward to hide copies behind.
void cost_offload(const Job& job, Costs& c) {
  const StrategySpec& st = job.scenario.strategy;
  if (st.offload == OffloadKind::none) return;
  const TrainingSpec& tr = job.scenario.training;
  OffloadInputs in;
  in.kind = st.offload;
  in.strategy = st.kind;
  in.local_params = c.trainable / (static_cast<double>(job.tp) * job.pp * job.dp * job.cp);
  in.micro_steps = tr.grad_accum;
  in.w = working_bytes(tr.precision);
  in.gpus_per_host = job.gpus_per_node;
  in.pcie_GBps = job.pcie_GBps;
  in.host_memory_GBps = job.host_memory_GBps;
  in.host_cores = job.host_cores;
  in.delayed_update = st.delayed_update;
  in.forward_s = c.micro.forward_s;
  in.backward_s = c.micro.backward_s;
  in.step_compute_s = c.forward_s + c.backward_s + c.recompute_s;
  c.offload = offload_times(in);
  c.optimizer_s = c.offload.exposed_s;
  c.assumptions.push_back(fmt::format(
      "offload per step: {:.3g} s of gradients down and {:.3g} s of parameters up over PCIe ({:.0f} B per local "
      "parameter), {:.3g} s of CPU Adam for the node's {} GPUs ({} B/param over host memory, {:.3g}M "
      "params/s on each of {} cores, the slower bound; DeepSpeed PR #735); {:.3g} s exposed",
      c.offload.down_s, c.offload.up_s, pcie_bytes_per_param(in.kind, in.strategy, in.micro_steps, in.w),
      c.offload.cpu_s, in.gpus_per_host, kCpuAdamBytesPerParam, kCpuAdamParamsPerCoreSecond / 1e6, in.host_cores,
      c.offload.exposed_s));
}

/// Adding up the micro-steps' gradients (training.grad_accumulation) as memory-bound work at
/// the end of each micro-step's backward: grad_accumulation_bytes of each layer's and of the
/// root unit's local gradients over achieved memory bandwidth. Where gradients are sharded
/// (ZeRO-2/3, FSDP) the adds run on the shard, 1/(dp·cp) of them. The root unit's share is
/// played with the LM head (the last stage under pipeline parallelism).
void cost_grad_accumulation(const Job& job, Costs& c) {
  const TrainingSpec& tr = job.scenario.training;
  const double shard = shards_gradients(job.scenario.strategy.kind) ? static_cast<double>(job.dp) * job.cp : 1.0;
  const double bw = job.device.achieved_memory_GBps() * 1e9;
  const auto pass_s = [&](double grad_bytes) {
    return grad_accumulation_bytes(tr.grad_accumulation, grad_bytes / shard, tr.grad_accum) / bw;
  };
  const double layer_s = pass_s(c.layer_grad_bytes);
  const double root_s = pass_s(c.root_grad_bytes);
  const double micro_s = layer_s * static_cast<double>(job.scenario.model.layers) + root_s;
  if (micro_s <= 0) return;
  c.micro.backward_s += micro_s;
  c.micro.head_backward_s += root_s;
  c.micro.kernels.memory_s += micro_s;
  c.per_layer = layer_times(c.micro, static_cast<int>(job.scenario.model.layers));
  const double m = static_cast<double>(tr.grad_accum);
  c.backward_s += m * micro_s;
  c.kernels.memory_s += m * micro_s;
  // The report's rank: under a pipeline stage 0, its layers' adds (the root's go with the head).
  c.grad_accumulation_s = job.pp > 1 ? layer_s * stage_zero_layers(job) : micro_s;
}

MicroStepTimes micro_step_times(const Job& job) {
  const TrainingSpec& tr = job.scenario.training;
  return micro_step_times(job.scenario.model, tr.micro_batch, tr.seq_len, tr.precision, flops_options(tr),
                          job.kernels, job.device);
}

Costs cost(const Job& job) { return cost(job, micro_step_times(job)); }

Costs cost(const Job& job, const MicroStepTimes& micro) {
  const TransformerSpec& model = job.scenario.model;
  const TrainingSpec& tr = job.scenario.training;
  Costs c;
  c.micro = micro;
  c.per_layer = layer_times(c.micro, static_cast<int>(model.layers));
  const double m = static_cast<double>(tr.grad_accum);
  c.forward_s = m * c.micro.forward_s;
  c.backward_s = m * c.micro.backward_s;
  c.recompute_s = m * c.micro.recompute_s;
  c.kernels = c.micro.kernels;
  c.kernels.gemm_s *= m;
  c.kernels.attention_s *= m;
  c.kernels.memory_s *= m;
  c.kernels.launch_s *= m;
  c.parameters = static_cast<double>(parameter_count(model));
  c.trainable = tr.lora ? static_cast<double>(lora_parameter_count(model, *tr.lora)) : c.parameters;
  // A MoE model's GPU steps 1/ep of the routed experts unless the optimizer is sharded (then
  // 1/(dp·cp) of them, as of the dense part: E/ep experts over dp·cp/ep expert-DP ranks).
  const double routed = routed_expert_parameters(model);
  c.optimizer_s = optimizer_step_s(
      job, shards_optimizer(job.scenario.strategy.kind) ? c.trainable : c.trainable - routed + routed / job.ep);
  cost_bytes(job, c);
  cost_grad_accumulation(job, c);  // before the stage share: it adds to every layer's backward
  if (job.pp > 1) stage_zero_share(job, c);
  cost_offload(job, c);
  c.compute_s = c.forward_s + c.backward_s + c.recompute_s + c.optimizer_s;
  cost_flops(job, c);
  cost_memory(job, c);
  cost_context_parallel(job, c);
  cost_expert_parallel(job, c);
  return c;
}

// ---------------------------------------------------------------------------------------
// lower, simulate, bound

/// One layer's GEMMs on one GPU under tensor parallelism (model/parallel.hpp
/// tp_layer_gemms), each alone through gemm_time_s at the job's device rates: forward
/// (m x k)·(k x n), input gradient (m x n)·(n x k), weight gradient (n x m)·(m x k).
TpLayerGemmTimes tp_gemm_times(const Job& job, std::int64_t tokens) {
  const Precision pr = job.scenario.training.precision;
  const double elem = pr == Precision::fp8_mixed ? 1.0 : working_bytes(pr);
  const DeviceRates& d = job.device;
  auto t = [&](std::int64_t m, std::int64_t n, std::int64_t k, int count) {
    return count * gemm_time_s(m, n, k, 1, elem, d.gemm_ceiling_tflops, d.sm_count, d.achieved_memory_GBps());
  };
  TpLayerGemmTimes out;
  for (const GemmShape& g : tp_layer_gemms(job.scenario.model, tokens, job.tp)) {
    const double fprop = t(g.m, g.n, g.k, g.count_per_layer), dgrad = t(g.m, g.k, g.n, g.count_per_layer),
                 wgrad = t(g.n, g.k, g.m, g.count_per_layer);
    if (g.name == "qkv") out.qkv_fprop = fprop, out.qkv_dgrad = dgrad, out.qkv_wgrad = wgrad;
    else if (g.name == "attn_out") out.proj_fprop = fprop, out.proj_dgrad = dgrad;
    else if (g.name == "mlp_up") out.fc1_fprop = fprop, out.fc1_dgrad = dgrad, out.fc1_wgrad = wgrad;
    else if (g.name == "mlp_down") out.fc2_fprop = fprop, out.fc2_dgrad = dgrad;
  }
  return out;
}

/// Tensor parallelism in the plan: the TP group's fabric and the collectives of each layer
/// (forward, backward, the full recompute's repeat of the forward's) and of the
/// vocab-parallel head, for one micro-batch (model/parallel.hpp).
void plan_tensor_parallel(const Job& job, sim::StepPlan& plan) {
  plan.tp = job.tp;
  if (job.tp == 1) return;
  const TrainingSpec& tr = job.scenario.training;
  const bool sp = job.scenario.strategy.sp;
  const std::int64_t tokens = tr.micro_batch * (tr.seq_len / job.cp);  // this GPU's tokens
  const double w = working_bytes(tr.precision);
  const std::int64_t h = job.scenario.model.hidden;
  plan.tp_fabric = job.tp_fabric;
  const StrategySpec& st = job.scenario.strategy;
  const TpLayerComm layer =
      st.tp_comm_overlap ? tp_layer_comm_overlapped(tokens, h, w, job.tp, tp_gemm_times(job, tokens),
                                                    job.device.sm_count, Recompute::none)
      : st.tp_backward_overlap
          ? tp_layer_comm_async(tokens, h, w, job.tp, sp, tp_gemm_times(job, tokens), job.comm_slowdown, Recompute::none)
          : tp_layer_comm(tokens, h, w, job.tp, sp, Recompute::none);
  plan.tp_forward = layer.forward;
  plan.tp_backward = layer.backward;
  if (tr.recompute == Recompute::full) plan.tp_recompute = layer.forward;
  const TpLayerComm head = tp_embedding_head_comm(tokens, h, w, job.tp, sp);
  plan.tp_head_forward = head.forward;
  plan.tp_head_backward = head.backward;
}

/// Pipeline parallelism in the plan: stages, chunks, schedule, the bytes and latency of a
/// send between stages (b·s·h·w, / t under SP; the latency of a two-rank collective on
/// that link, NCCL's tuning model), the stage link, and each stage's static memory. The
/// lowering takes the whole model's times and gives each stage its share.
void plan_pipeline(const Job& job, const Costs& c, sim::StepPlan& plan) {
  plan.pp = job.pp;
  if (job.pp == 1) return;
  const StrategySpec& st = job.scenario.strategy;
  const TrainingSpec& tr = job.scenario.training;
  plan.vpp = st.vpp;
  plan.schedule = st.schedule;
  plan.chunk_layers = split_layers_per_chunk(job.scenario.model, job.pp, st.vpp, st.pp_split);
  plan.gpus = job.gpus;
  plan.nodes = job.nodes;
  plan.gpus_per_node = job.gpus_per_node;
  plan.pp_fabric = job.pp_fabric;
  plan.p2p_bytes = pipeline_p2p_bytes(tr.micro_batch * (tr.seq_len / job.cp), job.scenario.model.hidden,
                                      working_bytes(tr.precision), job.tp, st.sp);
  const auto phases = collective_phases(Collective::all_gather, 1.0, job.pp_fabric, "auto");
  plan.p2p_latency_s = phases.empty() ? 0.0 : phases.front().latency_s;
  plan.stage_static_memory_bytes.assign(static_cast<std::size_t>(job.pp), c.static_memory_bytes);
  plan.optimizer_s = c.optimizer_s * job.pp;  // the whole model's; the lowering gives each stage its share
}

sim::StepPlan step_plan(const Job& job, const Costs& c, const PredictOptions& options) {
  const Scenario& s = job.scenario;
  sim::StepPlan plan;
  plan.strategy = s.strategy.kind;
  plan.micro_steps = s.training.grad_accum;
  plan.layers = static_cast<int>(s.model.layers);
  plan.micro = c.micro;
  plan.optimizer_s = c.optimizer_s;
  plan.head_flops_forward = c.head_flops_forward;
  plan.head_flops_backward = c.head_flops_backward;
  plan.layer_flops_forward = c.layer_flops_forward;
  plan.layer_flops_backward = c.layer_flops_backward;
  plan.layer_flops_recompute = c.layer_flops_recompute;
  plan.layer_param_bytes = c.layer_param_bytes;
  plan.root_param_bytes = c.root_param_bytes;
  plan.head_param_bytes = c.head_param_bytes;
  plan.layer_grad_bytes = c.layer_grad_bytes;
  plan.layer_gather_bytes = c.layer_gather_bytes;
  plan.root_grad_bytes = c.root_grad_bytes;
  plan.head_grad_bytes = c.head_grad_bytes;
  plan.bucket_bytes = job.bucket_bytes;
  plan.overlap_param_gather = s.strategy.overlap_param_gather;
  plan.overlap_grad_reduce = s.strategy.overlap_grad_reduce;
  plan.first_bucket_bytes = job.first_bucket_bytes;
  plan.prefetch_layers = s.strategy.prefetch_layers;
  plan.gpus = job.dp * job.cp;  // the lowering's collectives span the DP x CP ranks
  plan.nodes = job.nodes;
  plan.gpus_per_node = std::max(1, job.gpus_per_node / job.tp);  // DP ranks per node
  plan.fabric = job.fabric;
  plan_tensor_parallel(job, plan);
  plan_pipeline(job, c, plan);
  plan.cp_forward = c.cp_forward;
  plan.cp_backward = c.cp_backward;
  // Full and selective recompute both rerun the attention, and with it the K/V exchange.
  if (s.training.recompute != Recompute::none) plan.cp_recompute = c.cp_forward;
  // The MoE all-to-alls after the K/V exchange; a full recompute reruns the dispatch too.
  plan.cp_forward.insert(plan.cp_forward.end(), c.ep_forward.begin(), c.ep_forward.end());
  plan.cp_backward.insert(plan.cp_backward.end(), c.ep_backward.begin(), c.ep_backward.end());
  if (s.training.recompute == Recompute::full)
    plan.cp_recompute.insert(plan.cp_recompute.end(), c.ep_forward.begin(), c.ep_forward.end());
  plan.algorithm = s.strategy.algorithm;
  plan.comm_on_compute_stream = options.comm_on_compute_stream;
  plan.measured_collectives = job.measured_collectives;
  plan.groups = job.groups;
  plan.comm_slowdown = job.comm_slowdown;
  plan.activation_bytes_per_layer = c.activation_bytes_per_layer;
  plan.logits_bytes = c.logits_bytes;
  plan.static_memory_bytes = c.static_memory_bytes;
  return plan;
}

Lowered lower(const Job& job, const Costs& costs, const PredictOptions& options) {
  Lowered out;
  out.plan = step_plan(job, costs, options);
  out.graph = sim::lower_step(out.plan);
  return out;
}

sim::SimResult simulate(const sim::StepGraph& graph, const PredictOptions& options) {
  sim::SimOptions so;
  so.record_timelines = options.record_timelines;
  so.free_communication = options.free_communication;
  return sim::simulate(graph, so);
}

sim::StepBounds bound(const sim::StepGraph& graph) { return sim::closed_form_bounds(graph); }

// ---------------------------------------------------------------------------------------
// assemble

CollectiveCost phases_cost(Collective collective, double bytes, const std::vector<CollectivePhase>& phases,
                           int ranks, std::optional<double> played_s) {
  CollectiveCost out;
  out.algorithm = "ring";
  out.protocol = "Simple";
  if (phases.empty()) return out;  // nothing moves (collective_cost's convention)
  double time_s = 0;
  for (const CollectivePhase& ph : phases) time_s += ph.time_s();
  if (played_s) time_s = *played_s;
  const bool hierarchical = std::any_of(phases.begin(), phases.end(),
                                        [](const CollectivePhase& ph) { return ph.level != FabricScope::all; });
  if (phases.size() == 1 && phases[0].algorithm == "measured") {  // the calibration's fit
    out.algorithm = "measured";
    out.protocol = "n/a";
  } else if (hierarchical) {
    out.algorithm = "hierarchical";
    for (const CollectivePhase& ph : phases)
      if (ph.level == FabricScope::inter_node) out.protocol = ph.protocol;
  } else {
    out.algorithm = phases[0].algorithm;
    out.protocol = phases[0].protocol;
  }
  out.time_s = time_s;
  // An exposed part (the remainder of a collective overlapped with compute: TP overlap, the
  // CP ring, MoE all-to-alls beside the shared experts) moves no bytes of its own: its time
  // is not a transfer rate, so it has none (n/a, JSON null).
  const bool moves_bytes = std::any_of(phases.begin(), phases.end(), [](const CollectivePhase& ph) { return ph.bytes > 0; });
  out.algbw_GBps = moves_bytes ? bytes / time_s / 1e9 : std::numeric_limits<double>::quiet_NaN();
  out.busbw_GBps = out.algbw_GBps * bus_bandwidth_factor(collective, ranks);
  return out;
}

std::vector<CollectiveUse> collective_uses(const sim::StepGraph& graph, const CommFabric& fabric) {
  std::vector<CollectiveUse> uses;
  for (const sim::CollectiveOp& op : graph.ops) {
    if (op.phases.empty()) continue;
    auto it = std::find_if(uses.begin(), uses.end(), [&](const CollectiveUse& u) {
      return u.purpose == op.purpose && u.level == op.level && u.bytes == op.bytes;
    });
    const int calls = static_cast<int>(graph.op_multiplicity(static_cast<int>(&op - graph.ops.data())));
    if (it != uses.end()) {
      it->calls_per_step += calls;  // an op of the repeated micro-step stands for several
      continue;
    }
    CollectiveUse use;
    use.purpose = op.purpose;
    use.collective = op.collective;
    use.level = op.level;
    use.bytes = op.bytes;
    use.ranks = op.ranks > 0 ? op.ranks : restrict_fabric(fabric, op.level).ranks();
    use.calls_per_step = calls;
    use.phases = op.phases;
    double alone_s = 0;
    for (const CollectivePhase& ph : op.phases) alone_s += sim::phase_alone_s(graph, op, ph);
    use.cost = phases_cost(op.collective, op.bytes, op.phases, use.ranks, alone_s);
    uses.push_back(std::move(use));
  }
  return uses;
}

Prediction assemble(const Job& job, const Costs& costs, Lowered lowered, sim::SimResult result,
                    const sim::StepBounds& bounds, const PredictOptions& options) {
  check_simulation(lowered.graph, result, bounds, options);
  Prediction p;
  p.scenario = job.scenario.name;
  p.gpus = job.gpus;
  p.nodes = job.nodes;
  p.gpus_per_node = job.gpus_per_node;
  p.strategy = job.scenario.strategy.kind;
  p.gpu = job.gpu.name;
  p.hardware = job.hardware;
  p.fabric = job.fabric;
  p.parameters = static_cast<std::int64_t>(costs.parameters);
  p.peak_dtype = job.dtype;
  p.peak_tflops = job.device.peak_tflops;
  p.comm_slowdown = job.comm_slowdown;
  p.assumptions = job.assumptions;
  p.assumptions.insert(p.assumptions.end(), costs.assumptions.begin(), costs.assumptions.end());
  if (costs.grad_accumulation_s > 0)
    p.assumptions.push_back(fmt::format("gradient accumulation ({}): {:.3g} ms of memory-bound adds per micro-step",
                                        name(job.scenario.training.grad_accumulation),
                                        1e3 * costs.grad_accumulation_s));
  if (!result.repetition_exact)
    p.assumptions.push_back(fmt::format(
        "the {} micro-steps were too many to simulate one by one and their middle ones do not repeat "
        "exactly (reductions queue up behind compute): the step adds them from the pattern of the first "
        "few, which can read up to ~10% short",
        job.scenario.training.grad_accum));

  p.forward_s = costs.forward_s;
  p.backward_s = costs.backward_s;
  p.recompute_s = costs.recompute_s;
  p.optimizer_s = costs.optimizer_s;
  p.compute_s = costs.compute_s;
  p.compute_by_kernel = costs.kernels;
  p.memory = costs.memory;

  assemble_simulation(lowered.graph, result, p);
  p.step_no_overlap_s = bounds.no_overlap_s;
  p.step_perfect_overlap_s = bounds.perfect_overlap_s;
  p.comm_total_s = bounds.comm_total_s;
  p.collectives = collective_uses(lowered.graph, job.fabric);
  assemble_throughput(job, costs, p);
  if (options.keep_simulation) {
    auto kept = std::make_shared<StepSimulation>();
    kept->plan = std::move(lowered.plan);
    kept->graph = std::move(lowered.graph);
    kept->result = std::move(result);
    p.simulation = std::move(kept);
  }
  return p;
}

}  // namespace stepcast
