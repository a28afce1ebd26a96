// GEMM sweep through cuBLASLt over the matrix products of one transformer layer and the LM
// head, in every dtype the model knows, with a sampled correctness check of every result.
//
// Shapes are those of PyTorch's nn.Linear forward: Y[m x n] = X[m x k] * W^T with X the
// activations (m = tokens), W[n x k] the weight stored row-major. cuBLAS is column-major, so
// this is the "TN" call  D[n x m] = op(A)[n x k] * B[k x m]  with A = W (stored k x n, lda = k,
// transposed), B = X (stored k x m, ldb = k) and D stored n x m (ldd = n). TN is also the only
// layout cuBLASLt accepts for FP8 (cuBLAS documentation, cublasLtMatmul: "A must be transposed
// and B non-transposed (The 'TN' format)").
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "common.hpp"
#include "sections.hpp"
#include "timing.hpp"
#include "wave_shapes.hpp"

namespace stepcast::cal {

namespace {

void check_cublas(cublasStatus_t status, const char* expr, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    fail(std::string(expr) + ": " + cublasGetStatusName(status) + " (" + cublasGetStatusString(status) + ")", file,
         line);
  }
}

#define STEPCAST_CUBLAS(expr) check_cublas((expr), #expr, __FILE__, __LINE__)

// ---- element conversions used by the kernels --------------------------------------------------

__device__ inline void store(float* p, float v) { *p = v; }
__device__ inline void store(__half* p, float v) { *p = __float2half_rn(v); }
__device__ inline void store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }
__device__ inline void store(__nv_fp8_e4m3* p, float v) { *p = __nv_fp8_e4m3(v); }

__device__ inline double load(const float* p) { return *p; }
__device__ inline double load(const __half* p) { return __half2float(*p); }
__device__ inline double load(const __nv_bfloat16* p) { return __bfloat162float(*p); }
__device__ inline double load(const __nv_fp8_e4m3* p) { return static_cast<float>(*p); }

// SplitMix64's finaliser (Steele, Lea and Flood 2014, "Fast splittable pseudorandom number
// generators"): a stateless hash that gives every element its own uniform value.
__device__ inline unsigned long long mix64(unsigned long long x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform values in [-1, 1): the top 24 bits of the hash, exactly representable as a float.
template <class T>
__global__ void fill_uniform(T* data, long long count, unsigned long long seed) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const unsigned long long bits = mix64(seed ^ mix64(static_cast<unsigned long long>(i))) >> 40;
    store(data + i, static_cast<float>(bits) * (2.0f / 16777216.0f) - 1.0f);  // 16777216 = 2^24
  }
}

// Threads per block of the reference kernel: a power of two for the tree reduction, and 256
// threads cover k up to 32768 in at most 128 steps each (our choice; any power of two works).
constexpr int kReferenceThreads = 256;

// One block per sampled output element D(row, col): the dot product of W's column `row` and
// X's column `col` in double, the 2-norm of the element-wise products (the scale of the
// rounding error of a correct result), and the element cuBLASLt wrote.
template <class TAB, class TD>
__global__ void __launch_bounds__(kReferenceThreads)
    reference_dots(const TAB* w, const TAB* x, const TD* d, long long k, long long ldd,
                   const long long* samples /* row, col pairs */, double* out /* dot, norm, got */) {
  const long long row = samples[2 * blockIdx.x];
  const long long col = samples[2 * blockIdx.x + 1];
  const TAB* wc = w + row * k;
  const TAB* xc = x + col * k;
  double dot = 0.0;
  double squares = 0.0;
  for (long long p = threadIdx.x; p < k; p += kReferenceThreads) {
    const double product = load(wc + p) * load(xc + p);
    dot += product;
    squares += product * product;
  }
  __shared__ double shared_dot[kReferenceThreads];
  __shared__ double shared_squares[kReferenceThreads];
  shared_dot[threadIdx.x] = dot;
  shared_squares[threadIdx.x] = squares;
  __syncthreads();
  for (int half = kReferenceThreads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) {
      shared_dot[threadIdx.x] += shared_dot[threadIdx.x + half];
      shared_squares[threadIdx.x] += shared_squares[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    out[3 * blockIdx.x] = shared_dot[0];
    out[3 * blockIdx.x + 1] = sqrt(shared_squares[0]);
    out[3 * blockIdx.x + 2] = load(d + row + col * ldd);
  }
}

// ---- dtypes ------------------------------------------------------------------------------------

// Unit roundoffs, 2^-p for p significant bits: binary32 24 (IEEE 754-2019), binary16 11,
// bfloat16 8 (Google's bfloat16 definition: 7 stored mantissa bits).
constexpr double kRoundoffFp32 = 5.9604644775390625e-8;  // 2^-24
constexpr double kRoundoffFp16 = 4.8828125e-4;           // 2^-11
constexpr double kRoundoffBf16 = 3.90625e-3;             // 2^-8

// Correctness tolerances, relative to ||a∘b||_2 = sqrt(sum_p (w_p x_p)^2) of the sampled element.
// A wrong result (layout, type, scale, stale memory) misses the reference by about ||a∘b||_2,
// the typical size of a dot product of random inputs: a normalised error near 1. A correct one
// misses by rounding only, since the reference reads the inputs exactly as stored:
//  - tf32 rounds fp32 inputs to 10 stored mantissa bits (NVIDIA A100 Tensor Core GPU
//    Architecture whitepaper, 2020: TF32 "10-bit mantissa"), unit roundoff 2^-11, so about
//    2^-11 * sqrt(2) = 7e-4;
//  - fp32 accumulation of k <= 32768 products: about 2^-24 * sqrt(k) <= 1.1e-5 (random-walk
//    model of rounding errors, Higham, "Accuracy and Stability of Numerical Algorithms", 2002,
//    section 3.6);
//  - Hopper's FP8 tensor cores accumulate with about 14 bits (DeepSeek-V3 Technical Report,
//    2024, section 3.3.2), so about 2^-14 * sqrt(k) <= 1.1e-2.
// The tolerances sit about 10x above those estimates and 20x or more below a wrong result.
// The rounding of the output itself is allowed for separately: 2 units of the output type's
// roundoff times |reference| (twice the half-ulp of round-to-nearest, for margin).
constexpr double kToleranceFp32 = 1e-4;
constexpr double kToleranceTf32 = 1e-2;
constexpr double kToleranceHalf = 1e-2;  // bf16 and fp16: fp32 accumulation, exact inputs
constexpr double kToleranceFp8 = 5e-2;

// FP8 per-tensor scales, applied by cuBLASLt through the A and B scale pointers: powers of two,
// so the scaled reference is exact, and different from 1 so that a scale left out shows.
constexpr float kFp8ScaleA = 0.5f;
constexpr float kFp8ScaleB = 0.25f;

struct DtypeSpec {
  const char* name;
  cudaDataType_t ab_type;
  cudaDataType_t cd_type;
  cublasComputeType_t compute;
  std::size_t ab_bytes;
  std::size_t cd_bytes;
  double tolerance;
  double out_roundoff;
  bool fp8;
};

// Compute types as PyTorch uses them: fp32 matmul without TF32 (torch's default
// allow_tf32=False for matmul), TF32 as CUBLAS_COMPUTE_32F_FAST_TF32, half types with fp32
// accumulation (CUBLAS_COMPUTE_32F), FP8 e4m3 inputs with bf16 output as torch._scaled_mm.
const DtypeSpec kDtypes[] = {
    {"fp32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 4, 4, kToleranceFp32, kRoundoffFp32, false},
    {"tf32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4, kToleranceTf32, kRoundoffFp32, false},
    {"bf16", CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2, kToleranceHalf, kRoundoffBf16, false},
    {"fp16", CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, 2, kToleranceHalf, kRoundoffFp16, false},
    {"fp8", CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 1, 2, kToleranceFp8, kRoundoffBf16, true},
};

const DtypeSpec& dtype_spec(const std::string& name) {
  for (const auto& d : kDtypes) {
    if (name == d.name) return d;
  }
  throw Error("unknown gemm dtype " + name);
}

// Grid of the element-wise kernels (our choice): 4096 blocks of 256 threads keep every SM of
// current GPUs busy (H100 SXM: 132 SMs, H100 whitepaper; at most 2048 threads per SM, CUDA C++
// Programming Guide, compute capability table), grid-stride beyond.
constexpr int kFillThreads = 256;
constexpr int kFillBlocks = 4096;

void fill(const DtypeSpec& d, void* data, long long count, unsigned long long seed, cudaStream_t stream) {
  switch (d.ab_type) {
    case CUDA_R_32F:
      fill_uniform<<<kFillBlocks, kFillThreads, 0, stream>>>(static_cast<float*>(data), count, seed);
      break;
    case CUDA_R_16BF:
      fill_uniform<<<kFillBlocks, kFillThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(data), count, seed);
      break;
    case CUDA_R_16F:
      fill_uniform<<<kFillBlocks, kFillThreads, 0, stream>>>(static_cast<__half*>(data), count, seed);
      break;
    case CUDA_R_8F_E4M3:
      fill_uniform<<<kFillBlocks, kFillThreads, 0, stream>>>(static_cast<__nv_fp8_e4m3*>(data), count, seed);
      break;
    default:
      throw Error("fill: unsupported type");
  }
  STEPCAST_CUDA(cudaGetLastError());
}

void reference(const DtypeSpec& d, const void* w, const void* x, const void* out, long long k, long long ldd,
               const long long* samples, int count, double* results, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(count));
  switch (d.ab_type) {
    case CUDA_R_32F:
      reference_dots<<<grid, kReferenceThreads, 0, stream>>>(static_cast<const float*>(w), static_cast<const float*>(x),
                                                             static_cast<const float*>(out), k, ldd, samples, results);
      break;
    case CUDA_R_16BF:
      reference_dots<<<grid, kReferenceThreads, 0, stream>>>(
          static_cast<const __nv_bfloat16*>(w), static_cast<const __nv_bfloat16*>(x),
          static_cast<const __nv_bfloat16*>(out), k, ldd, samples, results);
      break;
    case CUDA_R_16F:
      reference_dots<<<grid, kReferenceThreads, 0, stream>>>(static_cast<const __half*>(w),
                                                             static_cast<const __half*>(x),
                                                             static_cast<const __half*>(out), k, ldd, samples, results);
      break;
    case CUDA_R_8F_E4M3:
      reference_dots<<<grid, kReferenceThreads, 0, stream>>>(
          static_cast<const __nv_fp8_e4m3*>(w), static_cast<const __nv_fp8_e4m3*>(x),
          static_cast<const __nv_bfloat16*>(out), k, ldd, samples, results);
      break;
    default:
      throw Error("reference: unsupported type");
  }
  STEPCAST_CUDA(cudaGetLastError());
}

// ---- cuBLASLt handles --------------------------------------------------------------------------

struct LtHandle {
  cublasLtHandle_t h = nullptr;
  LtHandle() { STEPCAST_CUBLAS(cublasLtCreate(&h)); }
  ~LtHandle() { (void)cublasLtDestroy(h); }
  LtHandle(const LtHandle&) = delete;
  LtHandle& operator=(const LtHandle&) = delete;
};

struct LtOperation {
  cublasLtMatmulDesc_t h = nullptr;
  LtOperation(cublasComputeType_t compute, cudaDataType_t scale) {
    STEPCAST_CUBLAS(cublasLtMatmulDescCreate(&h, compute, scale));
  }
  ~LtOperation() { (void)cublasLtMatmulDescDestroy(h); }
  LtOperation(const LtOperation&) = delete;
  LtOperation& operator=(const LtOperation&) = delete;
  template <class V>
  void set(cublasLtMatmulDescAttributes_t attribute, const V& value) {
    STEPCAST_CUBLAS(cublasLtMatmulDescSetAttribute(h, attribute, &value, sizeof value));
  }
};

struct LtLayout {
  cublasLtMatrixLayout_t h = nullptr;
  LtLayout(cudaDataType_t type, long long rows, long long cols, long long ld) {
    STEPCAST_CUBLAS(
        cublasLtMatrixLayoutCreate(&h, type, static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(cols), ld));
  }
  ~LtLayout() { (void)cublasLtMatrixLayoutDestroy(h); }
  LtLayout(const LtLayout&) = delete;
  LtLayout& operator=(const LtLayout&) = delete;
};

struct LtPreference {
  cublasLtMatmulPreference_t h = nullptr;
  explicit LtPreference(std::size_t workspace_bytes) {
    STEPCAST_CUBLAS(cublasLtMatmulPreferenceCreate(&h));
    STEPCAST_CUBLAS(cublasLtMatmulPreferenceSetAttribute(h, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                                         sizeof workspace_bytes));
  }
  ~LtPreference() { (void)cublasLtMatmulPreferenceDestroy(h); }
  LtPreference(const LtPreference&) = delete;
  LtPreference& operator=(const LtPreference&) = delete;
};

// ---- the sweep ---------------------------------------------------------------------------------

struct Shape {
  std::string name;
  long long m;  // tokens
  long long n;  // output features
  long long k;  // input features
};

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

std::vector<Shape> layer_shapes(const Options& o, long long tokens) {
  std::vector<Shape> out;
  const auto add = [&](const char* name, long long n, long long k) {
    if (contains(o.gemm_shapes, name)) out.push_back({name, tokens, n, k});
  };
  for (const long long h : o.gemm_hidden) {
    const long long ffn = 4 * h;  // d_ff = 4 d_model (Vaswani et al. 2017; GPT-2 and GPT-3 alike)
    add("qkv", 3 * h, h);
    add("attn_out", h, h);
    add("mlp_up", ffn, h);
    add("mlp_down", h, ffn);
    add("lm_head", o.gemm_vocab, h);
    if (h == o.gemm_llama_hidden && o.gemm_llama_ffn > 0) {
      add("mlp_up", o.gemm_llama_ffn, h);
      add("mlp_down", h, o.gemm_llama_ffn);
    }
  }
  return out;
}

struct Context {
  int device;
  int cc_major;
  int cc_minor;
  LtHandle lt;
  Stream stream;
  EventPair events;
  DeviceBuffer workspace;
  DeviceBuffer scales;  // the two FP8 scales
  Context(int dev, int major, int minor, std::size_t workspace_bytes)
      : device(dev),
        cc_major(major),
        cc_minor(minor),
        stream(dev),
        events(dev),
        workspace(dev, workspace_bytes),
        scales(dev, 2 * sizeof(float)) {
    const float values[2] = {kFp8ScaleA, kFp8ScaleB};
    STEPCAST_CUDA(cudaMemcpy(scales.get(), values, sizeof values, cudaMemcpyHostToDevice));
  }
};

GemmRow measure_one(Context& c, const DtypeSpec& d, const Shape& s, const Options& o, unsigned long long seed) {
  GemmRow row;
  row.name = s.name;
  row.dtype = d.name;
  row.m = s.m;
  row.n = s.n;
  row.k = s.k;
  if (d.fp8 && (c.cc_major * 10 + c.cc_minor) < 89) {
    // cuBLASLt's FP8 kernels need Ada or Hopper and later (cuBLAS documentation, cublasLtMatmul
    // FP8 section: compute capability 8.9 and above).
    row.check = "skipped: fp8 needs compute capability >= 8.9, this GPU is " + std::to_string(c.cc_major) + "." +
                std::to_string(c.cc_minor);
    return row;
  }
  const long long M = s.n;  // cuBLAS rows of D
  const long long N = s.m;  // cuBLAS columns of D
  const long long K = s.k;
  const std::size_t a_bytes = static_cast<std::size_t>(K * M) * d.ab_bytes;
  const std::size_t b_bytes = static_cast<std::size_t>(K * N) * d.ab_bytes;
  const std::size_t d_bytes = static_cast<std::size_t>(M * N) * d.cd_bytes;
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  STEPCAST_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (a_bytes + b_bytes + d_bytes > free_bytes) {
    row.check = "skipped: needs " + format_bytes(static_cast<double>(a_bytes + b_bytes + d_bytes)) +
                " of device memory, " + format_bytes(static_cast<double>(free_bytes)) + " free";
    return row;
  }
  DeviceGuard guard(c.device);
  DeviceBuffer w(c.device, a_bytes);
  DeviceBuffer x(c.device, b_bytes);
  DeviceBuffer y(c.device, d_bytes);
  const cudaStream_t stream = c.stream.get();
  fill(d, w.get(), K * M, seed, stream);
  fill(d, x.get(), K * N, seed + 1, stream);
  // All-ones bytes are NaN in fp32, fp16 and bf16, so an element never written fails the check.
  STEPCAST_CUDA(cudaMemsetAsync(y.get(), 0xFF, d_bytes, stream));

  LtOperation op(d.compute, CUDA_R_32F);
  op.set(CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
  op.set(CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
  if (d.fp8) {
    const float* scale_a = c.scales.as<float>();
    const float* scale_b = c.scales.as<float>() + 1;
    op.set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, scale_a);
    op.set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, scale_b);
  }
  LtLayout a_layout(d.ab_type, K, M, K);
  LtLayout b_layout(d.ab_type, K, N, K);
  LtLayout d_layout(d.cd_type, M, N, M);
  LtPreference preference(c.workspace.bytes());
  // Up to kAlgorithms candidates, best first; the first that runs is timed. cuBLASLt 13.1 on an
  // H200 offered an algorithm for every fp8 shape and then refused its first with
  // CUBLAS_STATUS_NOT_SUPPORTED (calibrate/data/h200-x1/calibrate.log), so a refusal moves on to
  // the next candidate rather than losing the row.
  constexpr int kAlgorithms = 8;
  std::vector<cublasLtMatmulHeuristicResult_t> heuristics(kAlgorithms);
  int found = 0;
  const cublasStatus_t asked =
      cublasLtMatmulAlgoGetHeuristic(c.lt.h, op.h, a_layout.h, b_layout.h, d_layout.h, d_layout.h, preference.h,
                                     kAlgorithms, heuristics.data(), &found);
  if (asked != CUBLAS_STATUS_SUCCESS || found == 0) {
    row.check = std::string("skipped: cuBLASLt offers no algorithm (") + cublasGetStatusName(asked) + ")";
    return row;
  }
  const float alpha = 1.0f;
  const float beta = 0.0f;  // D = alpha * op(A) op(B); C aliases D and is not read
  const auto run = [&](const cublasLtMatmulAlgo_t& algo) {
    return cublasLtMatmul(c.lt.h, op.h, &alpha, w.get(), a_layout.h, x.get(), b_layout.h, &beta, y.get(), d_layout.h,
                          y.get(), d_layout.h, &algo, c.workspace.get(), c.workspace.bytes(), stream);
  };
  int chosen = -1;
  cublasStatus_t refused = CUBLAS_STATUS_SUCCESS;
  for (int i = 0; i < found && chosen < 0; ++i) {
    const cublasStatus_t status = run(heuristics[static_cast<std::size_t>(i)].algo);
    if (status == CUBLAS_STATUS_SUCCESS)
      chosen = i;
    else if (refused == CUBLAS_STATUS_SUCCESS)
      refused = status;
  }
  if (chosen < 0) {
    row.check = "skipped: cuBLASLt refused all " + std::to_string(found) +
                " algorithms it offered (first: " + cublasGetStatusName(refused) + ")";
    return row;
  }
  const cublasLtMatmulAlgo_t algo = heuristics[static_cast<std::size_t>(chosen)].algo;
  const auto call = [&] { STEPCAST_CUBLAS(run(algo)); };
  for (int i = 0; i < o.timing.warmup_calls; ++i) call();
  STEPCAST_CUDA(cudaStreamSynchronize(stream));
  const Timing t = measure(
      [&](std::int64_t n) {
        c.events.start(stream);
        for (std::int64_t i = 0; i < n; ++i) call();
        c.events.stop(stream);
        return c.events.elapsed_s();
      },
      o.timing);
  row.iterations = t.iterations;
  row.time_s_median = t.median_s;
  row.time_s_min = t.min_s;
  row.time_s_max = t.max_s;
  row.tflops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) / t.median_s / 1e12;

  // Sampled check: the corners first (they catch a transposed or offset layout), then random
  // elements.
  std::vector<long long> samples;
  samples.insert(samples.end(), {0, 0, M - 1, N - 1, M - 1, 0, 0, N - 1});
  std::mt19937_64 random(seed);
  while (static_cast<int>(samples.size() / 2) < std::max(o.gemm_samples, 4)) {
    samples.push_back(static_cast<long long>(random() % static_cast<unsigned long long>(M)));
    samples.push_back(static_cast<long long>(random() % static_cast<unsigned long long>(N)));
  }
  const int count = static_cast<int>(samples.size() / 2);
  DeviceBuffer sample_buffer(c.device, samples.size() * sizeof(long long));
  DeviceBuffer result_buffer(c.device, static_cast<std::size_t>(count) * 3 * sizeof(double));
  STEPCAST_CUDA(cudaMemcpyAsync(sample_buffer.get(), samples.data(), samples.size() * sizeof(long long),
                                cudaMemcpyHostToDevice, stream));
  reference(d, w.get(), x.get(), y.get(), K, M, sample_buffer.as<long long>(), count, result_buffer.as<double>(),
            stream);
  std::vector<double> results(static_cast<std::size_t>(count) * 3);
  STEPCAST_CUDA(cudaMemcpyAsync(results.data(), result_buffer.get(), results.size() * sizeof(double),
                                cudaMemcpyDeviceToHost, stream));
  STEPCAST_CUDA(cudaStreamSynchronize(stream));
  const double scale = d.fp8 ? static_cast<double>(kFp8ScaleA) * static_cast<double>(kFp8ScaleB) : 1.0;
  int failures = 0;
  double worst = 0.0;
  for (int i = 0; i < count; ++i) {
    const double expected = results[3 * i] * scale;
    const double norm = results[3 * i + 1] * scale;
    const double got = results[3 * i + 2];
    const double error = std::fabs(got - expected);
    const double bound = d.tolerance * norm + 2.0 * d.out_roundoff * std::fabs(expected);
    // Written so that NaN fails.
    if (!(error <= bound)) ++failures;
    const double normalised = norm > 0.0 ? error / norm : error;
    worst = std::isnan(normalised) ? normalised : std::max(worst, normalised);
  }
  row.check = failures == 0 ? "ok" : "failed";
  std::fprintf(stderr,
               "[gemm] %-4s %-8s m=%lld n=%lld k=%lld: %.4g ms/call median (%lld calls x %d), %.1f TFLOP/s, "
               "check %s (%d/%d outside tolerance, worst error %.2g x ||a*b||_2)\n",
               d.name, s.name.c_str(), s.m, s.n, s.k, t.median_s * 1e3, static_cast<long long>(t.iterations),
               o.timing.repeats, row.tflops, row.check.c_str(), failures, count, worst);
  return row;
}

}  // namespace

void run_gemm(const Options& options, int device, Raw& raw, const std::function<void()>& save) {
  DeviceGuard guard(device);
  cudaDeviceProp properties{};
  STEPCAST_CUDA(cudaGetDeviceProperties(&properties, device));
  std::fprintf(stderr, "[gemm] device %d: %s, compute capability %d.%d\n", device, properties.name, properties.major,
               properties.minor);
  Context context(device, properties.major, properties.minor, static_cast<std::size_t>(options.gemm_workspace_bytes));
  unsigned long long seed = 20240601;  // any fixed value: runs are reproducible
  // The tile/wave sweep and the ceiling squares, measured once per dtype after the layers.
  std::vector<Shape> sweep;
  for (const SweepShape& s : gemm_sweep_shapes(properties.multiProcessorCount, options.quick))
    if (contains(options.gemm_shapes, s.name)) sweep.push_back({s.name, s.m, s.n, s.k});
  for (const auto& dtype_name : options.gemm_dtypes) {
    const DtypeSpec& d = dtype_spec(dtype_name);
    for (std::size_t round = 0; round <= options.gemm_tokens.size(); ++round) {
      const bool last = round == options.gemm_tokens.size();
      for (const auto& shape : last ? sweep : layer_shapes(options, options.gemm_tokens[round])) {
        seed += 2;
        GemmRow row;
        try {
          row = measure_one(context, d, shape, options, seed);
        } catch (const std::exception& e) {
          row.name = shape.name;
          row.dtype = d.name;
          row.m = shape.m;
          row.n = shape.n;
          row.k = shape.k;
          row.check = std::string("skipped: error: ") + e.what();
          // A sticky error (illegal address, launch failure) leaves the context unusable: stop.
          const cudaError_t state = cudaDeviceSynchronize();
          if (state != cudaSuccess) {
            std::fprintf(stderr, "[gemm] %s %s: %s\n", d.name, shape.name.c_str(), row.check.c_str());
            raw.gemm.push_back(row);
            throw Error(std::string("gemm: the CUDA context is broken: ") + cudaGetErrorString(state));
          }
        }
        if (row.check.rfind("skipped", 0) == 0) {
          std::fprintf(stderr, "[gemm] %s %s m=%lld n=%lld k=%lld: %s\n", d.name, shape.name.c_str(), shape.m, shape.n,
                       shape.k, row.check.c_str());
        }
        raw.gemm.push_back(row);
      }
      save();
    }
  }
}

}  // namespace stepcast::cal
