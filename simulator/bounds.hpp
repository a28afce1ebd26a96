/// \file
/// Closed-form bounds on a lowered step, the cross-check of the simulation: whatever the
/// schedule, the step takes no longer than doing everything one after the other, and no
/// less than the compute plus the communication that cannot overlap it, nor less than the
/// busiest link's bytes over its capacity plus the optimizer step (no collective runs
/// during it).
#pragma once

#include "simulator/step_graph.hpp"

namespace stepcast::sim {

struct StepBounds {
  double compute_s = 0;        ///< Σ compute tasks of the representative rank, full speed
  double optimizer_s = 0;      ///< the optimizer tasks among them
  double comm_total_s = 0;     ///< Σ collectives, each as if alone (latency + S / algbw)
  double unhideable_s = 0;     ///< Σ StepGraph::unhideable_ops, each as if alone
  double network_floor_s = 0;  ///< max over links of Σ bytes x load / capacity
  /// compute + comm_total; for a pipeline (StepGraph::pipeline) Σ over stages of their
  /// compute + comm_total
  double no_overlap_s = 0;
  /// min(no_overlap, max(compute + unhideable, network_floor + optimizer)); for a pipeline
  /// the floor without the optimizer
  double perfect_overlap_s = 0;
};

StepBounds closed_form_bounds(const StepGraph& graph);

/// The longest chain of the graph's explicit tasks at their durations alone, s: a task
/// starts after its dependencies and the task before it on its stream (streams run their
/// tasks in id order), a collective's members start together, a compute task takes
/// work / its class's compute speed, a collective Σ phase_alone_s over its phases. The
/// simulation only adds to these (compute slowed under NCCL, links shared, the repeated
/// micro-steps held in closed form), so the step is no shorter: a lower bound that sees the
/// pipeline bubble and the communication a dependency waits on. 0 for a graph with a cycle.
double critical_path_s(const StepGraph& graph);

/// How long one phase of a collective takes alone on the step's links: its latency plus its
/// bytes at its algbw, or slower where a member's link carries less than the phase's load
/// needs (a straggler's degraded link). What the simulation plays when nothing else runs;
/// closed_form_bounds sums it into comm_total_s.
double phase_alone_s(const StepGraph& graph, const CollectiveOp& op, const CollectivePhase& phase);

}  // namespace stepcast::sim
