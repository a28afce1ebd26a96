/// \file
/// `stepcast compare A.json B.json`: one job on several hardware choices, side by side.
#include "cli/command.hpp"

#include "predict/predict.hpp"
#include "report/report.hpp"
#include "report/report_html.hpp"
#include "scenario/scenario.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

namespace stepcast::cli {

namespace {

struct CompareArgs {
  std::vector<std::string> scenarios;
  bool json = false;
  bool csv = false;
  std::string html;  ///< HTML report to write; empty: none
};

int run_compare(const CompareArgs& args) {
  std::vector<cli::CompareRow> rows;
  std::vector<Scenario> loaded;
  std::vector<Prediction> predictions;
  for (const std::string& file : args.scenarios) {
    loaded.push_back(load_scenario(file));
    predictions.push_back(predict(loaded.back()));
    rows.push_back(cli::compare_row(loaded.back(), predictions.back()));
  }
  cli::compare_against_first(rows);
  if (!args.html.empty()) write_file(args.html, cli::compare_html(loaded, predictions), "HTML report");
  write(args.csv ? cli::compare_csv(rows) : args.json ? cli::compare_json(rows) : cli::compare_text(rows));
  return kExitOk;
}

CLI::App* add_compare_command(CLI::App& app, CompareArgs& ca) {
  CLI::App* cmd = app.add_subcommand("compare", "Compare one job on several hardware choices side by side");
  cmd->add_option("SCENARIOS", ca.scenarios, "Scenario files (JSON), two or more")->required()->expected(1, -1);
  CLI::Option* json = cmd->add_flag("--json", ca.json, "Print {\"rows\": [...]} instead of the table");
  cmd->add_flag("--csv", ca.csv, "Print the table as CSV (units in the column names)")->excludes(json);
  add_html_option(cmd, ca.html);
  cmd->footer(footer(
      "Predicts each scenario as written and prints one row each: hardware, GPUs, step time (s),\n"
      "time per epoch (h), tokens/s, cost per epoch and per million tokens (USD, where the\n"
      "scenario gives price_per_gpu_hour_usd) and memory per GPU with its verdict. A note says\n"
      "where two rows are not the same job (model or tokens per step differ).\n",
      examples({{"stepcast compare scenarios/seeds/lightning-ddp-8xa100.json scenarios/seeds/lightning-ddp-3xh100.json",
                 "8 A100 against 3 H100 for the same job"},
                {"stepcast compare a.json b.json --json", "as JSON"}}),
      true));
  return cmd;
}

}  // namespace

Command compare_command(CLI::App& app) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* cmd = add_compare_command(app, *args);
  return {cmd, true, [args] { return run_compare(*args); }};
}

}  // namespace stepcast::cli
