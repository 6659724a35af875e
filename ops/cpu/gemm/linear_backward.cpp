// ops/cpu/gemm/linear_backward.cpp — the CPU's linear_backward kernel (ops/linalg.h)
// for bf16 GEMMs on a packed path (AMX or AVX512-BF16): the output gradient
// g (rows, out) rounded and packed once for both of its products.
//
// Why: composed, the backward reads g three times — the bf16 GEMM packs it as A
// for dx = g·W, packs it again (pairs along rows) as B for dW, computed as
// dWᵀ = xᵀ·g, and sum() reads it for db. g is the largest operand there is
// (rows × out: 8 MB per projection of the fixed 8 × 64 model, 134 MB for
// an 8192-way output layer) and the two packs plus the sum cost about as
// much as reading it three times. Here one pass over g writes both packed
// layouts and the column sums (packed.h: pack_a_and_b). Packed whole, g
// would be held twice more in bf16 by thread_local buffers that keep their
// largest size (2 × 64 MiB for that output layer, more than the bf16
// activations save); above 8 MiB per layout g goes in pieces instead —
// columns for dW and the sums, then rows for dx, at the price of a second
// read of g — with each result summing the same products in the same order.
// W and xᵀ are packed as bf16::gemm packs them, and the products run on
// tiled_product, bf16::gemm's own blocking. The products are the same
// rounded ones, so dx and dW equal bf16::gemm's up to float32 summation order
// (the tests hold them to it); db is summed in float32 over 32-row groups,
// then in float64 over the groups.
// It applies when out >= in: then bf16::gemm also computes dWᵀ with the
// transposing pack on x, the smaller operand. For out < in it would put
// that slow pack on the larger one, and the composed path runs instead, as
// it does for float32 precision (bit for bit as before), bf16 on the float32
// path (which computes in float32: the same bits as float32 precision),
// float64 and strided rows.
// x may be float32, or bfloat16 where linear saved it rounded (ops/linalg.cpp):
// its pack then copies the values it would have rounded to, the same bits.
// It lives beside the GEMM library because it drives the packed layouts
// (packed.h, internal to this folder) itself.
// Not here: the packing and block kernels (pack.cpp, amx.cpp,
// avx512bf16.cpp), the composed path (ops/linalg.cpp).
#include <algorithm>
#include <atomic>
#include <vector>

#include "core/cpu_features.h"
#include "core/matmul_precision.h"
#include "core/parallel.h"
#include "ops/cpu/gemm/gemm.h"
#include "ops/cpu/gemm/packed.h"
#include "ops/linalg.h"

namespace ks::cpu {
namespace {

// A 2-d matrix of `dtype` whose rows are unit-stride (any row stride).
bool rows_unit_stride(const Tensor& t, DType dtype = DType::Float32) {
  return t.defined() && t.dim() == 2 && t.dtype() == dtype && (t.stride(1) == 1 || t.size(1) == 1) &&
         t.stride(0) >= t.size(1);
}

// The most bytes one packed layout of g may take before g is packed a piece at
// a time (gemm.h): the packed buffers are thread_local and keep their largest
// size, so this bounds what the backward holds besides its tensors.
std::atomic<int64_t> whole_bytes_limit{int64_t(8) << 20};

bool linear_backward_cpu(const Tensor& g, const Tensor& x, const Tensor& w, bool want_dx, bool want_db, Tensor& dx,
                         Tensor& dw, Tensor& db) {
  if (cpu_matmul_precision() != MatmulPrecision::BFloat16) return false;  // no bf16 kernel: float32's composed path
  const CpuGemmPath path = cpu_gemm_path();
  const bool x_rows = rows_unit_stride(x) || rows_unit_stride(x, DType::BFloat16);
  if (!rows_unit_stride(g) || !x_rows || (want_dx && !rows_unit_stride(w))) return false;
  const int64_t rows = g.size(0), out = g.size(1), in = x.size(1);
  if (out < in || rows == 0 || out == 0 || in == 0) return false;

  const bool threaded = !in_parallel_region();
  const int64_t kp_rows = bf16::round_up(rows, bf16::kKStep);  // k of dWᵀ = xᵀ·g
  const int64_t ka_out = bf16::packed_a_ld(out);               // packed g's row stride (k of dx = g·W)
  const int64_t ka_rows = bf16::packed_a_ld(rows);             // packed xᵀ's row stride
  const int64_t groups = kp_rows / bf16::kBlock;               // 32-row groups of g
  const int64_t out_p = bf16::round_up(out, bf16::kBlock), in_p = bf16::round_up(in, bf16::kBlock);
  // g packed whole, in both layouts, in one pass: unless that is more than
  // the limit per layout (an output layer: 64 MiB each for 4096 rows of
  // 8192), then g is packed a piece at a time (below).
  const int64_t limit = whole_bytes_limit.load();
  const bool whole = kp_rows * std::max(ka_out, out_p) * 2 <= limit;
  thread_local std::vector<uint16_t> g_a, g_b, w_b, xt_a;
  thread_local std::vector<float> partial;
  // Pieces of equal size, multiples of 32, each at most the limit packed (or 32 rows or columns).
  auto piece = [limit](int64_t total, int64_t bytes_per_unit) {
    const int64_t most = std::max(bf16::kBlock, limit / bytes_per_unit / bf16::kBlock * bf16::kBlock);
    const int64_t pieces = (total + most - 1) / most;
    return bf16::round_up((total + pieces - 1) / pieces, bf16::kBlock);
  };
  const int64_t cols_per_piece = whole ? out_p : piece(out, 2 * kp_rows);
  const int64_t rows_per_piece = whole ? kp_rows : piece(rows, 2 * ka_out);
  if (want_dx && g_a.size() < size_t(rows_per_piece * ka_out)) g_a.resize(size_t(rows_per_piece * ka_out));
  if (g_b.size() < size_t(cols_per_piece * kp_rows)) g_b.resize(size_t(cols_per_piece * kp_rows));
  if (xt_a.size() < size_t(in_p * ka_rows)) xt_a.resize(size_t(in_p * ka_rows));
  if (want_db) partial.assign(size_t(groups * out), 0.f);
  // The buffers are this thread's: the parallel bodies below run on other
  // threads too, whose thread_local vectors are others, so they get pointers.
  uint16_t* const ga = want_dx ? g_a.data() : nullptr;
  uint16_t* const gb = g_b.data();
  uint16_t* const xta = xt_a.data();
  float* const sums = want_db ? partial.data() : nullptr;
  const float* gp = g.data<float>();
  const int64_t ldg = g.stride(0);

  // xᵀ packed as A of dWᵀ = xᵀ·g: float32 x rounded, bfloat16 x copied.
  const int64_t x_grain = std::max<int64_t>(1, (1 << 16) / (ka_rows * bf16::kPanel));
  auto pack_xt = [&](auto tag) {
    using X = typename decltype(tag)::type;
    const X* xp = x.data<X>();
    bf16::maybe_parallel(threaded, in_p / bf16::kPanel, x_grain, [&](int64_t p0, int64_t p1) {
      bf16::pack_a_rows<X>({.data = xp, .ld = x.stride(0), .transposed = true}, in, rows, ka_rows, p0 * bf16::kPanel,
                           p1 * bf16::kPanel, xta);
    });
  };
  if (x.dtype() == DType::BFloat16)
    pack_xt(TypeTag<BFloat16>{});
  else
    pack_xt(TypeTag<float>{});
  // W packed as B of dx = g·W.
  const int64_t kp_out = bf16::round_up(out, bf16::kKStep);
  uint16_t* wb = nullptr;
  if (want_dx) {
    if (w_b.size() < size_t(in_p * kp_out)) w_b.resize(size_t(in_p * kp_out));
    const float* wp = w.data<float>();
    wb = w_b.data();
    const int64_t w_grain = std::max<int64_t>(1, (1 << 16) / (kp_out * bf16::kPanel));
    bf16::maybe_parallel(threaded, in_p / bf16::kPanel, w_grain, [&](int64_t p0, int64_t p1) {
      bf16::pack_b_panels({.data = wp, .ld = w.stride(0)}, out, in, kp_out, p0, p1, wb);
    });
  }
  dw = Tensor::empty({out, in}, DType::Float32, g.device());
  if (want_dx) dx = Tensor::empty({rows, in}, DType::Float32, g.device());
  const int64_t group_grain = std::max<int64_t>(1, (1 << 15) / (bf16::kBlock * out));

  // dWᵀ (in, o1 - o0) = xᵀ (in, rows) · g[:, o0:o1], written transposed into
  // dW's rows [o0, o1), from g's columns packed as B in gb.
  auto weight_gradient = [&](int64_t o0, int64_t o1) {
    bf16::tiled_product(path, {.a = {.data = xta, .ld = ka_rows},
                               .b = {.data = gb, .kp = kp_rows},
                               .m = in,
                               .n = o1 - o0,
                               .c = dw.data<float>() + o0 * in,
                               .ldc = in,
                               .c_transposed = true,
                               .threaded = threaded});
  };
  // dx[r0:r1] (r1 - r0, in) = g[r0:r1] (r1 - r0, out) · W, from g's rows packed as A in ga.
  auto input_gradient = [&](int64_t r0, int64_t r1) {
    bf16::tiled_product(path, {.a = {.data = ga, .ld = ka_out},
                               .b = {.data = wb, .kp = kp_out},
                               .m = r1 - r0,
                               .n = in,
                               .c = dx.data<float>() + r0 * in,
                               .ldc = in,
                               .threaded = threaded});
  };

  if (whole) {  // one pass over g: packed A (for dx), packed B (for dW) and per-group column sums
    bf16::maybe_parallel(threaded, groups, group_grain, [&](int64_t g0, int64_t g1) {
      for (int64_t q = g0; q < g1; ++q)
        bf16::pack_a_and_b(gp, ldg, rows, out, ka_out, kp_rows, q * bf16::kBlock, (q + 1) * bf16::kBlock, ga, gb,
                           sums ? sums + q * out : nullptr);
    });
    weight_gradient(0, out);
    if (want_dx) input_gradient(0, rows);
  } else {
    // Two passes over g, each a piece at a time: columns for dW and the
    // column sums, then rows for dx. Every result element sums the same
    // products in the same order as from g packed whole (a piece of columns
    // is a piece of dWᵀ's columns, a piece of rows one of dx's rows), so the
    // bits are the same; the price is a second read of g.
    for (int64_t o0 = 0; o0 < out; o0 += cols_per_piece) {
      const int64_t o1 = std::min(out, o0 + cols_per_piece);
      bf16::maybe_parallel(threaded, groups, group_grain, [&](int64_t g0, int64_t g1) {
        for (int64_t q = g0; q < g1; ++q)
          bf16::pack_a_and_b(gp + o0, ldg, rows, o1 - o0, 0, kp_rows, q * bf16::kBlock, (q + 1) * bf16::kBlock, nullptr,
                             gb, sums ? sums + q * out + o0 : nullptr);
      });
      weight_gradient(o0, o1);
    }
    if (want_dx)
      for (int64_t r0 = 0; r0 < rows; r0 += rows_per_piece) {
        const int64_t r1 = std::min(rows, r0 + rows_per_piece), mp = bf16::round_up(r1 - r0, bf16::kBlock);
        bf16::maybe_parallel(threaded, mp / bf16::kPanel, std::max<int64_t>(1, (1 << 16) / (ka_out * bf16::kPanel)),
                             [&](int64_t p0, int64_t p1) {
                               bf16::pack_a_rows<float>({.data = gp + r0 * ldg, .ld = ldg}, r1 - r0, out, ka_out,
                                                        p0 * bf16::kPanel, p1 * bf16::kPanel, ga);
                             });
        input_gradient(r0, r1);
      }
  }
  if (want_db) {
    db = Tensor::empty({out}, DType::Float32, g.device());
    float* d = db.data<float>();
    bf16::maybe_parallel(threaded, out, 256, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        double s = 0;
        for (int64_t q = 0; q < groups; ++q) s += sums[q * out + c];
        d[c] = float(s);
      }
    });
  }
  return true;
}

}  // namespace

int64_t set_linear_backward_whole_bytes(int64_t bytes) {
  KS_CHECK(bytes > 0, "set_linear_backward_whole_bytes: the limit must be positive, got ", bytes);
  return whole_bytes_limit.exchange(bytes);
}

KS_REGISTER_KERNEL(linear_backward_kernel, CPU, linear_backward_cpu);

}  // namespace ks::cpu
