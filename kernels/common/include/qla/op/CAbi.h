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
#include <utility>

#include "qla/DType.h"
#include "qla/Tensor.h"

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

// One family's C entry points: its error prefix and Error type, its ABI
// version, and the conversions every entry point needs (dtype codes, the
// shared C tensor struct qla_tensor as qla::TensorRef).
//
//   const op::CEntry<gla::Error> kC("chunk_simple_gla: ", QLA_GLA_ABI_VERSION);
//   int qla_gla_forward(const args *a, char *err, size_t n) {
//     return kC.call(err, n, [&] { kC.checkAbi(a->abi_version); forward({kC.tensor("q", a->q), ...}); });
//   }
template <class Error>
class CEntry {
 public:
  CEntry(const char *prefix, int32_t abiVersion) : prefix_(prefix), abi_(abiVersion) {}
  [[noreturn]] void fail(const std::string &msg) const { throw Error(prefix_ + msg); }
  // A dtype code (qla::DType's values, QLA_BF16 .. QLA_I64).
  DType dtype(const char *name, int32_t code) const {
    if (code < int32_t(DType::BF16) || code > int32_t(DType::I64))
      fail(std::string(name) + " has an unknown dtype code " + std::to_string(code));
    return DType(code);
  }
  template <class CTensor>
  TensorRef tensor(const char *name, const CTensor &t) const {
    return tensorRefOf<TensorRef>(name, t, int32_t(DType::BF16), int32_t(DType::I64),
                                  [this](const std::string &m) { fail(m); });
  }
  template <class CTensor>
  std::optional<TensorRef> optional(const char *name, const CTensor &t) const {
    return optionalRefOf<TensorRef>(name, t, int32_t(DType::BF16), int32_t(DType::I64),
                                    [this](const std::string &m) { fail(m); });
  }
  // The caller's struct was filled for this library's ABI version.
  void checkAbi(int32_t callers) const {
    if (callers != abi_)
      fail("ABI version " + std::to_string(callers) + " of the caller does not match the library's " +
           std::to_string(abi_));
  }
  template <class T>
  const T &notNull(const T *p, const char *what) const {
    if (!p) fail(std::string("the ") + what + " struct is NULL");
    return *p;
  }
  // cCall with this family's prefix.
  template <class F>
  int call(char *err, size_t errlen, F &&f) const {
    return cCall(err, errlen, prefix_, std::forward<F>(f));
  }

 private:
  const char *prefix_;
  int32_t abi_;
};

}  // namespace qla::op
