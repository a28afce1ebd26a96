/// \file
/// Stages lower, simulate and bound (stages.hpp): the job and its costs as the simulator's
/// CostedStep, lowered to a step graph, simulated, and bounded in closed form.
#include "predict/stages.hpp"

#include "model/parallel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>

namespace stepcast {

namespace {

/// Tensor parallelism in the costed step: the TP group's fabric and the costed collectives of each
/// layer (forward, backward, the full recompute's repeat of the forward's) and of the head.
void fill_tensor_parallel(const Job& job, const Costs& c, sim::CostedStep& plan) {
  if (job.layout().tp == 1) return;
  plan.tp_fabric = job.tp_fabric;
  plan.tp_forward = c.tp_layer.forward;
  plan.tp_backward = c.tp_layer.backward;
  if (job.scenario.training.recompute == Recompute::full) plan.tp_recompute = c.tp_layer.forward;
  plan.tp_head_forward = c.tp_head.forward;
  plan.tp_head_backward = c.tp_head.backward;
}

/// Pipeline parallelism in the costed step: stages, chunks, schedule, the costed send between stages,
/// the stage link, and each stage's static memory. The lowering takes the whole model's
/// times and gives each stage its share.
void fill_pipeline(const Job& job, const Costs& c, sim::CostedStep& plan) {
  if (job.layout().pp == 1) return;
  const StrategySpec& st = job.scenario.strategy;
  plan.chunk_layers = split_layers_per_chunk(job.scenario.model, job.layout().pp, job.layout().vpp, st.pp_split);
  plan.gpus = job.gpus;
  plan.nodes = job.nodes;
  plan.gpus_per_node = job.gpus_per_node;
  plan.pp_fabric = job.pp_fabric;
  plan.p2p_bytes = c.pp_send_bytes;
  plan.p2p_latency_s = job.pp_send_latency_s;
  plan.stage_static_memory_bytes.assign(static_cast<std::size_t>(job.layout().pp), c.static_memory_bytes);
  plan.optimizer_s = c.optimizer_s * job.layout().pp;  // the whole model's; the lowering gives each stage its share
}

}  // namespace

sim::CostedStep costed_step(const Job& job, const Costs& c, const PredictOptions& options) {
  const Scenario& s = job.scenario;
  sim::CostedStep plan;
  plan.layout = job.layout();
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
  plan.gpus = job.layout().dp * job.layout().cp;  // the lowering's collectives span the DP x CP ranks
  plan.nodes = job.nodes;
  plan.gpus_per_node = std::max(1, job.gpus_per_node / job.layout().tp);  // DP ranks per node
  plan.fabric = job.fabric;
  fill_tensor_parallel(job, c, plan);
  fill_pipeline(job, c, plan);
  plan.exchange_forward = c.cp_forward;
  plan.exchange_backward = c.cp_backward;
  // Full and selective recompute both rerun the attention, and with it the K/V exchange.
  if (s.training.recompute != Recompute::none) plan.exchange_recompute = c.cp_forward;
  // The MoE all-to-alls after the K/V exchange; a full recompute reruns the dispatch too.
  plan.exchange_forward.insert(plan.exchange_forward.end(), c.ep_forward.begin(), c.ep_forward.end());
  plan.exchange_backward.insert(plan.exchange_backward.end(), c.ep_backward.begin(), c.ep_backward.end());
  if (s.training.recompute == Recompute::full)
    plan.exchange_recompute.insert(plan.exchange_recompute.end(), c.ep_forward.begin(), c.ep_forward.end());
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
  out.step = costed_step(job, costs, options);
  out.graph = sim::lower_step(out.step);
  return out;
}

sim::SimResult simulate(const sim::StepGraph& graph, const PredictOptions& options) {
  sim::SimOptions so;
  so.record_timelines = options.record_timelines;
  so.free_communication = options.free_communication;
  return sim::simulate(graph, so);
}

sim::SimResult simulate(Lowered& lowered, const PredictOptions& options) {
  // A pipeline's steady-state units seldom repeat to the nanosecond (validating the shipped
  // records, 1,095 of 1,229 first plays of a pipeline did not), so the planner lowers it
  // longer before its first play: one play where it took two, the same result. predict()
  // plays first: its exact pipelines (BigScience's 2,048 micro-batches) stay one short play.
  if (options.lower_pipelines_long && lowered.step.layout.pp > 1 && lowered.graph.repeat_count > 0)
    if (std::optional<sim::StepGraph> longer = sim::lower_step_longer(lowered.step, lowered.graph))
      lowered.graph = std::move(*longer);
  sim::SimResult result = simulate(lowered.graph, options);
  while (!result.repetition_exact) {  // more of the step explicit, while there is more to lower
    std::optional<sim::StepGraph> longer = sim::lower_step_longer(lowered.step, lowered.graph);
    if (!longer) break;
    lowered.graph = std::move(*longer);
    result = simulate(lowered.graph, options);
  }
  return result;
}

sim::StepBounds bound(const sim::StepGraph& graph) { return sim::closed_form_bounds(graph); }

}  // namespace stepcast
