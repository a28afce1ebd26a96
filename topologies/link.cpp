/// \file
/// The link catalog: strict parsing of one link kind and the catalog file
/// topologies/catalog/links.json, loaded once.
#include "topologies/link.hpp"

#include "base/catalog_store.hpp"
#include "base/json_input.hpp"
#include "base/limits.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string>
#include <vector>

namespace stepcast {

namespace {

/// Bits per byte: network rates are quoted in Gb/s (1e9 bit/s), the catalog's in GB/s.
constexpr double kBitsPerByte = 8.0;

/// A rate given as `<stem>_GBps` (GB/s) or `<stem>_Gbps` (Gb/s, divided by 8), exactly one.
double rate_GBps(JsonObject& obj, const std::string& stem) {
  const std::string bytes = stem + "_GBps", bits = stem + "_Gbps";
  if (obj.has(bytes) && obj.has(bits))
    throw obj.error(bits, "give " + bytes + " (GB/s) or " + bits + " (Gb/s), not both");
  if (obj.has(bits))
    return obj.number(bits, limits::kMinBandwidth_GBps * kBitsPerByte, limits::kMaxBandwidth_GBps * kBitsPerByte) /
           kBitsPerByte;
  if (!obj.has(bytes)) throw obj.error(bytes, "missing; expected " + bytes + " (GB/s) or " + bits + " (Gb/s)");
  return obj.number(bytes, limits::kMinBandwidth_GBps, limits::kMaxBandwidth_GBps);
}

}  // namespace

LinkSpec parse_link(JsonObject& obj) {
  LinkSpec l;
  l.name = obj.string("name");
  if (l.name.empty()) throw obj.error("name", "expected a non-empty link name");
  l.nccl_class = parse_link_class(obj.choice("class", link_class_names()));
  l.line_rate_GBps = rate_GBps(obj, "line_rate");
  l.effective_GBps = rate_GBps(obj, "effective");
  if (l.effective_GBps > l.line_rate_GBps)
    throw obj.error(
        obj.has("effective_Gbps") ? "effective_Gbps" : "effective_GBps",
        "expected at most the line rate (" + std::to_string(l.line_rate_GBps) + " GB/s); no link beats its line rate");
  l.latency_us = obj.non_negative("latency_us", limits::kMaxLinkLatency_us);
  l.nvls = obj.boolean("nvls");
  if (l.nvls && l.nccl_class != LinkClass::nvlink)
    throw obj.error("nvls", "NVLink SHARP exists only on NVSwitch ports (class \"nvlink\")");
  l.simple_only = obj.optional_boolean("simple_only").value_or(false);
  if (l.simple_only && l.nccl_class != LinkClass::network)
    throw obj.error("simple_only", "applies to network links only (NCCL's protocols over a NIC transport)");
  l.source = obj.string("source");
  if (l.source.empty()) throw obj.error("source", "expected the sources of the rates");
  obj.finish();
  return l;
}

namespace {

std::deque<LinkSpec>& link_store() {
  static std::deque<LinkSpec> store = [] {
    std::deque<LinkSpec> out;
    catalog_store::append(JsonDoc::load(data_dir() / "topologies" / "catalog" / "links.json"), "links", parse_link, out,
                          "link kind");
    return out;
  }();
  return store;
}

}  // namespace

const std::deque<LinkSpec>& link_catalog() { return link_store(); }

const LinkSpec* find_link(const std::string& name) { return catalog_store::find(link_store(), name); }

void add_links(const JsonDoc& doc) { catalog_store::append(doc, "links", parse_link, link_store(), "link kind"); }

const LinkSpec& add_inline_link(const LinkSpec& link) {
  return catalog_store::add_inline(link_store(), link, "link kind");
}

}  // namespace stepcast
