/// \file
/// stepcast_plan_bench: how fast `stepcast plan` searches layouts (one thread, std::chrono).
/// Per case it times, median and minimum over --repeat runs after one warm-up run,
///  (a) the screen (screen_layouts: enumerate, reject, resolve once per (strategy, tp, sp,
///      pp) family on a topology built once, cost per layout, sort), reported as layouts
///      screened per second (layouts that reached the cost stage: memory rejections
///      included);
///  (b) the whole plan (screen + bounds + simulation by branch and bound), with how many
///      layouts it simulated and the winner.
/// --json prints the same figures for bench/readme_table.py --plan (docs/benchmarks.md's plan table).
/// Exit status 0 whatever the times (it is not a test).
#include "base/allocator.hpp"
#include "base/json_input.hpp"
#include "planner/plan.hpp"
#include "scenario/scenario.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace stepcast;
namespace fs = std::filesystem;

struct Case {
  const char* label;
  const char* file;      ///< under the repository
  int gpus;              ///< 0: the scenario's
  std::int64_t global;   ///< 0: the scenario's
  std::int64_t seq = 0;  ///< 0: the scenario's
};

constexpr Case kCases[] = {
    {"GPT-2 small, 8x A100, batch 64", "tests/data/good/minimal.json", 0, 0},
    {"GPT-2 XL, 8x A100", "scenarios/bench/gpt2-xl-ddp-8xa100.json", 0, 0},
    {"Llama-3-70B, 64x H100, batch 128", "scenarios/bench/llama3-70b-fsdp-1024xh100.json", 64, 128},
    {"Llama-3-70B, 1,024x H100, batch 1,024", "scenarios/bench/llama3-70b-fsdp-1024xh100.json", 0, 1024},
    {"Llama-2-70B, 512x H100, batch 1,024", "scenarios/plan/llama2-70b-512xh100.json", 0, 1024},
    {"Llama-3.1-405B, 16,384x H100, batch 2,048", "scenarios/bench/llama31-405b-3d-16384xh100.json", 0, 2048},
    // The plan-to-purchase issue's case: sequences of 4,096, a global batch of 16,384.
    {"Llama-3.1-405B seq 4,096, 16,384x H100, batch 16,384", "scenarios/bench/llama31-405b-3d-16384xh100.json", 0,
     16384, 4096},
};

struct Timing {
  double median_s = 0;
  double min_s = 0;
};

/// The thread's CPU time, s (CLOCK_THREAD_CPUTIME_ID): on a machine shared with other work
/// it counts this program's own time, which wall time does not.
double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

bool use_cpu_time = false;

double now_s() {
  return use_cpu_time ? thread_cpu_s()
                      : std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Timing time_it(int repeat, const std::function<void()>& f) {
  f();  // warm-up
  std::vector<double> t;
  for (int i = 0; i < repeat; ++i) {
    const double a = now_s();
    f();
    t.push_back(now_s() - a);
  }
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], t.front()};
}

}  // namespace

int main(int argc, char** argv) {
  stepcast::tune_allocator();
  CLI::App app{"stepcast_plan_bench: layouts screened per second by `stepcast plan` (one thread)"};
  int repeat = 5;
  app.add_option("--repeat", repeat, "timed runs per figure, after one warm-up run")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  bool screen_only = false;
  std::string only;
  app.add_option("--only", only, "run only the cases whose label contains this text");
  bool json_out = false;
  app.add_flag("--json", json_out, "print the figures as one JSON object");
  app.add_flag("--cpu-time", use_cpu_time,
               "time with the thread's CPU clock instead of the wall clock\n(for a machine shared with other work)");
  app.add_flag("--screen-only", screen_only, "time the screen alone, not the whole plan (for a profiler)");
  CLI11_PARSE(app, argc, argv);
  try {
    nlohmann::json rows = nlohmann::json::array();
    if (!json_out)
      fmt::print("{:<44} {:>10} {:>10} {:>12} {:>12} {:>10} {:>10}  {}\n", "case", "enumerated", "screened",
                 "screen (ms)", "screened/s", "simulated", "plan (ms)", "winner");
    for (const Case& c : kCases) {
      if (std::string_view(c.label).find(only) == std::string_view::npos) continue;
      Scenario s = load_scenario(data_dir() / c.file);
      if (c.seq > 0) s.training.seq_len = c.seq;
      PlanOptions o;
      o.gpus = c.gpus;
      o.global_batch = c.global;
      PlanScreen screen;
      const Timing ts = time_it(repeat, [&] { screen = screen_layouts(s, o); });
      std::int64_t costed = static_cast<std::int64_t>(screen.candidates.size()) +
                            screen.rejected[static_cast<int>(PlanRejectReason::memory)];
      PlanResult result;
      const Timing tp = screen_only ? Timing{} : time_it(repeat, [&] { result = plan(s, o); });
      const std::string winner = result.top.empty() ? "" : result.top[0].point.describe();
      const double rate = static_cast<double>(costed) / ts.median_s;
      if (json_out) {
        rows.push_back({{"case", c.label},
                        {"gpus", screen.gpus},
                        {"enumerated", screen.enumerated},
                        {"screened", costed},
                        {"screen_median_ms", 1e3 * ts.median_s},
                        {"screen_min_ms", 1e3 * ts.min_s},
                        {"screened_per_s", rate},
                        {"simulated", result.simulated},
                        {"plan_median_ms", 1e3 * tp.median_s},
                        {"plan_min_ms", 1e3 * tp.min_s},
                        {"winner", winner},
                        {"winner_step_s", result.top.empty() ? 0.0 : result.top[0].prediction.step_time_s}});
        continue;
      }
      fmt::print("{:<44} {:>10} {:>10} {:>12.2f} {:>12.0f} {:>10} {:>10.1f}  {}\n", c.label, screen.enumerated, costed,
                 1e3 * ts.median_s, rate, result.simulated, 1e3 * tp.median_s, winner);
    }
    if (json_out)
      fmt::print(
          "{}\n",
          nlohmann::json{{"repeat", repeat}, {"clock", use_cpu_time ? "thread cpu" : "wall"}, {"cases", rows}}.dump(2));
  } catch (const std::exception& e) {
    fmt::print(stderr, "stepcast_plan_bench: {}\n", e.what());
    return 1;
  }
  return 0;
}
