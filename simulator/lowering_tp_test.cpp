// Tensor parallelism in the lowering: each layer's TP collectives sit on the compute stream
// between the layers, per micro-step, with the bytes and counts of model/parallel.hpp.
#include "simulator/lowering.hpp"

#include "simulator/lowering_test_plan.hpp"
#include "simulator/simulation.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace stepcast;
using namespace stepcast::sim;
using namespace stepcast::sim::testing;

namespace {

/// The shared plan with TP 2 inside each node: 8 DP ranks (4 per node), a TP group of 2.
CostedStep tp_plan(Strategy st, bool sp, Recompute recompute, std::int64_t micro_steps = 1) {
  CostedStep p = plan(st, micro_steps);
  p.gpus = 8;
  p.gpus_per_node = 4;
  p.layout.tp = 2;
  p.tp_fabric.arch = GpuArch::ampere;
  p.tp_fabric.intra = FabricLevel{2, LinkClass::nvlink, 240.0, 0.0, "nvlink3", 0};
  const TpLayerComm layer = tp_layer_comm(4096, 4096, 2, 2, sp, Recompute::none);  // 32 MiB each
  p.tp_forward = layer.forward;
  p.tp_backward = layer.backward;
  if (recompute == Recompute::full) {
    p.tp_recompute = layer.forward;
    p.micro.recompute_s = 0.4;
  }
  return p;
}

int ops_of(const StepGraph& g, Collective c) {
  int n = 0;
  for (const CollectiveOp& op : g.ops) n += op.collective == c && op.purpose.rfind("tensor-parallel", 0) == 0;
  return n;
}

}  // namespace

TEST_CASE("TP without SP: 2 all-reduces after each layer's forward and 2 after its backward, per micro-step") {
  const StepGraph g = lower_step(tp_plan(Strategy::ddp, false, Recompute::none, 2));
  // 4 layers x (2 forward + 2 backward) x 2 micro-steps.
  CHECK(ops_of(g, Collective::all_reduce) == 4 * 4 * 2);
  for (const CollectiveOp& op : g.ops) {
    if (op.purpose.rfind("tensor-parallel", 0) != 0) continue;
    CHECK(op.ranks == 2);
    CHECK(op.bytes == 4096.0 * 4096 * 2);
    // On the compute stream: the next layer waits for them.
    for (int t : op.members) CHECK(g.streams[g.tasks[t].stream].kind == StreamKind::compute);
  }
}

TEST_CASE("TP with SP: 2 all-gathers and 2 reduce-scatters forward, 4 and 2 backward") {
  const StepGraph g = lower_step(tp_plan(Strategy::ddp, true, Recompute::none));
  CHECK(ops_of(g, Collective::all_gather) == 4 * (2 + 4));
  CHECK(ops_of(g, Collective::reduce_scatter) == 4 * (2 + 2));
  CHECK(ops_of(g, Collective::all_reduce) == 0);
}

TEST_CASE("full recompute repeats each layer's forward TP collectives before its backward") {
  const StepGraph g = lower_step(tp_plan(Strategy::zero1, false, Recompute::full));
  CHECK(ops_of(g, Collective::all_reduce) == 4 * (2 + 2 + 2));
}

TEST_CASE("TP collectives cost the step what they take alone on the TP fabric: they do not overlap compute") {
  CostedStep with = tp_plan(Strategy::ddp, false, Recompute::none);
  CostedStep without = with;
  without.tp_forward.clear();
  without.tp_backward.clear();
  const double extra =
      1e-9 * static_cast<double>(simulate(lower_step(with)).step_ns - simulate(lower_step(without)).step_ns);
  // 16 all-reduces of 32 MiB on 2 GPUs at 240 GB/s: each at least S / busbw = 33.5e6 / 240e9.
  CHECK(extra >= 16 * 4096.0 * 4096 * 2 / 240e9);
  CHECK(extra < 16 * 4096.0 * 4096 * 2 / 240e9 * 3);
}

namespace {
/// A costed context-parallel exchange whose one phase takes `s` seconds and moves nothing.
LayerCollective cp_exchange(const char* purpose, double s) {
  CollectivePhase ph;
  ph.collective = Collective::all_gather;
  ph.latency_s = s;
  ph.algbw_GBps = 100;
  return LayerCollective{purpose, Collective::all_gather, 1e6, 4, {ph}};
}
}  // namespace

TEST_CASE(
    "CP: each layer's K/V exchange follows its forward, backward and recompute on the compute stream, and "
    "the step waits for it") {
  CostedStep p = plan(Strategy::ddp, 2);
  const double step = simulate(lower_step(p), {}).step_s();
  p.exchange_forward = {cp_exchange("context-parallel fwd", 1e-3)};
  p.exchange_backward = {cp_exchange("context-parallel bwd", 2e-3)};
  const StepGraph g = lower_step(p);
  int fwd = 0, bwd = 0;
  for (const CollectiveOp& op : g.ops) {
    if (op.purpose.rfind("context-parallel", 0) != 0) continue;
    (op.purpose == "context-parallel fwd" ? fwd : bwd) += 1;
    CHECK(op.ranks == 4);
    for (int t : op.members) CHECK(g.streams[g.tasks[t].stream].kind == StreamKind::compute);
  }
  CHECK(fwd == 4 * 2);  // 4 layers x 2 micro-steps
  CHECK(bwd == 4 * 2);
  // Nothing overlaps them: 8 x 1 ms + 8 x 2 ms on the compute stream's critical path.
  CHECK(simulate(g, {}).step_s() == doctest::Approx(step + 8 * 1e-3 + 8 * 2e-3).epsilon(1e-6));
}

TEST_CASE("TP comm overlap: a collective shorter than its GEMM's chunks adds nothing; a longer one adds its excess") {
  CostedStep base = tp_plan(Strategy::ddp, true, Recompute::none);
  base.tp_backward.clear();
  CostedStep none = base;
  none.tp_forward.clear();
  const auto step_s = [](const CostedStep& p) { return 1e-9 * static_cast<double>(simulate(lower_step(p)).step_ns); };
  // Each forward GEMM far longer than its collective: fully hidden (ring exchange and the
  // pipelined reduce-scatter's last split aside: a quarter of the reduce-scatter, and the
  // reduce-scatter's SM share of the GEMM time it overlaps).
  CostedStep hidden = base;
  TpLayerGemmTimes long_gemms;
  long_gemms.qkv_fprop = long_gemms.proj_fprop = long_gemms.fc1_fprop = long_gemms.fc2_fprop = 1.0;
  hidden.tp_forward = tp_layer_comm_overlapped(4096, 4096, 2, 2, long_gemms, 108).forward;
  const double blocking = step_s(base) - step_s(none), overlapped = step_s(hidden) - step_s(none);
  CHECK(overlapped < blocking / 2);
  CHECK(overlapped >= 0);
  // GEMMs of zero time hide nothing: the ring exchange exposes the whole all-gather.
  CostedStep bare = base;
  bare.tp_forward = tp_layer_comm_overlapped(4096, 4096, 2, 2, TpLayerGemmTimes{}, 108).forward;
  CHECK(step_s(bare) - step_s(none) == doctest::Approx(blocking).epsilon(0.05));
}
