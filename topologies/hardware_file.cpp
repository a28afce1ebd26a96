#include "topologies/hardware_file.hpp"

#include "base/json_input.hpp"
#include "base/limits.hpp"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace stepcast {

namespace {

/// A value that is text, or a number kept as its JSON text (driver and CUDA versions are
/// strings to nvidia-smi but integers to cudaRuntimeGetVersion).
std::string text_or_number(JsonObject& obj, const std::string& key) {
  const nlohmann::json& v = obj.raw(key);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number()) return v.dump();
  throw obj.error(key, "expected a string or a number, got " + summary(v));
}

std::vector<std::string> strings(JsonObject& obj, const std::string& key) {
  JsonArray a = obj.array(key);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < a.size(); ++i) out.push_back(a.string(i));
  return out;
}

}  // namespace

Machine parse_machine(JsonObject& obj) {
  Machine m;
  m.hostname = obj.string("hostname");
  m.date_utc = obj.string("date_utc");
  JsonArray gpus = obj.array("gpus");
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    JsonObject g = gpus.object(i);
    MachineGpu gpu;
    gpu.index = g.integer("index", 0, limits::kMaxGpusPerBox - 1);
    gpu.name = g.string("name");
    gpu.sm_count = g.integer("sm_count", 1, limits::kMaxSmCount);
    gpu.memory_bytes = g.integer("memory_bytes", 1, static_cast<std::int64_t>(limits::kMaxGpuMemoryGiB * (1LL << 30)));
    gpu.compute_capability = text_or_number(g, "compute_capability");
    g.finish();
    m.gpus.push_back(std::move(gpu));
  }
  m.driver_version = text_or_number(obj, "driver_version");
  m.cuda_runtime_version = text_or_number(obj, "cuda_runtime_version");
  m.nccl_version = text_or_number(obj, "nccl_version");
  m.nvidia_smi_topo = obj.string("nvidia_smi_topo");
  m.nvidia_smi_list = obj.string("nvidia_smi_list");
  m.nics = strings(obj, "nics");
  m.notes = strings(obj, "notes");
  obj.finish();
  return m;
}

HardwareFile parse_hardware(const JsonDoc& doc) {
  JsonObject root(doc.root(), doc.file(), "");
  const std::string format = root.string("format");
  if (format != kHardwareFormat)
    throw root.error("format", std::string("expected \"") + kHardwareFormat + "\", got \"" + format + "\"");
  HardwareFile hw;
  hw.file = doc.file();
  {
    JsonObject machine = root.object("machine");
    hw.machine = parse_machine(machine);
  }
  hw.gpu = root.string("gpu");
  hw.source = root.string("source");

  JsonObject gemm = root.object("gemm");
  for (const std::string& key : gemm.keys()) {
    Dtype d;
    try {
      d = parse_dtype(key);
    } catch (const std::invalid_argument& e) {
      throw gemm.error(key, e.what());
    }
    JsonObject g = gemm.object(key);
    FittedGemm f;
    f.max_fraction = g.number("max_fraction", limits::kMinEfficiency, limits::kMaxMeasuredFraction);
    f.half_flops = g.non_negative("half_flops", limits::kMaxGemmHalfFlops);
    f.rms_rel_residual = g.non_negative("rms_rel_residual", limits::kMaxFitResidual);
    f.points = g.int32("points", 2);
    g.finish();
    hw.gemm[d] = f;
  }
  gemm.finish();

  JsonObject mem = root.object("memory");
  constexpr double kMinBw = limits::kMinBandwidth_GBps, kMaxBw = limits::kMaxBandwidth_GBps;
  hw.memory.device_bw_GBps = mem.optional_number("device_bw_GBps", kMinBw, kMaxBw);
  hw.memory.memory_efficiency =
      mem.optional_number("memory_efficiency", limits::kMinEfficiency, limits::kMaxMeasuredFraction);
  hw.memory.h2d_GBps = mem.optional_number("h2d_GBps", kMinBw, kMaxBw);
  hw.memory.d2h_GBps = mem.optional_number("d2h_GBps", kMinBw, kMaxBw);
  if (hw.memory.device_bw_GBps.has_value() != hw.memory.memory_efficiency.has_value())
    throw mem.error("memory_efficiency", "device_bw_GBps and memory_efficiency come together (both or neither)");
  mem.finish();

  JsonArray colls = root.array("collectives");
  for (std::size_t i = 0; i < colls.size(); ++i) {
    JsonObject c = colls.object(i);
    FittedCollective f;
    f.collective = parse_collective(c.choice("collective", collective_names()));
    f.ranks = c.integer("ranks", 2, limits::kMaxClusterGpus);
    f.nodes = c.integer("nodes", 1, limits::kMaxClusterGpus);
    f.latency_us = c.non_negative("latency_us", limits::kMaxCollectiveLatency_us);
    f.algbw_GBps = c.number("algbw_GBps", kMinBw, kMaxBw);
    f.busbw_GBps = c.number("busbw_GBps", kMinBw, kMaxBw);
    f.rms_rel_residual = c.non_negative("rms_rel_residual", limits::kMaxFitResidual);
    f.points = c.int32("points", 2);
    f.model_latency_us = c.optional_positive("model_latency_us", limits::kMaxCollectiveLatency_us);
    f.model_busbw_GBps = c.optional_positive("model_busbw_GBps", kMaxBw);
    if (f.model_latency_us.has_value() != f.model_busbw_GBps.has_value())
      throw c.error("model_busbw_GBps", "model_latency_us and model_busbw_GBps come together (both or neither)");
    if (f.nodes > f.ranks) throw c.error("nodes", "expected at most `ranks` nodes");
    c.finish();
    hw.collectives.push_back(f);
  }
  hw.model_box = root.optional_string("model_box");
  hw.excluded_rows = root.int32("excluded_rows", 0);
  if (auto k = root.optional_object("kernel_model")) hw.kernel_model = parse_kernel_calibration(*k);
  root.finish();
  return hw;
}

HardwareFile load_hardware(const std::filesystem::path& path) { return parse_hardware(JsonDoc::load(path)); }

nlohmann::ordered_json hardware_document(const HardwareFile& hw) {
  using J = nlohmann::ordered_json;
  J machine;
  machine["hostname"] = hw.machine.hostname;
  machine["date_utc"] = hw.machine.date_utc;
  machine["gpus"] = J::array();
  for (const MachineGpu& g : hw.machine.gpus)
    machine["gpus"].push_back(J{{"index", g.index},
                                {"name", g.name},
                                {"sm_count", g.sm_count},
                                {"memory_bytes", g.memory_bytes},
                                {"compute_capability", g.compute_capability}});
  machine["driver_version"] = hw.machine.driver_version;
  machine["cuda_runtime_version"] = hw.machine.cuda_runtime_version;
  machine["nccl_version"] = hw.machine.nccl_version;
  machine["nvidia_smi_topo"] = hw.machine.nvidia_smi_topo;
  machine["nvidia_smi_list"] = hw.machine.nvidia_smi_list;
  machine["nics"] = hw.machine.nics;
  machine["notes"] = hw.machine.notes;

  J doc;
  doc["format"] = kHardwareFormat;
  doc["machine"] = std::move(machine);
  doc["gpu"] = hw.gpu;
  doc["source"] = hw.source;
  J gemm = J::object();
  for (const auto& [dtype, g] : hw.gemm)
    gemm[std::string(name(dtype))] = J{{"max_fraction", g.max_fraction},
                                       {"half_flops", g.half_flops},
                                       {"rms_rel_residual", g.rms_rel_residual},
                                       {"points", g.points}};
  doc["gemm"] = std::move(gemm);
  J mem = J::object();
  if (hw.memory.device_bw_GBps) mem["device_bw_GBps"] = *hw.memory.device_bw_GBps;
  if (hw.memory.memory_efficiency) mem["memory_efficiency"] = *hw.memory.memory_efficiency;
  if (hw.memory.h2d_GBps) mem["h2d_GBps"] = *hw.memory.h2d_GBps;
  if (hw.memory.d2h_GBps) mem["d2h_GBps"] = *hw.memory.d2h_GBps;
  doc["memory"] = std::move(mem);
  J colls = J::array();
  for (const FittedCollective& c : hw.collectives) {
    J o{{"collective", std::string(name(c.collective))},
        {"ranks", c.ranks},
        {"nodes", c.nodes},
        {"latency_us", c.latency_us},
        {"algbw_GBps", c.algbw_GBps},
        {"busbw_GBps", c.busbw_GBps},
        {"rms_rel_residual", c.rms_rel_residual},
        {"points", c.points}};
    if (c.model_latency_us) o["model_latency_us"] = *c.model_latency_us;
    if (c.model_busbw_GBps) o["model_busbw_GBps"] = *c.model_busbw_GBps;
    colls.push_back(std::move(o));
  }
  doc["collectives"] = std::move(colls);
  if (hw.model_box) doc["model_box"] = *hw.model_box;
  doc["excluded_rows"] = hw.excluded_rows;
  if (!hw.kernel_model.empty()) doc["kernel_model"] = kernel_calibration_document(hw.kernel_model);
  return doc;
}

std::string hardware_json(const HardwareFile& hw) { return hardware_document(hw).dump(2) + "\n"; }

}  // namespace stepcast
