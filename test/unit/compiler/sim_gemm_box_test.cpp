// Sub-tiles of shared tiles as gemm operands (`gemm(a[r0 :+ nr, c0 :+ nc], ...)`,
// docs/language.md, "gemm"): the emitter moves each wgmma descriptor by the
// box's byte offset in the tile's swizzled layout (EmitWgmma.cpp). Run on
// QLA's CPU simulator (QLA_SIM=1), whose wgmma reads shared memory through
// the descriptors as the tensor cores do: every product equals the same
// product of the sliced matrices on the CPU, exactly (small multiples of
// 1/16: every sum is exact in f32), for bf16 and f16, K-major and MN-major
// sub-tiles, a K range that crosses a swizzle panel, and B sub-tiles under a
// register-sourced A.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "qla/jit.h"
#include "qla/runtime/Sim.h"
#include "test/unit/TestSupport.h"

namespace {

// Y[p] (64 x 64 each): the products below, in order.
const char *kSource = R"(
kernel boxes<DT = bf16>(A: DT[128, 128], B: DT[128, 128], Y: out f32[6, 64, 64]) grid(1) threads(128) {
  shared a: DT[128, 128]
  shared b: DT[128, 128]
  copy A[0 :+ 128, 0 :+ 128] -> a
  copy B[0 :+ 128, 0 :+ 128] -> b
  frag y: f32[64, 64]
  // K-major A and B (B transposed): rows and columns moved, K in the second panel.
  y = gemm(a[64 :+ 64, 64 :+ 64], b[0 :+ 64, 64 :+ 64]^T)
  copy y -> Y[0, 0 :+ 64, 0 :+ 64]
  // MN-major A (transposed) and B: M and N in the second panel, K rows 64 .. 128.
  y = gemm(a[64 :+ 64, 64 :+ 64]^T, b[64 :+ 64, 64 :+ 64])
  copy y -> Y[1, 0 :+ 64, 0 :+ 64]
  // K from column 48 to 112: across the panels' border, from inside one.
  y = gemm(a[0 :+ 64, 48 :+ 64], b[64 :+ 64, 16 :+ 64]^T)
  copy y -> Y[2, 0 :+ 64, 0 :+ 64]
  // Accumulated: the two K halves of a[0 :+ 64, :] · b[0 :+ 64, :]ᵀ.
  y = gemm(a[0 :+ 64, 0 :+ 64], b[0 :+ 64, 0 :+ 64]^T)
  y += gemm(a[0 :+ 64, 64 :+ 64], b[0 :+ 64, 64 :+ 64]^T)
  copy y -> Y[3, 0 :+ 64, 0 :+ 64]
  // A from registers, B's rows (K) 8 .. 72 and columns (N) 64 .. 128.
  frag p: DT[64, 64]
  copy A[0 :+ 64, 0 :+ 64] -> p
  y = gemm(p, b[8 :+ 64, 64 :+ 64])
  copy y -> Y[4, 0 :+ 64, 0 :+ 64]
  // MN-major A with K rows 16 .. 80 and M in the first panel; N = 32 of B's 128 rows (K-major B).
  frag z: f32[64, 32]
  z = gemm(a[16 :+ 64, 0 :+ 64]^T, b[96 :+ 32, 32 :+ 64]^T)
  copy z -> Y[5, 0 :+ 64, 0 :+ 32]
}
)";

}  // namespace

TEST_CASE("gemm operands that are sub-tiles of shared tiles (the simulator)", "[compiler][sim]") {
  ::setenv("QLA_SIM", "1", 1);
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> pick(-128, 127);
  for (const std::string dt : {"bf16", "f16"}) {
    INFO(dt);
    qla::JitOptions opt;
    opt.defines = {{"DT", dt}};
    qla::JitKernel k = qla::jitCompileString(kSource, "boxes.qla", opt);
    std::vector<uint16_t> A(128 * 128), B(128 * 128);
    std::vector<double> a(A.size()), b(B.size());
    for (size_t i = 0; i < A.size(); ++i) {
      const float x = float(pick(rng)) / 16.0f, y = float(pick(rng)) / 16.0f;
      A[i] = qla::test::halfBits(dt, x);
      B[i] = qla::test::halfBits(dt, y);
      a[i] = x;
      b[i] = y;
    }
    std::vector<float> Y(6 * 64 * 64, std::nanf(""));
    qla::rt::LaunchArgs args;
    args.tensors = {{A.data(), {128, 128}}, {B.data(), {128, 128}}, {Y.data(), {6, 64, 64}}};
    k.launch(args);
    auto at = [&](int r, int c) { return a[size_t(r * 128 + c)]; };
    auto bt = [&](int r, int c) { return b[size_t(r * 128 + c)]; };
    // Each product: y[i, j] = Σ_k opA(i, k) opB(k, j).
    struct Case {
      int n, kk;
      std::function<double(int, int)> opA, opB;
    };
    const std::vector<Case> cases = {
        {64, 64, [&](int i, int k) { return at(64 + i, 64 + k); }, [&](int k, int j) { return bt(j, 64 + k); }},
        {64, 64, [&](int i, int k) { return at(64 + k, 64 + i); }, [&](int k, int j) { return bt(64 + k, 64 + j); }},
        {64, 64, [&](int i, int k) { return at(i, 48 + k); }, [&](int k, int j) { return bt(64 + j, 16 + k); }},
        {64, 128, [&](int i, int k) { return at(i, k); }, [&](int k, int j) { return bt(j, k); }},
        {64, 64, [&](int i, int k) { return at(i, k); }, [&](int k, int j) { return bt(8 + k, 64 + j); }},
        {32, 64, [&](int i, int k) { return at(16 + k, i); }, [&](int k, int j) { return bt(96 + j, 32 + k); }},
    };
    for (size_t p = 0; p < cases.size(); ++p) {
      int bad = 0;
      for (int i = 0; i < 64; ++i)
        for (int j = 0; j < cases[p].n; ++j) {
          double s = 0;
          for (int q = 0; q < cases[p].kk; ++q) s += cases[p].opA(i, q) * cases[p].opB(q, j);
          bad += double(Y[p * 4096 + size_t(i * 64 + j)]) != s;
        }
      INFO("product " << p);
      CHECK(bad == 0);
    }
  }
  ::unsetenv("QLA_SIM");
}
