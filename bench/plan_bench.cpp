/// \file
/// stepcast_plan_bench: how fast `stepcast plan` searches layouts (one thread, std::chrono).
/// Per case it times, median and minimum over --repeat runs after one warm-up run,
///  (a) the screen (screen_layouts: enumerate, reject, resolve once per (strategy, tp, sp)
///      family, cost + lower + bound per layout, sort), reported as layouts screened per
///      second (layouts that reached the cost stage: memory rejections included) and as
///      layouts enumerated per second;
///  (b) the whole plan (screen + simulation by branch and bound), with how many layouts it
///      simulated.
/// Exit status 0 whatever the times (it is not a test).
#include "base/json_input.hpp"
#include "simulator/plan.hpp"
#include "simulator/scenario.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace {

using namespace stepcast;
namespace fs = std::filesystem;

struct Case {
  const char* label;
  const char* file;      ///< under the repository
  int gpus;              ///< 0: the scenario's
  std::int64_t global;   ///< 0: the scenario's
};

constexpr Case kCases[] = {
    {"GPT-2 small, 8x A100, batch 64", "tests/data/good/minimal.json", 0, 0},
    {"GPT-2 XL, 8x A100", "scenarios/bench/gpt2-xl-ddp-8xa100.json", 0, 0},
    {"Llama-3-70B, 1,024x H100, batch 1,024", "scenarios/bench/llama3-70b-fsdp-1024xh100.json", 0, 1024},
};

struct Timing {
  double median_s = 0;
  double min_s = 0;
};

Timing time_it(int repeat, const std::function<void()>& f) {
  f();  // warm-up
  std::vector<double> t;
  for (int i = 0; i < repeat; ++i) {
    const auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], t.front()};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"stepcast_plan_bench: layouts screened per second by `stepcast plan` (one thread)"};
  int repeat = 5;
  app.add_option("--repeat", repeat, "timed runs per figure, after one warm-up run")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  bool screen_only = false;
  app.add_flag("--screen-only", screen_only, "time the screen alone, not the whole plan (for a profiler)");
  CLI11_PARSE(app, argc, argv);
  try {
    fmt::print("{:<40} {:>10} {:>10} {:>16} {:>18} {:>10} {:>12}\n", "case", "enumerated", "screened",
               "screen (ms)", "screened/s", "simulated", "plan (ms)");
    for (const Case& c : kCases) {
      const Scenario s = load_scenario(data_dir() / c.file);
      PlanOptions o;
      o.gpus = c.gpus;
      o.global_batch = c.global;
      PlanScreen screen;
      const Timing ts = time_it(repeat, [&] { screen = screen_layouts(s, o); });
      std::int64_t costed = static_cast<std::int64_t>(screen.candidates.size()) +
                            screen.rejected[static_cast<int>(PlanRejectReason::memory)];
      PlanResult result;
      const Timing tp = screen_only ? Timing{} : time_it(repeat, [&] { result = plan(s, o); });
      fmt::print("{:<40} {:>10} {:>10} {:>16.2f} {:>18.0f} {:>10} {:>12.1f}\n", c.label, screen.enumerated, costed,
                 1e3 * ts.median_s, static_cast<double>(costed) / ts.median_s, result.simulated, 1e3 * tp.median_s);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "stepcast_plan_bench: {}\n", e.what());
    return 1;
  }
  return 0;
}
