// Rules of the pipeline schedules: the order each stage runs, the dependencies between
// stages, and each schedule's bubble and in-flight micro-batches under a unit-time replay
// with free communication (tf = 1, tb = 2, or B = W = 1 for zb-h1, per chunk).
#include "simulator/schedules.hpp"

#include "model/parallel.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

using namespace stepcast::sim;

namespace {

const PipeOpDurations kUnit{};  // forward 1, backward 2, B 1, W 1

PipeOp F(int mb, int chunk = 0) { return {PipeOp::forward, mb, chunk}; }
PipeOp Bk(int mb, int chunk = 0) { return {PipeOp::backward, mb, chunk}; }
PipeOp B(int mb) { return {PipeOp::backward_input, mb, 0}; }
PipeOp W(int mb) { return {PipeOp::backward_weight, mb, 0}; }

double step(const std::string& name, int p, int m, int v = 1) {
  return replay(schedule(name, p, m, v), m, v, kUnit).step;
}

std::string thrown(const std::string& name, int p, int m, int v) {
  try {
    schedule(name, p, m, v);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the simulator plays exactly the schedules the scenario vocabulary names") {
  std::vector<std::string> played;
  for (const auto& s : pipeline_schedules()) played.push_back(s.name);
  CHECK(played == stepcast::pipeline_schedule_names());
}

TEST_CASE("the registry lists each schedule once with a description and a source") {
  const auto& infos = pipeline_schedules();
  REQUIRE(infos.size() == 4);
  CHECK(infos[0].name == "gpipe");
  CHECK(infos[1].name == "1f1b");
  CHECK(infos[2].name == "interleaved");
  CHECK(infos[3].name == "zb-h1");
  for (const auto& s : infos) {
    CHECK_FALSE(s.description.empty());
    CHECK(s.source.find("arXiv") != std::string::npos);
  }
}

TEST_CASE("an unknown schedule name throws and lists the registered names") {
  const std::string msg = thrown("pipedream", 4, 8, 1);
  CHECK(msg.find("unknown pipeline schedule \"pipedream\"") != std::string::npos);
  for (const auto& s : pipeline_schedules()) CHECK(msg.find("\"" + s.name + "\"") != std::string::npos);
}

TEST_CASE("bad stage, micro-batch and chunk counts throw with their context") {
  CHECK(thrown("1f1b", 0, 8, 1).find("stages must be >= 1") != std::string::npos);
  CHECK(thrown("gpipe", 4, 0, 1).find("micro_batches must be >= 1") != std::string::npos);
  CHECK(thrown("gpipe", 4, 8, 0).find("chunks must be >= 1") != std::string::npos);
  // One chunk per stage outside interleaving.
  CHECK(thrown("1f1b", 4, 8, 2).find("chunks must be 1") != std::string::npos);
  CHECK(thrown("zb-h1", 4, 8, 2).find("chunks must be 1") != std::string::npos);
  // Interleaving: v >= 2, micro-batches in whole groups of p (8 % 4 = 0 passes, 6 % 4 does not).
  CHECK(thrown("interleaved", 4, 8, 1).find("chunks >= 2") != std::string::npos);
  CHECK(thrown("interleaved", 4, 6, 2).find("multiple of stages") != std::string::npos);
  CHECK(thrown("interleaved", 4, 6, 2).find("micro_batches 6") != std::string::npos);
  CHECK(thrown("interleaved", 4, 8, 2).empty());
  // m < p is a valid (bubble-heavy) pipeline outside interleaving.
  CHECK(thrown("1f1b", 4, 1, 1).empty());
}

TEST_CASE("gpipe runs every forward then every backward") {
  const auto progs = schedule("gpipe", 2, 3, 1);
  const StageProgram expected = {F(0), F(1), F(2), Bk(0), Bk(1), Bk(2)};
  CHECK(progs[0] == expected);
  CHECK(progs[1] == expected);
}

TEST_CASE("1f1b stage i warms up with p-i-1 forwards then alternates") {
  // p = 3, m = 4. Stage 0: 2 warm-up forwards, 2 pairs (F2 B0, F3 B1), cool-down B2 B3.
  const auto progs = schedule("1f1b", 3, 4, 1);
  CHECK(progs[0] == StageProgram{F(0), F(1), F(2), Bk(0), F(3), Bk(1), Bk(2), Bk(3)});
  CHECK(progs[1] == StageProgram{F(0), F(1), Bk(0), F(2), Bk(1), F(3), Bk(2), Bk(3)});
  // The last stage has no warm-up: forward, backward, forward, backward.
  CHECK(progs[2] == StageProgram{F(0), Bk(0), F(1), Bk(1), F(2), Bk(2), F(3), Bk(3)});
  // m < p: the warm-up is cut at m (stage 0 of p = 3, m = 1 runs F0 then B0).
  CHECK(schedule("1f1b", 3, 1, 1)[0] == StageProgram{F(0), Bk(0)});
}

TEST_CASE("interleaved takes micro-batches in groups of p and walks chunks down in backward") {
  // p = 2, v = 2, m = 4: stage 1 warms up with 2(p-1-1) + (v-1)p = 2 forwards, then pairs.
  // The k-th forward: group k / (p v), chunk (k mod p v) / p, micro-batch group·p + k mod p;
  // the k-th backward the same with chunk v-1 minus that.
  const auto progs = schedule("interleaved", 2, 4, 2);
  const StageProgram stage1 = {F(0, 0),  F(1, 0),                      // warm-up
                               F(0, 1),  Bk(0, 1), F(1, 1), Bk(1, 1),  // k = 0, 1
                               F(2, 0),  Bk(0, 0), F(3, 0), Bk(1, 0),  // k = 2, 3
                               F(2, 1),  Bk(2, 1), F(3, 1), Bk(3, 1),  // k = 4, 5
                               Bk(2, 0), Bk(3, 0)};                    // cool-down
  CHECK(progs[1] == stage1);
  // Stage 0 warms up with 2(p-0-1) + (v-1)p = 4 forwards: the whole first group.
  const StageProgram warmup0(progs[0].begin(), progs[0].begin() + 4);
  CHECK(warmup0 == StageProgram{F(0, 0), F(1, 0), F(0, 1), F(1, 1)});
  // m = p: everything is warm-up (all m·v forwards, then all backwards).
  const auto all_warm = schedule("interleaved", 2, 2, 2)[1];
  CHECK(all_warm == StageProgram{F(0, 0), F(1, 0), F(0, 1), F(1, 1), Bk(0, 1), Bk(1, 1), Bk(0, 0), Bk(1, 0)});
}

TEST_CASE("zb-h1 stage i defers each W by i micro-batches") {
  // p = 3, m = 4. Stage 0 defers none: W k right after B k.
  const auto progs = schedule("zb-h1", 3, 4, 1);
  CHECK(progs[0] == StageProgram{F(0), F(1), F(2), B(0), W(0), F(3), B(1), W(1), B(2), W(2), B(3), W(3)});
  // Stage 2 (last, no warm-up) defers 2: W0 after B2, W1 after B3, then W2 W3 at the end.
  CHECK(progs[2] == StageProgram{F(0), B(0), F(1), B(1), F(2), B(2), W(0), F(3), B(3), W(1), W(2), W(3)});
}

TEST_CASE("every registered schedule satisfies the dependencies") {
  for (const auto& s : pipeline_schedules())
    for (int p : {1, 2, 3, 4, 8})
      for (int m : {1, 2, 3, 4, 8, 16}) {
        const int v = s.name == "interleaved" ? 3 : 1;
        if (s.name == "interleaved" && m % p != 0) continue;
        CAPTURE(s.name);
        CAPTURE(p);
        CAPTURE(m);
        const auto progs = schedule(s.name, p, m, v);
        CHECK(progs.size() == static_cast<std::size_t>(p));
        CHECK(dependency_violation(progs, m, v) == "");
      }
}

TEST_CASE("pair_indices counts the warm-up forwards as warmup_forwards says") {
  for (const auto& s : pipeline_schedules())
    for (int p : {1, 2, 3, 4, 5})
      for (int m : {1, 2, 3, 4, 5, 8, 10, 15}) {
        const int v = s.name == "interleaved" ? 2 : 1;
        if (s.name == "interleaved" && m % p != 0) continue;
        const auto progs = schedule(s.name, p, m, v);
        for (int i = 0; i < p; ++i) {
          CAPTURE(s.name);
          CAPTURE(p);
          CAPTURE(m);
          CAPTURE(i);
          const std::vector<int> pair = pair_indices(progs[i]);
          CHECK(std::count(pair.begin(), pair.end(), -1) == warmup_forwards(s.name, p, m, v, i));
          CHECK(std::is_sorted(pair.begin(), pair.end()));
          CHECK(pair.back() == m * v - 1 - warmup_forwards(s.name, p, m, v, i));  // one pair a forward after
        }
      }
}

TEST_CASE("a steady period more micro-batches adds pairs moved by the period, the first ones kept") {
  // What the pipeline lowering's closed form rests on (lowering_pipeline.cpp).
  for (const auto& s : pipeline_schedules()) {
    CAPTURE(s.name);
    if (s.name == "gpipe") {
      CHECK(steady_period_micro_batches(s.name, 4) == 0);
      continue;
    }
    for (int p : {1, 2, 3, 4, 6})
      for (int v : s.name == "interleaved" ? std::vector<int>{2, 3} : std::vector<int>{1}) {
        const int d = steady_period_micro_batches(s.name, p);
        CHECK(d == (s.name == "interleaved" ? p : 1));
        for (int m = 2 * p + d; m <= 5 * p + 3 * d; m += d) {
          const auto shorter = schedule(s.name, p, m, v), longer = schedule(s.name, p, m + d, v);
          for (int i = 0; i < p; ++i) {
            CAPTURE(p);
            CAPTURE(v);
            CAPTURE(m);
            CAPTURE(i);
            const std::vector<int> a = pair_indices(shorter[i]), b = pair_indices(longer[i]);
            REQUIRE(a.size() + (s.name == "zb-h1" ? 3 : 2) * d * v == b.size());  // F, B (and W) each
            const int last = a.back(), u = d * v;
            CHECK(b.back() == last + u);
            auto ops = [](const StageProgram& prog, const std::vector<int>& pair, int j, int shift) {
              StageProgram out;
              for (std::size_t k = 0; k < prog.size(); ++k)
                if (pair[k] == j) out.push_back({prog[k].kind, prog[k].micro_batch + shift, prog[k].chunk});
              return out;
            };
            for (int j = -1; j < last; ++j) CHECK(ops(longer[i], b, j, 0) == ops(shorter[i], a, j, 0));
            for (int j = p; j <= last; ++j) CHECK(ops(longer[i], b, j + u, 0) == ops(shorter[i], a, j, d));
          }
        }
      }
  }
}

TEST_CASE("the dependency checker names a missing, duplicated or out-of-range op") {
  // p = 2, m = 1 with stage 1 missing its backward.
  std::vector<StageProgram> progs = {{F(0), Bk(0)}, {F(0)}};
  CHECK(dependency_violation(progs, 1, 1).find("micro-batch 0, chunk 0 on stage 1") != std::string::npos);
  progs[1] = {F(0), Bk(0), Bk(0)};
  CHECK(dependency_violation(progs, 1, 1).find("2 backward") != std::string::npos);
  // A whole backward and a W for the same micro-batch is neither form.
  progs[1] = {F(0), Bk(0), W(0)};
  CHECK(dependency_violation(progs, 1, 1).find("1 W") != std::string::npos);
  progs[1] = {F(0), Bk(0), F(1)};
  CHECK(dependency_violation(progs, 1, 1).find("out of range") != std::string::npos);
  progs[1] = {F(0), Bk(0)};
  CHECK(dependency_violation(progs, 1, 1) == "");
  CHECK(dependency_violation({}, 1, 1) == "no stage programs");
}

TEST_CASE("an op ordered before what it waits for is a deadlock") {
  // Same stage: the backward before its own forward.
  CHECK(dependency_violation(std::vector<StageProgram>{{Bk(0), F(0)}}, 1, 1)
            .find("deadlock: backward of micro-batch 0") != std::string::npos);
  // W before its B.
  CHECK(dependency_violation(std::vector<StageProgram>{{F(0), W(0), B(0)}}, 1, 1).find("deadlock") !=
        std::string::npos);
  // Across stages (p = 2, m = 2): stage 0 runs B0 before F1, but stage 1 runs F1 before B0,
  // so stage 0's B0 waits for stage 1's B0, which waits for F1 on stage 1, which waits for
  // F1 on stage 0, which is behind B0.
  const std::vector<StageProgram> progs = {{F(0), Bk(0), F(1), Bk(1)}, {F(0), F(1), Bk(0), Bk(1)}};
  CHECK(dependency_violation(progs, 2, 1).find("deadlock: backward of micro-batch 0, chunk 0 on stage 0") !=
        std::string::npos);
  CHECK_THROWS_AS(replay(progs, 2, 1, kUnit), std::invalid_argument);
}

TEST_CASE("programs checked once replay as replay() does, and invalid ones are refused at the check") {
  const std::vector<PipeOpDurations> unequal = {
      {1, 2, 1, 1, 0.5}, {2, 3, 1, 2, 0.25}, {1, 4, 2, 2, 0}, {3, 1, 1, 0, 1}};
  for (const char* name : {"1f1b", "interleaved", "zb-h1"}) {
    const int chunks = std::string(name) == "interleaved" ? 2 : 1;
    const auto progs = schedule(name, 2, 4, chunks);
    const CheckedPrograms checked(progs, 4, chunks);
    const std::vector<PipeOpDurations> d(unequal.begin(), unequal.begin() + 2 * chunks);
    const PipeReplay a = replay(progs, 4, chunks, d), b = replay(checked, d);
    CHECK(a.step == b.step);
    CHECK(a.stage_finish == b.stage_finish);
    CHECK(a.stage_busy == b.stage_busy);
    CHECK_THROWS_AS(replay(checked, std::vector<PipeOpDurations>(3)), std::invalid_argument);
  }
  const std::vector<StageProgram> deadlock = {{F(0), Bk(0), F(1), Bk(1)}, {F(0), F(1), Bk(0), Bk(1)}};
  CHECK_THROWS_AS(CheckedPrograms(deadlock, 2, 1), std::invalid_argument);
  CHECK_THROWS_AS(CheckedPrograms(schedule("1f1b", 2, 4, 1), 3, 1), std::invalid_argument);
}

TEST_CASE("replay refuses negative or non-finite durations") {
  const auto progs = schedule("1f1b", 2, 2, 1);
  CHECK_THROWS_AS(replay(progs, 2, 1, PipeOpDurations{-1, 2, 1, 1}), std::invalid_argument);
  CHECK_THROWS_AS(replay(progs, 2, 1, PipeOpDurations{1, std::numeric_limits<double>::infinity(), 1, 1}),
                  std::invalid_argument);
  // Zero-time ops are fine: the step is then 0.
  CHECK(replay(progs, 2, 1, PipeOpDurations{0, 0, 0, 0}).step == 0);
}

TEST_CASE("gpipe and 1f1b take (m + p - 1)(tf + tb) with free communication") {
  // tf = 1, tb = 2: p = 4, m = 8 -> 11 x 3 = 33; the bubble is 33 - m(tf+tb) = 9 = (p-1)(tf+tb).
  CHECK(step("gpipe", 4, 8) == 33);
  CHECK(step("1f1b", 4, 8) == 33);
  // One micro-batch: a pure chain, p forwards and p backwards = 3p = 12.
  CHECK(step("gpipe", 4, 1) == 12);
  CHECK(step("1f1b", 4, 1) == 12);
  // m < p still follows the formula: (2 + 3) x 3 = 15.
  CHECK(step("1f1b", 4, 2) == 15);
  // One stage: no bubble, m(tf + tb) = 24.
  CHECK(step("1f1b", 1, 8) == 24);
  CHECK(step("gpipe", 1, 8) == 24);
  // Stage i of 1f1b ends (p - 1 - i) x tb before stage 0 (its last backward goes up the
  // stages after it): 33, 31, 29, 27.
  const auto r = replay(schedule("1f1b", 4, 8, 1), 8, 1, kUnit);
  CHECK(r.stage_finish == std::vector<double>{33, 31, 29, 27});
  CHECK(r.stage_busy == std::vector<double>{24, 24, 24, 24});
}

TEST_CASE("a send of d between virtual stages adds 2(p v - 1) d to one micro-batch's chain") {
  // One micro-batch is a pure chain: p v forwards, then p v backwards, each hop between
  // virtual stages d after its sender's end: 3 p v + 2 (p v - 1) d.
  const PipeOpDurations d{1, 2, 1, 1, 0.5};
  CHECK(replay(schedule("1f1b", 4, 1, 1), 1, 1, d).step == doctest::Approx(12 + 2 * 3 * 0.5));
  CHECK(replay(schedule("gpipe", 4, 1, 1), 1, 1, d).step == doctest::Approx(12 + 2 * 3 * 0.5));
  // zb-h1 on one micro-batch: the chain of forwards and B (1 each), then stage 0's W:
  // 4 + 4 + 1 + 6 x 0.5.
  CHECK(replay(schedule("zb-h1", 4, 1, 1), 1, 1, d).step == doctest::Approx(9 + 6 * 0.5));
  // Within a stage (its own forward before its backward) nothing is sent: one stage, m(tf + tb).
  CHECK(replay(schedule("1f1b", 1, 8, 1), 8, 1, d).step == doctest::Approx(24));
  // Sends only delay: never below the free-communication step.
  for (const ScheduleInfo& info : pipeline_schedules()) {
    const int v = info.name == "interleaved" ? 2 : 1;
    CHECK(replay(schedule(info.name, 4, 8, v), 8, v, d).step >=
          replay(schedule(info.name, 4, 8, v), 8, v, PipeOpDurations{1, 2, 1, 1}).step);
  }
  CHECK_THROWS_AS(replay(schedule("1f1b", 2, 2, 1), 2, 1, PipeOpDurations{1, 2, 1, 1, -1}), std::invalid_argument);
}

TEST_CASE("interleaved takes (m + (p-1)/v)(tf + tb) with a stage's tf = v chunk forwards") {
  // Per chunk tf = 1, tb = 2, so a whole stage's tf = v, tb = 2v and the formula in chunk
  // units is (m + (p-1)/v) x 3v = 3(m v + p - 1): the bubble is 3(p-1), v times smaller than
  // 1f1b's 3v(p-1) for the same stage. Exact in the replay, m = p and m > p alike.
  CHECK(step("interleaved", 4, 8, 2) == 3 * (8 * 2 + 3));    // 57
  CHECK(step("interleaved", 4, 16, 4) == 3 * (16 * 4 + 3));  // 201
  CHECK(step("interleaved", 4, 4, 3) == 3 * (4 * 3 + 3));    // 45, m = p
  CHECK(step("interleaved", 2, 8, 2) == 3 * (8 * 2 + 1));    // 51
  // The same model on 1f1b (a stage's forward v = 2, backward 4): (8 + 3) x 6 = 66 > 57.
  CHECK(replay(schedule("1f1b", 4, 8, 1), 8, 1, PipeOpDurations{2, 4, 2, 2}).step == 66);
}

TEST_CASE("zb-h1's bubble is (p-1)(tf + tb - tw), a third of 1f1b's when tf = tb = tw") {
  // Qi et al. 2023, Sec 2.1: 1F1B's bubble is (p-1)(tf + tb + tw), ZB-H1's (p-1)(tf + tb - tw).
  // With tf = B = W = 1 (1f1b's whole backward = B + W = 2), p = 4, m = 8:
  //   busy per stage m(tf + tb + tw) = 24; 1f1b 24 + 3 x 3 = 33; zb-h1 24 + 3 x 1 = 27.
  CHECK(step("1f1b", 4, 8) == 33);
  CHECK(step("zb-h1", 4, 8) == 27);
  CHECK((step("zb-h1", 4, 8) - 24) * 3 == step("1f1b", 4, 8) - 24);
  // Every stage ends together: the deferred W fill the cool-down.
  CHECK(replay(schedule("zb-h1", 4, 8, 1), 8, 1, kUnit).stage_finish == std::vector<double>{27, 27, 27, 27});
  // From m = p on the formula holds (p = 4, m = 4: 12 + 3 = 15; p = 2, m = 8: 24 + 1 = 25).
  CHECK(step("zb-h1", 4, 4) == 15);
  CHECK(step("zb-h1", 2, 8) == 25);
  // One micro-batch: the chain p forwards, p B's, then stage 0's W: 4 + 4 + 1 = 9.
  CHECK(step("zb-h1", 4, 1) == 9);
}

TEST_CASE("1f1b stage i holds at most p - i micro-batches, gpipe holds m") {
  const auto one_f = schedule("1f1b", 4, 8, 1);
  for (int i = 0; i < 4; ++i) CHECK(peak_in_flight(one_f[i]) == 4 - i);
  for (const auto& prog : schedule("gpipe", 4, 8, 1)) CHECK(peak_in_flight(prog) == 8);
  // m < p: no stage holds more than m (p = 4, m = 2: 2, 2, 2, 1).
  const auto short_run = schedule("1f1b", 4, 2, 1);
  CHECK(peak_in_flight(short_run[0]) == 2);
  CHECK(peak_in_flight(short_run[3]) == 1);
}

TEST_CASE("interleaved stage 0 holds v p + p - 1 chunks, p + (p-1)/v micro-batches") {
  // Warm-up 2(p-1) + (v-1)p plus the steady-state forward: p = 4, v = 2 -> 6 + 4 + 1 = 11
  // chunks = 5.5 micro-batches of 2 chunks = p (1 + (p-1)/(p v)) = 4 x 1.375. Stage i holds
  // 2 fewer per stage: 11, 9, 7, 5.
  const auto progs = schedule("interleaved", 4, 8, 2);
  CHECK(peak_in_flight(progs[0]) == 11);
  CHECK(peak_in_flight(progs[1]) == 9);
  CHECK(peak_in_flight(progs[3]) == 5);
  // m = p: all m v = 8 chunks are in flight before the first backward.
  CHECK(peak_in_flight(schedule("interleaved", 4, 4, 2)[0]) == 8);
}

TEST_CASE("zb-h1 keeps 1f1b's activations and p micro-batches awaiting W on every stage") {
  // B frees what 1f1b's backward frees: p - i; W is pending on p micro-batches everywhere
  // (stage i: p - i forwards ahead, plus i deferred W).
  const auto progs = schedule("zb-h1", 4, 8, 1);
  for (int i = 0; i < 4; ++i) {
    CHECK(peak_in_flight(progs[i]) == 4 - i);
    CHECK(peak_awaiting_weight_gradient(progs[i]) == 4);
  }
  // For 1f1b, whose backward frees both, the two peaks agree.
  for (const auto& prog : schedule("1f1b", 4, 8, 1)) CHECK(peak_awaiting_weight_gradient(prog) == peak_in_flight(prog));
}
