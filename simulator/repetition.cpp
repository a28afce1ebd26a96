#include "simulator/repetition.hpp"

#include "simulator/internal_error.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

namespace stepcast::sim {

namespace {

/// Per stream, how far its tasks move from span `a` to span `b` (-1: no task there);
/// nullopt when the spans differ in shape or a stream's tasks do not all move alike.
std::optional<std::vector<Time>> stream_shifts(const StepGraph& g, const SimResult& r, const MicroStepSpan& a,
                                               const MicroStepSpan& b) {
  if (a.end_task - a.first_task != b.end_task - b.first_task) return std::nullopt;
  std::vector<Time> shift(g.streams.size(), -1);
  for (int i = 0; i < a.end_task - a.first_task; ++i) {
    const int ta = a.first_task + i, tb = b.first_task + i;
    const int s = g.tasks[ta].stream;
    if (g.tasks[tb].stream != s) return std::nullopt;
    const Time ds = r.tasks[tb].start - r.tasks[ta].start;
    if (r.tasks[tb].end - r.tasks[ta].end != ds || ds < 0) return std::nullopt;
    if (shift[s] < 0) shift[s] = ds;
    if (shift[s] != ds) return std::nullopt;
  }
  return shift;
}

/// Best effort when the middle micro-steps do not repeat exactly: each stream moves by how
/// far its first task moved from `a` to `b`.
std::vector<Time> approximate_shifts(const StepGraph& g, const SimResult& r, const MicroStepSpan& a,
                                     const MicroStepSpan& b) {
  std::vector<Time> shift(g.streams.size(), -1);
  const int n = std::min(a.end_task - a.first_task, b.end_task - b.first_task);
  for (int i = 0; i < n; ++i) {
    const int s = g.tasks[a.first_task + i].stream;
    if (shift[s] < 0 && g.tasks[b.first_task + i].stream == s)
      shift[s] = std::max<Time>(0, r.tasks[b.first_task + i].start - r.tasks[a.first_task + i].start);
  }
  return shift;
}

Time scaled(std::int64_t n, Time later, Time earlier) {
  if (later < earlier) throw InternalError("a simulated accumulator went backwards between two micro-steps");
  return mul_time(n, later - earlier);
}

/// Measure of the union of intervals, ns.
Time union_ns(std::vector<std::pair<Time, Time>> iv) {
  std::sort(iv.begin(), iv.end());
  Time total = 0, end = -1;
  for (const auto& [a, b] : iv) {
    if (b <= end) continue;
    total += b - std::max(a, end);
    end = b;
  }
  return total;
}

/// The busy time one more copy of span `b` adds where the period differs by stream (a
/// growing backlog): the union of its own tasks' intervals that `pick` selects.
template <class Pick>
Time span_union_ns(const SimResult& r, const MicroStepSpan& b, Pick pick) {
  std::vector<std::pair<Time, Time>> iv;
  for (int t = b.first_task; t < b.end_task; ++t)
    if (pick(t)) iv.emplace_back(r.tasks[t].start, r.tasks[t].end);
  return union_ns(std::move(iv));
}

/// Bytes one copy of span `b` carries on each link: each phase's bytes x load, on every
/// member's links (what the network integrates as rate x load over time).
std::vector<double> span_link_bytes(const StepGraph& g, const MicroStepSpan& b) {
  std::vector<double> bytes(g.links.size(), 0.0);
  for (const CollectiveOp& op : g.ops) {
    const int first = op.members.front();
    if (first < b.first_task || first >= b.end_task) continue;
    for (const CollectivePhase& ph : op.phases)
      for (int m : op.members) {
        const RankClass& rc = g.classes[g.streams[g.tasks[m].stream].rank_class];
        for_each_link_load(rc, ph, [&](int link, double load) { bytes[link] += ph.bytes * load; });
      }
  }
  return bytes;
}

/// Whether task `t` is a collective of class 0 that uses link `l` (-1: any collective).
bool class0_collective_on(const StepGraph& g, int t, int l) {
  const Task& task = g.tasks[t];
  if (task.kind != TaskKind::collective) return false;
  const int cls = g.streams[task.stream].rank_class;
  if (l < 0) return cls == 0;
  const RankClass& rc = g.classes[cls];
  return rc.intra_resource == l || rc.nic_resource == l || rc.spine_resource == l;
}

void shift_samples(std::vector<UtilizationSample>& tl, Time from, Time by) {
  for (UtilizationSample& s : tl)
    if (s.at >= from) s.at = add_time(s.at, by);
}

/// Each stream's period from the last two explicit middle micro-steps, and whether the
/// middle micro-steps repeat exactly.
struct Periods {
  std::vector<Time> shift;  ///< per stream; streams without middle tasks: the widest
  Time widest = 0;
  bool uniform = true;  ///< every stream moves by the widest period
  bool exact = true;
};

Periods find_periods(const StepGraph& g, const SimResult& r, std::size_t b_at) {
  const MicroStepSpan &pre = g.micro_steps[b_at - 2], &a = g.micro_steps[b_at - 1], &b = g.micro_steps[b_at];
  const auto shifts = stream_shifts(g, r, a, b);
  Periods p;
  p.shift = shifts ? *shifts : approximate_shifts(g, r, a, b);
  p.widest = std::max<Time>(0, *std::max_element(p.shift.begin(), p.shift.end()));
  // Exact when every stream moves by the same period (busy times and events then repeat
  // window by window too); a stream that lags more each micro-step (a growing backlog of
  // collectives) is extrapolated stream by stream.
  p.uniform = std::all_of(p.shift.begin(), p.shift.end(), [&](Time s) { return s < 0 || s == p.widest; });
  // Two middle micro-steps before the repeated ones moved alike (the first micro-step starts
  // from an idle machine, so it need not match).
  p.exact = shifts && p.uniform && (pre.index == 0 || stream_shifts(g, r, pre, a) == shifts);
  for (Time& s : p.shift)
    if (s < 0) s = p.widest;
  return p;
}

/// Everything after the last explicit middle micro-step happens n periods later: its
/// stream's period, or more where it waits for work that moved further (the optimizer
/// after a backlog of reductions). A collective's members move together.
void shift_tail(const StepGraph& g, const std::vector<Time>& shift, std::int64_t n, int tail_first, SimResult& r) {
  std::vector<Time> by(g.tasks.size(), 0), stream_last(g.streams.size(), 0);
  for (int t = tail_first; t < static_cast<int>(g.tasks.size()); ++t) {
    const Task& task = g.tasks[t];
    Time m = std::max(mul_time(n, shift[task.stream]), stream_last[task.stream]);
    for (int d : task.deps)
      if (d >= tail_first) m = std::max(m, by[d]);
    by[t] = m;
    if (task.op >= 0 && g.ops[task.op].members.back() == t) {
      Time all = 0;
      for (int mem : g.ops[task.op].members) all = std::max(all, by[mem]);
      for (int mem : g.ops[task.op].members) {
        by[mem] = all;
        stream_last[g.tasks[mem].stream] = all;
      }
    }
    stream_last[task.stream] = std::max(stream_last[task.stream], by[t]);
  }
  for (int t = tail_first; t < static_cast<int>(g.tasks.size()); ++t) {
    r.tasks[t].start = add_time(r.tasks[t].start, by[t]);
    r.tasks[t].end = add_time(r.tasks[t].end, by[t]);
  }
  r.step_ns = 0;
  for (const TaskRecord& rec : r.tasks) r.step_ns = std::max(r.step_ns, rec.end);
}

/// n more copies' busy time and bytes. One period's window when every stream moves alike;
/// else (a backlog) each copy adds its own collectives' busy time and bytes (the window
/// would see only the part of the backlog that ran in it), no more than it adds to the step
/// (the widest period), and hides as much compute as the window (the backlog keeps the
/// NCCL stream busy throughout).
void add_busy(const StepGraph& g, const MicroStepSpan& b, const MarkSnapshot& ma, const MarkSnapshot& mb,
              const Periods& p, std::int64_t n, SimResult& r) {
  for (int t = b.first_task; t < b.end_task; ++t) {
    StreamStats& st = r.streams[g.tasks[t].stream];
    st.busy_ns = add_time(st.busy_ns, scaled(n, r.tasks[t].end, r.tasks[t].start));
  }
  r.compute_busy_ns = add_time(r.compute_busy_ns, scaled(n, mb.compute_busy_ns, ma.compute_busy_ns));
  r.overlap_ns = add_time(r.overlap_ns, scaled(n, mb.overlap_ns, ma.overlap_ns));
  auto own_busy = [&](int link) {
    return std::min(p.widest, span_union_ns(r, b, [&](int t) { return class0_collective_on(g, t, link); }));
  };
  const Time comm_once = p.uniform ? mb.comm_busy_ns - ma.comm_busy_ns : own_busy(-1);
  r.comm_busy_ns = add_time(r.comm_busy_ns, mul_time(n, comm_once));
  const std::vector<double> link_bytes = span_link_bytes(g, b);
  for (std::size_t l = 0; l < r.links.size(); ++l) {
    const double bytes_once = p.uniform ? mb.links.bytes[l] - ma.links.bytes[l] : link_bytes[l];
    r.links[l].bytes += static_cast<double>(n) * bytes_once;
    const Time busy_once = p.uniform ? mb.links.busy_ns[l] - ma.links.busy_ns[l] : own_busy(static_cast<int>(l));
    r.links[l].busy_ns = add_time(r.links[l].busy_ns, mul_time(n, busy_once));
  }
}

/// Peak memory with n more copies of span B: memory may drift by δ per micro-step (what a
/// micro-step allocates and does not free), so copy j peaks at B's peak + j·δ and the tail
/// at its own + n·δ; before B nothing changes.
void add_memory_drift(const std::vector<MarkSnapshot>& marks, std::size_t b_at, std::int64_t n, SimResult& r) {
  for (std::size_t c = 0; c < r.peak_memory_bytes.size(); ++c) {
    const double drift = marks[b_at + 1].memory_bytes[c] - marks[b_at].memory_bytes[c];
    const double copies = static_cast<double>(n) * drift;
    double peak = r.peak_memory_bytes[c];
    peak = std::max(peak, marks[b_at].segment_peak_bytes[c] + std::max(0.0, copies));
    peak = std::max(peak, marks[b_at + 1].segment_peak_bytes[c] + copies);
    r.peak_memory_bytes[c] = peak;
  }
}

/// Per stream, when its first task of span `s` started (-1: none there).
std::vector<Time> first_starts(const StepGraph& g, const SimResult& r, const MicroStepSpan& s) {
  std::vector<Time> at(g.streams.size(), -1);
  for (int t = s.first_task; t < s.end_task; ++t)
    if (at[g.tasks[t].stream] < 0) at[g.tasks[t].stream] = r.tasks[t].start;
  return at;
}

/// A pipeline whose steady-state units do not repeat exactly (flows of several stages that
/// share links settle into no exact period, or a stage still runs ahead of the slowest):
/// everything after the repeated unit moves by n periods, the period being the slowest
/// stream's mean from the middle explicit unit to the repeated one (the rate the stages
/// settle to), and no less than any stream's busy time in the repeated unit; each busy
/// time, byte count and event count grows by n times its mean per unit from the middle
/// explicit unit's mark to the tail's; memory does not drift (each unit frees what it
/// allocates).
void extrapolate_mean_units(const StepGraph& g, const std::vector<MarkSnapshot>& marks, std::size_t b_at,
                            std::int64_t n, SimResult& r) {
  const std::size_t base = (b_at + 1) / 2;
  const MarkSnapshot &from = marks[base], &to = marks[b_at + 1];
  const auto units = static_cast<std::int64_t>(b_at + 1 - base);
  auto mean_times_n = [&](double later, double earlier) {
    if (later < earlier) throw InternalError("a simulated accumulator went backwards between two units");
    return static_cast<Time>(std::llround((later - earlier) * static_cast<double>(n) / static_cast<double>(units)));
  };
  const MicroStepSpan& b = g.micro_steps[b_at];
  const std::vector<Time> early = first_starts(g, r, g.micro_steps[base]), late = first_starts(g, r, b);
  std::vector<Time> busy(g.streams.size(), 0);
  for (int t = b.first_task; t < b.end_task; ++t) busy[g.tasks[t].stream] += r.tasks[t].end - r.tasks[t].start;
  Time period = 0;
  for (std::size_t s = 0; s < g.streams.size(); ++s) {
    period = std::max(period, busy[s]);
    if (early[s] >= 0 && late[s] >= early[s])
      period =
          std::max(period, (late[s] - early[s] + static_cast<Time>(b_at - base) - 1) / static_cast<Time>(b_at - base));
  }
  shift_tail(g, std::vector<Time>(g.streams.size(), period), n, g.micro_steps[b_at + 1].first_task, r);
  const Time by = mul_time(n, period);
  for (std::size_t s = 0; s < g.streams.size(); ++s)
    r.streams[s].busy_ns = add_time(r.streams[s].busy_ns, mul_time(n, busy[s]));
  auto add_mean = [&](Time& acc, Time later, Time earlier) {  // no more than the time it adds
    acc = add_time(acc, std::min(by, mean_times_n(static_cast<double>(later), static_cast<double>(earlier))));
  };
  add_mean(r.compute_busy_ns, to.compute_busy_ns, from.compute_busy_ns);
  add_mean(r.comm_busy_ns, to.comm_busy_ns, from.comm_busy_ns);
  add_mean(r.overlap_ns, to.overlap_ns, from.overlap_ns);
  for (std::size_t l = 0; l < r.links.size(); ++l) {
    r.links[l].bytes += static_cast<double>(n) * (to.links.bytes[l] - from.links.bytes[l]) / static_cast<double>(units);
    add_mean(r.links[l].busy_ns, to.links.busy_ns[l], from.links.busy_ns[l]);
    shift_samples(r.links[l].timeline, to.at, by);
  }
  for (MemorySample& m : r.memory_timeline)
    if (m.at >= to.at) m.at = add_time(m.at, by);
  r.repetition_exact = false;
  r.micro_steps_repeated = n;
  r.events_represented = r.events + static_cast<std::uint64_t>(
                                        mean_times_n(static_cast<double>(to.events), static_cast<double>(from.events)));
}

}  // namespace

void extrapolate_repeats(const StepGraph& g, const std::vector<MarkSnapshot>& marks, SimResult& r) {
  if (g.repeat_count == 0) return;
  const std::int64_t n = g.repeat_count;
  const auto b_at = static_cast<std::size_t>(g.repeat_after);
  if (b_at < 2 || b_at + 1 >= g.micro_steps.size() || marks.size() != g.micro_steps.size())
    throw InternalError("repeated micro-steps without two explicit ones before and one after");
  const Periods p = find_periods(g, r, b_at);
  if (!p.exact && g.pipeline) return extrapolate_mean_units(g, marks, b_at, n, r);
  r.repetition_exact = p.exact;
  shift_tail(g, p.shift, n, g.micro_steps[b_at + 1].first_task, r);
  const MarkSnapshot &ma = marks[b_at - 1], &mb = marks[b_at], &tail = marks[b_at + 1];
  add_busy(g, g.micro_steps[b_at], ma, mb, p, n, r);
  add_memory_drift(marks, b_at, n, r);
  // Timelines (traces): samples after the repeated micro-steps move by the widest period.
  for (Resource& link : r.links) shift_samples(link.timeline, tail.at, mul_time(n, p.widest));
  for (MemorySample& m : r.memory_timeline)
    if (m.at >= tail.at) m.at = add_time(m.at, mul_time(n, p.widest));
  r.micro_steps_repeated = n;
  r.events_represented = r.events + static_cast<std::uint64_t>(n) * (mb.events - ma.events);
}

}  // namespace stepcast::sim
