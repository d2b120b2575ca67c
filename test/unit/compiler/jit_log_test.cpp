// JIT logging (QLA_LOG): a miss with the front-end and NVRTC times, a memory
// hit, a disk hit (fresh in-memory cache on the same directory: another
// process, in effect), and nothing at all when logging is off. No GPU needed.
#include "test/unit/TestSupport.h"
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "qla/jit.h"
#include "qla/runtime/Log.h"

using qla::rt::LogLevel;
using qla::test::TempDir;
using qla::test::readFile;

namespace {

const std::string kRmsnormPath = std::string(QLA_SOURCE_DIR) + "/examples/rmsnorm.qla";

std::vector<std::string> linesOf(const std::string &path) {
  std::ifstream f(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(f, l);) out.push_back(l);
  return out;
}

bool contains(const std::string &s, const std::string &what) { return s.find(what) != std::string::npos; }

}  // namespace

TEST_CASE("jit log: miss, memory hit, disk hit", "[compiler][jit][nvrtc][log]") {
  TempDir cacheDir("qla-jitlog-cache"), logDir("qla-jitlog");
  const std::string logPath = logDir.path + "/log.txt";
  REQUIRE(qla::rt::setLogFile(logPath));
  qla::rt::setLogLevel(LogLevel::Info);
  struct Restore {
    ~Restore() {
      qla::rt::setLogLevel(LogLevel::Off);
      qla::rt::setLogFile("");
    }
  } restore;

  std::string src = readFile(kRmsnormPath);
  qla::JitOptions opt;
  opt.arch = "sm_90a";
  opt.defines["EPS"] = "1e-5";
  qla::rt::KernelCache cache(cacheDir.path);
  opt.cache = &cache;
  qla::JitKernel first = qla::jitCompileString(src, "rmsnorm.qla", opt);
  qla::JitKernel second = qla::jitCompileString(src, "rmsnorm.qla", opt);
  qla::rt::KernelCache fresh(cacheDir.path);
  opt.cache = &fresh;
  qla::JitKernel third = qla::jitCompileString(src, "rmsnorm.qla", opt);
  REQUIRE(first.cacheHit() == qla::rt::CacheHit::Miss);
  REQUIRE(second.cacheHit() == qla::rt::CacheHit::Memory);
  REQUIRE(third.cacheHit() == qla::rt::CacheHit::Disk);

  auto lines = linesOf(logPath);
  for (auto &l : lines) UNSCOPED_INFO(l);
  REQUIRE(lines.size() == 3);
  const std::string sym = first.info().name;
  const std::string what = "jit: rmsnorm [" + sym + "] (rmsnorm.qla) defines={EPS=1e-5} arch=sm_90a: ";
  for (auto &l : lines) {
    CHECK(std::regex_match(l, std::regex(R"(qla: \+[0-9.]+ms pid=[0-9]+ info: jit: .*)")));
    CHECK(contains(l, what));
  }
  const std::regex miss(R"(.*: cache miss, compiled; front end\+passes\+emit [0-9.]+ ms, NVRTC [0-9.]+ ms, total [0-9.]+ ms; entry (.*))");
  std::smatch m;
  REQUIRE(std::regex_match(lines[0], m, miss));
  const std::string entry = m[1];
  CHECK(entry.rfind(cacheDir.path + "/", 0) == 0);
  CHECK(::access(entry.c_str(), R_OK) == 0);
  CHECK(std::regex_match(lines[1], std::regex(R"(.*: memory-cache hit; front end\+passes\+emit [0-9.]+ ms, total [0-9.]+ ms)")));
  CHECK(contains(lines[2], ": disk-cache hit " + entry + "; front end+passes+emit "));

  // Debug adds the request (before the front end) and the NVRTC start and store.
  qla::rt::setLogLevel(LogLevel::Debug);
  opt.defines["EPS"] = "1e-4";
  qla::jitCompileString(src, "rmsnorm.qla", opt);
  lines = linesOf(logPath);
  REQUIRE(lines.size() > 3);
  CHECK(contains(lines[3], "debug: jit: request rmsnorm.qla kernel=(the file's only kernel) defines={EPS=1e-4}"));
  bool sawNvrtc = false, sawStore = false, sawMiss = false;
  for (size_t i = 4; i < lines.size(); ++i) {
    sawNvrtc |= contains(lines[i], "debug: jit: rmsnorm [") && contains(lines[i], "running NVRTC");
    sawStore |= contains(lines[i], "debug: cache: stored " + cacheDir.path + "/");
    sawMiss |= contains(lines[i], "info: jit: rmsnorm [") && contains(lines[i], "cache miss, compiled");
  }
  CHECK(sawNvrtc);
  CHECK(sawStore);
  CHECK(sawMiss);

  // A compile error is logged at error level.
  qla::rt::setLogLevel(LogLevel::Error);
  size_t before = linesOf(logPath).size();
  CHECK_THROWS_AS(qla::jitCompileString("kernel broken(", "broken.qla", opt), qla::CompileError);
  lines = linesOf(logPath);
  REQUIRE(lines.size() == before + 1);
  CHECK(contains(lines.back(), "error: jit: broken.qla defines={EPS=1e-4}: compile error after "));
}

TEST_CASE("jit log: nothing is printed when logging is off", "[compiler][jit][nvrtc][log]") {
  TempDir cacheDir("qla-jitlog-cache"), logDir("qla-jitlog");
  const std::string logPath = logDir.path + "/log.txt", errPath = logDir.path + "/stderr.txt";
  qla::rt::setLogLevel(LogLevel::Off);
  REQUIRE(qla::rt::setLogFile(logPath));

  // stderr too: off means no output anywhere.
  std::fflush(stderr);
  int saved = ::dup(2);
  int fd = ::open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(saved >= 0);
  REQUIRE(fd >= 0);
  ::dup2(fd, 2);
  ::close(fd);
  bool threw = false;
  try {
    qla::JitOptions opt;
    opt.arch = "sm_90a";
    qla::rt::KernelCache cache(cacheDir.path);
    opt.cache = &cache;
    std::string src = readFile(kRmsnormPath);
    qla::jitCompileString(src, "rmsnorm.qla", opt);
    qla::jitCompileString(src, "rmsnorm.qla", opt);
    try {
      qla::jitCompileString("kernel broken(", "broken.qla", opt);
    } catch (const qla::CompileError &) {
    }
  } catch (...) {
    threw = true;
  }
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  qla::rt::setLogFile("");

  CHECK_FALSE(threw);
  CHECK(linesOf(logPath).empty());
  CHECK(linesOf(errPath).empty());
}
