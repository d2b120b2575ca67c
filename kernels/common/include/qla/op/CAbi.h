// The C ABI plumbing of an operator: no exception crosses a C entry point; it
// returns 0, or -1 with the message in the caller's buffer.
//
//   int my_op(..., char *err, size_t errlen) {
//     return qla::op::cCall(err, errlen, "my_op: ", [&] { ... });
//   }
#pragma once

#include <cstddef>
#include <exception>
#include <string>

namespace qla::op {

// Copies `msg` into err[0, len) (truncated, always NUL-terminated); nothing
// when err is null or len is 0.
void setError(char *err, size_t len, const std::string &msg);

// Runs f(): 0 and an empty message when it returns; -1 and the exception's
// message when it throws ("<prefix>unknown error" for a non-std exception).
template <class F>
int cCall(char *err, size_t errlen, const char *prefix, F &&f) {
  try {
    f();
    setError(err, errlen, "");
    return 0;
  } catch (const std::exception &e) {
    setError(err, errlen, e.what());
  } catch (...) {
    setError(err, errlen, std::string(prefix) + "unknown error");
  }
  return -1;
}

}  // namespace qla::op
