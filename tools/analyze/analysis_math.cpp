// tools/analyze/analysis_math.cpp — entropy, Jensen–Shannon divergence, cosine
// similarity, singular values (LAPACK dgesdd) and ranks of
// tools/analyze/analysis_math.h, in float64.
//
// Not here: anything that reads a run or a Tensor (tools/analyze/analyze.cpp).
#include "tools/analyze/analysis_math.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstddef>
#include <numbers>

#include "core/error.h"

// LAPACK's divide-and-conquer SVD, exported by OpenBLAS (which bundles
// LAPACK; Debian ships no lapacke.h to declare it for us). Fortran passes
// everything by reference, and gfortran appends the length of each
// CHARACTER argument as a hidden trailing size_t: LAPACK's own C header
// (lapack.h, LAPACK_FORTRAN_STRLEN_END) passes it, and so do we, since GCC
// may tail-call from a Fortran routine relying on that slot being there.
// A callee built without it (f2c-style C) simply ignores the extra argument.
extern "C" void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s, double* u,
                        const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork, int* iwork,
                        int* info, size_t jobz_len);

namespace ks::tools::analysis {
namespace {

// p: (n,) is a probability vector: finite entries >= 0 summing to 1 within
// kProbabilitySumTolerance. `what` names the caller and the argument.
void check_probabilities(const char* what, const double* p, int64_t n) {
  KS_CHECK(n >= 1, what, ": a probability vector needs at least one entry, got n = ", n);
  KS_CHECK(p != nullptr, what, ": null pointer for ", n, " entries");
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    KS_CHECK(std::isfinite(p[i]), what, ": entry ", i, " is ", p[i], ", not a finite probability");
    KS_CHECK(p[i] >= 0, what, ": entry ", i, " is ", p[i], ", a negative probability");
    sum += p[i];
  }
  KS_CHECK(std::abs(sum - 1) <= kProbabilitySumTolerance, what, ": entries sum to ", sum, ", not 1 (within ",
           kProbabilitySumTolerance, "); this function does not renormalise");
}

void check_finite(const char* what, const double* x, int64_t n) {
  KS_CHECK(n >= 0, what, ": negative length ", n);
  KS_CHECK(n == 0 || x != nullptr, what, ": null pointer for ", n, " entries");
  for (int64_t i = 0; i < n; ++i) KS_CHECK(std::isfinite(x[i]), what, ": entry ", i, " is ", x[i], ", not finite");
}

// A spectrum: finite values >= 0.
void check_spectrum(const char* what, const std::vector<double>& sv) {
  for (size_t i = 0; i < sv.size(); ++i) {
    KS_CHECK(std::isfinite(sv[i]), what, ": singular value ", i, " is ", sv[i], ", not finite");
    KS_CHECK(sv[i] >= 0, what, ": singular value ", i, " is ", sv[i], ", negative");
  }
}

// x · ln(x / m) with 0 · ln 0 = 0; m >= x / 2 > 0 whenever x > 0. The ratio
// form keeps the term exactly 0 where x == m, unlike x ln x − x ln m.
double kl_term(double x, double m) { return x > 0 ? x * std::log(x / m) : 0.0; }

double max_abs(const double* x, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::abs(x[i]));
  return m;
}

}  // namespace

double entropy(const double* p, int64_t n) {
  check_probabilities("entropy: p", p, n);
  double h = 0;
  for (int64_t i = 0; i < n; ++i)
    if (p[i] > 0) h -= p[i] * std::log(p[i]);
  // An entry a rounding error above 1 (allowed by the sum tolerance) gives a
  // term a hair below 0.
  return std::max(h, 0.0);
}

double js_divergence(const double* p, const double* q, int64_t n) {
  check_probabilities("js_divergence: p", p, n);
  check_probabilities("js_divergence: q", q, n);
  double js = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double m = 0.5 * (p[i] + q[i]);  // exact for p == q, so the term is 0
    js += 0.5 * (kl_term(p[i], m) + kl_term(q[i], m));
  }
  // Sums within the tolerance of 1 can move the result by that much past the
  // interval's ends (disjoint supports give ln 2 · (Σp + Σq) / 2).
  return std::clamp(js, 0.0, std::numbers::ln2);
}

double cosine_similarity(const double* a, const double* b, int64_t n) {
  check_finite("cosine_similarity: a", a, n);
  check_finite("cosine_similarity: b", b, n);
  const double sa = max_abs(a, n), sb = max_abs(b, n);
  if (sa == 0 || sb == 0) return (sa == 0 && sb == 0) ? 1.0 : 0.0;
  // The cosine does not change with each vector's scale; dividing by the
  // largest |entry| keeps the sums of squares in [1, n].
  double dot = 0, na = 0, nb = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = a[i] / sa, y = b[i] / sb;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  // Parallel vectors can round to 1 + 2^-52.
  return std::clamp(dot / (std::sqrt(na) * std::sqrt(nb)), -1.0, 1.0);
}

std::vector<double> singular_values(const double* a, int64_t rows, int64_t cols) {
  KS_CHECK(rows >= 0 && cols >= 0, "singular_values: negative shape [", rows, ", ", cols, "]");
  KS_CHECK(rows <= INT_MAX && cols <= INT_MAX, "singular_values: shape [", rows, ", ", cols,
           "] does not fit LAPACK's 32-bit int (at most ", INT_MAX, " per side)");
  if (rows == 0 || cols == 0) return {};
  check_finite("singular_values: a", a, rows * cols);  // LAPACK gives no meaning to NaN or inf input

  // Row-major (rows, cols) read as column-major is the (cols, rows) transpose,
  // which has the same singular values: so no copy-transpose, only a copy
  // (dgesdd overwrites its input).
  std::vector<double> work_a(a, a + rows * cols);  // column-major (cols, rows), lda = cols
  const int m = int(cols), n = int(rows), lda = m;
  const int mn = std::min(m, n), mx = std::max(m, n);
  std::vector<double> s(static_cast<size_t>(mn));
  std::vector<int> iwork(8 * size_t(mn));
  const char jobz = 'N';  // values only: u and vt are not referenced, ldu = ldvt = 1 suffice
  const int one = 1;
  double u_unused = 0, vt_unused = 0;

  // Workspace query (lwork = -1): the optimal size comes back in work[0].
  // Never below the documented minimum for jobz = 'N', 3·mn + max(mx, 7·mn).
  int info = 0, lwork = -1;
  double query = 0;
  dgesdd_(&jobz, &m, &n, work_a.data(), &lda, s.data(), &u_unused, &one, &vt_unused, &one, &query, &lwork, iwork.data(),
          &info, 1);
  KS_CHECK(info == 0, "singular_values: LAPACK dgesdd's workspace query failed (info = ", info, ") for shape [", rows,
           ", ", cols, "]");
  const double minimum = 3.0 * mn + std::max(double(mx), 7.0 * mn);
  const double size = std::max(query, minimum);
  KS_CHECK(size <= double(INT_MAX), "singular_values: shape [", rows, ", ", cols, "] needs a LAPACK workspace of ",
           size, " doubles, more than its 32-bit int can count");
  lwork = int(size);
  std::vector<double> work(static_cast<size_t>(lwork));

  dgesdd_(&jobz, &m, &n, work_a.data(), &lda, s.data(), &u_unused, &one, &vt_unused, &one, work.data(), &lwork,
          iwork.data(), &info, 1);
  KS_CHECK(info >= 0, "singular_values: LAPACK dgesdd rejected argument ", -info, " for shape [", rows, ", ", cols,
           "] (a Keystone bug)");
  KS_CHECK(info == 0, "singular_values: LAPACK dgesdd did not converge for shape [", rows, ", ", cols,
           "] (info = ", info, ")");
  return s;  // LAPACK returns them sorted, s[0] >= s[1] >= ... >= 0
}

int64_t numerical_rank(const std::vector<double>& sv, double rel_tol) {
  check_spectrum("numerical_rank", sv);
  KS_CHECK(std::isfinite(rel_tol) && rel_tol >= 0, "numerical_rank: rel_tol is ", rel_tol, ", not a finite value >= 0");
  const double s_max = sv.empty() ? 0.0 : *std::max_element(sv.begin(), sv.end());
  const double threshold = rel_tol * s_max;
  return std::count_if(sv.begin(), sv.end(), [&](double s) { return s > threshold; });
}

double effective_rank(const std::vector<double>& sv) {
  check_spectrum("effective_rank", sv);
  const double s_max = sv.empty() ? 0.0 : *std::max_element(sv.begin(), sv.end());
  if (s_max == 0) return 0.0;
  // p_i does not change with the spectrum's scale; dividing by σ_max first
  // keeps Σσ from overflowing for values near 1e308.
  double total = 0;
  for (double s : sv) total += s / s_max;
  double h = 0;
  for (double s : sv) {
    const double p = (s / s_max) / total;
    if (p > 0) h -= p * std::log(p);
  }
  return std::exp(h);
}

}  // namespace ks::tools::analysis
