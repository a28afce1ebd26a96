#include "raw.hpp"

#include <cstdio>
#include <fstream>

#include "common.hpp"
#include "json.hpp"

namespace stepcast::cal {

namespace {

std::string strings(const std::vector<std::string>& items, int indent) {
  std::vector<std::string> rendered;
  rendered.reserve(items.size());
  for (const auto& item : items) rendered.push_back(json::string(item));
  return json::array(rendered, indent);
}

std::string render_machine(const Machine& m) {
  std::vector<std::string> gpus;
  for (const auto& g : m.gpus) {
    gpus.push_back(json::Object()
                       .value("index", json::integer(g.index))
                       .text("name", g.name)
                       .value("sm_count", json::integer(g.sm_count))
                       .value("memory_bytes", json::integer(g.memory_bytes))
                       .text("compute_capability", g.compute_capability)
                       .render());
  }
  std::string out = "{\n";
  out += "    \"hostname\": " + json::string(m.hostname) + ",\n";
  out += "    \"date_utc\": " + json::string(m.date_utc) + ",\n";
  out += "    \"gpus\": " + json::array(gpus, 6) + ",\n";
  out += "    \"driver_version\": " + json::string(m.driver_version) + ",\n";
  out += "    \"cuda_runtime_version\": " + json::string(m.cuda_runtime_version) + ",\n";
  out += "    \"nccl_version\": " + json::string(m.nccl_version) + ",\n";
  out += "    \"nvidia_smi_topo\": " + json::string(m.nvidia_smi_topo) + ",\n";
  out += "    \"nvidia_smi_list\": " + json::string(m.nvidia_smi_list) + ",\n";
  out += "    \"nics\": " + strings(m.nics, 6) + ",\n";
  out += "    \"notes\": " + strings(m.notes, 6) + "\n";
  out += "  }";
  return out;
}

}  // namespace

std::string render(const Raw& raw) {
  std::vector<std::string> gemm;
  for (const auto& r : raw.gemm) {
    gemm.push_back(json::Object()
                       .text("name", r.name)
                       .text("dtype", r.dtype)
                       .value("m", json::integer(r.m))
                       .value("n", json::integer(r.n))
                       .value("k", json::integer(r.k))
                       .value("iterations", json::integer(r.iterations))
                       .value("time_s_median", json::number(r.time_s_median))
                       .value("time_s_min", json::number(r.time_s_min))
                       .value("time_s_max", json::number(r.time_s_max))
                       .value("tflops", json::number(r.tflops))
                       .text("check", r.check)
                       .render());
  }
  std::vector<std::string> memory;
  for (const auto& r : raw.memory) {
    memory.push_back(json::Object()
                         .text("kind", r.kind)
                         .value("bytes", json::integer(r.bytes))
                         .value("iterations", json::integer(r.iterations))
                         .value("time_s_median", json::number(r.time_s_median))
                         .value("GBps", json::number(r.GBps))
                         .render());
  }
  std::vector<std::string> nccl;
  for (const auto& r : raw.nccl) {
    nccl.push_back(json::Object()
                       .text("collective", r.collective)
                       .value("ranks", json::integer(r.ranks))
                       .value("nodes", json::integer(r.nodes))
                       .value("gpus_per_node", json::integer(r.gpus_per_node))
                       .value("bytes", json::integer(r.bytes))
                       .text("dtype", r.dtype)
                       .value("iterations", json::integer(r.iterations))
                       .value("time_s_median", json::number(r.time_s_median))
                       .value("time_s_min", json::number(r.time_s_min))
                       .value("algbw_GBps", json::number(r.algbw_GBps))
                       .value("busbw_GBps", json::number(r.busbw_GBps))
                       .text("nccl_algo", r.nccl_algo)
                       .text("nccl_proto", r.nccl_proto)
                       .text("check", r.check)
                       .render());
  }
  std::vector<std::string> launch;
  for (const auto& r : raw.launch) {
    launch.push_back(json::Object()
                         .text("kind", r.kind)
                         .value("ops", json::integer(r.ops))
                         .value("iterations", json::integer(r.iterations))
                         .value("time_s_median", json::number(r.time_s_median))
                         .value("time_s_per_op", json::number(r.time_s_per_op))
                         .text("check", r.check)
                         .render());
  }
  std::string out = "{\n";
  out += "  \"format\": " + json::string(kRawFormat) + ",\n";
  out += "  \"machine\": " + render_machine(raw.machine) + ",\n";
  out += "  \"gemm\": " + json::array(gemm, 4) + ",\n";
  out += "  \"memory\": " + json::array(memory, 4) + ",\n";
  out += "  \"nccl\": " + json::array(nccl, 4) + ",\n";
  out += "  \"launch\": " + json::array(launch, 4) + "\n";
  out += "}\n";
  return out;
}

void write_file(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cannot open " + temporary + " for writing");
    out << text;
    out.flush();
    if (!out) throw Error("cannot write " + temporary);
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    throw Error("cannot rename " + temporary + " to " + path);
  }
}

}  // namespace stepcast::cal
