#include "scenario/starter.hpp"

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

/// What each key left out becomes, as the reader (simulator/scenario.cpp) takes it.
std::vector<std::string> default_notes(const BoxSpec& box, const GpuSpec& gpu, int gpus) {
  const bool bf16 = gpu.supports(Dtype::bf16);
  std::vector<std::string> notes{
      "Written by `stepcast init`: only the required keys. Every other key takes the default below, "
      "listed under Assumptions when you predict; add a key to change it (README.md, Scenario files).",
      "name: the file's name; description: none",
      "strategy: fsdp_full_shard is a starting point that fits large models; also ddp, zero1/2/3, "
      "fsdp_shard_grad_op, fsdp_hybrid_shard, fsdp_no_shard, or {\"name\", \"bucket_mb\", \"prefetch_layers\", "
      "\"algorithm\", \"reduce_dtype\"}",
      "training.micro_batch: sequences per GPU per micro-step (1 here); training.seq_len: the model's own",
      fmt::format("training.precision: {} ({} bf16 arithmetic)", bf16 ? "bf16_mixed" : "fp16_mixed",
                  gpu.name + (bf16 ? " has" : " has no")),
      "training.optimizer: adam; training.grad_accum: 1; training.recompute: none",
      fmt::format("training.flash_attention: {} (true from Ampere on)", gpu.arch >= GpuArch::ampere),
      "dataset: none, so no epoch figures; add {\"tokens\": N} or {\"samples\": N} per epoch",
      "price_per_gpu_hour_usd: none, so no cost per epoch"};
  if (gpus > box.gpus)
    notes.push_back(fmt::format("hardware.nodes: {} ({} GPUs in boxes of {}); hardware.network: the box's own NICs, "
                                "{} x {} per node on one switch",
                                gpus / box.gpus, gpus, box.gpus, box.nics, box.nic));
  return notes;
}

}  // namespace

std::string starter_scenario(const StarterRequest& request) {
  const TransformerSpec& model = model_or_throw(request.model);
  const BoxSpec& box = box_or_throw(request.box);
  const int gpus = request.gpus > 0 ? request.gpus : box.gpus;
  if (gpus > box.gpus && gpus % box.gpus != 0)
    throw std::invalid_argument(fmt::format("--gpus {}: expected at most {} (one {}) or a multiple of it", gpus,
                                            box.gpus, box.name));
  if (gpus > box.gpus && box.nics < 1)
    throw std::invalid_argument(fmt::format("--gpus {}: more than one {}, which has no NICs to join them", gpus,
                                            box.name));
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
