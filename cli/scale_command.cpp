/// \file
/// `stepcast scale SCENARIO --gpus 1,8,16`: one scenario predicted on several GPU counts.
#include "cli/command.hpp"

#include "predict/predict.hpp"
#include "report/report.hpp"
#include "report/report_html.hpp"
#include "scenario/scenario.hpp"

#include <unistd.h>

#include <cstdio>
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

namespace stepcast::cli {

namespace {

std::string scale_examples() {
  return examples({{fmt::format("stepcast scale {} --gpus 1,8,16,32", kMultiNodeSeed), "scaling table"},
                   {fmt::format("stepcast scale {} --gpus 1,2,4,8 --json", kSeed), "one box, as JSON"},
                   {fmt::format("stepcast scale {} --gpus 8,16,32 --fixed-batch", kMultiNodeSeed),
                    "strong scaling: one global batch"}});
}

struct ScaleArgs {
  std::string scenario;
  std::vector<int> gpus;
  bool json = false;
  bool csv = false;
  bool fixed_batch = false;  ///< hold the scenario's global batch (strong scaling)
  std::string html;          ///< HTML report to write; empty: none
};

int run_scale(const ScaleArgs& args) {
  const Scenario base = load_scenario(args.scenario);
  // Check every count before spending time on predictions.
  std::vector<Scenario> scenarios;
  scenarios.reserve(args.gpus.size());
  for (int n : args.gpus) scenarios.push_back(on_gpus(base, n, args.fixed_batch));

  const bool progress = isatty(fileno(stderr)) != 0;
  std::vector<Prediction> predictions;
  predictions.reserve(scenarios.size());
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    if (progress) fmt::print(stderr, "[{}/{}] {} GPUs\n", i + 1, scenarios.size(), args.gpus[i]);
    predictions.push_back(predict(scenarios[i]));
  }
  const auto rows = cli::scale_rows(scenarios, predictions, base.price_per_gpu_hour_usd);
  if (!args.html.empty()) write_file(args.html, cli::scale_html(base, scenarios, predictions), "HTML report");
  write(args.csv    ? cli::scale_csv(rows)
        : args.json ? cli::scale_json(base, rows, args.fixed_batch)
                    : cli::scale_text(base, rows, args.fixed_batch));
  return kExitOk;
}

CLI::App* add_scale_command(CLI::App& app, ScaleArgs& sa) {
  CLI::App* cmd = app.add_subcommand("scale", "Predict one scenario on several GPU counts");
  cmd->add_option("SCENARIO", sa.scenario, "Scenario file (JSON)")->required();
  cmd->add_option("--gpus", sa.gpus, "Comma-separated GPU counts, e.g. 1,8,16,32")
      ->required()
      ->delimiter(',')
      ->check(gpu_count());
  CLI::Option* json =
      cmd->add_flag("--json", sa.json, "Print {\"scenario\": ..., \"rows\": [...]} instead of the table");
  cmd->add_flag("--csv", sa.csv, "Print the table as CSV (units in the column names)")->excludes(json);
  cmd->add_flag("--fixed-batch", sa.fixed_batch,
                "Hold the scenario's global batch (strong scaling): fewer micro-steps per GPU as GPUs grow");
  add_html_option(cmd, sa.html);
  cmd->footer(
      footer("One row per GPU count. By default the micro-batch per GPU stays fixed, so the global batch\n"
             "grows (weak scaling); --fixed-batch holds the scenario's global batch (micro_batch x grad_accum\n"
             "x data-parallel ranks): each count runs it as fewer micro-steps, then smaller micro-batches\n"
             "(strong scaling; a count whose data-parallel ranks do not divide it is an error). Columns:\n"
             "GPUs, nodes, step time, tokens/s, MFU, time per epoch, USD per million tokens (with a\n"
             "price), speedup and scaling efficiency against the baseline -- the fewest GPUs that fit\n"
             "in memory (marked *; rows that do not fit get none) -- memory per GPU and whether it\n"
             "fits. --json rows add tokens/s/GPU and the cost per epoch. Counts above one box must\n"
             "fill whole nodes. Progress goes to stderr when it is a terminal.\n",
             scale_examples(), true));

  return cmd;
}

}  // namespace

Command scale_command(CLI::App& app) {
  auto args = std::make_shared<ScaleArgs>();
  CLI::App* cmd = add_scale_command(app, *args);
  return {cmd, true, [args] { return run_scale(*args); }};
}

}  // namespace stepcast::cli
