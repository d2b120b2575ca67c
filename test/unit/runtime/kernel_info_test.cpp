// KernelInfo text form and grid expressions.
#include <catch2/catch.hpp>

#include "qla/runtime/KernelInfo.h"

using namespace qla;

namespace {

KernelInfo sampleInfo() {
  KernelInfo k;
  k.name = "gemm_bf16";
  k.tensors = {{"A", DType::BF16, {"M", "K"}, false},
               {"B", DType::BF16, {"K", "N"}, false},
               {"C", DType::F32, {"M", "N"}, true},
               {"bias", DType::F16, {"N", "1"}, false}};
  k.scalars = {{"alpha", DType::F32}, {"steps", DType::I32}};
  k.dimSymbols = {"M", "N", "K"};
  ParamInfo tA;
  tA.kind = ParamInfo::Kind::TensorMap;
  tA.index = 0;
  tA.box = {128, 64};
  tA.swizzle = Swizzle::B128;
  ParamInfo tB = tA;
  tB.index = 1;
  tB.box = {64, 32};
  tB.swizzle = Swizzle::B64;
  ParamInfo pC;
  pC.kind = ParamInfo::Kind::Pointer;
  pC.index = 2;
  ParamInfo dN;
  dN.kind = ParamInfo::Kind::Dim;
  dN.index = 1;
  ParamInfo sC;
  sC.kind = ParamInfo::Kind::Stride;
  sC.index = 2;
  sC.dim = 0;
  ParamInfo alpha;
  alpha.kind = ParamInfo::Kind::Scalar;
  alpha.index = 0;
  k.params = {tA, tB, pC, dN, sC, alpha};
  k.grid = {"cdiv(N, 128)", "cdiv(M,128)", "1"};
  k.threads = 384;
  k.cluster = {2, 1, 1};
  k.dynamicSmemBytes = 196608;
  return k;
}

void requireSame(const KernelInfo &a, const KernelInfo &b) {
  REQUIRE(a.name == b.name);
  REQUIRE(a.tensors.size() == b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    CHECK(a.tensors[i].name == b.tensors[i].name);
    CHECK(a.tensors[i].dtype == b.tensors[i].dtype);
    CHECK(a.tensors[i].dims == b.tensors[i].dims);
    CHECK(a.tensors[i].isOutput == b.tensors[i].isOutput);
  }
  REQUIRE(a.scalars.size() == b.scalars.size());
  for (size_t i = 0; i < a.scalars.size(); ++i) {
    CHECK(a.scalars[i].name == b.scalars[i].name);
    CHECK(a.scalars[i].dtype == b.scalars[i].dtype);
  }
  CHECK(a.dimSymbols == b.dimSymbols);
  REQUIRE(a.params.size() == b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i) {
    CHECK(a.params[i].kind == b.params[i].kind);
    CHECK(a.params[i].index == b.params[i].index);
    CHECK(a.params[i].dim == b.params[i].dim);
    CHECK(a.params[i].box == b.params[i].box);
    CHECK(a.params[i].swizzle == b.params[i].swizzle);
  }
  CHECK(a.threads == b.threads);
  CHECK(a.cluster == b.cluster);
  CHECK(a.dynamicSmemBytes == b.dynamicSmemBytes);
  CHECK(a.follows == b.follows);
}

// Deserializes `text` expecting failure; returns the error.
std::string parseError(const std::string &text) {
  KernelInfo k;
  std::string err;
  bool ok = KernelInfo::deserialize(text, k, err);
  INFO(text);
  REQUIRE_FALSE(ok);
  REQUIRE_FALSE(err.empty());
  return err;
}

const char *kMinimal =
    "name k\n"
    "tensor A f32 in M\n"
    "dim M\n"
    "grid cdiv(M,128) 1 1\n"
    "threads 128\n"
    "cluster 1 1 1\n"
    "smem 0\n";

}  // namespace

TEST_CASE("dtype helpers", "[runtime][kernelinfo]") {
  DType t;
  for (DType d : {DType::BF16, DType::F16, DType::F32, DType::I32, DType::I64}) {
    REQUIRE(parseDType(dtypeName(d), t));
    CHECK(t == d);
  }
  CHECK(dtypeBytes(DType::BF16) == 2);
  CHECK(dtypeBytes(DType::F16) == 2);
  CHECK(dtypeBytes(DType::F32) == 4);
  CHECK(dtypeBytes(DType::I32) == 4);
  CHECK(dtypeBytes(DType::I64) == 8);
  CHECK_FALSE(parseDType("f64", t));
  CHECK_FALSE(parseDType("", t));
}

TEST_CASE("KernelInfo round trips through its text form", "[runtime][kernelinfo]") {
  KernelInfo k = sampleInfo();
  std::string text = k.serialize();
  CHECK(text.find("name gemm_bf16\n") != std::string::npos);
  CHECK(text.find("tensor A bf16 in M,K\n") != std::string::npos);
  CHECK(text.find("tensor C f32 out M,N\n") != std::string::npos);
  CHECK(text.find("scalar alpha f32\n") != std::string::npos);
  CHECK(text.find("param tmap 0 box=128,64 swizzle=3\n") != std::string::npos);
  CHECK(text.find("param stride 2 0\n") != std::string::npos);
  CHECK(text.find("grid cdiv(N,128) cdiv(M,128) 1\n") != std::string::npos);
  CHECK(text.find("smem 196608\n") != std::string::npos);

  KernelInfo back;
  std::string err;
  REQUIRE(KernelInfo::deserialize(text, back, err));
  requireSame(k, back);
  CHECK(back.grid[0] == "cdiv(N,128)");  // whitespace is dropped
  CHECK(back.serialize() == text);        // stable

  // Comments, blank lines and CRLF are tolerated.
  std::string decorated = "# from the kernel source\n\n";
  for (char c : text) decorated += (c == '\n') ? std::string("\r\n") : std::string(1, c);
  REQUIRE(KernelInfo::deserialize(decorated, back, err));
  requireSame(k, back);
}

TEST_CASE("KernelInfo round trip of a rank-0 tensor and no params", "[runtime][kernelinfo]") {
  KernelInfo k;
  k.name = "scalar_only";
  k.tensors = {{"out", DType::I64, {}, true}};
  KernelInfo back;
  std::string err;
  REQUIRE(KernelInfo::deserialize(k.serialize(), back, err));
  requireSame(k, back);
}

TEST_CASE("KernelInfo carries follows(...) only when the kernel declares it", "[runtime][kernelinfo]") {
  KernelInfo k = sampleInfo();
  CHECK(k.serialize().find("follows") == std::string::npos);
  k.follows = true;
  const std::string text = k.serialize();
  CHECK(text.find("\nfollows\n") != std::string::npos);
  KernelInfo back;
  std::string err;
  REQUIRE(KernelInfo::deserialize(text, back, err));
  CHECK(back.follows);
  CHECK(back.serialize() == text);
  KernelInfo plain;
  REQUIRE(KernelInfo::deserialize(sampleInfo().serialize(), plain, err));
  CHECK_FALSE(plain.follows);
  std::string e = parseError(text + "follows\n");
  CHECK(e.find("duplicate 'follows'") != std::string::npos);
  e = parseError(sampleInfo().serialize() + "follows yes\n");
  CHECK(e.find("'follows' takes 0 field(s)") != std::string::npos);
}

TEST_CASE("KernelInfo rejects malformed text with the line", "[runtime][kernelinfo]") {
  KernelInfo ok;
  std::string err;
  REQUIRE(KernelInfo::deserialize(kMinimal, ok, err));

  auto replaceLine = [](std::string text, const std::string &from, const std::string &to) {
    size_t p = text.find(from);
    REQUIRE(p != std::string::npos);
    return text.replace(p, from.size(), to);
  };
  std::string e;
  e = parseError(replaceLine(kMinimal, "tensor A f32 in M", "tensor A f64 in M"));
  CHECK(e.find("line 2") != std::string::npos);
  CHECK(e.find("unknown dtype 'f64'") != std::string::npos);

  e = parseError(replaceLine(kMinimal, "tensor A f32 in M", "tensor A f32 inout M"));
  CHECK(e.find("line 2") != std::string::npos);

  e = parseError(replaceLine(kMinimal, "tensor A f32 in M", "tensor A f32 in M,Q"));
  CHECK(e.find("'Q'") != std::string::npos);

  e = parseError(replaceLine(kMinimal, "dim M", "dim M\ndim M"));
  CHECK(e.find("line 4") != std::string::npos);
  CHECK(e.find("duplicate") != std::string::npos);

  e = parseError(replaceLine(kMinimal, "threads 128", "threads 4096"));
  CHECK(e.find("line 5") != std::string::npos);
  e = parseError(replaceLine(kMinimal, "threads 128", "threads 12x"));
  CHECK(e.find("threads") != std::string::npos);
  e = parseError(replaceLine(kMinimal, "cluster 1 1 1", "cluster 1 0 1"));
  CHECK(e.find("cluster") != std::string::npos);
  e = parseError(replaceLine(kMinimal, "cluster 1 1 1", "cluster 1 1"));
  CHECK(e.find("line 6") != std::string::npos);
  e = parseError(replaceLine(kMinimal, "smem 0", "smem -5"));
  CHECK(e.find("line 7") != std::string::npos);
  e = parseError(replaceLine(kMinimal, "smem 0", "smem 0\nbogus 1"));
  CHECK(e.find("unknown key 'bogus'") != std::string::npos);
  e = parseError(replaceLine(kMinimal, "name k", "name 9k"));
  CHECK(e.find("line 1") != std::string::npos);
  e = parseError(replaceLine(kMinimal, "name k\n", ""));
  CHECK(e.find("missing 'name'") != std::string::npos);
  e = parseError(replaceLine(kMinimal, "smem 0\n", ""));  // truncated text
  CHECK(e.find("missing 'smem'") != std::string::npos);
  e = parseError(replaceLine(kMinimal, "grid cdiv(M,128) 1 1", "grid cdiv(M,128) 1 1\ngrid 1 1 1"));
  CHECK(e.find("duplicate 'grid'") != std::string::npos);

  // Grid expressions are checked for syntax and symbols (with the grid line).
  e = parseError(replaceLine(kMinimal, "cdiv(M,128)", "cdiv(X,128)"));
  CHECK(e.find("line 4") != std::string::npos);
  CHECK(e.find("unknown symbol 'X'") != std::string::npos);
  e = parseError(replaceLine(kMinimal, "cdiv(M,128)", "cdiv(M,"));
  CHECK(e.find("cdiv(M,") != std::string::npos);
  // ...but not evaluated: M/M is not a division by zero.
  std::string divByDim = replaceLine(kMinimal, "cdiv(M,128)", "M/M");
  REQUIRE(KernelInfo::deserialize(divByDim, ok, err));

  // Params: kinds, indices and boxes.
  std::string withParams = replaceLine(kMinimal, "dim M\n", "dim M\n@\n");
  auto withParam = [&](const std::string &p) { return replaceLine(withParams, "@", p); };
  REQUIRE(KernelInfo::deserialize(withParam("param tmap 0 box=64 swizzle=3"), ok, err));
  CHECK_FALSE(ok.params.back().optional);
  // A store-only map (ParamInfo::optional) round trips.
  REQUIRE(KernelInfo::deserialize(withParam("param tmap 0 box=64 swizzle=3 optional"), ok, err));
  REQUIRE(ok.params.back().optional);
  CHECK(ok.serialize().find("param tmap 0 box=64 swizzle=3 optional\n") != std::string::npos);
  e = parseError(withParam("param tmap 0 box=64 swizzle=3 optional optional"));
  CHECK(e.find("unexpected 'optional'") != std::string::npos);
  REQUIRE(KernelInfo::deserialize(withParam("param stride 0 0"), ok, err));
  e = parseError(withParam("param tmap 1 box=64"));
  CHECK(e.find("line 4") != std::string::npos);
  CHECK(e.find("no tensor 1") != std::string::npos);
  e = parseError(withParam("param tmap 0 box=64,64"));
  CHECK(e.find("rank") != std::string::npos);
  e = parseError(withParam("param tmap 0 box=512"));
  CHECK(e.find("1..256") != std::string::npos);
  e = parseError(withParam("param tmap 0 box=64 swizzle=7"));
  CHECK(e.find("swizzle") != std::string::npos);
  e = parseError(withParam("param tmap 0 swizzle=1"));
  CHECK(e.find("box=") != std::string::npos);
  e = parseError(withParam("param stride 0 1"));
  CHECK(e.find("out of range") != std::string::npos);
  e = parseError(withParam("param dim 3"));
  CHECK(e.find("no dim symbol 3") != std::string::npos);
  e = parseError(withParam("param scalar 0"));
  CHECK(e.find("no scalar 0") != std::string::npos);
  e = parseError(withParam("param ptr -1"));
  CHECK(e.find("bad index") != std::string::npos);
  e = parseError(withParam("param ptr"));
  e = parseError(withParam("param texture 0"));
  CHECK(e.find("unknown param kind 'texture'") != std::string::npos);
}

TEST_CASE("KernelInfo survives garbage without crashing", "[runtime][kernelinfo]") {
  const char *inputs[] = {"", "\n\n\n", "name", "grid", "tensor", "param tmap 0 box=",
                          "param tmap 0 box=,,,", "name k\ngrid (((( 1 1",
                          "\x01\x02\xff\xfe garbage \x7f", "cluster 99999999999999999999 1 1"};
  for (const char *in : inputs) {
    KernelInfo k;
    std::string err;
    CHECK_FALSE(KernelInfo::deserialize(in, k, err));
    CHECK_FALSE(err.empty());
  }
}

TEST_CASE("grid expressions evaluate with C precedence", "[runtime][grid]") {
  std::vector<std::string> syms = {"M", "N", "K"};
  std::vector<int64_t> vals = {1000, 256, 64};
  auto eval = [&](const std::string &e) {
    int64_t v = -999;
    std::string err;
    INFO(e << ": " << err);
    REQUIRE(evalGridExpr(e, syms, vals, v, err));
    return v;
  };
  CHECK(eval("1") == 1);
  CHECK(eval("M") == 1000);
  CHECK(eval("1 + 2 * 3") == 7);
  CHECK(eval("(1 + 2) * 3") == 9);
  CHECK(eval("10 - 4 - 3") == 3);   // left associative
  CHECK(eval("100 / 10 / 5") == 2);
  CHECK(eval("M % 128") == 1000 % 128);
  CHECK(eval("-N + 300") == 44);
  CHECK(eval("- -3") == 3);
  CHECK(eval("2 * -3") == -6);
  CHECK(eval("cdiv(M, 128)") == 8);
  CHECK(eval("cdiv(1024, 128)") == 8);
  CHECK(eval("cdiv(0, 128)") == 0);
  CHECK(eval("cdiv(M,128)*cdiv(N,128)") == 16);
  CHECK(eval("min(M, N)") == 256);
  CHECK(eval("max(M, N * 8)") == 2048);
  CHECK(eval("min(cdiv(M,64), max(1, K/32))") == 2);
  CHECK(eval("  ( ( K ) )  ") == 64);
}

TEST_CASE("grid expression errors name the expression", "[runtime][grid]") {
  std::vector<std::string> syms = {"M", "N"};
  std::vector<int64_t> vals = {128, 0};
  auto err = [&](const std::string &e) {
    int64_t v;
    std::string msg;
    INFO(e);
    REQUIRE_FALSE(evalGridExpr(e, syms, vals, v, msg));
    CHECK(msg.find("grid expression '" + e + "'") != std::string::npos);
    return msg;
  };
  CHECK(err("cdiv(M, Q)").find("unknown symbol 'Q'") != std::string::npos);
  CHECK(err("M / N").find("division by zero") != std::string::npos);
  CHECK(err("M % N").find("division by zero") != std::string::npos);
  CHECK(err("cdiv(M, N)").find("division by zero in cdiv") != std::string::npos);
  CHECK(err("floor(M, 2)").find("unknown function 'floor'") != std::string::npos);
  CHECK(err("").find("empty") != std::string::npos);
  err("M +");
  err("(M");
  err("M)");
  err("cdiv(M)");
  err("12abc");
  err("M $ 2");
  CHECK(err("99999999999999999999").find("too large") != std::string::npos);
  CHECK(err("9223372036854775807 + 1").find("overflow") != std::string::npos);
  CHECK(err(std::string(10000, '(') + "1" + std::string(10000, ')')).find("deeply") !=
        std::string::npos);

  int64_t v;
  std::string msg;
  CHECK_FALSE(evalGridExpr("M", {"M"}, {}, v, msg));  // mismatched symbols/values
}
