/// \file
/// The gate of `stepcast validate` (validate/gate.hpp): reading a gate file and checking
/// the summaries and records against it.
#include "validate/gate.hpp"

#include "base/json_input.hpp"
#include "base/suggest.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace stepcast {

namespace {

/// A percentage of |error| can be any size (a 1000% miss is a miss), not negative.
constexpr double kMaxPct = 1e9;

GateLimits read_limits(JsonObject& o) {
  GateLimits l;
  l.median_abs_error_pct = o.optional_non_negative("median_abs_error_pct", kMaxPct);
  l.p90_abs_error_pct = o.optional_non_negative("p90_abs_error_pct", kMaxPct);
  l.max_abs_error_pct = o.optional_non_negative("max_abs_error_pct", kMaxPct);
  l.ordering_accuracy = o.optional_number("ordering_accuracy", 0, 1);
  l.min_count = o.optional_integer("min_count", 0, std::numeric_limits<int>::max());
  l.min_compared_fraction = o.optional_number("min_compared_fraction", 0, 1);
  return l;
}

/// The groups of one kind ("sources" or "gpus"): an object of name -> limits.
std::map<std::string, GateLimits> read_groups(JsonObject& root, const std::string& key, InputErrors& errors) {
  std::map<std::string, GateLimits> out;
  std::optional<JsonObject> groups;
  if (!errors.attempt([&] { groups = root.optional_object(key); }) || !groups) return out;
  for (const std::string& name : groups->keys())
    errors.attempt([&] {
      JsonObject g = groups->object(name);
      out[name] = read_limits(g);
      g.finish();
    });
  return out;
}

/// The summary of `group` ("all", "source: x", "gpu: y") among summarize()'s.
const ErrorSummary* find_summary(const std::vector<ErrorSummary>& sums, const std::string& group) {
  for (const ErrorSummary& s : sums)
    if (s.group == group) return &s;
  return nullptr;
}

bool compared(const ValidationRow& r) { return r.status == "ok" && r.trust != "low"; }

/// The summary limits of one population (all but max_abs_error_pct, checked per record).
void check_summary(const std::string& group, const GateLimits& l, const ErrorSummary* s, std::vector<GateCheck>& out) {
  const ErrorSummary none;  // a population with no trusted record: nothing compared
  const ErrorSummary& sum = s ? *s : none;
  auto add = [&](const char* key, const char* figure, double value, const std::optional<double>& limit, bool at_most) {
    if (!limit) return;
    GateCheck c;
    c.group = group;
    c.key = key;
    c.figure = figure;
    c.value = value;
    c.limit = *limit;
    c.at_most = at_most;
    c.passed = at_most ? value <= *limit : value >= *limit;
    out.push_back(std::move(c));
  };
  const int total = sum.count + sum.skipped;
  add("median_abs_error_pct", "median |error|", sum.median_abs_error_pct, l.median_abs_error_pct, true);
  add("p90_abs_error_pct", "p90 |error|", sum.p90_abs_error_pct, l.p90_abs_error_pct, true);
  add("ordering_accuracy", "ordering accuracy", sum.ordering_accuracy, l.ordering_accuracy, false);
  const std::optional<double> min_count =
      l.min_count ? std::optional<double>(static_cast<double>(*l.min_count)) : std::nullopt;
  add("min_count", "records compared", sum.count, min_count, false);
  add("min_compared_fraction", "share compared", total ? static_cast<double>(sum.count) / total : 0.0,
      l.min_compared_fraction, false);
}

}  // namespace

bool GateLimits::empty() const {
  return !median_abs_error_pct && !p90_abs_error_pct && !max_abs_error_pct && !ordering_accuracy && !min_count &&
         !min_compared_fraction;
}

bool Gate::empty() const {
  auto all_empty = [](const std::map<std::string, GateLimits>& m) {
    return std::all_of(m.begin(), m.end(), [](const auto& g) { return g.second.empty(); });
  };
  return all.empty() && all_empty(sources) && all_empty(gpus);
}

double GateCheck::excess() const {
  if (passed) return 0;
  return at_most ? value - limit : limit - value;
}

bool GateResult::passed() const { return failed() == 0; }

int GateResult::failed() const {
  return static_cast<int>(std::count_if(checks.begin(), checks.end(), [](const GateCheck& c) { return !c.passed; }));
}

Gate parse_gate(const std::string& text, const std::string& name) {
  const JsonDoc doc = JsonDoc::parse(text, name);
  JsonObject root(doc.root(), doc.file(), "");
  Gate g;
  InputErrors errors;
  root.ignore("about");
  errors.attempt([&] { g.all = read_limits(root); });
  g.sources = read_groups(root, "sources", errors);
  g.gpus = read_groups(root, "gpus", errors);
  errors.attempt([&] { root.finish(); });
  errors.raise();
  return g;
}

Gate load_gate(const std::filesystem::path& file) { return parse_gate(read_input_file(file), file.string()); }

void check_gate_groups(const Gate& gate, const std::vector<MeasuredRun>& runs, const std::string& gate_file) {
  std::set<std::string> sources, gpus;
  for (const MeasuredRun& r : runs) {
    sources.insert(r.source);
    gpus.insert(r.gpu);
  }
  InputErrors errors;
  auto check = [&](const std::map<std::string, GateLimits>& groups, const std::set<std::string>& present,
                   const char* kind, const char* field) {
    const std::vector<std::string> names(present.begin(), present.end());
    for (const auto& [name, limits] : groups) {
      if (present.count(name)) continue;
      const nlohmann::json key = name;
      errors.add(InputError(gate_file, std::string("/") + kind + "/" + name,
                            "no record has this " + std::string(field) + " (" + key.dump() + ")" +
                                did_you_mean(name, names) + "; the records' " + field + "s: " +
                                std::to_string(names.size()) + " (`stepcast validate RUNS --json` lists them)"));
    }
  };
  check(gate.sources, sources, "sources", "source");
  check(gate.gpus, gpus, "gpus", "gpu");
  errors.raise();
}

namespace {

/// The tolerance of each compared row (its source's, else its GPU's, else the overall one)
/// into out.tolerance_pct, and one max_abs_error_pct check per tolerance given, over the
/// compared rows it applies to (a tolerance no row falls under checks no row).
void check_records(const Gate& gate, const std::vector<ValidationRow>& rows, GateResult& out) {
  std::map<std::string, GateCheck> checks;  // by group
  auto add = [&](const std::string& group, double limit) {
    GateCheck& c = checks[group];
    c.group = group;
    c.key = "max_abs_error_pct";
    c.figure = "max |error|";
    c.limit = limit;
    return &c;
  };
  if (gate.all.max_abs_error_pct) add("all", *gate.all.max_abs_error_pct);
  for (const auto& [name, l] : gate.sources)
    if (l.max_abs_error_pct) add("source: " + name, *l.max_abs_error_pct);
  for (const auto& [name, l] : gate.gpus)
    if (l.max_abs_error_pct) add("gpu: " + name, *l.max_abs_error_pct);
  out.tolerance_pct.assign(rows.size(), std::nullopt);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const ValidationRow& r = rows[i];
    if (!compared(r)) continue;
    auto find = [&](const std::string& group) {
      auto it = checks.find(group);
      return it == checks.end() ? nullptr : &it->second;
    };
    GateCheck* c = find("source: " + r.source);
    if (!c) c = find("gpu: " + r.gpu);
    if (!c) c = find("all");
    if (!c) continue;
    out.tolerance_pct[i] = c->limit;
    const double e = std::abs(*r.error_pct);
    ++c->records;
    if (e > c->limit) ++c->beyond;
    if (c->worst.empty() || e > c->value) {
      c->value = e;
      c->worst = r.id;
    }
    c->passed = c->beyond == 0;
  }
  for (auto& [group, c] : checks) out.checks.push_back(std::move(c));
}

}  // namespace

GateResult apply_gate(const Gate& gate, const std::vector<ValidationRow>& rows) {
  GateResult out;
  const std::vector<ErrorSummary> sums = summarize(rows);
  check_summary("all", gate.all, find_summary(sums, "all"), out.checks);
  for (const auto& [name, l] : gate.sources)
    check_summary("source: " + name, l, find_summary(sums, "source: " + name), out.checks);
  for (const auto& [name, l] : gate.gpus)
    check_summary("gpu: " + name, l, find_summary(sums, "gpu: " + name), out.checks);
  check_records(gate, rows, out);
  // Overall first, then each source, then each GPU, a group's checks together.
  auto rank = [](const std::string& group) { return group == "all" ? 0 : group.rfind("source: ", 0) == 0 ? 1 : 2; };
  std::stable_sort(out.checks.begin(), out.checks.end(), [&](const GateCheck& a, const GateCheck& b) {
    return std::make_pair(rank(a.group), a.group) < std::make_pair(rank(b.group), b.group);
  });
  return out;
}

}  // namespace stepcast
