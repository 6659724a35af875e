// datasets/sets/tsv_seq2seq.cpp — the "tsv_seq2seq" data set's descriptor: a user's
// source<TAB>target file, each side with its own tokenizer or one for both (datasets/user_data.h).
#include "datasets/sets/common.h"
namespace ks::data::sets {
namespace {

using json = nlohmann::json;

Splits tsv_seq2seq_set(nn::JsonSection& s, DataSetContext& ctx) {
  DataFiles f = read_files(s, ctx);
  TextOptions o = read_text_options(s, ctx, true);
  if (s.has("target_tokenizer"))
    o.train_target_tokenizer = read_tokenizer_options(s, "target_tokenizer");
  else if (ctx.describe_only)  // shown with its meaning too, though its default is to be absent
    s.get<std::string>("target_tokenizer", kAbsentTargetTokenizer);
  o.target_tokenizer = ctx.saved_target;
  if (ctx.describe_only) return {};
  return tsv_seq2seq(f, o);
}

std::vector<KeyDoc> keys() {
  return join(
      {file_keys(),
       tsv_keys(),
       {{"target_tokenizer", "the targets' own tokenizer (its keys as tokenizer's); absent: one for both sides"}}});
}

}  // namespace

KS_REGISTER_DATA_SET("tsv_seq2seq",
                     DataSetKind{.build = tsv_seq2seq_set, .task = Task::Seq2Seq, .tokenized = true, .keys = keys}, 7);

}  // namespace ks::data::sets
