#include "simulator/step_graph.hpp"

#include "simulator/internal_error.hpp"

#include <cmath>

namespace stepcast::sim {

std::string_view name(TaskCategory c) {
  switch (c) {
    case TaskCategory::forward:
      return "forward";
    case TaskCategory::backward:
      return "backward";
    case TaskCategory::recompute:
      return "recompute";
    case TaskCategory::optimizer:
      return "optimizer";
    case TaskCategory::head:
      return "head";
    case TaskCategory::all_reduce:
      return "all_reduce";
    case TaskCategory::all_gather:
      return "all_gather";
    case TaskCategory::reduce_scatter:
      return "reduce_scatter";
    case TaskCategory::broadcast:
      return "broadcast";
    case TaskCategory::all_to_all:
      return "all_to_all";
  }
  return "?";
}

TaskCategory parse_task_category(std::string_view n) {
  for (int i = 0; i <= static_cast<int>(TaskCategory::all_to_all); ++i)
    if (name(static_cast<TaskCategory>(i)) == n) return static_cast<TaskCategory>(i);
  throw InternalError("unknown task category \"" + std::string(n) + "\"");
}

TaskCategory category_of(Collective c) {
  switch (c) {
    case Collective::all_reduce:
      return TaskCategory::all_reduce;
    case Collective::all_gather:
      return TaskCategory::all_gather;
    case Collective::reduce_scatter:
      return TaskCategory::reduce_scatter;
    case Collective::broadcast:
      return TaskCategory::broadcast;
    case Collective::all_to_all:
      return TaskCategory::all_to_all;
  }
  return TaskCategory::all_reduce;
}

double StepGraph::multiplicity(int task) const {
  if (repeat_count == 0 || repeat_after < 0) return 1.0;
  const MicroStepSpan& s = micro_steps[static_cast<std::size_t>(repeat_after)];
  return task >= s.first_task && task < s.end_task ? 1.0 + static_cast<double>(repeat_count) : 1.0;
}

int StepGraph::add_stream(std::string name, StreamKind kind, int rank_class) {
  if (rank_class < 0 || rank_class >= static_cast<int>(classes.size()))
    throw InternalError("stream \"" + name + "\" of a rank class that does not exist");
  streams.push_back(Stream{std::move(name), kind, rank_class});
  return static_cast<int>(streams.size()) - 1;
}

int StepGraph::add_link(std::string name, double capacity_GBps) {
  if (!(capacity_GBps > 0) || !std::isfinite(capacity_GBps))
    throw InternalError("link \"" + name + "\" with a capacity of " + std::to_string(capacity_GBps) + " GB/s");
  links.push_back(LinkResource{std::move(name), capacity_GBps});
  return static_cast<int>(links.size()) - 1;
}

int StepGraph::add_compute(int stream, std::string name, Category category, double work_s, double flops,
                           std::vector<int> deps) {
  if (stream < 0 || stream >= static_cast<int>(streams.size()))
    throw InternalError("task \"" + name + "\" on a stream that does not exist");
  if (tasks.size() >= static_cast<std::size_t>(kMaxTasks))
    throw InternalError("a step graph of more than " + std::to_string(kMaxTasks) + " tasks");
  if (!(work_s >= 0) || !std::isfinite(work_s))
    throw InternalError("task \"" + name + "\" of " + std::to_string(work_s) + " s");
  Task t;
  t.name = std::move(name);
  t.category = category;
  t.kind = TaskKind::compute;
  t.stream = stream;
  t.work_s = work_s;
  t.flops = flops;
  t.deps = std::move(deps);
  tasks.push_back(std::move(t));
  return static_cast<int>(tasks.size()) - 1;
}

std::vector<int> StepGraph::add_collective(std::string name, std::string purpose, FabricScope level, Collective c,
                                           double bytes, std::vector<CollectivePhase> phases,
                                           std::vector<std::pair<int, std::vector<int>>> members) {
  if (members.empty()) throw InternalError("collective \"" + name + "\" without members");
  if (tasks.size() + members.size() > static_cast<std::size_t>(kMaxTasks))
    throw InternalError("a step graph of more than " + std::to_string(kMaxTasks) + " tasks");
  CollectiveOp op;
  op.name = name;
  op.purpose = std::move(purpose);
  op.level = level;
  op.collective = c;
  op.bytes = bytes;
  op.phases = std::move(phases);
  const int op_id = static_cast<int>(ops.size());
  std::vector<int> ids;
  ids.reserve(members.size());
  for (std::size_t k = 0; k < members.size(); ++k) {
    Task t;
    t.name = k + 1 < members.size() ? name : std::move(name);  // op.name holds a copy
    t.category = category_of(c);
    t.kind = TaskKind::collective;
    t.stream = members[k].first;
    t.op = op_id;
    t.deps = std::move(members[k].second);
    tasks.push_back(std::move(t));
    ids.push_back(static_cast<int>(tasks.size()) - 1);
  }
  op.members = ids;
  ops.push_back(std::move(op));
  return ids;
}

}  // namespace stepcast::sim
