/// \file
/// libFuzzer harness: a catalog document -> its entries, read the way the catalog loaders
/// read topologies/catalog/{gpus,links,boxes,clusters}.json and model/catalog/models.json:
/// the root object holds one list ("gpus", "links", "boxes", "clusters" or "models", the
/// first of them present picks the catalog) and each entry goes through the entry reader
/// (parse_gpu, parse_link, parse_box, parse_cluster, parse_transformer). The loaders
/// themselves (gpu_catalog(), ...) read a fixed path under data_dir() once per process, so
/// they cannot take fuzz input; these entry readers are the parse-from-JSON entry points
/// they call. Model entries also get their parameter count (as `stepcast catalog models`
/// prints it). model/catalog/attention_kernels.json has no parse-from-JSON entry point (its
/// row reader is private to model/compute.cpp) and is not covered.

#include "fuzz/fuzz_input.hpp"

#include "model/transformer.hpp"
#include "topologies/gpu.hpp"
#include "topologies/link.hpp"
#include "topologies/topology.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace {

using stepcast::JsonArray;
using stepcast::JsonObject;

/// Reads every entry of the list `key` with `parse` and hands each to `use`.
template <typename Parse, typename Use>
void read_entries(JsonObject& root, const std::string& key, Parse parse, Use use) {
  JsonArray entries = root.array(key);
  root.finish();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    JsonObject entry = entries.object(i);
    use(parse(entry));
  }
}

void read_catalog(const std::string& text) {
  const stepcast::JsonDoc doc = stepcast::JsonDoc::parse(text, "fuzz-catalog.json");
  JsonObject root(doc.root(), doc.file(), "");
  auto keep = [](const auto& spec) { (void)spec; };
  if (root.has("gpus")) {
    read_entries(root, "gpus", stepcast::parse_gpu, keep);
  } else if (root.has("links")) {
    read_entries(root, "links", stepcast::parse_link, keep);
  } else if (root.has("boxes")) {
    read_entries(root, "boxes", stepcast::parse_box, keep);
  } else if (root.has("clusters")) {
    read_entries(root, "clusters", stepcast::parse_cluster, keep);
  } else {
    read_entries(root, "models", stepcast::parse_transformer, [](const stepcast::TransformerSpec& spec) {
      (void)stepcast::parameter_breakdown(spec);
      (void)stepcast::parameter_count(spec);
    });
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return stepcast::fuzz::read_input(data, size, read_catalog);
}
