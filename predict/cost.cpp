/// \file
/// Stage cost (stages.hpp): every cost of one step, from the resolved job: FLOPs, bytes,
/// memory, micro-step and layer times, context- and expert-parallel exchanges, offload and
/// gradient accumulation. The later stages receive these times; they compute none.
#include "predict/stages.hpp"

#include "model/moe.hpp"
#include "model/parallel.hpp"

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

bool zero12(Strategy st) { return st == Strategy::zero1 || st == Strategy::zero2; }

FlopsOptions flops_options(const TrainingSpec& tr) {
  FlopsOptions opts;
  opts.recompute = tr.recompute;
  opts.recompute_modules = tr.recompute_modules;
  opts.causal_halving = tr.flash_attention;
  opts.lora = tr.lora ? &*tr.lora : nullptr;
  return opts;
}

// ---- cost -------------------------------------------------------------------------------

/// Optimizer step of the local shard of the trainable parameters.
double optimizer_step_s(const Job& job, double trainable) {
  const TrainingSpec& tr = job.scenario.training;
  const Strategy st = job.scenario.strategy.layout.dp_sharding;
  const double optimizer_shards =
      job.layout().tp * (!shards_optimizer(st)               ? 1.0
                         : st == Strategy::fsdp_hybrid_shard ? std::max(1, job.gpus_per_node / job.layout().tp)
                                                             : static_cast<double>(job.layout().dp) * job.layout().cp);
  if (job.scenario.strategy.offload != OffloadKind::none) return 0.0;  // the host runs it (cost_offload)
  const bool fp32_grads = tr.optimizer == OptimizerKind::adam_deepspeed_18;
  // Under autocast the optimizer steps the fp32 parameters themselves, as in fp32 training.
  const Precision stepped = tr.autocast ? Precision::fp32 : tr.precision;
  return optimizer_time_s(trainable / optimizer_shards,
                          optimizer_bytes_per_param(stepped, fp32_grads, tr.optimizer == OptimizerKind::sgd_momentum),
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
  c.model_flops_per_step = mf.model * m * job.layout().dp;
  c.hardware_flops_per_step = mf.hardware() * m * job.layout().dp;
  c.causal_model_flops_per_step = (mf.forward + mf.backward) * m * job.layout().dp;
  c.hfu_flops_per_step = mf.hfu_flops() * m * job.layout().dp;  // MFU's convention plus recompute
}

/// A MoE layer's bytes (the mean over layers): a GPU holds 1/ep of the routed experts, whole
/// (expert TP 1), and 1/t of the rest. Their gradients reduce over the expert-data-parallel
/// group of n_e = t·dp·cp/ep ranks, dense ones over the n = dp·cp ranks; the lowering reduces
/// a layer's gradients in one bucket stream over the DP fabric, so the experts' bytes there
/// are scaled by the ratio of a ring's per-rank traffic in the two groups,
/// ((n_e - 1)/n_e) / ((n - 1)/n): 0 when each expert lives on one rank per stage (n_e = 1).
/// The expert-DP group's own fabric is not modelled, nor its reduction when n = 1 (folded
/// over TP ranks alone, the step has no DP reduction to carry it).
void moe_layer_bytes(const Job& job, double layer_params, Costs& c) {
  const TransformerSpec& model = job.scenario.model;
  const double wb = working_bytes(job.scenario.training.precision);
  const double t = job.layout().tp;
  const double routed = routed_expert_parameters(model) / static_cast<double>(model.layers);
  const double local = routed / job.layout().ep;
  const double n = static_cast<double>(job.layout().dp) * job.layout().cp;
  const double n_e = t * n / job.layout().ep;
  const double ratio = n_e > 1 && n > 1 ? ((n_e - 1) / n_e) / ((n - 1) / n) : 0.0;
  c.layer_param_bytes = ((layer_params - routed) / t + local) * wb;
  c.layer_grad_bytes = ((layer_params - routed) / t + local * ratio) * wb;
}

/// Bytes of weights and trainable gradients per layer, root unit and untied LM head.
void cost_bytes(const Job& job, Costs& c) {
  const TransformerSpec& model = job.scenario.model;
  const TrainingSpec& tr = job.scenario.training;
  const double wb = working_bytes(tr.precision);
  const ParameterBreakdown pb = parameter_breakdown(model);
  const double layer_params = static_cast<double>(pb.per_layer);
  const double root_params = c.parameters - layer_params * static_cast<double>(model.layers);
  const double t = job.layout().tp;  // a TP rank holds 1/t of every matrix and of the vocabulary
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
  // One stage's gradients (a bucket holds no more than them).
  const double grad_bytes = c.trainable * working_bytes(tr.precision) / job.layout().tp / job.layout().pp;
  MemoryInputs mem;
  mem.model = &s.model;
  mem.micro_batch = tr.micro_batch;
  mem.seq_len = tr.seq_len;
  mem.precision = tr.precision;
  mem.optimizer = tr.optimizer;
  mem.recompute = tr.recompute;
  mem.recompute_modules = tr.recompute_modules;
  mem.flash_attention = tr.flash_attention;
  mem.lora = tr.lora ? &*tr.lora : nullptr;
  mem.strategy = s.strategy.layout.dp_sharding;
  mem.gpus = static_cast<std::int64_t>(job.layout().dp) * job.layout().cp;  // the gradient group: DP x CP ranks
  mem.gpus_per_node = std::max(1, job.gpus_per_node / job.layout().tp);  // DP ranks per node (1 with TP across nodes)
  mem.cp = job.layout().cp;
  mem.ep = job.layout().ep;
  mem.moe_capacity_factor = s.strategy.moe_capacity_factor;
  mem.offload = s.strategy.offload;
  mem.gpus_per_host = job.gpus_per_node;
  mem.host_capacity_bytes = job.host_memory_bytes;
  mem.tp = job.layout().tp;
  mem.sp = s.strategy.layout.sp;
  mem.sp_keep_gathered = s.strategy.sp_keep_gathered;
  mem.bucket_bytes = zero12(s.strategy.layout.dp_sharding) || s.strategy.layout.dp_sharding == Strategy::zero3
                         ? std::min(job.bucket_bytes, grad_bytes)
                         : job.bucket_bytes;
  mem.prefetch_layers = s.strategy.prefetch_layers;
  mem.fp32_gradients = s.strategy.reduce_fp32;
  mem.autocast = tr.autocast;
  // PyTorch AMP under DDP: set_to_none gradients, created by each step's one backward.
  mem.gradients_created_by_backward = tr.autocast && tr.grad_accum == 1;
  mem.fused_loss = tr.fused_loss.value_or(false);
  mem.loss_fp32_copies = tr.loss_fp32_copies;
  mem.fused_swiglu = job.kernels.profile == KernelProfile::fused;
  // Transformer Engine keeps the cast it made of each GEMM input (gemm_cast_bytes > 0: fp8, fp4).
  mem.gemm_input_bytes = mem.fused_swiglu && gemm_cast_bytes(tr.precision) > 0 ? gemm_operand_bytes(tr.precision) : 0.0;
  mem.capacity_bytes = job.gpu.memory_bytes;
  mem.cuda_context_bytes = kCudaContextBytes;
  if (const ParallelLayout& l = job.layout(); l.pp > 1) {
    mem.pp = l.pp;
    mem.in_flight = in_flight_microbatches(l.schedule, 0, l.pp, static_cast<int>(tr.grad_accum), l.vpp);
    const std::vector<int> chunks = split_layers_per_chunk(s.model, l.pp, l.vpp, s.strategy.pp_split);
    mem.stage_layers.assign(static_cast<std::size_t>(l.pp), 0);
    for (std::size_t k = 0; k < chunks.size(); ++k) mem.stage_layers[k % static_cast<std::size_t>(l.pp)] += chunks[k];
    for (int i = 0; i < l.pp; ++i)
      mem.stage_in_flight.push_back(
          in_flight_microbatches(l.schedule, i, l.pp, static_cast<int>(tr.grad_accum), l.vpp));
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
  c.activation_bytes_per_layer =
      c.memory.activation_layers > 0 ? term("activations") / c.memory.activation_layers : 0.0;
  c.logits_bytes = term("logits");
  c.static_memory_bytes =
      c.memory.total_bytes - term("activations") - term("logits") - term("gathered_params") - term("fragmentation");
}

}  // namespace

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

namespace {

/// The layers of stage 0 (all its chunks), the report's representative rank under a pipeline.
double first_pipeline_stage_layers(const Job& job) {
  const StrategySpec& st = job.scenario.strategy;
  const std::vector<int> chunks =
      split_layers_per_chunk(job.scenario.model, job.layout().pp, job.layout().vpp, st.pp_split);
  double layers0 = 0;
  for (std::size_t k = 0; k < chunks.size(); k += static_cast<std::size_t>(job.layout().pp)) layers0 += chunks[k];
  return layers0;
}

/// Under a pipeline the report's compute parts are those of stage 0's GPU (the report's
/// representative rank): its layers (layers_per_stage), no LM head; the plan keeps c.micro
/// whole. The optimizer and the kernel split scale by the same share of the compute.
void first_pipeline_stage_share(const Job& job, Costs& c) {
  const double m = static_cast<double>(job.scenario.training.grad_accum);
  const double layers0 = first_pipeline_stage_layers(job);
  const double whole = c.forward_s + c.backward_s + c.recompute_s;
  c.forward_s = m * layers0 * c.per_layer.forward_s;
  c.backward_s = m * layers0 * c.per_layer.backward_s;
  c.recompute_s = m * layers0 * c.per_layer.recompute_s;
  const double share = whole > 0 ? (c.forward_s + c.backward_s + c.recompute_s) / whole : 1.0 / job.layout().pp;
  for (double* v :
       {&c.optimizer_s, &c.kernels.gemm_s, &c.kernels.attention_s, &c.kernels.memory_s, &c.kernels.launch_s})
    *v *= share;
}

/// The context-parallel K/V exchange of one layer per micro-batch (model/parallel.hpp):
/// ring, one op per pass whose phase is the part the attention chunks do not hide
/// (cp_ring_exposed_s, a ring step = the hop's latency + bytes / its rate); all_gather,
/// the collectives on the CP group, exposed.
void cost_context_parallel(const Job& job, Costs& c) {
  if (job.layout().cp == 1) return;
  const TrainingSpec& tr = job.scenario.training;
  const TransformerSpec& model = job.scenario.model;
  const std::int64_t tokens = tr.micro_batch * tr.seq_len;
  const double w = working_bytes(tr.precision);
  const std::string algorithm = job.scenario.strategy.algorithm;
  if (job.scenario.strategy.cp_comm == CpCommKind::all_gather) {
    const TpLayerComm comm = cp_all_gather_comm(model, tokens, w, job.layout().cp, job.layout().tp);
    auto ops = [&](const std::vector<TpCollective>& list, const char* pass) {
      std::vector<sim::LayerCollective> out;
      for (const TpCollective& t : list)
        out.push_back({fmt::format("context-parallel K/V {} ({})", name(t.op), pass), t.op, t.bytes, job.layout().cp,
                       collective_phases(t.op, t.bytes, job.cp_fabric, algorithm)});
      return out;
    };
    c.cp_forward = ops(comm.forward, "forward");
    c.cp_backward = ops(comm.backward, "backward");
    return;
  }
  const CpLayerComm ring = cp_layer_comm(model, tokens, w, job.layout().cp, job.layout().tp);
  const FabricLevel& hop = job.cp_hop_fabric.inter ? *job.cp_hop_fabric.inter : job.cp_hop_fabric.intra;
  const auto probe = collective_phases(Collective::all_gather, 1.0, job.cp_hop_fabric, "auto");
  const double latency_s = probe.empty() ? 0.0 : probe.front().latency_s;
  auto op = [&](double step_bytes, double attention_s, const char* pass) {
    const double step_s = latency_s + step_bytes / (hop.bw_GBps * 1e9);
    CollectivePhase ph;
    ph.collective = Collective::all_gather;
    ph.latency_s = cp_ring_exposed_s(ring.steps, step_s, attention_s, job.layout().cp);  // no bytes left to move
    ph.algbw_GBps = hop.bw_GBps;
    ph.algorithm = "ring attention (exposed part)";
    ph.protocol = "p2p";
    return sim::LayerCollective{fmt::format("context-parallel K/V ring ({}, exposed part)", pass),
                                Collective::all_gather,
                                ring.steps * step_bytes,
                                job.layout().cp,
                                {ph}};
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
  const double elem = gemm_operand_bytes(pr);
  const DeviceRates& d = job.device;
  auto t = [&](std::int64_t m, std::int64_t n, std::int64_t k) {
    return gemm_time_s(m, n, k, 1, elem, d.gemm_ceiling_tflops, d.sm_count, d.achieved_memory_GBps());
  };
  double fwd = 0, bwd = 0;
  for (const GroupedGemm& gg : moe_layer_gemms(model, *model.moe, tokens, job.layout().ep, job.kernels.moe_imbalance)) {
    const GemmShape& g = gg.shape;
    if (g.name != "shared_up" && g.name != "shared_down") continue;
    fwd += g.count_per_layer * t(g.m, g.n, g.k);
    bwd += g.count_per_layer * (t(g.m, g.k, g.n) + t(g.n, g.k, g.m));
  }
  return {fwd, bwd};
}

/// `op` as the part of it that work beside it leaves exposed: one latency-only phase of
/// `exposed_s` (no bytes left to move), as the context-parallel ring's exposed part.
void expose_only(sim::LayerCollective& op, double exposed_s, const char* beside) {
  CollectivePhase ph = op.phases.front();
  ph.latency_s = exposed_s;
  ph.bytes = 0;
  ph.algorithm = fmt::format("p2p (exposed part beside {})", beside);
  op.phases = {ph};
  op.purpose += " (exposed part)";
}

/// The all-to-alls of one pass with `budget_s` of shared-expert work beside them, in order:
/// each costs what is left of it after the budget still unspent, so a pass exposes
/// max(0, all-to-alls - shared experts).
void hide_behind(std::vector<sim::LayerCollective>& ops, double budget_s) {
  for (sim::LayerCollective& op : ops) {
    const double t = op.time_s();
    expose_only(op, std::max(0.0, t - budget_s), "the shared experts");
    budget_s = std::max(0.0, budget_s - t);
  }
}

/// Under moe_a2a_overlap each layer of a micro-batch's forward runs beside a layer of
/// another's backward (model/moe.hpp combined_layer_pair_s): of m micro-batches per step one
/// forward (the first) and one backward (the last) have no partner and expose their
/// all-to-alls whole, so per micro-step the four all-to-alls of time X expose
/// X/m + (m-1)/m · e, shared among them by their times, where a pair exposes what its
/// streams leave, pair - compute, and while the rest of X runs beside the compute its kernels
/// hold a share s of the SMs (Job::comm_slowdown, as a TP collective in bulk overlap):
/// e = (pair - compute) + s · (X - (pair - compute)). The layer's
/// split: the MoE MLP block (MicroStepTimes::layer_moe_mlp_*_s; its backward half input and
/// half weight gradient, the GEMMs' two halves) and the rest. m = 1: all exposed.
void overlap_with_other_micro_batch(Costs& c, double m, double sm_share) {
  CombinedLayerPair p;
  p.mlp_fwd_s = c.micro.layer_moe_mlp_forward_s;
  p.mlp_bwd_dgrad_s = c.micro.layer_moe_mlp_backward_s / 2;
  p.mlp_bwd_wgrad_s = c.micro.layer_moe_mlp_backward_s / 2;
  p.attn_fwd_s = std::max(0.0, c.per_layer.forward_s - p.mlp_fwd_s);
  p.attn_bwd_s = std::max(0.0, c.per_layer.backward_s + c.per_layer.recompute_s - c.micro.layer_moe_mlp_backward_s);
  p.dispatch_fwd_s = c.ep_forward[0].time_s();
  p.combine_fwd_s = c.ep_forward[1].time_s();
  p.combine_bwd_s = c.ep_backward[0].time_s();
  p.dispatch_bwd_s = c.ep_backward[1].time_s();
  const double all = p.dispatch_fwd_s + p.combine_fwd_s + p.combine_bwd_s + p.dispatch_bwd_s;
  if (!(all > 0)) return;
  const double compute = p.attn_fwd_s + p.attn_bwd_s + p.mlp_fwd_s + c.micro.layer_moe_mlp_backward_s;
  const double paired = m > 1 ? (m - 1) / m : 0.0;
  const double left = std::max(0.0, combined_layer_pair_s(p) - compute);
  const double exposed = (1 - paired) * all + paired * (left + sm_share * std::max(0.0, all - left));
  for (auto* ops : {&c.ep_forward, &c.ep_backward})
    for (sim::LayerCollective& op : *ops) expose_only(op, exposed * op.time_s() / all, "the other micro-batch's layer");
}

void cost_expert_parallel(const Job& job, Costs& c) {
  const TransformerSpec& model = job.scenario.model;
  if (!model.moe || job.layout().ep == 1) return;
  const TrainingSpec& tr = job.scenario.training;
  const std::int64_t rows = tr.micro_batch * (tr.seq_len / job.layout().cp);
  const double tokens = static_cast<double>(moe_tokens_per_rank(rows, job.layout().tp));
  const double bytes = moe_layer_share(model) *
                       moe_all_to_all_bytes(model, *model.moe, tokens, working_bytes(tr.precision), job.layout().ep);
  auto op = [&](const char* what) {
    return sim::LayerCollective{fmt::format("expert-parallel {} all-to-all", what),
                                Collective::all_to_all,
                                bytes,
                                job.layout().ep,
                                collective_phases(Collective::all_to_all, bytes, job.ep_fabric),
                                "ep"};
  };
  c.ep_forward = {op("dispatch"), op("combine")};
  c.ep_backward = {op("combine gradient"), op("dispatch gradient")};
  if (job.scenario.strategy.moe_shared_expert_overlap) {  // the layers' mean, as the bytes
    const auto [fwd, bwd] = shared_expert_s(job, static_cast<std::int64_t>(tokens));
    hide_behind(c.ep_forward, moe_layer_share(model) * fwd);
    hide_behind(c.ep_backward, moe_layer_share(model) * bwd);
  }
  if (job.scenario.strategy.moe_a2a_overlap)
    overlap_with_other_micro_batch(c, static_cast<double>(tr.grad_accum), job.comm_slowdown);
}

/// CPU offload per optimizer step (model/offload.hpp offload_times): one GPU's partition of
/// the trainable parameters, its micro-step's forward and backward to hide copies behind.
void cost_offload(const Job& job, Costs& c) {
  const StrategySpec& st = job.scenario.strategy;
  if (st.offload == OffloadKind::none) return;
  const TrainingSpec& tr = job.scenario.training;
  OffloadInputs in;
  in.kind = st.offload;
  in.strategy = st.layout.dp_sharding;
  in.local_params =
      c.trainable / (static_cast<double>(job.layout().tp) * job.layout().pp * job.layout().dp * job.layout().cp);
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
  const double shard = shards_gradients(job.scenario.strategy.layout.dp_sharding)
                           ? static_cast<double>(job.layout().dp) * job.layout().cp
                           : 1.0;
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
  c.grad_accumulation_s = job.layout().pp > 1 ? layer_s * first_pipeline_stage_layers(job) : micro_s;
}

/// One layer's GEMMs on one GPU under tensor parallelism (model/parallel.hpp
/// tp_layer_gemms), each alone through gemm_time_s at the job's device rates: forward
/// (m x k)·(k x n), input gradient (m x n)·(n x k), weight gradient (n x m)·(m x k).
TpLayerGemmTimes tp_gemm_times(const Job& job, std::int64_t tokens) {
  const Precision pr = job.scenario.training.precision;
  const double elem = gemm_operand_bytes(pr);
  const DeviceRates& d = job.device;
  auto t = [&](std::int64_t m, std::int64_t n, std::int64_t k, int count) {
    return count * gemm_time_s(m, n, k, 1, elem, d.gemm_ceiling_tflops, d.sm_count, d.achieved_memory_GBps());
  };
  TpLayerGemmTimes out;
  for (const GemmShape& g : tp_layer_gemms(job.scenario.model, tokens, job.layout().tp)) {
    const double fprop = t(g.m, g.n, g.k, g.count_per_layer), dgrad = t(g.m, g.k, g.n, g.count_per_layer),
                 wgrad = t(g.n, g.k, g.m, g.count_per_layer);
    if (g.name == "qkv" || g.name == "q" || g.name == "q_b" || g.name == "kv_b")  // MLA: the up projections
      out.qkv_fprop += fprop, out.qkv_dgrad += dgrad, out.qkv_wgrad += wgrad;
    else if (g.name == "attn_out")
      out.proj_fprop = fprop, out.proj_dgrad = dgrad;
    else if (g.name == "mlp_up")
      out.fc1_fprop = fprop, out.fc1_dgrad = dgrad, out.fc1_wgrad = wgrad;
    else if (g.name == "mlp_down")
      out.fc2_fprop = fprop, out.fc2_dgrad = dgrad;
  }
  return out;
}

/// Tensor parallelism per micro-batch: each layer's TP collectives (forward, backward; the
/// full recompute repeats the forward's) and the vocab-parallel head's, on this GPU's
/// tokens (model/parallel.hpp): blocking, beside the GEMMs they overlap with
/// (tp_comm_overlap), or asynchronous in the backward (tp_backward_overlap); the MLP's only
/// in the layers whose MLP TP splits (tp_mlp_layer_share), attention's input ones at MLA's
/// latent width (tp_attention_input_share).
void cost_tensor_parallel(const Job& job, Costs& c) {
  if (job.layout().tp == 1) return;
  const TrainingSpec& tr = job.scenario.training;
  const StrategySpec& st = job.scenario.strategy;
  const std::int64_t tokens = tr.micro_batch * (tr.seq_len / job.layout().cp);  // this GPU's tokens
  const double w = working_bytes(tr.precision);
  const std::int64_t h = job.scenario.model.hidden;
  c.tp_layer =
      st.tp_comm_overlap ? tp_layer_comm_overlapped(tokens, h, w, job.layout().tp, tp_gemm_times(job, tokens),
                                                    job.device.sm_count, Recompute::none)
      : st.tp_backward_overlap
          ? tp_layer_comm_async(tokens, h, w, job.layout().tp, job.layout().sp, tp_gemm_times(job, tokens),
                                job.comm_slowdown, Recompute::none)
          : tp_layer_comm(tokens, h, w, job.layout().tp, job.layout().sp, Recompute::none, st.sp_keep_gathered);
  scale_tp_collectives(c.tp_layer, tp_mlp_layer_share(job.scenario.model),
                       tp_attention_input_share(job.scenario.model));
  c.tp_head = tp_embedding_head_comm(tokens, h, w, job.layout().tp, job.layout().sp);
}

/// Pipeline parallelism: the bytes of one send between adjacent stages, b·s·h·w (/ t under SP);
/// its latency is the link's (Job::pp_send_latency_s).
void cost_pipeline_sends(const Job& job, Costs& c) {
  if (job.layout().pp == 1) return;
  const TrainingSpec& tr = job.scenario.training;
  c.pp_send_bytes = pipeline_p2p_bytes(tr.micro_batch * (tr.seq_len / job.layout().cp), job.scenario.model.hidden,
                                       working_bytes(tr.precision), job.layout().tp, job.scenario.strategy.layout.sp);
}

}  // namespace

MicroStepTimes micro_step_times(const Job& job) {
  const TrainingSpec& tr = job.scenario.training;
  return micro_step_times(job.scenario.model, tr.micro_batch, tr.seq_len, tr.precision, flops_options(tr), job.kernels,
                          job.device);
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
  // 1/(t·dp·cp) of them: E/ep experts over t·dp·cp/ep expert-DP ranks; the dense part 1/(dp·cp)
  // of its 1/t, which optimizer_step_s divides).
  const double routed = routed_expert_parameters(model);
  const double t = job.layout().tp;
  c.optimizer_s = optimizer_step_s(job, shards_optimizer(job.scenario.strategy.layout.dp_sharding)
                                            ? c.trainable
                                            : c.trainable - routed + routed * t / job.layout().ep);
  cost_bytes(job, c);
  cost_grad_accumulation(job, c);  // before the stage share: it adds to every layer's backward
  if (job.layout().pp > 1) first_pipeline_stage_share(job, c);
  cost_offload(job, c);
  c.compute_s = c.forward_s + c.backward_s + c.recompute_s + c.optimizer_s;
  cost_flops(job, c);
  cost_memory(job, c);
  cost_context_parallel(job, c);
  cost_expert_parallel(job, c);
  cost_tensor_parallel(job, c);
  cost_pipeline_sends(job, c);
  return c;
}

}  // namespace stepcast
