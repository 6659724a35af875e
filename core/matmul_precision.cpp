// core/matmul_precision.cpp — the config words of MatmulPrecision (core/cuda.h),
// in every build. The switch itself lives with the backend (core/cuda/runtime.cpp)
// or its stand-in (core/cuda_fallback.cpp); the GEMM that reads it is
// ops/cuda/linalg.cpp.
#include "core/cuda.h"

namespace ks {

const char* matmul_precision_name(MatmulPrecision p) {
  switch (p) {
    case MatmulPrecision::Float32: return "float32";
    case MatmulPrecision::TF32: return "tf32";
    case MatmulPrecision::BFloat16: return "bf16";
  }
  return "float32";
}

MatmulPrecision parse_matmul_precision(const std::string& name, const std::string& what) {
  if (name == "float32") return MatmulPrecision::Float32;
  if (name == "tf32") return MatmulPrecision::TF32;
  if (name == "bf16") return MatmulPrecision::BFloat16;
  throw Error(str(what, ": expected float32, tf32 or bf16, got '", name, "'"));
}

}  // namespace ks
