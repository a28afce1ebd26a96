/// \file
/// Stage resolve (stages.hpp): the scenario's catalog names, calibration and defaults turned
/// into one Job: device rates, fabrics of every process group, buckets, host and assumptions.
#include "predict/stages.hpp"

#include "predict/calibrated_rates.hpp"

#include "model/moe.hpp"
#include "model/parallel.hpp"
#include "model/variability.hpp"

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
  const std::vector<LayoutRule> broken = layout_violations(s.strategy.layout, m, layout_context(s));
  if (!broken.empty())
    throw std::invalid_argument(fmt::format("scenario \"{}\": {}", s.name, describe(broken.front())));
}

/// The bucket size the step uses, with the framework default it assumed when none is given.
void resolve_buckets(Job& job) {
  const StrategySpec& strat = job.scenario.strategy;
  const Strategy st = strat.layout.dp_sharding;
  const double wb = working_bytes(job.scenario.training.precision);
  job.bucket_bytes = sim::CostedStep{}.bucket_bytes;
  if (strat.bucket_given) {
    job.bucket_bytes = strat.bucket_bytes;
  } else if (zero12(st) && strat.overlap_param_gather) {
    // Megatron-Core's distributed optimizer (megatron/core/distributed/
    // distributed_data_parallel.py at core_r0.8.0): max(40M, 1M x DP size) elements.
    const double elements = std::max(40e6, 1e6 * job.layout().dp * job.layout().cp);
    job.bucket_bytes = elements * (strat.reduce_fp32 ? 4.0 : wb);
    job.assumptions.push_back(
        fmt::format("overlap_param_gather: the updated parameters' all-gather runs at the "
                    "step's start beside the forward, bucket by bucket in forward order, not "
                    "after the optimizer step; buckets of max(40M, 1M x {} DP ranks) = {:g}M "
                    "elements (Megatron-Core's default; set strategy.bucket_mb)",
                    job.layout().dp * job.layout().cp, elements / 1e6));
  } else if (zero12(st)) {
    job.bucket_bytes = kDeepSpeedBucketElements * wb;
    job.assumptions.push_back(
        "reduce/all-gather bucket 5e8 elements (DeepSpeed reduce_bucket_size and "
        "allgather_bucket_size defaults; set strategy.bucket_mb)");
  } else if (st == Strategy::zero3) {
    job.bucket_bytes = kDeepSpeedBucketElements * wb;
    job.assumptions.push_back(
        "reduce bucket 5e8 elements (DeepSpeed reduce_bucket_size default, at most the "
        "gradients; set strategy.bucket_mb)");
  } else if (st == Strategy::ddp) {
    job.bucket_bytes = kDdpBucketBytes;
    job.assumptions.push_back(
        "gradient bucket 25 MiB, the first 1 MiB (PyTorch DDP bucket_cap_mb and "
        "_DEFAULT_FIRST_BUCKET_BYTES defaults; set strategy.bucket_mb)");
  }
  job.first_bucket_bytes = st == Strategy::ddp ? std::min(kFirstBucketBytes, job.bucket_bytes) : job.bucket_bytes;
}

/// hardware.gpu_speed_cv: every synchronous step waits for the expected slowest of the job's
/// GPUs, so the GPU's compute-bound rates are that GPU's (model/variability.hpp).
void resolve_slowest_gpu(Job& job, const Scenario& s) {
  const std::optional<double> cv = s.hardware.gpu_speed_cv;
  if (!cv || *cv == 0.0) return;
  const double speed = slowest_of_n_speed(*cv, job.gpus);
  const double z = (1.0 / speed - 1.0) / *cv;  // E[max of N], as slowest_of_n_speed took it
  job.device = slowest_of_n_rates(job.device, speed);
  job.assumptions.push_back(
      fmt::format("the slowest of {} GPUs sets the pace: per-GPU speed spread {:.1f}% (hardware.gpu_speed_cv), the "
                  "expected slowest {:.2f} standard deviations below the typical GPU, so GEMMs and attention run at "
                  "{:.1f}% of its rates (1 / (1 + cv x {:.2f})); memory-bound work unchanged",
                  job.gpus, 100 * *cv, z, 100 * speed, z));
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
    job.assumptions.push_back(
        fmt::format("{}: {} node(s) at {:.0f}% compute and {:.0f}% link speed, simulated as "
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
      job.assumptions.push_back(
          fmt::format("compute runs {:.0f}% slower while a collective runs: {} (a GEMM beside "
                      "an all-reduce)",
                      100 * *slowdown, calibration_source(s.hardware.calibration_file)));
      return;
    }
  job.assumptions.push_back(
      fmt::format("compute runs {:.0f}% slower while a collective runs: {} NCCL channels "
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

}  // namespace

std::string_view name(RateSource s) {
  switch (s) {
    case RateSource::catalog:
      return "catalog";
    case RateSource::calibration:
      return "calibration";
  }
  return "?";
}

double send_latency_s(const CommFabric& link) {
  const auto phases = collective_phases(Collective::all_gather, 1.0, link, "auto");
  return phases.empty() ? 0.0 : phases.front().latency_s;
}

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
      assumptions.push_back(
          fmt::format("{:.1f} µs per kernel launch, {:.1f} / {:.1f} µs per eager op forward / "
                      "backward: {}",
                      1e6 * device.launch_s, 1e6 * device.eager_forward_op_s, 1e6 * device.eager_backward_op_s,
                      device.launch_source));
    assumptions.push_back(
        fmt::format("calibration {} (measured on {}, {}): GEMM ceiling, memory bandwidth "
                    "and measured collectives replace the catalog's",
                    calibration_file, cal->machine.hostname, cal->machine.date_utc));
  }
  return device;
}

namespace {

/// The kernels the scenario runs, each default printed under Assumptions.
KernelChoice resolve_kernels(const Scenario& s, const GpuSpec& gpu, std::vector<std::string>& assumptions) {
  const TrainingSpec& tr = s.training;
  KernelChoice k;
  k.causal = s.model.kind == ModelKind::decoder;
  k.tp = s.strategy.layout.tp;
  k.sp = s.strategy.layout.sp;
  k.cp = s.strategy.layout.cp;
  if (!tr.flash_attention) {
    k.attention = AttentionKernel::unfused;
  } else if (tr.attention_kernel) {
    k.attention = *tr.attention_kernel;
  } else {
    k.attention = default_flash_kernel(gpu);
    assumptions.push_back(
        fmt::format("attention kernel {} (the flash-class kernel PyTorch runs first on the {}; name another "
                    "with training.attention_kernel)",
                    name(k.attention), gpu.name));
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
  k.graphs = tr.cuda_graphs;
  k.moe_dispatcher = s.strategy.moe_dispatcher;
  if (tr.cuda_graphs.full_iteration)
    assumptions.push_back("CUDA graphs capture the full iteration: the step replays with no CPU cost per op");
  else if (tr.cuda_graphs.any())
    assumptions.push_back(fmt::format("CUDA graphs capture {}: each captured block costs the CPU one launch per pass",
                                      cuda_graphs_text(tr.cuda_graphs)));
  k.autocast = tr.autocast;
  if (k.autocast)
    assumptions.push_back(
        "mixed precision: autocast over fp32 parameters (fp32 weights, gradients and DDP buckets, the residual "
        "stream in fp32, each GEMM weight cast to 16 bits every micro-step)");
  if (k.launch_blocking)
    assumptions.push_back("launch_blocking: CUDA_LAUNCH_BLOCKING=1, each op's CPU dispatch adds to its kernel's time");
  return k;
}

void describe_rates(const Job& job, std::vector<std::string>& assumptions) {
  const DeviceRates& d = job.device;
  assumptions.push_back(
      fmt::format("GEMMs against a ceiling of {:.0f} TFLOP/s {} ({:.0f}% of the {:.0f} TFLOP/s "
                  "peak) on {} SMs, tile and wave quantized: {}",
                  d.gemm_ceiling_tflops, name(job.dtype), 100 * d.gemm_ceiling_tflops / d.peak_tflops, d.peak_tflops,
                  d.sm_count, d.gemm_source));
  if (job.kernels.attention != AttentionKernel::unfused) assumptions.push_back("attention: " + d.attention.source);
  const std::vector<std::string> misaligned =
      misaligned_gemms(job.scenario.model, job.scenario.training.precision, job.kernels, d);
  if (!misaligned.empty())
    assumptions.push_back(fmt::format(
        "GEMMs {} at {:.0f} TFLOP/s: their rows are not 16-byte aligned (GPT-2's vocabulary of 50,257, say), so "
        "eager cuBLAS runs them without Hopper's tensor memory copies ({}); torch.compile and Megatron pad them",
        fmt::join(misaligned, ", "), d.misaligned_gemm_tflops, d.misaligned_gemm_source));
  assumptions.push_back(
      fmt::format("memory-bound kernels reach {:.0f}% of {:.0f} GB/s ({}); {:.0f} µs per kernel "
                  "launch",
                  100 * d.memory_efficiency, d.memory_bw_GBps, d.memory_source, 1e6 * d.launch_s));
}

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
  if (job.layout().tp == 1 && job.layout().pp == 1 && job.layout().cp == 1) {
    job.fabric = topo.fabric(job.nodes, job.gpus_per_node);
    return;
  }
  const ParallelLayout& layout = job.layout();
  const int gpn = job.gpus_per_node;
  // Gradients reduce over the DP x CP ranks of a TP rank and stage.
  const ParallelLayout gradients = gradient_group_layout(layout);
  job.fabric =
      group_fabric(topo, group_placement(gradients, GroupKind::dp, gpn), node_stride(gradients, GroupKind::dp, gpn));
  if (job.layout().cp > 1) {
    const GroupPlacement cp = group_placement(layout, GroupKind::cp, gpn);
    job.cp_fabric = group_fabric(topo, cp, node_stride(layout, GroupKind::cp, gpn));
    // A ring step's slowest hop: NVLink when the group sits in one node, else the NICs.
    job.cp_hop_fabric = cp.nodes_spanned == 1 ? topo.fabric(1, 2)
                                              : group_fabric(topo, GroupPlacement{2, 1, 2, cp.groups_sharing_a_node});
    job.assumptions.push_back(
        fmt::format("context parallelism cp {} ({} exchange of K/V per layer), gradients "
                    "reduced over the {} DP x CP ranks",
                    job.layout().cp, name(job.scenario.strategy.cp_comm), job.layout().dp * job.layout().cp));
  }
  if (job.layout().tp > 1)
    job.tp_fabric = job.layout().tp <= gpn ? topo.fabric(1, job.layout().tp)
                                           : group_fabric(topo, group_placement(layout, GroupKind::tp, gpn));
  if (job.layout().pp > 1) {
    const GroupPlacement pp = group_placement(layout, GroupKind::pp, gpn);
    job.pp_fabric = pp.ranks_per_node >= 2 ? topo.fabric(1, 2)
                                           : group_fabric(topo, GroupPlacement{2, 1, 2, pp.groups_sharing_a_node},
                                                          node_stride(layout, GroupKind::pp, gpn));
    job.pp_send_latency_s = send_latency_s(job.pp_fabric);
  }
  job.assumptions.push_back(fmt::format(
      "parallel layout tp {} x dp {} x pp {} in Megatron order (TP fastest, then data, then pipeline stages); {}",
      job.layout().tp, job.layout().dp, job.layout().pp,
      job.scenario.strategy.tp_comm_overlap
          ? "tp_comm_overlap: each layer's TP collectives run beside the GEMMs they feed or drain (Transformer "
            "Engine's userbuffers: ring exchange on the copy engines, pipelined and bulk reduce-scatters and "
            "re-gathers on 16 SMs) and cost what those leave exposed; the head's block"
      : job.scenario.strategy.tp_backward_overlap
          ? "tp_backward_overlap: the QKV and MLP-up backward's TP collectives run beside their input- and "
            "weight-gradient GEMMs (Megatron's LinearWithGradAccumulationAndAsyncCommunication), the others block "
            "the layers"
          : "TP collectives block the layers"));
  if (job.scenario.strategy.sp_keep_gathered)
    job.assumptions.push_back(
        "sp_keep_gathered: the QKV and MLP-up GEMMs keep their all-gathered input for the weight gradient (nanotron's "
        "column_linear without async communication): those inputs stored whole, no re-gather in the backward");
  if (job.layout().tp > gpn)
    job.assumptions.push_back(
        fmt::format("tensor-parallel groups span {} nodes: their collectives run NCCL's ring "
                    "(or tree) over NVLink, then the NICs",
                    job.layout().tp / gpn));
  if (job.layout().pp > 1) {
    const StrategySpec& st = job.scenario.strategy;
    std::string layers;
    for (int n : split_layers_per_chunk(job.scenario.model, job.layout().pp, job.layout().vpp, st.pp_split))
      layers += (layers.empty() ? "" : ", ") + std::to_string(n);
    job.assumptions.push_back(fmt::format("pipeline split {}: layers per chunk {}{}", name(st.pp_split), layers,
                                          st.pp_split == StageSplit::balanced
                                              ? fmt::format(" (the LM head counted as {:.1f} layers of GEMM work)",
                                                            head_cost_in_layers(job.scenario.model))
                                              : ""));
    job.assumptions.push_back(
        st.overlap_grad_reduce ? "overlap_grad_reduce: each stage reduces its gradients in buckets during its last "
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
  job.kernels.ep = job.layout().ep;
  job.kernels.moe_imbalance = st.moe_imbalance;
  const ParallelLayout experts = expert_parallel_layout(job.layout(), job.layout().ep);
  if (job.layout().ep > 1)
    job.ep_fabric = group_fabric(topo, group_placement(experts, GroupKind::tp, job.gpus_per_node));
  job.assumptions.push_back(fmt::format(
      "MoE: {} of {} layers route to {} experts (top {}{}); expert parallelism ep {} ({} experts per GPU{}, dispatch "
      "and combine all-to-alls on the compute stream, spread evenly over the layers), {}",
      moe_layer_count(model.layers, *model.moe), model.layers, model.moe->experts, model.moe->top_k,
      model.moe->shared_experts > 0 ? fmt::format(", {} shared", model.moe->shared_experts) : "", job.layout().ep,
      model.moe->experts / job.layout().ep,
      job.layout().tp > 1
          ? fmt::format(", whole (expert TP 1); each TP rank routes its 1/{} of the sequence and the "
                        "EP groups span the TP ranks (Megatron-Core's parallel folding); no MLP TP "
                        "collectives in the MoE layers{}",
                        job.layout().tp, model.moe->shared_experts > 0 ? " but the shared experts'" : "")
          : "",
      experts.dp == 1 ? std::string("each expert on one rank per stage: no expert gradient reduction")
                      : fmt::format("expert gradients reduced over the {} expert-data-parallel ranks", experts.dp)));
  job.assumptions.push_back(
      fmt::format("moe_imbalance {:g}: the busiest EP rank's routed tokens over the mean{}", st.moe_imbalance,
                  st.moe_imbalance == 1.0 ? " (default: routing balanced, as auxiliary-loss-free "
                                            "balancing aims for; an assumption, not a measurement)"
                                          : ""));
  job.assumptions.push_back(
      st.moe_shared_expert_overlap ? "moe_shared_expert_overlap: the all-to-alls run beside the shared experts' GEMMs "
                                     "and cost what those leave exposed"
      : st.moe_a2a_overlap         ? "moe_a2a_overlap: each micro-batch's all-to-alls run beside another "
                                     "micro-batch's layers (combined 1F1B) and cost what those leave exposed"
                                   : "moe_shared_expert_overlap and moe_a2a_overlap off (default): the "
                                     "all-to-alls block the layers");
  job.assumptions.push_back(fmt::format(
      "moe_dispatcher {}{}: the CPU dispatches each MoE layer's router, dispatcher and combine op by op and "
      "launches each local expert's GEMMs, as Megatron-Core does (model/moe.hpp moe_host_ops)",
      name(st.moe_dispatcher), st.moe_dispatcher == MoeDispatcher::alltoall ? " (default)" : ""));
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
                                {"tensor-parallel", &job.tp_fabric},
                                {"pipeline", &job.pp_fabric}})
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
  job.scenario.strategy.layout.dp = data_parallel_degree(s);  // whole: check_predictable
  resolve_parallel_fabrics(job, topo);
  resolve_host(job, topo.box());
  describe_spine(job, topo.cluster());
  // Named by the whole cluster's network (a DP group of one node has no inter level).
  job.hardware = job.nodes > 1 ? fmt::format("{} x {} ({})", job.nodes, topo.box().name,
                                             topo.fabric(job.nodes, job.gpus_per_node).inter->kind)
                               : topo.box().name;

  const TrainingSpec& tr = s.training;
  job.dtype = gemm_dtype(tr.precision);
  job.kernels = resolve_kernels(s, job.gpu, job.assumptions);
  resolve_expert_parallel(job, topo);
  job.device = device_rates(job.gpu, job.dtype, job.kernels.attention, s.hardware.calibration.get(),
                            s.hardware.calibration_file, job.provenance, job.assumptions);
  if (tr.in_step_rates) job.device = in_step_rates(job.device, tr.in_step ? *tr.in_step : in_step_fractions());
  resolve_slowest_gpu(job, s);
  describe_rates(job, job.assumptions);
  resolve_buckets(job);
  resolve_groups(job);
  job.measured_collectives = measured_collectives(s.hardware.calibration.get());
  resolve_comm_slowdown(job, s);
  return job;
}

}  // namespace stepcast
