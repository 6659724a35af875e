// tests/nn/test_decoding_cache.cpp — the growing decoding cache's room
// (nn/attention/heads.h, append_to_room): decoding without autograd, where
// the keys are copied into a room with space to spare, gives the bits of
// decoding with autograd, where they are concatenated each step; the room is
// reused in place until full; a copied cache (a fork) and a reordered one
// (beam search) never write into another cache's keys. Every family with a
// growing key cache: softmax (with grouped keys), fixed, mgk.
// Not here: each family's cached decoding against full recomputation
// (test_softmax_attention.cpp, test_mgk_attention.cpp).
#include "autograd/grad_mode.h"
#include "core/factory.h"
#include "nn/attention/attention.h"
#include "nn/attention_reference.h"
#include "ops/indexing.h"
#include "ops/shape.h"
#include "ops/view.h"

using namespace ks;
using namespace ks::testing;

namespace {

const nn::AttentionMask kCausal{true, Tensor()};

struct Family {
  const char* type;
  int64_t heads, head_dim, kv_heads;
};
const std::vector<Family> kFamilies = {{"softmax", 4, 0, 2}, {"fixed", 2, 8, 0}, {"mgk", 2, 0, 0}};

std::shared_ptr<nn::Attention> make(const Family& f) {
  nn::AttentionConfig c;
  c.type = f.type;
  c.d_model = 16;
  c.heads = f.heads;
  c.head_dim = f.head_dim;
  c.kv_heads = f.kv_heads;
  auto m = seeded_attention<nn::Attention>(c, kFloat32, 5);
  m->eval();
  return m;
}

// Decodes x (B, T, 16) as a prefill of `prefill` positions, then one at a
// time, on `cache`; the outputs concatenated along T.
Tensor decode(nn::Attention& m, const Tensor& x, int64_t prefill, nn::AttentionCache& cache) {
  std::vector<Tensor> steps{m.forward(narrow(x, 1, 0, prefill), kCausal, &cache)};
  for (int64_t t = prefill; t < x.size(1); ++t) steps.push_back(m.forward(narrow(x, 1, t, 1), kCausal, &cache));
  return cat(steps, 1);
}

void check_same_bits(const Tensor& a, const Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  const std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
  int64_t differ = 0;
  for (size_t i = 0; i < x.size(); ++i) differ += x[i] != y[i];
  CHECK(differ == 0);
}

}  // namespace

TEST_CASE("decoding into the room gives the bits of decoding by concatenation") {
  for (const Family& f : kFamilies) {
    CAPTURE(f.type);
    auto m = make(f);
    // 40 positions: the first room (2 × 3 = 16 at least) fills and is replaced twice.
    Tensor x = input({2, 40, 16}, 11, kFloat32);
    nn::AttentionCache concatenated;
    Tensor reference = decode(*m, x, 3, concatenated);  // parameters require grad: autograd records
    CHECK_FALSE(concatenated.k_room.defined());
    CHECK(concatenated.k.requires_grad());

    NoGradGuard no_grad;
    nn::AttentionCache roomy;
    check_same_bits(decode(*m, x, 3, roomy), reference);
    check_same_bits(roomy.k, concatenated.k);
    check_same_bits(roomy.v, concatenated.v);
    CHECK(roomy.length == 40);
    REQUIRE(roomy.k_room.defined());
    CHECK(roomy.k_room.size(-2) >= 40);
  }
}

TEST_CASE("the room is written in place until it is full") {
  for (const Family& f : kFamilies) {
    CAPTURE(f.type);
    auto m = make(f);
    NoGradGuard no_grad;
    Tensor x = input({1, 20, 16}, 12, kFloat32);
    nn::AttentionCache cache;
    m->forward(narrow(x, 1, 0, 4), kCausal, &cache);  // room of 16 positions
    const void* keys = cache.k.data_ptr();
    const void* values = cache.v.data_ptr();
    for (int64_t t = 4; t < 16; ++t) {
      m->forward(narrow(x, 1, t, 1), kCausal, &cache);
      CHECK(cache.k.data_ptr() == keys);
      CHECK(cache.v.data_ptr() == values);
    }
    m->forward(narrow(x, 1, 16, 1), kCausal, &cache);  // the 17th position moves to a new room
    CHECK(cache.k.data_ptr() != keys);
    CHECK(cache.length == 17);
  }
}

TEST_CASE("a copied cache and a reordered cache never write into another's keys") {
  for (const Family& f : kFamilies) {
    CAPTURE(f.type);
    auto m = make(f);
    NoGradGuard no_grad;
    Tensor x = input({2, 6, 16}, 13, kFloat32), y = input({2, 6, 16}, 14, kFloat32);
    // x and y share their first 4 positions; a fork after them continues each.
    Tensor xy = cat({narrow(x, 1, 0, 4), narrow(y, 1, 4, 2)}, 1);
    nn::AttentionCache fresh_x, fresh_y;
    const Tensor want_x = narrow(decode(*m, x, 4, fresh_x), 1, 4, 2);
    const Tensor want_y = narrow(decode(*m, xy, 4, fresh_y), 1, 4, 2);

    nn::AttentionCache original;
    m->forward(narrow(x, 1, 0, 4), kCausal, &original);
    nn::AttentionCache fork = original;  // shares the room
    std::vector<Tensor> got_x, got_y;
    for (int64_t t = 4; t < 6; ++t) {
      got_x.push_back(m->forward(narrow(x, 1, t, 1), kCausal, &original));
      got_y.push_back(m->forward(narrow(xy, 1, t, 1), kCausal, &fork));
    }
    check_same_bits(cat(got_x, 1), want_x);
    check_same_bits(cat(got_y, 1), want_y);
    check_same_bits(original.k, fresh_x.k);
    check_same_bits(fork.k, fresh_y.k);

    // Beam search's reorder (models/beam_search.cpp) swaps the rows.
    nn::AttentionCache swapped;
    m->forward(narrow(x, 1, 0, 4), kCausal, &swapped);
    const Tensor rows = from_vector(std::vector<int64_t>{1, 0}, {2});
    swapped.k = index_select(swapped.k, 0, rows);
    swapped.v = index_select(swapped.v, 0, rows);
    Tensor x_swapped = index_select(x, 0, rows);
    std::vector<Tensor> got;
    for (int64_t t = 4; t < 6; ++t) got.push_back(m->forward(narrow(x_swapped, 1, t, 1), kCausal, &swapped));
    check_same_bits(cat(got, 1), index_select(want_x, 0, rows));
  }
}
