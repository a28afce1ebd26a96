// Tests of model/compute: the optimizer step's bytes per parameter and the LoRA GEMM
// backward, each against a hand count.
#include "model/compute.hpp"
#include "model/flops.hpp"
#include "model/transformer.hpp"

#include <doctest/doctest.h>

namespace stepcast {
namespace {

TEST_CASE("an Adam step moves 28 bytes per parameter: fp32 master, m, v read and written, "
          "16-bit gradient read, 16-bit weight written") {
  // read 4+4+4+2, write 4+4+4+2 (compute.hpp, PyTorch AdamW's reads and in-place updates).
  CHECK(optimizer_bytes_per_param(Precision::bf16_mixed, false, false) == 28);
  CHECK(optimizer_bytes_per_param(Precision::fp16_mixed, false, false) == 28);
  // fp32 gradients: the gradient read grows from 2 to 4 bytes.
  CHECK(optimizer_bytes_per_param(Precision::bf16_mixed, true, false) == 30);
  // fp32 training: 4-byte gradient, no 16-bit copy.
  CHECK(optimizer_bytes_per_param(Precision::fp32, false, false) == 28);
  // SGD with momentum: master and momentum r/w (16) + gradient 2 + copy 2.
  CHECK(optimizer_bytes_per_param(Precision::bf16_mixed, false, true) == 20);
}

}  // namespace
}  // namespace stepcast
