// The C ABI over qla/gla.h: no exception crosses it. Compiled into libqla.so
// (see kernels/gla/CMakeLists.txt) so that its symbols are exported.
#include "qla/gla_c.h"

#include <cstring>
#include <limits>

#include "qla/gla.h"
#include "qla/op/CAbi.h"

namespace {

const qla::op::CEntry<qla::gla::Error> kC("chunk_simple_gla: ", QLA_GLA_ABI_VERSION);

qla::gla::ForwardParams paramsOf(const qla_gla_forward_args *args) {
  const qla_gla_forward_args &a = kC.notNull(args, "argument");
  kC.checkAbi(a.abi_version);
  qla::gla::ForwardParams p;
  p.q = kC.tensor("q", a.q);
  p.k = kC.tensor("k", a.k);
  p.v = kC.tensor("v", a.v);
  p.g = kC.tensor("g", a.g);
  p.o = kC.tensor("o", a.o);
  p.initial_state = kC.optional("initial_state", a.initial_state);
  p.final_state = kC.optional("final_state", a.final_state);
  p.cu_seqlens = kC.optional("cu_seqlens", a.cu_seqlens);
  p.scale = a.scale;
  p.cu_seqlens_host = a.cu_seqlens_host;
  p.stream = static_cast<CUstream>(a.stream);
  return p;
}

qla::gla::ForwardConfig configOf(const qla_gla_forward_config *config) {
  const qla_gla_forward_config &c = kC.notNull(config, "config");
  qla::gla::ForwardConfig fc;
  fc.dtype = kC.dtype("dtype", c.dtype);
  fc.K = c.k;
  fc.V = c.v;
  fc.varlen = c.varlen != 0;
  fc.cuDtype = fc.varlen ? kC.dtype("cu_dtype", c.cu_dtype) : qla::DType::I32;
  fc.initialState = c.initial_state != 0;
  fc.finalState = c.final_state != 0;
  return fc;
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
  return kC.call(err, errlen, [&] { qla::gla::validateForward(paramsOf(a)); });
}

int qla_gla_forward(const qla_gla_forward_args *a, char *err, size_t errlen) {
  return kC.call(err, errlen, [&] { qla::gla::forward(paramsOf(a)); });
}

int qla_gla_forward_warmup(const qla_gla_forward_config *c, char *err, size_t errlen) {
  return kC.call(err, errlen, [&] { qla::gla::warmup(configOf(c), true); });
}

}  // extern "C"
