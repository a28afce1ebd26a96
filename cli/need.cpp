#include "cli/need.hpp"

#include <fmt/format.h>

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

std::string pct(double f) { return fmt::format("{:.1f}", 100 * f); }

std::string secs(double s) { return s >= 1 ? fmt::format("{:.3f}", s) : fmt::format("{:.4f}", s); }

std::string gbps(double g) { return g >= 100 ? fmt::format("{:.0f}", g) : fmt::format("{:.3g}", g); }

}  // namespace

std::string need_text(const NeedResult& r) {
  std::string out = fmt::format(
      "Need {}{}: {} GPUs on {} nodes, target exposed communication <= {}% of the step\n", r.scenario,
      r.file.empty() ? "" : fmt::format(" [{}]", r.file), r.gpus, r.nodes, pct(r.target_fraction));
  out += fmt::format("  written network: {} x {} ({} Gb/s each) = {} Gb/s per node: step {} s, exposed {} s ({}%)\n",
                     r.nics_written, r.nic, gbps(r.nic_Gbps), gbps(r.written.node_Gbps), secs(r.written.step_time_s),
                     secs(r.written.comm_exposed_s), pct(r.written.exposed_fraction));
  if (r.needed_Gbps && r.met_at_min) {
    out += fmt::format("Answer: the target is met already at {} Gb/s per node, the bottom of the search\n",
                       gbps(*r.needed_Gbps));
  } else if (r.needed_Gbps) {
    out += fmt::format("Answer: {} Gb/s per node (within {}%), i.e. {} x {} NIC(s) of {} Gb/s\n", gbps(*r.needed_Gbps),
                       fmt::format("{:g}", 100 * r.tolerance), r.nics_needed, r.nic, gbps(r.nic_Gbps));
  } else {
    out += fmt::format("Answer: none: even at {} Gb/s per node the exposed communication is {} s, {}% of a {} s "
                       "step (communication inside a node, or latency, is exposed on its own; a larger batch per "
                       "step or gradient accumulation hides more)\n",
                       gbps(r.at_max.node_Gbps), secs(r.at_max.comm_exposed_s), pct(r.at_max.exposed_fraction),
                       secs(r.at_max.step_time_s));
  }
  out += fmt::format("Rule of thumb: 8 x {:.4g} GB of gradients per GPU / {} s of compute = {} Gb/s per node "
                     "(assumes the whole gradient crosses each node's link once and hides behind all the compute)\n",
                     r.gradient_bytes / 1e9, secs(r.compute_s), gbps(r.rule_of_thumb_Gbps));
  out += fmt::format("Search: {} simulations for the bisection\n", r.predictions);
  out += "Curve\n";
  out += fmt::format("  {:>16}  {:>13}  {:>16}  {:>11}  {}\n", "bandwidth (Gb/s)", "step time (s)", "exposed comm (s)",
                     "exposed (%)", "");
  for (const NeedPoint& p : r.curve)
    out += fmt::format("  {:>16}  {:>13}  {:>16}  {:>11}  {}\n", gbps(p.node_Gbps), secs(p.step_time_s),
                       secs(p.comm_exposed_s), pct(p.exposed_fraction), p.mark);
  return out;
}

}  // namespace stepcast::cli
