/// \file
/// libFuzzer harness: a hardware file ("stepcast-hardware-v1") -> parse_hardware, as
/// `--calibration` and a scenario's "calibration" read it. An accepted file is written back
/// (hardware_json) and must read back; a rejection there is a finding, not bad input.

#include "fuzz/fuzz_input.hpp"

#include "topologies/hardware_file.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return stepcast::fuzz::read_input(data, size, [](const std::string& text) {
    const stepcast::HardwareFile hw = stepcast::parse_hardware(stepcast::JsonDoc::parse(text, "fuzz-hardware.json"));
    const std::string written = stepcast::hardware_json(hw);
    try {
      (void)stepcast::parse_hardware(stepcast::JsonDoc::parse(written, "fuzz-hardware-rewritten.json"));
    } catch (const stepcast::InputError& e) {
      stepcast::fuzz::finding(std::string("an accepted hardware file does not read back once written: ") + e.what());
    }
  });
}
