// Rules of the replicated lowering (lowering_ddp.cpp): DDP buckets, FSDP NO_SHARD units.
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

TEST_CASE("DDP: buckets fill in ready order, the first 1 MiB, all-reduced in the last micro-step only") {
  const StepGraph g = lower_step(plan(Strategy::ddp, 2));
  const double total = 4 * 100e6 + 50e6;
  const auto sizes = bucket_sizes(total, 1024.0 * 1024.0, 25e6);
  REQUIRE(g.ops.size() == sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    CHECK(g.ops[i].bytes == doctest::Approx(sizes[i]));
    CHECK(g.ops[i].name.find(" m1") != std::string::npos);  // none in micro-step 0 (no_sync)
  }
  // The first bucket holds LM-head gradients: it waits only for the head's backward.
  CHECK(g.tasks[g.ops[0].members[0]].deps == std::vector<int>{task_named(g, "bwd head m1")});
  // The optimizer waits for the last bucket.
  const int opt = task_named(g, "optimizer step");
  CHECK(g.tasks[opt].deps == std::vector<int>{g.ops.back().members[0]});
}

TEST_CASE("recompute adds one task before each layer's backward") {
  CostedStep p = plan(Strategy::ddp);
  p.micro.recompute_s = 0.2;
  const StepGraph g = lower_step(p);
  const int r = task_named(g, "recompute L3");
  CHECK(g.tasks[r].work_s == doctest::Approx(0.05));
  CHECK(task_named(g, "bwd L3") == r + 1);
}

TEST_CASE("FSDP NO_SHARD: each unit's gradients all-reduced after its backward, in the last micro-step only") {
  const StepGraph g = lower_step(plan(Strategy::fsdp_no_shard, 2));
  // Units: the LM head, 4 layers (the embeddings with layer 1).
  CHECK(count_ops(g, "gradient all-reduce (per FSDP unit)") == 5);
  const int unit = task_named(g, "all-reduce unit 1 m1");  // layer 4, ready first after the head
  CHECK(g.tasks[unit].deps == std::vector<int>{task_named(g, "bwd L4 m1")});
  CHECK(g.ops[g.tasks[unit].op].bytes == doctest::Approx(100e6));
  for (const CollectiveOp& o : g.ops) CHECK(o.name.find(" m0") == std::string::npos);
  // The last unit's reduction cannot hide behind compute.
  CHECK(g.unhideable_ops == std::vector<int>{g.tasks[task_named(g, "all-reduce unit 4 m1")].op});
}

TEST_CASE("one GPU: no collective, whatever the strategy") {
  for (Strategy st : {Strategy::ddp, Strategy::fsdp_no_shard}) {
    CostedStep p = plan(st, 3);
    p.gpus = p.nodes = p.gpus_per_node = 1;
    CHECK(lower_step(p).ops.empty());
  }
}
