/// \file
/// What every libFuzzer harness in fuzz/ shares: the input size bound, the exceptions that
/// mean "rejected input" (fine), and how a harness reports a finding that is not a crash.
///
/// The readers' contract is that bad input is an InputError (file and JSON path) or, from
/// the vocabulary parsers and option checks, a std::invalid_argument. Anything else that
/// escapes a reader (another exception, a crash, a sanitizer report, a timeout) is a finding.
#pragma once

#include "base/json_input.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace stepcast::fuzz {

/// Inputs above this size are skipped. The readers' own bound (limits::kMaxDocumentBytes,
/// 16 MiB, for files) is far beyond what a fuzzer can explore, and JsonDoc::parse and
/// parse_measured_run take text of any length; every real input of one reader is well below
/// 64 KiB. run.sh passes the same figure as -max_len.
inline constexpr std::size_t kMaxInputBytes = 64 * 1024;

/// Runs `read` on the input as text. InputError and std::invalid_argument are rejections
/// and return normally; every other exception escapes to libFuzzer, which reports it.
template <typename Read>
int read_input(const std::uint8_t* data, std::size_t size, Read&& read) {
  if (size > kMaxInputBytes) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    read(text);
  } catch (const InputError&) {
  } catch (const std::invalid_argument&) {
  }
  return 0;
}

/// A finding that does not crash by itself (e.g. a file stepcast wrote that it cannot read
/// back): prints why and aborts, which libFuzzer reports with the input.
[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "stepcast fuzz finding: %s\n", what.c_str());
  std::abort();
}

}  // namespace stepcast::fuzz
