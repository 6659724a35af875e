// nn/positions/learned.cpp — "learned": a (max_len, d) table of parameters
// added to the token embeddings (nn::LearnedPositions, "pos.weight"). The
// default of the decoder LM and the encoder classifier. No keys.
#include "nn/init.h"
#include "nn/positions/positions.h"
#include "nn/positions/tables.h"

namespace ks::nn {
namespace {

struct Learned : TablePositions<LearnedPositions> {
  std::string kind() const override { return "learned"; }
  void init_table_normal(Module& table, double std) const override {
    init::normal_(dynamic_cast<LearnedPositions&>(table).weight, 0.0, std);
  }
};

std::shared_ptr<const Positions> parse(const nlohmann::json&, const std::string&) {
  return std::make_shared<const Learned>();
}

}  // namespace

KS_REGISTER_POSITIONS("learned", "a learned table added to the embeddings", {}, parse);

}  // namespace ks::nn
