/// \file
/// A GPU generation's in-step GEMM fraction fitted on end-to-end measured runs, leave one
/// source out (`stepcast fit generation`). For a generation with no in-step kernel
/// decomposition of its own: the catalog's fractions come from one such decomposition on
/// another generation (model/catalog/in_step.json), and how much of the best achievable
/// matmul a step keeps depends on the GPU (its power limit and sustained clock, its SM count
/// against the step's shapes), so one generation's fraction does not carry to another.
///
/// The fit is a one-parameter search: the fraction f in [from, to] that minimizes the median
/// |error| of the generation's trusted records, on a grid of `step` refined to `refine`
/// around each coarse minimum. It is run once on every source and once without each source;
/// validate predicts a source's records with the fraction fitted without it.
#pragma once

#include "model/compute.hpp"
#include "validate/validation.hpp"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace stepcast {

struct GenerationFitOptions {
  GpuArch arch = GpuArch::ampere;
  double from = 0.5;  ///< searched range of the fraction, within (0, 1]
  double to = 1.0;
  double step = 0.02;     ///< the coarse grid
  double refine = 0.005;  ///< the fine grid around each coarse minimum (0: none)
};

/// One record's outcome at a candidate fraction: its source label and |error|, percent.
struct SourceError {
  std::string source;
  double abs_error_pct = 0;
};

/// The records' outcomes at one GEMM fraction of the generation.
using FractionEvaluator = std::function<std::vector<SourceError>(double fraction)>;

struct GenerationFitResult {
  GenerationGemmFit fit;  ///< gemm: fitted on every source; without: per source
  /// Each evaluated fraction with the median |error| over every record there, ascending.
  std::vector<std::pair<double, double>> curve;
  std::vector<std::pair<std::string, int>> records_per_source;  ///< the records each source gave
};

/// The search, given a way to evaluate a fraction: for every source together and for each
/// source left out, the fraction of the grid with the lowest median |error| over the records
/// of the other sources (ties: the smaller fraction). A source whose records are the only
/// ones is fitted with nothing left: it keeps `fallback`. Throws std::invalid_argument for a
/// bad range or grid, InputError when no record has an outcome at all.
GenerationFitResult fit_generation_gemm(const FractionEvaluator& evaluate, const GenerationFitOptions& options,
                                        double fallback);

/// The evaluator over measured runs: the records on a GPU of `arch` (catalog GPUs only, and
/// none of a source `base` was fitted on, which validate predicts at isolated rates) are
/// validated with `base`'s fractions and the generation's GEMM fraction set to the
/// candidate; each trusted record compared gives its |error|.
FractionEvaluator validation_evaluator(std::vector<MeasuredRun> runs, InStepFractions base, GpuArch arch,
                                       unsigned threads, std::function<void(double fraction)> progress = {});

}  // namespace stepcast
