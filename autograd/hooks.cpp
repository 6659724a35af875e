// autograd/hooks.cpp — registering, removing and running gradient hooks.
#include "autograd/hooks.h"

#include <atomic>

namespace ks {

namespace {
std::atomic<uint64_t> g_next_id{1};
}

HookHandle register_post_accumulate_grad_hook(const Tensor& leaf, std::function<void(const Tensor&)> hook) {
  KS_CHECK(leaf.defined() && leaf.is_leaf() && leaf.requires_grad(),
           "register_post_accumulate_grad_hook: the tensor must be a leaf that requires grad, got ",
           leaf.defined() ? describe(leaf) : std::string("an undefined tensor"));
  KS_CHECK(hook != nullptr, "register_post_accumulate_grad_hook: empty hook");
  const uint64_t id = g_next_id++;
  leaf.impl()->post_accumulate_hooks.emplace_back(id, std::move(hook));
  return HookHandle(leaf.impl_ptr(), id);
}

void HookHandle::remove() {
  if (auto impl = leaf_.lock()) {
    auto& hooks = impl->post_accumulate_hooks;
    std::erase_if(hooks, [&](const auto& h) { return h.first == id_; });
  }
  leaf_.reset();
}

void run_post_accumulate_grad_hooks(const Tensor& leaf) {
  // A copy: a hook may remove itself (or register another) while running.
  const auto hooks = leaf.impl()->post_accumulate_hooks;
  for (const auto& [id, hook] : hooks) hook(leaf);
}

}  // namespace ks
