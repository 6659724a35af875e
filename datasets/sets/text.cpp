// datasets/sets/text.cpp — the "text" data set's descriptor: a user's text file for
// language modelling (datasets/user_data.h).
#include "datasets/sets/common.h"
namespace ks::data::sets {
namespace {

using json = nlohmann::json;

Splits text_set(nn::JsonSection& s, DataSetContext& ctx) {
  DataFiles f = read_files(s, ctx);
  TextOptions o = read_text_options(s, ctx, false);
  if (ctx.describe_only) return {};
  return text_language_model(f, o);
}

std::vector<KeyDoc> keys() { return join({file_keys(), {{"seq_len", "tokens per example window"}}}); }

}  // namespace

KS_REGISTER_DATA_SET("text",
                     DataSetKind{.build = text_set, .task = Task::LanguageModel, .tokenized = true, .keys = keys}, 5);

}  // namespace ks::data::sets
