// Measured NCCL numbers (tests/data/nccl_measured.json) against the collective model run on
// hardware built from the catalogs: Topology::build(cluster).fabric(nodes, gpus_per_node),
// then collective_cost. Tolerances: 15% on busbw for messages >= 16 MB, 30% for smaller
// messages (busbw or time per call). Rows the catalogs cannot express carry a "skip" reason
// and are printed as skipped. Rows whose "fed_constant" names a constant set from them (a
// link's effective rate, the launch overhead) are no independent test of it: the worst
// errors are reported over all rows and over the independent rows (fed_constant null).
// The table is printed as docs/model.md's markdown rows (run with -s, or tests/accuracy.sh).
#include "model/collective.hpp"
#include "base/json_input.hpp"
#include "topologies/topology.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <vector>

using namespace stepcast;

namespace {

struct MeasuredRow {
  std::string system;
  std::string box;
  int nodes = 1;
  int gpus_per_node = 1;
  std::optional<NetworkSpec> network;
  Collective collective = Collective::all_reduce;
  double bytes = 0;
  std::string algorithm;
  std::optional<double> busbw_GBps;
  std::optional<double> time_us;
  std::string skip;
  std::optional<std::string> fed_constant;  ///< constant set from this row; nullopt: independent
};

NetworkTopology parse_network_topology(JsonObject& o, const std::string& key) {
  const std::string s = o.choice(
      key, {std::string(name(NetworkTopology::single_switch)), std::string(name(NetworkTopology::rail_fat_tree))});
  return s == name(NetworkTopology::single_switch) ? NetworkTopology::single_switch : NetworkTopology::rail_fat_tree;
}

std::vector<MeasuredRow> load_rows(const JsonDoc& doc) {
  JsonObject root(doc.root(), doc.file(), "");
  root.ignore("description");
  JsonArray arr = root.array("rows");
  std::vector<MeasuredRow> rows;
  for (std::size_t i = 0; i < arr.size(); ++i) {
    JsonObject o = arr.object(i);
    MeasuredRow r;
    r.system = o.string("system");
    r.nodes = static_cast<int>(o.integer("nodes"));
    r.gpus_per_node = static_cast<int>(o.integer("gpus_per_node"));
    r.collective = parse_collective(o.string("collective"));
    r.bytes = o.positive("bytes");
    r.algorithm = o.string("algorithm");
    r.busbw_GBps = o.optional_positive("measured_busbw_GBps");
    r.time_us = o.optional_positive("measured_time_us");
    if (r.busbw_GBps.has_value() == r.time_us.has_value())
      throw o.error("measured_busbw_GBps",
                    "exactly one of measured_busbw_GBps and "
                    "measured_time_us");
    o.string("nccl");
    o.string("source");
    r.fed_constant = o.nullable_string("fed_constant");
    o.optional_string("note");
    r.skip = o.optional_string("skip").value_or("");
    if (r.skip.empty() || o.has("box")) r.box = o.string("box");
    if (auto net = o.optional_object("network")) {
      NetworkSpec n;
      n.nic = net->string("nic");
      n.nics_per_node = static_cast<int>(net->integer("nics_per_node"));
      n.topology = parse_network_topology(*net, "topology");
      net->finish();
      r.network = n;
    }
    if (r.skip.empty() && r.nodes > 1 && !r.network) throw o.error("network", "a network for a multi-node row");
    o.finish();
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string size_text(double bytes) {
  char buf[32];
  if (bytes >= 1073741824.0)
    std::snprintf(buf, sizeof buf, "%g GB", bytes / 1073741824.0);
  else if (bytes >= 1048576.0)
    std::snprintf(buf, sizeof buf, "%g MB", bytes / 1048576.0);
  else if (bytes >= 1024.0)
    std::snprintf(buf, sizeof buf, "%g KB", bytes / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%g B", bytes);
  return buf;
}

}  // namespace

TEST_CASE("collective model vs measured NCCL numbers") {
  const JsonDoc doc =
      JsonDoc::load(std::filesystem::path(STEPCAST_SOURCE_DIR) / "tests" / "data" / "nccl_measured.json");
  const std::vector<MeasuredRow> rows = load_rows(doc);
  REQUIRE(rows.size() >= 40);

  std::string table =
      "| system | shape | op | size | algorithm asked | measured | predicted (algorithm/protocol) "
      "| error | fed a constant |\n|---|---|---|---|---|---:|---:|---:|---|\n";
  int compared = 0;
  int independent = 0;
  int skipped = 0;
  double worst_large = 0;
  double worst_small = 0;
  double worst_large_independent = 0;
  double worst_small_independent = 0;
  for (const MeasuredRow& r : rows) {
    const std::string shape = std::to_string(r.nodes) + "x" + std::to_string(r.gpus_per_node);
    if (!r.skip.empty()) {
      ++skipped;
      table += "| " + r.system + " | " + shape + " | " + std::string(name(r.collective)) + " | " + size_text(r.bytes) +
               " | SKIPPED: " + r.skip + " |\n";
      continue;
    }
    CAPTURE(r.system);
    CAPTURE(shape);
    CAPTURE(r.bytes);
    ClusterSpec cluster;
    cluster.name = r.system;
    cluster.box = r.box;
    cluster.nodes = r.nodes;
    cluster.network = r.network;
    CollectiveCost cost;
    try {
      const Topology topo = Topology::build(cluster);
      const CommFabric fabric = topo.fabric(r.nodes, r.gpus_per_node);
      cost = collective_cost(r.collective, r.bytes, fabric, r.algorithm);
    } catch (const std::exception& e) {
      table += "| " + r.system + " | " + shape + " | " + size_text(r.bytes) + " | ERROR: " + e.what() + " |\n";
      FAIL_CHECK(r.system << " " << shape << ": " << e.what());
      continue;
    }

    const bool large = r.bytes >= 16.0 * 1048576.0;
    const double tolerance = large ? 0.15 : 0.30;
    double measured = 0;
    double predicted = 0;
    std::string unit;
    if (r.busbw_GBps) {
      measured = *r.busbw_GBps;
      predicted = cost.busbw_GBps;
      unit = " GB/s";
    } else {
      measured = *r.time_us;
      predicted = cost.time_s * 1e6;
      unit = " us";
    }
    const double error = predicted / measured - 1.0;
    double& worst = large ? worst_large : worst_small;
    worst = std::max(worst, std::abs(error));
    if (!r.fed_constant) {
      double& worst_independent = large ? worst_large_independent : worst_small_independent;
      worst_independent = std::max(worst_independent, std::abs(error));
      ++independent;
    }
    char line[512];
    std::snprintf(line, sizeof line, "| %s | %s | %s | %s | %s | %.4g%s | %.4g%s (%s/%s) | %+.1f%% | ",
                  r.system.c_str(), shape.c_str(), std::string(name(r.collective)).c_str(), size_text(r.bytes).c_str(),
                  r.algorithm.c_str(), measured, unit.c_str(), predicted, unit.c_str(), cost.algorithm.c_str(),
                  cost.protocol.c_str(), 100.0 * error);
    table += line + r.fed_constant.value_or("no") + " |\n";
    ++compared;
    CHECK_MESSAGE(std::abs(error) <= tolerance, line);
  }
  char summary[400];
  std::snprintf(summary, sizeof summary,
                "%d rows compared, %d skipped; worst |error|: %.1f%% (>= 16 MB), %.1f%% "
                "(small); over the %d rows that fed no constant: %.1f%% (>= 16 MB), %.1f%% "
                "(small)\n",
                compared, skipped, 100.0 * worst_large, 100.0 * worst_small, independent,
                100.0 * worst_large_independent, 100.0 * worst_small_independent);
  table += summary;
  MESSAGE(table);
}
