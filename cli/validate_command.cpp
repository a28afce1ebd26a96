/// \file
/// `stepcast validate RUNS.jsonl`: predictions against measured runs, with their error statistics.
#include "cli/command.hpp"

#include "report/report.hpp"
#include "report/report_html.hpp"
#include "topologies/hardware_file.hpp"
#include "validate/validation.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

namespace stepcast::cli {

namespace {

struct ValidateArgs {
  std::vector<std::string> inputs;
  bool json = false;
  bool csv = false;
  std::string calibration;  ///< hardware file from `stepcast fit`; empty: none
  bool assume_host = true;  ///< offload records on the catalog box's host (--no-assume-host: skipped)
  std::string in_step;      ///< in-step fractions from `stepcast fit in-step`; empty: the catalog's
  bool pairs = false;       ///< list the ordering pairs (--pairs)
  std::string html;         ///< HTML report to write; empty: none
};

int run_validate(const ValidateArgs& args) {
  std::vector<MeasuredRun> runs;
  for (const std::string& in : args.inputs) {
    if (!std::filesystem::exists(in)) throw UserError("no such file or folder: " + in);
    auto more = load_measured_runs(in);
    runs.insert(runs.end(), more.begin(), more.end());
  }
  std::shared_ptr<const HardwareFile> calibration;
  if (!args.calibration.empty()) {
    if (!std::filesystem::exists(args.calibration)) throw UserError("no such hardware file: " + args.calibration);
    calibration = std::make_shared<const HardwareFile>(load_hardware(args.calibration));
  }
  const auto in_step = load_in_step_option(args.in_step);
  const bool progress = isatty(fileno(stderr)) != 0;
  const auto rows = validate_runs(
      runs, calibration, args.calibration, 0,
      [&](std::size_t done, std::size_t total) {
        if (progress && (done % 20 == 0 || done == total)) fmt::print(stderr, "\r[{}/{}]", done, total);
      },
      args.assume_host, in_step);
  if (progress) fmt::print(stderr, "\n");
  if (!args.html.empty()) write_file(args.html, cli::validate_html(rows, args.inputs), "HTML report");
  write(args.csv    ? cli::validate_csv(rows)
        : args.json ? cli::validate_json(rows, args.pairs)
                    : cli::validate_text(rows, args.in_step, args.pairs));
  return kExitOk;
}

CLI::App* add_validate_command(CLI::App& app, ValidateArgs& va) {
  CLI::App* cmd = app.add_subcommand("validate", "Compare predictions with measured runs (runs.jsonl records)");
  cmd->add_option("RUNS", va.inputs, "Measured-run files (.jsonl) or folders of them")->required();
  cmd->add_option("--calibration", va.calibration, "Hardware file from `stepcast fit`, used for records on its GPU")
      ->option_text("FILE");
  cmd->add_option("--in-step", va.in_step,
                  "In-step fractions from `stepcast fit in-step` instead of\n"
                  "model/catalog/in_step.json (records of the sources it was\n"
                  "fitted on are predicted with isolated rates)")
      ->option_text("FILE");
  CLI::Option* json = cmd->add_flag(
      "--json", va.json, "Print {\"runs\": [...], \"summary_loso\": {...}, \"sources\": [...]} instead of the tables");
  cmd->add_flag("--assume-host,!--no-assume-host", va.assume_host,
                "CPU-offload records state no host: predict them on the host of their GPU's catalog box "
                "(default, printed as an assumption), or skip them (--no-assume-host)");
  cmd->add_flag("--csv", va.csv, "Print one CSV row per record (units in the column names)")->excludes(json);
  cmd->add_flag("--pairs", va.pairs,
                "Also list every ordering pair (two records one knob apart), the wrong ones first "
                "(with --json: a \"pairs\" array)");
  add_html_option(cmd, va.html);
  cmd->footer(
      footer("Each record (one JSON object per line, the measured-run record format of data/validation/SCHEMA.md)\n"
             "becomes a scenario where stepcast can represent it; the record's metric is predicted\n"
             "with the record's definition (tokens/s/GPU, step time, TFLOP/s per GPU, MFU,\n"
             "samples/s) and the signed error reported. Records stepcast cannot represent yet\n"
             "(unstated parallel degrees, precision, checkpointing or batch, a host for offload, wall-\n"
             "clock metrics that need the data set) are listed as `skipped: <reason>`, never dropped;\n"
             "any other failure is an error. Device rates come from kernel tables and datasheets,\n"
             "scaled by the in-step fractions of model/catalog/in_step.json (fitted on one published\n"
             "in-step decomposition, whose source's records use isolated rates; Ampere's GEMM\n"
             "fraction fitted on A100 runs, each source's records predicted with the fraction\n"
             "fitted without that source; the fit-free summary uses isolated rates everywhere),\n"
             "so every figure is leave-one-source-out. The summaries (overall and per\n"
             "source, strategy and GPU) give count, median, p90 and max |error| and ordering accuracy\n"
             "over pairs of records from one source that differ in one knob. Low-trust records are\n"
             "shown but kept out of the summaries.\n",
             examples({{"stepcast validate data/validation/runs.jsonl", "the published runs"},
                       {"stepcast validate runs/ --json", "every .jsonl in a folder, as JSON"},
                       {"stepcast validate data/validation/runs.jsonl --html validation.html",
                        "the same as a page: predicted against measured, errors by source, pairs"}}),
             true));

  return cmd;
}

}  // namespace

Command validate_command(CLI::App& app) {
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* cmd = add_validate_command(app, *args);
  return {cmd, true, [args] { return run_validate(*args); }};
}

}  // namespace stepcast::cli
