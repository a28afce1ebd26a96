#include "scenario/starter.hpp"

#include "scenario/schema.hpp"

#include "base/suggest.hpp"
#include "base/types.hpp"
#include "model/transformer.hpp"
#include "topologies/gpu.hpp"
#include "topologies/topology.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <stdexcept>
#include <vector>

namespace stepcast {

namespace {

const TransformerSpec& model_or_throw(const std::string& name) {
  if (const TransformerSpec* m = find_model(name)) return *m;
  std::vector<std::string> names;
  for (const TransformerSpec& m : model_catalog()) {
    names.push_back(m.name);
    names.insert(names.end(), m.aliases.begin(), m.aliases.end());
  }
  throw std::invalid_argument("--model: unknown model \"" + name + "\"" + did_you_mean(name, names) +
                              " (see `stepcast catalog models`)");
}

const BoxSpec& box_or_throw(const std::string& name) {
  if (const BoxSpec* b = find_box(name)) return *b;
  std::vector<std::string> names;
  for (const BoxSpec& b : box_catalog()) names.push_back(b.name);
  throw std::invalid_argument("--box: unknown box \"" + name + "\"" + did_you_mean(name, names) +
                              " (see `stepcast catalog boxes`)");
}

/// What each key left out becomes: the schema's defaults (scenario/schema.hpp), the ones that
/// depend on this box worked out.
std::vector<std::string> default_notes(const BoxSpec& box, const GpuSpec& gpu, int gpus) {
  std::vector<std::string> notes{
      "Written by `stepcast init`: only the required keys. Every other key takes the default below, "
      "listed under Assumptions when you predict; add a key to change it (`stepcast schema`, docs/scenario.md).",
      "strategy: fsdp_full_shard is a starting point that fits large models (others: `stepcast schema`)",
      fmt::format("on the {}: training.precision {}, training.flash_attention {}", gpu.name,
                  gpu.supports(Dtype::bf16) ? "bf16_mixed" : "fp16_mixed", gpu.arch >= GpuArch::ampere)};
  if (gpus > box.gpus)
    notes.push_back(
        fmt::format("hardware.nodes: {} ({} GPUs in boxes of {}); hardware.network: the box's own NICs, "
                    "{} x {} per node on one switch",
                    gpus / box.gpus, gpus, box.gpus, box.nics, box.nic));
  for (std::string& note : schema_default_notes(scenario_schema())) notes.push_back(std::move(note));
  return notes;
}

}  // namespace

std::string starter_scenario(const StarterRequest& request) {
  const TransformerSpec& model = model_or_throw(request.model);
  const BoxSpec& box = box_or_throw(request.box);
  const int gpus = request.gpus > 0 ? request.gpus : box.gpus;
  if (gpus > box.gpus && gpus % box.gpus != 0)
    throw std::invalid_argument(
        fmt::format("--gpus {}: expected at most {} (one {}) or a multiple of it", gpus, box.gpus, box.name));
  if (gpus > box.gpus && box.nics < 1)
    throw std::invalid_argument(
        fmt::format("--gpus {}: more than one {}, which has no NICs to join them", gpus, box.name));
  const GpuSpec& gpu = *find_gpu(box.gpu);
  nlohmann::ordered_json j;
  j["model"] = model.name;
  j["hardware"] = {{"box", box.name}, {"gpus", gpus}};
  j["strategy"] = "fsdp_full_shard";
  j["training"] = {{"micro_batch", 1}, {"seq_len", model.seq_len}};
  j["notes"] = default_notes(box, gpu, gpus);
  return j.dump(2) + "\n";
}

}  // namespace stepcast
