// The GDN backward operator's host side, without a GPU (fake device
// addresses): valid arguments pass; every bad gradient argument gives its
// exact message; the inputs are checked as the forward checks them (with dv
// where the forward says o); outputs disjoint from the inputs and from each
// other; the workspace size; backward() checks everything before it needs a
// driver; and the C ABI (qla_gdn_backward_*).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "../../../kernels/gdn/src/Schedule.h"
#include "gdn_test_util.h"
#include "qla/gdn_c.h"

using namespace gdntest;
using qla::gdn::backward;
using qla::gdn::backwardWorkspaceBytes;
using qla::gdn::validateBackward;

// python/qla/gdn.py's ctypes mirror assumes exactly this layout: the header,
// 7 input tensors, cu_seqlens_host, stream, segment_chunks, 8 gradient tensors,
// beta_activation (ABI 5), use_gate, A_log, dt_bias, dA_log, ddt_bias (ABI 6),
// state_v_first (ABI 7).
static_assert(offsetof(qla_gdn_backward_args, scale) == 8 && offsetof(qla_gdn_backward_args, q) == 16 &&
                  offsetof(qla_gdn_backward_args, initial_state) == 16 + 5 * 88 &&
                  offsetof(qla_gdn_backward_args, cu_seqlens) == 16 + 6 * 88 &&
                  offsetof(qla_gdn_backward_args, cu_seqlens_host) == 16 + 7 * 88 &&
                  offsetof(qla_gdn_backward_args, stream) == 16 + 7 * 88 + 8 &&
                  offsetof(qla_gdn_backward_args, segment_chunks) == 16 + 7 * 88 + 16 &&
                  offsetof(qla_gdn_backward_args, dout) == 16 + 7 * 88 + 24 &&
                  offsetof(qla_gdn_backward_args, dht) == 16 + 8 * 88 + 24 &&
                  offsetof(qla_gdn_backward_args, dq) == 16 + 9 * 88 + 24 &&
                  offsetof(qla_gdn_backward_args, dg) == 16 + 12 * 88 + 24 &&
                  offsetof(qla_gdn_backward_args, dh0) == 16 + 14 * 88 + 24 &&
                  offsetof(qla_gdn_backward_args, checkpoints) == 16 + 15 * 88 + 24 &&
                  offsetof(qla_gdn_backward_args, beta_activation) == 16 + 16 * 88 + 24 &&
                  offsetof(qla_gdn_backward_args, A_log) == 16 + 16 * 88 + 32 &&
                  offsetof(qla_gdn_backward_args, ddt_bias) == 16 + 19 * 88 + 32 &&
                  offsetof(qla_gdn_backward_args, state_v_first) == 16 + 20 * 88 + 32,
              "qla_gdn_backward_args layout");
static_assert(sizeof(qla_gdn_backward_args) == 16 + 20 * 88 + 40, "qla_gdn_backward_args layout");

namespace {

std::string validationError(const BackwardParams &p) {
  return errorOf([&] { validateBackward(p); });
}

std::string forwardError(const ForwardParams &p) {
  return errorOf([&] { qla::gdn::validateForward(p); });
}

// g (and dg) in dtype `dt`.
void setG(BackwardParams &p, DType dt) { p.g.dtype = p.dg.dtype = dt; }
void setBeta(BackwardParams &p, DType dt) { p.beta.dtype = p.dbeta.dtype = dt; }

}  // namespace

TEST_CASE("valid GDN backward arguments pass", "[gdn][backward][validate]") {
  CHECK(validationError(validBackwardParams()) == "<no error>");

  SECTION("dht, dh0 with initial_state, each alone and together") {
    BackwardParams p = validBackwardParams();
    p.dht = dhtRef(2);
    CHECK(validationError(p) == "<no error>");
    p.initial_state = stateRef(6, 2);
    CHECK(validationError(p) == "<no error>");  // initial_state without dh0: no gradient wanted
    p.dh0 = dh0Ref(2);
    CHECK(validationError(p) == "<no error>");
    p.dht.reset();
    CHECK(validationError(p) == "<no error>");
  }
  SECTION("g and beta in f32 and bf16, dg and dbeta following") {
    for (DType g : {DType::F32, DType::BF16})
      for (DType beta : {DType::F32, DType::BF16}) {
        INFO("g " << qla::dtypeName(g) << ", beta " << qla::dtypeName(beta));
        BackwardParams p = validBackwardParams();
        setG(p, g);
        setBeta(p, beta);
        CHECK(validationError(p) == "<no error>");
      }
  }
  SECTION("f16 (g, beta in f16), K = V = 64, GVA 3, odd T") {
    Shape s;
    s.dt = DType::F16;
    s.K = s.V = 64;
    s.Hqk = 2;
    s.Hv = 6;
    s.T = 63;
    BackwardParams p = validBackwardParams(s);
    setG(p, DType::F16);
    setBeta(p, DType::F16);
    p.initial_state = stateRef(6, 2, s);
    p.dh0 = dh0Ref(2, s);
    p.dht = dhtRef(2, s);
    CHECK(validationError(p) == "<no error>");
  }
  SECTION("GVA 4 with K = 64, V = 128: dq and dk have the q/k heads") {
    Shape s;
    s.Hqk = 2;
    s.Hv = 8;
    s.K = 64;
    BackwardParams p = validBackwardParams(s);
    CHECK(p.dq.shape == std::vector<int64_t>{2, 100, 2, 64});
    CHECK(p.dv.shape == std::vector<int64_t>{2, 100, 8, 128});
    CHECK(validationError(p) == "<no error>");
  }
  SECTION("varlen with i32 and i64 offsets, states, host copy") {
    for (DType cu : {DType::I32, DType::I64}) {
      std::vector<int64_t> offs = {0, 1, 16, 80, 180, 591, 2091};
      BackwardParams p = varlenBackwardParams(offs, cu);
      p.initial_state = stateRef(6, 6);
      p.dht = dhtRef(6);
      p.dh0 = dh0Ref(6);
      p.cu_seqlens_host = offs.data();
      CHECK(validationError(p) == "<no error>");
      p.use_qk_l2norm = true;
      p.scale = 0.1;
      setG(p, DType::BF16);
      CHECK(validationError(p) == "<no error>");
    }
  }
  SECTION("strided gradients: padded rows") {
    BackwardParams p = validBackwardParams();
    p.dq.strides = {100 * 8 * 128, 8 * 128, 128, 1};  // every other head of a wider buffer
    p.dk.strides = {100 * 4 * 256, 4 * 256, 256, 1};
    p.dv.strides = {100 * 8 * 136, 8 * 136, 136, 1};  // rows padded to 136 (16-byte multiples)
    p.dout.strides = {100 * 16 * 128, 16 * 128, 128, 1};
    p.dg.strides = {100 * 16, 16, 1};
    p.dbeta.strides = {100 * 9, 9, 1};
    CHECK(validationError(p) == "<no error>");
  }
  SECTION("interleaved views of one buffer are refused for outputs (byte ranges are compared, not elements)") {
    Shape s;
    s.Hv = s.Hqk;
    BackwardParams p = validBackwardParams(s);
    const int64_t row = 3 * s.Hqk * s.K;
    std::vector<int64_t> st = {s.T * row, row, s.K, 1};
    char *base = static_cast<char *>(fakePtr(11));
    p.dq.strides = p.dk.strides = p.dv.strides = st;
    p.dk.data = base + s.Hqk * s.K * 2;
    p.dv.data = base + 2 * s.Hqk * s.K * 2;
    CHECK(validationError(p) == P + "dv overlaps dq in memory");
  }
  SECTION("adjacent gradients do not overlap") {
    BackwardParams p = validBackwardParams();
    // dq spans 2*100*4*128*2 = 204800 bytes; dk right after it.
    p.dk.data = static_cast<char *>(p.dq.data) + 204800;
    CHECK(validationError(p) == "<no error>");
  }
}

TEST_CASE("GDN backward: gradient dtype errors", "[gdn][backward][validate]") {
  BackwardParams p = validBackwardParams();
  SECTION("do") {
    p.dout.dtype = DType::F32;
    CHECK(validationError(p) == P + "do has dtype f32; expected bf16 (the dtype of q)");
    p.dout.dtype = DType::F16;
    CHECK(validationError(p) == P + "do has dtype f16; expected bf16 (the dtype of q)");
  }
  SECTION("dht") {
    p.dht = dhtRef(2);
    p.dht->dtype = DType::BF16;
    CHECK(validationError(p) == P + "dht has dtype bf16; expected f32");
  }
  SECTION("dq") {
    p.dq.dtype = DType::F16;
    CHECK(validationError(p) == P + "dq has dtype f16; expected bf16 (the dtype of q)");
  }
  SECTION("dk") {
    p.dk.dtype = DType::F32;
    CHECK(validationError(p) == P + "dk has dtype f32; expected bf16 (the dtype of q)");
  }
  SECTION("dv") {
    p.dv.dtype = DType::F32;
    CHECK(validationError(p) == P + "dv has dtype f32; expected bf16 (the dtype of q)");
  }
  SECTION("dg must have g's dtype") {
    p.dg.dtype = DType::BF16;  // g is f32
    CHECK(validationError(p) == P + "dg has dtype bf16; expected f32 (the dtype of g)");
    p.g.dtype = DType::BF16;
    p.dg.dtype = DType::F32;
    CHECK(validationError(p) == P + "dg has dtype f32; expected bf16 (the dtype of g)");
  }
  SECTION("dbeta must have beta's dtype") {
    p.dbeta.dtype = DType::BF16;  // beta is f32
    CHECK(validationError(p) == P + "dbeta has dtype bf16; expected f32 (the dtype of beta)");
    p.beta.dtype = DType::BF16;
    p.dbeta.dtype = DType::F32;
    CHECK(validationError(p) == P + "dbeta has dtype f32; expected bf16 (the dtype of beta)");
  }
  SECTION("dh0") {
    p.initial_state = stateRef(6, 2);
    p.dh0 = dh0Ref(2);
    p.dh0->dtype = DType::F16;
    CHECK(validationError(p) == P + "dh0 has dtype f16; expected f32");
  }
}

TEST_CASE("GDN backward: gradient shape errors", "[gdn][backward][validate]") {
  BackwardParams p = validBackwardParams();  // B 2, T 100, Hqk 4, Hv 8, K = V = 128
  SECTION("do") {
    p.dout.shape = {2, 100, 4, 128};
    CHECK(validationError(p) == P + "do has shape [2, 100, 4, 128]; expected [B, T, Hv, V] = [2, 100, 8, 128]");
    p.dout.shape = {2, 100, 8};
    CHECK(validationError(p) == P + "do must have 4 dims [B, T, Hv, V], got shape [2, 100, 8]");
    p.dout.shape = {2, 0, 8, 128};
    CHECK(validationError(p) == P + "do has an empty or negative dim: shape [2, 0, 8, 128]");
  }
  SECTION("dht, dense: N = B") {
    p.dht = dhtRef(1);
    CHECK(validationError(p) == P + "dht has shape [1, 8, 128, 128]; expected [N, Hv, K, V] = [2, 8, 128, 128]");
    p.dht->shape = {2, 8, 128};
    CHECK(validationError(p) == P + "dht must have 4 dims [N, Hv, K, V], got shape [2, 8, 128]");
  }
  SECTION("dht, varlen: N = len(cu_seqlens) - 1") {
    p = varlenBackwardParams({0, 10, 20, 100});
    p.dht = dhtRef(1);
    CHECK(validationError(p) == P + "dht has shape [1, 8, 128, 128]; expected [N, Hv, K, V] = [3, 8, 128, 128]");
  }
  SECTION("dq") {
    p.dq.shape = {2, 100, 8, 128};
    CHECK(validationError(p) == P + "dq has shape [2, 100, 8, 128]; expected [B, T, Hqk, K] = [2, 100, 4, 128]");
    p.dq.shape = {2, 100, 512};
    CHECK(validationError(p) == P + "dq must have 4 dims [B, T, Hqk, K], got shape [2, 100, 512]");
  }
  SECTION("dk") {
    p.dk.shape = {2, 99, 4, 128};
    CHECK(validationError(p) == P + "dk has shape [2, 99, 4, 128]; expected [B, T, Hqk, K] = [2, 100, 4, 128]");
  }
  SECTION("dv") {
    p.dv.shape = {2, 100, 4, 128};
    CHECK(validationError(p) == P + "dv has shape [2, 100, 4, 128]; expected [B, T, Hv, V] = [2, 100, 8, 128]");
    p.dv.shape = {2, 100, 8};
    CHECK(validationError(p) == P + "dv must have 4 dims [B, T, Hv, V], got shape [2, 100, 8]");
  }
  SECTION("dg") {
    p.dg.shape = {2, 100, 4};
    CHECK(validationError(p) == P + "dg has shape [2, 100, 4]; expected [B, T, Hv] = [2, 100, 8]");
    p.dg.shape = {2, 100, 8, 1};
    CHECK(validationError(p) == P + "dg must have 3 dims [B, T, Hv], got shape [2, 100, 8, 1]");
  }
  SECTION("dbeta") {
    p.dbeta.shape = {1, 100, 8};
    CHECK(validationError(p) == P + "dbeta has shape [1, 100, 8]; expected [B, T, Hv] = [2, 100, 8]");
  }
  SECTION("dh0") {
    p.initial_state = stateRef(6, 2);
    p.dh0 = dh0Ref(2);
    p.dh0->shape = {2, 8, 128, 64};
    CHECK(validationError(p) == P + "dh0 has shape [2, 8, 128, 64]; expected [N, Hv, K, V] = [2, 8, 128, 128]");
  }
  SECTION("dh0 without initial_state") {
    p.dh0 = dh0Ref(2);
    CHECK(validationError(p) ==
          P + "dh0 is given but initial_state is not (dh0 is the initial state's gradient)");
    p.dh0->dtype = DType::BF16;  // the missing initial state is reported first
    CHECK(validationError(p) ==
          P + "dh0 is given but initial_state is not (dh0 is the initial state's gradient)");
  }
  SECTION("null pointers") {
    p.dout.data = nullptr;
    CHECK(validationError(p) == P + "do is a null pointer");
    p = validBackwardParams();
    p.dg.data = nullptr;
    CHECK(validationError(p) == P + "dg is a null pointer");
    p = validBackwardParams();
    p.dv.data = nullptr;
    CHECK(validationError(p) == P + "dv is a null pointer");
  }
  SECTION("stride count") {
    p.dk.strides = {1, 2, 3};
    CHECK(validationError(p) == P + "dk has 3 strides for 4 dims");
  }
}

TEST_CASE("GDN backward: gradient layout errors", "[gdn][backward][validate]") {
  BackwardParams p = validBackwardParams();
  SECTION("do rows (TMA)") {
    p.dout.strides = {102400, 1024, 128, 3};
    CHECK(validationError(p) ==
          P + "do must be contiguous in its last dim (stride 1) with 16-byte aligned rows; got strides "
              "[102400, 1024, 128, 3] for shape [2, 100, 8, 128]");
  }
  SECTION("dht rows (TMA)") {
    p.dht = dhtRef(2);
    p.dht->strides = {131072, 16384, 129, 1};
    CHECK(validationError(p) ==
          P + "dht must be contiguous in its last dim (stride 1) with 16-byte aligned rows; got strides "
              "[131072, 16384, 129, 1] for shape [2, 8, 128, 128]");
  }
  SECTION("dq pointer alignment") {
    p.dq.data = static_cast<char *>(fakePtr(11)) + 8;
    CHECK(validationError(p) == P + "dq's data pointer 0xc0000000008 is not 16-byte aligned");
  }
  SECTION("dk rows") {
    p.dk.strides = {52000, 520, 130, 1};
    CHECK(validationError(p) ==
          P + "dk must be contiguous in its last dim (stride 1) with 16-byte aligned rows; got strides "
              "[52000, 520, 130, 1] for shape [2, 100, 4, 128]");
  }
  SECTION("dv rows") {
    p.dv.strides = {102400, 1024, 128, 2};
    CHECK(validationError(p) ==
          P + "dv must be contiguous in its last dim (stride 1) with 16-byte aligned rows; got strides "
              "[102400, 1024, 128, 2] for shape [2, 100, 8, 128]");
  }
  SECTION("dg last-dim stride, alignment") {
    p.dg.strides = {1600, 16, 2};
    CHECK(validationError(p) ==
          P + "dg must be contiguous in its last dim (stride 1) with positive strides; got strides [1600, 16, 2] for "
              "shape [2, 100, 8]");
    p = validBackwardParams();
    setG(p, DType::BF16);
    p.dg.data = static_cast<char *>(fakePtr(14)) + 1;
    CHECK(validationError(p) == P + "dg's data pointer 0xf0000000001 is not 2-byte aligned");
  }
  SECTION("dbeta alignment") {
    p.dbeta.data = static_cast<char *>(fakePtr(15)) + 2;
    CHECK(validationError(p) == P + "dbeta's data pointer 0x100000000002 is not 4-byte aligned");
  }
  SECTION("dh0 rows") {
    p.initial_state = stateRef(6, 2);
    p.dh0 = dh0Ref(2);
    p.dh0->strides = {131072, 16384, 130, 1};
    CHECK(validationError(p) ==
          P + "dh0 must be contiguous in its last dim (stride 1) with 16-byte aligned rows; got strides "
              "[131072, 16384, 130, 1] for shape [2, 8, 128, 128]");
  }
}

TEST_CASE("GDN backward: gradients must not overlap themselves, the inputs or each other",
          "[gdn][backward][validate]") {
  BackwardParams p = validBackwardParams();
  const std::string selfOverlap = "; an output must not be a broadcast or overlapping view";
  SECTION("self-overlapping outputs") {
    p.dq.strides = {51200, 512, 64, 1};
    CHECK(validationError(p) ==
          P + "dq has overlapping elements (strides [51200, 512, 64, 1] for shape [2, 100, 4, 128])" + selfOverlap);
    p = validBackwardParams();
    p.dk.strides = {0, 512, 128, 1};  // broadcast over B: fails the layout check first
    CHECK(validationError(p) ==
          P + "dk must be contiguous in its last dim (stride 1) with 16-byte aligned rows; got strides "
              "[0, 512, 128, 1] for shape [2, 100, 4, 128]");
    p = validBackwardParams();
    p.dv.strides = {102400, 1024, 64, 1};
    CHECK(validationError(p) ==
          P + "dv has overlapping elements (strides [102400, 1024, 64, 1] for shape [2, 100, 8, 128])" + selfOverlap);
    p = validBackwardParams();
    p.dg.strides = {800, 4, 1};
    CHECK(validationError(p) ==
          P + "dg has overlapping elements (strides [800, 4, 1] for shape [2, 100, 8])" + selfOverlap);
    p = validBackwardParams();
    p.dbeta.strides = {8, 8, 1};
    CHECK(validationError(p) ==
          P + "dbeta has overlapping elements (strides [8, 8, 1] for shape [2, 100, 8])" + selfOverlap);
    p = validBackwardParams();
    p.initial_state = stateRef(6, 2);
    p.dh0 = dh0Ref(2);
    p.dh0->strides = {131072, 16384, 64, 1};
    CHECK(validationError(p) ==
          P + "dh0 has overlapping elements (strides [131072, 16384, 64, 1] for shape [2, 8, 128, 128])" +
              selfOverlap);
  }
  SECTION("a gradient over an input") {
    p.dq.data = p.q.data;
    CHECK(validationError(p) == P + "dq overlaps q in memory");
    p = validBackwardParams();
    p.dk.data = p.k.data;
    CHECK(validationError(p) == P + "dk overlaps k in memory");
    p = validBackwardParams();
    p.dv.data = p.v.data;
    CHECK(validationError(p) == P + "dv overlaps v in memory");
    p = validBackwardParams();
    p.dg.data = p.g.data;
    CHECK(validationError(p) == P + "dg overlaps g in memory");
    p = validBackwardParams();
    p.dbeta.data = p.beta.data;
    CHECK(validationError(p) == P + "dbeta overlaps beta in memory");
    p = validBackwardParams();
    p.dq.data = p.dout.data;
    CHECK(validationError(p) == P + "dq overlaps do in memory");
    p = validBackwardParams();
    p.dht = dhtRef(2);
    p.dg.data = p.dht->data;
    CHECK(validationError(p) == P + "dg overlaps dht in memory");
    p = validBackwardParams();
    p.initial_state = stateRef(6, 2);
    p.dh0 = dh0Ref(2);
    p.dh0->data = p.initial_state->data;
    CHECK(validationError(p) == P + "dh0 overlaps initial_state in memory");
    p = varlenBackwardParams({0, 5, 100});
    p.dbeta.data = p.cu_seqlens->data;
    CHECK(validationError(p) == P + "dbeta overlaps cu_seqlens in memory");
  }
  SECTION("a gradient over the end of an input") {
    // do spans 2*100*8*128*2 = 409600 bytes.
    p.dv.data = static_cast<char *>(p.dout.data) + 409600 - 256;
    CHECK(validationError(p) == P + "dv overlaps do in memory");
    p.dv.data = static_cast<char *>(p.dout.data) + 409600;  // adjacent: fine
    CHECK(validationError(p) == "<no error>");
  }
  SECTION("two gradients over each other (the first output in argument order is named)") {
    p.dk.data = p.dq.data;
    CHECK(validationError(p) == P + "dq overlaps dk in memory");
    p = validBackwardParams();
    p.dq.data = p.dv.data;
    CHECK(validationError(p) == P + "dv overlaps dq in memory");
    p = validBackwardParams();
    p.dbeta.data = p.dg.data;
    CHECK(validationError(p) == P + "dg overlaps dbeta in memory");
    p = validBackwardParams();
    p.initial_state = stateRef(6, 2);
    p.dh0 = dh0Ref(2);
    p.dh0->data = p.dk.data;
    CHECK(validationError(p) == P + "dk overlaps dh0 in memory");
  }
}

TEST_CASE("GDN backward: input errors are the forward's, with dv for o", "[gdn][backward][validate]") {
  using Mutation = std::function<void(ForwardParams &)>;
  // Each mutates the forward's inputs; the backward of the mutated call must
  // fail with the forward's message.
  const std::vector<std::pair<const char *, Mutation>> inputs = {
      {"q dtype", [](ForwardParams &f) { f.q.dtype = DType::F32; }},
      {"k dtype", [](ForwardParams &f) { f.k.dtype = DType::F16; }},
      {"v dtype", [](ForwardParams &f) { f.v.dtype = DType::F16; }},
      {"g dtype", [](ForwardParams &f) { f.g.dtype = DType::F16; }},
      {"beta dtype", [](ForwardParams &f) { f.beta.dtype = DType::I32; }},
      {"q rank", [](ForwardParams &f) { f.q.shape = {2, 100, 4}; }},
      {"k shape", [](ForwardParams &f) { f.k.shape = {2, 100, 2, 128}; }},
      {"v B, T", [](ForwardParams &f) { f.v.shape = {2, 99, 8, 128}; }},
      {"GVA heads", [](ForwardParams &f) { f.v.shape[2] = 6; }},
      {"K", [](ForwardParams &f) { f.q.shape[3] = f.k.shape[3] = 96; }},
      {"V", [](ForwardParams &f) { f.v.shape[3] = 32; }},
      {"g shape", [](ForwardParams &f) { f.g.shape = {2, 100, 4}; }},
      {"beta shape", [](ForwardParams &f) { f.beta.shape = {1, 100, 8}; }},
      {"q null", [](ForwardParams &f) { f.q.data = nullptr; }},
      {"q alignment", [](ForwardParams &f) { f.q.data = static_cast<char *>(f.q.data) + 8; }},
      {"k rows", [](ForwardParams &f) { f.k.strides = {52000, 520, 130, 1}; }},
      {"g stride", [](ForwardParams &f) { f.g.strides = {1600, 16, 2}; }},
      {"initial_state dtype", [](ForwardParams &f) { f.initial_state = stateRef(6, 2); f.initial_state->dtype = DType::BF16; }},
      {"initial_state shape", [](ForwardParams &f) { f.initial_state = stateRef(6, 1); }},
      {"cu_seqlens with B = 2", [](ForwardParams &f) { f.cu_seqlens = TensorRef{fakePtr(8), DType::I64, {3}, {}}; }},
      {"cu_seqlens dtype", [](ForwardParams &f) { f = varlenParams({0, 100}); f.cu_seqlens->dtype = DType::F32; }},
      {"cu_seqlens host copy", [](ForwardParams &f) {
         static const std::vector<int64_t> offs = {0, 5, 12, 10, 100};
         f = varlenParams(offs);
         f.cu_seqlens_host = offs.data();
       }},
      {"host copy without cu_seqlens", [](ForwardParams &f) {
         static const int64_t offs[] = {0, 100};
         f.cu_seqlens_host = offs;
       }},
      {"scale", [](ForwardParams &f) { f.scale = std::numeric_limits<double>::infinity(); }},
      {"segment_chunks", [](ForwardParams &f) { f.segment_chunks = -2; }},
  };
  for (const auto &[what, mutate] : inputs) {
    INFO(what);
    ForwardParams f = validParams();
    mutate(f);
    const std::string fe = forwardError(f);
    REQUIRE(fe.rfind(P, 0) == 0);  // the mutation is an error for the forward
    // The gradients follow the mutated inputs' shapes (backwardOf), so that
    // only the inputs are wrong.
    const BackwardParams b = backwardOf(f);
    CHECK(validationError(b) == fe);
  }

  SECTION("explicit messages") {
    BackwardParams b = validBackwardParams();
    b.g.dtype = DType::F16;
    CHECK(validationError(b) == P + "g has dtype f16; expected f32 or bf16 (the dtype of q)");
    b = validBackwardParams();
    b.v.shape[2] = 6;
    CHECK(validationError(b) == P + "v has 6 heads, not a multiple of the 4 q/k heads");
  }
  SECTION("o's checks report dv") {
    const std::vector<std::pair<const char *, std::function<void(TensorRef &)>>> outs = {
        {"dtype", [](TensorRef &t) { t.dtype = DType::F32; }},
        {"shape", [](TensorRef &t) { t.shape = {2, 100, 4, 128}; }},
        {"rank", [](TensorRef &t) { t.shape = {2, 100, 8}; }},
        {"null", [](TensorRef &t) { t.data = nullptr; }},
        {"rows", [](TensorRef &t) { t.strides = {102400, 1024, 128, 3}; }},
        {"self-overlap", [](TensorRef &t) { t.strides = {102400, 1024, 64, 1}; }},
    };
    for (const auto &[what, mutate] : outs) {
      INFO(what);
      ForwardParams f = validParams();
      mutate(f.o);
      std::string fe = forwardError(f);
      REQUIRE(fe.rfind(P + "o", 0) == 0);
      BackwardParams b = validBackwardParams();
      mutate(b.dv);
      CHECK(validationError(b) == P + "dv" + fe.substr(P.size() + 1));
    }
  }
}

TEST_CASE("GDN backward workspace size", "[gdn][backward][workspace]") {
  struct Restore {
    ~Restore() { unsetenv("QLA_GDN_BWD_FUSED"); }
  } restore;
  unsetenv("QLA_GDN_BWD_FUSED");
  BackwardParams p = validBackwardParams();
  p.segment_chunks = -1;  // no split, whatever the cost model says
  // B 2, T 100, Hv 8, K = V = 128, bf16; 2 chunk slots of 64 (TC = 128),
  // 3 state slots. Regions (each 256-byte aligned here):
  //   W, U 409600 each; GC 2*8*128*4 = 8192          (the forward's: 827392)
  //   AM 2*8*128*64*4 = 524288; H 2*3*8*128*128*2 = 1572864; VN 409600
  //   DH 1572864; DVD 409600; SD (128/32)*2*8*128*4 = 32768
  //   DQH, DKH, DK2 2*100*8*128*4 = 819200 each; DW 409600; RQ, RK, RW 8192 each
  //   UL, VNL 409600 each (bf16: the recompute's hi + lo pairs)
  //   the dummy 256
  // W, U and UL (dead after the recompute's state kernel and the state
  // gradient's dh kernels) share bytes with the gradients' partials DQH,
  // DKH, DK2, DW (born after them): the larger group counts.
  // The fused gradient kernel (the default) keeps dS', dVd and dw on chip,
  // makes V_new from H and A (AM in bf16: 262144), writes SD in one slice
  // and sums dk's two terms into DK2: no VN, VNL, DH, DVD, DW, DKH; SD
  // 2*8*128*4 = 8192.
  const size_t gc = 8192;
  CHECK(backwardWorkspaceBytes(p) ==
        gc + 262144 + 1572864 + 8192 + 3 * 8192 + std::max(3 * 409600, 2 * 819200) + 256);
  setenv("QLA_GDN_BWD_FUSED", "0", 1);  // the six kernels
  const size_t n = backwardWorkspaceBytes(p);
  CHECK(n == gc + 524288 + 1572864 + 409600 + 1572864 + 409600 + 32768 + 3 * 8192 + 409600 +
                 std::max(3 * 409600, 3 * 819200 + 409600) + 256);
  CHECK(n > qla::gdn::forwardWorkspaceBytes(DType::BF16, 2, 100, 8, 128, 128, 0, -1));

  SECTION("f16: no hi + lo regions") {
    Shape s;
    s.dt = DType::F16;
    BackwardParams q = validBackwardParams(s);
    q.segment_chunks = -1;
    CHECK(backwardWorkspaceBytes(q) == n - 409600);  // VNL; UL's bytes were shared with the partials
  }
  SECTION("the same for equal shapes") {
    BackwardParams q = p;
    q.q.data = fakePtr(17);
    q.dq.strides = {51200 * 2, 512 * 2, 128, 1};
    q.dht = dhtRef(2);
    q.initial_state = stateRef(6, 2);
    q.dh0 = dh0Ref(2);
    setG(q, DType::BF16);
    setBeta(q, DType::BF16);
    q.use_qk_l2norm = true;
    q.scale = 0.5;
    CHECK(backwardWorkspaceBytes(q) == n);
  }
  SECTION("grows with T") {
    for (int64_t seg : {int64_t(-1), int64_t(0)}) {  // never split; the cost model
      size_t last = 0;
      for (int64_t T : {1, 64, 65, 100, 1000, 4096, 10000, 65536}) {
        Shape s;
        s.T = T;
        ForwardParams f = validParams(s);
        f.segment_chunks = seg;
        const size_t m = backwardWorkspaceBytes(backwardOf(f));
        INFO("segment_chunks " << seg << ", T = " << T << ": " << m << " bytes");
        CHECK(m > last);
        CHECK(m > qla::gdn::forwardWorkspaceBytes(f));
        last = m;
      }
    }
  }
  SECTION("varlen: N sequences add state slots") {
    std::vector<int64_t> one = {0, 100}, five = {0, 1, 20, 40, 60, 100};
    BackwardParams a = varlenBackwardParams(one), b = varlenBackwardParams(five);
    a.segment_chunks = b.segment_chunks = -1;
    CHECK(backwardWorkspaceBytes(b) > backwardWorkspaceBytes(a));
  }
  SECTION("validates first") {
    BackwardParams bad = p;
    bad.dg.dtype = DType::BF16;
    CHECK(errorOf([&] { backwardWorkspaceBytes(bad); }) == P + "dg has dtype bf16; expected f32 (the dtype of g)");
  }
}

TEST_CASE("GDN backward checks everything before it needs a GPU", "[gdn][backward]") {
  BackwardParams p = validBackwardParams();
  const size_t n = backwardWorkspaceBytes(p);
  const std::string N = std::to_string(n);

  SECTION("argument errors come first") {
    BackwardParams bad = p;
    bad.dbeta.shape = {2, 100, 7};
    CHECK(errorOf([&] { backward(bad, nullptr, 0); }) ==
          P + "dbeta has shape [2, 100, 7]; expected [B, T, Hv] = [2, 100, 8]");
  }
  SECTION("workspace") {
    CHECK(errorOf([&] { backward(p, nullptr, n); }) == P + "workspace is a null pointer (it needs " + N + " bytes)");
    CHECK(errorOf([&] { backward(p, fakeWorkspace(), 0); }) == P + "workspace has 0 bytes, needs " + N);
    CHECK(errorOf([&] { backward(p, fakeWorkspace(), n - 1); }) ==
          P + "workspace has " + std::to_string(n - 1) + " bytes, needs " + N);
    CHECK(errorOf([&] { backward(p, static_cast<char *>(fakeWorkspace()) + 128, n); }) ==
          P + "workspace 0x150000000080 is not 256-byte aligned");
    // Over a gradient output and over an input.
    CHECK(errorOf([&] { backward(p, static_cast<char *>(p.dq.data) - 4096, n); }) ==
          P + "workspace overlaps dq in memory");
    CHECK(errorOf([&] { backward(p, static_cast<char *>(p.dout.data) - 4096, n); }) ==
          P + "workspace overlaps do in memory");
  }
  SECTION("then the driver") {
    std::string why;
    if (qla::rt::gpuAvailable(&why)) {
      CHECK(errorOf([&] { backward(p, fakeWorkspace(), n); }) ==
            P + "q is not a CUDA device pointer (0x10000000000)");
    } else {
      std::string e = errorOf([&] { backward(p, fakeWorkspace(), n); });
      INFO(e);
      CHECK(e.rfind(P + "no CUDA driver", 0) == 0);
      CHECK(e == P + why);
    }
  }
}

TEST_CASE("GDN backward configuration of a call", "[gdn][backward]") {
  std::vector<int64_t> offs = {0, 3, 100};
  Shape s;
  s.dt = DType::F16;
  s.K = 64;
  BackwardParams p = varlenBackwardParams(offs, DType::I64, s);
  setG(p, DType::F16);
  p.initial_state = stateRef(6, 2, s);
  p.dh0 = dh0Ref(2, s);
  p.use_qk_l2norm = true;
  qla::gdn::BackwardConfig c = qla::gdn::backwardConfig(p);
  CHECK(c.str() == "dtype=f16 beta=f32 g=f16 K=64 V=128 varlen=1 cu=i64 l2norm=1 initial_state=1 final_state=0 "
                   "dht=0 dh0=1 fused=1");
  setenv("QLA_GDN_BWD_FUSED", "0", 1);
  CHECK(qla::gdn::backwardConfig(p).str() ==
        "dtype=f16 beta=f32 g=f16 K=64 V=128 varlen=1 cu=i64 l2norm=1 initial_state=1 final_state=0 dht=0 dh0=1");
  unsetenv("QLA_GDN_BWD_FUSED");
  CHECK(c.fwd.gDtype == DType::F16);
  CHECK_FALSE(c.dht);
  CHECK(c.dh0);
  p.dht = dhtRef(2, s);
  CHECK(qla::gdn::backwardConfig(p).dht);
  // The forward's final_state flag does not select anything in the backward.
  qla::gdn::BackwardConfig d = c;
  d.fwd.finalState = true;
  CHECK(d.str() == c.str());
}

TEST_CASE("GDN backward: the dh kernel's V slice follows the grid", "[gdn][backward]") {
  // 64 wide when the 32-wide slices' CTAs (V / 32 per v-head and segment)
  // are more than one wave of 132 SMs; the SM count of this machine's GPU,
  // or 132 (H200) without one (the cases below hold on either side of the
  // rule for an H200; skip elsewhere).
  if (qla::gdn::deviceSmCount() != 132) {
    WARN("skipped: the device is not a 132-SM H200 (" << qla::gdn::deviceSmCount() << " SMs)");
    return;
  }
  auto slice = [](int64_t T, int64_t Hqk, int64_t Hv, int64_t N, int64_t V, int64_t seg) {
    Shape s;
    s.Hqk = Hqk, s.Hv = Hv, s.V = V;
    std::vector<int64_t> offs;
    for (int64_t i = 0; i <= N; ++i) offs.push_back(T / N * i);
    BackwardParams p = varlenBackwardParams(offs, DType::I32, s);
    p.segment_chunks = seg;
    return qla::gdn::backwardConfig(p).dhBv;
  };
  // 16/32 heads, one sequence, no split: 4 x 32 = 128 CTAs, one wave.
  CHECK(slice(8192, 16, 32, 1, 128, -1) == 32);
  CHECK(slice(8192, 16, 32, 2, 128, -1) == 64);   // 256
  // 2/4 heads, 8192 tokens in segments of 16 chunks: 4 x 4 x 8 = 128.
  CHECK(slice(8192, 2, 4, 1, 128, 16) == 32);
  // ... of 8: 256 CTAs.
  CHECK(slice(8192, 2, 4, 1, 128, 8) == 64);
  // Eight sequences of 1024 tokens, segments of 16: at least one per sequence, 128.
  CHECK(slice(8192, 2, 4, 8, 128, 16) == 32);
  CHECK(slice(32768, 2, 4, 1, 128, 32) == 64);    // 4 x 4 x 16
  CHECK(slice(32768, 2, 4, 1, 64, 32) == 32);     // V = 64: one 64-wide slice is the head
  // The cost model's own split (the backward's): 16/32, 8 x 4096 tokens.
  CHECK(slice(32768, 16, 32, 8, 128, 0) == 64);
}

//===----------------------------------------------------------------------===//
// C ABI
//===----------------------------------------------------------------------===//

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

qla_gdn_backward_args cBackwardArgs(const BackwardParams &p) {
  qla_gdn_backward_args a;
  qla_gdn_backward_args_init(&a);
  a.q = cTensor(p.q);
  a.k = cTensor(p.k);
  a.v = cTensor(p.v);
  a.g = cTensor(p.g);
  a.beta = cTensor(p.beta);
  if (p.initial_state) a.initial_state = cTensor(*p.initial_state);
  if (p.cu_seqlens) a.cu_seqlens = cTensor(*p.cu_seqlens);
  a.cu_seqlens_host = p.cu_seqlens_host;
  a.use_qk_l2norm = p.use_qk_l2norm;
  a.scale = p.scale;
  a.segment_chunks = p.segment_chunks;
  a.dout = cTensor(p.dout);
  if (p.dht) a.dht = cTensor(*p.dht);
  a.dq = cTensor(p.dq);
  a.dk = cTensor(p.dk);
  a.dv = cTensor(p.dv);
  a.dg = cTensor(p.dg);
  a.dbeta = cTensor(p.dbeta);
  if (p.dh0) a.dh0 = cTensor(*p.dh0);
  return a;
}

struct Result {
  int rc;
  std::string err;
};

Result backwardBytes(const qla_gdn_backward_args *a, size_t *n) {
  char err[1024];
  std::memset(err, 'x', sizeof err);
  int rc = qla_gdn_backward_workspace_bytes(a, n, err, sizeof err);
  return {rc, err};
}

}  // namespace

TEST_CASE("GDN C ABI: backward defaults", "[gdn][capi][backward]") {
  qla_gdn_backward_args a;
  std::memset(&a, 0x5a, sizeof a);
  qla_gdn_backward_args_init(&a);
  CHECK(a.abi_version == QLA_GDN_ABI_VERSION);
  CHECK(std::isnan(a.scale));
  CHECK(a.use_qk_l2norm == 0);
  for (const qla_gdn_tensor *t : {&a.q, &a.k, &a.v, &a.g, &a.beta, &a.initial_state, &a.cu_seqlens, &a.dout, &a.dht,
                                  &a.dq, &a.dk, &a.dv, &a.dg, &a.dbeta, &a.dh0}) {
    CHECK(t->data == nullptr);
    CHECK(t->rank == 0);
    CHECK(t->has_strides == 0);
  }
  CHECK(a.cu_seqlens_host == nullptr);
  CHECK(a.stream == nullptr);
  CHECK(a.segment_chunks == 0);
  qla_gdn_backward_args_init(nullptr);  // harmless
}

TEST_CASE("GDN C ABI: backward workspace size and validation", "[gdn][capi][backward]") {
  BackwardParams p = validBackwardParams();
  qla_gdn_backward_args a = cBackwardArgs(p);
  size_t n = 0;
  Result r = backwardBytes(&a, &n);
  CHECK(r.rc == 0);
  CHECK(r.err.empty());
  CHECK(n == backwardWorkspaceBytes(p));

  SECTION("optional tensors, strides, host offsets and segment_chunks pass through") {
    std::vector<int64_t> offs = {0, 7, 7, 100};
    BackwardParams pv = varlenBackwardParams(offs, DType::I64);
    pv.initial_state = stateRef(6, 3);
    pv.dht = dhtRef(3);
    pv.dh0 = dh0Ref(3);
    pv.dq.strides = {51200, 512, 128, 1};
    pv.cu_seqlens_host = offs.data();
    pv.segment_chunks = -1;
    qla_gdn_backward_args av = cBackwardArgs(pv);
    CHECK(backwardBytes(&av, &n).rc == 0);
    CHECK(n == backwardWorkspaceBytes(pv));
    offs[2] = 3;
    r = backwardBytes(&av, &n);
    CHECK(r.rc == -1);
    CHECK(r.err == P + "cu_seqlens must be non-decreasing: cu_seqlens[2] = 3 < cu_seqlens[1] = 7");
    offs[2] = 7;
    av.dh0.shape[0] = 2;
    CHECK(backwardBytes(&av, &n).err ==
          P + "dh0 has shape [2, 8, 128, 128]; expected [N, Hv, K, V] = [3, 8, 128, 128]");
    av.dh0.shape[0] = 3;
    av.dq.strides[3] = 2;
    CHECK(backwardBytes(&av, &n).err ==
          P + "dq must be contiguous in its last dim (stride 1) with 16-byte aligned rows; got strides "
              "[51200, 512, 128, 2] for shape [1, 100, 4, 128]");
    av.dq.strides[3] = 1;
    av.initial_state.data = nullptr;  // absent: dh0 has nothing to be the gradient of
    CHECK(backwardBytes(&av, &n).err ==
          P + "dh0 is given but initial_state is not (dh0 is the initial state's gradient)");
    av = cBackwardArgs(pv);
    av.segment_chunks = -3;
    CHECK(backwardBytes(&av, &n).err ==
          P + "segment_chunks = -3 (0: the cost model, -1: never split, n > 0: segments of n chunks)");
  }
  SECTION("C++ messages pass through") {
    a.dg.dtype = QLA_GDN_BF16;
    r = backwardBytes(&a, &n);
    CHECK(r.rc == -1);
    CHECK(r.err == P + "dg has dtype bf16; expected f32 (the dtype of g)");
  }
  SECTION("bad dtype code, rank, version, NULLs") {
    a.dbeta.dtype = 9;
    CHECK(backwardBytes(&a, &n).err == P + "dbeta has an unknown dtype code 9");
    a = cBackwardArgs(p);
    a.dout.rank = 5;
    CHECK(backwardBytes(&a, &n).err == P + "do has rank 5 (1..4 allowed)");
    a = cBackwardArgs(p);
    a.abi_version = QLA_GDN_ABI_VERSION - 1;
    CHECK(backwardBytes(&a, &n).err == P + "ABI version " + std::to_string(QLA_GDN_ABI_VERSION - 1) +
                                           " of the caller does not match the library's " +
                                           std::to_string(QLA_GDN_ABI_VERSION));
    a.abi_version = 0;  // a struct never initialized
    CHECK(backwardBytes(&a, &n).rc == -1);
    r = backwardBytes(nullptr, &n);
    CHECK(r.rc == -1);
    CHECK(r.err == P + "the argument struct is NULL");
    a = cBackwardArgs(p);
    CHECK(backwardBytes(&a, nullptr).err == P + "the output pointer `bytes` is NULL");
  }
  SECTION("a required gradient left out") {
    qla_gdn_backward_args b;
    qla_gdn_backward_args_init(&b);
    b.q = a.q, b.k = a.k, b.v = a.v, b.g = a.g, b.beta = a.beta;  // the forward's inputs only
    CHECK(backwardBytes(&b, &n).err == P + "do has rank 0 (1..4 allowed)");
    a.dv.data = nullptr;
    CHECK(backwardBytes(&a, &n).err == P + "dv is a null pointer");
  }
  SECTION("message truncation and a NULL buffer") {
    a.dk.dtype = QLA_GDN_F16;
    char small[8];
    CHECK(qla_gdn_backward_workspace_bytes(&a, &n, small, sizeof small) == -1);
    CHECK(std::string(small) == "chunk_g");
    CHECK(qla_gdn_backward_workspace_bytes(&a, &n, nullptr, 0) == -1);
  }
}

TEST_CASE("GDN C ABI: backward and its warmup report errors", "[gdn][capi][backward]") {
  BackwardParams p = validBackwardParams();
  qla_gdn_backward_args a = cBackwardArgs(p);
  const size_t n = backwardWorkspaceBytes(p);
  char err[512];
  CHECK(qla_gdn_backward(&a, fakeWorkspace(), n - 256, err, sizeof err) == -1);
  CHECK(std::string(err) == P + "workspace has " + std::to_string(n - 256) + " bytes, needs " + std::to_string(n));
  CHECK(qla_gdn_backward(&a, nullptr, n, err, sizeof err) == -1);
  CHECK(std::string(err) == P + "workspace is a null pointer (it needs " + std::to_string(n) + " bytes)");
  CHECK(qla_gdn_backward(nullptr, fakeWorkspace(), n, err, sizeof err) == -1);
  CHECK(std::string(err) == P + "the argument struct is NULL");
  if (!qla::rt::gpuAvailable()) {
    CHECK(qla_gdn_backward(&a, fakeWorkspace(), n, err, sizeof err) == -1);
    CHECK(std::string(err).rfind(P + "no CUDA driver", 0) == 0);
  }

  // Configuration errors, before anything compiles.
  qla_gdn_forward_config c{QLA_GDN_F32, QLA_GDN_F32, 128, 128, 0, QLA_GDN_I32, 0, 0, 0, QLA_GDN_F32};
  CHECK(qla_gdn_backward_warmup(&c, 0, 0, err, sizeof err) == -1);
  CHECK(std::string(err) == P + "warmup: dtype f32 is not bf16 or f16");
  c.dtype = QLA_GDN_BF16;
  c.v = 32;
  CHECK(qla_gdn_backward_warmup(&c, 1, 0, err, sizeof err) == -1);
  CHECK(std::string(err) == P + "warmup: V = 32 is not supported (64, 128 or 256)");
  c.v = 128;
  c.g_dtype = QLA_GDN_F16;
  CHECK(qla_gdn_backward_warmup(&c, 0, 1, err, sizeof err) == -1);
  CHECK(std::string(err) == P + "warmup: g dtype f16 is not f32 or bf16");
  CHECK(qla_gdn_backward_warmup(nullptr, 0, 0, err, sizeof err) == -1);
  CHECK(std::string(err) == P + "the config struct is NULL");
}
