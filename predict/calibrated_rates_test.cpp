// A calibration file's "kernel_model" changes the rates it names, and only those, each with
// "calibration file X" as its source.
#include "predict/calibrated_rates.hpp"

#include "predict/stages.hpp"
#include "topologies/hardware_file.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <string>

using namespace stepcast;

namespace {

Scenario h100(int gpus) {
  return parse_scenario(R"({"name": "t", "description": "test", "model": "gpt2-xl",
    "training": {"precision": "bf16_mixed", "optimizer": "adam", "micro_batch": 4, "grad_accum": 1,
                 "seq_len": 1024, "recompute": "none", "flash_attention": true},
    "strategy": "ddp", "hardware": {"box": "dgx-h100", "nodes": 1, "gpus": )" +
                            std::to_string(gpus) + R"(}, "dataset": {"tokens": 1e9}})",
                        "t.json");
}

CalibratedAttentionCurve curve(bool backward) {
  CalibratedAttentionCurve c;
  c.kernel = "flash2";
  c.head_dim = 64;
  c.causal = true;
  c.backward = backward;
  c.tflops_by_seq = {{512, 111}, {4096, 222}};
  c.points = 2;
  return c;
}

/// Every rate of DeviceRates the kernel model reads, compared one by one.
void check_same_except(const DeviceRates& a, const DeviceRates& b, const std::string& changed) {
  auto same = [&](const char* what, bool equal) {
    if (changed != what)
      CHECK_MESSAGE(equal, what);
    else
      CHECK_MESSAGE(!equal, what);
  };
  same("sm_count", a.sm_count == b.sm_count);
  same("gemm", a.gemm_ceiling_tflops == b.gemm_ceiling_tflops && a.gemm_source == b.gemm_source);
  same("attention", a.attention.source == b.attention.source);
  same("memory", a.memory_efficiency == b.memory_efficiency && a.memory_source == b.memory_source);
  same("launch", a.launch_s == b.launch_s && a.eager_forward_op_s == b.eager_forward_op_s &&
                     a.eager_backward_op_s == b.eager_backward_op_s && a.launch_source == b.launch_source);
  CHECK(a.peak_tflops == b.peak_tflops);
  CHECK(a.memory_bw_GBps == b.memory_bw_GBps);
}

}  // namespace

TEST_CASE("apply_kernel_calibration: each part of kernel_model changes its rate and no other") {
  const Job job = resolve(h100(1));
  const DeviceRates catalog = job.device;
  struct Part {
    const char* rate;
    KernelCalibration k;
  };
  std::vector<Part> parts(5);
  parts[0].rate = "sm_count";
  parts[0].k.sm_count = 114;
  parts[1].rate = "gemm";
  parts[1].k.gemm[Dtype::bf16] = CalibratedGemm{650, 640, 0.03, 40};
  parts[2].rate = "attention";
  parts[2].k.attention = {curve(false), curve(true)};
  parts[3].rate = "memory";
  parts[3].k.memory_efficiency = 0.7;
  parts[4].rate = "launch";
  parts[4].k.eager_forward_op_s = 20e-6;
  for (const Part& p : parts) {
    CAPTURE(p.rate);
    DeviceRates d = catalog;
    const CalibratedRates changed = apply_kernel_calibration(d, p.k, Dtype::bf16, AttentionKernel::flash2, "x.json");
    check_same_except(catalog, d, p.rate);
    CHECK(changed.sm_count == (std::string(p.rate) == "sm_count"));
    CHECK(changed.gemm == (std::string(p.rate) == "gemm"));
    CHECK(changed.attention == (std::string(p.rate) == "attention"));
    CHECK(changed.memory == (std::string(p.rate) == "memory"));
    CHECK(changed.launch == (std::string(p.rate) == "launch"));
  }
  // Values and sources.
  DeviceRates d = catalog;
  apply_kernel_calibration(d, parts[1].k, Dtype::bf16, AttentionKernel::flash2, "x.json");
  CHECK(d.gemm_ceiling_tflops == 650);
  CHECK(d.attention_gemm_ceiling_tflops == 650);
  CHECK(d.gemm_source.rfind("calibration file x.json", 0) == 0);
  d = catalog;
  apply_kernel_calibration(d, parts[2].k, Dtype::bf16, AttentionKernel::flash2, "x.json");
  CHECK(attention_tflops(d.attention, 64, true, AttentionPass::forward, 512) == doctest::Approx(111));
  CHECK(attention_tflops(d.attention, 64, true, AttentionPass::backward, 4096) == doctest::Approx(222));
  CHECK(d.attention.source.find("calibration file x.json") != std::string::npos);
  d = catalog;
  apply_kernel_calibration(d, parts[4].k, Dtype::bf16, AttentionKernel::flash2, "x.json");
  CHECK(d.eager_forward_op_s == 20e-6);
  CHECK(d.eager_backward_op_s == catalog.eager_backward_op_s);  // not measured: kept
  CHECK(d.launch_source.rfind("calibration file x.json (the rest: ", 0) == 0);
}

TEST_CASE(
    "apply_kernel_calibration: curves of another kernel leave attention alone; fp8 GEMMs keep a 16-bit "
    "attention ceiling") {
  const DeviceRates catalog = resolve(h100(1)).device;
  KernelCalibration k;
  k.attention = {curve(false)};
  k.attention[0].kernel = "cudnn";
  k.gemm[Dtype::bf16] = CalibratedGemm{650, 640, 0.03, 40};
  DeviceRates d = catalog;
  const CalibratedRates changed = apply_kernel_calibration(d, k, Dtype::fp8, AttentionKernel::flash2, "x.json");
  CHECK_FALSE(changed.attention);
  CHECK(d.attention.source == catalog.attention.source);
  CHECK(d.gemm_ceiling_tflops == catalog.gemm_ceiling_tflops);  // no fp8 measured
  CHECK(d.attention_gemm_ceiling_tflops == 650);                // attention stays bf16
  // Forward measured only: the catalog's backward curves stay.
  k.attention[0].kernel = "flash2";
  d = catalog;
  apply_kernel_calibration(d, k, Dtype::bf16, AttentionKernel::flash2, "x.json");
  CHECK(attention_tflops(d.attention, 64, true, AttentionPass::backward, 2048) ==
        doctest::Approx(attention_tflops(catalog.attention, 64, true, AttentionPass::backward, 2048)));
}

TEST_CASE("resolve: a calibration's kernel_model sets the rates' provenance and the compute slowdown beside NCCL") {
  Scenario s = h100(8);
  const Job before = resolve(s);
  auto cal = std::make_shared<HardwareFile>();
  cal->gpu = "h100-sxm5-80gb";
  cal->kernel_model.launch_s = 3e-6;
  cal->kernel_model.compute_slowdown = 0.123;
  s.hardware.calibration = cal;
  s.hardware.calibration_file = "cal.json";
  const Job job = resolve(s);
  CHECK(job.provenance.launch == RateSource::calibration);
  CHECK(job.provenance.gemm == RateSource::catalog);
  CHECK(job.provenance.attention == RateSource::catalog);
  CHECK(job.provenance.memory == RateSource::catalog);
  CHECK(job.provenance.sm_count == RateSource::catalog);
  CHECK(job.device.launch_s == 3e-6);
  CHECK(job.provenance.comm_slowdown == RateSource::calibration);
  CHECK(job.comm_slowdown == 0.123);
  CHECK(before.comm_slowdown != 0.123);
  // On one GPU no collective runs: the slowdown is not applied.
  Scenario one = h100(1);
  one.hardware.calibration = cal;
  one.hardware.calibration_file = "cal.json";
  CHECK(resolve(one).provenance.comm_slowdown == RateSource::catalog);
}
