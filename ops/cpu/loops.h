// ops/cpu/loops.h — the elementwise loop templates every CPU kernel uses.
//
// cpu_map<T...>(f, out, in...) computes out[i] = f(in[i]...) over tensors of
// one shape (inputs may be strided or broadcast views), in parallel, with a
// plain contiguous loop that the compiler vectorises when every operand is
// contiguous (for float32 results also in an AVX-512 twin, avx512_clone.h).
// Kernels supply only the scalar function.
#pragma once

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
    if (s == item) {
      [&]<size_t... I>(std::index_sequence<I...>) {
        Out* o = reinterpret_cast<Out*>(p[0]);
        if constexpr (std::is_same_v<Out, float>)
          if (has_avx512()) return map_contiguous_avx512(f, o, n, reinterpret_cast<const In*>(p[I + 1])...);
        map_contiguous(f, o, n, reinterpret_cast<const In*>(p[I + 1])...);
      }
      (std::index_sequence_for<In...>{});
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
