#include "cli/need_command.hpp"

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

}  // namespace stepcast::cli
