/// \file
/// `stepcast plan SCENARIO`: the best parallel layouts of a job, ranked (or over a GPU range).
#include "cli/command.hpp"

#include "base/json_input.hpp"
#include "cli/progress.hpp"
#include "planner/emit.hpp"
#include "planner/plan.hpp"
#include "predict/predict.hpp"
#include "report/report.hpp"
#include "report/report_html.hpp"
#include "scenario/scenario.hpp"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace stepcast::cli {

namespace {

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
  std::string emit;                   ///< --emit FILE: the winner (or --emit-rank's row) as a scenario
  int emit_rank = 1;                  ///< --emit-rank K
};

/// The strong-scaling page of a plan range: each count's winner (at the one global batch) as
/// a row of the scaling page (step time, efficiency and cost against GPUs); a count where no
/// layout fits has no row.
std::string plan_range_html(const Scenario& s, const std::vector<PlanResult>& results) {
  std::vector<Scenario> scenarios;
  std::vector<Prediction> predictions;
  for (const PlanResult& r : results) {
    if (r.top.empty()) continue;
    scenarios.push_back(with_layout(on_gpus(s, r.gpus), r.top.front().point));
    predictions.push_back(r.top.front().prediction);
  }
  if (scenarios.empty()) throw UserError("--html: no GPU count of the range has a layout that fits");
  Scenario named = s;
  named.name = s.name + " (each count's best layout, global batch held)";
  return cli::scale_html(named, scenarios, predictions);
}

/// `plan --gpus-range`: one plan per count at one global batch, then the winners side by side.
int run_plan_range(const Scenario& s, const PlanArgs& args, PlanOptions options) {
  std::vector<int> counts;
  try {
    counts = parse_gpu_range(args.gpus_range);
  } catch (const std::invalid_argument& e) {
    throw UserError(fmt::format("--gpus-range: {}", e.what()));
  }
  for (int n : counts) (void)on_gpus(s, n);  // every count checked before any plan runs
  const std::vector<PlanResult> results = plan_range(s, counts, options);
  cli::clear_progress();
  if (!args.html.empty()) write_file(args.html, plan_range_html(s, results), "HTML report");
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
      winner = predict(with_layout(s, result.top.front().point), traced);
    }
    write_file(args.html, cli::plan_html(s, result, winner ? &*winner : nullptr), "HTML report");
  }
  if (!args.emit.empty()) {
    if (args.emit_rank > static_cast<int>(result.top.size()))
      throw UserError(fmt::format("--emit-rank {}: the plan ranked {} layout(s)", args.emit_rank, result.top.size()));
    const nlohmann::ordered_json original = nlohmann::ordered_json::parse(read_input_file(args.scenario));
    const PlanPoint& point = result.top[static_cast<std::size_t>(args.emit_rank - 1)].point;
    write_file(args.emit, emitted_scenario(original, args.scenario, point, result.gpus).dump(2) + "\n", "scenario");
  }
  write(args.csv ? cli::plan_csv(result) : args.json ? cli::plan_json(s, result) : cli::plan_text(s, result));
  return kExitOk;
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
                  "Plan on several GPU counts at one global batch: A:B\n(A, 2A, 4A, ... up to B) or a list A,B,C; with "
                  "--html,\nthe strong-scaling page of the winners");
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
  cmd->add_option("--emit", pa.emit,
                  "Also write the winner as a scenario file to FILE: `stepcast predict FILE`\ngives its step (and "
                  "the time and cost of the run)");
  cmd->add_option("--emit-rank", pa.emit_rank, "Which row --emit writes (1: the winner)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
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

}  // namespace

Command plan_command(CLI::App& app) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* cmd = add_plan_command(app, *args);
  return {cmd, true, [args] { return run_plan(*args); }};
}

}  // namespace stepcast::cli
