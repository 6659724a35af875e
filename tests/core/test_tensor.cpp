// tests/core/test_tensor.cpp — Tensor metadata, aliasing, factories, printing.
#include <doctest/doctest.h>

#include "core/factory.h"

using namespace ks;

TEST_CASE("empty/zeros/ones/full have the right metadata and values") {
  Tensor t = zeros({2, 3});
  CHECK(t.dim() == 2);
  CHECK(t.numel() == 6);
  CHECK(t.sizes() == Shape{2, 3});
  CHECK(t.strides() == Shape{3, 1});
  CHECK(t.dtype() == kFloat32);
  CHECK(t.is_contiguous());
  for (float v : t.to_vector<float>()) CHECK(v == 0.0f);
  Tensor f = full({4}, 2.5, {.dtype = kFloat64});
  CHECK(f.to_vector<double>() == std::vector<double>{2.5, 2.5, 2.5, 2.5});
  CHECK(ones({}).item() == 1.0);
  CHECK(ones({}).dim() == 0);
  CHECK_THROWS_WITH_AS(empty({2, -1}), "empty: negative size in shape [2, -1]", Error);
}

TEST_CASE("arange and from_vector") {
  CHECK(arange(5, {.dtype = kInt64}).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK(arange(1, 2, 0.25, {.dtype = kFloat64}).to_vector<double>() == std::vector<double>{1, 1.25, 1.5, 1.75});
  // 16-bit: each value rounded once from float; 257 is not a bfloat16 (8 bits of mantissa), so it rounds to even.
  CHECK(arange(255, 259, 1, {.dtype = kBFloat16}).to_vector<double>() == std::vector<double>{255, 256, 256, 258});
  CHECK(arange(255, 259, 1, {.dtype = kFloat16}).to_vector<double>() == std::vector<double>{255, 256, 257, 258});
  Tensor v = from_vector(std::vector<int32_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(v.dtype() == kInt32);
  CHECK(v.sizes() == Shape{2, 3});
  CHECK_THROWS_WITH_AS(from_vector(std::vector<float>{1, 2, 3}, {2, 2}),
                       "from_vector: 3 values do not fill shape [2, 2]", Error);
  Tensor l = tensor({1, 2, 3, 4}, {2, 2}, {.dtype = kInt64});
  CHECK(l.to_vector<int64_t>() == std::vector<int64_t>{1, 2, 3, 4});
}

TEST_CASE("alias shares storage and version counter") {
  Tensor t = arange(6, {.dtype = kFloat64});
  Tensor v = t.alias({2, 3}, {1, 2}, 0);  // a transposed-looking view
  CHECK_FALSE(v.is_contiguous());
  CHECK(v.to_vector<double>() == std::vector<double>{0, 2, 4, 1, 3, 5});
  uint64_t before = t.version();
  fill_(v, 7);
  CHECK(t.version() == before + 1);
  CHECK(t.to_vector<double>() == std::vector<double>(6, 7.0));
}

TEST_CASE("contiguous_raw and copy_ with broadcasting and dtype conversion") {
  Tensor t = arange(6, {.dtype = kFloat32});
  Tensor tt = t.alias({3, 2}, {1, 3}, 0);
  Tensor c = contiguous_raw(tt);
  CHECK(c.is_contiguous());
  CHECK(c.to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
  Tensor dst = zeros({2, 3}, {.dtype = kFloat64});
  copy_(dst, tensor({1, 2, 3}, {3}, {.dtype = kInt64}));
  CHECK(dst.to_vector<double>() == std::vector<double>{1, 2, 3, 1, 2, 3});
  CHECK_THROWS_WITH_AS(copy_(dst, zeros({2})), "copy_: cannot broadcast float32 [2] to [2, 3]", Error);
}

TEST_CASE("non-overlap detection") {
  Tensor t = zeros({4});
  CHECK(t.is_non_overlapping());
  CHECK_FALSE(t.alias({3, 4}, {0, 1}, 0).is_non_overlapping());
  CHECK(t.alias({2, 2}, {1, 2}, 0).is_non_overlapping());
}

TEST_CASE("item and size errors name the problem") {
  CHECK_THROWS_WITH_AS(zeros({2}).item(), "item: expected a tensor with one element, got float32 [2]", Error);
  CHECK_THROWS_WITH_AS(zeros({2}).size(3), "size: dim 3 out of range for a 1-d tensor", Error);
  CHECK_THROWS_WITH_AS(zeros({2}).data<double>(), "data<float64>: tensor has dtype float32", Error);
  CHECK_THROWS_AS(Tensor().sizes(), Error);
}

TEST_CASE("printing follows PyTorch's format") {
  CHECK(tensor({1, 2.5, -3, 4}, {2, 2}).to_string() == "tensor([[ 1.0000,  2.5000],\n        [-3.0000,  4.0000]])");
  CHECK(tensor({1, 2}, {2}, {.dtype = kInt64}).to_string() == "tensor([1, 2], dtype=int64)");
  CHECK(scalar_tensor(3, {.dtype = kFloat64, .requires_grad = true}).to_string() ==
        "tensor(3.0000, dtype=float64, requires_grad=true)");
  std::string big = zeros({2000}).to_string();
  CHECK(big.find("...") != std::string::npos);
}

TEST_CASE("requires_grad only on floating leaves") {
  Tensor t = zeros({2});
  t.set_requires_grad(true);
  CHECK(t.requires_grad());
  CHECK(t.is_leaf());
  CHECK_THROWS_WITH_AS(zeros({2}, {.dtype = kInt64}).set_requires_grad(true),
                       "set_requires_grad: only floating tensors can require grad, got int64 [2]", Error);
}

TEST_CASE("dtype helpers") {
  CHECK(parse_dtype("float64") == kFloat64);
  CHECK_THROWS_AS(parse_dtype("float8"), Error);
  CHECK(float(BFloat16(1.5f)) == 1.5f);
  CHECK(float(Float16(1.5f)) == 1.5f);
  CHECK(float(Float16(65504.0f)) == 65504.0f);
  CHECK(float(Float16(1e-7f)) == doctest::Approx(1.19209e-07).epsilon(0.01));  // subnormal
  Tensor h = to_raw(tensor({0.1, -2, 3}), Device::cpu(), kFloat16);
  CHECK(h.to_vector<float>()[1] == -2.0f);
  CHECK(parse_device("cuda:1") == Device::cuda(1));
  CHECK_THROWS_AS(parse_device("tpu"), Error);
}

TEST_CASE("empty tensors count as contiguous") {
  CHECK(empty({4, 0, 2}).is_contiguous());
  CHECK(zeros({0}).is_contiguous());
}

TEST_CASE("sizes from files cannot overflow: numel and byte counts are checked") {
  // 2^40 * 2^40 wraps to 0 in 64 bits, which would "fit" an empty buffer.
  CHECK_THROWS_WITH_AS(numel_of({int64_t(1) << 40, int64_t(1) << 40}),
                       "numel: shape [1099511627776, 1099511627776] has more than 2^63 elements", Error);
  CHECK_THROWS_WITH_AS(numel_of({2, -3}), "numel: negative size in shape [2, -3]", Error);
  CHECK(numel_of({0, int64_t(1) << 40, int64_t(1) << 40}) == 0);
  CHECK(numel_of({int64_t(1) << 40, int64_t(1) << 40, 0}) == 0);  // empty, whatever the other sizes
  CHECK_THROWS_WITH_AS(Tensor::empty({int64_t(1) << 61, 2}, kFloat32, Device::cpu()),
                       "empty: shape [2305843009213693952, 2] of 4-byte elements needs more than 2^64 bytes", Error);
}
