/// \file
/// A byte count as people read benchmark sizes: binary units, as nccl-tests' and the
/// calibration's sizes are powers of two.
#pragma once

#include <string>

namespace stepcast {

/// "8 B", "1 KiB", "128 MiB", "8 GiB", "2 TiB": the largest binary unit the size reaches,
/// the number in its shortest form ({:g}).
std::string binary_size_text(double bytes);

}  // namespace stepcast
