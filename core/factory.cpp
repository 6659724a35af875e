// core/factory.cpp — tensor factories and the CPU random kernel (its values
// come from random_values.h, shared with the CUDA kernel).
#include "core/factory.h"

#include <cmath>

#include "core/parallel.h"
#include "core/random_values.h"

namespace ks {

constinit KernelTable<RandomKernel> random_kernel("random");

namespace {

Tensor finish(Tensor t, const TensorOptions& opts) {
  if (opts.requires_grad) t.set_requires_grad(true);
  return t;
}

void random_cpu(const Tensor& t, const RandomSpec& s) {
  const int per = int(random_values_per_block(s.kind, t.dtype()));
  const int64_t n = t.numel();
  const int64_t blocks = (n + per - 1) / per;
  dispatch_numeric(t.dtype(), "random", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = static_cast<T*>(t.data_ptr());
    parallel_for(0, blocks, 4096, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        double vals[4];
        random_block_values(s, per, uint64_t(b), vals);
        for (int64_t k = 0; k < per; ++k) {
          int64_t i = b * per + k;
          if (i < n) out[i] = static_cast<T>(vals[k]);
        }
      }
    });
  });
}
KS_REGISTER_KERNEL(random_kernel, CPU, random_cpu);

void random_fill(const Tensor& t, RandomKind kind, double a, double b, Generator* gen) {
  // A 16-bit tensor gets the float32 values rounded: what filling a float32
  // tensor and casting it gives, the generator's stream advanced alike (a
  // model built in bf16, nn::ParameterDTypeScope, starts where one built in
  // float32 and cast does).
  if (is_16bit(t.dtype())) {
    Tensor wide = Tensor::empty(t.sizes(), kFloat32, t.device());
    random_fill(wide, kind, a, b, gen);
    copy_(t, wide);
    return;
  }
  Generator& g = gen ? *gen : default_generator();
  const int64_t per = random_values_per_block(kind, t.dtype());
  RandomSpec spec{kind, a, b, g.seed(), g.reserve(uint64_t((t.numel() + per - 1) / per))};
  if (t.numel() == 0) return;
  if (t.is_contiguous()) {
    random_kernel(t.device(), t, spec);
    t.bump_version();
  } else {
    Tensor tmp = Tensor::empty(t.sizes(), t.dtype(), t.device());
    random_kernel(t.device(), tmp, spec);
    copy_(t, tmp);
  }
}

}  // namespace

int64_t random_values_per_block(RandomKind kind, DType dtype) {
  if (kind == RandomKind::Normal) return 2;
  if (kind == RandomKind::Uniform && dtype == kFloat64) return 2;
  return 4;
}

Tensor empty(const Shape& shape, TensorOptions opts) {
  return finish(Tensor::empty(shape, opts.dtype, opts.device), opts);
}
Tensor full(const Shape& shape, double value, TensorOptions opts) {
  Tensor t = Tensor::empty(shape, opts.dtype, opts.device);
  fill_(t, value);
  return finish(t, opts);
}
Tensor zeros(const Shape& shape, TensorOptions opts) { return full(shape, 0.0, opts); }
Tensor ones(const Shape& shape, TensorOptions opts) { return full(shape, 1.0, opts); }
Tensor scalar_tensor(double value, TensorOptions opts) { return full({}, value, opts); }

Tensor arange(double start, double end, double step, TensorOptions opts) {
  KS_CHECK(step != 0, "arange: step must be nonzero");
  KS_CHECK(std::isfinite(start) && std::isfinite(end) && std::isfinite(step), "arange: bounds must be finite");
  double count = std::ceil((end - start) / step);
  int64_t n = count > 0 ? int64_t(count) : 0;
  Tensor cpu = Tensor::empty({n}, opts.dtype, Device::cpu());
  dispatch_numeric16(opts.dtype, "arange", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = cpu.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      const double x = start + double(i) * step;
      if constexpr (is_16bit_v<T>)
        p[i] = T(float(x));  // as PyTorch: computed wider, rounded once more to 16 bits
      else
        p[i] = static_cast<T>(x);
    }
  });
  return finish(to_raw(cpu, opts.device, opts.dtype), opts);
}

Tensor empty_like(const Tensor& t) { return Tensor::empty(t.sizes(), t.dtype(), t.device()); }
Tensor zeros_like(const Tensor& t) { return zeros(t.sizes(), {.dtype = t.dtype(), .device = t.device()}); }
Tensor ones_like(const Tensor& t) { return ones(t.sizes(), {.dtype = t.dtype(), .device = t.device()}); }
Tensor full_like(const Tensor& t, double v) { return full(t.sizes(), v, {.dtype = t.dtype(), .device = t.device()}); }

Tensor tensor(std::initializer_list<double> values, Shape shape, TensorOptions opts) {
  Tensor cpu = from_vector(std::vector<double>(values), shape);
  return finish(to_raw(cpu, opts.device, opts.dtype), opts);
}

Tensor rand(const Shape& shape, TensorOptions opts, Generator* gen) {
  Tensor t = Tensor::empty(shape, opts.dtype, opts.device);
  uniform_(t, 0.0, 1.0, gen);
  return finish(t, opts);
}
Tensor randn(const Shape& shape, TensorOptions opts, Generator* gen) {
  Tensor t = Tensor::empty(shape, opts.dtype, opts.device);
  normal_(t, 0.0, 1.0, gen);
  return finish(t, opts);
}
Tensor randint(int64_t low, int64_t high, const Shape& shape, TensorOptions opts, Generator* gen) {
  KS_CHECK(high > low, "randint: need low < high, got [", low, ", ", high, ")");
  Tensor t = Tensor::empty(shape, opts.dtype, opts.device);
  random_fill(t, RandomKind::IntRange, double(low), double(high), gen);
  return finish(t, opts);
}
Tensor bernoulli(const Shape& shape, double p, TensorOptions opts, Generator* gen) {
  Tensor t = Tensor::empty(shape, opts.dtype, opts.device);
  bernoulli_(t, p, gen);
  return finish(t, opts);
}

void uniform_(const Tensor& t, double low, double high, Generator* gen) {
  KS_CHECK(is_floating(t.dtype()), "uniform_: needs a floating tensor, got ", describe(t));
  random_fill(t, RandomKind::Uniform, low, high, gen);
}
void normal_(const Tensor& t, double mean, double stddev, Generator* gen) {
  KS_CHECK(is_floating(t.dtype()), "normal_: needs a floating tensor, got ", describe(t));
  KS_CHECK(stddev >= 0, "normal_: stddev must be >= 0, got ", stddev);
  random_fill(t, RandomKind::Normal, mean, stddev, gen);
}
void bernoulli_(const Tensor& t, double p, Generator* gen) {
  KS_CHECK(p >= 0 && p <= 1, "bernoulli: p must be in [0, 1], got ", p);
  random_fill(t, RandomKind::Bernoulli, p, 0, gen);
}

}  // namespace ks
