#include "calibrate/fit/fit.hpp"

#include "base/json_input.hpp"
#include "base/limits.hpp"
#include "model/collective.hpp"
#include "model/compute.hpp"
#include "topologies/gpu.hpp"
#include "topologies/topology.hpp"

#include <Eigen/Dense>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace stepcast {

std::string_view name(CopyKind k) {
  switch (k) {
    case CopyKind::device_to_device:
      return "device_to_device";
    case CopyKind::host_to_device:
      return "host_to_device";
    case CopyKind::device_to_host:
      return "device_to_host";
  }
  return "?";
}

namespace {

/// The check value of a row that the fits use.
constexpr const char* kCheckOk = "ok";

std::vector<std::string> copy_kind_names() {
  return {std::string(name(CopyKind::device_to_device)), std::string(name(CopyKind::host_to_device)),
          std::string(name(CopyKind::device_to_host))};
}

/// A measured figure of a GEMM or collective row: a number in [0, max]; on a row whose check
/// is not "ok" (skipped, failed) also null, which the benchmark writes for a figure it could
/// not compute (calibrate/bench/json.cpp writes non-finite numbers as null). Null reads as 0.
double measured(JsonObject& row, const std::string& key, bool ok, double max) {
  if (!ok && row.has(key) && row.raw(key).is_null()) return 0;
  return row.non_negative(key, max);
}

/// Iterations must be >= 1 and the median time a physical one (limits::kMinMeasuredTime_s
/// and up) on a row the fits use; a skipped row carries zeros.
void require_measured(JsonObject& row, std::int64_t iterations, double time_s_median, bool ok) {
  if (!ok) return;
  if (iterations < 1)
    throw row.error("iterations",
                    "expected an integer >= 1 on a row whose check is \"ok\", got " + std::to_string(iterations));
  if (!(time_s_median >= limits::kMinMeasuredTime_s))
    throw row.error("time_s_median", fmt::format("expected a time of at least {:g} s (limits::kMinMeasuredTime_s) "
                                                 "on a row whose check is \"ok\", got {:g}",
                                                 limits::kMinMeasuredTime_s, time_s_median));
}

RawGemm parse_gemm(JsonObject& o) {
  RawGemm g;
  g.json_path = o.path();
  g.check = o.string("check");
  const bool ok = g.check == kCheckOk;
  g.name = o.string("name");
  g.dtype = parse_dtype(o.choice("dtype", dtype_names()));
  g.m = o.integer("m", 1, limits::kMaxGemmDim);
  g.n = o.integer("n", 1, limits::kMaxGemmDim);
  g.k = o.integer("k", 1, limits::kMaxGemmDim);
  g.iterations = o.integer("iterations", 0, limits::kMaxIterations);
  g.time_s_median = measured(o, "time_s_median", ok, limits::kMaxMeasuredTime_s);
  g.time_s_min = measured(o, "time_s_min", ok, limits::kMaxMeasuredTime_s);
  g.time_s_max = measured(o, "time_s_max", ok, limits::kMaxMeasuredTime_s);
  g.tflops = measured(o, "tflops", ok, limits::kMaxMeasuredTflops);
  require_measured(o, g.iterations, g.time_s_median, ok);
  o.finish();
  return g;
}

/// A gemm_torch row: a gemm row plus the PyTorch call that ran it (checked, then one GEMM
/// measurement like any other: its json_path says where it came from).
RawGemm parse_gemm_torch(JsonObject& o) {
  o.choice("library", {"torch.matmul", "torch._scaled_mm"});
  return parse_gemm(o);
}

RawMemory parse_memory(JsonObject& o) {
  RawMemory m;
  m.json_path = o.path();
  const std::string kind = o.choice("kind", copy_kind_names());
  m.kind = kind == name(CopyKind::device_to_device) ? CopyKind::device_to_device
           : kind == name(CopyKind::host_to_device) ? CopyKind::host_to_device
                                                    : CopyKind::device_to_host;
  m.bytes = o.integer("bytes", 1, limits::kMaxMeasuredBytes);
  m.iterations = o.integer("iterations", 1, limits::kMaxIterations);
  m.time_s_median = o.number("time_s_median", limits::kMinMeasuredTime_s, limits::kMaxMeasuredTime_s);
  m.GBps = o.positive("GBps", limits::kMaxBandwidth_GBps);
  o.finish();
  return m;
}

RawCollective parse_collective_row(JsonObject& o) {
  RawCollective c;
  c.json_path = o.path();
  c.check = o.string("check");
  const bool ok = c.check == kCheckOk;
  c.collective = parse_collective(o.choice("collective", collective_names()));
  c.ranks = o.integer("ranks", 1, limits::kMaxClusterGpus);
  c.nodes = o.integer("nodes", 1, limits::kMaxClusterGpus);
  c.gpus_per_node = o.integer("gpus_per_node", 1, limits::kMaxGpusPerBox);
  if (c.nodes * c.gpus_per_node != c.ranks)
    throw o.error("ranks", fmt::format("expected nodes x gpus_per_node = {} x {} = {}, got {}", c.nodes,
                                       c.gpus_per_node, c.nodes * c.gpus_per_node, c.ranks));
  c.bytes = o.integer("bytes", 1, limits::kMaxMeasuredBytes);
  c.dtype = o.string("dtype");
  c.iterations = o.integer("iterations", 0, limits::kMaxIterations);
  c.time_s_median = measured(o, "time_s_median", ok, limits::kMaxMeasuredTime_s);
  c.time_s_min = measured(o, "time_s_min", ok, limits::kMaxMeasuredTime_s);
  c.algbw_GBps = measured(o, "algbw_GBps", ok, limits::kMaxBandwidth_GBps);
  c.busbw_GBps = measured(o, "busbw_GBps", ok, limits::kMaxBandwidth_GBps);
  c.nccl_algo = o.string("nccl_algo");
  c.nccl_proto = o.string("nccl_proto");
  require_measured(o, c.iterations, c.time_s_median, ok);
  o.finish();
  return c;
}

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

/// Solves min ||A x - b|| by column-pivoting QR after scaling each column to unit norm (the
/// columns of the fits below differ by many orders of magnitude).
Eigen::VectorXd scaled_least_squares(Eigen::MatrixXd a, const Eigen::VectorXd& b) {
  Eigen::VectorXd scale(a.cols());
  for (Eigen::Index j = 0; j < a.cols(); ++j) {
    const double n = a.col(j).norm();
    scale(j) = n > 0 ? n : 1.0;
    a.col(j) /= scale(j);
  }
  Eigen::VectorXd x = a.colPivHouseholderQr().solve(b);
  return x.cwiseQuotient(scale);
}

int distinct(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return static_cast<int>(std::unique(values.begin(), values.end()) - values.begin());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// The rows of an optional section of the raw file.
template <class Row>
void read_rows(JsonObject& root, const char* key, std::vector<Row>& into, Row (*parse)(JsonObject&)) {
  auto rows = root.optional_array(key);
  if (!rows) return;
  for (std::size_t i = 0; i < rows->size(); ++i) {
    JsonObject o = rows->object(i);
    into.push_back(parse(o));
  }
}

}  // namespace

// ---- reading ---------------------------------------------------------------------------

RawCalibration parse_raw_calibration(const JsonDoc& doc) {
  JsonObject root(doc.root(), doc.file(), "");
  const std::string format = root.string("format");
  if (format != kRawCalibrationFormat)
    throw root.error("format", std::string("expected \"") + kRawCalibrationFormat + "\", got \"" + format + "\"");
  RawCalibration raw;
  raw.file = doc.file();
  {
    JsonObject machine = root.object("machine");
    raw.machine = parse_machine(machine);
  }
  JsonArray gemm = root.array("gemm");
  for (std::size_t i = 0; i < gemm.size(); ++i) {
    JsonObject o = gemm.object(i);
    raw.gemm.push_back(parse_gemm(o));
  }
  JsonArray memory = root.array("memory");
  for (std::size_t i = 0; i < memory.size(); ++i) {
    JsonObject o = memory.object(i);
    raw.memory.push_back(parse_memory(o));
  }
  JsonArray nccl = root.array("nccl");
  for (std::size_t i = 0; i < nccl.size(); ++i) {
    JsonObject o = nccl.object(i);
    raw.nccl.push_back(parse_collective_row(o));
  }
  read_rows(root, "launch", raw.launch, parse_raw_launch);
  read_rows(root, "attention", raw.attention, parse_raw_attention);
  read_rows(root, "memory_kernels", raw.memory_kernels, parse_raw_memory_kernel);
  read_rows(root, "overlap", raw.overlap, parse_raw_overlap);
  read_rows(root, "gemm_torch", raw.gemm, parse_gemm_torch);
  root.finish();
  return raw;
}

RawCalibration load_raw_calibration(const std::filesystem::path& path) {
  return parse_raw_calibration(JsonDoc::load(path));
}

// ---- GEMM efficiency curve -------------------------------------------------------------

GemmCurveFit fit_gemm_curve(const std::vector<GemmSample>& samples) {
  std::vector<double> sizes;
  for (const GemmSample& s : samples) {
    if (!(s.flops > 0) || !(s.efficiency > 0) || !std::isfinite(s.flops) || !std::isfinite(s.efficiency))
      throw FitError("GEMM samples need FLOPs > 0 and efficiency > 0");
    sizes.push_back(s.flops);
  }
  if (distinct(sizes) < 2)
    throw FitError(fmt::format("{} GEMM size(s); the curve needs at least 2 distinct sizes", distinct(sizes)));
  const Eigen::Index n = static_cast<Eigen::Index>(samples.size());
  Eigen::VectorXd flops(n), eff(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    flops(i) = samples[static_cast<std::size_t>(i)].flops;
    eff(i) = samples[static_cast<std::size_t>(i)].efficiency;
  }

  // Start: 1/eff = c0 + c1 / F with c0 = 1/max_fraction, c1 = half_flops/max_fraction,
  // fitted on relative residuals ((c0 + c1/F) - 1/eff) / (1/eff): rows [eff, eff/F], rhs 1.
  Eigen::MatrixXd a(n, 2);
  a.col(0) = eff;
  a.col(1) = eff.cwiseQuotient(flops);
  const Eigen::VectorXd c = scaled_least_squares(a, Eigen::VectorXd::Ones(n));
  double max_fraction = eff.maxCoeff();
  // Without a rising curve (c1 <= 0) start from a half size far below the smallest GEMM.
  // The factor 1e-3 is only a starting point; the iterations below move it.
  double half_flops = 1e-3 * flops.minCoeff();
  if (c(0) > 0) max_fraction = 1.0 / c(0);
  if (c(0) > 0 && c(1) > 0) half_flops = c(1) / c(0);

  // Levenberg-Marquardt on p = (max_fraction, ln half_flops) (the log keeps half_flops > 0
  // and the two columns of the Jacobian of similar size), residual r_i = model/eff_i - 1.
  auto residuals = [&](double a_frac, double u, Eigen::VectorXd& r, Eigen::MatrixXd* jac) {
    const double h = std::exp(u);
    r.resize(n);
    if (jac) jac->resize(n, 2);
    for (Eigen::Index i = 0; i < n; ++i) {
      const double s = flops(i) / (flops(i) + h);
      r(i) = a_frac * s / eff(i) - 1.0;
      if (jac) {
        (*jac)(i, 0) = s / eff(i);
        (*jac)(i, 1) = -a_frac * s * h / (flops(i) + h) / eff(i);  // d/du = h d/dh
      }
    }
  };
  double p0 = max_fraction, p1 = std::log(half_flops);
  Eigen::VectorXd r;
  Eigen::MatrixXd jac;
  residuals(p0, p1, r, &jac);
  double cost = r.squaredNorm();
  // Damping schedule of Marquardt (1963): start small, x10 on a rejected step, /10 on an
  // accepted one; the bounds and the iteration cap only stop a search that is done.
  double lambda = 1e-3;
  constexpr double kLambdaMax = 1e16;
  constexpr int kMaxIterations = 500;
  int iterations = 0;
  bool converged = false;
  while (!converged && iterations < kMaxIterations) {
    ++iterations;
    const Eigen::Matrix2d jtj = jac.transpose() * jac;
    const Eigen::Vector2d g = jac.transpose() * r;
    bool accepted = false;
    while (!accepted && lambda <= kLambdaMax) {
      Eigen::Matrix2d m = jtj;
      m.diagonal() += lambda * jtj.diagonal();
      const Eigen::Vector2d step = m.ldlt().solve(-g);
      Eigen::VectorXd r_new;
      residuals(p0 + step(0), p1 + step(1), r_new, nullptr);
      const double cost_new = r_new.squaredNorm();
      if (std::isfinite(cost_new) && cost_new < cost && p0 + step(0) > 0) {
        p0 += step(0);
        p1 += step(1);
        const double gain = cost - cost_new;
        cost = cost_new;
        residuals(p0, p1, r, &jac);
        lambda = std::max(lambda / 10, 1e-15);
        accepted = true;
        // Converged: the step changes the parameters below double precision's resolution
        // at this scale, or the cost no longer falls measurably.
        converged = (std::abs(step(0)) <= 1e-15 * p0 && std::abs(step(1)) <= 1e-15) || gain <= 1e-30 + 1e-15 * cost;
      } else {
        lambda *= 10;
      }
    }
    // No step lowers the cost any more: the minimum, to machine precision.
    if (!accepted) converged = true;
  }
  GemmCurveFit out;
  out.max_fraction = p0;
  out.half_flops = std::exp(p1);
  out.points = static_cast<int>(n);
  out.rms_rel_residual = std::sqrt(cost / static_cast<double>(n));
  out.iterations = iterations;
  return out;
}

// ---- alpha-beta ------------------------------------------------------------------------

AlphaBetaFit fit_alpha_beta(const std::vector<CollectiveSample>& samples) {
  std::vector<double> sizes;
  for (const CollectiveSample& s : samples) {
    if (!(s.bytes > 0) || !(s.time_s > 0) || !std::isfinite(s.bytes) || !std::isfinite(s.time_s))
      throw FitError("collective samples need bytes > 0 and time > 0");
    sizes.push_back(s.bytes);
  }
  if (distinct(sizes) < 2)
    throw FitError(fmt::format("{} message size(s); alpha-beta needs at least 2 distinct sizes", distinct(sizes)));
  const Eigen::Index n = static_cast<Eigen::Index>(samples.size());
  // Weighted least squares with weights 1/t_i^2: minimise sum ((alpha + b_i g - t_i)/t_i)^2,
  // i.e. rows [1/t_i, b_i/t_i] against 1, with g = 1/beta in s/B.
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd b_over_t(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const CollectiveSample& s = samples[static_cast<std::size_t>(i)];
    a(i, 0) = 1.0 / s.time_s;
    a(i, 1) = s.bytes / s.time_s;
    b_over_t(i) = s.bytes / s.time_s;
  }
  const Eigen::VectorXd x = scaled_least_squares(a, Eigen::VectorXd::Ones(n));
  AlphaBetaFit out;
  double alpha = x(0), g = x(1);
  if (alpha < 0) {
    // A negative latency has no meaning: the constrained optimum is on alpha = 0, where
    // g = sum(b/t) / sum((b/t)^2).
    alpha = 0;
    g = b_over_t.sum() / b_over_t.squaredNorm();
    out.alpha_clamped = true;
  }
  if (!(g > 0)) throw FitError("the time does not grow with the message size (fitted bandwidth <= 0)");
  out.alpha_s = alpha;
  out.beta_GBps = 1.0 / g / 1e9;
  out.points = static_cast<int>(n);
  const Eigen::VectorXd r = (a.col(0) * alpha + a.col(1) * g).array() - 1.0;
  out.rms_rel_residual = std::sqrt(r.squaredNorm() / static_cast<double>(n));
  return out;
}

// ---- GPU names -------------------------------------------------------------------------

std::optional<std::string> catalog_gpu_for_device(const std::string& device_name) {
  const std::string wanted = lower(device_name);
  for (const GpuSpec& g : gpu_catalog())
    if (lower(g.name) == wanted || lower(g.display_name) == wanted) return g.name;
  // Names the driver reports (cudaGetDeviceProperties().name, nvidia-smi "Name") that differ
  // from the catalog's display names. Each as printed in a public log:
  struct Alias {
    const char* device_name;
    const char* catalog_key;
  };
  static constexpr std::array<Alias, 5> kAliases{{
      // nvidia-smi on an 8-GPU H100 SXM5 node (700 W cap, 81559 MiB):
      // https://github.com/wilicc/gpu-burn/issues/114
      {"NVIDIA H100 80GB HBM3", "h100-sxm5-80gb"},
      // nvidia-smi -q "Product Name" on an H200 SXM node:
      // https://github.com/NVIDIA/mig-parted/issues/120
      {"NVIDIA H200", "h200-sxm-141gb"},
      // nvidia-smi -a "Product Name": https://github.com/NVIDIA/CUDALibrarySamples/issues/104
      {"NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb"},
      // CUDA deviceQuery "Device 7": https://github.com/bottlerocket-os/bottlerocket/pull/3873
      {"NVIDIA A100-SXM4-40GB", "a100-sxm4-40gb"},
      // nvidia-smi with driver 450 (before the "NVIDIA " prefix), 81252 MiB:
      // https://github.com/keyu-tian/SparK/issues/8
      {"A100-SXM-80GB", "a100-sxm4-80gb"},
  }};
  for (const Alias& a : kAliases)
    if (lower(a.device_name) == wanted) return std::string(a.catalog_key);
  return std::nullopt;
}

// ---- the whole file --------------------------------------------------------------------

namespace {

const GpuSpec& choose_gpu(const RawCalibration& raw, const FitOptions& options, FitResult& out) {
  if (!options.gpu.empty()) {
    const GpuSpec* g = find_gpu(options.gpu);
    if (!g) throw FitOptionError("--gpu " + options.gpu + ": not a GPU of the catalog (see `stepcast catalog gpus`)");
    out.gpu_mapped_from = "--gpu " + options.gpu;
    return *g;
  }
  if (raw.machine.gpus.empty())
    throw InputError(raw.file, "/machine/gpus",
                     "no GPU listed, so the catalog GPU is unknown; pass --gpu CATALOG_NAME");
  const std::string& device = raw.machine.gpus.front().name;
  const auto key = catalog_gpu_for_device(device);
  if (!key)
    throw InputError(raw.file, "/machine/gpus/0/name",
                     "\"" + device +
                         "\" is not a GPU stepcast knows by that name; pass --gpu "
                         "CATALOG_NAME (see `stepcast catalog gpus`)");
  const GpuSpec* g = find_gpu(*key);
  if (!g) throw std::logic_error("GPU alias table names " + *key + ", absent from the catalog");
  out.gpu_mapped_from = "machine.gpus[0].name \"" + device + "\"";
  return *g;
}

const BoxSpec* choose_box(const GpuSpec& gpu, const FitOptions& options) {
  if (!options.box.empty()) {
    const BoxSpec* b = find_box(options.box);
    if (!b) throw FitOptionError("--box " + options.box + ": not a box of the catalog (see `stepcast catalog boxes`)");
    if (b->gpu != gpu.name) throw FitOptionError("--box " + options.box + " holds " + b->gpu + ", not " + gpu.name);
    return b;
  }
  return box_with_gpu(gpu.name);
}

void fit_gemms(const RawCalibration& raw, const GpuSpec& gpu, FitResult& out) {
  std::map<Dtype, std::vector<const RawGemm*>> by_dtype;
  for (const RawGemm& g : raw.gemm)
    if (g.check == kCheckOk) by_dtype[g.dtype].push_back(&g);
  for (const auto& [dtype, rows] : by_dtype) {
    if (!gpu.supports(dtype))
      throw InputError(raw.file, rows.front()->json_path + "/dtype",
                       fmt::format("the catalog GPU {} has no dense {} peak to measure "
                                   "efficiency against",
                                   gpu.name, name(dtype)));
    const double peak_flops_per_s = gpu.peak(dtype) * 1e12;  // TFLOP/s -> FLOP/s
    std::vector<GemmSample> samples;
    for (const RawGemm* g : rows) samples.push_back({g->flops(), g->flops() / g->time_s_median / peak_flops_per_s});
    try {
      const GemmCurveFit f = fit_gemm_curve(samples);
      out.hardware.gemm[dtype] = FittedGemm{f.max_fraction, f.half_flops, f.rms_rel_residual, f.points};
      out.gemm_details.push_back(f);
      if (f.max_fraction > 1)
        out.warnings.push_back(
            fmt::format("gemm {}: fitted max_fraction {:.3f} > 1: the GPU ran above the catalog's dense "
                        "peak ({} TFLOP/s); check the GPU (--gpu) or the clocks",
                        name(dtype), f.max_fraction, gpu.peak(dtype)));
    } catch (const FitError& e) {
      out.not_fitted.push_back({fmt::format("gemm {}", name(dtype)), e.what()});
    }
  }
}

void fit_memory(const RawCalibration& raw, const GpuSpec& gpu, FitResult& out) {
  for (CopyKind kind : {CopyKind::device_to_device, CopyKind::host_to_device, CopyKind::device_to_host}) {
    std::int64_t largest = 0;
    for (const RawMemory& m : raw.memory)
      if (m.kind == kind) largest = std::max(largest, m.bytes);
    if (largest == 0) {
      out.not_fitted.push_back({fmt::format("memory {}", name(kind)), "no row of this kind"});
      continue;
    }
    // "bytes" is the traffic the benchmark counts per call: for a device-to-device copy
    // read + write, 2 x the buffer (calibrate/bench/memory.cpp; the convention of CUDA's
    // bandwidthTest, NVIDIA/cuda-samples Samples/1_Utilities/bandwidthTest/bandwidthTest.cu,
    // testDeviceToDeviceTransfer: 2.0f * memSize), so bytes / time is HBM bandwidth; host
    // copies cross the bus once.
    std::vector<double> bw;
    for (const RawMemory& m : raw.memory) {
      if (m.kind != kind || m.bytes != largest) continue;
      const double GBps = double(m.bytes) / m.time_s_median / 1e9;
      bw.push_back(GBps);
      // The benchmark's own GBps is bytes / time; 2% allows for rounding of printed figures.
      if (std::abs(m.GBps - GBps) > 0.02 * GBps)
        out.warnings.push_back(
            fmt::format("{}: GBps {:.1f} differs from bytes / time_s_median "
                        "= {:.1f}; the fit uses bytes and time",
                        m.json_path, m.GBps, GBps));
    }
    const double GBps = median(bw);
    switch (kind) {
      case CopyKind::device_to_device:
        out.hardware.memory.device_bw_GBps = GBps;
        out.hardware.memory.memory_efficiency = GBps / gpu.memory_bw_GBps;
        if (GBps > gpu.memory_bw_GBps)
          out.warnings.push_back(
              fmt::format("device-to-device copy reached {:.0f} GB/s, above the datasheet {:.0f} GB/s of {}", GBps,
                          gpu.memory_bw_GBps, gpu.name));
        break;
      case CopyKind::host_to_device:
        out.hardware.memory.h2d_GBps = GBps;
        break;
      case CopyKind::device_to_host:
        out.hardware.memory.d2h_GBps = GBps;
        break;
    }
  }
}

void fit_collectives(const RawCalibration& raw, const GpuSpec& gpu, const BoxSpec* box, FitResult& out) {
  using Key = std::tuple<Collective, std::int64_t, std::int64_t>;
  std::vector<Key> order;
  std::map<Key, std::vector<const RawCollective*>> groups;
  for (const RawCollective& c : raw.nccl) {
    if (c.check != kCheckOk) continue;
    const Key key{c.collective, c.ranks, c.nodes};
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&c);
  }
  std::optional<Topology> topology;
  if (box) topology = Topology::build(ClusterSpec{"fit:" + box->name, box->name, 1, std::nullopt, ""});

  for (const Key& key : order) {
    const auto& [collective, ranks, nodes] = key;
    const std::string what =
        fmt::format("{} {} ranks {} node{}", name(collective), ranks, nodes, nodes == 1 ? "" : "s");
    if (ranks < 2) {
      out.not_fitted.push_back({what, "one rank moves no data"});
      continue;
    }
    std::vector<CollectiveSample> samples;
    double min_bytes = std::numeric_limits<double>::infinity(), max_bytes = 0;
    for (const RawCollective* c : groups[key]) {
      samples.push_back({double(c->bytes), c->time_s_median});
      min_bytes = std::min(min_bytes, double(c->bytes));
      max_bytes = std::max(max_bytes, double(c->bytes));
    }
    AlphaBetaFit f;
    try {
      f = fit_alpha_beta(samples);
    } catch (const FitError& e) {
      out.not_fitted.push_back({what, e.what()});
      continue;
    }
    if (f.alpha_clamped)
      out.warnings.push_back(what +
                             ": the free fit gave a negative latency; refitted with "
                             "latency 0");
    FittedCollective fc;
    fc.collective = collective;
    fc.ranks = ranks;
    fc.nodes = nodes;
    fc.latency_us = f.alpha_s * 1e6;
    fc.algbw_GBps = f.beta_GBps;
    fc.busbw_GBps = f.beta_GBps * bus_bandwidth_factor(collective, static_cast<int>(ranks));
    fc.rms_rel_residual = f.rms_rel_residual;
    fc.points = f.points;

    CollectiveModelNote note;
    note.min_bytes = min_bytes;
    note.max_bytes = max_bytes;
    if (!topology) {
      note.why_none = "no catalog box holds " + gpu.name + " (pass --box)";
    } else if (nodes > 1) {
      note.why_none = "several nodes: the network is not known to the catalog";
    } else if (ranks > topology->gpus_per_node()) {
      note.why_none = fmt::format("{} has {} GPUs", box->name, topology->gpus_per_node());
    } else {
      const CommFabric fabric = topology->fabric(1, static_cast<int>(ranks));
      const CollectiveCost small = collective_cost(collective, min_bytes, fabric);
      const CollectiveCost large = collective_cost(collective, max_bytes, fabric);
      fc.model_latency_us = small.time_s * 1e6;
      fc.model_busbw_GBps = large.busbw_GBps;
      note.algorithm = large.algorithm;
      note.protocol = large.protocol;
    }
    out.hardware.collectives.push_back(fc);
    out.model_notes.push_back(note);
  }
}

/// The kernel model's parameters (kernel_fit.hpp) into hardware.kernel_model.
void fit_kernel_model(const RawCalibration& raw, const GpuSpec& gpu, FitResult& out) {
  KernelCalibration& k = out.hardware.kernel_model;
  const int sm_count = raw.machine.gpus.empty() ? gpu.sm_count : static_cast<int>(raw.machine.gpus.front().sm_count);
  k.sm_count = sm_count;
  const double bw =
      out.hardware.memory.device_bw_GBps.value_or(gpu.memory_bw_GBps * default_memory_efficiency(gpu.arch));
  std::map<Dtype, std::vector<GemmTiming>> gemms;
  for (const RawGemm& g : raw.gemm)
    if (g.check == kCheckOk) gemms[g.dtype].push_back({g.m, g.n, g.k, g.time_s_median});
  for (const auto& [dtype, rows] : gemms) k.gemm[dtype] = fit_gemm_ceiling(rows, operand_bytes(dtype), sm_count, bw);
  k.attention = fit_attention_curves(raw.attention, out.raw_file);
  k.memory_ops = fit_memory_ops(raw.memory_kernels, gpu.memory_bw_GBps);
  k.memory_efficiency = kernel_memory_efficiency(k.memory_ops);
  fit_launch(raw.launch, k);
  fit_overlap(raw.overlap, k);
  auto missing = [&](bool absent, const char* what, const char* why) {
    if (absent) out.not_fitted.push_back({what, why});
  };
  missing(raw.attention.empty(), "kernel_model attention", "no attention rows (calibrate/bench/torch_bench.py)");
  missing(!k.memory_efficiency, "kernel_model memory_bound", "no memory-bound kernel rows besides copies");
  missing(!k.launch_s && !k.eager_forward_op_s, "kernel_model launch", "no launch or eager op rows");
  missing(!k.compute_slowdown, "kernel_model overlap", "no GEMM-beside-collective rows (needs 2 GPUs)");
}

/// The hardware file must read back: written out and read by the hardware reader
/// (topologies/hardware_file.cpp), with its bounds, before anything is written. A fitted
/// value outside them (a GEMM curve above 1.5x the peak, a bandwidth near zero) comes from
/// measurements that are not physical: bad input, naming the raw file.
void check_readable(const HardwareFile& hw, const std::string& raw_file) {
  try {
    parse_hardware(JsonDoc::parse(hardware_json(hw), "fitted hardware file"));
  } catch (const InputError& e) {
    throw InputError(raw_file, "",
                     "the fit gives a hardware file stepcast cannot use (" + std::string(e.what()) +
                         "); the measurements behind it are not physical: check the rows it "
                         "was fitted from");
  }
}

}  // namespace

FitResult fit_calibration(const RawCalibration& raw, const FitOptions& options) {
  FitResult out;
  const GpuSpec& gpu = choose_gpu(raw, options, out);
  out.gpu = &gpu;
  const BoxSpec* box = choose_box(gpu, options);

  HardwareFile& hw = out.hardware;
  hw.machine = raw.machine;
  hw.gpu = gpu.name;
  out.raw_file = options.raw_name.empty() ? raw.file : options.raw_name;
  hw.source = "stepcast fit " + out.raw_file;
  if (box) hw.model_box = box->name;

  if (!raw.machine.gpus.empty()) {
    const MachineGpu& first = raw.machine.gpus.front();
    for (const MachineGpu& g : raw.machine.gpus)
      if (g.name != first.name) {
        out.warnings.push_back("the machine has different GPUs (" + first.name + ", " + g.name +
                               "); everything is compared with " + gpu.name);
        break;
      }
    if (first.sm_count != gpu.sm_count)
      out.warnings.push_back(
          fmt::format("GPU 0 has {} SMs, the catalog's {} has {}: a different model or a partition (MIG)?",
                      first.sm_count, gpu.name, gpu.sm_count));
  }

  for (const RawGemm& g : raw.gemm)
    if (g.check != kCheckOk) out.excluded.push_back({g.json_path, g.check});
  for (const RawCollective& c : raw.nccl)
    if (c.check != kCheckOk) out.excluded.push_back({c.json_path, c.check});
  auto exclude = [&](const auto& rows) {
    for (const auto& r : rows)
      if (r.check != kCheckOk) out.excluded.push_back({r.json_path, r.check});
  };
  exclude(raw.launch);
  exclude(raw.attention);
  exclude(raw.memory_kernels);
  exclude(raw.overlap);
  hw.excluded_rows = static_cast<std::int64_t>(out.excluded.size());

  fit_gemms(raw, gpu, out);
  fit_memory(raw, gpu, out);
  fit_collectives(raw, gpu, box, out);
  fit_kernel_model(raw, gpu, out);
  check_readable(out.hardware, raw.file);
  return out;
}

}  // namespace stepcast
