// Rules of scenario checking: every bound of base/limits.hpp's workload section is an
// InputError naming the file, the JSON path and the bound, probed at the bound and one past
// it; the same checks run on a scenario however it was built (check_scenario, with_gpus).
#include "scenario/scenario.hpp"

#include "base/json_input.hpp"
#include "base/limits.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

using namespace stepcast;
using nlohmann::json;

namespace {

json good(const char* name = "minimal.json") {
  std::ifstream in(data_dir() / "tests" / "data" / "good" / name);
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

Scenario parse(const json& j) { return parse_scenario(j.dump(), "s.json"); }

/// The InputError message of parsing `j` ("" when it parses).
std::string error_of(const json& j) {
  try {
    parse(j);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

bool mentions(const std::string& message, const std::string& fragment) {
  return message.find(fragment) != std::string::npos;
}

/// An inline model with the shape of GPT-2 small.
json inline_model() {
  return json{{"name", "tiny"},          {"source", "test"},      {"layers", 12},
              {"hidden", 768},           {"heads", 12},           {"kv_heads", 12},
              {"ffn_hidden", 3072},      {"gated_mlp", false},    {"vocab", 50257},
              {"seq_len", 1024},         {"max_positions", 1024}, {"positional", "learned"},
              {"tied_embeddings", true}, {"norm", "layernorm"},   {"linear_bias", true}};
}

}  // namespace

TEST_CASE("the minimal scenario passes every check") {
  CHECK(error_of(good()).empty());
  CHECK(error_of(good("straggler.json")).empty());
}

TEST_CASE("a common strategy name is read as its canonical one, and said so; a misspelling is not") {
  json j = good();
  for (const char* given : {"fsdp", "FSDP2", "hsdp", "zero-3", "ZeRO_2", "zero 1"}) {
    CAPTURE(given);
    j["strategy"] = given;
    const Scenario s = parse(j);
    CHECK(s.strategy.name_given == given);
    const std::string note =
        "strategy \"" + std::string(given) + "\" read as " + std::string(name(s.strategy.layout.dp_sharding));
    CHECK(std::find(s.defaults.begin(), s.defaults.end(), note) != s.defaults.end());
  }
  j["strategy"] = "fsdp";
  CHECK(parse(j).strategy.layout.dp_sharding == Strategy::fsdp_full_shard);
  j["strategy"] = json{{"name", "zero-3"}};
  CHECK(parse(j).strategy.layout.dp_sharding == Strategy::zero3);
  j["strategy"] = "zero3";  // canonical: nothing to say
  CHECK(parse(j).strategy.name_given.empty());
  j["strategy"] = "fsdpp";
  CHECK_THROWS_AS(parse(j), InputError);
  CHECK_FALSE(strategy_alias("ddp"));
  CHECK_FALSE(strategy_alias("fsdp_no_shard"));
  CHECK_FALSE(strategy_alias("fsdpp"));
}

TEST_CASE("an inline model's problems come back at once, each with its path") {
  json j = good();
  j["model"] = json{{"name", "m"}, {"layers", 4}, {"heads", "eight"}};
  const std::string message = error_of(j);
  for (const char* path :
       {"/model/source", "/model/positional", "/model/norm", "/model/gated_mlp", "/model/tied_embeddings",
        "/model/linear_bias", "/model/hidden", "/model/heads", "/model/ffn_hidden", "/model/vocab", "/model/seq_len"}) {
    CAPTURE(path);
    CHECK(message.find(path) != std::string::npos);
  }
  CHECK(message.find("/model/layers") == std::string::npos);  // given and valid
}

TEST_CASE("a partial network keeps the box's NICs and topology for what it does not say, and says so") {
  json j = good();
  j["hardware"] = json{{"box", "dgx-h100"}, {"gpus", 16}, {"network", {{"nics_per_node", 4}}}};
  const Scenario s = parse(j);
  REQUIRE(s.hardware.cluster.network.has_value());
  CHECK(s.hardware.cluster.network->nics_per_node == 4);
  CHECK(s.hardware.cluster.network->nic == find_box("dgx-h100")->nic);
  CHECK(s.hardware.cluster.network->topology == NetworkTopology::single_switch);
  CHECK(std::any_of(s.defaults.begin(), s.defaults.end(), [](const std::string& d) {
    return mentions(d, "hardware.network: nic ib-ndr, topology single_switch (not stated: the dgx-h100's own)");
  }));
  j["hardware"]["network"] = json{{"topology", "rail_fat_tree"}};
  const Scenario fat = parse(j);
  CHECK(fat.hardware.cluster.network->oversubscription == 1.0);
  CHECK(fat.hardware.cluster.network->nics_per_node == find_box("dgx-h100")->nics);
  j["hardware"]["network"] = json{{"nic", "no-such-nic"}};
  CHECK(mentions(error_of(j), "/hardware/network/nic"));
}

TEST_CASE("GPU count: at most kMaxGpus, and no int wrap (2^32+2 nodes is not 2)") {
  json j = good();
  j["hardware"]["gpus"] = limits::kMaxGpus + 1;
  CHECK(mentions(error_of(j), "s.json: /hardware/gpus: expected an integer in 1..1048576"));
  j = good("straggler.json");
  j["hardware"]["nodes"] = (1LL << 32) + 2;
  CHECK(mentions(error_of(j), "/hardware/nodes"));
  j["hardware"]["nodes"] = limits::kMaxGpus / 8;  // at the bound: 1,048,576 GPUs of DGX A100s in the cluster
  CHECK(error_of(j).empty());
}

TEST_CASE("micro_batch, grad_accum and seq_len: positive and at most their bounds") {
  json j = good();
  j["training"]["micro_batch"] = limits::kMaxMicroBatch + 1;
  CHECK(mentions(error_of(j), "/training/micro_batch"));
  j = good();
  j["training"]["grad_accum"] = limits::kMaxGradAccum + 1;
  CHECK(mentions(error_of(j), "/training/grad_accum"));
  j = good();
  j["training"]["grad_accum"] = (1LL << 62);
  CHECK(mentions(error_of(j), "/training/grad_accum"));
  j = good();
  j["training"]["seq_len"] = 1000000000;
  CHECK(mentions(error_of(j), "/training/seq_len"));
  j["training"]["seq_len"] = 0;
  CHECK(mentions(error_of(j), "/training/seq_len"));
}

TEST_CASE("seq_len: within the model's learned position table") {
  json j = good();  // gpt2: 1024 learned positions
  j["training"]["seq_len"] = 1024;
  CHECK(error_of(j).empty());
  j["training"]["seq_len"] = 1025;
  const std::string e = error_of(j);
  CHECK(mentions(e, "/training/seq_len: expected at most 1024 (the learned position table of gpt2)"));
}

TEST_CASE("tokens per step (GPUs x micro_batch x grad_accum x seq_len) stay far below 2^53") {
  json j = good();  // 8 GPUs x 1024 tokens
  j["training"]["micro_batch"] = 1 << 20;
  j["training"]["grad_accum"] = 1 << 16;
  const std::string e = error_of(j);
  CHECK(mentions(e, "tokens per optimizer step"));
  CHECK(mentions(e, "/training/micro_batch"));
}

TEST_CASE("layers, hidden, heads and kv_heads of an inline model: bounded and dividing") {
  json j = good();
  j["model"] = inline_model();
  CHECK(error_of(j).empty());
  j["model"]["layers"] = limits::kMaxLayers + 1;
  CHECK(mentions(error_of(j), "/model/layers: expected an integer in 1..10000"));
  j["model"] = inline_model();
  j["model"]["layers"] = 1000000;
  CHECK(mentions(error_of(j), "/model/layers"));
  j["model"] = inline_model();
  j["model"]["hidden"] = limits::kMaxHidden * 2;
  j["model"]["heads"] = 16;
  j["model"]["kv_heads"] = 16;
  CHECK(mentions(error_of(j), "/model/hidden"));
  j["model"] = inline_model();
  j["model"]["vocab"] = limits::kMaxVocab + 1;
  CHECK(mentions(error_of(j), "/model/vocab"));
}

TEST_CASE("LoRA: a target listed twice is an InputError naming the second") {
  json j = good();
  j["training"]["lora"] = {{"rank", 8}, {"targets", {"q", "v", "q"}}};
  const std::string e = error_of(j);
  CHECK(mentions(e, "/training/lora/targets/2"));
  CHECK(mentions(e, "listed twice"));
  j["training"]["lora"] = {{"rank", 8}, {"targets", {"q", "v"}}};
  CHECK(error_of(j).empty());
}

TEST_CASE("prefetch_layers: 0 .. layers, never wrapped") {
  json j = good();
  j["strategy"]["prefetch_layers"] = 12;  // gpt2: 12 layers
  CHECK(error_of(j).empty());
  j["strategy"]["prefetch_layers"] = 13;
  CHECK(mentions(error_of(j), "/strategy/prefetch_layers: expected an integer in 0..12"));
  j["strategy"]["prefetch_layers"] = 1LL << 31;
  CHECK(mentions(error_of(j), "/strategy/prefetch_layers"));
}

TEST_CASE("bucket_mb: small buckets are refused by the bucket count they make, naming bucket_mb") {
  json j = good();
  j["strategy"]["name"] = "ddp";  // FSDP has no bucket (refused: next test)
  j["strategy"]["bucket_mb"] = 1e-6;
  const std::string e = error_of(j);
  CHECK(mentions(e, "/strategy/bucket_mb: expected a bucket of at least"));
  CHECK(mentions(e, "buckets per step, more than 100000"));
  j["strategy"]["bucket_mb"] = 0.01;  // ~25,000 buckets of a 124 M-parameter model: allowed (PyTorch allows it)
  CHECK(error_of(j).empty());
}

TEST_CASE("bucket_mb with an FSDP strategy is refused: FSDP has no gradient bucket") {
  json j = good();
  for (const char* fsdp : {"fsdp_full_shard", "fsdp_shard_grad_op", "fsdp_hybrid_shard", "fsdp_no_shard"}) {
    j["strategy"]["name"] = fsdp;
    j["strategy"]["bucket_mb"] = 25;
    CHECK(mentions(error_of(j), "/strategy/bucket_mb: FSDP reduce-scatters each wrapped unit"));
  }
  j["strategy"]["name"] = "zero3";
  CHECK(error_of(j).empty());
}

TEST_CASE("stragglers: 1 .. nodes-1 nodes in all, speeds in [0.01, 10] (1e-300 refused)") {
  json j = good("straggler.json");
  j["hardware"]["stragglers"][0]["compute_speed"] = 1e-300;
  CHECK(mentions(error_of(j), "/hardware/stragglers/0/compute_speed: expected a number in [0.01, 10]"));
  j = good("straggler.json");
  j["hardware"]["stragglers"][0]["link_speed"] = 10.5;
  CHECK(mentions(error_of(j), "/hardware/stragglers/0/link_speed"));
  j = good("straggler.json");
  j["hardware"]["stragglers"][0]["compute_speed"] = 0.01;  // at the bound
  CHECK(error_of(j).empty());
  j = good("straggler.json");
  j["hardware"]["stragglers"][0]["nodes"] = (1LL << 32) - 1;  // once wrapped to -1
  CHECK(mentions(error_of(j), "/hardware/stragglers/0/nodes"));
  j = good("straggler.json");
  j["hardware"]["stragglers"][0]["nodes"] = 2;  // 2 nodes in use
  CHECK(mentions(error_of(j), "/hardware/stragglers/0/nodes: expected an integer in 1..1"));
}

TEST_CASE("data set and price: finite and bounded") {
  json j = good();
  j["dataset"]["tokens"] = 1e300;
  CHECK(mentions(error_of(j), "/dataset/tokens"));
  j = good();
  j["price_per_gpu_hour_usd"] = 1e9;
  CHECK(mentions(error_of(j), "/price_per_gpu_hour_usd"));
  j["price_per_gpu_hour_usd"] = 2.5;
  CHECK(error_of(j).empty());
}

TEST_CASE("check_scenario: the same checks on a scenario built in code, with the caller's paths") {
  Scenario s = parse(good());
  ScenarioSource where;
  where.file = "runs.jsonl:7";
  where.micro_batch = "/batch/micro_batch";
  where.gpus_per_node = "/hardware/gpus_per_node";
  CHECK_NOTHROW(check_scenario(s, where));
  Scenario bad = s;
  bad.training.micro_batch = 0;
  CHECK_THROWS_WITH_AS(check_scenario(bad, where), doctest::Contains("runs.jsonl:7: /batch/micro_batch"), InputError);
  bad = s;
  bad.hardware.gpus_per_node = 0;
  CHECK_THROWS_WITH_AS(check_scenario(bad, where), doctest::Contains("/hardware/gpus_per_node"), InputError);
  bad = s;
  bad.model.heads = 0;
  CHECK_THROWS_AS(check_scenario(bad, where), InputError);
  bad = s;
  bad.model.kv_heads = 5;  // does not divide 12 heads
  CHECK_THROWS_WITH_AS(check_scenario(bad, where), doctest::Contains("divisor of heads"), InputError);
}

TEST_CASE("with_gpus: the GPU bound and the same checks") {
  const Scenario s = parse(good());
  CHECK_THROWS_AS(with_gpus(s, static_cast<int>(limits::kMaxGpus) + 8), std::invalid_argument);
  CHECK(with_gpus(s, 4).hardware.gpus() == 4);
}

TEST_CASE("at the global batch, more GPUs run fewer micro-steps, then smaller micro-batches; indivisible refused") {
  Scenario s = parse(good());
  s.training.micro_batch = 4;
  s.training.grad_accum = 2;
  s = with_gpus(s, 4);  // 4 x 2 x 4 ranks = 32 sequences
  REQUIRE(global_batch_sequences(s) == 32);
  const Scenario two = with_gpus_at_global_batch(s, 2);  // 16 a replica: mb 4 x ga 4
  CHECK(two.training.micro_batch == 4);
  CHECK(two.training.grad_accum == 4);
  const Scenario eight = with_gpus_at_global_batch(s, 8);  // 4 a replica: mb 4 x ga 1
  CHECK(eight.training.micro_batch == 4);
  CHECK(eight.training.grad_accum == 1);
  const Scenario sixteen = with_gpus_at_global_batch(s, 16);  // 2 a replica: the micro-batch shrinks
  CHECK(sixteen.training.micro_batch == 2);
  CHECK(sixteen.training.grad_accum == 1);
  for (const Scenario* x : {&two, &eight, &sixteen}) CHECK(global_batch_sequences(*x) == 32);
  CHECK_THROWS_WITH_AS(with_gpus_at_global_batch(s, 3), doctest::Contains("does not split over 3"),
                       std::invalid_argument);
  // 6 a replica from a micro-batch of 4: the largest divisor no larger, 3 x 2.
  s.training.micro_batch = 4;
  s.training.grad_accum = 3;  // 4 x 3 x 4 = 48
  const Scenario six = with_gpus_at_global_batch(s, 8);
  CHECK(six.training.micro_batch == 3);
  CHECK(six.training.grad_accum == 2);
}

namespace {
json two_dgx_a100() {
  return json{{"box", "dgx-a100"},
              {"nodes", 2},
              {"gpus", 16},
              {"network", {{"nic", "eth-100g"}, {"nics_per_node", 1}, {"topology", "single_switch"}}}};
}
}  // namespace

TEST_CASE("a named algorithm must run every collective the strategy issues: tree cannot all-gather") {
  json j = good();  // FSDP FULL_SHARD on one DGX A100: all-gathers and reduce-scatters
  j["strategy"]["algorithm"] = "tree";
  CHECK(
      mentions(error_of(j), "/strategy/algorithm: fsdp_full_shard issues all_gather (all), which \"tree\" cannot run"));
  j["strategy"]["name"] = "ddp";  // all-reduce only: tree runs it
  CHECK(error_of(j).empty());
  j["strategy"]["algorithm"] = "hierarchical";  // one node
  CHECK(mentions(error_of(j), "hierarchical needs at least 2 nodes"));
  j["hardware"] = two_dgx_a100();
  CHECK(error_of(j).empty());
}

TEST_CASE(
    "tensor parallelism: tp divides the node's GPUs, the heads and the MLP; sp needs tp >= 2 and divides "
    "the sequence; no LoRA") {
  json j = good();  // gpt2: 12 heads, ffn 3072, one DGX A100 of 8 GPUs, seq 1024
  j["strategy"]["tp"] = 4;
  j["strategy"]["sp"] = true;
  CHECK(error_of(j).empty());
  j["strategy"]["tp"] = 3;  // divides 12 heads, not the 8 GPUs of the node
  CHECK(mentions(error_of(j), "/strategy/tp: expected a divisor of the 8 GPUs per node"));
  j["strategy"]["tp"] = 8;  // divides the node, not the 12 heads
  CHECK(mentions(error_of(j), "/strategy/tp: expected a divisor of the heads (12)"));
  j["strategy"]["tp"] = 1;
  CHECK(mentions(error_of(j), "/strategy/sp: sequence parallelism needs tp >= 2"));
  j["strategy"]["tp"] = 2;
  j["training"]["seq_len"] = 1023;
  CHECK(mentions(error_of(j), "/strategy/sp: sequence parallelism splits the sequence"));
}

TEST_CASE("tp_comm_overlap needs sequence parallelism, as Megatron-Core's --tp-comm-overlap") {
  json j = good();  // gpt2 on one DGX A100
  j["strategy"]["tp"] = 4;
  j["strategy"]["tp_comm_overlap"] = true;
  CHECK(mentions(error_of(j), "/strategy/tp_comm_overlap: TP communication overlap needs sequence parallelism"));
  j["strategy"]["sp"] = true;
  CHECK(error_of(j).empty());
  j["strategy"]["tp_comm_overlap"] = "yes";
  CHECK(mentions(error_of(j), "/strategy/tp_comm_overlap"));
}

TEST_CASE("sp_keep_gathered needs sequence parallelism and excludes Megatron's re-gathering overlaps") {
  json j = good();  // gpt2 on one DGX A100
  j["strategy"]["tp"] = 4;
  j["strategy"]["sp_keep_gathered"] = true;
  CHECK(mentions(error_of(j), "/strategy/sp_keep_gathered: keeping the all-gathered GEMM inputs needs sequence"));
  j["strategy"]["sp"] = true;
  CHECK(error_of(j).empty());
  j["strategy"]["tp_backward_overlap"] = true;
  CHECK(mentions(error_of(j), "/strategy/sp_keep_gathered: tp_comm_overlap and tp_backward_overlap re-gather"));
}

TEST_CASE("overlap_grad_reduce needs a pipeline: without one DDP and ZeRO reduce during the backward already") {
  json j = good();
  j["strategy"] = json{{"name", "ddp"}, {"overlap_grad_reduce", true}};
  CHECK(mentions(error_of(j),
                 "/strategy/overlap_grad_reduce: the gradient-reduction overlap applies under pipeline "
                 "parallelism (pp >= 2)"));
  j["strategy"]["pp"] = 2;
  CHECK(error_of(j).empty());
}

TEST_CASE("overlap_param_gather needs zero1 or zero2 (the distributed optimizer's all-gather)") {
  json j = good();  // gpt2 on one DGX A100: 8 DP ranks
  j["strategy"] = json{{"name", "ddp"}, {"overlap_param_gather", true}};
  CHECK(mentions(error_of(j), "/strategy/overlap_param_gather: the parameter all-gather overlap needs zero1 or zero2"));
  j["strategy"]["name"] = "zero1";
  CHECK(error_of(j).empty());
}

TEST_CASE("model {hf_config: path}: a Hugging Face config.json relative to the scenario file") {
  json j = good();
  j["model"] = json{{"hf_config", "../hf/gpt2.json"}};
  // The scenario names a file in tests/data/good, so the path resolves to tests/data/hf.
  const std::string file = (data_dir() / "tests" / "data" / "good" / "s.json").string();
  const Scenario s = parse_scenario(j.dump(), file);
  CHECK(s.model.name == "gpt2");
  CHECK(s.model.hidden == 768);
  CHECK(mentions(s.model.source, "gpt2.json"));
  CHECK(parameter_count(s.model) == 124439808);  // as the catalog's gpt2
  // Which name it took and which keys of the config were read are said under Assumptions.
  CHECK(std::any_of(s.defaults.begin(), s.defaults.end(), [](const std::string& d) {
    return mentions(d, "model \"gpt2\" (named after its file)") && mentions(d, "keys read: ") &&
           mentions(d, "n_embd") && mentions(d, "n_layer");
  }));

  j["model"] = json{{"hf_config", "../hf/no-such.json"}};
  std::string what;
  try {
    parse_scenario(j.dump(), file);
  } catch (const InputError& e) {
    what = e.what();
  }
  CHECK_MESSAGE(mentions(what, "/model/hf_config"), what);
  CHECK_MESSAGE(mentions(what, "does not exist"), what);
  j["model"] = json{{"hf_config", "../hf/gpt2.json"}, {"layers", 3}};
  CHECK_MESSAGE(mentions(error_of(j), "/model/layers"), error_of(j));
}

TEST_CASE(
    "pipeline parallelism: tp x pp divides the GPUs, ddp or zero1 within a stage, interleaved with vpp >= 2 "
    "and micro-batches in groups of pp") {
  json j = good();  // gpt2: 12 layers, 8 GPUs
  j["strategy"] = json{{"name", "zero1"}, {"pp", 4}};
  j["training"]["grad_accum"] = 8;
  CHECK(error_of(j).empty());
  j["strategy"]["pp"] = 3;  // 3 does not divide 8 GPUs
  CHECK(mentions(error_of(j), "/strategy/pp: expected tp x pp (1 x 3) to divide the 8 GPUs"));
  j["strategy"]["pp"] = 4;
  j["strategy"]["name"] = "fsdp_full_shard";
  CHECK(mentions(error_of(j), "/strategy/name: a pipeline runs ddp or zero1 within each stage"));
  j["strategy"]["name"] = "ddp";
  j["strategy"]["vpp"] = 2;  // implies the interleaved schedule
  CHECK(error_of(j).empty());
  j["training"]["grad_accum"] = 6;  // not a multiple of pp = 4
  CHECK(mentions(error_of(j), "grad_accum must be a multiple"));
  j["training"]["grad_accum"] = 8;
  j["strategy"]["schedule"] = "1f1b";  // 1F1B with chunks
  CHECK(mentions(error_of(j), "/strategy/vpp: the interleaved schedule and vpp >= 2 go together"));
  j["strategy"]["schedule"] = "1f1c";
  CHECK(mentions(error_of(j), "did you mean \"1f1b\""));
}

TEST_CASE(
    "context parallelism: tp x cp x pp divides the GPUs, 2·cp divides a causal sequence, flash attention, "
    "cp_comm needs cp >= 2") {
  json j = good();  // gpt2, seq 1024, 8 GPUs
  j["strategy"] = json{{"name", "zero1"}, {"cp", 4}};
  CHECK(error_of(j).empty());
  CHECK(parse(j).strategy.layout.dp == 2);  // 8 GPUs = cp 4 x dp 2
  j["strategy"]["cp_comm"] = "all_gather";
  CHECK(error_of(j).empty());
  j["strategy"]["cp_comm"] = "allgather";
  CHECK(mentions(error_of(j), "/strategy/cp_comm"));
  j["strategy"]["cp_comm"] = "ring";
  j["strategy"]["cp"] = 3;
  CHECK(mentions(error_of(j), "/strategy/cp: expected tp x cp x pp (1 x 3 x 1) to divide the 8 GPUs"));
  j["strategy"]["cp"] = 8;
  j["training"]["seq_len"] = 1000;  // 8 divides it, 16 chunks do not
  CHECK(mentions(error_of(j), "expected 2 x cp to divide seq_len 1000"));
  j["training"]["seq_len"] = 1024;
  j["training"]["flash_attention"] = false;
  CHECK(mentions(error_of(j), "context parallelism runs on a flash-class attention kernel"));
  j["training"]["flash_attention"] = true;
  j["strategy"] = json{{"name", "zero1"}, {"cp_comm", "all_gather"}};
  CHECK(mentions(error_of(j), "/strategy/cp_comm: a context-parallel exchange needs cp >= 2"));
}

TEST_CASE(
    "CPU offload: a strategy that offloads it, a box with a catalogued host, delayed_update with the "
    "optimizer's offload only") {
  json j = good();  // FSDP FULL_SHARD on a DGX A100
  j["strategy"] = json{{"name", "zero2"}, {"offload", "optimizer"}, {"delayed_update", true}};
  CHECK(error_of(j).empty());
  j["strategy"]["name"] = "ddp";
  CHECK(mentions(error_of(j), "/strategy/offload: optimizer offload with ddp"));
  j["strategy"] = json{{"name", "fsdp_full_shard"}, {"offload", "parameters"}};
  CHECK(error_of(j).empty());
  j["strategy"]["delayed_update"] = true;
  CHECK(mentions(error_of(j), "/strategy/delayed_update: the delayed parameter update is ZeRO-Offload's"));
  j["strategy"] = json{{"name", "zero2"}, {"delayed_update", true}};
  CHECK(mentions(error_of(j), "/strategy/delayed_update: the delayed parameter update needs offload: optimizer"));
  j["strategy"] = json{{"name", "zero2"}, {"offload", "gpu"}};
  CHECK(mentions(error_of(j), "/strategy/offload"));
  j["strategy"] = json{{"name", "zero2"}, {"offload", "optimizer"}};
  j["hardware"] = json{{"box", "rtx4090-pcie-8x"}, {"gpus", 8}};  // no host in the catalog
  CHECK(mentions(error_of(j), "has no host (CPU, memory bandwidth) in the catalog"));
}

TEST_CASE(
    "fp8 training: refused on a GPU without fp8 arithmetic; the fp8 all-gather needs fp8 and sharded "
    "parameters") {
  json j = good();  // FSDP FULL_SHARD on a DGX A100: no fp8 tensor cores
  j["training"]["precision"] = "fp8_mixed";
  CHECK(mentions(error_of(j),
                 "/training/precision: precision fp8_mixed needs fp8 arithmetic, which the "
                 "a100-sxm4-80gb does not support"));
  j["hardware"]["box"] = "dgx-h100";
  CHECK(error_of(j).empty());
  j["strategy"] = json{{"name", "fsdp_full_shard"}, {"fp8_all_gather", true}};
  CHECK(error_of(j).empty());
  j["strategy"]["name"] = "zero2";  // parameters are not gathered per layer
  CHECK(mentions(error_of(j), "/strategy/fp8_all_gather: the fp8 all-gather needs"));
  j["strategy"]["name"] = "fsdp_full_shard";
  j["training"]["precision"] = "bf16_mixed";
  CHECK(mentions(error_of(j), "/strategy/fp8_all_gather"));
}

TEST_CASE("mixed_precision autocast: DDP full training in 16-bit mixed precision, with fp32 gradient reduction") {
  json j = good();
  j["strategy"] = {{"name", "ddp"}};
  CHECK_FALSE(parse(j).training.autocast);
  j["training"]["mixed_precision"] = "autocast";
  const Scenario s = parse(j);
  CHECK(s.training.autocast);
  CHECK(s.strategy.reduce_fp32);  // fp32 parameters have fp32 gradients
  j["training"]["mixed_precision"] = "master_weights";
  CHECK_FALSE(parse(j).training.autocast);
  j["training"]["mixed_precision"] = "amp";
  CHECK(mentions(error_of(j), "/training/mixed_precision"));
}

TEST_CASE("mixed_precision autocast is refused where frameworks keep 16-bit parameters, at the key that says so") {
  json j = good();
  j["strategy"] = {{"name", "ddp"}};
  j["training"]["mixed_precision"] = "autocast";
  json zero = j;
  zero["strategy"] = {{"name", "zero2"}};
  CHECK(mentions(error_of(zero),
                 "/training/mixed_precision: autocast over fp32 parameters is modelled for strategy ddp"));
  json fp32 = j;
  fp32["training"]["precision"] = "fp32";
  CHECK(mentions(error_of(fp32), "/training/mixed_precision: autocast casts to 16 bits"));
  json lora = j;
  lora["training"]["lora"] = {{"rank", 8}, {"targets", {"q", "v"}}};
  CHECK(mentions(error_of(lora), "/training/mixed_precision: LoRA's frozen base"));
  json fused = j;
  fused["training"]["kernels"] = "fused";
  CHECK(mentions(error_of(fused), "/training/mixed_precision: the fused kernel profile"));
  json accumulate = j;
  accumulate["training"]["grad_accumulation"] = "fused";
  CHECK(mentions(error_of(accumulate), "/training/grad_accumulation: autocast's fp32 gradients"));
  json working = j;
  working["strategy"]["reduce_dtype"] = "working";
  CHECK(mentions(error_of(working), "/strategy/reduce_dtype"));
  working["strategy"]["reduce_dtype"] = "fp32";
  CHECK(error_of(working).empty());
}

TEST_CASE(
    "cuda_graphs: full_iteration alone, module captures the model has, misspellings named; moe_dispatcher "
    "and moe_a2a_overlap need experts") {
  json j = good();
  CHECK_FALSE(parse(j).training.cuda_graphs.any());
  j["training"]["cuda_graphs"] = {"attn", "mlp"};
  const CudaGraphs g = parse(j).training.cuda_graphs;
  CHECK((g.attn && g.mlp && !g.full_iteration));
  json typo = j;
  typo["training"]["cuda_graphs"] = {"full_iter"};
  CHECK(mentions(error_of(typo), "/training/cuda_graphs/0"));
  CHECK(mentions(error_of(typo), "did you mean \"full_iteration\""));
  json mixed = j;
  mixed["training"]["cuda_graphs"] = {"full_iteration", "attn"};
  CHECK(mentions(error_of(mixed), "full_iteration captures the whole step: name it alone"));
  json dense = j;
  dense["training"]["cuda_graphs"] = {"moe_router"};
  CHECK(mentions(error_of(dense), "is dense"));
  json dispatcher = good();
  dispatcher["strategy"]["moe_dispatcher"] = "hybridep";
  CHECK(mentions(error_of(dispatcher), "/strategy/moe_dispatcher"));
  dispatcher["strategy"]["moe_dispatcher"] = "hybrid";
  CHECK(mentions(error_of(dispatcher), "did you mean \"hybridep\""));
  json overlap = good();
  overlap["strategy"]["moe_a2a_overlap"] = true;
  CHECK(mentions(error_of(overlap), "/strategy/moe_a2a_overlap"));
}

TEST_CASE("recompute_modules: under selective recompute only, each a module the model has, misspellings named") {
  json j = good();
  j["training"]["recompute"] = "selective";
  CHECK(parse(j).training.recompute_modules == RecomputeModules{});  // core_attn, Megatron-Core's default
  j["training"]["recompute_modules"] = {"core_attn", "layernorm"};
  const RecomputeModules m = parse(j).training.recompute_modules;
  CHECK(m.core_attn);
  CHECK(m.layernorm);
  CHECK_FALSE(m.mlp);
  json typo = j;
  typo["training"]["recompute_modules"] = {"layernrom"};
  CHECK(mentions(error_of(typo), "/training/recompute_modules/0"));
  CHECK(mentions(error_of(typo), "did you mean \"layernorm\""));
  json none = j;
  none["training"]["recompute"] = "full";
  CHECK(mentions(error_of(none),
                 "/training/recompute_modules: modules are recomputed under training.recompute "
                 "\"selective\", not \"full\""));
  json empty = j;
  empty["training"]["recompute_modules"] = json::array();
  CHECK(mentions(error_of(empty), "expected at least one module"));
  json dense = j;
  dense["training"]["recompute_modules"] = {"mla_up_proj"};
  CHECK(mentions(error_of(dense), "has no \"mla\""));
  dense["training"]["recompute_modules"] = {"moe_act"};
  CHECK(mentions(error_of(dense), "is dense"));
  json op = j;
  op["training"]["recompute_modules"] = {"op_sac", "layernorm"};
  CHECK(mentions(error_of(op), "op_sac is torchtitan's whole policy: name it alone"));
  op["training"]["recompute_modules"] = {"op_sac"};
  CHECK(parse(op).training.recompute_modules.op_sac);
}
