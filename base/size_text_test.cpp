#include "base/size_text.hpp"

#include <doctest/doctest.h>

using namespace stepcast;

TEST_CASE("a size reads in the largest binary unit it reaches, as nccl-tests prints it") {
  CHECK(binary_size_text(8) == "8 B");
  CHECK(binary_size_text(1023) == "1023 B");
  CHECK(binary_size_text(1024) == "1 KiB");
  CHECK(binary_size_text(128.0 * 1048576) == "128 MiB");
  CHECK(binary_size_text(8589934592.0) == "8 GiB");
  CHECK(binary_size_text(3.0 * 1099511627776.0) == "3 TiB");
  CHECK(binary_size_text(4000000000.0) == "3.72529 GiB");
}
