// NVRTC: compiles for sm_90a without a GPU; errors name the kernel; every
// embedded qla/device header compiles on its own.
#include <catch2/catch.hpp>

#include <algorithm>

#include "qla/runtime/Nvrtc.h"

using namespace qla::rt;

namespace {
const char *kTiny = R"(
extern "C" __global__ void qla_tiny(float *out, const float *in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0f * in[i];
}
)";

bool hasOption(const std::vector<std::string> &opts, const std::string &o) {
  return std::find(opts.begin(), opts.end(), o) != opts.end();
}
}  // namespace

TEST_CASE("NVRTC option list", "[runtime][nvrtc]") {
  NvrtcOptions o;
  auto opts = nvrtcOptionList(o);
  REQUIRE(!opts.empty());
  CHECK(opts[0] == "-arch=sm_90a");
  CHECK(hasOption(opts, "-std=c++17"));
  CHECK(hasOption(opts, "-default-device"));
  CHECK_FALSE(hasOption(opts, "--use_fast_math"));

  o.extra = {"-lineinfo"};
  o.toolkitIncludes = false;
  opts = nvrtcOptionList(o);
  CHECK(opts.back() == "-lineinfo");
  CHECK(std::none_of(opts.begin(), opts.end(), [](const std::string &s) { return s.rfind("-I", 0) == 0; }));

  o.arch = "sm_80";
  CHECK(nvrtcOptionList(o)[0] == "-arch=sm_80");
  o.wantCubin = false;  // PTX only: a virtual arch skips ptxas
  CHECK(nvrtcOptionList(o)[0] == "-arch=compute_80");
}

TEST_CASE("NVRTC version", "[runtime][nvrtc]") {
  std::string v = nvrtcVersion();
  INFO(v);
  CHECK(v.find('.') != std::string::npos);
  CHECK(v != "unknown");
}

TEST_CASE("NVRTC compiles a tiny kernel to PTX and an sm_90a cubin", "[runtime][nvrtc]") {
  NvrtcOptions o;
  o.extra = {"-lineinfo"};
  NvrtcResult r = compileCuda(kTiny, "qla_tiny", o);
  INFO(r.error << r.log);
  REQUIRE(r.ok);
  CHECK(r.error.empty());
  CHECK(r.ptx.find(".target sm_90a") != std::string::npos);
  CHECK(r.ptx.find("qla_tiny") != std::string::npos);
  CHECK(r.ptx.back() != '\0');
  REQUIRE(r.cubin.size() > 4);
  CHECK(r.cubin.compare(0, 4, "\x7f" "ELF") == 0);

  o.wantCubin = false;
  NvrtcResult p = compileCuda(kTiny, "qla_tiny", o);
  REQUIRE(p.ok);
  CHECK(p.cubin.empty());
  CHECK(p.ptx.find(".target sm_90a") != std::string::npos);
}

TEST_CASE("NVRTC errors name the kernel and carry the log", "[runtime][nvrtc]") {
  NvrtcResult r = compileCuda("extern \"C\" __global__ void broken_k() { undeclared_thing(); }",
                              "broken_k", NvrtcOptions{});
  CHECK_FALSE(r.ok);
  CHECK(r.error.rfind("NVRTC failed to compile kernel 'broken_k':\n", 0) == 0);
  CHECK(r.error.find("undeclared_thing") != std::string::npos);
  CHECK(r.log.find("broken_k.cu") != std::string::npos);  // program name in diagnostics
  CHECK(r.cubin.empty());

  NvrtcOptions bad;
  bad.extra = {"--no-such-option"};
  r = compileCuda(kTiny, "qla_tiny", bad);
  CHECK_FALSE(r.ok);
  CHECK(r.error.find("'qla_tiny'") != std::string::npos);
}

TEST_CASE("every embedded device header compiles under NVRTC for sm_90a", "[runtime][nvrtc][device]") {
  const auto &headers = embeddedDeviceHeaders();
  if (headers.empty()) {
    WARN("no runtime/include/qla/device/*.cuh embedded yet; nothing to compile");
    return;
  }
  for (const auto &h : headers) {
    CHECK(h.first.rfind("qla/device/", 0) == 0);
    CHECK(h.first.size() > 4);
    CHECK(h.first.substr(h.first.size() - 4) == ".cuh");
    CHECK_FALSE(h.second.empty());
  }
  // All at once, then each alone (catches headers that rely on include order).
  // Without toolkit include paths: the device library must be self-contained.
  NvrtcOptions o;
  o.toolkitIncludes = false;
  std::string all;
  for (const auto &h : headers) all += "#include \"" + h.first + "\"\n";
  all += "extern \"C\" __global__ void qla_headers_probe() {}\n";
  NvrtcResult r = compileCuda(all, "qla_headers_probe", o);
  INFO(r.error);
  REQUIRE(r.ok);
  CHECK(r.cubin.compare(0, 4, "\x7f" "ELF") == 0);

  o.wantCubin = false;  // syntax/semantics only: skip ptxas per header
  for (const auto &h : headers) {
    std::string src = "#include \"" + h.first + "\"\nextern \"C\" __global__ void qla_header_probe() {}\n";
    NvrtcResult one = compileCuda(src, "qla_header_probe", o);
    INFO(h.first << ": " << one.error);
    CHECK(one.ok);
  }
}
