/// \file
/// The HTML report: the page template with its data (the JSON reports, parsed and gathered
/// into one object), the charting library and the page's script put in place.

#include "report/report_html.hpp"

#include "base/version.hpp"
#include "report/report.hpp"
#include "report/report_assets.hpp"
#include "report/trace.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace stepcast::cli {

namespace {

using json = nlohmann::ordered_json;

/// Text escaped for HTML element content and attribute values.
std::string escape_html(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

/// JSON text that is safe inside a <script> element: every '<' (which JSON allows only
/// inside strings) becomes \u003c, so no "</script>" or "<!--" can end or change it.
std::string script_safe(const json& data) {
  const std::string text = data.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '<')
      out += "\\u003c";
    else
      out += c;
  }
  return out;
}

/// A script embedded as it is must not hold a closing tag (the library and page.js do not;
/// a later version of either that did would break the page, so it is an error here).
const std::string& checked_script(const std::string& script, std::string_view what) {
  std::string lower(script.size(), ' ');
  std::transform(script.begin(), script.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower.find("</script") != std::string::npos)
    throw std::logic_error(fmt::format("the HTML report's {} holds \"</script\" and cannot be inlined", what));
  return script;
}

/// The page: the template with @GENERATOR@, @TITLE@, @DATA@, @LIBRARY@ and @SCRIPT@
/// replaced in one pass (replacement text is never scanned again).
std::string page(const std::string& title, json data) {
  if (!html_report_available()) throw std::logic_error(html_report_unavailable_reason());
  const std::string generator = std::string("stepcast ") + version();
  data["generator"] = generator;
  data["library"] = std::string(assets::chart_library_name());
  const std::string library = assets::chart_library();
  const std::string script = assets::page_script();
  const std::vector<std::pair<std::string_view, std::string>> fields = {
      {"@GENERATOR@", escape_html(generator)},
      {"@TITLE@", escape_html(title)},
      {"@DATA@", script_safe(data)},
      {"@LIBRARY@", checked_script(library, "charting library")},
      {"@SCRIPT@", checked_script(script, "page script")}};
  const std::string tmpl = assets::page_template();
  std::string out;
  out.reserve(tmpl.size() + library.size() + script.size() + 4096);
  std::size_t pos = 0;
  while (pos < tmpl.size()) {
    const std::size_t at = tmpl.find('@', pos);
    if (at == std::string::npos) break;
    out.append(tmpl, pos, at - pos);
    pos = at;
    bool replaced = false;
    for (const auto& [key, value] : fields) {
      if (tmpl.compare(at, key.size(), key) == 0) {
        out += value;
        pos = at + key.size();
        replaced = true;
        break;
      }
    }
    if (!replaced) out += tmpl[pos++];
  }
  out.append(tmpl, std::min(pos, tmpl.size()), std::string::npos);
  return out;
}

json parsed(const std::string& text) { return json::parse(text); }

/// The prediction's JSON report, parsed, less the critical path task by task (hundreds of
/// tasks; the page shows the timeline instead, and keeps the path's time by category).
json prediction_data(const Scenario& s, const Prediction& p) {
  json j = parsed(predict_json(s, p));
  j["simulation"].erase("critical_path");
  return j;
}

/// The simulated step's trace (Trace Event Format), or null when the prediction kept none.
json trace_data(const Scenario& s, const Prediction& p) {
  if (!p.simulation) return nullptr;
  const std::string title =
      fmt::format("{} on {} GPUs ({})", p.scenario.empty() ? s.name : p.scenario, p.gpus, name(p.strategy));
  return parsed(sim::chrome_trace_json(p.simulation->graph, p.simulation->result, title));
}

std::string scenario_name(const Scenario& s, const Prediction& p) { return p.scenario.empty() ? s.name : p.scenario; }

/// "8 x a100-sxm4-80gb": how many GPUs of which kind.
std::string gpus_of(const Prediction& p) { return fmt::format("{} x {}", p.gpus, p.gpu); }

}  // namespace

bool html_report_available() { return !assets::chart_library_name().empty(); }

std::string html_report_unavailable_reason() {
  return "the HTML report needs the charting library (Apache ECharts from the npm registry), which this "
         "build of stepcast does not embed: run `bash .ci/setup` (it runs `npm ci` in report/web/ and "
         "rebuilds), or `npm ci` in report/web/ and rebuild";
}

std::string predict_html(const Scenario& s, const Prediction& p) {
  const std::string title = fmt::format("Predicted training step: {} ({} on {}, {})", scenario_name(s, p), s.model.name,
                                        gpus_of(p), name(p.strategy));
  json data = {{"kind", "predict"},
               {"title", title},
               {"subtitle", s.description.empty() ? p.hardware : s.description + " · " + p.hardware},
               {"report", prediction_data(s, p)},
               {"trace", trace_data(s, p)}};
  return page(title, std::move(data));
}

std::string scale_html(const Scenario& base, const std::vector<Scenario>& scenarios,
                       const std::vector<Prediction>& predictions) {
  if (scenarios.size() != predictions.size() || predictions.empty())
    throw std::invalid_argument("scale_html: one scenario per prediction, at least one");
  json report = parsed(scale_json(base, scale_rows(scenarios, predictions, base.price_per_gpu_hour_usd)));
  json preds = json::array();
  for (std::size_t i = 0; i < predictions.size(); ++i) {
    const Prediction& p = predictions[i];
    json& row = report["rows"][i];
    // Figures of the prediction the scale rows may not carry (kept when they do).
    if (!row.contains("tokens_per_s_per_gpu")) row["tokens_per_s_per_gpu"] = p.tokens_per_s_per_gpu;
    if (!row.contains("mfu")) row["mfu"] = p.mfu;
    if (!row.contains("cost_per_epoch_usd"))
      row["cost_per_epoch_usd"] = p.cost_per_epoch_usd ? json(*p.cost_per_epoch_usd) : json(nullptr);
    preds.push_back(prediction_data(scenarios[i], p));
  }
  const Prediction& first = predictions.front();
  const std::string title =
      fmt::format("Predicted scaling: {} ({} on {} to {} x {}, {})", scenario_name(base, first), base.model.name,
                  first.gpus, predictions.back().gpus, first.gpu, name(first.strategy));
  json data = {
      {"kind", "scale"},
      {"title", title},
      {"subtitle", base.description},
      {"price_per_gpu_hour_usd", base.price_per_gpu_hour_usd ? json(*base.price_per_gpu_hour_usd) : json(nullptr)},
      {"report", std::move(report)},
      {"predictions", std::move(preds)}};
  return page(title, std::move(data));
}

std::string compare_html(const std::vector<Scenario>& scenarios, const std::vector<Prediction>& predictions) {
  if (scenarios.size() != predictions.size() || predictions.empty())
    throw std::invalid_argument("compare_html: one scenario per prediction, at least one");
  std::vector<CompareRow> rows;
  json preds = json::array();
  std::vector<std::string> models;
  for (std::size_t i = 0; i < predictions.size(); ++i) {
    rows.push_back(compare_row(scenarios[i], predictions[i]));
    preds.push_back(prediction_data(scenarios[i], predictions[i]));
    if (std::find(models.begin(), models.end(), scenarios[i].model.name) == models.end())
      models.push_back(scenarios[i].model.name);
  }
  compare_against_first(rows);
  const std::string title =
      fmt::format("Predicted comparison: {} on {} hardware choices", join(models, ", "), predictions.size());
  json data = {{"kind", "compare"},
               {"title", title},
               {"subtitle", "Each scenario predicted as written, ranked below."},
               {"report", parsed(compare_json(rows))},
               {"predictions", std::move(preds)}};
  return page(title, std::move(data));
}

std::string plan_html(const Scenario& s, const PlanResult& result, const Prediction* winner_traced) {
  json preds = json::array();
  for (const PlanRow& row : result.top) preds.push_back(prediction_data(with_layout(s, row.point), row.prediction));
  json trace = nullptr;
  if (!result.top.empty() && winner_traced)
    trace = trace_data(with_layout(s, result.top.front().point), *winner_traced);
  const std::string title =
      fmt::format("Planned layouts: {} on {} x {}, global batch {} sequences, objective {}", s.model.name, result.gpus,
                  result.top.empty() ? std::string("GPU") : result.top.front().prediction.gpu, result.global_batch,
                  name(result.objective));
  json data = {{"kind", "plan"},
               {"title", title},
               {"subtitle", s.description.empty() ? s.name : s.name + " · " + s.description},
               {"report", parsed(plan_json(s, result))},
               {"predictions", std::move(preds)},
               {"trace", std::move(trace)}};
  return page(title, std::move(data));
}

std::string validate_html(const std::vector<ValidationRow>& rows, const std::vector<std::string>& inputs) {
  json report = parsed(validate_json(rows, true));
  // The pairs come wrong first; a page lists at most kPagePairs of them (the Ultra-Scale
  // Playbook's file has 6,871) and says how many there are.
  constexpr std::size_t kPagePairs = 500;
  json pairs = std::move(report["pairs"]);
  const std::size_t total = pairs.size();
  const auto wrong = std::count_if(pairs.begin(), pairs.end(), [](const json& p) { return !p["right"].get<bool>(); });
  if (total > kPagePairs) pairs.erase(pairs.begin() + static_cast<std::ptrdiff_t>(kPagePairs), pairs.end());
  report["pairs"] = std::move(pairs);  // counts added last: no reference into report is held across an insert
  report["pairs_total"] = total;
  report["pairs_wrong"] = wrong;
  const json& loso = report["summary_loso"];
  const std::string title = fmt::format("Validation: {} of {} measured runs compared, leave one source out",
                                        loso["count"].get<int>(), rows.size());
  json data = {{"kind", "validate"},
               {"title", title},
               {"subtitle", "Measured runs from " + join(inputs, ", ")},
               {"report", std::move(report)}};
  return page(title, std::move(data));
}

}  // namespace stepcast::cli
