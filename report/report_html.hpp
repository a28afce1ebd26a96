/// \file
/// The HTML report (`--html FILE` on predict, scale, compare, plan and validate): one self-contained
/// page that works offline. Its data is one JSON object in a <script type="application/json">
/// tag, built from the JSON reports (report_json.cpp) and the simulated step's trace
/// (simulator/trace.hpp), so the page shows the same results; its charts are drawn in the
/// browser by the charting library embedded at build time (report_assets.hpp) and the page's
/// script (report/web/page.js). Pure functions from results to text, as the other reports.
#pragma once

#include "planner/plan.hpp"
#include "predict/predict.hpp"
#include "scenario/scenario.hpp"
#include "validate/validation.hpp"

#include <string>
#include <vector>

namespace stepcast::cli {

/// Whether this build embeds the charting library (`--html` refuses without it).
bool html_report_available();
/// Why `--html` cannot work in this build, naming the setup step that fixes it.
std::string html_report_unavailable_reason();

/// The page of one prediction: key figures, the step's timeline (streams and links; needs
/// the prediction made with PredictOptions::keep_simulation and record_timelines, else the
/// timeline is left out), the breakdown of the step time, memory per GPU against capacity,
/// the collectives and the assumptions.
std::string predict_html(const Scenario& scenario, const Prediction& prediction);

/// The page of a scaling sweep: speed-up, scaling efficiency and cost (or time) per epoch
/// against GPUs, the step-time breakdown and memory per GPU of each count, the rows, and the
/// assumptions. `scenarios[i]` is the scenario `predictions[i]` was made from.
std::string scale_html(const Scenario& base, const std::vector<Scenario>& scenarios,
                       const std::vector<Prediction>& predictions);

/// The page of `stepcast compare`: the ranked table, throughput, step-time breakdown and
/// memory per GPU of each scenario, and each one's assumptions.
std::string compare_html(const std::vector<Scenario>& scenarios, const std::vector<Prediction>& predictions);

/// The page of `stepcast plan`: the ranked layouts, the winner's timeline, the step-time
/// breakdown and memory per GPU of each layout, the rejections, and the winner's
/// assumptions; the winner's timeline from `winner_traced`, its prediction with the simulation
/// kept (predict with keep_simulation: the same deterministic prediction as its row), when
/// given. The page formats; it runs no model.
std::string plan_html(const Scenario& scenario, const PlanResult& result, const Prediction* winner_traced);

/// The page of `stepcast validate`: the leave-one-source-out and fit-free summaries, each
/// record's prediction against its measurement (log-log, one series per metric, each in its
/// own unit) and its signed error by source, the per-source table, the ordering pairs (the
/// wrong ones first), every record with its status, and the assumptions with how many
/// records each was made for. `inputs` names the record files, for the subtitle.
std::string validate_html(const std::vector<ValidationRow>& rows, const std::vector<std::string>& inputs);

}  // namespace stepcast::cli
