/// \file
/// Plays a StepGraph on the event engine: streams run their tasks in order, collectives
/// become flows on the link resources (one flow per phase, after the phase's latency),
/// compute slows down while a collective shares its GPU, memory events build a timeline.
/// The result lists what happened; reports and trace writers read it (nothing prints).
#pragma once

#include "simulator/engine.hpp"
#include "simulator/network.hpp"
#include "simulator/step_graph.hpp"

#include <cstdint>
#include <vector>

namespace stepcast::sim {

struct SimOptions {
  /// Keep link-utilization and memory timelines (for traces); off for speed.
  bool record_timelines = false;
  /// Limiting case: every collective takes no time (infinite bandwidth, no latency).
  bool free_communication = false;
  /// Check the result's invariants (check_step_invariants); off only for trial runs.
  bool check_invariants = true;
};

struct TaskRecord {
  Time start = 0;
  Time end = 0;
  /// The task whose end let this one start (stream predecessor, dependency, or for a
  /// collective the last member's); -1 when it started at time 0.
  int enabler = -1;
};

struct MemorySample {
  Time at = 0;
  double bytes = 0;
};

struct StreamStats {
  Time busy_ns = 0;
};

struct SimResult {
  Time step_ns = 0;                  ///< end of the last task
  std::vector<TaskRecord> tasks;     ///< parallel to StepGraph::tasks
  std::vector<StreamStats> streams;  ///< parallel to StepGraph::streams
  std::vector<Resource> links;       ///< parallel to StepGraph::links, with usage
  /// Representative rank (class 0): time its compute stream ran, time any collective of it
  /// ran, and the time both did.
  Time compute_busy_ns = 0;
  Time comm_busy_ns = 0;
  Time overlap_ns = 0;
  std::vector<int> critical_path;             ///< task ids, first to last
  std::vector<double> peak_memory_bytes;      ///< per rank class
  std::vector<MemorySample> memory_timeline;  ///< class 0, when recorded
  std::uint64_t events = 0;                   ///< events the engine fired
  /// Events the whole step stands for: `events` plus those of the micro-steps accounted in
  /// closed form (repetition.hpp).
  std::uint64_t events_represented = 0;
  /// Middle micro-steps accounted in closed form, not simulated (StepGraph::repeat_count).
  std::int64_t micro_steps_repeated = 0;
  /// Whether those repeated exactly (every stream's work moving by one period per
  /// micro-step); when not (a backlog of collectives growing each micro-step), they are
  /// extrapolated stream by stream from the last two explicit ones: the step's end is
  /// still what an explicit simulation gives in the cases tested, busy times and events
  /// are approximate.
  bool repetition_exact = true;

  double step_s() const { return to_seconds(step_ns); }
  /// Communication not hidden behind compute on the representative rank.
  double comm_exposed_s() const { return to_seconds(comm_busy_ns - overlap_ns); }
  /// Hidden / total communication time (1 when there is none).
  double overlap_ratio() const {
    return comm_busy_ns > 0 ? static_cast<double>(overlap_ns) / static_cast<double>(comm_busy_ns) : 1.0;
  }
};

/// Simulates one step. InternalError when the graph is not well formed (a task never
/// reachable, a cycle: a lowering bug), when a time leaves the clock's range (engine.hpp),
/// or when the result breaks an invariant (check_step_invariants).
SimResult simulate(const StepGraph& graph, const SimOptions& options = {});

/// The invariants of a simulated step: no negative busy time, no more overlap than either
/// side, and the closed-form bounds (bounds.hpp) hold: perfect_overlap <= step <=
/// no_overlap (with free communication: compute <= step), within 1 ns per event for the
/// rounding of each duration up to the nanosecond. InternalError when broken.
void check_step_invariants(const StepGraph& graph, const SimOptions& options, const SimResult& result);

}  // namespace stepcast::sim
