// The simple-GLA kernel as the operator uses it, without a GPU: the embedded
// source is the tree's, every specialization (96) goes through the QLA
// compiler with the signature the operator launches (KERNELS.md), and a
// covering set compiles with NVRTC to sm_90a with zero spill bytes (all 96
// with the hidden tag [gla-nvrtc-all]).
#include "test/unit/TestSupport.h"
#include <catch2/catch.hpp>

#include <cctype>
#include <chrono>
#include <set>
#include <sstream>

#include "gla_test_util.h"
#include "qla/compiler/Compiler.h"
#include "qla/runtime/Nvrtc.h"

using namespace glatest;
using qla::gla::ForwardConfig;
using qla::gla::KernelSpec;

namespace {

std::string signatureText(const qla::KernelInfo &info) {
  std::string s;
  for (const auto &t : info.tensors) s += (s.empty() ? "" : ", ") + t.name + ":" + qla::dtypeName(t.dtype);
  for (const auto &t : info.scalars) s += ", " + t.name + ":" + qla::dtypeName(t.dtype);
  return s;
}

// KERNELS.md: Q Kt Vt G CU H0 O HT, scale.
void checkSignature(const ForwardConfig &c, const qla::KernelInfo &info) {
  const DType dt = c.dtype, f32 = DType::F32, cu = c.varlen ? c.cuDtype : DType::I32;
  const std::vector<std::string> names = {"Q", "Kt", "Vt", "G", "CU", "H0", "O", "HT"};
  const std::vector<DType> dtypes = {dt, dt, dt, f32, cu, f32, dt, f32};
  INFO(c.str() << "\n  compiled: " << signatureText(info));
  REQUIRE(info.tensors.size() == names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    CHECK(info.tensors[i].name == names[i]);
    CHECK(info.tensors[i].dtype == dtypes[i]);
  }
  REQUIRE(info.scalars.size() == 1);
  CHECK(info.scalars[0].name == "scale");
  CHECK(info.scalars[0].dtype == f32);
  CHECK(info.threads == 128);
}

qla::CompiledKernel compileSpec(const ForwardConfig &c) {
  KernelSpec spec = qla::gla::forwardKernelSpec(c);
  qla::CompileOptions o;
  o.defines = spec.defines;
  qla::CompiledKernel k;
  std::vector<std::string> diags;
  bool ok = qla::compileQla(*qla::gla::embeddedKernelSource(spec.file), "kernels/gla/" + spec.file, o, k, diags);
  INFO(spec.str() << "\n" << qla::test::joined(diags));
  REQUIRE(ok);
  return k;
}

// "Used N registers" and the spill bytes of ptxas -v for `kernel`.
struct Ptxas {
  int registers = -1;
  long long spillStores = -1, spillLoads = -1;
};
long long numberBefore(const std::string &line, const std::string &what) {
  size_t at = line.find(what);
  if (at == std::string::npos) return -1;
  size_t b = at;
  while (b > 0 && std::isdigit(static_cast<unsigned char>(line[b - 1]))) --b;
  return b == at ? -1 : std::stoll(line.substr(b, at - b));
}
Ptxas parsePtxas(const std::string &log) {
  Ptxas r;
  std::istringstream in(log);
  for (std::string l; std::getline(in, l);) {
    if (l.find("spill stores") != std::string::npos) {
      r.spillStores = numberBefore(l, " bytes spill stores");
      r.spillLoads = numberBefore(l, " bytes spill loads");
    }
    size_t u = l.find("Used ");
    if (u != std::string::npos && l.find(" registers", u) != std::string::npos) r.registers = std::atoi(l.c_str() + u + 5);
  }
  return r;
}

void compileSpillFree(const std::vector<ForwardConfig> &configs) {
  auto t0 = std::chrono::steady_clock::now();
  for (const ForwardConfig &c : configs) {
    qla::CompiledKernel k = compileSpec(c);
    checkSignature(c, k.info);
    qla::rt::NvrtcOptions no;
    no.arch = "sm_90a";
    no.extra = {"--ptxas-options=-v"};
    qla::rt::NvrtcResult r = qla::rt::compileCuda(k.cuda, k.info.name, no);
    INFO(c.str() << "\n" << r.error << "\nNVRTC log:\n" << r.log);
    REQUIRE(r.ok);
    Ptxas p = parsePtxas(r.log);
    CHECK(p.registers > 0);
    CHECK(p.spillStores == 0);
    CHECK(p.spillLoads == 0);
    std::printf("  gla %-70s %3d regs  spill %lld/%lld  smem %lld\n", c.str().c_str(), p.registers, p.spillStores,
                p.spillLoads, (long long)k.info.dynamicSmemBytes);
  }
  std::printf("gla: %zu kernels through NVRTC in %.1f s\n", configs.size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

ForwardConfig make(DType dt, int K, int V, int varlen, bool h0, bool ht) {
  ForwardConfig c;
  c.dtype = dt;
  c.K = K;
  c.V = V;
  c.varlen = varlen != 0;
  c.cuDtype = varlen == 2 ? DType::I64 : DType::I32;
  c.initialState = h0;
  c.finalState = ht;
  return c;
}

}  // namespace

TEST_CASE("GLA: specializations", "[gla][kernels]") {
  std::vector<ForwardConfig> all = qla::gla::allForwardConfigs();
  CHECK(all.size() == 96);
  std::set<std::string> configs, specs;
  for (const ForwardConfig &c : all) {
    configs.insert(c.str());
    specs.insert(qla::gla::forwardKernelSpec(c).str());
  }
  CHECK(configs.size() == 96);
  CHECK(specs.size() == 96);
  ForwardConfig c = make(DType::F16, 64, 128, 2, true, false);
  CHECK(c.str() == "dtype=f16 K=64 V=128 varlen=1 cu=i64 initial_state=1 final_state=0");
  CHECK(qla::gla::forwardKernelSpec(c).str() ==
        "gla_fwd.qla -D CT=i64 -D DK=64 -D DT=f16 -D DV=128 -D HAS_H0=1 -D STORE_HT=0 -D VARLEN=1");
  ForwardParams p = varlenParams({0, 3, 100}, DType::I32);
  p.final_state = stateRef(7, 2);
  CHECK(qla::gla::forwardConfig(p).str() == "dtype=bf16 K=128 V=128 varlen=1 cu=i32 initial_state=0 final_state=1");
}

TEST_CASE("GLA: the embedded kernel source is the tree's", "[gla][kernels]") {
  const std::string *src = qla::gla::embeddedKernelSource("gla_fwd.qla");
  REQUIRE(src);
  CHECK(*src == qla::test::readFile(std::string(QLA_SOURCE_DIR) + "/kernels/gla/gla_fwd.qla"));
  CHECK(qla::gla::embeddedKernelSource("nope.qla") == nullptr);
}

TEST_CASE("GLA: every specialization compiles through the QLA compiler with the operator's signature",
          "[gla][kernels]") {
  for (const ForwardConfig &c : qla::gla::allForwardConfigs()) {
    qla::CompiledKernel k = compileSpec(c);
    checkSignature(c, k.info);
    // One CTA per (32-wide V slice, head, sequence).
    CHECK(k.info.grid[0] == std::to_string(c.V / 32));
    CHECK(k.info.grid[1] == "H");
    CHECK(k.info.grid[2] == (c.varlen ? "NCU - 1" : "B"));
  }
}

TEST_CASE("GLA: a covering set compiles with NVRTC to sm_90a without spills", "[gla][kernels][nvrtc]") {
  const DType bf = DType::BF16, f16 = DType::F16;
  compileSpillFree({make(bf, 128, 128, 0, false, false), make(bf, 128, 128, 1, true, true),
                    make(f16, 64, 64, 2, true, false), make(f16, 64, 128, 0, false, true),
                    make(bf, 128, 64, 2, false, true), make(bf, 64, 64, 0, true, false)});
}

TEST_CASE("GLA: every specialization compiles with NVRTC without spills", "[.gla-nvrtc-all]") {
  compileSpillFree(qla::gla::allForwardConfigs());
}
