// Rules of framework defaults: a field is filled only where the record leaves it null, only
// for the framework whose launch scripts set it, and every default taken is an assumption.
#include "validate/record_defaults.hpp"

#include <doctest/doctest.h>

#include <algorithm>

namespace stepcast {
namespace {

MeasuredRun megatron_run() {
  MeasuredRun r;
  r.framework = "megatron-lm";
  r.hidden = 3072;
  r.gpus = 64;
  r.tp = 2;
  r.pp = 1;
  return r;
}

bool says(const std::vector<std::string>& assumed, const char* what) {
  return std::any_of(assumed.begin(), assumed.end(),
                     [&](const std::string& a) { return a.find(what) != std::string::npos; });
}

}  // namespace

TEST_CASE("a Megatron record without recompute, micro-batch or heads takes the framework's, each an assumption") {
  MeasuredRun r = megatron_run();
  std::vector<std::string> assumed;
  apply_framework_defaults(r, assumed);
  CHECK(r.checkpointing == "full");
  CHECK(r.micro_batch == 1);
  CHECK(r.heads == 3072 / 128);  // 128-wide heads
  CHECK_FALSE(r.precision);      // Megatron-LM's precision is not defaulted: only Megatron-DeepSpeed's
  CHECK(assumed.size() == 3);
  CHECK(says(assumed, "activation checkpointing full: not stated"));
}

TEST_CASE("Megatron-Core's packagings recompute nothing unless told: Megatron-Bridge and NeMo, not 2021 Megatron-LM") {
  for (const char* framework : {"megatron-bridge", "nemo"}) {
    MeasuredRun r = megatron_run();
    r.framework = framework;
    std::vector<std::string> assumed;
    apply_framework_defaults(r, assumed);
    CHECK(r.checkpointing == "none");
    CHECK(says(assumed, "activation checkpointing none: not stated"));
  }
  MeasuredRun stated = megatron_run();
  stated.framework = "megatron-bridge";
  stated.checkpointing = "selective";
  std::vector<std::string> assumed;
  apply_framework_defaults(stated, assumed);
  CHECK(stated.checkpointing == "selective");
}

TEST_CASE("a stated field is never changed by a default") {
  MeasuredRun r = megatron_run();
  r.checkpointing = "selective";
  r.micro_batch = 4;
  r.heads = 32;
  std::vector<std::string> assumed;
  apply_framework_defaults(r, assumed);
  CHECK(r.checkpointing == "selective");
  CHECK(r.micro_batch == 4);
  CHECK(r.heads == 32);
  CHECK(assumed.empty());
}

TEST_CASE("heads are defaulted only where the hidden size is a whole number of 128-wide heads") {
  MeasuredRun r = megatron_run();
  r.hidden = 3000;
  std::vector<std::string> assumed;
  apply_framework_defaults(r, assumed);
  CHECK_FALSE(r.heads);
}

TEST_CASE("a Megatron record of a catalog model takes no head default: the catalog's source names its heads") {
  MeasuredRun r = megatron_run();
  r.model_name = "megatron-gpt-3.6b";  // SC'21 Table 1: 32 heads of 96, not 24 of 128
  std::vector<std::string> assumed;
  apply_framework_defaults(r, assumed);
  CHECK_FALSE(r.heads);
  CHECK_FALSE(says(assumed, "attention heads"));
}

TEST_CASE("Megatron-DeepSpeed also takes bf16 from BigScience's launch script") {
  MeasuredRun r = megatron_run();
  r.framework = "megatron-deepspeed";
  std::vector<std::string> assumed;
  apply_framework_defaults(r, assumed);
  CHECK(r.precision == "bf16_mixed");
}

TEST_CASE("OPT-175B under metaseq: TP 8 and the 2M-token batch over the data-parallel ranks") {
  MeasuredRun r;
  r.framework = "metaseq (fairscale fsdp + megatron tp)";
  r.hidden = 12288;
  r.gpus = 992;
  r.pp = 1;
  r.seq_len = 2048;
  std::vector<std::string> assumed;
  apply_framework_defaults(r, assumed);
  CHECK(r.tp == 8);
  CHECK(r.grad_accum == 1);
  CHECK(r.offload == "none");
  CHECK(r.checkpointing == "full");
  // 2 x 1024 x 1024 tokens // (992 / 8 = 124 replicas) // 2048 tokens = 8 sequences per replica.
  CHECK(r.micro_batch == 8);
  CHECK_FALSE(r.heads);  // metaseq records are not given Megatron's head default
}

TEST_CASE("OPT sizes without a known model-parallel degree keep TP and the batch unstated") {
  MeasuredRun r;
  r.framework = "metaseq";
  r.hidden = 4096;  // OPT-6.7B
  r.gpus = 64;
  r.seq_len = 2048;
  std::vector<std::string> assumed;
  apply_framework_defaults(r, assumed);
  CHECK_FALSE(r.tp);
  CHECK_FALSE(r.micro_batch);
  CHECK(r.checkpointing == "full");
}

TEST_CASE("records of other frameworks are left as they are") {
  MeasuredRun r;
  r.framework = "llm-foundry";
  std::vector<std::string> assumed;
  apply_framework_defaults(r, assumed);
  CHECK_FALSE(r.checkpointing);
  CHECK_FALSE(r.micro_batch);
  CHECK(assumed.empty());
  MeasuredRun none;  // framework not stated
  apply_framework_defaults(none, assumed);
  CHECK(assumed.empty());
}

TEST_CASE("a nanotron record with TP and no sp runs sequence parallel: bench_cluster's tp_mode REDUCE_SCATTER") {
  MeasuredRun r;
  r.framework = "nanotron";
  r.tp = 4;
  std::vector<std::string> assumed;
  apply_framework_defaults(r, assumed);
  CHECK(r.sp == true);
  REQUIRE(assumed.size() == 1);
  CHECK(assumed[0].find("REDUCE_SCATTER") != std::string::npos);
  MeasuredRun stated = r;  // a stated sp is kept; without TP there is nothing to split
  stated.sp = false;
  MeasuredRun one;
  one.framework = "nanotron";
  one.tp = 1;
  assumed.clear();
  apply_framework_defaults(stated, assumed);
  apply_framework_defaults(one, assumed);
  CHECK(stated.sp == false);
  CHECK_FALSE(one.sp);
  CHECK(assumed.empty());
}

TEST_CASE("a Megatron-Bridge record takes its release recipe's recompute modules; one the table lacks, none") {
  std::vector<std::string> assumed;
  const auto defaults_of = [&](const char* id) {  // a Megatron-Bridge record stating no checkpointing
    MeasuredRun r;
    r.framework = "megatron-bridge";
    r.id = id;
    assumed.clear();
    apply_framework_defaults(r, assumed);
    REQUIRE_FALSE(assumed.empty());  // the recompute first (Megatron-LM's micro-batch default follows)
    return r;
  };
  const MeasuredRun mlp = defaults_of("mbridge-2604-gb200-deepseek-v3-g256-mxfp8-tp1pp4vp4ep64-mbs1-gbs4096");
  CHECK(mlp.checkpointing == "selective");  // v0.4.0: ["mlp"]
  REQUIRE(mlp.recompute_modules);
  CHECK(*mlp.recompute_modules == RecomputeModules{false, false, false, true});
  CHECK(assumed[0].find("Megatron-Bridge v0.4.0 @ 0fbfe7d3") != std::string::npos);
  // v0.5.0's GB300 preset lists no module: nothing recomputed.
  const MeasuredRun empty = defaults_of("mbridge-2606-gb300-deepseek-v3-g256-mxfp8-tp1pp2vp8ep32-mbs1-gbs15360");
  CHECK(empty.checkpointing == "none");
  CHECK_FALSE(empty.recompute_modules);
  CHECK(assumed[0].find("selective with no module stepcast models") != std::string::npos);
  const MeasuredRun unknown = defaults_of("mbridge-unknown");  // not in the table: the presets' general rule
  CHECK(unknown.checkpointing == "none");
  CHECK(assumed[0].find("recompute only where a preset says so") != std::string::npos);
}

}  // namespace stepcast
