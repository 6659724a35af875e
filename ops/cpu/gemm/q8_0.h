// ops/cpu/gemm/q8_0.h — the Q8_0 weight product's kernels (ops/q8_0.h's
// linear_q8_0): c (m, n) = a (m, k) · Wᵀ + bias, W (n, k) in Q8_0 blocks,
// a and c float32.
//
// Few rows (decoding, m ≤ 16): a's rows are rounded to int16 blocks of 32
// (quantize_activations, below), then four of W's rows at a time are read
// from memory once, each block of 32 int8 weights widened to int16 and
// multiplied with the block's 32 activations by integer multiply-adds
// (vpmaddwd: 16 exact int32 sums of adjacent pairs), and those sums scaled
// in float32 by the weight block's d times the activation block's scale:
// 1.06 bytes a weight streamed where float32 streams 4, and half the
// instructions of widening the weights to float32. llama.cpp rounds the
// activations to int8 blocks (Q8_0) for its integer dot product; int16
// keeps 2^-16 of each block's largest value. More rows (a prompt,
// q8_0_gemm in q8_0_gemm.cpp): the same int16 activation blocks, and W
// widened to int16 once for all rows, 32 of its rows at a time packed in
// pairs for AVX-512 VNNI's vpdpwssd: each block of 32 summed exactly in
// int32 for 4 rows of a × 32 outputs, then scaled in float32 (that file
// says the layout and the bits).
//
// Bits (few rows). Each output sums 16 float32 lanes: for block b, lane l
// takes p = q[2l]·x[2l] + q[2l+1]·x[2l+1] (an exact int32) and acc[l] =
// fma(float(p), d_b · s_b, acc[l]); the lanes are added in lanes.h's tree
// (l + l+8, + 4, + 2, + 1), then the bias. The AVX-512 kernel, the AVX2 one
// (two 8-lane halves) and the portable one compute exactly this, so they
// give the same bits, for any split of the outputs among threads, and a row
// of c does not depend on the other rows of a.
// Not here: the weights' quantization (ops/q8_0.cpp), the choice of this
// kernel (a module holding a Q8_0 weight, nn/layers.h).
#pragma once

#include <cstdint>
#include <vector>

#include "ops/q8_0.h"

namespace ks::cpu {

// Avx512Vnni: AVX-512 with vpdpwssd; only q8_0_gemm uses it (the few-row
// kernel runs as Avx512 there).
enum class Q8Isa { Portable, Avx2, Avx512, Avx512Vnni };
bool q8_0_has(Q8Isa isa);              // this CPU (KS_CPU_ISA's cap applied) runs it
const char* q8_0_isa_name(Q8Isa isa);  // for messages: "AVX512-VNNI", ...
// The widest kernel this CPU runs (KS_CPU_ISA's cap applied).
Q8Isa q8_0_widest_isa();

// Both kernels' activations: each row of a cut into blocks of 32 values,
// each block rounded to int16 against its own scale s = amax / 32767 (q =
// the nearest integer to x · (1 / s), ties to even): an error of at most
// s / 2, 2^-16 of the block's largest value, where bf16 rounds each value
// by up to 2^-9 of itself. A block holding a NaN or an infinity gets a NaN
// scale, so its products are NaN as float32's would be; a block whose
// values are all below about 4e-34 (s below float32's smallest normal
// number) becomes zeros.
struct ActivationBlocks {
  int64_t m = 0;
  std::vector<int16_t> q;  // (m, k)
  std::vector<float> s;    // (m, k / 32)
};
// On `isa` (portable or AVX-512 code: the same bits).
ActivationBlocks quantize_activations(const float* a, int64_t m, int64_t k, Q8Isa isa = q8_0_widest_isa());

// Up to this many rows of a the few-row kernel runs; above, q8_0_gemm.
constexpr int64_t kQ8FewRows = 16;
// c = a · Wᵀ (+ bias) with the few-row kernel on `isa` (the CPU must have
// it), whatever m is; on oneTBB tasks when `threaded` and it is worth it.
void q8_0_rows(float* c, const float* a, int64_t m, const Q8Matrix& w, const float* bias, Q8Isa isa, bool threaded);
// The same product with the many-row kernel, whatever m is (other bits
// than q8_0_rows': its sums are added in another order).
void q8_0_gemm(float* c, const float* a, int64_t m, const Q8Matrix& w, const float* bias, Q8Isa isa, bool threaded);

}  // namespace ks::cpu
