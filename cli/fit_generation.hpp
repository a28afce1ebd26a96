/// \file
/// `stepcast fit generation RUNS --arch ARCH -o FILE`: one GPU generation's in-step GEMM
/// fraction fitted on end-to-end measured runs, leave one source out
/// (validate/generation_fit.hpp), written into an in_step.json-shaped file beside the
/// kernel-level fractions it starts from. Use the file with `predict --in-step` /
/// `validate --in-step`, or as model/catalog/in_step.json.
#pragma once

#include "validate/generation_fit.hpp"

#include <CLI/CLI.hpp>

#include <string>

namespace stepcast::cli {

struct FitGenerationArgs {
  std::string runs;     ///< measured-run records (.jsonl or a folder of them)
  std::string arch;     ///< the GPU generation to fit
  std::string output;   ///< in_step.json-shaped file to write
  std::string in_step;  ///< the fractions to start from; empty: model/catalog/in_step.json
  double from = 0.5, to = 1.0, step = 0.02, refine = 0.005;
};

/// Adds `generation` under `fit` (its options, help and examples).
CLI::App* add_fit_generation_command(CLI::App& fit, FitGenerationArgs& args);

/// What the command writes: the file's text and the report.
struct FitGenerationOutput {
  std::string file_text;
  std::string report_text;
};

/// Reads the records and the starting fractions, fits, builds the document. Throws
/// InputError for a bad record or file, std::invalid_argument for a bad range or grid or no
/// record of the generation.
FitGenerationOutput fit_generation_command(const FitGenerationArgs& args,
                                           const std::function<void(double fraction)>& progress = {});

}  // namespace stepcast::cli
