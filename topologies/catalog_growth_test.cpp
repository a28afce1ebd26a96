// Rules of the catalog entries added for 2025-2026 hardware (AMD CDNA 3, Blackwell Ultra,
// NVL72 racks, cloud instances, 800 Gb/s networks) and of user catalogs: files in the
// built-in format add entries and never redefine one; inline entries must equal any entry
// of their name.
#include "topologies/topology.hpp"

#include "base/json_input.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace stepcast;

namespace {

const GpuSpec& gpu(const std::string& name) {
  const GpuSpec* g = find_gpu(name);
  REQUIRE_MESSAGE(g != nullptr, name);
  return *g;
}

Topology one_box(const std::string& box) {
  ClusterSpec c;
  c.name = c.box = box;
  return Topology::build(c);
}

std::string error_of(void (*add)(const JsonDoc&), const std::string& json, const std::string& file) {
  try {
    add(JsonDoc::parse(json, file));
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

const char* kUserGpu = R"({"name": "NAME", "display_name": "User GPU", "arch": "hopper", "sm_count": 100,
  "peak_tflops": {"fp32": 50, "tf32": 400, "fp16": 800, "bf16": 800, "fp8": 1600}, "memory_GiB": 96,
  "memory_bw_GBps": 3000, "nvlink_gen": 0, "nvlink_links": 0, "nvlink_GBps_per_link": 0, "pcie_gen": 5,
  "pcie_lanes": 16, "tdp_w": 700, "source": "a user catalog entry of this test, https://example.org/datasheet"})";

std::string user_gpu(const std::string& name) {
  std::string s = kUserGpu;
  return s.replace(s.find("NAME"), 4, name);
}

}  // namespace

TEST_CASE("new data-center GPUs keep the dense ladder: tf32 = bf16 / 2, fp16 = bf16, fp8 = 2 x bf16") {
  for (const char* key : {"mi300x-192gb", "mi325x-256gb", "l4-24gb", "rtx-6000-ada-48gb", "b300-sxm-288gb",
                          "gb200-186gb", "gb300-288gb"}) {
    const GpuSpec& g = gpu(key);
    CAPTURE(g.name);
    CHECK(g.peak(Dtype::tf32) * 2 == doctest::Approx(g.peak(Dtype::bf16)).epsilon(0.01));
    CHECK(g.peak(Dtype::fp16) == g.peak(Dtype::bf16));
    CHECK(g.peak(Dtype::fp8) == doctest::Approx(2 * g.peak(Dtype::bf16)).epsilon(0.01));
    CHECK_FALSE(g.source.empty());
  }
}

TEST_CASE("SM (compute unit) counts of the new GPUs are the datasheets' cores / cores per SM") {
  CHECK(gpu("l4-24gb").sm_count == 7424 / 128);                          // L4 datasheet: 7,424 CUDA cores
  CHECK(gpu("rtx-6000-ada-48gb").sm_count == 18176 / 128);               // 18,176 CUDA cores
  CHECK(gpu("rtx-5090-32gb").sm_count == 21760 / 128);                   // RTX Blackwell whitepaper: 21,760 cores
  CHECK(gpu("mi300x-192gb").sm_count == 304);                            // AMD: 304 compute units
  CHECK(gpu("gb200-186gb").sm_count == gpu("b200-sxm-180gb").sm_count);  // the same GPU
}

TEST_CASE("RTX 5090 is a GeForce part: FP32-accumulate tensor rate = 2 x FP32 (170 SMs x 128 x 2 x 2.407 GHz)") {
  const GpuSpec& g = gpu("rtx-5090-32gb");
  CHECK(170 * 128 * 2 * 2.407e9 / 1e12 == doctest::Approx(g.peak(Dtype::fp32)).epsilon(0.001));
  CHECK(g.peak(Dtype::bf16) == doctest::Approx(2 * g.peak(Dtype::fp32)).epsilon(0.001));
}

TEST_CASE("CDNA 3 GPUs have every tensor path and no NVLink; their boxes join them by Infinity Fabric") {
  const GpuSpec& g = gpu("mi300x-192gb");
  CHECK(g.arch == GpuArch::cdna3);
  CHECK(g.supports(Dtype::fp8));
  CHECK(g.nvlink_links == 0);
  CHECK(g.gemm_ceiling_tflops.empty());  // no published ceiling: the compute model's default
  // 7 links per GPU, one to each peer: all 8 see 7 x 52.7 GB/s; two GPUs share one link.
  const Topology t = one_box("amd-mi300x-8x");
  CHECK(t.fabric(1, 8).intra.bw_GBps == doctest::Approx(7 * 52.7));
  CHECK(t.fabric(1, 2).intra.bw_GBps == doctest::Approx(52.7));
  CHECK(t.fabric(1, 8).intra.link == LinkClass::nvlink);
}

TEST_CASE("an NVL72 rack is one box of 72 GPUs on one NVSwitch plane: 18 NVLink5 x 40.1 GB/s, NVLS, 4 GPUs a tray") {
  for (const char* name : {"gb200-nvl72", "gb300-nvl72"}) {
    CAPTURE(name);
    const BoxSpec* box = find_box(name);
    REQUIRE(box != nullptr);
    CHECK(box->gpus == 72);
    CHECK(box->gpus / box->pcie_switches == 4);
    CHECK(box->nics == 72);
    const Topology t = one_box(name);
    const CommFabric all = t.fabric(1, 72);
    CHECK(all.intra.ranks == 72);
    CHECK(all.intra.bw_GBps == doctest::Approx(18 * 40.1));
    CHECK(all.nvls);
  }
}

TEST_CASE("800 Gb/s networks: InfiniBand XDR and 800 GbE RoCE carry 800 / 8 = 100 GB/s per direction") {
  for (const char* name : {"ib-xdr", "roce-800g"}) {
    const LinkSpec* l = find_link(name);
    REQUIRE(l != nullptr);
    CHECK(l->line_rate_GBps == 800.0 / 8);
    CHECK(l->effective_GBps < l->line_rate_GBps);
    CHECK(l->latency_us == 0);  // RDMA
  }
}

TEST_CASE("cloud instances hold the GPUs and NICs their pages give") {
  struct Row {
    const char* box;
    const char* gpu;
    int nics;
    double nic_Gbps;
  };
  const Row rows[] = {{"aws-p5e", "h200-sxm-141gb", 32, 100},        {"aws-p5en", "h200-sxm-141gb", 16, 200},
                      {"gcp-a3-high", "h100-sxm5-80gb", 4, 200},     {"gcp-a3-mega", "h100-sxm5-80gb", 8, 200},
                      {"gcp-a3-ultra", "h200-sxm-141gb", 8, 400},    {"azure-nd-h100-v5", "h100-sxm5-80gb", 8, 400},
                      {"azure-nd-h200-v5", "h200-sxm-141gb", 8, 400}};
  for (const Row& r : rows) {
    CAPTURE(r.box);
    const BoxSpec* box = find_box(r.box);
    REQUIRE(box != nullptr);
    CHECK(box->gpu == r.gpu);
    CHECK(box->nics == r.nics);
    CHECK(find_link(box->nic)->line_rate_GBps == r.nic_Gbps / 8);
  }
}

TEST_CASE("a user catalog adds GPUs, Gb/s links and boxes naming them; a name already in the catalog is refused") {
  add_gpus(JsonDoc::parse(R"({"gpus": [)" + user_gpu("user-gpu-a") + "]}", "mine/gpus.json"));
  CHECK(gpu("USER-GPU-A").memory_bw_GBps == 3000);
  // 150 Gb/s written in Gb/s is 18.75 GB/s.
  add_links(JsonDoc::parse(R"({"links": [{"name": "user-150g", "class": "network", "line_rate_Gbps": 150,
    "effective_Gbps": 140, "latency_us": 0, "nvls": false,
    "source": "a user catalog entry of this test, https://example.org/nic-datasheet"}]})",
                           "mine/links.json"));
  REQUIRE(find_link("user-150g") != nullptr);
  CHECK(find_link("user-150g")->line_rate_GBps == 18.75);
  CHECK(find_link("user-150g")->effective_GBps == 17.5);
  add_boxes(JsonDoc::parse(R"({"boxes": [{"name": "user-box", "display_name": "User box", "gpu": "user-gpu-a",
    "gpus": 4, "fabric": "pcie", "pcie": "pcie5-x16", "pcie_switches": 0, "cpus": 1, "p2p": true,
    "nic": "user-150g", "nics": 2, "source": "a user catalog entry of this test, https://example.org/server"}]})",
                           "mine/boxes.json"));
  CHECK(one_box("user-box").fabric(1, 4).intra.ranks == 4);

  // The same name as a built-in entry (any case), or twice in one file: refused, naming the
  // file and the entry; nothing of that file is added.
  const std::size_t gpus = gpu_catalog().size();
  std::string what = error_of(
      add_gpus, R"({"gpus": [)" + user_gpu("user-gpu-b") + "," + user_gpu("H100-SXM5-80GB") + "]}", "mine/gpus.json");
  CHECK_MESSAGE(what.find("mine/gpus.json") != std::string::npos, what);
  CHECK_MESSAGE(what.find("/gpus/1") != std::string::npos, what);
  CHECK_MESSAGE(what.find("already in the catalog") != std::string::npos, what);
  CHECK(gpu_catalog().size() == gpus);
  CHECK(find_gpu("user-gpu-b") == nullptr);
  what = error_of(add_gpus, R"({"gpus": [)" + user_gpu("twice") + "," + user_gpu("twice") + "]}", "mine/gpus.json");
  CHECK_MESSAGE(what.find("/gpus/1") != std::string::npos, what);
  // Strict: an unknown key gets its path and a "did you mean".
  what = error_of(add_links, R"({"links": [{"name": "x", "class": "network", "line_rate_GBps": 1,
    "effective_GBps": 1, "latency_us": 0, "latency_usec": 0, "nvls": false, "source": "t"}]})",
                  "mine/links.json");
  CHECK_MESSAGE(what.find("/links/0/latency_usec") != std::string::npos, what);
  CHECK_MESSAGE(what.find("did you mean \"latency_us\"") != std::string::npos, what);
  what = error_of(add_links, R"({"links": [{"name": "x", "class": "network", "line_rate_GBps": 1, "line_rate_Gbps": 8,
    "effective_GBps": 1, "latency_us": 0, "nvls": false, "source": "t"}]})",
                  "mine/links.json");
  CHECK_MESSAGE(what.find("not both") != std::string::npos, what);
}

TEST_CASE("an inline entry equal to the catalog's entry of its name is that entry; a different one is refused") {
  JsonDoc doc = JsonDoc::parse(user_gpu("inline-gpu"), "s.json");
  JsonObject o(doc.root(), doc.file(), "/hardware/box/gpu");
  const GpuSpec spec = parse_gpu(o);
  const GpuSpec& first = add_inline_gpu(spec);
  CHECK(&add_inline_gpu(spec) == &first);  // the same again: nothing added
  GpuSpec other = spec;
  other.memory_bw_GBps = 1;
  CHECK_THROWS_WITH_AS(add_inline_gpu(other), doctest::Contains("differs from the catalog's GPU"),
                       std::invalid_argument);
  CHECK(&add_inline_gpu(*find_gpu("h100-sxm5-80gb")) == find_gpu("h100-sxm5-80gb"));
}
