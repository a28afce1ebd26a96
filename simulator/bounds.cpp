#include "simulator/bounds.hpp"

#include <algorithm>

namespace stepcast::sim {

StepBounds closed_form_bounds(const StepGraph& g) {
  StepBounds b;
  for (const Task& t : g.tasks) {
    if (t.kind != TaskKind::compute || g.streams[t.stream].rank_class != 0) continue;
    const double s = t.work_s / g.classes[0].compute_speed;
    b.compute_s += s;
    if (t.category == "optimizer") b.optimizer_s += s;
  }
  std::vector<double> link_s(g.links.size(), 0.0);
  const RankClass& rc = g.classes[0];
  for (const CollectiveOp& op : g.ops) {
    for (const CollectivePhase& ph : op.phases) {
      b.comm_total_s += ph.time_s();
      if (rc.intra_resource >= 0)
        link_s[rc.intra_resource] += ph.bytes * ph.intra_load / (g.links[rc.intra_resource].capacity_GBps * 1e9);
      if (rc.nic_resource >= 0)
        link_s[rc.nic_resource] += ph.bytes * ph.inter_load / (g.links[rc.nic_resource].capacity_GBps * 1e9);
    }
  }
  for (int op : g.unhideable_ops)
    for (const CollectivePhase& ph : g.ops[op].phases) b.unhideable_s += ph.time_s();
  for (double s : link_s) b.network_floor_s = std::max(b.network_floor_s, s);
  b.no_overlap_s = b.compute_s + b.comm_total_s;
  b.perfect_overlap_s =
      std::min(b.no_overlap_s, std::max(b.compute_s + b.unhideable_s, b.network_floor_s + b.optimizer_s));
  return b;
}

}  // namespace stepcast::sim
