/// \file
/// Link kinds as data (topologies/catalog/links.json): NVLink 1-5, NVSwitch ports, PCIe
/// gen3/4/5 x16, InfiniBand EDR/HDR/NDR, RoCE, EFA and Ethernet (TCP sockets) from 1 to
/// 400 GbE. Each entry gives the line rate, the rate NCCL actually reaches on it (its
/// efficiency), the per-hop latency, and the sources of both.
#pragma once

#include "base/types.hpp"

#include <deque>
#include <string>
#include <vector>

namespace stepcast {

class JsonDoc;
class JsonObject;

struct LinkSpec {
  std::string name;                           ///< catalog key: "nvlink3", "pcie4-x16", "ib-hdr", "eth-1g", ...
  LinkClass nccl_class = LinkClass::network;  ///< NCCL hardware-latency row
  /// Nominal line rate per direction, GB/s (1e9 B/s). Network links: Gb/s / 8.
  double line_rate_GBps = 0;
  /// Rate NCCL reaches per direction for large messages, GB/s. For NVLink and PCIe this is
  /// NCCL's own per-link figure (topo.h: SM80 NVLink 20 GB/s, PCIe gen4 x16 24 GB/s); for
  /// networks the measured per-NIC bus bandwidth (e.g. NDR ~46-48 GB/s, nccl-tests #290).
  double effective_GBps = 0;
  /// Latency per hop added on top of NCCL's hardware row, µs (0 for RDMA and NVLink; the
  /// socket stack for TCP; what a network plugin reports to NCCL, as AWS's for EFA).
  double latency_us = 0;
  bool nvls = false;  ///< NVSwitch with NVLink SHARP (third-generation NVSwitch and later)
  /// The transport delivers out of order (AWS EFA's SRD), so NCCL's LL and LL128 protocols,
  /// which read flags inline with the data, cannot run over it: Simple only.
  bool simple_only = false;
  std::string source;
  bool operator==(const LinkSpec&) const = default;
};

/// Reads one link kind; strict. Keys (all required): name, class (nvlink/pcie/network),
/// line_rate_GBps, effective_GBps (<= line rate), latency_us, nvls (true only with class
/// nvlink), source; optional: simple_only (class network only, default false). Either rate
/// may be given in Gb/s instead (line_rate_Gbps, effective_Gbps: divided by 8), one of the
/// two spellings each.
LinkSpec parse_link(JsonObject& obj);

/// The link catalog, loaded once from topologies/catalog/links.json under data_dir(), then
/// the link kinds added by add_links and add_inline_link (entries never move).
const std::deque<LinkSpec>& link_catalog();
/// By name (case-insensitive); nullptr if unknown.
const LinkSpec* find_link(const std::string& name);
/// Adds the link kinds of a user catalog file ({"links": [...]}, the format of links.json);
/// a name already in the catalog is an InputError naming the file and the entry. All or
/// nothing.
void add_links(const JsonDoc& doc);
/// Adds a link kind given inline in a scenario and returns the catalog's entry; throws
/// std::invalid_argument when a different link kind has that name.
const LinkSpec& add_inline_link(const LinkSpec& link);

}  // namespace stepcast
