// The gate's summary names each limit crossed and by how much; the JUnit report counts its
// cases and escapes what XML cannot hold as is (tests/junit_check.py parses a real one).
#include "report/gate_report.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace stepcast;
using namespace stepcast::cli;

namespace {

ValidationRow row(const std::string& id, double error_pct, const std::string& trust = "high") {
  ValidationRow r;
  r.id = id;
  r.source = "repo · a&b <table>";
  r.trust = trust;
  r.gpu = "h100-sxm5-80gb";
  r.metric = "tokens_per_s_per_gpu";
  r.measured = 1000;
  r.predicted = 1000 * (1 + error_pct / 100);
  r.error_pct = error_pct;
  r.status = "ok";
  return r;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("the gate's summary: each check ok or FAIL, the figure, the limit and by how much") {
  std::vector<ValidationRow> rows = {row("a", 3), row("b", -9.5), row("c", 30)};
  Gate g;
  g.all.median_abs_error_pct = 8;
  g.all.max_abs_error_pct = 25;
  g.all.min_count = 4;
  const std::string text = gate_text(apply_gate(g, rows), "gate.json");
  CHECK(text.find("Gate (gate.json): FAILED 3 of 3 checks\n") == 0);
  CHECK(text.find("FAIL  all: median |error| 9.50% > 8%, by 1.50 points\n") != std::string::npos);
  CHECK(text.find("FAIL  all: records compared 3 < 4, short by 1\n") != std::string::npos);
  CHECK(text.find("FAIL  all: max |error| 30.00% > 25%, by 5.00 points: 1 of 3 records beyond, worst c\n") !=
        std::string::npos);
  g.all.median_abs_error_pct = 10;
  g.all.max_abs_error_pct = 30;
  g.all.min_count = 3;
  const std::string ok = gate_text(apply_gate(g, rows), "command line");
  CHECK(ok.find("Gate (command line): passed, 3 checks\n") == 0);
  CHECK(ok.find("ok    all: median |error| 9.50% <= 10%\n") != std::string::npos);
  CHECK(ok.find("ok    all: max |error| 30.00% <= 30% (3 records)\n") != std::string::npos);
}

TEST_CASE("JUnit: a case per record, failed beyond its tolerance, skipped with the reason; a gate suite") {
  ValidationRow skip = row("s", 0);
  skip.status = "skipped: tp not stated";
  skip.predicted.reset();
  skip.error_pct.reset();
  const std::vector<ValidationRow> rows = {row("a", 3), row("b", -12), row("low", 40, "low"), skip};
  Gate g;
  g.all.max_abs_error_pct = 10;
  const GateResult verdict = apply_gate(g, rows);
  const std::string xml = validate_junit(rows, &verdict);
  CHECK(xml.find("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"stepcast validate\" tests=\"5\" "
                 "failures=\"2\" errors=\"0\" skipped=\"2\"") == 0);
  CHECK(count(xml, "<testcase ") == 5);
  CHECK(xml.find("classname=\"repo · a&amp;b &lt;table&gt;\" name=\"b\"") != std::string::npos);
  CHECK(xml.find("<failure message=\"|error| 12.0% above the 10% tolerance: predicted 880 tokens/s per GPU, "
                 "measured 1000 tokens/s per GPU\"") != std::string::npos);
  CHECK(xml.find("<skipped message=\"tp not stated\"/>") != std::string::npos);
  CHECK(xml.find("<skipped message=\"low trust: kept out of the summaries and the gate (error +40.0%)\"/>") !=
        std::string::npos);
  CHECK(xml.find("<testsuite name=\"stepcast gate\" tests=\"1\" failures=\"1\"") != std::string::npos);
  // Without a gate: no tolerance, no failure, no gate suite.
  const std::string plain = validate_junit(rows, nullptr);
  CHECK(count(plain, "<failure") == 0);
  CHECK(plain.find("stepcast gate") == std::string::npos);
}

TEST_CASE("XML escaping: the five special characters, and characters XML 1.0 cannot hold") {
  CHECK(xml_escape("a&b<c>\"d'") == "a&amp;b&lt;c&gt;&quot;d&apos;");
  CHECK(xml_escape("x\ty\nz") == "x&#9;y&#10;z");
  CHECK(xml_escape("x\ty\nz", false) == "x\ty\nz");
  CHECK(xml_escape(std::string("a\x01"
                               "b")) ==
        "a\xEF\xBF\xBD"
        "b");
  CHECK(xml_escape("\xEF\xBF\xBF") == "\xEF\xBF\xBD");
  CHECK(xml_escape("h100 · ü") == "h100 · ü");
}
