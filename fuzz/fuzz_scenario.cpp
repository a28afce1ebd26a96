/// \file
/// libFuzzer harness: scenario text -> parse_scenario -> predict, as `stepcast predict`
/// runs a scenario file. The input is read as if it were a file in tests/data/good/, so a
/// relative "calibration" (e.g. "synthetic_hardware.json") names a real hardware file and
/// the calibrated path is reached too.

#include "fuzz/fuzz_input.hpp"

#include "predict/predict.hpp"
#include "scenario/scenario.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string file = (stepcast::data_dir() / "tests" / "data" / "good" / "fuzz-scenario.json").string();
  return stepcast::fuzz::read_input(data, size, [](const std::string& text) {
    const stepcast::Scenario scenario = stepcast::parse_scenario(text, file);
    (void)stepcast::predict(scenario);
  });
}
