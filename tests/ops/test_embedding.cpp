// tests/ops/test_embedding.cpp — embedding: gather against a loop reference
// (strided weight, any index shape), scatter-add backward with repeated
// indices and padding_idx, gradchecks over layouts, determinism, errors,
// bfloat16/float16 weights.
#include "ops/embedding.h"
#include "ops/indexing.h"
#include "ops/reduce.h"
#include "ops/view.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

namespace {
using V = const std::vector<Tensor>&;

Tensor idx(std::vector<int64_t> v, Shape shape) { return from_vector(v, shape); }
}  // namespace

TEST_CASE("embedding gathers rows for any index shape and weight layout") {
  Tensor w = view(arange(15, {.dtype = kFloat64}), {5, 3});  // row v = [3v, 3v+1, 3v+2]
  Tensor ix = idx({4, 0, 4, 2, 1, 3}, {2, 3});
  Tensor y = embedding(w, ix);
  CHECK(y.sizes() == Shape{2, 3, 3});
  std::vector<double> want;
  for (int64_t v : ix.to_vector<int64_t>())
    for (int64_t d = 0; d < 3; ++d) want.push_back(double(3 * v + d));
  check_close(y, want);
  // A transposed (column-major) weight, non-contiguous indices, a 0-d index.
  Tensor wt = transpose(contiguous(transpose(w, 0, 1)), 0, 1);
  CHECK_FALSE(wt.is_contiguous());
  check_close(embedding(wt, ix), want);
  check_close(embedding(w, transpose(ix, 0, 1)), embedding(w, contiguous(transpose(ix, 0, 1))));
  check_close(embedding(w, idx({2}, {})), {6, 7, 8});
  CHECK(embedding(w, idx({}, {0})).sizes() == Shape{0, 3});
  // Any dtype gathers.
  CHECK(embedding(to(w, kInt64), ix).to_vector<int64_t>()[0] == 12);
}

TEST_CASE("embedding backward accumulates repeated indices and zeroes padding_idx") {
  Tensor ix = idx({1, 3, 1, 4, 1, 0}, {2, 3});
  Tensor g = view(arange(1, 19, 1, {.dtype = kFloat64}), {2, 3, 3});
  std::vector<double> gv = g.to_vector<double>();
  for (int64_t pad : {-1, 1, 2}) {
    CAPTURE(pad);
    Tensor w = leaf64({5, 3}, 61);
    backward(embedding(w, ix, pad), g);
    std::vector<double> want(15, 0.0);
    std::vector<int64_t> iv = ix.to_vector<int64_t>();
    for (size_t p = 0; p < iv.size(); ++p)
      for (size_t d = 0; d < 3; ++d)
        if (iv[p] != pad) want[size_t(iv[p]) * 3 + d] += gv[p * 3 + d];
    check_close(w.grad(), want);
  }
  // The forward still reads the padding row (as PyTorch does); only its gradient is zero.
  Tensor w = leaf64({5, 3}, 62);
  check_close(embedding(w, idx({1}, {1}), 1), select(w, 0, 1).to_vector<double>());
}

TEST_CASE("embedding gradchecks over weight layouts") {
  Tensor ix = idx({2, 0, 2, 4, 4, 4}, {3, 2});
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor w = leaf64({5, 4}, 63, l);
    CHECK_GRADCHECK([ix](V a) { return embedding(a[0], ix); }, {w});
    CHECK_GRADCHECK([ix](V a) { return embedding(a[0], ix, 3); }, {w});  // 3 unused: nothing to zero
    CHECK_GRADCHECK([ix](V a) { return mul(embedding(a[0], ix), a[1]); }, {w, leaf64({4}, 64, l)});
  }
  // An expanded weight (stride 0 between rows).
  Tensor row = leaf64({1, 4}, 65);
  CHECK_GRADCHECK([ix](V a) { return embedding(expand(a[0], {5, 4}), ix); }, {row});
  {}
}

TEST_CASE("embedding backward does not depend on the thread count") {
  Generator gen(66);
  Tensor ix = randint(0, 50, {4000}, {.dtype = kInt64}, &gen);
  Tensor g = randn({4000, 32}, {}, &gen);
  auto grad = [&](int threads) {
    set_num_threads(threads);
    Tensor w = zeros({50, 32}, {.requires_grad = true});
    backward(embedding(w, ix, 7), g);
    return w.grad().to_vector<float>();
  };
  const int saved = num_threads();
  auto one = grad(1), many = grad(std::max(2, saved));
  set_num_threads(saved);
  CHECK(one == many);
}

TEST_CASE("embedding errors name the bad index, V and dtypes") {
  Tensor w = zeros({5, 3});
  CHECK_THROWS_WITH_AS(embedding(w, idx({1, 7}, {2})),
                       "embedding: index 7 is out of range for 5 embeddings (weight float32 [5, 3])", Error);
  CHECK_THROWS_WITH_AS(embedding(w, idx({-1}, {1})), doctest::Contains("index -1 is out of range for 5 embeddings"),
                       Error);
  CHECK_THROWS_WITH_AS(embedding(w, zeros({2})), "embedding: indices must be int64, got float32 [2]", Error);
  CHECK_THROWS_WITH_AS(embedding(zeros({5}), idx({1}, {1})),
                       "embedding: weight must be 2-D (num_embeddings, embedding_dim), got float32 [5]", Error);
  CHECK_THROWS_WITH_AS(embedding(w, idx({1}, {1}), 5),
                       "embedding: padding_idx 5 is out of range for 5 embeddings (use -1 for none)", Error);
}

TEST_CASE("embedding in bfloat16 and float16: rows copied, gradients summed in double and rounded once") {
  for (DType d : {kBFloat16, kFloat16}) {
    CAPTURE(d);
    Tensor w = detach(to(leaf64({10, 6}, 31), d)).set_requires_grad(true);
    Tensor ids = tensor({3, 0, 3, 9}, {4}, {.dtype = kInt64});
    Tensor out = embedding(w, ids);
    CHECK(out.dtype() == d);
    CHECK(out.to_vector<float>() == to(index_select(to(detach(w), kFloat32), 0, ids), d).to_vector<float>());
    // 3000 lookups of row 0, each with gradient 1: a 16-bit running sum would
    // stop at 256 (bfloat16) or 2048 (float16); summed in double it is 3000, rounded once.
    Tensor many = zeros({3000}, {.dtype = kInt64});
    backward(sum(embedding(w, many)));
    CHECK(w.grad().dtype() == d);
    CHECK(to(w.grad(), kFloat64).to_vector<double>()[0] == double(to(tensor({3000.0}, {1}), d).item()));
  }
}
