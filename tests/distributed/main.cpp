// tests/distributed/main.cpp — the doctest main of the distributed suite,
// which ctest runs under `mpirun -np 2`: every rank runs every case in the
// same order (the cases call collectives), then MPI is finalised. Run
// alone it skips (exit 77): the cases need two ranks.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "core/distributed.h"

int main(int argc, char** argv) {
  const ks::dist::LaunchInfo info = ks::dist::launch_info();
  if (!info.launched || info.size != 2) {
    std::printf("skipped: run under mpirun -np 2 (ctest does)\n");
    return 77;
  }
  doctest::Context context(argc, argv);
  // Only rank 0 reports, so a failure is printed once per rank that has it.
  if (info.rank != 0) context.setOption("minimal", true);
  const int code = context.run();
  ks::dist::ProcessGroup& g = ks::dist::world();
  // A failure on one rank fails the test on both.
  const double failed = g.all_reduce(std::vector<double>{code ? 1.0 : 0.0})[0];
  ks::dist::shutdown();
  return failed > 0 ? 1 : 0;
}
