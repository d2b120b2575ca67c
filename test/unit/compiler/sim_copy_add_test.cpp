// `copy(+) f -> G[...]`: a fragment added into an f32 tensor's slice (one
// atomic add an element on the GPU, qla::dev::red_add_f32 / red_add_f32x2;
// the simulator's device.h adds in place, with the GPU's flush of subnormals
// to zero). Run on QLA's CPU simulator (QLA_SIM=1): every in-range element
// of the slice becomes what it held plus the fragment's element, and nothing
// else changes, through each path of the emitter (Emitter::emitFragGlobal):
// in a role (a whole tile in range: one vector add a register pair; the
// sequence's last rows cut by `until`: per element, guarded), an odd column
// start (no pair aligned: per element), a 1-D fragment, and outside roles.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "qla/jit.h"
#include "qla/runtime/Sim.h"

namespace {

// Y: [R, 130] f32, each block adds X's tile at column c0 (0: pairs aligned;
// 1: not), rows past `lim` left alone; Z gets a row vector added.
const char *kRoleSource = R"(
kernel adds(X: f32[64, 64], Y: out f32[R, W], Z: out f32[64], c0: i32, lim: i32)
  grid(1) threads(128)
{
  role m: warpgroup 0 {
    frag f: f32[64, 64]
    copy X[0 :+ 64, 0 :+ 64] -> f
    copy(+) f -> Y[0 :+ 64 until lim, c0 :+ 64]
    frag v: f32[64]
    for (i) in parallel(64) { v[i] = f32(i) * 0.5 }
    copy(+) v -> Z[0 :+ 64]
  }
}
)";

const char *kPlainSource = R"(
kernel adds(X: f32[64, 64], Y: out f32[R, W], c0: i32, lim: i32) grid(1) threads(128) {
  frag f: f32[64, 64]
  copy X[0 :+ 64, 0 :+ 64] -> f
  copy(+) f -> Y[0 :+ 64 until lim, c0 :+ 64]
}
)";

}  // namespace

TEST_CASE("copy(+) adds a fragment into an f32 slice (the simulator)", "[compiler][sim]") {
  ::setenv("QLA_SIM", "1", 1);
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> pick(-512, 511);
  const int R = 80, W = 130;
  for (const bool roles : {true, false})
    for (const int c0 : {0, 1, 66})
      for (const int lim : {64, 37}) {
        INFO((roles ? "roles" : "no roles") << " c0 = " << c0 << " lim = " << lim);
        qla::JitKernel k = qla::jitCompileString(roles ? kRoleSource : kPlainSource, "adds.qla", {});
        std::vector<float> X(64 * 64), Y(size_t(R * W)), Z(64);
        for (float &x : X) x = float(pick(rng)) / 64.0f;  // sums exact in f32
        for (float &y : Y) y = float(pick(rng)) / 64.0f;
        for (float &z : Z) z = float(pick(rng)) / 64.0f;
        // Subnormals are flushed to zero by the add, as on the GPU: 1e-40 + 0
        // leaves 0 (X's first element), 0 + a subnormal likewise.
        X[0] = 1e-40f;
        Y[size_t(c0)] = 0.0f;
        const std::vector<float> Y0 = Y, Z0 = Z;
        qla::rt::LaunchArgs args;
        args.tensors = {{X.data(), {64, 64}}, {Y.data(), {R, W}}};
        if (roles) args.tensors.push_back({Z.data(), {64}});
        args.scalars = {double(c0), double(lim)};
        k.launch(args);
        int bad = 0;
        for (int i = 0; i < R; ++i)
          for (int j = 0; j < W; ++j) {
            const size_t y = size_t(i * W + j);
            const bool in = i < lim && i < 64 && j >= c0 && j < c0 + 64;
            const float want = in ? Y0[y] + X[size_t(i * 64 + j - c0)] : Y0[y];
            bad += Y[y] != (in && i == 0 && j == c0 ? 0.0f : want);
          }
        CHECK(bad == 0);
        CHECK(!std::signbit(Y[size_t(c0)]));
        if (roles) {
          int badZ = 0;
          for (int i = 0; i < 64; ++i) badZ += Z[size_t(i)] != Z0[size_t(i)] + float(i) * 0.5f;
          CHECK(badZ == 0);
        }
      }
  ::unsetenv("QLA_SIM");
}
