// Maps that read a channel slot's tile at their own (row, col), or at a
// constant offset from it: the emitter
// reads each register pair's two columns with one 32-bit (f32: 64-bit) load
// and splits it (EmitFragments.cpp, emitParallel). Run on QLA's CPU
// simulator (QLA_SIM=1): every element lands in its place for bf16, f16 and
// f32 tiles, whole heads of 64 and 128 columns (the 128-byte swizzle's two
// and four blocks), and a row sum of a product of two slots.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "qla/jit.h"
#include "qla/runtime/Sim.h"

namespace {

const char *kSource = R"(
kernel pairs<DT = bf16, N = 64>(A: DT[R, C], B: DT[R, C], Y: out f32[R, C], S: out f32[R])
  grid(1) threads(256)
{
  channel ch: { a: DT[64, N], b: DT[64, N] } depth(1)
  role load: warpgroup 0, regs 40 {
    put ch -> (a, b) {
      copy A[0 :+ 64, 0 :+ N] -> a
      copy B[0 :+ 64, 0 :+ N] -> b
    }
  }
  role m: warpgroup 1 {
    frag y: f32[64, N] = 1.0
    frag s: f32[64] = 0.0
    get ch -> (a, b) {
      for (i, j) in parallel(64, N) { y[i, j] = a[i, j] * 2.0 + y[i, j] * f32(j) }
      for (i, j) in parallel(64, N) { s[i] += a[i, j] * b[i, j] }
    }
    copy y -> Y[0 :+ 64, 0 :+ N]
    copy s -> S[0 :+ 64]
  }
}
)";

// The value x rounded to the storage type (exact in it), and its bits.
uint16_t toHalfBits(const std::string &dt, float x, float &back) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if (dt == "bf16") {
    uint16_t h = uint16_t(u >> 16);  // x is exact in bf16 below (8 significant bits)
    uint32_t w = uint32_t(h) << 16;
    std::memcpy(&back, &w, 4);
    return h;
  }
  // f16: x is a multiple of 1/16 in [-8, 8): exact.
  const int sign = x < 0;
  float a = std::fabs(x);
  int e = 0;
  float m = std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1)
  uint16_t h;
  if (a == 0) h = 0;
  else h = uint16_t(((e - 1 + 15) << 10) | (uint16_t(std::lround((m * 2 - 1) * 1024)) & 0x3ff));
  h |= uint16_t(sign << 15);
  back = x;
  return h;
}

}  // namespace

TEST_CASE("a map reads slot tiles in register pairs: bf16, f16, f32 (the simulator)", "[compiler][sim]") {
  ::setenv("QLA_SIM", "1", 1);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pick(-128, 127);
  for (const std::string dt : {"bf16", "f16", "f32"})
    for (int n : {64, 128}) {
      INFO(dt << " N = " << n);
      qla::JitOptions opt;
      opt.defines = {{"DT", dt}, {"N", std::to_string(n)}};
      qla::JitKernel k = qla::jitCompileString(kSource, "pairs.qla", opt);
      const int eb = dt == "f32" ? 4 : 2;
      std::vector<unsigned char> A(size_t(64 * n * eb)), B(A.size());
      std::vector<float> a(size_t(64 * n)), b(a.size());
      for (size_t i = 0; i < a.size(); ++i)
        for (auto [buf, val] : {std::pair<unsigned char *, float *>{A.data(), &a[i]}, {B.data(), &b[i]}}) {
          const float x = float(pick(rng)) / 16.0f;  // exact in every dtype here
          if (eb == 4) {
            std::memcpy(buf + i * 4, &x, 4);
            *val = x;
          } else {
            const uint16_t h = toHalfBits(dt, x, *val);
            std::memcpy(buf + i * 2, &h, 2);
          }
        }
      std::vector<float> Y(a.size(), std::nanf("")), S(64, std::nanf(""));
      qla::rt::LaunchArgs args;
      args.tensors = {{A.data(), {64, n}}, {B.data(), {64, n}}, {Y.data(), {64, n}}, {S.data(), {64}}};
      k.launch(args);
      int bad = 0, badSum = 0;
      for (int i = 0; i < 64; ++i) {
        double sum = 0;
        for (int j = 0; j < n; ++j) {
          const size_t x = size_t(i * n + j);
          bad += Y[x] != a[x] * 2.0f + float(j);
          sum += double(a[x]) * double(b[x]);
        }
        badSum += std::fabs(double(S[size_t(i)]) - sum) > 1e-3;  // sums of multiples of 1/256: exact in f32
      }
      CHECK(bad == 0);
      CHECK(badSum == 0);
    }
  ::unsetenv("QLA_SIM");
}

namespace {

// Slot tiles read at constant offsets from the block's position: a block over
// the second column half (even offset: one load per register pair), over
// columns 1 .. 64 (odd: a load per element) and over the second row half.
const char *kOffsetSource = R"(
kernel offsets<DT = bf16>(A: DT[64, 128], B: DT[128, 64], Y: out f32[3, 64, 64], S: out f32[64])
  grid(1) threads(256)
{
  channel ch: { a: DT[64, 128], b: DT[128, 64] } depth(1)
  role load: warpgroup 0, regs 40 {
    put ch -> (a, b) {
      copy A[0 :+ 64, 0 :+ 128] -> a
      copy B[0 :+ 128, 0 :+ 64] -> b
    }
  }
  role m: warpgroup 1 {
    frag y: f32[64, 64] = 0.0
    frag z: f32[64, 64] = 0.0
    frag w: f32[64, 64] = 0.0
    frag s: f32[64] = 0.0
    get ch -> (a, b) {
      for (i, j) in parallel(64, 64) { y[i, j] = a[i, j + 64] }
      for (i, j) in parallel(64, 64) { z[i, j] = a[i, 1 + j] }
      for (i, j) in parallel(64, 64) { w[i, j] = b[i + 64, j] }
      for (i, j) in parallel(64, 64) { s[i] += a[i, j + 64] * b[i + 64, j] }
    }
    copy y -> Y[0, 0 :+ 64, 0 :+ 64]
    copy z -> Y[1, 0 :+ 64, 0 :+ 64]
    copy w -> Y[2, 0 :+ 64, 0 :+ 64]
    copy s -> S[0 :+ 64]
  }
}
)";

}  // namespace

TEST_CASE("a map reads slot tiles at constant offsets from its position (the simulator)", "[compiler][sim]") {
  ::setenv("QLA_SIM", "1", 1);
  std::mt19937 rng(9);
  std::uniform_int_distribution<int> pick(-128, 127);
  for (const std::string dt : {"bf16", "f16"}) {
    INFO(dt);
    qla::JitOptions opt;
    opt.defines = {{"DT", dt}};
    qla::JitKernel k = qla::jitCompileString(kOffsetSource, "offsets.qla", opt);
    std::vector<uint16_t> A(64 * 128), B(128 * 64);
    std::vector<float> a(A.size()), b(B.size());
    for (size_t i = 0; i < A.size(); ++i) {
      A[i] = toHalfBits(dt, float(pick(rng)) / 16.0f, a[i]);
      B[i] = toHalfBits(dt, float(pick(rng)) / 16.0f, b[i]);
    }
    std::vector<float> Y(3 * 64 * 64, std::nanf("")), S(64, std::nanf(""));
    qla::rt::LaunchArgs args;
    args.tensors = {{A.data(), {64, 128}}, {B.data(), {128, 64}}, {Y.data(), {3, 64, 64}}, {S.data(), {64}}};
    k.launch(args);
    int bad = 0, badSum = 0;
    for (int i = 0; i < 64; ++i) {
      double sum = 0;
      for (int j = 0; j < 64; ++j) {
        bad += Y[size_t(i * 64 + j)] != a[size_t(i * 128 + j + 64)];
        bad += Y[size_t(4096 + i * 64 + j)] != a[size_t(i * 128 + j + 1)];
        bad += Y[size_t(8192 + i * 64 + j)] != b[size_t((i + 64) * 64 + j)];
        sum += double(a[size_t(i * 128 + j + 64)]) * double(b[size_t((i + 64) * 64 + j)]);
      }
      badSum += std::fabs(double(S[size_t(i)]) - sum) > 1e-3;
    }
    CHECK(bad == 0);
    CHECK(badSum == 0);
  }
  ::unsetenv("QLA_SIM");
}
