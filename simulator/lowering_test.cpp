// Rules every lowering shares: buckets, rank classes, the closed-form bounds, the registry
// of strategy families, and the errors of a malformed plan or a step beyond the clock.
#include "simulator/lowering.hpp"

#include "simulator/bounds.hpp"
#include "simulator/internal_error.hpp"
#include "simulator/lowering_test_plan.hpp"
#include "simulator/simulation.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

using namespace stepcast;
using namespace stepcast::sim;
using namespace stepcast::sim::testing;

TEST_CASE("bucket sizes: the first up to its own cap, the others full, the last what is left") {
  const auto s = bucket_sizes(60e6, 1e6, 25e6);
  REQUIRE(s.size() == 4);
  CHECK(s[0] == 1e6);
  CHECK(s[1] == 25e6);
  CHECK(s[2] == 25e6);
  CHECK(s[3] == doctest::Approx(9e6));
  CHECK(bucket_sizes(0.5e6, 1e6, 25e6).size() == 1);
  CHECK(bucket_sizes(0, 1e6, 25e6).empty());
}

TEST_CASE("rank groups become classes simulated apart; a straggler sets the pace") {
  CostedStep p = plan(Strategy::ddp);
  const double alike = simulate(lower_step(p)).step_s();
  p.groups = {RankGroup{"most", 15, 2, 1.0, 1.0}, RankGroup{"straggler", 1, 1, 0.8, 1.0}};
  const StepGraph g = lower_step(p);
  CHECK(g.classes.size() == 2);
  CHECK(g.streams.size() == 4);  // compute + NCCL per class
  const SimResult r = simulate(g);
  CHECK(r.step_s() > alike * 1.2);  // the straggler's compute is 1/0.8 = 1.25x
  const StepBounds b = closed_form_bounds(g);
  CHECK(r.step_s() >= b.perfect_overlap_s * (1 - 1e-9));
  CHECK(r.step_s() <= b.no_overlap_s * (1 + 1e-9));
}

TEST_CASE("simulated steps lie between the closed-form bounds for every strategy") {
  for (Strategy st : {Strategy::ddp, Strategy::fsdp_no_shard, Strategy::zero1, Strategy::zero2, Strategy::zero3,
                      Strategy::fsdp_shard_grad_op, Strategy::fsdp_full_shard, Strategy::fsdp_hybrid_shard}) {
    for (double nic : {0.125, 12.5, 1000.0}) {
      for (int m : {1, 3}) {
        CostedStep p = plan(st, m);
        p.fabric.inter->bw_GBps = nic;
        p.comm_slowdown = 0.1;
        const StepGraph g = lower_step(p);
        const SimResult r = simulate(g);
        const StepBounds b = closed_form_bounds(g);
        CAPTURE(name(st));
        CAPTURE(nic);
        CAPTURE(m);
        CHECK(r.step_s() >= b.perfect_overlap_s * (1 - 1e-9));
        CHECK(r.step_s() <= b.no_overlap_s * (1 + 1e-9));
      }
    }
  }
}

TEST_CASE("each strategy family has its own lowering, registered by strategy") {
  CHECK(lowering_family(Strategy::ddp) == lowering_family(Strategy::fsdp_no_shard));
  CHECK(lowering_family(Strategy::zero1) == lowering_family(Strategy::zero2));
  for (Strategy st : {Strategy::fsdp_full_shard, Strategy::fsdp_shard_grad_op, Strategy::fsdp_hybrid_shard})
    CHECK(lowering_family(st) == lowering_family(Strategy::zero3));
  CHECK(lowering_family(Strategy::ddp) != lowering_family(Strategy::zero2));
  CHECK(lowering_family(Strategy::zero2) != lowering_family(Strategy::zero3));
}

TEST_CASE("huge but valid inputs give finite results within the step's own bounds") {
  CostedStep p = plan(Strategy::zero3, 1'000'000);
  p.groups = {RankGroup{"most", 15, 2, 1.0, 1.0}, RankGroup{"straggler", 1, 1, 1e-3, 1e-3}};
  const StepGraph g = lower_step(p);
  const SimResult r = simulate(g);  // throws if outside its bounds
  const StepBounds b = closed_form_bounds(g);
  CHECK(r.step_s() > 1e6 * 1.2 / 1e-3 * 0.99);  // a million micro-steps at 1/1000 speed
  CHECK(r.step_s() >= b.perfect_overlap_s * (1 - 1e-9));
  CHECK(r.step_s() <= b.no_overlap_s * (1 + 1e-9));
  CHECK(r.compute_busy_ns >= 0);
  CHECK(r.overlap_ns <= r.comm_busy_ns);
}

TEST_CASE("a step that does not fit the clock is an internal error, never a wrapped time") {
  CostedStep p = plan(Strategy::ddp);
  p.groups = {RankGroup{"most", 15, 2, 1.0, 1.0}, RankGroup{"straggler", 1, 1, 1e-300, 1.0}};
  CHECK_THROWS_AS(simulate(lower_step(p)), InternalError);  // 1e300 s of compute
  p = plan(Strategy::zero2);
  p.fabric.inter->bw_GBps = 1e-300;  // a near-zero bandwidth
  CHECK_THROWS_AS(simulate(lower_step(p)), InternalError);
  p = plan(Strategy::ddp, std::int64_t{1} << 40);  // 2^40 micro-steps of 1.2 s: 41,000 years
  CHECK_THROWS_AS(simulate(lower_step(p)), InternalError);
}

TEST_CASE("a simulated step outside its closed-form bounds is an internal error") {
  const StepGraph g = lower_step(plan(Strategy::ddp));
  SimResult r = simulate(g);
  check_step_invariants(g, {}, r);
  SimResult below = r;
  below.step_ns = r.step_ns / 2;
  CHECK_THROWS_AS(check_step_invariants(g, {}, below), InternalError);
  SimResult above = r;
  above.step_ns = r.step_ns * 3;
  CHECK_THROWS_AS(check_step_invariants(g, {}, above), InternalError);
  SimResult negative = r;
  negative.comm_busy_ns = -5;
  CHECK_THROWS_AS(check_step_invariants(g, {}, negative), InternalError);
}

TEST_CASE("bucket counts in closed form, bounded; no absurd vector is built") {
  CHECK(bucket_count(60e6, 1e6, 25e6) == 4);
  CHECK(bucket_count(0, 1e6, 25e6) == 0);
  CHECK(bucket_count(0.5e6, 1e6, 25e6) == 1);
  CHECK(bucket_count(26e6, 1e6, 25e6) == 2);
  CHECK(bucket_count(kMaxBuckets * 1e6, 1e6, 1e6) == kMaxBuckets);
  CHECK_THROWS_AS(bucket_count(1e12, 1, 1), InternalError);  // bucket_mb 1e-6 of a 1 TB gradient
  CHECK_THROWS_AS(bucket_sizes(1e12, 1, 1), InternalError);
  CHECK_THROWS_AS(bucket_count(1e9, 0, 1e6), InternalError);
  CostedStep p = plan(Strategy::ddp);
  p.bucket_bytes = p.first_bucket_bytes = 1e-3;
  CHECK_THROWS_AS(lower_step(p), InternalError);
}

// Fuzz finding F3 (a record with grad_accum 0 reached lower_step): an internal error the
// caller can catch, never an assert that aborts.
TEST_CASE("a plan without micro-steps, layers or GPUs is an internal error") {
  CostedStep p = plan(Strategy::ddp, 0);
  CHECK_THROWS_AS(lower_step(p), InternalError);
  p = plan(Strategy::zero3);
  p.layers = 0;
  CHECK_THROWS_AS(lower_step(p), InternalError);
  p = plan(Strategy::zero2);
  p.gpus = 0;
  CHECK_THROWS_AS(lower_step(p), InternalError);
}

// Fuzz finding F10 (10^8 layers: predict never finished): the graph's size is bounded, and
// a step past it is refused before any of it is built.
TEST_CASE("a step graph past kMaxTasks is an internal error, refused at once") {
  CostedStep p = plan(Strategy::zero3);
  p.layers = 100'000'000;
  CHECK_THROWS_AS(lower_step(p), InternalError);
  p.layers = 10'000;  // 10^4 layers: well inside
  CHECK(lower_step(p).tasks.size() < static_cast<std::size_t>(kMaxTasks));
  StepGraph g;
  g.classes.push_back(RankClass{});
  const int s = g.add_stream("compute", StreamKind::compute, 0);
  g.tasks.resize(static_cast<std::size_t>(kMaxTasks));
  CHECK_THROWS_AS(g.add_compute(s, "one too many", TaskCategory::forward, 1.0, 0), InternalError);
}
