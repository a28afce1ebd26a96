/// \file
/// The `stepcast` command: argument parsing (CLI11), dispatch to the library, and exit
/// codes. Reports are built by report_text.cpp / report_json.cpp; this file only writes
/// them. Exit codes: 0 success; 2 for anything the user can fix (an unreadable or invalid
/// scenario, record, raw file or catalog: stepcast::InputError; a bad command line; an
/// output -- standard output, a --trace or -o file -- that cannot be written); 1 for a broken
/// invariant, i.e. a bug, with a message asking for a report. Only errors the front end
/// itself recognises as the user's become 2: the library's own exceptions other than
/// InputError (std::invalid_argument from deep in the model included) are internal errors.
/// Every error is one line on stderr: `stepcast: error: <message>`; a file with several
/// problems gets one such line for each, then one counting them.

#include "cli/fit_generation.hpp"
#include "cli/fit_in_step.hpp"
#include "cli/need_command.hpp"
#include "report/need_view.hpp"
#include "cli/progress.hpp"
#include "report/report.hpp"
#include "report/report_html.hpp"
#include "cli/user_catalog.hpp"

#include "topologies/hardware_file.hpp"

#include "calibrate/fit/fit.hpp"
#include "base/json_input.hpp"
#include "base/types.hpp"
#include "planner/plan.hpp"
#include "predict/predict.hpp"
#include "scenario/scenario.hpp"
#include "scenario/schema.hpp"
#include "scenario/starter.hpp"
#include "report/trace.hpp"
#include "validate/validation.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#ifndef STEPCAST_VERSION
#define STEPCAST_VERSION "unknown"
#endif

namespace {

using namespace stepcast;
using cli::join;

/// Bad input found outside the JSON readers, recognised as the user's by the front end
/// itself: a --gpus count the hardware cannot take, an unknown --gpu or --box, a catalog
/// section, a missing file, an output that cannot be written.
class UserError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

constexpr int kExitOk = 0;
constexpr int kExitInternal = 1;
constexpr int kExitBadInput = 2;

void error(std::string_view message) { fmt::print(stderr, "stepcast: error: {}\n", message); }

/// Writes `text` to standard output and makes sure it got there: a short write, a failed
/// flush or the stream's error state (a full disk, a closed descriptor) is an error the user
/// can fix, never a silent success.
void write(const std::string& text) {
  errno = 0;
  const bool written = std::fwrite(text.data(), 1, text.size(), stdout) == text.size();
  const bool flushed = std::fflush(stdout) == 0;
  if (!written || !flushed || std::ferror(stdout))
    throw UserError(
        fmt::format("cannot write the report to standard output: {}", errno ? std::strerror(errno) : "write error"));
}

/// Writes `text` to the file at `path` (created or replaced); a path that cannot be
/// written is bad input, named with the reason.
void write_file(const std::string& path, const std::string& text, std::string_view what) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw UserError(fmt::format("cannot write the {} {}: {}", what, path, std::strerror(errno)));
  errno = 0;
  const bool written =
      std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fflush(f) == 0 && !std::ferror(f);
  const int write_errno = errno;
  errno = 0;
  const bool closed = std::fclose(f) == 0;
  const int close_errno = errno;
  if (!written || !closed) {
    const int cause = !written ? write_errno : close_errno;
    throw UserError(
        fmt::format("cannot write the {} {}: {}", what, path, cause ? std::strerror(cause) : "write error"));
  }
}

// ---------------------------------------------------------------------------------------
// help text

/// Words of `text` wrapped at `width` columns, continuation lines indented by `indent`.
std::string wrap(const std::string& text, std::size_t first_column, std::size_t indent, std::size_t width = 90) {
  std::string out;
  std::size_t column = first_column;
  bool line_has_word = false;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find(' ', pos);
    if (end == std::string::npos) end = text.size();
    const std::string_view word(text.data() + pos, end - pos);
    if (line_has_word && column + 1 + word.size() > width) {
      out += "\n" + std::string(indent, ' ');
      column = indent;
      line_has_word = false;
    }
    if (line_has_word) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
    line_has_word = true;
    pos = end + 1;
  }
  return out;
}

/// What a scenario file holds; shown by every command's --help. The required keys come from
/// the schema (scenario/schema.hpp); `stepcast schema` prints every key.
std::string scenario_help() {
  const Schema& schema = scenario_schema();
  std::vector<std::string> required;
  for (const SchemaKey& k : schema.keys()) {
    bool all = k.required;
    for (std::size_t slash = k.path.find('/', 1); all && slash != std::string::npos;
         slash = k.path.find('/', slash + 1))
      all = schema.key(k.path.substr(0, slash)).required;  // under required objects only
    if (all) {
      std::string dotted = k.path.substr(1);
      std::replace(dotted.begin(), dotted.end(), '/', '.');
      required.push_back(dotted);
    }
  }
  return wrap("Scenario file (JSON; ready-made ones in scenarios/, `stepcast init` writes a starter). Required: " +
                  join(required, ", ") +
                  ", and hardware.box or hardware.cluster. Every other key has a default, "
                  "printed under Assumptions; `stepcast schema` lists every key with its values and default "
                  "(docs/scenario.md holds the same table).",
              0, 0) +
         "\n"
         "Every value is checked, and every problem of a file is reported at once: unknown keys\n"
         "(with the keys allowed there), wrong types, missing keys, out-of-range numbers and unknown\n"
         "names (with a \"did you mean\" for a close one), each naming the file and the JSON path.\n";
}

std::string exit_code_help() {
  return "Exit codes:\n"
         "  0  success\n"
         "  1  internal error (a bug in stepcast; please report it with the scenario)\n"
         "  2  bad input: a scenario or catalog file that cannot be read or is invalid (the\n"
         "     message names the file and the JSON path), a bad command line, or an output\n"
         "     (standard output, a --trace file) that cannot be written (the message says which)\n";
}

/// Seed scenarios the examples use (the tests predict every seed, so these stay valid).
constexpr const char* kSeed = "scenarios/seeds/gpt2-xl-ddp-8xa100.json";
constexpr const char* kMultiNodeSeed = "scenarios/seeds/rule-of-thumb-10b-4x8a100-400g.json";

/// An "Examples:" block: each command line under a comment saying what it does.
std::string examples(const std::vector<std::pair<std::string, std::string>>& lines) {
  std::string out = "Examples:\n";
  for (const auto& [command, what] : lines) out += fmt::format("  # {}\n  {}\n", what, command);
  return out;
}

std::string predict_examples() {
  return examples({{fmt::format("stepcast predict {}", kSeed), "text report"},
                   {fmt::format("stepcast predict {} --gpus 4 --json", kSeed),
                    "the same scenario on 4 of its 8 GPUs, as one JSON object"},
                   {fmt::format("stepcast predict {} --trace /tmp/gpt2-xl-step.json", kSeed),
                    "also write the simulated step's timeline; open it in https://ui.perfetto.dev"}});
}

std::string scale_examples() {
  return examples({{fmt::format("stepcast scale {} --gpus 1,8,16,32", kMultiNodeSeed), "scaling table"},
                   {fmt::format("stepcast scale {} --gpus 1,2,4,8 --json", kSeed), "one box, as JSON"}});
}

std::string catalog_examples() {
  return examples({{"stepcast catalog", "every catalog"},
                   {"stepcast catalog gpus", "GPUs with peaks, memory, NVLink and sources"},
                   {"stepcast catalog --json", "every catalog as one JSON object"}});
}

/// The footer of `stepcast fit --help`: details, examples, and its own exit codes (its
/// input is a calibration file, not a scenario).
std::string fit_footer(const std::string& details, const std::string& example_block) {
  return details + "\n" + example_block +
         "\nExit codes:\n"
         "  0  success\n"
         "  1  internal error (a bug in stepcast; please report it with the raw file)\n"
         "  2  bad input: a raw file that cannot be read or is invalid (the message names the\n"
         "     file and the JSON path), a device name stepcast does not know (use --gpu), an\n"
         "     unknown --gpu or --box, a bad command line, a fit the hardware file cannot hold\n"
         "     (measurements that are not physical), or an output (the -o file, standard\n"
         "     output) that cannot be written\n";
}

/// The footer of a command's --help: details, examples, the scenario file, exit codes.
std::string footer(const std::string& details, const std::string& example_block, bool with_scenario) {
  std::string out;
  if (!details.empty()) out += details + "\n";
  out += example_block;
  if (with_scenario) out += "\n" + scenario_help();
  out += "\n" + exit_code_help();
  return out;
}

// ---------------------------------------------------------------------------------------
// commands

/// The scenario on `gpus` GPUs. with_gpus documents std::invalid_argument for a count the
/// hardware cannot take (not whole nodes, more than the cluster): the user's --gpus.
Scenario on_gpus(const Scenario& s, int gpus) {
  try {
    return with_gpus(s, gpus);
  } catch (const InputError&) {
    throw;
  } catch (const std::invalid_argument& e) {
    throw UserError(fmt::format("{}: --gpus {}: {}", s.file, gpus, e.what()));
  }
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

/// The in-step fractions of `file` (`--in-step`), or null for none given.
std::shared_ptr<const InStepFractions> load_in_step_option(const std::string& file) {
  if (file.empty()) return nullptr;
  if (!std::filesystem::exists(file)) throw UserError("no such in-step file: " + file);
  return std::make_shared<const InStepFractions>(load_in_step_fractions(file, file));
}

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

struct ScaleArgs {
  std::string scenario;
  std::vector<int> gpus;
  bool json = false;
  bool csv = false;
  std::string html;  ///< HTML report to write; empty: none
};

int run_scale(const ScaleArgs& args) {
  const Scenario base = load_scenario(args.scenario);
  // Check every count before spending time on predictions.
  std::vector<Scenario> scenarios;
  scenarios.reserve(args.gpus.size());
  for (int n : args.gpus) scenarios.push_back(on_gpus(base, n));

  const bool progress = isatty(fileno(stderr)) != 0;
  std::vector<Prediction> predictions;
  predictions.reserve(scenarios.size());
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    if (progress) fmt::print(stderr, "[{}/{}] {} GPUs\n", i + 1, scenarios.size(), args.gpus[i]);
    predictions.push_back(predict(scenarios[i]));
  }
  const auto rows = cli::scale_rows(predictions, base.price_per_gpu_hour_usd);
  if (!args.html.empty()) write_file(args.html, cli::scale_html(base, scenarios, predictions), "HTML report");
  write(args.csv ? cli::scale_csv(rows) : args.json ? cli::scale_json(base, rows) : cli::scale_text(base, rows));
  return kExitOk;
}

struct PlanArgs {
  std::string scenario;
  int gpus = 0;                   ///< 0: as the scenario says
  std::int64_t global_batch = 0;  ///< 0: the scenario's micro_batch x grad_accum x data-parallel ranks
  std::string objective = "time";
  double max_memory_fraction = 0.9;
  int top = 5;
  bool json = false;
  bool csv = false;
  std::string gpus_range;             ///< "A:B" or "A,B,C"; empty: one count
  std::string html;                   ///< HTML report to write; empty: none
  bool no_cp = false;                 ///< --no-cp: no context parallelism in the search
  bool no_offload = false;            ///< --no-offload: no CPU offload in the search
  std::int64_t min_cp_tokens = 1024;  ///< --min-cp-tokens
  double gap = 0.01;                  ///< --gap
};

/// `plan --gpus-range`: one plan per count at one global batch, then the winners side by side.
int run_plan_range(const Scenario& s, const PlanArgs& args, PlanOptions options) {
  if (!args.html.empty()) throw UserError("--html takes one plan; give --gpus N, not --gpus-range");
  std::vector<int> counts;
  try {
    counts = parse_gpu_range(args.gpus_range);
  } catch (const std::invalid_argument& e) {
    throw UserError(fmt::format("--gpus-range: {}", e.what()));
  }
  for (int n : counts) (void)on_gpus(s, n);  // every count checked before any plan runs
  const std::vector<PlanResult> results = plan_range(s, counts, options);
  cli::clear_progress();
  write(args.csv    ? cli::plan_range_csv(results)
        : args.json ? cli::plan_range_json(s, results)
                    : cli::plan_range_text(s, results));
  return kExitOk;
}

int run_plan(const PlanArgs& args) {
  if (args.gpus > 0 && !args.gpus_range.empty()) throw UserError("give --gpus or --gpus-range, not both");
  ReadOptions read;
  read.gpus = args.gpus;
  Scenario s = load_scenario(args.scenario, read);
  PlanOptions options;
  options.progress = cli::terminal_progress("plan");
  options.objective = parse_plan_objective(args.objective);  // CLI11 checked the choice
  if (options.objective == PlanObjective::cost && !s.price_per_gpu_hour_usd)
    throw UserError(fmt::format("{}: --objective cost needs price_per_gpu_hour_usd in the scenario", s.file));
  options.global_batch = args.global_batch;
  options.max_memory_fraction = args.max_memory_fraction;
  options.top = args.top;
  options.enumerate_cp = !args.no_cp;
  options.enumerate_offload = !args.no_offload;
  options.min_cp_tokens = args.min_cp_tokens;
  options.gap = args.gap;
  if (!args.gpus_range.empty()) return run_plan_range(s, args, options);
  const PlanResult result = plan(s, options);
  cli::clear_progress();
  if (!args.html.empty()) {
    std::optional<Prediction> winner;  // the winner once more, its simulation kept for the timeline
    if (!result.top.empty()) {
      PredictOptions traced;
      traced.keep_simulation = traced.record_timelines = true;
      winner = predict(with_layout(s, result.top.front().layout), traced);
    }
    write_file(args.html, cli::plan_html(s, result, winner ? &*winner : nullptr), "HTML report");
  }
  write(args.csv ? cli::plan_csv(result) : args.json ? cli::plan_json(s, result) : cli::plan_text(s, result));
  return kExitOk;
}

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
  if (!args.html.empty()) write_file(args.html, cli::compare_html(loaded, predictions), "HTML report");
  write(args.csv ? cli::compare_csv(rows) : args.json ? cli::compare_json(rows) : cli::compare_text(rows));
  return kExitOk;
}

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

struct FitArgs {
  std::string raw;     ///< raw calibration file
  std::string output;  ///< hardware file to write
  std::string gpu;     ///< catalog GPU; empty: from the raw file's device name
  std::string box;     ///< catalog box for the model figures; empty: the first with the GPU
  bool json = false;
};

int run_fit(const FitArgs& args) {
  if (args.raw.empty())
    throw UserError("fit: RAW (a raw calibration file) is required, or `stepcast fit in-step RUNS`");
  if (args.output.empty()) throw UserError("fit: -o,--output (the hardware file to write) is required");
  const RawCalibration raw = load_raw_calibration(args.raw);
  FitResult result;
  try {
    result = fit_calibration(raw, FitOptions{args.gpu, args.box, args.raw});
  } catch (const FitOptionError& e) {
    throw UserError(e.what());
  }
  write_file(args.output, hardware_json(result.hardware), "hardware file");
  write(args.json ? fit_report_json(result, args.output) : fit_report_text(result, args.output));
  return kExitOk;
}

int run_fit_generation(const cli::FitGenerationArgs& args) {
  if (!std::filesystem::exists(args.runs)) throw UserError("no such file or folder: " + args.runs);
  if (!args.in_step.empty() && !std::filesystem::exists(args.in_step))
    throw UserError("no such in-step file: " + args.in_step);
  const cli::ProgressFn bar = cli::terminal_progress("fit generation");
  int evaluated = 0;
  const auto progress = [&](double fraction) {
    ++evaluated;
    if (bar) bar(fmt::format("GEMM fraction {:.3f}", fraction), evaluated, evaluated + 1);
  };
  cli::FitGenerationOutput out;
  try {
    out = cli::fit_generation_command(args, progress);
  } catch (const std::invalid_argument& e) {
    cli::clear_progress();
    throw UserError(args.runs + ": " + e.what());
  }
  cli::clear_progress();
  write_file(args.output, out.file_text, "in-step file");
  write(out.report_text);
  return kExitOk;
}

int run_fit_in_step(const cli::FitInStepArgs& args) {
  if (!std::filesystem::exists(args.runs)) throw UserError("no such file or folder: " + args.runs);
  if (!args.calibration.empty() && !std::filesystem::exists(args.calibration))
    throw UserError("no such hardware file: " + args.calibration);
  cli::FitInStepOutput out;
  try {
    out = cli::fit_in_step_command(args);
  } catch (const InStepFitError& e) {
    throw UserError(args.runs + ": " + e.what());
  }
  write_file(args.output, out.file_text, "in-step file");
  write(out.report_text);
  return kExitOk;
}

struct InitArgs {
  std::string model;
  std::string box;
  int gpus = 0;        ///< 0: one whole box
  std::string output;  ///< scenario file to write; empty: standard output
};

int run_init(const InitArgs& args) {
  std::string text;
  try {
    text = starter_scenario(StarterRequest{args.model, args.box, args.gpus});
  } catch (const std::invalid_argument& e) {
    throw UserError(e.what());
  }
  if (args.output.empty()) {
    write(text);
  } else {
    write_file(args.output, text, "scenario file");
    write(fmt::format("wrote {}; predict it with: stepcast predict {}\n", args.output, args.output));
  }
  return kExitOk;
}

struct CatalogArgs {
  std::string section;  ///< "" = all
  bool json = false;
};

int run_catalog(const CatalogArgs& args) {
  std::vector<cli::CatalogSection> sections;
  if (args.section.empty()) {
    for (const std::string& n : cli::catalog_section_names()) sections.push_back(cli::parse_catalog_section(n));
  } else {
    try {
      sections.push_back(cli::parse_catalog_section(args.section));
    } catch (const std::invalid_argument& e) {
      throw UserError(e.what());
    }
  }
  write(args.json ? cli::catalog_json(sections) : cli::catalog_text(sections));
  return kExitOk;
}

/// A GPU count on the command line: a whole number >= 1 (CLI11's PositiveNumber would
/// also accept 0.5 and print a 300-digit upper bound).
CLI::Validator gpu_count() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        long long value = 0;
        std::size_t used = 0;
        try {
          value = std::stoll(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != text.size() || text.empty() || value < 1 || value > (1LL << 24))
          return "expected a GPU count (a whole number >= 1), got \"" + text + "\"";
        return {};
      },
      "COUNT", "gpu_count");
}

/// The top-level options, help footer and formatting of the `stepcast` command.
void configure_app(CLI::App& app) {
  app.set_version_flag("--version", std::string("stepcast ") + STEPCAST_VERSION, "Print the version and exit");
  app.require_subcommand(1);
  app.footer(
      footer("stepcast predicts the step time, throughput, MFU, time and cost per epoch, and memory\n"
             "per GPU of transformer training (DDP, ZeRO, FSDP; tensor, sequence, pipeline and context\n"
             "parallelism; expert parallelism of mixture-of-experts models; CPU offload) on a given\n"
             "cluster, from a model of its kernels and of NCCL collectives over the hardware graph,\n"
             "played as a simulated step.\n"
             "Run `stepcast <command> --help` for each command.\n",
             examples({{fmt::format("stepcast predict {}", kSeed), "text report of one scenario"},
                       {fmt::format("stepcast predict {} --gpus 4 --json", kSeed), "on 4 of its 8 GPUs, as JSON"},
                       {fmt::format("stepcast scale {} --gpus 1,8,16,32", kMultiNodeSeed), "scaling table"},
                       {fmt::format("stepcast plan {}", kSeed), "the best data- and tensor-parallel layouts"},
                       {"stepcast catalog gpus", "GPUs with peaks and sources"},
                       {"stepcast catalog --json", "every catalog as JSON"}}),
             true));
  app.get_formatter()->column_width(30);
}

/// `--html FILE`: the self-contained HTML report (report_html.hpp); refused on the command line
/// (exit 2) when this build does not embed the charting library.
void add_html_option(CLI::App* cmd, std::string& file) {
  cmd->add_option("--html", file,
                  "Also write the report as one self-contained HTML page\n(charts; works offline) to FILE")
      ->option_text("FILE")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            if (text.empty()) return "expected a file name for the HTML report, got an empty one";
            return cli::html_report_available() ? "" : cli::html_report_unavailable_reason();
          },
          "FILE", "html_file"));
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
  add_html_option(cmd, sa.html);
  cmd->footer(
      footer("One row per GPU count (the micro-batch per GPU stays fixed, so the global batch grows):\n"
             "GPUs, nodes, step time, tokens/s, MFU, time per epoch, USD per million tokens (with a\n"
             "price), speedup and scaling efficiency against the baseline -- the fewest GPUs that fit\n"
             "in memory (marked *; rows that do not fit get none) -- memory per GPU and whether it\n"
             "fits. --json rows add tokens/s/GPU and the cost per epoch. Counts above one box must\n"
             "fill whole nodes. Progress goes to stderr when it is a terminal.\n",
             scale_examples(), true));

  return cmd;
}

CLI::App* add_plan_command(CLI::App& app, PlanArgs& pa) {
  CLI::App* cmd =
      app.add_subcommand("plan", "Find the best parallel layout for a job (data, tensor, context, pipeline, offload)");
  cmd->add_option("SCENARIO", pa.scenario, "Scenario file (JSON): the model, hardware and training")->required();
  cmd->add_option("--gpus", pa.gpus, "Total GPUs to plan for instead of the scenario's\n(whole nodes above one box)")
      ->check(gpu_count());
  cmd->add_option(
         "--global-batch", pa.global_batch,
         "Sequences per optimizer step (default: the scenario's\nmicro_batch x grad_accum x data-parallel ranks)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 30));
  cmd->add_option("--objective", pa.objective,
                  "time (step time), tokens_per_s (per GPU) or cost\n(USD per million tokens; needs a price)")
      ->check(CLI::IsMember({"time", "tokens_per_s", "cost"}))
      ->capture_default_str();
  cmd->add_option("--max-memory-fraction", pa.max_memory_fraction, "Reject layouts above this fraction of GPU memory")
      ->check(CLI::Range(1e-6, 1.0))
      ->capture_default_str();
  cmd->add_option("--top", pa.top, "Rows to rank")->check(CLI::Range(1, 1000))->capture_default_str();
  CLI::Option* json = cmd->add_flag("--json", pa.json, "Print one JSON object instead of the table");
  cmd->add_flag("--csv", pa.csv, "Print the ranked table as CSV (units in the column names)")->excludes(json);
  cmd->add_option("--gpus-range", pa.gpus_range,
                  "Plan on several GPU counts at one global batch: A:B\n(A, 2A, 4A, ... up to B) or a list A,B,C");
  cmd->add_flag("--no-cp", pa.no_cp, "Leave context parallelism out of the search (cp 1)");
  cmd->add_flag("--no-offload", pa.no_offload, "Leave CPU offload out of the search");
  cmd->add_option("--min-cp-tokens", pa.min_cp_tokens,
                  "Fewest tokens of a sequence per context-parallel rank\n(seq_len / cp) the search tries")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 30))
      ->capture_default_str();
  cmd->add_option("--gap", pa.gap,
                  "Optimality gap of the search: stop once no layout left can beat\nthe K-th by more than this "
                  "fraction (0: exact)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  add_html_option(cmd, pa.html);
  cmd->footer(
      footer("Enumerates every layout of the job on the GPUs at a fixed global batch: data-parallel\n"
             "strategy (ddp, zero1, zero2, zero3, fsdp_full_shard, fsdp_shard_grad_op) x tensor-parallel\n"
             "degree tp (divisors of the GPUs per node) x sequence parallelism x context parallelism\n"
             "(cp >= 2 dividing the GPUs over tp with seq_len / cp >= --min-cp-tokens, default 1024;\n"
             "ranks in Megatron order, CP beside TP inside the node first; the ring K/V exchange) x\n"
             "pipeline (pp stages dividing the GPUs over tp x cp; schedules gpipe, 1f1b, zb-h1, and\n"
             "interleaved with vpp 2..8 chunks) x CPU offload (the optimizer under zero1/2/3,\n"
             "parameters under zero3 and FSDP) x micro-batch x recompute (none, selective, full);\n"
             "gradient accumulation = global batch / (micro-batch x dp). It rejects what does not\n"
             "divide (tp and the heads, KV heads, MLP width; tp x cp and seq_len under sp; 2 x cp and\n"
             "seq_len; a pipeline under other than ddp or zero1; micro-batch x dp and the global batch;\n"
             "the interleaved schedule's groups of pp), what cannot run (cp without flash attention;\n"
             "offload on a box with no host, or with a pipeline) or does not fit the memory limit,\n"
             "bounds the rest from below (compute time; a pipeline's schedule replayed with free\n"
             "communication; the lowered step's critical path), and simulates in order of that bound\n"
             "until no layout left can enter the top K by more than --gap (default 1%). The table: layout, step time "
             "(s), tokens/s/GPU, MFU (%),\n"
             "memory/GPU (GiB), exposed communication (s), bubble (%) and the objective; then why the\n"
             "winner beats the runner-up and how many layouts were rejected for each reason. At a fixed\n"
             "GPU count and global batch the three objectives rank alike (each is monotone in the step\n"
             "time). A progress bar goes to stderr when it is a terminal.\n",
             examples({{fmt::format("stepcast plan {}", kSeed), "best layouts on the scenario's 8 GPUs"},
                       {fmt::format("stepcast plan {} --gpus 32 --global-batch 512 --top 3", kMultiNodeSeed),
                        "32 GPUs, 512 sequences per step, the best 3"},
                       {fmt::format("stepcast plan {} --gpus-range 8:32 --global-batch 512", kMultiNodeSeed),
                        "8, 16 and 32 GPUs at 512 sequences per step"},
                       {fmt::format("stepcast plan {} --json", kSeed), "as one JSON object"}}),
             true));
  return cmd;
}

CLI::App* add_need_command(CLI::App& app, cli::NeedArgs& na) {
  CLI::App* cmd = app.add_subcommand("need", "Find the inter-node bandwidth at which communication hides");
  cli::add_need_options(*cmd, na);
  cmd->footer(footer(
      cli::need_help(),
      examples({{"stepcast need scenarios/seeds/rule-of-thumb-10b-4x8a100-100g.json --exposed-comm 5%",
                 "seed 4: the link per node for at most 5% exposed communication"},
                {"stepcast need scenarios/seeds/rule-of-thumb-10b-4x8a100-100g.json --json", "as one JSON object"}}),
      true));
  return cmd;
}

int run_need(const cli::NeedArgs& args) {
  const Scenario s = load_scenario(args.scenario);
  NeedOptions options;
  try {
    options = cli::need_options(args);
  } catch (const std::invalid_argument& e) {
    throw UserError(fmt::format("--exposed-comm: {}", e.what()));
  }
  options.progress = cli::terminal_progress("need");
  NeedResult result;
  try {
    result = need(s, options);
  } catch (const InputError&) {
    throw;
  } catch (const std::invalid_argument& e) {
    throw UserError(fmt::format("{}: {}", s.file, e.what()));
  }
  cli::clear_progress();
  write(args.json ? cli::need_json(result) : cli::need_text(result));
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

CLI::App* add_catalog_command(CLI::App& app, CatalogArgs& ca) {
  CLI::App* cmd = app.add_subcommand("catalog", "List models, GPUs, boxes, clusters, links, algorithms");
  cmd->add_option("SECTION", ca.section, "One of: " + join(cli::catalog_section_names(), ", ") + "\n(default: all)")
      ->check(CLI::IsMember(cli::catalog_section_names()));
  cmd->add_flag("--json", ca.json, "Print one JSON object keyed by section");
  cmd->footer(
      footer("The names a scenario can use, with their key figures and sources: models (parameters\n"
             "counted from the shape, layers, hidden, heads/kv), GPUs (bf16 peak, memory, bandwidth,\n"
             "NVLink), boxes, clusters, links (line rate, effective rate, latency) and collective\n"
             "algorithms.\n",
             catalog_examples(), true));

  return cmd;
}

struct SchemaArgs {
  bool markdown = false;
};

CLI::App* add_schema_command(CLI::App& app, SchemaArgs& sa) {
  CLI::App* cmd = app.add_subcommand("schema", "Every key a scenario file may hold: values, default, meaning");
  cmd->add_flag("--markdown", sa.markdown, "Print docs/scenario.md's key table (Markdown) instead");
  cmd->footer(
      footer("The scenario schema, declared once (scenario/schema.cpp): the reader takes each object's\n"
             "keys and each number's range from it, and this list, `init`'s notes and\n"
             "docs/scenario.md are printed from it.\n",
             examples({{"stepcast schema", "every key, grouped by object"},
                       {"stepcast schema --markdown", "the table of docs/scenario.md"}}),
             false));
  return cmd;
}

int run_schema(const SchemaArgs& args) {
  write(args.markdown ? schema_markdown(scenario_schema()) : schema_help(scenario_schema()));
  return kExitOk;
}

CLI::App* add_fit_command(CLI::App& app, FitArgs& fa) {
  CLI::App* cmd = app.add_subcommand("fit",
                                     "Fit GEMM efficiency, memory and collective parameters to a calibration run "
                                     "(subcommands: in-step, generation)");
  // RAW and -o are checked by run_fit: `stepcast fit in-step` and `fit generation` need neither.
  cmd->add_option("RAW", fa.raw, "Raw calibration file (JSON, stepcast-calibrate-raw-v1); required");
  cmd->add_option("-o,--output", fa.output, "Hardware file to write (stepcast-hardware-v1); required")
      ->option_text("FILE");
  cmd->add_option("--gpu", fa.gpu,
                  "Catalog GPU to compare with (default: from the\n"
                  "first GPU's device name; see `stepcast catalog gpus`)")
      ->option_text("NAME");
  cmd->add_option("--box", fa.box,
                  "Catalog box whose one-node fabric gives the model's\n"
                  "collective figures (default: the first box with the GPU)")
      ->option_text("NAME");
  cmd->add_flag("--json", fa.json,
                "Print {\"output_file\", \"hardware\": {...}, \"excluded\",\n"
                "\"not_fitted\", \"warnings\"} instead of the text report");
  cmd->footer(
      fit_footer("A calibration run (cuBLAS GEMMs, memory copies and NCCL collectives timed on one\n"
                 "machine, written as \"stepcast-calibrate-raw-v1\") becomes a hardware file\n"
                 "(\"stepcast-hardware-v1\") with the model's parameters fitted to it:\n"
                 "\n"
                 "  GEMM efficiency, per dtype: eff(F) = max_fraction x F / (F + half_flops), F = 2mnk\n"
                 "    FLOP per call, eff = (F / median time) / the catalog GPU's dense peak. Least\n"
                 "    squares on relative residuals (Levenberg-Marquardt from the linear fit of 1/eff\n"
                 "    against 1/F). max_fraction is what the largest GEMMs reach; half_flops the size\n"
                 "    reaching half of it.\n"
                 "  Memory: bytes / median time of the largest copy of each kind; a device-to-device\n"
                 "    row's bytes count read + write (2 x the buffer, as CUDA's bandwidthTest), so\n"
                 "    memory_efficiency = that / the datasheet memory bandwidth.\n"
                 "  Collectives, per (collective, ranks, nodes): t = latency + bytes / algbw by least\n"
                 "    squares weighted 1/t^2, so 8 B and 1 GiB messages count alike; busbw = algbw x\n"
                 "    the nccl-tests bus factor (2(n-1)/n all-reduce, (n-1)/n all-gather and\n"
                 "    reduce-scatter). Beside it the catalog's model on one node of the box (--box):\n"
                 "    its time at the smallest size measured and its busbw at the largest.\n"
                 "  Kernel model (\"kernel_model\"; calibrate/METHOD.md): the GEMM ceiling per dtype\n"
                 "    through tile and wave quantization, attention curves, memory-bound kernels'\n"
                 "    bandwidth, launch and eager per-op cost, and a GEMM's slowdown beside an\n"
                 "    all-reduce, from the sections launch, attention, memory_kernels and overlap.\n"
                 "  In-step fractions: `stepcast fit in-step RUNS -o FILE` fits GEMM and attention\n"
                 "    fractions to a training probe's per-category kernel times (its own --help).\n"
                 "\n"
                 "Rows whose \"check\" is not \"ok\" are left out of every fit and listed. Parts with too\n"
                 "little data (one size only) are listed as not fitted. The report prints the RMS\n"
                 "relative residual of every fit: a few percent is measurement noise; much more means\n"
                 "the curve does not describe the data.\n",
                 examples({{"stepcast fit calibrate/fit/testdata/synthetic_raw.json -o hw.json",
                            "fit a (synthetic) run and print the report"},
                           {"stepcast fit raw.json -o hw.json --gpu h100-sxm5-80gb --json",
                            "name the catalog GPU yourself; print JSON"}})));
  return cmd;
}

CLI::App* add_init_command(CLI::App& app, InitArgs& ia) {
  CLI::App* cmd = app.add_subcommand("init", "Write a starter scenario for a catalog model on a catalog box");
  cmd->add_option("--model", ia.model, "Catalog model (see `stepcast catalog models`)")
      ->option_text("NAME")
      ->required();
  cmd->add_option("--box", ia.box, "Catalog box (see `stepcast catalog boxes`)")->option_text("NAME")->required();
  cmd->add_option("--gpus", ia.gpus, "GPUs in all (default: one box; whole boxes above one)")->check(gpu_count());
  cmd->add_option("-o,--output", ia.output, "Scenario file to write (default: standard output)")->option_text("FILE");
  cmd->footer(
      footer("The starter holds only what a scenario requires -- model, hardware {box, gpus}, strategy\n"
             "(fsdp_full_shard) and training {micro_batch: 1, seq_len: the model's} -- and a \"notes\" list\n"
             "saying what every other key defaults to. It predicts as written; the defaults taken are\n"
             "printed under Assumptions.\n",
             examples({{"stepcast init --model llama-3-8b --box dgx-h100 --gpus 16 -o llama.json",
                        "two DGX H100 joined by their own NICs"},
                       {"stepcast init --model gpt2 --box dgx-a100", "one box, printed"}}),
             true));
  return cmd;
}

int run(int argc, char** argv) {
  CLI::App app{"stepcast: a performance model of distributed GPU training", "stepcast"};
  configure_app(app);
  PredictArgs pa;
  ScaleArgs sa;
  ValidateArgs va;
  CatalogArgs ca;
  FitArgs fa;
  InitArgs ia;
  PlanArgs pla;
  CompareArgs cma;
  cli::NeedArgs na;
  SchemaArgs sca;
  CLI::App* predict_cmd = add_predict_command(app, pa);
  CLI::App* scale_cmd = add_scale_command(app, sa);
  CLI::App* validate_cmd = add_validate_command(app, va);
  CLI::App* catalog_cmd = add_catalog_command(app, ca);
  CLI::App* fit_cmd = add_fit_command(app, fa);
  cli::FitInStepArgs fia;
  CLI::App* fit_in_step_cmd = cli::add_fit_in_step_command(*fit_cmd, fia);
  cli::FitGenerationArgs fga;
  CLI::App* fit_generation_cmd = cli::add_fit_generation_command(*fit_cmd, fga);
  CLI::App* init_cmd = add_init_command(app, ia);
  CLI::App* plan_cmd = add_plan_command(app, pla);
  CLI::App* compare_cmd = add_compare_command(app, cma);
  CLI::App* need_cmd = add_need_command(app, na);
  CLI::App* schema_cmd = add_schema_command(app, sca);
  // User catalog folders, on every command that reads catalog names (repeatable).
  std::vector<std::string> catalog_dirs;
  for (CLI::App* cmd : {predict_cmd, scale_cmd, validate_cmd, catalog_cmd, fit_cmd, init_cmd, plan_cmd, compare_cmd,
                        need_cmd, fit_in_step_cmd, fit_generation_cmd})
    cmd->add_option("--catalog", catalog_dirs,
                    "Folder of catalog files of one's own (gpus.json, boxes.json, links.json,\n"
                    "clusters.json, models.json; the built-in format), added to the\n"
                    "catalog; repeatable; also read from STEPCAST_CATALOG_PATH")
        ->option_text("DIR")
        ->allow_extra_args(false);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
      const int rc = app.exit(e);  // --help, --version: printed to stdout, exit 0
      write("");                   // ... if stdout took it
      return rc;
    }
    error(e.what());
    fmt::print(stderr, "Run `stepcast --help` (or `stepcast <command> --help`) for usage.\n");
    return kExitBadInput;
  }

  try {
    cli::load_user_catalogs(cli::catalog_folders(catalog_dirs));
  } catch (const InputError&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw UserError(e.what());
  }
  if (predict_cmd->parsed()) return run_predict(pa);
  if (scale_cmd->parsed()) return run_scale(sa);
  if (catalog_cmd->parsed()) return run_catalog(ca);
  if (validate_cmd->parsed()) return run_validate(va);
  if (fit_in_step_cmd->parsed()) return run_fit_in_step(fia);
  if (fit_generation_cmd->parsed()) return run_fit_generation(fga);
  if (fit_cmd->parsed()) return run_fit(fa);
  if (init_cmd->parsed()) return run_init(ia);
  if (plan_cmd->parsed()) return run_plan(pla);
  if (compare_cmd->parsed()) return run_compare(cma);
  if (need_cmd->parsed()) return run_need(na);
  if (schema_cmd->parsed()) return run_schema(sca);
  error("no command given");
  return kExitBadInput;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const stepcast::InputError& e) {
    // One `stepcast: error:` line per problem, then how many when there are several.
    for (const stepcast::InputProblem& problem : e.problems()) error(problem.line());
    if (e.problems().size() > 1) error(fmt::format("{} problems in {}", e.problems().size(), e.file()));
    return kExitBadInput;
  } catch (const UserError& e) {
    error(e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {
    // Anything else is a broken invariant: a bug, whatever its exception type.
    error(fmt::format("internal error: {}; please report this with the input that caused it", e.what()));
    return kExitInternal;
  } catch (...) {
    error("internal error: unknown exception; please report this with the input that caused it");
    return kExitInternal;
  }
}
