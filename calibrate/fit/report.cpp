// The reports of `stepcast fit` (declared in fit.hpp): text tables with units, and JSON.
#include "calibrate/fit/fit.hpp"

#include "base/size_text.hpp"
#include "topologies/gpu.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string_view>

namespace stepcast {

namespace {

/// Columns on screen: UTF-8 continuation bytes take none ("µs" is 2 columns).
std::size_t columns(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

/// A plain fixed-width table: text columns left-aligned, number columns right-aligned.
class TextTable {
 public:
  struct Column {
    std::string header;
    bool number = true;
  };
  explicit TextTable(std::vector<Column> cols) : cols_(std::move(cols)) {}
  void add(std::vector<std::string> cells) {
    cells.resize(cols_.size());
    rows_.push_back(std::move(cells));
  }
  std::string render() const {
    std::vector<std::size_t> w(cols_.size());
    for (std::size_t c = 0; c < cols_.size(); ++c) {
      w[c] = columns(cols_[c].header);
      for (const auto& r : rows_) w[c] = std::max(w[c], columns(r[c]));
    }
    auto line = [&](const std::vector<std::string>& cells) {
      std::string out = "  ";
      for (std::size_t c = 0; c < cols_.size(); ++c) {
        const std::string fill(w[c] - columns(cells[c]), ' ');
        const bool last = c + 1 == cols_.size();
        if (cols_[c].number)
          out += fill + cells[c];
        else
          out += last ? cells[c] : cells[c] + fill;
        if (!last) out += "  ";
      }
      out.erase(out.find_last_not_of(' ') + 1);  // no trailing blanks from empty cells
      return out + "\n";
    };
    std::vector<std::string> header;
    std::size_t total = 0;
    for (std::size_t c = 0; c < cols_.size(); ++c) {
      header.push_back(cols_[c].header);
      total += w[c] + (c ? 2 : 0);
    }
    std::string out = line(header) + "  " + std::string(total, '-') + "\n";
    for (const auto& r : rows_) out += line(r);
    return out;
  }

 private:
  std::vector<Column> cols_;
  std::vector<std::vector<std::string>> rows_;
};

std::string copy_name(CopyKind k) {
  switch (k) {
    case CopyKind::device_to_device:
      return "device to device (read + write)";
    case CopyKind::host_to_device:
      return "host to device";
    case CopyKind::device_to_host:
      return "device to host";
  }
  return "?";
}

}  // namespace

std::string fit_report_text(const FitResult& result, const std::string& output_file) {
  const HardwareFile& hw = result.hardware;
  const GpuSpec& gpu = *result.gpu;
  std::string out;
  out += fmt::format("stepcast fit: {} -> {}\n\n", result.raw_file, output_file);

  out += "Machine\n";
  out += fmt::format("  host {}, measured {} (UTC)\n", hw.machine.hostname, hw.machine.date_utc);
  if (!hw.machine.gpus.empty())
    out +=
        fmt::format("  {} x {} ({} SMs, {:.1f} GiB, compute capability {})\n", hw.machine.gpus.size(),
                    hw.machine.gpus[0].name, hw.machine.gpus[0].sm_count,
                    double(hw.machine.gpus[0].memory_bytes) / double(1LL << 30), hw.machine.gpus[0].compute_capability);
  out += fmt::format("  driver {}, CUDA runtime {}, NCCL {}\n", hw.machine.driver_version,
                     hw.machine.cuda_runtime_version, hw.machine.nccl_version);
  out +=
      fmt::format("  compared with catalog GPU {} ({}), from {}\n", gpu.name, gpu.display_name, result.gpu_mapped_from);
  out += fmt::format("  rows left out (check not \"ok\"): {}\n\n", hw.excluded_rows);

  out +=
      "GEMM efficiency: eff(F) = max_fraction x F / (F + half_flops), F = 2mnk FLOP per call,\n"
      "eff = achieved / dense peak; least squares on relative residuals\n";
  if (hw.gemm.empty()) {
    out += "  (no GEMM fitted)\n";
  } else {
    TextTable t({{"dtype", false},
                 {"peak (TFLOP/s)"},
                 {"max_fraction"},
                 {"max achieved (TFLOP/s)"},
                 {"half_flops (GFLOP)"},
                 {"RMS residual (%)"},
                 {"points"}});
    for (const auto& [dtype, g] : hw.gemm)
      t.add({std::string(name(dtype)), fmt::format("{:.1f}", gpu.peak(dtype)), fmt::format("{:.4f}", g.max_fraction),
             fmt::format("{:.1f}", g.max_fraction * gpu.peak(dtype)), fmt::format("{:.3f}", g.half_flops / 1e9),
             fmt::format("{:.2f}", 100 * g.rms_rel_residual), fmt::format("{}", g.points)});
    out += t.render();
  }
  out += "\n";

  out += "Memory: the largest copy of each kind\n";
  {
    TextTable t({{"copy", false}, {"achieved (GB/s)"}, {"datasheet (GB/s)"}, {"efficiency (%)"}});
    const FittedMemory& m = hw.memory;
    auto cell = [](const std::optional<double>& v, double scale = 1.0) {
      return v ? fmt::format("{:.1f}", *v * scale) : std::string("-");
    };
    t.add({copy_name(CopyKind::device_to_device), cell(m.device_bw_GBps), fmt::format("{:.0f}", gpu.memory_bw_GBps),
           cell(m.memory_efficiency, 100)});
    t.add({copy_name(CopyKind::host_to_device), cell(m.h2d_GBps), "", ""});
    t.add({copy_name(CopyKind::device_to_host), cell(m.d2h_GBps), "", ""});
    out += t.render();
  }
  out += "\n";

  out +=
      "Collectives: t = latency + bytes / algbw, weighted least squares (weights 1/t^2);\n"
      "busbw = algbw x nccl-tests bus factor. Model: the catalog's collective model on one\n"
      "node of " +
      (hw.model_box ? *hw.model_box : std::string("(no box)")) +
      ": its time at the smallest size measured and its busbw at the largest.\n";
  if (hw.collectives.empty()) {
    out += "  (no collective fitted)\n";
  } else {
    TextTable t({{"collective", false},
                 {"ranks"},
                 {"nodes"},
                 {"sizes"},
                 {"latency (µs)"},
                 {"model (µs)"},
                 {"busbw (GB/s)"},
                 {"model (GB/s)"},
                 {"busbw / model"},
                 {"RMS residual (%)"},
                 {"model algorithm", false}});
    for (std::size_t i = 0; i < hw.collectives.size(); ++i) {
      const FittedCollective& c = hw.collectives[i];
      const CollectiveModelNote& n = result.model_notes[i];
      const bool model = c.model_latency_us.has_value();
      t.add({std::string(name(c.collective)), fmt::format("{}", c.ranks), fmt::format("{}", c.nodes),
             fmt::format("{} ({}..{})", c.points, binary_size_text(n.min_bytes), binary_size_text(n.max_bytes)),
             fmt::format("{:.2f}", c.latency_us), model ? fmt::format("{:.2f}", *c.model_latency_us) : "-",
             fmt::format("{:.1f}", c.busbw_GBps), model ? fmt::format("{:.1f}", *c.model_busbw_GBps) : "-",
             model ? fmt::format("{:.3f}", c.busbw_GBps / *c.model_busbw_GBps) : "-",
             fmt::format("{:.2f}", 100 * c.rms_rel_residual), model ? n.algorithm + "/" + n.protocol : "-"});
    }
    out += t.render();
    for (std::size_t i = 0; i < hw.collectives.size(); ++i) {
      const FittedCollective& c = hw.collectives[i];
      if (!c.model_latency_us)
        out += fmt::format("  no model figure for {} over {} ranks on {} node(s): {}\n", name(c.collective), c.ranks,
                           c.nodes, result.model_notes[i].why_none);
    }
  }

  out += kernel_model_report_text(hw.kernel_model);
  if (!result.excluded.empty()) {
    out += "\nRows left out of the fits\n";
    for (const ExcludedRow& e : result.excluded) out += fmt::format("  {}: check \"{}\"\n", e.json_path, e.check);
  }
  if (!result.not_fitted.empty()) {
    out += "\nNot fitted\n";
    for (const NotFitted& n : result.not_fitted) out += fmt::format("  {}: {}\n", n.what, n.reason);
  }
  if (!result.warnings.empty()) {
    out += "\nWarnings\n";
    for (const std::string& w : result.warnings) out += "  " + w + "\n";
  }
  out += fmt::format("\nWrote {} ({}).\n", output_file, kHardwareFormat);
  return out;
}

std::string fit_report_json(const FitResult& result, const std::string& output_file) {
  using J = nlohmann::ordered_json;
  J doc;
  doc["output_file"] = output_file;
  doc["gpu_mapped_from"] = result.gpu_mapped_from;
  doc["hardware"] = hardware_document(result.hardware);
  J excluded = J::array();
  for (const ExcludedRow& e : result.excluded) excluded.push_back(J{{"json_path", e.json_path}, {"check", e.check}});
  doc["excluded"] = std::move(excluded);
  J not_fitted = J::array();
  for (const NotFitted& n : result.not_fitted) not_fitted.push_back(J{{"what", n.what}, {"reason", n.reason}});
  doc["not_fitted"] = std::move(not_fitted);
  doc["warnings"] = result.warnings;
  return doc.dump(2) + "\n";
}

}  // namespace stepcast
