// nn/zero.cpp — ownership, the sharded step and the state gather.
#include "nn/zero.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <numeric>
#include <optional>

#include "autograd/grad_mode.h"
#include "core/copy.h"
#include "core/factory.h"
#include "ops/view.h"

namespace ks::nn {
namespace {

// (group, index) of a per-parameter state name "<group>.<index>.<slot>"
// (Optimizer::state_dict); nullopt for the others ("step").
std::optional<std::pair<size_t, size_t>> state_owner(const std::string& name) {
  size_t g = 0, i = 0;
  const char* end = name.data() + name.size();
  auto [p, e1] = std::from_chars(name.data(), end, g);
  if (e1 != std::errc() || p == end || *p != '.') return std::nullopt;
  auto [q, e2] = std::from_chars(p + 1, end, i);
  if (e2 != std::errc() || q == end || *q != '.') return std::nullopt;
  return std::pair{g, i};
}

}  // namespace

ZeroOptimizer::ZeroOptimizer(Optimizer& optimizer, dist::ProcessGroup& group) : optimizer_(optimizer), group_(group) {
  const auto& groups = optimizer_.param_groups();
  struct Item {
    size_t g, i;
    int64_t numel;
  };
  std::vector<Item> items;
  Tensor reference;  // the first parameter: all must share its dtype and device
  for (const ParamGroup& g : groups)
    if (!reference.defined() && !g.params.empty()) reference = g.params[0];
  KS_CHECK(reference.defined(), "ZeRO: the optimizer has no parameters");
  owner_.resize(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    owner_[g].assign(groups[g].params.size(), 0);
    for (size_t i = 0; i < groups[g].params.size(); ++i) {
      const Tensor& p = groups[g].params[i];
      KS_CHECK(p.is_contiguous(), "ZeRO: parameter ", g, ".", i, " is not contiguous");
      KS_CHECK(p.dtype() == reference.dtype() && p.device() == reference.device(),
               "ZeRO: every parameter must have one dtype and device (", g, ".", i, " is ", describe(p), ")");
      items.push_back({g, i, p.numel()});
    }
  }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.numel > b.numel; });
  rank_elements_.assign(size_t(group_.size()), 0);
  for (const Item& it : items) {
    const size_t r = size_t(std::min_element(rank_elements_.begin(), rank_elements_.end()) - rank_elements_.begin());
    owner_[it.g][it.i] = int(r);
    rank_elements_[r] += it.numel;
  }
  owned_elements_ = rank_elements_[size_t(group_.rank())];
  reference_ = reference;
  std::vector<std::vector<bool>> owned(groups.size());
  for (size_t g = 0; g < groups.size(); ++g)
    for (int o : owner_[g]) owned[g].push_back(o == group_.rank());
  optimizer_.set_owned(std::move(owned));
}

void ZeroOptimizer::step() {
  optimizer_.step();
  if (group_.size() == 1) return;
  NoGradGuard no_grad;
  // Each rank's owned parameters, flat, in group order; gathered in rank order.
  const auto& groups = optimizer_.param_groups();
  const Tensor& first = reference_;
  Tensor mine = Tensor::empty({owned_elements_}, first.dtype(), first.device());
  Tensor all = Tensor::empty({std::accumulate(rank_elements_.begin(), rank_elements_.end(), int64_t(0))}, first.dtype(),
                             first.device());
  std::vector<int64_t> start(rank_elements_.size(), 0);
  for (size_t r = 1; r < start.size(); ++r) start[r] = start[r - 1] + rank_elements_[r - 1];
  int64_t at = 0;
  for (size_t g = 0; g < groups.size(); ++g)
    for (size_t i = 0; i < groups[g].params.size(); ++i)
      if (owner_[g][i] == group_.rank()) {
        const Tensor& p = groups[g].params[i];
        copy_(flat_window(mine, at, p), p);
        at += p.numel();
      }
  group_.all_gather(mine, all, rank_elements_);
  std::vector<int64_t> cursor = start;
  for (size_t g = 0; g < groups.size(); ++g)
    for (size_t i = 0; i < groups[g].params.size(); ++i) {
      const Tensor& p = groups[g].params[i];
      int64_t& c = cursor[size_t(owner_[g][i])];
      if (owner_[g][i] != group_.rank()) {
        copy_(p, flat_window(all, c, p));
        p.bump_version();
      }
      c += p.numel();
    }
}

NamedTensors ZeroOptimizer::full_state_dict() const {
  NamedTensors mine = optimizer_.state_dict();
  if (group_.size() == 1) return mine;
  std::map<std::string, Tensor> have(mine.begin(), mine.end());
  NamedTensors out;
  out.emplace_back("step", have.at("step"));
  const auto& groups = optimizer_.param_groups();
  const auto& slots = optimizer_.slot_names();
  for (size_t g = 0; g < groups.size(); ++g)
    for (size_t i = 0; i < groups[g].params.size(); ++i) {
      const int o = owner_[g][i];
      const Tensor& p = groups[g].params[i];
      const std::string prefix = str(g, ".", i, ".");
      // Whether the owner has updated it yet (a parameter that never had a gradient has no state).
      if (!group_.broadcast_value(have.count(prefix + "step") > 0, o)) continue;
      for (const std::string& s : slots) {
        Tensor t =
            o == group_.rank() ? contiguous_raw(have.at(prefix + s)) : Tensor::empty(p.sizes(), p.dtype(), p.device());
        group_.broadcast(t, o);
        out.emplace_back(prefix + s, t);
      }
      // Its own update count (Optimizer::state_dict), a broadcast value like the flags above.
      const int64_t own = o == group_.rank() ? have.at(prefix + "step").item<int64_t>() : 0;
      out.emplace_back(prefix + "step", from_vector(std::vector<int64_t>{group_.broadcast_value(own, o)}));
    }
  return out;
}

void ZeroOptimizer::load_full_state_dict(const NamedTensors& state) {
  NamedTensors kept;
  for (const auto& [name, t] : state) {
    if (const auto gi = state_owner(name)) {
      const auto [g, i] = *gi;
      if (g < owner_.size() && i < owner_[g].size() && owner_[g][i] != group_.rank()) continue;
    }
    kept.emplace_back(name, t);
  }
  optimizer_.load_state_dict(kept);
}

}  // namespace ks::nn
