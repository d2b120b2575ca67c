// The C ABI plumbing of an operator: no exception crosses a C entry point; it
// returns 0, or -1 with the message in the caller's buffer.
//
//   int my_op(..., char *err, size_t errlen) {
//     return qla::op::cCall(err, errlen, "my_op: ", [&] { ... });
//   }
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>

#include "qla/DType.h"

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

// A family's C tensor struct (data, dtype code, rank, shape[4], strides[4],
// has_strides) as its C++ TensorRef (data, dtype, shape, strides): rank 1..4,
// the dtype code in [lo, hi] (the codes are qla::DType's values). Errors go
// through fail(message) (the family's, which adds its prefix).
template <class Ref, class CTensor, class Fail>
Ref tensorRefOf(const char *name, const CTensor &t, int32_t lo, int32_t hi, Fail &&fail) {
  if (t.rank < 1 || t.rank > 4) fail(std::string(name) + " has rank " + std::to_string(t.rank) + " (1..4 allowed)");
  if (t.dtype < lo || t.dtype > hi) fail(std::string(name) + " has an unknown dtype code " + std::to_string(t.dtype));
  Ref r;
  r.data = t.data;
  r.dtype = DType(t.dtype);
  r.shape.assign(t.shape, t.shape + t.rank);
  if (t.has_strides) r.strides.assign(t.strides, t.strides + t.rank);
  return r;
}

// The same for an optional tensor: absent when its data pointer is null.
template <class Ref, class CTensor, class Fail>
std::optional<Ref> optionalRefOf(const char *name, const CTensor &t, int32_t lo, int32_t hi, Fail &&fail) {
  if (!t.data) return std::nullopt;
  return tensorRefOf<Ref>(name, t, lo, hi, fail);
}

}  // namespace qla::op
