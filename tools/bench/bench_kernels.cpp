// tools/bench/bench_kernels.cpp — Keystone's kernels against the machine's own
// yardsticks, in one run:
//   1. float32 1024x1024 matmul (ks::matmul, output allocation included) vs a
//      direct cblas_sgemm on the same data into a preallocated buffer;
//   2. 128 attention-head GEMMs (8, 16, 256, 32) @ (8, 16, 32, 256) vs a plain
//      loop of threaded cblas_sgemm calls;
//   3. bf16 GEMMs (MatmulPrecision::BFloat16) on every bf16 kernel this machine
//      has (without one bf16 is the float32 column), at 1024³ and at the
//      reference LM's shapes (4096 tokens), beside
//      the tile-resident AMX peak measured on the same threads
//      (../shared/bench/amx_peak.c's loop) and float32 sgemm;
//   4. ks::add of 16M floats (output allocated per call, as a user sees it,
//      and into a preallocated output through the kernel table) vs memcpy of
//      the same 64 MiB.
// Times are best-of-N wall clock. Each result is dropped before the next call,
// as in a training step, so the caching allocator hands back the same block.
// Bandwidths count the bytes each side moves:
// add reads two arrays and writes one (3 x 64 MiB); memcpy reads one and
// writes one (2 x 64 MiB). memcpy runs on one thread, add on --threads.
//
//   ks_bench_kernels [--threads N (default 2)] [--reps N (default 20)]
//
// Not a test: it prints figures and exits 0; the acceptance lines say "ok" or "LOW".
#include <cblas.h>
#include <immintrin.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/matmul_precision.h"
#include "keystone.h"

namespace {

template <class F> double best_seconds(int reps, F&& f) {
  f();  // warm-up: first-touch pages, caches, thread start-up
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s < best) best = s;
  }
  return best;
}

const char* verdict(double ratio, double floor) { return ratio >= floor ? "ok" : "LOW"; }

void bench_matmul(int threads, int reps) {
  const int n = 1024;
  ks::Generator g(1);
  ks::Tensor a = ks::randn({n, n}, {}, &g), b = ks::randn({n, n}, {}, &g);
  const double ours = best_seconds(reps, [&] { ks::matmul(a, b); });

  std::vector<float> out(size_t(n) * n);
  openblas_set_num_threads(threads);
  const double direct = best_seconds(reps, [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data<float>(), n, b.data<float>(), n, 0.0f,
                out.data(), n);
  });
  const double flop = 2.0 * n * n * n;
  const double ratio = direct / ours;
  std::printf("matmul f32 %dx%dx%d   ks::matmul %7.1f GFLOP/s  cblas_sgemm %7.1f GFLOP/s  ratio %.3f (>= 0.9 %s)\n", n,
              n, n, flop / ours * 1e-9, flop / direct * 1e-9, ratio, verdict(ratio, 0.9));
}

void bench_attention(int threads, int reps) {
  const int B = 8, H = 16, T = 256, D = 32;
  ks::Generator g(2);
  ks::Tensor q = ks::randn({B, H, T, D}, {}, &g), k = ks::randn({B, H, D, T}, {}, &g);
  const double ours = best_seconds(reps, [&] { ks::matmul(q, k); });

  std::vector<float> out(size_t(B) * H * T * T);
  openblas_set_num_threads(threads);
  const double loop = best_seconds(reps, [&] {
    for (int i = 0; i < B * H; ++i)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, T, D, 1.0f, q.data<float>() + size_t(i) * T * D, D,
                  k.data<float>() + size_t(i) * D * T, T, 0.0f, out.data() + size_t(i) * T * T, T);
  });
  const double flop = 2.0 * B * H * T * T * D;
  std::printf("matmul f32 %d x (%dx%dx%d)  ks::matmul %7.1f GFLOP/s  sgemm loop  %7.1f GFLOP/s  ratio %.3f\n", B * H, T,
              T, D, flop / ours * 1e-9, flop / loop * 1e-9, loop / ours);
}

struct alignas(64) TileConfig {
  uint8_t palette_id, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

// amx_peak.c's loop: four accumulator tiles, _tile_dpbf16ps with no memory traffic.
__attribute__((target("amx-tile,amx-bf16"))) void amx_tile_loop(long iters) {
  TileConfig c;
  std::memset(&c, 0, sizeof c);
  c.palette_id = 1;
  for (int i = 0; i < 8; i++) {
    c.rows[i] = 16;
    c.colsb[i] = 64;
  }
  _tile_loadconfig(&c);
  alignas(64) static uint16_t A[16 * 32], B[16 * 32];
  for (int i = 0; i < 16 * 32; i++) A[i] = B[i] = 0x3c00;
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, A, 64);
  _tile_loadd(5, A, 64);
  _tile_loadd(6, B, 64);
  _tile_loadd(7, B, 64);
  for (long i = 0; i < iters; i++) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  alignas(64) float C[16 * 16];
  _tile_stored(0, C, 64);
  // Every kernel of this process keeps its tile configuration: load it back as the GEMMs expect.
  for (int i = 0; i < 8; i++) c.rows[i] = 16;
  _tile_loadconfig(&c);
}

void bench_bf16(int threads, int reps) {
  struct Shape3 {
    const char* what;
    int64_t m, n, k;
    bool ta;
    bool tb = false;  // B given as (n, k) transposed: the input gradient's g·W
  };
  const Shape3 shapes[] = {{"1024^3", 1024, 1024, 1024, false},
                           {"qkv  x(4096,256) W(256,768)", 4096, 768, 256, false},
                           {"ff1  x(4096,256) W(256,1024)", 4096, 1024, 256, false},
                           {"ff2  x(4096,1024) W(1024,256)", 4096, 256, 1024, false},
                           {"head x(4096,256) E(256,8192)", 4096, 8192, 256, false},
                           {"dW   xT(256,4096) g(4096,1024)", 256, 1024, 4096, true},
                           // fixed 8 x 64 (inner width 512): its projections and their two gradients
                           {"qkv8x64  x(4096,256) W(256,1536)", 4096, 1536, 256, false},
                           {"dx8x64   g(4096,1536) WT(1536,256)", 4096, 256, 1536, false, true},
                           {"dW8x64   xT(256,4096) g(4096,1536)", 256, 1536, 4096, true},
                           {"out8x64  y(4096,512) W(512,256)", 4096, 256, 512, false}};
  if (ks::cpu_gemm_path_available(ks::CpuGemmPath::Amx)) {
    const long iters = 2000000;
    std::atomic<int> done{0};
    auto t0 = std::chrono::steady_clock::now();
    ks::parallel_for(0, threads, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) amx_tile_loop(iters), ++done;
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("AMX tile-resident peak   %7.1f GFLOP/s on %d threads (%.1f per thread)\n",
                4.0 * iters * 16 * 16 * 32 * 2 * done / s * 1e-9, done.load(),
                4.0 * iters * 16 * 16 * 32 * 2 / s * 1e-9);
  }
  const ks::CpuGemmPath original = ks::cpu_gemm_path();
  for (const Shape3& sh : shapes) {
    ks::Generator g(3);
    ks::Tensor a = sh.ta ? ks::transpose(ks::randn({sh.k, sh.m}, {}, &g), 0, 1) : ks::randn({sh.m, sh.k}, {}, &g);
    ks::Tensor b = sh.tb ? ks::transpose(ks::randn({sh.n, sh.k}, {}, &g), 0, 1) : ks::randn({sh.k, sh.n}, {}, &g);
    const double flop = 2.0 * double(sh.m) * double(sh.n) * double(sh.k);
    const double f32 = best_seconds(reps, [&] { ks::matmul(a, b); });
    std::printf("%-32s float32 %7.1f", sh.what, flop / f32 * 1e-9);
    for (ks::CpuGemmPath p : {ks::CpuGemmPath::Amx, ks::CpuGemmPath::Avx512Bf16}) {
      if (!ks::cpu_gemm_path_available(p)) continue;
      ks::set_cpu_gemm_path(p);
      ks::MatmulPrecisionScope bf16(ks::MatmulPrecision::BFloat16);
      const double t = best_seconds(reps, [&] { ks::matmul(a, b); });
      std::printf("  bf16/%s %7.1f", ks::cpu_gemm_path_name(p), flop / t * 1e-9);
    }
    std::printf("  GFLOP/s\n");
  }
  ks::set_cpu_gemm_path(original);
}

void bench_add(int reps) {
  const int64_t n = int64_t(1) << 24;
  const double bytes = double(n) * sizeof(float);
  ks::Tensor a = ks::full({n}, 1.0), b = ks::full({n}, 2.0);
  const double alloc = best_seconds(reps, [&] { ks::add(a, b); });
  ks::Tensor pre = ks::empty({n});
  const double prealloc = best_seconds(reps, [&] { ks::binary_kernel<ks::binary_ops::Add>(pre.device(), pre, a, b); });

  std::vector<char> src(size_t(bytes), 1), dst(size_t(bytes), 0);
  const double copy = best_seconds(reps, [&] { std::memcpy(dst.data(), src.data(), src.size()); });

  const double copy_gbs = 2 * bytes / copy * 1e-9;
  const double alloc_gbs = 3 * bytes / alloc * 1e-9, pre_gbs = 3 * bytes / prealloc * 1e-9;
  std::printf("memcpy 64 MiB          %7.2f ms  %6.1f GB/s (2 x 64 MiB moved, 1 thread)\n", copy * 1e3, copy_gbs);
  std::printf("add 16M f32 (alloc)    %7.2f ms  %6.1f GB/s (3 x 64 MiB moved)  vs memcpy %.3f (>= 0.5 %s)\n",
              alloc * 1e3, alloc_gbs, alloc_gbs / copy_gbs, verdict(alloc_gbs / copy_gbs, 0.5));
  std::printf("add 16M f32 (prealloc) %7.2f ms  %6.1f GB/s (3 x 64 MiB moved)  vs memcpy %.3f\n", prealloc * 1e3,
              pre_gbs, pre_gbs / copy_gbs);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, reps = 20;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if ((arg == "--threads" || arg == "--reps") && i + 1 < argc) {
      int v = std::atoi(argv[++i]);
      if (v < 1) {
        std::fprintf(stderr, "%s needs a positive number\n", arg.c_str());
        return 2;
      }
      (arg == "--threads" ? threads : reps) = v;
    } else {
      std::fprintf(stderr, "usage: %s [--threads N] [--reps N]\n", argv[0]);
      return 2;
    }
  }
  ks::set_num_threads(threads);
  std::printf("Keystone kernel bench: %d threads, best of %d (%s)\n", threads, reps, openblas_get_config());
  bench_matmul(threads, reps);
  bench_attention(threads, reps);
  bench_bf16(threads, std::max(3, reps / 4));
  bench_add(reps);
  return 0;
}
