#include "simulator/scenario.hpp"

#include "base/json_input.hpp"
#include "model/collective.hpp"
#include "topologies/hardware_file.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <stdexcept>

namespace stepcast {

namespace {

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
  return parse_transformer(obj);
}

TrainingSpec parse_training(JsonObject& obj, const TransformerSpec& model) {
  TrainingSpec t;
  t.precision = parse_name(obj, "precision", parse_precision);
  t.optimizer = parse_name(obj, "optimizer", parse_optimizer);
  t.micro_batch = obj.integer("micro_batch");
  t.grad_accum = obj.integer("grad_accum");
  t.seq_len = obj.integer("seq_len");
  t.recompute = parse_name(obj, "recompute", parse_recompute);
  t.flash_attention = obj.boolean("flash_attention");
  if (auto lora = obj.optional_object("lora")) {
    LoraSpec l;
    l.rank = lora->integer("rank");
    JsonArray targets = lora->array("targets");
    if (targets.size() == 0) throw targets.error(0, "expected at least one target projection");
    static const std::vector<std::string> known{"q", "k", "v", "o", "gate", "up", "down"};
    for (std::size_t i = 0; i < targets.size(); ++i) {
      std::string target = targets.string(i);
      if (std::find(known.begin(), known.end(), target) == known.end())
        throw targets.error(i, "unknown LoRA target \"" + target + "\"; expected one of q, k, v, o, gate, up, down");
      if (target == "gate" && !model.gated_mlp)
        throw targets.error(i, "LoRA target \"gate\" needs a gated MLP; " + model.name + " has none");
      l.targets.push_back(target);
    }
    if (l.rank > model.hidden) throw lora->error("rank", "expected a rank below the hidden size " + std::to_string(model.hidden));
    lora->finish();
    t.lora = l;
  }
  if (model.kind == ModelKind::decoder && model.positional == Positional::learned && t.seq_len > model.max_positions)
    throw obj.error("seq_len", "expected at most " + std::to_string(model.max_positions) + " (the learned position table of " +
                                   model.name + ")");
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
    if (auto mb = obj.optional_positive("bucket_mb")) s.bucket_bytes = *mb * 1e6, s.bucket_given = true;
    if (auto p = obj.optional_integer("prefetch_layers", 0)) s.prefetch_layers = static_cast<int>(*p);
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
    h.cluster.nodes = static_cast<int>(obj.integer("nodes"));
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
  const std::int64_t gpus = obj.integer("gpus");
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
    int straggling = 0;
    for (std::size_t i = 0; i < list->size(); ++i) {
      JsonObject o = list->object(i);
      StragglerSpec st;
      st.name = o.string("name");
      st.nodes = static_cast<int>(o.integer("nodes", 1));
      st.compute_speed = o.positive("compute_speed");
      st.link_speed = o.positive("link_speed");
      if (st.compute_speed > 10) throw o.error("compute_speed", "expected a speed ratio in (0, 10]");
      if (st.link_speed > 10) throw o.error("link_speed", "expected a speed ratio in (0, 10]");
      o.finish();
      straggling += st.nodes;
      if (straggling >= h.nodes)
        throw o.error("nodes", "expected the straggler groups to cover fewer than the " + std::to_string(h.nodes) +
                                   " nodes in use (the rest are the typical ranks)");
      h.stragglers.push_back(st);
    }
  }
  obj.finish();
  return h;
}

void check_runnable(JsonObject& top, const Scenario& s) {
  const GpuSpec& gpu = *find_gpu(find_box(s.hardware.cluster.box)->gpu);
  const Dtype d = gemm_dtype(s.training.precision);
  if (!gpu.supports(d))
    throw InputError(top.file(), "/training/precision",
                     "precision " + std::string(name(s.training.precision)) + " needs " + std::string(name(d)) +
                         " arithmetic, which the " + gpu.name + " does not support");
  if (s.strategy.algorithm == "nvls") {
    Topology t = Topology::build(s.hardware.cluster);
    if (!t.fabric(s.hardware.nodes, s.hardware.gpus_per_node).nvls)
      throw InputError(top.file(), "/strategy/algorithm", "NVLS needs third-generation NVSwitch (NVLink SHARP); " +
                                                              s.hardware.cluster.box + " has none");
  }
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
    s.training = parse_training(t, s.model);
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
  check_runnable(top, s);
  return s;
}

}  // namespace

Scenario load_scenario(const std::filesystem::path& path) { return parse_root(JsonDoc::load(path)); }

Scenario parse_scenario(const std::string& json_text, const std::string& file_name) {
  return parse_root(JsonDoc::parse(json_text, file_name));
}

Scenario with_gpus(const Scenario& s, int gpus) {
  if (gpus < 1) throw std::invalid_argument("GPU count must be >= 1, got " + std::to_string(gpus));
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

}  // namespace stepcast
