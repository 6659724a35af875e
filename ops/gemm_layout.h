// ops/gemm_layout.h — how a GEMM library reads a strided matrix in place,
// shared by the CPU (ops/cpu/gemm/gemm.h, row-major) and CUDA (cuBLAS)
// kernels so both make the same decision about when to copy.
//
// A (rows, cols) matrix with element strides (sr, sc) is readable in place as
// a row-major matrix with leading dimension ld = sr (sc == 1), or as the
// transpose of a row-major (cols, rows) matrix with ld = sc (sr == 1); the
// stride of a size-1 dim is free. Anything else is copied once per distinct
// matrix, keeping stride-0 (broadcast) batch dims unmaterialised.
// Not here: calling the libraries, batching (ops/cpu/linalg.cpp, ops/cuda/linalg.cpp).
#pragma once

#include <cstdint>
#include <optional>

#include "core/tensor.h"

namespace ks {

// A matrix as a GEMM reads it in place (cpu::GemmMatrix's `ld` and `transposed`).
struct GemmLayout {
  bool transposed;  // read as the transpose of a row-major matrix
  int64_t ld;       // leading dimension, in elements
};

// How (rows, cols) with strides (sr, sc) can be read in place, if it can.
std::optional<GemmLayout> gemm_layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc);

// t (..., rows, cols) with in-place-readable matrices of `dtype`: t itself
// when it already is one, else a contiguous copy (converted to dtype) of its
// distinct matrices, re-broadcast over its stride-0 batch dims.
Tensor gemm_ready(const Tensor& t, DType dtype);
inline Tensor gemm_ready(const Tensor& t) { return gemm_ready(t, t.dtype()); }

}  // namespace ks
