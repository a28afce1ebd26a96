/// \file
/// stepcast_validate_bench: how long `stepcast validate` takes as the number of measured-run
/// records grows. A plain timing harness (std::chrono, one thread). It builds N synthetic
/// records in memory by replicating the records of a .jsonl file (default
/// tests/data/good/runs.jsonl; data/validation/runs.jsonl is richer) with new ids and
/// varied knobs (micro-batch x1..x4 and the measured value with it, so that ordering pairs
/// exist), then times, separately and in all:
///  (a) reading: parse_measured_run on every line;
///  (b) validating: validate_runs over every record on --threads threads (default 1; the
///      CLI uses one per hardware thread): the record's scenario, its checks, the
///      prediction; every record is predicted, nothing is cached;
///  (c) the summaries the CLI prints: summarize() of all records.
/// `--write FILE` also writes the generated records, to time the CLI on them.
/// Exit status 0 whether or not a target is met (it is not a test).
#include "base/allocator.hpp"
#include "base/json_input.hpp"
#include "validate/validation.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace {

using namespace stepcast;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// The base records, one JSON object each.
std::vector<nlohmann::json> read_base(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::string line;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) out.push_back(nlohmann::json::parse(line));
  if (out.empty()) throw std::runtime_error(path + " holds no records");
  return out;
}

/// Record i: base record i mod B with a new id and micro-batch x (1 + (i / B) mod 4); where
/// the record derives grad_accum from the global batch, the global batch scales with it.
/// The measured value moves by 1% per step so that pairs one knob apart order.
std::string synthetic_record(const nlohmann::json& base, std::size_t i, std::size_t copy) {
  nlohmann::json r = base;
  const int m = 1 + static_cast<int>(copy % 4);
  r["id"] = fmt::format("{}-synthetic-{}", base["id"].get<std::string>(), i);
  nlohmann::json& batch = r["batch"];
  if (batch["micro_batch"].is_number_integer()) {
    batch["micro_batch"] = batch["micro_batch"].get<std::int64_t>() * m;
    if (batch["global_batch"].is_number_integer())
      batch["global_batch"] = batch["global_batch"].get<std::int64_t>() * m;
  }
  r["measured"]["value"] = r["measured"]["value"].get<double>() * (1.0 + 0.01 * (m - 1));
  return r.dump();
}

}  // namespace

int main(int argc, char** argv) {
  stepcast::tune_allocator();
  CLI::App app{"stepcast_validate_bench: time reading, validating and summarizing N measured-run records"};
  std::string base_file = (data_dir() / "tests" / "data" / "good" / "runs.jsonl").string();
  std::vector<std::size_t> counts{1000, 8000, 100000};
  std::string write_file;
  unsigned threads = 1;
  app.add_option("--runs", base_file, "records to replicate (.jsonl)");
  app.add_option("--records", counts, "record counts to time")->delimiter(',');
  app.add_option("--write", write_file, "also write the largest generated set to this .jsonl file");
  app.add_option("--threads", threads, "threads for validate_runs (0: one per hardware thread)");
  CLI11_PARSE(app, argc, argv);
  try {
    const std::vector<nlohmann::json> base = read_base(base_file);
    fmt::print("base: {} ({} records)\n", base_file, base.size());
    fmt::print("{:>9} {:>10} {:>12} {:>12} {:>10} {:>9} {:>8} {:>14}\n", "records", "read (s)", "validate (s)",
               "summaries (s)", "total (s)", "ok", "skipped", "ordering pairs");
    for (const std::size_t n : counts) {
      std::vector<std::string> lines;
      lines.reserve(n);
      for (std::size_t i = 0; i < n; ++i) lines.push_back(synthetic_record(base[i % base.size()], i, i / base.size()));
      if (!write_file.empty() && n == counts.back()) {
        std::ofstream out(write_file);
        for (const std::string& l : lines) out << l << '\n';
        if (!out) throw std::runtime_error("cannot write " + write_file);
      }
      const auto t0 = Clock::now();
      std::vector<MeasuredRun> runs;
      runs.reserve(n);
      for (std::size_t i = 0; i < n; ++i)
        runs.push_back(parse_measured_run(lines[i], "synthetic.jsonl", static_cast<int>(i + 1)));
      const double read_s = seconds_since(t0);
      const auto t1 = Clock::now();
      const std::vector<ValidationRow> rows = validate_runs(runs, nullptr, "", threads);
      const double validate_s = seconds_since(t1);
      const auto t2 = Clock::now();
      const auto all = summarize(rows);
      const double summary_s = seconds_since(t2);
      fmt::print("{:>9} {:>10.2f} {:>12.2f} {:>12.2f} {:>10.2f} {:>9} {:>8} {:>14}\n", n, read_s, validate_s, summary_s,
                 read_s + validate_s + summary_s, all[0].count, all[0].skipped, all[0].ordering_pairs);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "stepcast_validate_bench: {}\n", e.what());
    return 1;
  }
  return 0;
}
