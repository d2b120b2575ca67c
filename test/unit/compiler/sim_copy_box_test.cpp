// Sub-tiles of shared tiles as copy operands (`copy f -> t[r0 :+ nr, c0 :+ nc]`,
// `copy t[...] -> f`; docs/language.md, "copy"): the emitter offsets the tile
// index by the box's origin in every path (stmatrix into a 16-bit tile,
// register pairs, element by element). Run on QLA's CPU simulator
// (QLA_SIM=1): the halves of X go into a 16-bit tile swapped, into an f32
// tile at row 64, and into column 32 of a 16-bit tile beside what the tile
// held; each tile goes out whole and the sub-tiles come back into
// fragments. Values are multiples of 1/16 in [-8, 8): exact in bf16, f16
// and f32, so every output equals its source exactly.
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
#include "test/unit/TestSupport.h"

namespace {

const char *kSource = R"(
kernel cboxes<DT = bf16>(X: f32[64, 128], Y: out DT[64, 128], V: out f32[128, 64], U: out DT[64, 64],
                         Z: out f32[3, 64, 64])
  grid(1) threads(128)
{
  frag h0: f32[64, 64]
  frag h1: f32[64, 64]
  copy X[0 :+ 64, 0 :+ 64] -> h0
  copy X[0 :+ 64, 64 :+ 64] -> h1
  // A 16-bit tile's column halves, swapped (stmatrix), out whole, and one
  // half back (register pairs).
  shared t: DT[64, 128]
  copy h0 -> t[0 :+ 64, 64 :+ 64]
  copy h1 -> t[0 :+ 64, 0 :+ 64]
  copy t -> Y[0 :+ 64, 0 :+ 128]
  frag g: f32[64, 64]
  copy t[0 :+ 64, 64 :+ 64] -> g
  copy g -> Z[0, 0 :+ 64, 0 :+ 64]
  // An f32 tile's row halves (register pairs both ways).
  shared v: f32[128, 64]
  copy h1 -> v[64 :+ 64, 0 :+ 64]
  copy h0 -> v[0 :+ 64, 0 :+ 64]
  copy v -> V[0 :+ 128, 0 :+ 64]
  copy v[64 :+ 64, 0 :+ 64] -> g
  copy g -> Z[1, 0 :+ 64, 0 :+ 64]
  // A 32-column fragment into columns 32 .. 63 of a 16-bit tile that holds
  // h0: the other columns keep h0's.
  shared u: DT[64, 64]
  copy h0 -> u
  frag q: f32[64, 32]
  copy X[0 :+ 64, 96 :+ 32] -> q
  copy q -> u[0 :+ 64, 32 :+ 32]
  copy u -> U[0 :+ 64, 0 :+ 64]
  copy u -> g
  copy g -> Z[2, 0 :+ 64, 0 :+ 64]
}
)";

// The consumer role of the two channel kernels below: reads the slot of
// chunk c whole (in f32) and writes it to Y's rows c * 64 ...
const std::string kReadSlotRole = R"(
  role q: warpgroup 1 {
    for c in 0 .. STEPS {
      frag f: f32[64, 128]
      get ch -> (t) {
        copy t -> f
      }
      copy f -> Y[c * 64 :+ 64, 0 :+ 128]
    }
  }
}
)";

// A channel slot filled by two sub-tile copies (the put's verifier: they
// cover the slot tile exactly once), read whole by the consumer role, for
// STEPS chunks; the producer prefetches the next chunk's rows into L2 (a
// hint: the simulator does nothing, the results are the same).
const std::string kChannelSource = R"(
kernel cslots<DT = bf16, STEPS = 3>(X: f32[T, 128], Y: out f32[T, 128]) grid(1) threads(256)
{
  channel ch: { t: DT[64, 128] } depth(1)
  role p: warpgroup 0 {
    for c in 0 .. STEPS {
      prefetch X[(c + 1) * 64 :+ 64 until T, 0 :+ 128]
      frag lo: DT[64, 64]
      frag hi: DT[64, 64]
      copy X[c * 64 :+ 64, 0 :+ 64] -> lo
      copy X[c * 64 :+ 64, 64 :+ 64] -> hi
      put ch -> (t) {
        copy hi -> t[0 :+ 64, 0 :+ 64]
        copy lo -> t[0 :+ 64, 64 :+ 64]
      }
    }
  }
)" + kReadSlotRole;

// A channel slot staged by its producer: inside the put, 32-column parts of
// an f32 tensor are loaded into fragments of the put, mapped (times a row
// factor held outside the put, plus 0.5) and copied into the slot's
// sub-tiles (the last part through a cast), in DT; the consumer reads the
// slot whole.
const std::string kStagedSource = R"(
kernel cstaged<DT = bf16, STEPS = 3>(X: f32[T, 128], R: f32[T], Y: out f32[T, 128]) grid(1) threads(256)
{
  channel ch: { t: DT[64, 128] } depth(1)
  role p: warpgroup 0 {
    for c in 0 .. STEPS {
      frag r: f32[64]
      copy R[c * 64 :+ 64] -> r
      put ch -> (t) {
        frag f0: f32[64, 32]
        copy X[c * 64 :+ 64, 0 :+ 32] -> f0
        for (i, j) in parallel(64, 32) { f0[i, j] = f0[i, j] * r[i] + 0.5 }
        copy f0 -> t[0 :+ 64, 0 :+ 32]
        frag f1: f32[64, 32]
        copy X[c * 64 :+ 64, 32 :+ 32] -> f1
        for (i, j) in parallel(64, 32) { f1[i, j] = f1[i, j] * r[i] + 0.5 }
        copy f1 -> t[0 :+ 64, 32 :+ 32]
        frag f2: f32[64, 64]
        copy X[c * 64 :+ 64, 64 :+ 64] -> f2
        for (i, j) in parallel(64, 64) { f2[i, j] = f2[i, j] * r[i] + 0.5 }
        frag h2: DT[64, 64] = cast(f2)
        copy h2 -> t[0 :+ 64, 64 :+ 64]
      }
    }
  }
)" + kReadSlotRole;

}  // namespace

TEST_CASE("copies to and from sub-tiles of shared tiles (the simulator)", "[compiler][sim]") {
  ::setenv("QLA_SIM", "1", 1);
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> pick(-128, 127);
  for (const std::string dt : {"bf16", "f16"}) {
    INFO(dt);
    qla::JitOptions opt;
    opt.defines = {{"DT", dt}};
    qla::JitKernel k = qla::jitCompileString(kSource, "cboxes.qla", opt);
    std::vector<float> X(64 * 128);
    for (float &x : X) x = float(pick(rng)) / 16.0f;
    std::vector<uint16_t> Y(64 * 128, 0xffff), U(64 * 64, 0xffff);
    std::vector<float> V(128 * 64, std::nanf("")), Z(3 * 64 * 64, std::nanf(""));
    qla::rt::LaunchArgs args;
    args.tensors = {{X.data(), {64, 128}}, {Y.data(), {64, 128}}, {V.data(), {128, 64}}, {U.data(), {64, 64}},
                    {Z.data(), {3, 64, 64}}};
    k.launch(args);
    auto x = [&](int r, int c) { return X[size_t(r * 128 + c)]; };
    int badY = 0, badV = 0, badU = 0, badZ = 0;
    for (int r = 0; r < 64; ++r)
      for (int c = 0; c < 128; ++c) badY += Y[size_t(r * 128 + c)] != qla::test::halfBits(dt, x(r, (c + 64) % 128));
    for (int r = 0; r < 128; ++r)
      for (int c = 0; c < 64; ++c) badV += V[size_t(r * 64 + c)] != x(r % 64, c + (r < 64 ? 0 : 64));
    for (int r = 0; r < 64; ++r)
      for (int c = 0; c < 64; ++c) {
        const float u = c < 32 ? x(r, c) : x(r, 96 + c - 32);
        badU += U[size_t(r * 64 + c)] != qla::test::halfBits(dt, u);
        badZ += Z[size_t(r * 64 + c)] != x(r, c);
        badZ += Z[size_t(4096 + r * 64 + c)] != x(r, 64 + c);
        badZ += Z[size_t(8192 + r * 64 + c)] != u;
      }
    CHECK(badY == 0);
    CHECK(badV == 0);
    CHECK(badU == 0);
    CHECK(badZ == 0);
  }
  ::unsetenv("QLA_SIM");
}

TEST_CASE("a channel slot filled by copies into its sub-tiles (the simulator)", "[compiler][sim]") {
  ::setenv("QLA_SIM", "1", 1);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pick(-128, 127);
  for (const std::string dt : {"bf16", "f16"}) {
    INFO(dt);
    qla::JitOptions opt;
    opt.defines = {{"DT", dt}};
    qla::JitKernel k = qla::jitCompileString(kChannelSource, "cslots.qla", opt);
    const int T = 3 * 64;
    std::vector<float> X(size_t(T) * 128), Y(size_t(T) * 128, std::nanf(""));
    for (float &x : X) x = float(pick(rng)) / 16.0f;
    qla::rt::LaunchArgs args;
    args.tensors = {{X.data(), {T, 128}}, {Y.data(), {T, 128}}};
    k.launch(args);
    int bad = 0;
    for (int r = 0; r < T; ++r)
      for (int c = 0; c < 128; ++c) bad += Y[size_t(r * 128 + c)] != X[size_t(r * 128 + (c + 64) % 128)];
    CHECK(bad == 0);
  }
  ::unsetenv("QLA_SIM");
}

TEST_CASE("a channel slot staged in fragments of the put (the simulator)", "[compiler][sim]") {
  ::setenv("QLA_SIM", "1", 1);
  std::mt19937 rng(11);
  // x r + 0.5 with x in [-2, 2) on 1/16 and r in -2 .. 2: at most 8
  // significant bits, exact in bf16 and f16, so rounding cannot hide a miss.
  std::uniform_int_distribution<int> pick(-32, 31), factor(-2, 2);
  for (const std::string dt : {"bf16", "f16"}) {
    INFO(dt);
    qla::JitOptions opt;
    opt.defines = {{"DT", dt}};
    qla::JitKernel k = qla::jitCompileString(kStagedSource, "cstaged.qla", opt);
    const int T = 3 * 64;
    std::vector<float> X(size_t(T) * 128), R(T), Y(size_t(T) * 128, std::nanf(""));
    for (float &x : X) x = float(pick(rng)) / 16.0f;
    for (float &r : R) r = float(factor(rng));
    qla::rt::LaunchArgs args;
    args.tensors = {{X.data(), {T, 128}}, {R.data(), {T}}, {Y.data(), {T, 128}}};
    k.launch(args);
    int bad = 0;
    for (int r = 0; r < T; ++r)
      for (int c = 0; c < 128; ++c) {
        const float want = X[size_t(r * 128 + c)] * R[size_t(r)] + 0.5f;
        bad += Y[size_t(r * 128 + c)] != want;
      }
    CHECK(bad == 0);
  }
  ::unsetenv("QLA_SIM");
}
