// Rules of scenario defaults and error reporting: only model, hardware {box or
// cluster, gpus}, strategy and training.micro_batch are required; every other key takes a
// default that the scenario records (Scenario::defaults, printed under Assumptions); every
// problem of a file is reported in one InputError; unknown keys list the allowed keys and
// close names get a "did you mean".
#include "scenario/scenario.hpp"
#include "predict/predict.hpp"
#include "scenario/starter.hpp"

#include "base/json_input.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include <cmath>
#include <string>

using namespace stepcast;
using nlohmann::json;

namespace {

/// The five keys a scenario needs: nothing else.
json five_keys() {
  return json{{"model", "llama-3-8b"},
              {"hardware", {{"box", "dgx-h100"}, {"gpus", 16}}},
              {"strategy", "fsdp_full_shard"},
              {"training", {{"micro_batch", 1}, {"seq_len", 4096}}}};
}

Scenario parse(const json& j, const std::string& file = "dir/five-keys.json") { return parse_scenario(j.dump(), file); }

InputError error_of(const json& j) {
  try {
    parse(j);
  } catch (const InputError& e) {
    return e;
  }
  FAIL("expected an InputError");
  return InputError("", "", "");
}

bool has_default(const Scenario& s, const std::string& start) {
  for (const std::string& d : s.defaults)
    if (d.rfind(start, 0) == 0) return true;
  return false;
}

bool mentions(const std::string& message, const std::string& fragment) {
  return message.find(fragment) != std::string::npos;
}

}  // namespace

TEST_CASE("a scenario of five keys takes every other value by default, each recorded") {
  const Scenario s = parse(five_keys());
  CHECK(s.name == "five-keys");  // the file's stem
  CHECK(s.description.empty());
  CHECK(s.training.precision == Precision::bf16_mixed);  // the H100 has bf16
  CHECK(s.training.optimizer == OptimizerKind::adam_mixed_16);
  CHECK(s.training.grad_accum == 1);
  CHECK(s.training.recompute == Recompute::none);
  CHECK(s.training.flash_attention);  // Hopper is after Ampere
  CHECK(!s.dataset.tokens);
  CHECK(!s.dataset.samples);
  // 16 GPUs in boxes of 8: 2 nodes, on the box's own NICs (8 x ib-ndr) on one switch.
  CHECK(s.hardware.cluster.nodes == 2);
  CHECK(s.hardware.nodes == 2);
  CHECK(s.hardware.gpus_per_node == 8);
  REQUIRE(s.hardware.cluster.network);
  CHECK(s.hardware.cluster.network->nic == find_box("dgx-h100")->nic);
  CHECK(s.hardware.cluster.network->nics_per_node == find_box("dgx-h100")->nics);
  CHECK(s.hardware.cluster.network->topology == NetworkTopology::single_switch);
  CHECK(s.hardware.cluster.network->oversubscription == 1.0);
  for (const char* key :
       {"name:", "hardware.nodes:", "hardware.network:", "no dataset", "training.precision:", "training.optimizer:",
        "training.grad_accum:", "training.recompute:", "training.flash_attention:"})
    CHECK_MESSAGE(has_default(s, key), key);
  CHECK_FALSE(has_default(s, "training.seq_len:"));  // given
}

TEST_CASE("seq_len defaults to the model's own, and precision to fp16 on a GPU without bf16") {
  json j = five_keys();
  j["training"].erase("seq_len");
  j["hardware"] = {{"box", "dgx-1-v100"}, {"gpus", 8}};
  j["model"] = "gpt2";
  const Scenario s = parse(j);
  CHECK(s.training.seq_len == find_model("gpt2")->seq_len);
  CHECK(has_default(s, "training.seq_len: 1024"));
  CHECK(s.training.precision == Precision::fp16_mixed);  // V100: no bf16 arithmetic
  CHECK_FALSE(s.training.flash_attention);               // Volta is before Ampere
  CHECK(s.hardware.cluster.nodes == 1);
  CHECK_FALSE(has_default(s, "hardware.network:"));  // one node needs none
}

TEST_CASE("a given attention kernel implies flash_attention") {
  json j = five_keys();
  j["training"]["attention_kernel"] = "flash3";
  CHECK(parse(j).training.flash_attention);
}

TEST_CASE("kernel_rates defaults to in_step, recorded; isolated turns it off; anything else names the choices") {
  json j = five_keys();
  const Scenario by_default = parse(j);
  CHECK(by_default.training.in_step_rates);
  CHECK(has_default(by_default, "training.kernel_rates: in_step"));
  j["training"]["kernel_rates"] = "isolated";
  const Scenario isolated = parse(j);
  CHECK_FALSE(isolated.training.in_step_rates);
  CHECK_FALSE(has_default(isolated, "training.kernel_rates"));
  j["training"]["kernel_rates"] = "in-step";
  const InputError e = error_of(j);
  CHECK(mentions(e.what(), "/training/kernel_rates"));
  CHECK(mentions(e.what(), "isolated"));
}

TEST_CASE("without a dataset the epoch figures are not a number, never invented") {
  json j = five_keys();
  j["hardware"]["gpus"] = 8;
  j["price_per_gpu_hour_usd"] = 2.0;
  const Prediction p = predict(parse(j));
  CHECK(p.step_time_s > 0);
  CHECK(std::isnan(p.steps_per_epoch));
  CHECK(std::isnan(p.time_per_epoch_s));
  CHECK_FALSE(p.cost_per_epoch_usd.has_value());
  CHECK(p.assumptions.front() == "name: \"five-keys\" (the file's name)");  // the reader's defaults come first
}

TEST_CASE("a box without NICs cannot be joined to another by default") {
  json j = five_keys();
  for (const BoxSpec& box : box_catalog()) {
    if (box.nics > 0) continue;
    j["hardware"] = {{"box", box.name}, {"gpus", 2 * box.gpus}};
    const InputError e = error_of(j);
    CHECK(e.json_path() == "/hardware/network");
    CHECK(mentions(e.what(), "no NICs"));
    return;
  }
  MESSAGE("no catalog box without NICs; nothing to check");
}

TEST_CASE("every problem of a file is reported at once, each with its path") {
  json j = five_keys();
  j["model"] = "llama3-8b";                                    // 1: a catalog name misspelt
  j["hardware"]["box"] = "dgx-h100-80gb";                      // 2: a box name misspelt
  j["training"]["micro_bach"] = j["training"]["micro_batch"];  // 3: a key misspelt (so micro_batch is missing)
  j["training"].erase("micro_batch");
  j["strategy"] = {{"name", "zero3"}, {"prefetch", 2}};  // 4: an unknown key
  j["price_per_gpu_hour"] = 2;                           // 5: an unknown key at the top
  const InputError e = error_of(j);
  std::vector<std::string> paths;
  for (const InputProblem& p : e.problems()) {
    CHECK(p.file == "dir/five-keys.json");
    paths.push_back(p.json_path);
  }
  CHECK(paths == std::vector<std::string>{"/model", "/hardware/box", "/training/micro_batch", "/training/micro_bach",
                                          "/strategy/prefetch", "/price_per_gpu_hour"});
  const std::string all = e.what();
  CHECK(mentions(all, "did you mean \"llama-3-8b\""));
  CHECK(mentions(all, "did you mean \"dgx-h100\""));
  CHECK(mentions(all, "did you mean \"micro_batch\""));
  CHECK(mentions(all, "did you mean \"prefetch_layers\""));
  CHECK(mentions(all, "did you mean \"price_per_gpu_hour_usd\""));
}

TEST_CASE("an unknown key's message lists every allowed key, optional ones included") {
  json j = five_keys();
  j["colour"] = "blue";
  const InputError e = error_of(j);
  REQUIRE(e.problems().size() == 1);
  for (const char* key : {"\"name\"", "\"description\"", "\"dataset\"", "\"price_per_gpu_hour_usd\"", "\"measured\"",
                          "\"notes\"", "\"model\"", "\"hardware\"", "\"training\"", "\"strategy\""})
    CHECK_MESSAGE(mentions(e.what(), key), key);
  CHECK_FALSE(mentions(e.what(), "did you mean"));
}

TEST_CASE("required keys missing are each named") {
  const InputError e = error_of(json::object());
  std::vector<std::string> paths;
  for (const InputProblem& p : e.problems()) paths.push_back(p.json_path);
  CHECK(paths == std::vector<std::string>{"/model", "/hardware", "/training", "/strategy"});
}

TEST_CASE("a box and a cluster together, or a cluster with nodes, are refused") {
  json j = five_keys();
  j["hardware"]["cluster"] = cluster_catalog().front().name;
  CHECK(error_of(j).json_path() == "/hardware");
  j["hardware"].erase("box");
  j["hardware"]["nodes"] = 2;
  CHECK(error_of(j).json_path() == "/hardware/nodes");
}

TEST_CASE("the starter scenario of `stepcast init` parses and predicts as written") {
  const std::string text = starter_scenario({"llama-3-8b", "dgx-h100", 16});
  const json j = json::parse(text);
  CHECK(j.size() == 5);  // model, hardware, strategy, training, notes
  CHECK(j["training"].size() == 2);
  const Scenario s = parse_scenario(text, "starter.json");
  CHECK(s.hardware.gpus() == 16);
  CHECK(s.training.seq_len == find_model("llama-3-8b")->seq_len);
  CHECK(predict(s).step_time_s > 0);
  // One box by default; names checked with a hint.
  CHECK(parse_scenario(starter_scenario({"gpt2", "dgx-a100", 0}), "s.json").hardware.gpus() == 8);
  CHECK_THROWS_WITH_AS(starter_scenario({"llama3-8b", "dgx-h100", 0}), doctest::Contains("did you mean \"llama-3-8b\""),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(starter_scenario({"gpt2", "dgx-h100-80gb", 0}), doctest::Contains("did you mean \"dgx-h100\""),
                       std::invalid_argument);
  CHECK_THROWS_AS(starter_scenario({"gpt2", "dgx-h100", 12}), std::invalid_argument);  // not whole boxes
}

TEST_CASE("more GPUs than one box on a scenario without a network take the box's own NICs") {
  json j = five_keys();
  j["hardware"]["gpus"] = 8;  // one node: no network
  const Scenario one = parse(j);
  REQUIRE_FALSE(one.hardware.cluster.network);
  const Scenario two = with_gpus(one, 16);
  REQUIRE(two.hardware.cluster.network);
  CHECK(two.hardware.nodes == 2);
  CHECK(two.hardware.cluster.network->nics_per_node == find_box("dgx-h100")->nics);
  CHECK(has_default(two, "hardware.network:"));
  CHECK(predict(two).step_time_s > 0);
}

TEST_CASE("a scenario without a price takes its box's catalog price, said with its date and source; its own wins") {
  json j = five_keys();
  j["hardware"] = {{"box", "aws-p5"}, {"gpus", 8}};
  const Scenario s = parse(j);
  REQUIRE(s.price_per_gpu_hour_usd.has_value());
  CHECK(*s.price_per_gpu_hour_usd == doctest::Approx(98.32 / 8));
  CHECK(std::any_of(s.defaults.begin(), s.defaults.end(), [](const std::string& d) {
    return d.rfind("price_per_gpu_hour_usd: 12.29 USD, aws-p5's on-demand list price of 2023-07 to 2025-06", 0) == 0;
  }));
  j["price_per_gpu_hour_usd"] = 2.0;
  CHECK(*parse(j).price_per_gpu_hour_usd == 2.0);
  j.erase("price_per_gpu_hour_usd");
  j["hardware"] = {{"box", "dgx-b200"}, {"gpus", 8}};  // no price in the catalog: none
  CHECK_FALSE(parse(j).price_per_gpu_hour_usd.has_value());
}
