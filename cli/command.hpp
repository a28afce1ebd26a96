/// \file
/// What every command of `stepcast` shares: its errors and exit codes, writing a report, the
/// help text's parts, the options several commands take, and the Command each command file
/// registers (one file per command: predict_command.cpp, scale_command.cpp, ...).
///
/// Exit codes: 0 success; 2 for anything the user can fix (an unreadable or invalid
/// scenario, record, raw file or catalog: stepcast::InputError; a bad command line; an
/// output -- standard output, a --trace or -o file -- that cannot be written); 1 for a broken
/// invariant, i.e. a bug, with a message asking for a report; 3 for `validate` with a gate
/// whose limits the predictions cross (kExitGate). Only errors the front end
/// itself recognises as the user's become 2: the library's own exceptions other than
/// InputError (std::invalid_argument from deep in the model included) are internal errors.
/// Every error is one line on stderr: `stepcast: error: <message>`; a file with several
/// problems gets one such line for each, then one counting them.
#pragma once

#include "scenario/scenario.hpp"

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stepcast {
struct InStepFractions;
}

namespace stepcast::cli {

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

/// `stepcast validate` with a gate (--gate, --max-median-error, ...): it ran, and the
/// predictions fall outside a limit (validate/gate.hpp).
constexpr int kExitGate = 3;

/// One `stepcast: error: <message>` line on stderr.
void error(std::string_view message);

/// Writes `text` to standard output and makes sure it got there: a short write, a failed
/// flush or the stream's error state (a full disk, a closed descriptor) is a UserError.
void write(const std::string& text);

/// Writes `text` to the file at `path` (created or replaced); a path that cannot be written
/// is a UserError naming it and the reason.
void write_file(const std::string& path, const std::string& text, std::string_view what);

/// Words of `text` wrapped at `width` columns, continuation lines indented by `indent`.
std::string wrap(const std::string& text, std::size_t first_column, std::size_t indent, std::size_t width = 90);

/// What a scenario file holds, its required keys from the schema; shown by every command's --help.
std::string scenario_help();
std::string exit_code_help();

/// Seed scenarios the examples use (the tests predict every seed, so these stay valid).
inline constexpr const char* kSeed = "scenarios/seeds/gpt2-xl-ddp-8xa100.json";
inline constexpr const char* kMultiNodeSeed = "scenarios/seeds/rule-of-thumb-10b-4x8a100-400g.json";

/// An "Examples:" block: each command line under a comment saying what it does.
std::string examples(const std::vector<std::pair<std::string, std::string>>& lines);

/// A command's --help footer: details, examples, the scenario's keys (`with_scenario`) and
/// the exit codes; fit_footer the same with fit's own exit codes.
std::string footer(const std::string& details, const std::string& example_block, bool with_scenario);
std::string fit_footer(const std::string& details, const std::string& example_block);

/// The scenario on `gpus` GPUs (at its own global batch with `fixed_batch`, `scale --fixed-batch`); a
/// count the hardware or the batch cannot take is the user's --gpus.
Scenario on_gpus(const Scenario& s, int gpus, bool fixed_batch = false);

/// The in-step fractions of `file` (`--in-step`), or null for none given.
std::shared_ptr<const InStepFractions> load_in_step_option(const std::string& file);

/// A GPU count on the command line: a whole number >= 1.
CLI::Validator gpu_count();

/// `--html FILE`: the self-contained HTML report; refused (exit 2) in a build without the
/// charting library.
void add_html_option(CLI::App* cmd, std::string& file);

/// One subcommand of `stepcast`: its CLI11 app, whether it reads catalog names (then it
/// takes --catalog), and what runs once it was parsed.
struct Command {
  CLI::App* app = nullptr;
  bool reads_catalog = true;
  std::function<int()> run;
};

/// The commands, each registered on `app` by its own file, in the order `--help` lists them.
Command predict_command(CLI::App& app);
Command scale_command(CLI::App& app);
Command validate_command(CLI::App& app);
Command catalog_command(CLI::App& app);
/// `fit` and its subcommands, the subcommands first (they are parsed under `fit`).
std::vector<Command> fit_commands(CLI::App& app);
Command init_command(CLI::App& app);
Command plan_command(CLI::App& app);
Command compare_command(CLI::App& app);
Command need_command(CLI::App& app);
Command schema_command(CLI::App& app);

}  // namespace stepcast::cli
