// core/matmul_precision.h — how float32 matrix products run, on every device:
// one process-wide switch, like PyTorch's torch.backends.*.matmul settings.
//
//   Float32   (the default) full float32 products; the CPU path is OpenBLAS
//             sgemm and stays bit-for-bit what it always was.
//   TF32      CUDA only: tensor cores with 10-bit mantissa inputs (cuBLAS's
//             TF32 math mode), float32 sums. The CPU has no such unit; the
//             configs refuse tf32 on the CPU, and CPU GEMMs run it as Float32.
//   BFloat16  where there is a bf16 unit: both operands rounded to bfloat16
//             (nearest even), products summed in float32 into a float32
//             result: mixed precision with float32 weights and optimizer
//             state. On CUDA cublasGemmEx with CUBLAS_COMPUTE_32F; on the CPU
//             Keystone's own kernels (ops/cpu/gemm/gemm.h: AMX tiles,
//             AVX512-BF16). On a CPU without a bf16 kernel (cpu_gemm_path()
//             float32, core/cpu_features.h: no bf16 units, or KS_CPU_GEMM=float32)
//             bf16 computes in float32: results equal Float32's bit for bit,
//             at float32's speed. Rounding the operands there and still
//             running float32 GEMMs made bf16 0.5-0.6x float32's speed for
//             no gain (docs/performance.md, "bf16 without bf16 units").
//   Float16   IEEE half operands (config word "fp16"), float32 sums into a
//             float32 result, meant to be trained with a loss scaler
//             (nn/loss_scaler.h). On CUDA cublasGemmEx with CUDA_R_16F
//             operands and CUBLAS_COMPUTE_32F, like BFloat16 there. The CPU
//             has no fp16 unit that Keystone uses, so there it is an
//             EMULATION of fp16's numerics: both operands rounded to fp16
//             (nearest even; beyond 65504 they become inf, below 2^-14 they
//             lose bits as fp16 subnormals, below 2^-25 they become 0), then
//             the float32 GEMM of the rounded values. Slower than Float32 (a
//             rounded copy of every operand), never faster: it exists to see
//             what fp16 does to a run, on a machine without a GPU. "auto"
//             never picks it.
//
// The config word "auto" is BFloat16 by another name: the fastest path the
// machine has (bf16 on CUDA and on CPUs with bf16 units, float32 elsewhere),
// where "bf16" names what the user asked for, so a run that asked for bf16
// and gets float32 says so (tools/train/progress.h: format_gemm_path).
// Everything but GEMMs (and the GEMM tiles inside fused attention) stays
// float32 either way; float64 GEMMs ignore the setting.
// Not here: which CPU kernel runs a bf16 GEMM (core/cpu_features.h).
#pragma once

#include <string>

#include "core/scoped_setting.h"

namespace ks {

enum class MatmulPrecision { Float32, TF32, BFloat16, Float16 };
void set_matmul_precision(MatmulPrecision p);
MatmulPrecision matmul_precision();

// What CPU float32 GEMMs run at for a requested precision: BFloat16 where the
// CPU has a bf16 kernel (cpu_gemm_path() amx or avx512bf16), Float16 always
// (emulated, above), else Float32 (TF32 included). The one place the CPU
// decides whether bf16 is bf16.
MatmulPrecision cpu_matmul_precision(MatmulPrecision requested = matmul_precision());

// "float32", "tf32", "bf16", "fp16" (the config's words) and back; parse also reads
// "auto" (as BFloat16) and throws naming `what` and the word.
const char* matmul_precision_name(MatmulPrecision p);
MatmulPrecision parse_matmul_precision(const std::string& name, const std::string& what);

// Sets the precision for a scope (a bench, a test); the previous one comes back after.
using MatmulPrecisionScope = ScopedSetting<MatmulPrecision, matmul_precision, set_matmul_precision>;

}  // namespace ks
