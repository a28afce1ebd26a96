#include "simulator/bounds.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

namespace stepcast::sim {

double phase_alone_s(const StepGraph& g, const CollectiveOp& op, const CollectivePhase& ph) {
  // Alone, a phase runs at its algbw unless a member's link is slower than modelled.
  auto capacity_Bps = [&](int link) { return g.links[link].capacity_GBps * 1e9; };
  double rate_Bps = ph.algbw_GBps * 1e9;
  for (int m : op.members) {
    const RankClass& rc = g.classes[g.streams[g.tasks[m].stream].rank_class];
    for_each_link_load(rc, ph,
                       [&](int link, double load) { rate_Bps = std::min(rate_Bps, capacity_Bps(link) / load); });
  }
  return ph.latency_s + (ph.bytes > 0 ? ph.bytes / rate_Bps : 0.0);
}

StepBounds closed_form_bounds(const StepGraph& g) {
  StepBounds b;
  // The slowest class sets the pace: every collective waits for all of them.
  std::vector<double> compute(g.classes.size(), 0.0), optimizer(g.classes.size(), 0.0);
  for (std::size_t i = 0; i < g.tasks.size(); ++i) {
    const Task& t = g.tasks[i];
    if (t.kind != TaskKind::compute) continue;
    const int c = g.streams[t.stream].rank_class;
    // A task of the repeated micro-step stands for 1 + repeat_count (step_graph.hpp).
    const double s = t.work_s / g.classes[c].compute_speed * g.multiplicity(static_cast<int>(i));
    compute[c] += s;
    if (t.category == TaskCategory::optimizer) optimizer[c] += s;
  }
  for (std::size_t c = 0; c < g.classes.size(); ++c) {
    if (compute[c] >= b.compute_s) {
      b.compute_s = compute[c];
      b.optimizer_s = optimizer[c];
    }
  }

  std::vector<char> unhideable(g.ops.size(), 0);
  for (int op : g.unhideable_ops) unhideable[op] = 1;
  std::vector<double> link_s(g.links.size(), 0.0);
  auto capacity_Bps = [&](int link) { return g.links[link].capacity_GBps * 1e9; };
  for (const CollectiveOp& op : g.ops) {
    const double times = g.op_multiplicity(static_cast<int>(&op - g.ops.data()));
    for (const CollectivePhase& ph : op.phases) {
      for (int m : op.members) {
        const RankClass& rc = g.classes[g.streams[g.tasks[m].stream].rank_class];
        for_each_link_load(
            rc, ph, [&](int link, double load) { link_s[link] += times * ph.bytes * load / capacity_Bps(link); });
      }
      const double alone_s = phase_alone_s(g, op, ph);
      b.comm_total_s += times * alone_s;
      if (unhideable[&op - g.ops.data()]) b.unhideable_s += alone_s;
    }
  }
  for (double s : link_s) b.network_floor_s = std::max(b.network_floor_s, s);
  b.no_overlap_s = b.compute_s + b.comm_total_s;
  b.perfect_overlap_s =
      std::min(b.no_overlap_s, std::max(b.compute_s + b.unhideable_s, b.network_floor_s + b.optimizer_s));
  if (g.pipeline) {
    // Stages take turns: at worst one task of one stage runs at a time. A stage's last
    // gradient send may still cross its link during its optimizer, so the floor stands alone.
    b.no_overlap_s = std::accumulate(compute.begin(), compute.end(), 0.0) + b.comm_total_s;
    b.perfect_overlap_s = std::min(b.no_overlap_s, std::max(b.compute_s + b.unhideable_s, b.network_floor_s));
  }
  return b;
}

namespace {

/// A collective's duration alone: its phases one after the other.
double op_alone_s(const StepGraph& g, const CollectiveOp& op) {
  double s = 0;
  for (const CollectivePhase& ph : op.phases) s += phase_alone_s(g, op, ph);
  return s;
}

}  // namespace

double critical_path_s(const StepGraph& g) {
  const std::size_t n = g.tasks.size();
  // Edges: each dependency, and each task's predecessor on its stream.
  std::vector<int> pending(n, 0), succ_begin(n + 1, 0), last(g.streams.size(), -1), prev(n, -1);
  for (std::size_t i = 0; i < n; ++i) {
    const Task& t = g.tasks[i];
    int& l = last[static_cast<std::size_t>(t.stream)];
    prev[i] = l;
    l = static_cast<int>(i);
    if (prev[i] >= 0) ++succ_begin[static_cast<std::size_t>(prev[i]) + 1];
    for (int d : t.deps) ++succ_begin[static_cast<std::size_t>(d) + 1];
    pending[i] = static_cast<int>(t.deps.size()) + (prev[i] >= 0 ? 1 : 0);
  }
  for (std::size_t i = 0; i < n; ++i) succ_begin[i + 1] += succ_begin[i];
  std::vector<int> succ(static_cast<std::size_t>(succ_begin[n])), fill(succ_begin.begin(), succ_begin.end() - 1);
  for (std::size_t i = 0; i < n; ++i) {
    if (prev[i] >= 0) succ[static_cast<std::size_t>(fill[static_cast<std::size_t>(prev[i])]++)] = static_cast<int>(i);
    for (int d : g.tasks[i].deps)
      succ[static_cast<std::size_t>(fill[static_cast<std::size_t>(d)]++)] = static_cast<int>(i);
  }
  // Kahn's order; a collective ends when its last member is ready plus its time alone.
  std::vector<double> ready(n, 0.0), end(n, 0.0), op_start(g.ops.size(), 0.0);
  std::vector<int> op_waiting(g.ops.size(), 0), stack;
  for (std::size_t o = 0; o < g.ops.size(); ++o) op_waiting[o] = static_cast<int>(g.ops[o].members.size());
  for (std::size_t i = 0; i < n; ++i)
    if (pending[i] == 0) stack.push_back(static_cast<int>(i));
  std::size_t done = 0;
  double path = 0;
  auto finish = [&](int t, double at) {
    end[static_cast<std::size_t>(t)] = at;
    path = std::max(path, at);
    ++done;
    for (int k = succ_begin[static_cast<std::size_t>(t)]; k < succ_begin[static_cast<std::size_t>(t) + 1]; ++k) {
      const auto s = static_cast<std::size_t>(succ[static_cast<std::size_t>(k)]);
      ready[s] = std::max(ready[s], at);
      if (--pending[s] == 0) stack.push_back(static_cast<int>(s));
    }
  };
  while (!stack.empty()) {
    const int t = stack.back();
    stack.pop_back();
    const Task& task = g.tasks[static_cast<std::size_t>(t)];
    if (task.kind == TaskKind::compute) {
      const RankClass& rc = g.classes[static_cast<std::size_t>(g.streams[task.stream].rank_class)];
      finish(t, ready[static_cast<std::size_t>(t)] + task.work_s / rc.compute_speed);
      continue;
    }
    const auto op = static_cast<std::size_t>(task.op);
    op_start[op] = std::max(op_start[op], ready[static_cast<std::size_t>(t)]);
    if (--op_waiting[op] > 0) continue;
    const double at = op_start[op] + op_alone_s(g, g.ops[op]);
    for (int m : g.ops[op].members) finish(m, at);
  }
  return done == n ? path : 0.0;  // a cycle: no order to bound
}

}  // namespace stepcast::sim
