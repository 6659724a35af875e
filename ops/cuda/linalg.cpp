// ops/cuda/linalg.cpp — the CUDA GEMM kernel: cuBLAS strided-batched
// sgemm/dgemm (called through core/cuda/cublas_api.h, which opens cuBLAS at
// the first GEMM), one handle per device bound to the device's stream.
//
// Layout. cuBLAS is column-major; a row-major (M, N) matrix is the
// column-major (N, M) matrix with the same bytes. So the row-major
// C = A·B is computed as the column-major Cᵀ = Bᵀ·Aᵀ: B goes first, then A,
// with m = N, n = M. Whether an operand is read in place (CUBLAS_OP_N or
// CUBLAS_OP_T with its ld) or copied first is ops/gemm_layout.h's decision,
// the same as the CPU kernel's.
//
// Batches. Batch dims are merged where a, b and c all nest, and the innermost
// merged dim becomes one strided-batched call (stride 0 for a broadcast
// operand); any outer batch dims are looped on the host.
//
// bfloat16 and float16 tensors multiply on cuBLAS's 16-bit Ex path: 16-bit
// operands and result, products summed in float32, each result rounded once
// (with accumulate, C + A·B is rounded once), the contract of the CPU's
// 16-bit GEMM; the summation order is cuBLAS's, so the last bits may differ.
//
// float32 runs in full FP32 by default (cuBLAS's default math mode, no TF32),
// so results agree with the CPU's to float32 rounding. matmul_precision()
// (core/matmul_precision.h) selects TF32 (the handle's math mode, set per call),
// bfloat16 or float16 (train.precision fp16): each operand's distinct matrices
// are rounded to a contiguous 16-bit copy (the stride-0 batch dims stay unmaterialised) and
// cublasGemmStridedBatchedEx sums in float32 into the float32 result. float64
// ignores the setting. The handles are not guarded by a lock: like every CUDA
// kernel here, GEMMs are issued from one host thread.
#include <algorithm>
#include <climits>
#include <mutex>
#include <optional>
#include <type_traits>

#include "core/copy.h"
#include "core/cuda.h"
#include "core/cuda/cublas_api.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/runtime.h"
#include "core/matmul_precision.h"
#include "ops/gemm_layout.h"
#include "ops/linalg.h"

namespace ks::cuda {
namespace {

constexpr int kMaxDevices = 64;

cublasHandle_t handle(int device) {
  static std::once_flag once[kMaxDevices];
  static cublasHandle_t handles[kMaxDevices] = {};
  KS_CHECK(device >= 0 && device < kMaxDevices, "gemm: bad device index ", device);
  std::call_once(once[device], [&] {
    const cudaStream_t s = stream(device);
    DeviceGuard guard(device);
    KS_CUBLAS_CHECK(cublas().create(&handles[device]));
    KS_CUBLAS_CHECK(cublas().set_stream(handles[device], s));
  });
  return handles[device];
}

cublasOperation_t cublas_op(const GemmLayout& g) { return g.transposed ? CUBLAS_OP_T : CUBLAS_OP_N; }

// One batch dim after merging: its size and the element stride of a, b, c.
struct BatchDim {
  int64_t size, sa, sb, sc;
};

std::vector<BatchDim> merged_batch(const Tensor& a, const Tensor& b, const Tensor& c) {
  std::vector<BatchDim> dims;  // outermost first
  for (int64_t d = 0; d + 2 < c.dim(); ++d) {
    const BatchDim cur{c.size(d), a.stride(d), b.stride(d), c.stride(d)};
    if (cur.size == 1) continue;
    if (!dims.empty()) {
      BatchDim& prev = dims.back();
      if (prev.sa == cur.sa * cur.size && prev.sb == cur.sb * cur.size && prev.sc == cur.sc * cur.size) {
        prev = {prev.size * cur.size, cur.sa, cur.sb, cur.sc};
        continue;
      }
    }
    dims.push_back(cur);
  }
  return dims;
}

inline cublasStatus_t gemm_batched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                   const float* alpha, const float* A, int lda, long long sa, const float* B, int ldb,
                                   long long sb, const float* beta, float* C, int ldc, long long sc, int count) {
  return cublas().sgemm_strided_batched(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, count);
}
inline cublasStatus_t gemm_batched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                   const double* alpha, const double* A, int lda, long long sa, const double* B,
                                   int ldb, long long sb, const double* beta, double* C, int ldc, long long sc,
                                   int count) {
  return cublas().dgemm_strided_batched(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, count);
}

// Operands and result of the given cuBLAS types, sums in float32 (cuBLAS's
// Ex call): bfloat16 or float16 operands into a float32 result
// (MatmulPrecision::BFloat16, Float16), or 16-bit tensors throughout.
inline cublasStatus_t gemm_batched_ex(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                      const float* alpha, const void* A, cudaDataType_t ab_type, int lda, long long sa,
                                      const void* B, int ldb, long long sb, const float* beta, void* C,
                                      cudaDataType_t c_type, int ldc, long long sc, int count) {
  return cublas().gemm_strided_batched_ex(h, ta, tb, m, n, k, alpha, A, ab_type, lda, sa, B, ab_type, ldb, sb, beta, C,
                                          c_type, ldc, sc, count, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

// cuBLAS's name of a 16-bit element type.
template <class T> constexpr cudaDataType_t cuda_type() {
  return std::is_same_v<T, BFloat16> ? CUDA_R_16BF : CUDA_R_16F;
}

template <class T> void gemm_typed(const Tensor& c, const Tensor& a, const Tensor& b, bool accumulate) {
  if (c.numel() == 0) return;
  KS_ASSERT(c.is_contiguous() && a.dim() == c.dim() && b.dim() == c.dim());
  const int64_t M = c.size(-2), N = c.size(-1), K = a.size(-1);
  if (K == 0) {  // an empty sum
    if (!accumulate) fill_(c, 0.0);
    return;
  }
  const MatmulPrecision precision = std::is_same_v<T, float> ? matmul_precision() : MatmulPrecision::Float32;
  const bool bf16 = precision == MatmulPrecision::BFloat16, fp16 = precision == MatmulPrecision::Float16;
  // Under bf16 (fp16) precision the float32 operands become fresh rounded copies (contiguous, so
  // readable in place); 16-bit tensors, like float32 and float64 ones, are read where they lie when cuBLAS can.
  const DType operand_dtype = bf16 ? kBFloat16 : fp16 ? kFloat16 : c.dtype();
  const Tensor A = gemm_ready(a, operand_dtype), B = gemm_ready(b, operand_dtype);
  const GemmLayout la = *gemm_layout(M, K, A.stride(-2), A.stride(-1));
  const GemmLayout lb = *gemm_layout(K, N, B.stride(-2), B.stride(-1));
  KS_CHECK(std::max({M, N, K, la.ld, lb.ld}) <= INT_MAX, "gemm: matrices ", A.sizes(), " and ", B.sizes(),
           " exceed cuBLAS's 32-bit sizes");

  std::vector<BatchDim> dims = merged_batch(A, B, c);
  const BatchDim inner = dims.empty() ? BatchDim{1, 0, 0, M * N} : dims.back();
  if (!dims.empty()) dims.pop_back();
  KS_CHECK(inner.size <= INT_MAX, "gemm: batch of ", inner.size, " exceeds cuBLAS's 32-bit batch count");
  int64_t outer = 1;
  for (const BatchDim& d : dims) outer *= d.size;

  const int dev = c.device().index;
  const cublasHandle_t h = handle(dev);
  DeviceGuard guard(c.device());
  // 16-bit results: cuBLAS may otherwise add split-K partial sums in the
  // output type (PyTorch's allow_bf16_reduced_precision_reduction), rounding
  // a result more than once; the contract is float32 sums, rounded once.
  const cublasMath_t math = is_16bit_v<T>
                                ? cublasMath_t(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)
                            : precision == MatmulPrecision::TF32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                                 : CUBLAS_DEFAULT_MATH;
  KS_CUBLAS_CHECK(cublas().set_math_mode(h, math));
  using Scalar = compute_t<T>;  // alpha and beta: float for the 16-bit types
  const Scalar alpha = Scalar(1), beta = accumulate ? Scalar(1) : Scalar(0);
  // Element offsets below apply to either element type: both operands are T, or both 16-bit.
  const size_t item = A.element_size();
  const char* pa = static_cast<const char*>(A.data_ptr());
  const char* pb = static_cast<const char*>(B.data_ptr());
  T* pc = c.data<T>();
  for (int64_t o = 0; o < outer; ++o) {
    int64_t oa = 0, ob = 0, oc = 0, rest = o;
    for (int64_t d = int64_t(dims.size()) - 1; d >= 0; --d) {
      const int64_t i = rest % dims[size_t(d)].size;
      rest /= dims[size_t(d)].size;
      oa += i * dims[size_t(d)].sa;
      ob += i * dims[size_t(d)].sb;
      oc += i * dims[size_t(d)].sc;
    }
    // Column-major Cᵀ (N, M) = Bᵀ (N, K) · Aᵀ (K, M).
    const char* qa = pa + size_t(oa) * item;
    const char* qb = pb + size_t(ob) * item;
    if constexpr (is_16bit_v<T> || std::is_same_v<T, float>) {
      if (is_16bit_v<T> || bf16 || fp16) {  // 16-bit tensors, or float32 at MatmulPrecision::BFloat16 / Float16
        const cudaDataType_t ab_type = is_16bit_v<T> ? cuda_type<T>() : bf16 ? CUDA_R_16BF : CUDA_R_16F;
        const cudaDataType_t c_type = is_16bit_v<T> ? cuda_type<T>() : CUDA_R_32F;
        KS_CUBLAS_CHECK(gemm_batched_ex(h, cublas_op(lb), cublas_op(la), int(N), int(M), int(K), &alpha, qb, ab_type,
                                        int(lb.ld), inner.sb, qa, int(la.ld), inner.sa, &beta, pc + oc, c_type, int(N),
                                        inner.sc, int(inner.size)));
        continue;
      }
    }
    if constexpr (!is_16bit_v<T>)
      KS_CUBLAS_CHECK(gemm_batched(h, cublas_op(lb), cublas_op(la), int(N), int(M), int(K), &alpha,
                                   reinterpret_cast<const T*>(qb), int(lb.ld), inner.sb, reinterpret_cast<const T*>(qa),
                                   int(la.ld), inner.sa, &beta, pc + oc, int(N), inner.sc, int(inner.size)));
  }
  if (sync_launches()) KS_CUDA_CHECK(cudaDeviceSynchronize());
}

void gemm_cuda(const Tensor& c, const Tensor& a, const Tensor& b, bool accumulate) {
  dispatch_floating16(c.dtype(), "gemm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    gemm_typed<T>(c, a, b, accumulate);
  });
}

}  // namespace
KS_REGISTER_KERNEL(gemm_kernel, CUDA, gemm_cuda);
}  // namespace ks::cuda
