// autograd/hooks.cpp — registering, removing and running gradient hooks.
#include "autograd/hooks.h"

#include <atomic>

#include "autograd/grad_accumulate.h"
#include "autograd/node.h"
#include "core/copy.h"

namespace ks {

namespace {
std::atomic<uint64_t> g_next_id{1};

Tensor apply_hook(const std::function<Tensor(const Tensor&)>& hook, const Tensor& grad) {
  Tensor replaced = hook(grad);
  if (!replaced.defined()) return grad;
  KS_CHECK(replaced.sizes() == grad.sizes() && replaced.dtype() == grad.dtype() && replaced.device() == grad.device(),
           "register_hook: a hook returned ", describe(replaced), " for a gradient ", describe(grad),
           "; it must return a tensor of the same shape, dtype and device (or an undefined Tensor to keep it)");
  return replaced;
}
}  // namespace

HookHandle register_post_accumulate_grad_hook(const Tensor& leaf, std::function<void(const Tensor&)> hook) {
  KS_CHECK(leaf.defined() && leaf.is_leaf() && leaf.requires_grad(),
           "register_post_accumulate_grad_hook: the tensor must be a leaf that requires grad, got ",
           leaf.defined() ? describe(leaf) : std::string("an undefined tensor"));
  KS_CHECK(hook != nullptr, "register_post_accumulate_grad_hook: empty hook");
  const uint64_t id = g_next_id++;
  leaf.impl()->post_accumulate_hooks.emplace_back(id, std::move(hook));
  return HookHandle([leaf = std::weak_ptr<TensorImpl>(leaf.impl_ptr()), id] {
    if (auto impl = leaf.lock())
      std::erase_if(impl->post_accumulate_hooks, [&](const auto& h) { return h.first == id; });
  });
}

void run_post_accumulate_grad_hooks(const Tensor& leaf) {
  // A copy: a hook may remove itself (or register another) while running.
  const auto hooks = leaf.impl()->post_accumulate_hooks;
  for (const auto& [id, hook] : hooks) hook(leaf);
}

HookHandle Tensor::register_hook(std::function<Tensor(const Tensor& grad)> hook) const {
  KS_CHECK(requires_grad(), "register_hook: cannot register a hook on a tensor that does not require grad (",
           describe(*this), ")");
  KS_CHECK(hook != nullptr, "register_hook: empty hook");
  const uint64_t id = g_next_id++;
  if (is_leaf()) {
    impl()->grad_hooks.emplace_back(id, std::move(hook));
    return HookHandle([leaf = std::weak_ptr<TensorImpl>(impl_ptr()), id] {
      if (auto impl = leaf.lock()) std::erase_if(impl->grad_hooks, [&](const auto& h) { return h.first == id; });
    });
  }
  grad_fn()->grad_hooks.emplace_back(impl()->output_nr, id, std::move(hook));
  return HookHandle([node = std::weak_ptr<Node>(grad_fn()), id] {
    if (auto n = node.lock()) std::erase_if(n->grad_hooks, [&](const auto& h) { return std::get<1>(h) == id; });
  });
}

void Tensor::retain_grad() const {
  KS_CHECK(requires_grad(), "retain_grad: the tensor does not require grad (", describe(*this), ")");
  if (is_leaf()) return;
  auto& retained = grad_fn()->retained;
  for (const auto& [k, t] : retained)
    if (t.lock() == impl_ptr()) return;
  retained.emplace_back(impl()->output_nr, impl_ptr());
}

Tensor run_grad_hooks(const Tensor& leaf, Tensor grad) {
  const auto hooks = leaf.impl()->grad_hooks;  // a copy: hooks may (un)register hooks
  for (const auto& [id, hook] : hooks) grad = apply_hook(hook, grad);
  return grad;
}

void run_grad_hooks(Node& node, std::vector<Tensor>& grads) {
  if (!node.grad_hooks.empty()) {
    const auto hooks = node.grad_hooks;
    for (const auto& [k, id, hook] : hooks)
      if (k < grads.size() && grads[k].defined()) grads[k] = apply_hook(hook, grads[k]);
  }
  for (const auto& [k, weak] : node.retained) {
    auto impl = weak.lock();
    if (!impl || k >= grads.size() || !grads[k].defined()) continue;
    Tensor t(impl), current = t.grad();
    if (GradMode::is_enabled()) {
      t.set_grad(current.defined() ? grad_sum(current, grads[k]) : grads[k]);
    } else if (!current.defined()) {
      Tensor fresh = Tensor::empty(grads[k].sizes(), grads[k].dtype(), grads[k].device());
      copy_(fresh, grads[k]);  // the gradient flows on: .grad must not alias it
      t.set_grad(fresh);
    } else {
      grad_accumulate_(current, grads[k]);
    }
  }
}

}  // namespace ks
