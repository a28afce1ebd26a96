/// \file
/// predict(): the composition of the stages in stages.hpp.
#include "predict/predict.hpp"

#include "predict/stages.hpp"

#include <utility>

namespace stepcast {

Prediction predict(const Scenario& scenario, const PredictOptions& options) {
  const Job job = resolve(scenario);
  const Costs costs = cost(job);
  Lowered lowered = lower(job, costs, options);
  sim::SimResult result = simulate(lowered.graph, options);
  const sim::StepBounds bounds = bound(lowered.graph);
  return assemble(job, costs, std::move(lowered), std::move(result), bounds, options);
}

}  // namespace stepcast
