// Errors of the shared operator layer, and the message text helpers.
//
// The layer throws op::Error with a message that names the argument but not
// the operator. A family's public entry points run their body under
// rethrowAs<TheirError>("their_op: ", ...), so that callers see one error type
// whose message starts with the operator's name.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace qla::op {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(const std::string &msg);

// Runs f(); an op::Error becomes PublicError(prefix + message). Other
// exceptions (the family's own error included) pass unchanged.
template <class PublicError, class F>
decltype(auto) rethrowAs(const char *prefix, F &&f) {
  try {
    return std::forward<F>(f)();
  } catch (const Error &e) {
    throw PublicError(prefix + std::string(e.what()));
  }
}

// "[2, 64, 4]".
std::string dims(const std::vector<int64_t> &v);
// A pointer as "%p" prints it ("0x7f00...").
std::string ptrText(const void *p);

}  // namespace qla::op
