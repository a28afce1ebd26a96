// Test of the raw file writer without a GPU: the JSON escaping and number formatting, then a
// file with one row of every kind (and a skipped GEMM row with non-finite times) that
// check_raw_schema.py validates. usage: stepcast-calibrate-writer-test OUT.json
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "json.hpp"
#include "raw.hpp"
#include "wave_shapes.hpp"

namespace {

int failures = 0;

void expect(const std::string& got, const std::string& wanted, const char* what) {
  if (got != wanted) {
    std::fprintf(stderr, "%s: got %s, wanted %s\n", what, got.c_str(), wanted.c_str());
    ++failures;
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace stepcast::cal;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT.json\n", argv[0]);
    return 2;
  }
  expect(json::string("plain"), "\"plain\"", "plain string");
  expect(json::string("a\"b\\c\nd\te\x01"
                      "f"),
         "\"a\\\"b\\\\c\\nd\\te\\u0001f\"", "escapes");
  expect(json::string("GPU \xc3\xa9"), "\"GPU \xc3\xa9\"", "UTF-8 passes through");
  expect(json::number(0.1), "0.1", "0.1");
  expect(json::number(2.5e-06), "2.5e-06", "small time");
  expect(json::number(1e300), "1e+300", "large");
  expect(json::number(std::numeric_limits<double>::quiet_NaN()), "null", "NaN");
  expect(json::number(std::numeric_limits<double>::infinity()), "null", "infinity");
  expect(json::integer(85520809984), "85520809984", "64-bit integer");
  expect(json::Object().text("s", "x").value("n", json::integer(3)).render(), "{\"s\": \"x\", \"n\": 3}", "object");
  expect(json::array({}, 4), "[]", "empty array");

  Raw raw;
  raw.machine.hostname = "node \"a\"\\1";
  raw.machine.date_utc = "2025-01-01T00:00:00Z";
  raw.machine.gpus.push_back({0, "NVIDIA H100 80GB HBM3", 132, 85520809984, "9.0"});
  raw.machine.driver_version = "12.4";
  raw.machine.cuda_runtime_version = "12.4";
  raw.machine.nccl_version = "2.21.5";
  raw.machine.nvidia_smi_topo = "\tGPU0\nGPU0\t X \n";
  raw.machine.nvidia_smi_list = "error: `nvidia-smi -L` exited with status 127: not found\n";
  raw.machine.nics = {"net eth0: speed_Mbps=100000, operstate=up, mtu_bytes=1500"};
  raw.machine.notes = {"a note"};
  GemmRow g{"qkv", "bf16", 4096, 12288, 4096, 100, 0.5e-3, 0.49e-3, 0.52e-3, 0.0, "ok"};
  g.tflops = 2.0 * 4096 * 12288 * 4096 / g.time_s_median / 1e12;
  raw.gemm.push_back(g);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  raw.gemm.push_back({"lm_head", "fp8", 2048, 50304, 768, 0, nan, nan, nan, nan,
                      "skipped: fp8 needs compute capability >= 8.9, this GPU is 8.0"});
  MemoryRow m{"device_to_device", std::int64_t{2} << 30, 70, 0.8e-3, 0.0};
  m.GBps = static_cast<double>(m.bytes) / m.time_s_median / 1e9;
  raw.memory.push_back(m);
  NcclRow n{"all_reduce", 8, 1, 8, 1 << 30, "float", 20, 3e-3, 2.9e-3, 0.0, 0.0, "default", "Simple", "ok"};
  n.algbw_GBps = static_cast<double>(n.bytes) / n.time_s_median / 1e9;
  n.busbw_GBps = n.algbw_GBps * 2.0 * 7.0 / 8.0;
  raw.nccl.push_back(n);
  raw.launch.push_back({"launch", 256, 40, 256 * 4.5e-6, 4.5e-6, "ok"});
  raw.launch.push_back({"graph_launch", 1000, 20, 1000 * 1.2e-6, 1.2e-6, "ok"});

  // The wave sweep brackets 1, 2 and 3 full waves of 132 SMs in steps of one tile row (8
  // tiles of 128 x 128): tile counts from 3 rows below to 3 rows above each boundary.
  const auto sweep = gemm_sweep_shapes(132, false);
  int below = 0, above = 0;
  for (const SweepShape& s : sweep) {
    if (s.name != "wave") continue;
    const long long tiles = tiles_128(s.m, s.n);
    for (long long w : {132LL, 264LL, 396LL}) {
      below += tiles <= w && tiles > w - 8 ? 1 : 0;
      above += tiles > w && tiles <= w + 8 ? 1 : 0;
    }
  }
  expect(std::to_string(below) + "/" + std::to_string(above), "3/3", "a wave row on each side of each boundary");
  expect(std::to_string(sweep.size()), "30", "3 x 7 wave rows and 9 squares");
  expect(std::to_string(gemm_sweep_shapes(132, true).size()), "9", "quick: 7 wave rows and 2 squares");
  expect(std::to_string(tiles_128(129, 1024)), "16", "a partial tile row counts");
  write_file(argv[1], render(raw));
  if (failures > 0) return 1;
  std::printf("json writer ok\n");
  return 0;
}
