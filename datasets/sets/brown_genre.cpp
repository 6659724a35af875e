// datasets/sets/brown_genre.cpp — the "brown_genre" data set's descriptor: the Brown corpus's genre of
// byte windows (datasets/brown.h).
#include "datasets/brown.h"
#include "datasets/sets/common.h"

namespace ks::data::sets {
namespace {

using json = nlohmann::json;

std::vector<KeyDoc> brown_genre_keys() {
  return {{"window", "bytes per example"},
          {"split_seed", "the seed of the documents' train/valid/test split"},
          {"cache_dir", "where the corpus is kept; empty: $KEYSTONE_DATA or ~/.cache/keystone"}};
}

Splits brown_genre_set(nn::JsonSection& s, DataSetContext& ctx) {
  BrownGenreOptions o;
  o.window = s.get_at_least("window", o.window, 1);
  o.split_seed = s.get<uint64_t>("split_seed", o.split_seed);
  fs::path cache = cache_dir(s);
  if (ctx.describe_only) return {};
  return brown_genre_classification(read_brown(fetch_brown(cache)), o);
}

std::vector<KeyDoc> keys() { return brown_genre_keys(); }

}  // namespace

KS_REGISTER_DATA_SET("brown_genre",
                     DataSetKind{
                         .build = brown_genre_set, .task = Task::Classification, .tokenized = true, .keys = keys},
                     3);

}  // namespace ks::data::sets
