/// Tests of emitted_scenario: a plan row as a scenario file.

#include "planner/emit.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

using namespace stepcast;

namespace {

PlanPoint pipeline_point() {
  PlanPoint p;
  p.layout.dp_sharding = Strategy::zero1;
  p.layout.tp = 2;
  p.layout.sp = false;
  p.layout.pp = 4;
  p.layout.vpp = 2;
  p.layout.schedule = PipelineScheduleKind::interleaved;
  p.layout.cp = 1;
  p.micro_batch = 2;
  p.grad_accum = 16;
  p.recompute = Recompute::selective;
  return p;
}

}  // namespace

TEST_CASE("an emitted scenario states the row's layout, batch and recompute, and drops what the layout cannot take") {
  nlohmann::ordered_json original = {
      {"name", "job"},
      {"model", {{"hf_config", "configs/config.json"}}},
      {"training", {{"micro_batch", 1}, {"grad_accum", 2}}},
      {"strategy",
       {{"name", "fsdp_full_shard"},
        {"tp_comm_overlap", true},
        {"sp_keep_gathered", true},
        {"overlap_grad_reduce", true},
        {"bucket_mb", 25}}},
      {"hardware", {{"box", "dgx-h100"}, {"nodes", 2}, {"calibration", "/abs/hw.json"}}}};
  const nlohmann::ordered_json out = emitted_scenario(original, "jobs/job.json", pipeline_point(), 64);
  const auto& st = out["strategy"];
  CHECK(st["name"] == "zero1");
  CHECK(st["tp"] == 2);
  CHECK(st["pp"] == 4);
  CHECK(st["vpp"] == 2);
  CHECK(st["schedule"] == "interleaved");
  CHECK(st["offload"] == "none");
  CHECK_FALSE(st.contains("tp_comm_overlap"));   // needs sp
  CHECK_FALSE(st.contains("sp_keep_gathered"));  // needs sp
  CHECK(st["overlap_grad_reduce"] == true);      // a pipeline keeps it
  CHECK(st["bucket_mb"] == 25);                  // zero1 has a bucket
  CHECK(out["training"]["micro_batch"] == 2);
  CHECK(out["training"]["grad_accum"] == 16);
  CHECK(out["training"]["recompute"] == "selective");
  CHECK(out["hardware"]["gpus"] == 64);
  CHECK_FALSE(out["hardware"].contains("nodes"));
  CHECK(out["hardware"]["calibration"] == "/abs/hw.json");  // absolute already
  const std::filesystem::path hf(out["model"]["hf_config"].get<std::string>());
  CHECK(hf.is_absolute());
  CHECK(hf == std::filesystem::absolute("jobs/configs/config.json").lexically_normal());
  CHECK(out["name"] == "job (plan: " + pipeline_point().describe() + ")");
  CHECK(out.begin().key() == "name");  // the file's own key order

  PlanPoint fsdp = pipeline_point();
  fsdp.layout.dp_sharding = Strategy::fsdp_full_shard;
  fsdp.layout.pp = 1;
  fsdp.layout.vpp = 1;
  fsdp.layout.schedule = PipelineScheduleKind::one_f_one_b;
  original["strategy"] = "ddp";  // a name: written back as an object
  const nlohmann::ordered_json flat = emitted_scenario(original, "job.json", fsdp, 8);
  CHECK(flat["strategy"]["name"] == "fsdp_full_shard");
  CHECK_FALSE(flat["strategy"].contains("bucket_mb"));
  CHECK_FALSE(flat["strategy"].contains("overlap_grad_reduce"));
}
