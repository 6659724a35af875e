// ops/cpu/loops.h — the elementwise loop templates every CPU kernel uses.
//
// cpu_map<T...>(f, out, in...) computes out[i] = f(in[i]...) over tensors of
// one shape (inputs may be strided or broadcast views), in parallel, with a
// plain contiguous loop that the compiler vectorises when every operand is
// contiguous or broadcast along the row (for float32 results also in an
// AVX-512 twin, avx512_clone.h).
// Kernels supply only the scalar function.
#pragma once

#include <algorithm>
#include <array>
#include <type_traits>

#include "core/parallel.h"
#include "core/strided_loop.h"
#include "core/tensor.h"
#include "ops/cpu/avx512_clone.h"

namespace ks::cpu {

// The contiguous loop, and its AVX-512 twin (avx512_clone.h) for float32.
template <class Out, class F, class... In>
KS_ROWS_INLINE void map_contiguous(const F& f, Out* o, int64_t n, const In*... in) {
  for (int64_t i = 0; i < n; ++i) o[i] = f(in[i]...);
}
template <class Out, class F, class... In>
KS_AVX512_CLONE void map_contiguous_avx512(const F& f, Out* o, int64_t n, const In*... in) {
  map_contiguous(f, o, n, in...);
}

// The contiguous loop on one row, the float32 result in the AVX-512 twin
// where the CPU has it.
template <class Out, class F, class... In> void map_row(const F& f, Out* o, int64_t n, const In*... in) {
  if constexpr (std::is_same_v<Out, float>)
    if (has_avx512()) return map_contiguous_avx512(f, o, n, in...);
  map_contiguous(f, o, n, in...);
}

// A row whose output is contiguous and whose inputs are each contiguous or
// one value broadcast along it (stride 0: a bias over a row, a per-row
// statistic over its columns, a gradient expanded back over a summed dim).
// Each broadcast value is repeated into a short buffer, so the row runs the
// contiguous loop, vectorised, a piece at a time: the same f on the same
// values, so the same bits as the strided loop.
template <class Out, class... In, class F, size_t... I>
void map_broadcast_row(const F& f, Out* o, int64_t n, const std::array<char*, sizeof...(In) + 1>& p,
                       const std::array<int64_t, sizeof...(In) + 1>& s, std::index_sequence<I...>) {
  constexpr int64_t kPiece = 256;
  constexpr size_t kWidest = std::max({sizeof(In)...});
  alignas(64) char repeated[sizeof...(In)][kPiece * kWidest];  // left uninitialised: filled as needed
  const int64_t first = std::min(n, kPiece);
  ((s[I + 1] == 0 ? (void)std::fill_n(reinterpret_cast<In*>(repeated[I]), first, *reinterpret_cast<const In*>(p[I + 1]))
                  : void()),
   ...);
  for (int64_t b = 0; b < n; b += kPiece)
    map_row(f, o + b, std::min(kPiece, n - b),
            (s[I + 1] == 0 ? reinterpret_cast<const In*>(repeated[I]) : reinterpret_cast<const In*>(p[I + 1]) + b)...);
}

// out[i] = f(in_0[i], ..., in_{K-1}[i]); Out and In are the element types.
template <class Out, class... In, class F>
void cpu_map(F f, const Tensor& out, const std::array<Tensor, sizeof...(In)>& in) {
  constexpr int K = sizeof...(In);
  constexpr int N = K + 1;
  if (out.numel() == 0) return;
  std::array<Shape, N> strides;
  std::array<size_t, N> sizes;
  std::array<char*, N> base;
  strides[0] = out.strides();
  sizes[0] = sizeof(Out);
  base[0] = static_cast<char*>(out.data_ptr());
  for (int k = 0; k < K; ++k) {
    KS_ASSERT(in[k].sizes() == out.sizes());
    strides[k + 1] = in[k].strides();
    sizes[k + 1] = in[k].element_size();
    base[k + 1] = static_cast<char*>(in[k].data_ptr());
  }
  auto L = make_strided_layout<N>(out.sizes(), strides, sizes);
  constexpr std::array<int64_t, N> item{int64_t(sizeof(Out)), int64_t(sizeof(In))...};
  strided_for_each<N>(L, base, kElementwiseGrain, [&](std::array<char*, N> p, int64_t n, std::array<int64_t, N> s) {
    const auto broadcast_row = [&] {
      bool yes = K > 0 && s[0] == item[0];
      for (int k = 1; k < N; ++k) yes = yes && (s[k] == item[k] || s[k] == 0);
      return yes;
    };
    if (s == item) {
      [&]<size_t... I>(std::index_sequence<I...>) {
        map_row(f, reinterpret_cast<Out*>(p[0]), n, reinterpret_cast<const In*>(p[I + 1])...);
      }
      (std::index_sequence_for<In...>{});
    } else if (broadcast_row()) {
      if constexpr (K > 0)
        map_broadcast_row<Out, In...>(f, reinterpret_cast<Out*>(p[0]), n, p, s, std::index_sequence_for<In...>{});
    } else {
      [&]<size_t... I>(std::index_sequence<I...>) {
        for (int64_t i = 0; i < n; ++i)
          *reinterpret_cast<Out*>(p[0] + i * s[0]) = f(*reinterpret_cast<const In*>(p[I + 1] + i * s[I + 1])...);
      }
      (std::index_sequence_for<In...>{});
    }
  });
}

// The CPU's loops as a type, for the kernels written once for every backend
// (ops/*_formulas.h), instantiated as `unary_forward<CpuLoops>`. Its kernels
// take bfloat16 and float16 too, computing in float32 (ops/kernel_dtypes.h):
//   map<Out, In...>(f, out, in)      cpu_map
//   for_each_index(device, n, grain, f)  f(i) for i in [0, n), in parallel
//                                        chunks of at least `grain` indices
struct CpuLoops {
  static constexpr bool computes_16bit = true;  // ops/kernel_dtypes.h
  template <class Out, class... In, class F>
  static void map(F f, const Tensor& out, const std::array<Tensor, sizeof...(In)>& in) {
    cpu_map<Out, In...>(f, out, in);
  }
  template <class F> static void for_each_index(const Device&, int64_t n, int64_t grain, F f) {
    parallel_for(0, n, grain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) f(i);
    });
  }
};

}  // namespace ks::cpu
