/// \file
/// Text reports: fixed-width tables with the unit of every column in its header.

#include "report/report.hpp"

#include "model/collective.hpp"
#include "model/transformer.hpp"
#include "topologies/gpu.hpp"
#include "topologies/link.hpp"
#include "topologies/topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace stepcast::cli {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

/// Display width of a UTF-8 string (code points; every glyph used here is one column).
std::size_t display_width(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

std::string pad(std::string_view s, std::size_t width, bool right) {
  const std::size_t w = display_width(s);
  std::string fill(width > w ? width - w : 0, ' ');
  return right ? fill + std::string(s) : std::string(s) + fill;
}

/// A fixed-width table: left-aligned text columns, right-aligned number columns, and a
/// rule under the header and wherever `rule()` was called.
class Table {
 public:
  struct Column {
    std::string header;
    bool right = false;  ///< numbers are right-aligned
  };
  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

  void add(std::vector<std::string> cells) {
    cells.resize(columns_.size());
    rows_.push_back(std::move(cells));
  }
  void rule() { rows_.emplace_back(); }

  std::string render(std::string_view indent = "  ") const {
    std::vector<std::size_t> widths(columns_.size());
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      widths[c] = display_width(columns_[c].header);
      for (const auto& row : rows_)
        if (!row.empty()) widths[c] = std::max(widths[c], display_width(row[c]));
    }
    std::size_t total = 0;
    for (std::size_t w : widths) total += w;
    total += 2 * (widths.empty() ? 0 : widths.size() - 1);
    // A free-text last column (sources, notes) is underlined to 100 columns at most.
    std::size_t rule_width = total;
    if (!columns_.empty() && !columns_.back().right) {
      const std::size_t head = total - widths.back() + display_width(columns_.back().header);
      rule_width = std::min(total, std::max<std::size_t>(head, 100));
    }
    const std::string rule_line = std::string(indent) + std::string(rule_width, '-') + "\n";

    auto line = [&](const std::vector<std::string>& cells, bool header) {
      std::string out(indent);
      for (std::size_t c = 0; c < columns_.size(); ++c) {
        const bool last = c + 1 == columns_.size();
        // The last left-aligned column is not padded (no trailing blanks).
        if (last && !columns_[c].right)
          out += cells[c];
        else
          out += pad(cells[c], widths[c], header ? columns_[c].right : columns_[c].right);
        if (!last) out += "  ";
      }
      while (!out.empty() && out.back() == ' ') out.pop_back();
      return out + "\n";
    };

    std::vector<std::string> head;
    for (const auto& col : columns_) head.push_back(col.header);
    std::string out = line(head, true) + rule_line;
    for (const auto& row : rows_) out += row.empty() ? rule_line : line(row, false);
    return out;
  }

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

/// "1 node", "2 nodes".
std::string plural(long long n, std::string_view noun) { return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s"); }

/// 1234567.8 -> "1,234,568".
std::string grouped(double value) {
  if (!std::isfinite(value)) return "n/a";
  const bool negative = value < 0;
  std::string digits = fmt::format("{:.0f}", std::fabs(value));
  std::string out;
  const std::size_t n = digits.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0 && (n - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return negative ? "-" + out : out;
}

/// Seconds with enough digits for both millisecond and minute-long steps.
std::string seconds(double s) {
  if (!std::isfinite(s)) return "n/a";
  if (s >= 100) return fmt::format("{:.1f}", s);
  if (s >= 1) return fmt::format("{:.3f}", s);
  return fmt::format("{:.4f}", s);
}

std::string percent(double fraction) {
  if (!std::isfinite(fraction)) return "n/a";
  return fmt::format("{:.1f}", 100.0 * fraction);
}

std::string gib(double bytes) { return fmt::format("{:.2f}", bytes / kGiB); }

std::string fixed(double v, int digits) {
  if (!std::isfinite(v)) return "n/a";
  return fmt::format("{:.{}f}", v, digits);
}

/// Parameter count as "1.56 B" / "124.4 M".
std::string params(double n) {
  if (n >= 1e9) return fmt::format("{:.2f} B", n / 1e9);
  if (n >= 1e6) return fmt::format("{:.1f} M", n / 1e6);
  return grouped(n);
}

/// Free text (catalog sources) cut to `width` columns for tables; JSON has it in full.
std::string shorten(const std::string& text, std::size_t width = 60) {
  if (display_width(text) <= width) return text;
  std::string out;
  std::size_t n = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c & 0xC0) != 0x80 && ++n > width - 3) break;
    out += text[i];
  }
  return out + "...";
}

std::string section(std::string_view title) { return fmt::format("\n{}\n", title); }

std::string fabric_line(std::string_view label, const FabricLevel& level) {
  return fmt::format("  {}: {} ranks, link {} ({}), {:.1f} GB/s per direction, +{:.1f} µs/hop{}\n", label, level.ranks,
                     level.kind.empty() ? "?" : level.kind, name(level.link), level.bw_GBps, level.latency_us,
                     level.channels > 0 ? ", " + plural(level.channels, "channel") : "");
}

/// Measured vs predicted: error = (predicted - measured) / measured.
void measured_row(Table& t, std::string_view what, const std::optional<double>& measured, double predicted,
                  int digits) {
  if (!measured) return;
  const double err = *measured != 0 ? (predicted - *measured) / *measured : NAN;
  t.add({std::string(what), fixed(*measured, digits), fixed(predicted, digits),
         std::isfinite(err) ? fmt::format("{:+.1f}", 100 * err) : "n/a"});
}

}  // namespace

// ---------------------------------------------------------------------------------------
// catalog sections

std::string_view name(CatalogSection s) {
  switch (s) {
    case CatalogSection::models:
      return "models";
    case CatalogSection::gpus:
      return "gpus";
    case CatalogSection::boxes:
      return "boxes";
    case CatalogSection::clusters:
      return "clusters";
    case CatalogSection::links:
      return "links";
    case CatalogSection::algorithms:
      return "algorithms";
  }
  return "?";
}

std::vector<std::string> catalog_section_names() {
  return {"models", "gpus", "boxes", "clusters", "links", "algorithms"};
}

CatalogSection parse_catalog_section(std::string_view text) {
  for (auto s : {CatalogSection::models, CatalogSection::gpus, CatalogSection::boxes, CatalogSection::clusters,
                 CatalogSection::links, CatalogSection::algorithms})
    if (name(s) == text) return s;
  throw std::invalid_argument(
      fmt::format("unknown catalog section \"{}\" (valid: {})", text, join(catalog_section_names(), ", ")));
}

// ---------------------------------------------------------------------------------------
// predict: one function per section of the report, in the order they are printed.

namespace {

/// "12.3" (% of the step), "n/a" for a step of no time.
std::string step_share(const Prediction& p, double s) {
  return p.step_time_s > 0 ? percent(s / p.step_time_s) : std::string("n/a");
}

std::string header_section(const Scenario& sc, const Prediction& p, const std::string& trace_file) {
  std::string out;
  out += fmt::format("Scenario {}{}\n", p.scenario.empty() ? sc.name : p.scenario,
                     sc.file.empty() ? "" : fmt::format(" ({})", sc.file));
  if (!sc.description.empty()) out += fmt::format("  {}\n", sc.description);
  out +=
      fmt::format("  model {} ({} params) | GPUs {} = {} x {} GPUs/node | GPU {}\n", sc.model.name,
                  params(static_cast<double>(p.parameters)), p.gpus, plural(p.nodes, "node"), p.gpus_per_node, p.gpu);
  const StrategySpec& st = sc.strategy;
  const ParallelLayout& l = st.layout;
  out += fmt::format(
      "  strategy {}{}{}{} | hardware {}\n", name(p.strategy),
      l.tp > 1 || l.pp > 1 || l.cp > 1
          ? fmt::format(" | tensor parallel {}{}{} x data parallel {}", l.tp, l.sp ? " (sequence parallel)" : "",
                        l.cp > 1 ? fmt::format(" x context parallel {} ({})", l.cp, name(st.cp_comm)) : "",
                        data_parallel_degree(sc))
          : "",
      l.pp > 1 ? fmt::format(" x pipeline {} ({}{})", l.pp, name(l.schedule),
                             l.vpp > 1 ? fmt::format(", {} chunks per stage", l.vpp) : "")
               : "",
      l.ep > 1 ? fmt::format(" | expert parallel {}", l.ep) : "", p.hardware);
  const TrainingSpec& tr = sc.training;
  out += fmt::format("  training {} with {} | recompute {} | flash attention {}{}\n", name(tr.precision),
                     name(tr.optimizer), recompute_text(tr.recompute, tr.recompute_modules),
                     tr.flash_attention ? "on" : "off",
                     tr.lora ? fmt::format(" | LoRA rank {} on {}", tr.lora->rank, join(tr.lora->targets, ",")) : "");
  out += fmt::format(
      "  batch: micro-batch {} x grad-accum {} x {} = {} samples/step x {} tokens = {} "
      "tokens/step\n",
      tr.micro_batch, tr.grad_accum,
      data_parallel_degree(sc) != p.gpus  // TP, PP or CP: the batch multiplies by the replicas
          ? fmt::format("{} data-parallel replica{}", data_parallel_degree(sc),
                        data_parallel_degree(sc) == 1 ? "" : "s")
          : fmt::format("{} GPUs", p.gpus),
      grouped(p.global_batch_samples), tr.seq_len, grouped(p.tokens_per_step));
  if (!trace_file.empty())
    out += fmt::format("  trace: {} (open in https://ui.perfetto.dev or chrome://tracing)\n", trace_file);
  return out;
}

std::string step_time_section(const Prediction& p) {
  std::string out = section("Step time (simulated)");
  const double step = p.step_time_s;
  auto share = [&](double s) { return step_share(p, s); };
  // The representative GPU's step = compute busy + exposed communication + idle, and
  // compute busy = the compute parts at full speed + the time NCCL's SMs cost them.
  const double slowed_s = p.compute_busy_s - p.compute_s;
  // A difference of sums: rounding leaves about 1e-16 s where nothing is idle, which must
  // print as 0, not -0.0000.
  double idle_s = step - p.compute_busy_s - p.comm_exposed_s;
  if (idle_s < 0 && idle_s > -1e-9 * std::max(1.0, step)) idle_s = 0;
  Table t({{"part", false}, {"time (s)", true}, {"share (%)", true}, {"note", false}});
  t.add({"forward", seconds(p.forward_s), share(p.forward_s), ""});
  t.add({"backward", seconds(p.backward_s), share(p.backward_s), ""});
  t.add({"recompute", seconds(p.recompute_s), share(p.recompute_s), ""});
  t.add({"optimizer", seconds(p.optimizer_s), share(p.optimizer_s), ""});
  t.add({"compute slowed by NCCL", seconds(slowed_s), share(slowed_s),
         fmt::format("compute {:.1f}% slower while a collective runs", 100 * p.comm_slowdown)});
  t.add({"communication exposed", seconds(p.comm_exposed_s), share(p.comm_exposed_s), "not hidden behind compute"});
  t.add({"idle", seconds(idle_s), share(idle_s), "neither compute nor communication running"});
  t.add({"communication hidden", seconds(p.comm_hidden_s), "-", "overlapped with compute; not in the total"});
  t.rule();
  t.add({"step total", seconds(step), step > 0 ? "100.0" : "n/a",
         fmt::format("simulated ({} tasks, {} events)", grouped(p.simulation_tasks),
                     grouped(static_cast<double>(p.simulation_events)))});
  out += t.render();
  out += fmt::format(
      "  closed-form bounds: {} s with perfect overlap, {} s with no overlap "
      "(compute {} s + communication {} s)\n",
      seconds(p.step_perfect_overlap_s), seconds(p.step_no_overlap_s), seconds(p.compute_s), seconds(p.comm_total_s));
  return out;
}

std::string kernels_section(const Prediction& p) {
  std::string out = section("Compute by kernel (forward + backward + recompute, one GPU, full speed)");
  const KernelTimes& k = p.compute_by_kernel;
  const double total = k.total_s();
  auto share = [&](double s) { return total > 0 ? fixed(100 * s / total, 1) : std::string("n/a"); };
  Table t({{"kernels", false}, {"time (s)", true}, {"share (%)", true}, {"note", false}});
  t.add({"GEMMs", seconds(k.gemm_s), share(k.gemm_s), "tile and wave quantized against the GEMM ceiling"});
  t.add(
      {"attention", seconds(k.attention_s), share(k.attention_s), "published kernel rates by sequence and head size"});
  t.add({"memory-bound", seconds(k.memory_s), share(k.memory_s), "norms, rotary, activations, residuals, loss"});
  t.add(
      {"launch-bound", seconds(k.launch_s), share(k.launch_s), "layers whose kernels are shorter than their launches"});
  t.rule();
  t.add({"total", seconds(total), total > 0 ? "100.0" : "n/a", "= forward + backward + recompute above"});
  out += t.render();
  return out;
}

std::string simulation_section(const Prediction& p) {
  std::string out = section("Simulation (the representative GPU)");
  Table t({{"figure", false}, {"value", true}, {"unit", false}});
  t.add({"compute busy", seconds(p.compute_busy_s), "s (compute stream running)"});
  t.add({"communication busy", seconds(p.comm_busy_s), "s (any collective running)"});
  t.add({"communication hidden", seconds(p.comm_hidden_s), "s (while compute ran)"});
  t.add({"communication exposed", seconds(p.comm_exposed_s), "s (while compute did not run)"});
  t.add({"overlap ratio", percent(p.overlap_ratio), "% of communication busy time hidden"});
  t.add({"compute slowdown while NCCL runs", percent(p.comm_slowdown), "% of compute throughput"});
  t.add({"peak memory (simulated)", gib(p.simulated_peak_memory_bytes),
         p.memory.total_bytes > 0
             ? fmt::format("GiB ({}{:.1f}% of the memory model's total, {} GiB)",
                           p.simulated_peak_memory_class.empty() ? "" : p.simulated_peak_memory_class + "; ",
                           100 * p.simulated_peak_memory_bytes / p.memory.total_bytes, gib(p.memory.total_bytes))
             : std::string("GiB")});
  return out + t.render();
}

std::string streams_and_links_section(const Prediction& p) {
  std::string out;
  if (!p.streams.empty()) {
    out += "\n";
    Table t({{"stream", false}, {"busy (s)", true}, {"busy (% of step)", true}});
    for (const StreamUse& su : p.streams) t.add({su.name, seconds(su.busy_s), step_share(p, su.busy_s)});
    out += t.render();
  }
  if (!p.links.empty()) {
    out += "\n";
    Table t({{"link", false},
             {"capacity (GB/s)", true},
             {"busy (s)", true},
             {"busy (% of step)", true},
             {"mean load (% of capacity)", true},
             {"carried (GB)", true}});
    for (const LinkUse& l : p.links)
      t.add({l.name, fixed(l.capacity_GBps, l.capacity_GBps >= 10 ? 1 : 3), seconds(l.busy_s), step_share(p, l.busy_s),
             fixed(100.0 * l.bytes / (l.capacity_GBps * 1e9 * p.step_time_s), 1), fixed(l.bytes / 1e9, 2)});
    out += t.render();
  }
  return out;
}

/// Time on the critical path per category, then its longest tasks.
std::string critical_path_section(const Prediction& p) {
  if (p.critical_path.empty()) return "";
  std::string out = section(fmt::format("Critical path ({} tasks from the step's start to its end)",
                                        grouped(static_cast<double>(p.critical_path.size()))));
  std::vector<std::pair<std::string, double>> by_category;
  for (const PathStep& ps : p.critical_path) {
    auto it =
        std::find_if(by_category.begin(), by_category.end(), [&](const auto& c) { return c.first == ps.category; });
    if (it == by_category.end())
      by_category.emplace_back(ps.category, ps.end_s - ps.start_s);
    else
      it->second += ps.end_s - ps.start_s;
  }
  std::stable_sort(by_category.begin(), by_category.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  Table t({{"category", false}, {"on the path (s)", true}, {"share of step (%)", true}});
  for (const auto& [category, time_s] : by_category) t.add({category, seconds(time_s), step_share(p, time_s)});
  out += t.render();

  constexpr std::size_t kLongest = 5;
  std::vector<const PathStep*> longest;
  for (const PathStep& ps : p.critical_path) longest.push_back(&ps);
  std::stable_sort(longest.begin(), longest.end(),
                   [](const PathStep* a, const PathStep* b) { return a->end_s - a->start_s > b->end_s - b->start_s; });
  if (longest.size() > kLongest) longest.resize(kLongest);
  out += fmt::format("\n  the {} longest tasks on the path:\n", longest.size());
  Table l(
      {{"task", false}, {"category", false}, {"start (s)", true}, {"duration (s)", true}, {"share of step (%)", true}});
  for (const PathStep* ps : longest)
    l.add({ps->task, ps->category, seconds(ps->start_s), seconds(ps->end_s - ps->start_s),
           step_share(p, ps->end_s - ps->start_s)});
  return out + l.render();
}

std::string throughput_section(const Prediction& p) {
  std::string out = section("Throughput");
  Table t({{"figure", false}, {"value", true}, {"unit", false}});
  t.add({"tokens/s", grouped(p.tokens_per_s), "tokens/s"});
  t.add({"tokens/s/GPU", grouped(p.tokens_per_s_per_gpu), "tokens/s per GPU"});
  t.add({"samples/s", fixed(p.samples_per_s, 2), "samples/s"});
  t.add({"MFU", percent(p.mfu), "%"});
  t.add({"HFU", percent(p.hfu), "% (with recompute)"});
  out += t.render();
  out += fmt::format(
      "  peak used: {:.1f} TFLOP/s per GPU, dense {} ({}); model {:.3g} FLOP/step, "
      "executed {:.3g} FLOP/step (causal attention halved, recompute included)\n",
      p.peak_tflops, name(p.peak_dtype), p.gpu, p.model_flops_per_step, p.hardware_flops_per_step);
  return out;
}

std::string epoch_section(const Scenario& sc, const Prediction& p) {
  std::string out = section("Epoch");
  if (!(p.time_per_epoch_s > 0 && std::isfinite(p.time_per_epoch_s)))
    return out +
           "  steps per epoch: n/a\n  time per epoch: n/a\n  cost per epoch: n/a\n"
           "  (no dataset in the scenario; add \"dataset\": {\"tokens\": N} or {\"samples\": N})\n";
  std::string size;
  if (sc.dataset.tokens)
    size = fmt::format("{} tokens", grouped(*sc.dataset.tokens));
  else if (sc.dataset.samples)
    size = fmt::format("{} samples", grouped(*sc.dataset.samples));
  out += fmt::format("  steps per epoch: {}{}\n", grouped(std::ceil(p.steps_per_epoch)),
                     size.empty() ? "" : fmt::format(" ({})", size));
  out += fmt::format("  time per epoch: {:.2f} h ({:.1f} min)\n", p.time_per_epoch_s / 3600, p.time_per_epoch_s / 60);
  if (p.cost_per_epoch_usd && sc.price_per_gpu_hour_usd)
    out += fmt::format("  cost per epoch: {:.2f} USD ({} GPUs x {:.2f} USD/GPU-hour)\n", *p.cost_per_epoch_usd, p.gpus,
                       *sc.price_per_gpu_hour_usd);
  else if (p.cost_per_epoch_usd)
    out += fmt::format("  cost per epoch: {:.2f} USD\n", *p.cost_per_epoch_usd);
  else
    out += "  cost per epoch: not priced (add price_per_gpu_hour_usd to the scenario)\n";
  return out;
}

}  // namespace

std::string memory_warning(const MemoryBreakdown& m) {
  const MemoryVerdict v = overall_verdict(m);
  if (v == MemoryVerdict::fits) return "";
  std::string largest;  // the breakdown's own ranking (memory_per_gpu's `largest`), two of it
  for (std::size_t i = 0; i < m.largest.size() && i < 2; ++i)
    for (const MemoryTerm& t : m.terms)
      if (t.name == m.largest[i]) largest += fmt::format("{}{} {} GiB", i ? ", " : "", t.name, gib(t.bytes));
  const std::string gpu =
      fmt::format("{} GiB per GPU of {} GiB (largest: {})", gib(m.total_bytes), gib(m.capacity_bytes), largest);
  const std::string host = m.host_terms.empty() ? ""
                                                : fmt::format("; host {} GiB of {} GiB", gib(m.host_total_bytes),
                                                              gib(m.host_capacity_bytes));
  if (v == MemoryVerdict::tight)
    return fmt::format("TIGHT: {}{}, above {:.0f}% of capacity: the allocator may not find room\n", gpu, host,
                       100 * kTightFraction);
  return fmt::format("OUT OF MEMORY on the {}: {}{}; the figures below are for a step that cannot run\n",
                     out_of_memory(m), gpu, host);
}

namespace {

std::string memory_section(const Prediction& p) {
  std::string out = section("Memory per GPU");
  const MemoryBreakdown& m = p.memory;
  Table t({{"term", false}, {"GiB", true}, {"note", false}});
  for (const MemoryTerm& term : m.terms) t.add({term.name, gib(term.bytes), term.note});
  t.rule();
  t.add({"total", gib(m.total_bytes),
         m.capacity_bytes > 0 ? fmt::format("{:.1f}% of capacity", 100 * m.total_bytes / m.capacity_bytes) : ""});
  t.add({"capacity", gib(m.capacity_bytes), p.gpu});
  out += t.render();
  std::string verdict;
  switch (m.verdict) {
    case MemoryVerdict::fits:
      verdict = "FITS";
      break;
    case MemoryVerdict::tight:
      verdict = fmt::format("TIGHT (above {:.0f}% of capacity)", 100 * kTightFraction);
      break;
    case MemoryVerdict::oom:
      verdict = "OUT OF MEMORY";
      break;
  }
  out += fmt::format("  verdict: {}{}\n", verdict,
                     m.largest.empty() ? "" : fmt::format("; largest terms: {}", join(m.largest, ", ")));
  if (m.host_terms.empty()) return out;
  out += section("Host memory per node (CPU offload)");
  Table h({{"term", false}, {"GiB", true}, {"note", false}});
  for (const MemoryTerm& term : m.host_terms) h.add({term.name, gib(term.bytes), term.note});
  h.rule();
  h.add({"total", gib(m.host_total_bytes),
         fmt::format("{:.1f}% of capacity", 100 * m.host_total_bytes / m.host_capacity_bytes)});
  h.add({"capacity", gib(m.host_capacity_bytes), "the box's host memory"});
  out += h.render();
  const std::string short_of = out_of_memory(m);
  out += fmt::format("  verdict: {}\n",
                     short_of.empty() ? std::string("FITS on GPU and host") : "OUT OF MEMORY on the " + short_of);
  return out;
}

/// Each collective as the simulation played it (CollectiveUse::cost, summarised from the
/// phases in the step graph; nothing is re-costed here).
std::string collectives_section(const Prediction& p) {
  std::string out = section("Collectives");
  if (p.collectives.empty()) return out + "  none (one GPU, or nothing to synchronise)\n";
  Table t({{"purpose", false},
           {"op", false},
           {"level", false},
           {"size (MB)", true},
           {"calls/step", true},
           {"algorithm", false},
           {"time/call (ms)", true},
           {"busbw (GB/s)", true},
           {"total (s)", true}});
  for (const CollectiveUse& c : p.collectives)
    t.add({c.purpose, c.cost.algorithm == "p2p" ? std::string("send/recv") : std::string(name(c.collective)),
           std::string(name(c.level)), fixed(c.bytes / 1e6, 2), std::to_string(c.calls_per_step),
           c.cost.protocol.empty() ? c.cost.algorithm : fmt::format("{}/{}", c.cost.algorithm, c.cost.protocol),
           fixed(c.cost.time_s * 1e3, 3), fixed(c.cost.busbw_GBps, 1), seconds(c.total_s())});
  out += t.render();
  if (p.pipeline_stages > 1)
    out += fmt::format(
        "  all collectives as if serial: {} s per step, summed over the {} pipeline stages (each stage's GPUs run "
        "their own; the calls above count every stage)\n",
        seconds(p.comm_total_s), p.pipeline_stages);
  else
    out += fmt::format("  all collectives as if serial: {} s per step\n", seconds(p.comm_total_s));
  return out;
}

std::string fabric_section(const Prediction& p) {
  std::string out = section("Fabric");
  out += fmt::format("  arch {}{}\n", name(p.fabric.arch), p.fabric.nvls ? ", NVLink SHARP (NVLS) available" : "");
  out += fabric_line("intra", p.fabric.intra);
  if (p.fabric.inter)
    out += fabric_line("inter", *p.fabric.inter);
  else
    out += "  inter: none (one node)\n";
  return out;
}

/// The prediction's assumptions, then the scenario's notes it does not already list.
std::string assumptions_section(const Scenario& sc, const Prediction& p) {
  std::string out = section("Assumptions");
  if (p.assumptions.empty()) out += "  (none stated)\n";
  for (const std::string& a : p.assumptions) out += fmt::format("  - {}\n", a);
  std::vector<std::string> notes;
  for (const std::string& n : sc.notes)
    if (std::find(p.assumptions.begin(), p.assumptions.end(), n) == p.assumptions.end()) notes.push_back(n);
  if (!notes.empty()) {
    out += section("Scenario notes");
    for (const std::string& n : notes) out += fmt::format("  - {}\n", n);
  }
  return out;
}

std::string measured_section(const Scenario& sc, const Prediction& p) {
  if (!sc.measured) return "";
  const MeasuredFigures& m = *sc.measured;
  std::string out = section("Measured vs predicted");
  Table t({{"figure", false}, {"measured", true}, {"predicted", true}, {"error (%)", true}});
  measured_row(t, "time per epoch (s)", m.time_per_epoch_s, p.time_per_epoch_s, 0);
  measured_row(t, "step time (s)", m.step_time_s, p.step_time_s, 4);
  measured_row(t, "tokens/s/GPU (tokens/s)", m.tokens_per_s_per_gpu, p.tokens_per_s_per_gpu, 0);
  out += t.render();
  out += "  error = (predicted - measured) / measured\n";
  if (!m.source.empty()) out += fmt::format("  source: {}\n", m.source);
  return out;
}

}  // namespace

std::string predict_text(const Scenario& sc, const Prediction& p, const std::string& trace_file) {
  return header_section(sc, p, trace_file) + memory_warning(p.memory) + step_time_section(p) + kernels_section(p) +
         simulation_section(p) + streams_and_links_section(p) + critical_path_section(p) + throughput_section(p) +
         epoch_section(sc, p) + memory_section(p) + collectives_section(p) + fabric_section(p) +
         assumptions_section(sc, p) + measured_section(sc, p);
}

// ---------------------------------------------------------------------------------------
// scale

std::string scale_text(const Scenario& sc, const std::vector<ScaleRow>& rows, bool fixed_batch) {
  std::string out =
      fmt::format("Scaling {}{} ({}, {})\n", sc.name, sc.file.empty() ? "" : fmt::format(" [{}]", sc.file),
                  sc.model.name, name(sc.strategy.layout.dp_sharding));
  const bool priced = sc.price_per_gpu_hour_usd.has_value();
  std::vector<Table::Column> columns = {
      {"GPUs", true},     {"nodes", true},   {"step time (s)", true},     {"comm exposed (s)", true},
      {"tokens/s", true}, {"MFU (%)", true}, {"time per epoch (h)", true}};
  if (priced) columns.push_back({"USD per M tokens", true});
  if (fixed_batch) columns.push_back({"batch (mb x ga)", true});
  for (const char* header : {"speedup (x)", "scaling efficiency (%)", "memory/GPU (GiB)"})
    columns.push_back({header, true});
  columns.push_back({"fits", false});
  Table t(columns);
  for (const ScaleRow& r : rows) {
    std::string fits;
    switch (r.verdict) {
      case MemoryVerdict::fits:
        fits = "yes";
        break;
      case MemoryVerdict::tight:
        fits = "tight";
        break;
      case MemoryVerdict::oom:
        fits = "NO (OOM)";
        break;
    }
    std::vector<std::string> cells = {std::to_string(r.gpus),
                                      std::to_string(r.nodes),
                                      seconds(r.step_time_s),
                                      seconds(r.comm_exposed_s),
                                      grouped(r.tokens_per_s),
                                      percent(r.mfu),
                                      r.time_per_epoch_s > 0 ? fixed(r.time_per_epoch_s / 3600, 2) : "n/a"};
    if (priced) cells.push_back(r.usd_per_million_tokens ? fixed(*r.usd_per_million_tokens, 3) : "n/a");
    if (fixed_batch) cells.push_back(fmt::format("{} x {}", r.micro_batch, r.grad_accum));
    const bool measured = std::isfinite(r.speedup);
    cells.push_back(measured ? fixed(r.speedup, 2) + (r.baseline ? "*" : "") : "-");
    cells.push_back(measured ? percent(r.scaling_efficiency) : "-");
    cells.push_back(gib(r.memory_per_gpu_bytes));
    cells.push_back(fits);
    t.add(cells);
  }
  out += t.render();
  if (rows.empty()) return out;
  out += "  step time simulated; comm exposed = communication not hidden behind compute\n";
  if (const auto base = scale_baseline(rows))
    out += fmt::format(
        "  speedup = tokens/s over the {}-GPU row (*: the fewest GPUs that fit in memory; rows "
        "that do not fit have none);\n  efficiency = speedup / GPU ratio; {}\n",
        rows[*base].gpus,
        fixed_batch ? fmt::format("global batch fixed at {} sequences (--fixed-batch): the micro-steps per "
                                  "GPU, then the micro-batch, shrink as GPUs grow",
                                  rows[*base].global_batch)
                    : std::string("micro-batch per GPU fixed (global batch grows with GPUs; --fixed-batch "
                                  "holds it)"));
  else
    out += "  no GPU count fits in memory: no baseline, no speedup\n";
  return out;
}

// ---------------------------------------------------------------------------------------
// catalog

namespace {

std::string models_text() {
  Table t({{"model", false},
           {"params (B)", true},
           {"layers", true},
           {"hidden", true},
           {"heads/kv", true},
           {"ffn", true},
           {"vocab", true},
           {"seq (tokens)", true},
           {"source", false}});
  for (const TransformerSpec& m : model_catalog())
    t.add({m.name, fixed(static_cast<double>(parameter_count(m)) / 1e9, 3), std::to_string(m.layers),
           std::to_string(m.hidden), fmt::format("{}/{}", m.heads, m.kv_heads), std::to_string(m.ffn_hidden),
           std::to_string(m.vocab), std::to_string(m.seq_len), shorten(m.source)});
  return t.render();
}

std::string gpus_text() {
  Table t({{"gpu", false},
           {"arch", false},
           {"bf16 peak (TFLOP/s)", true},
           {"fp16 peak (TFLOP/s)", true},
           {"memory (GiB)", true},
           {"bandwidth (GB/s)", true},
           {"NVLink (gen x links x GB/s)", false},
           {"source", false}});
  for (const GpuSpec& g : gpu_catalog())
    t.add({g.name, std::string(name(g.arch)), g.supports(Dtype::bf16) ? fixed(g.peak(Dtype::bf16), 1) : "-",
           g.supports(Dtype::fp16) ? fixed(g.peak(Dtype::fp16), 1) : "-", fixed(g.memory_bytes / kGiB, 0),
           fixed(g.memory_bw_GBps, 0),
           g.nvlink_gen > 0 ? fmt::format("{} x {} x {:g}", g.nvlink_gen, g.nvlink_links, g.nvlink_GBps_per_link) : "-",
           shorten(g.source)});
  return t.render();
}

std::string boxes_text() {
  Table t({{"box", false},
           {"GPU", false},
           {"GPUs (count)", true},
           {"intra fabric", false},
           {"PCIe", false},
           {"NICs (count x kind)", false},
           {"host (CPUs, GiB)", false},
           {"USD/GPU-h", true},
           {"source", false}});
  for (const BoxSpec& b : box_catalog()) {
    std::string fabric(name(b.fabric));
    if (!b.nvlink.empty()) fabric += " " + b.nvlink;
    if (b.nvswitches > 0) fabric += fmt::format(" ({} switches)", b.nvswitches);
    t.add({b.name, b.gpu, std::to_string(b.gpus), fabric, b.pcie.empty() ? "-" : b.pcie,
           b.nics > 0 ? fmt::format("{} x {}", b.nics, b.nic) : "-",
           b.host ? fmt::format("{}, {:g}", b.host->cpu, b.host->memory_GiB) : "-",
           b.price ? fmt::format("{:.2f}{}", b.price->usd_per_gpu_hour, b.price->kind == "reference" ? " (ref)" : "")
                   : "-",
           shorten(b.source)});
  }
  return t.render() +
         "  host: CPU offload runs on boxes with one (others: none catalogued); USD/GPU-h: the default of\n"
         "  price_per_gpu_hour_usd, a cloud's on-demand list price or (ref) a rental rate of the GPU class,\n"
         "  dated with its source in `stepcast catalog boxes --json`\n";
}

std::string clusters_text() {
  Table t({{"cluster", false},
           {"box", false},
           {"nodes (count)", true},
           {"GPUs (count)", true},
           {"network", false},
           {"source", false}});
  for (const ClusterSpec& c : cluster_catalog()) {
    const BoxSpec* box = find_box(c.box);
    std::string network = "-";
    if (c.network) {
      network =
          fmt::format("{} x {} per node, {}", c.network->nics_per_node, c.network->nic, name(c.network->topology));
      if (c.network->oversubscription != 1.0)
        network += fmt::format(", {:g}:1 oversubscribed", c.network->oversubscription);
      if (c.network->topology == NetworkTopology::rail_fat_tree)
        network += fmt::format(", leaf groups of {} nodes", c.network->nodes_per_leaf);
    }
    t.add({c.name, c.box, std::to_string(c.nodes),
           box ? std::to_string(static_cast<long long>(box->gpus) * c.nodes) : "?", network, shorten(c.source)});
  }
  return t.render();
}

std::string links_text() {
  Table t({{"link", false},
           {"class", false},
           {"line rate (GB/s)", true},
           {"effective (GB/s)", true},
           {"efficiency (%)", true},
           {"latency (µs)", true},
           {"source", false}});
  for (const LinkSpec& l : link_catalog())
    t.add({l.name + (l.nvls ? " (NVLS)" : ""), std::string(name(l.nccl_class)), fixed(l.line_rate_GBps, 2),
           fixed(l.effective_GBps, 2), l.line_rate_GBps > 0 ? percent(l.effective_GBps / l.line_rate_GBps) : "-",
           fixed(l.latency_us, 1), shorten(l.source)});
  return t.render();
}

std::string algorithms_text() {
  Table t({{"algorithm", false}, {"description", false}});
  t.add({"auto", "NCCL's choice: the fastest eligible algorithm and protocol"});
  for (const AlgorithmInfo& a : collective_algorithms()) t.add({a.name, a.description});
  return t.render();
}

}  // namespace

std::string catalog_text(const std::vector<CatalogSection>& sections) {
  std::string out;
  if (std::any_of(sections.begin(), sections.end(), [](CatalogSection s) { return s != CatalogSection::algorithms; }))
    out += "Sources are shortened here; `stepcast catalog --json` has them in full.\n";
  for (CatalogSection s : sections) {
    if (!out.empty()) out += "\n";
    switch (s) {
      case CatalogSection::models:
        out += "Models (model/catalog/models.json; params counted from the shape)\n";
        out += models_text();
        break;
      case CatalogSection::gpus:
        out += "GPUs (topologies/catalog/gpus.json; dense tensor-core peaks)\n";
        out += gpus_text();
        break;
      case CatalogSection::boxes:
        out += "Boxes (topologies/catalog/boxes.json)\n";
        out += boxes_text();
        break;
      case CatalogSection::clusters:
        out += "Clusters (topologies/catalog/clusters.json)\n";
        out += clusters_text();
        break;
      case CatalogSection::links:
        out += "Links (topologies/catalog/links.json; rates per direction)\n";
        out += links_text();
        break;
      case CatalogSection::algorithms:
        out += "Collective algorithms (strategy.algorithm in a scenario)\n";
        out += algorithms_text();
        break;
    }
  }
  return out;
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += items[i];
  }
  return out;
}

namespace {

/// The probe records' kernel time by category against the prediction's (validate/categories.hpp).
std::string categories_text(const std::vector<ValidationRow>& rows) {
  std::vector<std::vector<CategoryComparison>> all;
  Table t({{"id", false}, {"category", false}, {"measured (ms)", true}, {"predicted (ms)", true}, {"error (%)", true}});
  for (const ValidationRow& r : rows)
    for (const CategoryComparison& c : r.categories)
      t.add({r.id, c.category, fmt::format("{:.3f}", 1e3 * c.measured_s), fmt::format("{:.3f}", 1e3 * c.predicted_s),
             c.error_pct ? fmt::format("{:+.1f}", *c.error_pct) : "-"});
  for (const ValidationRow& r : rows)
    if (!r.categories.empty()) all.push_back(r.categories);
  if (all.empty()) return "";
  std::string out = section("Step time by kernel category (probe records: torch.profiler kernel time per step)");
  out += t.render();
  Table s({{"category", false}, {"runs", true}, {"median |error| (%)", true}});
  for (const CategorySummary& c : summarize_categories(all))
    s.add({c.category, std::to_string(c.count), fixed(c.median_abs_error_pct, 1)});
  out += s.render();
  return out;
}

}  // namespace

namespace {

/// The ordering pairs of the leave-one-source-out summary, the wrong ones first.
std::string ordering_pairs_text(const std::vector<ValidationRow>& rows) {
  const std::vector<OrderingPair> list = ordering_pair_list(rows);
  const auto wrong = std::count_if(list.begin(), list.end(), [](const OrderingPair& p) { return !p.right; });
  std::string out =
      section(fmt::format("Ordering pairs (two records one knob apart): {} of {} wrong", wrong, list.size()));
  Table t({{"knob", false},
           {"lower measured", false},
           {"higher measured", false},
           {"measured (low / high)", true},
           {"predicted (low / high)", true},
           {"order", false}});
  for (const OrderingPair& p : list)
    t.add({p.knob, p.low->id, p.high->id, fmt::format("{:.4g} / {:.4g}", p.low->measured, p.high->measured),
           fmt::format("{:.4g} / {:.4g}", *p.low->predicted, *p.high->predicted), p.right ? "right" : "WRONG"});
  out += t.render();
  out += "  values in each record's metric unit (see above); low-trust records are left out\n";
  return out;
}

}  // namespace

namespace {

/// Peak memory per GPU predicted against measured, per source, and the false out-of-memory
/// verdicts (every measured run ran); nothing when no row was predicted.
std::string memory_text(const std::vector<ValidationRow>& rows) {
  const std::vector<MemorySummary> sums = summarize_memory(rows);
  if (sums.front().predicted == 0) return "";
  std::string out = section(
      "Memory per GPU: predicted peak (the caching allocator's: every term but the CUDA context) against "
      "measured, and runs predicted out of memory although they ran");
  Table t({{"group", false},
           {"runs with a peak", true},
           {"median |error| (%)", true},
           {"p90 |error| (%)", true},
           {"max |error| (%)", true},
           {"predicted", true},
           {"false OOM", true}});
  for (const MemorySummary& m : sums)
    t.add({m.group, std::to_string(m.count), m.count ? fixed(m.median_abs_error_pct, 1) : "-",
           m.count ? fixed(m.p90_abs_error_pct, 1) : "-", m.count ? fixed(m.max_abs_error_pct, 1) : "-",
           std::to_string(m.predicted), std::to_string(m.false_oom.size())});
  out += t.render();
  const std::vector<std::string>& oom = sums.front().false_oom;
  if (!oom.empty()) {
    out += "  predicted out of memory, measured running:";
    for (std::size_t i = 0; i < oom.size() && i < 20; ++i) out += (i ? ", " : " ") + oom[i];
    if (oom.size() > 20) out += fmt::format(" and {} more (--json: summary_memory.false_oom_ids)", oom.size() - 20);
    out += "\n";
  }
  return out;
}

}  // namespace

std::string validate_text(const std::vector<ValidationRow>& rows, const std::string& in_step_file, bool pairs) {
  std::string out = section("Measured runs against predictions");
  Table t({{"id", false},
           {"metric", false},
           {"measured", true},
           {"predicted", true},
           {"error (%)", true},
           {"trust", false},
           {"status", false}});
  for (const ValidationRow& r : rows)
    t.add({r.id, r.metric, fmt::format("{:.4g}", r.measured), r.predicted ? fmt::format("{:.4g}", *r.predicted) : "-",
           r.error_pct ? fmt::format("{:+.1f}", *r.error_pct) : "-", r.trust, r.status});
  out += t.render();
  const bool any_collective =
      std::any_of(rows.begin(), rows.end(), [](const ValidationRow& r) { return r.collective.has_value(); });
  const bool any_training = std::any_of(rows.begin(), rows.end(), [](const ValidationRow& r) { return !r.collective; });
  out +=
      "  metric units: tokens_per_s_per_gpu tokens/s per GPU, step_time_s s, tflops_per_gpu TFLOP/s per GPU,\n"
      "  samples_per_s_global samples/s, mfu fraction; error = 100 (predicted - measured) / measured\n";
  if (any_collective)
    out +=
        "  collectives: busbw_GBps and algbw_GBps nccl-tests' bus and algorithm bandwidth, GB/s; time_us µs per call\n";
  auto table = [&](const std::string& title, const std::vector<ErrorSummary>& sums) {
    out += section(title);
    Table s({{"group", false},
             {"runs", true},
             {"skipped", true},
             {"median |error| (%)", true},
             {"p90 |error| (%)", true},
             {"max |error| (%)", true},
             {"ordering pairs", true},
             {"ordering (%)", true}});
    for (const ErrorSummary& e : sums)
      s.add({e.group, std::to_string(e.count), std::to_string(e.skipped), fixed(e.median_abs_error_pct, 1),
             fixed(e.p90_abs_error_pct, 1), fixed(e.max_abs_error_pct, 1), std::to_string(e.ordering_pairs),
             e.ordering_pairs > 0 ? fixed(100 * e.ordering_accuracy, 1) : "-"});  // no pairs: no figure
    out += s.render();
  };
  if (any_training || !any_collective) {
    table(
        "Summary, leave one source out (low-trust records excluded; a source's records never use what was "
        "fitted on it: " +
            (in_step_file.empty() ? std::string("model/catalog/in_step.json") : in_step_file) + ")",
        summarize(rows));
    out += "\n";
    table("Summary, fit-free (isolated kernel benchmarks and datasheets only)", summarize(fit_free_rows(rows)));
  }
  if (any_collective) {
    const auto fed = std::count_if(rows.begin(), rows.end(), [](const ValidationRow& r) {
      return r.collective && r.collective->fed_constant && r.status == "ok";
    });
    table(fmt::format("Collective measurements (nccl-tests) against the collective model ({} compared rows that fed "
                      "a constant kept out)",
                      fed),
          summarize_collectives(rows));
  }
  out += memory_text(rows);
  out += categories_text(rows);
  if (pairs) out += ordering_pairs_text(rows);
  return out;
}

// ---------------------------------------------------------------------------------------
// plan and compare

namespace {

std::string verdict_text(MemoryVerdict v) {
  switch (v) {
    case MemoryVerdict::fits:
      return "fits";
    case MemoryVerdict::tight:
      return "tight";
    case MemoryVerdict::oom:
      return "OUT OF MEMORY";
  }
  return "?";
}

/// The objective's column header, with its unit.
std::string objective_header(PlanObjective o) {
  switch (o) {
    case PlanObjective::time:
      return "objective: step (s)";
    case PlanObjective::tokens_per_s:
      return "objective: tokens/s/GPU";
    case PlanObjective::cost:
      return "objective: USD/Mtok";
  }
  return "objective";
}

std::string objective_cell(PlanObjective o, double v) {
  switch (o) {
    case PlanObjective::time:
      return seconds(v);
    case PlanObjective::tokens_per_s:
      return grouped(v);
    case PlanObjective::cost:
      return fixed(v, 4);
  }
  return fixed(v, 4);
}

/// The rejections, one line per reason with a count.
std::string plan_rejections(const PlanResult& r) {
  std::string out = fmt::format(
      "Search: {} layouts enumerated, {} screened by their bounds, {} lowered for their "
      "bound, {} simulated{}\n",
      r.enumerated, r.screened, r.bounded, r.simulated,
      !r.exact    ? std::string(" (stopped at the simulation limit: not proven exact)")
      : r.gap > 0 ? fmt::format(" (within {:g}%: every layout left has a lower bound above the K-th "
                                "step / {:g}; --gap 0 for exact)",
                                100 * r.gap, 1 + r.gap)
                  : std::string(" (exact: every layout left has a lower bound above the K-th step)"));
  std::string fixed_dims;
  for (const std::string& d : r.not_enumerated) fixed_dims += (fixed_dims.empty() ? "" : ", ") + d;
  if (!fixed_dims.empty()) out += "Not enumerated (as the options say): " + fixed_dims + "\n";
  // The reasons that rejected a layout; one that rejected none says nothing.
  std::int64_t rejected = 0;
  for (int i = 0; i < kPlanRejectReasons; ++i) rejected += r.rejected[i];
  out += rejected > 0 ? "Rejected:\n" : "Rejected: none\n";
  for (int i = 0; i < kPlanRejectReasons; ++i) {
    const auto reason = static_cast<PlanRejectReason>(i);
    if (r.rejected[i] == 0) continue;
    std::string line = fmt::format("  {:>8}  {}", r.rejected[i], describe(reason));
    if (reason == PlanRejectReason::memory) line += fmt::format(" ({:.0f}% of capacity)", 100 * r.max_memory_fraction);
    if (reason == PlanRejectReason::invalid && r.rejected[i] > 0) line += ", e.g. " + r.invalid_example;
    out += line + "\n";
  }
  return out;
}

}  // namespace

std::string plan_text(const Scenario& sc, const PlanResult& r) {
  std::string out = fmt::format("Plan {}{}: {} on {} GPUs, global batch {} sequences x {} tokens, objective {}\n",
                                sc.name, sc.file.empty() ? "" : fmt::format(" [{}]", sc.file), sc.model.name, r.gpus,
                                r.global_batch, sc.training.seq_len, name(r.objective));
  // The run's time with a dataset, its cost with a price too.
  const bool timed = !r.top.empty() && std::isfinite(r.top.front().prediction.time_per_epoch_s);
  const bool priced = timed && r.top.front().prediction.cost_per_epoch_usd.has_value();
  std::vector<Table::Column> columns = {
      {"rank", true},    {"layout", false},          {"step time (s)", true},    {"tokens/s/GPU", true},
      {"MFU (%)", true}, {"memory/GPU (GiB)", true}, {"exposed comm (s)", true}, {"bubble (%)", true}};
  if (timed) columns.push_back({"time to train (h)", true});
  if (priced) columns.push_back({"cost (USD)", true});
  columns.push_back({objective_header(r.objective), true});
  Table t(std::move(columns));
  int rank = 0;
  for (const PlanRow& row : r.top) {
    const Prediction& p = row.prediction;
    std::vector<std::string> cells = {std::to_string(++rank),
                                      row.point.describe(),
                                      seconds(p.step_time_s),
                                      grouped(p.tokens_per_s_per_gpu),
                                      percent(p.mfu),
                                      gib(p.memory.total_bytes),
                                      seconds(p.comm_exposed_s),
                                      fixed(p.step_time_s > 0 ? 100 * bubble_s(p) / p.step_time_s : 0.0, 1)};
    if (timed) cells.push_back(fixed(p.time_per_epoch_s / 3600, 2));
    if (priced) cells.push_back(p.cost_per_epoch_usd ? fixed(*p.cost_per_epoch_usd, 2) : "n/a");
    cells.push_back(objective_cell(r.objective, row.objective));
    t.add(std::move(cells));
  }
  if (r.top.empty()) {
    out += "  no layout fits: see the rejections below\n";
  } else {
    out += t.render();
    out +=
        "  layout: strategy, tp (tensor-parallel degree), sp (sequence parallelism), cp (context-parallel\n"
        "  degree), ep (expert-parallel degree), pp (pipeline stages), vpp (model chunks per stage) and\n"
        "  schedule, mb (micro-batch per GPU), ga (gradient accumulation), recompute, offload_* (CPU offload);\n"
        "  step time simulated, exposed comm = communication not hidden, bubble = time stage 0 neither\n"
        "  computes nor waits on a collective\n";
  }
  if (!r.why.empty()) out += "Why the winner: " + r.why + "\n";
  out += plan_rejections(r);
  return out;
}

std::string plan_range_text(const Scenario& sc, const std::vector<PlanResult>& results) {
  std::string out;
  for (const PlanResult& r : results) out += plan_text(sc, r) + "\n";
  out += fmt::format("Plans of {} by GPU count, global batch {} sequences\n", sc.name,
                     results.empty() ? 0 : results.front().global_batch);
  Table t({{"GPUs", true},
           {"best layout", false},
           {"step time (s)", true},
           {"tokens/s/GPU", true},
           {"MFU (%)", true},
           {"memory/GPU (GiB)", true},
           {"exposed comm (s)", true},
           {"bubble (%)", true}});
  for (const PlanResult& r : results) {
    if (r.top.empty()) {
      t.add({std::to_string(r.gpus), "no layout fits", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a"});
      continue;
    }
    const Prediction& p = r.top[0].prediction;
    t.add({std::to_string(r.gpus), r.top[0].point.describe(), seconds(p.step_time_s), grouped(p.tokens_per_s_per_gpu),
           percent(p.mfu), gib(p.memory.total_bytes), seconds(p.comm_exposed_s),
           fixed(p.step_time_s > 0 ? 100 * bubble_s(p) / p.step_time_s : 0.0, 1)});
  }
  return out + t.render();
}

void compare_against_first(std::vector<CompareRow>& rows) {
  if (rows.empty()) return;
  const CompareRow& a = rows.front();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    CompareRow& r = rows[i];
    r.speedup = a.tokens_per_s > 0 ? r.tokens_per_s / a.tokens_per_s : std::nan("");
    r.break_even_price_per_gpu_hour_usd.reset();
    if (a.usd_per_million_tokens && r.gpus > 0)
      r.break_even_price_per_gpu_hour_usd = *a.usd_per_million_tokens * r.tokens_per_s / 1e6 * 3600.0 / r.gpus;
    r.why.clear();
    if (i == 0) continue;
    if ((r.verdict == MemoryVerdict::oom) != (a.verdict == MemoryVerdict::oom)) {
      const CompareRow& out = r.verdict == MemoryVerdict::oom ? r : a;
      r.why = fmt::format("{} runs out of memory ({} GiB per GPU); the other fits", out.scenario,
                          gib(out.memory_per_gpu_bytes));
      continue;
    }
    // Per step, scaled to the first row's tokens per step (the same job unless noted).
    const double scale = r.tokens_per_step > 0 ? a.tokens_per_step / r.tokens_per_step : 1.0;
    const double compute = r.compute_busy_s * scale, comm = r.comm_exposed_s * scale;
    const double rest = std::max(0.0, r.step_time_s - r.compute_busy_s - r.comm_exposed_s) * scale;
    const double a_rest = std::max(0.0, a.step_time_s - a.compute_busy_s - a.comm_exposed_s);
    struct Term {
      const char* name;
      double mine, first;
    };
    const Term terms[] = {{"compute", compute, a.compute_busy_s},
                          {"exposed communication", comm, a.comm_exposed_s},
                          {"idle time (bubble, waits)", rest, a_rest}};
    const Term* big = &terms[0];
    for (const Term& t : terms)
      if (std::abs(t.mine - t.first) > std::abs(big->mine - big->first)) big = &t;
    r.why = fmt::format(
        "{:.2f}x the tokens/s of {}; the largest difference is {}: {:.4g} s against {:.4g} s per "
        "step of {}'s tokens",
        r.speedup, a.scenario, big->name, big->mine, big->first, a.scenario);
  }
}

std::string compare_text(const std::vector<CompareRow>& rows) {
  std::string out = "Compare\n";
  const bool priced = !rows.empty() && rows.front().usd_per_million_tokens.has_value();
  std::vector<Table::Column> columns = {
      {"scenario", false},     {"hardware", false},          {"GPUs", true},
      {"step time (s)", true}, {"time per epoch (h)", true}, {"tokens/s", true},
      {"speedup (x)", true},   {"USD/GPU-h", true},          {"cost per epoch (USD)", true},
      {"USD per Mtok", true}};
  if (priced) columns.push_back({"break-even USD/GPU-h", true});
  columns.push_back({"memory/GPU (GiB)", true});
  columns.push_back({"memory", false});
  Table t(columns);
  for (const CompareRow& r : rows) {
    std::vector<std::string> cells = {r.scenario,
                                      r.hardware,
                                      std::to_string(r.gpus),
                                      seconds(r.step_time_s),
                                      fixed(r.time_per_epoch_s / 3600, 2),
                                      grouped(r.tokens_per_s),
                                      std::isfinite(r.speedup) ? fixed(r.speedup, 2) : "-",
                                      r.price_per_gpu_hour_usd ? fixed(*r.price_per_gpu_hour_usd, 2) : "n/a",
                                      r.cost_per_epoch_usd ? fixed(*r.cost_per_epoch_usd, 2) : "n/a",
                                      r.usd_per_million_tokens ? fixed(*r.usd_per_million_tokens, 4) : "n/a"};
    if (priced)
      cells.push_back(r.break_even_price_per_gpu_hour_usd ? fixed(*r.break_even_price_per_gpu_hour_usd, 2) : "n/a");
    cells.push_back(gib(r.memory_per_gpu_bytes));
    cells.push_back(verdict_text(r.verdict));
    t.add(cells);
  }
  out += t.render();
  if (!rows.empty())
    out += fmt::format("  speedup = tokens/s over {}'s{}\n", rows.front().scenario,
                       priced ? fmt::format("; break-even = the price per GPU-hour at which a row's cost per token "
                                            "equals {}'s",
                                            rows.front().scenario)
                              : "");
  for (const CompareRow& r : rows)
    if (!r.why.empty()) out += fmt::format("  why {}: {}\n", r.scenario, r.why);
  // Why a cost is n/a, only where one is.
  const bool some_unpriced = std::any_of(
      rows.begin(), rows.end(), [](const CompareRow& r) { return !r.cost_per_epoch_usd || !r.usd_per_million_tokens; });
  if (some_unpriced) out += "  n/a: cost needs price_per_gpu_hour_usd (and a dataset for the epoch)\n";
  out += "  USD per Mtok = price x GPUs x step time / 3600 / (tokens per step / 1e6)\n";
  for (std::size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].model != rows[0].model || rows[i].tokens_per_step != rows[0].tokens_per_step)
      out += fmt::format("  note: {} is not the same job as {} (model {} vs {}, {:.0f} vs {:.0f} tokens per step)\n",
                         rows[i].scenario, rows[0].scenario, rows[i].model, rows[0].model, rows[i].tokens_per_step,
                         rows[0].tokens_per_step);
  }
  return out;
}

}  // namespace stepcast::cli
