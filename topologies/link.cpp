/// \file
/// The link catalog: strict parsing of one link kind and the catalog file
/// topologies/catalog/links.json, loaded once.
#include "topologies/link.hpp"

#include "base/json_input.hpp"
#include "base/limits.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string>
#include <vector>

namespace stepcast {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

LinkSpec parse_link(JsonObject& obj) {
  LinkSpec l;
  l.name = obj.string("name");
  if (l.name.empty()) throw obj.error("name", "expected a non-empty link name");
  l.nccl_class = parse_link_class(obj.choice("class", link_class_names()));
  l.line_rate_GBps =
      obj.number("line_rate_GBps", limits::kMinBandwidth_GBps, limits::kMaxBandwidth_GBps);
  l.effective_GBps =
      obj.number("effective_GBps", limits::kMinBandwidth_GBps, limits::kMaxBandwidth_GBps);
  if (l.effective_GBps > l.line_rate_GBps)
    throw obj.error("effective_GBps", "expected at most line_rate_GBps (" +
                                          std::to_string(l.line_rate_GBps) +
                                          " GB/s); no link beats its line rate");
  l.latency_us = obj.non_negative("latency_us", limits::kMaxLinkLatency_us);
  l.nvls = obj.boolean("nvls");
  if (l.nvls && l.nccl_class != LinkClass::nvlink)
    throw obj.error("nvls", "NVLink SHARP exists only on NVSwitch ports (class \"nvlink\")");
  l.source = obj.string("source");
  if (l.source.empty()) throw obj.error("source", "expected the sources of the rates");
  obj.finish();
  return l;
}

const std::vector<LinkSpec>& link_catalog() {
  static const std::vector<LinkSpec> catalog = [] {
    JsonDoc doc = JsonDoc::load(data_dir() / "topologies" / "catalog" / "links.json");
    JsonObject root(doc.root(), doc.file(), "");
    JsonArray links = root.array("links");
    root.finish();
    std::vector<LinkSpec> out;
    for (std::size_t i = 0; i < links.size(); ++i) {
      JsonObject entry = links.object(i);
      LinkSpec l = parse_link(entry);
      for (const LinkSpec& seen : out)
        if (lower(seen.name) == lower(l.name))
          throw entry.error("name", "duplicate link name \"" + l.name + "\"");
      out.push_back(std::move(l));
    }
    return out;
  }();
  return catalog;
}

const LinkSpec* find_link(const std::string& name) {
  const std::string key = lower(name);
  for (const LinkSpec& l : link_catalog())
    if (lower(l.name) == key) return &l;
  return nullptr;
}

}  // namespace stepcast
