/// \file
/// `stepcast catalog [SECTION]`: the names a scenario can use, with their figures and sources.
#include "cli/command.hpp"

#include "report/report.hpp"

#include <stdexcept>
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

namespace stepcast::cli {

namespace {

std::string catalog_examples() {
  return examples({{"stepcast catalog", "every catalog"},
                   {"stepcast catalog gpus", "GPUs with peaks, memory, NVLink and sources"},
                   {"stepcast catalog --json", "every catalog as one JSON object"}});
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

}  // namespace

Command catalog_command(CLI::App& app) {
  auto args = std::make_shared<CatalogArgs>();
  CLI::App* cmd = add_catalog_command(app, *args);
  return {cmd, true, [args] { return run_catalog(*args); }};
}

}  // namespace stepcast::cli
