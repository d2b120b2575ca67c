
// Runs qla_kernel(L, X, strides..., R) on the CPU with THREADS threads and
// compares X with (I + strictly_lower(L))^-1 from a double-precision forward
// substitution. L's diagonal and upper triangle hold 7.0, which the inverse
// must ignore. Usage: sim N THREADS AMPLITUDE [BLOCKS] (entries below the
// diagonal are uniform in [-AMPLITUDE, AMPLITUDE]; with BLOCKS the expected
// result is the inverse of each BLOCKS x BLOCKS diagonal block, zero off them).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

// The accepted max |X - R| relative to max(1, max |R|): f32 arithmetic by
// default; an f16-operand kernel defines a looser one on its compile line.
#ifndef QLA_SIM_TOL
#define QLA_SIM_TOL 1e-5
#endif

int main(int argc, char **argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: %s N THREADS AMPLITUDE [BLOCKS]\n", argv[0]);
    return 2;
  }
  const int n = std::atoi(argv[1]), nthreads = std::atoi(argv[2]);
  const float amp = float(std::atof(argv[3]));
  const int blocks = argc == 5 ? std::atoi(argv[4]) : n;
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> u(-amp, amp);
  std::vector<float> L(n * n), X(n * n, -99.0f);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) L[i * n + j] = i > j ? u(rng) : 7.0f;

  std::vector<double> R(n * n, 0.0);
  for (int c = 0; c < n; ++c) {
    R[c * n + c] = 1.0;
    for (int r = c + 1; r < (c / blocks + 1) * blocks; ++r) {
      double s = 0.0;
      for (int k = c; k < r; ++k) s += double(L[r * n + k]) * R[k * n + c];
      R[r * n + c] = -s;
    }
  }

  // The arena starts as NaN (0xFF bytes), as a GPU's shared memory holds
  // whatever came before: nothing may rely on it being zero.
  std::memset(qla_smem_raw, 0xFF, QLA_SMEM_BYTES);
  std::memset(qla_smem_raw + QLA_SMEM_BYTES, 0xA5, kSimSmemGuard);
  simBarrier.threads = unsigned(nthreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < nthreads; ++t)
    threads.emplace_back([&, t] {
      threadIdx.x = unsigned(t);
      qla_kernel(L.data(), X.data(), n, 1, n, 1, n);
    });
  for (auto &t : threads) t.join();

  double maxErr = 0.0, maxRef = 0.0;
  int badUnitOrZero = 0;  // diagonal != 1 or upper triangle != 0
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      maxErr = std::fmax(maxErr, std::fabs(double(X[i * n + j]) - R[i * n + j]));
      maxRef = std::fmax(maxRef, std::fabs(R[i * n + j]));
      if ((j == i && X[i * n + j] != 1.0f) || ((j > i || i / blocks != j / blocks) && X[i * n + j] != 0.0f))
        ++badUnitOrZero;
    }
  int guardWrites = 0;  // bytes written past the arena
  for (unsigned i = 0; i < kSimSmemGuard; ++i) guardWrites += qla_smem_raw[QLA_SMEM_BYTES + i] != 0xA5;
  const bool ok = maxErr <= QLA_SIM_TOL * std::fmax(1.0, maxRef) && badUnitOrZero == 0 && guardWrites == 0;
  std::printf("n=%d blocks=%d threads=%d max|ref|=%.3g max|err|=%.3g bad_unit_or_zero=%d smem=%d past_arena_writes=%d %s\n", n,
              blocks, nthreads, maxRef, maxErr, badUnitOrZero, int(QLA_SMEM_BYTES), guardWrites, ok ? "OK" : "MISMATCH");
  return ok ? 0 : 1;
}
