// The QLA C ABI (qla/c_api.h) as the Python package and C programs see it:
// this binary links libqla.so itself, not the static libraries. Versions, the
// kernel cache folder, GPU availability, and errors as NULL/0 + message.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <regex>
#include <string>

#include "qla/c_api.h"
#include "qla/runtime/Driver.h"  // qla::rt::gpuAvailable, exported by libqla.so too
#include "qla/runtime/Nvrtc.h"   // qla::rt::nvrtcVersion

namespace {

// The kernel cache of this process: a fresh folder, set in $QLA_CACHE_DIR
// before main() (libqla reads it once, at its first use of the cache), so that
// the result does not depend on the order the test cases run in.
struct CacheDir {
  std::string path;
  CacheDir() {
    const char *base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/qla-capi-test-XXXXXX";
    if (::mkdtemp(tmpl.data())) path = tmpl;
    if (!path.empty()) ::setenv("QLA_CACHE_DIR", path.c_str(), 1);
  }
  ~CacheDir() {
    if (path.empty()) return;
    if (DIR *d = ::opendir(path.c_str())) {
      while (dirent *e = ::readdir(d))
        if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, ".."))
          ::unlink((path + "/" + e->d_name).c_str());
      ::closedir(d);
    }
    ::rmdir(path.c_str());
  }
} gCacheDir;

int countCacheFiles(const std::string &dir) {
  int n = 0;
  if (DIR *d = ::opendir(dir.c_str())) {
    while (dirent *e = ::readdir(d)) {
      std::string name = e->d_name;
      n += name.size() > 5 && name.compare(name.size() - 5, 5, ".qlak") == 0;
    }
    ::closedir(d);
  }
  return n;
}

// A small elementwise kernel: Y = a * X + 1.
const char *kAxpb =
    "kernel axpb<B = 256>(X: f32[N], Y: out f32[N], a: f32)\n"
    "  grid(cdiv(N, B)) threads(128)\n"
    "{\n"
    "  let i0 = block.x * B\n"
    "  frag x: f32[B]\n"
    "  copy X[i0 :+ B] -> x\n"
    "  for (i) in parallel(B) { x[i] = x[i] * a + 1.0 }\n"
    "  copy x -> Y[i0 :+ B]\n"
    "}\n";

}  // namespace

TEST_CASE("capi: qla_version is the project's version, qla_nvrtc_version NVRTC's", "[capi]") {
  CHECK(std::string(qla_version()) == QLA_EXPECTED_VERSION);
  std::string nv = qla_nvrtc_version();
  CHECK(std::regex_match(nv, std::regex(R"(\d+\.\d+)")));
  CHECK(nv == qla::rt::nvrtcVersion());
  CHECK(qla_nvrtc_version() == qla_nvrtc_version());  // a stable pointer, valid for the process
}

TEST_CASE("capi: qla_cache_dir is $QLA_CACHE_DIR and compiled kernels are stored there", "[capi]") {
  REQUIRE(!gCacheDir.path.empty());
  CHECK(std::string(qla_cache_dir()) == gCacheDir.path);

  char err[4096] = "";
  qla_kernel *k = qla_compile_string(kAxpb, "axpb.qla", "B=128", nullptr, err, sizeof err);
  INFO(err);
  REQUIRE(k != nullptr);
  CHECK(qla_kernel_cache_hit(k) == 0);  // a fresh folder: built with NVRTC
  std::string info = qla_kernel_info(k);
  CHECK(info.find("tensor X f32 in N\n") != std::string::npos);
  CHECK(info.find("scalar a f32\n") != std::string::npos);
  CHECK(info.find("grid cdiv(N,128) 1 1\n") != std::string::npos);  // the define took effect
  qla_kernel_free(k);
  CHECK(countCacheFiles(qla_cache_dir()) == 1);

  k = qla_compile_string(kAxpb, "axpb.qla", "B=128", nullptr, err, sizeof err);
  REQUIRE(k != nullptr);
  CHECK(qla_kernel_cache_hit(k) == 1);  // the same process: from memory
  qla_kernel_free(k);
  CHECK(countCacheFiles(qla_cache_dir()) == 1);
}

TEST_CASE("capi: qla_gpu_available agrees with the runtime and always says why", "[capi]") {
  char msg[512];
  std::memset(msg, 'x', sizeof msg);
  int r = qla_gpu_available(msg, sizeof msg);
  REQUIRE((r == 0 || r == 1));
  std::string m = msg;
  CHECK(!m.empty());
  CHECK(m.size() < sizeof msg);

  std::string why;
  bool driverAndDevice = qla::rt::gpuAvailable(&why);
  if (!driverAndDevice) {
    CHECK(r == 0);
    CHECK(m == why);  // e.g. "no CUDA driver (libcuda.so.1 not found)"
  } else if (r == 1) {
    CHECK(m == "sm_90a");
    CHECK(qla::rt::deviceArch(0) == "sm_90a");
  } else {
    CHECK(m == "device 0 is " + qla::rt::deviceArch(0) + "; QLA kernels need sm_90a (H100/H200)");
  }

  // The answer does not depend on the buffer; short buffers are truncated, NUL-terminated.
  CHECK(qla_gpu_available(nullptr, 0) == r);
  char one[1] = {'x'};
  CHECK(qla_gpu_available(one, 1) == r);
  CHECK(one[0] == '\0');
  char four[4];
  CHECK(qla_gpu_available(four, sizeof four) == r);
  CHECK(std::string(four) == m.substr(0, 3));
}

TEST_CASE("capi: compile errors come back as NULL and a message", "[capi]") {
  char err[4096] = "";
  const char *bad =
      "kernel k(X: f32[N], Y: out f32[N]) grid(cdiv(N, 128)) threads(128)\n"
      "{\n"
      "  let i = block.x * * 128\n"
      "}\n";
  CHECK(qla_compile_string(bad, "bad.qla", nullptr, nullptr, err, sizeof err) == nullptr);
  CHECK(std::regex_search(std::string(err), std::regex(R"(^bad\.qla:3:\d+: error: )")));

  CHECK(qla_compile_string(kAxpb, "axpb.qla", "B", nullptr, err, sizeof err) == nullptr);
  CHECK(std::string(err) == "bad define 'B' (expected NAME=VALUE)");

  CHECK(qla_compile_file("/nonexistent/k.qla", nullptr, nullptr, err, sizeof err) == nullptr);
  CHECK(std::string(err) == "/nonexistent/k.qla: error: cannot open file");

  CHECK(qla_compile_file(nullptr, nullptr, nullptr, err, sizeof err) == nullptr);
  CHECK(std::string(err) == "qla_compile_file: path is NULL");
  CHECK(qla_compile_string(nullptr, nullptr, nullptr, nullptr, err, sizeof err) == nullptr);
  CHECK(std::string(err) == "qla_compile_string: source is NULL");
}
