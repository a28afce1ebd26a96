/// \file
/// The fitted hardware file ("stepcast-hardware-v1") that `stepcast fit` writes from one
/// calibration run: the machine it was measured on (copied from the raw file), the catalog
/// GPU it was compared against, the GEMM efficiency curve per dtype, the achieved memory
/// bandwidths, and an alpha-beta fit per measured collective beside the catalog model's
/// figures. Read back strictly by load_hardware (unknown keys are errors naming the file and
/// the JSON path), so a prediction can take its efficiencies from a measurement.
#pragma once

#include "base/types.hpp"
#include "topologies/kernel_calibration.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace stepcast {

class JsonDoc;
class JsonObject;

/// The format strings of the two files.
inline constexpr const char* kRawCalibrationFormat = "stepcast-calibrate-raw-v1";
inline constexpr const char* kHardwareFormat = "stepcast-hardware-v1";

/// One GPU as the calibration run saw it (CUDA device properties).
struct MachineGpu {
  std::int64_t index = 0;
  std::string name;                ///< as the driver names it, e.g. "NVIDIA H100 80GB HBM3"
  std::int64_t sm_count = 0;       ///< streaming multiprocessors
  std::int64_t memory_bytes = 0;   ///< total device memory, bytes
  std::string compute_capability;  ///< "9.0" (a JSON number is kept as its text)
};

/// The machine a calibration run was made on; informational, copied verbatim into the
/// hardware file. Version fields are kept as text (a JSON number becomes its text).
struct Machine {
  std::string hostname;
  std::string date_utc;
  std::vector<MachineGpu> gpus;
  std::string driver_version;
  std::string cuda_runtime_version;
  std::string nccl_version;
  std::string nvidia_smi_topo;  ///< `nvidia-smi topo -m` output
  std::string nvidia_smi_list;  ///< `nvidia-smi -L` output
  std::vector<std::string> nics;
  std::vector<std::string> notes;
};

/// Reads the "machine" object (strict); shared by the raw and the hardware file.
Machine parse_machine(JsonObject& obj);

/// A fitted GEMM efficiency curve for one dtype (the compute model's GemmEfficiency).
struct FittedGemm {
  double max_fraction = 0;      ///< fraction of dense peak the largest GEMMs reach
  double half_flops = 0;        ///< FLOPs of one call at which half of max_fraction is reached
  double rms_rel_residual = 0;  ///< RMS of (fitted - measured) / measured efficiency
  std::int64_t points = 0;      ///< GEMM rows the fit used
};

/// Achieved copy bandwidths, from the largest copy of each kind (absent: not measured).
struct FittedMemory {
  std::optional<double> device_bw_GBps;     ///< device-to-device, GB/s (1e9 B/s)
  std::optional<double> memory_efficiency;  ///< device_bw_GBps / datasheet memory bandwidth
  std::optional<double> h2d_GBps;           ///< host-to-device, GB/s
  std::optional<double> d2h_GBps;           ///< device-to-host, GB/s
};

/// t(bytes) = latency + bytes / algbw fitted to one collective's sizes, with the catalog
/// model's figures beside it where the catalog can express the run (one node of a catalog
/// box holding the GPU).
struct FittedCollective {
  Collective collective = Collective::all_reduce;
  std::int64_t ranks = 1;
  std::int64_t nodes = 1;
  double latency_us = 0;                   ///< fitted alpha, µs
  double algbw_GBps = 0;                   ///< fitted beta (nccl-tests algbw convention), GB/s
  double busbw_GBps = 0;                   ///< algbw_GBps x nccl-tests bus factor, GB/s
  double rms_rel_residual = 0;             ///< RMS of (fitted - measured) / measured time
  std::int64_t points = 0;                 ///< sizes the fit used
  std::optional<double> model_latency_us;  ///< model time at the smallest measured size, µs
  std::optional<double> model_busbw_GBps;  ///< model busbw at the largest measured size, GB/s
};

struct HardwareFile {
  Machine machine;
  std::string gpu;     ///< GPU catalog key the fit was made against
  std::string source;  ///< "stepcast fit <raw file>"
  std::map<Dtype, FittedGemm> gemm;
  FittedMemory memory;
  std::vector<FittedCollective> collectives;
  /// Catalog box whose one-node fabric gave the model figures (absent: none fitted the GPU).
  std::optional<std::string> model_box;
  std::int64_t excluded_rows = 0;  ///< rows whose check was not "ok"
  /// The kernel model's parameters (optional "kernel_model"; empty: not measured).
  KernelCalibration kernel_model;
  std::string file;  ///< where it was read from ("" when built in memory)
};

/// Reads a hardware file strictly; throws InputError naming the file and the JSON path.
HardwareFile load_hardware(const std::filesystem::path& path);
/// The same from a parsed document (tests, inline text).
HardwareFile parse_hardware(const JsonDoc& doc);

/// The hardware file as a JSON document (key order as in the schema).
nlohmann::ordered_json hardware_document(const HardwareFile& hw);
/// The hardware file as JSON text (2-space indent, trailing newline); what load_hardware reads.
std::string hardware_json(const HardwareFile& hw);

}  // namespace stepcast
