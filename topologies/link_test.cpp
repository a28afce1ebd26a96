/// \file
/// Tests of the link catalog (topologies/catalog/links.json) and of parse_link's strictness.
#include "topologies/link.hpp"

#include "base/json_input.hpp"
#include "topologies/gpu.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace stepcast;

namespace {

/// The catalog entry `name`; fails the test when it is missing.
const LinkSpec& link(const std::string& name) {
  const LinkSpec* l = find_link(name);
  REQUIRE_MESSAGE(l != nullptr, "catalog link missing: " << name);
  return *l;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

/// Parses `text` as an inline link at JSON path /link of a file named "inline.json".
LinkSpec parse_inline(const std::string& text) {
  JsonDoc doc = JsonDoc::parse(R"({"link": )" + text + "}", "inline.json");
  JsonObject root(doc.root(), doc.file(), "");
  JsonObject l = root.object("link");
  return parse_link(l);
}

std::string inline_link(const std::string& cls = "network", const std::string& effective = "24",
                        const std::string& extra = "") {
  return R"({"name": "my-link", "class": ")" + cls + R"(", "line_rate_GBps": 25,
             "effective_GBps": )" +
         effective + R"(, "latency_us": 0, "nvls": false,
             "source": "test")" +
         extra + "}";
}

}  // namespace

TEST_CASE("every link has a source and 0 < effective rate <= line rate") {
  const auto& catalog = link_catalog();
  REQUIRE(catalog.size() >= 25);
  for (const LinkSpec& l : catalog) {
    CAPTURE(l.name);
    CHECK(l.source.size() > 40);
    CHECK(l.line_rate_GBps > 0);
    CHECK(l.effective_GBps > 0);
    CHECK(l.effective_GBps <= l.line_rate_GBps);
    CHECK(l.latency_us >= 0);
  }
}

TEST_CASE("the 1 GbE link's effective rate is below 0.125 GB/s (its line rate)") {
  const LinkSpec& eth1 = link("eth-1g");
  CHECK(eth1.line_rate_GBps == doctest::Approx(0.125));
  CHECK(eth1.effective_GBps < 0.125);
  // Framing: 1448 TCP payload bytes per 1538-byte wire slot at MTU 1500.
  CHECK(eth1.effective_GBps == doctest::Approx(0.125 * 1448 / 1538).epsilon(0.001));
  CHECK(link("eth-10g").effective_GBps == doctest::Approx(1.25 * 1448 / 1538).epsilon(0.001));
}

TEST_CASE("TCP Ethernet efficiency falls with speed and sockets pay latency that RDMA does not") {
  const char* eth[] = {"eth-1g", "eth-10g", "eth-25g", "eth-40g", "eth-100g", "eth-200g", "eth-400g"};
  double last_fraction = 1.0;
  for (const char* name : eth) {
    const LinkSpec& l = link(name);
    CAPTURE(l.name);
    CHECK(l.nccl_class == LinkClass::network);
    const double fraction = l.effective_GBps / l.line_rate_GBps;
    CHECK(fraction <= last_fraction + 1e-9);
    last_fraction = fraction;
    CHECK(l.latency_us >= 10);
  }
  CHECK(link("eth-100g").effective_GBps < link("ib-edr").effective_GBps);
}

TEST_CASE("NVLink effective rates are NCCL's topo.h per-generation figures") {
  CHECK(link("nvlink1").effective_GBps == 18.0);         // SM60
  CHECK(link("nvlink2").effective_GBps == 20.0);         // SM70
  CHECK(link("nvlink3").effective_GBps == 20.0);         // SM80
  CHECK(link("nvlink3-bridge").effective_GBps == 12.0);  // SM86
  CHECK(link("nvlink4").effective_GBps == 20.6);         // SM90
  CHECK(link("nvlink5").effective_GBps == 40.1);         // SM100
  for (const char* gen : {"2", "3", "4", "5"})
    CHECK(link(std::string("nvswitch-nvlink") + gen).effective_GBps ==
          link(std::string("nvlink") + gen).effective_GBps);
}

TEST_CASE("PCIe effective rates are NCCL's width x speed / 80 (12/24/48 GB/s for x16)") {
  CHECK(link("pcie3-x16").effective_GBps == 12);
  CHECK(link("pcie4-x16").effective_GBps == 24);
  CHECK(link("pcie5-x16").effective_GBps == 48);
  CHECK(link("pcie3-x8").effective_GBps == 6);
  CHECK(link("pcie4-x8").effective_GBps == 12);
  // Line rate: GT/s x lanes x 128/130 / 8.
  CHECK(link("pcie4-x16").line_rate_GBps == doctest::Approx(16 * 16 * 128.0 / 130 / 8).epsilon(0.001));
  for (const LinkSpec& l : link_catalog())
    if (starts_with(l.name, "pcie")) CHECK(l.nccl_class == LinkClass::pcie);
}

TEST_CASE("network rates: NIC line rate is Gb/s / 8, RDMA adds no latency of its own") {
  CHECK(link("ib-edr").line_rate_GBps == 12.5);
  CHECK(link("ib-hdr").line_rate_GBps == 25);
  CHECK(link("ib-ndr").line_rate_GBps == 50);
  CHECK(link("ib-ndr").effective_GBps == 47);
  CHECK(link("ib-hdr").effective_GBps == 24);
  for (const LinkSpec& l : link_catalog()) {
    CAPTURE(l.name);
    if (starts_with(l.name, "ib-") || starts_with(l.name, "roce-")) {
      CHECK(l.nccl_class == LinkClass::network);
      CHECK(l.latency_us == 0);
    }
    if (l.nccl_class != LinkClass::network) CHECK(l.latency_us == 0);
  }
  // EFA: 29.6 GB/s busbw over 4 adapters per p4dn node (NVIDIA/nccl #527).
  CHECK(link("efa-100g").effective_GBps == doctest::Approx(29.6 / 4));
  CHECK(link("efa-100g").latency_us > 0);
}

TEST_CASE("nvls is true only for third-generation NVSwitch and later") {
  for (const LinkSpec& l : link_catalog()) {
    CAPTURE(l.name);
    const bool expect = l.name == "nvswitch-nvlink4" || l.name == "nvswitch-nvlink5";
    CHECK(l.nvls == expect);
  }
}

TEST_CASE("every catalog GPU's NVLink per-link rate is the line rate of its generation's link kind") {
  for (const GpuSpec& g : gpu_catalog()) {
    if (g.nvlink_gen == 0) continue;
    CAPTURE(g.name);
    const std::string kind = g.arch == GpuArch::ampere && g.nvlink_GBps_per_link < 25
                                 ? "nvlink3-bridge"
                                 : "nvlink" + std::to_string(g.nvlink_gen);
    CHECK(link(kind).line_rate_GBps == g.nvlink_GBps_per_link);
  }
}

TEST_CASE("find_link is case-insensitive and returns nullptr for unknown names") {
  const LinkSpec* l = find_link("ib-hdr");
  REQUIRE(l != nullptr);
  CHECK(find_link("IB-HDR") == l);
  CHECK(find_link("ib-gdr") == nullptr);
}

TEST_CASE("an inline link parses; effective above line rate is an InputError at its pointer") {
  LinkSpec ok = parse_inline(inline_link());
  CHECK(ok.nccl_class == LinkClass::network);
  CHECK(ok.effective_GBps == 24);
  try {
    parse_inline(inline_link("network", "26"));
    FAIL("expected InputError");
  } catch (const InputError& e) {
    CHECK(e.file() == "inline.json");
    CHECK(e.json_path() == "/link/effective_GBps");
  }
}

TEST_CASE("unknown key, unknown class and nvls off NVLink are InputErrors naming the pointer") {
  try {
    parse_inline(inline_link("network", "24", R"(, "mtu": 9000)"));
    FAIL("expected InputError");
  } catch (const InputError& e) {
    CHECK(e.json_path() == "/link/mtu");
  }
  try {
    parse_inline(inline_link("ethernet"));
    FAIL("expected InputError");
  } catch (const InputError& e) {
    CHECK(e.json_path() == "/link/class");
  }
  std::string nvls = inline_link();
  nvls.replace(nvls.find(R"("nvls": false)"), 13, R"("nvls": true)");
  try {
    parse_inline(nvls);
    FAIL("expected InputError");
  } catch (const InputError& e) {
    CHECK(e.json_path() == "/link/nvls");
  }
}

TEST_CASE("link rates and latency outside their physical bounds are InputErrors at their path") {
  const auto path_of = [](const std::string& text) {
    try {
      parse_inline(text);
    } catch (const InputError& e) {
      return e.json_path();
    }
    return std::string("(no InputError)");
  };
  CHECK(path_of(inline_link("network", "1e-300")) == "/link/effective_GBps");
  std::string text = inline_link();
  text.replace(text.find("\"latency_us\": 0"), 15, "\"latency_us\": 1e300");
  CHECK(path_of(text) == "/link/latency_us");
  text = inline_link();
  text.replace(text.find("\"line_rate_GBps\": 25"), 20, "\"line_rate_GBps\": 1e300");
  CHECK(path_of(text) == "/link/line_rate_GBps");
}

TEST_CASE("simple_only: EFA's out-of-order first generation runs Simple only; only network links may say so") {
  CHECK(link("efa-100g").simple_only);      // aws-ofi-nccl forces NCCL_PROTO=simple on p3dn and p4d
  CHECK(!link("efa-v2-100g").simple_only);  // in-order 128-byte writes on p5: LL and LL128 allowed
  CHECK(!link("efa-200g").simple_only);
  CHECK(!link("ib-ndr").simple_only);
  CHECK(parse_inline(inline_link("network", "24", R"(, "simple_only": true)")).simple_only);
  CHECK_THROWS_WITH_AS(parse_inline(inline_link("nvlink", "24", R"(, "simple_only": true)")),
                       doctest::Contains("/link/simple_only"), InputError);
}
