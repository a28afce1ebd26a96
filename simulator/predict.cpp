#include "simulator/predict.hpp"

#include "topologies/hardware_file.hpp"
#include "model/compute.hpp"
#include "model/flops.hpp"
#include "simulator/bounds.hpp"
#include "simulator/lowering.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>

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

/// PyTorch DDP's first bucket: torch.distributed._DEFAULT_FIRST_BUCKET_BYTES = 1 MiB
/// (torch/nn/parallel/distributed.py), so the first all-reduce starts early.
constexpr double kFirstBucketBytes = 1024.0 * 1024.0;

}  // namespace

Prediction predict(const Scenario& s, const PredictOptions& options) {
  Prediction p;
  const TransformerSpec& model = s.model;
  const TrainingSpec& tr = s.training;
  const int nodes = s.hardware.nodes;
  const int ppn = s.hardware.gpus_per_node;
  const int gpus = nodes * ppn;

  ClusterSpec used = s.hardware.cluster;
  used.nodes = nodes;
  const Topology topo = Topology::build(used);
  const GpuSpec& gpu = topo.gpu();
  const CommFabric fabric = topo.fabric(nodes, ppn);

  p.scenario = s.name;
  p.gpus = gpus;
  p.nodes = nodes;
  p.gpus_per_node = ppn;
  p.strategy = s.strategy.kind;
  p.gpu = gpu.name;
  p.hardware = nodes > 1 ? fmt::format("{} x {} ({})", nodes, topo.box().name, fabric.inter->kind)
                         : topo.box().name;
  p.fabric = fabric;

  // --- Compute ---------------------------------------------------------------------------
  const Dtype dtype = gemm_dtype(tr.precision);
  DeviceRates device;
  device.arch = gpu.arch;
  device.peak_tflops = gpu.peak(dtype);
  device.memory_bw_GBps = gpu.memory_bw_GBps;
  device.gemm = default_gemm_efficiency(gpu.arch, dtype);
  device.memory_efficiency = default_memory_efficiency(gpu.arch);
  device.attention_efficiency = default_attention_efficiency(gpu.arch);
  if (dtype == Dtype::fp8) device.attention_peak_tflops = gpu.peak(Dtype::bf16);
  if (const FittedEfficiency* fit = fitted_efficiency(gpu.arch)) {
    // Fitted values replace the defaults for 16-bit GEMMs; fp8 and fp32 keep their ratio.
    if (fit->gemm_max_fraction)
      device.gemm.max_fraction *= *fit->gemm_max_fraction / default_gemm_efficiency(gpu.arch, Dtype::bf16).max_fraction;
    if (fit->attention_efficiency) device.attention_efficiency = *fit->attention_efficiency;
    if (fit->memory_efficiency) device.memory_efficiency = *fit->memory_efficiency;
    device.gemm.source = "fitted: " + fit->fitted_on;
    p.assumptions.push_back(fmt::format("{} efficiencies fitted to measured runs (model/catalog/fitted.json): {}",
                                        name(gpu.arch), fit->fitted_on));
  }
  p.peak_tflops = device.peak_tflops;
  if (const HardwareFile* cal = s.hardware.calibration.get()) {
    if (auto it = cal->gemm.find(dtype); it != cal->gemm.end())
      device.gemm = GemmEfficiency{it->second.max_fraction, it->second.half_flops,
                                   "measured: " + s.hardware.calibration_file};
    if (cal->memory.memory_efficiency) device.memory_efficiency = *cal->memory.memory_efficiency;
    p.assumptions.push_back(fmt::format("calibration {} (measured on {}, {}): GEMM efficiency, memory bandwidth "
                                        "and measured collectives replace the defaults",
                                        s.hardware.calibration_file, cal->machine.hostname, cal->machine.date_utc));
  }
  p.assumptions.push_back(fmt::format("GEMM efficiency {:.2f} of the {} {} peak ({:.0f} TFLOP/s) for large GEMMs, "
                                      "half of it at {:.1g} FLOP per GEMM: {}",
                                      device.gemm.max_fraction, gpu.name, name(dtype), device.peak_tflops,
                                      device.gemm.half_flops, device.gemm.source));
  if (tr.flash_attention)
    p.assumptions.push_back(fmt::format("flash attention reaches {:.0f}% of peak on the attention scores, backward "
                                        "2.5x forward (FlashAttention-2)",
                                        100 * device.attention_efficiency));
  p.assumptions.push_back(fmt::format("memory-bound kernels reach {:.0f}% of {:.0f} GB/s", 100 * device.memory_efficiency,
                                      device.memory_bw_GBps));

  FlopsOptions opts;
  opts.recompute = tr.recompute;
  opts.causal_halving = tr.flash_attention;
  opts.lora = tr.lora ? &*tr.lora : nullptr;
  const MicroStepTimes micro =
      micro_step_times(model, tr.micro_batch, tr.seq_len, tr.precision, opts, tr.flash_attention, device);
  const double m = static_cast<double>(tr.grad_accum);
  p.forward_s = m * micro.forward_s;
  p.backward_s = m * micro.backward_s;
  p.recompute_s = m * micro.recompute_s;

  const double params = static_cast<double>(parameter_count(model));
  const double trainable = tr.lora ? static_cast<double>(lora_parameter_count(model, *tr.lora)) : params;
  const Strategy st = s.strategy.kind;
  const double optimizer_shards = !shards_optimizer(st) ? 1.0 : st == Strategy::fsdp_hybrid_shard ? ppn : gpus;
  const bool fp32_grads = tr.optimizer == OptimizerKind::adam_deepspeed_18;
  p.optimizer_s = optimizer_time_s(trainable / optimizer_shards,
                                   optimizer_bytes_per_param(tr.precision, fp32_grads,
                                                             tr.optimizer == OptimizerKind::sgd_momentum),
                                   device);

  // --- The step, lowered and simulated ---------------------------------------------------
  const double wb = working_bytes(tr.precision);
  const ParameterBreakdown pb = parameter_breakdown(model);
  const double layer_params = static_cast<double>(pb.per_layer);
  const double root_params = params - layer_params * static_cast<double>(model.layers);
  sim::StepPlan plan;
  plan.strategy = st;
  plan.micro_steps = static_cast<int>(tr.grad_accum);
  plan.layers = static_cast<int>(model.layers);
  plan.micro = micro;
  plan.optimizer_s = p.optimizer_s;
  {
    const double tokens = static_cast<double>(tr.micro_batch * tr.seq_len);
    const StepFlops mf = training_flops(model, tr.seq_len, tokens, opts);
    const double head = 2.0 * tokens * static_cast<double>(model.hidden) * static_cast<double>(model.vocab);
    const double bwd_ratio = mf.forward > 0 ? mf.backward / mf.forward : 2.0;
    const double L = static_cast<double>(model.layers);
    plan.head_flops_forward = head;
    plan.head_flops_backward = bwd_ratio * head;
    plan.layer_flops_forward = std::max(0.0, mf.forward - head) / L;
    plan.layer_flops_backward = std::max(0.0, mf.backward - bwd_ratio * head) / L;
    plan.layer_flops_recompute = mf.recompute / L;
  }
  plan.layer_param_bytes = layer_params * wb;
  plan.root_param_bytes = root_params * wb;
  plan.head_param_bytes = static_cast<double>(pb.lm_head) * wb;
  if (tr.lora) {
    plan.layer_grad_bytes = trainable * wb / static_cast<double>(model.layers);  // adapters only
  } else {
    plan.layer_grad_bytes = plan.layer_param_bytes;
    plan.root_grad_bytes = plan.root_param_bytes;
    plan.head_grad_bytes = plan.head_param_bytes;
  }
  const bool zero12 = st == Strategy::zero1 || st == Strategy::zero2;
  const double grad_bytes = trainable * wb;
  if (s.strategy.bucket_given) {
    plan.bucket_bytes = s.strategy.bucket_bytes;
  } else if (zero12) {
    plan.bucket_bytes = kDeepSpeedBucketElements * wb;
    p.assumptions.push_back("reduce/all-gather bucket 5e8 elements (DeepSpeed reduce_bucket_size and "
                            "allgather_bucket_size defaults; set strategy.bucket_mb)");
  } else if (st == Strategy::ddp) {
    p.assumptions.push_back("gradient bucket 25 MB, the first 1 MiB (PyTorch DDP bucket_cap_mb and "
                            "_DEFAULT_FIRST_BUCKET_BYTES defaults; set strategy.bucket_mb)");
  }
  plan.first_bucket_bytes = st == Strategy::ddp ? std::min(kFirstBucketBytes, plan.bucket_bytes) : plan.bucket_bytes;
  plan.prefetch_layers = s.strategy.prefetch_layers;
  plan.gpus = gpus;
  plan.nodes = nodes;
  plan.gpus_per_node = ppn;
  plan.fabric = fabric;
  plan.algorithm = s.strategy.algorithm;
  plan.comm_on_compute_stream = options.comm_on_compute_stream;
  if (const HardwareFile* cal = s.hardware.calibration.get())
    for (const FittedCollective& fc : cal->collectives)
      plan.measured_collectives.push_back(sim::MeasuredCollective{fc.collective, static_cast<int>(fc.ranks),
                                                                  static_cast<int>(fc.nodes), fc.latency_us * 1e-6,
                                                                  fc.algbw_GBps});
  if (!s.hardware.stragglers.empty()) {
    int typical = nodes;
    for (const StragglerSpec& st : s.hardware.stragglers) typical -= st.nodes;
    plan.groups.push_back(sim::RankGroup{"typical nodes", typical * ppn, typical, 1.0, 1.0});
    for (const StragglerSpec& st : s.hardware.stragglers) {
      plan.groups.push_back(sim::RankGroup{st.name, st.nodes * ppn, st.nodes, st.compute_speed, st.link_speed});
      p.assumptions.push_back(fmt::format("{}: {} node(s) at {:.0f}% compute and {:.0f}% link speed, simulated as "
                                          "their own rank class",
                                          st.name, st.nodes, 100 * st.compute_speed, 100 * st.link_speed));
    }
  }
  const int channels = gpus > 1 ? nccl_channels(fabric) : 0;
  // Capped at half the SMs: NCCL_MAX_NCHANNELS tops out at 32 channels, fewer than half of
  // any catalog GPU's SMs except the smallest (T4: 40).
  plan.comm_slowdown = std::min(0.5, static_cast<double>(channels) / gpu.sm_count);
  p.comm_slowdown = plan.comm_slowdown;
  if (gpus > 1)
    p.assumptions.push_back(fmt::format("compute runs {:.0f}% slower while a collective runs: {} NCCL channels "
                                        "of {} SMs (one CUDA block per channel)",
                                        100 * plan.comm_slowdown, channels, gpu.sm_count));
  // --- Memory ------------------------------------------------------------------------------
  MemoryInputs mem;
  mem.model = &model;
  mem.micro_batch = tr.micro_batch;
  mem.seq_len = tr.seq_len;
  mem.precision = tr.precision;
  mem.optimizer = tr.optimizer;
  mem.recompute = tr.recompute;
  mem.flash_attention = tr.flash_attention;
  mem.lora = tr.lora ? &*tr.lora : nullptr;
  mem.strategy = st;
  mem.gpus = gpus;
  mem.gpus_per_node = ppn;
  mem.bucket_bytes = zero12 ? std::min(plan.bucket_bytes, grad_bytes) : plan.bucket_bytes;
  mem.prefetch_layers = s.strategy.prefetch_layers;
  mem.capacity_bytes = gpu.memory_bytes;
  mem.cuda_context_bytes = kCudaContextBytes;
  p.memory = memory_per_gpu(mem);
  p.assumptions.push_back("CUDA context, cuBLAS workspace and NCCL buffers: 1.0 GiB per GPU (default)");
  auto term = [&](const char* name) {
    for (const MemoryTerm& t : p.memory.terms)
      if (t.name == name) return t.bytes;
    return 0.0;
  };
  plan.activation_bytes_per_layer = term("activations") / static_cast<double>(model.layers);
  plan.logits_bytes = term("logits");
  plan.static_memory_bytes = p.memory.total_bytes - term("activations") - term("logits") - term("gathered_params") -
                             term("fragmentation");

  auto sim_run = std::make_shared<StepSimulation>();
  sim_run->graph = sim::lower_step(plan);
  sim_run->plan = plan;
  sim::SimOptions so;
  so.record_timelines = options.record_timelines;
  so.free_communication = options.free_communication;
  sim_run->result = sim::simulate(sim_run->graph, so);
  const sim::StepGraph& graph = sim_run->graph;
  const sim::SimResult& r = sim_run->result;
  const sim::StepBounds bounds = sim::closed_form_bounds(graph);

  p.step_time_s = r.step_s();
  p.step_no_overlap_s = bounds.no_overlap_s;
  p.step_perfect_overlap_s = bounds.perfect_overlap_s;
  p.comm_total_s = bounds.comm_total_s;
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

  // One row per kind of collective and size, as the reports list them.
  for (const sim::CollectiveOp& op : graph.ops) {
    if (op.phases.empty()) continue;
    auto it = std::find_if(p.collectives.begin(), p.collectives.end(), [&](const CollectiveUse& u) {
      return u.purpose == op.purpose && u.level == op.level && u.bytes == op.bytes;
    });
    const int calls = static_cast<int>(graph.op_multiplicity(static_cast<int>(&op - graph.ops.data())));
    if (it != p.collectives.end()) {
      it->calls_per_step += calls;  // an op of the repeated micro-step stands for several
      continue;
    }
    CollectiveUse use;
    use.purpose = op.purpose;
    use.collective = op.collective;
    use.level = op.level;
    use.bytes = op.bytes;
    use.calls_per_step = calls;
    const CommFabric level = restrict_fabric(fabric, op.level);
    use.cost = collective_cost(op.collective, op.bytes, level, s.strategy.algorithm);
    if (op.phases.size() == 1 && op.phases[0].algorithm == "measured") {  // the calibration's fit
      const CollectivePhase& ph = op.phases[0];
      use.cost.time_s = ph.time_s();
      use.cost.algorithm = "measured";
      use.cost.protocol = "n/a";
      use.cost.algbw_GBps = op.bytes / ph.time_s() / 1e9;
      use.cost.busbw_GBps = use.cost.algbw_GBps * bus_bandwidth_factor(op.collective, level.ranks());
    }
    p.collectives.push_back(use);
  }
  if (options.keep_simulation) p.simulation = std::move(sim_run);

  p.compute_s = p.forward_s + p.backward_s + p.recompute_s + p.optimizer_s;

  // --- Throughput and FLOPs --------------------------------------------------------------
  const double tokens_per_micro = static_cast<double>(tr.micro_batch * tr.seq_len);
  p.global_batch_samples = static_cast<double>(tr.micro_batch * tr.grad_accum) * gpus;
  p.tokens_per_step = p.global_batch_samples * static_cast<double>(tr.seq_len);
  const StepFlops f = training_flops(model, tr.seq_len, tokens_per_micro, opts);
  p.model_flops_per_step = f.model * m * gpus;
  p.hardware_flops_per_step = f.hardware() * m * gpus;
  p.tokens_per_s = p.tokens_per_step / p.step_time_s;
  p.tokens_per_s_per_gpu = p.tokens_per_s / gpus;
  p.samples_per_s = p.global_batch_samples / p.step_time_s;
  p.mfu = p.model_flops_per_step / (p.step_time_s * gpus * device.peak_tflops * 1e12);
  p.hfu = p.hardware_flops_per_step / (p.step_time_s * gpus * device.peak_tflops * 1e12);

  const double samples = s.dataset.samples ? *s.dataset.samples : *s.dataset.tokens / static_cast<double>(tr.seq_len);
  p.steps_per_epoch = std::ceil(samples / p.global_batch_samples);
  p.time_per_epoch_s = p.steps_per_epoch * p.step_time_s;
  if (s.price_per_gpu_hour_usd) p.cost_per_epoch_usd = *s.price_per_gpu_hour_usd * gpus * p.time_per_epoch_s / 3600.0;

  return p;
}

}  // namespace stepcast
