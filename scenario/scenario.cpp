#include "scenario/scenario.hpp"

#include "scenario/schema.hpp"

#include "base/json_input.hpp"
#include "base/limits.hpp"
#include "base/suggest.hpp"
#include "model/collective.hpp"
#include "model/compute.hpp"
#include "model/hf_config.hpp"
#include "model/moe.hpp"
#include "topologies/hardware_file.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

namespace stepcast {

namespace {

/// `bucket_mb` is in MiB, as PyTorch DDP's bucket_cap_mb (torch/nn/parallel/distributed.py:
/// bucket_bytes_cap = int(bucket_cap_mb * 1024 * 1024)).
constexpr double kBytesPerMiB = 1024.0 * 1024.0;

/// Wraps a parser that throws std::invalid_argument into an InputError at `key`, with a
/// "did you mean" among `names` when one is close.
template <typename F>
auto parse_name(JsonObject& obj, const std::string& key, F parse, const std::vector<std::string>& names = {}) {
  std::string text = obj.string(key);
  try {
    return parse(text);
  } catch (const std::invalid_argument& e) {
    throw obj.error(key, e.what() + did_you_mean(text, names));
  }
}

template <typename T>
std::vector<std::string> names_of(const T& catalog) {
  std::vector<std::string> out;
  for (const auto& entry : catalog) out.push_back(entry.name);
  return out;
}

/// Every name a model can be given by: catalog keys and their aliases.
std::vector<std::string> model_names() {
  std::vector<std::string> out;
  for (const TransformerSpec& m : model_catalog()) {
    out.push_back(m.name);
    out.insert(out.end(), m.aliases.begin(), m.aliases.end());
  }
  return out;
}

/// The schema's entry for `key` of the object `obj` reads.
const SchemaKey& key_of(const Schema& schema, const JsonObject& obj, const std::string& key) {
  return schema.key(schema_path(obj.path()) + "/" + key);
}

/// The keys the schema declares for `obj`, named in its unknown-key errors.
void allow_declared(const Schema& schema, JsonObject& obj) { obj.allow(schema.children(schema_path(obj.path()))); }

/// An integer key within the schema's range.
std::int64_t read_integer(const Schema& schema, JsonObject& obj, const std::string& key) {
  const SchemaKey& k = key_of(schema, obj, key);
  return obj.integer(key, static_cast<std::int64_t>(k.min), static_cast<std::int64_t>(k.max));
}
std::optional<std::int64_t> read_optional_integer(const Schema& schema, JsonObject& obj, const std::string& key) {
  const SchemaKey& k = key_of(schema, obj, key);
  return obj.optional_integer(key, static_cast<std::int64_t>(k.min), static_cast<std::int64_t>(k.max));
}
int read_int32(const Schema& schema, JsonObject& obj, const std::string& key) {
  const SchemaKey& k = key_of(schema, obj, key);
  return obj.int32(key, static_cast<int>(k.min), static_cast<int>(k.max));
}

/// A number key within the schema's range ("> 0": positive, up to its max when it has one).
std::optional<double> read_optional_number(const Schema& schema, JsonObject& obj, const std::string& key) {
  const SchemaKey& k = key_of(schema, obj, key);
  if (k.min_open && k.min == 0)
    return std::isinf(k.max) ? obj.optional_positive(key) : obj.optional_positive(key, k.max);
  return obj.optional_number(key, k.min, k.max);
}
double read_number(const Schema& schema, JsonObject& obj, const std::string& key) {
  const SchemaKey& k = key_of(schema, obj, key);
  if (k.min_open && k.min == 0) return std::isinf(k.max) ? obj.positive(key) : obj.positive(key, k.max);
  return obj.number(key, k.min, k.max);
}

/// A name of the schema's vocabulary for `key`.
std::string read_choice(const Schema& schema, JsonObject& obj, const std::string& key) {
  return obj.choice(key, key_of(schema, obj, key).vocabulary);
}

TransformerSpec parse_model(JsonObject& top, std::vector<std::string>& defaults) {
  const nlohmann::json& raw = top.raw("model");
  if (raw.is_string()) {
    const std::string name = raw.get<std::string>();
    const TransformerSpec* spec = find_model(name);
    if (!spec)
      throw top.error("model", "unknown model \"" + name + "\"" + did_you_mean(name, model_names()) +
                                   " (see `stepcast catalog models`)");
    return *spec;
  }
  if (!raw.is_object()) throw top.error("model", "expected a catalog model name or an inline model object");
  JsonObject obj(raw, top.file(), top.path_of("model"));
  if (obj.has("hf_config")) {
    // A Hugging Face config.json, relative to the scenario file like hardware.calibration.
    std::filesystem::path path(obj.string("hf_config"));
    obj.finish();
    if (path.is_relative()) path = std::filesystem::path(top.file()).parent_path() / path;
    if (!std::filesystem::exists(path))
      throw obj.error("hf_config", "expected a Hugging Face config.json; " + path.string() + " does not exist");
    TransformerSpec spec = load_hf_config(path);
    defaults.push_back(fmt::format("model \"{}\" (named after its {}): {}", spec.name,
                                   path.filename() == "config.json" ? "folder" : "file", spec.source));
    return spec;
  }
  return parse_transformer(obj);
}

/// The array `key` of `obj`, each entry a flag `add` sets in `flags`; an unknown name is an
/// error at its index, with the closest of `names`.
template <typename Flags>
void read_flags(JsonObject& obj, const char* key, Flags& flags, void (*add)(Flags&, std::string_view),
                const std::vector<std::string>& names) {
  JsonArray list = obj.array(key);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string text = list.string(i);
    try {
      add(flags, text);
    } catch (const std::invalid_argument& e) {
      throw list.error(i, e.what() + did_you_mean(text, names));
    }
  }
}

/// The training keys as written: absent ones stay empty until apply_training_defaults.
struct TrainingInput {
  std::optional<Precision> precision;
  std::optional<OptimizerKind> optimizer;
  std::optional<std::int64_t> micro_batch, grad_accum, seq_len;
  std::optional<Recompute> recompute;
  std::optional<bool> flash_attention;
  TrainingSpec rest;  ///< attention_kernel, kernels, fused_loss, metric_loss_passes, launch_blocking, lora,
                      ///< kernel_rates, grad_accumulation
  bool kernel_rates_given = false;
  bool grad_accumulation_given = false;
};

std::optional<LoraSpec> parse_lora(JsonObject& obj, const Schema& schema) {
  auto lora = obj.optional_object("lora");
  if (!lora) return std::nullopt;
  allow_declared(schema, *lora);
  LoraSpec l;
  l.rank = read_integer(schema, *lora, "rank");
  JsonArray targets = lora->array("targets");
  for (std::size_t i = 0; i < targets.size(); ++i) l.targets.push_back(targets.string(i));
  lora->finish();
  return l;
}

/// Each key read on its own, its problems collected in `errors`.
TrainingInput parse_training(JsonObject& obj, InputErrors& errors, const Schema& schema) {
  allow_declared(schema, obj);
  TrainingInput in;
  TrainingSpec& t = in.rest;
  errors.attempt([&] {
    if (obj.has("precision")) in.precision = parse_name(obj, "precision", parse_precision, precision_names());
  });
  errors.attempt([&] {
    if (obj.has("optimizer")) in.optimizer = parse_name(obj, "optimizer", parse_optimizer);
  });
  errors.attempt([&] { in.micro_batch = read_integer(schema, obj, "micro_batch"); });
  errors.attempt([&] { in.grad_accum = read_optional_integer(schema, obj, "grad_accum"); });
  errors.attempt([&] { in.seq_len = read_optional_integer(schema, obj, "seq_len"); });
  errors.attempt([&] {
    if (obj.has("recompute")) in.recompute = parse_name(obj, "recompute", parse_recompute, recompute_names());
  });
  errors.attempt([&] {
    if (!obj.has("recompute_modules")) return;
    t.recompute_modules = RecomputeModules{false};
    t.recompute_modules_given = true;
    read_flags(obj, "recompute_modules", t.recompute_modules, add_recompute_module, recompute_module_names());
  });
  errors.attempt([&] { in.flash_attention = obj.optional_boolean("flash_attention"); });
  errors.attempt([&] {
    if (obj.has("attention_kernel")) t.attention_kernel = parse_name(obj, "attention_kernel", parse_attention_kernel);
  });
  errors.attempt([&] {
    if (obj.has("kernels")) t.kernel_profile = parse_name(obj, "kernels", parse_kernel_profile);
  });
  errors.attempt([&] { t.fused_loss = obj.optional_boolean("fused_loss"); });
  errors.attempt([&] {
    if (obj.has("loss_fp32_copies")) t.loss_fp32_copies = read_int32(schema, obj, "loss_fp32_copies");
  });
  errors.attempt([&] { t.launch_blocking = obj.optional_boolean("launch_blocking").value_or(false); });
  errors.attempt([&] {
    if (obj.has("cuda_graphs")) read_flags(obj, "cuda_graphs", t.cuda_graphs, add_cuda_graph, cuda_graph_names());
  });
  errors.attempt([&] {
    if (obj.has("mixed_precision")) t.autocast = read_choice(schema, obj, "mixed_precision") == "autocast";
  });
  errors.attempt([&] {
    if (!obj.has("grad_accumulation")) return;
    t.grad_accumulation = parse_name(obj, "grad_accumulation", parse_grad_accumulation, grad_accumulation_names());
    in.grad_accumulation_given = true;
  });
  errors.attempt([&] {
    if (obj.has("metric_loss_passes")) t.metric_loss_passes = read_int32(schema, obj, "metric_loss_passes");
  });
  errors.attempt([&] { t.lora = parse_lora(obj, schema); });
  errors.attempt([&] {
    if (!obj.has("kernel_rates")) return;
    t.in_step_rates = read_choice(schema, obj, "kernel_rates") == "in_step";
    in.kernel_rates_given = true;
  });
  errors.attempt([&] {
    if (t.attention_kernel && in.flash_attention &&
        (*t.attention_kernel == AttentionKernel::unfused) == *in.flash_attention)
      throw obj.error("attention_kernel", "contradicts flash_attention: " + std::string(name(*t.attention_kernel)) +
                                              " is " + (*in.flash_attention ? "not a fused kernel" : "a fused kernel"));
  });
  errors.attempt([&] { obj.finish(); });
  return in;
}

/// The training setup with a default for every key the file left out, each recorded in
/// `s.defaults`: precision bf16_mixed where the GPU has bf16 arithmetic (fp16_mixed
/// before), adam, grad_accum 1, the model's own seq_len, no recompute, and flash attention
/// from Ampere on (FlashAttention needs sm80 or later: Dao 2023, FlashAttention-2 README,
/// "Ampere, Ada, or Hopper GPUs"), or as the attention_kernel given implies; kernel rates in
/// step with `in_step` (from `in_step_file`, --in-step) or, when null, the catalog's fractions.
void apply_training_defaults(Scenario& s, const TrainingInput& in, std::shared_ptr<const InStepFractions> in_step,
                             const std::string& in_step_file) {
  TrainingSpec& t = s.training;
  t = in.rest;
  t.in_step = std::move(in_step);
  const BoxSpec& box = *find_box(s.hardware.cluster.box);
  const GpuSpec& gpu = *find_gpu(box.gpu);
  auto note = [&](const std::string& text) { s.defaults.push_back(text); };
  t.micro_batch = *in.micro_batch;
  if (in.precision)
    t.precision = *in.precision;
  else {
    t.precision = gpu.supports(Dtype::bf16) ? Precision::bf16_mixed : Precision::fp16_mixed;
    note(fmt::format("training.precision: {} ({} bf16 arithmetic; set training.precision)", name(t.precision),
                     gpu.supports(Dtype::bf16) ? "the " + gpu.name + " has" : "the " + gpu.name + " has no"));
  }
  t.optimizer = in.optimizer.value_or(OptimizerKind::adam_mixed_16);
  if (!in.optimizer) note("training.optimizer: adam (16 bytes per parameter; set training.optimizer)");
  t.grad_accum = in.grad_accum.value_or(1);
  if (!in.grad_accum) note("training.grad_accum: 1 (one micro-step per optimizer step)");
  if (t.grad_accum > 1 && !in.grad_accumulation_given)
    note(
        "training.grad_accumulation: autograd (from the second micro-step on each gradient is added in place to "
        "the stored one: 3 passes over the local gradients; \"fused\" for Megatron-LM's gradient-accumulation "
        "fusion, \"bf16_optimizer\" for DeepSpeed's)");
  t.seq_len = in.seq_len.value_or(s.model.seq_len);
  if (!in.seq_len) note(fmt::format("training.seq_len: {} (the model's own sequence length)", t.seq_len));
  t.recompute = in.recompute.value_or(Recompute::none);
  if (!in.recompute) note("training.recompute: none (every activation kept; set training.recompute)");
  if (t.attention_kernel && !attention_kernel_runs_on(*t.attention_kernel, gpu.arch))
    throw InputError(s.file, "/training/attention_kernel",
                     fmt::format("expected a kernel that runs on the {} ({}), one of {}; got {}", gpu.name,
                                 name(gpu.arch), attention_kernels_on(gpu.arch), name(*t.attention_kernel)));
  if (in.flash_attention)
    t.flash_attention = *in.flash_attention;
  else if (t.attention_kernel)
    t.flash_attention = *t.attention_kernel != AttentionKernel::unfused;
  else {
    t.flash_attention = gpu.arch >= GpuArch::ampere;
    note(fmt::format("training.flash_attention: {} (FlashAttention runs from Ampere on; the {} is {})",
                     t.flash_attention, gpu.name, name(gpu.arch)));
  }
  if (!in.kernel_rates_given) {
    const InStepFractions& f = t.in_step ? *t.in_step : in_step_fractions();
    note(
        fmt::format("training.kernel_rates: in_step (inside a step GEMMs keep {:.1f}% and attention {:.1f}% of "
                    "their isolated benchmarks: {})",
                    100 * gemm_fraction(f, gpu.arch), 100 * f.attention,
                    t.in_step ? in_step_file + ", from --in-step"
                              : std::string("model/catalog/in_step.json; \"isolated\" for the benchmarks")));
  }
}

/// A strategy's canonical name, or a common one (strategy_alias), kept in `given` for the
/// assumption that says what it was read as.
Strategy strategy_named(const std::string& text, std::string& given) {
  try {
    return parse_strategy(text);
  } catch (const std::invalid_argument&) {
    const std::optional<Strategy> alias = strategy_alias(text);
    if (!alias) throw;
    given = text;
    return *alias;
  }
}

StrategySpec parse_strategy_object(JsonObject& obj, InputErrors& errors, const Schema& schema) {
  allow_declared(schema, obj);
  StrategySpec s;
  ParallelLayout& l = s.layout;
  errors.attempt([&] {
    l.dp_sharding = parse_name(
        obj, "name", [&](const std::string& text) { return strategy_named(text, s.name_given); }, strategy_names());
  });
  errors.attempt([&] {
    if (auto mb = read_optional_number(schema, obj, "bucket_mb"))
      s.bucket_bytes = *mb * kBytesPerMiB, s.bucket_given = true;
  });
  errors.attempt([&] {
    if (obj.has("tp")) l.tp = read_int32(schema, obj, "tp");
    if (obj.has("sp")) l.sp = obj.boolean("sp");
    if (obj.has("tp_comm_overlap")) s.tp_comm_overlap = obj.boolean("tp_comm_overlap");
    if (obj.has("tp_backward_overlap")) s.tp_backward_overlap = obj.boolean("tp_backward_overlap");
    if (obj.has("sp_keep_gathered")) s.sp_keep_gathered = obj.boolean("sp_keep_gathered");
    if (obj.has("overlap_param_gather")) s.overlap_param_gather = obj.boolean("overlap_param_gather");
    if (obj.has("overlap_grad_reduce")) s.overlap_grad_reduce = obj.boolean("overlap_grad_reduce");
  });
  errors.attempt([&] {
    if (obj.has("pp")) l.pp = read_int32(schema, obj, "pp");
    if (obj.has("vpp")) l.vpp = read_int32(schema, obj, "vpp");
    if (auto sched = obj.optional_string("schedule")) {
      const std::vector<std::string>& known = key_of(schema, obj, "schedule").vocabulary;
      if (std::find(known.begin(), known.end(), *sched) == known.end())
        throw obj.error("schedule", "unknown pipeline schedule \"" + *sched + "\"" + did_you_mean(*sched, known) +
                                        " (known: gpipe, 1f1b, interleaved, zb-h1)");
      l.schedule = parse_pipeline_schedule(*sched);
    }
    if (l.vpp > 1 && !obj.has("schedule")) l.schedule = PipelineScheduleKind::interleaved;
  });
  errors.attempt([&] {
    if (obj.has("cp")) l.cp = read_int32(schema, obj, "cp");
    if (obj.has("cp_comm")) s.cp_comm = parse_name(obj, "cp_comm", parse_cp_comm, cp_comm_names());
  });
  errors.attempt([&] {
    if (obj.has("ep")) l.ep = read_int32(schema, obj, "ep");
    if (auto v = read_optional_number(schema, obj, "moe_imbalance")) s.moe_imbalance = *v;
    if (auto v = read_optional_number(schema, obj, "moe_capacity_factor")) s.moe_capacity_factor = *v;
    if (auto v = obj.optional_boolean("moe_shared_expert_overlap")) s.moe_shared_expert_overlap = *v;
    if (auto v = obj.optional_boolean("moe_a2a_overlap")) s.moe_a2a_overlap = *v;
    if (obj.has("moe_dispatcher"))
      s.moe_dispatcher = parse_name(obj, "moe_dispatcher", parse_moe_dispatcher, moe_dispatcher_names());
  });
  errors.attempt([&] {
    if (obj.has("offload")) s.offload = parse_name(obj, "offload", parse_offload, offload_names());
    if (obj.has("delayed_update")) s.delayed_update = obj.boolean("delayed_update");
  });
  errors.attempt([&] {
    if (obj.has("fp8_all_gather")) s.fp8_all_gather = obj.boolean("fp8_all_gather");
  });
  errors.attempt([&] {
    if (obj.has("pp_split")) s.pp_split = parse_stage_split(read_choice(schema, obj, "pp_split"));
  });
  errors.attempt([&] {
    if (auto r = obj.optional_string("reduce_dtype")) {
      if (*r != "fp32" && *r != "working")
        throw obj.error("reduce_dtype",
                        "expected \"fp32\" or \"working\" (the precision's 16-bit dtype), got \"" + *r + "\"");
      s.reduce_fp32 = *r == "fp32";
      s.reduce_dtype_given = true;
    }
  });
  errors.attempt([&] {
    if (obj.has("prefetch_layers")) s.prefetch_layers = read_int32(schema, obj, "prefetch_layers");
  });
  errors.attempt([&] {
    if (auto a = obj.optional_string("algorithm")) {
      const std::vector<std::string>& known = key_of(schema, obj, "algorithm").vocabulary;
      if (std::find(known.begin(), known.end(), *a) == known.end())
        throw obj.error("algorithm", "unknown collective algorithm \"" + *a + "\"" + did_you_mean(*a, known) +
                                         " (see `stepcast catalog algorithms`)");
      s.algorithm = *a;
    }
  });
  errors.attempt([&] { obj.finish(); });
  return s;
}

StrategySpec parse_strategy_spec(JsonObject& top, InputErrors& errors, const Schema& schema) {
  const nlohmann::json& raw = top.raw("strategy");
  if (raw.is_string()) {
    StrategySpec s;
    const std::string text = raw.get<std::string>();
    try {
      s.layout.dp_sharding = strategy_named(text, s.name_given);
    } catch (const std::invalid_argument& e) {
      throw top.error("strategy", e.what() + did_you_mean(text, strategy_names()));
    }
    return s;
  }
  if (!raw.is_object()) throw top.error("strategy", "expected a strategy name or an object with \"name\"");
  JsonObject obj(raw, top.file(), top.path_of("strategy"));
  return parse_strategy_object(obj, errors, schema);
}

/// Hardware given inline: where a catalog name is expected, an object in the catalog's own
/// format (parse_gpu, parse_link: strict, the same keys) is read, added to the catalog under
/// its name (base/catalog_store.hpp: a name already taken must name an equal entry) and
/// replaced by that name in `json`, a copy of the object at `path` that the catalog reader
/// then reads. Keys: a box's "gpu" (a GPU) and "nvlink", "pcie", "cpu_link", "nic" (link
/// kinds); a network's "nic".
void add_inline_parts(nlohmann::json& json, const std::string& file, const std::string& path,
                      const std::vector<std::string>& link_keys, bool gpu_key) {
  if (!json.is_object()) return;
  const JsonObject where(json, file, path);
  auto add = [&](const std::string& key, auto parse, auto add_inline) {
    if (!json.contains(key) || !json[key].is_object()) return;
    JsonObject entry(json[key], file, where.path_of(key));
    const auto spec = parse(entry);
    try {
      json[key] = add_inline(spec).name;
    } catch (const std::invalid_argument& e) {
      throw where.error(key, e.what());
    }
  };
  if (gpu_key) add("gpu", parse_gpu, add_inline_gpu);
  for (const std::string& key : link_keys) add(key, parse_link, add_inline_link);
}

/// A box given inline (an object in boxes.json's format, its GPU and link kinds catalog
/// names or inline objects), added to the catalog.
const BoxSpec* inline_box(JsonObject& obj) {
  nlohmann::json copy = obj.raw("box");
  add_inline_parts(copy, obj.file(), obj.path_of("box"), {"nvlink", "pcie", "cpu_link", "nic"}, true);
  JsonObject entry(copy, obj.file(), obj.path_of("box"));
  const BoxSpec box = parse_box(entry);
  try {
    return &add_inline_box(box);
  } catch (const std::invalid_argument& e) {
    throw obj.error("box", e.what());
  }
}

/// The network of a box-built cluster: as written, or, for several nodes, the box's own
/// NICs on one non-blocking switch (recorded in `defaults`).
void resolve_network(JsonObject& obj, const BoxSpec& box, HardwareChoice& h, std::vector<std::string>& defaults) {
  const nlohmann::json* network = obj.has("network") ? &obj.raw("network") : nullptr;
  nlohmann::json cluster = {{"name", box.name}, {"box", box.name}, {"nodes", h.cluster.nodes}, {"source", "scenario"}};
  if (network) {
    cluster["network"] = *network;
    // What a partial network leaves out is the box's, as with no network at all.
    nlohmann::json& net = cluster["network"];
    if (net.is_object()) {
      std::vector<std::string> taken;
      if (!net.contains("nic") && !box.nic.empty()) {
        net["nic"] = box.nic;
        taken.push_back(fmt::format("nic {}", box.nic));
      }
      if (!net.contains("nics_per_node") && box.nics >= 1) {
        net["nics_per_node"] = box.nics;
        taken.push_back(fmt::format("nics_per_node {}", box.nics));
      }
      if (!net.contains("topology")) {
        net["topology"] = "single_switch";
        taken.push_back("topology single_switch");
      } else if (net["topology"] == "rail_fat_tree" && !net.contains("oversubscription")) {
        net["oversubscription"] = 1;
        taken.push_back("oversubscription 1 (non-blocking)");
      }
      if (!taken.empty())
        defaults.push_back(
            fmt::format("hardware.network: {} (not stated: the {}'s own)", fmt::join(taken, ", "), box.name));
    }
    add_inline_parts(cluster["network"], obj.file(), obj.path_of("network"), {"nic"}, false);
  } else if (h.cluster.nodes > 1) {
    if (box.nics < 1)
      throw obj.error("network", fmt::format("missing; {} nodes need a network, and {} has no NICs of its own to "
                                             "assume",
                                             h.cluster.nodes, box.name));
    const NetworkSpec assumed = default_network(box, h.cluster.nodes);
    cluster["network"] = {{"nic", assumed.nic},
                          {"nics_per_node", assumed.nics_per_node},
                          {"topology", std::string(name(assumed.topology))}};
    if (assumed.topology == NetworkTopology::rail_fat_tree)
      cluster["network"]["oversubscription"] = assumed.oversubscription;
    defaults.push_back(default_network_assumption(box, assumed));
  }
  JsonObject cobj(cluster, obj.file(), obj.path());
  h.cluster = parse_cluster(cobj);
}

/// The box or cluster and the cluster's size in nodes.
const BoxSpec* parse_machine(JsonObject& obj, HardwareChoice& h, std::optional<std::int64_t> gpus,
                             std::vector<std::string>& defaults, const Schema& schema) {
  allow_declared(schema, obj);
  if (obj.has("cluster") && obj.has("box"))
    throw obj.error("", "expected either \"cluster\" (a catalog cluster) or \"box\" (a catalog box), not both");
  if (obj.has("cluster")) {
    std::string name = obj.string("cluster");
    const ClusterSpec* c = find_cluster(name);
    if (!c)
      throw obj.error("cluster", "unknown cluster \"" + name + "\"" + did_you_mean(name, names_of(cluster_catalog())) +
                                     " (see `stepcast catalog clusters`)");
    for (const char* key : {"nodes", "network"})
      if (obj.has(key))
        throw obj.error(key, std::string("a catalog cluster brings its own nodes and network; give \"box\" instead "
                                         "of \"cluster\" to set ") +
                                 key);
    h.cluster = *c;
    return find_box(c->box);
  }
  if (!obj.has("box"))
    throw obj.error("box",
                    "missing; expected \"box\" (a catalog box or an inline box object) or \"cluster\" "
                    "(a catalog cluster)");
  const BoxSpec* box = obj.has("box") && obj.raw("box").is_object() ? inline_box(obj) : nullptr;
  const std::string name = box ? box->name : obj.string("box");
  if (!box) box = find_box(name);
  if (!box)
    throw obj.error("box", "unknown box \"" + name + "\"" + did_you_mean(name, names_of(box_catalog())) +
                               " (see `stepcast catalog boxes`, or give the box inline as an object)");
  h.cluster.name = h.cluster.box = name;
  if (obj.has("nodes")) {
    h.cluster.nodes = read_int32(schema, obj, "nodes");
  } else if (gpus) {
    h.cluster.nodes =
        *gpus > box->gpus
            ? static_cast<int>(std::min<std::int64_t>((*gpus + box->gpus - 1) / box->gpus, limits::kMaxNodes))
            : 1;
    defaults.push_back(
        fmt::format("hardware.nodes: {} (the {} GPUs in boxes of {})", h.cluster.nodes, *gpus, box->gpus));
  }
  resolve_network(obj, *box, h, defaults);
  return box;
}

/// GPUs in use: at most the cluster's, whole nodes above one box.
void place_gpus(JsonObject& obj, const BoxSpec& box, std::int64_t gpus, HardwareChoice& h) {
  const std::int64_t available = static_cast<std::int64_t>(box.gpus) * h.cluster.nodes;
  if (gpus > available)
    throw obj.error("gpus", "expected at most " + std::to_string(available) + " GPUs (" +
                                std::to_string(h.cluster.nodes) + " x " + box.name + " with " +
                                std::to_string(box.gpus) + " GPUs each), got " + std::to_string(gpus));
  if (gpus > box.gpus && gpus % box.gpus != 0)
    throw obj.error("gpus", "expected a multiple of " + std::to_string(box.gpus) + " (the GPUs per node of " +
                                box.name + ") when using more than one node, got " + std::to_string(gpus));
  h.nodes = gpus > box.gpus ? static_cast<int>(gpus / box.gpus) : 1;
  h.gpus_per_node = gpus > box.gpus ? box.gpus : static_cast<int>(gpus);
}

void parse_calibration(JsonObject& obj, const BoxSpec& box, HardwareChoice& h) {
  auto cal = obj.optional_string("calibration");
  if (!cal) return;
  std::filesystem::path path(*cal);
  if (path.is_relative()) path = std::filesystem::path(obj.file()).parent_path() / path;
  if (!std::filesystem::exists(path))
    throw obj.error("calibration",
                    "expected a hardware file written by `stepcast fit`; " + path.string() + " does not exist");
  h.calibration = std::make_shared<const HardwareFile>(load_hardware(path));
  h.calibration_file = path.string();
  if (h.calibration->gpu != box.gpu)
    throw obj.error("calibration", "the hardware file was fitted for " + h.calibration->gpu + ", but " + box.name +
                                       " holds " + box.gpu);
}

std::vector<StragglerSpec> parse_stragglers(JsonObject& obj, const Schema& schema) {
  std::vector<StragglerSpec> out;
  auto list = obj.optional_array("stragglers");
  if (!list) return out;
  for (std::size_t i = 0; i < list->size(); ++i) {
    JsonObject o = list->object(i);
    allow_declared(schema, o);
    StragglerSpec st;
    st.name = o.string("name");
    st.nodes = read_int32(schema, o, "nodes");
    st.compute_speed = read_number(schema, o, "compute_speed");
    st.link_speed = read_number(schema, o, "link_speed");
    o.finish();
    out.push_back(st);
  }
  return out;
}

/// Returns whether the hardware is complete (a box or cluster and a GPU count), so that
/// defaults depending on the GPU can be taken.
bool parse_hardware(JsonObject& obj, HardwareChoice& h, std::vector<std::string>& defaults, InputErrors& errors,
                    const Schema& schema) {
  std::optional<std::int64_t> gpus;
  errors.attempt([&] { gpus = read_integer(schema, obj, "gpus"); });
  const BoxSpec* box = nullptr;
  errors.attempt([&] { box = parse_machine(obj, h, gpus, defaults, schema); });
  if (box && gpus) errors.attempt([&] { place_gpus(obj, *box, *gpus, h); });
  if (box) errors.attempt([&] { parse_calibration(obj, *box, h); });
  errors.attempt([&] { h.stragglers = parse_stragglers(obj, schema); });
  errors.attempt([&] { h.gpu_speed_cv = read_optional_number(schema, obj, "gpu_speed_cv"); });
  errors.attempt([&] { obj.finish(); });
  return box && gpus;
}

DatasetSpec parse_dataset(JsonObject& top, std::vector<std::string>& defaults, const Schema& schema) {
  DatasetSpec out;
  auto d = top.optional_object("dataset");
  if (!d) {
    defaults.push_back("no dataset: no epoch figures (add \"dataset\": {\"tokens\": N} or {\"samples\": N})");
    return out;
  }
  allow_declared(schema, *d);
  out.tokens = read_optional_number(schema, *d, "tokens");
  out.samples = read_optional_number(schema, *d, "samples");
  if (out.tokens.has_value() == out.samples.has_value())
    throw d->error("", "expected exactly one of \"tokens\" or \"samples\"");
  d->finish();
  return out;
}

std::optional<MeasuredFigures> parse_measured(JsonObject& top, const Schema& schema) {
  auto m = top.optional_object("measured");
  if (!m) return std::nullopt;
  allow_declared(schema, *m);
  MeasuredFigures f;
  f.time_per_epoch_s = read_optional_number(schema, *m, "time_per_epoch_s");
  f.step_time_s = read_optional_number(schema, *m, "step_time_s");
  f.tokens_per_s_per_gpu = read_optional_number(schema, *m, "tokens_per_s_per_gpu");
  f.source = m->string("source");
  m->finish();
  return f;
}

/// name (default: the file's stem), description, notes, price.
void parse_labels(JsonObject& top, Scenario& s, InputErrors& errors, const Schema& schema) {
  errors.attempt([&] {
    if (auto n = top.optional_string("name"))
      s.name = *n;
    else {
      s.name = std::filesystem::path(s.file).stem().string();
      s.defaults.push_back("name: \"" + s.name + "\" (the file's name)");
    }
  });
  errors.attempt([&] { s.description = top.optional_string("description").value_or(""); });
  errors.attempt([&] {
    if (auto notes = top.optional_array("notes"))
      for (std::size_t i = 0; i < notes->size(); ++i) s.notes.push_back(notes->string(i));
  });
  errors.attempt([&] { s.price_per_gpu_hour_usd = read_optional_number(schema, top, "price_per_gpu_hour_usd"); });
}

/// A scenario without price_per_gpu_hour_usd takes its box's catalog price where the catalog
/// has one (a cloud instance's on-demand list price, a reference rate for a box one buys),
/// said under Assumptions with its date and source.
void apply_price_default(Scenario& s) {
  if (s.price_per_gpu_hour_usd) return;
  const BoxSpec* box = find_box(s.hardware.cluster.box);
  if (!box || !box->price) return;
  const PriceSpec& p = *box->price;
  s.price_per_gpu_hour_usd = p.usd_per_gpu_hour;
  s.defaults.push_back(fmt::format(
      "price_per_gpu_hour_usd: {:g} USD, {}'s {} of {} ({}); set it to your own price", p.usd_per_gpu_hour, box->name,
      p.kind == "cloud_on_demand" ? "on-demand list price" : "reference rate", p.date, p.source));
}

/// `--calibration FILE`: the hardware file replacing the scenario's own, fitted for the box's GPU.
void apply_calibration_option(HardwareChoice& h, const std::string& file, const std::string& scenario_file) {
  if (!std::filesystem::exists(file))
    throw InputError(scenario_file, "", "--calibration: no such hardware file: " + file);
  auto cal = std::make_shared<const HardwareFile>(load_hardware(file));
  const BoxSpec& box = *find_box(h.cluster.box);
  if (cal->gpu != box.gpu)
    throw InputError(scenario_file, "",
                     "--calibration " + file + ": fitted for " + cal->gpu + ", but " + box.name + " holds " + box.gpu);
  h.calibration = std::move(cal);
  h.calibration_file = file;
}

/// `--in-step FILE`: the in-step fractions of the file, for a scenario that uses them.
std::shared_ptr<const InStepFractions> in_step_option(const std::string& file, const TrainingInput& in,
                                                      const std::string& scenario_file) {
  if (file.empty()) return nullptr;
  if (!in.rest.in_step_rates)
    throw InputError(scenario_file, "/training/kernel_rates",
                     "--in-step " + file +
                         ": the scenario sets kernel_rates \"isolated\", which uses no in-step "
                         "fractions");
  if (!std::filesystem::exists(file)) throw InputError(scenario_file, "", "--in-step: no such in-step file: " + file);
  return std::make_shared<const InStepFractions>(load_in_step_fractions(file, file));
}

/// Reads every part of the file, collecting the problems of all of them; defaults that
/// depend on the model and the GPU are taken once both were read; the command line's
/// options last, so the scenario is final here.
Scenario parse_root(const JsonDoc& doc, const ReadOptions& options, const Schema& schema) {
  JsonObject top(doc.root(), doc.file(), "");
  allow_declared(schema, top);
  Scenario s;
  s.file = doc.file();
  InputErrors errors;
  parse_labels(top, s, errors, schema);
  const bool model_ok = errors.attempt([&] { s.model = parse_model(top, s.defaults); });
  bool hardware_ok = false;
  errors.attempt([&] {
    JsonObject h = top.object("hardware");
    hardware_ok = parse_hardware(h, s.hardware, s.defaults, errors, schema);
  });
  TrainingInput training;
  errors.attempt([&] {
    JsonObject t = top.object("training");
    training = parse_training(t, errors, schema);
  });
  errors.attempt([&] {
    s.strategy = parse_strategy_spec(top, errors, schema);
    if (!s.strategy.name_given.empty())
      s.defaults.push_back(
          fmt::format("strategy \"{}\" read as {}", s.strategy.name_given, name(s.strategy.layout.dp_sharding)));
  });
  errors.attempt([&] { s.dataset = parse_dataset(top, s.defaults, schema); });
  errors.attempt([&] { s.measured = parse_measured(top, schema); });
  errors.attempt([&] { top.finish(); });
  errors.raise();
  if (!model_ok || !hardware_ok || !training.micro_batch)
    throw std::logic_error("parse_root: a part failed without an InputError");
  if (!options.calibration_file.empty()) apply_calibration_option(s.hardware, options.calibration_file, s.file);
  apply_training_defaults(s, training, in_step_option(options.in_step_file, training, s.file), options.in_step_file);
  apply_price_default(s);
  ScenarioSource where;
  where.file = doc.file();
  where.model_inline = doc.root().at("model").is_object();
  check_scenario(s, where);
  if (s.training.autocast) s.strategy.reduce_fp32 = true;  // fp32 parameters have fp32 gradients
  s.strategy.layout.dp = data_parallel_degree(s);
  if (options.gpus > 0) {
    try {
      return with_gpus(s, options.gpus);
    } catch (const InputError&) {
      throw;
    } catch (const std::invalid_argument& e) {
      throw InputError(s.file, "", fmt::format("--gpus {}: {}", options.gpus, e.what()));
    }
  }
  return s;
}

// ---- Checking: one set of rules for every scenario, however it was built. -------------

/// Throws unless lo <= v <= hi, naming the bound and why it is there.
void check_count(std::int64_t v, std::int64_t lo, std::int64_t hi, const std::string& file, const std::string& path,
                 const std::string& why = "") {
  if (v < lo || v > hi)
    throw InputError(
        file, path,
        fmt::format("expected an integer in {}..{}{}, got {}", lo, hi, why.empty() ? "" : " (" + why + ")", v));
}

/// Throws unless v is finite and lo <= v <= hi.
void check_number(double v, double lo, double hi, const std::string& file, const std::string& path,
                  const std::string& why = "") {
  if (!std::isfinite(v) || v < lo || v > hi)
    throw InputError(
        file, path,
        fmt::format("expected a number in [{}, {}]{}, got {}", lo, hi, why.empty() ? "" : " (" + why + ")", v));
}

/// The model's shape: counts within base/limits.hpp, heads dividing hidden unless head_dim
/// is given, kv_heads dividing heads (head_dim = hidden / heads; a division by zero or a
/// truncated head otherwise).
void check_model(const TransformerSpec& m, const ScenarioSource& w) {
  const std::string& f = w.file;
  check_count(m.layers, 1, limits::kMaxLayers, f, w.model_field("layers"), "layers");
  check_count(m.hidden, 1, limits::kMaxHidden, f, w.model_field("hidden"), "hidden size");
  check_count(m.heads, 1, m.hidden, f, w.model_field("heads"), "attention heads, at most hidden");
  if (m.head_width == 0 && m.hidden % m.heads != 0)
    throw InputError(f, w.model_field("heads"),
                     fmt::format("expected a divisor of hidden ({}), got {}", m.hidden, m.heads));
  check_count(m.kv_heads, 1, m.heads, f, w.model_field("kv_heads"), "key/value heads, at most heads");
  if (m.heads % m.kv_heads != 0)
    throw InputError(f, w.model_field("kv_heads"),
                     fmt::format("expected a divisor of heads ({}), got {}", m.heads, m.kv_heads));
  check_count(m.ffn_hidden, 1, limits::kMaxFfnHidden, f, w.model_field("ffn_hidden"), "MLP width");
  check_count(m.vocab, 1, limits::kMaxVocab, f, w.model_field("vocab"), "vocabulary");
  check_count(m.type_vocab, 0, limits::kMaxVocab, f, w.model_field("type_vocab"), "token types");
  check_count(m.seq_len, 1, limits::kMaxSeqLen, f, w.model_field("seq_len"), "tokens per sequence");
  if (m.positional == Positional::learned)
    check_count(m.max_positions, 1, limits::kMaxSeqLen, f, w.model_field("max_positions"), "learned positions");
}

/// LoRA: a rank of 1..hidden and known target projections, each listed once ("gate" only
/// on a gated MLP).
void check_lora(const LoraSpec& l, const TransformerSpec& m, const ScenarioSource& w) {
  check_count(l.rank, 1, m.hidden, w.file, w.lora + "/rank", "LoRA rank, at most the hidden size");
  const std::string targets = w.lora + "/targets";
  if (l.targets.empty()) throw InputError(w.file, targets, "expected at least one target projection");
  static const std::vector<std::string> known{"q", "k", "v", "o", "gate", "up", "down"};
  std::set<std::string> seen;
  for (std::size_t i = 0; i < l.targets.size(); ++i) {
    const std::string& target = l.targets[i];
    const std::string path = targets + "/" + std::to_string(i);
    if (std::find(known.begin(), known.end(), target) == known.end())
      throw InputError(w.file, path,
                       "unknown LoRA target \"" + target + "\"; expected one of q, k, v, o, gate, up, down");
    if (target == "gate" && !m.gated_mlp)
      throw InputError(w.file, path, "LoRA target \"gate\" needs a gated MLP; " + m.name + " has none");
    if (!seen.insert(target).second)
      throw InputError(w.file, path, "LoRA target \"" + target + "\" listed twice; expected each projection once");
  }
}

/// Micro-batch, accumulation and sequence length within their bounds; the sequence within
/// a learned position table; LoRA.
/// training.mixed_precision "autocast": fp32 parameters under torch.autocast, modelled for
/// PyTorch DDP full training of a dense model in 16-bit mixed precision (what runs it: Hugging
/// Face's Trainer, Lightning, plain PyTorch AMP). Elsewhere frameworks keep 16-bit parameters
/// (DeepSpeed's ZeRO, Megatron's TP and PP, FSDP's param_dtype), and LoRA's frozen base is
/// loaded in 16 bits (PEFT), so the key would not act.
void check_autocast(const Scenario& s, const ScenarioSource& w) {
  const std::string at = "/training/mixed_precision";
  const TrainingSpec& t = s.training;
  const ParallelLayout& l = s.strategy.layout;
  if (t.precision != Precision::bf16_mixed && t.precision != Precision::fp16_mixed)
    throw InputError(w.file, at,
                     fmt::format("autocast casts to 16 bits: it needs training.precision bf16_mixed or fp16_mixed, "
                                 "got {}",
                                 name(t.precision)));
  if (l.dp_sharding != Strategy::ddp || l.tp > 1 || l.pp > 1 || l.cp > 1 || l.ep > 1)
    throw InputError(w.file, at,
                     "autocast over fp32 parameters is modelled for strategy ddp without tp, pp, cp or ep "
                     "(ZeRO, FSDP's mixed precision and Megatron keep 16-bit parameters: use master_weights)");
  if (t.lora)
    throw InputError(w.file, at,
                     "LoRA's frozen base is loaded in 16 bits (PEFT), so autocast has no fp32 weights to cast: use "
                     "master_weights");
  if (s.model.moe) throw InputError(w.file, at, "autocast is modelled for dense models");
  if (t.kernel_profile == KernelProfile::fused)
    throw InputError(w.file, at, "the fused kernel profile (Transformer Engine, Megatron) keeps 16-bit parameters");
  if (t.grad_accumulation != GradAccumulation::autograd)
    throw InputError(w.file, "/training/grad_accumulation",
                     "autocast's fp32 gradients are added up by autograd; fused and bf16_optimizer keep 16-bit "
                     "parameters");
  if (s.strategy.reduce_dtype_given && !s.strategy.reduce_fp32)
    throw InputError(w.file, w.strategy + "/reduce_dtype",
                     "the gradients of autocast's fp32 parameters are fp32 and DDP reduces them so: remove "
                     "reduce_dtype or set it to fp32");
}

/// training.recompute_modules: under selective recompute only, each module one the model has.
void check_recompute_modules(const Scenario& s, const ScenarioSource& w) {
  const std::string at = "/training/recompute_modules";
  const RecomputeModules& m = s.training.recompute_modules;
  if (s.training.recompute != Recompute::selective)
    throw InputError(w.file, at,
                     fmt::format("modules are recomputed under training.recompute \"selective\", not \"{}\"",
                                 name(s.training.recompute)));
  if (m == RecomputeModules{false})
    throw InputError(w.file, at, "expected at least one module (selective recompute of nothing is \"none\")");
  if (m.mla_up_proj && !s.model.mla)
    throw InputError(
        w.file, at,
        "mla_up_proj recomputes multi-head latent attention's up-projections: " + s.model.name + " has no \"mla\"");
  if (m.moe_act && !s.model.moe)
    throw InputError(w.file, at, "moe_act recomputes the routed experts' activation: " + s.model.name + " is dense");
  if (m.op_sac && !(m == RecomputeModules{false, false, false, false, false, true}))
    throw InputError(w.file, at, "op_sac is torchtitan's whole policy: name it alone");
  if (m.op_sac && (s.model.moe || s.model.mla || s.model.parallel_attn_mlp || s.strategy.layout.tp > 1))
    throw InputError(w.file, at,
                     "op_sac (torchtitan's op-level checkpointing) is modelled for dense sequential layers without "
                     "MLA and without tensor parallelism");
  if (m.mlp && moe_layer_share(s.model) >= 1.0)
    throw InputError(w.file, at, "mlp recomputes the dense MLP: every layer of " + s.model.name + " is a MoE layer");
}

/// training.cuda_graphs: "full_iteration" alone; the MoE captures for a MoE model, "mlp" for
/// a model with dense MLPs.
void check_cuda_graphs(const Scenario& s, const ScenarioSource& w) {
  const std::string at = "/training/cuda_graphs";
  const CudaGraphs& g = s.training.cuda_graphs;
  if (g.full_iteration && !(g == CudaGraphs{true}))
    throw InputError(w.file, at, "full_iteration captures the whole step: name it alone");
  if ((g.moe_router || g.moe_preprocess || g.moe) && !s.model.moe)
    throw InputError(w.file, at,
                     "moe_router, moe_preprocess and moe capture parts of MoE layers: " + s.model.name + " is dense");
  if (g.mlp && moe_layer_share(s.model) >= 1.0)
    throw InputError(w.file, at, "mlp captures the dense MLP: every layer of " + s.model.name + " is a MoE layer");
}

void check_training(const Scenario& s, const ScenarioSource& w) {
  const TrainingSpec& t = s.training;
  check_count(t.micro_batch, 1, limits::kMaxMicroBatch, w.file, w.micro_batch, "sequences per GPU per micro-step");
  check_count(t.grad_accum, 1, limits::kMaxGradAccum, w.file, w.grad_accum, "micro-steps per optimizer step");
  check_count(t.seq_len, 1, limits::kMaxSeqLen, w.file, w.seq_len, "tokens per sequence");
  if (s.model.positional == Positional::learned && t.seq_len > s.model.max_positions)
    throw InputError(w.file, w.seq_len,
                     fmt::format("expected at most {} (the learned position table of {}), got {}",
                                 s.model.max_positions, s.model.name, t.seq_len));
  if (t.lora) check_lora(*t.lora, s.model, w);
  if (t.autocast) check_autocast(s, w);
  if (t.recompute_modules_given) check_recompute_modules(s, w);
  check_cuda_graphs(s, w);
}

/// Prefetch depth within the model; a gradient bucket large enough that one step has at
/// most kMaxBucketsPerStep buckets (each is a simulated collective). PyTorch accepts any
/// bucket_cap_mb, so the count is bounded, not the size. Without bucket_mb the bound uses
/// the smallest default (DDP's 25 MiB; ZeRO-1/2's 5e8 elements are larger), which refuses
/// only models beyond ~1.25 T parameters in 16-bit gradients.
/// The refusal of one broken layout rule, at the key the user wrote.
InputError layout_error(LayoutRule rule, const Scenario& s, const ScenarioSource& w) {
  const ParallelLayout& l = s.strategy.layout;
  const TransformerSpec& m = s.model;
  const std::int64_t gpus = static_cast<std::int64_t>(s.hardware.nodes) * s.hardware.gpus_per_node;
  const auto at = [&](const char* key) { return w.strategy + "/" + key; };
  switch (rule) {
    case LayoutRule::degrees:
      return InputError(w.file, w.strategy, std::string(describe(rule)));
    case LayoutRule::divides_gpus:
      if (l.cp > 1)
        return InputError(
            w.file, at("cp"),
            fmt::format("expected tp x cp x pp ({} x {} x {}) to divide the {} GPUs", l.tp, l.cp, l.pp, gpus));
      return InputError(w.file, at(l.pp > 1 ? "pp" : "tp"),
                        fmt::format("expected tp x pp ({} x {}) to divide the {} GPUs", l.tp, l.pp, gpus));
    case LayoutRule::tp_placement: {
      const int gpn = s.hardware.gpus_per_node;
      return InputError(w.file, at("tp"),
                        fmt::format("expected a divisor of the {} GPUs per node, or whole nodes (a multiple of "
                                    "{} dividing the {} GPUs): tensor-parallel groups fill nodes in Megatron "
                                    "order",
                                    gpn, gpn, gpus));
    }
    case LayoutRule::tp_model:
      return InputError(w.file, at("tp"),
                        fmt::format("expected a divisor of the heads ({}), KV heads ({}) and MLP width ({})", m.heads,
                                    m.kv_heads, m.ffn_hidden));
    case LayoutRule::sp_needs_tp:
      return InputError(w.file, at("sp"), "sequence parallelism needs tp >= 2");
    case LayoutRule::sp_sequence:
      return InputError(w.file, at("sp"),
                        fmt::format("sequence parallelism splits the sequence: tp {} must divide seq_len {}", l.tp,
                                    s.training.seq_len));
    case LayoutRule::cp_sequence: {
      const bool causal = cp_sequence_chunks(m, l.cp) != l.cp;
      return InputError(
          w.file, at("cp"),
          fmt::format("expected {} to divide seq_len {}: {}", causal ? "2 x cp" : "cp", s.training.seq_len,
                      causal ? "causal attention is split into 2·cp chunks for load balance "
                               "(Megatron-LM context parallelism)"
                             : "each rank holds s/cp tokens"));
    }
    case LayoutRule::cp_attention:
      return InputError(w.file, at("cp"),
                        "context parallelism runs on a flash-class attention kernel; set training.flash_attention");
    case LayoutRule::vpp_pipeline:
      return InputError(w.file, at("vpp"), "model chunks need a pipeline (pp >= 2)");
    case LayoutRule::pipeline_layers:
      return InputError(
          w.file, at("pp"),
          fmt::format("expected at most {} stages x chunks: the model has {} layers", m.layers, m.layers));
    case LayoutRule::pipeline_strategy:
      return InputError(w.file, at("name"),
                        "a pipeline runs ddp or zero1 within each stage (Megatron's distributed optimizer is zero1; "
                        "ZeRO-2/3 and FSDP do not pipeline)");
    case LayoutRule::interleaved_vpp:
      return InputError(w.file, at("vpp"), "the interleaved schedule and vpp >= 2 go together");
    case LayoutRule::interleaved_groups:
      return InputError(w.file, w.grad_accum,
                        fmt::format("the interleaved schedule runs micro-batches in groups of pp = {}: grad_accum "
                                    "must be a multiple",
                                    l.pp));
    case LayoutRule::ep_model:
      return InputError(w.file, at("ep"), "model \"" + m.name + "\" has no experts (no \"moe\")");
    case LayoutRule::ep_experts:
      return InputError(w.file, at("ep"),
                        fmt::format("expected a divisor of the {} experts, got {}", m.moe ? m.moe->experts : 0, l.ep));
    case LayoutRule::ep_ranks: {
      const std::int64_t ranks = gpus / l.pp;
      return InputError(
          w.file, at("ep"),
          fmt::format("expected a divisor of the {} tensor x context x data-parallel ranks of a stage "
                      "({} GPUs / pp {}), got {}: expert-parallel groups lie inside them (Megatron-Core's "
                      "parallel folding)",
                      ranks, gpus, l.pp, l.ep));
    }
    case LayoutRule::moe_sp:
      return InputError(w.file, at("sp"),
                        fmt::format("a MoE model under tensor parallelism (tp {}) needs sequence parallelism: set "
                                    "\"sp\": true (Megatron-Core requires it with experts)",
                                    l.tp));
    case LayoutRule::mla_tp:
      return InputError(w.file, at("sp"),
                        fmt::format("an MLA model under tensor parallelism (tp {}) is modelled with sequence "
                                    "parallelism only (its down projections on each rank's own tokens): set "
                                    "\"sp\": true",
                                    l.tp));
  }
  throw std::logic_error("layout_error: unknown rule");
}

/// The overlaps of tensor parallelism and its limits: the parameter all-gather overlap
/// under zero1/2, the gradient-reduction overlap under a pipeline, one TP overlap at a
/// time, tp_comm_overlap with SP; no LoRA.
void check_tensor_parallel(const Scenario& s, const ScenarioSource& w) {
  const StrategySpec& st = s.strategy;
  const ParallelLayout& l = st.layout;
  if (st.overlap_param_gather && l.dp_sharding != Strategy::zero1 && l.dp_sharding != Strategy::zero2)
    throw InputError(w.file, w.strategy + "/overlap_param_gather",
                     fmt::format("the parameter all-gather overlap needs zero1 or zero2 (Megatron-Core's distributed "
                                 "optimizer), not {}",
                                 name(l.dp_sharding)));
  if (st.overlap_grad_reduce && l.pp < 2)
    throw InputError(w.file, w.strategy + "/overlap_grad_reduce",
                     "the gradient-reduction overlap applies under pipeline parallelism (pp >= 2): without a "
                     "pipeline DDP and ZeRO already reduce during the backward");
  if (st.tp_backward_overlap && (l.tp < 2 || st.tp_comm_overlap))
    throw InputError(w.file, w.strategy + "/tp_backward_overlap",
                     l.tp < 2
                         ? "the backward's TP overlap needs tensor parallelism (tp >= 2)"
                         : "tp_comm_overlap already runs the backward's TP collectives beside their GEMMs; set one");
  if (st.sp_keep_gathered && (!l.sp || st.tp_comm_overlap || st.tp_backward_overlap))
    throw InputError(w.file, w.strategy + "/sp_keep_gathered",
                     !l.sp ? "keeping the all-gathered GEMM inputs needs sequence parallelism (\"sp\": true)"
                           : "tp_comm_overlap and tp_backward_overlap re-gather the saved input in the backward, as "
                             "Megatron does; sp_keep_gathered is nanotron's way: set one");
  if (st.tp_comm_overlap && !l.sp)
    throw InputError(w.file, w.strategy + "/tp_comm_overlap",
                     "TP communication overlap needs sequence parallelism (\"sp\": true, and tp >= 2), as "
                     "Megatron-Core's --tp-comm-overlap does");
  if (l.tp > 1 && s.training.lora)
    throw InputError(w.file, w.strategy + "/tp", "LoRA under tensor parallelism is not modelled yet");
}

/// What a pipeline cannot take yet: the balanced split with model chunks, stragglers, LoRA.
void check_pipeline(const Scenario& s, const ScenarioSource& w) {
  const StrategySpec& st = s.strategy;
  if (st.layout.pp == 1) return;
  if (st.pp_split == StageSplit::balanced && st.layout.vpp > 1)
    throw InputError(w.file, w.strategy + "/pp_split", "the balanced split places one chunk per stage: vpp must be 1");
  if (!s.hardware.stragglers.empty())
    throw InputError(w.file, "/hardware/stragglers", "stragglers with a pipeline are not modelled yet");
  if (s.training.lora) throw InputError(w.file, w.strategy + "/pp", "LoRA with a pipeline is not modelled yet");
}

/// cp_comm only with cp > 1; no stragglers or LoRA with context parallelism yet.
void check_context_parallel(const Scenario& s, const ScenarioSource& w) {
  const StrategySpec& st = s.strategy;
  if (st.layout.cp == 1) {
    if (st.cp_comm != CpCommKind::ring)
      throw InputError(w.file, w.strategy + "/cp_comm", "a context-parallel exchange needs cp >= 2");
    return;
  }
  if (!s.hardware.stragglers.empty())
    throw InputError(w.file, "/hardware/stragglers", "stragglers with context parallelism are not modelled yet");
  if (s.training.lora)
    throw InputError(w.file, w.strategy + "/cp", "LoRA with context parallelism is not modelled yet");
}

/// The MoE keys only for a MoE model; the shared-expert overlap with shared experts and EP;
/// no LoRA on MoE and MLA models.
void check_expert_parallel(const Scenario& s, const ScenarioSource& w) {
  const StrategySpec& st = s.strategy;
  const TransformerSpec& m = s.model;
  if (!m.moe) {
    const std::string no_experts = "model \"" + m.name + "\" has no experts (no \"moe\")";
    if (st.moe_imbalance != 1.0) throw InputError(w.file, w.strategy + "/moe_imbalance", no_experts);
    if (st.moe_capacity_factor != 1.0) throw InputError(w.file, w.strategy + "/moe_capacity_factor", no_experts);
    if (st.moe_shared_expert_overlap) throw InputError(w.file, w.strategy + "/moe_shared_expert_overlap", no_experts);
    if (st.moe_a2a_overlap) throw InputError(w.file, w.strategy + "/moe_a2a_overlap", no_experts);
    if (st.moe_dispatcher != MoeDispatcher::alltoall)
      throw InputError(w.file, w.strategy + "/moe_dispatcher", no_experts);
  } else if (st.moe_shared_expert_overlap && (m.moe->shared_experts == 0 || st.layout.ep == 1)) {
    throw InputError(
        w.file, w.strategy + "/moe_shared_expert_overlap",
        "the overlap hides the all-to-alls behind the shared experts: it needs shared experts and ep >= 2");
  }
  if (m.moe && st.moe_a2a_overlap) {  // Megatron-Core's TransformerConfig checks (core_v0.17.0)
    const std::string at = w.strategy + "/moe_a2a_overlap";
    if (st.layout.ep == 1) throw InputError(w.file, at, "the all-to-all overlap needs expert parallelism (ep >= 2)");
    if (st.moe_shared_expert_overlap)
      throw InputError(w.file, at, "the all-to-all overlap replaces moe_shared_expert_overlap: set one of the two");
    if (s.training.recompute == Recompute::full)
      throw InputError(w.file, at, "the all-to-all overlap needs recompute other than \"full\"");
    if (st.layout.pp > 1 && st.layout.vpp < 2)
      throw InputError(w.file, at, "the all-to-all overlap under a pipeline needs the interleaved schedule (vpp >= 2)");
  }
  if ((m.moe || m.mla) && s.training.lora)
    throw InputError(w.file, "/training/lora", "LoRA on MoE and MLA models is not modelled yet");
}

/// CPU offload: a strategy that offloads it (model/offload.hpp offload_supported), a box
/// whose host is in the catalog, no pipeline yet; delayed_update only with the optimizer's.
void check_offload(const Scenario& s, const ScenarioSource& w) {
  const StrategySpec& st = s.strategy;
  const std::string at = w.strategy + "/offload";
  if (st.offload == OffloadKind::none) {
    if (st.delayed_update)
      throw InputError(w.file, w.strategy + "/delayed_update", "the delayed parameter update needs offload: optimizer");
    return;
  }
  if (!offload_supported(st.offload, st.layout.dp_sharding))
    throw InputError(w.file, at,
                     fmt::format("{} offload with {}: the optimizer offloads with zero1/2/3 (DeepSpeed "
                                 "offload_optimizer), parameters with zero3 and FSDP's sharded modes",
                                 name(st.offload), name(st.layout.dp_sharding)));
  if (st.delayed_update && st.offload != OffloadKind::optimizer)
    throw InputError(w.file, w.strategy + "/delayed_update",
                     "the delayed parameter update is ZeRO-Offload's, with "
                     "offload: optimizer");
  const BoxSpec* box = find_box(s.hardware.cluster.box);
  if (!box || !box->host)
    throw InputError(w.file, at,
                     fmt::format("the box {} has no host (CPU, memory bandwidth) in the catalog; offload "
                                 "needs one",
                                 s.hardware.cluster.box));
  if (st.layout.pp > 1) throw InputError(w.file, at, "offload with a pipeline is not modelled yet");
}

void check_strategy(const Scenario& s, const ScenarioSource& w) {
  const std::vector<LayoutRule> broken = layout_violations(s.strategy.layout, s.model, layout_context(s));
  if (!broken.empty()) throw layout_error(broken.front(), s, w);
  check_tensor_parallel(s, w);
  check_pipeline(s, w);
  check_context_parallel(s, w);
  check_expert_parallel(s, w);
  check_offload(s, w);
  if (s.strategy.fp8_all_gather &&
      (s.training.precision != Precision::fp8_mixed || !shards_parameters(s.strategy.layout.dp_sharding)))
    throw InputError(w.file, w.strategy + "/fp8_all_gather",
                     "the fp8 all-gather needs training.precision fp8_mixed and "
                     "parameters sharded (zero3, fsdp_full_shard, "
                     "fsdp_hybrid_shard)");
  const StrategySpec& st = s.strategy;
  check_count(st.prefetch_layers, 0, s.model.layers, w.file, w.strategy + "/prefetch_layers",
              "layers gathered ahead, at most the model's layers");
  const std::string bucket = w.strategy + "/bucket_mb";
  const Strategy kind = st.layout.dp_sharding;
  if (is_fsdp(kind) && st.bucket_given)
    throw InputError(w.file, bucket,
                     "FSDP reduce-scatters each wrapped unit's gradients as one flat tensor and has no gradient "
                     "bucket; remove bucket_mb (it is for ddp and zero1/2/3)");
  if (!std::isfinite(st.bucket_bytes) || !(st.bucket_bytes > 0))
    throw InputError(w.file, bucket,
                     fmt::format("expected a finite bucket size > 0 MiB, got {} MiB", st.bucket_bytes / kBytesPerMiB));
  const double trainable =
      static_cast<double>(s.training.lora ? lora_parameter_count(s.model, *s.training.lora) : parameter_count(s.model));
  const double grad_bytes = trainable * working_bytes(s.training.precision);
  const double buckets = std::ceil(grad_bytes / st.bucket_bytes);
  if (buckets > static_cast<double>(limits::kMaxBucketsPerStep))
    throw InputError(
        w.file, bucket,
        fmt::format("expected a bucket of at least {:.4g} MiB: {:.4g} MiB of gradients in buckets of {:.4g} MiB "
                    "make {:.0f} buckets per step, more than {}",
                    grad_bytes / static_cast<double>(limits::kMaxBucketsPerStep) / kBytesPerMiB,
                    grad_bytes / kBytesPerMiB, st.bucket_bytes / kBytesPerMiB, buckets, limits::kMaxBucketsPerStep));
}

/// GPUs per node, nodes and their product within bounds; straggler groups of 1..nodes-1
/// nodes in all, speeds in [kMinSpeedRatio, kMaxSpeedRatio].
void check_hardware(const HardwareChoice& h, const ScenarioSource& w) {
  check_count(h.gpus_per_node, 1, limits::kMaxGpusPerNode, w.file, w.gpus_per_node, "GPUs per node");
  check_count(h.nodes, 1, limits::kMaxNodes, w.file, w.nodes, "nodes");
  const std::int64_t gpus = static_cast<std::int64_t>(h.nodes) * h.gpus_per_node;
  check_count(gpus, 1, limits::kMaxGpus, w.file, w.gpus, "GPUs in all");
  std::int64_t straggling = 0;
  for (std::size_t i = 0; i < h.stragglers.size(); ++i) {
    const StragglerSpec& st = h.stragglers[i];
    const std::string path = w.stragglers + "/" + std::to_string(i);
    check_count(st.nodes, 1, h.nodes - 1, w.file, path + "/nodes",
                fmt::format("fewer than the {} nodes in use: the rest are the typical ranks", h.nodes));
    straggling += st.nodes;
    if (straggling >= h.nodes)
      throw InputError(
          w.file, path + "/nodes",
          fmt::format("expected the straggler groups to cover fewer than the {} nodes in use (the rest are "
                      "the typical ranks), got {} in all",
                      h.nodes, straggling));
    const std::string why = "speed relative to the catalog part";
    check_number(st.compute_speed, limits::kMinSpeedRatio, limits::kMaxSpeedRatio, w.file, path + "/compute_speed",
                 why);
    check_number(st.link_speed, limits::kMinSpeedRatio, limits::kMaxSpeedRatio, w.file, path + "/link_speed", why);
  }
}

/// Tokens per step far below 2^53 (so every token count held in a double is exact), and a
/// finite, bounded data set and price.
void check_sizes(const Scenario& s, const ScenarioSource& w) {
  const double tokens_per_step = static_cast<double>(s.hardware.gpus()) * static_cast<double>(s.training.micro_batch) *
                                 static_cast<double>(s.training.grad_accum) * static_cast<double>(s.training.seq_len);
  if (tokens_per_step > static_cast<double>(limits::kMaxTokensPerStep))
    throw InputError(w.file, w.micro_batch,
                     fmt::format("expected at most {} tokens per optimizer step (GPUs x micro_batch x grad_accum x "
                                 "seq_len), got {} x {} x {} x {} = {:.4g}",
                                 limits::kMaxTokensPerStep, s.hardware.gpus(), s.training.micro_batch,
                                 s.training.grad_accum, s.training.seq_len, tokens_per_step));
  if (s.dataset.tokens)
    check_number(*s.dataset.tokens, 1, limits::kMaxDatasetTokens, w.file, w.dataset + "/tokens", "tokens per epoch");
  if (s.dataset.samples)
    check_number(*s.dataset.samples, 1, limits::kMaxDatasetSamples, w.file, w.dataset + "/samples",
                 "sequences per epoch");
  if (s.price_per_gpu_hour_usd)
    check_number(*s.price_per_gpu_hour_usd, 1e-6, limits::kMaxPricePerGpuHourUsd, w.file, w.price, "USD per GPU-hour");
}

/// A precision the GPU computes in, and a named collective algorithm that can run every
/// collective the strategy issues on the hardware (NVLS only on third-generation NVSwitch).
void check_runnable(const Scenario& s, const ScenarioSource& w) {
  const BoxSpec* box = find_box(s.hardware.cluster.box);
  if (!box)
    throw std::logic_error("scenario " + s.name + ": box \"" + s.hardware.cluster.box + "\" is not in the catalog");
  const GpuSpec& gpu = *find_gpu(box->gpu);
  const Dtype d = gemm_dtype(s.training.precision);
  if (!gpu.supports(d))
    throw InputError(w.file, w.precision,
                     "precision " + std::string(name(s.training.precision)) + " needs " + std::string(name(d)) +
                         " arithmetic, which the " + gpu.name + " does not support");
  if (s.hardware.gpus_per_node > box->gpus)
    throw InputError(
        w.file, w.gpus_per_node,
        fmt::format("expected at most the {} GPUs of one {}, got {}", box->gpus, box->name, s.hardware.gpus_per_node));
  if (s.strategy.algorithm == "auto") return;
  // One node's graph and the network switches (Topology::build): its cost does not grow
  // with the cluster's node count, so checking here costs no second full-cluster build.
  const CommFabric fabric = Topology::build(s.hardware.cluster).fabric(s.hardware.nodes, s.hardware.gpus_per_node);
  if (s.strategy.algorithm == "nvls" && !fabric.nvls)
    throw InputError(w.file, w.algorithm,
                     "NVLS needs third-generation NVSwitch (NVLink SHARP); " + s.hardware.cluster.box + " has none");
  for (const auto& [c, scope] : collectives_issued(s.strategy.layout.dp_sharding)) {
    if (scope == FabricScope::inter_node && !fabric.inter) continue;
    const std::string why = algorithm_unavailable(c, restrict_fabric(fabric, scope), s.strategy.algorithm);
    if (!why.empty())
      throw InputError(
          w.file, w.algorithm,
          fmt::format("{} issues {} ({}), which \"{}\" cannot run here: {}; use \"auto\" or another "
                      "algorithm (`stepcast catalog algorithms`)",
                      name(s.strategy.layout.dp_sharding), name(c), name(scope), s.strategy.algorithm, why));
  }
}

}  // namespace

std::vector<std::pair<Collective, FabricScope>> collectives_issued(Strategy s) {
  switch (s) {
    case Strategy::ddp:
    case Strategy::fsdp_no_shard:
      return {{Collective::all_reduce, FabricScope::all}};
    case Strategy::fsdp_hybrid_shard:
      return {{Collective::all_gather, FabricScope::intra_node},
              {Collective::reduce_scatter, FabricScope::intra_node},
              {Collective::all_reduce, FabricScope::inter_node}};
    case Strategy::zero1:
    case Strategy::zero2:
    case Strategy::zero3:
    case Strategy::fsdp_full_shard:
    case Strategy::fsdp_shard_grad_op:
      return {{Collective::all_gather, FabricScope::all}, {Collective::reduce_scatter, FabricScope::all}};
  }
  throw std::logic_error("collectives_issued: unknown strategy");
}

LayoutContext layout_context(const Scenario& s) {
  LayoutContext c;
  c.gpus = static_cast<std::int64_t>(s.hardware.nodes) * s.hardware.gpus_per_node;
  c.gpus_per_node = s.hardware.gpus_per_node;
  c.nodes = s.hardware.nodes;
  c.seq_len = s.training.seq_len;
  c.micro_batches = s.training.grad_accum;
  c.flash_attention = s.training.flash_attention;
  return c;
}

int data_parallel_degree(const Scenario& s) {
  const ParallelLayout& l = s.strategy.layout;
  return static_cast<int>(static_cast<std::int64_t>(s.hardware.nodes) * s.hardware.gpus_per_node /
                          (static_cast<std::int64_t>(l.tp) * l.pp * l.cp));
}

std::string ScenarioSource::model_field(const std::string& key) const {
  return model_inline ? model + "/" + key : model;
}

void check_scenario(const Scenario& s, const ScenarioSource& where) {
  check_model(s.model, where);
  check_training(s, where);
  check_hardware(s.hardware, where);
  check_strategy(s, where);
  check_sizes(s, where);
  check_runnable(s, where);
}

Scenario load_scenario(const std::filesystem::path& path, const ReadOptions& options) {
  return parse_root(JsonDoc::load(path), options, scenario_schema());
}

Scenario parse_scenario(const std::string& json_text, const std::string& file_name, const ReadOptions& options) {
  return parse_root(JsonDoc::parse(json_text, file_name), options, scenario_schema());
}

Scenario parse_scenario(const std::string& json_text, const std::string& file_name, const ReadOptions& options,
                        const Schema& schema) {
  return parse_root(JsonDoc::parse(json_text, file_name), options, schema);
}

namespace {

Scenario resized(const Scenario& s, int gpus) {
  const BoxSpec& box = *find_box(s.hardware.cluster.box);
  Scenario out = s;
  int straggling = 0;
  for (const StragglerSpec& st : s.hardware.stragglers) straggling += st.nodes;
  if (straggling > 0 && gpus <= straggling * box.gpus)
    throw std::invalid_argument(std::to_string(gpus) + " GPUs fill at most " +
                                std::to_string((gpus + box.gpus - 1) / box.gpus) +
                                " node(s), but the scenario's straggler groups cover " + std::to_string(straggling) +
                                "; more nodes are needed for the typical ranks");
  if (gpus <= box.gpus) {
    out.hardware.nodes = 1;
    out.hardware.gpus_per_node = gpus;
    out.strategy.layout.dp = data_parallel_degree(out);
    return out;
  }
  if (gpus % box.gpus != 0)
    throw std::invalid_argument(std::to_string(gpus) + " GPUs is not a multiple of the " + std::to_string(box.gpus) +
                                " GPUs per node of " + box.name);
  if (!s.hardware.cluster.network) {
    if (box.nics < 1)
      throw std::invalid_argument(std::to_string(gpus) + " GPUs need more than one " + box.name +
                                  ", and neither the scenario nor the box has a network between nodes");
    // The reader's default for several nodes (default_network).
    out.hardware.cluster.network = default_network(box, gpus / box.gpus);
    out.defaults.push_back(default_network_assumption(box, *out.hardware.cluster.network));
  }
  out.hardware.nodes = gpus / box.gpus;
  out.hardware.gpus_per_node = box.gpus;
  out.hardware.cluster.nodes = std::max(out.hardware.cluster.nodes, out.hardware.nodes);
  out.strategy.layout.dp = data_parallel_degree(out);
  return out;
}

}  // namespace

std::int64_t global_batch_sequences(const Scenario& s) {
  return s.training.micro_batch * s.training.grad_accum * s.strategy.layout.dp;
}

Scenario with_gpus_at_global_batch(const Scenario& s, int gpus) {
  if (gpus < 1 || gpus > limits::kMaxGpus)
    throw std::invalid_argument(fmt::format("GPU count must be in [1, {}], got {}", limits::kMaxGpus, gpus));
  const std::int64_t global = global_batch_sequences(s);
  Scenario out = resized(s, gpus);
  const std::int64_t dp = out.strategy.layout.dp;
  if (dp < 1 || global % dp != 0)
    throw std::invalid_argument(
        fmt::format("the global batch of {} sequences does not split over {} data-parallel ranks", global, dp));
  const std::int64_t share = global / dp;
  std::int64_t mb = std::min(s.training.micro_batch, share);
  while (share % mb != 0) --mb;
  out.training.micro_batch = mb;
  out.training.grad_accum = share / mb;
  return with_gpus(out, gpus);
}

Scenario with_gpus(const Scenario& s, int gpus) {
  if (gpus < 1 || gpus > limits::kMaxGpus)
    throw std::invalid_argument(fmt::format("GPU count must be in [1, {}], got {}", limits::kMaxGpus, gpus));
  Scenario out = resized(s, gpus);
  ScenarioSource where;
  where.file = s.file;
  try {
    check_scenario(out, where);
  } catch (const InputError& e) {
    throw std::invalid_argument(e.what());
  }
  return out;
}

}  // namespace stepcast
