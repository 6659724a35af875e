// datasets/sets/fashion_mnist.cpp — the "fashion_mnist" data set's descriptor: sequential Fashion-MNIST,
// pixels as ids, no tokenizer (datasets/fashion_mnist.h).
#include "datasets/fashion_mnist.h"
#include "datasets/sets/common.h"

namespace ks::data::sets {
namespace {

using json = nlohmann::json;

std::vector<KeyDoc> fashion_mnist_keys() {
  return {{"dir", "the folder of the four idx .gz files"},
          {"valid_size", "validation images cut from the 60,000 training images"},
          {"split_seed", "the seed of that cut"},
          {"limit", "at most this many examples per split; 0: all"}};
}

Splits fashion_mnist_set(nn::JsonSection& s, DataSetContext& ctx) {
  FashionMnistOptions o;
  o.dir = read_path(s, "dir", o.dir.string(), true, ctx.describe_only);
  o.valid_size = s.get_at_least("valid_size", o.valid_size, 1);
  o.split_seed = s.get<uint64_t>("split_seed", o.split_seed);
  o.limit = s.get_at_least("limit", o.limit, 0);
  if (ctx.describe_only) return {};
  return fashion_mnist(o);
}

std::vector<KeyDoc> keys() { return fashion_mnist_keys(); }

}  // namespace

KS_REGISTER_DATA_SET("fashion_mnist",
                     DataSetKind{
                         .build = fashion_mnist_set, .task = Task::Classification, .tokenized = false, .keys = keys},
                     4);

}  // namespace ks::data::sets
