// Robustness: truncated and mutated versions of the sample kernels give
// diagnostics (with a valid location), never a crash or a hang.
#include <catch2/catch.hpp>

#include <fstream>
#include <random>
#include <sstream>

#include "qla/frontend/Frontend.h"

using namespace qla::fe;

namespace {

std::string readInput(const std::string &name) {
#ifdef QLA_SOURCE_DIR
  std::ifstream f(std::string(QLA_SOURCE_DIR) + "/test/frontend-inputs/" + name);
#else
  std::string here = __FILE__;
  std::ifstream f(here.substr(0, here.rfind('/')) + "/../../frontend-inputs/" + name);
#endif
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs the whole front end; returns the diagnostics. Checked modules are also
// dumped so that the printers see odd trees too.
std::vector<Diagnostic> runAll(const std::string &src, const std::map<std::string, std::string> &defs = {}) {
  std::vector<Diagnostic> diags;
  auto m = parseAndCheckQla(src, "t.qla", defs, diags);
  if (m) {
    CHECK_FALSE(dumpAst(*m).empty());
    for (const auto &k : m->kernels)
      for (const auto &g : k->grid) CHECK_FALSE(gridExprString(*g).empty());
  }
  for (const auto &d : diags) {
    CHECK(d.loc.file == "t.qla");
    CHECK(d.loc.line >= 1);
    CHECK(d.loc.col >= 1);
    CHECK_FALSE(d.message.empty());
  }
  return diags;
}

const char *kSamples[] = {"gemm.qla", "rmsnorm.qla", "features.qla"};

}  // namespace

TEST_CASE("fuzz: every strict prefix of a sample is an error", "[fuzz]") {
  for (const char *name : kSamples) {
    std::string src = readInput(name);
    REQUIRE(runAll(src).empty());
    size_t end = src.find_last_not_of(" \t\r\n") + 1;  // past the final '}'
    for (size_t n = 0; n < end; ++n) {
      std::string cut = src.substr(0, n);
      INFO(name << " cut at " << n << ": ..." << cut.substr(cut.size() > 40 ? cut.size() - 40 : 0));
      CHECK_FALSE(runAll(cut).empty());
    }
  }
}

TEST_CASE("fuzz: dropping one line never crashes", "[fuzz]") {
  for (const char *name : kSamples) {
    std::string src = readInput(name);
    std::vector<std::string> lines;
    std::istringstream is(src);
    for (std::string l; std::getline(is, l);) lines.push_back(l);
    for (size_t drop = 0; drop < lines.size(); ++drop) {
      std::string s;
      for (size_t i = 0; i < lines.size(); ++i)
        if (i != drop) s += lines[i] + "\n";
      INFO(name << " without line " << drop + 1 << ": " << lines[drop]);
      runAll(s);
    }
  }
}

TEST_CASE("fuzz: random mutations never crash", "[fuzz]") {
  // Fragments that are likely to build odd but parseable programs.
  const std::vector<std::string> pieces = {
      "(", ")", "[", "]", "{", "}", ",", ":", ";", "..", ":+", "->", "^T", "=", "+=", "-", "*", "/", "%",
      "<", ">", "?", "!", "0", "1", "-1", "0.5", "1e-6", "true", "x", "a", "acc", "k", "i", "j", "BM",
      "block.x", "let", "frag", "shared", "copy", "gemm", "for", "in", "parallel", "pipeline", "stages",
      "unroll", "role", "warpgroup", "regs", "channel", "depth", "put", "get", "if", "else", "reduce",
      "scan", "cast", "dim", "max", "min", "out", "kernel", "f32", "bf16", "i32", "var", "until",
      "inv_unit_lower", "DT", "CU[n]", "gam[0]", "+=", "*=", "\n", " "};
  std::mt19937 rng(12345);
  for (const char *name : kSamples) {
    const std::string src = readInput(name);
    for (int iter = 0; iter < 1500; ++iter) {
      std::string s = src;
      int edits = 1 + int(rng() % 3);
      for (int e = 0; e < edits && !s.empty(); ++e) {
        size_t pos = rng() % s.size();
        switch (rng() % 4) {
        case 0: s.erase(pos, 1 + rng() % 8); break;
        case 1: s.insert(pos, " " + pieces[rng() % pieces.size()] + " "); break;
        case 2: s[pos] = char(32 + rng() % 95); break;
        default: {
          // Swap two spans of a few characters.
          size_t other = rng() % s.size(), len = 1 + rng() % 6;
          if (pos + len < s.size() && other + len < s.size())
            for (size_t k = 0; k < len; ++k) std::swap(s[pos + k], s[other + k]);
        }
        }
      }
      INFO(name << " mutation " << iter << ":\n" << s);
      runAll(s);
      runAll(s, {{"BM", "0"}, {"STAGES", "-1"}, {"D", "3"}});
    }
  }
}

TEST_CASE("fuzz: hostile -D values on the samples", "[fuzz]") {
  const std::vector<std::map<std::string, std::string>> sets = {
      {{"BM", "0"}},        {{"BM", "-64"}},     {{"BK", "9223372036854775807"}}, {{"BN", "99999999999999999999"}},
      {{"STAGES", "0"}},    {{"BM", "1"}},       {{"EPS", "0"}},                  {{"EPS", "nan"}},
      {{"D", "64"}},        {{"BR", "1e3"}},     {{"BM", ""}},                    {{"BM", " 64 "}},
      {{"DT", "f16"}},      {{"DT", "f32"}},     {{"DT", "f64"}},                 {{"BT", "1"}},
      {{"VARLEN", "0"}},    {{"C", "32"}},       {{"C", "0"}},                    {{"DV", "64"}},
  };
  for (const char *name : kSamples) {
    std::string src = readInput(name);
    for (const auto &defs : sets) {
      INFO(name);
      runAll(src, defs);
    }
  }
}

TEST_CASE("fuzz: the longest allowed expression checks and prints", "[fuzz]") {
  std::string chain = "kernel k(A: f32[M]) grid(1) threads(128) { let x = M";
  for (int i = 0; i < 1990; ++i) chain += (i % 2 ? " + M" : " * 2");
  std::vector<Diagnostic> diags = runAll(chain + " }");
  CHECK(diags.empty());
}
