/// \file
/// Step time in closed form: compute and communication of one optimizer step combined as
/// two bounds (nothing overlaps; everything that may overlap does) and a point estimate
/// between them. The discrete-event simulator replaces the point estimate; the bounds stay
/// as its cross-check.
#pragma once

namespace stepcast {

/// Per-step work, seconds, grouped by what it can hide behind.
struct StepWork {
  int micro_steps = 1;          ///< gradient-accumulation micro-steps per optimizer step
  double forward_s = 0;         ///< one micro-step's forward
  double backward_s = 0;        ///< one micro-step's backward (with recompute)
  double optimizer_s = 0;       ///< once per step, never overlapped
  double comm_forward_s = 0;    ///< per micro-step, may overlap that micro-step's forward
  double comm_backward_s = 0;   ///< per micro-step, may overlap that micro-step's backward
  double comm_last_backward_s = 0;  ///< once, may overlap the last micro-step's backward
  double comm_after_step_s = 0; ///< once after the optimizer (e.g. ZeRO-1/2 all-gather);
                                ///< may overlap the next step's first forward at best
  /// Communication that no schedule can hide (the first gather before any compute, the
  /// last reduction after the last gradient), included in the comm_* terms above.
  double comm_unhideable_s = 0;
  /// Communication that the implementation does not overlap although it could in principle
  /// (e.g. DeepSpeed's post-step all-gather), included in the comm_* terms above.
  double comm_serialized_s = 0;
};

struct StepTime {
  double no_overlap_s = 0;       ///< Σ compute + Σ comm
  double perfect_overlap_s = 0;  ///< each window costs max(compute, comm), plus the unhideable part
  double estimate_s = 0;         ///< perfect overlap + what the implementation serialises, <= no_overlap
  double comm_total_s = 0;
  double comm_exposed_s = 0;     ///< estimate - compute
};

/// no_overlap = m·(F + B + Cf + Cb) + Cl + Ca + O
/// perfect    = Σ_micro [max(F, Cf) + max(B, Cb)] with Cl added to the last micro-step's
///              backward window, Ca added to the first forward window, + O, and never below
///              compute + the unhideable communication.
/// estimate   = min(no_overlap, perfect + serialised).
StepTime step_time(const StepWork& w);

}  // namespace stepcast
