// core/cuda/cublas_api.cpp — opens cuBLAS with dlopen and looks up the entry
// points of cublas_api.h. Not here: what the functions do (NVIDIA's cuBLAS
// documentation) or how Keystone calls them (ops/cuda/linalg.cpp).
#include "core/cuda/cublas_api.h"

#include <dlfcn.h>

#include <string>

#include "core/error.h"

// Two steps, so that a name the header defines as a macro (cublasCreate is
// cublasCreate_v2) is expanded before it becomes the symbol's string.
#define KS_CUBLAS_SYMBOL_NAME(name) KS_CUBLAS_SYMBOL_NAME_EXPANDED(name)
#define KS_CUBLAS_SYMBOL_NAME_EXPANDED(name) #name

namespace ks::cuda {
namespace {

// Compiles only if the header declares a function of exactly this type.
[[maybe_unused]] constexpr GemmStridedBatchedExFn kDeclaredGemmStridedBatchedEx = &cublasGemmStridedBatchedEx;

void* open_library() {
  const std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  std::string errors;
  for (const std::string& candidate : {soname, std::string(KS_CUBLAS_LIBRARY_PATH)}) {
    if (candidate.empty()) continue;
    // RTLD_LOCAL: cuBLAS's symbols stay out of the global namespace; we reach them through dlsym only.
    if (void* library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) return library;
    const char* why = dlerror();
    errors += str("\n  ", candidate, ": ", why ? why : "unknown error");
  }
  throw Error(str("cuBLAS: cannot open the library (a CUDA ", CUBLAS_VER_MAJOR,
                  " toolkit's libcublas; set LD_LIBRARY_PATH to its folder):", errors));
}

template <class Fn> void look_up(void* library, const char* name, Fn& fn) {
  dlerror();
  void* symbol = dlsym(library, name);
  if (symbol == nullptr) {
    const char* why = dlerror();
    throw Error(str("cuBLAS: the library has no ", name, " (", why ? why : "a null symbol",
                    "); Keystone was built against cuBLAS ", CUBLAS_VER_MAJOR, ".", CUBLAS_VER_MINOR));
  }
  fn = reinterpret_cast<Fn>(symbol);
}

CublasApi load() {
  void* library = open_library();  // kept open for the life of the process
  CublasApi api{};
#define KS_CUBLAS_LOOK_UP(member, function) look_up(library, KS_CUBLAS_SYMBOL_NAME(function), api.member)
  KS_CUBLAS_LOOK_UP(create, cublasCreate);
  KS_CUBLAS_LOOK_UP(set_stream, cublasSetStream);
  KS_CUBLAS_LOOK_UP(set_math_mode, cublasSetMathMode);
  KS_CUBLAS_LOOK_UP(sgemm_strided_batched, cublasSgemmStridedBatched);
  KS_CUBLAS_LOOK_UP(dgemm_strided_batched, cublasDgemmStridedBatched);
  KS_CUBLAS_LOOK_UP(gemm_strided_batched_ex, cublasGemmStridedBatchedEx);
  KS_CUBLAS_LOOK_UP(get_status_name, cublasGetStatusName);
  KS_CUBLAS_LOOK_UP(get_status_string, cublasGetStatusString);
#undef KS_CUBLAS_LOOK_UP
  return api;
}

}  // namespace

const CublasApi& cublas() {
  static const CublasApi api = load();  // an exception leaves it unset, and the next call retries
  return api;
}

}  // namespace ks::cuda
