#include "report/need_view.hpp"

#include "report/report.hpp"

#include <fmt/format.h>

#include <string>

namespace stepcast::cli {

namespace {

std::string pct(double f) { return fmt::format("{:.1f}", 100 * f); }

std::string secs(double s) { return s >= 1 ? fmt::format("{:.3f}", s) : fmt::format("{:.4f}", s); }

std::string gbps(double g) { return g >= 100 ? fmt::format("{:.0f}", g) : fmt::format("{:.3g}", g); }

}  // namespace

std::string need_text(const NeedResult& r) {
  std::string out =
      fmt::format("Need {}{}: {} GPUs on {} nodes, target exposed communication <= {}% of the step\n", r.scenario,
                  r.file.empty() ? "" : fmt::format(" [{}]", r.file), r.gpus, r.nodes, pct(r.target_fraction));
  out += memory_warning(r.memory);
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
    out += fmt::format(
        "Answer: none: even at {} Gb/s per node the exposed communication is {} s, {}% of a {} s "
        "step (communication inside a node, or latency, is exposed on its own; a larger batch per "
        "step or gradient accumulation hides more)\n",
        gbps(r.at_max.node_Gbps), secs(r.at_max.comm_exposed_s), pct(r.at_max.exposed_fraction),
        secs(r.at_max.step_time_s));
  }
  out += fmt::format(
      "Rule of thumb: 8 x {:.4g} GB of gradients per GPU / {} s of compute = {} Gb/s per node "
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
