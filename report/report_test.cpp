/// Tests of the reports' pure parts: the scaling sweep's baseline and figures (scale_rows),
/// and the CSV tables (quoting, empty fields for absent figures, one row per table row).

#include "report/report.hpp"

#include "base/version.hpp"
#include "report/report_html.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace stepcast;
using namespace stepcast::cli;

namespace {

/// A prediction on `gpus` GPUs at `tokens_per_s`, fitting in memory or not.
Prediction point(int gpus, double tokens_per_s, bool fits) {
  Prediction p;
  p.gpus = gpus;
  p.tokens_per_s = tokens_per_s;
  p.tokens_per_s_per_gpu = tokens_per_s / gpus;
  p.tokens_per_step = 8192.0 * gpus;
  p.step_time_s = p.tokens_per_step / tokens_per_s;
  p.memory.verdict = fits ? MemoryVerdict::fits : MemoryVerdict::oom;
  return p;
}

std::size_t lines(const std::string& text) {
  std::size_t n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

}  // namespace

TEST_CASE("scale baseline: the fewest GPUs that fit, not the first row") {
  // 1 GPU out of memory; 8 GPUs at 8000 tokens/s is the baseline; 16 GPUs at 12000 tokens/s:
  // speedup 12000 / 8000 = 1.5 on twice the GPUs, efficiency 1.5 / 2 = 0.75.
  const auto rows = scale_rows({point(1, 1500, false), point(16, 12000, true), point(8, 8000, true)});
  REQUIRE(scale_baseline(rows) == std::optional<std::size_t>(2));
  CHECK(rows[2].baseline);
  CHECK_FALSE(rows[0].baseline);
  CHECK_FALSE(rows[1].baseline);
  CHECK(rows[2].speedup == doctest::Approx(1.0));
  CHECK(rows[1].speedup == doctest::Approx(1.5));
  CHECK(rows[1].scaling_efficiency == doctest::Approx(0.75));
  CHECK(std::isnan(rows[0].speedup));  // a count that does not fit gets no speedup
  CHECK(std::isnan(rows[0].scaling_efficiency));
}

TEST_CASE("scale baseline: a tight row fits; none when no row fits") {
  auto tight = point(2, 1000, true);
  tight.memory.verdict = MemoryVerdict::tight;
  CHECK(scale_baseline(scale_rows({point(1, 600, false), tight})) == std::optional<std::size_t>(1));
  const auto none = scale_rows({point(1, 600, false), point(2, 1100, false)});
  CHECK_FALSE(scale_baseline(none).has_value());
  for (const ScaleRow& r : none) {
    CHECK_FALSE(r.baseline);
    CHECK(std::isnan(r.speedup));
  }
}

TEST_CASE("scale rows: USD per million tokens = price x GPUs x step / 3600 / (tokens per step / 1e6)") {
  // 8 GPUs at $2/GPU-hour, 65536 tokens per step at 8000 tokens/s: step 8.192 s,
  // 2 x 8 x 8.192 / 3600 / 0.065536 = 0.5556 USD per million tokens.
  const auto priced = scale_rows({point(8, 8000, true)}, 2.0);
  REQUIRE(priced[0].usd_per_million_tokens.has_value());
  CHECK(*priced[0].usd_per_million_tokens == doctest::Approx(2.0 * 8 * 8.192 / 3600 / 0.065536));
  CHECK(priced[0].tokens_per_s_per_gpu == doctest::Approx(1000));
  CHECK_FALSE(scale_rows({point(8, 8000, true)})[0].usd_per_million_tokens.has_value());
}

TEST_CASE("scale csv: a header with units, one row per point, absent figures empty") {
  const std::string csv = scale_csv(scale_rows({point(1, 1500, false), point(8, 8000, true)}));
  CHECK(lines(csv) == 3);
  CHECK(csv.rfind("gpus,nodes,step_time_s,comm_exposed_s,tokens_per_s,tokens_per_s_per_gpu,mfu_fraction,", 0) == 0);
  // 1 GPU: no dataset (time_per_epoch_s NaN), no price, not the baseline, no speedup.
  CHECK(csv.find("\n1,1,5.4613") != std::string::npos);
  CHECK(csv.find(",,,false,,,") != std::string::npos);
  CHECK(csv.find(",true,1,1,") != std::string::npos);  // the 8-GPU baseline: speedup 1, efficiency 1
}

TEST_CASE("compare csv: fields with commas and quotes are quoted, quotes doubled") {
  CompareRow r;
  r.scenario = "a, \"b\"";
  r.hardware = "1 x dgx-a100 (8 x A100)";
  const std::string csv = compare_csv({r});
  CHECK(csv.find("\n\"a, \"\"b\"\"\",") != std::string::npos);
  CHECK(lines(csv) == 2);
}

TEST_CASE("a view leads with OUT OF MEMORY or TIGHT and the two largest terms; nothing when the step fits") {
  MemoryBreakdown m;
  m.capacity_bytes = 80.0 * 1024 * 1024 * 1024;
  m.terms = {{"weights", 20.0 * 1024 * 1024 * 1024, ""},
             {"optimizer", 60.0 * 1024 * 1024 * 1024, ""},
             {"activations", 10.0 * 1024 * 1024 * 1024, ""}};
  m.total_bytes = 90.0 * 1024 * 1024 * 1024;
  m.largest = {"optimizer", "weights", "activations"};  // as memory_per_gpu ranks them
  m.verdict = MemoryVerdict::oom;
  const std::string oom = memory_warning(m);
  CHECK(oom.rfind("OUT OF MEMORY on the GPU: 90.00 GiB per GPU of 80.00 GiB", 0) == 0);
  CHECK(oom.find("optimizer 60.00 GiB, weights 20.00 GiB") != std::string::npos);
  CHECK(oom.find("activations") == std::string::npos);
  m.verdict = MemoryVerdict::tight;
  CHECK(memory_warning(m).rfind("TIGHT: ", 0) == 0);
  m.verdict = MemoryVerdict::fits;
  CHECK(memory_warning(m).empty());
}

TEST_CASE("an HTML page names the stepcast version that wrote it") {
  if (!html_report_available()) return;  // built without the charting library: --html refuses
  const std::string page = validate_html({}, {"runs.jsonl"});
  CHECK(page.find(std::string("stepcast ") + version()) != std::string::npos);
  CHECK(page.find("stepcast unknown") == std::string::npos);
}

TEST_CASE("compare: speedup and break-even price against the first row; why names the largest difference") {
  CompareRow a;
  a.scenario = "a100";
  a.gpus = 8;
  a.tokens_per_s = 1000;
  a.tokens_per_step = 8000;
  a.step_time_s = 8;
  a.compute_busy_s = 7;
  a.comm_exposed_s = 1;
  a.usd_per_million_tokens = 2.0 * 8 / 3600 / (1000 / 1e6);  // 2 USD/GPU-h
  CompareRow b = a;
  b.scenario = "h100";
  b.tokens_per_s = 2500;
  b.step_time_s = 3.2;
  b.compute_busy_s = 2.7;
  b.comm_exposed_s = 0.5;
  b.usd_per_million_tokens.reset();
  std::vector<CompareRow> rows{a, b};
  compare_against_first(rows);
  CHECK(rows[0].speedup == doctest::Approx(1.0));
  CHECK(rows[1].speedup == doctest::Approx(2.5));
  // 2.5x the tokens per GPU-hour: the same cost per token at 2.5 x 2 USD.
  REQUIRE(rows[1].break_even_price_per_gpu_hour_usd.has_value());
  CHECK(*rows[1].break_even_price_per_gpu_hour_usd == doctest::Approx(5.0));
  CHECK(*rows[0].break_even_price_per_gpu_hour_usd == doctest::Approx(2.0));
  CHECK(rows[0].why.empty());
  CHECK(rows[1].why.find("2.50x the tokens/s of a100; the largest difference is compute: 2.7 s against 7 s") !=
        std::string::npos);
  // Without the first's price there is no break-even; an out-of-memory row says so first.
  rows[0].usd_per_million_tokens.reset();
  rows[1].verdict = MemoryVerdict::oom;
  compare_against_first(rows);
  CHECK_FALSE(rows[1].break_even_price_per_gpu_hour_usd.has_value());
  CHECK(rows[1].why.rfind("h100 runs out of memory", 0) == 0);
}
