// autograd/anomaly.cpp — the flag, the scope stack and the value checks of anomaly mode.
#include "autograd/anomaly.h"

#include <cmath>

#include "autograd/node.h"

namespace ks {
namespace {

thread_local bool t_anomaly = false;
thread_local std::vector<std::string> t_scopes;

bool floating(const Tensor& t) {
  return t.defined() &&
         (t.dtype() == kFloat32 || t.dtype() == kFloat64 || t.dtype() == kBFloat16 || t.dtype() == kFloat16);
}

// 0: all finite; 1: an Inf but no NaN; 2: a NaN.
int badness(const Tensor& t) {
  if (!floating(t) || t.numel() == 0) return 0;
  int worst = 0;
  for (double v : t.to_vector<double>()) {
    if (std::isnan(v)) return 2;
    if (std::isinf(v)) worst = 1;
  }
  return worst;
}

std::string where(const Node& node) {
  return node.created_in.empty() ? std::string("at the top level (no NameScope)") : "in " + node.created_in;
}

}  // namespace

DetectAnomalyGuard::DetectAnomalyGuard() : prev_(t_anomaly) { t_anomaly = true; }
DetectAnomalyGuard::~DetectAnomalyGuard() { t_anomaly = prev_; }
bool anomaly_mode_enabled() { return t_anomaly; }

NameScope::NameScope(std::string_view name, int64_t index) {
  if (!t_anomaly) return;
  t_scopes.emplace_back(name);
  if (index >= 0) t_scopes.back() += "." + std::to_string(index);
  pushed_ = true;
}
NameScope::~NameScope() {
  if (pushed_) t_scopes.pop_back();
}

std::string current_name_scope() {
  std::string joined;
  for (const std::string& s : t_scopes) joined += (joined.empty() ? "" : ".") + s;
  return joined;
}

void note_forward(Node& node, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
  node.created_in = current_name_scope();
  for (const Tensor& x : inputs)
    if (badness(x) == 2) return;  // a NaN that came in was born elsewhere
  for (size_t k = 0; k < outputs.size(); ++k)
    if (badness(outputs[k]) == 2) {
      node.forward_nonfinite =
          str("its forward made NaN in output ", k, " (", describe(outputs[k]), ") from inputs without NaN");
      return;
    }
}

void check_forward(const std::vector<Node*>& graph) {
  const Node* first = nullptr;
  for (const Node* n : graph)
    if (!n->forward_nonfinite.empty() && (!first || n->sequence_nr < first->sequence_nr)) first = n;
  if (first)
    throw Error(str("anomaly: ", first->name(), " (created ", where(*first), "): ", first->forward_nonfinite,
                    "; everything computed from it is NaN, so this backward is meaningless"));
}

void check_backward(const Node& node, const std::vector<Tensor>& incoming, const std::vector<Tensor>& outgoing) {
  for (const Tensor& g : incoming)
    if (badness(g)) return;  // not born here: the earlier node (or the caller's gradient) threw or passed it in
  for (size_t i = 0; i < outgoing.size(); ++i) {
    const int bad = badness(outgoing[i]);
    if (bad)
      throw Error(str("anomaly: ", node.name(), " (created ", where(node), ") returned ", bad == 2 ? "NaN" : "Inf",
                      " in the gradient for its input ", i, " (", describe(outgoing[i]),
                      ") from finite incoming gradients"));
  }
}

}  // namespace ks
