/// \file
/// `stepcast need SCENARIO --exposed-comm 5%`: its options, help and run.
#include "cli/need_command.hpp"

#include "cli/command.hpp"
#include "cli/progress.hpp"
#include "base/json_input.hpp"
#include "report/need_view.hpp"
#include "scenario/scenario.hpp"

#include <fmt/format.h>

#include <memory>
#include <stdexcept>
#include <string>

namespace stepcast::cli {

void add_need_options(CLI::App& cmd, NeedArgs& a) {
  cmd.add_option("SCENARIO", a.scenario, "Scenario file (JSON) on two nodes or more")->required();
  cmd.add_option("--exposed-comm", a.exposed, "Target: exposed communication as a share of the step\n(5% or 0.05)")
      ->capture_default_str();
  cmd.add_option("--min-gbps", a.min_Gbps, "Lowest line rate per node searched, Gb/s")
      ->check(CLI::Range(1e-3, 1e7))
      ->capture_default_str();
  cmd.add_option("--max-gbps", a.max_Gbps, "Highest line rate per node searched, Gb/s")
      ->check(CLI::Range(1e-3, 1e7))
      ->capture_default_str();
  cmd.add_option("--tolerance", a.tolerance, "Relative precision of the answer")
      ->check(CLI::Range(1e-6, 0.5))
      ->capture_default_str();
  cmd.add_option("--curve-points", a.curve_points, "Bandwidths on the curve besides the marked ones")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  cmd.add_flag("--json", a.json, "Print one JSON object instead of the tables");
}

std::string need_help() {
  return "Finds the smallest inter-node line rate per node (all its NICs together, Gb/s) at which\n"
         "the simulated step's exposed communication is at most the target share of the step:\n"
         "bisection on a log scale between --min-gbps and --max-gbps, each point a full\n"
         "simulation with the resolved job's inter-node fabrics scaled to that rate (the link\n"
         "efficiency, NIC sharing and latency of the written network kept; the catalogs are not\n"
         "changed). Prints the NICs of the network's kind that rate takes, the rule of thumb\n"
         "beside it (8 x gradient bytes per GPU / compute time: the gradients cross each node's\n"
         "link once while the GPUs compute), and the curve of step time against bandwidth. When\n"
         "no rate reaches the target (communication inside the node, or latency, is exposed on its\n"
         "own) it says so and prints the floor. Progress goes to stderr when it is a terminal.\n";
}

NeedOptions need_options(const NeedArgs& a) {
  NeedOptions o;
  o.exposed_fraction = parse_fraction(a.exposed);
  o.min_Gbps = a.min_Gbps;
  o.max_Gbps = a.max_Gbps;
  o.tolerance = a.tolerance;
  o.curve_points = a.curve_points;
  return o;
}

namespace {

CLI::App* add_need_command(CLI::App& app, cli::NeedArgs& na) {
  CLI::App* cmd = app.add_subcommand("need", "Find the inter-node bandwidth at which communication hides");
  cli::add_need_options(*cmd, na);
  cmd->footer(footer(
      cli::need_help(),
      examples({{"stepcast need scenarios/seeds/rule-of-thumb-10b-4x8a100-100g.json --exposed-comm 5%",
                 "seed 4: the link per node for at most 5% exposed communication"},
                {"stepcast need scenarios/seeds/rule-of-thumb-10b-4x8a100-100g.json --json", "as one JSON object"}}),
      true));
  return cmd;
}

int run_need(const cli::NeedArgs& args) {
  const Scenario s = load_scenario(args.scenario);
  NeedOptions options;
  try {
    options = cli::need_options(args);
  } catch (const std::invalid_argument& e) {
    throw UserError(fmt::format("--exposed-comm: {}", e.what()));
  }
  options.progress = cli::terminal_progress("need");
  NeedResult result;
  try {
    result = need(s, options);
  } catch (const InputError&) {
    throw;
  } catch (const std::invalid_argument& e) {
    throw UserError(fmt::format("{}: {}", s.file, e.what()));
  }
  cli::clear_progress();
  write(args.json ? cli::need_json(result) : cli::need_text(result));
  return kExitOk;
}

}  // namespace

Command need_command(CLI::App& app) {
  auto args = std::make_shared<NeedArgs>();
  CLI::App* cmd = add_need_command(app, *args);
  return {cmd, true, [args] { return run_need(*args); }};
}

}  // namespace stepcast::cli
