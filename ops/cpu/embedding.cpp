// ops/cpu/embedding.cpp — CPU kernels for embedding.
//
// Forward copies one weight row per index (a memcpy when the row is
// contiguous). Backward avoids racing scatter-adds by inverting the lookup
// first: a stable counting sort groups positions by index (O(n + V)), then
// each weight row sums its own positions, in position order, in parallel
// over rows. Every row is written by exactly one task, in a fixed order.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/copy.h"
#include "core/parallel.h"
#include "ops/embedding.h"

namespace ks::cpu {
namespace {

constexpr int64_t kGrain = 32768;  // elements per parallel chunk

void embedding_cpu(const Tensor& out, const Tensor& weight, const Tensor& indices_in) {
  const Tensor indices = contiguous_raw(indices_in);
  const int64_t n = indices.numel(), V = weight.size(0), D = weight.size(1);
  const int64_t* idx = indices.data<int64_t>();
  for (int64_t i = 0; i < n; ++i)
    KS_CHECK(idx[i] >= 0 && idx[i] < V, "embedding: index ", idx[i], " is out of range for ", V, " embeddings (weight ",
             describe(weight), ")");
  if (n == 0 || D == 0) return;
  const size_t isz = weight.element_size();
  const int64_t s0 = weight.stride(0), s1 = weight.stride(1);
  const char* w = static_cast<const char*>(weight.data_ptr());
  char* o = static_cast<char*>(out.data_ptr());
  parallel_for(0, n, std::max<int64_t>(1, kGrain / D), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const char* src = w + idx[i] * s0 * int64_t(isz);
      char* dst = o + i * D * int64_t(isz);
      if (s1 == 1) {
        std::memcpy(dst, src, size_t(D) * isz);
      } else {
        for (int64_t d = 0; d < D; ++d) std::memcpy(dst + d * int64_t(isz), src + d * s1 * int64_t(isz), isz);
      }
    }
  });
}

void embedding_backward_cpu(const Tensor& dw, const Tensor& g_in, const Tensor& indices_in, int64_t padding_idx) {
  const Tensor g = contiguous_raw(g_in), indices = contiguous_raw(indices_in);
  const int64_t n = indices.numel(), V = dw.size(0), D = dw.size(1);
  const int64_t* idx = indices.data<int64_t>();
  // start[v] .. start[v + 1]: the positions that looked up row v, in increasing order.
  std::vector<int64_t> start(static_cast<size_t>(V + 1), 0), order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ++start[size_t(idx[i] + 1)];
  for (int64_t v = 0; v < V; ++v) start[size_t(v + 1)] += start[size_t(v)];
  {
    std::vector<int64_t> next(start.begin(), start.end() - 1);
    for (int64_t i = 0; i < n; ++i) order[size_t(next[size_t(idx[i])]++)] = i;
  }
  // 16-bit gradients too: each row summed in double, rounded once (through float32) at the end.
  dispatch_floating16(dw.dtype(), "embedding backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* gp = g.data<T>();
    T* out = dw.data<T>();
    const int64_t avg_work = D * (1 + n / std::max<int64_t>(V, 1));
    parallel_for(0, V, std::max<int64_t>(1, kGrain / std::max<int64_t>(avg_work, 1)), [&](int64_t b, int64_t e) {
      std::vector<double> acc(static_cast<size_t>(D));
      for (int64_t v = b; v < e; ++v) {
        T* row = out + v * D;
        std::fill(acc.begin(), acc.end(), 0.0);
        if (v != padding_idx)
          for (int64_t k = start[size_t(v)]; k < start[size_t(v + 1)]; ++k) {
            const T* gr = gp + order[size_t(k)] * D;
            for (int64_t d = 0; d < D; ++d) acc[size_t(d)] += double(static_cast<C>(gr[d]));
          }
        for (int64_t d = 0; d < D; ++d) row[d] = T(static_cast<C>(acc[size_t(d)]));
      }
    });
  });
}

}  // namespace
KS_REGISTER_KERNEL(embedding_kernel, CPU, embedding_cpu);
KS_REGISTER_KERNEL(embedding_backward_kernel, CPU, embedding_backward_cpu);
}  // namespace ks::cpu
