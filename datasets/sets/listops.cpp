// datasets/sets/listops.cpp — the "listops" data set's descriptor: generated ListOps as in LRA,
// cached per generator setting (datasets/listops.h).
#include "datasets/listops.h"
#include "datasets/sets/common.h"

namespace ks::data::sets {
namespace {

using json = nlohmann::json;

std::vector<KeyDoc> listops_keys() {
  return {{"min_length", "the shortest expression, in tokens"},
          {"max_length", "the longest expression, in tokens"},
          {"max_depth", "the deepest nesting of operators"},
          {"max_args", "the most arguments of one operator"},
          {"cache_dir", "where generated splits are kept; empty: $KEYSTONE_DATA or ~/.cache/keystone"}};
}

Splits listops_set(nn::JsonSection& s, DataSetContext& ctx) {
  ListOpsOptions o;
  o.min_length = s.get_at_least("min_length", o.min_length, 1);
  o.max_length = s.get_at_least("max_length", o.max_length, o.min_length);
  o.max_depth = s.get_at_least("max_depth", o.max_depth, 1);
  o.max_args = s.get_at_least("max_args", o.max_args, 2);
  o.seed = s.get<uint64_t>("seed", ctx.run_seed);
  Sizes n = read_sizes(s, {96000, 2000, 2000});
  // One cache folder per generator setting: a cache is only ever read back
  // by the options that wrote it.
  fs::path cache = cache_dir(s);
  if (ctx.describe_only) return {};
  cache /= str("listops-", o.min_length, "-", o.max_length, "-d", o.max_depth, "-a", o.max_args, "-s", o.seed, "-n",
               n.train, "-", n.valid, "-", n.test);
  return listops(o, {n.train, n.valid, n.test}, cache);
}

std::vector<KeyDoc> keys() { return join({listops_keys(), generator_keys()}); }

}  // namespace

KS_REGISTER_DATA_SET("listops",
                     DataSetKind{.build = listops_set, .task = Task::Classification, .tokenized = true, .keys = keys},
                     1);

}  // namespace ks::data::sets
