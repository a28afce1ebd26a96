// Rules that tie a scenario's strategy keys to what the prediction does with them: the
// collectives each strategy declares are the ones its lowering issues, and the overlap
// knobs act on the step.
#include "predict/predict.hpp"
#include "scenario/scenario.hpp"

#include "base/json_input.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

using namespace stepcast;
using nlohmann::json;

namespace {

json good() {
  std::ifstream in(data_dir() / "tests" / "data" / "good" / "minimal.json");
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

Scenario parse(const json& j) { return parse_scenario(j.dump(), "s.json"); }

bool mentions(const std::string& message, const std::string& fragment) {
  return message.find(fragment) != std::string::npos;
}

json two_dgx_a100() {
  return json{{"box", "dgx-a100"},
              {"nodes", 2},
              {"gpus", 16},
              {"network", {{"nic", "eth-100g"}, {"nics_per_node", 1}, {"topology", "single_switch"}}}};
}

}  // namespace

TEST_CASE("collectives_issued names exactly what each strategy's lowering puts in the step") {
  json j = good();
  j["hardware"] = two_dgx_a100();  // so HYBRID_SHARD's across-node all-reduce appears
  for (const std::string& st : strategy_names()) {
    j["strategy"]["name"] = st;
    const Scenario s = parse(j);
    std::set<std::pair<Collective, FabricScope>> lowered;
    for (const CollectiveUse& u : predict(s).collectives) lowered.insert({u.collective, u.level});
    const auto issued = collectives_issued(s.strategy.layout.dp_sharding);
    const std::set<std::pair<Collective, FabricScope>> declared(issued.begin(), issued.end());
    CAPTURE(st);
    CHECK(lowered == declared);
  }
}

TEST_CASE("tp_comm_overlap: with it the step is shorter than with the TP collectives blocking") {
  json j = good();  // gpt2 on one DGX A100
  j["strategy"]["tp"] = 4;
  j["strategy"]["sp"] = true;
  j["strategy"]["tp_comm_overlap"] = true;
  const Prediction overlapped = predict(parse_scenario(j.dump(), "s.json"));
  j["strategy"]["tp_comm_overlap"] = false;
  const Prediction blocking = predict(parse_scenario(j.dump(), "s.json"));
  CHECK(overlapped.step_time_s < blocking.step_time_s);
}

TEST_CASE("overlap_param_gather takes Megatron-Core's buckets: max(40M, 1M x DP) elements") {
  json j = good();  // gpt2 on one DGX A100: 8 DP ranks
  j["strategy"] = json{{"name", "zero1"}, {"overlap_param_gather", true}};
  const Prediction p = predict(parse_scenario(j.dump(), "s.json"));
  bool said = false;
  for (const std::string& a : p.assumptions) said = said || mentions(a, "max(40M, 1M x 8 DP ranks) = 40M elements");
  CHECK(said);
}
