/// \file
/// Collective measurement records predicted with the collective model (validate/collectives.hpp).
#include "validate/collectives.hpp"

#include "base/json_input.hpp"
#include "base/limits.hpp"
#include "base/size_text.hpp"
#include "model/collective.hpp"
#include "validate/validation.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace stepcast {

namespace {

/// The cluster the record ran on: its box, its node count and its stated network, else the
/// box's default network (an assumption, returned in `assumed`).
ClusterSpec cluster_of(const MeasuredRun& run, const BoxSpec& box, std::string& assumed) {
  const CollectiveBenchmark& c = *run.collective;
  ClusterSpec cluster;
  cluster.name = c.system;
  cluster.box = box.name;
  cluster.nodes = static_cast<int>(*run.nodes);
  cluster.network = c.network;
  if (cluster.nodes > 1 && !cluster.network) {
    cluster.network = default_network(box, cluster.nodes);
    assumed = default_network_assumption(box, *cluster.network);
  }
  return cluster;
}

double predicted_metric(const std::string& metric, const CollectiveCost& cost) {
  if (metric == "busbw_GBps") return cost.busbw_GBps;
  if (metric == "algbw_GBps") return cost.algbw_GBps;
  return cost.time_s * 1e6;  // time_us
}

}  // namespace

ValidationRow validate_collective(const MeasuredRun& run) {
  const CollectiveBenchmark& c = *run.collective;
  ValidationRow row;
  CollectiveFields& k = row.collective.emplace();
  row.id = run.id;
  row.source = run.source;
  row.trust = run.trust;
  row.strategy = std::string(name(c.op));
  row.gpu = run.gpu;
  row.metric = run.metric;
  row.measured = run.value;
  row.gpus = run.gpus.value_or(0);
  k.nodes = run.nodes.value_or(0);
  k.bytes = c.bytes;
  k.fed_constant = c.fed_constant;
  k.network = c.network ? c.network->nic : k.nodes > 1 ? "unstated" : "nvlink";
  row.model = fmt::format("{} {}", name(c.op), binary_size_text(c.bytes));
  if (c.unmodelled) {
    row.status = "skipped: " + *c.unmodelled;
    return row;
  }
  const BoxSpec* box = find_box(*c.box);
  if (!box) {
    row.status = "skipped: box \"" + *c.box + "\" is not in the catalog";
    return row;
  }
  const std::string where = fmt::format("{}:{}", run.file, run.line);
  if (box->gpu != run.gpu)
    throw InputError(where, "/hardware/gpu",
                     fmt::format("the GPU of box \"{}\" (\"{}\"), got \"{}\"", box->name, box->gpu, run.gpu));
  if (*run.gpus_per_node > box->gpus)
    throw InputError(
        where, "/hardware/gpus_per_node",
        fmt::format("at most the {} GPUs of box \"{}\", got {}", box->gpus, box->name, *run.gpus_per_node));
  if (c.network && c.network->nics_per_node > limits::kMaxNicsPerGpu * box->gpus)
    throw InputError(where, "/hardware/network/nics_per_node",
                     fmt::format("at most {} NICs per GPU of box \"{}\" ({} GPUs), got {}", limits::kMaxNicsPerGpu,
                                 box->name, box->gpus, c.network->nics_per_node));
  if (*run.nodes > 1 && !c.network && box->nics < 1) {
    row.status = "skipped: box \"" + box->name + "\" has no NICs and the record states no network";
    return row;
  }
  std::string assumed;
  const ClusterSpec cluster = cluster_of(run, *box, assumed);
  if (!assumed.empty()) row.assumptions.push_back(assumed);
  if (cluster.network) k.network = cluster.network->nic;
  const Topology topo = Topology::build(cluster);
  const CommFabric fabric = topo.fabric(cluster.nodes, static_cast<int>(*run.gpus_per_node));
  if (const std::string why = algorithm_unavailable(c.op, fabric, c.algorithm); !why.empty()) {
    row.status = "skipped: NCCL_ALGO " + c.algorithm + ": " + why;
    return row;
  }
  const CollectiveCost cost = collective_cost(c.op, c.bytes, fabric, c.algorithm);
  k.chosen = cost.algorithm + "/" + cost.protocol;
  row.assumptions.push_back(
      c.algorithm == "auto" ? fmt::format("NCCL's choice as the model makes it: {}/{}", cost.algorithm, cost.protocol)
                            : fmt::format("NCCL_ALGO {}: {}/{}", c.algorithm, cost.algorithm, cost.protocol));
  set_prediction(row, run, predicted_metric(run.metric, cost));
  return row;
}

}  // namespace stepcast
