/// \file
/// Pipeline-parallel schedules: for p stages, m micro-batches and v model chunks per stage,
/// the order in which each stage runs the forward and backward of every (micro-batch,
/// chunk). Registered by name ("gpipe", "1f1b", "interleaved", "zb-h1"), with a checker of
/// the dependencies between stages and a replay (each op's duration, sends free or of a fixed
/// delay) that gives each stage's finish time, from which the tests check each schedule's bubble formula.
/// lowering_pipeline.cpp lowers a step's stages in these orders.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace stepcast::sim {

/// One operation of one stage: the forward, the whole backward, or the backward split into
/// its input gradient (B) and weight gradient (W) (zero-bubble schedules), of one
/// micro-batch on one model chunk of the stage.
struct PipeOp {
  enum Kind { forward, backward, backward_input, backward_weight } kind;
  int micro_batch;  ///< 0 .. m-1
  int chunk;        ///< 0 .. v-1 (always 0 without interleaving)
  bool operator==(const PipeOp&) const = default;
};

/// The order in which one stage runs its ops.
using StageProgram = std::vector<PipeOp>;

/// A registered schedule: its name, one line on what it does, and where it comes from.
struct ScheduleInfo {
  std::string name;
  std::string description;
  std::string source;
};

/// Every registered schedule, in a fixed order.
const std::vector<ScheduleInfo>& pipeline_schedules();

/// The programs of stages 0 .. stages-1 for the named schedule. `chunks` is v: 1 for
/// "gpipe", "1f1b" and "zb-h1", >= 2 for "interleaved" (which also needs m % p == 0).
/// Throws std::invalid_argument for an unknown name (listing the registered ones) or
/// parameters the schedule does not accept (stages, micro_batches, chunks < 1, ...).
std::vector<StageProgram> schedule(std::string_view name, int stages, int micro_batches, int chunks);

/// The steady state of the "1f1b", "interleaved" and "zb-h1" programs, which the pipeline
/// lowering holds in closed form (lowering_pipeline.cpp). A stage's program is its warm-up
/// forwards, then pairs: a forward and the backward work after it up to the next forward
/// (the last pair also holds the cool-down). The program for m + period micro-batches is the
/// one for m with period·v more pairs: pair j of the longer program is pair j of the shorter
/// for the first ones, and pair j - period·v with its micro-batches moved by period for the
/// steady ones from pair p on (schedules_test.cpp checks both for every schedule).
/// The period in micro-batches: 1 for "1f1b" and "zb-h1", p for "interleaved" (its groups of
/// p micro-batches), 0 for "gpipe" (no steady state: all forwards, then all backwards).
int steady_period_micro_batches(std::string_view name, int stages);

/// Forwards stage `stage` runs before its first pair: its warm-up, p - i - 1 for "1f1b" and
/// "zb-h1", Megatron's 2(p - i - 1) + (v - 1)p for "interleaved", but one less than all m·v
/// forwards where the warm-up would take them all (m = p interleaved, "gpipe", short
/// pipelines: the last forward then opens the only pair). Parameters as schedule().
int warmup_forwards(std::string_view name, int stages, int micro_batches, int chunks, int stage);

/// The pair of each op of `program` (its steady-state unit, above): -1 for the warm-up
/// forwards (those before the first op that is not a forward, but one), then 0, 1, ...
/// counting forwards.
std::vector<int> pair_indices(const StageProgram& program);

/// Virtual stage of chunk c on stage i among p stages: c·p + i (Megatron's interleaved
/// assignment: chunk 0 of every stage, then chunk 1, ...; Narayanan et al. 2021, Sec 2.2).
inline int virtual_stage(int stage, int chunk, int stages) { return chunk * stages + stage; }

/// Why `programs` (one per stage) is not a valid pipeline for m micro-batches and v chunks,
/// or "" when it is. Valid: every (micro-batch, chunk) has on its stage one forward and
/// either one backward or one backward_input and one backward_weight; and all programs run
/// to the end when each op waits for its dependencies: the forward on virtual stage k
/// needs the forward on k-1; a backward (or B) on k needs the backward (or B) on k+1 and
/// its own forward; W needs its B. A program that waits on an op that never runs (a
/// deadlock) is named.
std::string dependency_violation(const std::vector<StageProgram>& programs, int micro_batches, int chunks);

/// Duration of one op of one chunk, in any time unit (the tests use tf = 1, tb = 2).
struct PipeOpDurations {
  double forward = 1;
  double backward = 2;         ///< whole backward (B + W)
  double backward_input = 1;   ///< B of the zero-bubble split
  double backward_weight = 1;  ///< W of the zero-bubble split
  /// Delay from the end of an op to the start of the op on the neighbouring virtual stage
  /// that waits for it: the forward's activation send, the backward's (or B's) gradient
  /// send (0: free communication).
  double send = 0;
};

/// Each stage's busy time and finish time when the programs run with free communication.
struct PipeReplay {
  std::vector<double> stage_busy;    ///< Σ durations of the stage's ops
  std::vector<double> stage_finish;  ///< end of the stage's last op
  double step = 0;                   ///< max over stages of stage_finish
};

/// List scheduling of `programs` in their order: an op starts when its stage has finished
/// the op before it and its dependencies (as in dependency_violation) have finished, at
/// max(stage free, dependencies done), a dependency on another virtual stage done `send`
/// (the sender's) after its end; communication takes no other time. Throws
/// std::invalid_argument with dependency_violation's reason when the programs are invalid.
PipeReplay replay(const std::vector<StageProgram>& programs, int micro_batches, int chunks,
                  const PipeOpDurations& durations);

/// replay() with each virtual stage's own durations: per_virtual_stage[k] for the ops of
/// virtual stage k = chunk·p + stage (p·v entries, or one for all), a pipeline of unequal
/// chunks. Throws std::invalid_argument for another count or invalid programs.
PipeReplay replay(const std::vector<StageProgram>& programs, int micro_batches, int chunks,
                  const std::vector<PipeOpDurations>& per_virtual_stage);

/// Stage programs checked once for m micro-batches and v chunks (dependency_violation), so
/// that replaying them again and again (the planner's pipeline bound) skips the check.
class CheckedPrograms {
 public:
  /// Throws std::invalid_argument with dependency_violation's reason when they are invalid.
  CheckedPrograms(std::vector<StageProgram> programs, int micro_batches, int chunks);
  const std::vector<StageProgram>& programs() const { return programs_; }
  int micro_batches() const { return micro_batches_; }
  int chunks() const { return chunks_; }

 private:
  std::vector<StageProgram> programs_;
  int micro_batches_;
  int chunks_;
};

/// replay() of programs checked before (durations as there: one entry or p·v).
PipeReplay replay(const CheckedPrograms& programs, const std::vector<PipeOpDurations>& per_virtual_stage);

/// Most (micro-batch, chunk) forwards a stage holds at once whose backward (whole, or B)
/// has not run: the activations it keeps, in chunk units.
int peak_in_flight(const StageProgram& program);

/// Most (micro-batch, chunk) forwards a stage holds at once whose weight gradient (whole
/// backward, or W) has not run: what ZB-H1 bounds by p on every stage (Qi et al. 2023,
/// Sec 2.1).
int peak_awaiting_weight_gradient(const StageProgram& program);

}  // namespace stepcast::sim
