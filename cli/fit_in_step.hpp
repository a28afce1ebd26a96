/// \file
/// `stepcast fit in-step RUNS -o FILE`: a machine's in-step fractions (the shape of
/// model/catalog/in_step.json) from its training probe's records, by
/// calibrate/fit/in_step_fit.hpp; the predictions at isolated rates come from
/// validate/in_step_probe.hpp. Use the file with `predict --in-step` / `validate --in-step`.
#pragma once

#include "calibrate/fit/in_step_fit.hpp"

#include <CLI/CLI.hpp>

#include <string>

namespace stepcast::cli {

struct FitInStepArgs {
  std::string runs;         ///< the probe's records (.jsonl or a folder of them)
  std::string output;       ///< in_step.json-shaped file to write
  std::string calibration;  ///< the machine's `stepcast fit` hardware file; empty: catalog rates
  std::string machine;      ///< one line for fitted_on; empty: the records' GPU
  std::string commit;       ///< stepcast commit the probe ran at; empty: "not stated"
};

/// Adds `in-step` under `fit` (its options, help and examples).
CLI::App* add_fit_in_step_command(CLI::App& fit, FitInStepArgs& args);

/// What the command writes: the file's text and the report.
struct FitInStepOutput {
  std::string file_text;
  std::string report_text;
};

/// Reads the records and the calibration, fits, builds the document. Throws InputError for a
/// bad record or file, InStepFitError for records the fit cannot use.
FitInStepOutput fit_in_step_command(const FitInStepArgs& args);

}  // namespace stepcast::cli
