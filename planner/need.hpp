/// \file
/// `stepcast need`: the smallest inter-node bandwidth per node at which the simulated step's
/// exposed communication falls under a target share of the step (seed experiment 4, "what
/// network do I need so communication hides?"), found by bisection over the resolved job's
/// inter-node link rate, with the curve of step time against bandwidth and the rule of
/// thumb (gradient bytes / compute time) beside it.
///
/// The link rate is changed in the resolved Job, never in the catalogs: every fabric's
/// inter-node level (data-parallel, pipeline) is scaled by rate / the scenario's own rate,
/// so the link efficiency, NIC sharing and latency of the written network are kept and only
/// the line rate moves. Bandwidths are line rates per node in Gb/s (all its NICs together).
#pragma once

#include "predict/predict.hpp"
#include "scenario/scenario.hpp"
#include "predict/stages.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stepcast {

struct NeedOptions {
  double exposed_fraction = 0.05;  ///< target: exposed communication / step time, in (0, 1)
  double min_Gbps = 1;             ///< search range of the line rate per node, Gb/s
  double max_Gbps = 102400;        ///< 100 Tb/s per node
  /// Relative width at which the bisection stops: the answer A satisfies the target and
  /// A / (1 + tolerance) does not.
  double tolerance = 0.01;
  int curve_points = 9;  ///< bandwidths of the curve besides the marked ones
  /// Called after each prediction with the count done and an estimate of the total.
  std::function<void(std::string_view phase, std::int64_t done, std::int64_t total)> progress;
};

/// The job with its inter-node line rate per node set to `node_Gbps`: every fabric's
/// inter-node level scaled by node_Gbps / the written rate. Throws std::invalid_argument
/// for a job on one node (no inter-node level) or a rate not above 0.
Job with_inter_node_rate(const Job& job, double node_Gbps);

/// The written inter-node line rate per node, Gb/s: NICs per node x the NIC's line rate.
double inter_node_rate_Gbps(const Job& job);

/// One point of the curve.
struct NeedPoint {
  double node_Gbps = 0;  ///< line rate per node
  double step_time_s = 0;
  double comm_exposed_s = 0;
  double exposed_fraction = 0;  ///< comm_exposed / step_time
  std::string mark;             ///< "written", "needed", "rule of thumb" or ""
};

struct NeedResult {
  std::string scenario;
  std::string file;
  int nodes = 1;
  int gpus = 1;
  double target_fraction = 0.05;
  double tolerance = 0.01;
  std::string nic;       ///< the network's NIC kind ("eth-100g")
  double nic_Gbps = 0;   ///< its line rate
  int nics_written = 0;  ///< NICs per node in the scenario
  NeedPoint written;     ///< the scenario as written
  /// The smallest line rate per node that meets the target (within the tolerance); absent
  /// when even max_Gbps does not (communication inside a node, or latency, dominates).
  std::optional<double> needed_Gbps;
  bool met_at_min = false;  ///< the target is met already at min_Gbps
  NeedPoint at_max;         ///< the floor: the step at max_Gbps
  int nics_needed = 0;      ///< ceil(needed / the NIC's line rate); 0 without an answer
  int predictions = 0;      ///< simulations run by the bisection
  /// Rule of thumb: the gradients must cross each node's link in the compute time,
  /// 8 x gradient bytes / compute time / 1e9 Gb/s (seed experiment 4's "N x P GB/s").
  double rule_of_thumb_Gbps = 0;
  double gradient_bytes = 0;     ///< per GPU: trainable parameters x gradient bytes / (tp x pp)
  double compute_s = 0;          ///< forward + backward + recompute per step, full speed (no optimizer)
  std::vector<NeedPoint> curve;  ///< ascending bandwidth
  MemoryBreakdown memory;        ///< per GPU (the link rate does not change it)
};

/// Bisection on a log scale for the smallest x in [lo, hi] with ok(x), assuming ok is
/// monotone (false below a threshold, true above): stops when hi / lo <= 1 + tolerance and
/// returns hi (ok(hi) holds). Returns nullopt when ok(hi) is false, lo when ok(lo) holds.
/// `calls` counts the evaluations.
std::optional<double> bisect_smallest(const std::function<bool(double)>& ok, double lo, double hi, double tolerance,
                                      int& calls);

/// The search. Throws std::invalid_argument for options out of range, a scenario on one
/// node, or one whose calibration replaces the collectives' model with measurements.
NeedResult need(const Scenario& scenario, const NeedOptions& options);

/// "5%" -> 0.05, "0.05" -> 0.05; throws std::invalid_argument outside (0, 1) or unreadable.
double parse_fraction(std::string_view text);

}  // namespace stepcast
