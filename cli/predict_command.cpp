/// \file
/// `stepcast predict SCENARIO`: one prediction, as text, JSON, a Chrome trace or an HTML page.
#include "cli/command.hpp"

#include "predict/predict.hpp"
#include "report/report.hpp"
#include "report/report_html.hpp"
#include "report/trace.hpp"
#include "scenario/scenario.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

namespace stepcast::cli {

namespace {

std::string predict_examples() {
  return examples({{fmt::format("stepcast predict {}", kSeed), "text report"},
                   {fmt::format("stepcast predict {} --gpus 4 --json", kSeed),
                    "the same scenario on 4 of its 8 GPUs, as one JSON object"},
                   {fmt::format("stepcast predict {} --trace /tmp/gpt2-xl-step.json", kSeed),
                    "also write the simulated step's timeline; open it in https://ui.perfetto.dev"}});
}

struct PredictArgs {
  std::string scenario;
  int gpus = 0;  ///< 0: as the scenario says
  bool json = false;
  std::string trace;        ///< Chrome trace file to write; empty: none
  std::string html;         ///< HTML report to write; empty: none
  std::string calibration;  ///< hardware file from `stepcast fit` replacing the scenario's; empty: none
  std::string in_step;      ///< in-step fractions from `stepcast fit in-step`; empty: the catalog's
};

int run_predict(const PredictArgs& args) {
  ReadOptions read;
  read.calibration_file = args.calibration;
  read.in_step_file = args.in_step;
  read.gpus = args.gpus;
  const Scenario s = load_scenario(args.scenario, read);
  PredictOptions options;
  options.keep_simulation = options.record_timelines = !args.trace.empty() || !args.html.empty();
  const Prediction p = predict(s, options);
  if (!args.trace.empty()) {
    if (!p.simulation) throw std::logic_error("predict kept no simulation for the trace");
    const std::string title =
        fmt::format("{} on {} GPUs ({})", p.scenario.empty() ? s.name : p.scenario, p.gpus, name(p.strategy));
    write_file(args.trace, sim::chrome_trace_json(p.simulation->graph, p.simulation->result, title), "trace file");
  }
  if (!args.html.empty()) write_file(args.html, cli::predict_html(s, p), "HTML report");
  write(args.json ? cli::predict_json(s, p, args.trace) : cli::predict_text(s, p, args.trace));
  return kExitOk;
}

CLI::App* add_predict_command(CLI::App& app, PredictArgs& pa) {
  CLI::App* cmd = app.add_subcommand("predict", "Predict step time, throughput, epoch time and memory");
  cmd->add_option("SCENARIO", pa.scenario, "Scenario file (JSON)")->required();
  cmd->add_option("--gpus", pa.gpus,
                  "Total GPUs to predict on instead of the scenario's\n"
                  "(whole nodes above one box)")
      ->check(gpu_count());
  cmd->add_flag("--json", pa.json, "Print one JSON object instead of the text report");
  cmd->add_option("--calibration", pa.calibration,
                  "Hardware file from `stepcast fit` whose measured rates\n"
                  "replace the catalog's (and the scenario's calibration)")
      ->option_text("FILE");
  cmd->add_option("--in-step", pa.in_step,
                  "In-step fractions from `stepcast fit in-step` instead of\n"
                  "model/catalog/in_step.json")
      ->option_text("FILE");
  cmd->add_option("--trace", pa.trace,
                  "Also write the simulated step as a Chrome trace (JSON)\n"
                  "to FILE; open it in https://ui.perfetto.dev")
      ->option_text("FILE")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            return text.empty() ? "expected a file name for the trace, got an empty one" : "";
          },
          "FILE", "trace_file"));
  add_html_option(cmd, pa.html);
  cmd->footer(
      footer("The report: the simulated step time and its parts (forward, backward, recompute,\n"
             "optimizer, compute slowed by NCCL, exposed and hidden communication, idle) with the\n"
             "closed-form perfect-overlap and no-overlap bounds; the simulation: compute and\n"
             "communication busy time, overlap ratio, time per stream and per link, the critical\n"
             "path by category with its longest tasks, peak memory; tokens/s, samples/s, MFU and\n"
             "HFU with the peak used; steps, time and cost per epoch; memory per GPU term by term\n"
             "with the verdict (FITS / TIGHT / OUT OF MEMORY); each collective with its size,\n"
             "algorithm, time and bus bandwidth; the fabric; the assumptions; and measured vs\n"
             "predicted with the error when the scenario has measured figures.\n"
             "\n"
             "--trace FILE writes the simulated step in the Trace Event Format (Perfetto,\n"
             "chrome://tracing): one process per rank class, one thread per stream (compute,\n"
             "NCCL streams) with every kernel and collective as a slice, link utilization (%) and\n"
             "memory (GiB) as counters. A FILE that cannot be written is an error (exit 2).\n",
             predict_examples(), true));

  return cmd;
}

}  // namespace

Command predict_command(CLI::App& app) {
  auto args = std::make_shared<PredictArgs>();
  CLI::App* cmd = add_predict_command(app, *args);
  return {cmd, true, [args] { return run_predict(*args); }};
}

}  // namespace stepcast::cli
