// Runtime logging (qla/runtime/Log.h): levels, QLA_LOG / QLA_LOG_FILE, one
// whole line per event from many threads, nothing when off, and the kernel
// cache's corrupt-entry line.
#include "test/unit/TestSupport.h"
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "qla/runtime/KernelCache.h"
#include "qla/runtime/Log.h"

using qla::rt::LogLevel;
using qla::test::TempDir;

namespace {

std::vector<std::string> linesOf(const std::string &path) {
  std::ifstream f(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(f, l);) out.push_back(l);
  return out;
}

// Logs to a fresh file at `level`; back to off + stderr at scope exit.
struct LogCapture {
  TempDir dir{"qla-log-test"};
  std::string path = dir.path + "/log.txt";
  explicit LogCapture(LogLevel level) {
    REQUIRE(qla::rt::setLogFile(path));
    qla::rt::setLogLevel(level);
  }
  ~LogCapture() {
    qla::rt::setLogLevel(LogLevel::Off);
    qla::rt::setLogFile("");
  }
  std::vector<std::string> lines() const { return linesOf(path); }
};

// Restores QLA_LOG / QLA_LOG_FILE and re-reads them.
struct EnvGuard {
  ~EnvGuard() {
    ::unsetenv("QLA_LOG");
    ::unsetenv("QLA_LOG_FILE");
    qla::rt::initLogFromEnvironment();
  }
};

const std::regex kLine(R"(qla: \+[0-9]+\.[0-9]{3}ms pid=[0-9]+ (error|info|debug): .*)");

}  // namespace

TEST_CASE("log: level names parse, anything else is rejected", "[runtime][log]") {
  LogLevel l = LogLevel::Debug;
  CHECK(qla::rt::parseLogLevel("", l));
  CHECK(l == LogLevel::Off);
  CHECK(qla::rt::parseLogLevel("off", l));
  CHECK(l == LogLevel::Off);
  CHECK(qla::rt::parseLogLevel("ERROR", l));
  CHECK(l == LogLevel::Error);
  CHECK(qla::rt::parseLogLevel("info", l));
  CHECK(l == LogLevel::Info);
  CHECK(qla::rt::parseLogLevel("1", l));
  CHECK(l == LogLevel::Info);
  CHECK(qla::rt::parseLogLevel(" Debug ", l));
  CHECK(l == LogLevel::Debug);
  CHECK_FALSE(qla::rt::parseLogLevel("verbose", l));
  CHECK(l == LogLevel::Debug);  // untouched
  CHECK(std::string(qla::rt::logLevelName(LogLevel::Info)) == "info");
}

TEST_CASE("log: off by default prints nothing; levels filter", "[runtime][log]") {
  {
    LogCapture cap(LogLevel::Off);
    qla::rt::logMessage(LogLevel::Error, "hidden error");
    qla::rt::logPrintf(LogLevel::Info, "hidden %d", 1);
    CHECK_FALSE(qla::rt::logEnabled(LogLevel::Error));
    CHECK(cap.lines().empty());
  }
  {
    LogCapture cap(LogLevel::Info);
    qla::rt::logMessage(LogLevel::Error, "an error");
    qla::rt::logPrintf(LogLevel::Info, "info %d", 42);
    qla::rt::logMessage(LogLevel::Debug, "hidden debug");
    qla::rt::logMessage(LogLevel::Info, "two\nlines");
    auto lines = cap.lines();
    REQUIRE(lines.size() == 3);
    for (auto &l : lines) CHECK(std::regex_match(l, kLine));
    CHECK(lines[0].find("error: an error") != std::string::npos);
    CHECK(lines[1].find("info: info 42") != std::string::npos);
    CHECK(lines[2].find("info: two | lines") != std::string::npos);
  }
}

TEST_CASE("log: QLA_LOG and QLA_LOG_FILE from the environment", "[runtime][log]") {
  EnvGuard guard;
  TempDir dir("qla-log-test");
  std::string path = dir.path + "/env.log";
  ::setenv("QLA_LOG", "debug", 1);
  ::setenv("QLA_LOG_FILE", path.c_str(), 1);
  CHECK(qla::rt::initLogFromEnvironment().empty());
  CHECK(qla::rt::logLevel() == LogLevel::Debug);
  qla::rt::logMessage(LogLevel::Debug, "from env");
  auto lines = linesOf(path);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("debug: from env") != std::string::npos);

  // Unknown value: one warning, and off.
  ::setenv("QLA_LOG", "loud", 1);
  std::string warning = qla::rt::initLogFromEnvironment();
  CHECK(warning.find("QLA_LOG='loud'") != std::string::npos);
  CHECK(qla::rt::logLevel() == LogLevel::Off);
  qla::rt::logMessage(LogLevel::Error, "not written");
  CHECK(linesOf(path).size() == 1);

  ::unsetenv("QLA_LOG");
  CHECK(qla::rt::initLogFromEnvironment().empty());
  CHECK(qla::rt::logLevel() == LogLevel::Off);
}

TEST_CASE("log: lines from many threads stay whole", "[runtime][log]") {
  LogCapture cap(LogLevel::Info);
  constexpr int kThreads = 8, kLines = 200;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([t] {
      for (int i = 0; i < kLines; ++i)
        qla::rt::logPrintf(LogLevel::Info, "thread %d line %d %s", t, i, std::string(100, 'x').c_str());
    });
  for (auto &t : ts) t.join();
  auto lines = cap.lines();
  REQUIRE(lines.size() == size_t(kThreads * kLines));
  const std::regex whole(R"(qla: \+[0-9.]+ms pid=[0-9]+ info: thread [0-9] line [0-9]+ x{100})");
  int bad = 0;
  for (auto &l : lines) bad += !std::regex_match(l, whole);
  CHECK(bad == 0);
}

TEST_CASE("log: the kernel cache reports a corrupt entry", "[runtime][log][cache]") {
  TempDir dir;
  const std::string key = "0123456789abcdef0123456789abcdef";
  {
    qla::rt::KernelCache cache(dir.path);
    qla::rt::CacheEntry e{"cubin-bytes", "ptx-text", "info"};
    std::string warning;
    cache.store(key, e, &warning);
    REQUIRE(warning.empty());
  }
  const std::string path = qla::rt::KernelCache(dir.path).pathFor(key);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    REQUIRE(f.good());
    f.seekp(40 + 32 + 3);  // header, key, then inside the cubin bytes
    f.put('!');
  }
  LogCapture cap(LogLevel::Info);
  qla::rt::KernelCache fresh(dir.path);
  qla::rt::CacheHit hit;
  CHECK_FALSE(fresh.lookup(key, &hit).has_value());
  CHECK(hit == qla::rt::CacheHit::Miss);
  auto lines = cap.lines();
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("info: cache: corrupt entry " + path + " (checksum mismatch") != std::string::npos);
}
