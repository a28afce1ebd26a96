// Rules of the scenario schema: declared once, it is what the reader takes (each object's
// keys, each number's range) and what --help, `init`'s notes and docs/scenario.md print.
#include "scenario/schema.hpp"

#include "scenario/scenario.hpp"
#include "scenario/starter.hpp"

#include "base/json_input.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace stepcast;
using nlohmann::json;

namespace {

json minimal() {
  std::ifstream in(data_dir() / "tests" / "data" / "good" / "minimal.json");
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

/// The keys an unknown-key error lists as allowed at `pointer` (the object at that JSON
/// pointer gets one key more, "zz_unknown").
std::set<std::string> allowed_at(json j, const std::string& pointer) {
  j[json::json_pointer(pointer)]["zz_unknown"] = 1;
  try {
    parse_scenario(j.dump(), "s.json");
  } catch (const InputError& e) {
    const std::string what = e.what();
    const std::string tag = "(allowed keys here: ";
    const auto at = what.find(tag);
    REQUIRE(at != std::string::npos);
    std::set<std::string> out;
    std::string list = what.substr(at + tag.size(), what.find(')', at) - at - tag.size());
    for (std::size_t q = list.find('"'); q != std::string::npos; q = list.find('"', list.find('"', q + 1) + 1))
      out.insert(list.substr(q + 1, list.find('"', q + 1) - q - 1));
    return out;
  }
  FAIL("an unknown key at " << pointer << " was accepted");
  return {};
}

std::set<std::string> declared(const std::string& object_path) {
  const std::vector<std::string> keys = scenario_schema().children(object_path);
  return {keys.begin(), keys.end()};
}

}  // namespace

TEST_CASE("each object the reader reads allows exactly the keys the schema declares for it") {
  json j = minimal();
  j["training"]["lora"] = {{"rank", 8}, {"targets", {"q", "v"}}};
  j["hardware"]["stragglers"] =
      json::array({{{"name", "slow"}, {"nodes", 1}, {"compute_speed", 0.5}, {"link_speed", 1.0}}});
  j["hardware"]["nodes"] = 2;
  j["hardware"]["gpus"] = 16;
  j["measured"] = {{"source", "test"}, {"step_time_s", 1.0}};
  for (const auto& at :
       std::vector<std::pair<std::string, std::string>>{{"", ""},
                                                        {"/training", "/training"},
                                                        {"/training/lora", "/training/lora"},
                                                        {"/strategy", "/strategy"},
                                                        {"/hardware", "/hardware"},
                                                        {"/hardware/stragglers/0", "/hardware/stragglers/*"},
                                                        {"/dataset", "/dataset"},
                                                        {"/measured", "/measured"}}) {
    const std::string& pointer = at.first;  // no structured binding: doctest's CAPTURE is a lambda
    CAPTURE(pointer);
    CHECK(allowed_at(j, pointer) == declared(at.second));
  }
}

TEST_CASE("one edited schema entry changes the reader, --help, init's notes and docs/scenario.md") {
  Schema edited = scenario_schema();
  SchemaKey& micro = edited.key("/training/micro_batch");
  micro.max = 4;
  micro.help = "EDITED sequences per GPU";
  SchemaKey& accum = edited.key("/training/grad_accum");
  accum.default_text = "1 EDITED";

  json j = minimal();  // micro_batch 8
  CHECK_NOTHROW(parse_scenario(j.dump(), "s.json", {}, scenario_schema()));
  CHECK_THROWS_WITH_AS(parse_scenario(j.dump(), "s.json", {}, edited),
                       doctest::Contains("/training/micro_batch: expected an integer in 1..4"), InputError);
  CHECK(schema_help(edited).find("integer 1..4, required: EDITED sequences per GPU") != std::string::npos);
  CHECK(schema_markdown(edited).find(
            "| `training.micro_batch` | integer | 1..4 | required | EDITED sequences per GPU |") != std::string::npos);
  const std::vector<std::string> notes = schema_default_notes(edited);
  CHECK(std::find(notes.begin(), notes.end(), "training.grad_accum: 1 EDITED") != notes.end());
  CHECK(schema_help(edited).find("integer 1..1048576, default 1 EDITED: micro-steps") != std::string::npos);
}

TEST_CASE("init's starter carries a note for every optional key of the schema") {
  const json starter = json::parse(starter_scenario({"gpt2", "dgx-a100", 0}));
  std::set<std::string> notes(starter["notes"].begin(), starter["notes"].end());
  for (const std::string& note : schema_default_notes(scenario_schema())) CHECK(notes.count(note) == 1);
}

TEST_CASE("schema paths: one entry per path, each object declared before its keys, indices as *") {
  std::set<std::string> seen;
  for (const SchemaKey& k : scenario_schema().keys()) {
    CAPTURE(k.path);
    CHECK(seen.insert(k.path).second);
    const auto slash = k.path.rfind('/');
    if (slash > 0) {
      std::string parent = k.path.substr(0, slash);
      if (parent.size() > 2 && parent.substr(parent.size() - 2) == "/*") parent.resize(parent.size() - 2);
      CHECK(seen.count(parent) == 1);
    }
    CHECK(k.required == k.default_text.empty());
    CHECK_FALSE(k.help.empty());
  }
  CHECK(schema_path("/hardware/stragglers/12/nodes") == "/hardware/stragglers/*/nodes");
  CHECK(schema_path("") == "");
  CHECK_THROWS_AS(scenario_schema().key("/training/micro_bach"), std::logic_error);
}
