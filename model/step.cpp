#include "model/step.hpp"

#include <algorithm>
#include <cassert>

namespace stepcast {

StepTime step_time(const StepWork& w) {
  assert(w.micro_steps >= 1);
  const double m = w.micro_steps;
  const double compute = m * (w.forward_s + w.backward_s) + w.optimizer_s;
  StepTime t;
  t.comm_total_s = m * (w.comm_forward_s + w.comm_backward_s) + w.comm_last_backward_s + w.comm_after_step_s;
  t.no_overlap_s = compute + t.comm_total_s;

  double overlapped = 0;
  for (int i = 0; i < w.micro_steps; ++i) {
    const double cf = w.comm_forward_s + (i == 0 ? w.comm_after_step_s : 0);
    const double cb = w.comm_backward_s + (i + 1 == w.micro_steps ? w.comm_last_backward_s : 0);
    overlapped += std::max(w.forward_s, cf) + std::max(w.backward_s, cb);
  }
  t.perfect_overlap_s = std::max(overlapped + w.optimizer_s, compute + w.comm_unhideable_s);
  t.perfect_overlap_s = std::min(t.perfect_overlap_s, t.no_overlap_s);
  t.estimate_s = std::min(t.no_overlap_s, t.perfect_overlap_s + w.comm_serialized_s);
  t.comm_exposed_s = std::max(0.0, t.estimate_s - compute);
  return t;
}

}  // namespace stepcast
