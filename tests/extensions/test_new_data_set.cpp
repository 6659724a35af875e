// tests/extensions/test_new_data_set.cpp — adding a data set is this one file:
// "test_counting", a language model over generated counting sequences
// ("3 4 5 6 ..." as bytes), registers itself here, and the config's data
// section reads, documents, checks and builds it like the built-in ones
// (keystone config --defaults shows its keys; an unknown key is refused),
// with no shared file edited (issue 52's acceptance). Not the built-in data
// sets (tests/datasets/, tests/tools/test_data_setup*.cpp).
#include "support/testing.h"

#include <nlohmann/json.hpp>

#include "datasets/data_set_kind.h"
#include "tools/train/data_setup.h"

using namespace ks;
using json = nlohmann::json;

namespace {

// n examples of `len` byte tokens counting up from a seeded start (mod 256).
data::Dataset counting(int64_t n, int64_t len, uint64_t seed, uint64_t stream,
                       const std::shared_ptr<const data::Tokenizer>& tok) {
  data::Dataset d;
  d.task = data::Task::LanguageModel;
  d.vocab_size = d.target_vocab_size = tok->vocab_size();
  d.tokenizer = tok;
  data::Rng rng(seed, stream);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t start = rng.below(256);
    data::Ids ids;
    for (int64_t t = 0; t <= len; ++t) ids.push_back(int32_t(data::kNumSpecial + (start + t) % 256));
    data::Example e;
    e.tokens.assign(ids.begin(), ids.end() - 1);
    e.target.assign(ids.begin() + 1, ids.end());
    d.examples.push_back(std::move(e));
  }
  return d;
}

data::Splits counting_set(nn::JsonSection& s, data::DataSetContext& ctx) {
  const int64_t len = s.get_between("length", 16, 2, 4096);
  const int64_t n = s.get_between("examples", 64, 1, 1 << 20);
  const uint64_t seed = s.get<uint64_t>("seed", ctx.run_seed);
  if (ctx.describe_only) return {};
  auto tok =
      ctx.saved_source ? ctx.saved_source : std::shared_ptr<const data::Tokenizer>(data::train_tokenizer({}, {}));
  return {counting(n, len, seed, 0, tok), counting(8, len, seed, 1, tok), counting(8, len, seed, 2, tok)};
}

std::vector<KeyDoc> counting_keys() {
  return {{"length", "tokens per example"},
          {"examples", "training examples"},
          {"seed", "the generator's seed (default: the run's seed)"}};
}

KS_REGISTER_DATA_SET("test_counting",
                     data::DataSetKind{.build = counting_set,
                                       .task = data::Task::LanguageModel,
                                       .tokenized = true,
                                       .keys = counting_keys},
                     10);

}  // namespace

TEST_CASE("a data set registered in its own file is read, documented, checked and built by the data section") {
  const std::vector<std::string> names = data::data_set_names();
  REQUIRE(!names.empty());
  CHECK(names.back() == "test_counting");
  CHECK(names.front() == "seq2seq");  // the built-in ones keep their order

  json docs;
  const json resolved = tools::describe_data({{"dataset", "test_counting"}}, &docs);
  CHECK(resolved == json{{"dataset", "test_counting"}, {"length", 16}, {"examples", 64}, {"seed", 0}});
  CHECK(docs["length"] == "tokens per example");
  CHECK(docs["dataset"].get<std::string>().find("| test_counting") != std::string::npos);

  tools::TrainingData built = tools::build_data({{"dataset", "test_counting"}, {"length", 8}, {"examples", 5}}, 7);
  CHECK(built.splits.train.size() == 5);
  CHECK(built.splits.valid.size() == 8);
  CHECK(built.splits.train.examples[0].tokens.size() == 8);
  CHECK(built.resolved["seed"] == 7);  // the run's seed, explicit in the resolved section
  CHECK(tools::model_for_data_set("test_counting") == "decoder_lm");

  CHECK_THROWS_WITH_AS(tools::build_data({{"dataset", "test_counting"}, {"lenght", 8}}, 0),
                       "config: data.lenght: unknown key for dataset 'test_counting' (did you mean data.length?)",
                       Error);
  CHECK_THROWS_WITH_AS(tools::build_data({{"dataset", "test_countin"}}, 0),
                       doctest::Contains("unknown data set 'test_countin' (did you mean test_counting?"), Error);
}
