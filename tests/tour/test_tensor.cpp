// tests/tour/test_tensor.cpp — the snippets of docs/tour/01_tensor.md (the
// tensor: storage, strides, views, the version counter), compiled and run.
// Each region between "[tour NAME begin]" and "[tour NAME end]" is quoted
// word for word by the chapter; tests/tour/check_tour.cpp checks that it is.
// Not the tensor's own tests (tests/core/): a learner's small steps.
#include "support/testing.h"

using namespace ks;

TEST_CASE("a tensor is sizes, strides and an offset over shared storage") {
  // [tour strides begin]
  Tensor x = arange(6, {.dtype = kFloat32});  // (6,): 0 1 2 3 4 5
  Tensor m = view(x, {2, 3});                 // (2, 3): no copy, a new window
  CHECK(m.strides() == Shape{3, 1});          // row-major: next row = 3 elements on
  CHECK(m.impl()->storage == x.impl()->storage);

  Tensor t = transpose(m, 0, 1);  // (3, 2): the strides swap, the bytes stay
  CHECK(t.strides() == Shape{1, 3});
  CHECK(!t.is_contiguous());
  // element (i, j) lives at offset + i*stride0 + j*stride1
  CHECK(t.to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
  // [tour strides end]
}

TEST_CASE("slicing moves the offset, expand sets a stride to zero") {
  // [tour views begin]
  Tensor m = view(arange(12, {.dtype = kFloat32}), {3, 4});  // (3, 4)
  Tensor row = select(m, 0, 1);                              // (4,): the second row
  CHECK(row.storage_offset() == 4);
  Tensor col = narrow(m, 1, 2, 1);  // (3, 1): the third column
  CHECK(col.strides() == Shape{4, 1});
  Tensor wide = expand(col, {3, 5});  // (3, 5): one element seen five times
  CHECK(wide.strides() == Shape{4, 0});

  fill_(row, 7.0);  // writing through a view writes the storage
  CHECK(m.to_vector<float>()[5] == 7.0f);
  // [tour views end]
}

TEST_CASE("every view shares one version counter") {
  // [tour version begin]
  Tensor x = zeros({2, 2});
  Tensor v = transpose(x, 0, 1);
  const uint64_t before = x.version();
  mul_(v, 2.0);                      // in place, through the view
  CHECK(x.version() == before + 1);  // autograd will see that x changed
  // [tour version end]
}
