// Rules of the step graph's vocabulary: task categories print as before (the trace's "cat",
// the reports' rows), and a repeated micro-step's tasks count for all the copies they stand for.
#include "simulator/step_graph.hpp"

#include "simulator/internal_error.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

using namespace stepcast;
using namespace stepcast::sim;

TEST_CASE("task categories print their historical names and parse back") {
  CHECK(name(TaskCategory::forward) == "forward");
  CHECK(name(TaskCategory::backward) == "backward");
  CHECK(name(TaskCategory::recompute) == "recompute");
  CHECK(name(TaskCategory::optimizer) == "optimizer");
  CHECK(name(TaskCategory::head) == "head");
  for (Collective c :
       {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter, Collective::broadcast})
    CHECK(name(category_of(c)) == name(c));  // "all_reduce", ...: the collective's own name
  for (int i = 0; i <= static_cast<int>(TaskCategory::broadcast); ++i)
    CHECK(parse_task_category(name(static_cast<TaskCategory>(i))) == static_cast<TaskCategory>(i));
  CHECK_THROWS_AS(parse_task_category("all-reduce"), InternalError);
  // A task's category converts to its printed name for readers that print it.
  const std::string printed = Category(TaskCategory::reduce_scatter);
  CHECK(printed == "reduce_scatter");
}

TEST_CASE("a task of the repeated micro-step stands for 1 + repeat_count tasks") {
  StepGraph g;
  g.classes.push_back(RankClass{});
  const int s = g.add_stream("compute", StreamKind::compute, 0);
  for (int i = 0; i < 4; ++i) g.add_compute(s, "t", TaskCategory::forward, 1.0, 0);
  g.micro_steps = {{0, 0, 1}, {1, 1, 2}, {2, 2, 3}, {9, 3, 4}};
  CHECK(g.multiplicity(2) == 1.0);  // no repetition yet
  g.repeat_after = 2;
  g.repeat_count = 6;
  CHECK(g.multiplicity(1) == 1.0);
  CHECK(g.multiplicity(2) == 7.0);
  CHECK(g.multiplicity(3) == 1.0);
}

TEST_CASE("a malformed graph is an internal error as it is built") {
  StepGraph g;
  CHECK_THROWS_AS(g.add_stream("compute", StreamKind::compute, 0), InternalError);  // no class
  g.classes.push_back(RankClass{});
  CHECK_THROWS_AS(g.add_link("nic", 0.0), InternalError);
  const int s = g.add_stream("compute", StreamKind::compute, 0);
  CHECK_THROWS_AS(g.add_compute(s, "nan", TaskCategory::forward, std::nan(""), 0), InternalError);
  CHECK_THROWS_AS(g.add_compute(s, "negative", TaskCategory::forward, -1.0, 0), InternalError);
  CHECK_THROWS_AS(g.add_compute(7, "no stream", TaskCategory::forward, 1.0, 0), InternalError);
}
