#include "wave_shapes.hpp"

#include <algorithm>

namespace stepcast::cal {

long long tiles_128(long long m, long long n) { return ((m + 127) / 128) * ((n + 127) / 128); }

std::vector<SweepShape> gemm_sweep_shapes(int sm_count, bool quick) {
  std::vector<SweepShape> out;
  constexpr long long kN = 1024, kK = 4096, kTile = 128;
  const long long tiles_across = kN / kTile;  // 8
  const int waves = quick ? 1 : 3;
  for (int w = 1; w <= waves; ++w) {
    // Tile rows around w full waves: from 3 rows below to 3 rows above the boundary.
    const long long boundary_rows = (static_cast<long long>(w) * sm_count + tiles_across - 1) / tiles_across;
    for (long long rows = std::max(1LL, boundary_rows - 3); rows <= boundary_rows + 3; ++rows)
      out.push_back({"wave", rows * kTile, kN, kK});
  }
  std::vector<long long> edges =
      quick ? std::vector<long long>{4096, 8192}
            : std::vector<long long>{4096, 6144, 8192 - 64, 8192, 8192 + 64, 10240, 12288, 14336, 16384};
  for (long long e : edges) out.push_back({"square", e, e, e});
  return out;
}

}  // namespace stepcast::cal
