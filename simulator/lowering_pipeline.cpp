/// \file
/// Pipeline parallelism (CostedStep::pp > 1): each stage is one rank class
/// (all its data-parallel and tensor-parallel ranks alike), and its compute stream plays the
/// stage's program from schedules.hpp, so the bubble, the point-to-point sends and each
/// stage's peak activation memory come out of the simulation.
///
///  - Model chunks: virtual stage k = c·p + i holds layers_per_chunk(L, p, v)[k] layers
///    (model/parallel.hpp), numbered in virtual-stage order; the LM head runs on the last
///    virtual stage (its forward after the chunk's layers, its backward before them).
///  - Forward of (micro-batch m, chunk): per layer the forward time of one micro-batch
///    (Builder's fwd_s: (forward_s - head_forward_s) / L), allocating the layer's activations.
///  - Backward: the head's backward, then per layer (last first) the recompute under full
///    recompute and the backward, which frees the layer's activations. zb-h1 splits each
///    layer's backward into B (input gradient) and W (weight gradient), each half the
///    layer's backward time and FLOPs; the recompute and the head's backward go with B, and
///    the activations are freed by W (the weight gradient reads the layer's saved inputs).
///  - Point-to-point: the activation of (m, k) sent from virtual stage k to k+1 after the
///    forward, its gradient from k+1 to k after the backward (or B): a two-member collective
///    (the sender's and the receiver's p2p streams, one per direction and peer so that a
///    send never waits behind an unrelated receive) of one phase: CostedStep::p2p_latency_s,
///    then p2p_bytes at the pp_fabric link's rate (the NICs when the stages sit on different
///    nodes, else the intra-node link), loading that link of both stages. The forward of
///    (m, k) waits for its activation, the backward of (m, k) for its gradient. Played as a
///    two-rank broadcast (bus factor 1: the bytes cross the link once).
///  - Data parallelism within each stage (ddp or zero1 only): after the stage's last
///    backward, its gradients (its layers, the root unit on the first stage, the LM head on
///    the last) in one collective over `fabric`, the contiguous buffer Megatron reduces at
///    the end of the pipeline flush: all-reduce (ddp), or reduce-scatter, the sharded
///    optimizer and the all-gather of the updated parameters (zero1, Megatron's distributed
///    optimizer). The optimizer time is optimizer_s x the stage's share of the parameters.
/// The step ends when every stage is done.
///
/// The steady state in closed form (schedules.hpp steady_period_micro_batches): a stage's
/// program is its warm-up forwards, then pairs (a forward and the backward work up to the next
/// forward), unit j holding pairs j·u .. (j+1)·u - 1 with u = period·v. The graph holds the
/// program for M_e micro-batches (M_e ≡ M modulo the period, the fewest for which every stage
/// has units 0 .. R + 1), its tasks created unit by unit (unit j of stage 0, of stage 1, ...;
/// each op followed by its sends), one MicroStepSpan per unit up to R and one for the rest;
/// unit R stands for the (M - M_e)/period + 1 units of the steady state (StepGraph::repeat_count,
/// repetition.hpp). Ops after unit R carry the micro-batch numbers they have in the whole
/// program. lower_step starts from R = first_repeat_unit; where the simulation finds the units
/// around R not yet repeating exactly (a stage that runs ahead until the slack of the schedule
/// is used up, as zb-h1's deferred weight gradients allow), lower_step_longer makes it 2R + 1,
/// once; where they still do not, repetition.hpp adds them at the slowest stream's mean period.
#include "simulator/lowering_common.hpp"

#include "model/parallel.hpp"
#include "simulator/internal_error.hpp"
#include "simulator/schedules.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <numeric>
#include <stdexcept>

namespace stepcast::sim::lowering {

namespace {

/// One stage's streams; the p2p ones are added when first used (-1: none yet).
struct StageStreams {
  int compute = -1;
  int nccl = -1;
  int send_fwd = -1, recv_fwd = -1, send_bwd = -1, recv_bwd = -1;
};

/// The first and last task of one forward or backward op of one (micro-batch, chunk).
struct OpTasks {
  int first = -1;
  int last = -1;
};

enum class Part { whole, input, weight };

/// Throws std::invalid_argument when `p` cannot be lowered as a pipeline.
void check_pipeline_plan(const CostedStep& p) {
  auto refuse = [](const std::string& why) { throw std::invalid_argument("pipeline lowering: " + why); };
  if (p.layout.vpp < 1) refuse(fmt::format("vpp {} must be >= 1", p.layout.vpp));
  if (p.layout.dp_sharding != Strategy::ddp && p.layout.dp_sharding != Strategy::zero1)
    refuse(fmt::format("data-parallel sharding {} inside a stage: only ddp or zero1 are lowered with pp > 1",
                       name(p.layout.dp_sharding)));
  if (!p.groups.empty()) refuse("rank classes (stragglers) with pp > 1: every stage is one rank class");
  if (p.p2p_bytes < 0 || p.p2p_latency_s < 0) refuse("negative p2p bytes or latency");
  const double link_GBps = p.pp_fabric.inter ? p.pp_fabric.inter->bw_GBps : p.pp_fabric.intra.bw_GBps;
  if (p.p2p_bytes > 0 && !(link_GBps > 0)) refuse("p2p bytes on a pp_fabric link of no bandwidth");
  if (!p.stage_static_memory_bytes.empty() && static_cast<int>(p.stage_static_memory_bytes.size()) != p.layout.pp)
    refuse(fmt::format("{} stage static memories for {} stages", p.stage_static_memory_bytes.size(), p.layout.pp));
}

/// Which micro-batches the graph holds and which unit stands for the repeated ones.
struct Repetition {
  int micro_batches = 1;  ///< M_e: the program lowered
  int period = 1;         ///< micro-batches a unit carries
  int unit_pairs = 1;     ///< pairs a unit holds on each stage: period·v
  int repeat_unit = -1;   ///< R; -1: every unit explicit
  std::int64_t repeat_count = 0;
};

/// `R` units explicit before the repeated one (< 0: every micro-batch explicit).
Repetition plan_repetition(const CostedStep& p, int R) {
  const std::string_view sched = name(p.layout.schedule);
  const int P = p.layout.pp, v = p.layout.vpp;
  Repetition r;
  r.period = steady_period_micro_batches(sched, P);
  r.unit_pairs = std::max(1, r.period * v);
  if (R >= 0 && r.period > 0 && p.micro_steps > static_cast<std::int64_t>(R + 2) * r.period) {
    // The fewest micro-batches (as many modulo the period) that give every stage units 0 .. R + 1.
    int m = (R + 2) * r.period + static_cast<int>(p.micro_steps % r.period);
    auto enough = [&](int mb) {
      for (int i = 0; i < P; ++i)
        if (mb * v - warmup_forwards(sched, P, mb, v, i) < (R + 2) * r.unit_pairs) return false;
      return true;
    };
    while (m < p.micro_steps && !enough(m)) m += r.period;
    if (m < p.micro_steps) {
      r.micro_batches = m;
      r.repeat_unit = R;
      r.repeat_count = (p.micro_steps - m) / r.period;
      return r;
    }
  }
  if (p.micro_steps > INT_MAX)
    throw std::invalid_argument(fmt::format("pipeline lowering: {} micro-batches", p.micro_steps));
  r.micro_batches = static_cast<int>(p.micro_steps);
  return r;
}

class PipelineBuilder {
 public:
  PipelineBuilder(const CostedStep& p, int repeat_unit);
  StepGraph build();

 private:
  void add_stage(int i);
  int task(int stage, const std::string& name, TaskCategory c, double s, double flops, double alloc, double free);
  /// A TP collective as each layer plays it: its phases costed once.
  struct TpPlay {
    std::string name;  ///< "tp all_reduce ", the op's name before what it follows
    std::string purpose;
    std::vector<CollectivePhase> phases;
    Collective op = Collective::all_reduce;
    double bytes = 0;
    int count = 0;
  };
  std::vector<TpPlay> tp_plays(const std::vector<TpCollective>& list) const;
  int tp_after(int stage, const std::vector<TpPlay>& list, int after, const std::string& what);
  int cp_after(int stage, const std::vector<LayerCollective>& list, int after, const std::string& what);
  OpTasks forward(int m, int k);
  OpTasks backward(int m, int k, Part part);
  void play(int stage, const PipeOp& op);
  int p2p_stream(int stage, bool forward, bool send);
  int p2p(int from, int to, bool forward, int m, int k, int after);
  void receive(OpTasks& into, std::size_t at, std::vector<int>& pending, int recv);
  int stage_collective(int stage, const std::string& name, const std::string& purpose, Collective c, double bytes,
                       int after);
  void data_parallel(int stage, int last);
  void gather_params_first(int stage);
  /// The micro-batch number that names op tasks of explicit micro-batch m: m + the repeated
  /// units' micro-batches after unit R.
  std::int64_t label(int m) const { return m + (after_repeat_ ? shift_ : 0); }
  double stage_param_bytes(int i) const;
  double stage_grad_bytes(int i) const;
  /// The stage's share of the model's parameter bytes (of its layers when there are none).
  double stage_share(int i) const;

  const CostedStep& p_;
  const Repetition rep_;
  StepGraph g_;
  int P_ = 1, V_ = 1, M_ = 1;                    ///< stages, virtual stages, micro-batches held
  std::int64_t shift_ = 0;                       ///< micro-batches the repeated units add
  bool after_repeat_ = false;                    ///< lowering the units after R
  std::vector<int> chunk_layers_, first_layer_;  ///< per virtual stage
  std::vector<int> stage_layers_;
  std::vector<StageStreams> st_;
  std::vector<OpTasks> fwd_, bwd_;  ///< per m·V + k; bwd_: the whole backward or B
  /// Per m·V + k, the receive of the activation (gradient) that the forward (backward) of
  /// (m, k) waits for when it came before that op was lowered; -1: none.
  std::vector<int> fwd_recv_, bwd_recv_;
  std::vector<int> stage_first_gather_;  ///< each stage's first parameter all-gather; -1: none
  std::vector<int> stage_last_;          ///< each stage's last compute task; -1: none lowered yet
  /// Per stage, the tasks of the last micro-batch that finish a layer's weight gradients
  /// (its whole or weight backward), in the order they run (overlap_grad_reduce).
  std::vector<std::vector<int>> grad_ready_;
  double fwd_s_ = 0, bwd_s_ = 0, rec_s_ = 0;
  std::vector<TpPlay> tp_forward_, tp_backward_, tp_recompute_, tp_head_forward_, tp_head_backward_;
};

PipelineBuilder::PipelineBuilder(const CostedStep& p, int repeat_unit) : p_(p), rep_(plan_repetition(p, repeat_unit)) {
  P_ = p.layout.pp;
  V_ = p.layout.pp * p.layout.vpp;
  M_ = rep_.micro_batches;
  shift_ = rep_.repeat_count * rep_.period;
  if (2.0 * p.layers * M_ > kMaxTasks)
    throw InternalError(
        fmt::format("a pipeline of {} layers and {} micro-batches held: more than {} tasks", p.layers, M_, kMaxTasks));
  chunk_layers_ = p.chunk_layers.empty() ? layers_per_chunk(p.layers, p.layout.pp, p.layout.vpp) : p.chunk_layers;
  if (static_cast<int>(chunk_layers_.size()) != V_) throw InternalError("chunk layers: one count per chunk expected");
  stage_layers_.assign(P_, 0);
  for (int k = 0; k < V_; ++k) stage_layers_[k % P_] += chunk_layers_[k];
  first_layer_.assign(V_, 1);
  for (int k = 1; k < V_; ++k) first_layer_[k] = first_layer_[k - 1] + chunk_layers_[k - 1];
  const double L = p.layers;
  fwd_s_ = std::max(0.0, p.micro.forward_s - p.micro.head_forward_s) / L;
  bwd_s_ = std::max(0.0, p.micro.backward_s - p.micro.head_backward_s) / L;
  rec_s_ = p.micro.recompute_s / L;
  for (int i = 0; i < P_; ++i) add_stage(i);
  tp_forward_ = tp_plays(p.tp_forward);
  tp_backward_ = tp_plays(p.tp_backward);
  tp_recompute_ = tp_plays(p.tp_recompute);
  tp_head_forward_ = tp_plays(p.tp_head_forward);
  tp_head_backward_ = tp_plays(p.tp_head_backward);
  fwd_.assign(static_cast<std::size_t>(M_) * V_, OpTasks{});
  bwd_ = fwd_;
  fwd_recv_.assign(fwd_.size(), -1);
  bwd_recv_ = fwd_recv_;
  stage_first_gather_.assign(P_, -1);
  stage_last_.assign(P_, -1);
  grad_ready_.assign(P_, {});
}

double PipelineBuilder::stage_param_bytes(int i) const {
  return stage_layers_[i] * p_.layer_param_bytes + (i == 0 ? p_.root_param_bytes - p_.head_param_bytes : 0) +
         (i == P_ - 1 ? p_.head_param_bytes : 0);
}

double PipelineBuilder::stage_grad_bytes(int i) const {
  return stage_layers_[i] * p_.layer_grad_bytes + (i == 0 ? p_.root_grad_bytes - p_.head_grad_bytes : 0) +
         (i == P_ - 1 ? p_.head_grad_bytes : 0);
}

double PipelineBuilder::stage_share(int i) const {
  const double all_params = p_.layers * p_.layer_param_bytes + p_.root_param_bytes;
  return all_params > 0 ? stage_param_bytes(i) / all_params : static_cast<double>(stage_layers_[i]) / p_.layers;
}

void PipelineBuilder::add_stage(int i) {
  const double share = stage_share(i);
  RankClass rc;
  rc.name = fmt::format("stage {}", i);
  rc.ranks = std::max(1, p_.gpus / P_);
  rc.nodes = std::max(1, p_.nodes / P_);
  rc.comm_slowdown = p_.comm_slowdown;
  rc.static_memory_bytes =
      p_.stage_static_memory_bytes.empty() ? p_.static_memory_bytes * share : p_.stage_static_memory_bytes[i];
  g_.classes.push_back(rc);
  RankClass& c = g_.classes.back();
  const bool p2p_inter = p_.pp_fabric.inter.has_value();
  if (p_.gpus_per_node > 1 || p_.layout.tp > 1 || !p2p_inter) {
    double GBps = p_.layout.tp > 1 ? p_.tp_fabric.intra.bw_GBps : p_.fabric.intra.bw_GBps;
    if (!(GBps > 0)) GBps = p_.pp_fabric.intra.bw_GBps;
    if (GBps > 0) c.intra_resource = g_.add_link(fmt::format("intra-node ring per GPU [stage {}]", i), GBps);
  }
  const bool dp_inter = p_.nodes > 1 && p_.fabric.inter;
  if (dp_inter || p2p_inter) {
    // The node's NICs (a fabric's inter level is one group's share of them).
    const double GBps = dp_inter ? p_.fabric.inter->bw_GBps * p_.fabric.nic_sharing
                                 : p_.pp_fabric.inter->bw_GBps * p_.pp_fabric.nic_sharing;
    g_.classes.back().nic_resource = g_.add_link(fmt::format("NICs per node [stage {}]", i), GBps);
  }
  if (const double spine = spine_GBps(p_); spine > 0)
    g_.classes.back().spine_resource = g_.add_link(fmt::format("spine uplinks per node [stage {}]", i), spine);
  StageStreams s;
  s.compute = g_.add_stream("compute", StreamKind::compute, i);
  s.nccl = p_.comm_on_compute_stream ? s.compute : g_.add_stream("nccl", StreamKind::communication, i);
  st_.push_back(s);
}

int PipelineBuilder::task(int stage, const std::string& name, TaskCategory c, double s, double flops, double alloc,
                          double free) {
  const int t = g_.add_compute(st_[stage].compute, name, c, s, flops);
  g_.tasks[t].alloc_bytes = alloc;
  g_.tasks[t].free_bytes = free;
  return t;
}

/// The TP collectives `list` after task `after` on the stage's compute stream (one member:
/// the stage's class stands for every TP group of the stage); returns the last task.
int PipelineBuilder::tp_after(int stage, const std::vector<TpPlay>& list, int after, const std::string& what) {
  int last = after;
  for (const TpPlay& c : list)
    for (int n = 0; n < c.count; ++n) {
      const auto ids = g_.add_collective(c.name + what, c.purpose, FabricScope::intra_node, c.op, c.bytes, c.phases,
                                         {{st_[stage].compute, {last}}});
      g_.ops[g_.tasks[ids[0]].op].ranks = p_.layout.tp;
      last = ids[0];
    }
  return last;
}

std::vector<PipelineBuilder::TpPlay> PipelineBuilder::tp_plays(const std::vector<TpCollective>& list) const {
  std::vector<TpPlay> out;
  for (const TpCollective& c : list) {
    TpCosted costed = cost_tp_collective(p_, c);
    out.push_back(TpPlay{fmt::format("tp {} ", name(c.op)), std::move(costed.purpose), std::move(costed.phases), c.op,
                         c.bytes, c.count});
  }
  return out;
}

/// The context-parallel exchanges `list` after task `after` on the stage's compute stream;
/// returns the last task.
int PipelineBuilder::cp_after(int stage, const std::vector<LayerCollective>& list, int after, const std::string& what) {
  int last = after;
  for (const LayerCollective& c : list) {
    const auto ids = g_.add_collective(fmt::format("{} {} {}", c.tag, name(c.op), what), c.purpose, FabricScope::all,
                                       c.op, c.bytes, c.phases, {{st_[stage].compute, {last}}});
    g_.ops[g_.tasks[ids[0]].op].ranks = c.ranks;
    last = ids[0];
  }
  return last;
}

OpTasks PipelineBuilder::forward(int m, int k) {
  const int i = k % P_;
  OpTasks ot;
  for (int l = first_layer_[k]; l < first_layer_[k] + chunk_layers_[k]; ++l) {
    const std::string n = fmt::format("fwd L{} m{}", l, label(m));
    const int t = task(i, n, TaskCategory::forward, fwd_s_, p_.layer_flops_forward, p_.activation_bytes_per_layer, 0);
    if (ot.first < 0) ot.first = t;
    ot.last = tp_after(i, tp_forward_, cp_after(i, p_.exchange_forward, t, n), n);
  }
  if (k == V_ - 1) {
    const std::string n = fmt::format("fwd head m{}", label(m));
    const int t = task(i, n, TaskCategory::head, p_.micro.head_forward_s, p_.head_flops_forward, p_.logits_bytes, 0);
    if (ot.first < 0) ot.first = t;  // a last stage that holds the head alone
    ot.last = tp_after(i, tp_head_forward_, t, n);
  }
  return ot;
}

OpTasks PipelineBuilder::backward(int m, int k, Part part) {
  const int i = k % P_;
  OpTasks ot;
  auto keep = [&](int t) {
    if (ot.first < 0) ot.first = t;
    ot.last = t;
  };
  if (part != Part::weight && k == V_ - 1) {
    const std::string n = fmt::format("bwd head m{}", label(m));
    keep(task(i, n, TaskCategory::head, p_.micro.head_backward_s, p_.head_flops_backward, 0, p_.logits_bytes));
    ot.last = tp_after(i, tp_head_backward_, ot.last, n);
  }
  const double half = part == Part::whole ? 1.0 : 0.5;
  const char* what = part == Part::whole ? "bwd" : part == Part::input ? "bwd-input" : "bwd-weight";
  for (int l = first_layer_[k] + chunk_layers_[k] - 1; l >= first_layer_[k]; --l) {
    if (part != Part::weight && rec_s_ > 0) {
      const std::string n = fmt::format("recompute L{} m{}", l, label(m));
      keep(task(i, n, TaskCategory::recompute, rec_s_, p_.layer_flops_recompute, 0, 0));
      ot.last = tp_after(i, tp_recompute_, cp_after(i, p_.exchange_recompute, ot.last, n), n);
    }
    const std::string n = fmt::format("{} L{} m{}", what, l, label(m));
    const double free = part == Part::input ? 0 : p_.activation_bytes_per_layer;
    keep(task(i, n, TaskCategory::backward, bwd_s_ * half, p_.layer_flops_backward * half, 0, free));
    if (m == M_ - 1 && part != Part::input) grad_ready_[i].push_back(ot.last);
    if (part != Part::weight) ot.last = tp_after(i, tp_backward_, cp_after(i, p_.exchange_backward, ot.last, n), n);
  }
  return ot;
}

/// Lowers one op of stage `stage`: its tasks, then the send of its activation (forward) or
/// gradient (backward, B) to the neighbouring virtual stage, whose op waits for the receive.
void PipelineBuilder::play(int i, const PipeOp& op) {
  const int k = virtual_stage(i, op.chunk, P_);
  const int m = op.micro_batch;
  const std::size_t at = static_cast<std::size_t>(m) * V_ + k;
  OpTasks t;
  switch (op.kind) {
    case PipeOp::forward:
      t = fwd_[at] = forward(m, k);
      if (fwd_recv_[at] >= 0) g_.tasks[t.first].deps.push_back(fwd_recv_[at]);
      break;
    case PipeOp::backward:
    case PipeOp::backward_input:
      t = bwd_[at] = backward(m, k, op.kind == PipeOp::backward ? Part::whole : Part::input);
      if (bwd_recv_[at] >= 0) g_.tasks[t.first].deps.push_back(bwd_recv_[at]);
      break;
    case PipeOp::backward_weight:
      t = backward(m, k, Part::weight);
      break;
  }
  if (t.last < 0) return;  // a head-only stage has no weight pass
  if (stage_last_[i] < 0 && stage_first_gather_[i] >= 0) g_.tasks[t.first].deps.push_back(stage_first_gather_[i]);
  stage_last_[i] = t.last;
  if (op.kind == PipeOp::forward && k + 1 < V_)
    receive(fwd_[at + 1], at + 1, fwd_recv_, p2p(i, (k + 1) % P_, true, m, k, t.last));
  if ((op.kind == PipeOp::backward || op.kind == PipeOp::backward_input) && k > 0)
    receive(bwd_[at - 1], at - 1, bwd_recv_, p2p(i, (k - 1) % P_, false, m, k, t.last));
}

/// The op lowered as `into` (or, not lowered yet, the one at `at`) waits for receive `recv`.
void PipelineBuilder::receive(OpTasks& into, std::size_t at, std::vector<int>& pending, int recv) {
  if (into.first >= 0)
    g_.tasks[into.first].deps.push_back(recv);
  else
    pending[at] = recv;
}

int PipelineBuilder::p2p_stream(int stage, bool forward, bool send) {
  StageStreams& s = st_[stage];
  int& id = forward ? (send ? s.send_fwd : s.recv_fwd) : (send ? s.send_bwd : s.recv_bwd);
  if (id < 0)
    id = g_.add_stream(fmt::format("p2p {} {}", send ? "send" : "recv", forward ? "activations" : "gradients"),
                       StreamKind::communication, stage);
  return id;
}

/// The send of (m, k)'s activation (forward) or gradient from stage `from` to `to` after
/// task `after`; returns the receiver's member task.
int PipelineBuilder::p2p(int from, int to, bool forward, int m, int k, int after) {
  std::vector<CollectivePhase> phases;
  const bool inter = p_.pp_fabric.inter.has_value();
  if (p_.p2p_bytes > 0 || p_.p2p_latency_s > 0) {
    CollectivePhase ph;
    ph.collective = Collective::broadcast;
    ph.level = inter ? FabricScope::inter_node : FabricScope::intra_node;
    ph.bytes = p_.p2p_bytes;
    ph.latency_s = p_.p2p_latency_s;
    ph.algbw_GBps = inter ? p_.pp_fabric.inter->bw_GBps : p_.pp_fabric.intra.bw_GBps;
    const int link = inter ? g_.classes[from].nic_resource : g_.classes[from].intra_resource;
    // Alone the phase runs at the pp link's rate: load = the resource's capacity / that rate.
    const double load = link >= 0 && ph.algbw_GBps > 0 ? g_.links[link].capacity_GBps / ph.algbw_GBps : 0;
    (inter ? ph.inter_load : ph.intra_load) = load;
    if (inter && p_.pp_fabric.spine && g_.classes[from].spine_resource >= 0) {
      // Sends between leaf groups climb the spine: the crossing share of the NIC bytes, no
      // faster than the node's share of the uplinks (collective.cpp apply_spine).
      ph.spine_load = load * p_.pp_fabric.spine->crossing;
      if (ph.spine_load > 0)
        ph.algbw_GBps =
            std::min(ph.algbw_GBps, g_.links[g_.classes[from].spine_resource].capacity_GBps / ph.spine_load);
    }
    ph.algorithm = "p2p";
    ph.protocol = "Simple";
    phases.push_back(ph);
  }
  const std::string n =
      fmt::format("p2p {} m{} vs{}->vs{}", forward ? "activation" : "gradient", label(m), k, forward ? k + 1 : k - 1);
  const auto ids = g_.add_collective(
      n, forward ? "pipeline p2p (activations)" : "pipeline p2p (gradients)",
      inter ? FabricScope::inter_node : FabricScope::intra_node, Collective::broadcast, p_.p2p_bytes, std::move(phases),
      {{p2p_stream(from, forward, true), {after}}, {p2p_stream(to, forward, false), {}}});
  g_.ops[g_.tasks[ids[0]].op].ranks = 2;
  return ids[1];
}

int PipelineBuilder::stage_collective(int stage, const std::string& name, const std::string& purpose, Collective c,
                                      double bytes, int after) {
  std::vector<CollectivePhase> phases;
  if (p_.fabric.ranks() > 1 && bytes > 0) phases = collective_phases(c, bytes, p_.fabric, p_.algorithm);
  return g_.add_collective(name, purpose, FabricScope::all, c, bytes, std::move(phases), {{st_[stage].nccl, {after}}})
      .front();
}

/// Pass 3: the stage's gradient reduction, optimizer and (zero1) parameter all-gather.
void PipelineBuilder::data_parallel(int i, int last) {
  const double share = stage_share(i);
  const bool dp = p_.fabric.ranks() > 1;
  const bool zero1 = p_.layout.dp_sharding == Strategy::zero1;
  int ready = last;
  const Collective c = zero1 ? Collective::reduce_scatter : Collective::all_reduce;
  if (dp && p_.overlap_grad_reduce && !grad_ready_[i].empty()) {
    // Bucket by bucket as the last micro-batch's backward finishes each layer's gradients;
    // the embeddings' and head's with the stage's last layer.
    const std::vector<int>& tasks = grad_ready_[i];
    const double layer = p_.layer_grad_bytes;
    const double rest = stage_grad_bytes(i) - layer * static_cast<double>(tasks.size());
    double fill = 0;
    int n = 0;
    for (std::size_t t = 0; t < tasks.size(); ++t) {
      fill += layer + (t + 1 == tasks.size() ? std::max(0.0, rest) : 0.0);
      if (fill < p_.bucket_bytes && t + 1 < tasks.size()) continue;
      ready = stage_collective(i, fmt::format("{} grads bucket {}", zero1 ? "reduce-scatter" : "all-reduce", n++),
                               zero1 ? "gradient reduce-scatter (per stage, beside the backward)"
                                     : "gradient all-reduce (per stage, beside the backward)",
                               c, fill, tasks[t]);
      fill = 0;
    }
  } else if (dp) {
    ready = stage_collective(i, zero1 ? "reduce-scatter grads" : "all-reduce grads",
                             zero1 ? "gradient reduce-scatter (per stage)" : "gradient all-reduce (per stage)", c,
                             stage_grad_bytes(i), last);
  }
  const int opt = task(i, "optimizer step", TaskCategory::optimizer, p_.optimizer_s * share, 0, 0, 0);
  if (ready != last) g_.tasks[opt].deps.push_back(last);  // the buckets may close before the stage's last task
  g_.tasks[opt].deps.push_back(ready);
  if (dp && zero1 && !p_.overlap_param_gather)
    stage_collective(i, "all-gather params", "parameter all-gather (after step)", Collective::all_gather,
                     stage_param_bytes(i), opt);
}

/// Megatron-Core's --overlap-param-gather (lowering_zero.cpp): the stage's updated
/// parameters all-gathered at the step's start in buckets (plan.bucket_bytes), one after the
/// other in forward order on the stage's NCCL stream; the stage's first op waits for the
/// first bucket, the rest run beside the forward (this lowering does not place each layer in
/// its bucket: later buckets are taken to arrive before their layers).
void PipelineBuilder::gather_params_first(int i) {
  if (p_.layout.dp_sharding != Strategy::zero1 || !p_.overlap_param_gather || p_.fabric.ranks() < 2) return;
  const std::vector<double> sizes = bucket_sizes(stage_param_bytes(i), p_.bucket_bytes, p_.bucket_bytes);
  int prev = -1;
  for (std::size_t j = sizes.size(); j-- > 0;) {  // forward order: the last (partial) bucket first
    std::vector<CollectivePhase> phases;
    if (sizes[j] > 0) phases = collective_phases(Collective::all_gather, sizes[j], p_.fabric, p_.algorithm);
    prev = g_.add_collective(fmt::format("all-gather params bucket {}", j), "parameter all-gather (beside the forward)",
                             FabricScope::all, Collective::all_gather, sizes[j], std::move(phases),
                             {{st_[i].nccl, prev < 0 ? std::vector<int>{} : std::vector<int>{prev}}})
               .front();
    if (stage_first_gather_[i] < 0) stage_first_gather_[i] = prev;
  }
}

StepGraph PipelineBuilder::build() {
  const std::vector<StageProgram> programs = schedule(name(p_.layout.schedule), P_, M_, p_.layout.vpp);
  for (int i = 0; i < P_; ++i) gather_params_first(i);
  // Each op's unit (the warm-up in unit 0), and the ops lowered unit by unit, stage by stage.
  std::vector<std::vector<int>> unit(P_);
  int units = 1;
  for (int i = 0; i < P_; ++i) {
    unit[i] = pair_indices(programs[i]);
    for (int& u : unit[i]) u = std::max(0, u) / rep_.unit_pairs;
    if (!unit[i].empty()) units = std::max(units, unit[i].back() + 1);
  }
  // Room for the tasks, roughly: per micro-batch and layer its forward, backward (B and W),
  // recompute and their TP and context-parallel collectives; per chunk its sends.
  std::size_t per_layer = 4 + p_.exchange_forward.size() + p_.exchange_backward.size() + p_.exchange_recompute.size();
  for (const auto* list : {&tp_forward_, &tp_backward_, &tp_recompute_})
    for (const TpPlay& c : *list) per_layer += static_cast<std::size_t>(c.count);
  g_.tasks.reserve(g_.tasks.size() + static_cast<std::size_t>(M_) * (static_cast<std::size_t>(p_.layers) * per_layer +
                                                                     8 * static_cast<std::size_t>(V_)));
  const int R = rep_.repeat_unit;
  std::vector<std::size_t> next(P_, 0);
  for (int j = 0; j < units; ++j) {
    const int first = static_cast<int>(g_.tasks.size());
    after_repeat_ = R >= 0 && j > R;
    for (int i = 0; i < P_; ++i)
      for (; next[i] < programs[i].size() && unit[i][next[i]] == j; ++next[i]) play(i, programs[i][next[i]]);
    if (R >= 0 && j <= R + 1) g_.micro_steps.push_back(MicroStepSpan{j, first, static_cast<int>(g_.tasks.size())});
  }
  if (R >= 0) {
    g_.micro_steps.back().end_task = static_cast<int>(g_.tasks.size());  // the rest of the units
    for (int i = 0; i < P_; ++i)  // unit R whole on every stage, its cool-down later (plan_repetition)
      if (unit[i].empty() || unit[i].back() <= R)
        throw InternalError(fmt::format("stage {}: no unit after the repeated unit {}", i, R));
    g_.repeat_after = R;
    g_.repeat_count = rep_.repeat_count;
  }
  for (int i = 0; i < P_; ++i) data_parallel(i, stage_last_[i]);
  g_.pipeline = true;
  return std::move(g_);
}

}  // namespace

int first_repeat_unit(const CostedStep& plan) {
  const int period = std::max(1, steady_period_micro_batches(name(plan.layout.schedule), plan.layout.pp));
  return std::max(3, (plan.layout.pp + period) / period);  // p + 1 micro-batches' worth of units, at least 3
}

StepGraph lower_pipeline(const CostedStep& plan, int repeat_unit) {
  check_pipeline_plan(plan);
  return PipelineBuilder(plan, repeat_unit).build();
}

}  // namespace stepcast::sim::lowering
