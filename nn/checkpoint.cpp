// nn/checkpoint.cpp — model + optimizer state in one safetensors file.
#include "nn/checkpoint.h"

#include <algorithm>
#include <cmath>

#include "core/copy.h"
#include "ops/q8_0.h"

namespace ks::nn {
namespace {

// Throws unless every value of the floating tensors (contiguous, on the CPU,
// as load_safetensors gives them) is finite: weights of a diverged run or a
// damaged file would evaluate to a NaN loss, which JSON prints as null, and
// resume would train on from them. `prefix` is put back on the names.
void check_finite(const NamedTensors& tensors, const std::string& prefix, const std::string& path) {
  for (const auto& entry : tensors) {
    const Tensor& t = entry.second;  // not a structured binding: clang 14 cannot capture one
    if (!is_floating(t.dtype())) continue;
    int64_t bad = 0, first = -1;
    const int64_t n = t.numel();
    dispatch_storage(t.dtype(), "check_finite", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* v = static_cast<const T*>(t.data_ptr());
      // Counted without a branch (a loop the compiler vectorises: a 134M-parameter checkpoint is checked
      // in a tenth of the time), the first bad index found only when there is one.
      for (int64_t i = 0; i < n; ++i) bad += !std::isfinite(convert<double>(v[i]));
      if (bad > 0)
        for (first = 0; std::isfinite(convert<double>(v[first]));) ++first;
    });
    KS_CHECK(bad == 0, "checkpoint ", path, ": tensor '", prefix, entry.first, "' holds ", bad,
             " NaN or infinite values of ", t.numel(), " (the first at index ", first,
             "); the training diverged or the file is damaged");
  }
}

}  // namespace

void save_checkpoint(const std::string& path, const Module& model, const Optimizer* optimizer,
                     const Metadata& metadata) {
  save_checkpoint(path, model, optimizer ? optimizer->state_dict() : NamedTensors{}, metadata);
}

void save_checkpoint(const std::string& path, const Module& model, const NamedTensors& optimizer_state,
                     const Metadata& metadata, const NamedTensors& ema) {
  // A Q8_0 weight is not in the state dict: the file would lack it.
  const NamedQuantized quantized = model.named_quantized();
  KS_CHECK(quantized.empty(), "save_checkpoint ", path, ": the model holds ", quantized.size(), " Q8_0 weights (",
           quantized.front().first, ", ...), which a checkpoint does not store");
  NamedTensors all = model.state_dict();
  for (auto& [key, t] : optimizer_state) all.emplace_back(kOptimizerPrefix + key, t);
  for (auto& [key, t] : ema) all.emplace_back(kEmaPrefix + key, t);
  save_safetensors(path, all, metadata);
}

namespace {

// The entries under `prefix`, without it, checked finite.
NamedTensors section(const SafetensorsContent& content, const std::string& prefix, const std::string& path) {
  NamedTensors out;
  for (auto& [name, t] : content.tensors)
    if (name.rfind(prefix, 0) == 0) out.emplace_back(name.substr(prefix.size()), t);
  check_finite(out, prefix, path);
  return out;
}

}  // namespace

Metadata load_weights(const SafetensorsReader& file, const std::string& path, Module& model, bool cast) {
  std::vector<std::string> names;  // the file's, but for the optimizer state and the moving average
  for (const std::string& name : file.names())
    if (name.rfind(kOptimizerPrefix, 0) != 0 && name.rfind(kEmaPrefix, 0) != 0) names.push_back(name);
  try {
    model.check_state(
        names,
        [&](const std::string& name) {
          return Module::StoredTensor{file.shape(name), file.dtype(name)};
        },
        /*strict=*/true, cast);
  } catch (const Error& e) {
    throw Error(str("checkpoint ", path, ": ", e.what()));
  }
  NamedTensors own = model.named_parameters();
  for (auto& entry : model.named_buffers()) own.push_back(entry);
  // Each tensor into its parameter (cast a slab at a time where the types
  // differ: a float32 checkpoint loaded in bf16 never holds a float32 copy of
  // a weight); a CPU parameter that is not contiguous (none Keystone makes)
  // or lives on another device goes through a copy.
  for (auto& [name, t] : own) {
    if (t.device().is_cpu() && t.is_contiguous()) {
      file.read_into(name, t);
      check_finite({{name, t}}, "", path);
    } else {
      const Tensor read = file.read(name, t.dtype());
      check_finite({{name, read}}, "", path);
      copy_(t, read);
    }
  }
  // A Q8_0 weight: its float32 values a slab of rows at a time (about 4 MiB),
  // quantized into place: no float32 copy of a whole weight is ever held.
  for (auto& [name, q] : model.named_quantized()) {
    const int64_t slab = rows_per_slab(q->cols);
    for (int64_t r = 0; r < q->rows; r += slab) {
      const Tensor rows = file.read_rows(name, r, std::min(slab, q->rows - r), kFloat32);
      check_finite({{name, rows}}, "", path);
      quantize_q8_0_into(*q, rows, r);
    }
  }
  return file.metadata();
}

NamedTensors checkpoint_optimizer_state(const SafetensorsContent& content, const std::string& path) {
  return section(content, kOptimizerPrefix, path);
}

NamedTensors checkpoint_ema_state(const SafetensorsContent& content, const std::string& path) {
  return section(content, kEmaPrefix, path);
}

Metadata load_checkpoint(const std::string& path, Module& model, Optimizer* optimizer, bool strict) {
  return load_checkpoint(load_safetensors(path), path, model, optimizer, strict);
}

Metadata load_checkpoint(const SafetensorsContent& content, const std::string& path, Module& model,
                         Optimizer* optimizer, bool strict) {
  NamedTensors model_state, optim_state;
  for (auto& [name, t] : content.tensors) {
    if (name.rfind(kOptimizerPrefix, 0) == 0)
      optim_state.emplace_back(name.substr(kOptimizerPrefix.size()), t);
    else if (name.rfind(kEmaPrefix, 0) != 0)  // the moving average is read by checkpoint_ema_state
      model_state.emplace_back(name, t);
  }
  check_finite(model_state, "", path);
  if (optimizer) check_finite(optim_state, kOptimizerPrefix, path);
  try {
    model.load_state_dict(model_state, strict);
    if (optimizer) {
      KS_CHECK(!optim_state.empty(), "the file holds no optimizer state");
      optimizer->load_state_dict(optim_state);
    }
  } catch (const Error& e) {
    throw Error(str("checkpoint ", path, ": ", e.what()));
  }
  return content.metadata;
}

}  // namespace ks::nn
