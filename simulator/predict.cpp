#include "simulator/predict.hpp"

#include "model/compute.hpp"
#include "model/flops.hpp"
#include "model/step.hpp"

#include <fmt/format.h>

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

enum class Phase { forward_each, backward_each, last_backward, after_step };

/// The fabric seen by a collective restricted to one level.
CommFabric restrict_to(const CommFabric& f, const std::string& level) {
  if (level == "intra-node") {
    CommFabric g = f;
    g.inter.reset();
    return g;
  }
  if (level == "inter-node") {
    // One GPU per node talks to its peers on the other nodes, while the node's other GPUs
    // do the same: each gets 1/ppn of the node's NICs.
    assert(f.inter);
    CommFabric g = f;
    g.inter->bw_GBps = f.inter->bw_GBps / f.intra.ranks;
    g.intra.ranks = 1;
    g.nvls = false;
    return g;
  }
  return f;
}

}  // namespace

Prediction predict(const Scenario& s) {
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
  if (!s.strategy.bucket_given)
    p.assumptions.push_back("gradient bucket 25 MB (PyTorch DDP bucket_cap_mb default; set strategy.bucket_mb)");

  // --- Compute ---------------------------------------------------------------------------
  const Dtype dtype = gemm_dtype(tr.precision);
  DeviceRates device;
  device.arch = gpu.arch;
  device.peak_tflops = gpu.peak(dtype);
  device.memory_bw_GBps = gpu.memory_bw_GBps;
  device.gemm = default_gemm_efficiency(gpu.arch, dtype);
  device.memory_efficiency = default_memory_efficiency(gpu.arch);
  p.peak_tflops = device.peak_tflops;
  p.assumptions.push_back(fmt::format("GEMM efficiency {:.2f} of the {} {} peak ({:.0f} TFLOP/s) for large GEMMs, "
                                      "half of it at {:.1g} FLOP per GEMM: {}",
                                      device.gemm.max_fraction, gpu.name, name(dtype), device.peak_tflops,
                                      device.gemm.half_flops, device.gemm.source));
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

  // --- Communication ---------------------------------------------------------------------
  StepWork work;
  work.micro_steps = static_cast<int>(tr.grad_accum);
  work.forward_s = micro.forward_s;
  work.backward_s = micro.backward_s + micro.recompute_s;
  work.optimizer_s = p.optimizer_s;

  const double wb = working_bytes(tr.precision);
  const double param_bytes = params * wb;
  const double grad_bytes = trainable * wb;
  const double layers = static_cast<double>(model.layers);

  auto add = [&](const std::string& purpose, Collective c, const std::string& level, double bytes, int calls,
                 Phase phase) -> double {
    CollectiveUse use;
    use.purpose = purpose;
    use.collective = c;
    use.level = level;
    use.bytes = bytes;
    use.calls_per_step = calls;
    use.cost = collective_cost(c, bytes, restrict_to(fabric, level), s.strategy.algorithm);
    const double per_phase = use.cost.time_s * calls;
    switch (phase) {
      case Phase::forward_each: work.comm_forward_s += per_phase / m; break;
      case Phase::backward_each: work.comm_backward_s += per_phase / m; break;
      case Phase::last_backward: work.comm_last_backward_s += per_phase; break;
      case Phase::after_step: work.comm_after_step_s += per_phase; break;
    }
    p.collectives.push_back(use);
    return use.cost.time_s;
  };

  const int buckets = static_cast<int>(std::max(1.0, std::ceil(grad_bytes / s.strategy.bucket_bytes)));
  const int units = static_cast<int>(layers);
  const int micro_calls = static_cast<int>(tr.grad_accum);
  if (gpus > 1) {
    switch (st) {
      case Strategy::ddp: {
        // Bucketed all-reduce during the last micro-step's backward (no_sync before it);
        // the last bucket can only start after the last gradient exists.
        double one = add("gradient all-reduce (bucketed)", Collective::all_reduce, "all", grad_bytes / buckets, buckets,
                         Phase::last_backward);
        work.comm_unhideable_s += one;
        break;
      }
      case Strategy::fsdp_no_shard: {
        double one = add("gradient all-reduce (per FSDP unit)", Collective::all_reduce, "all", grad_bytes / units, units,
                         Phase::last_backward);
        work.comm_unhideable_s += one;
        break;
      }
      case Strategy::zero1:
      case Strategy::zero2: {
        const bool every = st == Strategy::zero2;  // ZeRO-2 reduces each micro-step into its shard
        double rs = add("gradient reduce-scatter (bucketed)", Collective::reduce_scatter, "all", grad_bytes / buckets,
                        buckets * (every ? micro_calls : 1), every ? Phase::backward_each : Phase::last_backward);
        work.comm_unhideable_s += rs * (every ? m : 1);
        // DeepSpeed gathers the updated parameters inside step(), after the optimizer.
        const double before = work.comm_after_step_s;
        add("parameter all-gather (after step)", Collective::all_gather, "all", trainable * wb / buckets, buckets,
            Phase::after_step);
        work.comm_serialized_s += work.comm_after_step_s - before;
        break;
      }
      case Strategy::zero3:
      case Strategy::fsdp_full_shard:
      case Strategy::fsdp_shard_grad_op:
      case Strategy::fsdp_hybrid_shard: {
        const std::string level = st == Strategy::fsdp_hybrid_shard ? (ppn > 1 ? "intra-node" : "none") : "all";
        if (level != "none") {
          const double ag = add("parameter all-gather (forward)", Collective::all_gather, level, param_bytes / units,
                                units * micro_calls, Phase::forward_each);
          if (st != Strategy::fsdp_shard_grad_op)
            add("parameter all-gather (backward)", Collective::all_gather, level, param_bytes / units,
                units * micro_calls, Phase::backward_each);
          const double rs = add("gradient reduce-scatter", Collective::reduce_scatter, level, grad_bytes / units,
                                units * micro_calls, Phase::backward_each);
          work.comm_unhideable_s += m * (ag + rs);
        }
        if (st == Strategy::fsdp_hybrid_shard && nodes > 1) {
          const double ar = add("gradient all-reduce across nodes (shard)", Collective::all_reduce, "inter-node",
                                grad_bytes / ppn / units, units, Phase::last_backward);
          work.comm_unhideable_s += ar;
        }
        break;
      }
    }
  }

  const StepTime t = step_time(work);
  p.step_time_s = t.estimate_s;
  p.step_no_overlap_s = t.no_overlap_s;
  p.step_perfect_overlap_s = t.perfect_overlap_s;
  p.comm_total_s = t.comm_total_s;
  p.comm_exposed_s = t.comm_exposed_s;
  p.comm_hidden_s = std::max(0.0, t.comm_total_s - t.comm_exposed_s);
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
  mem.bucket_bytes = s.strategy.bucket_bytes;
  mem.prefetch_layers = s.strategy.prefetch_layers;
  mem.capacity_bytes = gpu.memory_bytes;
  mem.cuda_context_bytes = kCudaContextBytes;
  p.memory = memory_per_gpu(mem);
  p.assumptions.push_back("CUDA context, cuBLAS workspace and NCCL buffers: 1.0 GiB per GPU (default)");
  return p;
}

}  // namespace stepcast
