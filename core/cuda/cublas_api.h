// core/cuda/cublas_api.h — the cuBLAS functions Keystone calls, opened with
// dlopen the first time one is needed rather than linked.
//
// Why: libcublas brings in libcublasLt, whose static initialisers take about
// half a second of CPU at every process start (measured on the 2-core
// development VM: an empty program linked to -lcublas, 0.47 s; to -lcudart,
// 0.00 s). Linked into libkeystone, that half second was paid by every
// `keystone` command and every test process of a CUDA build, GPU or not, before
// anything ran. Opened here, it is paid once, by the first GEMM on a GPU.
//
//   KS_CUBLAS_CHECK(cublas().create(&handle));
//
// Each member has the type of the cuBLAS function it names (decltype of the
// header's declaration, or a spelled-out type checked against it), so calls
// are checked against the installed headers as direct calls were. The
// library is looked up by its soname
// (libcublas.so.<CUBLAS_VER_MAJOR>, so LD_LIBRARY_PATH and the runpath apply),
// then at the path CMake found at build time. Not here: cuBLAS handles
// (ops/cuda/linalg.cpp keeps one per device) and error text (cuda_check.h).
// Host code only.
#pragma once

#include <cublas_v2.h>

namespace ks::cuda {

// cublasGemmStridedBatchedEx is overloaded in C++ (the header adds an inline
// overload taking the older cudaDataType compute type), so its type is spelled
// out; cublas_api.cpp checks it against the header's declaration.
using GemmStridedBatchedExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int m, int n,
                                                  int k, const void* alpha, const void* A, cudaDataType Atype, int lda,
                                                  long long strideA, const void* B, cudaDataType Btype, int ldb,
                                                  long long strideB, const void* beta, void* C, cudaDataType Ctype,
                                                  int ldc, long long strideC, int batch_count,
                                                  cublasComputeType_t compute, cublasGemmAlgo_t algo);

struct CublasApi {
  decltype(&cublasCreate) create;
  decltype(&cublasSetStream) set_stream;
  decltype(&cublasSetMathMode) set_math_mode;
  decltype(&cublasSgemmStridedBatched) sgemm_strided_batched;
  decltype(&cublasDgemmStridedBatched) dgemm_strided_batched;
  GemmStridedBatchedExFn gemm_strided_batched_ex;
  decltype(&cublasGetStatusName) get_status_name;
  decltype(&cublasGetStatusString) get_status_string;
};

// Opens cuBLAS on the first call (thread-safe) and returns its entry points.
// Throws ks::Error naming the library and dlerror's text when it cannot be
// opened, or the first entry point it lacks; a later call tries again.
const CublasApi& cublas();

}  // namespace ks::cuda
