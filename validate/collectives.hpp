/// \file
/// Collective measurement records (data/validation/COLLECTIVES.md, "collective measurement
/// record v1"): one published nccl-tests-style measurement a line (a collective, its size,
/// the GPUs and network it ran on, the bus bandwidth or time measured), predicted with the
/// collective model on the system rebuilt from the catalogs. `validate` reads them beside
/// training runs; their rows carry their node count and are summarised on their own.
#pragma once

#include "base/types.hpp"
#include "topologies/topology.hpp"

#include <optional>
#include <string>
#include <vector>

namespace stepcast {

struct MeasuredRun;
struct ValidationRow;
struct ErrorSummary;

/// The fields of a collective measurement record beyond those every record has (id, source,
/// trust, GPU, nodes, GPUs per node, metric and value, notes).
struct CollectiveBenchmark {
  std::string system;  ///< the system as the source describes it
  Collective op = Collective::all_reduce;
  double bytes = 0;                    ///< nccl-tests' size S (bytes)
  std::string algorithm;               ///< the NCCL_ALGO the run asked for; "auto": NCCL's own choice
  std::string nccl;                    ///< NCCL version as stated ("?" where the source gives none)
  std::optional<std::string> box;      ///< catalog box; null only for an unmodelled record
  std::optional<NetworkSpec> network;  ///< null: the box's default network (an assumption)
  /// The constant that was set from this record (a link's effective rate, the launch
  /// overhead), so it is no independent test of it: shown, kept out of the summaries.
  std::optional<std::string> fed_constant;
  /// Why the model cannot represent the run (a transport or part the catalogs lack): skipped.
  std::optional<std::string> unmodelled;
};

/// The metrics a collective record can carry.
inline constexpr const char* kCollectiveMetrics[] = {"busbw_GBps", "algbw_GBps", "time_us"};

/// The record's row: its metric predicted by collective_cost on
/// Topology::build(box, nodes, network).fabric(nodes, gpus_per_node), "ok", or "skipped:" with
/// the reason (unmodelled, box outside the catalog, an algorithm that cannot run there).
/// Throws InputError where the record contradicts the catalog (its GPU is not its box's, more
/// GPUs per node than the box has).
ValidationRow validate_collective(const MeasuredRun& run);

/// Summary of the collective rows (ok, not low trust, fed no constant): all, then by node
/// count ("nodes: 1", "nodes: 2-15", "nodes: >=16"), collective, network and GPU.
std::vector<ErrorSummary> summarize_collectives(const std::vector<ValidationRow>& rows);

}  // namespace stepcast
