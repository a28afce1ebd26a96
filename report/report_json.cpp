/// \file
/// JSON reports. The one translation unit of the command that includes nlohmann/json.
/// Units are in the key names (_s, _bytes, _GBps, _usd); fractions (mfu, hfu, shares,
/// efficiencies) are in [0, 1]. Non-finite numbers are written as null.

#include "report/report.hpp"
#include "report/need_view.hpp"

#include "model/collective.hpp"
#include "model/transformer.hpp"
#include "topologies/gpu.hpp"
#include "topologies/link.hpp"
#include "topologies/topology.hpp"

#include <nlohmann/json.hpp>

#include <cmath>

namespace stepcast::cli {

namespace {

constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

/// Keys in the order written (scenario first), not sorted.
using json = nlohmann::ordered_json;

/// Numbers as JSON, non-finite as null (nlohmann would write null anyway; explicit here).
json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
json opt(const std::optional<double>& v) { return v ? num(*v) : json(nullptr); }
json str(std::string_view s) { return json(std::string(s)); }

json fabric_level(const FabricLevel& l) {
  return {{"ranks", l.ranks},          {"link_class", str(name(l.link))}, {"kind", l.kind},
          {"bw_GBps", num(l.bw_GBps)}, {"latency_us", num(l.latency_us)}, {"channels", l.channels}};
}

json comparison(const std::optional<double>& measured, double predicted) {
  if (!measured) return nullptr;
  json j = {{"measured", num(*measured)}, {"predicted", num(predicted)}};
  j["error"] = *measured != 0 ? num((predicted - *measured) / *measured) : json(nullptr);
  return j;
}

std::string dump(const json& j) {
  // Replace invalid UTF-8 rather than throw: catalog sources and notes are free text.
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace

namespace {

json model_json(const Scenario& sc, const Prediction& p) {
  return {{"name", sc.model.name},     {"parameters", p.parameters}, {"layers", sc.model.layers},
          {"hidden", sc.model.hidden}, {"heads", sc.model.heads},    {"kv_heads", sc.model.kv_heads}};
}

json training_json(const TrainingSpec& tr) {
  json training = {{"precision", str(name(tr.precision))},
                   {"optimizer", str(name(tr.optimizer))},
                   {"micro_batch", tr.micro_batch},
                   {"grad_accum", tr.grad_accum},
                   {"seq_len", tr.seq_len},
                   {"recompute", str(name(tr.recompute))},
                   {"flash_attention", tr.flash_attention},
                   {"lora", nullptr}};
  if (tr.lora) training["lora"] = {{"rank", tr.lora->rank}, {"targets", tr.lora->targets}};
  return training;
}

json parts_json(const Prediction& p) {
  return {{"forward_s", num(p.forward_s)},
          {"backward_s", num(p.backward_s)},
          {"recompute_s", num(p.recompute_s)},
          {"optimizer_s", num(p.optimizer_s)},
          {"compute_s", num(p.compute_s)},
          {"compute_by_kernel",
           {{"gemm_s", num(p.compute_by_kernel.gemm_s)},
            {"attention_s", num(p.compute_by_kernel.attention_s)},
            {"memory_bound_s", num(p.compute_by_kernel.memory_s)},
            {"launch_bound_s", num(p.compute_by_kernel.launch_s)}}},
          {"comm_total_s", num(p.comm_total_s)},
          {"comm_total_pipeline_stages", p.pipeline_stages},  // comm_total_s sums this many stages
          {"comm_exposed_s", num(p.comm_exposed_s)},
          {"comm_hidden_s", num(p.comm_hidden_s)}};
}

/// The discrete-event simulation of the step (the representative GPU: rank class 0).
json simulation_json(const Prediction& p) {
  const double step = p.step_time_s;
  auto fraction = [&](double s) { return step > 0 ? num(s / step) : json(nullptr); };
  json streams = json::array();
  for (const StreamUse& su : p.streams)
    streams.push_back({{"name", su.name}, {"busy_s", num(su.busy_s)}, {"busy_fraction", fraction(su.busy_s)}});
  json links = json::array();
  for (const LinkUse& l : p.links)
    links.push_back({{"name", l.name},
                     {"capacity_GBps", num(l.capacity_GBps)},
                     {"busy_s", num(l.busy_s)},
                     {"busy_fraction", fraction(l.busy_s)},
                     {"mean_load_fraction", num(l.bytes / (l.capacity_GBps * 1e9 * p.step_time_s))},
                     {"bytes", num(l.bytes)}});
  json path = json::array();
  json by_category = json::object();
  for (const PathStep& ps : p.critical_path) {
    path.push_back(
        {{"task", ps.task}, {"category", ps.category}, {"start_s", num(ps.start_s)}, {"end_s", num(ps.end_s)}});
    const double before = by_category.contains(ps.category) ? by_category[ps.category].get<double>() : 0.0;
    by_category[ps.category] = before + (ps.end_s - ps.start_s);
  }
  return {{"tasks", p.simulation_tasks},
          {"events", p.simulation_events},
          {"step_time_s", num(step)},
          {"compute_busy_s", num(p.compute_busy_s)},
          {"comm_busy_s", num(p.comm_busy_s)},
          {"comm_hidden_s", num(p.comm_hidden_s)},
          {"comm_exposed_s", num(p.comm_exposed_s)},
          {"overlap_ratio", num(p.overlap_ratio)},
          {"comm_slowdown", num(p.comm_slowdown)},
          {"peak_memory_bytes", num(p.simulated_peak_memory_bytes)},
          {"peak_memory_rank_class", p.simulated_peak_memory_class},
          {"streams", streams},
          {"links", links},
          {"critical_path_by_category_s", by_category},
          {"critical_path", path}};
}

json memory_json(const MemoryBreakdown& m) {
  json terms = json::array();
  for (const MemoryTerm& t : m.terms) terms.push_back({{"name", t.name}, {"bytes", num(t.bytes)}, {"note", t.note}});
  json out = {{"terms", terms},
              {"total_bytes", num(m.total_bytes)},
              {"capacity_bytes", num(m.capacity_bytes)},
              {"verdict", str(name(m.verdict))},
              {"largest", m.largest}};
  if (m.host_terms.empty()) return out;  // CPU offload only: the host's memory per node
  json host = json::array();
  for (const MemoryTerm& t : m.host_terms)
    host.push_back({{"name", t.name}, {"bytes", num(t.bytes)}, {"note", t.note}});
  out["host"] = {{"terms", host},
                 {"total_bytes", num(m.host_total_bytes)},
                 {"capacity_bytes", num(m.host_capacity_bytes)},
                 {"verdict", str(name(m.host_verdict))}};
  out["out_of_memory"] = out_of_memory(m);
  return out;
}

/// One phase of a collective call as the simulation played it. Its level is relative to the
/// collective's own GPUs: "all" for a single-phase algorithm, "intra-node" / "inter-node"
/// for the phases of a hierarchical one.
json phase_json(const CollectivePhase& ph) {
  return {{"op", str(name(ph.collective))},   {"level", str(name(ph.level))}, {"bytes", num(ph.bytes)},
          {"algorithm", ph.algorithm},        {"protocol", ph.protocol},      {"latency_s", num(ph.latency_s)},
          {"algbw_GBps", num(ph.algbw_GBps)}, {"time_s", num(ph.time_s())}};
}

/// Each collective as simulated: its cost summarised from the phases in the step graph
/// (CollectiveUse::cost) and the phases themselves; nothing is re-costed here.
json collectives_json(const Prediction& p) {
  json collectives = json::array();
  for (const CollectiveUse& c : p.collectives) {
    json phases = json::array();
    for (const CollectivePhase& ph : c.phases) phases.push_back(phase_json(ph));
    collectives.push_back({{"purpose", c.purpose},
                           {"op", str(name(c.collective))},
                           {"level", std::string(name(c.level))},
                           {"bytes", num(c.bytes)},
                           {"calls_per_step", c.calls_per_step},
                           {"algorithm", c.cost.algorithm},
                           {"protocol", c.cost.protocol},
                           {"time_per_call_s", num(c.cost.time_s)},
                           {"algbw_GBps", num(c.cost.algbw_GBps)},
                           {"busbw_GBps", num(c.cost.busbw_GBps)},
                           {"total_s", num(c.total_s())},
                           {"phases", phases}});
  }
  return collectives;
}

json fabric_json(const CommFabric& f) {
  return {{"arch", str(name(f.arch))},
          {"nvls", f.nvls},
          {"intra", fabric_level(f.intra)},
          {"inter", f.inter ? fabric_level(*f.inter) : json(nullptr)}};
}

json measured_json(const Scenario& sc, const Prediction& p) {
  if (!sc.measured) return nullptr;
  const MeasuredFigures& mf = *sc.measured;
  return {{"source", mf.source},
          {"time_per_epoch_s", comparison(mf.time_per_epoch_s, p.time_per_epoch_s)},
          {"step_time_s", comparison(mf.step_time_s, p.step_time_s)},
          {"tokens_per_s_per_gpu", comparison(mf.tokens_per_s_per_gpu, p.tokens_per_s_per_gpu)}};
}

}  // namespace

std::string predict_json(const Scenario& sc, const Prediction& p, const std::string& trace_file) {
  json j;
  j["scenario"] = p.scenario.empty() ? sc.name : p.scenario;
  j["description"] = sc.description;
  j["file"] = sc.file;
  j["model"] = model_json(sc, p);
  j["gpus"] = p.gpus;
  j["nodes"] = p.nodes;
  j["gpus_per_node"] = p.gpus_per_node;
  j["strategy"] = str(name(p.strategy));
  j["parallel"] = {{"tp", sc.strategy.layout.tp},
                   {"sp", sc.strategy.layout.sp},
                   {"tp_comm_overlap", sc.strategy.tp_comm_overlap},
                   {"pp", sc.strategy.layout.pp},
                   {"vpp", sc.strategy.layout.vpp},
                   {"schedule", str(name(sc.strategy.layout.schedule))},
                   {"dp", data_parallel_degree(sc)}};
  j["gpu"] = p.gpu;
  j["hardware"] = p.hardware;
  j["training"] = training_json(sc.training);
  j["global_batch_samples"] = num(p.global_batch_samples);
  j["tokens_per_step"] = num(p.tokens_per_step);

  j["step_time_s"] = num(p.step_time_s);
  j["parts"] = parts_json(p);
  j["bounds"] = {{"perfect_overlap_s", num(p.step_perfect_overlap_s)}, {"no_overlap_s", num(p.step_no_overlap_s)}};
  j["simulation"] = simulation_json(p);
  j["trace_file"] = trace_file.empty() ? json(nullptr) : json(trace_file);

  j["tokens_per_s"] = num(p.tokens_per_s);
  j["tokens_per_s_per_gpu"] = num(p.tokens_per_s_per_gpu);
  j["samples_per_s"] = num(p.samples_per_s);
  j["model_flops_per_step"] = num(p.model_flops_per_step);
  j["hardware_flops_per_step"] = num(p.hardware_flops_per_step);
  j["mfu"] = num(p.mfu);
  j["hfu"] = num(p.hfu);
  j["peak_tflops"] = num(p.peak_tflops);
  j["peak_dtype"] = str(name(p.peak_dtype));

  j["steps_per_epoch"] = num(p.steps_per_epoch);
  j["time_per_epoch_s"] = num(p.time_per_epoch_s);
  j["cost_per_epoch_usd"] = opt(p.cost_per_epoch_usd);
  j["price_per_gpu_hour_usd"] = opt(sc.price_per_gpu_hour_usd);
  j["dataset"] = {{"tokens", opt(sc.dataset.tokens)}, {"samples", opt(sc.dataset.samples)}};

  j["memory_per_gpu_bytes"] = num(p.memory.total_bytes);
  j["fits"] = fits(p.memory);
  j["memory"] = memory_json(p.memory);
  j["collectives"] = collectives_json(p);
  j["fabric"] = fabric_json(p.fabric);
  j["assumptions"] = p.assumptions;
  j["notes"] = sc.notes;
  j["measured"] = measured_json(sc, p);
  return dump(j);
}

std::string scale_json(const Scenario& sc, const std::vector<ScaleRow>& rows, bool fixed_batch) {
  const auto base = scale_baseline(rows);
  json out = {{"scenario", sc.name},
              {"baseline_gpus", base ? json(rows[*base].gpus) : json(nullptr)},
              {"price_per_gpu_hour_usd", opt(sc.price_per_gpu_hour_usd)},
              {"global_batch_fixed", fixed_batch},
              {"rows", json::array()}};
  for (const ScaleRow& r : rows)
    out["rows"].push_back({{"gpus", r.gpus},
                           {"nodes", r.nodes},
                           {"step_time_s", num(r.step_time_s)},
                           {"comm_exposed_s", num(r.comm_exposed_s)},
                           {"tokens_per_s", num(r.tokens_per_s)},
                           {"tokens_per_s_per_gpu", num(r.tokens_per_s_per_gpu)},
                           {"mfu", num(r.mfu)},
                           {"time_per_epoch_s", num(r.time_per_epoch_s)},
                           {"cost_per_epoch_usd", opt(r.cost_per_epoch_usd)},
                           {"usd_per_million_tokens", opt(r.usd_per_million_tokens)},
                           {"baseline", r.baseline},
                           {"speedup", num(r.speedup)},
                           {"scaling_efficiency", num(r.scaling_efficiency)},
                           {"memory_per_gpu_bytes", num(r.memory_per_gpu_bytes)},
                           {"verdict", str(name(r.verdict))},
                           {"fits", r.fits()},
                           {"micro_batch", r.micro_batch},
                           {"grad_accum", r.grad_accum},
                           {"global_batch", r.global_batch}});
  return dump(out);
}

namespace {

json models_json() {
  json a = json::array();
  for (const TransformerSpec& m : model_catalog())
    a.push_back({{"name", m.name},
                 {"aliases", m.aliases},
                 {"hf_ids", m.hf_ids},
                 {"parameters", parameter_count(m)},
                 {"published_parameters", m.published_params ? json(*m.published_params) : json(nullptr)},
                 {"layers", m.layers},
                 {"hidden", m.hidden},
                 {"heads", m.heads},
                 {"kv_heads", m.kv_heads},
                 {"head_dim", m.head_dim()},
                 {"ffn_hidden", m.ffn_hidden},
                 {"vocab", m.vocab},
                 {"seq_len", m.seq_len},
                 {"source", m.source}});
  return a;
}

json gpus_json() {
  json a = json::array();
  for (const GpuSpec& g : gpu_catalog()) {
    json peaks = json::object();
    for (const auto& [dtype, tflops] : g.peak_tflops) peaks[std::string(name(dtype))] = num(tflops);
    a.push_back({{"name", g.name},
                 {"display_name", g.display_name},
                 {"arch", str(name(g.arch))},
                 {"peak_tflops", peaks},
                 {"memory_bytes", num(g.memory_bytes)},
                 {"memory_bw_GBps", num(g.memory_bw_GBps)},
                 {"nvlink_gen", g.nvlink_gen},
                 {"nvlink_links", g.nvlink_links},
                 {"nvlink_GBps_per_link", num(g.nvlink_GBps_per_link)},
                 {"pcie_gen", g.pcie_gen},
                 {"pcie_lanes", g.pcie_lanes},
                 {"tdp_w", num(g.tdp_w)},
                 {"source", g.source}});
  }
  return a;
}

json boxes_json() {
  json a = json::array();
  for (const BoxSpec& b : box_catalog())
    a.push_back({{"name", b.name},
                 {"display_name", b.display_name},
                 {"gpu", b.gpu},
                 {"gpus", b.gpus},
                 {"fabric", str(name(b.fabric))},
                 {"nvlink", b.nvlink},
                 {"nvswitches", b.nvswitches},
                 {"links_per_gpu", b.links_per_gpu},
                 {"pcie", b.pcie},
                 {"pcie_switches", b.pcie_switches},
                 {"cpus", b.cpus},
                 {"p2p", b.p2p},
                 {"nic", b.nic},
                 {"nics", b.nics},
                 {"host", b.host ? json{{"cpu", b.host->cpu},
                                        {"cores", b.host->cores},
                                        {"memory_GiB", b.host->memory_GiB},
                                        {"memory_bw_GBps", b.host->memory_bw_GBps},
                                        {"source", b.host->source}}
                                 : json(nullptr)},
                 {"price", b.price ? json{{"usd_per_gpu_hour", b.price->usd_per_gpu_hour},
                                          {"kind", b.price->kind},
                                          {"date", b.price->date},
                                          {"source", b.price->source}}
                                   : json(nullptr)},
                 {"source", b.source}});
  return a;
}

json clusters_json() {
  json a = json::array();
  for (const ClusterSpec& c : cluster_catalog()) {
    const BoxSpec* box = find_box(c.box);
    json network = nullptr;
    if (c.network)
      network = {{"nic", c.network->nic},
                 {"nics_per_node", c.network->nics_per_node},
                 {"topology", str(name(c.network->topology))},
                 {"oversubscription", num(c.network->oversubscription)},
                 {"nodes_per_leaf", c.network->nodes_per_leaf}};
    a.push_back({{"name", c.name},
                 {"box", c.box},
                 {"nodes", c.nodes},
                 {"gpus", box ? json(static_cast<long long>(box->gpus) * c.nodes) : json(nullptr)},
                 {"network", network},
                 {"source", c.source}});
  }
  return a;
}

json links_json() {
  json a = json::array();
  for (const LinkSpec& l : link_catalog())
    a.push_back({{"name", l.name},
                 {"nccl_class", str(name(l.nccl_class))},
                 {"line_rate_GBps", num(l.line_rate_GBps)},
                 {"effective_GBps", num(l.effective_GBps)},
                 {"latency_us", num(l.latency_us)},
                 {"nvls", l.nvls},
                 {"source", l.source}});
  return a;
}

json algorithms_json() {
  json a = json::array();
  for (const AlgorithmInfo& info : collective_algorithms())
    a.push_back({{"name", info.name}, {"description", info.description}});
  return a;
}

}  // namespace

std::string catalog_json(const std::vector<CatalogSection>& sections) {
  json out = json::object();
  for (CatalogSection s : sections) {
    const std::string key(name(s));
    switch (s) {
      case CatalogSection::models:
        out[key] = models_json();
        break;
      case CatalogSection::gpus:
        out[key] = gpus_json();
        break;
      case CatalogSection::boxes:
        out[key] = boxes_json();
        break;
      case CatalogSection::clusters:
        out[key] = clusters_json();
        break;
      case CatalogSection::links:
        out[key] = links_json();
        break;
      case CatalogSection::algorithms:
        out[key] = algorithms_json();
        break;
    }
  }
  return dump(out);
}

namespace {

json summary_json(const ErrorSummary& s) {
  return {{"count", s.count},
          {"skipped", s.skipped},
          {"median_abs_error_pct", s.median_abs_error_pct},
          {"p90_abs_error_pct", s.p90_abs_error_pct},
          {"max_abs_error_pct", s.max_abs_error_pct},
          {"ordering_accuracy", s.ordering_pairs > 0 ? json(s.ordering_accuracy) : json(nullptr)},  // no pairs
          {"ordering_pairs", s.ordering_pairs}};
}

}  // namespace

namespace {

/// The overall memory figures with each source's under "sources".
json memory_summary_json(const std::vector<MemorySummary>& sums) {
  auto one = [](const MemorySummary& m) {
    return json{{"count", m.count},
                {"median_abs_error_pct", m.median_abs_error_pct},
                {"p90_abs_error_pct", m.p90_abs_error_pct},
                {"max_abs_error_pct", m.max_abs_error_pct},
                {"predicted", m.predicted},
                {"false_oom", m.false_oom.size()},
                {"false_oom_ids", m.false_oom}};
  };
  json out = one(sums.front());
  json sources = json::array();
  for (std::size_t i = 1; i < sums.size(); ++i) {
    json s = one(sums[i]);
    s["source"] = sums[i].group.substr(std::string("source: ").size());
    sources.push_back(std::move(s));
  }
  out["sources"] = std::move(sources);
  return out;
}

}  // namespace

std::string validate_json(const std::vector<ValidationRow>& rows, bool pairs) {
  json runs = json::array();
  for (const ValidationRow& r : rows) {
    runs.push_back({{"id", r.id},
                    {"metric", r.metric},
                    {"measured", r.measured},
                    {"predicted", r.predicted ? json(*r.predicted) : json(nullptr)},
                    {"error_pct", r.error_pct ? json(*r.error_pct) : json(nullptr)},
                    {"predicted_fit_free", r.predicted_fit_free ? json(*r.predicted_fit_free) : json(nullptr)},
                    {"error_pct_fit_free", r.error_pct_fit_free ? json(*r.error_pct_fit_free) : json(nullptr)},
                    {"status", r.status},
                    {"source", r.source},
                    {"trust", r.trust},
                    {"strategy", r.strategy},
                    {"gpu", r.gpu},
                    {"assumptions", r.assumptions}});
    if (r.breakdown) {
      const ValidationRow::Breakdown& b = *r.breakdown;
      runs.back()["predicted_breakdown_s"] = {{"step", b.step_s},           {"compute_busy", b.compute_busy_s},
                                              {"comm_busy", b.comm_busy_s}, {"comm_exposed", b.comm_exposed_s},
                                              {"gemm", b.gemm_s},           {"attention", b.attention_s},
                                              {"memory_bound", b.memory_s}, {"launch_bound", b.launch_s},
                                              {"optimizer", b.optimizer_s}};
    }
    if (r.collective) {
      const CollectiveFields& k = *r.collective;
      json& c = runs.back();
      c["kind"] = "collective";
      c["collective"] = r.strategy;
      c["bytes"] = k.bytes;
      c["nodes"] = k.nodes;
      c["gpus"] = r.gpus;
      c["network"] = k.network;
      c["chosen"] = k.chosen;
      c["fed_constant"] = k.fed_constant ? json(*k.fed_constant) : json(nullptr);
    }
    if (r.memory_verdict) runs.back()["memory_verdict"] = str(name(*r.memory_verdict));
    if (r.memory_measured_bytes) {
      runs.back()["memory_measured_gib"] = *r.memory_measured_bytes / kBytesPerGiB;
      runs.back()["memory_predicted_gib"] =
          r.memory_predicted_bytes ? json(*r.memory_predicted_bytes / kBytesPerGiB) : json(nullptr);
      runs.back()["memory_error_pct"] = r.memory_error_pct ? json(*r.memory_error_pct) : json(nullptr);
    }
    if (!r.categories.empty()) {  // probe records: kernel time by category
      json cats = json::array();
      for (const CategoryComparison& c : r.categories)
        cats.push_back({{"category", c.category},
                        {"measured_s", c.measured_s},
                        {"predicted_s", c.predicted_s},
                        {"error_pct", c.error_pct ? json(*c.error_pct) : json(nullptr)}});
      runs.back()["categories"] = std::move(cats);
    }
  }
  const auto sums = summarize(rows);
  json groups = json::array(), sources = json::array();
  const std::string source_prefix = "source: ";
  for (std::size_t i = 1; i < sums.size(); ++i) {
    json g = summary_json(sums[i]);
    g["group"] = sums[i].group;
    groups.push_back(g);
    if (sums[i].group.rfind(source_prefix, 0) == 0) {
      json s = summary_json(sums[i]);
      s["source"] = sums[i].group.substr(source_prefix.size());
      sources.push_back(s);
    }
  }
  // Each record's prediction is already leave-one-source-out (validate_run), so "summary"
  // and "summary_loso" are one figure; the fit-free one uses isolated kernel rates.
  json out = {{"runs", runs},
              {"summary", summary_json(sums[0])},
              {"summary_loso", summary_json(sums[0])},
              {"summary_fit_free", summary_json(summarize(fit_free_rows(rows))[0])},
              {"sources", sources},
              {"groups", groups},
              {"summary_memory", memory_summary_json(summarize_memory(rows))}};
  if (std::any_of(rows.begin(), rows.end(), [](const ValidationRow& r) { return r.collective.has_value(); })) {
    // Collective measurements: overall (rows that fed a constant kept out), then by node
    // count, collective, network and GPU.
    const std::vector<ErrorSummary> coll = summarize_collectives(rows);
    json c = summary_json(coll[0]);
    json cg = json::array();
    for (std::size_t i = 1; i < coll.size(); ++i) {
      json g = summary_json(coll[i]);
      g["group"] = coll[i].group;
      cg.push_back(std::move(g));
    }
    c["groups"] = std::move(cg);
    out["summary_collectives"] = std::move(c);
  }
  if (pairs) {
    json list = json::array();
    for (const OrderingPair& p : ordering_pair_list(rows))
      list.push_back({{"knob", p.knob},
                      {"low_id", p.low->id},
                      {"high_id", p.high->id},
                      {"measured_low", p.low->measured},
                      {"measured_high", p.high->measured},
                      {"predicted_low", *p.low->predicted},
                      {"predicted_high", *p.high->predicted},
                      {"right", p.right}});
    out["pairs"] = std::move(list);
  }
  return out.dump(2) + "\n";
}

namespace {

json plan_object(const Scenario& sc, const PlanResult& r) {
  json rejected = json::array();
  for (int i = 0; i < kPlanRejectReasons; ++i) {
    const auto reason = static_cast<PlanRejectReason>(i);
    rejected.push_back(
        {{"reason", str(key(reason))}, {"description", str(describe(reason))}, {"count", r.rejected[i]}});
  }
  json rows = json::array();
  int rank = 0;
  for (const PlanRow& row : r.top) {
    const PlanPoint& pt = row.point;
    const ParallelLayout& l = pt.layout;
    const Prediction& p = row.prediction;
    rows.push_back({{"rank", ++rank},
                    {"layout",
                     {{"name", pt.describe()},
                      {"strategy", str(name(l.dp_sharding))},
                      {"tp", l.tp},
                      {"sp", l.sp},
                      {"dp", l.dp},
                      {"pp", l.pp},
                      {"vpp", l.vpp},
                      {"schedule", str(name(l.schedule))},
                      {"cp", l.cp},
                      {"ep", l.ep},
                      {"offload", str(name(pt.offload))},
                      {"micro_batch", pt.micro_batch},
                      {"grad_accum", pt.grad_accum},
                      {"recompute", str(name(pt.recompute))}}},
                    {"step_time_s", num(p.step_time_s)},
                    {"lower_bound_s", num(row.lower_bound_s)},
                    {"tokens_per_s_per_gpu", num(p.tokens_per_s_per_gpu)},
                    {"mfu", num(p.mfu)},
                    {"memory_per_gpu_bytes", num(p.memory.total_bytes)},
                    {"comm_exposed_s", num(p.comm_exposed_s)},
                    {"bubble_s", num(bubble_s(p))},
                    // The run's time and cost: with a dataset, and a price for the cost (null otherwise).
                    {"time_per_epoch_s", num(p.time_per_epoch_s)},
                    {"cost_per_epoch_usd", opt(p.cost_per_epoch_usd)},
                    {"objective", num(row.objective)}});
  }
  const json out = {{"scenario", sc.name},
                    {"gpus", r.gpus},
                    {"global_batch", r.global_batch},
                    {"objective", str(name(r.objective))},
                    {"max_memory_fraction", num(r.max_memory_fraction)},
                    {"enumerated", r.enumerated},
                    {"screened", r.screened},
                    {"bounded", r.bounded},
                    {"simulated", r.simulated},
                    {"exact", r.exact},
                    {"gap", r.gap},
                    {"rejected", rejected},
                    {"invalid_example", r.invalid_example.empty() ? json(nullptr) : json(r.invalid_example)},
                    {"rows", rows},
                    {"why", r.why.empty() ? json(nullptr) : json(r.why)}};
  return out;
}

}  // namespace

std::string plan_json(const Scenario& sc, const PlanResult& r) { return dump(plan_object(sc, r)); }

std::string plan_range_json(const Scenario& sc, const std::vector<PlanResult>& results) {
  json plans = json::array(), summary = json::array();
  for (const PlanResult& r : results) {
    plans.push_back(plan_object(sc, r));
    if (r.top.empty()) {
      summary.push_back({{"gpus", r.gpus}, {"layout", nullptr}, {"step_time_s", nullptr}});
      continue;
    }
    const Prediction& p = r.top[0].prediction;
    summary.push_back({{"gpus", r.gpus},
                       {"layout", r.top[0].point.describe()},
                       {"step_time_s", num(p.step_time_s)},
                       {"tokens_per_s_per_gpu", num(p.tokens_per_s_per_gpu)},
                       {"mfu", num(p.mfu)},
                       {"memory_per_gpu_bytes", num(p.memory.total_bytes)},
                       {"comm_exposed_s", num(p.comm_exposed_s)},
                       {"bubble_s", num(bubble_s(p))}});
  }
  const json out = {{"scenario", sc.name},
                    {"global_batch", results.empty() ? 0 : results.front().global_batch},
                    {"plans", plans},
                    {"summary", summary}};
  return dump(out);
}

std::string need_json(const NeedResult& r) {
  auto point = [](const NeedPoint& p) {
    return json{{"node_Gbps", num(p.node_Gbps)},
                {"step_time_s", num(p.step_time_s)},
                {"comm_exposed_s", num(p.comm_exposed_s)},
                {"exposed_fraction", num(p.exposed_fraction)},
                {"mark", p.mark}};
  };
  json curve = json::array();
  for (const NeedPoint& p : r.curve) curve.push_back(point(p));
  const json out = {{"scenario", r.scenario},
                    {"nodes", r.nodes},
                    {"gpus", r.gpus},
                    {"target_exposed_fraction", num(r.target_fraction)},
                    {"tolerance", num(r.tolerance)},
                    {"nic", r.nic},
                    {"nic_Gbps", num(r.nic_Gbps)},
                    {"nics_per_node", r.nics_written},
                    {"needed_Gbps", r.needed_Gbps ? num(*r.needed_Gbps) : json(nullptr)},
                    {"met_at_min", r.met_at_min},
                    {"nics_needed", r.nics_needed},
                    {"predictions", r.predictions},
                    {"rule_of_thumb_Gbps", num(r.rule_of_thumb_Gbps)},
                    {"gradient_bytes", num(r.gradient_bytes)},
                    {"compute_s", num(r.compute_s)},
                    {"written", point(r.written)},
                    {"at_max", point(r.at_max)},
                    {"curve", curve}};
  return dump(out);
}

std::string compare_json(const std::vector<CompareRow>& rows) {
  json a = json::array();
  auto opt = [](const std::optional<double>& v) { return v ? num(*v) : json(nullptr); };
  for (const CompareRow& r : rows)
    a.push_back({{"scenario", r.scenario},
                 {"file", r.file},
                 {"model", r.model},
                 {"hardware", r.hardware},
                 {"gpu", r.gpu},
                 {"gpus", r.gpus},
                 {"step_time_s", num(r.step_time_s)},
                 {"time_per_epoch_s", num(r.time_per_epoch_s)},
                 {"tokens_per_s", num(r.tokens_per_s)},
                 {"tokens_per_step", num(r.tokens_per_step)},
                 {"cost_per_epoch_usd", opt(r.cost_per_epoch_usd)},
                 {"usd_per_million_tokens", opt(r.usd_per_million_tokens)},
                 {"memory_per_gpu_bytes", num(r.memory_per_gpu_bytes)},
                 {"verdict", str(name(r.verdict))},
                 {"fits", r.verdict != MemoryVerdict::oom},
                 {"price_per_gpu_hour_usd", opt(r.price_per_gpu_hour_usd)},
                 {"compute_busy_s", num(r.compute_busy_s)},
                 {"comm_exposed_s", num(r.comm_exposed_s)},
                 {"speedup", num(r.speedup)},
                 {"break_even_price_per_gpu_hour_usd", opt(r.break_even_price_per_gpu_hour_usd)},
                 {"why", r.why.empty() ? json(nullptr) : json(r.why)}});
  return dump(json{{"rows", a}});
}

}  // namespace stepcast::cli
