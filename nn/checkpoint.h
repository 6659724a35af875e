// nn/checkpoint.h — a training checkpoint in one safetensors file: the
// model's state dict under its own dotted names (so Python can load it as a
// state dict directly), the optimizer's state under "optimizer/<key>", when
// the trainer keeps one the moving average of the parameters under
// "ema/<name>" (tools/train/weight_ema.h), and string metadata (step,
// config, ...). Written atomically, all of it in one file, so the parts always
// belong to one step.
#pragma once

#include <map>
#include <string>

#include "nn/module.h"
#include "nn/optim.h"
#include "nn/safetensors.h"

namespace ks::nn {

using Metadata = std::map<std::string, std::string>;

// The prefix of the optimizer's entries, and of the parameters' moving average
// (train.ema_decay): loading the model skips both.
inline const std::string kOptimizerPrefix = "optimizer/";
inline const std::string kEmaPrefix = "ema/";

void save_checkpoint(const std::string& path, const Module& model, const Optimizer* optimizer = nullptr,
                     const Metadata& metadata = {});
// The same with the optimizer's state given as named tensors (empty: none),
// e.g. ZeRO's gathered state (nn/zero.h), and `ema` the parameters' moving
// average (empty: none), stored under kEmaPrefix + its names.
void save_checkpoint(const std::string& path, const Module& model, const NamedTensors& optimizer_state,
                     const Metadata& metadata, const NamedTensors& ema = {});

// Loads into `model` (and `optimizer` if given, which then must find its
// state in the file); returns the metadata. Every error names the file; a
// tensor loaded that holds a NaN or an infinity is an error naming it.
Metadata load_checkpoint(const std::string& path, Module& model, Optimizer* optimizer = nullptr, bool strict = true);
// The same from a file already read (load_safetensors(path)), for callers that
// check its metadata before they load it.
Metadata load_checkpoint(const SafetensorsContent& content, const std::string& path, Module& model,
                         Optimizer* optimizer = nullptr, bool strict = true);
// The model's parameters and buffers read from `file` straight into their
// storage, so that loading holds no second copy of the weights (eval and
// generate: tools/train/run_dir.h load_run); the optimizer state and moving
// average are not read. The checks are load_state_dict's, named as
// load_checkpoint names them (missing, unexpected, shape, dtype), and every
// value read must be finite. `cast`: a floating tensor whose type differs from
// the model's is cast as it is read (a model built in bf16 on purpose); else
// that is a dtype mismatch, as load_state_dict says. Returns the metadata.
Metadata load_weights(const SafetensorsReader& file, const std::string& path, Module& model, bool cast = false);
// The optimizer's entries of a checkpoint, without their "optimizer/" prefix
// (for a caller that places them itself, as ZeRO does); one holding a NaN or
// an infinity is an error naming it and `path`.
NamedTensors checkpoint_optimizer_state(const SafetensorsContent& content, const std::string& path);
// The same for the moving average's entries (kEmaPrefix; empty when the file has none).
NamedTensors checkpoint_ema_state(const SafetensorsContent& content, const std::string& path);

}  // namespace ks::nn
