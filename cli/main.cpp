/// \file
/// The `stepcast` command: registers the commands (one file each, cli/command.hpp), parses
/// the command line with CLI11, runs the command given and maps exceptions to exit codes
/// (cli/command.hpp says which).
#include "cli/command.hpp"
#include "cli/user_catalog.hpp"

#include "base/allocator.hpp"
#include "base/json_input.hpp"
#include "base/version.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace stepcast;
using namespace stepcast::cli;

/// `stepcast --version`: the version, the commit built from, and where the data is read from.
std::string version_text() {
  std::string data;
  try {
    data = data_dir().string();
  } catch (const InputError& e) {
    data = "not found (" + e.problems().front().message + ")";
  }
  return fmt::format("stepcast {} (commit {})\ndata: {}", version(), commit(), data);
}

/// The top-level options, help footer and formatting of the `stepcast` command.
void configure_app(CLI::App& app) {
  app.set_version_flag("--version", version_text, "Print the version, the commit and the data folder, and exit");
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

int run(int argc, char** argv) {
  CLI::App app{"stepcast: a performance model of distributed GPU training", "stepcast"};
  configure_app(app);
  std::vector<Command> commands{predict_command(app), scale_command(app), validate_command(app), catalog_command(app)};
  for (Command& c : fit_commands(app)) commands.push_back(std::move(c));
  for (auto add : {init_command, plan_command, compare_command, need_command, schema_command})
    commands.push_back(add(app));
  // User catalog folders, on every command that reads catalog names (repeatable).
  std::vector<std::string> catalog_dirs;
  for (const Command& c : commands)
    if (c.reads_catalog)
      c.app
          ->add_option("--catalog", catalog_dirs,
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
    load_user_catalogs(catalog_folders(catalog_dirs));
  } catch (const InputError&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw UserError(e.what());
  }
  for (const Command& c : commands)
    if (c.app->parsed()) return c.run();
  error("no command given");
  return kExitBadInput;
}

}  // namespace

int main(int argc, char** argv) {
  stepcast::tune_allocator();
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
