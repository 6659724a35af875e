// ops/shape.cpp — checks, output shapes and backward formulas of the block
// ops. Everything but triu/tril is pure data movement, done by core's copy_
// and fill_ through views of the output (so each backend's copy kernel does
// the work); triu/tril call triangle_kernel (cpu/shape.cpp). Every backward is
// a view or one of these ops, so all support higher-order gradients.
#include "ops/shape.h"

#include <algorithm>

#include "autograd/node.h"
#include "core/copy.h"
#include "core/factory.h"
#include "ops/reduce.h"
#include "ops/view.h"

namespace ks {

constinit KernelTable<TriangleKernel> triangle_kernel("triangle");

namespace {

// PyTorch's legacy rule: cat ignores tensors of shape [0].
bool is_skipped_in_cat(const Tensor& t) { return t.dim() == 1 && t.numel() == 0; }

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  KS_CHECK(!tensors.empty(), "cat: expected a non-empty list of tensors");
  // The reference is the first tensor not skipped (or tensor 0 if all are [0]).
  size_t ref = 0;
  bool found = false;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    KS_CHECK(t.defined(), "cat: tensor ", i, " is undefined");
    KS_CHECK(t.dim() > 0, "cat: tensor ", i, " is zero-dimensional and cannot be concatenated");
    KS_CHECK(t.dtype() == tensors[0].dtype() && t.device() == tensors[0].device(),
             "cat: expected all tensors to have the same dtype and device, but tensor 0 is ", describe(tensors[0]),
             " and tensor ", i, " is ", describe(t));
    if (!found && !is_skipped_in_cat(t)) {
      ref = i;
      found = true;
    }
  }
  const Tensor& r = tensors[ref];
  const int64_t d = wrap_dim(dim, r.dim(), "cat");
  std::vector<bool> skip(tensors.size(), false);
  Shape shape = r.sizes();
  shape[size_t(d)] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    skip[i] = found && is_skipped_in_cat(t);
    if (skip[i]) continue;
    KS_CHECK(t.dim() == r.dim(), "cat: tensors must have the same number of dims, but tensor ", ref, " is ",
             describe(r), " and tensor ", i, " is ", describe(t));
    for (int64_t e = 0; e < r.dim(); ++e)
      KS_CHECK(e == d || t.size(e) == r.size(e), "cat: sizes must match except in dim ", d, ", but tensor ", ref,
               " is ", describe(r), " and tensor ", i, " is ", describe(t), " (dim ", e, ")");
    shape[size_t(d)] += t.size(d);
  }
  Tensor out = Tensor::empty(shape, r.dtype(), r.device());
  std::vector<int64_t> starts(tensors.size(), 0), lengths(tensors.size(), 0);
  int64_t at = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (skip[i]) continue;
    starts[i] = at;
    lengths[i] = tensors[i].size(d);
    copy_(narrow(out, d, at, lengths[i]), tensors[i]);
    at += lengths[i];
  }
  if (needs_grad(tensors))
    record(
        "CatBackward", tensors, {out},
        [skip, starts, lengths, d](const std::vector<Tensor>& g) {
          std::vector<Tensor> grads;
          for (size_t i = 0; i < skip.size(); ++i)
            grads.push_back(skip[i] ? Tensor::empty({0}, g[0].dtype(), g[0].device())
                                    : narrow(g[0], d, starts[i], lengths[i]));
          return grads;
        },
        HigherOrder::Supported);
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  KS_CHECK(!tensors.empty(), "stack: expected a non-empty list of tensors");
  const Tensor& t0 = tensors[0];
  for (size_t i = 0; i < tensors.size(); ++i) {
    KS_CHECK(tensors[i].defined(), "stack: tensor ", i, " is undefined");
    KS_CHECK(tensors[i].sizes() == t0.sizes() && tensors[i].dtype() == t0.dtype() && tensors[i].device() == t0.device(),
             "stack: expected all tensors to have the same shape, dtype and device, but tensor 0 is ", describe(t0),
             " and tensor ", i, " is ", describe(tensors[i]));
  }
  const int64_t d = wrap_dim(dim, t0.dim() + 1, "stack");
  std::vector<Tensor> pieces;
  pieces.reserve(tensors.size());
  for (const Tensor& t : tensors) pieces.push_back(unsqueeze(t, d));
  return cat(pieces, d);
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  KS_CHECK(x.defined() && x.dim() > 0, "split: expected a tensor with at least one dim, got ", describe(x));
  const int64_t d = wrap_dim(dim, x.dim(), "split");
  const int64_t n = x.size(d);
  KS_CHECK(split_size > 0 || (split_size == 0 && n == 0), "split: split_size must be positive, got ", split_size,
           " for dim ", d, " of ", describe(x));
  if (n == 0) return {narrow(x, d, 0, 0)};
  std::vector<Tensor> out;
  for (int64_t start = 0; start < n; start += split_size)
    out.push_back(narrow(x, d, start, std::min(split_size, n - start)));
  return out;
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  KS_CHECK(x.defined() && x.dim() > 0, "split: expected a tensor with at least one dim, got ", describe(x));
  const int64_t d = wrap_dim(dim, x.dim(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    KS_CHECK(s >= 0, "split: sizes must be non-negative, got ", sizes);
    total += s;
  }
  KS_CHECK(total == x.size(d), "split: sizes ", sizes, " add up to ", total, " but dim ", d, " of ", describe(x),
           " has size ", x.size(d));
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(narrow(x, d, start, s));
    start += s;
  }
  return out;
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  KS_CHECK(chunks > 0, "chunk: chunks must be positive, got ", chunks);
  KS_CHECK(x.defined() && x.dim() > 0, "chunk: expected a tensor with at least one dim, got ", describe(x));
  const int64_t d = wrap_dim(dim, x.dim(), "chunk");
  const int64_t n = x.size(d);
  // An empty dim still gives `chunks` (empty) pieces, as in PyTorch.
  if (n == 0) return split(x, std::vector<int64_t>(size_t(chunks), 0), d);
  return split(x, (n + chunks - 1) / chunks, d);
}

Tensor repeat(const Tensor& x, const std::vector<int64_t>& repeats) {
  KS_CHECK(x.defined(), "repeat: undefined input");
  const int64_t nd = int64_t(repeats.size()), lead = nd - x.dim();
  KS_CHECK(lead >= 0, "repeat: got ", nd, " repeats ", repeats, " for ", describe(x), "; need at least one per dim");
  // View x as (r0, s0, r1, s1, ...) with stride 0 along every r, and copy it
  // into the output seen with the same interleaved (contiguous) shape.
  Shape tiled, tiled_src_strides, out_shape, kept;
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t r = repeats[size_t(i)];
    KS_CHECK(r >= 0, "repeat: repeats must be non-negative, got ", repeats);
    const int64_t s = i < lead ? 1 : x.size(i - lead);
    const int64_t st = i < lead ? 0 : x.stride(i - lead);
    tiled.insert(tiled.end(), {r, s});
    tiled_src_strides.insert(tiled_src_strides.end(), {0, st});
    out_shape.push_back(r * s);
  }
  Tensor out = Tensor::empty(out_shape, x.dtype(), x.device());
  copy_(out.alias(tiled, contiguous_strides(tiled), 0), x.alias(tiled, tiled_src_strides, x.storage_offset()));
  if (needs_grad({x}))
    record(
        "RepeatBackward", {x}, {out},
        [tiled, in = x.sizes()](const std::vector<Tensor>& g) {
          if (tiled.empty()) return g;  // a 0-d x with no repeats: sum({}) would mean every dim
          Dims tile_dims;
          for (size_t i = 0; i < tiled.size(); i += 2) tile_dims.push_back(int64_t(i));
          return std::vector<Tensor>{reshape(sum(reshape(g[0], tiled), tile_dims), in)};
        },
        HigherOrder::Supported);
  return out;
}

Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, double value) {
  KS_CHECK(x.defined(), "pad: undefined input");
  KS_CHECK(pads.size() % 2 == 0 && int64_t(pads.size()) <= 2 * x.dim(),
           "pad: expected an even number of pads, at most 2 per dim (", 2 * x.dim(), " for ", describe(x), "), got ",
           pads.size(), ": ", pads);
  struct Span {  // along one padded dim: out[a, b) holds x[src, src + b - a)
    int64_t dim, a, b, src;
  };
  std::vector<Span> spans;
  Shape shape = x.sizes();
  for (size_t i = 0; i < pads.size() / 2; ++i) {
    const int64_t d = x.dim() - 1 - int64_t(i), n = x.size(d);
    const int64_t lo = pads[2 * i], hi = pads[2 * i + 1], m = n + lo + hi;
    KS_CHECK(m >= 0, "pad: pads (", lo, ", ", hi, ") on dim ", d, " of ", describe(x), " give a negative size ", m);
    shape[size_t(d)] = m;
    const int64_t a = std::clamp<int64_t>(lo, 0, m), b = std::clamp<int64_t>(lo + n, a, m);
    spans.push_back({d, a, b, b > a ? a - lo : 0});
  }
  Tensor out = Tensor::empty(shape, x.dtype(), x.device());
  // Fill each padded dim's two border slabs inside the interior left by the
  // dims before it, so every padding element is written once.
  Tensor inner = out, src = detach(x);
  for (const Span& s : spans) {
    fill_(narrow(inner, s.dim, 0, s.a), value);
    fill_(narrow(inner, s.dim, s.b, inner.size(s.dim) - s.b), value);
    inner = narrow(inner, s.dim, s.a, s.b - s.a);
    src = narrow(src, s.dim, s.src, s.b - s.a);
  }
  copy_(inner, src);
  if (needs_grad({x})) {
    // The gradient is g padded by the opposite pads: a crop where x was
    // padded, zeros where x was cropped. Without a crop it is a view of g.
    bool cropped = false;
    for (const Span& s : spans) cropped = cropped || s.b - s.a != x.size(s.dim);
    std::vector<int64_t> unpads(pads.size());
    for (size_t i = 0; i < pads.size(); ++i) unpads[i] = -pads[i];
    record(
        "PadBackward", {x}, {out},
        [spans, cropped, unpads](const std::vector<Tensor>& g) {
          if (cropped) return std::vector<Tensor>{pad(g[0], unpads)};
          Tensor gi = g[0];
          for (const Span& s : spans) gi = narrow(gi, s.dim, s.a, s.b - s.a);
          return std::vector<Tensor>{gi};
        },
        HigherOrder::Supported);
  }
  return out;
}

Tensor flip(const Tensor& x, const std::vector<int64_t>& dims) {
  KS_CHECK(x.defined(), "flip: undefined input");
  std::vector<bool> flipped(size_t(std::max<int64_t>(x.dim(), 1)), false);
  std::vector<int64_t> wrapped;
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, x.dim(), "flip");
    KS_CHECK(!flipped[size_t(w)], "flip: dim ", d, " appears more than once in ", dims);
    flipped[size_t(w)] = true;
    wrapped.push_back(w);
  }
  // The source seen through negative strides: the copy kernel walks it backwards.
  Shape strides = x.strides();
  int64_t offset = x.storage_offset();
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (!flipped[size_t(d)] || x.size(d) == 0) continue;
    offset += (x.size(d) - 1) * strides[size_t(d)];
    strides[size_t(d)] = -strides[size_t(d)];
  }
  Tensor out = Tensor::empty(x.sizes(), x.dtype(), x.device());
  copy_(out, x.alias(x.sizes(), strides, offset));
  if (needs_grad({x}))
    record(
        "FlipBackward", {x}, {out},
        [wrapped](const std::vector<Tensor>& g) { return std::vector<Tensor>{flip(g[0], wrapped)}; },
        HigherOrder::Supported);
  return out;
}

namespace {

Tensor triangle(const Tensor& x, int64_t diagonal, bool upper) {
  const char* op = upper ? "triu" : "tril";
  KS_CHECK(x.defined() && x.dim() >= 2, op, ": expected a tensor with at least 2 dims, got ", describe(x));
  Tensor out = Tensor::empty(x.sizes(), x.dtype(), x.device());
  triangle_kernel(out.device(), out, x, diagonal, upper);
  if (needs_grad({x}))
    record(
        upper ? "TriuBackward" : "TrilBackward", {x}, {out},
        [diagonal, upper](const std::vector<Tensor>& g) {
          return std::vector<Tensor>{triangle(g[0], diagonal, upper)};
        },
        HigherOrder::Supported);
  return out;
}

}  // namespace

Tensor triu(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, true); }
Tensor tril(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, false); }

}  // namespace ks
