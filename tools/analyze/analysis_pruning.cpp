// tools/analyze/analysis_pruning.cpp — head importance by gate gradients, and the
// pruning curve (tools/analyze/analysis_pruning.h).
#include "tools/analyze/analysis_pruning.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "autograd/engine.h"
#include "datasets/loader.h"
#include "ops/view.h"

namespace ks::tools {

std::vector<std::vector<double>> head_importance(models::Model& model, const std::vector<AttentionSite>& sites,
                                                 const data::Dataset& split, int64_t batch_size, int64_t max_batches) {
  nn::EvalModeGuard eval_mode(model);
  const Device device = model_device(model);
  std::vector<std::vector<double>> sums;
  for (const AttentionSite& s : sites) sums.emplace_back(size_t(s.heads), 0.0);
  data::DataLoader loader(std::make_shared<const data::Dataset>(split),
                          data::LoaderOptions{.batch_size = batch_size, .shuffle = false});
  int64_t batches = 0;
  while (auto next = loader.next()) {
    if (max_batches > 0 && batches == max_batches) break;
    ++batches;
    const data::Batch b = device.is_cpu() ? std::move(*next) : next->to(device);
    set_head_gates(sites, {}, device, /*requires_grad=*/true);  // fresh leaves: each batch's own gradient
    backward(batch_loss(model, b));
    for (size_t i = 0; i < sites.size(); ++i) {
      const Tensor grad = sites[i].attn->head_gate.grad();
      KS_CHECK(grad.defined(), "analyze: the loss does not depend on the heads of attention site ", sites[i].name);
      const std::vector<double> g = (grad.device().is_cpu() ? grad : to(grad, Device::cpu())).to_vector<double>();
      for (size_t h = 0; h < g.size(); ++h) sums[i][h] += std::fabs(g[h]);
    }
    model.zero_grad();
  }
  clear_head_gates(sites);
  KS_CHECK(batches > 0, "analyze: the split has no batch to measure head importance on");
  for (auto& site : sums)
    for (double& x : site) x /= double(batches);
  return sums;
}

std::vector<PruningPoint> pruning_curve(models::Model& model, const std::vector<AttentionSite>& sites,
                                        const std::vector<std::vector<double>>& importance, const data::Dataset& split,
                                        const EvalOptions& options) {
  const Device device = model_device(model);
  std::vector<std::tuple<double, int64_t, int64_t>> order;  // (importance, site, head)
  for (size_t i = 0; i < sites.size(); ++i)
    for (int64_t h = 0; h < sites[i].heads; ++h) order.emplace_back(importance.at(i).at(size_t(h)), int64_t(i), h);
  std::sort(order.begin(), order.end());
  std::vector<int64_t> left;
  for (const AttentionSite& s : sites) left.push_back(s.heads);

  std::vector<HeadRef> masked;
  std::vector<PruningPoint> curve;
  set_head_gates(sites, masked, device);
  curve.push_back({0, std::nullopt, evaluate(model, split, options)});
  for (const auto& [value, site, head] : order) {
    if (left[size_t(site)] == 1) continue;  // every site keeps one head
    --left[size_t(site)];
    masked.push_back({site, head});
    set_head_gates(sites, masked, device);
    curve.push_back({int64_t(masked.size()), HeadRef{site, head}, evaluate(model, split, options)});
  }
  clear_head_gates(sites);
  return curve;
}

}  // namespace ks::tools
