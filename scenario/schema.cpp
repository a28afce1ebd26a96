#include "scenario/schema.hpp"

#include "base/limits.hpp"
#include "base/types.hpp"
#include "model/collective.hpp"
#include "model/compute.hpp"
#include "model/kernels.hpp"
#include "model/memory.hpp"
#include "model/offload.hpp"
#include "model/parallel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

namespace stepcast {

namespace {

constexpr double kUnbounded = std::numeric_limits<double>::infinity();

/// "a, b, c" -> {"a", "b", "c"}.
std::vector<std::string> split_names(const std::string& list) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= list.size()) {
    const std::size_t end = std::min(list.find(", ", pos), list.size());
    out.push_back(list.substr(pos, end - pos));
    pos = end + 2;
  }
  return out;
}

std::vector<std::string> algorithm_names() {
  std::vector<std::string> out{"auto"};
  for (const auto& info : collective_algorithms()) out.push_back(info.name);
  return out;
}

SchemaKey key(std::string path, KeyType type, std::string default_text, std::string help) {
  SchemaKey k;
  k.path = std::move(path);
  k.type = type;
  k.required = default_text.empty();
  k.default_text = std::move(default_text);
  k.help = std::move(help);
  return k;
}

SchemaKey ranged(std::string path, KeyType type, double min, double max, std::string default_text, std::string help) {
  SchemaKey k = key(std::move(path), type, std::move(default_text), std::move(help));
  k.min = min;
  k.max = max;
  return k;
}

/// A number > 0 (up to `max`).
SchemaKey positive(std::string path, std::string default_text, std::string help, double max = kUnbounded) {
  SchemaKey k = ranged(std::move(path), KeyType::number, 0, max, std::move(default_text), std::move(help));
  k.min_open = true;
  return k;
}

SchemaKey choice(std::string path, std::vector<std::string> vocabulary, std::string default_text, std::string help) {
  SchemaKey k = key(std::move(path), KeyType::choice, std::move(default_text), std::move(help));
  k.vocabulary = std::move(vocabulary);
  return k;
}

constexpr auto kInt = KeyType::integer;
constexpr auto kNum = KeyType::number;
constexpr auto kBool = KeyType::boolean;
constexpr auto kStr = KeyType::string;
constexpr auto kObj = KeyType::object;

std::vector<SchemaKey> top_and_model() {
  return {
      key("/name", kStr, "the file's name", "the scenario's name in reports"),
      key("/description", kStr, "none", "one line on what the scenario asks"),
      key("/model", KeyType::name_or_object, "",
          "a catalog name, alias or Hugging Face id (`stepcast catalog models`), an inline shape in the "
          "catalog's format, or {\"hf_config\": PATH}"),
      key("/model/hf_config", kStr, "none",
          "a Hugging Face config.json, relative to the scenario file, read for the model's shape"),
  };
}

std::vector<SchemaKey> training_keys() {
  return {
      key("/training", kObj, "", "the job: batch, sequence, precision, optimizer, recompute, kernels"),
      ranged("/training/micro_batch", kInt, 1, limits::kMaxMicroBatch, "", "sequences per GPU per micro-step"),
      ranged("/training/grad_accum", kInt, 1, limits::kMaxGradAccum, "1 (one micro-step per optimizer step)",
             "micro-steps per optimizer step"),
      ranged("/training/seq_len", kInt, 1, limits::kMaxSeqLen, "the model's own sequence length",
             "tokens per sequence"),
      choice("/training/precision", precision_names(), "bf16_mixed where the GPU has bf16 arithmetic, else fp16_mixed",
             "the arithmetic of the GEMMs and the working copy"),
      choice("/training/optimizer", optimizer_names(), "adam (16 bytes per parameter)",
             "the optimizer and the bytes of its state"),
      choice("/training/recompute", recompute_names(), "none (every activation kept)", "activation recompute"),
      key("/training/recompute_modules", KeyType::array, "[\"core_attn\"] (Megatron-Core's default)",
          "under selective recompute, the modules recomputed: core_attn, mla_up_proj, layernorm, mlp, "
          "moe_act, or torchtitan's op-level policy op_sac alone"),
      key("/training/flash_attention", kBool, "true from Ampere on (FlashAttention needs sm80 or later)",
          "a flash-class fused attention kernel"),
      choice("/training/attention_kernel", split_names(attention_kernel_names()),
             "the GPU's flash kernel when flash_attention (FlashAttention-2 from Ampere on)",
             "which kernel computes attention (flash3 on Hopper only, flash2 and cudnn from Ampere on)"),
      choice("/training/kernels", split_names(kernel_profile_names()), "eager (PyTorch without fusion)",
             "what runs the memory-bound work"),
      key("/training/fused_loss", kBool, "fused unless kernels is eager",
          "the loss as one fused kernel (false: PyTorch's eager cross-entropy, whatever the kernels)"),
      ranged("/training/loss_fp32_copies", kInt, 1, 3, "1 (the upcast logits, softmax in place)",
             "fp32 copies of the logits at an unfused loss's peak (2: the maximum subtracted out of place, "
             "nanotron; 3: PyTorch's cross_entropy on upcast logits, whose backward holds the log-probabilities, "
             "their gradient and the logits' gradient)"),
      ranged("/training/metric_loss_passes", kInt, 0, 16, "0",
             "extra eager cross-entropy passes over the logits (training metrics)"),
      choice("/training/mixed_precision", {"master_weights", "autocast"},
             "master_weights (16-bit parameters, an fp32 master copy in the optimizer)",
             "how 16-bit mixed precision keeps parameters: autocast is PyTorch AMP over fp32 parameters (DDP, "
             "Hugging Face Trainer, Lightning)"),
      key("/training/cuda_graphs", KeyType::array, "[] (no CUDA graphs: every op dispatched by the CPU)",
          "what CUDA graphs capture: [\"full_iteration\"] (the whole step), or modules of each layer: attn, "
          "mlp, moe_router, moe_preprocess, moe (Megatron-Core's cuda_graph_scope; moe under drop-and-pad only)"),
      key("/training/launch_blocking", kBool, "false (launches are asynchronous)",
          "CUDA_LAUNCH_BLOCKING=1: each launch waits for its kernel"),
      choice("/training/grad_accumulation", grad_accumulation_names(),
             "autograd (PyTorch's in-place add of each micro-step's gradients)",
             "how successive micro-steps' gradients add up"),
      choice("/training/kernel_rates", {"in_step", "isolated"},
             "in_step (model/catalog/in_step.json's fractions of the isolated benchmarks)",
             "GEMM and attention rates as inside a training step, or as benchmarked alone"),
      key("/training/lora", kObj, "none (full fine-tuning or pre-training)", "LoRA adapters"),
      ranged("/training/lora/rank", kInt, 1, limits::kMaxHidden, "", "the adapters' rank"),
      key("/training/lora/targets", KeyType::array, "",
          "the projections adapted, each once: q, k, v, o, gate, up, down"),
  };
}

std::vector<SchemaKey> strategy_keys() {
  const double max_layers = static_cast<double>(limits::kMaxLayers);
  const double max_gpus = static_cast<double>(limits::kMaxGpus);
  return {
      key("/strategy", KeyType::name_or_object, "", "a strategy name, or an object with \"name\" and the keys below"),
      choice("/strategy/name", strategy_names(), "",
             "data parallelism and its sharding (also read: fsdp, fsdp2, hsdp, zero-1 to zero-3)"),
      positive("/strategy/bucket_mb", "the framework's (DDP 25 MiB; DeepSpeed 5e8 elements)", "gradient bucket, MiB"),
      ranged("/strategy/prefetch_layers", kInt, 0, max_layers, "1 (FSDP's backward_prefetch)",
             "ZeRO-3 / FSDP layers gathered ahead"),
      choice("/strategy/algorithm", algorithm_names(), "auto (NCCL's choice by size and ranks)",
             "the collective algorithm (`stepcast catalog algorithms`)"),
      choice("/strategy/reduce_dtype", {"working", "fp32"}, "working (the precision's 16-bit dtype)",
             "the dtype gradients are reduced in"),
      ranged("/strategy/tp", kInt, 1, static_cast<double>(limits::kMaxGpusPerNode), "1 (no tensor parallelism)",
             "tensor-parallel degree: a divisor of the node, or whole nodes"),
      key("/strategy/sp", kBool, "false", "sequence parallelism inside the TP group (needs tp >= 2)"),
      key("/strategy/tp_comm_overlap", kBool, "false",
          "TP collectives beside their GEMMs (Megatron-Core's --tp-comm-overlap; needs sp)"),
      key("/strategy/tp_backward_overlap", kBool, "false",
          "the QKV and MLP-up backward's TP collectives beside their GEMMs (Megatron's linear layers)"),
      key("/strategy/sp_keep_gathered", kBool, "false (Megatron: the shard kept, re-gathered in the backward)",
          "with sp: the QKV and MLP-up GEMMs keep their all-gathered input (nanotron's column_linear)"),
      key("/strategy/overlap_param_gather", kBool, "false",
          "zero1/zero2: the parameter all-gather beside the next forward (Megatron-Core)"),
      key("/strategy/overlap_grad_reduce", kBool, "false",
          "pp >= 2: each stage's gradient reduction during its last backward (Megatron-Core)"),
      ranged("/strategy/pp", kInt, 1, max_layers, "1 (no pipeline)", "pipeline stages"),
      ranged("/strategy/vpp", kInt, 1, max_layers, "1", "model chunks per stage (the interleaved schedule)"),
      choice("/strategy/schedule", pipeline_schedule_names(), "1f1b (interleaved when vpp > 1)",
             "the pipeline schedule"),
      choice("/strategy/pp_split", stage_split_names(), "even", "how layers are split into stages"),
      ranged("/strategy/cp", kInt, 1, max_gpus, "1 (no context parallelism)", "ranks sharing each sequence"),
      choice("/strategy/cp_comm", cp_comm_names(), "ring (Megatron-LM's)", "context parallelism's K/V exchange"),
      ranged("/strategy/ep", kInt, 1, max_gpus, "1 (no expert parallelism)", "ranks a MoE layer's experts spread over"),
      ranged("/strategy/moe_imbalance", kNum, 1, 64, "1 (balanced routing)",
             "the busiest EP rank's routed tokens over the mean"),
      ranged("/strategy/moe_capacity_factor", kNum, 1, 64, "1 (dropless)",
             "tokens an expert holds over its balanced share"),
      key("/strategy/moe_shared_expert_overlap", kBool, "false",
          "shared experts beside the dispatch and combine all-to-alls (Megatron-Core)"),
      choice("/strategy/moe_dispatcher", moe_dispatcher_names(), "alltoall (Megatron-Core's, over NCCL)",
             "how MoE tokens reach their experts: the CPU's work per MoE layer"),
      key("/strategy/moe_a2a_overlap", kBool, "false",
          "each micro-batch's all-to-alls beside another micro-batch's layers (Megatron-Core's "
          "overlap_moe_expert_parallel_comm)"),
      choice("/strategy/offload", offload_names(), "none", "CPU offload (ZeRO-Offload, parameter offload)"),
      key("/strategy/delayed_update", kBool, "false", "ZeRO-Offload's one-step delayed parameter update"),
      key("/strategy/fp8_all_gather", kBool, "false", "fp8 training: FSDP / ZeRO-3 all-gather weights in fp8"),
  };
}

std::vector<SchemaKey> hardware_keys() {
  const double max_nodes = static_cast<double>(limits::kMaxNodes);
  return {
      key("/hardware", kObj, "", "the GPUs: a catalog cluster, or a box with a node count and a network"),
      key("/hardware/box", KeyType::name_or_object, "none: give box or cluster",
          "a catalog box (`stepcast catalog boxes`), or an inline box in the catalog's format"),
      key("/hardware/cluster", kStr, "none: give box or cluster",
          "a catalog cluster (`stepcast catalog clusters`): box, nodes and network"),
      ranged("/hardware/gpus", kInt, 1, static_cast<double>(limits::kMaxGpus), "",
             "GPUs used in all; whole nodes above one box"),
      ranged("/hardware/nodes", kInt, 1, max_nodes, "the GPUs over the box size", "nodes of the cluster"),
      key("/hardware/network", kObj,
          "for several nodes: the box's own NICs on one switch up to 32 nodes, beyond on a non-blocking rail fat "
          "tree of 32-node leaf groups (DGX SuperPOD)",
          "nic, nics_per_node, topology (single_switch, rail_fat_tree), oversubscription, nodes_per_leaf"),
      key("/hardware/calibration", kStr, "none (the catalogs' rates)",
          "a hardware file from `stepcast fit`, relative to the scenario file"),
      key("/hardware/stragglers", KeyType::array, "none (every node alike)", "groups of nodes slower than the rest"),
      key("/hardware/stragglers/*/name", kStr, "", "what the group is (\"throttled node\")"),
      ranged("/hardware/stragglers/*/nodes", kInt, 1, max_nodes, "", "nodes in the group"),
      positive("/hardware/stragglers/*/compute_speed", "", "GPU speed relative to the catalog's (0.01..10)"),
      positive("/hardware/stragglers/*/link_speed", "", "link speed relative to the catalog's (0.01..10)"),
      ranged("/hardware/gpu_speed_cv", kNum, 0, limits::kMaxGpuSpeedCv, "none (every GPU alike)",
             "spread of per-GPU speed (coefficient of variation, e.g. 0.02): the step waits for the expected "
             "slowest GPU"),
  };
}

std::vector<SchemaKey> run_keys() {
  return {
      key("/dataset", kObj, "none: no epoch figures", "the data of one epoch: tokens or samples, one of them"),
      positive("/dataset/tokens", "none", "tokens per epoch"),
      positive("/dataset/samples", "none", "sequences per epoch"),
      positive("/price_per_gpu_hour_usd",
               "the box's catalog price where it has one (printed), else none: no cost figures", "USD per GPU-hour"),
      key("/measured", kObj, "none", "figures measured on this job, compared with the prediction"),
      positive("/measured/time_per_epoch_s", "none", "measured time per epoch, s"),
      positive("/measured/step_time_s", "none", "measured time per optimizer step, s"),
      positive("/measured/tokens_per_s_per_gpu", "none", "measured throughput per GPU"),
      key("/measured/source", kStr, "", "where the measurement comes from"),
      key("/notes", KeyType::array, "none", "the author's notes, printed with the prediction"),
  };
}

std::vector<SchemaKey> scenario_keys() {
  std::vector<SchemaKey> keys;
  for (auto part : {top_and_model(), training_keys(), strategy_keys(), hardware_keys(), run_keys()})
    keys.insert(keys.end(), part.begin(), part.end());
  return keys;
}

/// "/training/micro_batch" -> "training.micro_batch" (the form of the Assumptions lines).
std::string dotted(const std::string& path) {
  std::string out = path.substr(1);
  std::replace(out.begin(), out.end(), '/', '.');
  return out;
}

/// The parent object's path ("" for a top-level key).
std::string_view parent_of(std::string_view path) { return path.substr(0, path.rfind('/')); }

std::string number_text(double v) {
  if (std::isinf(v)) return "inf";
  return v == std::floor(v) && std::abs(v) < 1e15 ? fmt::format("{}", static_cast<long long>(v))
                                                  : fmt::format("{:g}", v);
}

/// `text` wrapped to `width` columns, continuation lines indented by `indent`.
std::string wrapped(const std::string& text, std::size_t indent, std::size_t width) {
  std::string out, line;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find(' ', pos);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(pos, end - pos);
    if (!line.empty() && indent + line.size() + 1 + word.size() > width) {
      out += line + "\n" + std::string(indent, ' ');
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    pos = end + 1;
  }
  return out + line;
}

std::string cell(std::string text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

}  // namespace

std::string_view name(KeyType t) {
  switch (t) {
    case KeyType::string:
      return "string";
    case KeyType::boolean:
      return "boolean";
    case KeyType::integer:
      return "integer";
    case KeyType::number:
      return "number";
    case KeyType::choice:
      return "name";
    case KeyType::object:
      return "object";
    case KeyType::array:
      return "array";
    case KeyType::name_or_object:
      return "name or object";
  }
  return "?";
}

std::string SchemaKey::name() const { return path.substr(path.rfind('/') + 1); }

std::string SchemaKey::values() const {
  switch (type) {
    case KeyType::integer:
      return number_text(min) + ".." + number_text(max);
    case KeyType::number:
      if (min_open && std::isinf(max)) return "> " + number_text(min);
      return (min_open ? "(" : "[") + number_text(min) + ", " + number_text(max) + "]";
    case KeyType::choice: {
      std::string out;
      for (const std::string& v : vocabulary) out += (out.empty() ? "" : ", ") + v;
      return out;
    }
    default:
      return "";
  }
}

Schema::Schema(std::vector<SchemaKey> keys) : keys_(std::move(keys)) {}

const SchemaKey& Schema::key(std::string_view path) const {
  for (const SchemaKey& k : keys_)
    if (k.path == path) return k;
  throw std::logic_error("the scenario schema declares no key " + std::string(path));
}

SchemaKey& Schema::key(std::string_view path) {
  return const_cast<SchemaKey&>(static_cast<const Schema&>(*this).key(path));
}

std::vector<std::string> Schema::children(std::string_view object_path) const {
  std::vector<std::string> out;
  for (const SchemaKey& k : keys_)
    if (parent_of(k.path) == object_path) out.push_back(k.name());
  return out;
}

std::string schema_path(std::string_view json_pointer) {
  std::string out;
  std::size_t pos = 0;
  while (pos < json_pointer.size()) {
    const std::size_t next = std::min(json_pointer.find('/', pos + 1), json_pointer.size());
    const std::string_view segment = json_pointer.substr(pos + 1, next - pos - 1);
    const bool index =
        !segment.empty() && std::all_of(segment.begin(), segment.end(), [](char c) { return c >= '0' && c <= '9'; });
    out += "/" + (index ? std::string("*") : std::string(segment));
    pos = next;
  }
  return out;
}

const Schema& scenario_schema() {
  static const Schema schema(scenario_keys());
  return schema;
}

std::string schema_help(const Schema& schema, std::size_t width) {
  std::string out;
  for (const SchemaKey& k : schema.keys()) {
    const std::string values = k.values();
    std::string line = "  " + dotted(k.path);
    line += std::string(line.size() < 34 ? 34 - line.size() : 1, ' ');
    const std::string kind = k.type == KeyType::choice ? "one of" : std::string(name(k.type));
    const std::string text = kind + (values.empty() ? "" : " " + values) +
                             (k.required ? ", required" : ", default " + k.default_text) + ": " + k.help;
    out += line + wrapped(text, line.size(), width) + "\n";
  }
  return out;
}

std::string schema_markdown(const Schema& schema) {
  std::string out = "| key | type | values | default | meaning |\n|---|---|---|---|---|\n";
  for (const SchemaKey& k : schema.keys())
    out += fmt::format("| `{}` | {} | {} | {} | {} |\n", dotted(k.path), name(k.type), cell(k.values()),
                       k.required ? "required" : cell(k.default_text), cell(k.help));
  return out;
}

std::vector<std::string> schema_default_notes(const Schema& schema) {
  std::vector<std::string> out;
  for (const SchemaKey& k : schema.keys())
    if (!k.required && k.path.find('*') == std::string::npos) out.push_back(dotted(k.path) + ": " + k.default_text);
  return out;
}

}  // namespace stepcast
