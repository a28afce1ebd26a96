// Rules of the pipeline lowering (lowering_pipeline.cpp): stages as rank classes playing
// the schedules of schedules.hpp, so that the simulated step shows each schedule's bubble,
// the p2p sends on the critical path and each stage's in-flight activations.
#include "simulator/lowering.hpp"

#include "model/parallel.hpp"
#include "simulator/bounds.hpp"
#include "simulator/lowering_test_plan.hpp"
#include "simulator/schedules.hpp"
#include "simulator/simulation.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

using namespace stepcast;
using namespace stepcast::sim;
using namespace stepcast::sim::testing;

namespace {

/// 8 layers, one micro-batch through all of them: forward 0.8 s (0.1 s a layer), backward
/// 1.6 s (0.2 s a layer), no LM-head time, no optimizer; one GPU per stage (dp = 1), the
/// stages on one node joined by NVLink, p2p free (0 bytes, 0 latency).
CostedStep pipe_plan(const std::string& schedule, int pp, std::int64_t m, int vpp = 1) {
  CostedStep p = plan(Strategy::ddp, m);
  p.layers = 8;
  p.micro.forward_s = 0.8;
  p.micro.backward_s = 1.6;
  p.micro.head_forward_s = p.micro.head_backward_s = 0;
  p.optimizer_s = 0;
  p.layout.pp = pp;
  p.layout.vpp = vpp;
  p.layout.schedule = parse_pipeline_schedule(schedule);
  p.gpus = p.gpus_per_node = pp;
  p.nodes = 1;
  p.fabric.intra.ranks = 1;
  p.fabric.inter.reset();
  p.pp_fabric.arch = GpuArch::ampere;
  p.pp_fabric.intra = FabricLevel{2, LinkClass::nvlink, 240.0, 0.0, "nvlink3", 0};
  return p;
}

double step_s(const CostedStep& p) { return simulate(lower_step(p)).step_s(); }

/// (step - busy) / busy with busy = m (tf + tb) of one stage: the bubble fraction.
double bubble(const CostedStep& p) {
  const double busy = static_cast<double>(p.micro_steps) * (p.micro.forward_s + p.micro.backward_s) / p.layout.pp;
  return (step_s(p) - busy) / busy;
}

std::string refusal(const CostedStep& p) {
  try {
    lower_step(p);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("gpipe and 1f1b with free communication take (m + p - 1)(tf + tb), as the replay") {
  // p = 4 stages of 2 layers: tf = 0.2 s, tb = 0.4 s; m = 8: (8 + 3) x 0.6 = 6.6 s.
  for (const char* s : {"gpipe", "1f1b"}) {
    CHECK(step_s(pipe_plan(s, 4, 8)) == doctest::Approx(6.6));
    CHECK(step_s(pipe_plan(s, 4, 8)) ==
          doctest::Approx(replay(schedule(s, 4, 8, 1), 8, 1, PipeOpDurations{0.2, 0.4, 0.2, 0.2}).step));
  }
  // One micro-batch: the chain of 4 forwards and 4 backwards, 4 x 0.6 = 2.4 s.
  CHECK(step_s(pipe_plan("1f1b", 4, 1)) == doctest::Approx(2.4));
  // Stage i's last backward ends (p - 1 - i) tb before stage 0's: 6.6 - 3 x 0.4 = 5.4 s.
  const StepGraph g = lower_step(pipe_plan("1f1b", 4, 8));
  const SimResult r = simulate(g);
  CHECK(to_seconds(r.tasks[task_named(g, "bwd L1 m7")].end) == doctest::Approx(6.6));
  CHECK(to_seconds(r.tasks[task_named(g, "bwd L7 m7")].end) == doctest::Approx(5.4));
}

TEST_CASE("interleaved takes (m v + p - 1) chunk units, zb-h1 (p - 1)(tf + B - W) of bubble") {
  // p = 4, v = 2: 8 chunks of 1 layer, tf = 0.1 s, tb = 0.2 s a chunk; m = 8:
  // (8 x 2 + 3) x 0.3 = 5.7 s, below 1f1b's 6.6 s.
  CHECK(step_s(pipe_plan("interleaved", 4, 8, 2)) == doctest::Approx(5.7));
  // zb-h1: B = W = 0.2 s (half the stage's backward), busy 8 x 0.6 = 4.8 s, bubble
  // 3 x (0.2 + 0.2 - 0.2) = 0.6 s: 5.4 s.
  CHECK(step_s(pipe_plan("zb-h1", 4, 8)) == doctest::Approx(5.4));
  CHECK(step_s(pipe_plan("zb-h1", 4, 8)) ==
        doctest::Approx(replay(schedule("zb-h1", 4, 8, 1), 8, 1, PipeOpDurations{0.2, 0.4, 0.2, 0.2}).step));
}

TEST_CASE("the 1f1b bubble is (p - 1)/m: it grows with p and falls with m") {
  // m = 8: p = 2, 4, 8 -> 1/8, 3/8, 7/8.
  CHECK(bubble(pipe_plan("1f1b", 2, 8)) == doctest::Approx(1.0 / 8));
  CHECK(bubble(pipe_plan("1f1b", 4, 8)) == doctest::Approx(3.0 / 8));
  CHECK(bubble(pipe_plan("1f1b", 8, 8)) == doctest::Approx(7.0 / 8));
  // p = 4: m = 4, 8, 16 -> 3/4, 3/8, 3/16, model/parallel.hpp's formula.
  for (int m : {4, 8, 16}) CHECK(bubble(pipe_plan("1f1b", 4, m)) == doctest::Approx(bubble_fraction_1f1b(4, m)));
  // Interleaved (p - 1)/(v m): p = 4, v = 2, m = 8 -> 3/16.
  CHECK(bubble(pipe_plan("interleaved", 4, 8, 2)) == doctest::Approx(bubble_fraction_interleaved(4, 8, 2)));
}

TEST_CASE("p2p sends on a slow link lie on the critical path") {
  // One stage per node, 100 MB per send over a 12.5 GB/s NIC: 8 ms + 10 us each. One
  // micro-batch is a chain: 4 x 0.6 s of compute plus 3 sends forward and 3 back,
  // 2.4 + 6 x 0.00801 = 2.44806 s.
  CostedStep p = pipe_plan("1f1b", 4, 1);
  p.nodes = 4;
  p.gpus_per_node = 1;
  p.pp_fabric.inter = FabricLevel{2, LinkClass::network, 12.5, 0.0, "1x roce-100g", 1};
  p.p2p_bytes = 100e6;
  p.p2p_latency_s = 10e-6;
  const StepGraph g = lower_step(p);
  CHECK(count_ops(g, "pipeline p2p (activations)") == 3);
  CHECK(count_ops(g, "pipeline p2p (gradients)") == 3);
  CHECK(step_s(p) == doctest::Approx(2.44806));
  // The forward of micro-batch 0 on stage 1 (layer 3) waits for the activation from stage 0.
  const int recv = g.tasks[task_named(g, "fwd L3 m0")].deps.back();
  CHECK(g.ops[g.tasks[recv].op].name == "p2p activation m0 vs0->vs1");
  // Latency alone (0 bytes, 1 ms a send): 2.4 + 6 x 0.001 = 2.406 s.
  CostedStep lat = p;
  lat.p2p_bytes = 0;
  lat.p2p_latency_s = 1e-3;
  CHECK(step_s(lat) == doctest::Approx(2.406));
  // With 8 micro-batches the ramp-up and the drain still cross 3 links each: at least
  // 6.6 + 6 x 0.00801 s.
  p.micro_steps = 8;
  CHECK(step_s(p) >= 6.6 + 6 * 0.00801 - 1e-9);
}

TEST_CASE("stage 0 keeps p micro-batches of activations under 1f1b and m under gpipe") {
  // 1 GB of activations a layer, 2 layers a stage: 2 GB a micro-batch; 0.5 GB of logits on
  // the last stage. p = 4, m = 8.
  auto peak = [](const std::string& s, int v, int stage) {
    CostedStep p = pipe_plan(s, 4, 8, v);
    p.activation_bytes_per_layer = 1e9;
    p.logits_bytes = 0.5e9;
    return simulate(lower_step(p)).peak_memory_bytes[stage];
  };
  CHECK(peak("1f1b", 1, 0) == doctest::Approx(4 * 2e9));
  CHECK(peak("gpipe", 1, 0) == doctest::Approx(8 * 2e9));
  // The last stage holds one micro-batch and its logits (freed by the head's backward).
  CHECK(peak("1f1b", 1, 3) == doctest::Approx(2e9 + 0.5e9));
  // Interleaved p = 4, v = 2: stage 0 holds 11 one-layer chunks (schedules_test).
  CHECK(peak("interleaved", 2, 0) == doctest::Approx(11e9));
  // zb-h1 frees activations with W: stage 0 holds p micro-batches, as 1f1b.
  CHECK(peak_awaiting_weight_gradient(schedule("zb-h1", 4, 8, 1)[0]) == 4);
  CHECK(peak("zb-h1", 1, 0) == doctest::Approx(4 * 2e9));
}

TEST_CASE("each stage reduces its own gradients: ddp all-reduce, zero1 reduce-scatter and all-gather") {
  // dp = 2 inside the node: stage 0 holds 2 layers and the embeddings (50 - 20 MB), stage 3
  // 2 layers and the LM head (20 MB), the others 2 layers: 230, 200, 200, 220 MB.
  CostedStep p = pipe_plan("1f1b", 4, 4);
  p.gpus = p.gpus_per_node = 8;
  p.fabric.intra.ranks = 2;
  p.optimizer_s = 0.085;
  const StepGraph g = lower_step(p);
  REQUIRE(count_ops(g, "gradient all-reduce (per stage)") == 4);
  double bytes[4] = {0, 0, 0, 0};
  for (const CollectiveOp& o : g.ops)
    if (o.purpose == "gradient all-reduce (per stage)")
      bytes[g.streams[g.tasks[o.members[0]].stream].rank_class] = o.bytes;
  CHECK(bytes[0] == doctest::Approx(230e6));
  CHECK(bytes[1] == doctest::Approx(200e6));
  CHECK(bytes[3] == doctest::Approx(220e6));
  // Each stage's optimizer waits for its all-reduce; its time is the stage's share of the
  // 8 x 100 + 50 = 850 MB of parameters: stage 1, 200/850 x 0.085 = 0.02 s.
  for (std::size_t t = 0; t < g.tasks.size(); ++t) {
    if (g.tasks[t].name != "optimizer step" || g.streams[g.tasks[t].stream].rank_class != 1) continue;
    CHECK(g.tasks[t].work_s == doctest::Approx(0.02));
    CHECK(g.ops[g.tasks[g.tasks[t].deps.back()].op].purpose == "gradient all-reduce (per stage)");
  }
  p.layout.dp_sharding = Strategy::zero1;
  const StepGraph z = lower_step(p);
  CHECK(count_ops(z, "gradient reduce-scatter (per stage)") == 4);
  CHECK(count_ops(z, "parameter all-gather (after step)") == 4);
  CHECK(simulate(z).step_s() > 0);
  // --overlap-param-gather: each stage's buckets open the step instead; no slower.
  p.overlap_param_gather = true;
  const StepGraph o = lower_step(p);
  CHECK(count_ops(o, "parameter all-gather (after step)") == 0);
  CHECK(count_ops(o, "parameter all-gather (beside the forward)") >= 4);
  CHECK(simulate(o).step_s() <= simulate(z).step_s());
}

TEST_CASE(
    "overlap_grad_reduce: each stage reduces its gradients in buckets as its last backward finishes their "
    "layers, the same bytes, never later than after it") {
  // As above: 230, 200, 200, 220 MB on stages 0..3, 100 MB a layer; 150 MB buckets close
  // after every second layer of the last micro-batch (2 layers a stage: one bucket, the
  // stage's extra bytes in it).
  CostedStep p = pipe_plan("1f1b", 4, 4);
  p.gpus = p.gpus_per_node = 8;
  p.fabric.intra.ranks = 2;
  p.bucket_bytes = 150e6;
  const double after = simulate(lower_step(p)).step_s();
  p.overlap_grad_reduce = true;
  const StepGraph g = lower_step(p);
  CHECK(count_ops(g, "gradient all-reduce (per stage)") == 0);
  double bytes[4] = {0, 0, 0, 0};
  int buckets = 0;
  for (const CollectiveOp& o : g.ops) {
    if (o.purpose != "gradient all-reduce (per stage, beside the backward)") continue;
    ++buckets;
    bytes[g.streams[g.tasks[o.members[0]].stream].rank_class] += o.bytes;
    // Launched after a backward task of the last micro-batch (m3).
    const Task& member = g.tasks[o.members[0]];
    REQUIRE(member.deps.size() == 1);
    CHECK(g.tasks[member.deps[0]].name.find(" m3") != std::string::npos);
  }
  CHECK(buckets == 4);
  CHECK(bytes[0] == doctest::Approx(230e6));
  CHECK(bytes[3] == doctest::Approx(220e6));
  CHECK(simulate(g).step_s() <= after + 1e-9);
}

TEST_CASE("the pipeline lowering refuses what it does not model, naming the rule") {
  CostedStep p = pipe_plan("1f1b", 4, 8);
  p.layout.dp_sharding = Strategy::zero2;
  CHECK(refusal(p).find("only ddp or zero1") != std::string::npos);
  p.layout.dp_sharding = Strategy::ddp;
  p.groups = {RankGroup{"all ranks", 3, 1}, RankGroup{"straggler", 1, 1, 0.5}};
  CHECK(refusal(p).find("stragglers") != std::string::npos);
  p.groups.clear();
  p.layout.pp = 0;
  CHECK(refusal(p).find("pp 0") != std::string::npos);
}

TEST_CASE("pp = 1 leaves the data-parallel lowering as it was") {
  CostedStep p = plan(Strategy::ddp, 2);
  const StepGraph before = lower_step(p);
  p.layout.schedule = PipelineScheduleKind::gpipe;
  p.p2p_bytes = 1e9;
  const StepGraph after = lower_step(p);
  CHECK_FALSE(after.pipeline);
  CHECK(after.tasks.size() == before.tasks.size());
  CHECK(simulate(after).step_s() == simulate(before).step_s());
}

TEST_CASE("tensor parallelism inside a stage: each layer's TP collectives on that stage alone") {
  // TP 2 without SP: 2 all-reduces a layer forward and 2 backward (model/parallel.hpp), each
  // a one-member op on the stage's compute stream. p = 2, m = 2, 8 layers: 4 x 8 x 2 = 64.
  CostedStep p = pipe_plan("1f1b", 2, 2);
  p.layout.tp = 2;
  p.gpus = 4;
  p.tp_fabric.arch = GpuArch::ampere;
  p.tp_fabric.intra = FabricLevel{2, LinkClass::nvlink, 240.0, 0.0, "nvlink3", 0};
  const TpLayerComm layer = tp_layer_comm(4096, 4096, 2, 2, false, Recompute::none);
  p.tp_forward = layer.forward;
  p.tp_backward = layer.backward;
  const StepGraph g = lower_step(p);
  CHECK(count_ops(g, "tensor-parallel all_reduce") == 64);
  for (const CollectiveOp& o : g.ops)
    if (o.purpose == "tensor-parallel all_reduce") CHECK(o.members.size() == 1);
  // The TP all-reduces lengthen the step beyond free communication's (2 + 1) x 1.2 = 3.6 s.
  CHECK(step_s(p) > 3.6);
}

TEST_CASE("a 16-stage interleaved pipeline holds tasks linear in layers x micro-batches") {
  // L = 128, p = 16, v = 4, m = 64, dp = 1: compute 2 L m + 2 m (head) + p (optimizers) =
  // 16528; sends (p v - 1) m each way, 2 members each: 63 x 64 x 4 = 16128.
  CostedStep p = pipe_plan("interleaved", 16, 64, 4);
  p.layers = 128;
  p.micro.head_forward_s = 0.01;
  p.micro.head_backward_s = 0.02;
  p.p2p_bytes = 50e6;
  p.p2p_latency_s = 20e-6;
  const StepGraph g = lower_step(p);
  CHECK(g.tasks.size() == 16528 + 16128);
  CHECK(g.classes.size() == 16);
  // Free communication would take (m v + p - 1) chunk units of 2 layers of
  // (0.79 + 1.58) / 128 s each, plus the head on the critical path; the sends only add time.
  const SimResult r = simulate(g);
  CHECK(r.step_s() > (64 * 4 + 15) * (2 * (0.79 + 1.58) / 128));
}

TEST_CASE("a last stage may hold the LM head alone: it runs the head's forward and backward, every schedule") {
  for (const char* s : {"gpipe", "1f1b", "zb-h1"}) {
    CostedStep p = pipe_plan(s, 4, 8);
    p.micro.forward_s = 0.9;  // 0.1 s a layer and 0.1 s of head
    p.micro.head_forward_s = 0.1;
    p.micro.backward_s = 1.8;  // 0.2 s a layer and 0.2 s of head
    p.micro.head_backward_s = 0.2;
    p.chunk_layers = {3, 3, 2, 0};  // nanotron's split of 8 layers and a heavy head
    const StepGraph g = lower_step(p);
    const SimResult r = simulate(g);
    CHECK(to_seconds(r.tasks[task_named(g, "fwd head m7")].end) > 0);
    CHECK(to_seconds(r.tasks[task_named(g, "bwd head m7")].end) > 0);
    // Stages 0 and 1 (0.9 s a micro-batch) bound the step: 8 x 0.9 s and more.
    CHECK(step_s(p) >= 8 * 0.9);
    CHECK(std::isfinite(step_s(p)));
  }
}

TEST_CASE("a pipeline's steady state in closed form gives the explicit simulation's step, to the nanosecond") {
  struct Shape {
    const char* schedule;
    int pp, vpp;
    std::vector<std::int64_t> micro_batches;
  };
  const Shape shapes[] = {{"1f1b", 2, 1, {6, 7, 9, 40}},       {"1f1b", 4, 1, {10, 11, 17, 64}},
                          {"zb-h1", 3, 1, {8, 9, 30}},         {"zb-h1", 4, 1, {10, 13, 64}},
                          {"interleaved", 2, 2, {12, 14, 40}}, {"interleaved", 4, 2, {36, 40, 64}}};
  int closed_forms = 0;
  for (const Shape& sh : shapes)
    for (std::int64_t m : sh.micro_batches)
      for (int variant = 0; variant < 5; ++variant) {
        CostedStep p = pipe_plan(sh.schedule, sh.pp, m, sh.vpp);
        p.micro.head_forward_s = 0.03;  // the last stage the slowest
        p.micro.head_backward_s = 0.06;
        p.micro.forward_s += 0.03;
        p.micro.backward_s += 0.06;
        p.activation_bytes_per_layer = 3e8;
        p.logits_bytes = 5e8;
        p.static_memory_bytes = 1e9;
        p.p2p_bytes = 40e6;
        p.p2p_latency_s = 15e-6;
        p.optimizer_s = 0.05;
        if (variant >= 1) {  // stages on their own nodes: sends over the NICs, dp 2 inside each node
          p.gpus = 2 * sh.pp;
          p.gpus_per_node = 2;
          p.nodes = sh.pp;
          p.fabric.intra.ranks = 2;
          p.pp_fabric.inter = FabricLevel{2, LinkClass::network, 3.0, 0.0, "1x roce-25g", 1};
        }
        if (variant == 2) p.overlap_grad_reduce = true;
        if (variant == 3) {
          p.layout.dp_sharding = Strategy::zero1;
          p.overlap_param_gather = true;
          p.micro.recompute_s = 0.4;
        }
        if (variant == 4) p.comm_on_compute_stream = true;  // the limiting case: nothing overlaps
        CAPTURE(sh.schedule);
        CAPTURE(sh.pp);
        CAPTURE(m);
        CAPTURE(variant);
        StepGraph cg = lower_step(p);
        const std::optional<StepGraph> eg = lower_step_explicit(p, cg);
        if (!eg) {
          CHECK(cg.repeat_count == 0);
          continue;
        }
        CHECK(eg->repeat_count == 0);
        CHECK(eg->tasks.size() > cg.tasks.size());
        SimResult closed = simulate(cg);
        if (!closed.repetition_exact) {  // as predict() does: twice as many units explicit, once
          std::optional<StepGraph> longer = lower_step_longer(p, cg);
          REQUIRE(longer.has_value());
          cg = std::move(*longer);
          closed = simulate(cg);
          CHECK_FALSE(lower_step_longer(p, cg).has_value());
        }
        if (cg.repeat_count > 0) ++closed_forms;
        const SimResult explicit_run = simulate(*eg);
        CHECK(closed.repetition_exact);
        CHECK(closed.micro_steps_repeated == cg.repeat_count);
        CHECK(closed.step_ns == explicit_run.step_ns);
        CHECK(closed.compute_busy_ns == explicit_run.compute_busy_ns);
        CHECK(closed.comm_busy_ns == explicit_run.comm_busy_ns);
        CHECK(closed.overlap_ns == explicit_run.overlap_ns);
        CHECK(closed.events_represented == explicit_run.events);
        for (std::size_t s = 0; s < closed.streams.size(); ++s)
          CHECK(closed.streams[s].busy_ns == explicit_run.streams[s].busy_ns);
        for (std::size_t l = 0; l < closed.links.size(); ++l)
          CHECK(closed.links[l].bytes == doctest::Approx(explicit_run.links[l].bytes).epsilon(1e-9));
        for (std::size_t c = 0; c < closed.peak_memory_bytes.size(); ++c)
          CHECK(closed.peak_memory_bytes[c] == explicit_run.peak_memory_bytes[c]);
        const StepBounds bc = closed_form_bounds(cg), be = closed_form_bounds(*eg);
        CHECK(bc.no_overlap_s == doctest::Approx(be.no_overlap_s).epsilon(1e-12));
        CHECK(bc.perfect_overlap_s == doctest::Approx(be.perfect_overlap_s).epsilon(1e-12));
        // The tasks after the repeated units carry their micro-batch numbers of the whole step.
        CHECK(to_seconds(closed.tasks[task_named(cg, fmt::format("bwd head m{}", m - 1))].end) ==
              doctest::Approx(to_seconds(explicit_run.tasks[task_named(*eg, fmt::format("bwd head m{}", m - 1))].end)));
      }
  INFO("closed forms: " << closed_forms);
  CHECK(closed_forms >= 50);
}

TEST_CASE("units that never repeat exactly are added at the slowest stream's mean period, close to simulating all") {
  // Each layer's all-to-all and the sends share a stage's NICs, so the flows' overlaps, and
  // with them each unit's length, keep shifting: the closed form takes the mean period.
  CostedStep p = pipe_plan("1f1b", 4, 200);
  p.micro.head_forward_s = 0.013;
  p.micro.forward_s += 0.013;
  p.gpus = 4 * 8;
  p.gpus_per_node = 8;
  p.nodes = 4;
  p.fabric.intra.ranks = 8;
  p.pp_fabric.inter = FabricLevel{2, LinkClass::network, 3.0, 0.0, "1x roce-25g", 1};
  p.p2p_bytes = 37e6;
  p.p2p_latency_s = 17e-6;
  LayerCollective a2a;
  a2a.purpose = "expert-parallel all-to-all";
  a2a.op = Collective::all_to_all;
  a2a.bytes = 61e6;
  a2a.ranks = 16;
  a2a.tag = "ep";
  CollectivePhase ph;
  ph.collective = Collective::all_to_all;
  ph.level = FabricScope::inter_node;
  ph.bytes = a2a.bytes;
  ph.latency_s = 23e-6;
  ph.algbw_GBps = 2.1;
  ph.inter_load = 1.0 / 0.7;
  a2a.phases = {ph};
  p.exchange_forward = p.exchange_backward = {a2a};
  StepGraph cg = lower_step(p);
  SimResult closed = simulate(cg);
  REQUIRE_FALSE(closed.repetition_exact);
  std::optional<StepGraph> longer = lower_step_longer(p, cg);  // twice as many units: still not exact
  REQUIRE(longer.has_value());
  cg = std::move(*longer);
  closed = simulate(cg);
  CHECK_FALSE(closed.repetition_exact);
  CHECK_FALSE(lower_step_longer(p, cg).has_value());
  CHECK(closed.micro_steps_repeated == cg.repeat_count);
  const std::optional<StepGraph> eg = lower_step_explicit(p, cg);
  REQUIRE(eg.has_value());
  const SimResult every = simulate(*eg);
  CHECK(every.repetition_exact);
  CHECK(closed.step_s() == doctest::Approx(every.step_s()).epsilon(0.01));
  CHECK(closed.step_s() >= every.step_s() * 0.999);  // the slowest stream's period: not shorter
  CHECK(closed.compute_busy_ns == doctest::Approx(static_cast<double>(every.compute_busy_ns)).epsilon(0.01));
  for (std::size_t c = 0; c < closed.peak_memory_bytes.size(); ++c)
    CHECK(closed.peak_memory_bytes[c] == every.peak_memory_bytes[c]);
}
