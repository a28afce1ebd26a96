/// \file
/// A simulated step as a timeline file that ui.perfetto.dev and chrome://tracing open.
///
/// Format: the JSON Object Format of Google's "Trace Event Format" document
/// (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU, also
/// summarised in Perfetto's docs, "Legacy JSON trace format"): an object
/// {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}} whose events carry
/// "ph" (phase), "ts" (timestamp, microseconds), "pid" and "tid". Used here:
///   - "M" metadata: process_name / process_sort_index per process, thread_name /
///     thread_sort_index per thread;
///   - "X" complete events: one per task, with "dur" (microseconds), "name", "cat", "args";
///   - "C" counter events: a value per series in "args", held until the next event of the
///     same counter.
///
/// Layout: one process per rank class ("GPU, representative of 1024 ranks (all ranks)"),
/// one thread per stream of the class (compute streams first), each task a complete event
/// named after the task with its category as "cat" and its figures as "args" (flops,
/// when known, and work_at_full_speed_s for compute; bytes, collective, purpose, level, algorithm and protocol for
/// collectives; alloc_bytes / free_bytes when it allocates or frees memory). Rank class 0's process also holds a
/// "memory" counter (allocated_GiB) from SimResult::memory_timeline. A last process, "links", holds one counter per
/// link that carried traffic (utilization_percent, from Resource::timeline). Timestamps are the simulation's integer
/// nanoseconds / 1000.
///
/// Link and memory counters need SimOptions::record_timelines; without it the trace has the
/// tasks only.
#pragma once

#include "simulator/simulation.hpp"
#include "simulator/step_graph.hpp"

#include <string>

namespace stepcast::sim {

/// The trace of one simulated step, as JSON text. `result` must come from simulating
/// `graph` (throws std::invalid_argument when their task, stream or link counts differ).
/// `title` goes to otherData.title (a scenario name, for the reader).
std::string chrome_trace_json(const StepGraph& graph, const SimResult& result, const std::string& title);

}  // namespace stepcast::sim
