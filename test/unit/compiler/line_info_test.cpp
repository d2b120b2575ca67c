// Source-level names and lines (CompileOptions::lineInfo, qlac --line-info,
// JitOptions::lineInfo / QLA_LINE_INFO): over every kernel of examples/ and
// kernels/gdn/, the directives change nothing but the mapping (the text
// without them is the default text without its line comments, the symbol is
// the same, every directive names a line of the file or the generated file's
// own next line); the cubin carries a line table with line info and none
// without; the JIT keys the two apart. No GPU needed (NVRTC only).
#include "test/unit/TestSupport.h"
#include <filesystem>
#include <catch2/catch.hpp>

#include <dirent.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "qla/compiler/Compiler.h"
#include "qla/jit.h"
#include "qla/runtime/Nvrtc.h"

using qla::test::readFile;
using qla::test::TempDir;

namespace {

std::vector<std::string> qlaFiles(const std::string &dir) {
  std::vector<std::string> out;
  if (DIR *d = ::opendir(dir.c_str())) {
    while (dirent *e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 4 && n.compare(n.size() - 4, 4, ".qla") == 0) out.push_back(dir + "/" + n);
    }
    ::closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> splitLines(const std::string &s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

qla::CompiledKernel compile(const std::string &path, const std::string &kernel, bool lineInfo) {
  qla::CompileOptions o;
  o.kernel = kernel;
  o.lineInfo = lineInfo;
  o.includeDirs = {std::filesystem::path(path).parent_path().string()};  // as qlac does
  qla::CompiledKernel ck;
  std::vector<std::string> diags;
  bool ok = qla::compileQla(readFile(path), path, o, ck, diags);
  for (auto &d : diags) UNSCOPED_INFO(d);
  REQUIRE(ok);
  return ck;
}

// Section names of an ELF64 little-endian file (a cubin).
std::set<std::string> elfSectionNames(const std::string &elf) {
  auto u16 = [&](size_t o) { uint16_t v; std::memcpy(&v, elf.data() + o, 2); return v; };
  auto u32 = [&](size_t o) { uint32_t v; std::memcpy(&v, elf.data() + o, 4); return v; };
  auto u64 = [&](size_t o) { uint64_t v; std::memcpy(&v, elf.data() + o, 8); return v; };
  std::set<std::string> names;
  REQUIRE(elf.size() > 64);
  REQUIRE(elf.compare(0, 4, "\x7f" "ELF") == 0);
  REQUIRE(elf[4] == 2);  // ELFCLASS64
  REQUIRE(elf[5] == 1);  // little-endian
  const uint64_t shoff = u64(0x28);
  const uint16_t shentsize = u16(0x3a), shnum = u16(0x3c), shstrndx = u16(0x3e);
  REQUIRE(shentsize >= 64);
  REQUIRE(shstrndx < shnum);
  REQUIRE(shoff + uint64_t(shnum) * shentsize <= elf.size());
  const size_t strHdr = shoff + size_t(shstrndx) * shentsize;
  const uint64_t strOff = u64(strHdr + 0x18), strSize = u64(strHdr + 0x20);
  REQUIRE(strOff + strSize <= elf.size());
  for (uint16_t i = 0; i < shnum; ++i) {
    const uint32_t n = u32(shoff + size_t(i) * shentsize);
    if (n >= strSize) continue;
    names.insert(std::string(elf.c_str() + strOff + n));
  }
  return names;
}

bool hasLineTable(const std::set<std::string> &sections) {
  return sections.count(".debug_line") || sections.count(".nv_debug_line_sass");
}

const std::regex kLineComment(R"(^ *// .*:[0-9]+$)");
const std::regex kDirective(R"re(^#line ([0-9]+)(?: "(.*)")?$)re");

}  // namespace

TEST_CASE("line info: directives only map lines, for every kernel", "[compiler][lineinfo]") {
  std::vector<std::string> files = qlaFiles(std::string(QLA_SOURCE_DIR) + "/examples");
  for (auto &f : qlaFiles(std::string(QLA_SOURCE_DIR) + "/kernels/gdn")) files.push_back(f);
  REQUIRE(files.size() >= 8);
  int kernels = 0;
  for (const std::string &path : files) {
    std::vector<std::string> names, diags;
    qla::CompileOptions lo;
    lo.includeDirs = {std::filesystem::path(path).parent_path().string()};
    REQUIRE(qla::listKernels(readFile(path), path, names, diags, lo));
    const size_t sourceLines = splitLines(readFile(path)).size();
    for (const std::string &k : names) {
      INFO(path << " kernel " << k);
      ++kernels;
      qla::CompiledKernel plain = compile(path, k, false), mapped = compile(path, k, true);
      CHECK(plain.info.name == mapped.info.name);
      CHECK(plain.info.serialize() == mapped.info.serialize());
      CHECK(plain.cuda.find("#line") == std::string::npos);

      // Without the directives, the mapped text is the plain one without its
      // `// file:N` comments.
      std::string plainCode, mappedCode;
      for (auto &l : splitLines(plain.cuda))
        if (!std::regex_match(l, kLineComment)) plainCode += l + "\n";
      const std::vector<std::string> lines = splitLines(mapped.cuda);
      int directives = 0, back = 0;
      std::string file;  // the presumed file after the last directive
      for (size_t i = 0; i < lines.size(); ++i) {
        std::smatch m;
        if (!std::regex_match(lines[i], m, kDirective)) {
          mappedCode += lines[i] + "\n";
          continue;
        }
        ++directives;
        if (m[2].matched) file = m[2];
        const unsigned n = (unsigned)std::stoul(m[1]);
        if (file == plain.info.name + ".cu") {
          ++back;
          CHECK(n == i + 2);  // the physical number of the next line (1-based)
        } else if (file == path) {
          CHECK(n >= 1);
          CHECK(n <= sourceLines);
        } else {  // a file the kernel's file includes (a fn's body)
          INFO("directive names " << file);
          REQUIRE(std::filesystem::is_regular_file(file));
          CHECK(n >= 1);
          CHECK(n <= splitLines(readFile(file)).size());
        }
      }
      CHECK(mappedCode == plainCode);
      CHECK(directives > 10);
      CHECK(back == 1);  // the kernel's closing brace
      // Every fragment of these kernels is declared in the source, so every
      // one is named after it; a generic `frag_N` means the name got lost on
      // the way (a pass that rebuilt an allocation without its NameLoc).
      INFO("a fragment without its source name");
      CHECK(plain.cuda.find("frag_") == std::string::npos);
    }
  }
  CHECK(kernels >= 8);
}

TEST_CASE("line info: names after the source", "[compiler][lineinfo]") {
  const std::string path = std::string(QLA_SOURCE_DIR) + "/examples/gemm.qla";
  qla::CompiledKernel ck = compile(path, "", false);
  for (const char *want : {"float acc_", "const int m0_", "const int n0_", "for (int k_", "qla::dev::bf16* const a_",
                           "qla::dev::bf16* const b_"})
    CHECK(ck.cuda.find(want) != std::string::npos);
  // Deterministic.
  CHECK(compile(path, "", false).cuda == ck.cuda);
}

TEST_CASE("line info: a kernel parameter's name is never reused", "[compiler][lineinfo]") {
  // The tensor is called acc_0: the fragment `acc` must not become acc_0 too.
  const std::string src =
      "kernel clash(acc_0: f32[M, 64], Y: out f32[M, 64]) grid(1) threads(128) {\n"
      "  frag acc: f32[64, 64]\n"
      "  copy acc_0[0 :+ 64, 0 :+ 64] -> acc\n"
      "  copy acc -> Y[0 :+ 64, 0 :+ 64]\n"
      "}\n";
  qla::CompileOptions o;
  qla::CompiledKernel ck;
  std::vector<std::string> diags;
  REQUIRE(qla::compileQla(src, "clash.qla", o, ck, diags));
  CHECK(ck.cuda.find("float acc_0[") == std::string::npos);
  CHECK(ck.cuda.find("float acc_1[") != std::string::npos);
  qla::rt::NvrtcOptions no;
  no.wantCubin = false;
  qla::rt::NvrtcResult r = qla::rt::compileCuda(ck.cuda, ck.info.name, no);
  INFO(r.error);
  CHECK(r.ok);
}

TEST_CASE("line info: the cubin carries a line table on request", "[compiler][lineinfo][nvrtc]") {
  const std::string path = std::string(QLA_SOURCE_DIR) + "/examples/gemm.qla";
  for (bool on : {false, true}) {
    INFO("line info " << on);
    qla::CompiledKernel ck = compile(path, "", on);
    qla::rt::NvrtcOptions no;
    if (on) no.extra.push_back(qla::lineInfoNvrtcOption());
    qla::rt::NvrtcResult r = qla::rt::compileCuda(ck.cuda, ck.info.name, no);
    INFO(r.error);
    REQUIRE(r.ok);
    CHECK(hasLineTable(elfSectionNames(r.cubin)) == on);
    // The PTX's file table names the .qla file (NVRTC makes it absolute).
    CHECK((r.ptx.find("examples/gemm.qla\"") != std::string::npos) == on);
  }
}

TEST_CASE("line info: the JIT keys it, QLA_LINE_INFO turns it on", "[compiler][lineinfo][jit][nvrtc]") {
  TempDir cacheDir("qla-lineinfo-cache");
  qla::rt::KernelCache cache(cacheDir.path);
  const std::string path = std::string(QLA_SOURCE_DIR) + "/examples/rmsnorm.qla";
  const std::string src = readFile(path);
  ::unsetenv("QLA_LINE_INFO");
  CHECK_FALSE(qla::lineInfoFromEnvironment());
  qla::JitOptions opt;
  opt.arch = "sm_90a";
  opt.cache = &cache;
  qla::JitKernel plain = qla::jitCompileString(src, path, opt);
  CHECK(plain.cacheHit() == qla::rt::CacheHit::Miss);
  CHECK_FALSE(hasLineTable(elfSectionNames(plain.cubin())));
  opt.lineInfo = true;
  qla::JitKernel mapped = qla::jitCompileString(src, path, opt);
  CHECK(mapped.cacheHit() == qla::rt::CacheHit::Miss);  // another key
  CHECK(hasLineTable(elfSectionNames(mapped.cubin())));
  CHECK(mapped.info().name == plain.info().name);
  CHECK(mapped.cuda().find("#line") != std::string::npos);

  opt.lineInfo = false;
  struct Unset {
    ~Unset() { ::unsetenv("QLA_LINE_INFO"); }
  } unset;
  for (const char *off : {"0", "off", "false", ""}) {
    ::setenv("QLA_LINE_INFO", off, 1);
    CHECK_FALSE(qla::lineInfoFromEnvironment());
  }
  ::setenv("QLA_LINE_INFO", "1", 1);
  CHECK(qla::lineInfoFromEnvironment());
  qla::JitKernel env = qla::jitCompileString(src, path, opt);
  CHECK(env.cacheHit() == qla::rt::CacheHit::Memory);  // the line-info entry
  CHECK(hasLineTable(elfSectionNames(env.cubin())));
}
