// The host time of one new GDN forward plan (kernels/gdn/src/Schedule.cpp)
// with known sequence lengths: N sequences of 1 .. 8192 random tokens at
// Hv = 32, 20 plans each (all distinct, so the memo never serves them). No
// GPU. From the repository root:
//
//   g++ -std=c++20 -O2 -Ikernels/gdn/src bench/gdn_schedule_cost.cpp kernels/gdn/src/Schedule.cpp \
//       -o /tmp/gdn_schedule_cost && /tmp/gdn_schedule_cost
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "Schedule.h"

using namespace qla::gdn;

int main() {
  MachineModel m;
  std::mt19937 rng(1);
  for (int n : {8, 64, 512, 4096}) {
    const int reps = 20;
    double total = 0;
    for (int r = 0; r < reps; ++r) {
      std::vector<int64_t> cu = {0};
      for (int i = 0; i < n; ++i) cu.push_back(cu.back() + 1 + int64_t(rng() % 8192));
      ForwardShape s{1, cu.back(), 32, 128, 128, n};
      setSequenceChunks(s, cu.data());
      const auto t0 = std::chrono::steady_clock::now();
      const Schedule sch = forwardSchedule(s, m, 0, 0, 0);
      total += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      if (sch.numIds < 1) return 1;
    }
    std::printf("N = %d: %.0f us per new plan\n", n, total / reps);
  }
  return 0;
}
