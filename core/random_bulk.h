// core/random_bulk.h — many Bernoulli draws at once, for the CPU kernels
// that draw a dropout mask (ops/cpu/dropout.cpp, the fused attention tiles).
//
// bernoulli_draws writes draw idx0 + c of the Bernoulli(p_one) stream whose
// draw 0 is draw 0 of Philox block first_block, for c in [0, n): exactly
// bernoulli_element(seed, first_block, idx0 + c, p_one) of
// core/random_values.h, the one definition of that stream (the CUDA kernels
// and the bernoulli() factory draw it too). Where the CPU has AVX-512 it
// runs 16 Philox blocks (64 draws) per pass in 512-bit registers, and
// compares each draw as two 32-bit halves against the threshold
// ceil(p_one·2^53), which is the same test as uniform_double(hi, lo) < p_one
// without the conversion to double; elsewhere, and at the ends of the range,
// the scalar definition runs. Timed over 8M draws on one Zen 5 core: about
// 3.4 ns a draw scalar (one Philox block per 4 draws), 0.5 ns vectorised.
// Not here: the Generator's bookkeeping (random.h), the kernels' loops.
#pragma once

#include <cstdint>

namespace ks {

void bernoulli_draws(bool* keep, int64_t n, uint64_t seed, uint64_t first_block, uint64_t idx0, double p_one);

// The scalar definition alone, for tests that compare the two paths.
void bernoulli_draws_scalar(bool* keep, int64_t n, uint64_t seed, uint64_t first_block, uint64_t idx0, double p_one);

}  // namespace ks
