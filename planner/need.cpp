/// \file
/// The bandwidth search of need.hpp.
#include "planner/need.hpp"

#include "topologies/link.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace stepcast {

double inter_node_rate_Gbps(const Job& job) {
  const auto& network = job.scenario.hardware.cluster.network;
  if (job.nodes < 2 || !network || !job.fabric.inter)
    throw std::invalid_argument(
        fmt::format("scenario \"{}\" runs on one node: no inter-node link to size", job.scenario.name));
  const LinkSpec* nic = find_link(network->nic);
  if (!nic) throw std::invalid_argument(fmt::format("unknown NIC link kind \"{}\"", network->nic));
  return 8.0 * nic->line_rate_GBps * network->nics_per_node;
}

Job with_inter_node_rate(const Job& job, double node_Gbps) {
  if (!(node_Gbps > 0) || !std::isfinite(node_Gbps))
    throw std::invalid_argument(fmt::format("inter-node rate must be a finite number > 0 Gb/s, got {}", node_Gbps));
  const double k = node_Gbps / inter_node_rate_Gbps(job);
  Job out = job;
  for (CommFabric* f : {&out.fabric, &out.tp_fabric, &out.pp_fabric})
    if (f->inter) f->inter->bw_GBps *= k;
  if (out.layout().pp > 1) out.pp_send_latency_s = send_latency_s(out.pp_fabric);
  out.hardware += fmt::format(", inter-node link set to {:.4g} Gb/s per node", node_Gbps);
  return out;
}

std::optional<double> bisect_smallest(const std::function<bool(double)>& ok, double lo, double hi, double tolerance,
                                      int& calls) {
  if (!(lo > 0) || !(hi >= lo) || !(tolerance > 0))
    throw std::invalid_argument("bisection needs 0 < lo <= hi and a tolerance > 0");
  ++calls;
  if (!ok(hi)) return std::nullopt;
  ++calls;
  if (ok(lo)) return lo;
  // Invariant: ok(hi), !ok(lo). Geometric midpoints: the rates span decades.
  while (hi / lo > 1 + tolerance) {
    const double mid = std::sqrt(lo * hi);
    ++calls;
    (ok(mid) ? hi : lo) = mid;
  }
  return hi;
}

double parse_fraction(std::string_view text) {
  std::string_view number = text;
  double scale = 1;
  if (!number.empty() && number.back() == '%') {
    number.remove_suffix(1);
    scale = 0.01;
  }
  double v = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
  if (ec != std::errc{} || end != number.data() + number.size() || number.empty())
    throw std::invalid_argument(fmt::format("expected a share such as 5% or 0.05, got \"{}\"", text));
  v *= scale;
  if (!(v > 0 && v < 1))
    throw std::invalid_argument(fmt::format("expected a share strictly between 0% and 100%, got \"{}\"", text));
  return v;
}

namespace {

/// The simulated step of the job at `node_Gbps` (predict()'s stages on the changed Job).
NeedPoint predict_at(const Job& base, double node_Gbps) {
  const Job job = with_inter_node_rate(base, node_Gbps);
  const Costs costs = cost(job);
  Lowered lowered = lower(job, costs, PredictOptions{});
  sim::SimResult result = simulate(lowered, PredictOptions{});
  const sim::StepBounds bounds = bound(lowered.graph);
  const Prediction p = assemble(job, costs, std::move(lowered), std::move(result), bounds, PredictOptions{});
  return NeedPoint{node_Gbps, p.step_time_s, p.comm_exposed_s, p.step_time_s > 0 ? p.comm_exposed_s / p.step_time_s : 0,
                   ""};
}

void check_options(const NeedOptions& o) {
  if (!(o.exposed_fraction > 0 && o.exposed_fraction < 1))
    throw std::invalid_argument(fmt::format("exposed share must be in (0, 1), got {}", o.exposed_fraction));
  if (!(o.min_Gbps > 0) || !(o.max_Gbps > o.min_Gbps) || !std::isfinite(o.max_Gbps))
    throw std::invalid_argument(
        fmt::format("bandwidth range must satisfy 0 < min < max, got {} .. {} Gb/s", o.min_Gbps, o.max_Gbps));
  if (!(o.tolerance > 0 && o.tolerance < 1))
    throw std::invalid_argument(fmt::format("tolerance must be in (0, 1), got {}", o.tolerance));
  if (o.curve_points < 0 || o.curve_points > 1000)
    throw std::invalid_argument(fmt::format("curve points must be in 0..1000, got {}", o.curve_points));
}

/// The curve: `points` rates spaced geometrically over [lo, hi], then the marked ones,
/// ascending (a marked rate replaces an equal one).
std::vector<NeedPoint> curve(const Job& job, double lo, double hi, int points, std::vector<NeedPoint> marked) {
  std::vector<NeedPoint> out = std::move(marked);
  for (int i = 0; i < points; ++i) {
    const double r = points == 1 ? lo : lo * std::pow(hi / lo, static_cast<double>(i) / (points - 1));
    const bool taken =
        std::any_of(out.begin(), out.end(), [&](const NeedPoint& p) { return std::fabs(p.node_Gbps - r) <= 1e-9 * r; });
    if (!taken) out.push_back(predict_at(job, r));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const NeedPoint& a, const NeedPoint& b) { return a.node_Gbps < b.node_Gbps; });
  return out;
}

}  // namespace

NeedResult need(const Scenario& scenario, const NeedOptions& options) {
  check_options(options);
  const Job job = resolve(scenario);
  if (!job.measured_collectives.empty())
    throw std::invalid_argument(
        fmt::format("scenario \"{}\": its calibration measures the collectives, which then "
                    "no longer follow the link rate; remove the calibration to size the link",
                    scenario.name));
  NeedResult r;
  r.scenario = scenario.name;
  r.file = scenario.file;
  r.nodes = job.nodes;
  r.gpus = job.gpus;
  r.target_fraction = options.exposed_fraction;
  r.tolerance = options.tolerance;
  const double written = inter_node_rate_Gbps(job);
  const auto& network = *job.scenario.hardware.cluster.network;
  r.nic = network.nic;
  r.nics_written = network.nics_per_node;
  r.nic_Gbps = written / network.nics_per_node;

  const Costs costs = cost(job);
  r.memory = costs.memory;
  const double grad_dtype_bytes = scenario.strategy.reduce_fp32 ? 4.0 : working_bytes(scenario.training.precision);
  r.gradient_bytes = costs.trainable * grad_dtype_bytes / (job.layout().tp * job.layout().pp);
  r.compute_s = costs.forward_s + costs.backward_s + costs.recompute_s;  // the optimizer follows the reduction
  r.rule_of_thumb_Gbps = 8.0 * r.gradient_bytes / r.compute_s / 1e9;

  const std::int64_t estimate =
      2 +
      static_cast<std::int64_t>(
          std::ceil(std::log2(std::log(options.max_Gbps / options.min_Gbps) / std::log1p(options.tolerance)))) +
      options.curve_points + 3;
  auto ok = [&](double rate) {
    const NeedPoint p = predict_at(job, rate);
    if (options.progress) options.progress("bisect", r.predictions + 1, estimate);
    return p.exposed_fraction <= options.exposed_fraction;
  };
  r.needed_Gbps = bisect_smallest(ok, options.min_Gbps, options.max_Gbps, options.tolerance, r.predictions);
  r.met_at_min = r.needed_Gbps && *r.needed_Gbps == options.min_Gbps;
  r.nics_needed = r.needed_Gbps ? static_cast<int>(std::ceil(*r.needed_Gbps / r.nic_Gbps * (1 - 1e-12))) : 0;

  r.written = predict_at(job, written);
  r.written.mark = "written";
  r.at_max = predict_at(job, options.max_Gbps);
  std::vector<NeedPoint> marked{r.written};
  NeedPoint rule = predict_at(job, r.rule_of_thumb_Gbps);
  rule.mark = "rule of thumb";
  marked.push_back(rule);
  double lo = std::min(written, r.rule_of_thumb_Gbps), hi = std::max(written, r.rule_of_thumb_Gbps);
  if (r.needed_Gbps) {
    NeedPoint needed = predict_at(job, *r.needed_Gbps);
    needed.mark = "needed";
    marked.push_back(needed);
    lo = std::min(lo, *r.needed_Gbps);
    hi = std::max(hi, *r.needed_Gbps);
  }
  r.curve = curve(job, std::max(options.min_Gbps, lo / 4), std::min(options.max_Gbps, hi * 4), options.curve_points,
                  std::move(marked));
  if (options.progress) options.progress("curve", estimate, estimate);
  return r;
}

}  // namespace stepcast
