/// \file
/// What stepcast predicts for a scenario: the step time and its parts, throughput, MFU/HFU,
/// time and cost per epoch, and memory per GPU with the verdict. The step time comes from
/// the discrete-event simulation of the lowered step (simulation.hpp); the closed-form
/// bounds (bounds.hpp) are kept beside it as a cross-check. predict() is the composition of
/// the named stages in stages.hpp (resolve, cost, lower, simulate, bound, assemble).
#pragma once

#include "model/collective.hpp"
#include "model/memory.hpp"
#include "simulator/lowering.hpp"
#include "scenario/scenario.hpp"
#include "simulator/simulation.hpp"
#include "simulator/step_graph.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace stepcast {

/// One kind of collective a step issues, with what the simulation played for it.
struct CollectiveUse {
  std::string purpose;  ///< "gradient all-reduce", "parameter all-gather (forward)", ...
  Collective collective = Collective::all_reduce;
  FabricScope level = FabricScope::all;  ///< which GPUs it spans
  int ranks = 1;                         ///< how many GPUs it spans
  double bytes = 0;                      ///< nccl-tests S of one call
  int calls_per_step = 0;                ///< how many such calls per optimizer step
  /// The phases of one call exactly as the lowering put them in the step graph (model's
  /// choice of algorithm and protocol, or the calibration's measurement).
  std::vector<CollectivePhase> phases;
  /// Of one call, summarised from `phases` as they run alone on the step's links (a
  /// straggler's degraded link slows them; stages.hpp collective_uses).
  CollectiveCost cost;
  double total_s() const { return cost.time_s * calls_per_step; }
};

/// One task on the critical path of the simulated step.
struct PathStep {
  std::string task;
  std::string category;  ///< "forward", "all_gather", ...
  double start_s = 0;
  double end_s = 0;
};

struct StreamUse {
  std::string name;  ///< "compute", "nccl all-gather", ...
  double busy_s = 0;
};

struct LinkUse {
  std::string name;
  double capacity_GBps = 0;
  double busy_s = 0;  ///< time with any traffic
  double bytes = 0;   ///< carried by the representative class, load-weighted
};

/// The plan, the lowered step and its simulation, for traces and benchmarks.
struct StepSimulation {
  sim::CostedStep step;
  sim::StepGraph graph;
  sim::SimResult result;
};

struct PredictOptions {
  bool keep_simulation = false;         ///< fill Prediction::simulation
  bool record_timelines = false;        ///< link and memory timelines (for traces)
  bool comm_on_compute_stream = false;  ///< limiting case: nothing overlaps
  bool free_communication = false;      ///< limiting case: collectives take no time
  /// Lower a pipeline held in closed form longer before its first play rather than after a
  /// play finds its units not repeating exactly (simulate(Lowered&)): the same result, one
  /// play where most pipelines took two, two lowerings where an exact one took one (the
  /// planner's choice, whose simulated layouts seldom repeat; predict() plays first).
  bool lower_pipelines_long = false;
};

struct Prediction {
  std::string scenario;
  int gpus = 1;
  int nodes = 1;
  int gpus_per_node = 1;
  Strategy strategy = Strategy::ddp;
  std::string gpu;              ///< GPU catalog key
  std::string hardware;         ///< box / cluster description
  std::int64_t parameters = 0;  ///< of the model, all of them

  double global_batch_samples = 0;
  double tokens_per_step = 0;

  // Per optimizer step, seconds.
  double forward_s = 0;
  double backward_s = 0;
  double recompute_s = 0;
  double optimizer_s = 0;
  double compute_s = 0;  ///< forward + backward + recompute + optimizer
  /// forward + backward + recompute by kind of kernel, at full speed (the optimizer apart).
  KernelTimes compute_by_kernel;
  double comm_total_s = 0;            ///< all collectives, each as if alone, summed
  int pipeline_stages = 1;            ///< pp: comm_total_s sums every stage's collectives
  double comm_busy_s = 0;             ///< simulated: time any collective of a GPU ran
  double comm_exposed_s = 0;          ///< simulated: the part not hidden behind compute
  double comm_hidden_s = 0;           ///< simulated: the part that ran while compute ran
  double overlap_ratio = 1;           ///< comm_hidden / comm_busy
  double compute_busy_s = 0;          ///< simulated compute-stream time (slowed while NCCL runs)
  double comm_slowdown = 0;           ///< compute throughput lost while a collective runs
  double step_time_s = 0;             ///< simulated step time
  double step_no_overlap_s = 0;       ///< upper bound: nothing overlaps
  double step_perfect_overlap_s = 0;  ///< lower bound (bounds.hpp)
  std::vector<PathStep> critical_path;
  std::vector<StreamUse> streams;
  std::vector<LinkUse> links;
  double simulated_peak_memory_bytes = 0;   ///< static + peak of the memory events, largest over rank classes
  std::string simulated_peak_memory_class;  ///< the rank class that holds it ("stage 2"; empty with one class)
  std::uint64_t simulation_events = 0;
  int simulation_tasks = 0;
  std::shared_ptr<const StepSimulation> simulation;  ///< when PredictOptions::keep_simulation

  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  double samples_per_s = 0;
  double model_flops_per_step = 0;  ///< MFU's numerator: 6N + 12Lhs per token, no causal halving
  /// FLOPs the GPUs execute: causal attention halved under flash attention, recompute
  /// included (what measured-run definitions of "hardware FLOPs" count); not HFU's numerator.
  double hardware_flops_per_step = 0;
  /// The same without recompute: model FLOPs with causal attention halved under flash
  /// attention (ml-engineering's "causal attention FLOPs, recompute excluded").
  double causal_model_flops_per_step = 0;
  double mfu = 0;                  ///< model FLOPs / (step time x GPUs x dense peak)
  double hfu = 0;                  ///< (model FLOPs + recompute in MFU's convention) / same
  double peak_tflops = 0;          ///< dense peak used for MFU, TFLOP/s per GPU
  Dtype peak_dtype = Dtype::bf16;  ///< the dtype of that peak (the GEMMs' dtype)

  /// Epoch figures; NaN when the scenario has no dataset (JSON null, text "n/a").
  double steps_per_epoch = 0;
  double time_per_epoch_s = 0;
  std::optional<double> cost_per_epoch_usd;  ///< needs a dataset and a price

  MemoryBreakdown memory;
  CommFabric fabric;
  std::vector<CollectiveUse> collectives;  ///< as simulated (never re-costed)
  std::vector<std::string> assumptions;    ///< defaults and choices the prediction rests on
};

/// USD per million tokens trained: price x GPUs x step time / 3600 / (tokens per step / 1e6).
/// The one definition of cost per token (scale, compare and plan's cost objective).
double usd_per_million_tokens(double price_per_gpu_hour_usd, const Prediction& p);

/// resolve -> cost -> lower -> simulate -> bound -> assemble (stages.hpp).
Prediction predict(const Scenario& scenario, const PredictOptions& options = {});

}  // namespace stepcast
