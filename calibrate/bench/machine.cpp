// The machine description: GPUs, versions, nvidia-smi's view of the topology and the NICs.
// Nothing here is fatal; a failure becomes an "error: ..." string in the file.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "process_group.hpp"
#include "sections.hpp"

extern char** environ;  // POSIX: the process environment (unistd.h)

namespace stepcast::cal {

namespace {

// CUDA encodes its versions as 1000 * major + 10 * minor (cudaDriverGetVersion and
// cudaRuntimeGetVersion documentation: "12040 for CUDA 12.4").
std::string cuda_version_text(int code) {
  return std::to_string(code / 1000) + "." + std::to_string((code % 1000) / 10);
}

// nccl.h's NCCL_VERSION(X,Y,Z): X*1000 + Y*100 + Z up to 2.8, X*10000 + Y*100 + Z from 2.9
// on; 2.9.0 encodes as 20900, above every old-style code.
std::string nccl_version_text(int code) {
  int major = 0;
  int minor = 0;
  const int patch = code % 100;
  if (code >= 20900) {
    major = code / 10000;
    minor = (code % 10000) / 100;
  } else {
    major = code / 1000;
    minor = (code % 1000) / 100;
  }
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm parts{};
  if (gmtime_r(&now, &parts) == nullptr) return "error: gmtime_r failed";
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text;
}

// Runs a shell command and returns what it printed (stdout and stderr), or "error: ..." with
// the exit status and the output when it did not exit 0.
std::string capture(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return "error: cannot run `" + command + "`: " + std::strerror(errno);
  std::string out;
  char buffer[4096];
  std::size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, got);
  const int status = pclose(pipe);
  if (status == -1) return "error: `" + command + "`: pclose failed: " + std::strerror(errno);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return out;
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return "error: `" + command + "` exited with status " + std::to_string(code) + ": " + out;
}

std::string first_line(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line)) return "unreadable";
  return line;
}

std::vector<std::filesystem::path> sorted_children(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void list_nics(Machine& m) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path infiniband("/sys/class/infiniband");
  if (fs::is_directory(infiniband, ec)) {
    for (const auto& device : sorted_children(infiniband)) {
      const auto ports = sorted_children(device / "ports");
      if (ports.empty()) m.nics.push_back("infiniband " + device.filename().string() + ": no ports listed");
      for (const auto& port : ports) {
        // rate reads like "400 Gb/sec (4X NDR)" (Linux ABI, sysfs-class-infiniband).
        m.nics.push_back("infiniband " + device.filename().string() + " port " + port.filename().string() +
                         ": rate=" + first_line(port / "rate") + ", state=" + first_line(port / "state") +
                         ", link_layer=" + first_line(port / "link_layer"));
      }
    }
  } else {
    m.notes.push_back("nics: no /sys/class/infiniband (no RDMA devices, or not Linux)");
  }
  const fs::path net("/sys/class/net");
  if (fs::is_directory(net, ec)) {
    for (const auto& iface : sorted_children(net)) {
      // speed is in Mb/s (Linux ABI, sysfs-class-net); unreadable for interfaces that are
      // down or virtual.
      m.nics.push_back("net " + iface.filename().string() + ": speed_Mbps=" + first_line(iface / "speed") +
                       ", operstate=" + first_line(iface / "operstate") + ", mtu_bytes=" + first_line(iface / "mtu"));
    }
  } else {
    m.notes.push_back("nics: no /sys/class/net");
  }
}

}  // namespace

std::string this_hostname() {
  char name[256] = {};  // POSIX HOST_NAME_MAX is 255 on Linux (limits.h)
  if (gethostname(name, sizeof name - 1) != 0) return std::string("unknown (") + std::strerror(errno) + ")";
  return name;
}

Machine describe_machine() {
  Machine m;
  m.hostname = this_hostname();
  m.date_utc = utc_now();

  int count = 0;
  const cudaError_t listed = cudaGetDeviceCount(&count);
  if (listed != cudaSuccess) {
    m.notes.push_back(std::string("gpus: cudaGetDeviceCount failed: ") + cudaGetErrorName(listed) + " (" +
                      cudaGetErrorString(listed) + ")");
    (void)cudaGetLastError();
    count = 0;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    const cudaError_t got = cudaGetDeviceProperties(&p, i);
    if (got != cudaSuccess) {
      m.notes.push_back("gpus: cudaGetDeviceProperties(" + std::to_string(i) + ") failed: " + cudaGetErrorString(got));
      continue;
    }
    GpuInfo g;
    g.index = i;
    g.name = p.name;
    g.sm_count = p.multiProcessorCount;
    g.memory_bytes = static_cast<std::int64_t>(p.totalGlobalMem);
    g.compute_capability = std::to_string(p.major) + "." + std::to_string(p.minor);
    m.gpus.push_back(g);
    char pci[64];
    std::snprintf(pci, sizeof pci, "%04x:%02x:%02x", static_cast<unsigned>(p.pciDomainID),
                  static_cast<unsigned>(p.pciBusID), static_cast<unsigned>(p.pciDeviceID));
    m.notes.push_back("gpu " + std::to_string(i) + ": pci_bus_id=" + pci + ", l2_cache_bytes=" +
                      std::to_string(p.l2CacheSize) + ", memory_bus_width_bits=" + std::to_string(p.memoryBusWidth));
  }

  int version = 0;
  if (cudaDriverGetVersion(&version) == cudaSuccess && version > 0) {
    m.driver_version = cuda_version_text(version);
  } else {
    m.driver_version = "error: cudaDriverGetVersion found no driver";
  }
  if (cudaRuntimeGetVersion(&version) == cudaSuccess) {
    m.cuda_runtime_version = cuda_version_text(version);
  } else {
    m.cuda_runtime_version = "error: cudaRuntimeGetVersion failed";
  }
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess) {
    m.nccl_version = nccl_version_text(nccl);
  } else {
    m.nccl_version = "error: ncclGetVersion failed";
  }
  m.notes.push_back("cublasLt_version_code=" + std::to_string(cublasLtGetVersion()) +
                    " (cuBLASLt encodes major*10000 + minor*100 + patch)");
  m.notes.push_back("built with: CUDA runtime header " + cuda_version_text(CUDART_VERSION) + ", nccl.h " +
                    nccl_version_text(NCCL_VERSION_CODE));

  m.nvidia_smi_topo = capture("nvidia-smi topo -m");
  m.nvidia_smi_list = capture("nvidia-smi -L");
  m.notes.push_back("nvidia-smi --query-gpu: " +
                    capture("nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm,clocks.max.memory,"
                            "power.limit,pcie.link.gen.max,pcie.link.width.max,persistence_mode "
                            "--format=csv"));
  list_nics(m);

  // NCCL and CUDA settings of this run, as set in the environment.
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string setting = *entry;
    if (setting.rfind("NCCL_", 0) == 0 || setting.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0 ||
        setting.rfind("CUBLAS", 0) == 0) {
      m.notes.push_back("environment: " + setting);
    }
  }
  return m;
}

}  // namespace stepcast::cal
