// core/matmul_precision.cpp — the process-wide GEMM precision switch of
// core/matmul_precision.h and its config words. The GEMMs that read it are
// ops/cpu/linalg.cpp, ops/cpu/attention.cpp (through ops/cpu/gemm/gemm.h) and
// ops/cuda/linalg.cpp.
#include "core/matmul_precision.h"

#include <atomic>

#include "core/enum_words.h"
#include "core/error.h"

namespace ks {
namespace {
std::atomic<MatmulPrecision> g_matmul_precision{MatmulPrecision::Float32};
constexpr EnumWord<MatmulPrecision> kWords[] = {
    {MatmulPrecision::Float32, "float32"}, {MatmulPrecision::TF32, "tf32"}, {MatmulPrecision::BFloat16, "bf16"}};
}  // namespace

void set_matmul_precision(MatmulPrecision p) { g_matmul_precision = p; }
MatmulPrecision matmul_precision() { return g_matmul_precision; }

const char* matmul_precision_name(MatmulPrecision p) { return word_of(p, kWords, "float32"); }

MatmulPrecision parse_matmul_precision(const std::string& name, const std::string& what) {
  if (std::optional<MatmulPrecision> p = value_of(name, kWords)) return *p;
  throw Error(str(what, ": expected float32, tf32 or bf16, got '", name, "'"));
}

}  // namespace ks
