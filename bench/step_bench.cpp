/// \file
/// stepcast_bench: how long stepcast takes to predict one training step, and how that cost
/// grows with the number of rank classes. A plain timing harness (std::chrono, one thread):
/// every figure is the median and the minimum over --repeat runs, after one warm-up run.
///
/// Per benchmark scenario (scenarios/bench/*.json, and one measured-run record of
/// data/validation/runs.jsonl as validate turns it into a scenario) it times
///  (a) predict(): topology build, compute and memory model, lowering, simulation, bounds
///      and the report fields, i.e. everything `stepcast predict` does but reading the file;
///  (b) lower_step() + simulate() alone, on the CostedStep predict() built (kept with
///      PredictOptions::keep_simulation).
/// The rank-class sweep lowers and simulates the 1,024-GPU plan split into 1..32 rank
/// classes, each a slightly different compute speed so that no two behave alike.
///
/// Everything printed is deterministic except the times, the resident-set size and the target
/// verdicts computed from them. Exit status 0 whether or not a target is met (it is not a test).
#include "model/collective.hpp"
#include "model/compute.hpp"
#include "model/flops.hpp"
#include "base/allocator.hpp"
#include "base/json_input.hpp"
#include "model/memory.hpp"
#include "model/transformer.hpp"
#include "base/types.hpp"
#include "simulator/lowering.hpp"
#include "predict/predict.hpp"
#include "scenario/scenario.hpp"
#include "simulator/simulation.hpp"
#include "topologies/topology.hpp"
#include "validate/validation.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace stepcast;
namespace fs = std::filesystem;

struct CaseSpec {
  const char* label;             ///< row label
  const char* file;              ///< in the scenario folder, or a record file under the data folder
  const char* record = nullptr;  ///< the id of a measured-run record of `file` (its scenario, as validate builds it)
};

/// The benchmark scenarios, smallest first (the peak RSS column is the process's peak so far).
constexpr CaseSpec kCases[] = {
    {"GPT-2 XL DDP, 8x A100", "gpt2-xl-ddp-8xa100.json"},
    {"Llama-3-70B FSDP, 1,024x H100", "llama3-70b-fsdp-1024xh100.json"},
    {"Llama-3-70B FSDP, 16,384x H100", "llama3-70b-fsdp-16384xh100.json"},
    {"Llama-3.1-405B TP8 PP16 VPP4, 16,384x H100", "llama31-405b-3d-16384xh100.json"},
    {"Llama-3.1-405B TP8 CP16 PP16 VPP4 (131k tokens), 16,384x H100", "llama31-405b-4d-cp16-16384xh100.json"},
    {"BigScience 80L TP8 PP10, 2,048 micro-batches, 80x A100", "data/validation/runs.jsonl",
     "bigscience-prequel-a100-80l-n10-dp1tp8pp10-fp16"},
};
constexpr int kPipelineCase = 5;  ///< the 2,048-micro-batch pipeline
constexpr int kSweepCase = 1;     ///< the 1,024-GPU case
constexpr int kSweepClasses[] = {1, 2, 4, 8, 16, 32};

/// Targets from the issue (one core).
constexpr double kTarget1024Ms = 50;
constexpr double kTarget16384Ms = 1000;
/// From the parallelism issue: the 3D layout at 16,384 GPUs simulated under 100 ms.
constexpr double kTarget3dMs = 100;
/// From the planning issue: the screen predicts many layouts, so 16,384 GPUs under 5 ms.
constexpr double kTarget16384PlanMs = 5;
/// From the plan-to-purchase issue: a pipeline's steady state in closed form, so BigScience's
/// 2,048 micro-batches under 10 ms.
constexpr double kTargetPipelineMs = 10;
constexpr double kTargetRssMiB = 1000.0 * 1000 * 1000 / (1024 * 1024);  // 1 GB

/// `plan` split into `classes` rank classes of equal size, class k at compute speed
/// 1 - k/1000 (so no two classes are alike). Ranks and nodes must divide evenly.
sim::CostedStep with_classes(sim::CostedStep plan, int classes) {
  plan.groups.clear();
  for (int k = 0; k < classes; ++k) {
    sim::RankGroup g;
    g.name = fmt::format("class {}", k);
    g.ranks = plan.gpus / classes;
    g.nodes = std::max(1, plan.nodes / classes);
    g.compute_speed = 1.0 - 0.001 * k;
    plan.groups.push_back(g);
  }
  return plan;
}

/// The scenario validate builds for record `id` of `file`.
Scenario record_scenario(const fs::path& file, const std::string& id) {
  for (const MeasuredRun& run : load_measured_runs(file))
    if (run.id == id) {
      RunScenario rs = scenario_for(run);
      if (!rs.scenario) throw std::runtime_error(fmt::format("record {}: {}", id, rs.skip_reason));
      return *rs.scenario;
    }
  throw std::runtime_error(fmt::format("{}: no record {}", file.string(), id));
}

struct Timing {
  double median_ms = 0;
  double min_ms = 0;
};

/// Runs `f` once to warm up, then `repeat` times; wall time of each run.
Timing time_it(int repeat, const std::function<void()>& f) {
  using clock = std::chrono::steady_clock;
  f();
  std::vector<double> ms;
  ms.reserve(static_cast<std::size_t>(repeat));
  for (int i = 0; i < repeat; ++i) {
    const auto t0 = clock::now();
    f();
    const auto t1 = clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  const std::size_t n = ms.size();
  return {n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]), ms.front()};
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // Linux: KiB
}

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  return "unknown";
}

struct CaseResult {
  std::string label;
  std::string scenario;
  int gpus = 0;
  int classes = 0;
  int tasks = 0;
  std::uint64_t events = 0;
  double step_time_s = 0;
  Timing predict;
  Timing sim;
  double events_per_s = 0;  ///< events / median lower+simulate wall time
  double peak_rss_mib = 0;
};

struct SweepRow {
  int classes = 0;
  int tasks = 0;
  std::uint64_t events = 0;
  Timing sim;
  // From the minimum times (the least disturbed runs; medians move with other load).
  double ms_per_class = 0;  ///< min / classes
  double vs_previous = 0;   ///< min / the previous row's min (2 for linear growth)
  double events_per_s = 0;
};

std::string grouped(std::uint64_t n) {
  std::string s = std::to_string(n), out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

std::string verdict(bool met) { return met ? "met" : "MISSED"; }

/// Times predict() and lower+simulate for each benchmark scenario; keeps the sweep case's plan.
std::vector<CaseResult> time_cases(const std::string& scenario_dir, int repeat, sim::CostedStep& sweep_plan,
                                   std::uint64_t& sink) {
  std::vector<CaseResult> cases;
  for (const CaseSpec& spec : kCases) {
    const Scenario s = spec.record ? record_scenario(data_dir() / spec.file, spec.record)
                                   : load_scenario(fs::path(scenario_dir) / spec.file);
    PredictOptions keep;
    keep.keep_simulation = true;
    const Prediction p = predict(s, keep);
    const sim::CostedStep plan = p.simulation->step;
    CaseResult c;
    c.label = spec.label;
    c.scenario = s.name;
    c.gpus = p.gpus;
    c.classes = static_cast<int>(p.simulation->graph.classes.size());
    c.tasks = p.simulation_tasks;
    c.events = p.simulation_events;
    c.step_time_s = p.step_time_s;
    c.predict = time_it(repeat, [&] { sink += predict(s).simulation_events; });
    c.sim = time_it(repeat, [&] { sink += sim::simulate(sim::lower_step(plan)).events; });
    c.events_per_s = static_cast<double>(c.events) / (c.sim.median_ms * 1e-3);
    c.peak_rss_mib = peak_rss_mib();
    cases.push_back(c);
    if (&spec == &kCases[kSweepCase]) sweep_plan = plan;
  }
  return cases;
}

/// Times lower+simulate of `plan` split into each of kSweepClasses rank classes.
std::vector<SweepRow> time_sweep(const sim::CostedStep& sweep_plan, int repeat, std::uint64_t& sink) {
  std::vector<SweepRow> sweep;
  for (int n : kSweepClasses) {
    const sim::CostedStep plan = with_classes(sweep_plan, n);
    const sim::StepGraph graph = sim::lower_step(plan);
    const sim::SimResult r = sim::simulate(graph);
    SweepRow row;
    row.classes = static_cast<int>(graph.classes.size());
    row.tasks = static_cast<int>(graph.tasks.size());
    row.events = r.events;
    row.sim = time_it(repeat, [&] { sink += sim::simulate(sim::lower_step(plan)).events; });
    row.ms_per_class = row.sim.min_ms / row.classes;
    row.vs_previous = sweep.empty() ? 0.0 : row.sim.min_ms / sweep.back().sim.min_ms;
    row.events_per_s = static_cast<double>(row.events) / (row.sim.median_ms * 1e-3);
    sweep.push_back(row);
  }
  return sweep;
}

/// The targets' figures. Growth, from minimum times: time per class at the most classes over
/// that at one class (<= 1: no worse than linear, fixed costs included), and the time over
/// the last two doublings of the class count (4: linear; 16 would be quadratic), allowed 10%
/// for noise.
struct Targets {
  double rss_mib = 0, ms1024 = 0, ms16k = 0, ms3d = 0, ms_pipeline = 0, growth = 0, last_x4 = 0;
  int quarter_classes = 0;
  bool linear = false;
};

Targets targets_of(const std::vector<CaseResult>& cases, const std::vector<SweepRow>& sweep) {
  Targets t;
  t.rss_mib = peak_rss_mib();
  t.ms1024 = cases[1].predict.median_ms;
  t.ms16k = cases[2].predict.median_ms;
  t.ms3d = cases[3].predict.median_ms;
  t.ms_pipeline = cases[kPipelineCase].predict.median_ms;
  t.growth = sweep.back().ms_per_class / sweep.front().ms_per_class;
  const SweepRow& quarter = sweep[sweep.size() - 3];
  t.quarter_classes = quarter.classes;
  t.last_x4 = sweep.back().sim.min_ms / quarter.sim.min_ms;
  t.linear = t.growth <= 1.0 && t.last_x4 <= 4.4;
  return t;
}

nlohmann::ordered_json case_json(const CaseResult& c) {
  nlohmann::ordered_json o;
  o["case"] = c.label;
  o["scenario"] = c.scenario;
  o["gpus"] = c.gpus;
  o["rank_classes"] = c.classes;
  o["tasks"] = c.tasks;
  o["events"] = c.events;
  o["step_time_s"] = c.step_time_s;
  o["predict_median_ms"] = c.predict.median_ms;
  o["predict_min_ms"] = c.predict.min_ms;
  o["lower_simulate_median_ms"] = c.sim.median_ms;
  o["lower_simulate_min_ms"] = c.sim.min_ms;
  o["events_per_s"] = c.events_per_s;
  o["peak_rss_mib"] = c.peak_rss_mib;
  return o;
}

nlohmann::ordered_json sweep_json(const std::string& label, const std::vector<SweepRow>& sweep, const Targets& t) {
  nlohmann::ordered_json sw;
  sw["case"] = label;
  sw["rows"] = nlohmann::json::array();
  for (const SweepRow& r : sweep) {
    nlohmann::ordered_json o;
    o["rank_classes"] = r.classes;
    o["tasks"] = r.tasks;
    o["events"] = r.events;
    o["lower_simulate_median_ms"] = r.sim.median_ms;
    o["lower_simulate_min_ms"] = r.sim.min_ms;
    o["ms_per_class"] = r.ms_per_class;
    if (r.vs_previous > 0) o["vs_previous"] = r.vs_previous;
    o["events_per_s"] = r.events_per_s;
    sw["rows"].push_back(o);
  }
  sw["per_class_growth"] = t.growth;
  sw["last_x4_classes"] = {{"from", t.quarter_classes}, {"to", sweep.back().classes}, {"time_ratio", t.last_x4}};
  return sw;
}

void print_json(int repeat, const std::vector<CaseResult>& cases, const std::vector<SweepRow>& sweep,
                const Targets& t) {
  nlohmann::ordered_json j;
  j["cpu"] = cpu_name();
  j["repeat"] = repeat;
  j["cases"] = nlohmann::json::array();
  for (const CaseResult& c : cases) j["cases"].push_back(case_json(c));
  j["rank_class_sweep"] = sweep_json(cases[kSweepCase].label, sweep, t);
  nlohmann::ordered_json g;
  g["gpus_1024_under_50_ms"] = {{"median_ms", t.ms1024}, {"met", t.ms1024 < kTarget1024Ms}};
  g["gpus_16384_under_1_s"] = {{"median_ms", t.ms16k}, {"met", t.ms16k < kTarget16384Ms}};
  g["gpus_16384_under_5_ms"] = {{"median_ms", t.ms16k}, {"met", t.ms16k < kTarget16384PlanMs}};
  g["layout_3d_16384_under_100_ms"] = {{"median_ms", t.ms3d}, {"met", t.ms3d < kTarget3dMs}};
  g["pipeline_2048_micro_batches_under_10_ms"] = {{"median_ms", t.ms_pipeline},
                                                  {"met", t.ms_pipeline < kTargetPipelineMs}};
  g["memory_under_1_gb"] = {{"peak_rss_mib", t.rss_mib}, {"met", t.rss_mib < kTargetRssMiB}};
  g["linear_in_rank_classes"] = {{"per_class_growth", t.growth}, {"last_x4_time_ratio", t.last_x4}, {"met", t.linear}};
  j["targets"] = g;
  std::cout << j.dump(2) << "\n";
}

void print_cases(int repeat, const std::vector<CaseResult>& cases) {
  std::cout << fmt::format("stepcast_bench: one step, median and min of {} runs after one warm-up; CPU: {}\n\n", repeat,
                           cpu_name());
  std::cout << fmt::format("{:<31} {:>6} {:>7} {:>7} {:>9} | {:>9} {:>9} | {:>9} {:>9} | {:>11} {:>9}\n", "", "",
                           "rank", "", "", "predict()", "", "lower+sim", "", "", "peak RSS");
  std::cout << fmt::format("{:<31} {:>6} {:>7} {:>7} {:>9} | {:>9} {:>9} | {:>9} {:>9} | {:>11} {:>9}\n", "case",
                           "GPUs", "classes", "tasks", "events", "med (ms)", "min (ms)", "med (ms)", "min (ms)",
                           "events/s", "(MiB)");
  for (const CaseResult& c : cases)
    std::cout << fmt::format(
        "{:<31} {:>6} {:>7} {:>7} {:>9} | {:>9.3f} {:>9.3f} | {:>9.3f} {:>9.3f} | {:>11} {:>9.1f}\n", c.label,
        grouped(static_cast<std::uint64_t>(c.gpus)), c.classes, grouped(static_cast<std::uint64_t>(c.tasks)),
        grouped(c.events), c.predict.median_ms, c.predict.min_ms, c.sim.median_ms, c.sim.min_ms,
        grouped(static_cast<std::uint64_t>(std::llround(c.events_per_s))), c.peak_rss_mib);
  std::cout << "events/s: simulated events over the median lower+sim time; peak RSS: the process's peak after "
               "the case\n\n";
}

void print_sweep(const std::string& label, const std::vector<SweepRow>& sweep) {
  std::cout << fmt::format("Rank-class sweep: {}, lower_step() + simulate(), classes at compute speed 1 - k/1000\n",
                           label);
  std::cout << "(per class and x previous from the min times: the least disturbed runs)\n";
  std::cout << fmt::format("{:>12} {:>7} {:>9} | {:>9} {:>9} | {:>14} {:>14} | {:>11}\n", "rank classes", "tasks",
                           "events", "med (ms)", "min (ms)", "min/class (ms)", "x previous (x)", "events/s");
  for (const SweepRow& r : sweep)
    std::cout << fmt::format("{:>12} {:>7} {:>9} | {:>9.3f} {:>9.3f} | {:>14.3f} {:>14} | {:>11}\n", r.classes,
                             grouped(static_cast<std::uint64_t>(r.tasks)), grouped(r.events), r.sim.median_ms,
                             r.sim.min_ms, r.ms_per_class,
                             r.vs_previous > 0 ? fmt::format("{:.2f}", r.vs_previous) : "",
                             grouped(static_cast<std::uint64_t>(std::llround(r.events_per_s))));
}

void print_targets(const std::vector<SweepRow>& sweep, const Targets& t) {
  std::cout << "\nTargets (one core):\n";
  std::cout << fmt::format("  1,024 GPUs under {:.0f} ms:   predict() median {:.3f} ms: {}\n", kTarget1024Ms, t.ms1024,
                           verdict(t.ms1024 < kTarget1024Ms));
  std::cout << fmt::format("  16,384 GPUs under {:.0f} ms: predict() median {:.3f} ms: {}\n", kTarget16384Ms, t.ms16k,
                           verdict(t.ms16k < kTarget16384Ms));
  std::cout << fmt::format("  16,384 GPUs under {:.0f} ms:    predict() median {:.3f} ms: {}\n", kTarget16384PlanMs,
                           t.ms16k, verdict(t.ms16k < kTarget16384PlanMs));
  std::cout << fmt::format("  3D layout, 16,384 GPUs, under {:.0f} ms: predict() median {:.3f} ms: {}\n", kTarget3dMs,
                           t.ms3d, verdict(t.ms3d < kTarget3dMs));
  std::cout << fmt::format("  2,048-micro-batch pipeline under {:.0f} ms: predict() median {:.3f} ms: {}\n",
                           kTargetPipelineMs, t.ms_pipeline, verdict(t.ms_pipeline < kTargetPipelineMs));
  std::cout << fmt::format("  memory under 1 GB:         peak RSS {:.1f} MiB: {}\n", t.rss_mib,
                           verdict(t.rss_mib < kTargetRssMiB));
  std::cout << fmt::format(
      "  linear in rank classes:    min time per class at {} classes / at 1 class = {:.2f} (<= 1); {} -> {} "
      "classes: x{:.2f} time (4: linear, <= 4.4 allowed): {}\n",
      sweep.back().classes, t.growth, t.quarter_classes, sweep.back().classes, t.last_x4, verdict(t.linear));
}

}  // namespace

int main(int argc, char** argv) {
  stepcast::tune_allocator();
  CLI::App app{"stepcast_bench: wall time and events per second to predict and simulate one training step"};
  int repeat = 20;
  bool json = false;
  std::string scenario_dir = (data_dir() / "scenarios" / "bench").string();
  app.add_option("--repeat", repeat, "timed runs per figure, after one warm-up run")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_flag("--json", json, "print one JSON object instead of tables");
  app.add_option("--scenario-dir", scenario_dir, "folder with the benchmark scenarios")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::uint64_t sink = 0;  // keeps the timed work observable
  std::vector<CaseResult> cases;
  std::vector<SweepRow> sweep;
  try {
    sim::CostedStep sweep_plan;
    cases = time_cases(scenario_dir, repeat, sweep_plan, sink);
    sweep = time_sweep(sweep_plan, repeat, sink);
  } catch (const std::exception& e) {
    std::cerr << "stepcast_bench: " << e.what() << "\n";
    return 1;
  }
  if (sink == 0) std::cerr << "stepcast_bench: no events simulated\n";

  const Targets t = targets_of(cases, sweep);
  if (json) {
    print_json(repeat, cases, sweep, t);
    return 0;
  }
  print_cases(repeat, cases);
  print_sweep(cases[kSweepCase].label, sweep);
  print_targets(sweep, t);
  return 0;
}
