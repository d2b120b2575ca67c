// Runs qla_kernel (the kernel of emit-reduce-cpu.qla) on the CPU, one
// std::thread per CUDA thread, on random X [R, N] (f32), and compares its
// column reductions (+, max, min along dim 0) and row sums (dim 1) with a
// host reference. The column sums must equal the reference summed in the
// emitted order exactly (bitwise: each thread's own rows, then the butterfly
// over the lanes that share lane % 4, then the warps in order), and be
// within 1e-5 (relative to the sum of |x|) of the plain sum; max and min are
// exact; the row sums of x and of x² (+ 1) within 1e-5. Prints
// "rows=R cols=N threads=T bad=S:..,M:..,L:..,RS:..,RQ:.. OK".
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char **argv) {
  int R = 64, N = 64, threadsPerBlock = 128;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("rows=", 0) == 0) R = std::stoi(a.substr(5));
    if (a.rfind("cols=", 0) == 0) N = std::stoi(a.substr(5));
    if (a.rfind("threads=", 0) == 0) threadsPerBlock = std::stoi(a.substr(8));
  }
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  std::vector<float> X(size_t(R) * N), S(N, -777.0f), M(N, -777.0f), L(N, -777.0f), RS(R, -777.0f), RQ(R, -777.0f);
  for (float &x : X) x = u(rng);

  std::memset(qla_smem_raw + QLA_SMEM_BYTES, 0xA5, kSimSmemGuard);
  simBarrier.threads = threadsPerBlock;
  std::vector<std::thread> th;
  for (int t = 0; t < threadsPerBlock; ++t)
    th.emplace_back([&, t] {
      threadIdx.x = t;
      qla_kernel(X.data(), S.data(), M.data(), L.data(), RS.data(), RQ.data(), N, 1, 1, 1, 1, 1, 1, R, N);
    });
  for (auto &t : th) t.join();

  // The emitted order for a column c: thread (warp w, lane l with l % 4 ==
  // (c % 8) / 2) sums its rows in register order (row blocks of 64, then the
  // two rows l / 4 and l / 4 + 8 of its warp's 16-row band), the lanes with
  // l / 4 = 0..7 meet by xor 4, 8, 16, the warps in order 0, 1, ...
  const int wgs = threadsPerBlock / 128, mw = R / wgs;
  int badS = 0, badM = 0, badL = 0, badRS = 0;
  for (int c = 0; c < N; ++c) {
    auto own = [&](int wgl, int warp, int g) {  // lane group g = l / 4
      float s = 0.0f;
      for (int blk = 0; blk < mw / 64; ++blk)
        for (int h = 0; h < 2; ++h) s = s + X[size_t(wgl * mw + blk * 64 + 16 * warp + g + 8 * h) * N + c];
      return s;
    };
    float total = 0.0f;
    double plain = 0.0, mag = 0.0;
    float mx = -INFINITY, mn = INFINITY;
    for (int wgl = 0; wgl < wgs; ++wgl)
      for (int warp = 0; warp < 4; ++warp) {
        float v[8];
        for (int g = 0; g < 8; ++g) v[g] = own(wgl, warp, g);
        for (int o : {1, 2, 4}) {  // lane bits 2, 3, 4 of l = 4 g + q
          float n[8];
          for (int g = 0; g < 8; ++g) n[g] = v[g] + v[g ^ o];
          std::memcpy(v, n, sizeof v);
        }
        total = (wgl == 0 && warp == 0) ? v[0] : total + v[0];
      }
    for (int r = 0; r < R; ++r) {
      const float x = X[size_t(r) * N + c];
      plain += x, mag += std::fabs(x);
      mx = std::fmax(mx, x), mn = std::fmin(mn, x);
    }
    if (std::memcmp(&S[c], &total, 4) != 0 || std::fabs(S[c] - plain) > 1e-5 * mag) ++badS;
    if (M[c] != mx) ++badM;
    if (L[c] != mn) ++badL;
  }
  int badRQ = 0;
  for (int r = 0; r < R; ++r) {
    double plain = 0.0, mag = 0.0, sq = 1.0;
    for (int c = 0; c < N; ++c) {
      const double x = X[size_t(r) * N + c];
      plain += x, mag += std::fabs(x), sq += x * x;
    }
    if (std::fabs(RS[r] - plain) > 1e-5 * mag) ++badRS;
    if (std::fabs(RQ[r] - sq) > 1e-5 * sq) ++badRQ;
  }
  int past = 0;
  for (unsigned i = 0; i < kSimSmemGuard; ++i) past += qla_smem_raw[QLA_SMEM_BYTES + i] != 0xA5;
  const bool ok = badS + badM + badL + badRS + badRQ + past == 0;
  std::printf("rows=%d cols=%d threads=%d bad=S:%d,M:%d,L:%d,RS:%d,RQ:%d past_arena_writes=%d %s\n", R, N,
              threadsPerBlock, badS, badM, badL, badRS, badRQ, past, ok ? "OK" : "FAIL");
  return ok ? 0 : 1;
}
