/// \file
/// `stepcast fit RAW -o FILE` and its subcommands `fit in-step` and `fit generation`.
#include "cli/command.hpp"

#include "cli/fit_generation.hpp"
#include "cli/fit_in_step.hpp"
#include "cli/progress.hpp"

#include "calibrate/fit/fit.hpp"

#include <filesystem>
#include <stdexcept>
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

namespace stepcast::cli {

namespace {

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

}  // namespace

std::vector<Command> fit_commands(CLI::App& app) {
  auto args = std::make_shared<FitArgs>();
  CLI::App* fit = add_fit_command(app, *args);
  auto in_step = std::make_shared<FitInStepArgs>();
  CLI::App* in_step_cmd = add_fit_in_step_command(*fit, *in_step);
  auto generation = std::make_shared<FitGenerationArgs>();
  CLI::App* generation_cmd = add_fit_generation_command(*fit, *generation);
  return {{in_step_cmd, true, [in_step] { return run_fit_in_step(*in_step); }},
          {generation_cmd, true, [generation] { return run_fit_generation(*generation); }},
          {fit, true, [args] { return run_fit(*args); }}};
}

}  // namespace stepcast::cli
