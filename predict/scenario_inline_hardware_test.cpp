// Rules of hardware given inline in a scenario: a box, its GPU and its link kinds, and a
// network's NIC, each an object in the built-in catalog's format where a catalog name is
// expected; read strictly (errors name the file and the JSON path inside the inline
// object) and added to the catalog under its own name, which must not name a different
// entry.
#include "predict/predict.hpp"
#include "scenario/scenario.hpp"

#include "base/json_input.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <string>

using namespace stepcast;
using nlohmann::json;

namespace {

json gpu(const std::string& name, double bw_GBps = 3000) {
  return json{{"name", name},
              {"display_name", "Inline GPU"},
              {"arch", "hopper"},
              {"sm_count", 100},
              {"peak_tflops", {{"fp32", 50}, {"tf32", 400}, {"fp16", 800}, {"bf16", 800}, {"fp8", 1600}}},
              {"memory_GiB", 96},
              {"memory_bw_GBps", bw_GBps},
              {"nvlink_gen", 0},
              {"nvlink_links", 0},
              {"nvlink_GBps_per_link", 0},
              {"pcie_gen", 5},
              {"pcie_lanes", 16},
              {"source", "test"}};
}

json nic(const std::string& name, double Gbps) {
  return json{{"name", name},    {"class", "network"}, {"line_rate_Gbps", Gbps}, {"effective_Gbps", Gbps * 0.9},
              {"latency_us", 0}, {"nvls", false},      {"source", "test"}};
}

json box(const std::string& name, const json& gpu_value) {
  return json{{"name", name},       {"display_name", "Inline box"},
              {"gpu", gpu_value},   {"gpus", 4},
              {"fabric", "pcie"},   {"pcie", "pcie5-x16"},
              {"pcie_switches", 0}, {"cpus", 1},
              {"p2p", true},        {"nic", nic("inline-nic-100g", 100)},
              {"nics", 1},          {"source", "test"}};
}

json scenario(const json& hardware) {
  return json{{"model", "gpt2"},
              {"training", {{"micro_batch", 4}, {"seq_len", 1024}}},
              {"strategy", "ddp"},
              {"hardware", hardware}};
}

std::string error_of(const json& j) {
  try {
    parse_scenario(j.dump(), "s.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("an inline box with an inline GPU and NIC predicts, and its network may bring an inline 150 Gb/s NIC") {
  const json hw{{"box", box("inline-box-a", gpu("inline-gpu-a"))},
                {"gpus", 8},
                {"network", {{"nic", nic("inline-150g", 150)}, {"nics_per_node", 1}, {"topology", "single_switch"}}}};
  const Scenario s = parse_scenario(scenario(hw).dump(), "s.json");
  CHECK(s.hardware.cluster.box == "inline-box-a");
  CHECK(s.hardware.nodes == 2);
  REQUIRE(s.hardware.cluster.network.has_value());
  CHECK(s.hardware.cluster.network->nic == "inline-150g");
  CHECK(find_link("inline-150g")->line_rate_GBps == 150.0 / 8);
  CHECK(find_gpu("inline-gpu-a")->memory_bw_GBps == 3000);
  const Prediction p = predict(s);
  CHECK(p.step_time_s > 0);
  // The same file again: the entries are equal to those already added, so it reads the same.
  CHECK(parse_scenario(scenario(hw).dump(), "s.json").hardware.cluster.box == "inline-box-a");
}

TEST_CASE("an inline entry whose name is taken by a different entry is refused at its path") {
  // A GPU named like a catalog GPU but with other numbers.
  std::string what = error_of(scenario({{"box", box("inline-box-b", gpu("h100-sxm5-80gb"))}, {"gpus", 4}}));
  CHECK_MESSAGE(what.find("/hardware/box/gpu") != std::string::npos, what);
  CHECK_MESSAGE(what.find("differs from the catalog's GPU") != std::string::npos, what);
  // A box named like a catalog box.
  what = error_of(scenario({{"box", box("dgx-h100", "h100-sxm5-80gb")}, {"gpus", 4}}));
  CHECK_MESSAGE(what.find("/hardware/box") != std::string::npos, what);
  CHECK_MESSAGE(what.find("differs from the catalog's box") != std::string::npos, what);
}

TEST_CASE("inline hardware is strict: a misspelt key names its path inside the inline object, with a did-you-mean") {
  json g = gpu("inline-gpu-c");
  g["memory_bw_GBs"] = 1;
  std::string what = error_of(scenario({{"box", box("inline-box-c", g)}, {"gpus", 4}}));
  CHECK_MESSAGE(what.find("s.json") != std::string::npos, what);
  CHECK_MESSAGE(what.find("/hardware/box/gpu/memory_bw_GBs") != std::string::npos, what);
  CHECK_MESSAGE(what.find("memory_bw_GBps") != std::string::npos, what);
  json n = nic("inline-nic-d", 150);
  n.erase("effective_Gbps");
  what = error_of(scenario({{"box", "dgx-h100"},
                            {"gpus", 16},
                            {"network", {{"nic", n}, {"nics_per_node", 8}, {"topology", "single_switch"}}}}));
  CHECK_MESSAGE(what.find("/hardware/network/nic/effective_GBps") != std::string::npos, what);
}
