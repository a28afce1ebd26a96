/// \file
/// `stepcast validate` as a gate: limits on the error summaries of measured runs (overall,
/// per source, per GPU) and an |error| tolerance per record, from a small JSON file
/// (`--gate FILE`) or the command line; which limits the rows cross, and by how much.
///
/// A gate file (every key optional; the summary keys are those of `validate --json`'s
/// summaries, each bounding the figure of that name):
///
///     {"about": "free text",
///      "median_abs_error_pct": 8, "p90_abs_error_pct": 20,   // at most
///      "max_abs_error_pct": 35,                              // every record's |error|, at most
///      "ordering_accuracy": 0.8,                             // fraction of ordering pairs, at least
///      "min_count": 100, "min_compared_fraction": 0.9,       // records compared, at least
///      "sources": {"<source as validate prints it>": {same keys}},
///      "gpus": {"<record's gpu>": {same keys}}}
///
/// The population is the summaries' own: trusted records (low-trust ones are shown but kept
/// out), "compared" the ones predicted, the rest skipped with their reason.
#pragma once

#include "validate/validation.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace stepcast {

/// Limits on one population (unset: not checked).
struct GateLimits {
  std::optional<double> median_abs_error_pct;   ///< the median |error|, at most
  std::optional<double> p90_abs_error_pct;      ///< the p90 |error|, at most
  std::optional<double> max_abs_error_pct;      ///< each record's |error| (its tolerance), at most
  std::optional<double> ordering_accuracy;      ///< share of ordering pairs ordered right, at least
  std::optional<std::int64_t> min_count;        ///< records compared, at least
  std::optional<double> min_compared_fraction;  ///< compared / (compared + skipped), at least
  bool empty() const;
};

/// Limits overall, per source and per GPU (the group names a record's source or gpu field
/// as `validate` prints it).
struct Gate {
  GateLimits all;
  std::map<std::string, GateLimits> sources;
  std::map<std::string, GateLimits> gpus;
  bool empty() const;
};

/// Reads a gate file (the format above). Throws InputError with the file and JSON path for
/// an unknown key, a value out of range (percentages >= 0, fractions in [0, 1], counts >= 0)
/// or a group that is not an object.
Gate load_gate(const std::filesystem::path& file);
Gate parse_gate(const std::string& text, const std::string& name);

/// Throws InputError naming `gate_file` and the group's JSON path (with a "did you mean")
/// for a source or GPU of the gate that no record of `runs` has: a typo there would
/// otherwise check nothing.
void check_gate_groups(const Gate& gate, const std::vector<MeasuredRun>& runs, const std::string& gate_file);

/// One limit checked on one population.
struct GateCheck {
  std::string group;   ///< "all", "source: <name>", "gpu: <name>"
  std::string key;     ///< the gate file's key, e.g. "median_abs_error_pct"
  std::string figure;  ///< what was measured, e.g. "median |error|"
  double value = 0;    ///< the population's figure (max_abs_error_pct: the largest |error|)
  double limit = 0;
  bool at_most = true;  ///< the limit is an upper bound (else a lower one)
  bool passed = true;
  int records = 0;    ///< max_abs_error_pct: the records this tolerance applies to
  int beyond = 0;     ///< max_abs_error_pct: how many of them exceed it
  std::string worst;  ///< max_abs_error_pct: the id of the record with the largest |error|
  /// How far past the limit (in the figure's unit), 0 when passed.
  double excess() const;
};

/// The gate applied to rows.
struct GateResult {
  std::vector<GateCheck> checks;  ///< overall first, then sources, then GPUs, in key order
  /// Per row (the rows' order): the |error| tolerance that applies to it, its source's, else
  /// its GPU's, else the overall one; unset for rows no tolerance applies to, low-trust and
  /// skipped rows included (they are not compared).
  std::vector<std::optional<double>> tolerance_pct;
  bool passed() const;
  int failed() const;
};

/// Checks `rows` (validate_runs' output) against `gate`: each population's summary
/// (summarize()) against its limits, and each compared record against its tolerance.
GateResult apply_gate(const Gate& gate, const std::vector<ValidationRow>& rows);

}  // namespace stepcast
