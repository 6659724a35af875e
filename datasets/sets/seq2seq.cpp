// datasets/sets/seq2seq.cpp — the "seq2seq" data set's descriptor: generated copy, reverse, sort
// and addition tasks (datasets/seq2seq_tasks.h).
#include "datasets/seq2seq_tasks.h"
#include "datasets/sets/common.h"

namespace ks::data::sets {
namespace {

using json = nlohmann::json;

std::vector<KeyDoc> seq2seq_keys() {
  return {{"task", "copy | reverse | sort | addition"},
          {"min_length", "the shortest source, in symbols (digits for addition)"},
          {"max_length", "the longest source, in symbols"},
          {"num_symbols", "copy, reverse, sort: the distinct symbols"}};
}

Splits seq2seq_set(nn::JsonSection& s, DataSetContext& ctx) {
  Seq2SeqOptions o;
  o.task = parse_seq2seq_task(s.get<std::string>("task", "copy"));
  o.min_length = s.get_at_least("min_length", o.min_length, 1);
  o.max_length = s.get_at_least("max_length", o.max_length, o.min_length);
  o.num_symbols = s.get_at_least("num_symbols", o.num_symbols, 1);
  o.seed = s.get<uint64_t>("seed", ctx.run_seed);
  Sizes n = read_sizes(s, {10000, 500, 500});
  if (ctx.describe_only) return {};
  return seq2seq_splits(o, n.train, n.valid, n.test);
}

std::vector<KeyDoc> keys() { return join({seq2seq_keys(), generator_keys()}); }

}  // namespace

KS_REGISTER_DATA_SET("seq2seq",
                     DataSetKind{.build = seq2seq_set, .task = Task::Seq2Seq, .tokenized = true, .keys = keys}, 0);

}  // namespace ks::data::sets
