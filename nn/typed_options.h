// nn/typed_options.h — reading a descriptor's own options back as its type.
// A shared config (AttentionConfig, ModelConfig) holds the options of the
// family or kind it names opaquely, as a shared_ptr to a base class; the
// descriptor reads them as the type it defined. Not the options themselves
// (each family or kind defines its own beside its math).
#pragma once

#include <memory>

#include "core/error.h"

namespace ks::nn {

// *held as T, or T's defaults when nothing is held. Options of another type
// are a programming error: throws ks::Error with the message parts `why`.
template <class T, class Base, class... Why>
const T& typed_options(const std::shared_ptr<const Base>& held, const Why&... why) {
  if (!held) {
    static const T defaults{};
    return defaults;
  }
  const T* typed = dynamic_cast<const T*>(held.get());
  KS_CHECK(typed, why...);
  return *typed;
}

}  // namespace ks::nn
