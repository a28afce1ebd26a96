/// \file
/// libFuzzer harness: a raw calibration file -> parse_raw_calibration -> fit_calibration ->
/// the reports and the hardware file, as `stepcast fit` does. The hardware file written from
/// the fit must read back (parse_hardware); a rejection there is a finding, not bad input.

#include "fuzz/fuzz_input.hpp"

#include "calibrate/fit/fit.hpp"
#include "topologies/hardware_file.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return stepcast::fuzz::read_input(data, size, [](const std::string& text) {
    const stepcast::JsonDoc doc = stepcast::JsonDoc::parse(text, "fuzz-raw.json");
    const stepcast::RawCalibration raw = stepcast::parse_raw_calibration(doc);
    stepcast::FitOptions options;
    options.raw_name = "fuzz-raw.json";
    const stepcast::FitResult result = stepcast::fit_calibration(raw, options);
    (void)stepcast::fit_report_text(result, "fuzz-hardware.json");
    (void)stepcast::fit_report_json(result, "fuzz-hardware.json");
    const std::string written = stepcast::hardware_json(result.hardware);
    try {
      (void)stepcast::parse_hardware(stepcast::JsonDoc::parse(written, "fuzz-hardware.json"));
    } catch (const stepcast::InputError& e) {
      stepcast::fuzz::finding(std::string("the fitted hardware file does not read back: ") + e.what());
    }
  });
}
