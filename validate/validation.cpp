#include "validate/validation.hpp"

#include "topologies/hardware_file.hpp"
#include "base/json_input.hpp"
#include "topologies/topology.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

namespace stepcast {

namespace {

using nlohmann::json;

// ---- Reading: every key of the format is known; a key outside it is an error. ----------

std::optional<std::int64_t> opt_int(JsonObject& o, const std::string& key) {
  const json& v = o.raw(key);
  if (v.is_null()) return std::nullopt;
  if (!v.is_number_integer()) throw o.error(key, "expected an integer or null");
  return v.get<std::int64_t>();
}

std::optional<double> opt_num(JsonObject& o, const std::string& key) {
  const json& v = o.raw(key);
  if (v.is_null()) return std::nullopt;
  if (!v.is_number()) throw o.error(key, "expected a number or null");
  return v.get<double>();
}

std::optional<std::string> opt_str(JsonObject& o, const std::string& key) {
  const json& v = o.raw(key);
  if (v.is_null()) return std::nullopt;
  if (!v.is_string()) throw o.error(key, "expected a string or null");
  return v.get<std::string>();
}

std::string source_label(const json& src) {
  if (src.contains("repo") && src["repo"].is_string()) {
    std::string s = src["repo"].get<std::string>();
    if (src.contains("path") && src["path"].is_string()) s += " · " + src["path"].get<std::string>();
    return s;
  }
  if (src.contains("url") && src["url"].is_string()) return src["url"].get<std::string>();
  return "?";
}

}  // namespace

MeasuredRun parse_measured_run(const std::string& json_line, const std::string& file, int line) {
  const std::string where = fmt::format("{}:{}", file, line);
  json doc;
  try {
    doc = json::parse(json_line);
  } catch (const json::parse_error& e) {
    throw InputError(where, "", std::string("malformed JSON: ") + e.what());
  }
  if (!doc.is_object()) throw InputError(where, "", "expected one JSON object per line");
  JsonObject top(doc, where, "");
  MeasuredRun r;
  r.file = file;
  r.line = line;
  r.id = top.string("id");
  {
    JsonObject src = top.object("source");
    r.source = source_label(top.raw("source"));
    for (const std::string& k : src.keys()) src.ignore(k);  // documentation: free-form
  }
  r.trust = top.choice("trust", {"high", "medium", "low"});
  {
    JsonObject m = top.object("model");
    r.model_name = m.string("name");
    r.arch = m.string("arch");
    r.params = opt_int(m, "params");
    r.layers = opt_int(m, "layers");
    r.hidden = opt_int(m, "hidden");
    r.heads = opt_int(m, "heads");
    r.kv_heads = opt_int(m, "kv_heads");
    r.ffn_hidden = opt_int(m, "ffn_hidden");
    r.vocab = opt_int(m, "vocab");
    r.seq_len = opt_int(m, "seq_len");
    m.finish();
  }
  {
    JsonObject h = top.object("hardware");
    r.gpu = h.string("gpu");
    r.gpus = opt_int(h, "gpus");
    r.gpus_per_node = opt_int(h, "gpus_per_node");
    r.nodes = opt_int(h, "nodes");
    r.intra_node = opt_str(h, "intra_node");
    const json& inter = h.raw("inter_node");
    if (!inter.is_null()) {
      JsonObject in(inter, where, h.path_of("inter_node"));
      r.multi_node_fabric_given = true;
      r.inter_fabric = opt_str(in, "fabric");
      r.inter_gbps_per_node = opt_num(in, "gbps_per_node");
      in.finish();
    }
    h.finish();
  }
  {
    JsonObject s = top.object("strategy");
    r.data_parallel = s.string("data_parallel");
    r.tp = opt_int(s, "tp");
    r.pp = opt_int(s, "pp");
    s.raw("sp");
    r.checkpointing = opt_str(s, "activation_checkpointing");
    r.precision = opt_str(s, "precision");
    r.offload = opt_str(s, "offload");
    r.framework = opt_str(s, "framework");
    JsonArray ex = s.array("extras");
    for (std::size_t i = 0; i < ex.size(); ++i) r.extras.push_back(ex.string(i));
    s.finish();
  }
  {
    JsonObject b = top.object("batch");
    r.micro_batch = opt_int(b, "micro_batch");
    r.grad_accum = opt_int(b, "grad_accum");
    r.global_batch = opt_int(b, "global_batch");
    b.finish();
  }
  {
    JsonObject m = top.object("measured");
    r.metric = m.string("metric");
    r.value = m.number("value");
    r.definition = m.string("definition");
    m.raw("secondary");
    m.finish();
  }
  top.raw("notes");
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
    std::ifstream in(f);
    if (!in) throw InputError(f.string(), "", "cannot open the file");
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      out.push_back(parse_measured_run(line, f.string(), n));
    }
  }
  return out;
}

// ---- A record as a scenario ----------------------------------------------------------

namespace {

struct Skip {
  std::string why;
};

/// The catalog box for a record's GPU: the first one with the record's intra-node fabric,
/// or, when the record does not state it, the first one holding the GPU (for a GPU sold
/// both ways, such as the TITAN RTX pair, the PCIe one: no bridge was named).
const BoxSpec& box_for(const MeasuredRun& r, const std::string& gpu, std::vector<std::string>& assumed) {
  std::optional<IntraFabric> fabric;
  if (r.intra_node) {
    if (*r.intra_node == "nvswitch") fabric = IntraFabric::nvswitch;
    else if (*r.intra_node == "pcie") fabric = IntraFabric::pcie;
    else fabric = IntraFabric::nvlink_mesh;  // nvlink-mesh, nvlink-bridge
  } else if (box_with_gpu(gpu, IntraFabric::pcie) && box_with_gpu(gpu, IntraFabric::nvlink_mesh)) {
    fabric = IntraFabric::pcie;
  }
  const BoxSpec* box = box_with_gpu(gpu, fabric);
  if (!box) throw Skip{"no catalog box holds the " + gpu + (r.intra_node ? " over " + *r.intra_node : "")};
  if (!r.intra_node) assumed.push_back("intra-node fabric of the " + box->name + " (not stated)");
  return *box;
}

/// The NIC link kind and count for a stated fabric and per-node rate: the fastest catalog
/// link of that family (by name prefix) whose line rate divides the rate into whole NICs.
std::pair<std::string, int> nics_for(const std::string& fabric, double gbps) {
  static const std::map<std::string, std::string> kFamily = {
      {"infiniband", "ib-"}, {"roce", "roce-"}, {"efa", "efa-"}, {"ethernet-tcp", "eth-"}};
  const auto family = kFamily.find(fabric);
  if (family == kFamily.end()) throw Skip{"inter-node fabric \"" + fabric + "\" is not in the link catalog"};
  const LinkSpec* best = nullptr;
  int count = 0;
  for (const LinkSpec& l : link_catalog()) {
    if (l.name.rfind(family->second, 0) != 0) continue;
    const double n = gbps / (l.line_rate_GBps * 8.0);  // GB/s -> Gb/s
    if (n < 1 || std::abs(n - std::round(n)) > 1e-9) continue;
    if (!best || l.line_rate_GBps > best->line_rate_GBps) {
      best = &l;
      count = static_cast<int>(std::round(n));
    }
  }
  if (!best) throw Skip{fmt::format("{} Gb/s per node of {} is no whole number of catalog NICs", gbps, fabric)};
  return {best->name, count};
}

Strategy strategy_for(const MeasuredRun& r, std::vector<std::string>& assumed) {
  if (r.data_parallel == "dp_allreduce_other") {
    assumed.push_back("replicated data parallelism modelled as DDP (bucketed all-reduce)");
    return Strategy::ddp;
  }
  if (r.data_parallel == "unknown") throw Skip{"data-parallel strategy not stated"};
  try {
    return parse_strategy(r.data_parallel);
  } catch (const std::exception&) {
    throw Skip{"strategy " + r.data_parallel + " not modelled"};
  }
}

TransformerSpec model_for(const MeasuredRun& r, std::vector<std::string>& assumed) {
  if (const TransformerSpec* m = find_model(r.model_name)) return *m;
  if (!r.layers || !r.hidden || !r.heads || !r.vocab || !r.seq_len)
    throw Skip{"model " + r.model_name + " is not in the catalog and its shape is incomplete"};
  TransformerSpec m;
  m.name = r.model_name;
  m.layers = *r.layers;
  m.hidden = *r.hidden;
  m.heads = *r.heads;
  m.kv_heads = r.kv_heads.value_or(*r.heads);
  if (!r.kv_heads) assumed.push_back("multi-head attention (kv_heads not stated)");
  m.ffn_hidden = r.ffn_hidden.value_or(4 * *r.hidden);
  if (!r.ffn_hidden) assumed.push_back("MLP width 4 x hidden (not stated)");
  m.vocab = *r.vocab;
  m.seq_len = *r.seq_len;
  m.gated_mlp = r.arch == "llama";
  m.tied_embeddings = r.arch != "llama";
  m.positional = r.arch == "gpt2" || r.arch == "opt" ? Positional::learned : Positional::rope;
  if (m.positional == Positional::learned) m.max_positions = *r.seq_len;
  m.norm = r.arch == "llama" ? Norm::rmsnorm : Norm::layernorm;
  m.linear_bias = r.arch == "gpt2" || r.arch == "bloom" || r.arch == "opt" || r.arch == "bert";
  assumed.push_back("model shape from the record (not in the catalog)");
  return m;
}

Scenario build(const MeasuredRun& r, std::vector<std::string>& assumed,
               const std::shared_ptr<const HardwareFile>& calibration, const std::string& calibration_file) {
  if (r.tp.value_or(0) != 1 || r.pp.value_or(0) != 1) {
    if (!r.tp || !r.pp) throw Skip{"tensor/pipeline parallel degrees not stated"};
    throw Skip{fmt::format("tensor/pipeline parallelism (TP {}, PP {}) is not modelled", *r.tp, *r.pp)};
  }
  if (!r.offload) throw Skip{"CPU offload not stated"};
  if (*r.offload != "none") throw Skip{"CPU offload (" + *r.offload + ") is not modelled"};
  if (!r.precision) throw Skip{"precision not stated"};
  if (!r.checkpointing) throw Skip{"activation checkpointing not stated"};
  if (!r.gpus) throw Skip{"GPU count not stated"};
  if (!r.micro_batch) throw Skip{"micro-batch not stated"};
  for (const std::string& e : r.extras)
    if (e == "cpu_offload_activations" || e == "context_parallel_16" || e == "float8_allgather")
      throw Skip{"extra \"" + e + "\" is not modelled"};

  Scenario s;
  s.name = r.id;
  s.description = r.model_name;
  s.file = r.file;
  s.model = model_for(r, assumed);
  std::string gpu = r.gpu;
  if (gpu.rfind("other:", 0) == 0) {
    const std::string rest = gpu.substr(6);
    const std::string key = rest.substr(0, rest.find(' '));
    if (!find_gpu(key)) throw Skip{"GPU \"" + rest + "\" is not precise enough for the catalog"};
    gpu = key;
  }
  if (!find_gpu(gpu)) throw Skip{"GPU " + gpu + " is not in the catalog"};

  TrainingSpec& t = s.training;
  t.precision = parse_precision(*r.precision);
  t.optimizer = OptimizerKind::adam_mixed_16;
  t.micro_batch = *r.micro_batch;
  const std::int64_t gpus = *r.gpus;
  if (r.grad_accum) {
    t.grad_accum = *r.grad_accum;
  } else if (r.global_batch && *r.global_batch % (t.micro_batch * gpus) == 0) {
    t.grad_accum = *r.global_batch / (t.micro_batch * gpus);
  } else {
    throw Skip{"gradient accumulation not stated"};
  }
  t.seq_len = r.seq_len.value_or(s.model.seq_len);
  t.recompute = parse_recompute(*r.checkpointing);
  t.flash_attention = std::find(r.extras.begin(), r.extras.end(), "flash_attention") != r.extras.end();
  s.strategy.kind = strategy_for(r, assumed);
  if (s.strategy.kind == Strategy::ddp) s.strategy.bucket_given = false;

  const BoxSpec& box = box_for(r, gpu, assumed);
  const int ppn = static_cast<int>(r.gpus_per_node.value_or(std::min<std::int64_t>(gpus, box.gpus)));
  if (ppn > box.gpus) throw Skip{fmt::format("{} GPUs per node exceed the {}'s {}", ppn, box.name, box.gpus)};
  if (gpus % ppn != 0) throw Skip{"GPUs do not divide into nodes"};
  const int nodes = static_cast<int>(gpus / ppn);
  if (nodes > 1 && ppn != box.gpus)
    throw Skip{fmt::format("{} of the {}'s {} GPUs per node over several nodes", ppn, box.name, box.gpus)};
  HardwareChoice& h = s.hardware;
  h.cluster.name = box.name;
  h.cluster.box = box.name;
  h.cluster.nodes = nodes;
  h.nodes = nodes;
  h.gpus_per_node = ppn;
  if (nodes > 1) {
    NetworkSpec net;
    if (r.inter_fabric && r.inter_gbps_per_node) {
      const auto [kind, count] = nics_for(*r.inter_fabric, *r.inter_gbps_per_node);
      net.nic = kind;
      net.nics_per_node = count;
    } else {
      if (box.nic.empty()) throw Skip{"inter-node network not stated and the box has no standard NIC"};
      net.nic = box.nic;
      net.nics_per_node = box.nics;
      assumed.push_back(fmt::format("the {}'s standard network, {} x {} per node (not stated)", box.name, box.nics,
                                    box.nic));
    }
    net.topology = NetworkTopology::rail_fat_tree;
    h.cluster.network = net;
  }
  if (calibration && calibration->gpu == gpu) {
    h.calibration = calibration;
    h.calibration_file = calibration_file;
    assumed.push_back("calibration " + calibration_file);
  }
  s.dataset.tokens = 1e9;  // unused: no record metric here depends on the data set size
  return s;
}

double predicted_metric(const MeasuredRun& r, const Prediction& p) {
  if (r.metric == "tokens_per_s_per_gpu") return p.tokens_per_s_per_gpu;
  if (r.metric == "step_time_s") return p.step_time_s;
  if (r.metric == "samples_per_s_global") return p.samples_per_s;
  if (r.metric == "mfu") return p.mfu;
  if (r.metric == "tflops_per_gpu") {
    // Megatron, DeepSpeed and BigScience count the recomputed forward (hardware FLOPs);
    // stas00 and llm-foundry count model FLOPs. The record's definition says which.
    const bool hardware = r.definition.find("recompute") != std::string::npos &&
                          r.definition.find("no recompute") == std::string::npos &&
                          r.definition.find("without recompute") == std::string::npos;
    const double flops = hardware ? p.hardware_flops_per_step : p.model_flops_per_step;
    return flops / p.step_time_s / p.gpus / 1e12;
  }
  throw Skip{"metric " + r.metric + " needs figures a record does not give (data set size, overheads)"};
}

std::uint32_t fnv1a(const std::string& s) {
  std::uint32_t h = 2166136261u;
  for (unsigned char c : s) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

}  // namespace

RunScenario scenario_for(const MeasuredRun& run, const std::shared_ptr<const HardwareFile>& calibration,
                         const std::string& calibration_file) {
  RunScenario out;
  try {
    out.scenario = build(run, out.assumptions, calibration, calibration_file);
  } catch (const Skip& s) {
    out.skip_reason = s.why;
  }
  return out;
}

std::string split_of(const std::string& id) { return fnv1a(id) % 2 == 0 ? "fit" : "check"; }

ValidationRow validate_run(const MeasuredRun& run, const std::shared_ptr<const HardwareFile>& calibration,
                           const std::string& calibration_file) {
  ValidationRow row;
  row.id = run.id;
  row.source = run.source;
  row.trust = run.trust;
  row.strategy = run.data_parallel;
  row.gpu = run.gpu;
  row.metric = run.metric;
  row.measured = run.value;
  row.split = split_of(run.id);
  row.gpus = run.gpus.value_or(0);
  row.link_gbps = run.inter_gbps_per_node.value_or(0);
  row.micro_batch = run.micro_batch.value_or(0);
  row.global_batch = run.global_batch.value_or(0);
  row.model = run.model_name;
  row.seq_len = run.seq_len.value_or(0);
  row.precision = run.precision.value_or("");
  RunScenario rs = scenario_for(run, calibration, calibration_file);
  row.assumptions = rs.assumptions;
  if (!rs.scenario) {
    row.status = "skipped: " + rs.skip_reason;
    return row;
  }
  try {
    const Prediction p = predict(*rs.scenario);
    row.predicted = predicted_metric(run, p);
    row.error_pct = 100.0 * (*row.predicted - run.value) / run.value;
    row.status = "ok";
  } catch (const Skip& s) {
    row.status = "skipped: " + s.why;
  } catch (const std::exception& e) {
    row.status = std::string("skipped: ") + e.what();
  }
  return row;
}

namespace {

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * (static_cast<double>(v.size()) - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = static_cast<std::size_t>(std::ceil(pos));
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

/// Two rows that differ in exactly one knob (GPU count, strategy, link speed, batch).
bool one_knob_apart(const ValidationRow& a, const ValidationRow& b) {
  if (a.source != b.source || a.metric != b.metric || a.model != b.model || a.seq_len != b.seq_len ||
      a.precision != b.precision || a.gpu != b.gpu)
    return false;
  const int differ = (a.gpus != b.gpus) + (a.strategy != b.strategy) + (a.link_gbps != b.link_gbps) +
                     (a.micro_batch != b.micro_batch);  // the global batch follows the GPU count
  return differ == 1;
}

ErrorSummary summary_of(const std::string& group, const std::vector<const ValidationRow*>& rows) {
  ErrorSummary s;
  s.group = group;
  std::vector<double> errors;
  std::vector<const ValidationRow*> ok;
  for (const ValidationRow* r : rows) {
    if (r->status != "ok") {
      ++s.skipped;
      continue;
    }
    errors.push_back(std::abs(*r->error_pct));
    ok.push_back(r);
  }
  s.count = static_cast<int>(errors.size());
  s.median_abs_error_pct = percentile(errors, 0.5);
  s.p90_abs_error_pct = percentile(errors, 0.9);
  s.max_abs_error_pct = errors.empty() ? 0 : *std::max_element(errors.begin(), errors.end());
  int right = 0;
  for (std::size_t i = 0; i < ok.size(); ++i)
    for (std::size_t j = i + 1; j < ok.size(); ++j) {
      const ValidationRow& a = *ok[i];
      const ValidationRow& b = *ok[j];
      if (!one_knob_apart(a, b) || a.measured == b.measured) continue;
      ++s.ordering_pairs;
      if ((a.measured < b.measured) == (*a.predicted < *b.predicted)) ++right;
    }
  s.ordering_accuracy = s.ordering_pairs ? static_cast<double>(right) / s.ordering_pairs : 1.0;
  return s;
}

}  // namespace

std::vector<ErrorSummary> summarize(const std::vector<ValidationRow>& rows, const std::string& split) {
  std::vector<const ValidationRow*> kept;
  for (const ValidationRow& r : rows)
    if (r.trust != "low" && (split.empty() || r.split == split)) kept.push_back(&r);
  std::vector<ErrorSummary> out = {summary_of("all", kept)};
  auto by = [&](const char* label, auto key) {
    std::vector<std::string> groups;
    for (const ValidationRow* r : kept)
      if (std::find(groups.begin(), groups.end(), key(*r)) == groups.end()) groups.push_back(key(*r));
    std::sort(groups.begin(), groups.end());
    for (const std::string& g : groups) {
      std::vector<const ValidationRow*> sub;
      for (const ValidationRow* r : kept)
        if (key(*r) == g) sub.push_back(r);
      out.push_back(summary_of(std::string(label) + ": " + g, sub));
    }
  };
  by("source", [](const ValidationRow& r) { return r.source; });
  by("strategy", [](const ValidationRow& r) { return r.strategy; });
  by("gpu", [](const ValidationRow& r) { return r.gpu; });
  return out;
}

}  // namespace stepcast
