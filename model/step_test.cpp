// Rules of the closed-form step time.
#include "model/step.hpp"

#include <doctest/doctest.h>

using namespace stepcast;

TEST_CASE("without communication both bounds equal the compute time") {
  StepWork w;
  w.micro_steps = 2;
  w.forward_s = 1;
  w.backward_s = 2;
  w.optimizer_s = 0.5;
  StepTime t = step_time(w);
  // 2 x (1 + 2) + 0.5 = 6.5
  CHECK(t.no_overlap_s == doctest::Approx(6.5));
  CHECK(t.perfect_overlap_s == doctest::Approx(6.5));
  CHECK(t.estimate_s == doctest::Approx(6.5));
  CHECK(t.comm_exposed_s == doctest::Approx(0));
}

TEST_CASE("communication shorter than its window hides completely under perfect overlap") {
  StepWork w;
  w.forward_s = 1;
  w.backward_s = 2;
  w.comm_last_backward_s = 1.5;  // fits in the 2 s backward window
  StepTime t = step_time(w);
  CHECK(t.no_overlap_s == doctest::Approx(4.5));
  CHECK(t.perfect_overlap_s == doctest::Approx(3.0));
}

TEST_CASE("communication longer than its window is exposed by the difference") {
  StepWork w;
  w.forward_s = 1;
  w.backward_s = 2;
  w.comm_forward_s = 3;   // forward window: max(1, 3) = 3
  w.comm_backward_s = 1;  // backward window: max(2, 1) = 2
  StepTime t = step_time(w);
  CHECK(t.perfect_overlap_s == doctest::Approx(5.0));
  CHECK(t.no_overlap_s == doctest::Approx(7.0));
}

TEST_CASE("the unhideable part keeps the lower bound above compute + that part") {
  StepWork w;
  w.forward_s = 1;
  w.backward_s = 2;
  w.comm_backward_s = 1;
  w.comm_unhideable_s = 0.25;  // e.g. the last reduce-scatter after the last gradient
  StepTime t = step_time(w);
  CHECK(t.perfect_overlap_s == doctest::Approx(3.25));
}

TEST_CASE("serialised communication moves the estimate toward the no-overlap bound, never past it") {
  StepWork w;
  w.forward_s = 1;
  w.backward_s = 2;
  w.comm_after_step_s = 0.5;
  w.comm_serialized_s = 0.5;
  StepTime t = step_time(w);
  CHECK(t.perfect_overlap_s == doctest::Approx(3.0));  // hidden under the next forward at best
  CHECK(t.estimate_s == doctest::Approx(3.5));
  CHECK(t.estimate_s <= t.no_overlap_s);
}

TEST_CASE("gradient accumulation repeats per-micro-step communication but not the last reduction") {
  StepWork w;
  w.micro_steps = 4;
  w.forward_s = 1;
  w.backward_s = 2;
  w.comm_backward_s = 0.5;
  w.comm_last_backward_s = 3;
  StepTime t = step_time(w);
  // 4 x (1 + 2 + 0.5) + 3 = 17
  CHECK(t.no_overlap_s == doctest::Approx(17.0));
  CHECK(t.comm_total_s == doctest::Approx(5.0));
  // Three micro-steps of 3 s, the last one's backward window max(2, 0.5 + 3) = 3.5: 13.5
  CHECK(t.perfect_overlap_s == doctest::Approx(13.5));
}
