// datasets/sets/tsv_classification.cpp — the "tsv_classification" data set's descriptor: a user's
// text<TAB>label file (datasets/user_data.h).
#include <algorithm>

#include "datasets/sets/common.h"
#include "nn/user_input.h"

namespace ks::data::sets {
namespace {

using json = nlohmann::json;

Splits tsv_classification_set(nn::JsonSection& s, DataSetContext& ctx) {
  DataFiles f = read_files(s, ctx);
  TextOptions o = read_text_options(s, ctx, true);
  if (s.has("classes")) {
    json classes = s.get<json>("classes", json::array());
    KS_CHECK(
        classes.is_array() && std::all_of(classes.begin(), classes.end(), [](const json& c) { return c.is_string(); }),
        "config: ", s.where("classes"), ": expected a list of strings, got ", nn::json_excerpt(classes));
    o.classes = classes.get<std::vector<std::string>>();
  }
  if (ctx.describe_only) return {};
  return tsv_classification(f, o);
}

std::vector<KeyDoc> keys() {
  return join(
      {file_keys(), tsv_keys(), {{"classes", "the labels in class order; absent: the training split's, sorted"}}});
}

}  // namespace

KS_REGISTER_DATA_SET(
    "tsv_classification",
    DataSetKind{.build = tsv_classification_set, .task = Task::Classification, .tokenized = true, .keys = keys}, 6);

}  // namespace ks::data::sets
