// The GDN forward operator's host-side checks: every bad argument gives its
// exact message (no GPU needed: fake device addresses), good layouts pass,
// workspace arithmetic, and forward() checks everything before it needs a
// driver.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "gdn_test_util.h"

using namespace gdntest;
using qla::gdn::forward;
using qla::gdn::forwardWorkspaceBytes;
using qla::gdn::validateForward;

namespace {

std::string validationError(const ForwardParams &p) {
  return errorOf([&] { validateForward(p); });
}

}  // namespace

TEST_CASE("valid GDN forward arguments pass", "[gdn][validate]") {
  CHECK(validationError(validParams()) == "<no error>");

  SECTION("f16, K = V = 64, GVA 3, odd T") {
    Shape s;
    s.dt = DType::F16;
    s.K = s.V = 64;
    s.Hqk = 2;
    s.Hv = 6;
    s.T = 63;
    CHECK(validationError(validParams(s)) == "<no error>");
  }
  SECTION("beta in the input dtype") {
    ForwardParams p = validParams();
    p.beta.dtype = DType::BF16;
    CHECK(validationError(p) == "<no error>");
  }
  SECTION("K = 64, V = 128; Hv = Hqk") {
    Shape s;
    s.K = 64;
    s.Hv = s.Hqk;
    CHECK(validationError(validParams(s)) == "<no error>");
  }
  SECTION("states and varlen with i32 and i64 offsets, host copy given") {
    for (DType cu : {DType::I32, DType::I64}) {
      std::vector<int64_t> offs = {0, 1, 16, 80, 180, 591, 2091};
      ForwardParams p = varlenParams(offs, cu);
      p.initial_state = stateRef(6, 6);
      p.final_state = stateRef(7, 6);
      p.cu_seqlens_host = offs.data();
      CHECK(validationError(p) == "<no error>");
    }
  }
  SECTION("empty sequences in a varlen batch") {
    std::vector<int64_t> offs = {0, 0, 5, 5, 7};
    ForwardParams p = varlenParams(offs);
    p.cu_seqlens_host = offs.data();
    CHECK(validationError(p) == "<no error>");
  }
  SECTION("q, k, v as views of one fused qkv buffer") {
    // qkv: [B, T, 3 * H * K] split into three [B, T, H, K] views.
    Shape s;
    s.Hv = s.Hqk;
    ForwardParams p = validParams(s);
    const int64_t row = 3 * s.Hqk * s.K;
    std::vector<int64_t> st = {s.T * row, row, s.K, 1};
    char *base = static_cast<char *>(fakePtr(0));
    p.q.strides = p.k.strides = p.v.strides = st;
    p.k.data = base + s.Hqk * s.K * 2;
    p.v.data = base + 2 * s.Hqk * s.K * 2;
    CHECK(validationError(p) == "<no error>");
  }
  SECTION("a dim of extent 1 may have any stride") {
    Shape s;
    s.B = 1;
    ForwardParams p = validParams(s);
    p.q.strides = {3, s.Hqk * s.K, s.K, 1};  // q[None] of a [T, H, K] tensor, odd stride in B
    p.g.strides = {7, s.Hv, 1};
    CHECK(validationError(p) == "<no error>");
  }
  SECTION("explicit scale") {
    ForwardParams p = validParams();
    p.scale = 0.1;
    CHECK(validationError(p) == "<no error>");
  }
}

TEST_CASE("GDN forward: beta_activation takes 0, 1 or 2", "[gdn][validate]") {
  ForwardParams p = validParams();
  for (int a : {0, 1, 2}) {
    p.beta_activation = a;
    CHECK(validationError(p) == "<no error>");
  }
  for (int a : {-1, 3}) {
    p.beta_activation = a;
    CHECK(validationError(p) == P + "beta_activation is " + std::to_string(a) +
                                    " (0: beta is beta; 1: beta = sigmoid(beta), FLA's use_beta_sigmoid_in_kernel; "
                                    "2: beta = 2 sigmoid(beta), with allow_neg_eigval)");
  }
  // The backward takes the same.
  BackwardParams b = backwardOf(validParams());
  b.beta_activation = 5;
  CHECK(qla::gdn::backwardConfig(b).fwd.betaActivation == 5);
  CHECK(errorOf([&] { qla::gdn::validateBackward(b); }).find("beta_activation is 5") != std::string::npos);
  // Where the kernels compute β: BSIG in prepare's, the fused forward's, wy's and the fused backward's specs.
  qla::gdn::ForwardConfig c;
  c.betaActivation = 2;
  CHECK(qla::gdn::prepareKernelSpec(c).defines.at("BSIG") == "2");
  CHECK(qla::gdn::fusedKernelSpec(c).defines.at("BSIG") == "2");
  CHECK(qla::gdn::stateKernelSpec(c).defines.count("BSIG") == 0);
  c.betaActivation = 0;
  CHECK(qla::gdn::prepareKernelSpec(c).defines.count("BSIG") == 0);
}

TEST_CASE("GDN forward and backward: the in-kernel gate's arguments", "[gdn][validate]") {
  const Shape sh;  // Hv = 8
  ForwardParams p = validParams(sh);
  const TensorRef alog{fakePtr(30), DType::F32, {sh.Hv}, {}}, dtb{fakePtr(31), DType::F32, {sh.Hv}, {}};
  const size_t plain = qla::gdn::forwardWorkspaceBytes(p);
  p.use_gate = true;
  CHECK(validationError(p) == P + "use_gate needs A_log ([Hv] f32: g = -exp(A_log) softplus(g_raw + dt_bias))");
  p.A_log = alog;
  CHECK(validationError(p) == "<no error>");
  p.dt_bias = dtb;
  CHECK(validationError(p) == "<no error>");
  // Its scratch (the log decay, f32 [B, T, Hv]) in front of the operator's.
  CHECK(qla::gdn::forwardWorkspaceBytes(p) >= plain + size_t(sh.B * sh.T * sh.Hv) * 4);
  p.A_log = TensorRef{fakePtr(30), DType::BF16, {sh.Hv}, {}};
  CHECK(validationError(p) == P + "A_log has dtype bf16; expected f32");
  p.A_log = TensorRef{fakePtr(30), DType::F32, {sh.Hv / 2}, {}};
  CHECK(validationError(p) == P + "A_log has shape [4]; expected [Hv] = [8]");
  p.A_log = alog;
  p.dt_bias = TensorRef{fakePtr(31), DType::F32, {sh.Hv, 1}, {}};
  CHECK(validationError(p).find(P + "dt_bias") == 0);
  p.use_gate = false;
  p.dt_bias.reset();
  CHECK(validationError(p) == P + "A_log is given but use_gate is off (A_log is the in-kernel gate's parameter)");
  // A gated call is planned on the gate's output, not by planForward.
  p.use_gate = true;
  CHECK(errorOf([&] { qla::gdn::planForward(p, fakeWorkspace(), 1 << 30); }).find("planForward does not plan") !=
        std::string::npos);

  BackwardParams b = backwardOf(validParams(sh));
  b.dA_log = TensorRef{fakePtr(32), DType::F32, {sh.Hv}, {}};
  CHECK(errorOf([&] { qla::gdn::validateBackward(b); }) ==
        P + "dA_log is given but use_gate is off (dA_log is the in-kernel gate's A_log's gradient)");
  b.use_gate = true;
  b.A_log = alog;
  CHECK(errorOf([&] { qla::gdn::validateBackward(b); }) == "<no error>");
  b.ddt_bias = TensorRef{fakePtr(33), DType::F32, {sh.Hv}, {}};
  CHECK(errorOf([&] { qla::gdn::validateBackward(b); }) ==
        P + "ddt_bias is given but dt_bias is not (ddt_bias is the in-kernel gate's dt_bias's gradient)");
  b.dt_bias = dtb;
  CHECK(errorOf([&] { qla::gdn::validateBackward(b); }) == "<no error>");
  // The gate's kernel specializations.
  qla::gdn::ForwardConfig c;
  c.gDtype = DType::BF16;
  c.gate = true;
  c.gateBias = true;
  CHECK(qla::gdn::gateKernelSpec(c, 1).str() == "gdn_gate.qla -D GT=bf16 -D HAS_DTB=1 -D PASS=1");
  CHECK(qla::gdn::ungated(c).gDtype == DType::F32);
  CHECK(!qla::gdn::ungated(c).gate);
}

TEST_CASE("GDN forward and backward: V-first states (state_v_first)", "[gdn][validate]") {
  Shape sh;
  sh.K = 64;  // V = 128: the layouts differ
  ForwardParams p = validParams(sh);
  const int64_t N = sh.B;
  p.initial_state = TensorRef{fakePtr(6), DType::F32, {N, sh.Hv, sh.V, sh.K}, {}};
  CHECK(validationError(p) == P + "initial_state has shape [2, 8, 128, 64]; expected [N, Hv, K, V] = [2, 8, 64, 128]");
  p.state_v_first = true;
  CHECK(validationError(p) == "<no error>");
  // The K-first copies in the scratch, in front of the operator's.
  ForwardParams kf = validParams(sh);
  kf.initial_state = TensorRef{fakePtr(6), DType::F32, {N, sh.Hv, sh.K, sh.V}, {}};
  CHECK(qla::gdn::forwardWorkspaceBytes(p) >= qla::gdn::forwardWorkspaceBytes(kf) + size_t(N * sh.Hv * sh.K * sh.V) * 4);
  p.initial_state = TensorRef{fakePtr(6), DType::F32, {N, sh.Hv, sh.K, sh.V}, {}};
  CHECK(validationError(p) ==
        P + "initial_state has shape [2, 8, 64, 128]; expected [N, Hv, V, K] (state_v_first) = [2, 8, 128, 64]");
  BackwardParams b = backwardOf(validParams(sh));
  b.state_v_first = true;
  b.initial_state = TensorRef{fakePtr(6), DType::F32, {N, sh.Hv, sh.V, sh.K}, {}};
  b.dh0 = TensorRef{fakePtr(16), DType::F32, {N, sh.Hv, sh.V, sh.K}, {}};
  b.dht = TensorRef{fakePtr(10), DType::F32, {N, sh.Hv, sh.V, sh.K}, {}};
  CHECK(errorOf([&] { qla::gdn::validateBackward(b); }) == "<no error>");
  b.dht = TensorRef{fakePtr(10), DType::F32, {N, sh.Hv, sh.K, sh.V}, {}};
  CHECK(errorOf([&] { qla::gdn::validateBackward(b); }) ==
        P + "dht has shape [2, 8, 64, 128]; expected [N, Hv, V, K] (state_v_first) = [2, 8, 128, 64]");
  qla::gdn::ForwardConfig c;
  c.K = 64;
  c.V = 128;
  CHECK(qla::gdn::stateTransposeKernelSpec(c, true).str() == "gdn_state_t.qla -D CC=64 -D R=128");
}

TEST_CASE("GDN forward: prefill into a state pool's arguments", "[gdn][validate]") {
  const Shape sh;  // B = 2, Hv = 8, K = V = 128
  ForwardParams p = validParams(sh);
  p.state_pool = TensorRef{fakePtr(40), DType::F32, {5, sh.Hv, sh.V, sh.K}, {}};
  CHECK(validationError(p) == "<no error>");
  CHECK(qla::gdn::forwardConfig(p).pool);
  CHECK(qla::gdn::fusedKernelSpec(qla::gdn::forwardConfig(p)).defines.at("POOL") == "1");
  p.initial_slots = TensorRef{fakePtr(41), DType::I32, {sh.B}, {}};
  p.final_slots = TensorRef{fakePtr(42), DType::I32, {sh.B}, {}};
  CHECK(validationError(p) == "<no error>");
  p.final_slots = TensorRef{fakePtr(42), DType::I64, {sh.B}, {}};
  CHECK(validationError(p) == P + "final_slots has dtype i64; expected i32");
  p.final_slots = TensorRef{fakePtr(42), DType::I32, {sh.B + 1}, {}};
  CHECK(validationError(p) == P + "final_slots has shape [3]; expected [N] = [2]");
  p.final_slots.reset();
  p.state_pool = TensorRef{fakePtr(40), DType::F16, {5, sh.Hv, sh.V, sh.K}, {}};
  CHECK(validationError(p) == P + "state_pool has dtype f16; expected f32 or bf16");
  p.state_pool = TensorRef{fakePtr(40), DType::F32, {5, sh.Hv, sh.K, sh.V / 2}, {}};
  CHECK(validationError(p) == P + "state_pool has shape [5, 8, 128, 64]; expected [slots, Hv, V, K] = [slots, 8, 128, "
                                  "128] (V-first; state_pool_k_first for [slots, Hv, K, V])");
  // The slots' host copies: checked when given (in range; no slot written
  // by two sequences; none read by one and written by another).
  {
    ForwardParams q = validParams(sh);
    q.state_pool = TensorRef{fakePtr(40), DType::F32, {5, sh.Hv, sh.V, sh.K}, {}};
    q.initial_slots = TensorRef{fakePtr(41), DType::I32, {sh.B}, {}};
    q.final_slots = TensorRef{fakePtr(42), DType::I32, {sh.B}, {}};
    int32_t in[2] = {0, 1}, out[2] = {0, 1};  // in place
    q.initial_slots_host = in, q.final_slots_host = out;
    CHECK(validationError(q) == "<no error>");
    out[1] = 5;
    CHECK(validationError(q) == P + "final_slots[1] = 5 is past the pool's 5 slots");
    out[1] = 0;
    CHECK(validationError(q) == P + "final_slots[0] and final_slots[1] both write slot 0 (two sequences of one call)");
    out[1] = 2;
    in[1] = 0;
    CHECK(validationError(q) == P + "initial_slots[1] = 0 is written by another sequence of the call (final_slots[0])");
    in[1] = -1, out[0] = -1;  // none
    CHECK(validationError(q) == "<no error>");
    // Checkpoints: the m-th counts where (m + 1) checkpoint_every tokens fit
    // (T = 100 here: only m = 0; the m = 1 entries name final_slots[1]'s
    // slot 2, which they would not write).
    q.checkpoint_every = 64;
    q.checkpoint_slots = TensorRef{fakePtr(43), DType::I32, {sh.B, 2}, {}};
    int32_t cs[4] = {3, 2, 4, 2};
    q.checkpoint_slots_host = cs;
    CHECK(validationError(q) == "<no error>");
    cs[0] = 4;
    CHECK(validationError(q) == P + "checkpoint_slots[0, 0] and checkpoint_slots[1, 0] both write slot 4 (two "
                                    "sequences of one call)");
    q.checkpoint_slots_host = nullptr;
    q.initial_slots.reset();
    CHECK(validationError(q) == P + "a host copy of initial_slots, final_slots or checkpoint_slots is given without "
                                    "the slots themselves");
  }
  // K = 256: the pool needs the fused kernel, which takes K up to 128.
  {
    ForwardParams q = validParams(Shape{2, 64, 4, 8, 256, 128});
    q.state_pool = TensorRef{fakePtr(40), DType::F32, {3, 8, 128, 256}, {}};
    CHECK(validationError(q) == P + "state_pool needs the fused kernel (K = 256 runs the two-kernel forward without "
                                    "a split: the fused kernels and the segments' merge take K up to 128)");
  }
  // K-first: [slots, Hv, K, V] (K != V tells the layouts apart).
  {
    ForwardParams q = validParams(Shape{2, 64, 4, 8, 64, 128});
    q.state_pool = TensorRef{fakePtr(40), DType::F32, {3, 8, 128, 64}, {}};
    CHECK(validationError(q) == "<no error>");
    q.state_pool_k_first = true;
    CHECK(validationError(q) == P + "state_pool has shape [3, 8, 128, 64]; expected [slots, Hv, K, V] = [slots, 8, "
                                    "64, 128] (state_pool_k_first)");
    q.state_pool = TensorRef{fakePtr(40), DType::F32, {3, 8, 64, 128}, {}};
    CHECK(validationError(q) == "<no error>");
    CHECK(qla::gdn::forwardConfig(q).poolKFirst);
    CHECK(qla::gdn::fusedKernelSpec(qla::gdn::forwardConfig(q)).defines.at("PKF") == "1");
    CHECK(qla::gdn::fusedPass1KernelSpec(qla::gdn::forwardConfig(q)).defines.at("PKF") == "1");
    q.state_v_first = true;
    CHECK(validationError(q) == P + "state_v_first does not apply to a state_pool (V-first by default; "
                                    "state_pool_k_first for K-first)");
  }
  // Prefix caching: checkpoint_every (a multiple of 64) with checkpoint_slots [N, M] i32.
  {
    ForwardParams q = validParams(sh);
    q.state_pool = TensorRef{fakePtr(40), DType::F32, {5, sh.Hv, sh.V, sh.K}, {}};
    q.checkpoint_every = 128;
    CHECK(validationError(q) == P + "checkpoint_every needs checkpoint_slots ([N, M] int32 pool slots)");
    q.checkpoint_slots = TensorRef{fakePtr(43), DType::I32, {sh.B, 3}, {}};
    CHECK(validationError(q) == "<no error>");
    CHECK(qla::gdn::forwardConfig(q).poolCheckpoints);
    CHECK(qla::gdn::fusedKernelSpec(qla::gdn::forwardConfig(q)).defines.at("CKPT") == "1");
    CHECK(qla::gdn::fusedPass1KernelSpec(qla::gdn::forwardConfig(q)).defines.count("CKPT") == 0);
    q.checkpoint_every = 96;
    CHECK(validationError(q) == P + "checkpoint_every = 96: a positive multiple of 64 tokens (the chunk) is needed "
                                    "with checkpoint_slots");
    q.checkpoint_every = 0;
    CHECK(validationError(q) == P + "checkpoint_every = 0: a positive multiple of 64 tokens (the chunk) is needed "
                                    "with checkpoint_slots");
    q.checkpoint_every = 64;
    q.checkpoint_slots = TensorRef{fakePtr(43), DType::I64, {sh.B, 3}, {}};
    CHECK(validationError(q) == P + "checkpoint_slots has dtype i64; expected i32");
    q.checkpoint_slots = TensorRef{fakePtr(43), DType::I32, {sh.B + 1, 3}, {}};
    CHECK(validationError(q) == P + "checkpoint_slots has shape [3, 3]; expected [N, M] = [2, M] with M >= 1");
  }
  p.state_pool = TensorRef{fakePtr(40), DType::BF16, {5, sh.Hv, sh.V, sh.K}, {}};
  p.initial_state = TensorRef{fakePtr(6), DType::F32, {sh.B, sh.Hv, sh.K, sh.V}, {}};
  CHECK(validationError(p) == P + "state_pool excludes initial_state and final_state (the pool's slots are the states)");
  p.initial_state.reset();
  p.state_pool.reset();
  CHECK(validationError(p) == P + "initial_slots, final_slots, checkpoint_every, checkpoint_slots and "
                                  "state_pool_k_first go with a state_pool, which is not given");
}

TEST_CASE("GDN forward: dtype errors", "[gdn][validate]") {
  ForwardParams p = validParams();
  SECTION("q") {
    p.q.dtype = DType::F32;
    CHECK(validationError(p) == P + "q has dtype f32; expected bf16 or f16");
  }
  SECTION("k") {
    p.k.dtype = DType::F16;
    CHECK(validationError(p) == P + "k has dtype f16 but q has bf16");
  }
  SECTION("v") {
    p.v.dtype = DType::F16;
    CHECK(validationError(p) == P + "v has dtype f16 but q has bf16");
  }
  SECTION("g") {
    p.g.dtype = DType::F16;
    CHECK(validationError(p) == P + "g has dtype f16; expected f32 or bf16 (the dtype of q)");
    p.g.dtype = DType::BF16;  // the dtype of q: accepted, as FLA accepts it
    CHECK(validationError(p) == "<no error>");
  }
  SECTION("beta") {
    p.beta.dtype = DType::F16;
    CHECK(validationError(p) == P + "beta has dtype f16; expected f32 or bf16 (the dtype of q)");
  }
  SECTION("o") {
    p.o.dtype = DType::F32;
    CHECK(validationError(p) == P + "o has dtype f32; expected bf16 (the dtype of q)");
  }
  SECTION("cu_seqlens") {
    p = varlenParams({0, 100});
    p.cu_seqlens->dtype = DType::F32;
    CHECK(validationError(p) == P + "cu_seqlens has dtype f32; expected i32 or i64");
  }
  SECTION("initial_state") {
    p.initial_state = stateRef(6, 2);
    p.initial_state->dtype = DType::BF16;
    CHECK(validationError(p) == P + "initial_state has dtype bf16; expected f32");
  }
  SECTION("final_state") {
    p.final_state = stateRef(7, 2);
    p.final_state->dtype = DType::F16;
    CHECK(validationError(p) == P + "final_state has dtype f16; expected f32");
  }
}

TEST_CASE("GDN forward: shape errors", "[gdn][validate]") {
  ForwardParams p = validParams();
  SECTION("q rank") {
    p.q.shape = {2, 100, 4};
    CHECK(validationError(p) == P + "q must have 4 dims [B, T, Hqk, K], got shape [2, 100, 4]");
  }
  SECTION("empty q") {
    p.q.shape[1] = 0;
    CHECK(validationError(p) == P + "q has an empty or negative dim: shape [2, 0, 4, 128]");
  }
  SECTION("huge dim") {
    p.q.shape[1] = int64_t(1) << 31;
    CHECK(validationError(p) == P + "q dim 1 = 2147483648 is too large (at most 2^31 - 1)");
  }
  SECTION("stride count") {
    p.q.strides = {1, 2, 3};
    CHECK(validationError(p) == P + "q has 3 strides for 4 dims");
  }
  SECTION("null pointers") {
    p.q.data = nullptr;
    CHECK(validationError(p) == P + "q is a null pointer");
    p = validParams();
    p.o.data = nullptr;
    CHECK(validationError(p) == P + "o is a null pointer");
  }
  SECTION("k shape") {
    p.k.shape = {2, 100, 2, 128};
    CHECK(validationError(p) == P + "k has shape [2, 100, 2, 128] but q has shape [2, 100, 4, 128]");
  }
  SECTION("v rank") {
    p.v.shape = {2, 100, 1024};
    CHECK(validationError(p) == P + "v must have 4 dims [B, T, Hv, V], got shape [2, 100, 1024]");
  }
  SECTION("v B, T") {
    p.v.shape = {2, 99, 8, 128};
    CHECK(validationError(p) == P + "v has shape [2, 99, 8, 128] but q has shape [2, 100, 4, 128] (B and T must match)");
  }
  SECTION("GVA head counts") {
    Shape s;
    s.Hqk = 16;
    s.Hv = 40;
    CHECK(validationError(validParams(s)) == P + "v has 40 heads, not a multiple of the 16 q/k heads");
    s.Hqk = 4;
    s.Hv = 2;  // fewer v heads than q/k heads
    CHECK(validationError(validParams(s)) == P + "v has 2 heads, not a multiple of the 4 q/k heads");
  }
  SECTION("K") {
    Shape s;
    s.K = 96;
    CHECK(validationError(validParams(s)) == P + "K = 96 is not supported (64, 128 or 256)");
    s.K = 512;
    CHECK(validationError(validParams(s)) == P + "K = 512 is not supported (64, 128 or 256)");
    s.K = 256;
    CHECK(validationError(validParams(s)) == "<no error>");
    // K = 256 runs the two-kernel forward, unsplit: a forced split, the fused
    // kernel or a state pool are refused with the reason.
    const std::string why = " (K = 256 runs the two-kernel forward without a split: the fused kernels and the "
                            "segments' merge take K up to 128)";
    ForwardParams q = validParams(s);
    q.segment_chunks = 4;
    CHECK(validationError(q) == P + "segment_chunks = 4" + why);
    q.segment_chunks = -1;
    CHECK(validationError(q) == "<no error>");
    q.fused = 1;
    CHECK(validationError(q) == P + "fused = 1" + why);
  }
  SECTION("V") {
    Shape s;
    s.V = 32;
    CHECK(validationError(validParams(s)) == P + "V = 32 is not supported (64, 128 or 256)");
    s.V = 512;
    CHECK(validationError(validParams(s)) == P + "V = 512 is not supported (64, 128 or 256)");
    s.V = 256;
    CHECK(validationError(validParams(s)) == "<no error>");
  }
  SECTION("g") {
    p.g.shape = {2, 100, 4};
    CHECK(validationError(p) == P + "g has shape [2, 100, 4]; expected [B, T, Hv] = [2, 100, 8]");
    p.g.shape = {2, 100, 8, 1};
    CHECK(validationError(p) == P + "g must have 3 dims [B, T, Hv], got shape [2, 100, 8, 1]");
  }
  SECTION("beta") {
    p.beta.shape = {2, 100, 8, 1};
    CHECK(validationError(p) == P + "beta must have 3 dims [B, T, Hv], got shape [2, 100, 8, 1]");
    p.beta.shape = {1, 100, 8};
    CHECK(validationError(p) == P + "beta has shape [1, 100, 8]; expected [B, T, Hv] = [2, 100, 8]");
  }
  SECTION("o") {
    p.o.shape = {2, 100, 4, 128};
    CHECK(validationError(p) == P + "o has shape [2, 100, 4, 128]; expected [B, T, Hv, V] = [2, 100, 8, 128]");
  }
  SECTION("states, dense") {
    p.initial_state = stateRef(6, 1);
    CHECK(validationError(p) == P + "initial_state has shape [1, 8, 128, 128]; expected [N, Hv, K, V] = [2, 8, 128, 128]");
    p.initial_state = stateRef(6, 2);
    p.final_state = stateRef(7, 2);
    p.final_state->shape = {2, 8, 128};
    CHECK(validationError(p) == P + "final_state must have 4 dims [N, Hv, K, V], got shape [2, 8, 128]");
  }
  SECTION("states, varlen: N = len(cu_seqlens) - 1") {
    p = varlenParams({0, 10, 20, 100});
    p.final_state = stateRef(7, 1);
    CHECK(validationError(p) == P + "final_state has shape [1, 8, 128, 128]; expected [N, Hv, K, V] = [3, 8, 128, 128]");
  }
}

TEST_CASE("GDN forward: cu_seqlens errors", "[gdn][validate]") {
  SECTION("B != 1") {
    ForwardParams p = validParams();
    p.cu_seqlens = TensorRef{fakePtr(8), DType::I64, {3}, {}};
    CHECK(validationError(p) == P + "cu_seqlens requires B = 1, got B = 2");
  }
  SECTION("too short") {
    ForwardParams p = varlenParams({0, 100});
    p.cu_seqlens->shape = {1};
    CHECK(validationError(p) == P + "cu_seqlens must have N + 1 >= 2 entries, got 1");
  }
  SECTION("rank") {
    ForwardParams p = varlenParams({0, 100});
    p.cu_seqlens->shape = {1, 2};
    CHECK(validationError(p) == P + "cu_seqlens must have 1 dim [N + 1], got shape [1, 2]");
  }
  SECTION("not starting at 0") {
    std::vector<int64_t> offs = {3, 10, 100};
    ForwardParams p = varlenParams(offs);
    p.cu_seqlens_host = offs.data();
    CHECK(validationError(p) == P + "cu_seqlens[0] must be 0, got 3");
  }
  SECTION("decreasing") {
    std::vector<int64_t> offs = {0, 5, 12, 10, 100};
    ForwardParams p = varlenParams(offs);
    p.cu_seqlens_host = offs.data();
    CHECK(validationError(p) == P + "cu_seqlens must be non-decreasing: cu_seqlens[3] = 10 < cu_seqlens[2] = 12");
  }
  SECTION("not ending at T") {
    std::vector<int64_t> offs = {0, 5, 12, 100};
    ForwardParams p = varlenParams(offs);
    offs.back() = 90;
    p.cu_seqlens_host = offs.data();
    CHECK(validationError(p) == P + "cu_seqlens must end at T = 100, got cu_seqlens[3] = 90");
  }
  SECTION("without the host copy nothing is read") {
    ForwardParams p = varlenParams({0, 5, 12, 100});
    CHECK(validationError(p) == "<no error>");
  }
  SECTION("host copy without cu_seqlens") {
    std::vector<int64_t> offs = {0, 100};
    ForwardParams p = validParams();
    p.cu_seqlens_host = offs.data();
    CHECK(validationError(p) == P + "cu_seqlens_host is given but cu_seqlens is not");
  }
  SECTION("stride") {
    ForwardParams p = varlenParams({0, 5, 100});
    p.cu_seqlens->strides = {2};
    CHECK(validationError(p) == P + "cu_seqlens must be contiguous (stride 1); got strides [2]");
  }
  SECTION("alignment") {
    ForwardParams p = varlenParams({0, 5, 100}, DType::I64);
    p.cu_seqlens->data = static_cast<char *>(fakePtr(8)) + 4;
    CHECK(validationError(p) == P + "cu_seqlens's data pointer 0x90000000004 is not 8-byte aligned");
  }
}

TEST_CASE("GDN forward: layout errors", "[gdn][validate]") {
  ForwardParams p = validParams();  // B 2, T 100, Hqk 4, Hv 8, K = V = 128
  SECTION("q last-dim stride") {
    p.q.strides = {102400, 1024, 256, 2};
    CHECK(validationError(p) ==
          P + "q must be contiguous in its last dim (stride 1) with 16-byte aligned rows; got strides "
              "[102400, 1024, 256, 2] for shape [2, 100, 4, 128]");
  }
  SECTION("k rows not 16-byte aligned") {
    p.k.strides = {52000, 520, 130, 1};
    CHECK(validationError(p) ==
          P + "k must be contiguous in its last dim (stride 1) with 16-byte aligned rows; got strides "
              "[52000, 520, 130, 1] for shape [2, 100, 4, 128]");
  }
  SECTION("v broadcast over T") {
    p.v.strides = {1024, 0, 128, 1};
    CHECK(validationError(p) ==
          P + "v must be contiguous in its last dim (stride 1) with 16-byte aligned rows; got strides "
              "[1024, 0, 128, 1] for shape [2, 100, 8, 128]");
  }
  SECTION("q pointer alignment") {
    p.q.data = static_cast<char *>(fakePtr(0)) + 8;
    CHECK(validationError(p) == P + "q's data pointer 0x10000000008 is not 16-byte aligned");
  }
  SECTION("g last-dim stride") {
    p.g.strides = {1600, 16, 2};
    CHECK(validationError(p) ==
          P + "g must be contiguous in its last dim (stride 1) with positive strides; got strides [1600, 16, 2] for "
              "shape [2, 100, 8]");
  }
  SECTION("beta pointer alignment") {
    p.beta.data = static_cast<char *>(fakePtr(4)) + 2;
    CHECK(validationError(p) == P + "beta's data pointer 0x50000000002 is not 4-byte aligned");
  }
  SECTION("o") {
    p.o.strides = {102400, 1024, 128, 3};
    CHECK(validationError(p) ==
          P + "o must be contiguous in its last dim (stride 1) with 16-byte aligned rows; got strides "
              "[102400, 1024, 128, 3] for shape [2, 100, 8, 128]");
  }
  SECTION("states") {
    p.initial_state = stateRef(6, 2);
    p.initial_state->strides = {131072, 16384, 129, 1};
    CHECK(validationError(p) ==
          P + "initial_state must be contiguous in its last dim (stride 1) with 16-byte aligned rows; got strides "
              "[131072, 16384, 129, 1] for shape [2, 8, 128, 128]");
  }
}

TEST_CASE("GDN forward: outputs must not overlap", "[gdn][validate]") {
  ForwardParams p = validParams();
  SECTION("o with overlapping heads") {
    p.o.strides = {102400, 1024, 64, 1};
    CHECK(validationError(p) ==
          P + "o has overlapping elements (strides [102400, 1024, 64, 1] for shape [2, 100, 8, 128]); an output must "
              "not be a broadcast or overlapping view");
  }
  SECTION("o over v") {
    p.o.data = p.v.data;
    CHECK(validationError(p) == P + "o overlaps v in memory");
  }
  SECTION("o over the end of q") {
    // q spans 2*100*4*128*2 = 204800 bytes.
    p.o.data = static_cast<char *>(p.q.data) + 204800 - 256;
    CHECK(validationError(p) == P + "o overlaps q in memory");
    p.o.data = static_cast<char *>(p.q.data) + 204800;  // adjacent: fine
    CHECK(validationError(p) == "<no error>");
  }
  SECTION("final state in place of the initial state") {
    p.initial_state = stateRef(6, 2);
    p.final_state = stateRef(6, 2);
    CHECK(validationError(p) == P + "final_state overlaps initial_state in memory");
  }
}

TEST_CASE("GDN forward: scale", "[gdn][validate]") {
  ForwardParams p = validParams();
  p.scale = std::numeric_limits<double>::infinity();
  CHECK(validationError(p) == P + "scale = inf is not finite");
}

TEST_CASE("GDN forward workspace size", "[gdn][workspace]") {
  // W = 2*100*8*128*2 = 409600 at 0; U = 409600 at 409600; GC = 2*8*(2
  // chunk slots of 64)*4 = 8192 at 819200; dummy at 827392 (256 B) → 827648.
  CHECK(forwardWorkspaceBytes(DType::BF16, 2, 100, 8, 128, 128) == 827648);
  // The params form plans the call: for validParams (2 x 100 tokens, 8
  // v-heads) the cost model takes the fused path, which needs no W, U or γ
  // scratch, only the 256-byte dummy.
  CHECK(forwardWorkspaceBytes(validParams()) == 256);
  // W = 384 at 0; U at 512 (aligned), 384; GC = 3*64*4 = 768 at 1024; dummy
  // at 1792 → 2048.
  CHECK(forwardWorkspaceBytes(DType::F16, 1, 1, 3, 64, 64) == 2048);
  // Varlen, 5 sequences in T = 100: cdiv(100, 64) + 4 = 6 slots; W = U =
  // 1*100*8*128*2 = 204800; GC = 8*6*64*4 = 12288 at 409600; dummy at 421888 → 422144.
  CHECK(forwardWorkspaceBytes(DType::BF16, 1, 100, 8, 128, 128, 5) == 422144);
  CHECK_THROWS(forwardWorkspaceBytes(DType::BF16, 2, 100, 8, 128, 128, 5));  // varlen needs B = 1
  // Large: 1 x 32768, Hv 64, K = V = 128, bf16: W = U = 512 MiB, GC = 8 MiB.
  CHECK(forwardWorkspaceBytes(DType::BF16, 1, 32768, 64, 128, 128) ==
        size_t(2) * 536870912 + 8388608 + 256);
  // Mixed K, V.
  CHECK(forwardWorkspaceBytes(DType::BF16, 1, 10, 6, 64, 128) ==
        size_t(7680) + 15360 + 1536 /*GC: 6 heads x 64 floats*/ + 256);

  // The params form validates first.
  ForwardParams bad = validParams();
  bad.k.dtype = DType::F16;
  CHECK(errorOf([&] { forwardWorkspaceBytes(bad); }) == P + "k has dtype f16 but q has bf16");
  CHECK(errorOf([&] { forwardWorkspaceBytes(DType::BF16, 0, 1, 1, 64, 64); }) ==
        P + "forwardWorkspaceBytes: bad sizes B = 0, T = 1, Hv = 1, K = 64, V = 64, numSequences = 0");
}

TEST_CASE("GDN forward checks everything before it needs a GPU", "[gdn][forward]") {
  ForwardParams p = validParams();
  const size_t n = forwardWorkspaceBytes(p);

  SECTION("argument errors come first") {
    ForwardParams bad = p;
    bad.v.shape[2] = 6;
    bad.g.shape[2] = bad.beta.shape[2] = bad.o.shape[2] = 6;
    CHECK(errorOf([&] { forward(bad, fakeWorkspace(), n); }) ==
          P + "v has 6 heads, not a multiple of the 4 q/k heads");
  }
  SECTION("workspace") {
    const std::string need = std::to_string(n);
    CHECK(errorOf([&] { forward(p, nullptr, n); }) ==
          P + "workspace is a null pointer (it needs " + need + " bytes)");
    CHECK(errorOf([&] { forward(p, static_cast<char *>(fakeWorkspace()) + 128, n); }) ==
          P + "workspace 0x150000000080 is not 256-byte aligned");
    CHECK(errorOf([&] { forward(p, fakeWorkspace(), n - 1); }) ==
          P + "workspace has " + std::to_string(n - 1) + " bytes, needs " + need);
    CHECK(errorOf([&] { forward(p, p.o.data, n); }) == P + "workspace overlaps o in memory");
  }
  SECTION("then the driver") {
    std::string why;
    if (qla::rt::gpuAvailable(&why)) {
      // Fake addresses are not device memory.
      CHECK(errorOf([&] { forward(p, fakeWorkspace(), n); }) ==
            P + "q is not a CUDA device pointer (0x10000000000)");
    } else {
      std::string e = errorOf([&] { forward(p, fakeWorkspace(), n); });
      INFO(e);
      CHECK(e.rfind(P + "no CUDA driver", 0) == 0);
      CHECK(e == P + why);
    }
  }
}
