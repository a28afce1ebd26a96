/// \file
/// What stepcast predicts for a scenario: the step time and its parts, throughput, MFU/HFU,
/// time and cost per epoch, and memory per GPU with the verdict. The estimator is the
/// closed-form model (no-overlap and perfect-overlap bounds plus a point estimate between
/// them); the discrete-event simulator replaces the point estimate when it lands.
#pragma once

#include "model/collective.hpp"
#include "model/memory.hpp"
#include "simulator/scenario.hpp"

#include <optional>
#include <string>
#include <vector>

namespace stepcast {

/// One kind of collective a step issues.
struct CollectiveUse {
  std::string purpose;       ///< "gradient all-reduce", "parameter all-gather (forward)", ...
  Collective collective = Collective::all_reduce;
  std::string level;         ///< "all", "intra-node", "inter-node"
  double bytes = 0;          ///< nccl-tests S of one call
  int calls_per_step = 0;    ///< how many such calls per optimizer step
  CollectiveCost cost;       ///< of one call
  double total_s() const { return cost.time_s * calls_per_step; }
};

struct Prediction {
  std::string scenario;
  int gpus = 1;
  int nodes = 1;
  int gpus_per_node = 1;
  Strategy strategy = Strategy::ddp;
  std::string gpu;             ///< GPU catalog key
  std::string hardware;        ///< box / cluster description

  double global_batch_samples = 0;
  double tokens_per_step = 0;

  // Per optimizer step, seconds.
  double forward_s = 0;
  double backward_s = 0;
  double recompute_s = 0;
  double optimizer_s = 0;
  double compute_s = 0;        ///< forward + backward + recompute + optimizer
  double comm_total_s = 0;     ///< all collectives, as if serial
  double comm_exposed_s = 0;   ///< the part not hidden behind compute
  double comm_hidden_s = 0;
  double step_time_s = 0;      ///< point estimate
  double step_no_overlap_s = 0;       ///< upper bound: nothing overlaps
  double step_perfect_overlap_s = 0;  ///< lower bound: every overlappable byte hidden

  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  double samples_per_s = 0;
  double model_flops_per_step = 0;
  double hardware_flops_per_step = 0;
  double mfu = 0;              ///< model FLOPs / (step time x GPUs x dense peak)
  double hfu = 0;              ///< hardware FLOPs (with recompute) / same
  double peak_tflops = 0;      ///< dense peak used for MFU, TFLOP/s per GPU

  double steps_per_epoch = 0;
  double time_per_epoch_s = 0;
  std::optional<double> cost_per_epoch_usd;

  MemoryBreakdown memory;
  CommFabric fabric;
  std::vector<CollectiveUse> collectives;
  std::vector<std::string> assumptions;  ///< defaults and choices the prediction rests on
};

Prediction predict(const Scenario& scenario);

}  // namespace stepcast
