// core/parallel.h — the one place Keystone runs work on several threads.
//
// parallel_for splits [begin, end) into chunks of at least `grain` indices and
// runs them on a single oneTBB task arena whose size is num_threads(). Work
// smaller than one grain runs inline on the caller, so tiny tensors pay no
// scheduling cost. Kernels choose grain so one chunk is ~tens of microseconds.
// The thread count comes from KS_NUM_THREADS, else the machine's cores.
#pragma once

#include <cstdint>
#include <functional>

namespace ks {

int num_threads();
void set_num_threads(int n);  // n >= 1

// A typical grain for cheap elementwise work, in elements.
constexpr int64_t kElementwiseGrain = 32768;

void parallel_for_impl(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

// body(chunk_begin, chunk_end) is called for disjoint chunks covering [begin, end).
template <class F> inline void parallel_for(int64_t begin, int64_t end, int64_t grain, F&& body) {
  if (end <= begin) return;
  if (grain < 1) grain = 1;
  if (end - begin <= grain || num_threads() == 1) {
    body(begin, end);
    return;
  }
  parallel_for_impl(begin, end, grain, std::function<void(int64_t, int64_t)>(std::forward<F>(body)));
}

// True while the calling thread runs inside parallel_for (used to avoid
// nesting threaded BLAS inside parallel regions).
bool in_parallel_region();

}  // namespace ks
