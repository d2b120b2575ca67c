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

const qla::op::CEntry<qla::gdn::Error> kC(kOp, QLA_GDN_ABI_VERSION);

qla::gdn::ForwardParams paramsOf(const qla_gdn_forward_args *a) {
  if (!a) kC.fail("the argument struct is NULL");
  kC.checkAbi(a->abi_version);
  qla::gdn::ForwardParams p;
  p.q = kC.tensor("q", a->q);
  p.k = kC.tensor("k", a->k);
  p.v = kC.tensor("v", a->v);
  p.g = kC.tensor("g", a->g);
  p.beta = kC.tensor("beta", a->beta);
  p.o = kC.tensor("o", a->o);
  p.initial_state = kC.optional("initial_state", a->initial_state);
  p.final_state = kC.optional("final_state", a->final_state);
  p.cu_seqlens = kC.optional("cu_seqlens", a->cu_seqlens);
  p.scale = a->scale;
  p.use_qk_l2norm = a->use_qk_l2norm != 0;
  p.cu_seqlens_host = a->cu_seqlens_host;
  p.max_seqlen = a->max_seqlen;
  p.stream = static_cast<CUstream>(a->stream);
  p.segment_chunks = a->segment_chunks;
  p.checkpoints = kC.optional("checkpoints", a->checkpoints);
  p.beta_activation = a->beta_activation;
  p.use_gate = a->use_gate != 0;
  p.A_log = kC.optional("A_log", a->A_log);
  p.dt_bias = kC.optional("dt_bias", a->dt_bias);
  p.state_v_first = a->state_v_first != 0;
  p.state_pool = kC.optional("state_pool", a->state_pool);
  p.initial_slots = kC.optional("initial_slots", a->initial_slots);
  p.final_slots = kC.optional("final_slots", a->final_slots);
  p.state_pool_k_first = a->state_pool_k_first != 0;
  p.checkpoint_every = a->checkpoint_every;
  p.checkpoint_slots = kC.optional("checkpoint_slots", a->checkpoint_slots);
  p.initial_slots_host = a->initial_slots_host;
  p.final_slots_host = a->final_slots_host;
  p.checkpoint_slots_host = a->checkpoint_slots_host;
  return p;
}

qla::gdn::BackwardParams backwardParamsOf(const qla_gdn_backward_args *a) {
  if (!a) kC.fail("the argument struct is NULL");
  kC.checkAbi(a->abi_version);
  qla::gdn::BackwardParams p;
  p.q = kC.tensor("q", a->q);
  p.k = kC.tensor("k", a->k);
  p.v = kC.tensor("v", a->v);
  p.g = kC.tensor("g", a->g);
  p.beta = kC.tensor("beta", a->beta);
  p.initial_state = kC.optional("initial_state", a->initial_state);
  p.cu_seqlens = kC.optional("cu_seqlens", a->cu_seqlens);
  p.scale = a->scale;
  p.use_qk_l2norm = a->use_qk_l2norm != 0;
  p.cu_seqlens_host = a->cu_seqlens_host;
  p.stream = static_cast<CUstream>(a->stream);
  p.segment_chunks = a->segment_chunks;
  p.dout = kC.tensor("do", a->dout);
  p.dht = kC.optional("dht", a->dht);
  p.dq = kC.tensor("dq", a->dq);
  p.dk = kC.tensor("dk", a->dk);
  p.dv = kC.tensor("dv", a->dv);
  p.dg = kC.tensor("dg", a->dg);
  p.dbeta = kC.tensor("dbeta", a->dbeta);
  p.dh0 = kC.optional("dh0", a->dh0);
  p.checkpoints = kC.optional("checkpoints", a->checkpoints);
  p.beta_activation = a->beta_activation;
  p.use_gate = a->use_gate != 0;
  p.A_log = kC.optional("A_log", a->A_log);
  p.dt_bias = kC.optional("dt_bias", a->dt_bias);
  p.state_v_first = a->state_v_first != 0;
  p.dA_log = kC.optional("dA_log", a->dA_log);
  p.ddt_bias = kC.optional("ddt_bias", a->ddt_bias);
  return p;
}

qla::gdn::ForwardConfig configOf(const qla_gdn_forward_config *c) {
  if (!c) kC.fail("the config struct is NULL");
  qla::gdn::ForwardConfig fc;
  fc.dtype = kC.dtype("dtype", c->dtype);
  fc.betaDtype = kC.dtype("beta_dtype", c->beta_dtype);
  fc.gDtype = kC.dtype("g_dtype", c->g_dtype);
  if (c->beta_activation < 0 || c->beta_activation > 2)
    kC.fail("beta_activation is " + std::to_string(c->beta_activation) + " (0, 1 or 2)");
  fc.betaActivation = c->beta_activation;
  if (c->gate < 0 || c->gate > 2) kC.fail("gate is " + std::to_string(c->gate) + " (0, 1 or 2)");
  fc.gate = c->gate != 0;
  fc.gateBias = c->gate == 1;
  fc.stateVFirst = c->state_v_first != 0;
  if (c->pool < 0 || c->pool > 2) kC.fail("pool is " + std::to_string(c->pool) + " (0: none, 1: f32, 2: bf16)");
  fc.pool = c->pool != 0;
  fc.poolDtype = c->pool == 2 ? qla::DType::BF16 : qla::DType::F32;
  fc.poolKFirst = fc.pool && c->pool_k_first != 0;
  fc.poolCheckpoints = fc.pool && c->pool_checkpoints != 0;
  fc.K = c->k;
  fc.V = c->v;
  fc.varlen = c->varlen != 0;
  fc.cuDtype = fc.varlen ? kC.dtype("cu_dtype", c->cu_dtype) : qla::DType::I32;
  fc.l2norm = c->use_qk_l2norm != 0;
  fc.initialState = c->initial_state != 0;
  fc.finalState = c->final_state != 0;
  return fc;
}

qla::gdn::RecurrentParams recurrentParamsOf(const qla_gdn_recurrent_args *a) {
  if (!a) kC.fail("the argument struct is NULL");
  kC.checkAbi(a->abi_version);
  qla::gdn::RecurrentParams p;
  p.q = kC.tensor("q", a->q);
  p.k = kC.tensor("k", a->k);
  p.v = kC.tensor("v", a->v);
  p.g = kC.tensor("g", a->g);
  p.beta = kC.tensor("beta", a->beta);
  p.A_log = kC.optional("A_log", a->A_log);
  p.dt_bias = kC.optional("dt_bias", a->dt_bias);
  p.state_pool = kC.tensor("state_pool", a->state_pool);
  p.read_index = kC.tensor("read_index", a->read_index);
  p.write_index = kC.tensor("write_index", a->write_index);
  p.o = kC.tensor("o", a->o);
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
    rc.dtype = kC.dtype("dtype", c->dtype);
    rc.gDtype = kC.dtype("g_dtype", c->g_dtype);
    rc.betaDtype = kC.dtype("beta_dtype", c->beta_dtype);
    rc.stateDtype = kC.dtype("state_dtype", c->state_dtype);
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
  return kC.call(err, errlen, [&] {
    if (!bytes) kC.fail("the output pointer `bytes` is NULL");
    *bytes = qla::gdn::forwardWorkspaceBytes(paramsOf(a));
  });
}

int qla_gdn_forward_checkpoint_shape(const qla_gdn_forward_args *a, int64_t shape[4], int64_t *segment_chunks,
                                     char *err, size_t errlen) {
  return kC.call(err, errlen, [&] {
    if (!shape || !segment_chunks) kC.fail("the output pointer `shape` or `segment_chunks` is NULL");
    int64_t seg = 0;
    const std::vector<int64_t> s = qla::gdn::forwardCheckpointShape(paramsOf(a), &seg);
    for (int i = 0; i < 4; ++i) shape[i] = s.empty() ? 0 : s[size_t(i)];
    *segment_chunks = seg;
  });
}

int qla_gdn_forward(const qla_gdn_forward_args *a, void *workspace, size_t workspace_bytes, char *err,
                    size_t errlen) {
  return kC.call(err, errlen, [&] { qla::gdn::forward(paramsOf(a), workspace, workspace_bytes); });
}

int qla_gdn_forward_warmup(const qla_gdn_forward_config *c, char *err, size_t errlen) {
  return kC.call(err, errlen, [&] {
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
  return kC.call(err, errlen, [&] {
    if (!bytes) kC.fail("the output pointer `bytes` is NULL");
    *bytes = qla::gdn::backwardWorkspaceBytes(backwardParamsOf(a));
  });
}

int qla_gdn_backward(const qla_gdn_backward_args *a, void *workspace, size_t workspace_bytes, char *err,
                     size_t errlen) {
  return kC.call(err, errlen, [&] { qla::gdn::backward(backwardParamsOf(a), workspace, workspace_bytes); });
}

int qla_gdn_backward_warmup(const qla_gdn_forward_config *c, int32_t dht, int32_t dh0, char *err, size_t errlen) {
  return kC.call(err, errlen, [&] {
    qla::gdn::BackwardConfig bc;
    bc.fwd = configOf(c);
    bc.dht = dht != 0;
    bc.dh0 = dh0 != 0;
    qla::gdn::warmupBackward(bc, true);
  });
}

}  // extern "C"
