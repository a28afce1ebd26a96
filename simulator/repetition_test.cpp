// Rules of gradient accumulation in closed form (repetition.hpp): bounded cost, and the
// explicit simulation's results to the nanosecond.
#include "simulator/lowering.hpp"

#include "simulator/bounds.hpp"
#include "simulator/internal_error.hpp"
#include "simulator/lowering_test_plan.hpp"
#include "simulator/simulation.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

using namespace stepcast;
using namespace stepcast::sim;
using namespace stepcast::sim::testing;

TEST_CASE("gradient accumulation in closed form: the graph holds the first micro-steps and the last") {
  CostedStep p = plan(Strategy::zero3, 1'000'000);
  const StepGraph g = lower_step(p);
  REQUIRE(g.micro_steps.size() == 6);
  CHECK(g.micro_steps[4].index == 4);
  CHECK(g.micro_steps[5].index == 999'999);
  CHECK(g.repeat_after == 4);
  CHECK(g.repeat_count == 1'000'000 - 6);
  task_named(g, "fwd L1 m999999");
  // Up to max_explicit_micro_steps, every micro-step is explicit.
  p.micro_steps = 6;
  CHECK(lower_step(p).repeat_count == 0);
  CHECK(lower_step(p).micro_steps.size() == 6);
}

TEST_CASE("lower_step_explicit lowers every micro-step of a closed form, and nothing else") {
  CostedStep p = plan(Strategy::zero2, 12);
  const StepGraph closed = lower_step(p);
  REQUIRE(closed.repeat_count == 12 - 6);
  const std::optional<StepGraph> every = lower_step_explicit(p, closed);
  REQUIRE(every.has_value());
  CHECK(every->repeat_count == 0);
  CHECK(every->micro_steps.size() == 12);
  p.micro_steps = 6;  // nothing in closed form: nothing to lower again
  CHECK_FALSE(lower_step_explicit(p, lower_step(p)).has_value());
  p.micro_steps = 1'000'000;  // past kMaxExplicitTasks: the closed form stays
  CHECK_FALSE(lower_step_explicit(p, lower_step(p)).has_value());
}

TEST_CASE("the cost of simulating does not grow with the number of micro-steps") {
  for (Strategy st : {Strategy::ddp, Strategy::zero2, Strategy::zero3}) {
    const SimResult four = simulate(lower_step(plan(st, 4)));
    const SimResult few = simulate(lower_step(plan(st, 7)));
    const SimResult many = simulate(lower_step(plan(st, 1'000'000)));
    CAPTURE(name(st));
    CHECK(few.events == many.events);
    CHECK(many.events <= four.events * 6 / 4 + 16);  // 6 micro-steps simulated, not 10^6
    CHECK(many.micro_steps_repeated == 1'000'000 - 6);
    CHECK(many.events_represented > 100'000 * few.events / 7);
  }
}

TEST_CASE("micro-steps in closed form give the explicit simulation's step, to the nanosecond") {
  for (Strategy st : {Strategy::ddp, Strategy::fsdp_no_shard, Strategy::zero1, Strategy::zero2, Strategy::zero3,
                      Strategy::fsdp_shard_grad_op, Strategy::fsdp_full_shard, Strategy::fsdp_hybrid_shard}) {
    for (double nic : {0.125, 12.5, 1000.0}) {
      for (int m = 2; m <= 12; ++m)
        for (int e : {4, 6}) {
          CostedStep p = plan(st, m);
          p.fabric.inter->bw_GBps = nic;
          p.comm_slowdown = 0.1;
          p.activation_bytes_per_layer = 3e8;
          p.static_memory_bytes = 1e9;
          p.max_explicit_micro_steps = 1 << 20;
          const StepGraph eg = lower_step(p);
          const SimResult explicit_run = simulate(eg);
          p.max_explicit_micro_steps = e;
          const StepGraph cg = lower_step(p);
          const SimResult closed = simulate(cg);
          CAPTURE(name(st));
          CAPTURE(nic);
          CAPTURE(m);
          CAPTURE(e);
          CHECK(closed.micro_steps_repeated == std::max(0, m - e));
          const auto tol = static_cast<Time>(explicit_run.events);
          CHECK(std::abs(closed.step_ns - explicit_run.step_ns) <= tol);
          CHECK(std::abs(closed.compute_busy_ns - explicit_run.compute_busy_ns) <= tol);
          CHECK(std::abs(closed.comm_busy_ns - explicit_run.comm_busy_ns) <= tol);
          CHECK(std::abs(closed.overlap_ns - explicit_run.overlap_ns) <= tol);
          // The network integrates rate x time, each end rounded up to the ns: bytes agree to
          // that rounding (rate x 1 ns per event).
          for (std::size_t l = 0; l < closed.links.size(); ++l)
            CHECK(closed.links[l].bytes == doctest::Approx(explicit_run.links[l].bytes).epsilon(1e-5));
          // A backlog of reductions that grows each micro-step (ZeRO-2 on a slow NIC) moves
          // the streams by different periods: events are extrapolated, not counted.
          if (!closed.repetition_exact) continue;
          CHECK(closed.events_represented == explicit_run.events);
          // Memory that drifts each micro-step (gradient shards kept) peaks as explicitly.
          for (std::size_t c = 0; c < closed.peak_memory_bytes.size(); ++c)
            CHECK(closed.peak_memory_bytes[c] == doctest::Approx(explicit_run.peak_memory_bytes[c]).epsilon(1e-12));
          const StepBounds be = closed_form_bounds(eg), bc = closed_form_bounds(cg);
          CHECK(bc.no_overlap_s == doctest::Approx(be.no_overlap_s).epsilon(1e-12));
          CHECK(bc.perfect_overlap_s == doctest::Approx(be.perfect_overlap_s).epsilon(1e-12));
        }
    }
  }
}
