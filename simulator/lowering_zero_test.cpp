// Rules of the ZeRO-1/2 lowering (lowering_zero.cpp): DeepSpeed's order of reductions.
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

TEST_CASE("ZeRO-1/2 on one GPU: nothing to reduce or gather") {
  for (Strategy st : {Strategy::zero1, Strategy::zero2}) {
    StepPlan p = plan(st, 2);
    p.gpus = p.nodes = p.gpus_per_node = 1;
    CHECK(lower_step(p).ops.empty());
  }
}
