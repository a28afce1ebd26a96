/// \file
/// The gate's summary and the JUnit XML report of `stepcast validate` (report/gate_report.hpp).
#include "report/gate_report.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace stepcast::cli {

namespace {

/// A check's figure and limit in their unit: "4.00%" / "4.1%", "83.3%" / "83%", "167" / "167".
std::string shown(const GateCheck& c, double v, bool limit) {
  if (c.key == "min_count") return fmt::format("{:.0f}", v);
  if (c.key == "ordering_accuracy" || c.key == "min_compared_fraction") v *= 100;
  return limit ? fmt::format("{:g}%", v) : fmt::format("{:.2f}%", v);
}

std::string check_line(const GateCheck& c) {
  std::string line =
      fmt::format("{}: {} {} {} {}", c.group, c.figure, shown(c, c.value, false),
                  c.passed ? (c.at_most ? "<=" : ">=") : (c.at_most ? ">" : "<"), shown(c, c.limit, true));
  if (!c.passed) {
    const double by = c.key == "ordering_accuracy" || c.key == "min_compared_fraction" ? 100 * c.excess() : c.excess();
    line += c.key == "min_count" ? fmt::format(", short by {:.0f}", by) : fmt::format(", by {:.2f} points", by);
  }
  if (c.key == "max_abs_error_pct") {
    line += c.passed ? fmt::format(" ({} records)", c.records)
                     : fmt::format(": {} of {} records beyond, worst {}", c.beyond, c.records, c.worst);
  }
  return line;
}

/// The metric's unit as validate's text prints it.
std::string unit_of(const std::string& metric) {
  static const std::map<std::string, std::string> units = {{"tokens_per_s_per_gpu", " tokens/s per GPU"},
                                                           {"step_time_s", " s"},
                                                           {"tflops_per_gpu", " TFLOP/s per GPU"},
                                                           {"samples_per_s_global", " samples/s"},
                                                           {"mfu", " (fraction)"}};
  const auto it = units.find(metric);
  return it == units.end() ? "" : it->second;
}

struct Case {
  std::string name;
  std::string classname;
  std::string failure;  ///< message; empty: none
  std::string failure_type = "tolerance";
  std::string failure_text;
  std::string skipped;  ///< reason; empty: not skipped
  bool is_skipped = false;
};

struct Suite {
  std::string name;
  std::vector<Case> cases;
  int failures() const {
    int n = 0;
    for (const Case& c : cases) n += c.failure.empty() ? 0 : 1;
    return n;
  }
  int skipped() const {
    int n = 0;
    for (const Case& c : cases) n += c.is_skipped ? 1 : 0;
    return n;
  }
};

Case record_case(const ValidationRow& r, const std::optional<double>& tolerance) {
  Case c;
  c.name = r.id;
  c.classname = r.source;
  const std::string unit = unit_of(r.metric);
  if (r.status != "ok") {
    c.is_skipped = true;
    c.skipped = r.status.rfind("skipped: ", 0) == 0 ? r.status.substr(9) : r.status;
  } else if (r.trust == "low") {
    c.is_skipped = true;
    c.skipped = fmt::format("low trust: kept out of the summaries and the gate (error {:+.1f}%)", *r.error_pct);
  } else if (tolerance && std::abs(*r.error_pct) > *tolerance) {
    c.failure = fmt::format("|error| {:.1f}% above the {:g}% tolerance: predicted {:.4g}{}, measured {:.4g}{}",
                            std::abs(*r.error_pct), *tolerance, *r.predicted, unit, r.measured, unit);
    c.failure_text = fmt::format("metric: {}\npredicted: {}\nmeasured: {}\nerror: {:+.2f}%\ntolerance: {:g}%\n",
                                 r.metric, *r.predicted, r.measured, *r.error_pct, *tolerance);
  }
  return c;
}

void write_suite(std::string& out, const Suite& s) {
  out += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"0\">\n",
                     xml_escape(s.name), s.cases.size(), s.failures(), s.skipped());
  for (const Case& c : s.cases) {
    out += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"0\"", xml_escape(c.classname),
                       xml_escape(c.name));
    if (c.failure.empty() && !c.is_skipped) {
      out += "/>\n";
      continue;
    }
    out += ">\n";
    if (!c.failure.empty())
      out += fmt::format("      <failure message=\"{}\" type=\"{}\">{}</failure>\n", xml_escape(c.failure),
                         c.failure_type, xml_escape(c.failure_text, false));
    if (c.is_skipped) out += fmt::format("      <skipped message=\"{}\"/>\n", xml_escape(c.skipped));
    out += "    </testcase>\n";
  }
  out += "  </testsuite>\n";
}

}  // namespace

std::string gate_text(const GateResult& result, const std::string& from) {
  const int n = static_cast<int>(result.checks.size());
  std::string out = result.passed() ? fmt::format("Gate ({}): passed, {} check{}\n", from, n, n == 1 ? "" : "s")
                                    : fmt::format("Gate ({}): FAILED {} of {} checks\n", from, result.failed(), n);
  for (const GateCheck& c : result.checks) out += fmt::format("  {:<4}  {}\n", c.passed ? "ok" : "FAIL", check_line(c));
  return out;
}

std::string xml_escape(const std::string& text, bool attribute) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == 0xEF && i + 2 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0xBF &&
        (static_cast<unsigned char>(text[i + 2]) == 0xBE || static_cast<unsigned char>(text[i + 2]) == 0xBF)) {
      out += "\xEF\xBF\xBD";  // U+FFFE, U+FFFF: not XML characters
      i += 2;
      continue;
    }
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      case '\t':
        out += attribute ? "&#9;" : "\t";
        break;
      case '\n':
        out += attribute ? "&#10;" : "\n";
        break;
      case '\r':
        out += "&#13;";
        break;
      default:
        out += c < 0x20 || c == 0x7F ? std::string("\xEF\xBF\xBD") : std::string(1, text[i]);
    }
  }
  return out;
}

std::string validate_junit(const std::vector<ValidationRow>& rows, const GateResult* gate) {
  std::vector<Suite> suites;
  std::map<std::string, std::size_t> by_source;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const ValidationRow& r = rows[i];
    auto [it, fresh] = by_source.try_emplace(r.source, suites.size());
    if (fresh) suites.push_back({r.source, {}});
    suites[it->second].cases.push_back(record_case(r, gate ? gate->tolerance_pct[i] : std::nullopt));
  }
  if (gate) {
    Suite g{"stepcast gate", {}};
    for (const GateCheck& c : gate->checks) {
      Case k;
      k.classname = "stepcast gate";
      k.name = fmt::format("{}: {} {} {}", c.group, c.key, c.at_most ? "<=" : ">=", shown(c, c.limit, true));
      if (!c.passed) {
        k.failure_type = "gate";
        k.failure = check_line(c);
        k.failure_text = k.failure + "\n";
      }
      g.cases.push_back(std::move(k));
    }
    suites.push_back(std::move(g));
  }
  std::size_t tests = 0;
  int failures = 0, skipped = 0;
  for (const Suite& s : suites) {
    tests += s.cases.size();
    failures += s.failures();
    skipped += s.skipped();
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<testsuites name=\"stepcast validate\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"0\">\n",
      tests, failures, skipped);
  for (const Suite& s : suites) write_suite(out, s);
  out += "</testsuites>\n";
  return out;
}

}  // namespace stepcast::cli
