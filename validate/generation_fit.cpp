#include "validate/generation_fit.hpp"

#include "topologies/gpu.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>

namespace stepcast {

namespace {

/// Grid points are kept in units of 1e-6 so that the same fraction reached from two grids is
/// one evaluation.
long long key_of(double fraction) { return std::llround(fraction * 1e6); }
double fraction_of(long long key) { return static_cast<double>(key) / 1e6; }

/// Memoized outcomes per grid point.
class Outcomes {
 public:
  explicit Outcomes(const FractionEvaluator& evaluate) : evaluate_(evaluate) {}
  const std::vector<SourceError>& at(long long key) {
    auto it = cache_.find(key);
    if (it == cache_.end()) it = cache_.emplace(key, evaluate_(fraction_of(key))).first;
    return it->second;
  }
  const std::map<long long, std::vector<SourceError>>& all() const { return cache_; }

 private:
  const FractionEvaluator& evaluate_;
  std::map<long long, std::vector<SourceError>> cache_;
};

/// Median |error| of the outcomes not of `left_out` (empty: all); nullopt when none remain.
std::optional<double> median_without(const std::vector<SourceError>& outcomes, const std::string& left_out) {
  std::vector<double> errors;
  for (const SourceError& e : outcomes)
    if (left_out.empty() || e.source != left_out) errors.push_back(e.abs_error_pct);
  if (errors.empty()) return std::nullopt;
  return percentile(std::move(errors), 0.5);
}

/// The key among `keys` (ascending) with the lowest median without `left_out`; medians
/// within 1e-9 percentage points are a tie, won by the smaller key.
std::optional<long long> best_of(Outcomes& outcomes, const std::vector<long long>& keys, const std::string& left_out) {
  constexpr double kTie_pct = 1e-9;
  std::optional<long long> best;
  double best_median = 0;
  for (long long k : keys) {
    const std::optional<double> m = median_without(outcomes.at(k), left_out);
    if (m && (!best || *m < best_median - kTie_pct)) {
      best = k;
      best_median = *m;
    }
  }
  return best;
}

std::vector<long long> grid(double from, double to, double step) {
  std::vector<long long> keys;
  const long long lo = key_of(from), hi = key_of(to), d = key_of(step);
  for (long long k = lo; k <= hi; k += d) keys.push_back(k);
  if (keys.back() != hi) keys.push_back(hi);
  return keys;
}

/// The coarse minimum for `left_out`, then the fine grid within one coarse step of it.
std::optional<long long> search(Outcomes& outcomes, const std::vector<long long>& coarse, const GenerationFitOptions& o,
                                const std::string& left_out) {
  const std::optional<long long> rough = best_of(outcomes, coarse, left_out);
  if (!rough || !(o.refine > 0)) return rough;
  const double centre = fraction_of(*rough);
  std::vector<long long> fine = grid(std::max(o.from, centre - o.step), std::min(o.to, centre + o.step), o.refine);
  return best_of(outcomes, fine, left_out);
}

}  // namespace

GenerationFitResult fit_generation_gemm(const FractionEvaluator& evaluate, const GenerationFitOptions& o,
                                        double fallback) {
  if (!(o.from > 0) || !(o.to <= 1) || !(o.from <= o.to))
    throw std::invalid_argument(
        fmt::format("the searched range must lie in (0, 1] with from <= to (got {} to {})", o.from, o.to));
  if (!(o.step > 0) || o.step > o.to - o.from + 1e-12 || o.refine < 0 || (o.refine > 0 && o.refine > o.step))
    throw std::invalid_argument(
        fmt::format("the grid step must be in (0, to - from] and the refinement in [0, "
                    "step] (got step {}, refine {})",
                    o.step, o.refine));
  Outcomes outcomes(evaluate);
  const std::vector<long long> coarse = grid(o.from, o.to, o.step);
  const std::optional<long long> all = search(outcomes, coarse, o, "");
  if (!all) throw std::invalid_argument("no record of this GPU generation was compared: nothing to fit");

  GenerationFitResult r;
  r.fit.arch = o.arch;
  r.fit.gemm = fraction_of(*all);
  std::map<std::string, int> counts;
  for (const SourceError& e : outcomes.at(*all)) ++counts[e.source];
  for (const auto& [source, n] : counts) {
    const std::optional<long long> k = search(outcomes, coarse, o, source);
    r.fit.without.emplace_back(source, k ? fraction_of(*k) : fallback);
    r.records_per_source.emplace_back(source, n);
  }
  for (const auto& [k, errors] : outcomes.all()) r.curve.emplace_back(fraction_of(k), *median_without(errors, ""));
  r.fit.source = fmt::format("{} GEMM fraction {:.3f}, fitted on {} records of {} sources", name(o.arch), r.fit.gemm,
                             outcomes.at(*all).size(), counts.size());
  return r;
}

FractionEvaluator validation_evaluator(std::vector<MeasuredRun> runs, InStepFractions base, GpuArch arch,
                                       unsigned threads, std::function<void(double)> progress) {
  std::vector<MeasuredRun> of_arch;
  for (MeasuredRun& run : runs) {
    const GpuSpec* gpu = find_gpu(run.gpu);
    const bool kernel_fit_source =
        std::find(base.fitted_on.begin(), base.fitted_on.end(), run.source) != base.fitted_on.end();
    if (gpu && gpu->arch == arch && !kernel_fit_source) of_arch.push_back(std::move(run));
  }
  std::erase_if(base.generations, [&](const GenerationGemmFit& g) { return g.arch == arch; });
  auto records = std::make_shared<const std::vector<MeasuredRun>>(std::move(of_arch));
  return [records, base, arch, threads, progress](double fraction) {
    if (progress) progress(fraction);
    InStepFractions candidate = base;
    GenerationGemmFit g;
    g.arch = arch;
    g.gemm = fraction;
    g.source = fmt::format("{} GEMM fraction {:.3f} (a candidate of `stepcast fit generation`)", name(arch), fraction);
    candidate.generations.push_back(g);
    const std::vector<ValidationRow> rows =
        validate_runs(*records, nullptr, "", threads, {}, true, std::make_shared<const InStepFractions>(candidate));
    std::vector<SourceError> out;
    for (const ValidationRow& row : rows)
      if (row.status == "ok" && row.trust != "low" && row.error_pct)
        out.push_back({row.source, std::abs(*row.error_pct)});
    return out;
  };
}

}  // namespace stepcast
