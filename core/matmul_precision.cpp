// core/matmul_precision.cpp — the process-wide GEMM precision switch of
// core/matmul_precision.h and its config words. The GEMMs that read it are
// ops/cpu/linalg.cpp, ops/cpu/attention.cpp (through ops/cpu/gemm/gemm.h) and
// ops/cuda/linalg.cpp.
#include "core/matmul_precision.h"

#include <atomic>

#include "core/error.h"

namespace ks {
namespace {
std::atomic<MatmulPrecision> g_matmul_precision{MatmulPrecision::Float32};
}

void set_matmul_precision(MatmulPrecision p) { g_matmul_precision = p; }
MatmulPrecision matmul_precision() { return g_matmul_precision; }

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
