/// \file
/// Gradient accumulation in closed form, the simulation's side (step_graph.hpp,
/// StepGraph::repeat_count): the graph holds the first micro-steps and the last; the
/// simulation plays those, finds how far each stream's work moves from one middle
/// micro-step to the next (the period), and accounts for the micro-steps the graph does not
/// hold by moving everything after the last explicit middle one by repeat_count periods and
/// adding repeat_count times one period's busy time, bytes and events. Exact when the
/// middle micro-steps repeat (each stream's tasks move by one period from one to the next,
/// checked on the last three explicit ones, or the last two when the third is the first
/// micro-step); SimResult::repetition_exact says whether they did.
#pragma once

#include "simulator/network.hpp"
#include "simulator/simulation.hpp"
#include "simulator/step_graph.hpp"

#include <cstdint>
#include <vector>

namespace stepcast::sim {

/// The simulation's accumulators when the first task of an explicit micro-step started.
struct MarkSnapshot {
  Time at = -1;  ///< -1: not reached
  Time compute_busy_ns = 0;
  Time comm_busy_ns = 0;
  Time overlap_ns = 0;
  std::uint64_t events = 0;
  Network::Usage links;
  std::vector<double> memory_bytes;        ///< per rank class, at that instant
  std::vector<double> segment_peak_bytes;  ///< per rank class, from then to the next mark
};

/// Adds the micro-steps `g` does not hold to `r` (a no-op when repeat_count is 0).
/// `marks`: one per StepGraph::micro_steps.
void extrapolate_repeats(const StepGraph& g, const std::vector<MarkSnapshot>& marks, SimResult& r);

}  // namespace stepcast::sim
