/// \file
/// Summaries of validation rows: count, median, p90 and max |error|, and the ordering
/// accuracy over pairs of records one knob apart. O(n log n) in the number of rows: text
/// fields are interned by hash, rows grouped by sorting their integer keys, and ordered
/// pairs counted with a Fenwick tree, never enumerated.
#include "validate/validation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>
#include <tuple>
#include <utility>
#include <vector>

namespace stepcast {

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * (static_cast<double>(v.size()) - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = static_cast<std::size_t>(std::ceil(pos));
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

namespace {

/// A row's identity for ordering pairs, as integers (text interned to ids).
///  - Fields that must match: source, metric, model, sequence, precision, GPU and attention
///    kernel (runs of one source on another software stack, such as llm-foundry's Triton and
///    flash-attn tables, differ in their kernels).
///  - Knobs a pair may differ in, exactly one at a time: the GPU count, the strategy, the
///    link speed (its bits), the micro-batch (the global batch follows the GPU count) and the
///    parallel layout (TP and PP degrees as stated, 0 where not; CP degree and model chunks
///    per stage): two runs with another layout and another micro-batch differ in two knobs,
///    not one.
constexpr int kBase = 7;
constexpr int kKnobs = 5;
using RowKey = std::array<std::int64_t, kBase + kKnobs>;

class Interner {
 public:
  std::int64_t id(const std::string& s) {
    return ids_.try_emplace(s, static_cast<std::int64_t>(ids_.size())).first->second;
  }

 private:
  std::unordered_map<std::string, std::int64_t> ids_;
};

std::int64_t bits_of(double v) {
  if (v == 0) v = 0;  // -0 and +0 compare equal
  std::int64_t b = 0;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

/// TP, PP, CP degrees and model chunks per stage as one text, interned.
std::string layout_of(const ValidationRow& r) { return fmt::format("{}x{}x{}x{}", r.tp, r.pp, r.cp, r.vpp); }

RowKey key_of(const ValidationRow& r, Interner& text) {
  return {text.id(r.source),    text.id(r.metric),    text.id(r.model),     r.seq_len,
          text.id(r.precision), text.id(r.gpu),       text.id(r.attention), r.gpus,
          text.id(r.strategy),  bits_of(r.link_gbps), r.micro_batch,        text.id(layout_of(r))};
}

std::vector<RowKey> keys_of(const std::vector<const ValidationRow*>& rows) {
  Interner text;
  std::vector<RowKey> keys;
  keys.reserve(rows.size());
  for (const ValidationRow* r : rows) keys.push_back(key_of(*r, text));
  return keys;
}

/// Calls on_bucket(order, lo, hi) for each bucket of rows equal in every field but `knob`:
/// `order` holds the row indices sorted by every other field and then by the knob, and
/// [lo, hi) is the bucket's range in it.
template <class OnBucket>
void for_each_bucket(const std::vector<RowKey>& keys, int knob, OnBucket on_bucket) {
  auto compare_others = [&](std::size_t a, std::size_t b) {  // <0, 0, >0
    for (int f = 0; f < kBase + kKnobs; ++f)
      if (f != knob && keys[a][f] != keys[b][f]) return keys[a][f] < keys[b][f] ? -1 : 1;
    return 0;
  };
  std::vector<std::size_t> order(keys.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const int c = compare_others(a, b);
    return c != 0 ? c < 0 : keys[a][knob] < keys[b][knob] || (keys[a][knob] == keys[b][knob] && a < b);
  });
  for (std::size_t lo = 0; lo < order.size();) {
    std::size_t hi = lo + 1;
    while (hi < order.size() && compare_others(order[lo], order[hi]) == 0) ++hi;
    on_bucket(order, lo, hi);
    lo = hi;
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
PairCount count_pairs(std::vector<std::pair<double, double>> points) {  // by value: sorted here
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

/// Pairs of rows one knob apart, with measured values that differ. For each knob, the rows
/// are sorted by everything else and then by the knob: a run of equal "everything else" is
/// a bucket, and the pairs in it that differ in the knob are all the bucket's pairs less
/// those inside each (contiguous) group of equal knob value. A pair one knob apart falls in
/// exactly one bucket; identical rows cancel out.
PairCount ordering_pairs(const std::vector<const ValidationRow*>& ok) {
  const std::vector<RowKey> keys = keys_of(ok);
  PairCount total;
  std::vector<std::pair<double, double>> points;
  for (int knob = kBase; knob < kBase + kKnobs; ++knob)
    for_each_bucket(keys, knob, [&](const std::vector<std::size_t>& order, std::size_t lo, std::size_t hi) {
      if (hi - lo < 2) return;
      auto points_in = [&](std::size_t from, std::size_t to) {
        points.clear();
        for (std::size_t i = from; i < to; ++i) points.emplace_back(ok[order[i]]->measured, *ok[order[i]]->predicted);
        return count_pairs(points);
      };
      const PairCount all = points_in(lo, hi);
      total.pairs += all.pairs;
      total.right += all.right;
      for (std::size_t g = lo; g < hi;) {
        std::size_t end = g + 1;
        while (end < hi && keys[order[end]][knob] == keys[order[g]][knob]) ++end;
        if (end - g > 1) total -= points_in(g, end);
        g = end;
      }
    });
  return total;
}

constexpr std::array<const char*, kKnobs> kKnobNames = {"gpus", "strategy", "link", "micro_batch", "layout"};

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
  s.ordering_pairs = pairs.pairs;
  s.ordering_accuracy = pairs.pairs ? static_cast<double>(pairs.right) / static_cast<double>(pairs.pairs) : 1.0;
  return s;
}

}  // namespace

std::vector<MemorySummary> summarize_memory(const std::vector<ValidationRow>& rows) {
  std::vector<std::string> sources;
  for (const ValidationRow& r : rows)
    if (std::find(sources.begin(), sources.end(), r.source) == sources.end()) sources.push_back(r.source);
  std::vector<MemorySummary> out;
  auto summary = [&](const std::string& group, const std::string* source) {
    MemorySummary m;
    m.group = group;
    std::vector<double> errors;
    for (const ValidationRow& r : rows) {
      if ((source && r.source != *source) || r.status != "ok" || r.collective.has_value()) continue;
      ++m.predicted;
      if (r.memory_verdict == MemoryVerdict::oom) m.false_oom.push_back(r.id);
      if (r.memory_error_pct) errors.push_back(std::abs(*r.memory_error_pct));
    }
    m.count = static_cast<int>(errors.size());
    m.median_abs_error_pct = percentile(errors, 0.5);
    m.p90_abs_error_pct = percentile(errors, 0.9);
    m.max_abs_error_pct = errors.empty() ? 0 : *std::max_element(errors.begin(), errors.end());
    out.push_back(std::move(m));
  };
  summary("all", nullptr);
  for (const std::string& s : sources) summary("source: " + s, &s);
  return out;
}

namespace {

/// One summary per value of key(row) over `rows`, "label: value", appended in name order.
template <typename Key>
void append_groups(std::vector<ErrorSummary>& out, const std::vector<const ValidationRow*>& rows, const char* label,
                   Key key) {
  std::map<std::string, std::vector<const ValidationRow*>> groups;  // sorted by name
  for (const ValidationRow* r : rows) groups[key(*r)].push_back(r);
  for (const auto& [g, sub] : groups) out.push_back(summary_of(std::string(label) + ": " + g, sub));
}

}  // namespace

std::vector<ErrorSummary> summarize(const std::vector<ValidationRow>& rows) {
  std::vector<const ValidationRow*> kept;
  for (const ValidationRow& r : rows)
    if (r.trust != "low" && !r.collective.has_value()) kept.push_back(&r);
  std::vector<ErrorSummary> out = {summary_of("all", kept)};
  auto by = [&](const char* label, auto key) { append_groups(out, kept, label, key); };
  by("source", [](const ValidationRow& r) { return r.source; });
  by("strategy", [](const ValidationRow& r) { return r.strategy; });
  by("gpu", [](const ValidationRow& r) { return r.gpu; });
  return out;
}

std::vector<ErrorSummary> summarize_collectives(const std::vector<ValidationRow>& rows) {
  std::vector<const ValidationRow*> kept;
  for (const ValidationRow& r : rows)
    if (r.collective && r.trust != "low" && !r.collective->fed_constant) kept.push_back(&r);
  std::vector<ErrorSummary> out = {summary_of("all", kept)};
  auto by = [&](const char* label, auto key) { append_groups(out, kept, label, key); };
  by("nodes", [](const ValidationRow& r) {
    const std::int64_t n = r.collective->nodes;
    return std::string(n >= 16 ? ">=16" : n > 1 ? "2-15" : "1");
  });
  by("collective", [](const ValidationRow& r) { return r.strategy; });
  by("network", [](const ValidationRow& r) { return r.collective->network; });
  by("gpu", [](const ValidationRow& r) { return r.gpu; });
  return out;
}

std::vector<OrderingPair> ordering_pair_list(const std::vector<ValidationRow>& rows) {
  std::vector<const ValidationRow*> ok;
  for (const ValidationRow& r : rows)
    if (r.status == "ok" && r.trust != "low" && !r.collective.has_value()) ok.push_back(&r);
  const std::vector<RowKey> keys = keys_of(ok);
  struct Found {
    std::size_t low, high;
    int knob;
    bool right;
  };
  std::vector<Found> found;
  for (int knob = kBase; knob < kBase + kKnobs; ++knob)
    for_each_bucket(keys, knob, [&](const std::vector<std::size_t>& order, std::size_t lo, std::size_t hi) {
      for (std::size_t x = lo; x < hi; ++x)
        for (std::size_t y = x + 1; y < hi; ++y) {
          std::size_t a = order[x], b = order[y];
          if (keys[a][knob] == keys[b][knob] || ok[a]->measured == ok[b]->measured) continue;
          if (ok[b]->measured < ok[a]->measured) std::swap(a, b);
          found.push_back({a, b, knob, *ok[a]->predicted < *ok[b]->predicted});
        }
    });
  std::sort(found.begin(), found.end(), [](const Found& x, const Found& y) {
    return std::tie(x.right, x.low, x.high, x.knob) < std::tie(y.right, y.low, y.high, y.knob);
  });
  std::vector<OrderingPair> out;
  out.reserve(found.size());
  for (const Found& f : found) out.push_back({kKnobNames[f.knob - kBase], ok[f.low], ok[f.high], f.right});
  return out;
}

std::vector<ValidationRow> fit_free_rows(std::vector<ValidationRow> rows) {
  for (ValidationRow& r : rows) {
    if (!r.predicted) continue;
    r.predicted = r.predicted_fit_free;
    r.error_pct = r.error_pct_fit_free;
  }
  return rows;
}

}  // namespace stepcast
