#include "cli/fit_generation.hpp"

#include "base/json_input.hpp"
#include "base/types.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace stepcast::cli {

CLI::App* add_fit_generation_command(CLI::App& fit, FitGenerationArgs& args) {
  CLI::App* cmd = fit.add_subcommand(
      "generation", "Fit one GPU generation's in-step GEMM fraction to measured runs, leave one source out");
  cmd->add_option("RUNS", args.runs, "Measured-run records (.jsonl, or a folder of them)")->required();
  cmd->add_option("--arch", args.arch, "The GPU generation: the records on its GPUs are fitted")
      ->check(CLI::IsMember(gpu_arch_names()))
      ->option_text("ARCH")
      ->required();
  cmd->add_option("-o,--output", args.output, "File to write (the shape of model/catalog/in_step.json)")
      ->option_text("FILE")
      ->required();
  cmd->add_option("--in-step", args.in_step,
                  "The fractions to start from (default: model/catalog/in_step.json); its\n"
                  "entry for this generation, if any, is replaced")
      ->option_text("FILE");
  cmd->add_option("--from", args.from, "Lowest fraction searched (default 0.5)")->option_text("F");
  cmd->add_option("--to", args.to, "Highest fraction searched, at most 1 (default 1.0)")->option_text("F");
  cmd->add_option("--step", args.step, "Coarse grid step (default 0.02)")->option_text("F");
  cmd->add_option("--refine", args.refine, "Fine grid step around each coarse minimum; 0: none (default 0.005)")
      ->option_text("F");
  cmd->footer(
      "\nFor a GPU generation with no in-step kernel decomposition of its own. Each candidate\n"
      "fraction f scales the generation's GEMM ceilings (the best achievable matmul) inside a\n"
      "step; every trusted record on a GPU of the generation is predicted with it (the other\n"
      "kernel rates as in the starting file; records of the sources that file was fitted on\n"
      "are left out, validate predicts them at isolated rates), and\n"
      "\n"
      "  f = argmin over the grid of the median |error| of the records\n"
      "\n"
      "on the coarse grid, then on the fine grid within one coarse step of its minimum (ties:\n"
      "the smaller f). This runs once on every source (what scenarios use) and once without\n"
      "each source: `validate` predicts a source's records with the fraction fitted without it,\n"
      "so nothing fitted on a source counts toward its own error. The file is the starting one\n"
      "with a \"generations\" entry: the fraction, the fraction without each source, the grid\n"
      "and the rule. Each candidate is a full validation of the generation's records, so a\n"
      "search takes minutes where records simulate large pipelines.\n"
      "\n"
      "Examples:\n"
      "  stepcast fit generation data/validation/runs.jsonl --arch ampere -o in_step.json\n"
      "                        the A100 fit of model/catalog/in_step.json\n"
      "  stepcast validate data/validation/runs.jsonl --in-step in_step.json\n"
      "                        use it\n"
      "\n"
      "Exit codes:\n"
      "  0  success\n"
      "  1  internal error (a bug in stepcast; please report it with the records)\n"
      "  2  bad input: a records or in-step file that cannot be read or is invalid (the\n"
      "     message names the file, line and JSON path), a range outside (0, 1] or a bad grid,\n"
      "     no trusted record of the generation compared, an output that cannot be written\n");
  return cmd;
}

namespace {

nlohmann::ordered_json read_json(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::ordered_json::parse(text.str());
}

std::string method_text(const FitGenerationArgs& a) {
  return fmt::format(
      "The {} GEMM fraction: for each candidate f on a grid of {} over [{}, {}], refined to {} within one step of "
      "the coarse minimum, every trusted record of a catalog GPU of this generation in {} (none of a source the "
      "kernel-level fractions above were fitted on) is predicted with its GEMM ceilings x f and the attention "
      "fraction above, and f minimizes the median |error| (ties: the smaller f). gemm_fraction is fitted on every "
      "source; each entry of `without` on every source but that one, and validate predicts that source's records "
      "with it (leave one source out). A fraction fitted to whole steps, not to kernel times: it absorbs what "
      "the model misses on this generation's runs. Bounds: (0, 1]. Written by `stepcast fit generation`.",
      a.arch, a.step, a.from, a.to, a.refine, a.runs);
}

std::string report(const GenerationFitResult& r, const FitGenerationArgs& a) {
  std::string out = fmt::format("{} GEMM in-step fraction, fitted on the end-to-end runs of {}\n\n", a.arch, a.runs);
  out += fmt::format("  {:<12} {:>28}\n", "fraction", "median |error| all sources (%)");
  for (const auto& [f, median] : r.curve) out += fmt::format("  {:<12.3f} {:>28.2f}\n", f, median);
  out += fmt::format("\n  {:<90} {:>8} {:>18}\n", "fitted without source", "records", "fraction");
  for (std::size_t i = 0; i < r.fit.without.size(); ++i)
    out += fmt::format("  {:<90} {:>8} {:>18.3f}\n", r.fit.without[i].first.substr(0, 90),
                       r.records_per_source[i].second, r.fit.without[i].second);
  out += fmt::format("\n  on every source: {:.3f}\nwrote {}\n", r.fit.gemm, a.output);
  return out;
}

}  // namespace

FitGenerationOutput fit_generation_command(const FitGenerationArgs& a, const std::function<void(double)>& progress) {
  const std::filesystem::path base_file =
      a.in_step.empty() ? data_dir() / "model" / "catalog" / "in_step.json" : std::filesystem::path(a.in_step);
  const std::string shown = a.in_step.empty() ? "model/catalog/in_step.json" : a.in_step;
  const InStepFractions base = load_in_step_fractions(base_file, shown);  // validates the file
  const GpuArch arch = parse_gpu_arch(a.arch);
  const GenerationFitOptions options{arch, a.from, a.to, a.step, a.refine};
  // A source with no other source's records to fit on keeps what the generation would take
  // without this fit (the nearest other generation's fraction).
  InStepFractions others = base;
  std::erase_if(others.generations, [&](const GenerationGemmFit& g) { return g.arch == arch; });
  const GenerationFitResult r = fit_generation_gemm(
      validation_evaluator(load_measured_runs(a.runs), base, arch, 0, progress), options, gemm_fraction(others, arch));

  nlohmann::ordered_json doc = read_json(base_file);
  nlohmann::ordered_json gens = nlohmann::ordered_json::array();
  if (doc.contains("generations"))
    for (const auto& g : doc["generations"])
      if (g.value("arch", "") != a.arch) gens.push_back(g);
  nlohmann::ordered_json without = nlohmann::ordered_json::array();
  int records = 0;
  for (std::size_t i = 0; i < r.fit.without.size(); ++i) {
    without.push_back({{"source", r.fit.without[i].first},
                       {"gemm_fraction", r.fit.without[i].second},
                       {"records", r.records_per_source[i].second}});
    records += r.records_per_source[i].second;
  }
  gens.push_back({{"arch", a.arch},
                  {"gemm_fraction", r.fit.gemm},
                  {"records", records},
                  {"without", std::move(without)},
                  {"grid", {{"from", a.from}, {"to", a.to}, {"step", a.step}, {"refine", a.refine}}},
                  {"method", method_text(a)}});
  doc["generations"] = std::move(gens);
  return {doc.dump(2) + "\n", report(r, a)};
}

}  // namespace stepcast::cli
