// The compiler driver and the JIT API without a GPU: diagnostics carry
// file:line:col, kernel symbols are content-derived, gemm's KernelInfo, and
// the kernel cache (memory hit in the same cache, disk hit in a fresh one).
#include "test/unit/TestSupport.h"
#include <catch2/catch.hpp>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "qla/jit.h"

using qla::test::TempDir;
using qla::test::readFile;
using qla::test::joined;

namespace {

const std::string kGemmPath = std::string(QLA_SOURCE_DIR) + "/examples/gemm.qla";

std::string replaced(std::string s, const std::string &from, const std::string &to) {
  size_t p = s.find(from);
  REQUIRE(p != std::string::npos);
  return s.replace(p, from.size(), to);
}

// 1-based line of the first occurrence of `what` in `s`.
int lineOf(const std::string &s, const std::string &what) {
  size_t p = s.find(what);
  REQUIRE(p != std::string::npos);
  return 1 + (int)std::count(s.begin(), s.begin() + (long)p, '\n');
}

struct Compiled {
  bool ok = false;
  qla::CompiledKernel k;
  std::vector<std::string> diags;
};

Compiled compile(const std::string &source, const std::string &filename,
                 const std::map<std::string, std::string> &defines = {}) {
  Compiled c;
  qla::CompileOptions o;
  o.defines = defines;
  c.ok = qla::compileQla(source, filename, o, c.k, c.diags);
  return c;
}

// The first diagnostic is "<file>:<line>:<col>: error: <message>"; returns its line.
int checkErrorFormat(const Compiled &c, const std::string &file) {
  INFO(joined(c.diags));
  CHECK_FALSE(c.ok);
  REQUIRE(!c.diags.empty());
  std::smatch m;
  std::regex re("^" + std::regex_replace(file, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                R"(:(\d+):(\d+): error: .+)");
  REQUIRE(std::regex_search(c.diags[0], m, re));
  CHECK(std::stoi(m[2]) >= 1);
  return std::stoi(m[1]);
}


}  // namespace

TEST_CASE("driver: a syntax error is reported as file:line:col: error:", "[compiler][driver]") {
  std::string src =
      "kernel k(X: f32[N], Y: out f32[N]) grid(cdiv(N, 128)) threads(128)\n"
      "{\n"
      "  let i = block.x * * 128\n"
      "}\n";
  Compiled c = compile(src, "bad_syntax.qla");
  CHECK(checkErrorFormat(c, "bad_syntax.qla") == 3);
}

TEST_CASE("driver: an unknown -D is an error naming it", "[compiler][driver]") {
  Compiled c = compile(readFile(kGemmPath), kGemmPath, {{"NO_SUCH_CONSTANT", "1"}});
  checkErrorFormat(c, kGemmPath);
  CHECK(c.diags[0].find("NO_SUCH_CONSTANT") != std::string::npos);

  Compiled bad = compile(readFile(kGemmPath), kGemmPath, {{"BN", "not_a_number"}});
  checkErrorFormat(bad, kGemmPath);
}

TEST_CASE("driver: a gemm shape mismatch points at the gemm", "[compiler][driver]") {
  // b is [BN, BK]; gemm(a, b) without the transpose multiplies [BM, BK] by [BN, BK].
  std::string src = replaced(readFile(kGemmPath), "gemm(a, b^T)", "gemm(a, b)");
  Compiled c = compile(src, "gemm_mismatch.qla");
  CHECK(checkErrorFormat(c, "gemm_mismatch.qla") == lineOf(src, "gemm(a, b)"));
  CHECK(c.diags[0].find("gemm shapes do not match") != std::string::npos);
}

TEST_CASE("driver: the kernel symbol is derived from the content", "[compiler][driver]") {
  std::string src = readFile(kGemmPath);
  Compiled a = compile(src, kGemmPath), b = compile(src, kGemmPath);
  INFO(joined(a.diags) << joined(b.diags));
  REQUIRE(a.ok);
  REQUIRE(b.ok);
  CHECK(a.k.info.name.rfind("qla_gemm_", 0) == 0);
  CHECK(a.k.info.name.size() > std::string("qla_gemm_").size());
  CHECK(a.k.info.name == b.k.info.name);
  CHECK(a.k.cuda == b.k.cuda);

  Compiled bn = compile(src, kGemmPath, {{"BN", "128"}});
  INFO(joined(bn.diags));
  REQUIRE(bn.ok);
  CHECK(bn.k.info.name.rfind("qla_gemm_", 0) == 0);
  CHECK(bn.k.info.name != a.k.info.name);
  // Setting a constant to its default value changes nothing.
  Compiled same = compile(src, kGemmPath, {{"BN", "256"}});
  REQUIRE(same.ok);
  CHECK(same.k.info.name == a.k.info.name);
}

TEST_CASE("driver: gemm's KernelInfo", "[compiler][driver]") {
  Compiled c = compile(readFile(kGemmPath), kGemmPath);
  INFO(joined(c.diags));
  REQUIRE(c.ok);
  const qla::KernelInfo &info = c.k.info;
  INFO(info.serialize());
  REQUIRE(info.tensors.size() == 3);
  CHECK(info.tensors[0].name == "A");
  CHECK(info.tensors[1].name == "B");
  CHECK(info.tensors[2].name == "C");
  for (auto &t : info.tensors) CHECK(t.dtype == qla::DType::BF16);
  CHECK(info.tensors[0].dims == std::vector<std::string>{"M", "K"});
  CHECK(info.tensors[1].dims == std::vector<std::string>{"N", "K"});
  CHECK(info.tensors[2].dims == std::vector<std::string>{"M", "N"});
  CHECK_FALSE(info.tensors[0].isOutput);
  CHECK_FALSE(info.tensors[1].isOutput);
  CHECK(info.tensors[2].isOutput);
  CHECK(info.scalars.empty());
  CHECK(info.dimSymbols == std::vector<std::string>{"M", "K", "N"});
  CHECK(info.threads == 384);
  CHECK(info.dynamicSmemBytes > 0);
  CHECK(info.dynamicSmemBytes <= 227 * 1024);  // Hopper's opt-in maximum per block
  CHECK(info.cluster == std::array<int, 3>{1, 1, 1});

  // grid(cdiv(N, BN), cdiv(M, BM)) with BN = 256, BM = 128 folded in.
  CHECK(info.grid[0].find("cdiv") != std::string::npos);
  CHECK(info.grid[0].find("N") != std::string::npos);
  CHECK(info.grid[0].find("256") != std::string::npos);
  CHECK(info.grid[1].find("M") != std::string::npos);
  CHECK(info.grid[1].find("128") != std::string::npos);
  CHECK(info.grid[2] == "1");
  std::vector<int64_t> dims = {1000, 520, 777};  // M, K, N
  int64_t gx = 0, gy = 0, gz = 0;
  std::string err;
  REQUIRE(qla::evalGridExpr(info.grid[0], info.dimSymbols, dims, gx, err));
  REQUIRE(qla::evalGridExpr(info.grid[1], info.dimSymbols, dims, gy, err));
  REQUIRE(qla::evalGridExpr(info.grid[2], info.dimSymbols, dims, gz, err));
  CHECK(gx == 4);  // cdiv(777, 256)
  CHECK(gy == 8);  // cdiv(1000, 128)
  CHECK(gz == 1);

  // The launcher's GPU-free checks agree: grid for a 1000x777x520 problem.
  qla::rt::LaunchArgs args;
  alignas(256) static char dummy[256];  // never dereferenced
  args.tensors = {{dummy, {1000, 520}}, {dummy, {777, 520}}, {dummy, {1000, 777}}};
  CHECK(qla::rt::LoadedKernel::launchGridFor(info, args) == std::array<int64_t, 3>{4, 8, 1});

  // The KernelInfo round-trips through its text form (the cache stores that).
  qla::KernelInfo back;
  REQUIRE(qla::KernelInfo::deserialize(info.serialize(), back, err));
  CHECK(back.serialize() == info.serialize());

  Compiled bn = compile(readFile(kGemmPath), kGemmPath, {{"BN", "128"}});
  REQUIRE(bn.ok);
  REQUIRE(qla::evalGridExpr(bn.k.info.grid[0], bn.k.info.dimSymbols, dims, gx, err));
  CHECK(gx == 7);  // cdiv(777, 128)
}

TEST_CASE("jit: a compile error throws qla::CompileError with the diagnostics", "[compiler][jit]") {
  TempDir dir;
  qla::rt::KernelCache cache(dir.path);
  qla::JitOptions opt;
  opt.arch = "sm_90a";
  opt.cache = &cache;
  opt.defines["NO_SUCH_CONSTANT"] = "1";
  try {
    qla::jitCompileString(readFile(kGemmPath), "gemm.qla", opt);
    FAIL("no exception");
  } catch (const qla::CompileError &e) {
    REQUIRE(!e.diagnostics.empty());
    CHECK(e.diagnostics[0].rfind("gemm.qla:", 0) == 0);
    CHECK(std::string(e.what()).find("NO_SUCH_CONSTANT") != std::string::npos);
  }
}

TEST_CASE("jit: memory hit in the same cache, disk hit in a fresh one", "[compiler][jit][nvrtc]") {
  TempDir dir;
  std::string src = readFile(kGemmPath);
  qla::JitOptions opt;
  opt.arch = "sm_90a";  // no GPU needed

  qla::rt::KernelCache cache(dir.path);
  opt.cache = &cache;
  qla::JitKernel first = qla::jitCompileString(src, "gemm.qla", opt);
  CHECK(first.cacheHit() == qla::rt::CacheHit::Miss);
  REQUIRE(first.cubin().size() > 4);
  CHECK(first.cubin().compare(0, 4, "\x7f" "ELF") == 0);
  CHECK(first.ptx().find(".target sm_90a") != std::string::npos);
  CHECK(first.info().name.rfind("qla_gemm_", 0) == 0);
  CHECK(first.buildSeconds() > 0);

  qla::JitKernel second = qla::jitCompileString(src, "gemm.qla", opt);
  CHECK(second.cacheHit() == qla::rt::CacheHit::Memory);
  CHECK(second.cubin() == first.cubin());
  CHECK(second.info().name == first.info().name);
  WARN("gemm JIT build: miss " << first.buildSeconds() * 1e3 << " ms, memory hit " << second.buildSeconds() * 1e3
                               << " ms");

  qla::rt::KernelCache fresh(dir.path);  // same directory, empty memory: another process, in effect
  opt.cache = &fresh;
  qla::JitKernel third = qla::jitCompileString(src, "gemm.qla", opt);
  CHECK(third.cacheHit() == qla::rt::CacheHit::Disk);
  CHECK(third.cubin() == first.cubin());
  CHECK(third.ptx() == first.ptx());
  CHECK(third.info().serialize() == first.info().serialize());

  // A different specialization is a different entry.
  opt.defines["BN"] = "128";
  qla::JitKernel other = qla::jitCompileString(src, "gemm.qla", opt);
  CHECK(other.cacheHit() == qla::rt::CacheHit::Miss);
  CHECK(other.info().name != first.info().name);
}
