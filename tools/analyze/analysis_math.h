// tools/analyze/analysis_math.h — the numerical core of `keystone analyze`: plain
// functions on double arrays that compare probability vectors (entropy,
// Jensen–Shannon divergence), directions (cosine similarity) and measure the
// dimensionality of a matrix (singular values, numerical and effective rank).
//
// Everything is float64 and exact up to rounding: no sampling, no silent
// renormalisation or clamping of bad inputs. Probability vectors are checked
// (finite, >= 0, summing to 1 within kProbabilitySumTolerance) and a bad one
// throws ks::Error naming the function, the index and the value.
//
// Not here: reading runs or checkpoints, Tensors, printing or the command's
// flags (tools/analyze/analyze.cpp); anything on the GPU.
#pragma once

#include <cstdint>
#include <vector>

namespace ks::tools::analysis {

// How far a probability vector's sum may be from 1. Loose enough for rows of
// a float32 softmax converted to double (each entry is within 2^-24 relative,
// so the sum is off by ~1e-7), tight enough to refuse counts, logits or a row
// cut short. Rows from bfloat16 (8 mantissa bits) may miss it: renormalise
// those in the caller, on purpose, before calling.
inline constexpr double kProbabilitySumTolerance = 1e-3;

// Shannon entropy H(p) = −Σ p_i ln p_i in nats, with 0·ln 0 = 0; in
// [0, ln n]. p: (n,), a probability vector (checked as above; n >= 1).
double entropy(const double* p, int64_t n);

// Jensen–Shannon divergence in nats (Lin, 1991, "Divergence measures based on
// the Shannon entropy", IEEE Trans. Inf. Theory 37(1)):
//   JS(P, Q) = ½ KL(P ‖ M) + ½ KL(Q ‖ M),  M = (P + Q) / 2,
// with 0·ln 0 = 0. Symmetric, finite even for disjoint supports, in [0, ln 2]:
// 0 iff P = Q, ln 2 iff their supports are disjoint. p, q: (n,), probability
// vectors over the same support (both checked; n >= 1). Rounding within the
// sum tolerance can push the sum a hair outside [0, ln 2]; the result is
// clamped to that interval.
double js_divergence(const double* p, const double* q, int64_t n);

// Cosine of the angle between a and b, a·b / (‖a‖ ‖b‖), in [−1, 1].
// a, b: (n,), finite (checked). A zero vector has no direction, so by
// convention: both zero -> 1 (the same vector), exactly one zero -> 0 (no
// alignment). n = 0 counts as two zero vectors -> 1. Each vector is scaled
// by its largest |entry| first, so entries near 1e±300 neither overflow nor
// underflow the norms.
double cosine_similarity(const double* a, const double* b, int64_t n);

// The singular values of a row-major (rows, cols) matrix, descending:
// min(rows, cols) of them (none when rows or cols is 0). Computed by LAPACK's
// dgesdd (divide and conquer, values only) in float64. a: rows·cols entries,
// finite (checked); not modified. Throws ks::Error if rows or cols does not
// fit LAPACK's 32-bit int, or if dgesdd does not converge.
std::vector<double> singular_values(const double* a, int64_t rows, int64_t cols);

// The number of singular values σ_i > rel_tol · σ_max, σ_max = max_i σ_i
// (sv need not be sorted). Strictly greater, so an all-zero or empty
// spectrum has rank 0 for every rel_tol, and rel_tol = 0 counts the nonzero
// values. The tolerance is relative to σ_max so that it does not depend on
// the matrix's scale; NumPy's matrix_rank default is rel_tol =
// max(rows, cols) · DBL_EPSILON (≈ 2.2e-16 per row or column), the level of
// dgesdd's own rounding, while a larger one (1e-6, 1e-3) asks "how many
// directions matter" instead. sv: finite, >= 0; rel_tol: finite, >= 0 (checked).
int64_t numerical_rank(const std::vector<double>& sv, double rel_tol);

// The effective rank of Roy & Vetterli (2007), "The effective rank: a measure
// of effective dimensionality", EUSIPCO: with p_i = σ_i / Σ_j σ_j,
//   erank = exp(−Σ p_i ln p_i)   (0·ln 0 = 0),
// a real number in [1, number of nonzero σ_i]: k equal nonzero values give k,
// one nonzero value gives 1. An all-zero or empty spectrum gives 0. sv:
// finite, >= 0 (checked), in any order.
double effective_rank(const std::vector<double>& sv);

}  // namespace ks::tools::analysis
