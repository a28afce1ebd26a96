#include "cli/command.hpp"

#include "base/json_input.hpp"
#include "model/compute.hpp"
#include "report/report.hpp"
#include "report/report_html.hpp"
#include "scenario/schema.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace stepcast::cli {

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

/// Words of `text` wrapped at `width` columns, continuation lines indented by `indent`.
std::string wrap(const std::string& text, std::size_t first_column, std::size_t indent, std::size_t width) {
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

/// An "Examples:" block: each command line under a comment saying what it does.
std::string examples(const std::vector<std::pair<std::string, std::string>>& lines) {
  std::string out = "Examples:\n";
  for (const auto& [command, what] : lines) out += fmt::format("  # {}\n  {}\n", what, command);
  return out;
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

/// The scenario on `gpus` GPUs (at its own global batch with `fixed_batch`). with_gpus and
/// with_gpus_at_global_batch document std::invalid_argument for a count the hardware or the
/// batch cannot take (not whole nodes, more than the cluster, DP ranks that do not divide the
/// batch): the user's --gpus.
Scenario on_gpus(const Scenario& s, int gpus, bool fixed_batch) {
  try {
    return fixed_batch ? with_gpus_at_global_batch(s, gpus) : with_gpus(s, gpus);
  } catch (const InputError&) {
    throw;
  } catch (const std::invalid_argument& e) {
    throw UserError(fmt::format("{}: --gpus {}{}: {}", s.file, gpus, fixed_batch ? " --fixed-batch" : "", e.what()));
  }
}

/// The in-step fractions of `file` (`--in-step`), or null for none given.
std::shared_ptr<const InStepFractions> load_in_step_option(const std::string& file) {
  if (file.empty()) return nullptr;
  if (!std::filesystem::exists(file)) throw UserError("no such in-step file: " + file);
  return std::make_shared<const InStepFractions>(load_in_step_fractions(file, file));
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

}  // namespace stepcast::cli
