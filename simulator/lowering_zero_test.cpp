// Rules of the ZeRO-1/2 lowering (lowering_zero.cpp): DeepSpeed's order of reductions.
#include "simulator/lowering.hpp"

#include "simulator/bounds.hpp"
#include "simulator/internal_error.hpp"
#include "simulator/lowering_test_plan.hpp"
#include "simulator/simulation.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

using namespace stepcast;
using namespace stepcast::sim;
using namespace stepcast::sim::testing;

TEST_CASE("ZeRO-2 follows DeepSpeed's order: reduce-scatter during backward, optimizer, then all-gather") {
  const StepGraph g = lower_step(plan(Strategy::zero2, 2));
  const int opt = task_named(g, "optimizer step");
  int gathers = 0, scatters = 0;
  for (const CollectiveOp& o : g.ops) {
    if (o.collective == Collective::all_gather) {
      ++gathers;
      CHECK(g.tasks[o.members[0]].deps == std::vector<int>{opt});
    } else {
      ++scatters;
      CHECK(o.collective == Collective::reduce_scatter);
    }
  }
  CHECK(gathers == static_cast<int>(bucket_sizes(450e6, 25e6, 25e6).size()));
  CHECK(scatters == 2 * gathers);  // every micro-step reduces, 450 MB in 25 MB buckets
}

TEST_CASE("ZeRO-1 reduces only in the last micro-step; ZeRO-2 in every one") {
  const int buckets = static_cast<int>(bucket_sizes(450e6, 25e6, 25e6).size());
  const StepGraph z1 = lower_step(plan(Strategy::zero1, 3));
  const StepGraph z2 = lower_step(plan(Strategy::zero2, 3));
  CHECK(count_ops(z1, "gradient reduce-scatter (bucketed)") == buckets);
  CHECK(count_ops(z2, "gradient reduce-scatter (bucketed)") == 3 * buckets);
  for (const CollectiveOp& o : z1.ops)
    if (o.collective == Collective::reduce_scatter) CHECK(o.name.find(" m2") != std::string::npos);
  // Reductions on their own stream, apart from the parameter all-gathers.
  const int rs = z1.ops.front().members[0];
  const int ag = z1.ops.back().members[0];
  CHECK(z1.tasks[rs].stream != z1.tasks[ag].stream);
}

TEST_CASE(
    "overlap_param_gather: the all-gathers open the step in forward order, each layer's first forward waits "
    "for its bucket, none follows the optimizer") {
  CostedStep p = plan(Strategy::zero1, 2);
  const StepGraph after = lower_step(p);
  p.overlap_param_gather = true;
  const StepGraph g = lower_step(p);
  const int buckets = static_cast<int>(bucket_sizes(450e6, 25e6, 25e6).size());
  CHECK(count_ops(g, "parameter all-gather (after step)") == 0);
  CHECK(count_ops(g, "parameter all-gather (beside the forward)") == buckets);
  // The chain starts with the last gradient bucket (the embeddings and layer 1) and holds
  // no task of the step before it.
  const int first = task_named(g, fmt::format("all-gather params bucket {}", buckets - 1));
  CHECK(g.tasks[first].deps.empty());
  // Gradient order: head 20 MB, layers 4..1 of 100 MB, the embeddings' 30 MB with layer 1;
  // layer 1 starts at 20 + 3 x 100 = 320 MB, in bucket 320 / 25 = 12 (the chain runs
  // 17, 16, ..., 12 before it: layer 1 and the embeddings); layer 4 starts at 20 MB, bucket 0.
  const auto waits_for = [&](const std::string& task, int bucket) {
    const auto& deps = g.tasks[task_named(g, task)].deps;
    const int ag = task_named(g, fmt::format("all-gather params bucket {}", bucket));
    return std::find(deps.begin(), deps.end(), ag) != deps.end();
  };
  CHECK(waits_for("fwd L1 m0", 12));
  CHECK(waits_for("fwd L4 m0", 0));
  // The second micro-step's forward waits for nothing of it.
  CHECK(g.tasks[task_named(g, "fwd L1 m1")].deps.size() <= g.tasks[task_named(after, "fwd L1 m1")].deps.size());
  // Hidden behind the forward where it can be: never slower than after the optimizer.
  CHECK(simulate(g).step_s() <= simulate(after).step_s());
}

TEST_CASE("ZeRO-1/2 on one GPU: nothing to reduce or gather") {
  for (Strategy st : {Strategy::zero1, Strategy::zero2}) {
    CostedStep p = plan(st, 2);
    p.gpus = p.nodes = p.gpus_per_node = 1;
    CHECK(lower_step(p).ops.empty());
  }
}
