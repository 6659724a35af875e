// tests/ops/test_view.cpp — views share storage, have the right geometry,
// and pass gradients back onto the input's shape.
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

TEST_CASE("views share storage and match index arithmetic") {
  Tensor x = arange(24, {.dtype = kFloat64});
  Tensor v = view(x, {2, 3, 4});
  CHECK(v.data_ptr() == x.data_ptr());
  Tensor t = transpose(v, 0, 2);  // (4, 3, 2)
  CHECK(t.sizes() == Shape{4, 3, 2});
  CHECK_FALSE(t.is_contiguous());
  CHECK(select(select(select(t, 0, 1), 0, 2), 0, 1).item() == 1 * 12 + 2 * 4 + 1);
  Tensor p = permute(v, {1, 2, 0});
  CHECK(p.sizes() == Shape{3, 4, 2});
  check_close(slice(x, 0, 1, 10, 3), {1, 4, 7});
  check_close(narrow(v, 2, 1, 2).sizes() == Shape{2, 3, 2} ? narrow(select(v, 0, 0), 1, 1, 2) : x, {1, 2, 5, 6, 9, 10});
  CHECK(unsqueeze(x, 0).sizes() == Shape{1, 24});
  CHECK(squeeze(unsqueeze(x, 1)).sizes() == Shape{24});
  CHECK(expand(tensor({1, 2}, {2, 1}), {2, 3}).strides() == Shape{1, 0});
  CHECK(flatten(v, 1).sizes() == Shape{2, 12});
  CHECK(view(x, {-1, 6}).sizes() == Shape{4, 6});
}

TEST_CASE("reshape copies only when it must, view refuses") {
  Tensor x = view(arange(6, {.dtype = kFloat64}), {2, 3});
  Tensor t = transpose(x, 0, 1);
  CHECK_THROWS_WITH_AS(view(t, {6}), doctest::Contains("use reshape"), Error);
  Tensor r = reshape(t, {6});
  CHECK(r.data_ptr() != x.data_ptr());
  check_close(r, {0, 3, 1, 4, 2, 5});
  CHECK(reshape(x, {3, 2}).data_ptr() == x.data_ptr());
  CHECK_THROWS_WITH_AS(view(x, {4, 2}), "view: shape [4, 2] is invalid for 6 elements", Error);
}

TEST_CASE("view gradchecks") {
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor x = leaf64({2, 3, 4}, 7, l);
    using V = const std::vector<Tensor>&;
    CHECK_GRADCHECK([](V a) { return reshape(a[0], {4, 6}); }, {x});
    CHECK_GRADCHECK([](V a) { return transpose(a[0], 0, 2); }, {x});
    CHECK_GRADCHECK([](V a) { return permute(a[0], {2, 0, 1}); }, {x});
    CHECK_GRADCHECK([](V a) { return slice(a[0], 2, 1, 4, 2); }, {x});
    CHECK_GRADCHECK([](V a) { return select(a[0], 1, -1); }, {x});
    CHECK_GRADCHECK([](V a) { return narrow(a[0], 0, 1, 1); }, {x});
    CHECK_GRADCHECK([](V a) { return unsqueeze(squeeze(unsqueeze(a[0], 1)), -1); }, {x});
    CHECK_GRADCHECK([](V a) { return expand(unsqueeze(a[0], 0), {3, 2, 3, 4}); }, {x});
    CHECK_GRADCHECK([](V a) { return flatten(contiguous(a[0])); }, {x});
    CHECK_GRADCHECK([](V a) { return to(to(a[0], kFloat32), kFloat64); }, {x}, GradcheckOptions{1e-3, 1e-3, 1e-3});
  }
}

TEST_CASE("view errors name the op and the shape") {
  Tensor x = zeros({2, 3});
  CHECK_THROWS_WITH_AS(transpose(x, 0, 2), "transpose: dim 2 out of range for a 2-d tensor", Error);
  CHECK_THROWS_WITH_AS(permute(x, {0}), "permute: got 1 dims [0] for a 2-d tensor", Error);
  CHECK_THROWS_WITH_AS(expand(x, {2, 4}), doctest::Contains("expand: cannot expand float32 [2, 3] to [2, 4]"), Error);
  CHECK_THROWS_WITH_AS(select(x, 0, 2), "select: index 2 is out of bounds for dim 0 of size 2", Error);
  CHECK_THROWS_WITH_AS(narrow(x, 1, 2, 2), doctest::Contains("narrow: range [2, 4) is out of bounds"), Error);
}
