// The C ABI over qla/gdn.h: no exception crosses it. Compiled into libqla.so
// (see kernels/gdn/CMakeLists.txt) so that its symbols are exported.
#include "qla/gdn_c.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "qla/gdn.h"
#include "qla/op/CAbi.h"

namespace {

constexpr const char *kOp = "chunk_gated_delta_rule: ";

[[noreturn]] void fail(const std::string &msg) { throw qla::gdn::Error(kOp + msg); }

qla::DType dtypeOf(const char *name, int32_t code) {
  if (code < QLA_GDN_BF16 || code > QLA_GDN_I64)
    fail(std::string(name) + " has an unknown dtype code " + std::to_string(code));
  return qla::DType(code);
}

qla::gdn::TensorRef tensorOf(const char *name, const qla_gdn_tensor &t) {
  return qla::op::tensorRefOf<qla::gdn::TensorRef>(name, t, QLA_GDN_BF16, QLA_GDN_I64,
                                                     [](const std::string &m) { fail(m); });
}

std::optional<qla::gdn::TensorRef> optionalOf(const char *name, const qla_gdn_tensor &t) {
  return qla::op::optionalRefOf<qla::gdn::TensorRef>(name, t, QLA_GDN_BF16, QLA_GDN_I64,
                                                       [](const std::string &m) { fail(m); });
}

void checkAbi(int32_t callers) {
  if (callers != QLA_GDN_ABI_VERSION)
    fail("ABI version " + std::to_string(callers) + " of the caller does not match the library's " +
         std::to_string(QLA_GDN_ABI_VERSION));
}

qla::gdn::ForwardParams paramsOf(const qla_gdn_forward_args *a) {
  if (!a) fail("the argument struct is NULL");
  checkAbi(a->abi_version);
  qla::gdn::ForwardParams p;
  p.q = tensorOf("q", a->q);
  p.k = tensorOf("k", a->k);
  p.v = tensorOf("v", a->v);
  p.g = tensorOf("g", a->g);
  p.beta = tensorOf("beta", a->beta);
  p.o = tensorOf("o", a->o);
  p.initial_state = optionalOf("initial_state", a->initial_state);
  p.final_state = optionalOf("final_state", a->final_state);
  p.cu_seqlens = optionalOf("cu_seqlens", a->cu_seqlens);
  p.scale = a->scale;
  p.use_qk_l2norm = a->use_qk_l2norm != 0;
  p.cu_seqlens_host = a->cu_seqlens_host;
  p.max_seqlen = a->max_seqlen;
  p.stream = static_cast<CUstream>(a->stream);
  p.segment_chunks = a->segment_chunks;
  p.checkpoints = optionalOf("checkpoints", a->checkpoints);
  p.beta_activation = a->beta_activation;
  p.use_gate = a->use_gate != 0;
  p.A_log = optionalOf("A_log", a->A_log);
  p.dt_bias = optionalOf("dt_bias", a->dt_bias);
  p.state_v_first = a->state_v_first != 0;
  p.state_pool = optionalOf("state_pool", a->state_pool);
  p.initial_slots = optionalOf("initial_slots", a->initial_slots);
  p.final_slots = optionalOf("final_slots", a->final_slots);
  p.state_pool_k_first = a->state_pool_k_first != 0;
  p.checkpoint_every = a->checkpoint_every;
  p.checkpoint_slots = optionalOf("checkpoint_slots", a->checkpoint_slots);
  p.initial_slots_host = a->initial_slots_host;
  p.final_slots_host = a->final_slots_host;
  p.checkpoint_slots_host = a->checkpoint_slots_host;
  return p;
}

qla::gdn::BackwardParams backwardParamsOf(const qla_gdn_backward_args *a) {
  if (!a) fail("the argument struct is NULL");
  checkAbi(a->abi_version);
  qla::gdn::BackwardParams p;
  p.q = tensorOf("q", a->q);
  p.k = tensorOf("k", a->k);
  p.v = tensorOf("v", a->v);
  p.g = tensorOf("g", a->g);
  p.beta = tensorOf("beta", a->beta);
  p.initial_state = optionalOf("initial_state", a->initial_state);
  p.cu_seqlens = optionalOf("cu_seqlens", a->cu_seqlens);
  p.scale = a->scale;
  p.use_qk_l2norm = a->use_qk_l2norm != 0;
  p.cu_seqlens_host = a->cu_seqlens_host;
  p.stream = static_cast<CUstream>(a->stream);
  p.segment_chunks = a->segment_chunks;
  p.dout = tensorOf("do", a->dout);
  p.dht = optionalOf("dht", a->dht);
  p.dq = tensorOf("dq", a->dq);
  p.dk = tensorOf("dk", a->dk);
  p.dv = tensorOf("dv", a->dv);
  p.dg = tensorOf("dg", a->dg);
  p.dbeta = tensorOf("dbeta", a->dbeta);
  p.dh0 = optionalOf("dh0", a->dh0);
  p.checkpoints = optionalOf("checkpoints", a->checkpoints);
  p.beta_activation = a->beta_activation;
  p.use_gate = a->use_gate != 0;
  p.A_log = optionalOf("A_log", a->A_log);
  p.dt_bias = optionalOf("dt_bias", a->dt_bias);
  p.state_v_first = a->state_v_first != 0;
  p.dA_log = optionalOf("dA_log", a->dA_log);
  p.ddt_bias = optionalOf("ddt_bias", a->ddt_bias);
  return p;
}

qla::gdn::ForwardConfig configOf(const qla_gdn_forward_config *c) {
  if (!c) fail("the config struct is NULL");
  qla::gdn::ForwardConfig fc;
  fc.dtype = dtypeOf("dtype", c->dtype);
  fc.betaDtype = dtypeOf("beta_dtype", c->beta_dtype);
  fc.gDtype = dtypeOf("g_dtype", c->g_dtype);
  if (c->beta_activation < 0 || c->beta_activation > 2)
    fail("beta_activation is " + std::to_string(c->beta_activation) + " (0, 1 or 2)");
  fc.betaActivation = c->beta_activation;
  if (c->gate < 0 || c->gate > 2) fail("gate is " + std::to_string(c->gate) + " (0, 1 or 2)");
  fc.gate = c->gate != 0;
  fc.gateBias = c->gate == 1;
  fc.stateVFirst = c->state_v_first != 0;
  if (c->pool < 0 || c->pool > 2) fail("pool is " + std::to_string(c->pool) + " (0: none, 1: f32, 2: bf16)");
  fc.pool = c->pool != 0;
  fc.poolDtype = c->pool == 2 ? qla::DType::BF16 : qla::DType::F32;
  fc.poolKFirst = fc.pool && c->pool_k_first != 0;
  fc.poolCheckpoints = fc.pool && c->pool_checkpoints != 0;
  fc.K = c->k;
  fc.V = c->v;
  fc.varlen = c->varlen != 0;
  fc.cuDtype = fc.varlen ? dtypeOf("cu_dtype", c->cu_dtype) : qla::DType::I32;
  fc.l2norm = c->use_qk_l2norm != 0;
  fc.initialState = c->initial_state != 0;
  fc.finalState = c->final_state != 0;
  return fc;
}

template <typename F>
int guarded(char *err, size_t errlen, F &&f) {
  return qla::op::cCall(err, errlen, kOp, std::forward<F>(f));
}

qla::gdn::RecurrentParams recurrentParamsOf(const qla_gdn_recurrent_args *a) {
  if (!a) fail("the argument struct is NULL");
  checkAbi(a->abi_version);
  qla::gdn::RecurrentParams p;
  p.q = tensorOf("q", a->q);
  p.k = tensorOf("k", a->k);
  p.v = tensorOf("v", a->v);
  p.g = tensorOf("g", a->g);
  p.beta = tensorOf("beta", a->beta);
  p.A_log = optionalOf("A_log", a->A_log);
  p.dt_bias = optionalOf("dt_bias", a->dt_bias);
  p.state_pool = tensorOf("state_pool", a->state_pool);
  p.read_index = tensorOf("read_index", a->read_index);
  p.write_index = tensorOf("write_index", a->write_index);
  p.o = tensorOf("o", a->o);
  p.scale = a->scale;
  p.use_qk_l2norm = a->use_qk_l2norm != 0;
  p.beta_activation = a->beta_activation;
  p.use_gate = a->use_gate != 0;
  p.state_pool_k_first = a->state_pool_k_first != 0;
  p.stream = static_cast<CUstream>(a->stream);
  p.read_index_host = a->read_index_host;
  p.write_index_host = a->write_index_host;
  return p;
}

}  // namespace

extern "C" {

void qla_gdn_recurrent_args_init(qla_gdn_recurrent_args *a) {
  if (!a) return;
  std::memset(a, 0, sizeof *a);
  a->abi_version = QLA_GDN_ABI_VERSION;
  a->use_qk_l2norm = 1;
  a->scale = std::numeric_limits<double>::quiet_NaN();
}

int qla_gdn_recurrent(const qla_gdn_recurrent_args *a, char *err, size_t errlen) {
  // Its errors carry the recurrent operator's own prefix (not kOp's).
  return qla::op::cCall(err, errlen, "", [&] { qla::gdn::recurrent(recurrentParamsOf(a)); });
}

int qla_gdn_recurrent_warmup(const qla_gdn_recurrent_config *c, char *err, size_t errlen) {
  return qla::op::cCall(err, errlen, "", [&] {
    if (!c) throw qla::gdn::Error("fused_recurrent_gated_delta_rule: the config struct is NULL");
    qla::gdn::RecurrentConfig rc;
    rc.dtype = dtypeOf("dtype", c->dtype);
    rc.gDtype = dtypeOf("g_dtype", c->g_dtype);
    rc.betaDtype = dtypeOf("beta_dtype", c->beta_dtype);
    rc.stateDtype = dtypeOf("state_dtype", c->state_dtype);
    rc.K = c->k;
    rc.V = c->v;
    rc.l2norm = c->use_qk_l2norm != 0;
    rc.betaActivation = c->beta_activation;
    if (c->gate < 0 || c->gate > 2)
      throw qla::gdn::Error("fused_recurrent_gated_delta_rule: gate is " + std::to_string(c->gate) + " (0, 1 or 2)");
    rc.gate = c->gate != 0;
    rc.gateBias = c->gate == 1;
    rc.poolKFirst = c->pool_k_first != 0;
    qla::gdn::warmupRecurrent(rc, true);
  });
}

void qla_gdn_forward_args_init(qla_gdn_forward_args *a) {
  if (!a) return;
  std::memset(a, 0, sizeof *a);
  a->abi_version = QLA_GDN_ABI_VERSION;
  a->scale = std::numeric_limits<double>::quiet_NaN();
}

int qla_gdn_forward_workspace_bytes(const qla_gdn_forward_args *a, size_t *bytes, char *err, size_t errlen) {
  return guarded(err, errlen, [&] {
    if (!bytes) fail("the output pointer `bytes` is NULL");
    *bytes = qla::gdn::forwardWorkspaceBytes(paramsOf(a));
  });
}

int qla_gdn_forward_checkpoint_shape(const qla_gdn_forward_args *a, int64_t shape[4], int64_t *segment_chunks,
                                     char *err, size_t errlen) {
  return guarded(err, errlen, [&] {
    if (!shape || !segment_chunks) fail("the output pointer `shape` or `segment_chunks` is NULL");
    int64_t seg = 0;
    const std::vector<int64_t> s = qla::gdn::forwardCheckpointShape(paramsOf(a), &seg);
    for (int i = 0; i < 4; ++i) shape[i] = s.empty() ? 0 : s[size_t(i)];
    *segment_chunks = seg;
  });
}

int qla_gdn_forward(const qla_gdn_forward_args *a, void *workspace, size_t workspace_bytes, char *err,
                    size_t errlen) {
  return guarded(err, errlen, [&] { qla::gdn::forward(paramsOf(a), workspace, workspace_bytes); });
}

int qla_gdn_forward_warmup(const qla_gdn_forward_config *c, char *err, size_t errlen) {
  return guarded(err, errlen, [&] {
    qla::gdn::warmup(configOf(c), true);
  });
}

void qla_gdn_backward_args_init(qla_gdn_backward_args *a) {
  if (!a) return;
  std::memset(a, 0, sizeof *a);
  a->abi_version = QLA_GDN_ABI_VERSION;
  a->scale = std::numeric_limits<double>::quiet_NaN();
}

int qla_gdn_backward_workspace_bytes(const qla_gdn_backward_args *a, size_t *bytes, char *err, size_t errlen) {
  return guarded(err, errlen, [&] {
    if (!bytes) fail("the output pointer `bytes` is NULL");
    *bytes = qla::gdn::backwardWorkspaceBytes(backwardParamsOf(a));
  });
}

int qla_gdn_backward(const qla_gdn_backward_args *a, void *workspace, size_t workspace_bytes, char *err,
                     size_t errlen) {
  return guarded(err, errlen, [&] { qla::gdn::backward(backwardParamsOf(a), workspace, workspace_bytes); });
}

int qla_gdn_backward_warmup(const qla_gdn_forward_config *c, int32_t dht, int32_t dh0, char *err, size_t errlen) {
  return guarded(err, errlen, [&] {
    qla::gdn::BackwardConfig bc;
    bc.fwd = configOf(c);
    bc.dht = dht != 0;
    bc.dh0 = dh0 != 0;
    qla::gdn::warmupBackward(bc, true);
  });
}

}  // extern "C"
