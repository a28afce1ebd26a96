/// \file
/// `stepcast validate RUNS.jsonl`: predictions against measured runs, with their error statistics.
#include "cli/command.hpp"

#include "report/gate_report.hpp"
#include "report/report.hpp"
#include "report/report_html.hpp"
#include "topologies/hardware_file.hpp"
#include "validate/gate.hpp"
#include "validate/validation.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <optional>
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
  std::string junit;        ///< JUnit XML report to write; empty: none
  std::string gate_file;    ///< --gate FILE; empty: none
  GateLimits limits;        ///< the limits given as options (over the file's overall ones)
};

/// The gate of the file and the options (an option replaces the file's overall value).
Gate gate_of(const ValidateArgs& args) {
  Gate g;
  if (!args.gate_file.empty()) {
    if (!std::filesystem::exists(args.gate_file)) throw UserError("no such gate file: " + args.gate_file);
    g = load_gate(args.gate_file);
  }
  const GateLimits& o = args.limits;
  GateLimits& a = g.all;
  for (auto [from, to] :
       {std::pair{&o.median_abs_error_pct, &a.median_abs_error_pct},
        std::pair{&o.p90_abs_error_pct, &a.p90_abs_error_pct}, std::pair{&o.max_abs_error_pct, &a.max_abs_error_pct},
        std::pair{&o.ordering_accuracy, &a.ordering_accuracy},
        std::pair{&o.min_compared_fraction, &a.min_compared_fraction}})
    if (*from) *to = *from;
  if (o.min_count) a.min_count = o.min_count;
  return g;
}

/// Where the gate's limits came from, for its summary.
std::string gate_origin(const ValidateArgs& args) {
  const bool options = !args.limits.empty();
  if (args.gate_file.empty()) return "command line";
  return options ? args.gate_file + " and the command line" : args.gate_file;
}

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
  const Gate gate = gate_of(args);
  const bool gated = !args.gate_file.empty() || !args.limits.empty();
  if (!args.gate_file.empty()) check_gate_groups(gate, runs, args.gate_file);
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
  const std::optional<GateResult> verdict = gated ? std::optional(apply_gate(gate, rows)) : std::nullopt;
  if (!args.junit.empty()) write_file(args.junit, validate_junit(rows, verdict ? &*verdict : nullptr), "JUnit report");
  write(args.csv    ? cli::validate_csv(rows)
        : args.json ? cli::validate_json(rows, args.pairs)
                    : cli::validate_text(rows, args.in_step, args.pairs));
  if (!verdict) return kExitOk;
  fmt::print(stderr, "{}", gate_text(*verdict, gate_origin(args)));
  return verdict->passed() ? kExitOk : kExitGate;
}

/// A percentage on the command line, "8" or "8%", from 0 to `max`, passed on times `scale`
/// (1: as a percentage; 0.01: as a fraction).
CLI::Validator percentage(double max, double scale) {
  return CLI::Validator(
      [max, scale](std::string& text) -> std::string {
        std::string number = text;
        if (!number.empty() && number.back() == '%') number.pop_back();
        double value = NAN;
        std::size_t used = 0;
        try {
          value = std::stod(number, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (number.empty() || used != number.size() || !std::isfinite(value) || value < 0 || value > max)
          return fmt::format("expected a percentage from 0 to {:g} (e.g. 8 or 8%), got \"{}\"", max, text);
        text = fmt::format("{}", value * scale);
        return {};
      },
      "PCT", "percentage");
}

/// --gate, the limits as options and --junit.
void add_gate_options(CLI::App* cmd, ValidateArgs& va) {
  cmd->add_option("--gate", va.gate_file,
                  "Gate file (JSON): limits overall, per source and per GPU;\n"
                  "exit 3 when a limit is crossed (format below)")
      ->option_text("FILE");
  GateLimits& l = va.limits;
  auto pct = [&](const char* name, std::optional<double>& to, const char* help, double max, double scale) {
    cmd->add_option(name, to, help)->transform(percentage(max, scale))->option_text("PCT");
  };
  pct("--max-median-error", l.median_abs_error_pct, "Gate: median |error| at most PCT", 1e9, 1);
  pct("--max-p90-error", l.p90_abs_error_pct, "Gate: p90 |error| at most PCT", 1e9, 1);
  pct("--max-record-error", l.max_abs_error_pct,
      "Gate: every record's |error| at most PCT (its\ntolerance; a JUnit failure beyond it)", 1e9, 1);
  pct("--min-ordering", l.ordering_accuracy, "Gate: ordering pairs predicted in order, at least PCT", 100, 0.01);
  cmd->add_option("--min-compared", l.min_count, "Gate: records compared (not skipped), at least N")
      ->option_text("N")
      ->check(CLI::Range(0, 1 << 30));
  pct("--min-compared-share", l.min_compared_fraction, "Gate: records compared, at least PCT of the trusted ones", 100,
      0.01);
  cmd->add_option("--junit", va.junit,
                  "Also write a JUnit XML report to FILE: a test case per\n"
                  "record (failed beyond its tolerance, skipped with the\nreason) and one per gate limit")
      ->option_text("FILE")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            return text.empty() ? "expected a file name for the JUnit report, got an empty one" : "";
          },
          "FILE", "junit_file"));
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
  add_gate_options(cmd, va);
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
             "shown but kept out of the summaries.\n"
             "\n"
             "Gate (for CI): --gate FILE and the --max-*/--min-* options set limits on the overall\n"
             "summary (an option replaces the file's value); the file can also set them per source\n"
             "and per GPU. After the report, stderr gets one line per limit (ok or FAIL, the figure,\n"
             "the limit, by how much), and the exit status is 3 when any is crossed. A gate file:\n"
             "  {\"median_abs_error_pct\": 8, \"p90_abs_error_pct\": 20,   (at most; --max-median-error,\n"
             "   \"max_abs_error_pct\": 35,                             --max-p90-error, --max-record-error)\n"
             "   \"ordering_accuracy\": 0.8, \"min_count\": 100,         (at least; a fraction; --min-ordering,\n"
             "   \"min_compared_fraction\": 0.9,                         --min-compared, --min-compared-share)\n"
             "   \"sources\": {\"<source>\": {same keys}}, \"gpus\": {\"<gpu>\": {same keys}}, \"about\": \"...\"}\n"
             "max_abs_error_pct is each record's tolerance (its source's, else its GPU's, else the\n"
             "overall one); low-trust and skipped records are not gated. --junit FILE writes JUnit\n"
             "XML: a test case per record (classname: source; name: id), failed beyond its tolerance,\n"
             "skipped with the reason, and one per gate limit.\n",
             examples({{"stepcast validate data/validation/runs.jsonl", "the published runs"},
                       {"stepcast validate runs/ --json", "every .jsonl in a folder, as JSON"},
                       {"stepcast validate data/validation/runs.jsonl --html validation.html",
                        "the same as a page: predicted against measured, errors by source, pairs"},
                       {"stepcast validate runs/ --calibration hw.json --max-median-error 8 --max-record-error 25 "
                        "--junit report.xml",
                        "a CI gate: exit 3 when the median |error| exceeds 8% or a record's 25%"}}),
             true) +
      "  3  the gate (--gate, --max-*, --min-*) was crossed: the report was written, and stderr\n"
      "     names each limit crossed and by how much\n");

  return cmd;
}

}  // namespace

Command validate_command(CLI::App& app) {
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* cmd = add_validate_command(app, *args);
  return {cmd, true, [args] { return run_validate(*args); }};
}

}  // namespace stepcast::cli
