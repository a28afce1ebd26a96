/// \file
/// What a framework is documented to run, for records that leave it unstated. A measured
/// run from Megatron-LM, Megatron-DeepSpeed, metaseq or nanotron often gives its model and parallel
/// degrees but not its recompute, micro-batch or precision, because the framework's launch
/// scripts set them. Each default here fills a field only where the record leaves it null,
/// only for the framework whose scripts set it, and names its source; every default taken is
/// returned as an assumption, printed with the record's prediction.
#pragma once

#include "validate/validation.hpp"

#include <optional>
#include <string>
#include <vector>

namespace stepcast {

/// Fills the unstated fields of `run` that its framework sets in its published launch
/// scripts, and appends one line per field filled to `assumed` ("<field> <value>: not
/// stated; <source>"). A field the record states is never changed. Records of other
/// frameworks are left as they are.
void apply_framework_defaults(MeasuredRun& run, std::vector<std::string>& assumed);

/// A Megatron-Bridge record's runtime settings as its release's performance recipe set them
/// (data/recipes/megatron-bridge-runtime.jsonl, read from each release's tag).
struct RecipeRuntime {
  std::string rev, commit, config;
  std::string cuda_graph_impl;  ///< "none", "local", "transformer_engine", "full_iteration"
  std::optional<std::vector<std::string>> cuda_graph_scope;  ///< null: the implementation's default
  std::optional<std::string> moe_dispatcher;                 ///< "alltoall", "allgather", "flex"; null for dense
  std::optional<std::string> moe_flex_backend;               ///< "hybridep", "deepep"
  bool moe_a2a_overlap = false;
  bool moe_token_drop = false;
  std::optional<bool> tp_comm_overlap;  ///< as the config ends up (off below TP 2); null: not determined
  bool layout_matches = true;           ///< the config's parallel layout is the record's (recompute table)
  /// Where the line came from, for an assumption: "Megatron-Bridge v0.4.0 @ 0fbfe7d3 (config; file)".
  std::string source() const;
};

/// The record's runtime recipe, or nullptr when the table lacks it.
const RecipeRuntime* recipe_runtime(const std::string& id);

}  // namespace stepcast
