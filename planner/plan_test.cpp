// Rules of the layout search: the screen never loses the winner, rejections are counted by
// reason, the order is deterministic, options are checked.
#include "planner/plan.hpp"

#include "predict/predict.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <limits>
#include <string>
#include <string_view>
#include <vector>

using namespace stepcast;

namespace {

/// GPT-2 small (12 heads, 12 KV heads, MLP 3072, seq 1024) on one 8-GPU DGX A100, micro-batch
/// 8 x grad_accum 1 x 8 GPUs: a default global batch of 64 sequences.
Scenario gpt2_small(const std::string& extra = "") {
  return parse_scenario(R"({"name": "plan-test", "model": "gpt2",
    "training": {"precision": "bf16_mixed", "micro_batch": 8, "grad_accum": 1, "seq_len": 1024,
                 "flash_attention": true},
    "strategy": "fsdp_full_shard", "hardware": {"box": "dgx-a100", "gpus": 8},
    "dataset": {"tokens": 1e9})" +
                            extra + "}",
                        "plan-test.json");
}

/// GPT-2 small on two DGX-1 (16 V100) joined by 1 Gb/s Ethernet, global batch 32: data
/// parallelism across the slow link costs more than a pipeline's sends, so a pipeline wins.
Scenario gpt2_slow_network() {
  return parse_scenario(R"({"name": "plan-pp-test", "model": "gpt2",
    "training": {"precision": "fp16_mixed", "micro_batch": 2, "grad_accum": 1, "seq_len": 1024,
                 "flash_attention": false},
    "strategy": "ddp", "hardware": {"cluster": "2x-dgx1-1gbe", "gpus": 16}, "dataset": {"tokens": 1e9}})",
                        "plan-pp-test.json");
}

constexpr Strategy kStrategies[] = {Strategy::ddp,   Strategy::zero1,           Strategy::zero2,
                                    Strategy::zero3, Strategy::fsdp_full_shard, Strategy::fsdp_shard_grad_op};

/// Every layout of the plan's space that divides, predicted one by one with predict().
struct Exhaustive {
  double best_step_s = std::numeric_limits<double>::infinity();
  std::string best;
  int predicted = 0;
  int over_memory = 0;
  int pipelined = 0;         ///< layouts with pp >= 2 predicted
  int context_parallel = 0;  ///< layouts with cp >= 2 predicted
};

/// Pipelines written out independently of the plan: none, then for pp >= 2 dividing
/// gpus / tp with a layer per stage: gpipe, 1f1b, zb-h1 (vpp 1) and interleaved with vpp
/// 2..8 (pp x vpp <= layers).
std::vector<PlanPoint> pipelines(int ranks, int layers) {
  std::vector<PlanPoint> out{PlanPoint{}};
  for (int pp = 2; pp <= ranks && pp <= layers; ++pp) {
    if (ranks % pp != 0) continue;
    for (PipelineScheduleKind sched :
         {PipelineScheduleKind::gpipe, PipelineScheduleKind::one_f_one_b, PipelineScheduleKind::zb_h1}) {
      PlanPoint l;
      l.layout.pp = pp;
      l.layout.schedule = sched;
      out.push_back(l);
    }
    for (int v = 2; v <= 8 && pp * v <= layers; ++v) {
      PlanPoint l;
      l.layout.pp = pp;
      l.layout.vpp = v;
      l.layout.schedule = PipelineScheduleKind::interleaved;
      out.push_back(l);
    }
  }
  return out;
}

/// Offloads written out independently of the plan: none; the optimizer under zero1/2/3;
/// parameters under zero3 and the FSDP modes; none with a pipeline.
std::vector<OffloadKind> offloads(Strategy st, int pp, bool with_offload) {
  std::vector<OffloadKind> out{OffloadKind::none};
  if (!with_offload || pp > 1) return out;
  if (st == Strategy::zero1 || st == Strategy::zero2 || st == Strategy::zero3) out.push_back(OffloadKind::optimizer);
  if (st == Strategy::zero3 || st == Strategy::fsdp_full_shard || st == Strategy::fsdp_shard_grad_op)
    out.push_back(OffloadKind::parameters);
  return out;
}

/// Predicts every micro-batch and recompute of one (strategy, tp, sp, cp, pipeline, offload).
void exhaustive_family(Exhaustive& out, const Scenario& base, PlanPoint l, std::int64_t global,
                       double memory_fraction) {
  if (global % l.layout.dp != 0) return;
  const std::int64_t per_replica = global / l.layout.dp;
  for (std::int64_t mb = 1; mb <= per_replica; ++mb) {
    if (per_replica % mb != 0) continue;
    if (l.layout.vpp > 1 && (per_replica / mb) % l.layout.pp != 0) continue;  // interleaved groups
    for (Recompute rc : {Recompute::none, Recompute::selective, Recompute::full}) {
      l.micro_batch = mb;
      l.grad_accum = per_replica / mb;
      l.recompute = rc;
      const Prediction p = predict(with_layout(base, l));
      ++out.predicted;
      if (l.layout.pp > 1) ++out.pipelined;
      if (l.layout.cp > 1) ++out.context_parallel;
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

/// GPT-2 small's layouts (12 layers, 12 heads): tp 1, 2, 4 (8 does not divide 12 heads),
/// each cp of `cps` dividing the GPUs over tp (with sp, tp x cp dividing seq_len 1024).
Exhaustive exhaustive(const Scenario& base, int gpus, std::int64_t global, double memory_fraction,
                      const std::vector<int>& cps = {1}, bool with_offload = true) {
  Exhaustive out;
  for (Strategy st : kStrategies)
    for (int tp : {1, 2, 4})
      for (bool sp : {false, true}) {
        if (sp && tp == 1) continue;
        for (int cp : cps) {
          if ((gpus / tp) % cp != 0) continue;
          for (PlanPoint pipe : pipelines(gpus / (tp * cp), 12)) {
            const int pp = pipe.layout.pp;
            if (pp > 1 && st != Strategy::ddp && st != Strategy::zero1) continue;
            for (OffloadKind off : offloads(st, pp, with_offload)) {
              PlanPoint l = pipe;
              l.layout.dp_sharding = st;
              l.layout.tp = tp;
              l.layout.sp = sp;
              l.layout.cp = cp;
              l.offload = off;
              l.layout.dp = gpus / (tp * cp * pp);
              exhaustive_family(out, base, l, global, memory_fraction);
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
  o.gap = 0;  // exact
  const PlanResult r = plan(base, o);
  const Exhaustive all = exhaustive(base, 8, 64, 0.9);
  REQUIRE(!r.top.empty());
  CHECK(r.exact);
  CHECK(all.pipelined > 0);
  CHECK(r.top[0].point.describe() == all.best);
  CHECK(r.top[0].prediction.step_time_s == all.best_step_s);  // bit for bit: same stages
  CHECK(r.simulated >= o.top);
  CHECK(r.simulated < r.screened);  // the bound pruned something
  for (std::size_t i = 1; i < r.top.size(); ++i)
    CHECK(r.top[i - 1].prediction.step_time_s <= r.top[i].prediction.step_time_s);
}

TEST_CASE("where a pipeline wins, the plan's winner is still the best of an exhaustive predict()") {
  const Scenario base = gpt2_slow_network();
  PlanOptions o;
  o.top = 3;
  o.gap = 0;
  const PlanResult r = plan(base, o);
  const Exhaustive all = exhaustive(base, 16, 32, 0.9, {1}, false);  // the DGX-1 has no host: no offload
  REQUIRE(!r.top.empty());
  CHECK(r.rejected[static_cast<int>(PlanRejectReason::offload_host)] > 0);
  CHECK(r.exact);
  CHECK(r.top[0].point.layout.pp > 1);
  CHECK(r.top[0].point.describe() == all.best);
  CHECK(r.top[0].prediction.step_time_s == all.best_step_s);
  CHECK(r.rejected[static_cast<int>(PlanRejectReason::memory)] == all.over_memory);
  CHECK(r.screened == all.predicted - all.over_memory);
  CHECK(r.simulated < r.screened / 4);  // the bounds pruned most
}

TEST_CASE("with a gap, the winner is within (1 + gap) of the exhaustive best and no more is simulated") {
  // Any layout left out has bound x (1 + gap) > the K-th step >= the winner's, and its step
  // is at least its bound: the winner <= (1 + gap) x the best step.
  const Scenario base = gpt2_slow_network();
  const Exhaustive all = exhaustive(base, 16, 32, 0.9, {1}, false);
  PlanOptions exact;
  exact.top = 3;
  exact.gap = 0;
  const PlanResult e = plan(base, exact);
  for (double gap : {0.01, 0.05, 0.2}) {
    PlanOptions o = exact;
    o.gap = gap;
    const PlanResult r = plan(base, o);
    REQUIRE(!r.top.empty());
    CHECK(r.exact);
    CHECK(r.gap == gap);
    CHECK(r.top[0].prediction.step_time_s <= (1 + gap) * all.best_step_s);
    CHECK(r.simulated <= e.simulated);
    CHECK(r.bounded <= e.bounded);
  }
}

TEST_CASE("the pipeline and lowered bounds never exceed the simulated step") {
  // Both play the step's dependencies with tasks no longer than the simulation's: the
  // schedule's replay with sends at their time alone, the critical path at durations alone.
  PlanOptions o;
  const PlanScreen s = screen_layouts(gpt2_slow_network(), o, true);
  ScheduleCache programs;
  int pipelined = 0;
  for (const PlanCandidate& c : s.candidates) {
    CAPTURE(c.point.describe());
    const double step = predict(with_layout(s.base, c.point)).step_time_s;
    CHECK(c.lower_bound_s <= step * (1 + 1e-9));
    if (c.point.layout.pp > 1) {
      ++pipelined;
      const double pipe = pipeline_bound_s(s, c, programs);
      CHECK(pipe <= step * (1 + 1e-9));
    }
  }
  CHECK(pipelined > 100);
}

TEST_CASE("across nodes the pipeline bound counts each send at its time alone and stays below the simulated step") {
  // GPT-2 small on two DGX-1 over 1 Gb/s Ethernet, two stages: stage 0 on one node, stage 1
  // on the other, each send of a micro-batch's activation (2 x 1,024 x 768 x 2 bytes, ~25 ms on
  // the NICs) far above its compute. The first micro-batch alone crosses p v - 1 hops
  // forward and as many backward: bound >= 2 (p v - 1) x (latency + bytes / link rate).
  PlanOptions o;
  const PlanScreen s = screen_layouts(gpt2_slow_network(), o);
  ScheduleCache programs;
  int checked = 0;
  for (const PlanCandidate& c : s.candidates) {
    // Stages of whole nodes (16 GPUs / pp >= 8 per node): pp 2.
    if (c.point.layout.pp != 2 || checked >= 60 || c.index % 3 != 0) continue;
    CAPTURE(c.point.describe());
    ++checked;
    const Scenario scenario = with_layout(s.base, c.point);
    const Job job = resolve(scenario);
    const sim::CostedStep plan = costed_step(job, cost(job), PredictOptions{});
    REQUIRE(plan.pp_fabric.inter.has_value());
    const double send_s = plan.p2p_latency_s + plan.p2p_bytes / (plan.pp_fabric.inter->bw_GBps * 1e9);
    CHECK(send_s > 1e-3);
    const double pipe = pipeline_bound_s(s, c, programs);
    CHECK(pipe >= 2 * (c.point.layout.pp * c.point.layout.vpp - 1) * send_s);
    CHECK(pipe <= predict(scenario).step_time_s * (1 + 1e-9));
  }
  CHECK(checked > 20);
}

TEST_CASE("with context parallelism the pipeline and lowered bounds never exceed the simulated step") {
  // Llama-3.2-1B on one DGX A100 at 4,096 tokens (CP 2 and 4 at >= 1,024 tokens per rank):
  // the bounds count each layer's K/V exchange at its time alone.
  const Scenario base = parse_scenario(R"({"name": "plan-cp-bounds", "model": "llama-3.2-1b",
    "training": {"precision": "bf16_mixed", "micro_batch": 1, "grad_accum": 4, "seq_len": 4096,
                 "flash_attention": true},
    "strategy": "ddp", "hardware": {"box": "dgx-a100", "gpus": 8}, "dataset": {"tokens": 1e9}})",
                                       "plan-cp-bounds.json");
  PlanOptions o;
  o.enumerate_offload = false;
  o.max_memory_fraction = 1.0;
  PlanScreen s = screen_layouts(base, o);
  ScheduleCache programs;
  int checked = 0;
  for (const PlanCandidate& c : s.candidates) {
    if (c.point.layout.cp < 2 || c.point.layout.pp < 2 || c.point.recompute != Recompute::none || checked >= 40)
      continue;
    CAPTURE(c.point.describe());
    ++checked;
    const double step = predict(with_layout(s.base, c.point)).step_time_s;
    CHECK(pipeline_bound_s(s, c, programs) <= step * (1 + 1e-9));
    CHECK(lowered_bound_s(s, c) <= step * (1 + 1e-9));
  }
  CHECK(checked > 10);
}

TEST_CASE("under the balanced stage split the plan tries no interleaved schedule, and its pipeline bound holds") {
  // The balanced split places one chunk per stage (vpp 1); the bound replays the chunks as
  // the lowering splits them, so it stays below the simulated step.
  const Scenario base = parse_scenario(R"({"name": "plan-pp-balanced", "model": "gpt2",
    "training": {"precision": "fp16_mixed", "micro_batch": 2, "grad_accum": 1, "seq_len": 1024,
                 "flash_attention": false},
    "strategy": {"name": "ddp", "pp_split": "balanced"}, "hardware": {"cluster": "2x-dgx1-1gbe", "gpus": 16},
    "dataset": {"tokens": 1e9}})",
                                       "plan-pp-balanced.json");
  PlanOptions o;
  const PlanScreen s = screen_layouts(base, o, true);
  ScheduleCache programs;
  int pipelined = 0;
  for (const PlanCandidate& c : s.candidates) {
    CAPTURE(c.point.describe());
    CHECK(c.point.layout.vpp == 1);
    if (c.point.layout.pp == 1) continue;
    ++pipelined;
    const double step = predict(with_layout(s.base, c.point)).step_time_s;
    CHECK(pipeline_bound_s(s, c, programs) <= step * (1 + 1e-9));
  }
  CHECK(pipelined > 10);
  o.top = 1;
  CHECK_FALSE(plan(base, o).top.empty());
}

TEST_CASE("rejections are counted per reason: 8,190 layouts of GPT-2 small on 8 GPUs at global batch 64") {
  // Per family: 7 micro-batches (divisors of 64) x 3 recompute = 21 layouts. Pipelines
  // (12 layers): none, and for pp >= 2 dividing 8/tp: 3 plain schedules + interleaved with
  // vpp 2..8 and pp x vpp <= 12. tp1: pp2 (3 + 5), pp4 (3 + 2), pp8 (3 + 0): 17 pipelines;
  // tp2: pp2, pp4: 14; tp4: pp2: 9; tp8: 1. Families per strategy: 17 + 2 x (14 + 9 + 1) =
  // 65 (sp doubles tp >= 2); 6 strategies: 390 families, 8,190 layouts.
  // tp 8 does not divide 12 heads: 2 families x 6 x 21 = 252.
  // Pipelines under zero2, zero3 and the two FSDP: (16 + 2 x 13 + 2 x 8) x 4 x 21 = 4,872.
  // micro_batch x dp must divide 64. Without a pipeline, 27 layouts per strategy (tp1: mb
  // 16, 32, 64; tp2: 32, 64 twice; tp4: 64 twice): 162. Pipelines under ddp and zero1: tp1
  // pp2 (dp 4, 16 per replica: mb 32, 64 refused) 8 families x 6; tp1 pp4 (32 per replica)
  // 5 x 3; tp2 pp2 (32 per replica) 16 x 3: 111 per strategy, 222. 162 + 222 = 384.
  // Interleaved, grad_accum not a multiple of pp: tp1 pp2 (ga 1 of 16 per replica) 5 x 3;
  // tp1 pp4 (ga 2, 1 of 32) 2 x 6; tp2 pp2 10 x 3; tp2 pp4 (64 per replica: ga 2, 1) 4 x 6;
  // tp4 pp2 10 x 3: 111 per strategy, 222.
  // Left: 8,190 - 252 - 4,872 - 384 - 222 = 2,460. (Without offload; seq 1024 is too
  // short for context parallelism at 1,024 tokens per CP rank.)
  PlanOptions o;
  o.top = 1;
  o.enumerate_offload = false;
  const PlanResult r = plan(gpt2_small(), o);
  CHECK(r.global_batch == 64);
  CHECK(r.enumerated == 8190);
  CHECK(r.rejected[static_cast<int>(PlanRejectReason::tp_model)] == 252);
  CHECK(r.rejected[static_cast<int>(PlanRejectReason::sp_sequence)] == 0);
  CHECK(r.rejected[static_cast<int>(PlanRejectReason::pipeline_strategy)] == 4872);
  CHECK(r.rejected[static_cast<int>(PlanRejectReason::batch)] == 384);
  CHECK(r.rejected[static_cast<int>(PlanRejectReason::pipeline_groups)] == 222);
  CHECK(r.rejected[static_cast<int>(PlanRejectReason::invalid)] == 0);
  CHECK(r.rejected[static_cast<int>(PlanRejectReason::memory)] + r.screened == 2460);
}

TEST_CASE("layouts over the memory limit are rejected exactly where predict() puts them over it") {
  const Scenario base = gpt2_small();
  PlanOptions o;
  o.top = 2;
  o.max_memory_fraction = 0.08;  // 6.4 GB of 80 GB: the large micro-batches do not fit
  o.gap = 0;
  const PlanResult r = plan(base, o);
  const Exhaustive all = exhaustive(base, 8, 64, 0.08);
  CHECK(all.over_memory > 0);
  CHECK(r.rejected[static_cast<int>(PlanRejectReason::memory)] == all.over_memory);
  CHECK(r.screened == all.predicted - all.over_memory);
  REQUIRE(!r.top.empty());
  CHECK(r.top[0].point.describe() == all.best);
  for (const PlanRow& row : r.top)
    CHECK(row.prediction.memory.total_bytes <= 0.08 * row.prediction.memory.capacity_bytes);
}

TEST_CASE("sequence parallelism is rejected where tp does not divide seq_len") {
  // seq 1022 = 2 x 7 x 73: tp 2 divides it, tp 4 does not: 6 strategies x 9 pipelines of
  // tp 4 (none; pp2: 3 plain + interleaved vpp 2..6) x 21 layouts with sp.
  const Scenario base = parse_scenario(R"({"name": "sp", "model": "gpt2",
    "training": {"micro_batch": 8, "seq_len": 1022}, "strategy": "ddp",
    "hardware": {"box": "dgx-a100", "gpus": 8}})",
                                       "sp.json");
  PlanOptions o;
  o.top = 1;
  o.enumerate_offload = false;
  const PlanScreen s = screen_layouts(base, o);
  CHECK(s.rejected[static_cast<int>(PlanRejectReason::sp_sequence)] == 6 * 9 * 21);
}

TEST_CASE("the plan is deterministic: the same rows in the same order twice") {
  PlanOptions o;
  o.top = 4;
  const PlanResult a = plan(gpt2_small(), o);
  const PlanResult b = plan(gpt2_small(), o);
  REQUIRE(a.top.size() == b.top.size());
  for (std::size_t i = 0; i < a.top.size(); ++i) {
    CHECK(a.top[i].point.describe() == b.top[i].point.describe());
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
  CHECK(t.top[0].point.describe() == r.top[0].point.describe());  // monotone in the step alike
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
    if (c.point.layout.tp == 1 && c.point.layout.pp == 1 && c.point.micro_batch == 2) {
      CHECK(c.point.grad_accum == 4);
      CHECK(c.point.layout.dp == 16);
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
    CAPTURE(c.point.describe());
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

TEST_CASE("with context parallelism searched, the plan's winner is still the best of an exhaustive predict()") {
  // GPT-2 small at seq 1024 with at least 512 tokens per CP rank: cp 2 (cp 4 leaves 256).
  // CP 2 on 8 GPUs: tp 1 (4 ranks left), tp 2 (2), tp 4 (1: no room).
  const Scenario base = gpt2_small();
  PlanOptions o;
  o.top = 3;
  o.min_cp_tokens = 512;
  o.enumerate_offload = false;
  o.gap = 0;
  const PlanResult r = plan(base, o);
  const Exhaustive all = exhaustive(base, 8, 64, 0.9, {1, 2}, false);
  REQUIRE(!r.top.empty());
  CHECK(r.exact);
  CHECK(all.context_parallel > 0);
  CHECK(r.top[0].point.describe() == all.best);
  CHECK(r.top[0].prediction.step_time_s == all.best_step_s);
  CHECK(r.rejected[static_cast<int>(PlanRejectReason::memory)] == all.over_memory);
  CHECK(r.screened == all.predicted - all.over_memory);
  CHECK(r.not_enumerated == std::vector<std::string>{"CPU offload (offload, --no-offload)"});
}

TEST_CASE("context parallelism is searched only with seq_len / cp >= min_cp_tokens and rejected per reason") {
  // seq 1024 at the default 1,024 tokens per CP rank: no cp >= 2, so the count is the
  // plan without CP.
  PlanOptions o;
  o.top = 1;
  o.enumerate_offload = false;
  const PlanScreen plain = screen_layouts(gpt2_small(), o);
  o.enumerate_cp = false;
  CHECK(screen_layouts(gpt2_small(), o).enumerated == plain.enumerated);
  // Without flash attention every cp >= 2 family is refused as cp_attention, none enumerated
  // as cp_sequence (2 x 2 divides 1024).
  o.enumerate_cp = true;
  o.min_cp_tokens = 512;
  const Scenario unfused = parse_scenario(R"({"name": "plan-cp-unfused", "model": "gpt2",
    "training": {"precision": "bf16_mixed", "micro_batch": 8, "grad_accum": 1, "seq_len": 1024,
                 "flash_attention": false},
    "strategy": "fsdp_full_shard", "hardware": {"box": "dgx-a100", "gpus": 8}})",
                                          "plan-cp-unfused.json");
  const PlanScreen s = screen_layouts(unfused, o);
  CHECK(s.rejected[static_cast<int>(PlanRejectReason::cp_attention)] > 0);
  CHECK(s.rejected[static_cast<int>(PlanRejectReason::cp_sequence)] == 0);
  for (const PlanCandidate& c : s.candidates) CHECK(c.point.layout.cp == 1);
  CHECK(plain.enumerated < s.enumerated);
  o.min_cp_tokens = 0;
  CHECK_THROWS_AS(screen_layouts(gpt2_small(), o), std::invalid_argument);
}

TEST_CASE("offload: each kind the strategy takes is searched; with a pipeline it is rejected per reason") {
  PlanOptions o;
  o.top = 1;
  const PlanScreen s = screen_layouts(gpt2_small(), o);
  bool optimizer = false, parameters = false;
  for (const PlanCandidate& c : s.candidates) {
    CHECK(offload_supported(c.point.offload, c.point.layout.dp_sharding));
    CHECK((c.point.offload == OffloadKind::none || c.point.layout.pp == 1));
    optimizer = optimizer || c.point.offload == OffloadKind::optimizer;
    parameters = parameters || c.point.offload == OffloadKind::parameters;
  }
  CHECK(optimizer);
  CHECK(parameters);
  // zero1 is the one offloading strategy a pipeline runs (the others are refused first as
  // pipeline_strategy): its pipelined families with the optimizer offloaded, tp1 16, tp2
  // 2 x 13, tp4 2 x 8 (sp doubles tp >= 2): 58 families x 21 layouts.
  CHECK(s.rejected[static_cast<int>(PlanRejectReason::offload_pipeline)] == 58 * 21);
  CHECK(s.rejected[static_cast<int>(PlanRejectReason::offload_host)] == 0);  // the DGX A100 has a host
}

TEST_CASE("a MoE plan searches ep: the winner names its degree and beats its own layout at every other ep") {
  const Scenario base = parse_scenario(R"({"name": "plan-moe", "model": "mixtral-8x7b",
    "training": {"micro_batch": 1, "grad_accum": 8, "seq_len": 4096, "recompute": "full", "kernels": "fused"},
    "strategy": {"name": "zero1", "ep": 1}, "hardware": {"box": "dgx-h100", "gpus": 8}})",
                                       "moe.json");
  PlanOptions o;
  o.top = 3;
  o.gap = 0;
  const PlanResult r = plan(base, o);
  REQUIRE(!r.top.empty());
  const PlanPoint& win = r.top[0].point;
  CHECK(win.layout.ep > 1);  // ep 1 holds all 8 experts of a layer: over memory
  CHECK(win.describe().find(fmt::format(" ep{} ", win.layout.ep)) != std::string::npos);
  CHECK(r.rejected[static_cast<int>(PlanRejectReason::ep_ranks)] > 0);  // ep 8 over pp 2's 4 ranks
  for (int ep : {1, 2, 4, 8}) {
    if (ep == win.layout.ep) continue;
    PlanPoint other = win;
    other.layout.ep = ep;
    const Prediction p = predict(with_layout(base, other));
    if (p.memory.total_bytes <= o.max_memory_fraction * p.memory.capacity_bytes)
      CHECK(p.step_time_s >= r.top[0].prediction.step_time_s);
  }
  // A dense model's layouts keep ep 1 and never name it.
  for (const PlanRow& row : plan(gpt2_small(), o).top) {
    CHECK(row.point.layout.ep == 1);
    CHECK(row.point.describe().find(" ep") == std::string::npos);
  }
}
