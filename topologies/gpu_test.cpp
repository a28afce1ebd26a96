/// \file
/// Tests of the GPU catalog (topologies/catalog/gpus.json) and of parse_gpu's strictness.
#include "topologies/gpu.hpp"

#include "base/json_input.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>
#include <string>

using namespace stepcast;

namespace {

/// The catalog entry `name`; fails the test (and throws) when it is missing.
const GpuSpec& gpu(const std::string& name) {
  const GpuSpec* g = find_gpu(name);
  REQUIRE_MESSAGE(g != nullptr, "catalog GPU missing: " << name);
  return *g;
}

/// Relative closeness, for datasheet figures rounded to 3-4 digits.
bool close(double a, double b, double rel = 0.005) { return std::abs(a - b) <= rel * std::abs(b); }

/// Parses `text` as an inline GPU at JSON path /gpu of a file named "inline.json".
GpuSpec parse_inline(const std::string& text) {
  JsonDoc doc = JsonDoc::parse(R"({"gpu": )" + text + "}", "inline.json");
  JsonObject root(doc.root(), doc.file(), "");
  JsonObject g = root.object("gpu");
  return parse_gpu(g);
}

/// A valid inline GPU body (an A100-like part) into which tests splice one change.
std::string inline_gpu(const std::string& extra = "",
                       const std::string& peaks = R"("fp32": 19.5, "tf32": 156, "fp16": 312, "bf16": 312)") {
  return R"({"name": "my-gpu", "display_name": "My GPU", "arch": "ampere", "sm_count": 108,
             "peak_tflops": {)" +
         peaks + R"(},
             "memory_GiB": 40, "memory_bw_GBps": 1555,
             "nvlink_gen": 3, "nvlink_links": 12, "nvlink_GBps_per_link": 25,
             "pcie_gen": 4, "pcie_lanes": 16, "source": "test")" +
         extra + "}";
}

}  // namespace

TEST_CASE("every catalog GPU loads with a source, positive peaks, memory and bandwidth") {
  const auto& catalog = gpu_catalog();
  REQUIRE(catalog.size() >= 16);
  for (const GpuSpec& g : catalog) {
    CAPTURE(g.name);
    CHECK(!g.display_name.empty());
    CHECK(g.source.size() > 40);
    CHECK(g.source.find("http") != std::string::npos);
    REQUIRE(g.supports(Dtype::fp32));
    for (const auto& [dtype, tflops] : g.peak_tflops) CHECK(tflops > 0);
    CHECK(g.memory_bytes >= 16.0 * (1 << 30));
    CHECK(g.memory_bw_GBps > 0);
    CHECK(g.pcie_gen >= 3);
    CHECK(g.pcie_lanes == 16);
    CHECK(g.tdp_w > 0);
  }
}

TEST_CASE("catalog keys cover the measured-run record GPU enum") {
  // validation/README.md, hardware.gpu; h100-sxm5-94gb is left out: no NVIDIA datasheet
  // gives an SXM5 94 GB part (the 94 GB H100 is the PCIe "H100 NVL").
  for (const char* key : {"v100-sxm2-16gb", "v100-sxm2-32gb", "v100-pcie-16gb", "a100-sxm4-40gb", "a100-sxm4-80gb",
                          "a100-pcie-80gb", "h100-sxm5-80gb", "h100-pcie-80gb", "h200-sxm-141gb", "b200-sxm-180gb",
                          "titan-rtx-24gb", "a10-24gb", "rtx-3090-24gb", "rtx-4090-24gb"})
    CHECK_MESSAGE(find_gpu(key) != nullptr, key);
  CHECK(find_gpu("l40s-48gb") != nullptr);
  CHECK(find_gpu("t4-16gb") != nullptr);
}

TEST_CASE("tensor peak = SMs x clock x dense FLOP per clock per SM (datasheets agree with arithmetic)") {
  // A100 (Ampere whitepaper): 108 SMs, 1410 MHz boost, 4 tensor cores/SM x 256 FP16 FMA/clk
  // = 1024 FMA = 2048 FLOP/clk/SM:  108 x 1.41e9 x 2048 = 311.9e12 -> "312 TFLOPS" BF16/FP16.
  // TF32 runs at half that rate (1024 FLOP/clk/SM) -> 156; FP32 CUDA cores: 64/SM x 2 FLOP
  // (FMA) -> 108 x 64 x 2 x 1.41e9 = 19.5e12.
  const GpuSpec& a100 = gpu("a100-sxm4-80gb");
  CHECK(close(108 * 1.41e9 * 2048 / 1e12, a100.peak(Dtype::bf16)));
  CHECK(close(108 * 1.41e9 * 1024 / 1e12, a100.peak(Dtype::tf32)));
  CHECK(close(108 * 64 * 2 * 1.41e9 / 1e12, a100.peak(Dtype::fp32)));
  CHECK(a100.peak(Dtype::fp16) == a100.peak(Dtype::bf16));

  // V100 SXM2 (Volta whitepaper): 80 SMs x 8 tensor cores x 64 FMA x 2 = 1024 FLOP/clk/SM at
  // 1530 MHz -> 125.3 TFLOPS; FP32 80 x 64 x 2 x 1.53e9 = 15.7 TFLOPS.
  const GpuSpec& v100 = gpu("v100-sxm2-32gb");
  CHECK(close(80 * 1024 * 1.53e9 / 1e12, v100.peak(Dtype::fp16)));
  CHECK(close(80 * 64 * 2 * 1.53e9 / 1e12, v100.peak(Dtype::fp32)));

  // H100 SXM5 (Hopper whitepaper): 132 SMs x 4096 dense FP16 FLOP/clk/SM at the 1830 MHz
  // tensor boost -> 989.4; FP8 doubles it; FP32 132 x 128 x 2 x 1.98e9 = 66.9.
  const GpuSpec& h100 = gpu("h100-sxm5-80gb");
  CHECK(close(132 * 4096 * 1.83e9 / 1e12, h100.peak(Dtype::bf16)));
  CHECK(close(2 * h100.peak(Dtype::bf16), h100.peak(Dtype::fp8)));
  CHECK(close(132 * 128 * 2 * 1.98e9 / 1e12, h100.peak(Dtype::fp32)));

  // RTX 3090 (GA102 whitepaper): 82 SMs x 1024 FLOP/clk (FP16 accumulate) x 1.695 GHz = 142.3;
  // GeForce halves FP16-in/FP32-accumulate -> 71.2, the rate training uses.
  const GpuSpec& rtx3090 = gpu("rtx-3090-24gb");
  CHECK(close(82 * 1024 * 1.695e9 / 1e12 / 2, rtx3090.peak(Dtype::fp16)));
  CHECK(close(82 * 128 * 2 * 1.695e9 / 1e12, rtx3090.peak(Dtype::fp32)));

  // RTX 4090 (Ada whitepaper): 128 SMs x 1024 x 2.52 GHz = 330.3 (FP16 accumulate); halved
  // for FP32 accumulate = 165.2; FP8 with FP32 accumulate = 330.3.
  const GpuSpec& rtx4090 = gpu("rtx-4090-24gb");
  CHECK(close(128 * 1024 * 2.52e9 / 1e12 / 2, rtx4090.peak(Dtype::bf16)));
  CHECK(close(128 * 1024 * 2.52e9 / 1e12, rtx4090.peak(Dtype::fp8)));

  // TITAN RTX: full TU102, 72 SMs x 1024 x 1.77 GHz = 130.5 (FP32 accumulate, not halved).
  CHECK(close(72 * 1024 * 1.77e9 / 1e12, gpu("titan-rtx-24gb").peak(Dtype::fp16)));
}

TEST_CASE("dense rate ladder: tf32 = bf16 / 2 and fp8 = 2 x bf16 on data-center tensor cores") {
  for (const char* key : {"a100-sxm4-40gb", "a100-pcie-80gb", "h100-sxm5-80gb", "h100-pcie-80gb", "h200-sxm-141gb",
                          "b200-sxm-180gb", "l40s-48gb", "a10-24gb"}) {
    const GpuSpec& g = gpu(key);
    CAPTURE(g.name);
    CHECK(close(g.peak(Dtype::tf32) * 2, g.peak(Dtype::bf16), 0.02));
    CHECK(g.peak(Dtype::fp16) == g.peak(Dtype::bf16));
    if (g.supports(Dtype::fp8)) CHECK(close(g.peak(Dtype::fp8), 2 * g.peak(Dtype::bf16), 0.02));
  }
}

TEST_CASE("NVLink per-GPU totals match the datasheets' bidirectional figures") {
  // links x per-link per-direction GB/s x 2 directions.
  auto total = [](const GpuSpec& g) { return g.nvlink_links * g.nvlink_GBps_per_link * 2; };
  CHECK(total(gpu("v100-sxm2-16gb")) == doctest::Approx(300));
  CHECK(total(gpu("a100-sxm4-80gb")) == doctest::Approx(600));
  CHECK(total(gpu("a100-pcie-80gb")) == doctest::Approx(600));
  CHECK(total(gpu("h100-sxm5-80gb")) == doctest::Approx(900));
  CHECK(total(gpu("h100-pcie-80gb")) == doctest::Approx(600));
  CHECK(total(gpu("h200-sxm-141gb")) == doctest::Approx(900));
  CHECK(total(gpu("b200-sxm-180gb")) == doctest::Approx(1800));
  CHECK(total(gpu("rtx-3090-24gb")) == doctest::Approx(112.5));
  CHECK(total(gpu("titan-rtx-24gb")) == doctest::Approx(100));
  for (const char* none : {"v100-pcie-16gb", "l40s-48gb", "a10-24gb", "rtx-4090-24gb", "t4-16gb"}) {
    CHECK(gpu(none).nvlink_gen == 0);
    CHECK(total(gpu(none)) == 0);
  }
}

TEST_CASE("HBM bandwidth = bus width x data rate (A100 40GB: 5120 bit x 2.43 Gb/s = 1555 GB/s)") {
  CHECK(close(5120.0 / 8 * 2.43, gpu("a100-sxm4-40gb").memory_bw_GBps, 0.001));
}

TEST_CASE("memory sizes are binary: the 80 GB A100 holds 80 GiB") {
  CHECK(gpu("a100-sxm4-80gb").memory_bytes == 80.0 * 1024 * 1024 * 1024);
  CHECK(gpu("v100-sxm2-16gb").memory_bytes == 16.0 * 1024 * 1024 * 1024);
}

TEST_CASE("peak of a dtype without a tensor-core path throws: fp8 on A100, bf16 on V100") {
  const GpuSpec& a100 = gpu("a100-sxm4-40gb");
  CHECK_FALSE(a100.supports(Dtype::fp8));
  CHECK_THROWS_AS(a100.peak(Dtype::fp8), std::invalid_argument);
  CHECK_THROWS_AS(gpu("v100-sxm2-16gb").peak(Dtype::bf16), std::invalid_argument);
  CHECK_THROWS_AS(gpu("titan-rtx-24gb").peak(Dtype::tf32), std::invalid_argument);
  CHECK(gpu("h100-sxm5-80gb").supports(Dtype::fp8));
}

TEST_CASE("FP4 (NVFP4) is Blackwell's alone: 2x fp8 on B200 and GB200, about 3x on Blackwell Ultra") {
  CHECK_FALSE(gpu("h100-sxm5-80gb").supports(Dtype::fp4));
  CHECK_THROWS_AS(gpu("h200-sxm-141gb").peak(Dtype::fp4), std::invalid_argument);
  for (const char* key : {"b200-sxm-180gb", "gb200-186gb"})
    CHECK(close(gpu(key).peak(Dtype::fp4), 2 * gpu(key).peak(Dtype::fp8), 0.001));
  for (const char* key : {"b300-sxm-288gb", "gb300-288gb"}) {
    CHECK(gpu(key).peak(Dtype::fp4) > 2.8 * gpu(key).peak(Dtype::fp8));
    CHECK(gpu(key).peak(Dtype::fp4) <= 3 * gpu(key).peak(Dtype::fp8));
  }
}

TEST_CASE("find_gpu is case-insensitive and returns nullptr for unknown names") {
  const GpuSpec* lower = find_gpu("a100-sxm4-80gb");
  REQUIRE(lower != nullptr);
  CHECK(find_gpu("A100-SXM4-80GB") == lower);
  CHECK(find_gpu("A100-sxm4-80GB") == lower);
  CHECK(find_gpu("a100-sxm4-81gb") == nullptr);
  CHECK(find_gpu("") == nullptr);
}

TEST_CASE("inline GPU parses when complete; tdp_w is optional") {
  GpuSpec g = parse_inline(inline_gpu());
  CHECK(g.name == "my-gpu");
  CHECK(g.arch == GpuArch::ampere);
  CHECK(g.peak(Dtype::bf16) == 312);
  CHECK(g.tdp_w == 0);
  CHECK(parse_inline(inline_gpu(R"(, "tdp_w": 400)")).tdp_w == 400);
}

TEST_CASE("unknown key in an inline GPU is an InputError naming its JSON pointer") {
  try {
    parse_inline(inline_gpu(R"(, "colour": "green")"));
    FAIL("expected InputError");
  } catch (const InputError& e) {
    CHECK(e.file() == "inline.json");
    CHECK(e.json_path() == "/gpu/colour");
    CHECK(std::string(e.what()).find("unknown key") != std::string::npos);
  }
}

TEST_CASE("unknown dtype in peak_tflops is an InputError at its pointer") {
  try {
    parse_inline(inline_gpu("", R"("fp32": 19.5, "fp4": 1000)"));
    FAIL("expected InputError");
  } catch (const InputError& e) {
    CHECK(e.json_path() == "/gpu/peak_tflops/fp4");
  }
}

TEST_CASE("a dtype the architecture lacks is an InputError (fp8 on ampere)") {
  try {
    parse_inline(inline_gpu("", R"("fp32": 19.5, "fp8": 624)"));
    FAIL("expected InputError");
  } catch (const InputError& e) {
    CHECK(e.json_path() == "/gpu/peak_tflops/fp8");
  }
}

TEST_CASE("missing required field and missing fp32 peak are InputErrors") {
  std::string no_source = inline_gpu();
  no_source.replace(no_source.find(R"(, "source": "test")"), 18, "");
  CHECK_THROWS_AS(parse_inline(no_source), InputError);
  CHECK_THROWS_AS(parse_inline(inline_gpu("", R"("bf16": 312)")), InputError);
}

TEST_CASE("sm_count: every catalog GPU has one, known values match the whitepapers, and it is required") {
  for (const GpuSpec& g : gpu_catalog()) {
    CAPTURE(g.name);
    CHECK(g.sm_count >= 1);
  }
  // A100 whitepaper Table 1: 108 SMs; Hopper whitepaper: H100 SXM5 132, H100 PCIe 114;
  // Volta whitepaper Table 1: V100 80; Ada whitepaper Appendix A: RTX 4090 128.
  CHECK(gpu("a100-sxm4-40gb").sm_count == 108);
  CHECK(gpu("a100-sxm4-80gb").sm_count == 108);
  CHECK(gpu("h100-sxm5-80gb").sm_count == 132);
  CHECK(gpu("h100-pcie-80gb").sm_count == 114);
  CHECK(gpu("v100-sxm2-16gb").sm_count == 80);
  CHECK(gpu("rtx-4090-24gb").sm_count == 128);
  CHECK(parse_inline(inline_gpu()).sm_count == 108);

  std::string missing = inline_gpu();
  missing.replace(missing.find(R"(, "sm_count": 108)"), 17, "");
  try {
    parse_inline(missing);
    FAIL("expected InputError");
  } catch (const InputError& e) {
    CHECK(e.json_path() == "/gpu/sm_count");
    CHECK(std::string(e.what()).find("sm_count") != std::string::npos);
  }

  for (const char* bad : {R"("sm_count": 0)", R"("sm_count": -4)", R"("sm_count": 108.5)", R"("sm_count": "108")",
                          R"("sm_count": 3000000000)"}) {
    CAPTURE(bad);
    std::string body = inline_gpu();
    body.replace(body.find(R"("sm_count": 108)"), 15, bad);
    try {
      parse_inline(body);
      FAIL("expected InputError");
    } catch (const InputError& e) {
      CHECK(e.json_path() == "/gpu/sm_count");
    }
  }
}

TEST_CASE("NVLink fields must be all zero or all positive") {
  std::string half = inline_gpu();
  half.replace(half.find(R"("nvlink_links": 12)"), 18, R"("nvlink_links": 0)");
  try {
    parse_inline(half);
    FAIL("expected InputError");
  } catch (const InputError& e) {
    CHECK(e.json_path() == "/gpu/nvlink_gen");
  }
}

namespace {

/// inline_gpu() with the first `from` replaced by `to`; returns the InputError's JSON path.
std::string gpu_error_path(const std::string& from, const std::string& to) {
  std::string text = inline_gpu();
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  try {
    parse_inline(text);
  } catch (const InputError& e) {
    return e.json_path();
  }
  return "(no InputError)";
}

}  // namespace

TEST_CASE("GPU numbers outside their physical bounds (base/limits.hpp) are InputErrors at their path") {
  CHECK(gpu_error_path(R"("fp32": 19.5)", R"("fp32": 1e300)") == "/gpu/peak_tflops/fp32");
  CHECK(gpu_error_path(R"("fp32": 19.5)", R"("fp32": 1e-300)") == "/gpu/peak_tflops/fp32");
  CHECK(gpu_error_path(R"("sm_count": 108)", R"("sm_count": 4294967404)") == "/gpu/sm_count");
  CHECK(gpu_error_path(R"("memory_GiB": 40)", R"("memory_GiB": 1e300)") == "/gpu/memory_GiB");
  CHECK(gpu_error_path(R"("memory_bw_GBps": 1555)", R"("memory_bw_GBps": 1e-300)") == "/gpu/memory_bw_GBps");
  CHECK(gpu_error_path(R"("nvlink_links": 12)", R"("nvlink_links": 4294967308)") == "/gpu/nvlink_links");
  CHECK(gpu_error_path(R"("nvlink_GBps_per_link": 25)", R"("nvlink_GBps_per_link": 1e-300)") ==
        "/gpu/nvlink_GBps_per_link");
  CHECK(gpu_error_path(R"("pcie_gen": 4)", R"("pcie_gen": 4294967300)") == "/gpu/pcie_gen");
  CHECK(gpu_error_path(R"("source": "test")", R"("source": "test", "tdp_w": 1e300)") == "/gpu/tdp_w");
  // A key given twice is refused by the reader itself.
  CHECK(gpu_error_path(R"("sm_count": 108)", R"("sm_count": 108, "sm_count": 2)") == "/gpu/sm_count");
}
