// Every kernel of every examples/*.qla (globbed at run time, so a new example
// is covered without touching this file) compiles with the QLA compiler and
// NVRTC to an sm_90a cubin without register spills; gemm.qla's PTX uses the
// Hopper instructions it is meant to (wgmma, TMA, mbarrier waits, setmaxnreg).
// No GPU needed.
#include "test/unit/TestSupport.h"
#include <catch2/catch.hpp>

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <map>

#include "qla/compiler/Compiler.h"
#include "qla/runtime/Nvrtc.h"

using qla::test::readFile;
using qla::test::joined;

namespace {

std::string examplesDir() { return std::string(QLA_SOURCE_DIR) + "/examples"; }

std::vector<std::string> exampleFiles() {
  std::vector<std::string> names;
  if (DIR *d = ::opendir(examplesDir().c_str())) {
    while (dirent *e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 4 && n.compare(n.size() - 4, 4, ".qla") == 0) names.push_back(n);
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// What ptxas -v says about one entry function:
//   ptxas info    : Compiling entry function 'qla_gemm_…' for 'sm_90a'
//   ptxas info    : Function properties for qla_gemm_…
//       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//   ptxas info    : Used 168 registers, used 1 barriers, 904 bytes cmem[0]
struct PtxasReport {
  bool found = false;       // "Compiling entry function '<name>'" seen
  std::string properties;   // the "bytes stack frame, ... spill loads" line
  int registers = -1;       // from "Used N registers"
};

PtxasReport parsePtxas(const std::string &log, const std::string &kernel) {
  PtxasReport r;
  std::vector<std::string> lines;
  std::istringstream in(log);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find("Compiling entry function '" + kernel + "'") == std::string::npos) continue;
    r.found = true;
    // Until the next function's report.
    for (size_t j = i + 1; j < lines.size(); ++j) {
      const std::string &l = lines[j];
      if (l.find("Compiling entry function") != std::string::npos ||
          l.find("Compiling function") != std::string::npos)
        break;
      if (l.find("Function properties for " + kernel) != std::string::npos && j + 1 < lines.size()) {
        // NVRTC prefixes the line ("ptxas         .     0 bytes stack frame, ..."): keep from the first digit.
        const std::string &p = lines[j + 1];
        size_t d = p.find_first_of("0123456789");
        r.properties = d == std::string::npos ? p : p.substr(d);
      }
      size_t u = l.find("Used ");
      if (u != std::string::npos && l.find(" registers", u) != std::string::npos && r.registers < 0)
        r.registers = std::atoi(l.c_str() + u + 5);
    }
    break;
  }
  return r;
}

}  // namespace

TEST_CASE("ptxas report parser", "[compiler][examples]") {
  std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'qla_a_1' for 'sm_90a'\n"
      "ptxas info    : Function properties for qla_a_1\n"
      "    0 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 1 barriers, 384 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function 'qla_b_2' for 'sm_90a'\n"
      "ptxas info    : Function properties for qla_b_2\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 0 barriers, 400 bytes cmem[0]\n";
  PtxasReport a = parsePtxas(log, "qla_a_1"), b = parsePtxas(log, "qla_b_2"), c = parsePtxas(log, "qla_c");
  CHECK(a.found);
  CHECK(a.registers == 255);
  CHECK(a.properties.find("8 bytes spill stores") != std::string::npos);
  CHECK(b.found);
  CHECK(b.registers == 40);
  CHECK(b.properties.find("0 bytes spill loads") != std::string::npos);
  CHECK_FALSE(c.found);
}

TEST_CASE("every example kernel compiles to an sm_90a cubin without spills", "[compiler][examples][nvrtc]") {
  std::vector<std::string> files = exampleFiles();
  INFO("examples directory: " << examplesDir());
  REQUIRE(!files.empty());
  REQUIRE(std::find(files.begin(), files.end(), "gemm.qla") != files.end());

  int compiled = 0;
  std::vector<std::string> summary;  // one line per kernel, printed at the end (registers, spills)
  for (const std::string &file : files) {
    std::string path = examplesDir() + "/" + file;
    std::string source = readFile(path);
    std::vector<std::string> kernels, diags;
    bool listed = qla::listKernels(source, path, kernels, diags);
    INFO(file << ": " << joined(diags));
    CHECK(listed);
    CHECK(!kernels.empty());

    for (const std::string &kernel : kernels) {
      INFO("kernel '" << kernel << "' of " << file);
      qla::CompileOptions co;
      co.kernel = kernel;
      qla::CompiledKernel ck;
      std::vector<std::string> cdiags;
      bool ok = qla::compileQla(source, path, co, ck, cdiags);
      INFO(joined(cdiags));
      CHECK(ok);
      if (!ok) continue;
      CHECK(ck.info.name.rfind("qla_" + kernel + "_", 0) == 0);
      CHECK(ck.cuda.find(ck.info.name) != std::string::npos);

      qla::rt::NvrtcOptions no;
      no.arch = "sm_90a";
      no.extra = {"--ptxas-options=-v"};
      qla::rt::NvrtcResult r = qla::rt::compileCuda(ck.cuda, ck.info.name, no);
      INFO(r.error);
      CHECK(r.ok);
      if (!r.ok) continue;
      ++compiled;
      CHECK(r.cubin.size() > 4);
      CHECK(r.cubin.compare(0, 4, "\x7f" "ELF") == 0);
      CHECK(r.ptx.find(".target sm_90a") != std::string::npos);
      CHECK(r.ptx.find(".entry " + ck.info.name) != std::string::npos);

      PtxasReport rep = parsePtxas(r.log, ck.info.name);
      INFO("NVRTC log:\n" << r.log);
      CHECK(rep.found);
      CHECK(rep.registers > 0);
      CHECK(rep.properties.find(", 0 bytes spill stores") != std::string::npos);
      CHECK(rep.properties.find(", 0 bytes spill loads") != std::string::npos);
      std::ostringstream line;
      line << file << " / " << kernel << " (" << ck.info.name << "): " << rep.registers << " registers, "
           << ck.info.threads << " threads, " << ck.info.dynamicSmemBytes << " B dynamic smem; " << rep.properties;
      summary.push_back(line.str());

      if (file == "gemm.qla") {
        // The warp-specialized Hopper GEMM: TMA loads into a multi-stage
        // mbarrier pipeline, wgmma on the math warpgroups, register
        // reallocation between the producer and the consumers.
        for (const char *insn : {"wgmma.mma_async", "cp.async.bulk.tensor", "mbarrier.try_wait.parity", "setmaxnreg"}) {
          INFO("PTX instruction " << insn);
          CHECK(r.ptx.find(insn) != std::string::npos);
        }
      }
    }
  }
  CHECK(compiled > 0);
  for (const std::string &line : summary) WARN(line);
}

// The emitted CUDA (and so the kernel symbol and the cache key) must not
// depend on where things land in memory: iterating a pointer-keyed map
// (DenseMap<Value, ...>) in a pass makes it differ from run to run, which
// defeats the disk cache. Each compile uses a fresh MLIRContext, so repeated
// compiles in one process see different addresses.
// The GDN kernels (kernels/gdn/*.qla) under the specializations that cover
// every constant the operator sets: the default (bf16, K = V = 128), K = V =
// 64, in-kernel L2 norm, varlen with int64 offsets and initial/final state,
// f16; the state kernel's pass 1 and the merge (context parallelism). Each
// must compile to an sm_90a cubin with zero spill bytes.
TEST_CASE("the GDN kernels compile to sm_90a cubins without spills", "[compiler][gdn][nvrtc]") {
  const std::string dir = std::string(QLA_SOURCE_DIR) + "/kernels/gdn/";
  const std::vector<std::map<std::string, std::string>> variants = {
      {},
      {{"DK", "64"}, {"DV", "64"}},
      {{"L2NORM", "1"}},
      {{"VARLEN", "1"}, {"CT", "i64"}},
      {{"DT", "f16"}},
  };
  std::vector<std::string> summary;
  // The state kernel's pass 1 (context parallelism) and the merge, too.
  const std::vector<std::map<std::string, std::string>> statePass1 = {
      {{"PASS", "1"}}, {{"PASS", "1"}, {"L2NORM", "1"}, {"VARLEN", "1"}, {"HAS_H0", "1"}}};
  const std::vector<std::map<std::string, std::string>> mergeVariants = {
      {}, {{"DK", "64"}, {"DV", "64"}}, {{"VARLEN", "1"}, {"CT", "i64"}}};
  for (const char *file : {"gdn_fwd_prepare.qla", "gdn_fwd_state.qla", "gdn_fwd_merge.qla"}) {
    std::string path = dir + file;
    std::string source = readFile(path);
    std::vector<std::map<std::string, std::string>> vs = variants;
    if (std::string(file) == "gdn_fwd_state.qla") vs.insert(vs.end(), statePass1.begin(), statePass1.end());
    if (std::string(file) == "gdn_fwd_merge.qla") vs = mergeVariants;
    for (auto defines : vs) {
      if (std::string(file) == "gdn_fwd_state.qla" && defines.count("VARLEN")) {
        defines["HAS_H0"] = "1";
        if (!defines.count("PASS")) defines["STORE_HT"] = "1";
      }
      std::string tag;
      for (auto &[k, v] : defines) tag += " -D " + k + "=" + v;
      INFO(file << tag);
      qla::CompileOptions co;
      co.defines = defines;
      co.includeDirs = {dir};  // as qlac does
      qla::CompiledKernel ck;
      std::vector<std::string> diags;
      bool ok = qla::compileQla(source, path, co, ck, diags);
      INFO(joined(diags));
      REQUIRE(ok);
      qla::rt::NvrtcOptions no;
      no.arch = "sm_90a";
      no.extra = {"--ptxas-options=-v"};
      qla::rt::NvrtcResult r = qla::rt::compileCuda(ck.cuda, ck.info.name, no);
      INFO(r.error << "\n" << r.log);
      REQUIRE(r.ok);
      CHECK(r.cubin.compare(0, 4, "\x7f" "ELF") == 0);
      CHECK(r.ptx.find("wgmma.mma_async") != std::string::npos);
      PtxasReport rep = parsePtxas(r.log, ck.info.name);
      CHECK(rep.found);
      CHECK(rep.properties.find(", 0 bytes spill stores") != std::string::npos);
      CHECK(rep.properties.find(", 0 bytes spill loads") != std::string::npos);
      summary.push_back(std::string(file) + tag + ": " + std::to_string(rep.registers) + " registers; " + rep.properties);
    }
  }
  for (const std::string &line : summary) WARN(line);
}

TEST_CASE("every example kernel compiles to the same CUDA every time", "[compiler][examples]") {
  for (const std::string &file : exampleFiles()) {
    std::string path = examplesDir() + "/" + file;
    std::string source = readFile(path);
    std::vector<std::string> kernels, diags;
    if (!qla::listKernels(source, path, kernels, diags)) continue;  // reported by the test above
    for (const std::string &kernel : kernels) {
      INFO("kernel '" << kernel << "' of " << file);
      qla::CompileOptions co;
      co.kernel = kernel;
      std::string first, firstName;
      for (int i = 0; i < 8; ++i) {
        qla::CompiledKernel ck;
        std::vector<std::string> cdiags;
        if (!qla::compileQla(source, path, co, ck, cdiags)) break;  // reported by the test above
        if (i == 0) {
          first = ck.cuda;
          firstName = ck.info.name;
          continue;
        }
        CHECK(ck.info.name == firstName);
        if (ck.cuda != first) {
          FAIL_CHECK("compile " << i << " emitted different CUDA than compile 0");
          break;
        }
      }
    }
  }
}
