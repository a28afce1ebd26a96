/// \file
/// Byte counts in binary units (size_text.hpp).
#include "base/size_text.hpp"

#include <fmt/format.h>

namespace stepcast {

std::string binary_size_text(double bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 4) {
    bytes /= 1024.0;
    ++unit;
  }
  return fmt::format("{:g} {}", bytes, kUnits[unit]);
}

}  // namespace stepcast
