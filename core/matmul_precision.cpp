// core/matmul_precision.cpp — the process-wide GEMM precision switch of
// core/matmul_precision.h, its config words, and what the CPU runs it as. The
// GEMMs that read it are the CPU's door (ops/cpu/gemm/gemm.h, under every CPU
// GEMM), its fused bf16 kernels (ops/cpu/attention_bf16.cpp,
// ops/cpu/gemm/linear_backward.cpp) and ops/cuda/linalg.cpp.
#include "core/matmul_precision.h"

#include <atomic>

#include "core/cpu_features.h"
#include "core/enum_words.h"
#include "core/error.h"

namespace ks {
namespace {
std::atomic<MatmulPrecision> g_matmul_precision{MatmulPrecision::Float32};
constexpr EnumWord<MatmulPrecision> kWords[] = {
    {MatmulPrecision::Float32, "float32"},
    {MatmulPrecision::TF32, "tf32"},
    {MatmulPrecision::BFloat16, "bf16"},
    {MatmulPrecision::Float16, "fp16"},
    {MatmulPrecision::BFloat16, "auto"}};  // after "bf16": the word of BFloat16 stays "bf16"
}  // namespace

void set_matmul_precision(MatmulPrecision p) { g_matmul_precision = p; }
MatmulPrecision matmul_precision() { return g_matmul_precision; }

MatmulPrecision cpu_matmul_precision(MatmulPrecision requested) {
  if (requested == MatmulPrecision::Float16) return MatmulPrecision::Float16;  // emulated on every CPU
  return requested == MatmulPrecision::BFloat16 && cpu_gemm_path() != CpuGemmPath::Float32 ? MatmulPrecision::BFloat16
                                                                                           : MatmulPrecision::Float32;
}

const char* matmul_precision_name(MatmulPrecision p) { return word_of(p, kWords, "float32"); }

MatmulPrecision parse_matmul_precision(const std::string& name, const std::string& what) {
  if (std::optional<MatmulPrecision> p = value_of(name, kWords)) return *p;
  throw Error(str(what, ": expected float32, tf32, bf16, fp16 or auto, got '", name, "'"));
}

}  // namespace ks
