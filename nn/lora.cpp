// nn/lora.cpp — freezing by pattern, attaching LoRA adapters, merging them.
#include "nn/lora.h"

#include <map>
#include <set>

#include "autograd/grad_mode.h"
#include "core/copy.h"
#include "core/factory.h"
#include "nn/layers.h"

namespace ks::nn {

namespace {

// Shell-style glob on the whole string: '*' any run (dots too), '?' one character.
bool glob(const char* p, const char* s) {
  // Iterative with one backtrack point: linear in practice, no recursion depth to worry about.
  const char *star = nullptr, *resume = nullptr;
  while (*s) {
    if (*p == '?' || (*p && *p != '*' && *p == *s)) {
      ++p;
      ++s;
    } else if (*p == '*') {
      star = p++;
      resume = s;
    } else if (star) {
      p = star + 1;
      s = ++resume;
    } else {
      return false;
    }
  }
  while (*p == '*') ++p;
  return !*p;
}

// A few names for an error message (a model has thousands).
std::string some_names(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 8; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > 8) out += str(", ... (", names.size(), " in all)");
  return out;
}

void collect_modules(const std::shared_ptr<Module>& m, const std::string& path,
                     std::vector<std::pair<std::string, std::shared_ptr<Module>>>& out) {
  for (const auto& [name, child] : m->named_children()) {
    const std::string p = path.empty() ? name : path + "." + name;
    out.emplace_back(p, child);
    collect_modules(child, p, out);
  }
}

// Every module under `model` by dotted path (the root itself is not a target).
std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_modules(Module& model) {
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> out;
  for (const auto& [name, child] : model.named_children()) {
    out.emplace_back(name, child);
    collect_modules(child, name, out);
  }
  return out;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

const std::string kA = ".lora_A.weight", kB = ".lora_B.weight";

}  // namespace

bool name_matches(const std::string& pattern, const std::string& name) {
  if (glob(pattern.c_str(), name.c_str())) return true;
  for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1))
    if (glob(pattern.c_str(), name.c_str() + dot + 1)) return true;
  return false;
}

std::vector<std::string> freeze_parameters(Module& model, const std::vector<std::string>& patterns) {
  const NamedTensors params = model.named_parameters();
  std::vector<std::string> names, frozen;
  for (const auto& [name, p] : params) names.push_back(name);
  for (const std::string& pattern : patterns) {
    KS_CHECK(!pattern.empty(), "train.freeze: an empty pattern");
    bool any = false;
    for (const auto& [name, p] : params)
      if (name_matches(pattern, name)) {
        any = true;
        if (p.requires_grad()) frozen.push_back(name);
        Tensor(p).set_requires_grad(false);
      }
    KS_CHECK(any, "train.freeze: pattern '", pattern, "' matches no parameter of the model; its parameters are ",
             some_names(names));
  }
  return frozen;
}

std::vector<std::string> apply_lora(Module& model, const LoraOptions& o) {
  KS_CHECK(o.rank >= 1, "train.lora.rank: must be at least 1, got ", o.rank,
           " (leave train.lora out, or null, to train without LoRA)");
  KS_CHECK(o.alpha > 0, "train.lora.alpha: must be positive, got ", o.alpha);
  KS_CHECK(o.dropout >= 0 && o.dropout < 1, "train.lora.dropout: must be in [0, 1), got ", o.dropout);
  KS_CHECK(!o.targets.empty(), "train.lora.targets: empty; name the Linear modules to adapt (e.g. \"*attn.q\")");
  const auto modules = named_modules(model);
  std::vector<std::string> linears;
  for (const auto& [path, m] : modules)
    if (dynamic_cast<Linear*>(m.get())) linears.push_back(path);
  std::set<std::string> chosen;
  for (const std::string& pattern : o.targets) {
    KS_CHECK(!pattern.empty(), "train.lora.targets: an empty pattern");
    bool any = false;
    for (const auto& [path, m] : modules) {
      if (!name_matches(pattern, path)) continue;
      // An adapter's own lora_A/lora_B are Linears too: never adapt those.
      if (ends_with(path, ".lora_A") || ends_with(path, ".lora_B")) continue;
      KS_CHECK(dynamic_cast<Linear*>(m.get()), "train.lora.targets: pattern '", pattern, "' matches module '", path,
               "', a ", m->type_name(), "; LoRA adapts Linear modules only, such as ", some_names(linears));
      any = true;
      chosen.insert(path);
    }
    KS_CHECK(any, "train.lora.targets: pattern '", pattern, "' matches no module of the model; its Linear modules are ",
             some_names(linears));
  }
  // Validate train_also before changing anything.
  const NamedTensors base = model.named_parameters();
  for (const std::string& pattern : o.train_also) {
    bool any = false;
    for (const auto& [name, p] : base) any |= name_matches(pattern, name);
    KS_CHECK(any, "train.lora.train_also: pattern '", pattern, "' matches no parameter of the model");
  }
  for (const auto& [name, p] : base) {
    bool keep = false;
    for (const std::string& pattern : o.train_also) keep |= name_matches(pattern, name);
    if (!keep) Tensor(p).set_requires_grad(false);
  }
  std::vector<std::string> adapted;
  for (const auto& [path, m] : modules)  // registration order: the adapters' order in the state dict
    if (chosen.count(path)) {
      static_cast<Linear&>(*m).add_lora(o.rank, o.alpha, o.dropout);
      adapted.push_back(path);
    }
  return adapted;
}

std::vector<std::string> lora_paths(const NamedTensors& state) {
  std::vector<std::string> out;
  for (const auto& [name, t] : state)
    if (ends_with(name, kA)) out.push_back(name.substr(0, name.size() - kA.size()));
  return out;
}

NamedTensors merge_lora(const NamedTensors& state, double scale) {
  std::map<std::string, Tensor> by_name(state.begin(), state.end());
  std::map<std::string, Tensor> merged;
  for (const std::string& path : lora_paths(state)) {
    auto w = by_name.find(path + ".weight");
    auto b = by_name.find(path + kB);
    KS_CHECK(w != by_name.end() && b != by_name.end(), "LoRA merge: '", path, kA, "' without '",
             w == by_name.end() ? path + ".weight" : path + kB, "'");
    const Tensor& A = by_name.at(path + kA);  // (r, in)
    const Tensor& B = b->second;              // (out, r)
    const Tensor& W = w->second;              // (out, in)
    KS_CHECK(A.dim() == 2 && B.dim() == 2 && W.dim() == 2 && B.size(1) == A.size(0) && W.size(0) == B.size(0) &&
                 W.size(1) == A.size(1),
             "LoRA merge: '", path, "': weight ", describe(W), ", lora_A ", describe(A), ", lora_B ", describe(B),
             " do not fit (out, in), (r, in), (out, r)");
    const int64_t out = W.size(0), in = W.size(1), r = A.size(0);
    const std::vector<double> a = to_raw(A, Device::cpu(), DType::Float64).to_vector<double>();
    const std::vector<double> bb = to_raw(B, Device::cpu(), DType::Float64).to_vector<double>();
    std::vector<double> wv = to_raw(W, Device::cpu(), DType::Float64).to_vector<double>();
    // W (out, in) += scale · B (out, r) · A (r, in)
    for (int64_t i = 0; i < out; ++i)
      for (int64_t k = 0; k < r; ++k) {
        const double f = scale * bb[size_t(i * r + k)];
        if (f == 0) continue;
        const double* arow = a.data() + k * in;
        double* wrow = wv.data() + i * in;
        for (int64_t j = 0; j < in; ++j) wrow[j] += f * arow[j];
      }
    merged[path + ".weight"] = to_raw(from_vector(wv, {out, in}), W.device(), W.dtype());
  }
  NamedTensors result;
  for (const auto& [name, t] : state) {
    if (ends_with(name, kA) || ends_with(name, kB)) continue;
    auto m = merged.find(name);
    result.emplace_back(name, m != merged.end() ? m->second : t);
  }
  return result;
}

int64_t trainable_parameters(const Module& model) {
  int64_t n = 0;
  for (const Tensor& p : model.parameters())
    if (p.requires_grad()) n += p.numel();
  return n;
}

}  // namespace ks::nn
