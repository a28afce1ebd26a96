/// \file
/// `stepcast schema [--markdown]`: every scenario key, printed from the one schema.
#include "cli/command.hpp"

#include "scenario/schema.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

namespace stepcast::cli {

namespace {

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

}  // namespace

Command schema_command(CLI::App& app) {
  auto args = std::make_shared<SchemaArgs>();
  CLI::App* cmd = add_schema_command(app, *args);
  return {cmd, false, [args] { return run_schema(*args); }};
}

}  // namespace stepcast::cli
