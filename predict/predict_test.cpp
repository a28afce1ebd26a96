// End-to-end rules of a prediction: bounds, limiting cases, monotonicity, bad input.
#include "predict/predict.hpp"

#include "base/json_input.hpp"
#include "model/variability.hpp"
#include "topologies/topology.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <string>

using namespace stepcast;
using json = nlohmann::json;

namespace {

std::string scenario(const std::string& strategy, const std::string& hardware, const std::string& extra = "") {
  return R"({"name": "t", "description": "test", "model": "gpt2-xl",
    "training": {"precision": "bf16_mixed", "optimizer": "adam", "micro_batch": 4, "grad_accum": 2,
                 "seq_len": 1024, "recompute": "none", "flash_attention": true)" +
         extra + R"(},
    "strategy": ")" +
         strategy + R"(", "hardware": )" + hardware + R"(, "dataset": {"tokens": 1e9}})";
}

const std::string kTwoNodes100g =
    R"({"box": "dgx-a100", "nodes": 2, "network": {"nic": "eth-100g", "nics_per_node": 1,)"
    R"("topology": "single_switch"}, "gpus": 16})";
const std::string kTwoNodes1g = R"({"box": "dgx-a100", "nodes": 2, "network": {"nic": "eth-1g", "nics_per_node": 1,)"
                                R"("topology": "single_switch"}, "gpus": 16})";

}  // namespace

TEST_CASE("the simulated step lies between the perfect-overlap and no-overlap bounds for every strategy") {
  for (const std::string& st : strategy_names()) {
    CAPTURE(st);
    Prediction p = predict(parse_scenario(scenario(st, kTwoNodes100g), "t.json"));
    CHECK(p.step_perfect_overlap_s <= p.step_time_s * (1 + 1e-12));
    CHECK(p.step_time_s <= p.step_no_overlap_s * (1 + 1e-12));
    CHECK(p.step_time_s >= p.compute_s * (1 - 1e-12));
    CHECK(p.mfu > 0);
    CHECK(p.mfu < 1);
  }
}

TEST_CASE("one GPU has no communication, so every bound equals compute") {
  Prediction p = predict(parse_scenario(scenario("zero3", R"({"box": "dgx-a100", "nodes": 1, "gpus": 1})"), "t.json"));
  CHECK(p.collectives.empty());
  CHECK(p.comm_total_s == 0);
  CHECK(p.step_time_s == doctest::Approx(p.compute_s));
  CHECK(p.step_no_overlap_s == doctest::Approx(p.step_perfect_overlap_s));
}

TEST_CASE("more inter-node bandwidth is never slower") {
  for (const std::string& st : strategy_names()) {
    CAPTURE(st);
    Prediction slow = predict(parse_scenario(scenario(st, kTwoNodes1g), "t.json"));
    Prediction fast = predict(parse_scenario(scenario(st, kTwoNodes100g), "t.json"));
    CHECK(fast.step_time_s <= slow.step_time_s);
  }
}

TEST_CASE("ZeRO-3 gathers every unit for forward, every layer again for backward, and reduces every unit once") {
  // Per micro-step: AG(P) forward + AG(P - root) backward (the root unit stays gathered)
  // + RS(P): about 1.5x DDP's AR(P) = RS(P) + AG(P).
  Prediction z3 = predict(parse_scenario(scenario("zero3", kTwoNodes100g), "t.json"));
  double forward = 0, backward = 0, reduced = 0;
  for (const auto& c : z3.collectives) {
    if (c.purpose == "parameter all-gather (forward)") forward += c.bytes * c.calls_per_step;
    if (c.purpose == "parameter all-gather (backward)") backward += c.bytes * c.calls_per_step;
    if (c.collective == Collective::reduce_scatter) reduced += c.bytes * c.calls_per_step;
  }
  CHECK(forward == doctest::Approx(reduced));
  CHECK(backward < forward);
  CHECK(backward > 0.8 * forward);  // the root unit (embeddings) is a small part
}

TEST_CASE("epoch time is steps x step time with a partial last step counted whole") {
  Prediction p = predict(parse_scenario(scenario("ddp", kTwoNodes100g), "t.json"));
  // 1e9 tokens / 1024 = 976,562.5 samples; 4 x 2 x 16 = 128 per step -> 7,630 steps (ceil).
  CHECK(p.steps_per_epoch == doctest::Approx(7630));
  CHECK(p.time_per_epoch_s == doctest::Approx(7630 * p.step_time_s));
}

TEST_CASE("a precision the GPU cannot run is bad input at /training/precision") {
  const std::string v100 = R"({"box": "dgx-1-v100", "nodes": 1, "gpus": 8})";
  try {
    parse_scenario(scenario("ddp", v100), "v.json");
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(e.json_path() == "/training/precision");
  }
}

TEST_CASE("NVLS on a box without NVLink SHARP is bad input at /strategy/algorithm") {
  std::string s = scenario("ddp", R"({"box": "dgx-a100", "nodes": 1, "gpus": 8})");
  s.replace(s.find(R"("strategy": "ddp")"), 17, R"("strategy": {"name": "ddp", "algorithm": "nvls"})");
  CHECK_THROWS_AS(parse_scenario(s, "n.json"), InputError);
}

TEST_CASE("GPU counts above one node must fill whole nodes") {
  const std::string twelve = R"({"box": "dgx-a100", "nodes": 2, "network": {"nic": "ib-hdr", "nics_per_node": 8,)"
                             R"("topology": "single_switch"}, "gpus": 12})";
  try {
    parse_scenario(scenario("ddp", twelve), "g.json");
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(e.json_path() == "/hardware/gpus");
  }
  Scenario s = parse_scenario(scenario("ddp", kTwoNodes100g), "t.json");
  CHECK_THROWS_AS(with_gpus(s, 12), std::invalid_argument);
  CHECK(with_gpus(s, 32).hardware.nodes == 4);
}

TEST_CASE("limiting case: with free communication the simulated step is compute alone") {
  PredictOptions o;
  o.free_communication = true;
  for (const std::string& st : strategy_names()) {
    CAPTURE(st);
    const Prediction p = predict(parse_scenario(scenario(st, kTwoNodes1g), "t.json"), o);
    CHECK(p.step_time_s == doctest::Approx(p.compute_s).epsilon(1e-6));
  }
}

TEST_CASE("limiting case: with every collective on the compute stream the step is the no-overlap bound") {
  PredictOptions o;
  o.comm_on_compute_stream = true;
  for (const std::string& st : strategy_names()) {
    CAPTURE(st);
    const Prediction p = predict(parse_scenario(scenario(st, kTwoNodes100g), "t.json"), o);
    CHECK(p.step_time_s == doctest::Approx(p.step_no_overlap_s).epsilon(1e-6));
    CHECK(p.comm_hidden_s == 0);
  }
}

TEST_CASE("the simulated peak memory agrees with the memory model within 10%") {
  // The model adds every term at its peak; the simulation adds the static terms and the
  // live allocations at each instant. Fragmentation is the model's alone. On a fast
  // network: over a slow one, unsharded gradients queue behind slow reductions in the
  // simulation (as in FSDP), which the model does not count.
  const std::string two_nodes_ib = R"({"box": "dgx-a100", "nodes": 2, "network": {"nic": "ib-hdr", "nics_per_node": 8,)"
                                   R"("topology": "single_switch"}, "gpus": 16})";
  for (const std::string& st : strategy_names()) {
    CAPTURE(st);
    const Prediction p = predict(parse_scenario(scenario(st, two_nodes_ib), "t.json"));
    double fragmentation = 0;
    for (const auto& t : p.memory.terms)
      if (t.name == "fragmentation") fragmentation = t.bytes;
    CHECK(p.simulated_peak_memory_bytes == doctest::Approx(p.memory.total_bytes - fragmentation).epsilon(0.10));
  }
}

TEST_CASE("a straggler node is simulated as its own class and slows every step it takes part in") {
  const std::string base = R"({"box": "dgx-a100", "nodes": 4, "network": {"nic": "ib-hdr", "nics_per_node": 8,)"
                           R"("topology": "single_switch"}, "gpus": 32)";
  const Prediction alike = predict(parse_scenario(scenario("ddp", base + "}"), "t.json"));
  const Prediction slow_gpu = predict(parse_scenario(
      scenario("ddp",
               base + R"(, "stragglers": [{"name": "throttled", "nodes": 1, "compute_speed": 0.8, "link_speed": 1}]})"),
      "t.json"));
  const Prediction slow_nic = predict(parse_scenario(
      scenario("ddp",
               base + R"(, "stragglers": [{"name": "bad NIC", "nodes": 1, "compute_speed": 1, "link_speed": 0.1}]})"),
      "t.json"));
  // Every collective waits for the throttled node: the step is paced by its compute.
  CHECK(slow_gpu.step_time_s > alike.step_time_s * 1.2);
  CHECK(slow_nic.step_time_s > alike.step_time_s);
  CHECK(slow_gpu.links.size() == 2 * alike.links.size());  // each class has its own links
  CHECK(slow_gpu.step_time_s <= slow_gpu.step_no_overlap_s * (1 + 1e-9));
  CHECK(slow_gpu.step_time_s >= slow_gpu.step_perfect_overlap_s * (1 - 1e-9));
  CHECK_THROWS_AS(
      with_gpus(
          parse_scenario(
              scenario("ddp",
                       base + R"(, "stragglers": [{"name": "x", "nodes": 1, "compute_speed": 0.5, "link_speed": 1}]})"),
              "t.json"),
          8),
      std::invalid_argument);
  CHECK_THROWS_AS(
      parse_scenario(
          scenario("ddp",
                   base + R"(, "stragglers": [{"name": "x", "nodes": 4, "compute_speed": 0.5, "link_speed": 1}]})"),
          "t.json"),
      InputError);
}

TEST_CASE("gpu_speed_cv: the step waits for the expected slowest GPU, more so on more GPUs, none on one") {
  const std::string base = R"({"box": "dgx-a100", "nodes": 4, "network": {"nic": "ib-hdr", "nics_per_node": 8,)"
                           R"("topology": "single_switch"}, "gpus": 32)";
  const Prediction alike = predict(parse_scenario(scenario("ddp", base + "}"), "t.json"));
  const Prediction spread = predict(parse_scenario(scenario("ddp", base + R"(, "gpu_speed_cv": 0.02})"), "t.json"));
  const Prediction none = predict(parse_scenario(scenario("ddp", base + R"(, "gpu_speed_cv": 0})"), "t.json"));
  CHECK(spread.step_time_s > alike.step_time_s);
  // The compute-bound share slows by at most 1 + cv x E[max of 32] = 1.041.
  CHECK(spread.step_time_s < alike.step_time_s * (1 + 0.02 * expected_max_standard_normal(32)) * (1 + 1e-9));
  CHECK(none.step_time_s == alike.step_time_s);
  const auto says = [](const Prediction& p) {
    return std::any_of(p.assumptions.begin(), p.assumptions.end(),
                       [](const std::string& a) { return a.find("the slowest of 32 GPUs") != std::string::npos; });
  };
  CHECK(says(spread));
  CHECK(!says(alike));
  const Prediction one =
      predict(with_gpus(parse_scenario(scenario("ddp", base + R"(, "gpu_speed_cv": 0.02})"), "t.json"), 1));
  const Prediction one_alike = predict(with_gpus(parse_scenario(scenario("ddp", base + "}"), "t.json"), 1));
  CHECK(one.step_time_s == one_alike.step_time_s);
  CHECK_THROWS_WITH_AS(parse_scenario(scenario("ddp", base + R"(, "gpu_speed_cv": 0.7})"), "t.json"),
                       doctest::Contains("/hardware/gpu_speed_cv"), InputError);
}

TEST_CASE("the collectives reported are the ones simulated: their totals add up to the bounds' communication total") {
  // Without degraded links every phase runs alone at the rate the lowering gave it, which is
  // what the closed-form bound sums; the report's rows carry those phases, never a re-costing.
  for (const std::string& st : strategy_names()) {
    for (const std::string algorithm : {"auto", "ring", "hierarchical"}) {
      CAPTURE(st);
      CAPTURE(algorithm);
      std::string s = scenario(st, kTwoNodes100g);
      s.replace(s.find("\"strategy\": \"" + st + "\""), 14 + st.size(),
                R"("strategy": {"name": ")" + st + R"(", "algorithm": ")" + algorithm + R"("})");
      Prediction p;
      try {
        p = predict(parse_scenario(s, "t.json"));
      } catch (const std::exception&) {
        continue;  // an algorithm that cannot run one of the strategy's collectives
      }
      double table_s = 0;
      for (const CollectiveUse& c : p.collectives) {
        table_s += c.total_s();
        double phases_s = 0;
        for (const CollectivePhase& ph : c.phases) phases_s += ph.time_s();
        CHECK(c.cost.time_s == phases_s);
        if (algorithm == "hierarchical" && c.level == FabricScope::all) CHECK(c.cost.algorithm == "hierarchical");
      }
      CHECK(table_s == doctest::Approx(p.comm_total_s).epsilon(1e-9));
    }
  }
}

TEST_CASE("a million micro-steps are predicted in closed form: the cost of one, the calls of all, within the bounds") {
  for (const std::string& st : {std::string("ddp"), std::string("zero2"), std::string("fsdp_full_shard")}) {
    CAPTURE(st);
    std::string many = scenario(st, kTwoNodes100g);
    many.replace(many.find("\"grad_accum\": 2"), 15, "\"grad_accum\": 1000000");
    std::string one_gpu = scenario(st, R"({"box": "dgx-a100", "nodes": 1, "gpus": 1})");
    one_gpu.replace(one_gpu.find("\"grad_accum\": 2"), 15, "\"grad_accum\": 1000000");
    const Prediction two = predict(parse_scenario(scenario(st, kTwoNodes100g), "t.json"));
    const Prediction p = predict(parse_scenario(many, "t.json"));
    // One GPU: every task on one stream, the step at its no-overlap bound up to 1 ns per
    // event rounded, a million times over (the closed form keeps that rounding).
    const Prediction q = predict(parse_scenario(one_gpu, "t.json"));
    CHECK(q.step_time_s >= q.step_no_overlap_s);
    CHECK(p.simulation_events < 10 * two.simulation_events);
    CHECK(p.step_time_s > 2e5 * two.step_time_s);  // 5e5 times the micro-steps, one optimizer step
    for (const CollectiveUse& c : p.collectives)
      if (c.purpose == "gradient reduce-scatter (bucketed)" || c.purpose == "gradient reduce-scatter")
        CHECK(c.calls_per_step >= 1'000'000);
  }
}

TEST_CASE("a pipeline split that counts a heavy LM head shortens the step; the split is an assumption") {
  // Llama-3-8B's head (V 128256 x h 4096) is ~2.4 layers of GEMM work: on 4 stages of 8
  // layers the last stage is the slowest; the balanced split moves layers off it.
  auto pipe = [](const char* split) {
    return std::string(R"({"model": "llama-3-8b", "hardware": {"box": "dgx-h100", "gpus": 8},
      "training": {"micro_batch": 1, "seq_len": 4096, "grad_accum": 16},
      "strategy": {"name": "ddp", "pp": 4, "pp_split": ")") +
           split + R"("}})";
  };
  const Prediction even = predict(parse_scenario(pipe("even"), "even.json"));
  const Prediction balanced = predict(parse_scenario(pipe("balanced"), "balanced.json"));
  CHECK(balanced.step_time_s < even.step_time_s);
  auto said = [](const Prediction& p, const std::string& what) {
    for (const std::string& a : p.assumptions)
      if (a.find(what) != std::string::npos) return true;
    return false;
  };
  CHECK(said(balanced, "pipeline split balanced"));
  CHECK(said(even, "pipeline split even: layers per chunk 8, 8, 8, 8"));
}

// ---------------------------------------------------------------------------------------
// The network: a rail fat tree's spine, tensor parallelism across nodes

namespace {

/// DGX H100 nodes with 8 NDR rails (47 GB/s each, 376 GB/s a node) on `topology`.
std::string h100_cluster(int nodes, const std::string& topology, double oversubscription = 1, int nodes_per_leaf = 0) {
  std::string net = R"({"nic": "ib-ndr", "nics_per_node": 8, "topology": ")" + topology + "\"";
  if (topology == "rail_fat_tree") net += ", \"oversubscription\": " + std::to_string(oversubscription);
  if (nodes_per_leaf > 0) net += ", \"nodes_per_leaf\": " + std::to_string(nodes_per_leaf);
  return R"({"box": "dgx-h100", "nodes": )" + std::to_string(nodes) + R"(, "network": )" + net + R"(}, "gpus": )" +
         std::to_string(8 * nodes) + "}";
}

const CollectiveUse* use_of(const Prediction& p, const std::string& purpose) {
  for (const CollectiveUse& u : p.collectives)
    if (u.purpose == purpose) return &u;
  return nullptr;
}

bool has_link(const Prediction& p, const std::string& prefix) {
  for (const LinkUse& l : p.links)
    if (l.name.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace

TEST_CASE("oversubscription: DDP on 4 nodes under one leaf per rail is the same at 1:1, 8:1 and on one switch") {
  // 4 nodes fit one leaf group (32 nodes, the DGX SuperPOD scalable unit): rail-aligned
  // rings stay on each rail's leaf switch and never climb to the spine.
  const double one =
      predict(parse_scenario(scenario("ddp", h100_cluster(4, "rail_fat_tree", 1)), "t.json")).step_time_s;
  const Prediction eight = predict(parse_scenario(scenario("ddp", h100_cluster(4, "rail_fat_tree", 8)), "t.json"));
  const double single =
      predict(parse_scenario(scenario("ddp", h100_cluster(4, "single_switch")), "t.json")).step_time_s;
  CHECK(eight.step_time_s == one);
  CHECK(single == one);
  CHECK_FALSE(has_link(eight, "spine"));
}

TEST_CASE("oversubscription: DDP across leaf groups slows at 8:1 as the spine share allows") {
  // 8 nodes in leaf groups of 2: a ring over adjacent nodes sends crossing = stride / P =
  // 1/2 of each node's bytes up the spine, whose share per node at 8:1 is 8 x 47 / 8 =
  // 47 GB/s: algbw <= 47 / (inter_load x 1/2).
  const Prediction open = predict(parse_scenario(scenario("ddp", h100_cluster(8, "rail_fat_tree", 1, 2)), "t.json"));
  const Prediction over = predict(parse_scenario(scenario("ddp", h100_cluster(8, "rail_fat_tree", 8, 2)), "t.json"));
  CHECK(over.step_time_s > open.step_time_s);
  CHECK(has_link(over, "spine uplinks per node"));
  CHECK_FALSE(has_link(open, "spine"));
  const CollectiveUse* u = use_of(over, "gradient all-reduce (bucketed)");
  REQUIRE(u != nullptr);
  for (const CollectivePhase& ph : u->phases) {
    CHECK(ph.spine_load == doctest::Approx(ph.inter_load * 0.5));
    CHECK(ph.algbw_GBps <= 47.0 / ph.spine_load * (1 + 1e-12));
  }
  // Beyond a leaf group with the SuperPOD's 32 nodes a leaf, the ring's crossing is 1/32:
  // at 8:1 the spine allows 47 / (inter_load / 32), 4x the NICs' 376 / inter_load: unchanged.
  const double wide1 =
      predict(parse_scenario(scenario("ddp", h100_cluster(64, "rail_fat_tree", 1)), "t.json")).step_time_s;
  const double wide8 =
      predict(parse_scenario(scenario("ddp", h100_cluster(64, "rail_fat_tree", 8)), "t.json")).step_time_s;
  CHECK(wide8 == doctest::Approx(wide1));
}

TEST_CASE("oversubscription: pipeline stages a leaf group apart send every byte across the spine") {
  // pp 2 over 2 nodes (stage stride = 1 node) in leaf groups of 1: crossing = 1. A GPU's
  // send runs at its NIC share 376 / 8 = 47 GB/s at 1:1 and at 47 / 8 GB/s at 8:1.
  auto pp_scenario = [](double k) {
    json j = json::parse(scenario("ddp", h100_cluster(2, "rail_fat_tree", k, 1)));
    j["training"]["grad_accum"] = 4;
    j["strategy"] = json{{"name", "ddp"}, {"pp", 2}};
    return parse_scenario(j.dump(), "t.json");
  };
  const Prediction one = predict(pp_scenario(1));
  const Prediction eight = predict(pp_scenario(8));
  const CollectiveUse* a = use_of(one, "pipeline p2p (activations)");
  const CollectiveUse* b = use_of(eight, "pipeline p2p (activations)");
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  CHECK(a->phases[0].algbw_GBps == doctest::Approx(47.0));
  CHECK(b->phases[0].algbw_GBps == doctest::Approx(47.0 / 8));
  CHECK(b->phases[0].spine_load == doctest::Approx(b->phases[0].inter_load));
  CHECK(eight.step_time_s > one.step_time_s);
  // A send between two stages is named as one, not as the hierarchical collective it is not.
  CHECK(a->cost.algorithm == "p2p");
  CHECK(a->cost.protocol == "Simple");
  CHECK(one.pipeline_stages == 2);
}

TEST_CASE("tensor parallelism across nodes: tp 16 on two DGX H100 runs NCCL's two-level collective") {
  // Llama-2-7B (32 heads and KV heads, MLP 11008: all divisible by 16). The TP group is both
  // nodes' 16 GPUs: each layer's forward all-reduces b·s·h·2 bytes = 1 x 2048 x 4096 x 2
  // (Megatron, two per layer), costed on fabric(2 nodes, 8 GPUs): ring over NVLink then the NICs.
  json j = json::parse(scenario("ddp", h100_cluster(2, "single_switch")));
  j["model"] = "llama-2-7b";
  j["training"]["micro_batch"] = 1;
  j["training"]["seq_len"] = 2048;
  j["strategy"] = json{{"name", "ddp"}, {"tp", 16}};
  const Prediction p = predict(parse_scenario(j.dump(), "t.json"));
  const CollectiveUse* tp = use_of(p, "tensor-parallel all_reduce");
  REQUIRE(tp != nullptr);
  CHECK(tp->ranks == 16);
  CHECK(tp->level == FabricScope::all);
  CHECK(tp->bytes == doctest::Approx(1.0 * 2048 * 4096 * 2));
  ClusterSpec c = parse_scenario(j.dump(), "t.json").hardware.cluster;
  c.nodes = 2;
  const CollectiveCost alone = collective_cost(Collective::all_reduce, tp->bytes, Topology::build(c).fabric(2, 8));
  CHECK(tp->cost.time_s == doctest::Approx(alone.time_s));
  // Slower than the same all-reduce on one node's NVLink (8 GPUs).
  CHECK(alone.time_s > collective_cost(Collective::all_reduce, tp->bytes, Topology::build(c).fabric(1, 8)).time_s);
  // Nothing overlaps the TP collectives (dp = 1): the step is the no-overlap bound, up to
  // the engine's 1 ns per task.
  CHECK(p.step_time_s == doctest::Approx(p.step_no_overlap_s).epsilon(1e-6));
  // Wider than a node, a TP group is whole nodes that divide the cluster's.
  j["strategy"]["tp"] = 24;  // 3 nodes' worth on 2 nodes
  std::string what;
  try {
    parse_scenario(j.dump(), "t.json");
  } catch (const InputError& e) {
    what = e.what();
  }
  CHECK_MESSAGE(
      what.find("/strategy/tp: expected a divisor of the 8 GPUs per node, or whole nodes") != std::string::npos, what);
}

TEST_CASE("a MoE model of one expert, top-1, no shared expert predicts exactly as the dense model") {
  // A router over one expert decides nothing: the layer is the dense MLP of the expert's width.
  auto with_model = [](const std::string& moe) {
    return R"({"name": "t", "model": {"name": "m", "layers": 4, "hidden": 1024, "heads": 16, "kv_heads": 16,
      "ffn_hidden": )" +
           std::string(moe.empty() ? "4096" : "2048") + R"(, "gated_mlp": true, "vocab": 32000,
      "seq_len": 2048, "tied_embeddings": false, "positional": "rope", "norm": "rmsnorm", "linear_bias": false,
      "source": "test")" +
           moe + R"(}, "training": {"micro_batch": 2, "grad_accum": 2, "flash_attention": true},
      "strategy": "zero2", "hardware": {"box": "dgx-h100", "gpus": 8}})";
  };
  const Scenario dense = parse_scenario(with_model(""), "moe.json");
  const Scenario one =
      parse_scenario(with_model(R"(, "moe": {"experts": 1, "top_k": 1, "expert_ffn": 4096})"), "moe.json");
  CHECK_FALSE(one.model.moe);
  const Prediction a = predict(dense);
  const Prediction b = predict(one);
  CHECK(a.step_time_s == b.step_time_s);
  CHECK(a.memory.total_bytes == b.memory.total_bytes);
  CHECK(a.model_flops_per_step == b.model_flops_per_step);
  // Two experts route: the model is MoE and costs more.
  const Scenario two =
      parse_scenario(with_model(R"(, "moe": {"experts": 2, "top_k": 1, "expert_ffn": 4096})"), "moe.json");
  REQUIRE(two.model.moe);
  CHECK(predict(two).step_time_s > a.step_time_s);
}
