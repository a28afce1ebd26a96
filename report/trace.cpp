#include "report/trace.hpp"

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <vector>

namespace stepcast::sim {

namespace {

/// Keys in the order written, so a reader sees name, ph, ts, ... first.
using json = nlohmann::ordered_json;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

/// Trace timestamps and durations are microseconds (Trace Event Format, "ts" and "dur").
double us(Time ns) { return static_cast<double>(ns) / 1000.0; }

/// Process ids: rank class c is c + 1 (pid 0 reads as "no process" in some viewers), the
/// links process follows the last class.
int class_pid(int rank_class) { return rank_class + 1; }

json metadata(const char* what, int pid, int tid, json args) {
  return {{"name", what}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

json counter(const std::string& name, int pid, Time at, const char* series, double value) {
  return {{"name", name}, {"ph", "C"}, {"ts", us(at)}, {"pid", pid}, {"args", {{series, value}}}};
}

/// "ring", or "ring+tree" when the phases of a collective use different algorithms.
std::string distinct_joined(const std::vector<CollectivePhase>& phases, std::string CollectivePhase::*field) {
  std::vector<std::string> seen;
  for (const CollectivePhase& ph : phases) {
    const std::string& v = ph.*field;
    if (v.empty()) continue;
    bool dup = false;
    for (const std::string& s : seen) dup = dup || s == v;
    if (!dup) seen.push_back(v);
  }
  std::string out;
  for (const std::string& s : seen) out += (out.empty() ? "" : "+") + s;
  return out;
}

std::string process_name(const RankClass& rc) {
  return "GPU, representative of " + std::to_string(rc.ranks) + (rc.ranks == 1 ? " rank" : " ranks") + " (" + rc.name +
         ")";
}

json task_args(const StepGraph& g, const Task& t) {
  json args = json::object();
  if (t.kind == TaskKind::compute) {
    if (t.flops > 0) args["flops"] = t.flops;  // 0: the lowering was given no FLOP count
    args["work_at_full_speed_s"] = t.work_s;
  } else {
    const CollectiveOp& op = g.ops.at(static_cast<std::size_t>(t.op));
    args["bytes"] = op.bytes;
    args["collective"] = std::string(name(op.collective));
    args["purpose"] = op.purpose;
    args["level"] = std::string(name(op.level));
    args["algorithm"] = distinct_joined(op.phases, &CollectivePhase::algorithm);
    args["protocol"] = distinct_joined(op.phases, &CollectivePhase::protocol);
    args["phases"] = op.phases.size();
  }
  if (t.alloc_bytes != 0) args["alloc_bytes"] = t.alloc_bytes;
  if (t.free_bytes != 0) args["free_bytes"] = t.free_bytes;
  return args;
}

}  // namespace

std::string chrome_trace_json(const StepGraph& g, const SimResult& r, const std::string& title) {
  if (r.tasks.size() != g.tasks.size() || r.streams.size() != g.streams.size() || r.links.size() != g.links.size())
    throw std::invalid_argument("chrome_trace_json: the simulation result does not belong to the step graph (" +
                                std::to_string(r.tasks.size()) + " task records for " + std::to_string(g.tasks.size()) +
                                " tasks)");
  json events = json::array();

  // Processes (rank classes) and threads (streams). tid = stream index + 1.
  for (std::size_t c = 0; c < g.classes.size(); ++c) {
    const int pid = class_pid(static_cast<int>(c));
    events.push_back(metadata("process_name", pid, 0, {{"name", process_name(g.classes[c])}}));
    events.push_back(metadata("process_sort_index", pid, 0, {{"sort_index", static_cast<int>(c)}}));
  }
  for (std::size_t s = 0; s < g.streams.size(); ++s) {
    const Stream& st = g.streams[s];
    const int pid = class_pid(st.rank_class);
    const int tid = static_cast<int>(s) + 1;
    // Compute streams sort above communication streams; ties keep the graph's order.
    const int sort = (st.kind == StreamKind::compute ? 0 : 1'000'000) + static_cast<int>(s);
    events.push_back(metadata("thread_name", pid, tid, {{"name", st.name}}));
    events.push_back(metadata("thread_sort_index", pid, tid, {{"sort_index", sort}}));
  }

  // One complete event per task.
  for (std::size_t t = 0; t < g.tasks.size(); ++t) {
    const Task& task = g.tasks[t];
    const TaskRecord& rec = r.tasks[t];
    events.push_back({{"name", task.name},
                      {"cat", task.category},
                      {"ph", "X"},
                      {"ts", us(rec.start)},
                      {"dur", us(rec.end - rec.start)},
                      {"pid", class_pid(g.streams[task.stream].rank_class)},
                      {"tid", task.stream + 1},
                      {"args", task_args(g, task)}});
  }

  // Memory of the representative rank (class 0), GiB.
  if (!g.classes.empty())
    for (const MemorySample& m : r.memory_timeline)
      events.push_back(counter("memory", class_pid(0), m.at, "allocated_GiB", m.bytes / kGiB));

  // Links that carried traffic, utilization in percent of capacity.
  const int links_pid = class_pid(static_cast<int>(g.classes.size()));
  bool any_link = false;
  for (std::size_t l = 0; l < r.links.size(); ++l) {
    const Resource& res = r.links[l];
    if (res.busy_ns <= 0 || res.timeline.empty()) continue;
    any_link = true;
    const std::string& name = g.links[l].name;
    if (res.timeline.front().at > 0) events.push_back(counter(name, links_pid, 0, "utilization_percent", 0.0));
    for (const UtilizationSample& u : res.timeline)
      events.push_back(counter(name, links_pid, u.at, "utilization_percent", 100.0 * u.utilization));
  }
  if (any_link) {
    events.push_back(metadata("process_name", links_pid, 0, {{"name", "links"}}));
    events.push_back(
        metadata("process_sort_index", links_pid, 0, {{"sort_index", static_cast<int>(g.classes.size())}}));
  }

  json doc;
  doc["traceEvents"] = std::move(events);
  doc["displayTimeUnit"] = "ms";
  doc["otherData"] = {{"title", title},
                      {"generator", "stepcast discrete-event simulation"},
                      {"time_unit", "ts and dur in microseconds of simulated time"},
                      {"step_time_s", r.step_s()},
                      {"tasks", g.tasks.size()},
                      {"simulation_events", r.events},
                      {"compute_busy_s", to_seconds(r.compute_busy_ns)},
                      {"comm_busy_s", to_seconds(r.comm_busy_ns)},
                      {"comm_exposed_s", r.comm_exposed_s()}};
  // Free text (task and link names) is ours, but replace rather than throw on bad UTF-8.
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace stepcast::sim
