// nn/safetensors_folder.h — the weights of a Hugging Face model folder: one
// model.safetensors, or the shards a model.safetensors.index.json lists
//   {"metadata": {...}, "weight_map": {"tensor name": "model-00001-of-00002.safetensors", ...}}
// with every floating tensor (F16, BF16, F32, F64) converted to float32, the
// only type Keystone's models hold. Integer and bool tensors are kept as they are.
// Errors name the folder's file and the tensor or key: an index whose shard
// is missing, a tensor the index names that its shard lacks, a shard name
// that leaves the folder, an index that is not {"weight_map": {...}}, and a
// floating tensor holding a NaN or an infinity (as float32: an F64 value past
// float32's range is one too).
// Not here: the file format itself (nn/safetensors.h), what the names mean
// (tools/interop/).
#pragma once

#include <string>

#include "nn/safetensors.h"

namespace ks::nn {

// The tensors of `dir`, by name, in file and then data order; when both are
// there, model.safetensors wins over model.safetensors.index.json, as in
// transformers' from_pretrained (an index beside it is a stale leftover).
NamedTensors load_safetensors_folder(const std::string& dir);

// A floating tensor as float32 (others unchanged), on the CPU.
Tensor to_float32(const Tensor& t);

}  // namespace ks::nn
