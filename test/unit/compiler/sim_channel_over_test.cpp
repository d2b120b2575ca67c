// `channel y: {...} depth(1) over(x)`: y's slot takes x's bytes. Run on QLA's
// CPU simulator (QLA_SIM=1, which models the mbarriers' phases, TMA loads
// that land late and shared memory poisoned before the CTA), a pipeline in
// which each iteration fills x by TMA (load), reads it in two roles (m1, m2),
// fills y from m1's registers into the same bytes, and reads y in two roles
// (m2, m3): every output is what its iteration put, so no fill of one
// channel lands on the other while a role still reads it. The emitted code
// gives both slots one offset, and the arena holds one slot, not two.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "qla/compiler/Compiler.h"
#include "qla/jit.h"
#include "qla/runtime/Sim.h"

namespace {

// LOAD: how `load` fills x (a TMA copy, or its threads' stores, which land at
// once: a fill of x that did not wait for every release of y would overwrite
// y's tile while m2 or m3 still read it).
const char *kSource = R"(
kernel over_test<LOAD = 0>(A: f32[N, 64], O1: out f32[N, 64], O2: out f32[N, 64], O3: out f32[N, 64], O4: out f32[N, 64])
  grid(1) threads(512)
{
  channel x: { xt: f32[64, 64] } depth(1)
  channel y: { yt: f32[64, 64] } depth(1) over(x)
  role load: warpgroup 0 {
    for i in 0 .. cdiv(N, 64) {
      if LOAD == 0 {
        put x -> (xt) { copy A[i * 64 :+ 64, 0 :+ 64] -> xt }
      } else {
        put x -> (xt) {
          frag a: f32[64, 64]
          copy A[i * 64 :+ 64, 0 :+ 64] -> a
          copy a -> xt
        }
      }
    }
  }
  role m1: warpgroup 1 {
    for i in 0 .. cdiv(N, 64) {
      frag f: f32[64, 64]
      get x -> (xt) { copy xt -> f }
      copy f -> O1[i * 64 :+ 64, 0 :+ 64]
      for (r, c) in parallel(64, 64) { f[r, c] = f[r, c] * 2.0 }
      put y -> (yt) { copy f -> yt }
    }
  }
  role m2: warpgroup 2 {
    for i in 0 .. cdiv(N, 64) {
      get x -> (xt) {
        frag h: f32[64, 64]
        copy xt -> h
        copy h -> O3[i * 64 :+ 64, 0 :+ 64]
      }
      get y -> (yt) {
        frag g: f32[64, 64]
        copy yt -> g
        copy g -> O2[i * 64 :+ 64, 0 :+ 64]
      }
    }
  }
  role m3: warpgroup 3 {
    for i in 0 .. cdiv(N, 64) {
      get y -> (yt) {
        frag g: f32[64, 64]
        copy yt -> g
        for (r, c) in parallel(64, 64) { g[r, c] = g[r, c] + 1.0 }
        copy g -> O4[i * 64 :+ 64, 0 :+ 64]
      }
    }
  }
}
)";

}  // namespace

TEST_CASE("channel over: two channels of depth 1 in one slot's bytes (the simulator)", "[compiler][sim]") {
  for (const char *load : {"0", "1"}) {
    INFO("LOAD = " << load);
    qla::CompileOptions co;
    co.defines["LOAD"] = load;
    qla::CompiledKernel ck;
    std::vector<std::string> diags;
    REQUIRE(qla::compileQla(kSource, "over.qla", co, ck, diags));
    // One region: 16 KB of slot and four barriers.
    CHECK(ck.info.dynamicSmemBytes == 16416);
    ::setenv("QLA_SIM", "1", 1);
    qla::JitOptions jo;
    jo.defines["LOAD"] = load;
    qla::JitKernel k = qla::jitCompileString(kSource, "over.qla", jo);
    std::mt19937 rng(5);
    std::uniform_int_distribution<int> pick(-512, 511);
    const int N = 64 * 5;
    std::vector<float> A(size_t(N * 64));
    for (float &a : A) a = float(pick(rng)) / 64.0f;
    std::vector<float> O1(A.size(), -1.0f), O2(A.size(), -1.0f), O3(A.size(), -1.0f), O4(A.size(), -1.0f);
    qla::rt::LaunchArgs args;
    args.tensors = {{A.data(), {N, 64}}, {O1.data(), {N, 64}}, {O2.data(), {N, 64}}, {O3.data(), {N, 64}},
                    {O4.data(), {N, 64}}};
    k.launch(args);
    int bad1 = 0, bad2 = 0, bad3 = 0, bad4 = 0;
    for (size_t i = 0; i < A.size(); ++i) {
      bad1 += O1[i] != A[i];
      bad3 += O3[i] != A[i];
      bad2 += O2[i] != 2.0f * A[i];
      bad4 += O4[i] != 2.0f * A[i] + 1.0f;
    }
    CHECK(bad1 == 0);
    CHECK(bad2 == 0);
    CHECK(bad3 == 0);
    CHECK(bad4 == 0);
    ::unsetenv("QLA_SIM");
  }
}
