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
    for_each_link_load(rc, ph, [&](int link, double load) { rate_Bps = std::min(rate_Bps, capacity_Bps(link) / load); });
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
        for_each_link_load(rc, ph, [&](int link, double load) {
          link_s[link] += times * ph.bytes * load / capacity_Bps(link);
        });
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

}  // namespace stepcast::sim
