// tools/analyze/head_mask.h — a model's attention sites and the gates on their heads
// (nn::Attention::head_gate): listing the sites, parsing a head mask such as
// `--mask-heads 0:1,2:3`, and setting or clearing the gates.
//
// A site is one attention module, numbered in the order nn::named_attention
// finds them: for a decoder LM site i is layer i; an encoder-decoder lists
// the encoder's self-attention layers, then per decoder layer its self- and
// cross-attention. A mask entry names its site by that number or by the
// module's path ("decoder.layers.1.cross_attn"), then the head: SITE:HEAD.
// Not here: what an analysis measures with the gates (tools/analyze/analyze.h).
#pragma once

#include <string>
#include <vector>

#include "models/model.h"
#include "nn/attention/attention.h"

namespace ks::tools {

struct AttentionSite {
  std::string name;     // the module path
  nn::Attention* attn;  // owned by the model
  int64_t heads = 0;
  // "self" or "cross": a cross-attention module's keys come from another
  // sequence (its path ends in "cross_attn", the name the models give it).
  std::string kind;
};
std::vector<AttentionSite> attention_sites(models::Model& model);

struct HeadRef {
  int64_t site = 0, head = 0;
  bool operator==(const HeadRef&) const = default;
};

// "SITE:HEAD[,SITE:HEAD...]". Throws cli::UsageError naming the entry: not
// SITE:HEAD, a site that is neither a number below the site count nor a
// site's name, a head out of range, an entry given twice.
std::vector<HeadRef> parse_head_mask(const std::string& spec, const std::vector<AttentionSite>& sites);

// Gates of every site: 0 at the masked heads, 1 elsewhere (ones everywhere
// for an empty mask), on `device`, in the dtype of each site's weights. With `requires_grad` the gates
// are leaves whose .grad() after backward is ∂L/∂ξ.
void set_head_gates(const std::vector<AttentionSite>& sites, const std::vector<HeadRef>& masked, Device device,
                    bool requires_grad = false);
// Back to no gates (every head counts fully, at no cost).
void clear_head_gates(const std::vector<AttentionSite>& sites);

}  // namespace ks::tools
