// tests/cuda/test_indexing_scan.cpp — CPU-vs-CUDA agreement of the kernels
// that work along one dim: index_select/index_add, gather/scatter_add,
// cumsum and triu/tril, over contiguous, permuted and sliced inputs, every
// dim and the dtypes each takes; their backwards; float64 gradchecks through
// the GPU; and the bad-index errors, which must read as the CPU's.
// The adds and scans run in the CPU's order in the CPU's accumulator type,
// so they are compared exactly (tolerance 0), not within a tolerance.
#include "cuda/cuda_testing.h"

using namespace ks;
using namespace ks::testing;

namespace {

// The error text of f() (empty if it does not throw).
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("cuda: index_select and index_add match the CPU exactly" * needs_gpu()) {
  const Shape shape{5, 7, 6};
  for (DType d : {kFloat32, kFloat64, kInt64, kInt32}) {
    for (Layout l : all_layouts()) {
      for (int64_t dim : {0, 1, 2}) {
        CAPTURE(d);
        CAPTURE(layout_name(l));
        CAPTURE(dim);
        Twin x = twin(shape, 200 + uint64_t(dim), l, d, -50, 50);
        Twin idx = int_twin({9}, 210 + uint64_t(dim), 0, shape[size_t(dim)]);  // repeats: 9 picks of <= 7 rows
        check_matches(index_select(x.gpu, dim, idx.gpu), index_select(x.cpu, dim, idx.cpu), 0, 0);
        Shape src_shape = shape;
        src_shape[size_t(dim)] = 9;
        Twin src = twin(src_shape, 220 + uint64_t(dim), l, d, -50, 50);
        check_matches(index_add(x.gpu, dim, idx.gpu, src.gpu), index_add(x.cpu, dim, idx.cpu, src.cpu), 0, 0);
        if (d == kFloat32 || d == kFloat64)  // backward: index_add into zeros
          check_grad([&](const Tensor& t) { return index_select(t, dim, t.device().is_cuda() ? idx.gpu : idx.cpu); }, x,
                     0);
      }
    }
  }
  // bool rows, and a strided (sliced) index.
  Twin x = twin({6, 4}, 230);
  Tensor bc = gt(x.cpu, 0.0), bg = gt(x.gpu, 0.0);
  Twin wide = int_twin({10}, 231, 0, 6);
  Tensor ic = slice(wide.cpu, 0, 0, 10, 2), ig = slice(wide.gpu, 0, 0, 10, 2);
  check_matches(index_select(bg, 0, ig), index_select(bc, 0, ic), 0, 0);
  check_matches(index_select(x.gpu, 0, ig), index_select(x.cpu, 0, ic), 0, 0);
  // Many repeats of few rows (an embedding-like backward) in float32: still the CPU's bits.
  Twin big = twin({3000, 64}, 232);
  Twin rows = int_twin({3000}, 233, 0, 5);
  Twin dst = twin({5, 64}, 234);
  check_matches(index_add(dst.gpu, 0, rows.gpu, big.gpu), index_add(dst.cpu, 0, rows.cpu, big.cpu), 0, 0);
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor i3 = on_gpu(tensor({2, 0, 2}, {3}, {.dtype = kInt64}));
    CHECK_GRADCHECK(
        [&](const std::vector<Tensor>& t) {
          return through_gpu([&](const std::vector<Tensor>& u) { return index_select(u[0], 1, i3); }, t);
        },
        {leaf64({3, 4, 2}, 235, l)});
    CHECK_GRADCHECK(
        [&](const std::vector<Tensor>& t) {
          return through_gpu([&](const std::vector<Tensor>& u) { return index_add(u[0], 0, i3, u[1]); }, t);
        },
        {leaf64({4, 5}, 236, l), leaf64({3, 5}, 237, l)});
  }
}

TEST_CASE("cuda: gather and scatter_add match the CPU exactly" * needs_gpu()) {
  const Shape shape{4, 5, 6};
  for (DType d : {kFloat32, kFloat64, kInt64}) {
    for (Layout l : all_layouts()) {
      for (int64_t dim : {0, 1, 2}) {
        CAPTURE(d);
        CAPTURE(layout_name(l));
        CAPTURE(dim);
        Twin x = twin(shape, 240 + uint64_t(dim), l, d, -50, 50);
        // index smaller than x off dim, and longer than x along it (repeats).
        Shape ishape{3, 4, 5};
        ishape[size_t(dim)] = 8;
        Twin idx = int_twin(ishape, 250 + uint64_t(dim), 0, shape[size_t(dim)]);
        check_matches(gather(x.gpu, dim, idx.gpu), gather(x.cpu, dim, idx.cpu), 0, 0);
        // src larger than index in every dim.
        Shape sshape = ishape;
        for (int64_t& s : sshape) s += 1;
        Twin src = twin(sshape, 260 + uint64_t(dim), l, d, -50, 50);
        check_matches(scatter_add(x.gpu, dim, idx.gpu, src.gpu), scatter_add(x.cpu, dim, idx.cpu, src.cpu), 0, 0);
        if (d != kInt64)  // backward: scatter_add into zeros
          check_grad([&](const Tensor& t) { return gather(t, dim, t.device().is_cuda() ? idx.gpu : idx.cpu); }, x, 0);
      }
    }
  }
  Twin idx = int_twin({3, 2}, 270, 0, 3);
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    CHECK_GRADCHECK(
        [&](const std::vector<Tensor>& t) {
          return through_gpu([&](const std::vector<Tensor>& u) { return gather(u[0], 1, idx.gpu); }, t);
        },
        {leaf64({3, 3}, 271, l)});
    CHECK_GRADCHECK(
        [&](const std::vector<Tensor>& t) {
          return through_gpu([&](const std::vector<Tensor>& u) { return scatter_add(u[0], 1, idx.gpu, u[1]); }, t);
        },
        {leaf64({3, 3}, 272, l), leaf64({3, 2}, 273, l)});
  }
}

TEST_CASE("cuda: bad indices throw the CPU's message" * needs_gpu()) {
  Twin x = twin({5, 3}, 280);
  Tensor bad = tensor({1, 0, 7, 9}, {4}, {.dtype = kInt64});
  Tensor bad_gpu = on_gpu(bad);
  const std::string want = "index_select: index 7 is out of range for dim 0 of size 5";
  CHECK(error_of([&] { index_select(x.cpu, 0, bad); }) == want);
  CHECK(error_of([&] { index_select(x.gpu, 0, bad_gpu); }) == want);
  Twin src = twin({4, 3}, 281);
  CHECK(error_of([&] { index_add(x.gpu, 0, bad_gpu, src.gpu); }) ==
        error_of([&] { index_add(x.cpu, 0, bad, src.cpu); }));
  Tensor neg = tensor({0, 2, -1, 1, 3, 0}, {2, 3}, {.dtype = kInt64});
  const std::string g_cpu = error_of([&] { gather(x.cpu, 1, neg); });
  CHECK(g_cpu == "gather: index -1 is out of range for dim 1 of size 3");
  CHECK(error_of([&] { gather(x.gpu, 1, on_gpu(neg)); }) == g_cpu);
  Twin s2 = twin({2, 3}, 282);
  CHECK(error_of([&] { scatter_add(x.gpu, 1, on_gpu(neg), s2.gpu); }) ==
        error_of([&] { scatter_add(x.cpu, 1, neg, s2.cpu); }));
  // The GPU is usable after the error.
  Tensor ok = tensor({4, 0}, {2}, {.dtype = kInt64});
  check_matches(index_select(x.gpu, 0, on_gpu(ok)), index_select(x.cpu, 0, ok), 0, 0);
}

TEST_CASE("cuda: cumsum and its backward match the CPU exactly" * needs_gpu()) {
  for (DType d : {kFloat32, kFloat64, kInt64, kInt32}) {
    for (Layout l : all_layouts()) {
      Twin x = twin({4, 300, 5}, 290, l, d, -20, 20);
      for (int64_t dim : {0, 1, 2, -1}) {
        CAPTURE(d);
        CAPTURE(layout_name(l));
        CAPTURE(dim);
        check_matches(cumsum(x.gpu, dim), cumsum(x.cpu, dim), 0, 0);
        if (d == kFloat32 || d == kFloat64) check_grad([dim](const Tensor& t) { return cumsum(t, dim); }, x, 0);
      }
    }
  }
  // A long float32 scan: the double accumulator keeps the CPU's digits.
  Twin longx = twin({2, 100000}, 291);
  check_matches(cumsum(longx.gpu, 1), cumsum(longx.cpu, 1), 0, 0);
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    CHECK_GRADCHECK(
        [](const std::vector<Tensor>& t) {
          return through_gpu([](const std::vector<Tensor>& u) { return cumsum(u[0], 1); }, t);
        },
        {leaf64({3, 5, 2}, 292, l)});
  }
}

TEST_CASE("cuda: triu and tril match the CPU exactly" * needs_gpu()) {
  for (DType d : {kFloat32, kFloat64, kInt64}) {
    for (Layout l : all_layouts()) {
      Twin x = twin({3, 7, 9}, 300, l, d, -9, 9);
      for (int64_t diag : {-8, -2, 0, 3, 10}) {
        CAPTURE(d);
        CAPTURE(layout_name(l));
        CAPTURE(diag);
        check_matches(triu(x.gpu, diag), triu(x.cpu, diag), 0, 0);
        check_matches(tril(x.gpu, diag), tril(x.cpu, diag), 0, 0);
      }
    }
  }
  // bool (a causal mask), 2-d and more batch dims.
  Tensor ones_cpu = ones({2, 2, 5, 5}, {.dtype = kBool});
  check_matches(tril(on_gpu(ones_cpu)), tril(ones_cpu), 0, 0);
  Twin m = twin({6, 4}, 301);
  check_grad([](const Tensor& t) { return triu(t, 1); }, m, 0);
  CHECK_GRADCHECK(
      [](const std::vector<Tensor>& t) {
        return through_gpu([](const std::vector<Tensor>& u) { return tril(u[0], -1); }, t);
      },
      {leaf64({2, 4, 3}, 302, Layout::Permuted)});
}
