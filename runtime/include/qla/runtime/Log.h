// Runtime logging: what the JIT and the kernel cache do, for explaining a slow
// first call (front end + NVRTC) or an unexpected rebuild.
//
//   QLA_LOG=off|error|info|debug   (default off: nothing is printed)
//   QLA_LOG_FILE=<path>            (append there; default stderr)
//
// Both are read once, on the first use. An unknown QLA_LOG value prints one
// warning to stderr and means off. One line per event, written whole (safe
// from several threads, and from several processes sharing QLA_LOG_FILE):
//
//   qla: +1843.210ms pid=4242 info: jit: gemm [qla_gemm_1f2e3d4c] defines={BN=128} arch=sm_90a: miss, ...
#pragma once

#include <string>

namespace qla::rt {

enum class LogLevel { Off = 0, Error = 1, Info = 2, Debug = 3 };

// "off"/"0"/"none"/"" → Off, "error"/"1"… see Log.cpp; case-insensitive.
// False (and `out` untouched) for anything else.
bool parseLogLevel(const std::string &text, LogLevel &out);
const char *logLevelName(LogLevel level);

// The current level (reads the environment on the first call).
LogLevel logLevel();
inline bool logEnabled(LogLevel level) { return level != LogLevel::Off && level <= logLevel(); }

// Overrides the environment (tests, embedding programs).
void setLogLevel(LogLevel level);
// Empty: stderr. Otherwise the file is opened for appending; on failure logging
// goes to stderr and false is returned.
bool setLogFile(const std::string &path);

// (Re)reads QLA_LOG and QLA_LOG_FILE now, as the first use does. Returns the
// warning it printed to stderr (unknown QLA_LOG value, unopenable file), or "".
std::string initLogFromEnvironment();

// Writes one line "qla: +<ms>ms pid=<pid> <level>: <message>" if `level` is enabled.
void logMessage(LogLevel level, const std::string &message);
void logPrintf(LogLevel level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// Milliseconds since the program started (the runtime library's static init).
double logElapsedMs();

}  // namespace qla::rt
