// tools/train/weight_ema.cpp — the parameters' moving average: its update, its
// checkpoint entries, and evaluating with it.
#include "tools/train/weight_ema.h"

#include <algorithm>

#include "autograd/grad_mode.h"
#include "core/copy.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/number_text.h"
#include "ops/inplace.h"

namespace ks::tools {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const std::string kUpdatesKey = "keystone.ema_updates";

// The metrics an evaluation's record holds that the average changes; counts
// (predictions, bytes, decoded) are the split's and stay unsuffixed.
constexpr const char* kMetrics[] = {"loss", "ppl", "bpb", "accuracy", "exact_match", "ter", "cer"};

}  // namespace

WeightEma::WeightEma(const nn::Module& model, double decay, bool warmup)
    : decay_(decay), warmup_(warmup), params_(model.named_parameters()) {
  for (const auto& [name, p] : params_) {
    Tensor e = empty(p.sizes(), {.dtype = kFloat32, .device = p.device()});
    copy_(e, p);
    average_.emplace_back(name, e);
  }
}

double WeightEma::decay_at(int64_t n) const { return warmup_ ? std::min(decay_, double(n) / double(9 + n)) : decay_; }

void WeightEma::update() {
  NoGradGuard no_grad;
  const double d = decay_at(++updates_);
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i].second;
    const Tensor& e = average_[i].second;
    mul_(e, d);
    add_(e, p.dtype() == kFloat32 ? p : to_raw(p, p.device(), kFloat32), 1 - d);
  }
}

nn::Metadata WeightEma::metadata() const { return {{kUpdatesKey, std::to_string(updates_)}}; }

bool WeightEma::load(const nn::SafetensorsContent& content, const fs::path& file, int64_t max_updates) {
  const nn::NamedTensors saved = nn::checkpoint_ema_state(content, file.string());
  if (saved.empty()) return false;
  std::map<std::string, const Tensor*> by_name;
  for (const auto& [name, t] : saved) by_name[name] = &t;
  for (const auto& [name, e] : average_) {
    auto it = by_name.find(name);
    KS_CHECK(it != by_name.end(), "checkpoint ", file.string(), ": its moving average has no entry '", nn::kEmaPrefix,
             name, "'");
    KS_CHECK(it->second->sizes() == e.sizes(), "checkpoint ", file.string(), ": '", nn::kEmaPrefix, name,
             "' has shape ", describe(*it->second), ", the parameter ", describe(e));
    copy_(e, *it->second);
    by_name.erase(it);
  }
  KS_CHECK(by_name.empty(), "checkpoint ", file.string(), ": '", nn::kEmaPrefix,
           by_name.empty() ? "" : by_name.begin()->first, "' is no parameter of the model");
  const auto count = content.metadata.find(kUpdatesKey);
  KS_CHECK(count != content.metadata.end(), "checkpoint ", file.string(), " has a moving average but no '", kUpdatesKey,
           "'");
  const std::optional<int64_t> n = parse_int(count->second);
  KS_CHECK(n && *n >= 0 && *n <= max_updates, "checkpoint ", file.string(), ": '", kUpdatesKey, "' is '",
           count->second.substr(0, 40), "'; it must be an integer in [0, ", max_updates, "]");
  updates_ = *n;
  return true;
}

WeightEma::InModel::InModel(const WeightEma& ema) : params_(ema.params_) {
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i].second;
    const Tensor& e = ema.average_[i].second;
    raw_.push_back(p.alias(p.sizes(), p.strides(), p.storage_offset()));
    p.set_data(e.dtype() == p.dtype() ? e : to_raw(e, p.device(), p.dtype()));
  }
}

WeightEma::InModel::~InModel() {
  // Backwards: a parameter listed twice (shared by two modules) gets its own storage back last.
  for (size_t i = params_.size(); i-- > 0;) params_[i].second.set_data(raw_[i]);
}

nn::SafetensorsContent with_ema_as_weights(nn::SafetensorsContent content, const fs::path& file,
                                           const nn::Module& model) {
  const nn::NamedTensors ema = nn::checkpoint_ema_state(content, file.string());
  KS_CHECK(!ema.empty(), "checkpoint ", file.string(),
           " holds no moving average of the weights (the run was trained without train.ema_decay); "
           "use --weights raw");
  std::map<std::string, Tensor> by_name(ema.begin(), ema.end());
  // Every parameter is averaged (WeightEma::load's rule): one missing would be loaded raw, silently.
  for (const auto& [name, p] : model.named_parameters())
    KS_CHECK(by_name.count(name), "checkpoint ", file.string(), ": its moving average has no entry '", nn::kEmaPrefix,
             name, "'");
  for (auto& [name, t] : content.tensors) {
    auto it = by_name.find(name);
    if (it == by_name.end()) continue;
    t = it->second.dtype() == t.dtype() ? it->second : to_raw(it->second, it->second.device(), t.dtype());
    by_name.erase(it);
  }
  KS_CHECK(by_name.empty(), "checkpoint ", file.string(), ": '", nn::kEmaPrefix,
           by_name.empty() ? "" : by_name.begin()->first, "' averages no tensor of the file");
  return content;
}

void add_ema_metrics(json& record, const json& ema) {
  for (const char* key : kMetrics)
    if (ema.contains(key)) record[std::string(key) + "_ema"] = ema[key];
}

json ema_metrics(const json& record) {
  json out = json::object();
  for (const char* key : kMetrics)
    if (record.contains(std::string(key) + "_ema")) out[key] = record[std::string(key) + "_ema"];
  for (const char* count : {"decoded", "decoded_of"})  // how many examples the exact match is of
    if (!out.empty() && record.contains(count)) out[count] = record[count];
  return out;
}

}  // namespace ks::tools
