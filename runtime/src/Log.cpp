// Runtime logging (see qla/runtime/Log.h).
#include "qla/runtime/Log.h"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace qla::rt {
namespace {

const auto kStart = std::chrono::steady_clock::now();

std::atomic<int> gLevel{int(LogLevel::Off)};
std::once_flag gInitOnce;
std::mutex gMu;             // guards gFile and every write
std::FILE *gFile = nullptr;  // null: stderr
bool gOwnFile = false;

void closeFileLocked() {
  if (gFile && gOwnFile) std::fclose(gFile);
  gFile = nullptr;
  gOwnFile = false;
}

bool openFileLocked(const std::string &path, std::string *warning) {
  closeFileLocked();
  if (path.empty()) return true;
  std::FILE *f = std::fopen(path.c_str(), "ae");  // append, O_CLOEXEC
  if (!f) {
    if (warning)
      *warning = "qla: warning: cannot open QLA_LOG_FILE '" + path + "': " + std::strerror(errno) +
                 "; logging to stderr";
    return false;
  }
  gFile = f;
  gOwnFile = true;
  return true;
}

std::string initFromEnvironment() {
  std::string warning;
  LogLevel level = LogLevel::Off;
  const char *v = std::getenv("QLA_LOG");
  if (v && !parseLogLevel(v, level)) {
    level = LogLevel::Off;
    warning = std::string("qla: warning: QLA_LOG='") + v +
              "' is not one of off, error, info, debug; logging stays off";
  }
  {
    std::lock_guard<std::mutex> lock(gMu);
    const char *f = std::getenv("QLA_LOG_FILE");
    std::string fileWarning;
    if (level != LogLevel::Off) openFileLocked(f ? f : "", &fileWarning);
    else closeFileLocked();
    if (!fileWarning.empty()) warning += (warning.empty() ? "" : "\n") + fileWarning;
  }
  gLevel.store(int(level));
  if (!warning.empty()) std::fprintf(stderr, "%s\n", warning.c_str());
  return warning;
}

void ensureInit() {
  std::call_once(gInitOnce, [] { initFromEnvironment(); });
}

}  // namespace

bool parseLogLevel(const std::string &text, LogLevel &out) {
  std::string s;
  for (char c : text)
    if (!std::isspace((unsigned char)c)) s += char(std::tolower((unsigned char)c));
  if (s.empty() || s == "off" || s == "0" || s == "none" || s == "false" || s == "no") out = LogLevel::Off;
  else if (s == "error" || s == "errors") out = LogLevel::Error;
  else if (s == "info" || s == "1" || s == "on" || s == "true" || s == "yes") out = LogLevel::Info;
  else if (s == "debug" || s == "2" || s == "all") out = LogLevel::Debug;
  else return false;
  return true;
}

const char *logLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::Off: return "off";
    case LogLevel::Error: return "error";
    case LogLevel::Info: return "info";
    case LogLevel::Debug: return "debug";
  }
  return "?";
}

LogLevel logLevel() {
  ensureInit();
  return LogLevel(gLevel.load(std::memory_order_relaxed));
}

void setLogLevel(LogLevel level) {
  ensureInit();
  gLevel.store(int(level));
}

bool setLogFile(const std::string &path) {
  ensureInit();
  std::lock_guard<std::mutex> lock(gMu);
  return openFileLocked(path, nullptr);
}

std::string initLogFromEnvironment() {
  std::call_once(gInitOnce, [] {});  // the automatic first read is this one
  return initFromEnvironment();
}

double logElapsedMs() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - kStart).count();
}

void logMessage(LogLevel level, const std::string &message) {
  if (!logEnabled(level)) return;
  char prefix[96];
  std::snprintf(prefix, sizeof prefix, "qla: +%.3fms pid=%d %s: ", logElapsedMs(), int(::getpid()),
                logLevelName(level));
  std::string line = prefix;
  // One event, one line: fold embedded newlines (NVRTC logs, diagnostics).
  for (char c : message) line += (c == '\n') ? std::string(" | ") : std::string(1, c);
  line += '\n';
  std::lock_guard<std::mutex> lock(gMu);
  std::FILE *f = gFile ? gFile : stderr;
  std::fwrite(line.data(), 1, line.size(), f);
  std::fflush(f);
}

void logPrintf(LogLevel level, const char *fmt, ...) {
  if (!logEnabled(level)) return;
  va_list ap;
  va_start(ap, fmt);
  va_list ap2;
  va_copy(ap2, ap);
  int n = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  std::string s;
  if (n > 0) {
    s.resize(size_t(n) + 1);
    std::vsnprintf(&s[0], s.size(), fmt, ap2);
    s.resize(size_t(n));
  }
  va_end(ap2);
  logMessage(level, s);
}

}  // namespace qla::rt
