#include "simulator/lowering_common.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace stepcast::sim::lowering {

namespace {

std::vector<int> shifted(const std::vector<int>& deps, int k) {
  std::vector<int> out(deps);
  for (int& d : out) d += k;
  return out;
}

/// The first of the plan's fabrics with a spine level, or null.
const SpineLevel* plan_spine(const CostedStep& p) {
  for (const CommFabric* f : {&p.fabric, &p.tp_fabric, &p.pp_fabric})
    if (f->spine && f->spine->crossing > 0) return &*f->spine;
  return nullptr;
}

double spine_oversubscription(const CostedStep& p) {
  const SpineLevel* s = plan_spine(p);
  return s ? s->oversubscription : 1.0;
}

}  // namespace

Builder::Builder(const CostedStep& plan, const StreamLayout& layout) : p_(plan) {
  std::vector<RankGroup> groups = p_.groups;
  if (groups.empty()) groups.push_back(RankGroup{"all ranks", p_.gpus, p_.nodes, 1.0, 1.0});
  for (const RankGroup& grp : groups) add_class(grp, groups.size() > 1, layout);
  classes_ = static_cast<int>(g_.classes.size());
  const double L = p_.layers;
  fwd_s_ = std::max(0.0, p_.micro.forward_s - p_.micro.head_forward_s) / L;
  bwd_s_ = std::max(0.0, p_.micro.backward_s - p_.micro.head_backward_s) / L;
  rec_s_ = p_.micro.recompute_s / L;
}

void Builder::add_class(const RankGroup& grp, bool several, const StreamLayout& layout) {
  RankClass rc;
  rc.name = grp.name;
  rc.ranks = grp.ranks;
  rc.nodes = grp.nodes;
  rc.compute_speed = grp.compute_speed;
  rc.comm_slowdown = p_.comm_slowdown;
  rc.static_memory_bytes = p_.static_memory_bytes;
  const int c = static_cast<int>(g_.classes.size());
  g_.classes.push_back(rc);
  const std::string who = several ? " [" + grp.name + "]" : "";
  if (p_.gpus_per_node > 1 || p_.layout.tp > 1) {  // TP groups share each GPU's links with DP traffic
    const FabricLevel& intra = p_.layout.tp > 1 ? p_.tp_fabric.intra : p_.fabric.intra;
    g_.classes[c].intra_resource =
        g_.add_link(fmt::format("intra-node ring per GPU ({}){}", intra.kind, who), intra.bw_GBps * grp.link_speed);
  }
  if (p_.nodes > 1 && (p_.fabric.inter || p_.tp_fabric.inter))
    // The node's NICs: a fabric shared by several groups per node carries 1/nic_sharing of
    // them per group (fabric.hpp), and its phases' inter loads count the node's bytes.
    g_.classes[c].nic_resource =
        g_.add_link(fmt::format("NICs per node ({}){}", (p_.fabric.inter ? p_.fabric : p_.tp_fabric).inter->kind, who),
                    node_nic_GBps(p_) * grp.link_speed);
  if (const double spine = spine_GBps(p_); spine > 0)
    g_.classes[c].spine_resource = g_.add_link(
        fmt::format("spine uplinks per node (1:{:g}){}", spine_oversubscription(p_), who), spine * grp.link_speed);
  const int cs = g_.add_stream("compute", StreamKind::compute, c);
  compute_.push_back(cs);
  if (p_.comm_on_compute_stream) {
    gather_.push_back(cs);
    reduce_.push_back(cs);
    return;
  }
  const int gs = g_.add_stream(layout.gather_name, StreamKind::communication, c);
  gather_.push_back(gs);
  reduce_.push_back(layout.separate_reduce ? g_.add_stream("nccl reduce", StreamKind::communication, c) : gs);
}

int Builder::collective(Lane lane, std::string name, std::string purpose, Collective c, double bytes, FabricScope level,
                        const std::vector<int>& deps, double alloc, double free) {
  const CommFabric f = restrict_fabric(p_.fabric, level);
  std::vector<CollectivePhase> phases;
  if (f.ranks() > 1 && bytes > 0) phases = collective_phases(c, bytes, f, p_.algorithm);
  if (phases.size() == 1) use_measurement(phases[0], f);
  std::vector<std::pair<int, std::vector<int>>> members;
  for (int k = 0; k < classes_; ++k)
    members.push_back({lane == Lane::gather ? gather_[k] : reduce_[k], shifted(deps, k)});
  const auto ids =
      g_.add_collective(std::move(name), std::move(purpose), level, c, bytes, std::move(phases), std::move(members));
  for (int id : ids) {
    g_.tasks[id].alloc_bytes = alloc;
    g_.tasks[id].free_bytes = free;
  }
  return ids[0];
}

TpCosted cost_tp_collective(const CostedStep& p, const TpCollective& tc) {
  TpCosted out{fmt::format("tensor-parallel {}", name(tc.op)), {}};
  std::vector<CollectivePhase>& phases = out.phases;
  if (p.layout.tp > 1 && tc.bytes > 0) phases = collective_phases(tc.op, tc.bytes, p.tp_fabric, p.algorithm);
  if (tc.overlap == TpOverlap::none || phases.empty()) return out;
  // What the GEMM beside it leaves exposed, as the MoE shared-expert overlap's phase: a
  // latency with no bytes left on the links.
  double alone_s = 0;
  for (const CollectivePhase& ph : phases) alone_s += ph.time_s();
  CollectivePhase exposed = phases.front();
  exposed.latency_s = tp_overlap_exposed_s(tc, alone_s);
  exposed.bytes = 0;
  exposed.algorithm = "userbuffers (exposed part beside its GEMM)";
  out.purpose += " (exposed part)";
  phases = {exposed};
  return out;
}

const TpCosted& Builder::tp_costed(const TpCollective& tc) {
  for (const auto& [of, costed] : tp_costed_)
    if (of == &tc) return costed;
  tp_costed_.emplace_back(&tc, cost_tp_collective(p_, tc));
  return tp_costed_.back().second;
}

int Builder::tp_collective(std::string name, const TpCollective& tc, const std::vector<int>& deps) {
  const Collective c = tc.op;
  const double bytes = tc.bytes;
  const TpCosted& costed = tp_costed(tc);
  std::string purpose = costed.purpose;
  std::vector<CollectivePhase> phases = costed.phases;
  std::vector<std::pair<int, std::vector<int>>> members;
  for (int k = 0; k < classes_; ++k) members.push_back({compute_[k], shifted(deps, k)});
  // A TP group wider than a node spans its GPUs on several nodes (level "all").
  const FabricScope level = p_.tp_fabric.inter ? FabricScope::all : FabricScope::intra_node;
  const auto ids =
      g_.add_collective(std::move(name), std::move(purpose), level, c, bytes, std::move(phases), std::move(members));
  g_.ops[g_.tasks[ids[0]].op].ranks = p_.layout.tp;
  return ids[0];
}

int Builder::layer_collective(std::string name, const LayerCollective& c, const std::vector<int>& deps) {
  std::vector<std::pair<int, std::vector<int>>> members;
  for (int k = 0; k < classes_; ++k) members.push_back({compute_[k], shifted(deps, k)});
  const auto ids =
      g_.add_collective(std::move(name), c.purpose, FabricScope::all, c.op, c.bytes, c.phases, std::move(members));
  g_.ops[g_.tasks[ids[0]].op].ranks = c.ranks;
  return ids[0];
}

/// Replaces a phase's latency and rate by a measurement of the same collective on the same
/// ranks and nodes; loads shrink where the measurement beats the modelled link capacity,
/// so that alone the phase still runs at the measured rate.
void Builder::use_measurement(CollectivePhase& ph, const CommFabric& f) const {
  for (const MeasuredCollective& m : p_.measured_collectives) {
    if (m.collective != ph.collective || m.ranks != f.ranks() || m.nodes != f.nodes()) continue;
    ph.latency_s = m.latency_s;
    ph.algbw_GBps = m.algbw_GBps;
    if (ph.intra_load > 0) ph.intra_load = std::min(ph.intra_load, f.intra.bw_GBps / m.algbw_GBps);
    if (ph.inter_load > 0 && f.inter) ph.inter_load = std::min(ph.inter_load, f.inter->bw_GBps / m.algbw_GBps);
    ph.algorithm = "measured";
    return;
  }
}

int Builder::compute(const std::string& name, TaskCategory category, double s, double flops,
                     const std::vector<int>& deps, double alloc, double free) {
  int first = -1;
  for (int k = 0; k < classes_; ++k) {
    const int t = g_.add_compute(compute_[k], name, category, s, flops, shifted(deps, k));
    g_.tasks[t].alloc_bytes = alloc;
    g_.tasks[t].free_bytes = free;
    if (k == 0) first = t;
  }
  return first;
}

void Builder::add_free(int task, double bytes) {
  for (int k = 0; k < classes_; ++k) g_.tasks[task + k].free_bytes += bytes;
}

double spine_GBps(const CostedStep& p) {
  const SpineLevel* s = plan_spine(p);
  return s ? s->bw_GBps : 0.0;
}

double node_nic_GBps(const CostedStep& p) {
  for (const CommFabric* f : {&p.fabric, &p.tp_fabric, &p.pp_fabric})
    if (f->inter) return f->inter->bw_GBps * f->nic_sharing;
  return 0.0;
}

std::string micro_suffix(const CostedStep& p, std::int64_t k) {
  return p.micro_steps > 1 ? fmt::format(" m{}", k) : "";
}

namespace {

/// The TP collectives `list` after compute task `after`, in order on the compute stream;
/// returns the last one (or `after` when there are none).
int tp_collectives(Builder& b, const std::vector<TpCollective>& list, int after, const std::string& what) {
  int last = after;
  for (const TpCollective& c : list)
    for (int n = 0; n < c.count; ++n) last = b.tp_collective(fmt::format("tp {} {}", name(c.op), what), c, {last});
  return last;
}

/// The costed layer collectives `list` after task `after`, in order; returns the last one.
int layer_collectives(Builder& b, const std::vector<LayerCollective>& list, int after, const std::string& what) {
  int last = after;
  for (const LayerCollective& c : list)
    last = b.layer_collective(fmt::format("{} {} {}", c.tag, name(c.op), what), c, {last});
  return last;
}

}  // namespace

MicroStepTasks micro_step_program(Builder& b, std::int64_t k, const ProgramHooks& hooks) {
  const CostedStep& p = b.step();
  const std::string mk = micro_suffix(p, k);
  const int L = p.layers;
  MicroStepTasks t;
  t.forward.assign(L + 1, -1);
  t.backward.assign(L + 2, -1);
  for (int i = 1; i <= L; ++i) {
    const std::vector<int> deps = hooks.before_forward ? hooks.before_forward(i, t) : std::vector<int>{};
    t.forward[i] = b.compute(fmt::format("fwd L{}{}", i, mk), TaskCategory::forward, b.forward_s(),
                             p.layer_flops_forward, deps, p.activation_bytes_per_layer, hooks.forward_free_bytes);
    const int cp = layer_collectives(b, p.exchange_forward, t.forward[i], fmt::format("fwd L{}{}", i, mk));
    tp_collectives(b, p.tp_forward, cp, fmt::format("fwd L{}{}", i, mk));
  }
  const int head = b.compute("fwd head" + mk, TaskCategory::head, p.micro.head_forward_s, p.head_flops_forward,
                             hooks.head_forward_deps, p.logits_bytes);
  tp_collectives(b, p.tp_head_forward, head, "fwd head" + mk);
  t.head_backward = b.compute("bwd head" + mk, TaskCategory::head, p.micro.head_backward_s, p.head_flops_backward, {},
                              0, p.logits_bytes);
  tp_collectives(b, p.tp_head_backward, t.head_backward, "bwd head" + mk);
  for (int i = L; i >= 1; --i) {
    const std::vector<int> deps = hooks.before_backward ? hooks.before_backward(i, t) : std::vector<int>{};
    if (b.recompute_s() > 0) {
      const int rec = b.compute(fmt::format("recompute L{}{}", i, mk), TaskCategory::recompute, b.recompute_s(),
                                p.layer_flops_recompute, deps);
      const int cp = layer_collectives(b, p.exchange_recompute, rec, fmt::format("recompute L{}{}", i, mk));
      tp_collectives(b, p.tp_recompute, cp, fmt::format("recompute L{}{}", i, mk));
    }
    t.backward[i] =
        b.compute(fmt::format("bwd L{}{}", i, mk), TaskCategory::backward, b.backward_s(), p.layer_flops_backward, deps,
                  hooks.backward_alloc_bytes, p.activation_bytes_per_layer + hooks.backward_extra_free_bytes);
    const int cp = layer_collectives(b, p.exchange_backward, t.backward[i], fmt::format("bwd L{}{}", i, mk));
    tp_collectives(b, p.tp_backward, cp, fmt::format("bwd L{}{}", i, mk));
    t.backward[i] = cp;  // the K/V weight gradients need the ring's dK and dV: ready after the exchange
    if (hooks.after_backward) hooks.after_backward(i, t.backward[i]);
  }
  return t;
}

std::vector<Chunk> replicated_micro_step(Builder& b, std::int64_t k, const ProgramHooks& hooks) {
  const CostedStep& p = b.step();
  const MicroStepTasks t = micro_step_program(b, k, hooks);
  std::vector<Chunk> chunks;
  chunks.push_back({t.head_backward, p.head_grad_bytes});
  for (int i = p.layers; i >= 1; --i) chunks.push_back({t.backward[i], p.layer_grad_bytes});
  chunks.back().bytes += p.root_grad_bytes - p.head_grad_bytes;  // embeddings: ready last
  return chunks;
}

void reduce_buckets(Builder& b, const std::vector<Chunk>& chunks, Collective c, const std::string& purpose,
                    double first_cap, const std::string& suffix, bool mark_last_unhideable) {
  const CostedStep& p = b.step();
  double total = 0;
  for (const Chunk& ch : chunks) total += ch.bytes;
  bucket_count(total, first_cap, p.bucket_bytes);  // InternalError beyond kMaxBuckets, before building any
  double cap = first_cap, fill = 0;
  int n = 0, ready = -1;
  auto launch = [&] {
    b.last_reduce = b.collective(Lane::reduce, fmt::format("{} bucket {}{}", name(c), n++, suffix), purpose, c, fill,
                                 FabricScope::all, {ready});
    fill = 0;
    cap = p.bucket_bytes;
  };
  for (const Chunk& ch : chunks) {
    double left = ch.bytes;
    ready = ch.task;
    while (left > 0) {
      const double take = std::min(left, cap - fill);
      fill += take;
      left -= take;
      if (fill >= cap * (1 - 1e-12)) launch();
      if (left <= ch.bytes * 1e-12) break;
    }
  }
  if (fill > 0) launch();
  if (mark_last_unhideable && b.last_reduce >= 0) b.mark_unhideable(b.last_reduce);
}

}  // namespace stepcast::sim::lowering
