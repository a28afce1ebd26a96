#include "validate/collectives.hpp"

#include "base/json_input.hpp"
#include "validate/validation.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <string>

using namespace stepcast;
using nlohmann::json;

namespace {

/// A valid collective record: an all-reduce of 8 GiB on two DGX H100 over 8 NDR NICs.
json collective_record() {
  return json::parse(R"({"id": "c1", "source": {"type": "issue", "url": "https://example.org/1"}, "trust": "high",
    "system": "two DGX H100",
    "hardware": {"gpu": "h100-sxm5-80gb", "box": "dgx-h100", "nodes": 2, "gpus_per_node": 8,
                 "network": {"nic": "ib-ndr", "nics_per_node": 8, "topology": "single_switch"}},
    "collective": {"op": "all_reduce", "bytes": 8589934592, "algorithm": "auto", "nccl": "2.26.2"},
    "measured": {"metric": "busbw_GBps", "value": 466.7, "definition": "nccl-tests busbw"},
    "fed_constant": null, "unmodelled": null, "notes": ""})");
}

ValidationRow row_of(const json& record) { return validate_run(parse_measured_run(record.dump(), "c.jsonl", 1)); }

}  // namespace

TEST_CASE("a collective record is predicted by the collective model with its node count and chosen algorithm") {
  const ValidationRow row = row_of(collective_record());
  REQUIRE(row.status == "ok");
  REQUIRE(row.collective);
  CHECK(row.collective->nodes == 2);
  CHECK(row.gpus == 16);
  CHECK(row.collective->network == "ib-ndr");
  CHECK(!row.collective->chosen.empty());
  CHECK(row.model == "all_reduce 8 GiB");
  CHECK(*row.predicted > 300.0);  // 8 NDR NICs per node: hundreds of GB/s of bus bandwidth
  CHECK(*row.predicted < 700.0);
}

TEST_CASE("a collective record's unknown key, metric or algorithm is an InputError naming its path") {
  json r = collective_record();
  r["collective"]["byte"] = 1;
  CHECK_THROWS_WITH_AS(row_of(r), doctest::Contains("/collective/byte"), InputError);
  r = collective_record();
  r["measured"]["metric"] = "busbw";
  CHECK_THROWS_WITH_AS(row_of(r), doctest::Contains("/measured/metric"), InputError);
  r = collective_record();
  r["collective"]["algorithm"] = "pat";
  CHECK_THROWS_WITH_AS(row_of(r), doctest::Contains("/collective/algorithm"), InputError);
}

TEST_CASE("a collective record whose GPU is not its box's is an InputError; a box outside the catalog a skip") {
  json r = collective_record();
  r["hardware"]["gpu"] = "a100-sxm4-80gb";
  CHECK_THROWS_WITH_AS(row_of(r), doctest::Contains("/hardware/gpu"), InputError);
  r = collective_record();
  r["hardware"]["box"] = "no-such-box";
  CHECK(row_of(r).status.rfind("skipped: box \"no-such-box\"", 0) == 0);
  r = collective_record();
  r["hardware"]["box"] = nullptr;
  CHECK_THROWS_WITH_AS(row_of(r), doctest::Contains("/unmodelled"), InputError);
  r["unmodelled"] = "a transport the catalog lacks";
  CHECK(row_of(r).status == "skipped: a transport the catalog lacks");
}

TEST_CASE("a collective record without a network takes the box's default network and says so") {
  json r = collective_record();
  r["hardware"]["network"] = nullptr;
  r["hardware"]["nodes"] = 64;  // beyond one leaf group: the rail fat tree
  const ValidationRow row = row_of(r);
  REQUIRE(row.status == "ok");
  REQUIRE(!row.assumptions.empty());
  CHECK(row.assumptions.front().find("fat tree") != std::string::npos);
}

TEST_CASE("collective rows have their own summary; the training summary and memory summary leave them out") {
  json fed = collective_record();
  fed["id"] = "c2";
  fed["fed_constant"] = "ib-ndr rate";
  const std::vector<ValidationRow> rows = {row_of(collective_record()), row_of(fed)};
  CHECK(summarize(rows).front().count == 0);
  CHECK(summarize_memory(rows).front().predicted == 0);
  const std::vector<ErrorSummary> coll = summarize_collectives(rows);
  CHECK(coll.front().count == 1);  // the row that fed a constant is kept out
  CHECK(coll.front().group == "all");
  CHECK(coll[1].group == "nodes: 2-15");
}

TEST_CASE("a collective record is no training run: scenario_for skips it") {
  const RunScenario s = scenario_for(parse_measured_run(collective_record().dump(), "c.jsonl", 1));
  CHECK(!s.scenario);
  CHECK(s.skip_reason.find("collective") != std::string::npos);
}

TEST_CASE("a collective record beyond the cluster bounds is an InputError; a NIC-less box over nodes a skip") {
  json r = collective_record();
  r["hardware"]["nodes"] = 1 << 20;
  CHECK_THROWS_WITH_AS(row_of(r), doctest::Contains("/hardware/nodes"), InputError);
  r = collective_record();
  r["hardware"]["network"]["nics_per_node"] = 33;  // 4 per GPU at most
  CHECK_THROWS_WITH_AS(row_of(r), doctest::Contains("/hardware/network/nics_per_node"), InputError);
  r = collective_record();
  r["hardware"]["gpu"] = "rtx-4090-24gb";
  r["hardware"]["box"] = "rtx4090-pcie-8x";
  r["hardware"]["network"] = nullptr;
  CHECK(row_of(r).status.find("has no NICs") != std::string::npos);
}
