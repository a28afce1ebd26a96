// The GEMM shapes that show the kernel model's tile and wave quantization (model/kernels.hpp
// gemm_time_s) and the best achievable ceiling: plain C++, no CUDA, so it is tested without
// a GPU (raw_writer_test.cpp).
#pragma once

#include <string>
#include <vector>

namespace stepcast::cal {

struct SweepShape {
  std::string name;  // "wave" or "square"
  long long m;
  long long n;
  long long k;
};

// "wave": n = 1024 (8 output tiles of 128 across) and k = 4096, with m stepping one tile row
// (128) at a time from just below to just above 1, 2 and 3 full waves of `sm_count` tiles, so
// each wave boundary shows as a step in time (a tile count of sm_count + 8 costs a second
// wave); "square": m = n = k from 4096 to 16384 in steps of 2048, plus 8192 ± 64, where the
// best achievable rate (the ceiling) is reached. --quick keeps the first wave and 2 squares.
std::vector<SweepShape> gemm_sweep_shapes(int sm_count, bool quick);

// Output tiles of 128 x 128 of an m x n GEMM: ceil(m/128) * ceil(n/128).
long long tiles_128(long long m, long long n);

}  // namespace stepcast::cal
