// The gate of `stepcast validate`: its file read strictly, each limit checked on its own
// population, a record's tolerance its source's, else its GPU's, else the overall one.
#include "validate/gate.hpp"

#include "base/json_input.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace stepcast;

namespace {

// GCC 12 reports a false -Wrestrict on short string assignments here (GCC bug 105651).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

ValidationRow row(const std::string& id, double error_pct, const std::string& source = "s",
                  const std::string& gpu = "h100-sxm5-80gb", const std::string& trust = "high") {
  ValidationRow r;
  r.id = id;
  r.source = source;
  r.trust = trust;
  r.strategy = "ddp";
  r.gpu = gpu;
  r.metric = "step_time_s";
  r.measured = 1;
  r.predicted = 1 + error_pct / 100;
  r.error_pct = error_pct;
  r.status = "ok";
  r.model = "m";
  return r;
}

ValidationRow skipped(const std::string& id, const std::string& source = "s") {
  ValidationRow r = row(id, 0, source);
  r.predicted.reset();
  r.error_pct.reset();
  r.status = "skipped: tp not stated";
  return r;
}

const GateCheck& check(const GateResult& g, const std::string& group, const std::string& key) {
  for (const GateCheck& c : g.checks)
    if (c.group == group && c.key == key) return c;
  FAIL("no check ", group, " ", key);
  static GateCheck none;
  return none;
}

std::string problems(const InputError& e) {
  std::string out;
  for (const InputProblem& p : e.problems()) out += p.line() + "\n";
  return out;
}

}  // namespace

TEST_CASE("a gate file: every key optional, groups per source and GPU, read strictly") {
  const Gate g = parse_gate(R"({"about": "x", "median_abs_error_pct": 8, "p90_abs_error_pct": 20,
      "max_abs_error_pct": 35, "ordering_accuracy": 0.8, "min_count": 3, "min_compared_fraction": 0.5,
      "sources": {"a": {"max_abs_error_pct": 50}}, "gpus": {"h100-sxm5-80gb": {"median_abs_error_pct": 5}}})",
                            "gate.json");
  CHECK(*g.all.median_abs_error_pct == 8);
  CHECK(*g.all.ordering_accuracy == doctest::Approx(0.8));
  CHECK(*g.all.min_count == 3);
  CHECK(*g.sources.at("a").max_abs_error_pct == 50);
  CHECK(*g.gpus.at("h100-sxm5-80gb").median_abs_error_pct == 5);
  CHECK(parse_gate("{}", "empty.json").empty());

  // Every problem at once, each with the file and the JSON path.
  try {
    parse_gate(R"({"median_error": 8, "p90_abs_error_pct": -1, "ordering_accuracy": 83,
                   "sources": {"a": {"min_count": 1.5}}, "gpus": []})",
               "bad.json");
    FAIL("a bad gate file was read");
  } catch (const InputError& e) {
    const std::string all = problems(e);
    CHECK(all.find("bad.json: /median_error: unknown key") != std::string::npos);
    CHECK(all.find("bad.json: /p90_abs_error_pct:") != std::string::npos);
    CHECK(all.find("bad.json: /ordering_accuracy:") != std::string::npos);
    CHECK(all.find("bad.json: /sources/a/min_count:") != std::string::npos);
    CHECK(all.find("bad.json: /gpus:") != std::string::npos);
  }
  CHECK_THROWS_AS(parse_gate("[1]", "array.json"), InputError);
  CHECK_THROWS_AS(parse_gate("{\"median_abs_error_pct\": 8", "cut.json"), InputError);
}

TEST_CASE("a source or GPU of the gate that no record has is bad input, with a did-you-mean") {
  MeasuredRun a;
  a.source = "mosaicml/llm-foundry · README.md";
  a.gpu = "h100-sxm5-80gb";
  const Gate g = parse_gate(R"({"gpus": {"h100-sxm5-80g": {"median_abs_error_pct": 5}}})", "g.json");
  try {
    check_gate_groups(g, {a}, "g.json");
    FAIL("an unknown GPU group was accepted");
  } catch (const InputError& e) {
    CHECK(e.file() == "g.json");
    CHECK(e.json_path() == "/gpus/h100-sxm5-80g");
    CHECK(problems(e).find("did you mean \"h100-sxm5-80gb\"") != std::string::npos);
  }
  CHECK_NOTHROW(check_gate_groups(parse_gate(R"({"sources": {"mosaicml/llm-foundry · README.md": {}}})", "g.json"), {a},
                                  "g.json"));
}

TEST_CASE("summary limits: below passes, above fails by the difference; low-trust rows are left out") {
  const std::vector<ValidationRow> rows = {row("a", 2), row("b", -4), row("c", 6), row("d", 90, "s", "x", "low"),
                                           skipped("e")};
  Gate g;
  g.all.median_abs_error_pct = 4;  // median of 2, 4, 6: 4 (the low-trust 90 left out)
  g.all.p90_abs_error_pct = 5;     // p90: 5.6
  g.all.min_count = 3;
  g.all.min_compared_fraction = 0.75;  // 3 of 4 trusted
  const GateResult r = apply_gate(g, rows);
  CHECK(check(r, "all", "median_abs_error_pct").passed);
  const GateCheck& p90 = check(r, "all", "p90_abs_error_pct");
  CHECK_FALSE(p90.passed);
  CHECK(p90.value == doctest::Approx(5.6));
  CHECK(p90.excess() == doctest::Approx(0.6));
  CHECK(check(r, "all", "min_count").passed);
  CHECK(check(r, "all", "min_compared_fraction").passed);
  CHECK(r.failed() == 1);
  CHECK_FALSE(r.passed());

  g.all.p90_abs_error_pct = 6;
  g.all.min_compared_fraction = 0.8;
  const GateResult r2 = apply_gate(g, rows);
  const GateCheck& share = check(r2, "all", "min_compared_fraction");
  CHECK_FALSE(share.passed);
  CHECK(share.excess() == doctest::Approx(0.05));
  g.all.min_compared_fraction.reset();
  CHECK(apply_gate(g, rows).passed());
}

TEST_CASE("a record's tolerance is its source's, else its GPU's, else the overall one; one check each") {
  const std::vector<ValidationRow> rows = {row("a", 10, "s", "g"), row("b", -30, "loose", "g"),
                                           row("c", 12, "t", "h"), row("d", 50, "t", "h", "low"),
                                           row("e", 8, "t", "g"),  skipped("f", "t")};
  Gate g;
  g.all.max_abs_error_pct = 11;
  g.sources["loose"].max_abs_error_pct = 40;
  g.gpus["h"].max_abs_error_pct = 5;
  const GateResult r = apply_gate(g, rows);
  REQUIRE(r.tolerance_pct.size() == rows.size());
  CHECK(*r.tolerance_pct[0] == 11);
  CHECK(*r.tolerance_pct[1] == 40);
  CHECK(*r.tolerance_pct[2] == 5);
  CHECK_FALSE(r.tolerance_pct[3]);  // low trust: not gated
  CHECK(*r.tolerance_pct[4] == 11);
  CHECK_FALSE(r.tolerance_pct[5]);  // skipped
  const GateCheck& all = check(r, "all", "max_abs_error_pct");
  CHECK(all.passed);
  CHECK(all.records == 2);
  CHECK(all.value == doctest::Approx(10));
  CHECK(check(r, "source: loose", "max_abs_error_pct").passed);
  const GateCheck& h = check(r, "gpu: h", "max_abs_error_pct");
  CHECK_FALSE(h.passed);
  CHECK(h.beyond == 1);
  CHECK(h.worst == "c");
  CHECK(h.excess() == doctest::Approx(7));
  // Overall first, then sources, then GPUs.
  CHECK(r.checks.front().group == "all");
  CHECK(r.checks.back().group == "gpu: h");
}

TEST_CASE("ordering accuracy is a lower bound on the population's own pairs") {
  std::vector<ValidationRow> rows = {row("a", 0), row("b", 0)};
  rows[0].gpus = 8;
  rows[1].gpus = 16;
  rows[1].measured = 2;  // b measured above a, predicted below it
  rows[1].predicted = 0.5;
  rows[1].error_pct = -75;
  Gate g;
  g.all.ordering_accuracy = 0.5;
  const GateResult result = apply_gate(g, rows);
  const GateCheck& c = check(result, "all", "ordering_accuracy");
  CHECK_FALSE(c.passed);
  CHECK(c.value == 0);
  CHECK(c.excess() == doctest::Approx(0.5));
}
