#include "simulator/schedules.hpp"

#include "simulator/internal_error.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>

namespace stepcast::sim {

namespace {

using Kind = PipeOp::Kind;

PipeOp op(Kind kind, int micro_batch, int chunk = 0) { return PipeOp{kind, micro_batch, chunk}; }

/// GPipe: every forward, then every backward in micro-batch order (Fig 3 of Narayanan et
/// al. 2021 draws the backwards 1..m in that order). Each stage holds all m micro-batches.
StageProgram gpipe_stage(int micro_batches) {
  StageProgram prog;
  for (int k = 0; k < micro_batches; ++k) prog.push_back(op(PipeOp::forward, k));
  for (int k = 0; k < micro_batches; ++k) prog.push_back(op(PipeOp::backward, k));
  return prog;
}

/// Warm-up forwards of stage i in the non-interleaved 1F1B family: min(p - i - 1, m).
int warmup_1f1b(int stages, int micro_batches, int stage) { return std::min(stages - stage - 1, micro_batches); }

/// 1F1B (PipeDream-Flush): w = min(p-i-1, m) warm-up forwards, then m - w pairs of
/// (forward w+k, backward k), then the w remaining backwards (cool-down). Stage i holds at
/// most w + 1 = p - i micro-batches (Narayanan et al. 2021, Sec 2.2.1).
StageProgram one_f_one_b_stage(int stages, int micro_batches, int stage) {
  const int warmup = warmup_1f1b(stages, micro_batches, stage);
  StageProgram prog;
  for (int k = 0; k < warmup; ++k) prog.push_back(op(PipeOp::forward, k));
  for (int k = 0; k < micro_batches - warmup; ++k) {
    prog.push_back(op(PipeOp::forward, warmup + k));
    prog.push_back(op(PipeOp::backward, k));
  }
  for (int k = micro_batches - warmup; k < micro_batches; ++k) prog.push_back(op(PipeOp::backward, k));
  return prog;
}

/// ZB-H1 (Qi et al. 2023, Sec 2.1): 1F1B's order with each backward split into B and W,
/// and stage i's W deferred by i micro-batches (W of k - i right after B of k), so that
/// every stage holds p micro-batches awaiting W when m >= p (stage 0 defers none, the last
/// p - 1) and the deferred W fill the cool-down. B no longer waits for W, so the backward
/// crosses a stage in tb instead of tb + tw.
StageProgram zb_h1_stage(int stages, int micro_batches, int stage) {
  const int warmup = warmup_1f1b(stages, micro_batches, stage);
  StageProgram prog;
  int next_w = 0;
  auto backward_then_lagging_w = [&](int k) {
    prog.push_back(op(PipeOp::backward_input, k));
    if (k - stage >= 0) prog.push_back(op(PipeOp::backward_weight, next_w++));
  };
  for (int k = 0; k < warmup; ++k) prog.push_back(op(PipeOp::forward, k));
  for (int k = 0; k < micro_batches - warmup; ++k) {
    prog.push_back(op(PipeOp::forward, warmup + k));
    backward_then_lagging_w(k);
  }
  for (int k = micro_batches - warmup; k < micro_batches; ++k) backward_then_lagging_w(k);
  while (next_w < micro_batches) prog.push_back(op(PipeOp::backward_weight, next_w++));
  return prog;
}

/// The k-th forward (or backward) of a stage under interleaving: micro-batches go in groups
/// of p; within a group, p forwards on chunk 0, then p on chunk 1, ... (backwards walk the
/// chunks from v-1 down). Narayanan et al. 2021, Sec 2.2.2.
PipeOp interleaved_op(Kind kind, int k, int stages, int chunks) {
  const int group = stages * chunks;
  const int in_group = k % group;
  int chunk = in_group / stages;
  if (kind == PipeOp::backward) chunk = chunks - 1 - chunk;
  return op(kind, (k / group) * stages + in_group % stages, chunk);
}

/// Warm-up forwards of stage i under interleaving: 2(p-i-1) + (v-1)p, all m·v when m = p.
int interleaved_warmup(int stages, int micro_batches, int chunks, int stage) {
  const int total = micro_batches * chunks;
  return micro_batches == stages ? total : std::min(2 * (stages - stage - 1) + (chunks - 1) * stages, total);
}

/// Interleaved 1F1B over the m·v chunk-passes of stage i: warm-up of 2(p-i-1) + (v-1)p
/// forwards (all m·v when m = p), then one forward one backward, then the cool-down
/// backwards. Warm-up count as in Megatron-LM's interleaved schedule
/// (megatron/core/pipeline_parallel/schedules.py, forward_backward_pipelining_with_interleaving).
StageProgram interleaved_stage(int stages, int micro_batches, int chunks, int stage) {
  const int total = micro_batches * chunks;
  const int warmup = interleaved_warmup(stages, micro_batches, chunks, stage);
  StageProgram prog;
  for (int k = 0; k < warmup; ++k) prog.push_back(interleaved_op(PipeOp::forward, k, stages, chunks));
  for (int k = 0; k < total - warmup; ++k) {
    prog.push_back(interleaved_op(PipeOp::forward, warmup + k, stages, chunks));
    prog.push_back(interleaved_op(PipeOp::backward, k, stages, chunks));
  }
  for (int k = total - warmup; k < total; ++k) prog.push_back(interleaved_op(PipeOp::backward, k, stages, chunks));
  return prog;
}

std::string context(int stages, int micro_batches, int chunks) {
  return " (stages " + std::to_string(stages) + ", micro_batches " + std::to_string(micro_batches) + ", chunks " +
         std::to_string(chunks) + ")";
}

void check_parameters(std::string_view name, int stages, int micro_batches, int chunks) {
  const std::string where =
      "pipeline schedule \"" + std::string(name) + "\"" + context(stages, micro_batches, chunks) + ": ";
  if (stages < 1) throw std::invalid_argument(where + "stages must be >= 1");
  if (micro_batches < 1) throw std::invalid_argument(where + "micro_batches must be >= 1");
  if (chunks < 1) throw std::invalid_argument(where + "chunks must be >= 1");
  if (name == "interleaved") {
    if (chunks < 2) throw std::invalid_argument(where + "interleaving needs chunks >= 2 (one chunk is \"1f1b\")");
    if (micro_batches % stages != 0)
      throw std::invalid_argument(where + "micro_batches must be a multiple of stages (groups of p)");
  } else if (chunks != 1) {
    throw std::invalid_argument(where + "runs one chunk per stage (chunks must be 1)");
  }
}

}  // namespace

const std::vector<ScheduleInfo>& pipeline_schedules() {
  static const std::vector<ScheduleInfo> infos = {
      {"gpipe", "all m forwards, then all m backwards; bubble (p-1)/m, each stage holds m micro-batches",
       "Huang et al. 2019, GPipe, arXiv 1811.06965, Sec 2"},
      {"1f1b",
       "p-i-1 warm-up forwards on stage i, then one forward one backward, then cool-down backwards; "
       "bubble (p-1)/m, stage i holds p-i micro-batches",
       "Narayanan et al. 2021, arXiv 2104.04473, Sec 2.2.1 (PipeDream-Flush)"},
      {"interleaved",
       "v chunks per stage (virtual stage c·p+i), micro-batches in groups of p, m % p == 0; "
       "bubble (p-1)/(v·m), stage 0 holds p + (p-1)/v micro-batches",
       "Narayanan et al. 2021, arXiv 2104.04473, Sec 2.2.2"},
      {"zb-h1",
       "1F1B with the backward split into B (input gradient) and W (weight gradient), stage i "
       "deferring W by i micro-batches into the cool-down; bubble (p-1)(tf+tb-tw) vs 1F1B's "
       "(p-1)(tf+tb+tw), same peak memory",
       "Qi et al. 2023, Zero Bubble Pipeline Parallelism, arXiv 2401.10241, Sec 2.1"},
  };
  return infos;
}

std::vector<StageProgram> schedule(std::string_view name, int stages, int micro_batches, int chunks) {
  const auto& infos = pipeline_schedules();
  if (std::none_of(infos.begin(), infos.end(), [&](const ScheduleInfo& s) { return s.name == name; })) {
    std::string msg = "unknown pipeline schedule \"" + std::string(name) + "\"; valid:";
    for (const auto& s : infos) msg += " \"" + s.name + "\"";
    throw std::invalid_argument(msg);
  }
  check_parameters(name, stages, micro_batches, chunks);
  std::vector<StageProgram> programs;
  for (int i = 0; i < stages; ++i) {
    if (name == "gpipe")
      programs.push_back(gpipe_stage(micro_batches));
    else if (name == "1f1b")
      programs.push_back(one_f_one_b_stage(stages, micro_batches, i));
    else if (name == "interleaved")
      programs.push_back(interleaved_stage(stages, micro_batches, chunks, i));
    else
      programs.push_back(zb_h1_stage(stages, micro_batches, i));
  }
  return programs;
}

int steady_period_micro_batches(std::string_view name, int stages) {
  if (name == "interleaved") return stages;
  return name == "gpipe" ? 0 : 1;
}

int warmup_forwards(std::string_view name, int stages, int micro_batches, int chunks, int stage) {
  check_parameters(name, stages, micro_batches, chunks);
  const int last = micro_batches * chunks - 1;
  if (name == "gpipe") return last;
  if (name == "interleaved") return std::min(last, interleaved_warmup(stages, micro_batches, chunks, stage));
  return std::min(last, warmup_1f1b(stages, micro_batches, stage));
}

std::vector<int> pair_indices(const StageProgram& program) {
  int before_first_backward = 0;
  while (before_first_backward < static_cast<int>(program.size()) &&
         program[before_first_backward].kind == PipeOp::forward)
    ++before_first_backward;
  const int warmup = std::max(0, before_first_backward - 1);
  std::vector<int> pair(program.size(), -1);
  int forwards = 0;
  for (std::size_t k = 0; k < program.size(); ++k) {
    if (program[k].kind == PipeOp::forward) ++forwards;
    pair[k] = std::max(-1, forwards - 1 - warmup);
  }
  return pair;
}

namespace {

/// Progress slots per (virtual stage, micro-batch): forward done, backward/B done, W done.
constexpr int kForward = 0, kInputGrad = 1, kWeightGrad = 2;

struct Shape {
  int stages, micro_batches, chunks;
  /// Index of (virtual stage, micro-batch), 0 .. p·v·m - 1, micro-batch major (an op's
  /// dependencies lie beside it).
  std::size_t cell(int vstage, int micro_batch) const {
    return static_cast<std::size_t>(micro_batch) * stages * chunks + vstage;
  }
  std::size_t slot(int vstage, int micro_batch, int what) const { return cell(vstage, micro_batch) * 3 + what; }
  std::size_t slots() const { return static_cast<std::size_t>(stages) * chunks * micro_batches * 3; }
};

std::string describe(const PipeOp& o, int stage) {
  static const char* const kNames[] = {"forward", "backward", "backward_input", "backward_weight"};
  return std::string(kNames[o.kind]) + " of micro-batch " + std::to_string(o.micro_batch) + ", chunk " +
         std::to_string(o.chunk) + " on stage " + std::to_string(stage);
}

/// Why the ops of the programs are not exactly one forward and one backward (or one B and
/// one W) per (stage, chunk, micro-batch); "" when they are.
std::string completeness_violation(const std::vector<StageProgram>& programs, const Shape& s) {
  std::vector<std::array<int, 4>> count(static_cast<std::size_t>(s.stages) * s.chunks * s.micro_batches);
  for (int i = 0; i < s.stages; ++i)
    for (const PipeOp& o : programs[i]) {
      if (o.micro_batch < 0 || o.micro_batch >= s.micro_batches || o.chunk < 0 || o.chunk >= s.chunks)
        return describe(o, i) + ": micro-batch or chunk out of range";
      ++count[s.cell(virtual_stage(i, o.chunk, s.stages), o.micro_batch)][o.kind];
    }
  for (int vs = 0; vs < s.stages * s.chunks; ++vs)
    for (int k = 0; k < s.micro_batches; ++k) {
      const auto& c = count[s.cell(vs, k)];
      const bool whole = c[PipeOp::backward] == 1 && c[PipeOp::backward_input] == 0 && c[PipeOp::backward_weight] == 0;
      const bool split = c[PipeOp::backward] == 0 && c[PipeOp::backward_input] == 1 && c[PipeOp::backward_weight] == 1;
      if (c[PipeOp::forward] != 1 || !(whole || split))
        return "micro-batch " + std::to_string(k) + ", chunk " + std::to_string(vs / s.stages) + " on stage " +
               std::to_string(vs % s.stages) + ": needs one forward and one backward (or one B and one W), has " +
               std::to_string(c[0]) + " forward, " + std::to_string(c[1]) + " backward, " + std::to_string(c[2]) +
               " B, " + std::to_string(c[3]) + " W";
    }
  return "";
}

/// At most two values, without an allocation (the replay asks for them once per op).
template <class T>
struct Few {
  T v[2] = {};
  int n = 0;
  Few() = default;
  Few(std::initializer_list<T> list) {
    for (T x : list) v[n++] = x;
  }
  const T* begin() const { return v; }
  const T* end() const { return v + n; }
};

/// A progress slot an op waits for, and the virtual stage whose op completes it.
struct Dependency {
  std::size_t slot = 0;
  int vstage = 0;
};

/// The progress slots op `o` of `stage` waits for (dependency_violation's rules).
Few<Dependency> dependencies(const PipeOp& o, int stage, const Shape& s) {
  const int vs = virtual_stage(stage, o.chunk, s.stages);
  const int last = s.stages * s.chunks - 1;
  switch (o.kind) {
    case PipeOp::forward:
      if (vs > 0) return {Dependency{s.slot(vs - 1, o.micro_batch, kForward), vs - 1}};
      return {};
    case PipeOp::backward:
    case PipeOp::backward_input:
      if (vs < last)
        return {Dependency{s.slot(vs, o.micro_batch, kForward), vs},
                Dependency{s.slot(vs + 1, o.micro_batch, kInputGrad), vs + 1}};
      return {Dependency{s.slot(vs, o.micro_batch, kForward), vs}};
    case PipeOp::backward_weight:
      return {Dependency{s.slot(vs, o.micro_batch, kInputGrad), vs}};
  }
  return {};
}

double duration_of(Kind kind, const PipeOpDurations& d) {
  switch (kind) {
    case PipeOp::forward:
      return d.forward;
    case PipeOp::backward:
      return d.backward;
    case PipeOp::backward_input:
      return d.backward_input;
    case PipeOp::backward_weight:
      return d.backward_weight;
  }
  return 0;
}

/// The progress slots an op completes: a whole backward completes both B and W.
Few<int> completes(Kind kind) {
  switch (kind) {
    case PipeOp::forward:
      return {kForward};
    case PipeOp::backward:
      return {kInputGrad, kWeightGrad};
    case PipeOp::backward_input:
      return {kInputGrad};
    case PipeOp::backward_weight:
      return {kWeightGrad};
  }
  return {};
}

struct Played {
  PipeReplay replay;
  std::string stuck;  ///< "" when every program ran to its end
};

/// List scheduling of the programs in their order (replay's rule). Sweeps the stages,
/// advancing each as far as its dependencies allow, until none moves; a start time depends
/// only on the stage's previous op and the dependencies' finishes, so sweep order is free:
/// the sweeps alternate first to last and last to first, so that a forward wave (stage i
/// waits for i - 1) and a backward wave (i waits for i + 1) each cross the pipeline in one.
/// Plays the programs with the durations of each virtual stage (`d`, one entry for all of
/// them or p·v entries).
Played play(const std::vector<StageProgram>& programs, const Shape& s, const std::vector<PipeOpDurations>& per_vstage) {
  std::vector<double> finish(s.slots(), -1.0);  // -1: not done yet
  std::vector<std::size_t> next(programs.size(), 0);
  Played out;
  out.replay.stage_busy.assign(programs.size(), 0.0);
  out.replay.stage_finish.assign(programs.size(), 0.0);
  for (bool moved = true, down = false; moved; down = !down) {
    moved = false;
    for (int j = 0; j < s.stages; ++j) {
      const int i = down ? s.stages - 1 - j : j;
      for (; next[i] < programs[i].size(); ++next[i], moved = true) {
        const PipeOp& o = programs[i][next[i]];
        const auto deps = dependencies(o, i, s);
        if (!std::all_of(deps.begin(), deps.end(), [&](const Dependency& k) { return finish[k.slot] >= 0; })) break;
        const int vstage = virtual_stage(i, o.chunk, s.stages);
        auto durations = [&](int vs) -> const PipeOpDurations& {
          return per_vstage.size() == 1 ? per_vstage.front() : per_vstage[static_cast<std::size_t>(vs)];
        };
        const PipeOpDurations& d = durations(vstage);
        double start = out.replay.stage_finish[i];
        for (const Dependency& k : deps)  // another virtual stage's slot arrives its `send` after its end
          start = std::max(start, finish[k.slot] + (k.vstage != vstage ? durations(k.vstage).send : 0.0));
        const double end = start + duration_of(o.kind, d);
        for (int what : completes(o.kind)) {
          const std::size_t k = s.slot(vstage, o.micro_batch, what);
          finish[k] = end;
        }
        out.replay.stage_finish[i] = end;
        out.replay.stage_busy[i] += duration_of(o.kind, d);
      }
    }
  }
  for (int i = 0; i < s.stages && out.stuck.empty(); ++i)
    if (next[i] < programs[i].size())
      out.stuck = "deadlock: " + describe(programs[i][next[i]], i) +
                  " waits for an op that never runs (a dependency later in its own or another program)";
  for (double f : out.replay.stage_finish) out.replay.step = std::max(out.replay.step, f);
  return out;
}

std::string shape_violation(const std::vector<StageProgram>& programs, int micro_batches, int chunks) {
  if (programs.empty()) return "no stage programs";
  if (micro_batches < 1) return "micro_batches must be >= 1";
  if (chunks < 1) return "chunks must be >= 1";
  return "";
}

/// The programs played with `per_vstage`'s durations, or in `stuck` why they are not a valid
/// pipeline (dependency_violation's reasons: shape, completeness, then a deadlock).
Played checked_play(const std::vector<StageProgram>& programs, int micro_batches, int chunks,
                    const std::vector<PipeOpDurations>& per_vstage) {
  Played out;
  out.stuck = shape_violation(programs, micro_batches, chunks);
  if (!out.stuck.empty()) return out;
  const Shape s{static_cast<int>(programs.size()), micro_batches, chunks};
  out.stuck = completeness_violation(programs, s);
  return out.stuck.empty() ? play(programs, s, per_vstage) : out;
}

}  // namespace

std::string dependency_violation(const std::vector<StageProgram>& programs, int micro_batches, int chunks) {
  return checked_play(programs, micro_batches, chunks, {PipeOpDurations{}}).stuck;
}

PipeReplay replay(const std::vector<StageProgram>& programs, int micro_batches, int chunks, const PipeOpDurations& d) {
  for (double t : {d.forward, d.backward, d.backward_input, d.backward_weight, d.send})
    if (!(t >= 0) || !std::isfinite(t))
      throw std::invalid_argument("pipeline replay: op durations must be finite and >= 0");
  return replay(programs, micro_batches, chunks, std::vector<PipeOpDurations>{d});
}

namespace {

void check_durations(std::size_t stages, int chunks, const std::vector<PipeOpDurations>& per_virtual_stage) {
  for (const PipeOpDurations& d : per_virtual_stage)
    for (double t : {d.forward, d.backward, d.backward_input, d.backward_weight, d.send})
      if (!(t >= 0) || !std::isfinite(t))
        throw std::invalid_argument("pipeline replay: op durations must be finite and >= 0");
  if (per_virtual_stage.size() != 1 && per_virtual_stage.size() != stages * static_cast<std::size_t>(chunks))
    throw std::invalid_argument("pipeline replay: expected one durations entry or one per virtual stage");
}

}  // namespace

PipeReplay replay(const std::vector<StageProgram>& programs, int micro_batches, int chunks,
                  const std::vector<PipeOpDurations>& per_virtual_stage) {
  check_durations(programs.size(), chunks, per_virtual_stage);
  const Played played = checked_play(programs, micro_batches, chunks, per_virtual_stage);  // checked as it plays
  if (!played.stuck.empty()) throw std::invalid_argument("pipeline replay: " + played.stuck);
  return played.replay;
}

CheckedPrograms::CheckedPrograms(std::vector<StageProgram> programs, int micro_batches, int chunks)
    : programs_(std::move(programs)), micro_batches_(micro_batches), chunks_(chunks) {
  if (const std::string why = dependency_violation(programs_, micro_batches, chunks); !why.empty())
    throw std::invalid_argument("pipeline programs: " + why);
}

PipeReplay replay(const CheckedPrograms& p, const std::vector<PipeOpDurations>& per_virtual_stage) {
  check_durations(p.programs().size(), p.chunks(), per_virtual_stage);
  // Checked at construction: valid programs play to their end whatever the durations.
  const Shape s{static_cast<int>(p.programs().size()), p.micro_batches(), p.chunks()};
  Played played = play(p.programs(), s, per_virtual_stage);
  if (!played.stuck.empty()) throw InternalError("pipeline replay of checked programs: " + played.stuck);
  return played.replay;
}

namespace {

/// Most forwards held at once, a forward being released by an op of kind `release` (or by
/// the whole backward).
int peak_held(const StageProgram& program, Kind release) {
  int held = 0, peak = 0;
  for (const PipeOp& o : program) {
    if (o.kind == PipeOp::forward)
      peak = std::max(peak, ++held);
    else if (o.kind == PipeOp::backward || o.kind == release)
      --held;
  }
  return peak;
}

}  // namespace

int peak_in_flight(const StageProgram& program) { return peak_held(program, PipeOp::backward_input); }

int peak_awaiting_weight_gradient(const StageProgram& program) { return peak_held(program, PipeOp::backward_weight); }

}  // namespace stepcast::sim
