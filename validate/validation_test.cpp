// Rules of validation: records read strictly, a record stepcast cannot represent is skipped
// with its reason, summaries and ordering follow their definitions, metrics follow the record's definition.
#include "validate/validation.hpp"

#include "base/json_input.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>

using namespace stepcast;

namespace {

// GCC 12 reports a false -Wrestrict on short string assignments here (GCC bug 105651).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

ValidationRow row(const std::string& id, double measured, double predicted, int gpus, std::string trust = "high") {
  ValidationRow r;
  r.id = id;
  r.source = "s";
  r.trust = std::move(trust);
  r.strategy = "ddp";
  r.gpu = "a100-sxm4-80gb";
  r.metric = "tokens_per_s_per_gpu";
  r.measured = measured;
  r.predicted = predicted;
  r.error_pct = 100 * (predicted - measured) / measured;
  r.status = "ok";
  r.gpus = gpus;
  r.model = "m";
  return r;
}

/// A small valid record: a model given by its shape (not in the catalog), one DGX H100 node.
nlohmann::json small_record() {
  std::ifstream in(data_dir() / "tests" / "data" / "good" / "runs.jsonl");
  std::string line;
  std::getline(in, line);
  nlohmann::json r = nlohmann::json::parse(line);
  r["id"] = "small";
  r["model"] = {{"name", "test-shape"}, {"arch", "gpt2"}, {"params", nullptr},  {"layers", 4},   {"hidden", 512},
                {"heads", 8},           {"kv_heads", 8},  {"ffn_hidden", 2048}, {"vocab", 1000}, {"seq_len", 512}};
  r["hardware"]["gpus"] = 8;
  r["hardware"]["nodes"] = 1;
  r["hardware"]["inter_node"] = nullptr;
  r["batch"] = {{"micro_batch", 2}, {"grad_accum", nullptr}, {"global_batch", 32}};
  return r;
}

/// Whether one of `row`'s assumptions contains `what`.
bool says(const ValidationRow& row, const std::string& what) {
  return std::any_of(row.assumptions.begin(), row.assumptions.end(),
                     [&](const std::string& a) { return a.find(what) != std::string::npos; });
}

/// The row of a record, or the InputError message it raises ("error: ...").
std::string outcome(const nlohmann::json& record) {
  try {
    const ValidationRow row = validate_run(parse_measured_run(record.dump(), "runs.jsonl", 3));
    return row.status;
  } catch (const InputError& e) {
    return std::string("error: ") + e.what();
  }
}

bool starts(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

TEST_CASE("records are read strictly and each becomes a prediction or a skip with its reason") {
  const auto runs = load_measured_runs(data_dir() / "tests" / "data" / "good" / "runs.jsonl");
  REQUIRE(runs.size() == 2);
  const ValidationRow ok = validate_run(runs[0]);
  CHECK(ok.status == "ok");
  REQUIRE(ok.predicted);
  CHECK(*ok.error_pct == doctest::Approx(100 * (*ok.predicted - ok.measured) / ok.measured));
  const ValidationRow skipped = validate_run(runs[1]);
  CHECK(skipped.status.rfind("skipped: activation checkpointing not stated", 0) == 0);
  CHECK_FALSE(skipped.predicted);
  CHECK_THROWS_AS(parse_measured_run(R"({"id": "x"})", "f.jsonl", 3), InputError);
}

TEST_CASE("summary: median and p90 of |error|, low-trust rows shown but left out, ordering over one-knob pairs") {
  // |errors| 10, 20, 30, 40 (%); a low-trust 90% row is left out.
  std::vector<ValidationRow> rows = {row("a", 100, 110, 8), row("b", 100, 80, 16), row("c", 100, 130, 32),
                                     row("d", 100, 60, 64), row("e", 100, 190, 8, "low")};
  rows[1].measured = 90;  // b: measured 90, predicted 80
  rows[1].error_pct = 100.0 * (80 - 90) / 90;
  const ErrorSummary s = summarize(rows)[0];
  CHECK(s.count == 4);
  // errors 10, 11.1, 30, 40: median = (11.1 + 30) / 2; p90 by linear interpolation.
  CHECK(s.median_abs_error_pct == doctest::Approx((100.0 / 9 + 30) / 2));
  CHECK(s.p90_abs_error_pct == doctest::Approx(30 + 0.7 * 10));
  CHECK(s.max_abs_error_pct == doctest::Approx(40));
  // Pairs differing only in GPU count: (a,b) measured 100 > 90, predicted 110 > 80: right;
  // (a,c), (a,d), (c,d) etc. have equal measured values and do not count; (b,c), (b,d):
  // measured 90 < 100, predicted 80 < 130 right, 80 > 60 wrong.
  CHECK(s.ordering_pairs == 3);
  CHECK(s.ordering_accuracy == doctest::Approx(2.0 / 3));
}

TEST_CASE(
    "ordering: the TP/PP layout is a knob, so a pair with another layout and another micro-batch is two "
    "knobs apart") {
  // BigScience's 48-node table: dp4 pp12 at micro-batch 2 against dp8 pp6 at micro-batch 1.
  ValidationRow a = row("pp12-mb2", 134.0, 121.6, 384), b = row("pp6-mb1", 139.8, 115.7, 384);
  a.tp = b.tp = 8;
  a.pp = 12, b.pp = 6;
  a.micro_batch = 2, b.micro_batch = 1;
  CHECK(summarize({a, b})[0].ordering_pairs == 0);
  b.micro_batch = 2;  // the layout alone differs: one knob; measured 134 < 139.8, predicted 121.6 > 115.7
  const ErrorSummary s = summarize({a, b})[0];
  CHECK(s.ordering_pairs == 1);
  CHECK(s.ordering_accuracy == 0);
}

TEST_CASE(
    "the attention kernel a record's notes name: FlashAttention-3 on Hopper runs flash3; FlashAttention-4 "
    "on Blackwell has no kernel table, so the record is skipped with that reason") {
  nlohmann::json r = small_record();  // 8 H100
  r["strategy"]["framework"] = "hf transformers";
  r["strategy"]["extras"] = {"flash_attention"};
  r["notes"] = "HF transformers, FA3 (H200) / FA4-beta (B200)";
  const ValidationRow hopper = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
  CHECK(hopper.status == "ok");
  CHECK(hopper.attention == "flash3");
  r["notes"] = "HF transformers";  // no kernel named: the GPU's default flash kernel
  CHECK(validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3)).attention == "flash");
  r["notes"] = "HF transformers, FA3 (H200) / FA4-beta (B200)";
  r["hardware"]["gpu"] = "b200-sxm-180gb";
  CHECK(starts(outcome(r), "skipped: FlashAttention-4 (named in the record's notes) has no kernel table"));
  r["hardware"]["gpu"] = "a100-sxm4-80gb";  // FA3 named, but not a Hopper GPU: the default kernel
  CHECK(validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3)).attention == "flash");
}

TEST_CASE("a record may name its attention kernel (extra attention_kernel_<name>); an unknown one is a skip") {
  nlohmann::json r = small_record();  // 8 H100
  r["strategy"]["extras"] = {"flash_attention", "attention_kernel_cudnn"};
  const ValidationRow cudnn = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
  CHECK(cudnn.status == "ok");
  CHECK(cudnn.attention == "cudnn");
  CHECK(says(cudnn, "cudnn attention (the record's extras)"));
  r["strategy"]["extras"] = {"attention_kernel_flash3"};  // names a fused kernel even without flash_attention
  CHECK(validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3)).attention == "flash3");
  r["hardware"]["gpu"] = "a100-sxm4-80gb";
  CHECK(starts(outcome(r), "skipped: extra attention_kernel_flash3 names a kernel its GPU cannot run"));
  r["strategy"]["extras"] = {"attention_kernel_magic"};
  CHECK(starts(outcome(r), "skipped: extra attention_kernel_magic names no attention kernel"));
}

TEST_CASE("a GPU name that picks one catalog entry resolves to it; one that picks several is a skip") {
  nlohmann::json r = small_record();
  r["hardware"]["gpu"] = "other:b300";
  const ValidationRow b300 = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
  CHECK(b300.status == "ok");
  CHECK(says(b300, "GPU \"b300\" read as the catalog's b300-sxm-288gb"));
  r["hardware"]["gpu"] = "other:B300";  // catalog keys are found case-insensitively
  CHECK(validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3)).status == "ok");
  r["hardware"]["gpu"] = "other:h100";  // SXM5 and PCIe
  CHECK(starts(outcome(r), "skipped: GPU \"h100\" is not precise enough for the catalog"));
}

TEST_CASE("on an NVL72 rack a record's 4-GPU nodes are compute trays: up to 72 GPUs share one NVLink domain") {
  nlohmann::json r = small_record();
  r["hardware"]["gpu"] = "other:gb200";
  r["hardware"]["gpus"] = 64;
  r["hardware"]["gpus_per_node"] = 4;
  r["hardware"]["nodes"] = 16;
  r["hardware"]["intra_node"] = nullptr;
  r["batch"] = {{"micro_batch", 2}, {"grad_accum", nullptr}, {"global_batch", 256}};
  const ValidationRow rack = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
  CHECK(rack.status == "ok");
  CHECK(says(rack, "compute trays of the gb200-nvl72: its 64 GPUs share the rack's one NVLink domain"));
  r["hardware"]["gpus"] = 128;  // two racks, split not stated
  r["hardware"]["nodes"] = 32;
  r["batch"]["global_batch"] = 512;
  CHECK(starts(outcome(r), "skipped: 128 GPUs span several gb200-nvl72 racks"));
}

TEST_CASE("a MoE record takes its shape from the catalog: by name, a parenthesised variant read as the model") {
  nlohmann::json r = small_record();  // 8 H100
  r["strategy"]["extras"] = {"moe", "expert_parallel_8"};
  r["model"] = {{"name", "Qwen3-30B-A3B (tokendrop)"},
                {"arch", "other"},
                {"params", nullptr},
                {"layers", nullptr},
                {"hidden", nullptr},
                {"heads", nullptr},
                {"kv_heads", nullptr},
                {"ffn_hidden", nullptr},
                {"vocab", nullptr},
                {"seq_len", 4096}};
  const ValidationRow moe = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
  CHECK(moe.status == "ok");
  CHECK(says(moe, "read as the catalog's qwen3-30b-a3b"));
  CHECK(says(moe, "expert parallelism 8 (the record's expert_parallel_8)"));
  r["model"]["name"] = "Mystery-MoE-100B";  // not in the catalog: never a dense prediction
  r["model"]["layers"] = 4;
  r["model"]["hidden"] = 512;
  r["model"]["heads"] = 8;
  r["model"]["vocab"] = 1000;
  CHECK(starts(outcome(r), "skipped: MoE model Mystery-MoE-100B is not in the catalog"));
  r["model"] = {{"name", "llama-3-8b"}, {"arch", "llama"},  {"params", nullptr},   {"layers", nullptr},
                {"hidden", nullptr},    {"heads", nullptr}, {"kv_heads", nullptr}, {"ffn_hidden", nullptr},
                {"vocab", nullptr},     {"seq_len", 4096}};
  CHECK(starts(outcome(r), "skipped: the record says MoE (extra moe) but its catalog model"));
}

TEST_CASE("an NVFP4 record (no precision, extra nvfp4) trains in fp4_mixed, which only Blackwell runs") {
  nlohmann::json r = small_record();  // 8 H100
  r["strategy"]["precision"] = nullptr;
  r["strategy"]["extras"] = {"nvfp4"};
  CHECK(starts(outcome(r), "error: runs.jsonl:3: /strategy/precision: precision fp4_mixed needs fp4 arithmetic"));
  r["hardware"]["gpu"] = "b200-sxm-180gb";
  const ValidationRow fp4 = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
  CHECK(fp4.status == "ok");
  CHECK(fp4.precision == "fp4_mixed");
  CHECK(says(fp4, "precision fp4_mixed (the record's nvfp4)"));
  CHECK_FALSE(says(fp4, "extras not modelled"));
  r["strategy"]["extras"] = nlohmann::json::array();
  CHECK(outcome(r) == "skipped: precision not stated");
}

TEST_CASE("Megatron-Core records (NeMo, Megatron-Bridge) run fused kernels and fused attention unless stated") {
  nlohmann::json r = small_record();
  r["strategy"]["extras"] = nlohmann::json::array();
  r["strategy"]["framework"] = "nemo";
  const ValidationRow nemo = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
  CHECK(says(nemo, "fused kernels (the record's framework or extras)"));
  CHECK(says(nemo, "fused attention, not stated: Megatron-Core lets Transformer Engine pick"));
  CHECK(nemo.attention != "unfused");
  r["strategy"]["framework"] = "megatron-lm";  // 2021: no fused attention unless the record names it
  CHECK(validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3)).attention == "unfused");
}

TEST_CASE("BigScience's tr11 runs at 320 GPUs or more run under CUDA_LAUNCH_BLOCKING=1; its smaller ones do not") {
  const auto runs = load_measured_runs(data_dir() / "data" / "validation" / "runs.jsonl");
  auto blocking = [&](const std::string& id) {
    const auto it = std::find_if(runs.begin(), runs.end(), [&](const MeasuredRun& r) { return r.id == id; });
    REQUIRE(it != runs.end());
    const RunScenario rs = scenario_for(*it);  // the scenario alone: no simulation needed
    REQUIRE(rs.scenario);
    const bool said = std::any_of(rs.assumptions.begin(), rs.assumptions.end(),
                                  [](const std::string& a) { return a.rfind("CUDA_LAUNCH_BLOCKING=1", 0) == 0; });
    CHECK(said == rs.scenario->training.launch_blocking);
    return rs.scenario->training.launch_blocking;
  };
  CHECK(blocking("bigscience-prequel-a100-181b-g384-dp4tp8pp12-mbs1"));      // 384 GPUs, after the workaround
  CHECK_FALSE(blocking("bigscience-prequel-a100-80l-n10-dp1tp8pp10-fp16"));  // 80 GPUs, "Best TFLOPs"
}

TEST_CASE("a record goes through the scenario checks: bad counts are InputErrors with file:line and path") {
  nlohmann::json r = small_record();
  CHECK(outcome(r) == "ok");
  r["hardware"]["gpus_per_node"] = 0;
  CHECK(starts(outcome(r), "error: runs.jsonl:3: /hardware/gpus_per_node"));
  r["hardware"]["gpus_per_node"] = 1LL << 32;
  CHECK(starts(outcome(r), "error: runs.jsonl:3: /hardware/gpus_per_node"));
  r = small_record();
  r["batch"]["micro_batch"] = 0;  // with a global batch: once a division by zero
  CHECK(starts(outcome(r), "error: runs.jsonl:3: /batch/micro_batch"));
  for (const char* key : {"heads", "layers", "hidden", "kv_heads"}) {
    r = small_record();
    r["model"][key] = 0;
    CAPTURE(key);
    CHECK(starts(outcome(r), std::string("error: runs.jsonl:3: /model/") + key));
  }
  r = small_record();
  r["model"]["kv_heads"] = 3;  // does not divide 8 heads
  CHECK(starts(outcome(r), "error: runs.jsonl:3: /model/kv_heads"));
  r = small_record();  // fuzz F3: grad_accum 0 once reached the simulator's assert
  r["batch"]["grad_accum"] = 0;
  CHECK(starts(outcome(r), "error: runs.jsonl:3: /batch/grad_accum"));
  r = small_record();  // fuzz F4: micro_batch 0 with grad_accum stated
  r["batch"]["micro_batch"] = 0;
  r["batch"]["grad_accum"] = 2;
  CHECK(starts(outcome(r), "error: runs.jsonl:3: /batch/micro_batch"));
  {  // fuzz F2: a number beyond double range is an InputError naming the line and path
    std::string text = small_record().dump();
    const std::string value = "\"value\":1007.0";
    REQUIRE(text.find(value) != std::string::npos);
    text.replace(text.find(value), value.size(), "\"value\":1e400");
    CHECK_THROWS_WITH_AS(parse_measured_run(text, "runs.jsonl", 3), doctest::Contains("runs.jsonl:3: /measured/value"),
                         InputError);
  }
  r = small_record();
  r["hardware"]["gpus"] = 1LL << 40;
  CHECK(starts(outcome(r), "error: runs.jsonl:3: /hardware/gpus"));
}

TEST_CASE("a record's sequence beyond a catalog model's learned table is an InputError, unless its params size it") {
  nlohmann::json r = small_record();
  r["model"] = {{"name", "gpt2"}, {"arch", "gpt2"}, {"params", nullptr},  {"layers", 12},   {"hidden", 768},
                {"heads", 12},    {"kv_heads", 12}, {"ffn_hidden", 3072}, {"vocab", 50257}, {"seq_len", 1024}};
  CHECK(outcome(r) == "ok");
  r["model"]["seq_len"] = 65536;
  CHECK(starts(outcome(r), "error: runs.jsonl:3: /model/seq_len: expected at most 1024 (the learned position table"));
  // llm-foundry sizes MPT's learned table to the run's sequence; the record's params say so.
  r["model"]["seq_len"] = 2048;
  r["model"]["params"] = 124439808 + 1024 * 768;  // GPT-2 small with a 2,048-row table
  const ValidationRow row = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
  CHECK(row.status == "ok");
  CHECK(says(row, "learned position table of 2048 rows"));
}

TEST_CASE("a record's stated shape overrides the catalog model its name resolves to, and says so") {
  nlohmann::json r = small_record();
  r["model"] = {{"name", "gpt2"}, {"arch", "gpt2"}, {"params", nullptr},  {"layers", 12},   {"hidden", 768},
                {"heads", 12},    {"kv_heads", 12}, {"ffn_hidden", 3072}, {"vocab", 50257}, {"seq_len", 1024}};
  const ValidationRow same = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
  CHECK_FALSE(says(same, "as the record states"));
  // nanoGPT pads GPT-2's vocabulary to 50,304: the padded LM head is what ran.
  r["model"]["vocab"] = 50304;
  const ValidationRow padded = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
  CHECK(says(padded, "vocabulary 50304 as the record states (the catalog's gpt2 has 50257)"));
  CHECK(padded.predicted != same.predicted);
  // A stated head count that leaves no whole head width is a skip, not a silent catalog shape.
  r["model"]["heads"] = 7;
  r["model"]["kv_heads"] = 7;
  CHECK(starts(outcome(r), "skipped: the record's shape"));
}

TEST_CASE("a record outside the catalog takes the architecture of its arch's catalog model") {
  nlohmann::json r = small_record();
  r["model"]["arch"] = "bloom";
  const ValidationRow bloom = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
  CHECK(says(bloom,
             "the architecture of the catalog's bloom-176b (arch bloom): alibi positions, layernorm, a norm "
             "after the embeddings, linear biases"));
  r["model"]["arch"] = "falcon";
  const ValidationRow falcon = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
  CHECK(says(falcon, "parallel attention and MLP"));
  CHECK(falcon.predicted != bloom.predicted);
  // No catalog model stands for gpt-neox: the plain decoder, said as before.
  r["model"]["arch"] = "gpt-neox";
  const ValidationRow neox = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
  CHECK_FALSE(says(neox, "the architecture of the catalog's"));
  CHECK(says(neox, "model shape from the record (not in the catalog)"));
}

TEST_CASE("a record's parameter count decides tied embeddings where one choice is within 1% of it") {
  nlohmann::json r = small_record();
  r["model"]["arch"] = "llama";  // the reference, Llama-3-8B, unties its embeddings
  // 4 layers x (4·512² + 3·512·2048 + 2·512) + 512 + 1000·512 = 17,293,824 with one 1000 x 512
  // table; 17,805,824 with two.
  r["model"]["params"] = 17293824;
  const ValidationRow tied = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
  CHECK(says(tied, "tied embeddings: the record's 1.73e+07 parameters are this shape's count with them tied"));
  r["model"]["params"] = 17805824;
  const ValidationRow untied = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
  CHECK_FALSE(says(untied, "embeddings: the record's"));
  CHECK(says(untied, "untied embeddings"));  // the reference's, as before
  r["model"]["params"] = 30000000;           // neither: the reference's choice stands
  CHECK_FALSE(says(validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3)), "embeddings: the record's"));
}

TEST_CASE("measured.value must be > 0; unknown precision or checkpointing names are InputErrors with the path") {
  nlohmann::json r = small_record();
  for (double v : {0.0, -5.0}) {
    r["measured"]["value"] = v;
    CHECK(starts(outcome(r), "error: runs.jsonl:3: /measured/value"));
  }
  r = small_record();
  r["strategy"]["precision"] = "fp4";
  CHECK(starts(outcome(r), "error: runs.jsonl:3: /strategy/precision"));
  r = small_record();
  r["strategy"]["activation_checkpointing"] = "sometimes";
  CHECK(starts(outcome(r), "error: runs.jsonl:3: /strategy/activation_checkpointing"));
  r = small_record();
  r["strategy"]["precision"] = "bf16_pure";  // in the format, not modelled: an explicit skip
  CHECK(starts(outcome(r), "skipped: precision bf16_pure"));
}

TEST_CASE("source.type is one of the format's kinds; the source's other keys are free documentation") {
  nlohmann::json r = small_record();
  r["source"]["type"] = "tweet";
  CHECK(starts(outcome(r), "error: runs.jsonl:3: /source/type"));
  for (const char* kind : {"repo", "blog", "docs", "paper", "issue"}) {
    r["source"]["type"] = kind;
    r["source"]["anything"] = "kept as documentation";
    CHECK_FALSE(starts(outcome(r), "error"));
  }
}

TEST_CASE("only an explicit reason skips a record: a head dimension stepcast cannot represent") {
  nlohmann::json r = small_record();
  r["model"]["heads"] = 7;  // 512 / 7 is no whole head dimension
  r["model"]["kv_heads"] = 7;
  CHECK(starts(outcome(r), "skipped: cannot represent a head dimension"));
}

TEST_CASE("a record's row is ok only with a finite prediction and error; otherwise an internal error") {
  const MeasuredRun run = parse_measured_run(small_record().dump(), "runs.jsonl", 3);
  const ValidationRow row = validate_run(run);
  REQUIRE(row.status == "ok");
  CHECK(std::isfinite(*row.predicted));
  CHECK(std::isfinite(*row.error_pct));
  for (double bad : {std::nan(""), HUGE_VAL, -HUGE_VAL}) {
    ValidationRow r;
    CHECK_THROWS_WITH_AS(set_prediction(r, run, bad), doctest::Contains("runs.jsonl:3: record small"),
                         std::logic_error);
    CHECK(r.status.empty());
  }
}

namespace {

/// The definition, pair by pair: rows one knob apart (GPU count, strategy, link speed,
/// micro-batch, TP/PP layout), measured values different, right when predicted strictly in the same order.
std::pair<std::int64_t, double> brute_force_ordering(const std::vector<ValidationRow>& rows) {
  std::int64_t pairs = 0, right = 0;
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t j = i + 1; j < rows.size(); ++j) {
      const ValidationRow& a = rows[i];
      const ValidationRow& b = rows[j];
      if (a.source != b.source || a.metric != b.metric || a.model != b.model || a.seq_len != b.seq_len ||
          a.precision != b.precision || a.gpu != b.gpu || a.attention != b.attention)
        continue;
      const int differ = (a.gpus != b.gpus) + (a.strategy != b.strategy) + (a.link_gbps != b.link_gbps) +
                         (a.micro_batch != b.micro_batch) + (a.tp != b.tp || a.pp != b.pp);
      if (differ != 1 || a.measured == b.measured) continue;
      ++pairs;
      const bool m = a.measured < b.measured;
      if (m ? *a.predicted < *b.predicted : *a.predicted > *b.predicted) ++right;
    }
  return {pairs, pairs ? static_cast<double>(right) / static_cast<double>(pairs) : 1.0};
}

}  // namespace

TEST_CASE("ordering pairs: the grouped count equals the pair-by-pair definition") {
  std::mt19937 rng(7);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  std::vector<ValidationRow> rows;
  for (int i = 0; i < 600; ++i) {
    ValidationRow r = row("r" + std::to_string(i), 100 + pick(5), 100 + pick(5), 8 << pick(3));
    r.source = pick(2) ? "s1" : "s2";
    r.strategy = pick(2) ? "ddp" : "zero2";
    r.link_gbps = pick(2) ? 100 : 400;
    r.micro_batch = 1 + pick(2);
    r.tp = 1 + pick(2);
    r.attention = pick(4) ? "flash2" : "triton";
    r.pp = pick(3) ? 1 : 2;
    r.model = pick(4) ? "m" : "n";
    rows.push_back(r);
  }
  const auto [pairs, accuracy] = brute_force_ordering(rows);
  const ErrorSummary s = summarize(rows)[0];
  CHECK(pairs > 1000);
  CHECK(s.ordering_pairs == pairs);
  CHECK(s.ordering_accuracy == doctest::Approx(accuracy));
  // The listing holds the same pairs, wrong ones first, each measured low below high.
  const std::vector<OrderingPair> list = ordering_pair_list(rows);
  REQUIRE(static_cast<std::int64_t>(list.size()) == pairs);
  const auto right = std::count_if(list.begin(), list.end(), [](const OrderingPair& p) { return p.right; });
  CHECK(static_cast<double>(right) / static_cast<double>(pairs) == doctest::Approx(accuracy));
  CHECK(std::is_partitioned(list.begin(), list.end(), [](const OrderingPair& p) { return !p.right; }));
  for (const OrderingPair& p : list) CHECK(p.low->measured < p.high->measured);
}

TEST_CASE("summaries are O(n log n): 200,000 rows one knob apart summarize at once") {
  // Pair by pair this is 2e10 comparisons per summary (minutes); counted, a fraction of a second.
  std::vector<ValidationRow> rows;
  rows.reserve(200000);
  for (int i = 0; i < 200000; ++i) rows.push_back(row("r" + std::to_string(i), 100 + i % 1000, 50 + i % 997, 8 + i));
  const ErrorSummary s = summarize(rows)[0];
  CHECK(s.count == 200000);
  CHECK(s.ordering_pairs == 200000LL * 199999 / 2 - 200LL * 199 / 2 * 1000);  // all pairs but equal measured
}

TEST_CASE(
    "TFLOP/s per GPU follows the record's definition: hardware FLOPs with recompute, or causal model "
    "FLOPs with recompute excluded, or model FLOPs") {
  nlohmann::json r = small_record();
  r["measured"]["metric"] = "tflops_per_gpu";
  r["measured"]["value"] = 100;
  r["strategy"]["activation_checkpointing"] = "full";
  r["strategy"]["extras"] = {"flash_attention"};
  auto predicted = [&](const std::string& definition) {
    r["measured"]["definition"] = definition;
    const ValidationRow row = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
    REQUIRE(row.status == "ok");
    return *row.predicted;
  };
  const double hardware = predicted("hardware TFLOP/s per GPU, recompute included");
  const double causal = predicted("model TFLOP/s per GPU with causal attention FLOPs, recompute excluded");
  const double model = predicted("model TFLOP/s per GPU (6N + 12Lhs)");
  // One step, one time: the ratios are the FLOP counts'. Full recompute adds a forward
  // (a third of forward + backward) to the executed count; model FLOPs count attention
  // unhalved, so they exceed the causal count.
  CHECK(hardware / causal == doctest::Approx(4.0 / 3.0).epsilon(0.02));
  CHECK(model > causal);
}

TEST_CASE(
    "a record's CUDA graphs, MoE dispatcher and all-to-all overlap extras act; the overlap only where "
    "Megatron-Core runs it") {
  nlohmann::json r = small_record();  // 8 H100
  r["model"] = {{"name", "Qwen3-30B-A3B"}, {"arch", "other"},  {"params", nullptr},   {"layers", nullptr},
                {"hidden", nullptr},       {"heads", nullptr}, {"kv_heads", nullptr}, {"ffn_hidden", nullptr},
                {"vocab", nullptr},        {"seq_len", 4096}};
  r["strategy"]["extras"] = {"moe", "expert_parallel_8"};
  r["strategy"]["activation_checkpointing"] = "none";
  const ValidationRow plain = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
  REQUIRE(plain.status == "ok");
  r["strategy"]["extras"] = {"moe", "expert_parallel_8", "cuda_graphs_full_iteration", "hybridep", "moe_a2a_overlap"};
  const ValidationRow all = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
  REQUIRE(all.status == "ok");
  CHECK(says(all, "CUDA graphs full_iteration (the record's cuda_graphs_full_iteration)"));
  CHECK(says(all, "MoE dispatcher hybridep (the record's hybridep)"));
  CHECK(says(all, "expert-parallel all-to-alls beside another micro-batch's layers, the record's extras"));
  CHECK_FALSE(says(all, "extras not modelled"));
  CHECK(*all.predicted > *plain.predicted);            // throughput: the overlap hides all-to-all time
  r["strategy"]["activation_checkpointing"] = "full";  // Megatron-Core refuses the overlap with full recompute
  CHECK(says(validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3)),
             "the all-to-all overlap does not apply to this layout"));
}

TEST_CASE("a record's extras that change nothing are listed, never taken silently; tp_comm_overlap needs SP") {
  nlohmann::json r = small_record();
  r["strategy"]["extras"] = {"flash_attention", "fsdp_rate_limiter", "fsdp_auto_wrap_min_params_2K"};
  const ValidationRow row = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
  REQUIRE(row.status == "ok");
  CHECK(says(row, "extras not modelled, predicted without them: fsdp_rate_limiter, fsdp_auto_wrap_min_params_2K"));
  r["strategy"]["extras"] = {"flash_attention"};
  CHECK_FALSE(says(validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3)), "extras not modelled"));
  r["strategy"]["extras"] = {"flash_attention", "tp_comm_overlap"};  // small_record: no SP
  CHECK(validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3)).status ==
        "skipped: extra \"tp_comm_overlap\" without sequence parallelism is not modelled");
}

TEST_CASE("a stated inter-node fabric without a rate takes the catalog box of that GPU that ships with it") {
  nlohmann::json r = small_record();
  r["hardware"]["gpus"] = 16;
  r["hardware"]["nodes"] = 2;
  r["hardware"]["gpus_per_node"] = 8;
  r["batch"]["global_batch"] = 64;
  r["hardware"]["inter_node"] = {{"fabric", "efa"}, {"gbps_per_node", nullptr}};
  const std::string gpu = r["hardware"]["gpu"];
  const ValidationRow row = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
  REQUIRE(row.status == "ok");
  const bool p5 = says(row, "the aws-p5's network, 32 x efa-v2-100g per node (the record names efa");
  CHECK((gpu == "h100-sxm5-80gb") == p5);
  // A fabric no catalog box of the GPU has is an explicit skip, never a silent default.
  r["hardware"]["inter_node"]["fabric"] = "roce";
  const ValidationRow roce = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
  CHECK(roce.status.rfind("skipped: inter-node fabric roce stated without a rate", 0) == 0);
}

TEST_CASE("DeepSpeed's BF16_Optimizer reduces gradients in fp32: twice the bytes of a bf16 reduction") {
  nlohmann::json r = small_record();
  r["strategy"]["data_parallel"] = "ddp";
  r["strategy"]["framework"] = "megatron-deepspeed";
  r["strategy"]["extras"] = nlohmann::json::array();
  r["hardware"]["gpus"] = 16;
  r["hardware"]["nodes"] = 2;
  r["hardware"]["inter_node"] = {{"fabric", "infiniband"}, {"gbps_per_node", 800}};
  const ValidationRow plain = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
  r["strategy"]["extras"] = {"bf16_optimizer"};
  const ValidationRow bf16 = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
  REQUIRE(plain.status == "ok");
  REQUIRE(bf16.status == "ok");
  REQUIRE(plain.breakdown);
  REQUIRE(bf16.breakdown);
  CHECK(says(bf16, "reduced across data-parallel ranks in fp32"));
  // Only the gradient all-reduce is on the communication streams of a DDP step.
  CHECK(bf16.breakdown->comm_busy_s > 1.5 * plain.breakdown->comm_busy_s);
}

TEST_CASE("a CPU-offload record states no host: the catalog box's is assumed, skipped with --no-assume-host") {
  nlohmann::json r = small_record();  // one DGX H100 node
  r["strategy"]["data_parallel"] = "zero2";
  r["strategy"]["offload"] = "optimizer_cpu";
  const MeasuredRun run = parse_measured_run(r.dump(), "runs.jsonl", 3);
  CHECK(
      starts(validate_run(run, nullptr, "", false).status, "skipped: CPU offload: the record does not state its host"));
  const ValidationRow row = validate_run(run);
  CHECK(row.status == "ok");
  CHECK(says(row, "CPU offload of the optimizer"));
  // DDP offloads nothing in DeepSpeed: an explicit skip even with a host.
  r["strategy"]["data_parallel"] = "ddp";
  CHECK(starts(validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3), nullptr, "", true).status,
               "skipped: CPU offload (optimizer_cpu) with ddp"));
  r["strategy"]["offload"] = "nvme";
  CHECK(starts(outcome(r), "skipped: CPU offload (nvme) is not modelled"));
}

TEST_CASE(
    "context_parallel_<n> and virtual_pipeline_<n> extras set CP and the interleaved schedule; what the "
    "scenario checks refuse is a skip") {
  nlohmann::json r = small_record();  // 8 GPUs, 4 layers, seq 512, micro-batch 2, global batch 32
  r["strategy"]["extras"] = {"flash_attention", "context_parallel_2"};
  ValidationRow row = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
  REQUIRE(row.status == "ok");
  CHECK(row.cp == 2);
  CHECK(says(row, "context parallelism 2 (the record's context_parallel_2)"));
  CHECK_FALSE(says(row, "extras not modelled"));
  // A degree the sequence cannot be split by (2 x cp must divide 512), a missing flash kernel,
  // and a malformed degree are skips with their reason, never InputErrors.
  r["strategy"]["extras"] = {"flash_attention", "context_parallel_3"};
  CHECK(starts(outcome(r), "skipped: TP 1 x PP 1 x CP 3 does not divide the 8 GPUs"));
  r["strategy"]["extras"] = {"context_parallel_2"};
  CHECK(outcome(r) == "skipped: context parallelism without a flash-class attention kernel is not modelled");
  r["strategy"]["extras"] = {"flash_attention", "context_parallel_1"};
  CHECK(starts(outcome(r), "skipped: extra \"context_parallel_1\": expected a degree from 2"));
  r["strategy"]["extras"] = {"flash_attention", "context_parallel_x"};
  CHECK(starts(outcome(r), "skipped: extra \"context_parallel_x\""));
  r["strategy"]["extras"] = {"flash_attention", "context_parallel_2", "lora_r8_q_v"};
  CHECK(outcome(r) == "skipped: LoRA with context parallelism is not modelled");

  nlohmann::json p = small_record();
  p["strategy"]["pp"] = 2;
  p["strategy"]["data_parallel"] = "zero1";
  p["batch"]["global_batch"] = 16;  // 4 replicas x micro-batch 2 x 2 micro-batches
  p["strategy"]["extras"] = {"flash_attention", "pp_schedule_interleaved_1f1b", "virtual_pipeline_2"};
  row = validate_run(parse_measured_run(p.dump(), "runs.jsonl", 3));
  REQUIRE(row.status == "ok");
  CHECK(row.vpp == 2);
  CHECK(says(row, "pipeline schedule interleaved 1F1B, 2 model chunks per stage"));
  CHECK_FALSE(says(row, "pipeline schedule 1F1B (PipeDream-Flush"));
  // The interleaved schedule named without its chunk count cannot be guessed.
  p["strategy"]["extras"] = {"flash_attention", "pp_schedule_interleaved_1f1b"};
  CHECK(outcome(p) ==
        "skipped: interleaved pipeline schedule without its model chunks per stage (extra "
        "virtual_pipeline_<n>)");
  // 2 stages x 4 chunks need 8 layers; the model has 4.
  p["strategy"]["extras"] = {"flash_attention", "virtual_pipeline_4"};
  CHECK(outcome(p) == "skipped: 2 stages x 4 model chunks exceed the 4 layers");
  // Micro-batches in groups of pp: 3 micro-batches on 2 stages are not.
  p["strategy"]["extras"] = {"flash_attention", "virtual_pipeline_2"};
  p["batch"]["global_batch"] = 24;
  CHECK(starts(outcome(p), "skipped: the interleaved schedule as modelled runs micro-batches in groups of pp = 2"));
}

TEST_CASE("ordering pairs: the CP degree and the model chunks are part of the layout") {
  ValidationRow a = row("a", 100, 110, 8), b = row("b", 120, 100, 8);
  a.cp = 2;  // same GPUs and everything else: one knob (the layout) apart
  const ErrorSummary s = summarize({a, b})[0];
  CHECK(s.ordering_pairs == 1);  // measured 100 < 120, predicted 110 > 100: wrong
  CHECK(s.ordering_accuracy == 0.0);
  b.cp = 2;  // now identical in every knob: no pair
  CHECK(summarize({a, b})[0].ordering_pairs == 0);
  b.vpp = 2;  // the model chunks are a layout knob too
  CHECK(summarize({a, b})[0].ordering_pairs == 1);
}

TEST_CASE("a Megatron or NeMo record with SP and no tp_comm_overlap runs Megatron's async backward TP collectives") {
  nlohmann::json r = small_record();
  r["strategy"]["tp"] = 2;
  r["strategy"]["sp"] = true;
  r["batch"]["global_batch"] = 8;  // 4 replicas x micro-batch 2
  r["strategy"]["framework"] = "megatron-core";
  r["strategy"]["extras"] = {"flash_attention"};
  const std::string rule = "backward's TP collectives beside their input- and weight-gradient GEMMs";
  ValidationRow row = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
  REQUIRE(row.status == "ok");
  CHECK(says(row, rule));
  r["strategy"]["extras"] = {"flash_attention", "tp_comm_overlap"};  // userbuffers already include it
  CHECK_FALSE(says(validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3)), rule));
  r["strategy"]["extras"] = {"flash_attention"};
  r["strategy"]["framework"] = "hf accelerate";  // not Megatron's linear layers
  CHECK_FALSE(says(validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3)), rule));
}

TEST_CASE("async_tp runs as tp_comm_overlap under SP, a skip without; torchtitan's CP all-gathers K and V") {
  nlohmann::json r = small_record();
  r["strategy"]["tp"] = 2;
  r["strategy"]["sp"] = true;
  r["batch"]["global_batch"] = 8;  // 4 replicas x micro-batch 2
  r["strategy"]["extras"] = {"flash_attention", "async_tp"};
  ValidationRow row = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
  REQUIRE(row.status == "ok");
  CHECK(says(row, "async_tp as TP collectives beside their GEMMs"));
  CHECK_FALSE(says(row, "extras not modelled"));
  r["strategy"]["sp"] = false;
  CHECK(outcome(r) == "skipped: extra \"async_tp\" without sequence parallelism is not modelled");

  nlohmann::json c = small_record();
  c["strategy"]["framework"] = "torchtitan";
  c["strategy"]["extras"] = {"flash_attention", "context_parallel_2"};
  row = validate_run(parse_measured_run(c.dump(), "runs.jsonl", 3));
  REQUIRE(row.status == "ok");
  CHECK(says(row, "K and V all-gathered (PyTorch's context_parallel default"));
}

TEST_CASE("a torchtitan record runs PyTorch's eager fp32 cross-entropy and, selective, torchtitan's op-level policy") {
  nlohmann::json r = small_record();
  r["strategy"]["framework"] = "torchtitan";
  r["strategy"]["activation_checkpointing"] = "selective";
  ValidationRow row = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
  REQUIRE(row.status == "ok");
  CHECK(says(row, "three fp32 copies of the logits at its backward (torchtitan train.py loss_fn @ 9dec370"));
  CHECK(says(row, "selective checkpointing as torchtitan's op-level policy"));
  r["strategy"]["activation_checkpointing"] = "full";
  row = validate_run(parse_measured_run(r.dump(), "runs.jsonl", 3));
  CHECK_FALSE(says(row, "op-level policy"));
}

TEST_CASE("memory summary: |error| over the rows with a measured peak, every predicted oom a false one, by source") {
  std::vector<ValidationRow> rows;
  for (int i = 0; i < 4; ++i) {
    ValidationRow r = row("r" + std::to_string(i), 100, 100, 8);
    r.memory_verdict = MemoryVerdict::fits;
    r.memory_measured_bytes = 10e9;
    r.memory_predicted_bytes = (10 + i) * 1e9;  // 0, 10, 20, 30 %
    r.memory_error_pct = 10.0 * i;
    rows.push_back(r);
  }
  rows[3].memory_verdict = MemoryVerdict::oom;
  rows[3].source = "other";
  ValidationRow skipped = row("skipped", 100, 100, 8);
  skipped.status = "skipped: why";
  skipped.memory_verdict = MemoryVerdict::oom;  // not predicted: not counted
  rows.push_back(skipped);
  ValidationRow no_peak = row("no-peak", 100, 100, 8);
  no_peak.memory_verdict = MemoryVerdict::oom;  // predicted, no measured peak: a false oom all the same
  rows.push_back(no_peak);
  const std::vector<MemorySummary> m = summarize_memory(rows);
  REQUIRE(m.size() == 3);  // all, source s, source other
  CHECK(m[0].count == 4);
  CHECK(m[0].predicted == 5);
  CHECK(m[0].median_abs_error_pct == doctest::Approx(15));
  CHECK(m[0].max_abs_error_pct == doctest::Approx(30));
  CHECK(m[0].false_oom == std::vector<std::string>{"r3", "no-peak"});
  CHECK(m[1].group == "source: s");
  CHECK(m[1].count == 3);
  CHECK(m[1].false_oom == std::vector<std::string>{"no-peak"});
  CHECK(m[2].false_oom == std::vector<std::string>{"r3"});
}

TEST_CASE("a record's measured peak memory is read from its secondary metrics, in GB or GiB") {
  using nlohmann::json;
  CHECK(*memory_from_secondary(json::array({{{"metric", "gpu_memory"}, {"value", 56.87}, {"unit", "GB"}}})) ==
        doctest::Approx(56.87e9));
  CHECK(*memory_from_secondary(json::array({{{"metric", "gpu_memory"}, {"value", 2}, {"unit", "GiB"}}})) ==
        doctest::Approx(2.0 * 1024 * 1024 * 1024));
  CHECK_FALSE(memory_from_secondary(json::array({{{"metric", "mfu"}, {"value", 0.4}}})));
  CHECK_FALSE(memory_from_secondary(json()));
  CHECK_THROWS_AS(memory_from_secondary(json::array({{{"metric", "gpu_memory"}, {"value", 5}, {"unit", "MB"}}})),
                  std::invalid_argument);
  CHECK_THROWS_AS(memory_from_secondary(json::array({{{"metric", "gpu_memory"}, {"value", 0}, {"unit", "GB"}}})),
                  std::invalid_argument);
}

TEST_CASE("a probe record's caching-allocator peak is its measured memory unless a gpu_memory is given") {
  using nlohmann::json;
  const json reserved = {{"metric", "peak_memory_reserved"}, {"value", 3.0e9}, {"unit", "bytes"}};
  const json allocated = {{"metric", "peak_memory_allocated"}, {"value", 2.5e9}, {"unit", "bytes"}};
  CHECK(*memory_from_secondary(json::array({allocated, reserved})) == doctest::Approx(3.0e9));
  CHECK(*memory_from_secondary(json::array({reserved, {{"metric", "gpu_memory"}, {"value", 4}, {"unit", "GB"}}})) ==
        doctest::Approx(4e9));
  CHECK_FALSE(memory_from_secondary(json::array({allocated})));
  CHECK_THROWS_AS(
      memory_from_secondary(json::array({{{"metric", "peak_memory_reserved"}, {"value", 3}, {"unit", "GiB"}}})),
      std::invalid_argument);
}
