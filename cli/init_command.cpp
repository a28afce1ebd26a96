/// \file
/// `stepcast init --model NAME --box NAME`: a starter scenario with its defaults as notes.
#include "cli/command.hpp"

#include "scenario/starter.hpp"

#include <stdexcept>
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

namespace stepcast::cli {

namespace {

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

}  // namespace

Command init_command(CLI::App& app) {
  auto args = std::make_shared<InitArgs>();
  CLI::App* cmd = add_init_command(app, *args);
  return {cmd, true, [args] { return run_init(*args); }};
}

}  // namespace stepcast::cli
