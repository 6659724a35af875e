// tools/analyze/head_mask.cpp — attention sites, head-mask parsing, gates.
#include "tools/analyze/head_mask.h"

#include <algorithm>

#include "core/factory.h"
#include "ops/view.h"
#include "tools/cli/cli.h"

namespace ks::tools {

std::vector<AttentionSite> attention_sites(models::Model& model) {
  std::vector<AttentionSite> sites;
  for (auto& [name, attn] : nn::named_attention(model)) {
    const bool cross = name.size() >= 10 && name.compare(name.size() - 10, 10, "cross_attn") == 0;
    sites.push_back({name, attn, attn->config.heads, cross ? "cross" : "self"});
  }
  return sites;
}

std::vector<HeadRef> parse_head_mask(const std::string& spec, const std::vector<AttentionSite>& sites) {
  std::vector<HeadRef> out;
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string entry = spec.substr(start, comma - start);
    const std::string quoted = "--mask-heads: entry '" + entry + "'";
    const size_t colon = entry.rfind(':');
    if (entry.empty() || colon == std::string::npos || colon == 0 || colon + 1 == entry.size())
      throw cli::UsageError(quoted + " is not SITE:HEAD (e.g. 0:1,2:3)");
    const std::string site_text = entry.substr(0, colon), head_text = entry.substr(colon + 1);
    int64_t site = -1;
    if (auto n = cli::parse_int(site_text)) {
      if (*n < 0 || *n >= int64_t(sites.size()))
        throw cli::UsageError(quoted + ": site " + site_text + " does not exist (the model has " +
                              std::to_string(sites.size()) + " attention sites, 0.." +
                              std::to_string(int64_t(sites.size()) - 1) + ")");
      site = *n;
    } else {
      for (size_t i = 0; i < sites.size(); ++i)
        if (sites[i].name == site_text) site = int64_t(i);
      if (site < 0) {
        std::string names;
        for (const AttentionSite& s : sites) names += (names.empty() ? "" : ", ") + s.name;
        throw cli::UsageError(quoted + ": no attention site named '" + site_text + "' (sites: " + names + ")");
      }
    }
    auto head = cli::parse_int(head_text);
    if (!head || *head < 0 || *head >= sites[size_t(site)].heads)
      throw cli::UsageError(quoted + ": head '" + head_text + "' is not one of site " + std::to_string(site) + "'s " +
                            std::to_string(sites[size_t(site)].heads) + " heads (0.." +
                            std::to_string(sites[size_t(site)].heads - 1) + ")");
    const HeadRef ref{site, *head};
    if (std::find(out.begin(), out.end(), ref) != out.end()) throw cli::UsageError(quoted + " is given twice");
    out.push_back(ref);
    start = comma + 1;
  }
  return out;
}

void set_head_gates(const std::vector<AttentionSite>& sites, const std::vector<HeadRef>& masked, Device device,
                    bool requires_grad) {
  for (size_t i = 0; i < sites.size(); ++i) {
    std::vector<float> gate(size_t(sites[i].heads), 1.f);
    for (const HeadRef& r : masked)
      if (r.site == int64_t(i)) gate[size_t(r.head)] = 0.f;
    Tensor g = from_vector(gate, {sites[i].heads}, device);
    const std::vector<Tensor> params = sites[i].attn->parameters();
    if (!params.empty() && params.front().dtype() != g.dtype()) g = to(g, params.front().dtype());
    if (requires_grad) g.set_requires_grad(true);
    sites[i].attn->head_gate = g;
  }
}

void clear_head_gates(const std::vector<AttentionSite>& sites) {
  for (const AttentionSite& s : sites) s.attn->head_gate = Tensor();
}

}  // namespace ks::tools
