// Rules of the sharded lowering (lowering_fsdp.cpp): units, prefetch, SHARD_GRAD_OP, HYBRID_SHARD.
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

TEST_CASE(
    "ZeRO-3: every unit gathered for forward, every layer again for backward, every unit reduced, per micro-step") {
  const int m = 3;
  const StepGraph g = lower_step(plan(Strategy::zero3, m));
  CHECK(count_ops(g, "parameter all-gather (forward)") == 5 * m);
  CHECK(count_ops(g, "parameter all-gather (backward)") == 4 * m);
  CHECK(count_ops(g, "gradient reduce-scatter") == 5 * m);
  // Gathers and reductions run on separate NCCL streams.
  const int ag = g.ops[0].members[0];
  const int rs = task_named(g, "reduce-scatter L4 m0");
  CHECK(g.tasks[ag].stream != g.tasks[rs].stream);
}

TEST_CASE("SHARD_GRAD_OP keeps the forward's parameters: no backward all-gather") {
  const StepGraph g = lower_step(plan(Strategy::fsdp_shard_grad_op));
  CHECK(count_ops(g, "parameter all-gather (forward)") == 5);
  CHECK(count_ops(g, "parameter all-gather (backward)") == 0);
}

TEST_CASE("HYBRID_SHARD gathers and reduces inside the node, then all-reduces each shard across nodes") {
  const StepGraph g = lower_step(plan(Strategy::fsdp_hybrid_shard));
  for (const CollectiveOp& o : g.ops) {
    if (o.collective == Collective::all_reduce) {
      CHECK(o.level == FabricScope::inter_node);
    } else {
      CHECK(o.level == FabricScope::intra_node);
    }
  }
  CHECK(count_ops(g, "gradient all-reduce across nodes (shard)") == 5);
  const int ar = task_named(g, "all-reduce across nodes L4");
  CHECK(g.ops[g.tasks[ar].op].bytes == doctest::Approx(100e6 / 8));
}

TEST_CASE("prefetch: the all-gather of layer i may start once layer i-1-prefetch has run forward") {
  CostedStep p = plan(Strategy::fsdp_full_shard);
  p.prefetch_layers = 0;
  StepGraph g = lower_step(p);
  CHECK(g.tasks[task_named(g, "all-gather L3 (fwd)")].deps == std::vector<int>{task_named(g, "fwd L2")});
  p.prefetch_layers = 1;
  g = lower_step(p);
  CHECK(g.tasks[task_named(g, "all-gather L3 (fwd)")].deps == std::vector<int>{task_named(g, "fwd L1")});
  CHECK(g.tasks[task_named(g, "all-gather L2 (bwd)")].deps == std::vector<int>{task_named(g, "bwd L4")});
}

TEST_CASE("more prefetch never makes the step slower") {
  double previous = 1e300;
  for (int pf : {0, 1, 2, 4}) {
    CostedStep p = plan(Strategy::fsdp_full_shard);
    p.prefetch_layers = pf;
    const double t = simulate(lower_step(p)).step_s();
    CAPTURE(pf);
    CHECK(t <= previous * (1 + 1e-9));
    previous = t;
  }
}

TEST_CASE("sharded strategies on one GPU lower as replicated: no gather, no reduction") {
  for (Strategy st :
       {Strategy::zero3, Strategy::fsdp_full_shard, Strategy::fsdp_shard_grad_op, Strategy::fsdp_hybrid_shard}) {
    CostedStep p = plan(st, 2);
    p.gpus = p.nodes = p.gpus_per_node = 1;
    const StepGraph g = lower_step(p);
    CHECK(g.ops.empty());
    CHECK(g.streams.size() == 3);  // compute, nccl all-gather, nccl reduce: as before
  }
}
