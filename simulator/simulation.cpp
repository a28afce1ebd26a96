#include "simulator/simulation.hpp"

#include "simulator/bounds.hpp"
#include "simulator/internal_error.hpp"
#include "simulator/repetition.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace stepcast::sim {

namespace {

// Event tags: kind in the top 4 bits, an id in the next 28, a version in the low 32.
enum : std::uint64_t { kComputeEnd = 1, kPhaseStart = 2, kOpFinish = 3 };

std::uint64_t tag(std::uint64_t kind, std::uint64_t id, std::uint64_t version = 0) {
  return kind << 60 | id << 32 | (version & 0xffffffffu);
}

class Executor final : public Component, public Network::Listener {
 public:
  Executor(const StepGraph& g, const SimOptions& o) : g_(g), opt_(o), net_(o.record_timelines) {
    for (const LinkResource& l : g_.links) net_.add_resource(l.name, l.capacity_GBps * 1e9);
    const std::size_t n = g_.tasks.size();
    if (n >= (std::size_t{1} << 28)) throw InternalError(fmt::format("a step graph of {} tasks", n));
    mark_of_.assign(n, -1);
    for (std::size_t i = 0; i < g_.micro_steps.size(); ++i)
      mark_of_[g_.micro_steps[i].first_task] = static_cast<int>(i);
    marks_.resize(g_.micro_steps.size());
    pending_.assign(n, 0);
    succ_begin_.assign(n + 1, 0);
    enabler_.assign(n, -1);
    state_.assign(n, State::waiting);
    remaining_s_.assign(n, 0.0);
    speed_.assign(n, 1.0);
    since_.assign(n, 0);
    version_.assign(n, 0);
    queue_.assign(g_.streams.size(), {});
    compute_streams_.assign(g_.classes.size(), {});
    for (std::size_t s = 0; s < g_.streams.size(); ++s)
      if (g_.streams[s].kind == StreamKind::compute)
        compute_streams_[g_.streams[s].rank_class].push_back(static_cast<int>(s));
    head_.assign(g_.streams.size(), 0);
    hot_.resize(n);
    for (std::size_t t = 0; t < n; ++t) {
      const Task& task = g_.tasks[t];
      if (task.stream < 0 || task.stream >= static_cast<int>(g_.streams.size()))
        throw InternalError("task \"" + task.name + "\" on a stream that does not exist");
      if (task.kind == TaskKind::collective && (task.op < 0 || task.op >= static_cast<int>(g_.ops.size())))
        throw InternalError("collective task \"" + task.name + "\" without its collective");
      hot_[t] = Hot{task.stream,
                    g_.streams[task.stream].rank_class,
                    task.kind == TaskKind::compute ? -1 : task.op,
                    task.work_s,
                    task.alloc_bytes,
                    task.free_bytes};
      queue_[task.stream].push_back(static_cast<int>(t));
      for (int d : task.deps) {
        if (d < 0 || d >= static_cast<int>(n) || d == static_cast<int>(t))
          throw InternalError("task \"" + task.name + "\" depends on a task that does not exist or on itself");
        ++pending_[t];
        ++succ_begin_[d + 1];
      }
    }
    // Successors in one array, task t's at [succ_begin_[t], succ_begin_[t + 1]), in task order.
    for (std::size_t t = 0; t < n; ++t) succ_begin_[t + 1] += succ_begin_[t];
    succ_.resize(succ_begin_[n]);
    std::vector<int> fill(succ_begin_.begin(), succ_begin_.end() - 1);
    for (std::size_t t = 0; t < n; ++t)
      for (int d : g_.tasks[t].deps) succ_[fill[d]++] = static_cast<int>(t);
    arrived_.assign(g_.ops.size(), 0);
    op_begin_.assign(g_.ops.size() + 1, 0);
    op_members_.reserve(n);  // at most one membership per task
    for (std::size_t o = 0; o < g_.ops.size(); ++o) {
      op_begin_[o + 1] = op_begin_[o] + static_cast<int>(g_.ops[o].members.size());
      op_members_.insert(op_members_.end(), g_.ops[o].members.begin(), g_.ops[o].members.end());
    }
    phase_.assign(g_.ops.size(), 0);
    op_enabler_.assign(g_.ops.size(), -1);
    comm_active_.assign(g_.classes.size(), 0);
    memory_.resize(g_.classes.size());
    res_.peak_memory_bytes.resize(g_.classes.size());
    for (std::size_t c = 0; c < g_.classes.size(); ++c) {
      memory_[c] = g_.classes[c].static_memory_bytes;
      res_.peak_memory_bytes[c] = memory_[c];
    }
    segment_peak_.assign(g_.micro_steps.size() + 1, memory_);
    res_.tasks.resize(n);
    res_.streams.resize(g_.streams.size());
    if (opt_.record_timelines) res_.memory_timeline.push_back({0, memory_.empty() ? 0.0 : memory_[0]});
  }

  SimResult run() {
    for (std::size_t s = 0; s < g_.streams.size(); ++s) try_start(static_cast<int>(s));
    engine_.run();
    for (std::size_t t = 0; t < g_.tasks.size(); ++t)
      if (state_[t] != State::done)
        throw InternalError("simulation stuck: task \"" + g_.tasks[t].name +
                            "\" never ran (a dependency cycle or a collective member missing)");
    account(engine_.now());
    res_.links = net_.resources();
    res_.events = engine_.events_fired();
    res_.events_represented = res_.events;
    int last = -1;
    for (std::size_t t = 0; t < g_.tasks.size(); ++t) {
      res_.step_ns = std::max(res_.step_ns, res_.tasks[t].end);
      if (last < 0 || res_.tasks[t].end >= res_.tasks[last].end) last = static_cast<int>(t);
    }
    for (int t = last; t >= 0; t = res_.tasks[t].enabler) res_.critical_path.push_back(t);
    std::reverse(res_.critical_path.begin(), res_.critical_path.end());
    for (std::size_t i = 0; i < marks_.size(); ++i) marks_[i].segment_peak_bytes = segment_peak_[i + 1];
    extrapolate_repeats(g_, marks_, res_);
    return std::move(res_);
  }

  void fire(Engine& e, std::uint64_t tg) override {
    const std::uint64_t kind = tg >> 60;
    const int id = static_cast<int>((tg >> 32) & 0x0fffffffu);
    switch (kind) {
      case kComputeEnd:
        if (static_cast<std::uint32_t>(tg) == version_[id] && state_[id] == State::running) finish_task(id);
        break;
      case kPhaseStart:
        start_flow(e, id);
        break;
      case kOpFinish:
        finish_op(id);
        break;
      default:
        throw InternalError(fmt::format("an event of unknown kind {}", kind));
    }
  }

  void flow_done(Engine& e, std::uint64_t cookie) override {
    const int op = static_cast<int>(cookie);
    ++phase_[op];
    next_phase(e, op);
  }

 private:
  enum class State : char { waiting, arrived, running, done };

  int class_of(int task) const { return hot_[task].cls; }

  /// Accumulates the representative rank's busy/overlap time up to `now`.
  void account(Time now) {
    const Time dt = now - last_account_;
    if (dt > 0) {
      if (rep_compute_ > 0) res_.compute_busy_ns += dt;
      if (rep_comm_ > 0) res_.comm_busy_ns += dt;
      if (rep_compute_ > 0 && rep_comm_ > 0) res_.overlap_ns += dt;
    }
    last_account_ = now;
  }

  /// The first task of an explicit micro-step starts: keep the accumulators (repetition.hpp).
  void mark(int t) {
    const int i = mark_of_[t];
    if (i < 0 || marks_[i].at >= 0) return;
    const Time now = engine_.now();
    marks_[i] = MarkSnapshot{now,
                             res_.compute_busy_ns,
                             res_.comm_busy_ns,
                             res_.overlap_ns,
                             engine_.events_fired(),
                             net_.usage_at(now),
                             memory_,
                             {}};
    segment_ = i + 1;
    segment_peak_[segment_] = memory_;
  }

  void change_memory(int cls, double delta) {
    if (delta == 0) return;
    memory_[cls] += delta;
    res_.peak_memory_bytes[cls] = std::max(res_.peak_memory_bytes[cls], memory_[cls]);
    if (!segment_peak_.empty()) segment_peak_[segment_][cls] = std::max(segment_peak_[segment_][cls], memory_[cls]);
    if (cls == 0 && opt_.record_timelines) {
      auto& tl = res_.memory_timeline;
      if (!tl.empty() && tl.back().at == engine_.now())
        tl.back().bytes = memory_[0];
      else
        tl.push_back({engine_.now(), memory_[0]});
    }
  }

  double compute_speed(int cls) const {
    const RankClass& rc = g_.classes[cls];
    return rc.compute_speed * (comm_active_[cls] > 0 ? 1.0 - rc.comm_slowdown : 1.0);
  }

  void schedule_compute_end(int t) {
    ++version_[t];
    engine_.schedule(add_time(engine_.now(), to_ns(remaining_s_[t] / speed_[t])), this,
                     tag(kComputeEnd, t, version_[t]));
  }

  /// A class's collective count changed: running compute tasks of that class change speed.
  void set_comm_active(int cls, int delta) {
    const bool before = comm_active_[cls] > 0;
    comm_active_[cls] += delta;
    if ((comm_active_[cls] > 0) == before || g_.classes[cls].comm_slowdown == 0) return;
    for (int s : compute_streams_[cls]) {
      if (head_[s] >= queue_[s].size()) continue;
      const int t = queue_[s][head_[s]];
      if (state_[t] != State::running || hot_[t].op >= 0) continue;
      remaining_s_[t] -= to_seconds(engine_.now() - since_[t]) * speed_[t];
      remaining_s_[t] = std::max(0.0, remaining_s_[t]);
      since_[t] = engine_.now();
      speed_[t] = compute_speed(cls);
      schedule_compute_end(t);
    }
  }

  void try_start(int s) {
    if (head_[s] >= queue_[s].size()) return;
    const int t = queue_[s][head_[s]];
    if (state_[t] != State::waiting || pending_[t] > 0) return;
    const Hot& task = hot_[t];
    if (task.op < 0) {
      account(engine_.now());
      state_[t] = State::running;
      res_.tasks[t].start = engine_.now();
      res_.tasks[t].enabler = enabler_[t];
      mark(t);
      change_memory(task.cls, task.alloc_bytes);
      if (task.cls == 0) ++rep_compute_;
      remaining_s_[t] = task.work_s;
      since_[t] = engine_.now();
      speed_[t] = compute_speed(task.cls);
      schedule_compute_end(t);
      return;
    }
    state_[t] = State::arrived;
    const int op = task.op;
    op_enabler_[op] = enabler_[t];  // the last member to arrive decides
    if (++arrived_[op] == op_begin_[op + 1] - op_begin_[op]) start_op(op);
  }

  void start_op(int op) {
    account(engine_.now());
    for (int k = op_begin_[op]; k < op_begin_[op + 1]; ++k) {
      const int m = op_members_[k];
      state_[m] = State::running;
      res_.tasks[m].start = engine_.now();
      res_.tasks[m].enabler = op_enabler_[op];
      mark(m);
      change_memory(class_of(m), hot_[m].alloc_bytes);
      if (class_of(m) == 0) ++rep_comm_;
      set_comm_active(class_of(m), +1);
    }
    phase_[op] = 0;
    next_phase(engine_, op);
  }

  void next_phase(Engine& e, int op) {
    const CollectiveOp& o = g_.ops[op];
    if (opt_.free_communication || phase_[op] >= static_cast<int>(o.phases.size())) {
      e.schedule(e.now(), this, tag(kOpFinish, op));
      return;
    }
    e.schedule(add_time(e.now(), to_ns(o.phases[phase_[op]].latency_s)), this, tag(kPhaseStart, op));
  }

  void start_flow(Engine& e, int op) {
    const CollectiveOp& o = g_.ops[op];
    const CollectivePhase& ph = o.phases[phase_[op]];
    std::vector<ResourceUse>& uses = scratch_uses_;
    uses.clear();
    for (int m : o.members) {
      const RankClass& rc = g_.classes[class_of(m)];
      for_each_link_load(rc, ph, [&](int link, double load) { uses.push_back({link, load}); });
    }
    net_.start(e, ph.bytes, ph.algbw_GBps * 1e9, uses, this, static_cast<std::uint64_t>(op));
  }

  void finish_op(int op) {
    account(engine_.now());
    for (int k = op_begin_[op]; k < op_begin_[op + 1]; ++k) {
      const int m = op_members_[k];
      if (class_of(m) == 0) --rep_comm_;
      set_comm_active(class_of(m), -1);
    }
    for (int k = op_begin_[op]; k < op_begin_[op + 1]; ++k) end_task(op_members_[k]);
  }

  void finish_task(int t) {
    account(engine_.now());
    if (class_of(t) == 0) --rep_compute_;
    end_task(t);
  }

  void end_task(int t) {
    state_[t] = State::done;
    res_.tasks[t].end = engine_.now();
    const int s = hot_[t].stream;
    res_.streams[s].busy_ns += res_.tasks[t].end - res_.tasks[t].start;
    change_memory(class_of(t), -hot_[t].free_bytes);
    ++head_[s];
    if (head_[s] < queue_[s].size()) enabler_[queue_[s][head_[s]]] = t;
    for (int k = succ_begin_[t]; k < succ_begin_[t + 1]; ++k) {
      const int n = succ_[k];
      --pending_[n];
      enabler_[n] = t;
      if (pending_[n] == 0) try_start(hot_[n].stream);
    }
    try_start(s);
  }

  const StepGraph& g_;
  SimOptions opt_;
  Engine engine_;
  Network net_;
  SimResult res_;

  /// What the play reads of each task, packed (the graph's tasks carry names and lists).
  struct Hot {
    int stream = 0;
    int cls = 0;  ///< its stream's rank class
    int op = -1;  ///< its collective, or -1 for a compute task
    double work_s = 0;
    double alloc_bytes = 0;
    double free_bytes = 0;
  };
  std::vector<Hot> hot_;
  std::vector<int> mark_of_;         ///< per task: the micro-step it starts, or -1
  std::vector<MarkSnapshot> marks_;  ///< per explicit micro-step
  /// Peak memory per class between marks: [0] before the first, [i + 1] from mark i on.
  std::vector<std::vector<double>> segment_peak_;
  std::size_t segment_ = 0;
  std::vector<int> pending_;
  std::vector<ResourceUse> scratch_uses_;  ///< start_flow's working space
  std::vector<int> succ_;                  ///< successors of every task, task by task
  std::vector<int> succ_begin_;            ///< per task: where its successors start in succ_ (n + 1 entries)
  std::vector<int> enabler_;
  std::vector<State> state_;
  std::vector<double> remaining_s_;  ///< compute work left at full speed, seconds
  std::vector<double> speed_;
  std::vector<Time> since_;
  std::vector<std::uint32_t> version_;
  std::vector<std::vector<int>> queue_;
  std::vector<std::vector<int>> compute_streams_;  ///< per rank class
  std::vector<std::size_t> head_;
  std::vector<int> arrived_;
  std::vector<int> op_members_;  ///< every collective's member tasks, collective by collective
  std::vector<int> op_begin_;    ///< per collective: where its members start in op_members_ (ops + 1 entries)
  std::vector<int> phase_;
  std::vector<int> op_enabler_;
  std::vector<int> comm_active_;
  std::vector<double> memory_;
  int rep_compute_ = 0;
  int rep_comm_ = 0;
  Time last_account_ = 0;
};

}  // namespace

SimResult simulate(const StepGraph& graph, const SimOptions& options) {
  Executor ex(graph, options);
  SimResult r = ex.run();
  if (options.check_invariants) check_step_invariants(graph, options, r);
  return r;
}

void check_step_invariants(const StepGraph& g, const SimOptions& options, const SimResult& r) {
  auto fail = [](const std::string& what) { throw InternalError("simulated step: " + what); };
  if (r.step_ns < 0 || r.compute_busy_ns < 0 || r.comm_busy_ns < 0 || r.overlap_ns < 0)
    fail(fmt::format("negative time (step {} ns, compute busy {} ns, communication busy {} ns, overlap {} ns)",
                     r.step_ns, r.compute_busy_ns, r.comm_busy_ns, r.overlap_ns));
  if (r.overlap_ns > std::min(r.compute_busy_ns, r.comm_busy_ns) || r.compute_busy_ns > r.step_ns ||
      r.comm_busy_ns > r.step_ns)
    fail(fmt::format("busy times beyond the step ({} ns): compute {} ns, communication {} ns, overlap {} ns", r.step_ns,
                     r.compute_busy_ns, r.comm_busy_ns, r.overlap_ns));
  for (std::size_t s = 0; s < r.streams.size(); ++s)
    if (r.streams[s].busy_ns < 0 || r.streams[s].busy_ns > r.step_ns)
      fail(fmt::format("stream {} busy {} ns in a step of {} ns", s, r.streams[s].busy_ns, r.step_ns));
  const StepBounds b = closed_form_bounds(g);
  const double lower_s = options.free_communication ? b.compute_s : b.perfect_overlap_s;
  // Each event rounds one duration up to the next nanosecond; sums of doubles drift by ulps.
  const double slack_s = static_cast<double>(r.events_represented) * 1e-9 + 1e-9 * b.no_overlap_s + 1e-9;
  if (!(r.step_s() >= lower_s - slack_s) || !(r.step_s() <= b.no_overlap_s + slack_s))
    fail(fmt::format("{:.9g} s outside its closed-form bounds [{:.9g} s, {:.9g} s]", r.step_s(), lower_s,
                     b.no_overlap_s));
}

}  // namespace stepcast::sim
