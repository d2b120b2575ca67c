// The GDN C ABI (qla/gdn_c.h): struct layout (mirrored by python/qla/gdn.py),
// defaults, conversion to the C++ parameters, and that errors come back as
// -1 + message, never as an exception.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <string>

#include "gdn_test_util.h"
#include "qla/gdn_c.h"

using namespace gdntest;

// python/qla/gdn.py's ctypes structures assume exactly this layout.
static_assert(sizeof(qla_gdn_tensor) == 88, "qla_gdn_tensor layout");
static_assert(offsetof(qla_gdn_tensor, shape) == 16 && offsetof(qla_gdn_tensor, strides) == 48 &&
                  offsetof(qla_gdn_tensor, has_strides) == 80,
              "qla_gdn_tensor layout");
static_assert(offsetof(qla_gdn_forward_args, scale) == 8 && offsetof(qla_gdn_forward_args, q) == 16 &&
                  offsetof(qla_gdn_forward_args, cu_seqlens_host) == 16 + 9 * 88 &&
                  offsetof(qla_gdn_forward_args, stream) == 16 + 9 * 88 + 8 &&
                  offsetof(qla_gdn_forward_args, segment_chunks) == 16 + 9 * 88 + 16 &&
                  offsetof(qla_gdn_forward_args, checkpoints) == 832 &&
                  offsetof(qla_gdn_forward_args, beta_activation) == 920 &&
                  offsetof(qla_gdn_forward_args, A_log) == 928 && offsetof(qla_gdn_forward_args, dt_bias) == 1016 &&
                  offsetof(qla_gdn_forward_args, state_v_first) == 1104 &&
                  offsetof(qla_gdn_forward_args, state_pool) == 1112 &&
                  offsetof(qla_gdn_forward_args, state_pool_k_first) == 1376 &&
                  offsetof(qla_gdn_forward_args, checkpoint_every) == 1384 &&
                  offsetof(qla_gdn_forward_args, checkpoint_slots) == 1392 &&
                  offsetof(qla_gdn_forward_args, max_seqlen) == 1480 &&
                  offsetof(qla_gdn_forward_args, initial_slots_host) == 1488 &&
                  offsetof(qla_gdn_forward_args, checkpoint_slots_host) == 1504 && sizeof(qla_gdn_forward_args) == 1512,
              "qla_gdn_forward_args layout");
static_assert(offsetof(qla_gdn_recurrent_args, read_index_host) + 16 == sizeof(qla_gdn_recurrent_args),
              "qla_gdn_recurrent_args layout: the host copies last (ABI 11)");
static_assert(sizeof(qla_gdn_forward_config) == 64, "qla_gdn_forward_config layout");
static_assert(sizeof(qla_gdn_recurrent_config) == 40, "qla_gdn_recurrent_config layout");
static_assert(QLA_GDN_BF16 == int(qla::DType::BF16) && QLA_GDN_F16 == int(qla::DType::F16) &&
                  QLA_GDN_F32 == int(qla::DType::F32) && QLA_GDN_I32 == int(qla::DType::I32) &&
                  QLA_GDN_I64 == int(qla::DType::I64),
              "dtype codes are qla::DType values");

namespace {


qla_gdn_tensor cTensor(const TensorRef &t) {
  qla_gdn_tensor c;
  std::memset(&c, 0, sizeof c);
  c.data = t.data;
  c.dtype = int32_t(t.dtype);
  c.rank = int32_t(t.shape.size());
  for (size_t i = 0; i < t.shape.size(); ++i) c.shape[i] = t.shape[i];
  if (!t.strides.empty()) {
    c.has_strides = 1;
    for (size_t i = 0; i < t.strides.size(); ++i) c.strides[i] = t.strides[i];
  }
  return c;
}

qla_gdn_forward_args cArgs(const ForwardParams &p) {
  qla_gdn_forward_args a;
  qla_gdn_forward_args_init(&a);
  a.q = cTensor(p.q);
  a.k = cTensor(p.k);
  a.v = cTensor(p.v);
  a.g = cTensor(p.g);
  a.beta = cTensor(p.beta);
  a.o = cTensor(p.o);
  if (p.initial_state) a.initial_state = cTensor(*p.initial_state);
  if (p.final_state) a.final_state = cTensor(*p.final_state);
  if (p.cu_seqlens) a.cu_seqlens = cTensor(*p.cu_seqlens);
  a.cu_seqlens_host = p.cu_seqlens_host;
  a.use_qk_l2norm = p.use_qk_l2norm;
  return a;
}

struct Result {
  int rc;
  std::string err;
};

Result workspaceBytes(const qla_gdn_forward_args *a, size_t *n) {
  char err[1024];
  std::memset(err, 'x', sizeof err);
  int rc = qla_gdn_forward_workspace_bytes(a, n, err, sizeof err);
  return {rc, err};
}

}  // namespace

TEST_CASE("GDN C ABI: defaults", "[gdn][capi]") {
  qla_gdn_forward_args a;
  std::memset(&a, 0x5a, sizeof a);
  qla_gdn_forward_args_init(&a);
  CHECK(a.abi_version == QLA_GDN_ABI_VERSION);
  CHECK(std::isnan(a.scale));
  CHECK(a.q.data == nullptr);
  CHECK(a.initial_state.data == nullptr);
  CHECK(a.cu_seqlens_host == nullptr);
  CHECK(a.stream == nullptr);
  CHECK(a.use_qk_l2norm == 0);
  qla_gdn_forward_args_init(nullptr);  // harmless
}

TEST_CASE("GDN C ABI: workspace size and validation", "[gdn][capi]") {
  ForwardParams p = validParams();
  qla_gdn_forward_args a = cArgs(p);
  size_t n = 0;
  Result r = workspaceBytes(&a, &n);
  CHECK(r.rc == 0);
  CHECK(r.err.empty());
  CHECK(n == qla::gdn::forwardWorkspaceBytes(p));

  SECTION("optional tensors, strides and the host offsets pass through") {
    std::vector<int64_t> offs = {0, 7, 7, 100};
    ForwardParams pv = varlenParams(offs, DType::I64);
    pv.initial_state = stateRef(6, 3);
    pv.final_state = stateRef(7, 3);
    pv.q.strides = {51200, 512, 128, 1};
    qla_gdn_forward_args av = cArgs(pv);
    CHECK(workspaceBytes(&av, &n).rc == 0);
    offs[2] = 3;
    av.cu_seqlens_host = offs.data();
    r = workspaceBytes(&av, &n);
    CHECK(r.rc == -1);
    CHECK(r.err == P + "cu_seqlens must be non-decreasing: cu_seqlens[2] = 3 < cu_seqlens[1] = 7");
    av.cu_seqlens_host = nullptr;
    av.final_state.shape[0] = 2;
    CHECK(workspaceBytes(&av, &n).err ==
          P + "final_state has shape [2, 8, 128, 128]; expected [N, Hv, K, V] = [3, 8, 128, 128]");
    av.final_state.shape[0] = 3;
    av.q.strides[3] = 2;
    CHECK(workspaceBytes(&av, &n).err ==
          P + "q must be contiguous in its last dim (stride 1) with 16-byte aligned rows; got strides "
              "[51200, 512, 128, 2] for shape [1, 100, 4, 128]");
  }
  SECTION("max_seqlen: a bound for the plan, checked against the host offsets") {
    std::vector<int64_t> offs = {0, 7, 7, 100};
    ForwardParams pv = varlenParams(offs, DType::I64);
    qla_gdn_forward_args av = cArgs(pv);
    CHECK(av.max_seqlen == 0);
    av.max_seqlen = 93;  // the longest sequence: 93 tokens
    CHECK(workspaceBytes(&av, &n).rc == 0);
    av.cu_seqlens_host = offs.data();
    CHECK(workspaceBytes(&av, &n).rc == 0);
    av.max_seqlen = 92;
    CHECK(workspaceBytes(&av, &n).err == P + "sequence 2 has 93 tokens, more than max_seqlen = 92");
    av.cu_seqlens_host = nullptr;  // without the offsets the bound is the caller's promise
    CHECK(workspaceBytes(&av, &n).rc == 0);
    av.max_seqlen = -1;
    CHECK(workspaceBytes(&av, &n).err == P + "max_seqlen = -1 (a bound on the longest sequence; 0: none)");
    a.max_seqlen = 64;
    CHECK(workspaceBytes(&a, &n).err ==
          P + "max_seqlen bounds the lengths of cu_seqlens' sequences, but cu_seqlens is not given");
  }
  SECTION("C++ messages pass through") {
    a.k.dtype = QLA_GDN_F16;
    r = workspaceBytes(&a, &n);
    CHECK(r.rc == -1);
    CHECK(r.err == P + "k has dtype f16 but q has bf16");
  }
  SECTION("bad dtype code, rank, version, NULLs") {
    a.g.dtype = 9;
    CHECK(workspaceBytes(&a, &n).err == P + "g has an unknown dtype code 9");
    a = cArgs(p);
    a.o.rank = 5;
    CHECK(workspaceBytes(&a, &n).err == P + "o has rank 5 (1..4 allowed)");
    a = cArgs(p);
    a.abi_version = QLA_GDN_ABI_VERSION + 1;
    CHECK(workspaceBytes(&a, &n).err == P + "ABI version " + std::to_string(QLA_GDN_ABI_VERSION + 1) + " of the caller does not match the library's " + std::to_string(QLA_GDN_ABI_VERSION));
    CHECK(workspaceBytes(nullptr, &n).err == P + "the argument struct is NULL");
    a = cArgs(p);
    CHECK(workspaceBytes(&a, nullptr).err == P + "the output pointer `bytes` is NULL");
  }
  SECTION("absent optional tensors are NULL data; a required one is an error") {
    a.v.data = nullptr;
    CHECK(workspaceBytes(&a, &n).err == P + "v is a null pointer");
  }
  SECTION("message truncation and a NULL buffer") {
    a.k.dtype = QLA_GDN_F16;
    char small[8];
    CHECK(qla_gdn_forward_workspace_bytes(&a, &n, small, sizeof small) == -1);
    CHECK(std::string(small) == "chunk_g");
    CHECK(qla_gdn_forward_workspace_bytes(&a, &n, nullptr, 0) == -1);
  }
}

TEST_CASE("GDN C ABI: forward and warmup report errors", "[gdn][capi]") {
  ForwardParams p = validParams();
  qla_gdn_forward_args a = cArgs(p);
  size_t n = qla::gdn::forwardWorkspaceBytes(p);
  char err[512];
  CHECK(qla_gdn_forward(&a, fakeWorkspace(), n - 256, err, sizeof err) == -1);
  CHECK(std::string(err) == P + "workspace has " + std::to_string(n - 256) + " bytes, needs " + std::to_string(n));
  if (!qla::rt::gpuAvailable()) {
    CHECK(qla_gdn_forward(&a, fakeWorkspace(), n, err, sizeof err) == -1);
    CHECK(std::string(err).rfind(P + "no CUDA driver", 0) == 0);
  }

  qla_gdn_forward_config c{QLA_GDN_F32, QLA_GDN_F32, 128, 128, 0, QLA_GDN_I32, 0, 0, 0, QLA_GDN_F32};
  CHECK(qla_gdn_forward_warmup(&c, err, sizeof err) == -1);
  CHECK(std::string(err) == P + "warmup: dtype f32 is not bf16 or f16");
  c.dtype = QLA_GDN_BF16;
  c.k = 96;
  CHECK(qla_gdn_forward_warmup(&c, err, sizeof err) == -1);
  CHECK(std::string(err) == P + "warmup: K = 96 is not supported (64, 128 or 256)");
  c.k = 128;
  c.beta_dtype = QLA_GDN_F16;
  CHECK(qla_gdn_forward_warmup(&c, err, sizeof err) == -1);
  CHECK(std::string(err) == P + "warmup: beta dtype f16 is not f32 or bf16");
  CHECK(qla_gdn_forward_warmup(nullptr, err, sizeof err) == -1);
  CHECK(std::string(err) == P + "the config struct is NULL");
}
