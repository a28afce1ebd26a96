/// \file
/// "Did you mean": the name closest to a misspelt one among the names allowed where it was
/// written (a key of a JSON object, a catalog model, box, cluster or link).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace stepcast {

/// Levenshtein distance between `a` and `b`, letters compared case-insensitively (ASCII):
/// the fewest single-character insertions, deletions and substitutions turning one into
/// the other (Levenshtein 1966, "Binary codes capable of correcting deletions, insertions
/// and reversals").
std::size_t edit_distance(const std::string& a, const std::string& b);

/// The candidate `wrong` most likely stands for, or nullopt when none is close. A candidate
/// is close when its edit distance is at most max(1, shorter length / 4) (`micro_bach` ->
/// `micro_batch`, `llama3-8b` -> `llama-3-8b`), or when one name begins with the other and
/// the shorter has at least 4 characters (`prefetch` -> `prefetch_layers`,
/// `price_per_gpu_hour` -> `price_per_gpu_hour_usd`, `dgx-h100-80gb` -> `dgx-h100`). Of
/// several close candidates one sharing the beginning wins over one that does not (a
/// longer name is usually a variant, e.g. `dgx-h100-80gb` is nearer `dgx-h100` than
/// `dgx-a100-40gb`, 2 edits away), then the smallest edit distance, then the first listed;
/// an exact match (ignoring case) is returned as itself.
std::optional<std::string> closest_name(const std::string& wrong, const std::vector<std::string>& candidates);

/// ` (did you mean "x"?)` for the closest candidate, or "" when none is close.
std::string did_you_mean(const std::string& wrong, const std::vector<std::string>& candidates);

}  // namespace stepcast
