/// \file
/// Stage assemble (stages.hpp): the prediction from the job, its costs, the simulated step and
/// its bounds (checked against each other), with throughput, MFU/HFU and the epoch's price.
#include "predict/stages.hpp"

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
    throw std::logic_error(
        fmt::format("simulated step {} s lies outside its closed-form bounds [{}, {}] s; "
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
  // The peak of the rank class that holds the most (a pipeline's stages hold unlike
  // layers and micro-batches in flight), as the memory model's total is its largest stage's.
  for (std::size_t c = 0; c < r.peak_memory_bytes.size(); ++c)
    if (c == 0 || r.peak_memory_bytes[c] > p.simulated_peak_memory_bytes) {
      p.simulated_peak_memory_bytes = r.peak_memory_bytes[c];
      p.simulated_peak_memory_class = graph.classes.size() > 1 ? graph.classes[c].name : std::string();
    }
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
    p.links.push_back(
        {graph.links[i].name, graph.links[i].capacity_GBps, sim::to_seconds(r.links[i].busy_ns), r.links[i].bytes});
}

/// Tokens and samples per second, MFU/HFU, and the epoch with its price. MFU and HFU share
/// one attention convention (StepFlops::model: 12·L·h·s per token, no causal halving, PaLM
/// App. B / llm-foundry), HFU adding the recomputed forward in that convention
/// (StepFlops::hfu_flops), so HFU >= MFU, with equality without recompute.
void assemble_throughput(const Job& job, const Costs& c, Prediction& p) {
  const Scenario& s = job.scenario;
  const TrainingSpec& tr = s.training;
  const int gpus = job.gpus;
  p.global_batch_samples = static_cast<double>(tr.micro_batch * tr.grad_accum) * job.layout().dp;  // per DP replica
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

CollectiveCost phases_cost(Collective collective, double bytes, const std::vector<CollectivePhase>& phases, int ranks,
                           std::optional<double> played_s) {
  CollectiveCost out;
  out.algorithm = "ring";
  out.protocol = "Simple";
  if (phases.empty()) return out;  // nothing moves (collective_cost's convention)
  double time_s = 0;
  for (const CollectivePhase& ph : phases) time_s += ph.time_s();
  if (played_s) time_s = *played_s;
  const bool hierarchical =
      std::any_of(phases.begin(), phases.end(), [](const CollectivePhase& ph) { return ph.level != FabricScope::all; });
  const bool p2p =
      std::all_of(phases.begin(), phases.end(), [](const CollectivePhase& ph) { return ph.algorithm == "p2p"; });
  if (phases.size() == 1 && phases[0].algorithm == "measured") {  // the calibration's fit
    out.algorithm = "measured";
    out.protocol = "n/a";
  } else if (p2p) {  // a pipeline send: one phase over the link between two stages
    out.algorithm = "p2p";
    out.protocol = phases[0].protocol;
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
  const bool moves_bytes =
      std::any_of(phases.begin(), phases.end(), [](const CollectivePhase& ph) { return ph.bytes > 0; });
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
  p.strategy = job.scenario.strategy.layout.dp_sharding;
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
  if (!result.repetition_exact && lowered.graph.pipeline)
    p.assumptions.push_back(
        fmt::format("the pipeline's {} micro-batches do not settle into an exact period within the first units "
                    "(flows of several stages share links, or a stage runs ahead of the slowest): the step adds the "
                    "middle ones at the slowest stream's mean period over the explicit units, within 0.9% of "
                    "simulating every micro-batch on the shipped records (docs/benchmarks.md)",
                    job.scenario.training.grad_accum));
  else if (!result.repetition_exact)
    p.assumptions.push_back(
        fmt::format("the {} micro-steps were too many to simulate one by one and their middle ones do not repeat "
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
  p.pipeline_stages = job.layout().pp;
  p.collectives = collective_uses(lowered.graph, job.fabric);
  assemble_throughput(job, costs, p);
  if (options.keep_simulation) {
    auto kept = std::make_shared<StepSimulation>();
    kept->step = std::move(lowered.step);
    kept->graph = std::move(lowered.graph);
    kept->result = std::move(result);
    p.simulation = std::move(kept);
  }
  return p;
}

}  // namespace stepcast
