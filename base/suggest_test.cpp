#include "base/suggest.hpp"

#include <doctest/doctest.h>

using namespace stepcast;

TEST_CASE("edit distance counts insertions, deletions and substitutions, ignoring case") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("abc", "") == 3);                    // three deletions
  CHECK(edit_distance("kitten", "sitting") == 3);          // k->s, e->i, +g
  CHECK(edit_distance("micro_bach", "micro_batch") == 1);  // +t
  CHECK(edit_distance("llama3-8b", "llama-3-8b") == 1);    // +-
  CHECK(edit_distance("DGX-A100", "dgx-a100") == 0);
}

TEST_CASE("a name one edit away is suggested; a distance over a quarter of the length is not") {
  const std::vector<std::string> keys{"micro_batch", "grad_accum", "seq_len"};
  CHECK(closest_name("micro_bach", keys) == "micro_batch");
  CHECK(closest_name("Micro_Batch", keys) == "micro_batch");
  // "seq_ln" (6 letters): max(1, 6/4) = 1 edit allowed; "sq_ln" is 2 away from seq_len.
  CHECK(closest_name("seq_ln", keys) == "seq_len");
  CHECK_FALSE(closest_name("sq_ln", keys).has_value());
  CHECK_FALSE(closest_name("colour", keys).has_value());
}

TEST_CASE("a name that begins another (4 characters or more) is suggested") {
  CHECK(closest_name("prefetch", {"name", "bucket_mb", "prefetch_layers"}) == "prefetch_layers");
  CHECK(closest_name("price_per_gpu_hour", {"dataset", "price_per_gpu_hour_usd"}) == "price_per_gpu_hour_usd");
  CHECK(closest_name("dgx-h100-80gb", {"dgx-a100", "dgx-h100", "dgx-h200"}) == "dgx-h100");
  // A shared beginning wins over a smaller distance: dgx-a100-40gb is 2 edits away
  // (h->a, 8->4, within 13/4 = 3), dgx-h100 is 5 away but begins the name.
  CHECK(edit_distance("dgx-h100-80gb", "dgx-a100-40gb") == 2);
  CHECK(closest_name("dgx-h100-80gb", {"dgx-a100-40gb", "dgx-h100"}) == "dgx-h100");
  // 3 characters are too few to go by a prefix: "gpu" is no hint for "gpus_per_node".
  CHECK_FALSE(closest_name("gpu", {"gpus_per_node"}).has_value());
}

TEST_CASE("of several close names the nearest wins, the first on a tie") {
  CHECK(closest_name("dgx-h10", {"dgx-h100", "dgx-h200"}) == "dgx-h100");  // 1 edit vs 2
  CHECK(closest_name("ab", {"ac", "ad"}) == "ac");
  CHECK(did_you_mean("llama3-8b", {"llama-2-7b", "llama-3-8b"}) == " (did you mean \"llama-3-8b\"?)");
  CHECK(did_you_mean("zzz", {"llama-3-8b"}).empty());
}

TEST_CASE("an exact name (ignoring case) is its own suggestion, before longer names it begins") {
  CHECK(closest_name("DGX-H100", {"dgx-h100-nvl", "dgx-h100"}) == "dgx-h100");
}
