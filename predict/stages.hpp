/// \file
/// One prediction as a pipeline of named stages, each a function that can be called and
/// tested alone (design notes, "One prediction as a pipeline of named stages"):
///
///   resolve(Scenario)                  -> Job      catalog lookups, device rates with their
///                                                  provenance, fabric, rank groups, defaults
///                                                  (each recorded as an assumption)
///   cost(Job)                          -> Costs    per-layer compute times and FLOPs, byte
///                                                  counts, memory terms, every collective's
///                                                  size and exposed part; pure
///   lower(Job, Costs, PredictOptions)  -> Lowered  the CostedStep and its StepGraph
///                                                  (sim::lower_step)
///   simulate(Lowered, PredictOptions) -> SimResult  every micro-step lowered where the
///                                                  closed form is not exact
///   bound(StepGraph)                   -> StepBounds  closed-form cross-check
///   assemble(Job, Costs, Lowered, SimResult, StepBounds) -> Prediction
///
/// predict() (predict.hpp) is their composition. The Prediction carries the collectives
/// with the phases the lowering put into the step graph, so reports read what the
/// simulation played and never re-cost anything.
#pragma once

#include "model/compute.hpp"
#include "model/flops.hpp"
#include "model/memory.hpp"
#include "model/parallel.hpp"
#include "simulator/bounds.hpp"
#include "simulator/lowering.hpp"
#include "predict/predict.hpp"
#include "scenario/scenario.hpp"
#include "simulator/simulation.hpp"
#include "simulator/step_graph.hpp"
#include "topologies/topology.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stepcast {

// ---------------------------------------------------------------------------------------
// resolve

/// Where a device rate came from.
enum class RateSource {
  catalog,      ///< the catalogs: datasheets, published kernel measurements, documented defaults
  calibration,  ///< measured on the machine (the scenario's hardware file, `stepcast fit`)
};
std::string_view name(RateSource);

/// The provenance of each efficiency in DeviceRates (peaks and datasheet memory bandwidth
/// always come from the GPU catalog).
struct RateProvenance {
  RateSource gemm = RateSource::catalog;           ///< DeviceRates::gemm_ceiling_tflops
  RateSource attention = RateSource::catalog;      ///< DeviceRates::attention
  RateSource memory = RateSource::catalog;         ///< DeviceRates::memory_efficiency
  RateSource sm_count = RateSource::catalog;       ///< DeviceRates::sm_count
  RateSource launch = RateSource::catalog;         ///< DeviceRates::launch_s and the eager op costs
  RateSource comm_slowdown = RateSource::catalog;  ///< Job::comm_slowdown (NCCL channels / SMs)
};

/// A scenario resolved against the catalogs: the hardware it runs on, the rates of its
/// GPU, and every default it takes, recorded as an assumption.
struct Job {
  Scenario scenario;  ///< the scenario as given (a copy: a Job stands alone)
  int nodes = 1;
  int gpus_per_node = 1;
  int gpus = 1;
  GpuSpec gpu;           ///< catalog entry of the box's GPU
  std::string hardware;  ///< "2 x dgx-a100 (8x ib-hdr)" / "dgx-a100"
  CommFabric fabric;     ///< what a data-parallel collective sees (all GPUs when tp = 1)
  /// The parallel layout: the scenario's, with dp = gpus / (tp·pp·cp) (gradients reduce
  /// over dp·cp).
  const ParallelLayout& layout() const { return scenario.strategy.layout; }
  CommFabric tp_fabric;  ///< a TP group's fabric (tp GPUs of one node)
  CommFabric pp_fabric;  ///< the link between adjacent stages, as one sending GPU sees it
  /// send_latency_s(pp_fabric): a property of the link, resolved once per layout family rather
  /// than costed per micro-batch (the planner's screen costs every micro-batch).
  double pp_send_latency_s = 0;
  CommFabric cp_fabric;      ///< a CP group's fabric (its all-gathers)
  CommFabric cp_hop_fabric;  ///< one ring step: a GPU's link to the next CP rank
  CommFabric ep_fabric;      ///< an EP group's fabric (its all-to-alls)
  /// CPU offload: the host's memory bandwidth (DRAM wire rate, GB/s) and memory, and the PCIe
  /// rate per GPU with all GPUs copying (topologies/ host_link_GBps_per_gpu). 0 without.
  double host_memory_GBps = 0;
  double host_memory_bytes = 0;
  int host_cores = 0;  ///< the host's physical cores (its CPU Adam rate)
  double pcie_GBps = 0;
  Dtype dtype = Dtype::bf16;  ///< dtype of the GEMMs (peak used for MFU)
  KernelChoice kernels;       ///< attention kernel, kernel profile, causal or not
  DeviceRates device;
  RateProvenance provenance;
  double bucket_bytes = 0;             ///< gradient / ZeRO bucket, bytes (given or the framework default)
  double first_bucket_bytes = 0;       ///< DDP's first bucket (others: bucket_bytes)
  std::vector<sim::RankGroup> groups;  ///< empty: all ranks alike; else typical nodes first
  std::vector<sim::MeasuredCollective> measured_collectives;  ///< from the calibration
  int nccl_channels = 0;                                      ///< channels a collective runs on (0 on one GPU)
  double comm_slowdown = 0;                                   ///< compute throughput lost while a collective runs
  std::vector<std::string> assumptions;                       ///< the scenario's defaults first, then the stages'
};

/// Resolves the scenario: builds the topology of the GPUs used, derives the fabric and the
/// device rates (the catalogs', then the scenario's calibration file), picks the bucket size, the rank groups
/// (stragglers) and the NCCL slowdown of compute. Throws std::invalid_argument, naming the field, for a scenario no
/// later stage can take (a count below 1, no straggler-free node, a dataset size not above 0; no dataset at all is
/// fine: no epoch figures) and for an inconsistent hardware choice; parse_scenario refuses all of those, so only a
/// Scenario built another way (a measured record) can get here with one.
Job resolve(const Scenario& scenario);

/// The topology resolve() builds: the scenario's cluster on the nodes it uses.
Topology resolved_topology(const Scenario& scenario);

/// resolve() on a topology already built (resolved_topology of a scenario on the same
/// hardware): what a search over layouts of one hardware calls, building the graph once.
Job resolve(const Scenario& scenario, const Topology& topology);

/// Latency of one point-to-point send on `link` (two ranks): that of a two-rank collective of
/// one byte in NCCL's tuning model (model/collective.hpp collective_phases).
double send_latency_s(const CommFabric& link);

/// The device rates of `gpu` training at `dtype` with attention by `kernel`: the catalog's
/// (catalog_device_rates), then the calibration's measurements (`calibration`, may be null;
/// `calibration_file` names it in the sources). Appends what it assumed.
DeviceRates device_rates(const GpuSpec& gpu, Dtype dtype, AttentionKernel kernel, const HardwareFile* calibration,
                         const std::string& calibration_file, RateProvenance& provenance,
                         std::vector<std::string>& assumptions);

// ---------------------------------------------------------------------------------------
// cost

/// Compute time of one micro-step on one GPU at full speed, split the way the lowering
/// plays it: `layers` equal transformer layers and the LM head.
struct LayerTimes {
  int layers = 1;
  double forward_s = 0;    ///< one layer
  double backward_s = 0;   ///< one layer
  double recompute_s = 0;  ///< one layer (0 without recompute)
  double head_forward_s = 0;
  double head_backward_s = 0;
  /// layers x (forward + backward + recompute) + head forward + head backward
  double micro_step_s() const;
};

/// What one optimizer step costs before any scheduling: compute times, FLOPs, byte counts
/// of what the collectives move, and memory per GPU. A pure function of the Job.
struct Costs {
  MicroStepTimes micro;  ///< one micro-step on one GPU
  LayerTimes per_layer;  ///< the same, per layer and head
  double forward_s = 0;  ///< per optimizer step (grad_accum micro-steps)
  double backward_s = 0;
  double recompute_s = 0;
  double optimizer_s = 0;
  double compute_s = 0;  ///< forward + backward + recompute + optimizer
  KernelTimes kernels;   ///< forward + backward + recompute per optimizer step, by kind

  /// FLOPs of one micro-step on one GPU, per layer and for the LM head.
  double layer_flops_forward = 0;
  double layer_flops_backward = 0;
  double layer_flops_recompute = 0;
  double head_flops_forward = 0;
  double head_flops_backward = 0;
  double model_flops_per_step = 0;  ///< all GPUs, one optimizer step
  /// Executed FLOPs with recompute (the kernels' count: causal halving under flash
  /// attention), what `validate` compares with records that count executed work.
  double hardware_flops_per_step = 0;
  /// Executed FLOPs without recompute (causal halving under flash attention).
  double causal_model_flops_per_step = 0;
  /// HFU's FLOPs: model FLOPs + recompute in MFU's attention convention (StepFlops::hfu_flops).
  double hfu_flops_per_step = 0;

  double parameters = 0;  ///< all parameters
  double trainable = 0;   ///< parameters the optimizer updates (LoRA: adapters)
  /// Bytes in the working dtype: one layer's weights, the root unit (embeddings, final
  /// norm, untied LM head), the untied LM head alone; and the trainable gradients of each.
  double layer_param_bytes = 0;
  double root_param_bytes = 0;
  double head_param_bytes = 0;
  double layer_grad_bytes = 0;
  double root_grad_bytes = 0;
  double head_grad_bytes = 0;
  /// One layer's parameter all-gather, bytes: with the fp8 all-gather the linear weights in
  /// 1 byte and the rest (norms) in the working dtype; 0 otherwise (layer_param_bytes).
  double layer_gather_bytes = 0;

  MemoryBreakdown memory;                 ///< per GPU, term by term
  double activation_bytes_per_layer = 0;  ///< per micro-step, kept from forward to backward
  double logits_bytes = 0;
  double static_memory_bytes = 0;  ///< held all step (total less the transient terms)
  /// Context parallelism per layer and micro-batch: the K/V exchange's collectives on the
  /// compute stream (model/parallel.hpp; the ring's part the attention does not hide).
  std::vector<sim::LayerCollective> cp_forward, cp_backward;
  /// Expert parallelism per layer and micro-batch: the dispatch and combine all-to-alls of
  /// the MoE layers, on the compute stream after the layer (their bytes the mean over layers).
  std::vector<sim::LayerCollective> ep_forward, ep_backward;
  /// Tensor parallelism per layer and micro-batch: each layer's TP collectives (forward,
  /// backward) and the vocab-parallel head's (model/parallel.hpp); empty when tp = 1.
  TpLayerComm tp_layer, tp_head;
  /// Pipeline parallelism: the bytes of one send between adjacent stages; 0 when pp = 1.
  double pp_send_bytes = 0;
  OffloadTimes offload;            ///< CPU offload per optimizer step (zero without)
  double grad_accumulation_s = 0;  ///< adding up gradients, per micro-step, on the report's rank (stage 0)
  std::vector<std::string> assumptions;
};

/// Costs the job's step. Pure: same Job, same Costs.
Costs cost(const Job& job);

/// The job's micro-step at full speed (model/compute.hpp's micro_step_times on the job's
/// model, micro-batch, sequence, precision, recompute, kernels and device): all cost() reads
/// of the layout's compute, the same for every parallel layout of those.
MicroStepTimes micro_step_times(const Job& job);

/// cost() with the micro-step already computed (micro_step_times(job) of an equal Job in
/// those fields): a search costs each (micro-batch, recompute) once.
Costs cost(const Job& job, const MicroStepTimes& micro);

/// Splits a micro-step into its per-layer and head parts (the lowering's split).
LayerTimes layer_times(const MicroStepTimes& micro, int layers);

// ---------------------------------------------------------------------------------------
// lower, simulate, bound

/// The plan the lowering reads and the step graph it made of it.
struct Lowered {
  sim::CostedStep step;
  sim::StepGraph graph;
};

/// The CostedStep of the job with its costs: plain numbers for sim::lower_step.
sim::CostedStep costed_step(const Job& job, const Costs& costs, const PredictOptions& options);

/// Lowers the step: step_plan, then sim::lower_step.
Lowered lower(const Job& job, const Costs& costs, const PredictOptions& options);

/// Plays the step graph (sim::simulate with the options' limiting cases and timelines).
sim::SimResult simulate(const sim::StepGraph& graph, const PredictOptions& options);

/// Plays the lowered step; where its middle micro-steps (a pipeline's steady-state units),
/// held in closed form, turn out not to repeat exactly, lowers more of it explicitly
/// (sim::lower_step_longer, into `lowered`) and plays that instead, until they repeat or
/// every micro-step is explicit. One simulation when the closed form is exact; a data-parallel
/// step two otherwise, a pipeline one more each time its explicit units double. With
/// options.lower_pipelines_long a pipeline is lowered longer before its first play.
sim::SimResult simulate(Lowered& lowered, const PredictOptions& options);

/// Closed-form bounds on the lowered step (sim::closed_form_bounds).
sim::StepBounds bound(const sim::StepGraph& graph);

// ---------------------------------------------------------------------------------------
// assemble

/// The cost of one collective call as the simulation plays it, summarised from its phases:
/// time = `time_s` if given (the phases alone on the step's links, sim::phase_alone_s),
/// else Σ phase times (latency + S / algbw); algorithm "measured" where the calibration's
/// measurement replaced the model, "hierarchical" where the phases span the intra- and
/// inter-node levels (then the protocol is the inter-node phase's), else the single phase's
/// algorithm and protocol; algbw = S / time, busbw = algbw x the bus factor over `ranks`.
/// Empty phases (one rank, zero bytes) cost nothing.
CollectiveCost phases_cost(Collective collective, double bytes, const std::vector<CollectivePhase>& phases, int ranks,
                           std::optional<double> time_s = std::nullopt);

/// One row per kind of collective (purpose, level, size) in the order the graph issues
/// them, with the phases the lowering put in the graph and their cost: phases_cost with
/// each phase alone on the graph's links (sim::phase_alone_s: a straggler's degraded link
/// slows every collective it takes part in), the time closed_form_bounds adds up.
std::vector<CollectiveUse> collective_uses(const sim::StepGraph& graph, const CommFabric& fabric);

/// The Prediction: the job's description, the costs, the simulated figures, the bounds,
/// throughput, FLOPs utilisation, epoch and its price. Moves `lowered` and `result` into
/// Prediction::simulation when the options keep it. Throws std::logic_error (a broken
/// invariant: "please report") when the simulated step is not finite or lies outside its
/// closed-form bounds beyond rounding.
Prediction assemble(const Job& job, const Costs& costs, Lowered lowered, sim::SimResult result,
                    const sim::StepBounds& bounds, const PredictOptions& options);

}  // namespace stepcast
