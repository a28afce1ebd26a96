#include "base/suggest.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

namespace stepcast {

namespace {

char fold(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

std::string folded(const std::string& s) {
  std::string out = s;
  std::transform(out.begin(), out.end(), out.begin(), fold);
  return out;
}

/// One name begins with the other (case-folded), the shorter at least 4 characters long.
bool prefix_related(const std::string& a, const std::string& b) {
  const std::string& shorter = a.size() <= b.size() ? a : b;
  const std::string& longer = a.size() <= b.size() ? b : a;
  return shorter.size() >= 4 && longer.compare(0, shorter.size(), shorter) == 0;
}

}  // namespace

std::size_t edit_distance(const std::string& a, const std::string& b) {
  // One row of the dynamic programme: row[j] = distance of a[0..i) to b[0..j).
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const std::size_t substitute = diagonal + (fold(a[i - 1]) == fold(b[j - 1]) ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::optional<std::string> closest_name(const std::string& wrong, const std::vector<std::string>& candidates) {
  const std::string w = folded(wrong);
  std::optional<std::string> best;
  std::pair<int, std::size_t> best_rank;  // (0 exact, 1 shared beginning, 2 near; distance)
  for (const std::string& c : candidates) {
    const std::string fc = folded(c);
    const std::size_t d = edit_distance(w, fc);
    const std::size_t shorter = std::min(w.size(), fc.size());
    const bool prefix = prefix_related(w, fc);
    if (!prefix && d > std::max<std::size_t>(1, shorter / 4)) continue;
    // A shared beginning outranks a small distance (dgx-h100-80gb: dgx-h100, not dgx-a100-40gb).
    const std::pair<int, std::size_t> rank{d == 0 ? 0 : prefix ? 1 : 2, d};
    if (!best || rank < best_rank) {
      best = c;
      best_rank = rank;
    }
  }
  return best;
}

std::string did_you_mean(const std::string& wrong, const std::vector<std::string>& candidates) {
  const std::optional<std::string> name = closest_name(wrong, candidates);
  return name ? " (did you mean \"" + *name + "\"?)" : "";
}

}  // namespace stepcast
