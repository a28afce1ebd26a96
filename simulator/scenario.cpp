#include "simulator/scenario.hpp"

#include "base/json_input.hpp"
#include "base/limits.hpp"
#include "model/collective.hpp"
#include "model/hf_config.hpp"
#include "topologies/hardware_file.hpp"

#include <fmt/format.h>
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

/// Wraps a parser that throws std::invalid_argument into an InputError at `key`.
template <typename F>
auto parse_name(JsonObject& obj, const std::string& key, F parse) {
  std::string text = obj.string(key);
  try {
    return parse(text);
  } catch (const std::invalid_argument& e) {
    throw obj.error(key, e.what());
  }
}

TransformerSpec parse_model(JsonObject& top) {
  const nlohmann::json& raw = top.raw("model");
  if (raw.is_string()) {
    const std::string name = raw.get<std::string>();
    const TransformerSpec* spec = find_model(name);
    if (!spec) throw top.error("model", "unknown model \"" + name + "\" (see `stepcast catalog models`)");
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
    return load_hf_config(path);
  }
  return parse_transformer(obj);
}

TrainingSpec parse_training(JsonObject& obj) {
  TrainingSpec t;
  t.precision = parse_name(obj, "precision", parse_precision);
  t.optimizer = parse_name(obj, "optimizer", parse_optimizer);
  t.micro_batch = obj.integer("micro_batch", 1, limits::kMaxMicroBatch);
  t.grad_accum = obj.integer("grad_accum", 1, limits::kMaxGradAccum);
  t.seq_len = obj.integer("seq_len", 1, limits::kMaxSeqLen);
  t.recompute = parse_name(obj, "recompute", parse_recompute);
  t.flash_attention = obj.boolean("flash_attention");
  if (obj.has("attention_kernel")) {
    const AttentionKernel k = parse_name(obj, "attention_kernel", parse_attention_kernel);
    if ((k == AttentionKernel::unfused) == t.flash_attention)
      throw obj.error("attention_kernel", "contradicts flash_attention: " + std::string(name(k)) + " is " +
                                              (t.flash_attention ? "not a fused kernel" : "a fused kernel"));
    t.attention_kernel = k;
  }
  if (obj.has("kernels")) t.kernel_profile = parse_name(obj, "kernels", parse_kernel_profile);
  if (obj.has("fused_loss")) t.fused_loss = obj.boolean("fused_loss");
  if (obj.has("metric_loss_passes")) t.metric_loss_passes = obj.int32("metric_loss_passes", 0, 16);
  if (auto lora = obj.optional_object("lora")) {
    LoraSpec l;
    l.rank = lora->integer("rank", 1, limits::kMaxHidden);
    JsonArray targets = lora->array("targets");
    for (std::size_t i = 0; i < targets.size(); ++i) l.targets.push_back(targets.string(i));
    lora->finish();
    t.lora = l;
  }
  obj.finish();
  return t;
}

StrategySpec parse_strategy_spec(JsonObject& top) {
  StrategySpec s;
  const nlohmann::json& raw = top.raw("strategy");
  if (raw.is_string()) {
    try {
      s.kind = parse_strategy(raw.get<std::string>());
    } catch (const std::invalid_argument& e) {
      throw top.error("strategy", e.what());
    }
  } else {
    if (!raw.is_object()) throw top.error("strategy", "expected a strategy name or an object with \"name\"");
    JsonObject obj(raw, top.file(), top.path_of("strategy"));
    s.kind = parse_name(obj, "name", parse_strategy);
    if (auto mb = obj.optional_positive("bucket_mb")) s.bucket_bytes = *mb * kBytesPerMiB, s.bucket_given = true;
    if (obj.has("tp")) s.tp = obj.int32("tp", 1, limits::kMaxGpusPerNode);
    if (obj.has("sp")) s.sp = obj.boolean("sp");
    if (auto r = obj.optional_string("reduce_dtype")) {
      if (*r != "fp32" && *r != "working")
        throw obj.error("reduce_dtype", "expected \"fp32\" or \"working\" (the precision's 16-bit dtype), got \"" +
                                            *r + "\"");
      s.reduce_fp32 = *r == "fp32";
    }
    if (obj.has("prefetch_layers"))
      s.prefetch_layers = obj.int32("prefetch_layers", 0, limits::kMaxLayers);
    if (auto a = obj.optional_string("algorithm")) {
      bool known = *a == "auto";
      for (const auto& info : collective_algorithms()) known = known || info.name == *a;
      if (!known) throw obj.error("algorithm", "unknown collective algorithm \"" + *a + "\" (see `stepcast catalog algorithms`)");
      s.algorithm = *a;
    }
    obj.finish();
    return s;
  }
  return s;
}

HardwareChoice parse_hardware(JsonObject& obj) {
  HardwareChoice h;
  if (obj.has("cluster")) {
    std::string name = obj.string("cluster");
    const ClusterSpec* c = find_cluster(name);
    if (!c) throw obj.error("cluster", "unknown cluster \"" + name + "\" (see `stepcast catalog clusters`)");
    h.cluster = *c;
  } else if (obj.has("box")) {
    std::string name = obj.string("box");
    if (!find_box(name)) throw obj.error("box", "unknown box \"" + name + "\" (see `stepcast catalog boxes`)");
    h.cluster.name = name;
    h.cluster.box = name;
    h.cluster.nodes = obj.int32("nodes", 1, limits::kMaxNodes);
    if (auto net = obj.optional_object("network")) {
      JsonObject wrapper = *net;
      // Reuse the cluster parser's network rules by building a cluster object around it.
      nlohmann::json cluster = {{"name", name},
                                {"box", name},
                                {"nodes", h.cluster.nodes},
                                {"network", obj.raw("network")},
                                {"source", "scenario"}};
      JsonObject cobj(cluster, obj.file(), obj.path());
      h.cluster = parse_cluster(cobj);
      (void)wrapper;
    } else if (h.cluster.nodes > 1) {
      throw obj.error("network", "missing; " + std::to_string(h.cluster.nodes) + " nodes need a network");
    }
  } else {
    throw obj.error("", "expected \"cluster\" (a catalog cluster) or \"box\" (a catalog box with \"nodes\")");
  }
  const BoxSpec& box = *find_box(h.cluster.box);
  const std::int64_t gpus = obj.integer("gpus", 1, limits::kMaxGpus);
  const std::int64_t available = static_cast<std::int64_t>(box.gpus) * h.cluster.nodes;
  if (gpus > available)
    throw obj.error("gpus", "expected at most " + std::to_string(available) + " GPUs (" + std::to_string(h.cluster.nodes) +
                                " x " + box.name + " with " + std::to_string(box.gpus) + " GPUs each), got " +
                                std::to_string(gpus));
  if (gpus > box.gpus && gpus % box.gpus != 0)
    throw obj.error("gpus", "expected a multiple of " + std::to_string(box.gpus) + " (the GPUs per node of " + box.name +
                                ") when using more than one node, got " + std::to_string(gpus));
  h.nodes = gpus > box.gpus ? static_cast<int>(gpus / box.gpus) : 1;
  h.gpus_per_node = gpus > box.gpus ? box.gpus : static_cast<int>(gpus);
  if (auto cal = obj.optional_string("calibration")) {
    std::filesystem::path path(*cal);
    if (path.is_relative()) path = std::filesystem::path(obj.file()).parent_path() / path;
    if (!std::filesystem::exists(path))
      throw obj.error("calibration", "expected a hardware file written by `stepcast fit`; " + path.string() +
                                         " does not exist");
    h.calibration = std::make_shared<const HardwareFile>(load_hardware(path));
    h.calibration_file = path.string();
    if (h.calibration->gpu != box.gpu)
      throw obj.error("calibration", "the hardware file was fitted for " + h.calibration->gpu + ", but " + box.name +
                                         " holds " + box.gpu);
  }
  if (auto list = obj.optional_array("stragglers")) {
    for (std::size_t i = 0; i < list->size(); ++i) {
      JsonObject o = list->object(i);
      StragglerSpec st;
      st.name = o.string("name");
      st.nodes = o.int32("nodes", 1, limits::kMaxNodes);
      st.compute_speed = o.positive("compute_speed");
      st.link_speed = o.positive("link_speed");
      o.finish();
      h.stragglers.push_back(st);
    }
  }
  obj.finish();
  return h;
}

Scenario parse_root(const JsonDoc& doc) {
  JsonObject top(doc.root(), doc.file(), "");
  Scenario s;
  s.file = doc.file();
  s.name = top.string("name");
  s.description = top.string("description");
  s.model = parse_model(top);
  {
    JsonObject t = top.object("training");
    s.training = parse_training(t);
  }
  s.strategy = parse_strategy_spec(top);
  {
    JsonObject h = top.object("hardware");
    s.hardware = parse_hardware(h);
  }
  {
    JsonObject d = top.object("dataset");
    s.dataset.tokens = d.optional_positive("tokens");
    s.dataset.samples = d.optional_positive("samples");
    if (s.dataset.tokens.has_value() == s.dataset.samples.has_value())
      throw d.error("", "expected exactly one of \"tokens\" or \"samples\"");
    d.finish();
  }
  s.price_per_gpu_hour_usd = top.optional_positive("price_per_gpu_hour_usd");
  if (auto m = top.optional_object("measured")) {
    MeasuredFigures f;
    f.time_per_epoch_s = m->optional_positive("time_per_epoch_s");
    f.step_time_s = m->optional_positive("step_time_s");
    f.tokens_per_s_per_gpu = m->optional_positive("tokens_per_s_per_gpu");
    f.source = m->string("source");
    m->finish();
    s.measured = f;
  }
  if (auto notes = top.optional_array("notes"))
    for (std::size_t i = 0; i < notes->size(); ++i) s.notes.push_back(notes->string(i));
  top.finish();
  ScenarioSource where;
  where.file = doc.file();
  where.model_inline = doc.root().at("model").is_object();
  check_scenario(s, where);
  return s;
}

// ---- Checking: one set of rules for every scenario, however it was built. -------------

/// Throws unless lo <= v <= hi, naming the bound and why it is there.
void check_count(std::int64_t v, std::int64_t lo, std::int64_t hi, const std::string& file, const std::string& path,
                 const std::string& why = "") {
  if (v < lo || v > hi)
    throw InputError(file, path,
                     fmt::format("expected an integer in {}..{}{}, got {}", lo, hi, why.empty() ? "" : " (" + why + ")", v));
}

/// Throws unless v is finite and lo <= v <= hi.
void check_number(double v, double lo, double hi, const std::string& file, const std::string& path,
                  const std::string& why = "") {
  if (!std::isfinite(v) || v < lo || v > hi)
    throw InputError(file, path,
                     fmt::format("expected a number in [{}, {}]{}, got {}", lo, hi, why.empty() ? "" : " (" + why + ")", v));
}

/// The model's shape: counts within base/limits.hpp, heads dividing hidden, kv_heads
/// dividing heads (head_dim = hidden / heads; a division by zero or a truncated head
/// otherwise).
void check_model(const TransformerSpec& m, const ScenarioSource& w) {
  const std::string& f = w.file;
  check_count(m.layers, 1, limits::kMaxLayers, f, w.model_field("layers"), "layers");
  check_count(m.hidden, 1, limits::kMaxHidden, f, w.model_field("hidden"), "hidden size");
  check_count(m.heads, 1, m.hidden, f, w.model_field("heads"), "attention heads, at most hidden");
  if (m.hidden % m.heads != 0)
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
      throw InputError(w.file, path, "unknown LoRA target \"" + target + "\"; expected one of q, k, v, o, gate, up, down");
    if (target == "gate" && !m.gated_mlp)
      throw InputError(w.file, path, "LoRA target \"gate\" needs a gated MLP; " + m.name + " has none");
    if (!seen.insert(target).second)
      throw InputError(w.file, path, "LoRA target \"" + target + "\" listed twice; expected each projection once");
  }
}

/// Micro-batch, accumulation and sequence length within their bounds; the sequence within
/// a learned position table; LoRA.
void check_training(const Scenario& s, const ScenarioSource& w) {
  const TrainingSpec& t = s.training;
  check_count(t.micro_batch, 1, limits::kMaxMicroBatch, w.file, w.micro_batch, "sequences per GPU per micro-step");
  check_count(t.grad_accum, 1, limits::kMaxGradAccum, w.file, w.grad_accum, "micro-steps per optimizer step");
  check_count(t.seq_len, 1, limits::kMaxSeqLen, w.file, w.seq_len, "tokens per sequence");
  if (s.model.positional == Positional::learned && t.seq_len > s.model.max_positions)
    throw InputError(w.file, w.seq_len,
                     fmt::format("expected at most {} (the learned position table of {}), got {}", s.model.max_positions,
                                 s.model.name, t.seq_len));
  if (t.lora) check_lora(*t.lora, s.model, w);
}

/// Prefetch depth within the model; a gradient bucket large enough that one step has at
/// most kMaxBucketsPerStep buckets (each is a simulated collective). PyTorch accepts any
/// bucket_cap_mb, so the count is bounded, not the size. Without bucket_mb the bound uses
/// the smallest default (DDP's 25 MiB; ZeRO-1/2's 5e8 elements are larger), which refuses
/// only models beyond ~1.25 T parameters in 16-bit gradients.
/// Tensor parallelism inside a node: t divides the node's GPUs, the heads, the KV heads and
/// the MLP width; sequence parallelism needs t >= 2 and t dividing the sequence; no LoRA.
void check_tensor_parallel(const Scenario& s, const ScenarioSource& w) {
  const StrategySpec& st = s.strategy;
  const std::string at = w.strategy + "/tp";
  const int t = st.tp;
  if (st.sp && t < 2) throw InputError(w.file, w.strategy + "/sp", "sequence parallelism needs tp >= 2");
  if (t == 1) return;
  if (s.hardware.gpus_per_node % t != 0)
    throw InputError(w.file, at, fmt::format("expected a divisor of the {} GPUs per node: tensor-parallel groups stay "
                                             "inside a node (Megatron order)", s.hardware.gpus_per_node));
  const TransformerSpec& m = s.model;
  if (m.heads % t != 0 || m.kv_heads % t != 0 || m.ffn_hidden % t != 0)
    throw InputError(w.file, at, fmt::format("expected a divisor of the heads ({}), KV heads ({}) and MLP width ({})",
                                             m.heads, m.kv_heads, m.ffn_hidden));
  if (st.sp && s.training.seq_len % t != 0)
    throw InputError(w.file, w.strategy + "/sp", fmt::format("sequence parallelism splits the sequence: tp {} must "
                                                             "divide seq_len {}", t, s.training.seq_len));
  if (s.training.lora) throw InputError(w.file, at, "LoRA under tensor parallelism is not modelled yet");
}

void check_strategy(const Scenario& s, const ScenarioSource& w) {
  check_tensor_parallel(s, w);
  const StrategySpec& st = s.strategy;
  check_count(st.prefetch_layers, 0, s.model.layers, w.file, w.strategy + "/prefetch_layers",
              "layers gathered ahead, at most the model's layers");
  const std::string bucket = w.strategy + "/bucket_mb";
  const bool fsdp = st.kind == Strategy::fsdp_full_shard || st.kind == Strategy::fsdp_shard_grad_op ||
                    st.kind == Strategy::fsdp_hybrid_shard || st.kind == Strategy::fsdp_no_shard;
  if (fsdp && st.bucket_given)
    throw InputError(w.file, bucket,
                     "FSDP reduce-scatters each wrapped unit's gradients as one flat tensor and has no gradient "
                     "bucket; remove bucket_mb (it is for ddp and zero1/2/3)");
  if (!std::isfinite(st.bucket_bytes) || !(st.bucket_bytes > 0))
    throw InputError(w.file, bucket, fmt::format("expected a finite bucket size > 0 MiB, got {} MiB", st.bucket_bytes / kBytesPerMiB));
  const double trainable = static_cast<double>(s.training.lora ? lora_parameter_count(s.model, *s.training.lora)
                                                               : parameter_count(s.model));
  const double grad_bytes = trainable * working_bytes(s.training.precision);
  const double buckets = std::ceil(grad_bytes / st.bucket_bytes);
  if (buckets > static_cast<double>(limits::kMaxBucketsPerStep))
    throw InputError(w.file, bucket,
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
      throw InputError(w.file, path + "/nodes",
                       fmt::format("expected the straggler groups to cover fewer than the {} nodes in use (the rest are "
                                   "the typical ranks), got {} in all",
                                   h.nodes, straggling));
    const std::string why = "speed relative to the catalog part";
    check_number(st.compute_speed, limits::kMinSpeedRatio, limits::kMaxSpeedRatio, w.file, path + "/compute_speed", why);
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
  if (!box) throw std::logic_error("scenario " + s.name + ": box \"" + s.hardware.cluster.box + "\" is not in the catalog");
  const GpuSpec& gpu = *find_gpu(box->gpu);
  const Dtype d = gemm_dtype(s.training.precision);
  if (!gpu.supports(d))
    throw InputError(w.file, w.precision,
                     "precision " + std::string(name(s.training.precision)) + " needs " + std::string(name(d)) +
                         " arithmetic, which the " + gpu.name + " does not support");
  if (s.hardware.gpus_per_node > box->gpus)
    throw InputError(w.file, w.gpus_per_node,
                     fmt::format("expected at most the {} GPUs of one {}, got {}", box->gpus, box->name,
                                 s.hardware.gpus_per_node));
  if (s.strategy.algorithm == "auto") return;
  const CommFabric fabric = Topology::build(s.hardware.cluster).fabric(s.hardware.nodes, s.hardware.gpus_per_node);
  if (s.strategy.algorithm == "nvls" && !fabric.nvls)
    throw InputError(w.file, w.algorithm, "NVLS needs third-generation NVSwitch (NVLink SHARP); " +
                                              s.hardware.cluster.box + " has none");
  for (const auto& [c, scope] : collectives_issued(s.strategy.kind)) {
    if (scope == FabricScope::inter_node && !fabric.inter) continue;
    const std::string why = algorithm_unavailable(c, restrict_fabric(fabric, scope), s.strategy.algorithm);
    if (!why.empty())
      throw InputError(w.file, w.algorithm,
                       fmt::format("{} issues {} ({}), which \"{}\" cannot run here: {}; use \"auto\" or another "
                                   "algorithm (`stepcast catalog algorithms`)",
                                   name(s.strategy.kind), name(c), name(scope), s.strategy.algorithm, why));
  }
}

}  // namespace

std::vector<std::pair<Collective, FabricScope>> collectives_issued(Strategy s) {
  switch (s) {
    case Strategy::ddp:
    case Strategy::fsdp_no_shard: return {{Collective::all_reduce, FabricScope::all}};
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

std::string ScenarioSource::model_field(const std::string& key) const { return model_inline ? model + "/" + key : model; }

void check_scenario(const Scenario& s, const ScenarioSource& where) {
  check_model(s.model, where);
  check_training(s, where);
  check_hardware(s.hardware, where);
  check_strategy(s, where);
  check_sizes(s, where);
  check_runnable(s, where);
}

Scenario load_scenario(const std::filesystem::path& path) { return parse_root(JsonDoc::load(path)); }

Scenario parse_scenario(const std::string& json_text, const std::string& file_name) {
  return parse_root(JsonDoc::parse(json_text, file_name));
}

namespace {

Scenario resized(const Scenario& s, int gpus) {
  const BoxSpec& box = *find_box(s.hardware.cluster.box);
  Scenario out = s;
  int straggling = 0;
  for (const StragglerSpec& st : s.hardware.stragglers) straggling += st.nodes;
  if (straggling > 0 && gpus <= straggling * box.gpus)
    throw std::invalid_argument(std::to_string(gpus) + " GPUs fill at most " + std::to_string((gpus + box.gpus - 1) / box.gpus) +
                                " node(s), but the scenario's straggler groups cover " + std::to_string(straggling) +
                                "; more nodes are needed for the typical ranks");
  if (gpus <= box.gpus) {
    out.hardware.nodes = 1;
    out.hardware.gpus_per_node = gpus;
    return out;
  }
  if (gpus % box.gpus != 0)
    throw std::invalid_argument(std::to_string(gpus) + " GPUs is not a multiple of the " + std::to_string(box.gpus) +
                                " GPUs per node of " + box.name);
  if (!s.hardware.cluster.network)
    throw std::invalid_argument(std::to_string(gpus) + " GPUs need more than one " + box.name +
                                ", and the scenario's hardware has no network between nodes");
  out.hardware.nodes = gpus / box.gpus;
  out.hardware.gpus_per_node = box.gpus;
  out.hardware.cluster.nodes = std::max(out.hardware.cluster.nodes, out.hardware.nodes);
  return out;
}

}  // namespace

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
