// The Chrome trace of a hand-made step: valid JSON, one complete event per task with the
// simulated times, a named thread per stream, counters for the used link and for memory.
#include "report/trace.hpp"

#include "simulator/simulation.hpp"
#include "simulator/step_graph.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

using namespace stepcast;
using namespace stepcast::sim;
using nlohmann::json;

namespace {

/// One class of 8 ranks: forward, backward, then an all-reduce on the NCCL stream that
/// overlaps the head's compute, and an optimizer step after it. Two links, one unused.
StepGraph small_step() {
  StepGraph g;
  RankClass rc;
  rc.name = "all ranks";
  rc.ranks = 8;
  rc.comm_slowdown = 0.1;
  rc.static_memory_bytes = 2.0 * 1024 * 1024 * 1024;
  g.classes.push_back(rc);
  g.classes[0].intra_resource = g.add_link("node0 intra (test)", 100.0);
  g.add_link("never used", 10.0);
  const int compute = g.add_stream("compute", StreamKind::compute, 0);
  const int nccl = g.add_stream("nccl all-reduce", StreamKind::communication, 0);

  const int fwd = g.add_compute(compute, "fwd L0", "forward", 1e-3, 1e12);
  g.tasks[fwd].alloc_bytes = 1e9;
  const int bwd = g.add_compute(compute, "bwd L0", "backward", 2e-3, 2e12, {fwd});
  g.tasks[bwd].free_bytes = 1e9;
  CollectivePhase ph;
  ph.collective = Collective::all_reduce;
  ph.level = FabricScope::all;
  ph.bytes = 1e8;
  ph.latency_s = 1e-5;
  ph.algbw_GBps = 50.0;
  ph.intra_load = 1.75;  // 2 (n-1)/n for 8 ranks: 87.5% of the link at 50 GB/s
  ph.algorithm = "ring";
  ph.protocol = "Simple";
  const int ar = g.add_collective("all-reduce bucket 0", "gradient all-reduce", FabricScope::all,
                                  Collective::all_reduce, 1e8, {ph}, {{nccl, {bwd}}})[0];
  g.add_compute(compute, "head", "head", 1e-3, 5e11, {bwd});
  g.add_compute(compute, "optimizer", "optimizer", 5e-4, 0, {ar});
  return g;
}

}  // namespace

TEST_CASE("the Chrome trace of a simulated step has every task, stream, used link and the memory") {
  const StepGraph g = small_step();
  SimOptions o;
  o.record_timelines = true;
  const SimResult r = simulate(g, o);
  REQUIRE(r.links[0].busy_ns > 0);
  REQUIRE(r.links[1].busy_ns == 0);

  const json doc = json::parse(chrome_trace_json(g, r, "small step"));
  REQUIRE(doc.is_object());
  REQUIRE(doc.contains("traceEvents"));
  CHECK(doc["displayTimeUnit"] == "ms");
  CHECK(doc["otherData"]["title"] == "small step");
  CHECK(doc["otherData"]["step_time_s"].get<double>() == doctest::Approx(r.step_s()));

  std::map<std::string, json> complete;  // by task name (unique here)
  std::map<int, std::string> thread_names;
  std::map<int, int> thread_sort;
  std::map<int, std::string> process_names;
  std::map<std::string, int> counters;  // events per counter name
  for (const json& e : doc["traceEvents"]) {
    REQUIRE(e.contains("ph"));
    REQUIRE(e.contains("pid"));
    const std::string ph = e["ph"];
    if (ph == "X") {
      CHECK(complete.count(e["name"]) == 0);
      complete[e["name"]] = e;
    } else if (ph == "M" && e["name"] == "thread_name") {
      thread_names[e["tid"]] = e["args"]["name"];
    } else if (ph == "M" && e["name"] == "thread_sort_index") {
      thread_sort[e["tid"]] = e["args"]["sort_index"];
    } else if (ph == "M" && e["name"] == "process_name") {
      process_names[e["pid"]] = e["args"]["name"];
    } else if (ph == "C") {
      REQUIRE(e.contains("ts"));
      ++counters[e["name"]];
    }
  }

  // One complete event per task, at the simulated times (microseconds).
  REQUIRE(complete.size() == g.tasks.size());
  for (std::size_t t = 0; t < g.tasks.size(); ++t) {
    CAPTURE(g.tasks[t].name);
    const json& e = complete.at(g.tasks[t].name);
    CHECK(e["cat"] == g.tasks[t].category);
    CHECK(e["ts"].get<double>() == doctest::Approx(static_cast<double>(r.tasks[t].start) / 1000.0));
    CHECK(e["dur"].get<double>() == doctest::Approx(static_cast<double>(r.tasks[t].end - r.tasks[t].start) / 1000.0));
    CHECK(e["tid"] == g.tasks[t].stream + 1);
  }
  CHECK(complete.at("fwd L0")["args"]["flops"].get<double>() == doctest::Approx(1e12));
  CHECK(complete.at("fwd L0")["args"]["alloc_bytes"].get<double>() == doctest::Approx(1e9));
  CHECK(complete.at("bwd L0")["args"]["free_bytes"].get<double>() == doctest::Approx(1e9));
  CHECK_FALSE(complete.at("head")["args"].contains("alloc_bytes"));
  const json& ar = complete.at("all-reduce bucket 0")["args"];
  CHECK(ar["bytes"].get<double>() == doctest::Approx(1e8));
  CHECK(ar["collective"] == "all_reduce");
  CHECK(ar["purpose"] == "gradient all-reduce");
  CHECK(ar["level"] == "all");
  CHECK(ar["algorithm"] == "ring");
  CHECK(ar["protocol"] == "Simple");

  // A named thread per stream, compute sorted first; the class named with its rank count.
  REQUIRE(thread_names.size() == g.streams.size());
  CHECK(thread_names.at(1) == "compute");
  CHECK(thread_names.at(2) == "nccl all-reduce");
  CHECK(thread_sort.at(1) < thread_sort.at(2));
  CHECK(process_names.at(1) == "GPU, representative of 8 ranks (all ranks)");
  CHECK(process_names.at(2) == "links");

  // Counters: the used link (rises to 87.5% and falls back to 0), not the unused one; memory.
  CHECK(counters["node0 intra (test)"] >= 2);
  CHECK(counters.count("never used") == 0);
  CHECK(counters["memory"] == static_cast<int>(r.memory_timeline.size()));
  double peak_percent = 0;
  double last_percent = -1;
  for (const json& e : doc["traceEvents"])
    if (e["ph"] == "C" && e["name"] == "node0 intra (test)") {
      last_percent = e["args"]["utilization_percent"].get<double>();
      peak_percent = std::max(peak_percent, last_percent);
    }
  CHECK(peak_percent == doctest::Approx(87.5));
  CHECK(last_percent == doctest::Approx(0.0));
}

TEST_CASE("without recorded timelines the trace has the tasks but no counters") {
  const StepGraph g = small_step();
  const SimResult r = simulate(g);
  const json doc = json::parse(chrome_trace_json(g, r, "no timelines"));
  int complete = 0;
  int counters = 0;
  for (const json& e : doc["traceEvents"]) {
    complete += e["ph"] == "X";
    counters += e["ph"] == "C";
  }
  CHECK(complete == static_cast<int>(g.tasks.size()));
  CHECK(counters == 0);
}

TEST_CASE("a result from another graph is refused") {
  const StepGraph g = small_step();
  const SimResult r = simulate(g);
  StepGraph other = g;
  other.add_compute(0, "extra", "forward", 1e-3, 0);
  CHECK_THROWS_AS(chrome_trace_json(other, r, "mismatch"), std::invalid_argument);
}
