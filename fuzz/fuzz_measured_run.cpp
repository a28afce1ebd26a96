/// \file
/// libFuzzer harness: one measured-run record line -> parse_measured_run -> validate_runs
/// (scenario_for, then the prediction of the record's metric; one thread) -> summarize, as
/// `stepcast validate` treats the lines of a .jsonl file. Records whose GPU is the synthetic hardware
/// file's (tests/data/good/synthetic_hardware.json) are validated with it as the calibration,
/// as `stepcast validate --calibration` does.

#include "fuzz/fuzz_input.hpp"

#include "topologies/hardware_file.hpp"
#include "validate/validation.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string calibration_file =
      (stepcast::data_dir() / "tests" / "data" / "good" / "synthetic_hardware.json").string();
  static const auto calibration =
      std::make_shared<const stepcast::HardwareFile>(stepcast::load_hardware(calibration_file));
  return stepcast::fuzz::read_input(data, size, [](const std::string& text) {
    const stepcast::MeasuredRun run = stepcast::parse_measured_run(text, "fuzz-runs.jsonl", 1);
    const std::vector<stepcast::ValidationRow> rows = stepcast::validate_runs({run}, calibration, calibration_file, 1);
    (void)stepcast::summarize(rows);
  });
}
