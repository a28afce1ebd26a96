/// \file
/// Tests of the hardware file (topologies/hardware_file.hpp): what fit writes, load_hardware
/// reads back unchanged, and reading is strict.
#include "topologies/hardware_file.hpp"
#include "calibrate/fit/synthetic.hpp"

#include "base/json_input.hpp"
#include "model/compute.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

using namespace stepcast;
using namespace stepcast::testing;

namespace {

HardwareFile fitted_hardware() {
  SyntheticParams p;
  p.noise = 0.01;
  return fit_calibration(parse_raw_text(synthetic_raw(p)), FitOptions{"", "", "synthetic.json"}).hardware;
}

std::string hardware_error_path(const nlohmann::json& doc) {
  try {
    parse_hardware(JsonDoc::parse(doc.dump(), "hw.json"));
  } catch (const InputError& e) {
    CHECK(e.file() == "hw.json");
    return e.json_path();
  }
  FAIL("no InputError");
  return {};
}

}  // namespace

TEST_CASE("hardware_file_round_trips_through_load_hardware") {
  const HardwareFile hw = fitted_hardware();
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("stepcast-fit-test-" + std::to_string(::getpid()) + ".json");
  {
    std::ofstream out(path);
    out << hardware_json(hw);
  }
  const HardwareFile back = load_hardware(path);
  std::filesystem::remove(path);

  CHECK(back.file == path.string());
  CHECK(back.gpu == "h100-sxm5-80gb");
  CHECK(back.source == "stepcast fit synthetic.json");
  CHECK(back.machine.hostname == hw.machine.hostname);
  CHECK(back.machine.gpus.size() == 8);
  CHECK(back.machine.gpus[3].name == "NVIDIA H100 80GB HBM3");
  CHECK(back.machine.notes == hw.machine.notes);
  REQUIRE(back.gemm.count(Dtype::bf16) == 1);
  // JSON numbers are written with enough digits to come back bit for bit.
  CHECK(back.gemm.at(Dtype::bf16).max_fraction == hw.gemm.at(Dtype::bf16).max_fraction);
  CHECK(back.gemm.at(Dtype::bf16).half_flops == hw.gemm.at(Dtype::bf16).half_flops);
  CHECK(back.gemm.at(Dtype::bf16).points == hw.gemm.at(Dtype::bf16).points);
  CHECK(back.memory.device_bw_GBps == hw.memory.device_bw_GBps);
  CHECK(back.memory.memory_efficiency == hw.memory.memory_efficiency);
  CHECK(back.memory.h2d_GBps == hw.memory.h2d_GBps);
  REQUIRE(back.collectives.size() == hw.collectives.size());
  CHECK(back.collectives[0].latency_us == hw.collectives[0].latency_us);
  CHECK(back.collectives[0].busbw_GBps == hw.collectives[0].busbw_GBps);
  CHECK(back.collectives[0].model_busbw_GBps == hw.collectives[0].model_busbw_GBps);
  CHECK(back.model_box == hw.model_box);
  CHECK(back.excluded_rows == 0);

  const FittedGemm& g = back.gemm.at(Dtype::bf16);
  const GemmEfficiency e{g.max_fraction, g.half_flops, back.source};
  CHECK(gemm_efficiency(e, 1e15) == doctest::Approx(e.max_fraction).epsilon(1e-5));
}

TEST_CASE("hardware_file_rejects_unknown_keys_with_the_json_path") {
  nlohmann::json doc = nlohmann::json::parse(hardware_json(fitted_hardware()));
  doc["gemm"]["bf16"]["half_gflops"] = 3.0;
  CHECK(hardware_error_path(doc) == "/gemm/bf16/half_gflops");
  doc = nlohmann::json::parse(hardware_json(fitted_hardware()));
  doc["collectives"][0]["alpha_us"] = 12.0;
  CHECK(hardware_error_path(doc) == "/collectives/0/alpha_us");
  doc = nlohmann::json::parse(hardware_json(fitted_hardware()));
  doc["gemm"]["int4"] = doc["gemm"]["bf16"];
  CHECK(hardware_error_path(doc) == "/gemm/int4");
}

TEST_CASE("hardware_file_rejects_a_wrong_format_string") {
  nlohmann::json doc = nlohmann::json::parse(hardware_json(fitted_hardware()));
  doc["format"] = kRawCalibrationFormat;
  CHECK(hardware_error_path(doc) == "/format");
}

TEST_CASE("hardware_file_rejects_values_out_of_range") {
  nlohmann::json doc = nlohmann::json::parse(hardware_json(fitted_hardware()));
  doc["gemm"]["bf16"]["max_fraction"] = 0;
  CHECK(hardware_error_path(doc) == "/gemm/bf16/max_fraction");
  doc = nlohmann::json::parse(hardware_json(fitted_hardware()));
  doc["collectives"][0].erase("model_busbw_GBps");
  CHECK(hardware_error_path(doc) == "/collectives/0/model_busbw_GBps");
}

TEST_CASE("hardware_file_numbers_are_bounded_physically") {
  const auto with = [](const std::string& pointer, const nlohmann::json& value) {
    nlohmann::json doc = nlohmann::json::parse(hardware_json(fitted_hardware()));
    doc[nlohmann::json::json_pointer(pointer)] = value;
    return hardware_error_path(doc);
  };
  CHECK(with("/gemm/bf16/max_fraction", 1e-300) == "/gemm/bf16/max_fraction");
  CHECK(with("/gemm/bf16/max_fraction", 37) == "/gemm/bf16/max_fraction");
  CHECK(with("/gemm/bf16/half_flops", 1e300) == "/gemm/bf16/half_flops");
  CHECK(with("/gemm/bf16/points", 4294967298LL) == "/gemm/bf16/points");
  CHECK(with("/memory/memory_efficiency", 1e-300) == "/memory/memory_efficiency");
  CHECK(with("/memory/device_bw_GBps", 1e-300) == "/memory/device_bw_GBps");
  CHECK(with("/memory/h2d_GBps", 1e300) == "/memory/h2d_GBps");
  CHECK(with("/collectives/0/algbw_GBps", 1e-300) == "/collectives/0/algbw_GBps");
  CHECK(with("/collectives/0/latency_us", 1e300) == "/collectives/0/latency_us");
  CHECK(with("/collectives/0/ranks", 4294967304LL) == "/collectives/0/ranks");
  CHECK(with("/machine/gpus/0/sm_count", 1LL << 40) == "/machine/gpus/0/sm_count");
  CHECK(with("/excluded_rows", -1) == "/excluded_rows");
}
