// CompileOptions::partialWaits (qla-lower-to-qlanv{partial-waits}) on a
// kernel shaped like the fused GDN forward's math step: two products reading
// one register-sourced A, then work that touches neither, then a use of each.
// Off (the default), the two products wait one after the other; on, they are
// in flight together, the independent work runs before any wait, and the
// first product is waited for with the second still pending. JIT keys the
// two apart (the CUDA differs), and QLA_PARTIAL_WAITS is read like
// QLA_LINE_INFO. No GPU needed.
#include "test/unit/TestSupport.h"
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "qla/compiler/Compiler.h"
#include "qla/jit.h"

namespace {

const char *kSource = R"(kernel pw(S: f32[64, 128], W: bf16[64, 128], Q: bf16[64, 128], G: f32[64], O: out f32[64, 64])
  grid(1) threads(128)
{
  shared ws: bf16[64, 128]
  shared qs: bf16[64, 128]
  copy W[0 :+ 64, 0 :+ 128] -> ws
  copy Q[0 :+ 64, 0 :+ 128] -> qs
  frag s: f32[64, 128]
  copy S[0 :+ 64, 0 :+ 128] -> s
  frag sb: bf16[64, 128] = cast(s)
  frag x: f32[64, 64]
  x = gemm(sb, ws^T)
  frag o: f32[64, 64]
  o = gemm(sb, qs^T)
  frag g: f32[64]
  copy G[0 :+ 64] -> g
  frag e: f32[64]
  for (j) in parallel(64) { e[j] = exp(g[j]) }
  for (i, j) in parallel(64, 64) { x[i, j] = x[i, j] * e[j] }
  for (i, j) in parallel(64, 64) { o[i, j] = o[i, j] + x[i, j] }
  copy o -> O[0 :+ 64, 0 :+ 64]
}
)";

std::string cudaOf(bool partial) {
  qla::CompileOptions o;
  o.partialWaits = partial;
  qla::CompiledKernel k;
  std::vector<std::string> diags;
  REQUIRE(qla::compileQla(kSource, "pw.qla", o, k, diags));
  return k.cuda;
}

size_t count(const std::string &s, const std::string &what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("partial waits: independent products overlap and wait for what each use needs", "[compiler][waits]") {
  const std::string off = cudaOf(false), on = cudaOf(true);
  // Off: a wait after each product, both full.
  CHECK(count(off, "wgmma_wait<0>()") == 2);
  CHECK(count(off, "wgmma_wait<1>()") == 0);
  // On: the first product's wait leaves the second in flight.
  CHECK(count(on, "wgmma_wait<1>()") == 1);
  CHECK(count(on, "wgmma_wait<0>()") == 1);
  // Both commits come before any wait, and the exp map runs before the first.
  const size_t c2 = on.find("wgmma_commit", on.find("wgmma_commit") + 1), w1 = on.find("wgmma_wait<1>()"),
               ex = on.find("expf(");
  REQUIRE(c2 != std::string::npos);
  REQUIRE(ex != std::string::npos);
  CHECK(c2 < w1);
  CHECK(ex < w1);
  // Off, the exp map waits for both.
  CHECK(off.find("expf(") > off.rfind("wgmma_wait<0>()"));
}

TEST_CASE("partial waits: QLA_PARTIAL_WAITS is read on every call", "[compiler][waits]") {
  const char *saved = std::getenv("QLA_PARTIAL_WAITS");
  const std::string keep = saved ? saved : "";
  ::setenv("QLA_PARTIAL_WAITS", "1", 1);
  CHECK(qla::partialWaitsFromEnvironment());
  ::setenv("QLA_PARTIAL_WAITS", "off", 1);
  CHECK_FALSE(qla::partialWaitsFromEnvironment());
  ::unsetenv("QLA_PARTIAL_WAITS");
  CHECK_FALSE(qla::partialWaitsFromEnvironment());
  if (saved) ::setenv("QLA_PARTIAL_WAITS", keep.c_str(), 1);
}
