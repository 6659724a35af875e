// core/factory.h — making tensors: empty/zeros/ones/full/arange, from C++
// values, and random tensors from the seeded Philox stream.
//
// Options use designated initialisers:
//   Tensor w = ks::randn({64, 32}, {.dtype = ks::kFloat64, .requires_grad = true});
// Every factory returns a new contiguous leaf tensor.
#pragma once

#include <initializer_list>
#include <vector>

#include "core/copy.h"
#include "core/random.h"
#include "core/tensor.h"

namespace ks {

struct TensorOptions {
  DType dtype = kFloat32;
  Device device = Device::cpu();
  bool requires_grad = false;
};

Tensor empty(const Shape& shape, TensorOptions opts = {});
Tensor zeros(const Shape& shape, TensorOptions opts = {});
Tensor ones(const Shape& shape, TensorOptions opts = {});
Tensor full(const Shape& shape, double value, TensorOptions opts = {});
Tensor scalar_tensor(double value, TensorOptions opts = {});  // 0-dim
// [start, end) in steps of `step`, like Python's range but for any numeric dtype.
Tensor arange(double start, double end, double step = 1.0, TensorOptions opts = {});
inline Tensor arange(double end, TensorOptions opts = {}) { return arange(0, end, 1, opts); }

// Same shape, dtype and device as t (a new leaf, no requires_grad unless asked).
Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, double value);

// From values in row-major order; shape defaults to 1-D [values.size()].
// The dtype is that of T; the values are copied.
template <class T> Tensor from_vector(const std::vector<T>& values, Shape shape = {}, Device device = Device::cpu());
// From a literal list, converted to opts.dtype: ks::tensor({1, 2, 3, 4}, {2, 2}).
Tensor tensor(std::initializer_list<double> values, Shape shape = {}, TensorOptions opts = {});

// Random tensors. `gen` defaults to the global generator (ks::manual_seed).
Tensor rand(const Shape& shape, TensorOptions opts = {}, Generator* gen = nullptr);   // U[0, 1)
Tensor randn(const Shape& shape, TensorOptions opts = {}, Generator* gen = nullptr);  // N(0, 1)
// Integers uniform in [low, high); opts.dtype defaults to float32, so pass kInt64 for indices.
Tensor randint(int64_t low, int64_t high, const Shape& shape, TensorOptions opts = {}, Generator* gen = nullptr);
// 1 with probability p, else 0.
Tensor bernoulli(const Shape& shape, double p, TensorOptions opts = {}, Generator* gen = nullptr);

// In-place random fills (for initialisers); bump t's version.
void uniform_(const Tensor& t, double low, double high, Generator* gen = nullptr);
void normal_(const Tensor& t, double mean, double stddev, Generator* gen = nullptr);
void bernoulli_(const Tensor& t, double p, Generator* gen = nullptr);

// --- kernel table for random fills (t contiguous) ---
enum class RandomKind { Uniform, Normal, Bernoulli, IntRange };
struct RandomSpec {
  RandomKind kind;
  double a, b;  // uniform [a, b); normal (mean a, std b); bernoulli p = a; ints [a, b)
  uint64_t seed;
  uint64_t first_block;  // first Philox counter reserved for this draw
};
// Element i uses Philox block first_block + i / per_block (per_block: 4 for
// float32 uniforms/bernoulli/ints, 2 for float64 uniforms and all normals).
using RandomKernel = void(const Tensor& t, const RandomSpec& spec);
extern KernelTable<RandomKernel> random_kernel;
int64_t random_values_per_block(RandomKind kind, DType dtype);

// ----------------------------------------------------------------------------
template <class T> Tensor from_vector(const std::vector<T>& values, Shape shape, Device device) {
  if (shape.empty() && values.size() != 1) shape = {int64_t(values.size())};
  KS_CHECK(numel_of(shape) == int64_t(values.size()), "from_vector: ", values.size(), " values do not fill shape ",
           shape);
  Tensor cpu = Tensor::empty(shape, dtype_of<T>(), Device::cpu());
  T* p = cpu.data<T>();
  for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  return device.is_cpu() ? cpu : to_raw(cpu, device, cpu.dtype());
}

}  // namespace ks
