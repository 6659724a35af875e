// nn/module.cpp — registration, traversal, placement and state dicts.
#include "nn/module.h"

#include <map>
#include <sstream>

#include "autograd/node.h"
#include "core/copy.h"
#include "ops/q8_0.h"

namespace ks::nn {

void Module::check_name(const std::string& name) const {
  KS_CHECK(!name.empty() && name.find('.') == std::string::npos, type_name_, ": invalid name '", name,
           "' (names must be non-empty and contain no '.')");
  auto taken = [&](const auto& list) {
    for (const auto& [n, _] : list)
      if (n == name) return true;
    return false;
  };
  KS_CHECK(!taken(params_) && !taken(buffers_) && !taken(quantized_) && !taken(children_), type_name_, ": name '", name,
           "' is already registered");
}

namespace {
thread_local std::optional<DType> t_parameter_dtype;
thread_local bool t_q8_weights = false;

// value in the scope's dtype, if one is set and value is floating (in place: see ParameterDTypeScope).
void cast_for_scope(Tensor& value) {
  if (t_parameter_dtype && is_floating(value.dtype()) && value.dtype() != *t_parameter_dtype)
    value.set_data(to_raw(value, value.device(), *t_parameter_dtype));
}
}  // namespace

ParameterDTypeScope::ParameterDTypeScope(DType dtype) : previous_(t_parameter_dtype) { t_parameter_dtype = dtype; }
ParameterDTypeScope::~ParameterDTypeScope() { t_parameter_dtype = previous_; }
DType ParameterDTypeScope::current() { return t_parameter_dtype.value_or(kFloat32); }

Q8WeightScope::Q8WeightScope() : previous_(t_q8_weights) { t_q8_weights = true; }
Q8WeightScope::~Q8WeightScope() { t_q8_weights = previous_; }
bool Q8WeightScope::active() { return t_q8_weights; }

Tensor Module::register_parameter(const std::string& name, Tensor value) {
  check_name(name);
  KS_CHECK(value.defined(), type_name_, ": parameter '", name, "' is undefined");
  if (!value.is_leaf()) value = detach(value);
  cast_for_scope(value);
  value.set_requires_grad(true);
  params_.emplace_back(name, value);
  return value;
}

Tensor Module::register_buffer(const std::string& name, Tensor value) {
  check_name(name);
  KS_CHECK(value.defined(), type_name_, ": buffer '", name, "' is undefined");
  cast_for_scope(value);
  buffers_.emplace_back(name, value);
  return value;
}

std::shared_ptr<Q8Matrix> Module::register_quantized(const std::string& name, std::shared_ptr<Q8Matrix> value) {
  check_name(name);
  KS_CHECK(value != nullptr, type_name_, ": quantized weight '", name, "' is null");
  quantized_.emplace_back(name, value);
  return value;
}

NamedQuantized Module::named_quantized() const {
  NamedQuantized out;
  for (const auto& entry : quantized_) out.push_back(entry);
  for (const auto& [n, m] : children_)
    for (auto& [name, q] : m->named_quantized()) out.emplace_back(n + "." + name, q);
  return out;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_name(name);
  KS_CHECK(module != nullptr, type_name_, ": submodule '", name, "' is null");
  children_.emplace_back(name, std::move(module));
}

void Module::collect(const std::string& prefix, bool params, NamedTensors& out) const {
  for (const auto& [n, t] : params ? params_ : buffers_) out.emplace_back(prefix + n, t);
  for (const auto& [n, m] : children_) m->collect(prefix + n + ".", params, out);
}

NamedTensors Module::named_parameters() const {
  NamedTensors out;
  collect("", true, out);
  return out;
}

NamedTensors Module::named_buffers() const {
  NamedTensors out;
  collect("", false, out);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [_, t] : named_parameters()) out.push_back(t);
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const Tensor& t : parameters()) n += t.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [_, m] : children_) m->train(on);
}

void Module::to(Device device) {
  KS_CHECK(device.is_cpu() || named_quantized().empty(), type_name_, ": Q8_0 weights run on the CPU only, not on ",
           device.str());
  for (auto& list : {named_parameters(), named_buffers()})
    for (auto& [_, t] : list)
      if (t.device() != device) t.set_data(to_raw(t, device, t.dtype()));
}

void Module::to(DType dtype) {
  for (auto& list : {named_parameters(), named_buffers()})
    for (auto& [_, t] : list)
      if (is_floating(t.dtype()) && t.dtype() != dtype) t.set_data(to_raw(t, t.device(), dtype));
}

void Module::zero_grad() {
  for (Tensor& t : parameters()) t.set_grad(Tensor());
}

void Module::set_activation_checkpointing(bool on) {
  checkpointing_ = on;
  for (auto& [name, child] : children_) child->set_activation_checkpointing(on);
}

NamedTensors Module::state_dict() const {
  NamedTensors out = named_parameters();
  for (auto& entry : named_buffers()) out.push_back(entry);
  for (auto& [_, t] : out) t = detach(t);
  return out;
}

void Module::check_state(const std::vector<std::string>& names,
                         const std::function<StoredTensor(const std::string&)>& stored, bool strict,
                         bool cast_floating) const {
  std::map<std::string, bool> given;
  for (const std::string& n : names) given[n] = false;
  std::vector<std::string> missing, mismatched, mistyped, unexpected;
  // What the model holds under each name: a tensor's shape and dtype, or a Q8_0 weight's shape (read
  // from any floating tensor of it and quantized: no dtype of its own).
  struct Held {
    std::string name;
    Shape shape;
    std::optional<DType> dtype;
  };
  std::vector<Held> held;
  for (auto& [name, t] : named_parameters()) held.push_back({name, t.sizes(), t.dtype()});
  for (auto& [name, t] : named_buffers()) held.push_back({name, t.sizes(), t.dtype()});
  for (auto& [name, q] : named_quantized()) held.push_back({name, Shape{q->rows, q->cols}, std::nullopt});
  for (const Held& h : held) {
    auto it = given.find(h.name);
    if (it == given.end()) {
      missing.push_back(h.name);
      continue;
    }
    it->second = true;
    const StoredTensor s = stored(h.name);
    if (s.shape != h.shape) {
      mismatched.push_back(str(h.name, " (checkpoint ", s.shape, ", model ", h.shape, ")"));
    } else if (!h.dtype) {
      if (!is_floating(s.dtype))
        mistyped.push_back(str(h.name, " (checkpoint ", ks::name(s.dtype), ", model Q8_0 from a floating type)"));
    } else if (s.dtype != *h.dtype && !(cast_floating && is_floating(s.dtype) && is_floating(*h.dtype))) {
      // No silent conversion: a tensor of another dtype is another model's (or a damaged file's).
      mistyped.push_back(str(h.name, " (checkpoint ", ks::name(s.dtype), ", model ", ks::name(*h.dtype), ")"));
    }
  }
  for (const std::string& n : names)
    if (!given.at(n)) unexpected.push_back(n);
  std::vector<std::string> problems;
  auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
    return s;
  };
  if (!missing.empty()) problems.push_back("missing keys: " + list(missing));
  if (strict && !unexpected.empty()) problems.push_back("unexpected keys: " + list(unexpected));
  if (!mismatched.empty()) problems.push_back("shape mismatch: " + list(mismatched));
  if (!mistyped.empty()) problems.push_back("dtype mismatch: " + list(mistyped));
  if (!problems.empty()) {
    std::string msg = "load_state_dict(" + type_name_ + "): ";
    for (size_t i = 0; i < problems.size(); ++i) msg += (i ? "; " : "") + problems[i];
    throw Error(msg);
  }
}

void Module::load_state_dict(const NamedTensors& state, bool strict) {
  const std::map<std::string, Tensor> by_name(state.begin(), state.end());
  std::vector<std::string> names;  // in name order, as the unexpected ones were always listed
  for (const auto& entry : by_name) names.push_back(entry.first);
  check_state(
      names,
      [&](const std::string& name) {
        const Tensor& t = by_name.at(name);
        return StoredTensor{t.sizes(), t.dtype()};
      },
      strict);
  NamedTensors own = named_parameters();
  for (auto& entry : named_buffers()) own.push_back(entry);
  for (auto& [name, t] : own) copy_(t, by_name.at(name));
  for (auto& [name, q] : named_quantized()) quantize_q8_0_into(*q, by_name.at(name));
}

std::string Module::to_string() const {
  std::ostringstream os;
  os << type_name_;
  if (children_.empty()) {
    os << "(";
    bool first = true;
    for (auto& [n, t] : params_) {
      os << (first ? "" : ", ") << n << "=" << str(t.sizes());
      first = false;
    }
    for (auto& [n, q] : quantized_) {
      os << (first ? "" : ", ") << n << "=Q8_0" << str(Shape{q->rows, q->cols});
      first = false;
    }
    os << ")";
    return os.str();
  }
  os << "(\n";
  for (auto& [n, m] : children_) {
    std::string child = m->to_string();
    std::string indented;
    for (char c : child) indented += c == '\n' ? std::string("\n  ") : std::string(1, c);
    os << "  (" << n << "): " << indented << "\n";
  }
  os << ")";
  return os.str();
}

}  // namespace ks::nn
