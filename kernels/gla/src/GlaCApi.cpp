// The C ABI over qla/gla.h: no exception crosses it. Compiled into libqla.so
// (see kernels/gla/CMakeLists.txt) so that its symbols are exported.
#include "qla/gla_c.h"

#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "qla/gla.h"
#include "qla/op/CAbi.h"

namespace {

constexpr const char *kOp = "chunk_simple_gla: ";

[[noreturn]] void fail(const std::string &msg) { throw qla::gla::Error(kOp + msg); }

qla::DType dtypeOf(const char *name, int32_t code) {
  if (code < QLA_GLA_BF16 || code > QLA_GLA_I64)
    fail(std::string(name) + " has an unknown dtype code " + std::to_string(code));
  return qla::DType(code);
}

qla::gla::TensorRef tensorOf(const char *name, const qla_gla_tensor &t) {
  return qla::op::tensorRefOf<qla::gla::TensorRef>(name, t, QLA_GLA_BF16, QLA_GLA_I64,
                                                     [](const std::string &m) { fail(m); });
}

std::optional<qla::gla::TensorRef> optionalOf(const char *name, const qla_gla_tensor &t) {
  return qla::op::optionalRefOf<qla::gla::TensorRef>(name, t, QLA_GLA_BF16, QLA_GLA_I64,
                                                       [](const std::string &m) { fail(m); });
}

qla::gla::ForwardParams paramsOf(const qla_gla_forward_args *a) {
  if (!a) fail("the argument struct is NULL");
  if (a->abi_version != QLA_GLA_ABI_VERSION)
    fail("ABI version " + std::to_string(a->abi_version) + " of the caller does not match the library's " +
         std::to_string(QLA_GLA_ABI_VERSION));
  qla::gla::ForwardParams p;
  p.q = tensorOf("q", a->q);
  p.k = tensorOf("k", a->k);
  p.v = tensorOf("v", a->v);
  p.g = tensorOf("g", a->g);
  p.o = tensorOf("o", a->o);
  p.initial_state = optionalOf("initial_state", a->initial_state);
  p.final_state = optionalOf("final_state", a->final_state);
  p.cu_seqlens = optionalOf("cu_seqlens", a->cu_seqlens);
  p.scale = a->scale;
  p.cu_seqlens_host = a->cu_seqlens_host;
  p.stream = static_cast<CUstream>(a->stream);
  return p;
}

qla::gla::ForwardConfig configOf(const qla_gla_forward_config *c) {
  if (!c) fail("the config struct is NULL");
  qla::gla::ForwardConfig fc;
  fc.dtype = dtypeOf("dtype", c->dtype);
  fc.K = c->k;
  fc.V = c->v;
  fc.varlen = c->varlen != 0;
  fc.cuDtype = fc.varlen ? dtypeOf("cu_dtype", c->cu_dtype) : qla::DType::I32;
  fc.initialState = c->initial_state != 0;
  fc.finalState = c->final_state != 0;
  return fc;
}

template <typename F>
int guarded(char *err, size_t errlen, F &&f) {
  return qla::op::cCall(err, errlen, kOp, std::forward<F>(f));
}

}  // namespace

extern "C" {

void qla_gla_forward_args_init(qla_gla_forward_args *a) {
  if (!a) return;
  std::memset(a, 0, sizeof *a);
  a->abi_version = QLA_GLA_ABI_VERSION;
  a->scale = std::numeric_limits<double>::quiet_NaN();
}

int qla_gla_forward_validate(const qla_gla_forward_args *a, char *err, size_t errlen) {
  return guarded(err, errlen, [&] { qla::gla::validateForward(paramsOf(a)); });
}

int qla_gla_forward(const qla_gla_forward_args *a, char *err, size_t errlen) {
  return guarded(err, errlen, [&] { qla::gla::forward(paramsOf(a)); });
}

int qla_gla_forward_warmup(const qla_gla_forward_config *c, char *err, size_t errlen) {
  return guarded(err, errlen, [&] { qla::gla::warmup(configOf(c), true); });
}

}  // extern "C"
