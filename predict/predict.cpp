/// \file
/// predict(): the composition of the stages in stages.hpp.
#include "predict/predict.hpp"

#include "predict/stages.hpp"

#include <utility>

namespace stepcast {

double usd_per_million_tokens(double price_per_gpu_hour_usd, const Prediction& p) {
  return price_per_gpu_hour_usd * p.gpus * p.step_time_s / 3600.0 / (p.tokens_per_step / 1e6);
}

Prediction predict(const Scenario& scenario, const PredictOptions& options) {
  const Job job = resolve(scenario);
  const Costs costs = cost(job);
  Lowered lowered = lower(job, costs, options);
  sim::SimResult result = simulate(lowered, options);
  const sim::StepBounds bounds = bound(lowered.graph);
  return assemble(job, costs, std::move(lowered), std::move(result), bounds, options);
}

}  // namespace stepcast
