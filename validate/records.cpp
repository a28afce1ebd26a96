/// \file
/// Reading measured-run records ("measured-run record v1", shared/validation/README.md) and
/// collective measurement records (data/validation/COLLECTIVES.md):
/// every key of the format is known, every count is read within the bounds a scenario's
/// count has (base/limits.hpp), every name within the format's vocabulary; anything else
/// is an InputError naming the file, the line and the JSON path.
#include "validate/validation.hpp"

#include "base/json_input.hpp"
#include "base/limits.hpp"
#include "model/collective.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>

namespace stepcast {

namespace {

using nlohmann::json;

constexpr std::int64_t kAnyCount = std::numeric_limits<std::int64_t>::max();

/// Null, or one of the format's names for this field.
std::optional<std::string> nullable_choice(JsonObject& o, const std::string& key,
                                           const std::vector<std::string>& allowed) {
  std::optional<std::string> v = o.nullable_string(key);
  if (v && std::find(allowed.begin(), allowed.end(), *v) == allowed.end()) {
    std::string names;
    for (const std::string& a : allowed) names += (names.empty() ? "\"" : ", \"") + a + "\"";
    throw o.error(key, "expected null or one of " + names + ", got \"" + *v + "\"");
  }
  return v;
}

std::string source_label(const json& src) {
  if (src.contains("repo") && src["repo"].is_string()) {
    std::string s = src["repo"].get<std::string>();
    if (src.contains("path") && src["path"].is_string()) s += " · " + src["path"].get<std::string>();
    return s;
  }
  if (src.contains("url") && src["url"].is_string()) return src["url"].get<std::string>();
  if (src.contains("ref") && src["ref"].is_string()) return src["ref"].get<std::string>();  // a paper
  return "?";
}

void read_model(JsonObject& m, MeasuredRun& r) {
  r.model_name = m.string("name");
  r.arch = m.string("arch");
  r.params = m.nullable_integer("params", 1, kAnyCount);
  r.layers = m.nullable_integer("layers", 1, limits::kMaxLayers);
  r.hidden = m.nullable_integer("hidden", 1, limits::kMaxHidden);
  r.heads = m.nullable_integer("heads", 1, limits::kMaxHidden);
  r.kv_heads = m.nullable_integer("kv_heads", 1, limits::kMaxHidden);
  r.ffn_hidden = m.nullable_integer("ffn_hidden", 1, limits::kMaxFfnHidden);
  r.vocab = m.nullable_integer("vocab", 1, limits::kMaxVocab);
  r.seq_len = m.nullable_integer("seq_len", 1, limits::kMaxSeqLen);
  m.finish();
}

void read_hardware(JsonObject& h, MeasuredRun& r) {
  r.gpu = h.string("gpu");
  r.gpus = h.nullable_integer("gpus", 1, limits::kMaxGpus);
  r.gpus_per_node = h.nullable_integer("gpus_per_node", 1, limits::kMaxGpusPerNode);
  r.nodes = h.nullable_integer("nodes", 1, limits::kMaxNodes);
  r.intra_node = nullable_choice(h, "intra_node", {"nvswitch", "nvlink-mesh", "nvlink-bridge", "pcie"});
  const json& inter = h.raw("inter_node");
  if (!inter.is_null()) {
    JsonObject in(inter, h.file(), h.path_of("inter_node"));
    r.multi_node_fabric_given = true;
    r.inter_fabric = nullable_choice(in, "fabric", {"infiniband", "roce", "ethernet-tcp", "efa", "omnipath"});
    r.inter_gbps_per_node =
        in.nullable_number("gbps_per_node", std::numeric_limits<double>::min(), std::numeric_limits<double>::max());
    in.finish();
  }
  h.finish();
}

void read_strategy(JsonObject& s, MeasuredRun& r) {
  r.data_parallel = s.string("data_parallel");
  r.tp = s.nullable_integer("tp", 1, limits::kMaxGpus);
  r.pp = s.nullable_integer("pp", 1, limits::kMaxGpus);
  if (const auto& sp = s.raw("sp"); sp.is_boolean())
    r.sp = sp.get<bool>();
  else if (!sp.is_null())
    throw s.error("sp", "expected true, false or null");
  r.checkpointing = nullable_choice(s, "activation_checkpointing", {"none", "full", "selective"});
  r.precision = nullable_choice(s, "precision", {"fp32", "fp16_mixed", "bf16_mixed", "bf16_pure", "fp8_mixed"});
  r.offload = s.nullable_string("offload");
  r.framework = s.nullable_string("framework");
  JsonArray ex = s.array("extras");
  for (std::size_t i = 0; i < ex.size(); ++i) r.extras.push_back(ex.string(i));
  s.finish();
}

void read_batch(JsonObject& b, MeasuredRun& r) {
  r.micro_batch = b.nullable_integer("micro_batch", 1, limits::kMaxMicroBatch);
  r.grad_accum = b.nullable_integer("grad_accum", 1, limits::kMaxGradAccum);
  r.global_batch = b.nullable_integer("global_batch", 1, limits::kMaxTokensPerStep);
  b.finish();
}

/// The rest of a collective measurement record (validate/collectives.hpp), after id, source
/// and trust.
void read_collective_record(JsonObject& top, MeasuredRun& r) {
  CollectiveBenchmark c;
  c.system = top.string("system");
  {
    JsonObject h = top.object("hardware");
    r.gpu = h.string("gpu");
    c.box = h.nullable_string("box");
    r.nodes = h.integer("nodes", 1, limits::kMaxNodes);
    r.gpus_per_node = h.integer("gpus_per_node", 1, limits::kMaxGpusPerNode);
    r.gpus = *r.nodes * *r.gpus_per_node;
    if (*r.gpus > limits::kMaxClusterGpus)
      throw h.error("nodes", fmt::format("at most {} GPUs in all (limits::kMaxClusterGpus), got {} nodes x {} GPUs",
                                         limits::kMaxClusterGpus, *r.nodes, *r.gpus_per_node));
    if (const json& net = h.raw("network"); !net.is_null()) {
      JsonObject n(net, h.file(), h.path_of("network"));
      c.network = parse_network(n);
    }
    h.finish();
  }
  {
    JsonObject k = top.object("collective");
    const std::string op = k.choice("op", {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all"});
    c.op = parse_collective(op);
    c.bytes = k.positive("bytes", static_cast<double>(limits::kMaxMeasuredBytes));
    std::vector<std::string> algorithms = {"auto"};
    for (const AlgorithmInfo& a : collective_algorithms()) algorithms.push_back(a.name);
    c.algorithm = k.choice("algorithm", algorithms);
    c.nccl = k.string("nccl");
    k.finish();
  }
  {
    JsonObject m = top.object("measured");
    r.metric = m.choice("metric", {std::begin(kCollectiveMetrics), std::end(kCollectiveMetrics)});
    r.value = m.positive("value");
    r.definition = m.string("definition");
    m.finish();
  }
  c.fed_constant = top.nullable_string("fed_constant");
  c.unmodelled = top.nullable_string("unmodelled");
  if (!c.box && !c.unmodelled) throw top.error("unmodelled", "a reason: a record without a catalog box is unmodelled");
  if (const nlohmann::json& notes = top.raw("notes"); notes.is_string()) r.notes = notes.get<std::string>();
  top.finish();
  r.collective = std::move(c);
}

}  // namespace

MeasuredRun parse_measured_run(const std::string& json_line, const std::string& file, int line) {
  const std::string where = fmt::format("{}:{}", file, line);
  const JsonDoc doc = JsonDoc::parse(json_line, where);
  if (!doc.root().is_object()) throw InputError(where, "", "expected one JSON object per line");
  JsonObject top(doc.root(), where, "");
  MeasuredRun r;
  r.file = file;
  r.line = line;
  r.id = top.string("id");
  {
    JsonObject src = top.object("source");
    r.source = source_label(top.raw("source"));
    if (const json& raw = top.raw("source"); raw.contains("locator") && raw["locator"].is_string())
      r.locator = raw["locator"].get<std::string>();
    // `type` is one of SCHEMA.md's kinds; the rest documents the source, free-form.
    if (src.has("type")) src.choice("type", {"repo", "blog", "docs", "paper", "issue"});
    for (const std::string& k : src.keys()) src.ignore(k);
  }
  r.trust = top.choice("trust", {"high", "medium", "low"});
  if (top.has("collective")) {
    read_collective_record(top, r);
    return r;
  }
  {
    JsonObject m = top.object("model");
    read_model(m, r);
  }
  {
    JsonObject h = top.object("hardware");
    read_hardware(h, r);
  }
  {
    JsonObject s = top.object("strategy");
    read_strategy(s, r);
  }
  {
    JsonObject b = top.object("batch");
    read_batch(b, r);
  }
  {
    JsonObject m = top.object("measured");
    r.metric = m.string("metric");
    r.value = m.positive("value");
    r.definition = m.string("definition");
    try {
      r.categories = categories_from_secondary(m.raw("secondary"));
      r.memory_measured_bytes = memory_from_secondary(m.raw("secondary"));
    } catch (const std::invalid_argument& e) {
      throw m.error("secondary", e.what());
    }
    m.finish();
  }
  if (const nlohmann::json& notes = top.raw("notes"); notes.is_string()) r.notes = notes.get<std::string>();
  top.raw("raw");
  top.finish();
  return r;
}

std::vector<MeasuredRun> load_measured_runs(const std::filesystem::path& path) {
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(path)) {
    for (const auto& e : std::filesystem::directory_iterator(path))
      if (e.path().extension() == ".jsonl") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    if (files.empty()) throw InputError(path.string(), "", "no .jsonl files in this folder");
  } else {
    files.push_back(path);
  }
  std::vector<MeasuredRun> out;
  for (const auto& f : files) {
    const std::string text = read_input_file(f, limits::kMaxRecordFileBytes);  // regular files only
    int n = 0;
    for (std::size_t begin = 0; begin < text.size();) {
      std::size_t end = text.find('\n', begin);
      if (end == std::string::npos) end = text.size();
      ++n;
      const std::string line = text.substr(begin, end - begin);
      begin = end + 1;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      out.push_back(parse_measured_run(line, f.string(), n));
    }
  }
  return out;
}

}  // namespace stepcast
