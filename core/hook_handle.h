// core/hook_handle.h — the handle a registered hook returns, whatever it is
// registered on (a tensor's gradient, a leaf's accumulation, a module):
// remove() unregisters it, once; a handle dropped without remove() leaves
// the hook in place, as PyTorch's RemovableHandle does. The hooks themselves
// and where they run are autograd/hooks.h's.
#pragma once

#include <functional>
#include <utility>

namespace ks {

class HookHandle {
 public:
  HookHandle() = default;
  explicit HookHandle(std::function<void()> remover) : remover_(std::move(remover)) {}
  // Unregisters the hook (nothing if it was removed, or its owner is gone).
  void remove() {
    if (remover_) std::exchange(remover_, nullptr)();
  }

 private:
  std::function<void()> remover_;
};

}  // namespace ks
