// nn/positions/sinusoidal.cpp — "sinusoidal": Vaswani et al.'s fixed sin/cos
// table added to the token embeddings (nn::SinusoidalPositions, buffer
// "pos.table"). The seq2seq default. No keys.
#include "nn/positions/positions.h"
#include "nn/positions/tables.h"

namespace ks::nn {
namespace {

struct Sinusoidal : TablePositions<SinusoidalPositions> {
  std::string kind() const override { return "sinusoidal"; }
};

std::shared_ptr<const Positions> parse(const nlohmann::json&, const std::string&) {
  return std::make_shared<const Sinusoidal>();
}

}  // namespace

KS_REGISTER_POSITIONS("sinusoidal", "Vaswani et al.'s fixed sin/cos table added to the embeddings", {}, parse);

}  // namespace ks::nn
