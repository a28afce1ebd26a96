#include "cli/fit_in_step.hpp"

#include "topologies/hardware_file.hpp"
#include "validate/in_step_probe.hpp"
#include "validate/validation.hpp"

#include <nlohmann/json.hpp>

#include <memory>

namespace stepcast::cli {

CLI::App* add_fit_in_step_command(CLI::App& fit, FitInStepArgs& args) {
  CLI::App* cmd = fit.add_subcommand(
      "in-step", "Fit the in-step fractions (GEMM, attention) of one machine to its training probe's records");
  cmd->add_option("RUNS", args.runs, "The probe's measured-run records (.jsonl, or a folder of them)")->required();
  cmd->add_option("-o,--output", args.output, "File to write (the shape of model/catalog/in_step.json)")
      ->option_text("FILE")
      ->required();
  cmd->add_option("--calibration", args.calibration,
                  "The machine's hardware file from `stepcast fit`: the isolated\n"
                  "rates the fractions scale (default: the catalog's)")
      ->option_text("FILE");
  cmd->add_option("--machine", args.machine,
                  "One line describing the machine, for fitted_on (default: the records' GPU)")
      ->option_text("TEXT");
  cmd->add_option("--commit", args.commit, "stepcast commit the probe ran at, for fitted_on (default: \"not stated\")")
      ->option_text("SHA");
  cmd->footer(
      "\nFor each record with per-category kernel times (gemm_time_s, attention_time_s: the\n"
      "training probe, calibrate/probe/train_probe.py), stepcast predicts the same step at the\n"
      "isolated benchmarks' rates (training.kernel_rates \"isolated\"; with --calibration, the\n"
      "machine's measured ones) and takes isolated / measured per category:\n"
      "\n"
      "  gemm_fraction      = isolated GEMM time / measured in-step GEMM kernel time\n"
      "  attention_fraction = isolated attention time / measured in-step attention kernel time\n"
      "                       (records with a flash-class attention kernel only)\n"
      "\n"
      "Over the records: the measured-time-weighted geometric mean, exp(sum m ln(p/m) / sum m),\n"
      "bounded to (0, 1] (a value above 1 is clamped and reported). The probe measures each\n"
      "category directly, so no fraction is fitted to the whole step. The file records the\n"
      "machine, the probe file and the commit in fitted_on, the rule in method, and each\n"
      "record's ratio in runs. `predict --in-step FILE` and `validate --in-step FILE` use it\n"
      "instead of model/catalog/in_step.json (validate predicts the records of the sources\n"
      "it was fitted on with isolated rates: leave one source out).\n"
      "\n"
      "Examples:\n"
      "  stepcast fit in-step calibrate/data/h100-x1/runs.jsonl -o in_step.json \\\n"
      "      --calibration calibrate/data/h100-x1/hardware.json --machine \"$(head -n 1 machine.txt)\"\n"
      "                        fit the probe of a lent H100 against its calibrated rates\n"
      "  stepcast validate runs.jsonl --calibration hardware.json --in-step in_step.json\n"
      "                        use them\n"
      "\n"
      "Exit codes:\n"
      "  0  success\n"
      "  1  internal error (a bug in stepcast; please report it with the records)\n"
      "  2  bad input: a records or hardware file that cannot be read or is invalid (the\n"
      "     message names the file, line and JSON path), records of several GPUs, no record\n"
      "     with a GEMM or attention time, a bad command line, an output that cannot be written\n");
  return cmd;
}

namespace {

/// "repo · path" (validate's source label) split back; a URL source keeps it whole as repo.
std::pair<std::string, std::string> split_source(const std::string& label) {
  const std::string dot = " · ";
  const auto at = label.find(dot);
  if (at == std::string::npos) return {label, ""};
  return {label.substr(0, at), label.substr(at + dot.size())};
}

}  // namespace

FitInStepOutput fit_in_step_command(const FitInStepArgs& args) {
  const std::vector<MeasuredRun> runs = load_measured_runs(args.runs);
  std::shared_ptr<const HardwareFile> calibration;
  if (!args.calibration.empty()) calibration = std::make_shared<const HardwareFile>(load_hardware(args.calibration));
  std::vector<InStepObservation> records;
  for (const MeasuredRun& run : runs) {
    const ProbeKernelTimes t = probe_kernel_times(run, calibration, args.calibration);
    InStepObservation o;
    o.run_id = run.id;
    std::tie(o.repo, o.path) = split_source(run.source);
    o.gpu = run.gpu;
    o.skip_reason = t.skip_reason;
    o.measured_gemm_s = t.measured_gemm_s;
    o.isolated_gemm_s = t.isolated_gemm_s;
    o.measured_attention_s = t.measured_attention_s;
    if (t.fused_attention) o.isolated_attention_s = t.isolated_attention_s;
    records.push_back(std::move(o));
  }
  const InStepFit fit = fit_in_step(records);
  if (calibration && calibration->gpu != fit.gpu)
    throw InStepFitError("--calibration " + args.calibration + " was fitted for " + calibration->gpu +
                         ", but the records are of " + fit.gpu);
  const InStepProvenance provenance{args.runs, args.machine.empty() ? "GPU " + fit.gpu : args.machine,
                                    args.commit.empty() ? "not stated" : args.commit};
  return {in_step_json(fit, provenance).dump(2) + "\n", in_step_report_text(fit, args.output)};
}

}  // namespace stepcast::cli
