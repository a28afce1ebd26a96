/// \file
/// Summaries of validation rows: count, median, p90 and max |error|, and the ordering
/// accuracy over pairs of records one knob apart. Linear-logarithmic in the number of rows:
/// rows are grouped by hash, and ordered pairs are counted, never enumerated.
#include "validate/validation.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace stepcast {

namespace {

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * (static_cast<double>(v.size()) - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = static_cast<std::size_t>(std::ceil(pos));
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

/// Appends a field to a hash key; the separator cannot occur in a record's text fields'
/// meaning (a unit separator), and numbers are written as their exact bits.
void add_field(std::string& key, const std::string& v) {
  key += v;
  key += '\x1f';
}
void add_field(std::string& key, std::int64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); }
void add_field(std::string& key, double v) {
  if (v == 0) v = 0;  // -0 and +0 compare equal
  key.append(reinterpret_cast<const char*>(&v), sizeof v);
}

/// The knobs an ordering pair may differ in, exactly one of them at a time: the GPU count,
/// the strategy, the link speed and the micro-batch (the global batch follows the GPU
/// count). Everything else (source, metric, model, sequence, precision, GPU) must match.
constexpr int kKnobs = 4;

std::string base_key(const ValidationRow& r) {
  std::string k;
  add_field(k, r.source);
  add_field(k, r.metric);
  add_field(k, r.model);
  add_field(k, r.seq_len);
  add_field(k, r.precision);
  add_field(k, r.gpu);
  return k;
}

void add_knob(std::string& key, const ValidationRow& r, int knob) {
  switch (knob) {
    case 0: add_field(key, r.gpus); break;
    case 1: add_field(key, r.strategy); break;
    case 2: add_field(key, r.link_gbps); break;
    default: add_field(key, r.micro_batch); break;
  }
}

/// Pairs whose measured values differ, and how many of them the prediction orders the same
/// way (a predicted tie orders no pair).
struct PairCount {
  std::int64_t pairs = 0;
  std::int64_t right = 0;
  PairCount& operator-=(const PairCount& o) {
    pairs -= o.pairs;
    right -= o.right;
    return *this;
  }
};

/// Counts pairs over (measured, predicted) points in O(n log n): sorted by measured value,
/// each point is paired with every earlier point of a strictly smaller measured value, and
/// a Fenwick tree over predicted ranks counts those also predicted strictly smaller.
PairCount count_pairs(std::vector<std::pair<double, double>> points) {
  PairCount c;
  const std::size_t n = points.size();
  if (n < 2) return c;
  std::vector<double> predicted;
  predicted.reserve(n);
  for (const auto& p : points) predicted.push_back(p.second);
  std::sort(predicted.begin(), predicted.end());
  predicted.erase(std::unique(predicted.begin(), predicted.end()), predicted.end());
  std::sort(points.begin(), points.end());
  std::vector<std::int64_t> tree(predicted.size() + 1, 0);
  auto rank = [&](double p) {  // 1-based
    return static_cast<std::size_t>(std::lower_bound(predicted.begin(), predicted.end(), p) - predicted.begin()) + 1;
  };
  auto below = [&](std::size_t i) {  // points inserted with a rank < i
    std::int64_t s = 0;
    for (--i; i > 0; i -= i & (~i + 1)) s += tree[i];
    return s;
  };
  std::int64_t inserted = 0;
  for (std::size_t lo = 0; lo < n;) {
    std::size_t hi = lo;
    while (hi < n && points[hi].first == points[lo].first) ++hi;
    for (std::size_t i = lo; i < hi; ++i) {
      c.pairs += inserted;
      c.right += below(rank(points[i].second));
    }
    for (std::size_t i = lo; i < hi; ++i, ++inserted)
      for (std::size_t j = rank(points[i].second); j < tree.size(); j += j & (~j + 1)) ++tree[j];
    lo = hi;
  }
  return c;
}

std::vector<std::pair<double, double>> points_of(const std::vector<const ValidationRow*>& rows) {
  std::vector<std::pair<double, double>> out;
  out.reserve(rows.size());
  for (const ValidationRow* r : rows) out.emplace_back(r->measured, *r->predicted);
  return out;
}

/// Pairs of rows one knob apart, with measured values that differ. For each knob, rows
/// agreeing in everything else share a bucket; the pairs in a bucket that differ in the
/// knob are all the bucket's pairs less those inside each group of equal knob value. A pair
/// one knob apart falls in exactly one bucket; identical rows cancel out.
PairCount ordering_pairs(const std::vector<const ValidationRow*>& ok) {
  PairCount total;
  for (int knob = 0; knob < kKnobs; ++knob) {
    std::unordered_map<std::string, std::vector<const ValidationRow*>> buckets;
    for (const ValidationRow* r : ok) {
      std::string key = base_key(*r);
      for (int other = 0; other < kKnobs; ++other)
        if (other != knob) add_knob(key, *r, other);
      buckets[key].push_back(r);
    }
    for (const auto& [key, rows] : buckets) {
      if (rows.size() < 2) continue;
      const PairCount all = count_pairs(points_of(rows));
      total.pairs += all.pairs;
      total.right += all.right;
      std::unordered_map<std::string, std::vector<const ValidationRow*>> same;
      for (const ValidationRow* r : rows) {
        std::string k;
        add_knob(k, *r, knob);
        same[k].push_back(r);
      }
      for (const auto& [k, group] : same)
        if (group.size() > 1) total -= count_pairs(points_of(group));
    }
  }
  return total;
}

ErrorSummary summary_of(const std::string& group, const std::vector<const ValidationRow*>& rows) {
  ErrorSummary s;
  s.group = group;
  std::vector<double> errors;
  std::vector<const ValidationRow*> ok;
  for (const ValidationRow* r : rows) {
    if (r->status != "ok") {
      ++s.skipped;
      continue;
    }
    errors.push_back(std::abs(*r->error_pct));
    ok.push_back(r);
  }
  s.count = static_cast<int>(errors.size());
  s.median_abs_error_pct = percentile(errors, 0.5);
  s.p90_abs_error_pct = percentile(errors, 0.9);
  s.max_abs_error_pct = errors.empty() ? 0 : *std::max_element(errors.begin(), errors.end());
  const PairCount pairs = ordering_pairs(ok);
  s.ordering_pairs = static_cast<int>(pairs.pairs);
  s.ordering_accuracy = pairs.pairs ? static_cast<double>(pairs.right) / static_cast<double>(pairs.pairs) : 1.0;
  return s;
}

}  // namespace

std::vector<ErrorSummary> summarize(const std::vector<ValidationRow>& rows, const std::string& split) {
  std::vector<const ValidationRow*> kept;
  for (const ValidationRow& r : rows)
    if (r.trust != "low" && (split.empty() || r.split == split)) kept.push_back(&r);
  std::vector<ErrorSummary> out = {summary_of("all", kept)};
  auto by = [&](const char* label, auto key) {
    std::map<std::string, std::vector<const ValidationRow*>> groups;  // sorted by name
    for (const ValidationRow* r : kept) groups[key(*r)].push_back(r);
    for (const auto& [g, sub] : groups) out.push_back(summary_of(std::string(label) + ": " + g, sub));
  };
  by("source", [](const ValidationRow& r) { return r.source; });
  by("strategy", [](const ValidationRow& r) { return r.strategy; });
  by("gpu", [](const ValidationRow& r) { return r.gpu; });
  return out;
}

}  // namespace stepcast
