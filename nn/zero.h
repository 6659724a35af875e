// nn/zero.h — ZeRO stage 1 (Rajbhandari et al., 2020; llm.c's "zero 1"):
// optimizer state sharded over the ranks of a data-parallel job.
//
// Every rank still holds all parameters and, after the gradient all-reduce
// (nn/data_parallel.h), all (identical) gradients; but each parameter's
// optimizer state (Adam's two moments: 2/3 of a float32 AdamW job's
// parameter-sized memory) lives on one rank only, its owner. A step is:
// each rank updates the parameters it owns, then an all-gather hands every
// rank the updated values of the others. The update of one parameter does
// not depend on any other, so the result equals the unsharded optimizer's,
// bit for bit.
//
//   nn::ZeroOptimizer zero(*optimizer, dist::world());
//   ... ddp.finish_gradient_sync(); clip_grad_norm(...);
//   zero.step();                      // instead of optimizer->step()
//
// Ownership is by whole parameters, balanced by size: largest first, each
// to the rank holding the fewest elements so far (ties to the lower rank),
// over the optimizer's groups in order. A rank may own nothing (more ranks
// than parameters). Checkpoints hold the whole state: full_state_dict()
// gathers it (a collective) in the unsharded optimizer's format, so a run
// can be resumed with or without ZeRO; load_full_state_dict keeps each rank's
// share.
// Not here: sharding gradients or parameters (ZeRO stages 2 and 3).
#pragma once

#include <cstdint>
#include <vector>

#include "core/distributed.h"
#include "nn/optim.h"

namespace ks::nn {

class ZeroOptimizer {
 public:
  ZeroOptimizer(Optimizer& optimizer, dist::ProcessGroup& group);

  // The owned parameters' update, then the all-gather of every parameter.
  void step();
  // Every parameter's state, on every rank (a collective: all ranks call it).
  NamedTensors full_state_dict() const;
  // `state` is a full state dict (state_dict() of an unsharded optimizer, or
  // full_state_dict()); this rank keeps its share.
  void load_full_state_dict(const NamedTensors& state);

  int owner(size_t group, size_t index) const { return owner_[group][index]; }
  int64_t owned_elements() const { return owned_elements_; }  // parameters' elements this rank updates
  Optimizer& optimizer() const { return optimizer_; }

 private:
  Optimizer& optimizer_;
  dist::ProcessGroup& group_;
  std::vector<std::vector<int>> owner_;  // [group][index] -> rank
  std::vector<int64_t> rank_elements_;   // elements owned per rank
  int64_t owned_elements_ = 0;
  Tensor reference_;  // a parameter: the dtype and device of the gathered buffers
};

}  // namespace ks::nn
