// Rules of the layout search: the screen never loses the winner, rejections are counted by
// reason, the order is deterministic, options are checked.
#include "simulator/plan.hpp"

#include "simulator/predict.hpp"

#include <doctest/doctest.h>

#include <limits>
#include <string>

using namespace stepcast;

namespace {

/// GPT-2 small (12 heads, 12 KV heads, MLP 3072, seq 1024) on one 8-GPU DGX A100, micro-batch
/// 8 x grad_accum 1 x 8 GPUs: a default global batch of 64 sequences.
Scenario gpt2_small(const std::string& extra = "") {
  return parse_scenario(R"({"name": "plan-test", "model": "gpt2",
    "training": {"precision": "bf16_mixed", "micro_batch": 8, "grad_accum": 1, "seq_len": 1024,
                 "flash_attention": true},
    "strategy": "fsdp_full_shard", "hardware": {"box": "dgx-a100", "gpus": 8},
    "dataset": {"tokens": 1e9})" + extra + "}",
                        "plan-test.json");
}

constexpr Strategy kStrategies[] = {Strategy::ddp,   Strategy::zero1,           Strategy::zero2,
                                    Strategy::zero3, Strategy::fsdp_full_shard, Strategy::fsdp_shard_grad_op};

/// Every layout of the plan's space that divides, predicted one by one with predict().
struct Exhaustive {
  double best_step_s = std::numeric_limits<double>::infinity();
  std::string best;
  int predicted = 0;
  int over_memory = 0;
};

Exhaustive exhaustive(const Scenario& base, std::int64_t global, double memory_fraction) {
  Exhaustive out;
  for (Strategy st : kStrategies)
    for (int tp : {1, 2, 4}) {  // 8 does not divide 12 heads
      for (bool sp : {false, true}) {
        if (sp && tp == 1) continue;
        const std::int64_t per_replica = global / (8 / tp);
        for (std::int64_t mb = 1; mb <= per_replica; ++mb) {
          if (per_replica % mb != 0) continue;
          for (Recompute rc : {Recompute::none, Recompute::selective, Recompute::full}) {
            const Layout l{st, tp, sp, mb, per_replica / mb, rc, 8 / tp};
            const Prediction p = predict(with_layout(base, l));
            ++out.predicted;
            if (p.memory.total_bytes > memory_fraction * p.memory.capacity_bytes) {
              ++out.over_memory;
              continue;
            }
            if (p.step_time_s < out.best_step_s) {
              out.best_step_s = p.step_time_s;
              out.best = l.describe();
            }
          }
        }
      }
    }
  return out;
}

}  // namespace

TEST_CASE("the plan's winner is the best of an exhaustive predict() over the same layouts") {
  const Scenario base = gpt2_small();
  PlanOptions o;
  o.top = 3;
  const PlanResult r = plan(base, o);
  const Exhaustive all = exhaustive(base, 64, 0.9);
  REQUIRE(!r.top.empty());
  CHECK(r.exact);
  CHECK(r.top[0].layout.describe() == all.best);
  CHECK(r.top[0].prediction.step_time_s == all.best_step_s);  // bit for bit: same stages
  CHECK(r.simulated >= 3 * o.top);
  CHECK(r.simulated < r.screened);  // the bound pruned something
  for (std::size_t i = 1; i < r.top.size(); ++i)
    CHECK(r.top[i - 1].prediction.step_time_s <= r.top[i].prediction.step_time_s);
}

TEST_CASE("rejections are counted per reason: 882 layouts of GPT-2 small on 8 GPUs at global batch 64") {
  // Per (strategy, tp, sp) family: 7 micro-batches (divisors of 64) x 3 recompute = 21 layouts.
  // Families per strategy: tp1, tp2 +-sp, tp4 +-sp, tp8 +-sp = 7; x 6 strategies = 42; 882.
  // tp 8 does not divide 12 heads: 2 families x 6 x 21 = 252.
  // micro-batch x dp must divide 64: tp1 (dp 8, 8 per replica) refuses mb 16, 32, 64 (9
  // layouts); tp2 (16 per replica) mb 32, 64 (6 each of 2 families); tp4 (32) mb 64 (3 each
  // of 2): 27 per strategy, 162 in all. Left: 882 - 252 - 162 = 468.
  PlanOptions o;
  o.top = 1;
  const PlanResult r = plan(gpt2_small(), o);
  CHECK(r.global_batch == 64);
  CHECK(r.enumerated == 882);
  CHECK(r.rejected[static_cast<int>(PlanRejectReason::tp_model)] == 252);
  CHECK(r.rejected[static_cast<int>(PlanRejectReason::sp_sequence)] == 0);
  CHECK(r.rejected[static_cast<int>(PlanRejectReason::batch)] == 162);
  CHECK(r.rejected[static_cast<int>(PlanRejectReason::invalid)] == 0);
  CHECK(r.rejected[static_cast<int>(PlanRejectReason::memory)] +
            r.screened == 468);
}

TEST_CASE("layouts over the memory limit are rejected exactly where predict() puts them over it") {
  const Scenario base = gpt2_small();
  PlanOptions o;
  o.top = 2;
  o.max_memory_fraction = 0.08;  // 6.4 GB of 80 GB: the large micro-batches do not fit
  const PlanResult r = plan(base, o);
  const Exhaustive all = exhaustive(base, 64, 0.08);
  CHECK(all.over_memory > 0);
  CHECK(r.rejected[static_cast<int>(PlanRejectReason::memory)] == all.over_memory);
  CHECK(r.screened == all.predicted - all.over_memory);
  REQUIRE(!r.top.empty());
  CHECK(r.top[0].layout.describe() == all.best);
  for (const PlanRow& row : r.top) CHECK(row.prediction.memory.total_bytes <= 0.08 * row.prediction.memory.capacity_bytes);
}

TEST_CASE("sequence parallelism is rejected where tp does not divide seq_len") {
  // seq 1022 = 2 x 7 x 73: tp 2 divides it, tp 4 does not: 6 strategies x 21 layouts with sp.
  const Scenario base = parse_scenario(R"({"name": "sp", "model": "gpt2",
    "training": {"micro_batch": 8, "seq_len": 1022}, "strategy": "ddp",
    "hardware": {"box": "dgx-a100", "gpus": 8}})",
                                       "sp.json");
  PlanOptions o;
  o.top = 1;
  const PlanScreen s = screen_layouts(base, o);
  CHECK(s.rejected[static_cast<int>(PlanRejectReason::sp_sequence)] == 6 * 21);
}

TEST_CASE("the plan is deterministic: the same rows in the same order twice") {
  PlanOptions o;
  o.top = 4;
  const PlanResult a = plan(gpt2_small(), o);
  const PlanResult b = plan(gpt2_small(), o);
  REQUIRE(a.top.size() == b.top.size());
  for (std::size_t i = 0; i < a.top.size(); ++i) {
    CHECK(a.top[i].layout.describe() == b.top[i].layout.describe());
    CHECK(a.top[i].prediction.step_time_s == b.top[i].prediction.step_time_s);
  }
  CHECK(a.why == b.why);
  CHECK(!a.why.empty());
}

TEST_CASE("objectives: tokens/s/GPU = tokens per step / step / GPUs; cost = price x GPUs x step / 3600 per Mtok") {
  const Scenario base = gpt2_small(R"(, "price_per_gpu_hour_usd": 2.0)");
  PlanOptions o;
  o.top = 1;
  o.objective = PlanObjective::cost;
  const PlanResult r = plan(base, o);
  REQUIRE(r.top.size() == 1);
  const Prediction& p = r.top[0].prediction;
  // 64 x 1024 tokens per step; USD/Mtok = 2 x 8 x step / 3600 / 0.065536
  CHECK(r.top[0].objective == doctest::Approx(2.0 * 8 * p.step_time_s / 3600.0 / 0.065536));
  o.objective = PlanObjective::tokens_per_s;
  const PlanResult t = plan(base, o);
  CHECK(t.top[0].objective == doctest::Approx(65536.0 / t.top[0].prediction.step_time_s / 8));
  CHECK(t.top[0].layout.describe() == r.top[0].layout.describe());  // monotone in the step alike
}

TEST_CASE("plan options are checked") {
  const Scenario base = gpt2_small();
  PlanOptions o;
  o.max_memory_fraction = 0;
  CHECK_THROWS_AS(plan(base, o), std::invalid_argument);
  o = PlanOptions{};
  o.top = 0;
  CHECK_THROWS_AS(plan(base, o), std::invalid_argument);
  o = PlanOptions{};
  o.objective = PlanObjective::cost;  // no price
  CHECK_THROWS_AS(plan(base, o), std::invalid_argument);
  o = PlanOptions{};
  o.gpus = 12;  // not whole 8-GPU nodes
  CHECK_THROWS_AS(plan(base, o), std::invalid_argument);
  CHECK_THROWS_AS(parse_plan_objective("speed"), std::invalid_argument);
  CHECK(parse_plan_objective("tokens_per_s") == PlanObjective::tokens_per_s);
}

TEST_CASE("a given global batch and GPU count set grad accumulation: 128 on 16 GPUs, tp 1, mb 2 -> ga 4") {
  PlanOptions o;
  o.gpus = 16;
  o.global_batch = 128;
  o.top = 1;
  const PlanScreen s = screen_layouts(gpt2_small(), o);
  CHECK(s.gpus == 16);
  CHECK(s.global_batch == 128);
  bool found = false;
  for (const PlanCandidate& c : s.candidates)
    if (c.layout.tp == 1 && c.layout.micro_batch == 2) {
      CHECK(c.layout.grad_accum == 4);
      CHECK(c.layout.dp == 16);
      found = true;
    }
  CHECK(found);
}

TEST_CASE("the cost stage's compute time bounds the perfect-overlap step from below for every layout") {
  // The first tier of the screen is valid only if compute_s <= perfect-overlap bound:
  // perfect = min(compute + comm, max(compute + unhideable, floor + optimizer)) >= compute.
  PlanOptions o;
  const PlanScreen s = screen_layouts(gpt2_small(), o, true);
  REQUIRE(!s.candidates.empty());
  for (const PlanCandidate& c : s.candidates) {
    CAPTURE(c.layout.describe());
    CHECK(c.compute_s <= c.lower_bound_s * (1 + 1e-9));
  }
  for (std::size_t i = 1; i < s.candidates.size(); ++i)  // sorted by the full bound
    CHECK(s.candidates[i - 1].lower_bound_s <= s.candidates[i].lower_bound_s);
}

TEST_CASE("the lazy second tier lowers fewer layouts than it screens") {
  PlanOptions o;
  o.top = 3;
  const PlanResult r = plan(gpt2_small(), o);
  CHECK(r.bounded >= r.simulated);
  CHECK(r.bounded < r.screened);
}
