/// \file
/// The slowest of N: nominally identical GPUs run at slightly different speeds (silicon,
/// power and thermal limits), and a synchronous training step waits for the slowest of them.
/// Per-GPU speed is taken as normal around the typical GPU's with coefficient of variation
/// `cv`, drawn once per GPU and kept for the job (a V100's SGEMM time varies 0.12% run to run
/// where the GPUs differ by 2.0%: hal-uw/blox-pal @ da726ca, aggregated_data/sim/
/// sgemm-longhorn-agg.csv); the step then runs at the expected slowest GPU's speed.
#pragma once

#include "model/kernels.hpp"

#include <cstdint>

namespace stepcast {

/// E[max of n independent standard normal draws] = ∫ x n φ(x) Φ(x)^(n-1) dx, by quadrature
/// (0 for n = 1, 1/√π for n = 2, 3.24 for n = 1,000, 4.0 for 16,384). Throws
/// std::invalid_argument for n < 1.
double expected_max_standard_normal(std::int64_t n);

/// Speed of the expected slowest of n GPUs, relative to the typical one: a GPU's time per unit
/// of work is t (1 + cv Z), Z standard normal, so the slowest runs at 1 / (1 + cv E[max Z]).
/// Throws std::invalid_argument for cv outside [0, 0.5] or n < 1.
double slowest_of_n_speed(double cv, std::int64_t n);

/// `d` as the slowest GPU runs it: its compute-bound rates (the GEMM ceilings and the
/// attention kernel) at `speed` of the typical GPU's; memory bandwidth and CPU launch costs
/// unchanged (the measured spread follows the SM clock under the power cap).
DeviceRates slowest_of_n_rates(DeviceRates d, double speed);

}  // namespace stepcast
