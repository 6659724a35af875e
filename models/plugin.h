// models/plugin.h — what a plugin's source includes to declare itself: KS_PLUGIN,
// and the plugin ABI it records, which the loader (core/plugin_loader.h)
// compares with the library's before any of the plugin's code runs:
//
//   KS_PLUGIN_ABI_REVISION  a number bumped by hand at every change a plugin
//                           compiled against the old headers cannot survive:
//                           a public type's layout, a virtual function added,
//                           removed or reordered, a registration's meaning;
//   the layout hash         FNV-1a (core/fingerprint.h) over the sizeof,
//                           alignof, member count and member offsets of the public
//                           types a plugin shares with Keystone (kLayouts
//                           below), computed by the compiler from the headers
//                           the plugin was built against.
//
// The version string alone let a plugin built against two-day-old headers
// (AttentionConfig and AttentionOptions had changed, the version had not)
// load and crash in training: both numbers must match now. The hash catches
// a layout change nobody thought of; it cannot see a virtual function added
// (the vtable is not a size), which is why the revision exists too.
// tests/models/test_plugin_abi.cpp checks the hash against kRecordedLayouts,
// recorded beside the revision: a change to a type below fails it until the
// editor bumps KS_PLUGIN_ABI_REVISION and records the new layouts.
//
// Why in models/ (the top of the library): the manifest names types of every
// layer, from core's Tensor to models' ModelKind. core/plugin.h keeps the
// declaration's format, which the loader reads; the library's own revision
// and hash come from models/plugin.cpp (ks::library_plugin_abi).
// Not here: loading (core/plugin_loader.h), the declaration's bytes (core/plugin.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "autograd/function.h"
#include "autograd/node.h"
#include "core/device.h"
#include "core/dispatch.h"
#include "core/error.h"
#include "core/fingerprint.h"
#include "core/plugin.h"
#include "core/storage.h"
#include "core/tensor.h"
#include "core/tensor_impl.h"
#include "models/batch.h"
#include "models/config.h"
#include "models/decoder_lm.h"
#include "models/encoder_classifier.h"
#include "models/kind.h"
#include "models/model.h"
#include "models/seq2seq.h"
#include "nn/attention/attention.h"
#include "nn/attention/heads.h"
#include "nn/attention/softmax_attention.h"
#include "nn/feed_forward.h"
#include "nn/json_section.h"
#include "nn/layers.h"
#include "nn/lr_schedule.h"
#include "nn/module.h"
#include "nn/norm.h"
#include "nn/optim/optimizer_kind.h"
#include "nn/positions/positions.h"
#include "nn/transformer.h"

// Bump at every change of a type below, and at every change of a public
// class's virtual functions; then record the layouts anew (kRecordedLayouts).
#define KS_PLUGIN_ABI_REVISION 8

namespace ks::plugin_abi {

// One public type's layout: its size and alignment, the number of its data
// members (an aggregate's, counted by the compiler, so a member added where
// padding was, which changes no size, still changes the layout; 0 for a class
// with constructors or private members), and the offsets of the members a
// plugin may touch, hashed (0: none listed, as for a class whose members are
// private).
struct TypeLayout {
  const char* name;
  uint64_t size, align, fields, members;
};

// Converts to any type, in unevaluated contexts only: the stand-in for each
// initializer when counting an aggregate's members.
struct AnyField {
  template <class U> operator U() const;
};

// The number of members of aggregate T: the most initializers T{...} takes
// (brace elision does not apply, as AnyField converts to every member type).
template <class T, size_t N = 0> constexpr uint64_t field_count() {
  if constexpr (!std::is_aggregate_v<T>) {
    return 0;
  } else if constexpr (N < 128 &&[]<size_t... I>(std::index_sequence<I...>) {
                         return requires { T{(void(I), AnyField{})...}; };
                       }(std::make_index_sequence<N + 1>{})) {
    return field_count<T, N + 1>();
  } else {
    return N;
  }
}

constexpr uint64_t offsets_hash(std::initializer_list<size_t> offsets) {
  if (offsets.size() == 0) return 0;
  Fnv1a f;
  for (size_t o : offsets) f.add_u64(o);
  return f.h;
}

}  // namespace ks::plugin_abi

// KS_ABI_FOR_EACH(m, T, a, b, ...) is m(T, a), m(T, b), ... (up to 256 members).
#define KS_ABI_PARENS ()
#define KS_ABI_EXPAND(...) KS_ABI_EXPAND4(KS_ABI_EXPAND4(KS_ABI_EXPAND4(KS_ABI_EXPAND4(__VA_ARGS__))))
#define KS_ABI_EXPAND4(...) KS_ABI_EXPAND3(KS_ABI_EXPAND3(KS_ABI_EXPAND3(KS_ABI_EXPAND3(__VA_ARGS__))))
#define KS_ABI_EXPAND3(...) KS_ABI_EXPAND2(KS_ABI_EXPAND2(KS_ABI_EXPAND2(KS_ABI_EXPAND2(__VA_ARGS__))))
#define KS_ABI_EXPAND2(...) KS_ABI_EXPAND1(KS_ABI_EXPAND1(KS_ABI_EXPAND1(KS_ABI_EXPAND1(__VA_ARGS__))))
#define KS_ABI_EXPAND1(...) __VA_ARGS__
#define KS_ABI_FOR_EACH(m, T, ...) __VA_OPT__(KS_ABI_EXPAND(KS_ABI_FOR_EACH_HELPER(m, T, __VA_ARGS__)))
#define KS_ABI_FOR_EACH_HELPER(m, T, a, ...) \
  m(T, a) __VA_OPT__(, KS_ABI_FOR_EACH_AGAIN KS_ABI_PARENS(m, T, __VA_ARGS__))
#define KS_ABI_FOR_EACH_AGAIN() KS_ABI_FOR_EACH_HELPER
#define KS_ABI_OFFSET(T, member) offsetof(T, member)
// The layout of T with the offsets of the members named (none: size and alignment only).
#define KS_ABI_TYPE(T, ...)                                                              \
  ::ks::plugin_abi::TypeLayout {                                                         \
#T, sizeof(T), alignof(T), ::ks::plugin_abi::field_count < T>(),                     \
        ::ks::plugin_abi::offsets_hash({KS_ABI_FOR_EACH(KS_ABI_OFFSET, T, __VA_ARGS__)}) \
  }

namespace ks::plugin_abi {

// offsetof on a class with virtual functions (Attention) is "conditionally
// supported": GCC and Clang support it for classes without virtual bases.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
// The public types a plugin shares with Keystone: what its attention family,
// model kind or kernel builds, derives from, fills in or is handed.
inline constexpr TypeLayout kLayouts[] = {
    // core/
    KS_ABI_TYPE(ks::Device, type, index),
    KS_ABI_TYPE(ks::Tensor),
    KS_ABI_TYPE(ks::TensorImpl, storage, sizes, strides, offset, dtype, version, requires_grad, grad, grad_fn,
                output_nr, grad_accumulator, post_accumulate_hooks, grad_hooks),
    KS_ABI_TYPE(ks::StorageImpl),
    KS_ABI_TYPE(ks::Error),
    KS_ABI_TYPE(ks::KernelTable<void()>),
    // autograd/
    KS_ABI_TYPE(ks::Edge, node, input_nr),
    KS_ABI_TYPE(ks::Node),
    KS_ABI_TYPE(ks::AutogradContext),
    // nn/
    KS_ABI_TYPE(ks::nn::Module),
    KS_ABI_TYPE(ks::nn::Linear),
    KS_ABI_TYPE(ks::nn::Embedding),
    KS_ABI_TYPE(ks::nn::Dropout),
    KS_ABI_TYPE(ks::nn::NormConfig, type, eps, bias),
    KS_ABI_TYPE(ks::nn::Norm),
    KS_ABI_TYPE(ks::nn::FeedForwardConfig, d_model, d_ff, activation, dropout, bias),
    KS_ABI_TYPE(ks::nn::FeedForward),
    KS_ABI_TYPE(ks::nn::Positions),
    KS_ABI_TYPE(ks::nn::AttentionOptions),
    KS_ABI_TYPE(ks::nn::AttentionConfig, type, d_model, kv_dim, heads, head_dim, kv_heads, alibi, dropout, bias,
                out_bias, window, rope_theta, rope_scaling, options),
    KS_ABI_TYPE(ks::nn::AttentionMask, causal, key_padding),
    KS_ABI_TYPE(ks::nn::AttentionCache, k, v, k_room, v_room, state, norm, key_padding, length, is_static),
    KS_ABI_TYPE(ks::nn::Attention, return_weights, head_gate, config),
    KS_ABI_TYPE(ks::nn::AttentionRecord, weights, scores, heads, keys),
    KS_ABI_TYPE(ks::nn::KeyMixture, keys, pi, component_scores, hard_max),
    KS_ABI_TYPE(ks::nn::AttentionCost, params, flops_per_token, cache_floats_per_position, cache_floats_fixed),
    KS_ABI_TYPE(ks::KeyDoc, key, doc),
    KS_ABI_TYPE(ks::nn::AttentionFamily, make, cost, parse, keys, options_type),
    KS_ABI_TYPE(ks::nn::CachedKeys, k, v, key_padding, offset),
    KS_ABI_TYPE(ks::nn::MultiHeadAttention),
    KS_ABI_TYPE(ks::nn::ParamGroup, params, lr, weight_decay),
    KS_ABI_TYPE(ks::nn::Optimizer),
    KS_ABI_TYPE(ks::nn::OptimizerOptions),
    KS_ABI_TYPE(ks::nn::OptimizerKind, weight_decay, keys, parse, make),
    KS_ABI_TYPE(ks::nn::OptimizerConfig, type, lr, weight_decay, options),
    KS_ABI_TYPE(ks::nn::JsonSection),
    KS_ABI_TYPE(ks::nn::LRSchedule, type, warmup_steps, total_steps, min_factor, d_model, noam_scale),
    KS_ABI_TYPE(ks::nn::ScheduleKind, factor, validate, decays),
    // models/
    KS_ABI_TYPE(ks::models::ModelOptions),
    KS_ABI_TYPE(ks::models::ModelConfig, model, d_model, d_ff, max_len, dropout, pre_norm, activation, positions,
                position_options, attention, norm, norm_eps, ff, bias, layers, vocab_size, pad_id, tied_lookup_reversed,
                options),
    KS_ABI_TYPE(ks::models::DecoderLmOptions, tie_embeddings, tied_lookup_scaled, fused_loss),
    KS_ABI_TYPE(ks::models::EncoderClassifierOptions, num_classes, pooling, dual, head, embedding_std),
    KS_ABI_TYPE(ks::models::Seq2SeqOptions, src_vocab_size, tgt_vocab_size, encoder_layers, decoder_layers,
                share_embeddings, label_smoothing, bos_id, eos_id),
    KS_ABI_TYPE(ks::models::ModelKind, name, task, task_default, keys, defaults, validate, make, parse_options,
                option_keys, stored_defaults, extra_positions),
    KS_ABI_TYPE(ks::models::ModelCost, params, embedding_params, flops_per_token, kv_cache_bytes),
    KS_ABI_TYPE(ks::models::Batch, tokens, decoder_input, targets, labels),
    KS_ABI_TYPE(ks::models::Predictions, logits, targets, ignore_index),
    KS_ABI_TYPE(ks::models::Model),
    KS_ABI_TYPE(ks::models::DecoderLM),
    KS_ABI_TYPE(ks::models::EncoderClassifier),
    KS_ABI_TYPE(ks::models::Seq2Seq),
};
#pragma GCC diagnostic pop

// The hash over every TypeLayout, in order: what KS_PLUGIN records.
constexpr uint64_t layout_hash() {
  Fnv1a f;
  for (const TypeLayout& t : kLayouts) {
    for (const char* c = t.name; *c; ++c) f.add(c, 1);
    f.add_u64(t.size);
    f.add_u64(t.align);
    f.add_u64(t.fields);
    f.add_u64(t.members);
  }
  return f.h;
}
inline constexpr uint64_t kLayoutHash = layout_hash();

// The record kept beside the revision, on the platform where it is kept
// (x86-64, libstdc++ with its C++11 strings; kRecordedPlatform). The test
// (tests/models/test_plugin_abi.cpp) fails when kLayouts differs from
// kRecordedLayouts, naming the types that changed, and prints what to paste
// here: the new table, and a line for kRevisions with the next revision. On
// another platform the sizes differ, and the test only reports them.
//
// kRevisions: every revision's layout hash on that platform, oldest first
// (append, never edit; a revision for a changed virtual function keeps the
// layout hash of the one before).
struct Revision {
  int revision;
  uint64_t layout_hash;
};
inline constexpr const char* kRecordedPlatform = "x86_64 " KS_PLUGIN_ABI;
inline constexpr Revision kRevisions[] = {
    {1, 0x6c57202ab18ff97dull},
    {2, 0x09f11f552cf352a6ull},  // issue 52: the one registry, optimizer/schedule descriptors, Activation by name
    {3, 0x84288dd8813cc1e8ull},  // issue 52: built-in kinds' typed options, AttentionRecord, key_mixture()
    {4, 0xf3235f9fd2a30af8ull},  // issue 55: nn::Linear's LoRA adapter (Linear::lora)
    {5, 0xa95eef0ab23e98e8ull},  // issue 55: AttentionConfig's rope_scaling, out_bias, window; takes_window()
    {6, 0xa95eef0ab23e98e8ull},  // issues 54-55: cpu::Gemm's b_bf16 (installed ops/cpu/gemm/gemm.h, not hashed)
    {7, 0x5691ef63f19a4b85ull},  // issue 55: Q8_0 weights (nn::Module's quantized entries, Linear's and Embedding's q8)
    {8, 0x97506645b06123f5ull},  // issue 54: nn::Optimizer's state dtype and parameter key (bf16 Adam moments)
};
inline constexpr TypeLayout kRecordedLayouts[] = {
    {"ks::Device", 8, 4, 2, 0x0c35039535423be1ull},
    {"ks::Tensor", 16, 8, 0, 0x0000000000000000ull},
    {"ks::TensorImpl", 208, 8, 13, 0xe3ad31b0ccda9555ull},
    {"ks::StorageImpl", 32, 8, 0, 0x0000000000000000ull},
    {"ks::Error", 16, 8, 0, 0x0000000000000000ull},
    {"ks::KernelTable<void()>", 24, 8, 0, 0x0000000000000000ull},
    {"ks::Edge", 24, 8, 2, 0x77cc904a0ff40675ull},
    {"ks::Node", 224, 8, 0, 0x0000000000000000ull},
    {"ks::AutogradContext", 136, 8, 0, 0x0000000000000000ull},
    {"ks::nn::Module", 144, 8, 0, 0x0000000000000000ull},
    {"ks::nn::Linear", 224, 8, 0, 0x0000000000000000ull},
    {"ks::nn::Embedding", 200, 8, 0, 0x0000000000000000ull},
    {"ks::nn::Dropout", 152, 8, 0, 0x0000000000000000ull},
    {"ks::nn::NormConfig", 48, 8, 3, 0x38c412431842c04dull},
    {"ks::nn::Norm", 144, 8, 0, 0x0000000000000000ull},
    {"ks::nn::FeedForwardConfig", 64, 8, 5, 0x9d273ee8c5fc1f95ull},
    {"ks::nn::FeedForward", 144, 8, 0, 0x0000000000000000ull},
    {"ks::nn::Positions", 8, 8, 0, 0x0000000000000000ull},
    {"ks::nn::AttentionOptions", 8, 8, 0, 0x0000000000000000ull},
    {"ks::nn::AttentionConfig", 168, 8, 14, 0x5147cb13a4ee497cull},
    {"ks::nn::AttentionMask", 24, 8, 2, 0x7ff65801b879b56dull},
    {"ks::nn::AttentionCache", 128, 8, 9, 0x8db41153c2c5f4fdull},
    {"ks::nn::Attention", 400, 8, 0, 0xed7012563ff4d365ull},
    {"ks::nn::AttentionRecord", 64, 8, 4, 0xc834997fb4a8ad65ull},
    {"ks::nn::KeyMixture", 32, 8, 4, 0xa2df09456f196f8cull},
    {"ks::nn::AttentionCost", 32, 8, 4, 0x4a1e0dfe63bcd9a5ull},
    {"ks::KeyDoc", 64, 8, 2, 0x677900dabee8a885ull},
    {"ks::nn::AttentionFamily", 40, 8, 5, 0x8eebdd1ab7637c25ull},
    {"ks::nn::CachedKeys", 56, 8, 4, 0xc834997fb4a8ad65ull},
    {"ks::nn::MultiHeadAttention", 480, 8, 0, 0x0000000000000000ull},
    {"ks::nn::ParamGroup", 40, 8, 3, 0x0a4b69776c4d24fdull},
    {"ks::nn::Optimizer", 176, 8, 0, 0x0000000000000000ull},
    {"ks::nn::OptimizerOptions", 8, 8, 0, 0x0000000000000000ull},
    {"ks::nn::OptimizerKind", 32, 8, 4, 0x4a1e0dfe63bcd9a5ull},
    {"ks::nn::OptimizerConfig", 64, 8, 4, 0x082ff0e502f1f21dull},
    {"ks::nn::JsonSection", 144, 8, 0, 0x0000000000000000ull},
    {"ks::nn::LRSchedule", 72, 8, 6, 0x42a948e34e586b25ull},
    {"ks::nn::ScheduleKind", 24, 8, 3, 0xe96f5ea847d9871dull},
    {"ks::models::ModelOptions", 8, 8, 0, 0x0000000000000000ull},
    {"ks::models::ModelConfig", 448, 8, 19, 0xe840d6ea486702daull},
    {"ks::models::DecoderLmOptions", 16, 8, 0, 0x25ec8c06ad26810eull},
    {"ks::models::EncoderClassifierOptions", 96, 8, 0, 0x2d78524a55cc27cdull},
    {"ks::models::Seq2SeqOptions", 72, 8, 0, 0x1f1ce76bf0aa10e5ull},
    {"ks::models::ModelKind", 160, 8, 11, 0xe2fa18ae14f2983dull},
    {"ks::models::ModelCost", 32, 8, 4, 0x4a1e0dfe63bcd9a5ull},
    {"ks::models::Batch", 64, 8, 4, 0xc834997fb4a8ad65ull},
    {"ks::models::Predictions", 40, 8, 3, 0x925abb36d3a462f5ull},
    {"ks::models::Model", 592, 8, 0, 0x0000000000000000ull},
    {"ks::models::DecoderLM", 688, 8, 0, 0x0000000000000000ull},
    {"ks::models::EncoderClassifier", 720, 8, 0, 0x0000000000000000ull},
    {"ks::models::Seq2Seq", 776, 8, 0, 0x0000000000000000ull},
};

}  // namespace ks::plugin_abi

// Declares this shared library a Keystone plugin named `name` (a string
// literal), built against these headers: the Keystone version, the ABI tag
// (core/plugin.h), KS_PLUGIN_ABI_REVISION and the layout hash.
#undef KS_PLUGIN
#define KS_PLUGIN(name) \
  KS_PLUGIN_DECLARE(name, KS_VERSION_STRING, KS_PLUGIN_ABI, KS_PLUGIN_ABI_REVISION, ::ks::plugin_abi::kLayoutHash)
