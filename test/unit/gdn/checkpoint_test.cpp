// Training mode: the forward's checkpoints (its segment start states) and
// the backward that takes them. Host-side checks only (fake addresses); the
// launch plans are in kernels_test.cpp, the gradients on the GPU in
// test/gpu/test_gdn_backward.py.
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "../../../kernels/gdn/src/Schedule.h"
#include "gdn_test_util.h"
#include "qla/gdn_c.h"

using namespace gdntest;
using qla::gdn::forwardCheckpointShape;

namespace {

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Two sequences of 1000 tokens (16 chunks each), 4/8 heads, K = V = 128.
ForwardParams call(int64_t segmentChunks) {
  Shape s;
  s.T = 1000;
  ForwardParams p = validParams(s);
  p.segment_chunks = segmentChunks;
  return p;
}

TensorRef ckpt(std::vector<int64_t> shape, DType dt = DType::F32) { return {fakePtr(17), dt, std::move(shape), {}}; }

}  // namespace

TEST_CASE("GDN forward: the checkpoints' shape", "[gdn][checkpoints]") {
  int64_t seg = -7;
  SECTION("no split: nothing to keep") {
    CHECK(forwardCheckpointShape(call(-1), &seg).empty());
    CHECK(seg == 0);
    // Segments as long as the sequences cut nothing.
    CHECK(forwardCheckpointShape(call(16), &seg).empty());
    CHECK(seg == 0);
  }
  SECTION("a split: one state per segment id, and its length") {
    for (int64_t S : {1, 3, 15}) {
      INFO("segments of " << S << " chunks");
      CHECK(forwardCheckpointShape(call(S), &seg) == std::vector<int64_t>{2 * cdiv(16, S), 8, 128, 128});
      CHECK(seg == S);
    }
  }
  SECTION("varlen: N + cdiv(chunks + N, S) ids") {
    std::vector<int64_t> offs = {0, 1, 700, 1000};
    ForwardParams p = varlenParams(offs);
    p.cu_seqlens_host = offs.data();
    p.segment_chunks = 3;
    CHECK(forwardCheckpointShape(p, &seg) == std::vector<int64_t>{3 + cdiv(16 + 3, 3), 8, 128, 128});
    CHECK(seg == 3);
  }
  SECTION("the cost model's choice: where the forward splits and the recompute would not, nothing") {
    // 16/32 heads, one sequence of 8192 tokens: the fused forward splits, the
    // six kernels' recompute (the two-kernel path's model) does not; the
    // fused gradient kernel's recompute (the fused forward's model) does.
    setenv("QLA_GDN_BWD_FUSED", "0", 1);
    Shape s;
    s.B = 1;
    s.T = 8192;
    s.Hqk = 16;
    s.Hv = 32;
    ForwardParams p = validParams(s);
    p.fused = 1;
    qla::gdn::MachineModel m;
    const qla::gdn::ForwardShape shape{1, 8192, 32, 128, 128, 0};
    REQUIRE(qla::gdn::forwardSchedule(shape, m, 0, 1).split);
    REQUIRE_FALSE(qla::gdn::forwardSchedule(shape, m, 0, -1).split);
    CHECK(forwardCheckpointShape(p, &seg).empty());
    CHECK(seg == 0);
    unsetenv("QLA_GDN_BWD_FUSED");
    CHECK(forwardCheckpointShape(p, &seg) ==
          std::vector<int64_t>{qla::gdn::forwardSchedule(shape, m, 0, 1).numIds, 32, 128, 128});
    CHECK(seg == qla::gdn::forwardSchedule(shape, m, 0, 1).segChunks);
  }
  SECTION("the cost model's own choice is reported as a length, or nothing") {
    Shape s;
    s.B = 1;
    s.T = 32768;
    s.Hqk = 2;
    s.Hv = 4;
    ForwardParams p = validParams(s);
    const std::vector<int64_t> shape = forwardCheckpointShape(p, &seg);
    if (shape.empty()) {
      CHECK(seg == 0);
    } else {
      CHECK(seg > 0);
      CHECK(shape == std::vector<int64_t>{cdiv(512, seg), 4, 128, 128});
    }
  }
  SECTION("the inputs are validated first; the checkpoints themselves are not looked at") {
    ForwardParams p = call(3);
    p.checkpoints = ckpt({1, 2, 3, 4}, DType::BF16);
    CHECK(forwardCheckpointShape(p).size() == 4);
    p.v.dtype = DType::F16;
    CHECK(errorOf([&] { forwardCheckpointShape(p); }) == P + "v has dtype f16 but q has bf16");
  }
}

TEST_CASE("GDN forward: checkpoints errors", "[gdn][checkpoints]") {
  auto err = [](const ForwardParams &p) { return errorOf([&] { qla::gdn::validateForward(p); }); };
  ForwardParams p = call(3);
  const std::vector<int64_t> good = {12, 8, 128, 128};
  p.checkpoints = ckpt(good);
  CHECK(err(p) == "<no error>");
  SECTION("no split") {
    ForwardParams q = call(-1);
    q.checkpoints = ckpt(good);
    CHECK(err(q) == P + "checkpoints are given but forwardCheckpointShape is empty for this call (the forward, "
                        "or the backward's recompute, does not split its sequences: the backward needs no "
                        "checkpoints)");
  }
  SECTION("dtype") {
    p.checkpoints = ckpt(good, DType::BF16);
    CHECK(err(p) == P + "checkpoints has dtype bf16; expected f32");
  }
  SECTION("shape") {
    p.checkpoints = ckpt({11, 8, 128, 128});
    CHECK(err(p) == P + "checkpoints has shape [11, 8, 128, 128]; expected forwardCheckpointShape = [12, 8, 128, 128]");
  }
  SECTION("strides") {
    p.checkpoints->strides = {8 * 128 * 128, 128 * 128, 1, 128};
    CHECK(err(p) == P + "checkpoints must be contiguous; got strides [131072, 16384, 1, 128]");
  }
  SECTION("overlap with an input") {
    p.checkpoints->data = p.q.data;
    CHECK(err(p).find("checkpoints overlaps q") != std::string::npos);
  }
}

TEST_CASE("GDN backward: checkpoints errors", "[gdn][checkpoints][backward]") {
  auto err = [](const BackwardParams &p) { return errorOf([&] { qla::gdn::validateBackward(p); }); };
  BackwardParams p = backwardOf(call(3));
  p.checkpoints = ckpt({12, 8, 128, 128});
  CHECK(err(p) == "<no error>");
  SECTION("the same workspace as the recompute's (six kernels)") {
    setenv("QLA_GDN_BWD_FUSED", "0", 1);
    const size_t with = qla::gdn::backwardWorkspaceBytes(p);
    p.checkpoints.reset();
    CHECK(qla::gdn::backwardWorkspaceBytes(p) == with);
    unsetenv("QLA_GDN_BWD_FUSED");
  }
  SECTION("the fused gradient kernel's segments: the model's, not the checkpoints' length") {
    unsetenv("QLA_GDN_BWD_FUSED");
    qla::gdn::MachineModel m;
    m.sms = qla::gdn::deviceSmCount();
    const qla::gdn::ForwardShape shape{p.q.shape[0], p.q.shape[1], p.v.shape[2], p.q.shape[3], p.v.shape[3], 0};
    const int64_t model = qla::gdn::fusedBackwardSchedule(shape, m, 0).segChunks;
    CHECK(qla::gdn::backwardStateGradientSegments(p) == model);
    CHECK(model != p.segment_chunks);
    // Without checkpoints segment_chunks forces them.
    p.checkpoints.reset();
    CHECK(qla::gdn::backwardStateGradientSegments(p) == p.segment_chunks);
  }
  SECTION("segment_chunks must be the forward's length") {
    for (int64_t S : {0, -1}) {
      p.segment_chunks = S;
      CHECK(err(p) == P + "checkpoints are given with segment_chunks = " + std::to_string(S) +
                          "; expected the forward's segment length (forwardCheckpointShape)");
    }
    p.segment_chunks = 16;
    CHECK(err(p) == P + "checkpoints are given but segments of segment_chunks = 16 chunks cut no sequence "
                        "(the forward kept no checkpoints for this shape)");
    p.segment_chunks = 4;  // 2 x 4 ids, not 12
    CHECK(err(p) == P + "checkpoints has shape [12, 8, 128, 128]; expected [8, 8, 128, 128] (the forward's, for "
                        "segments of 4 chunks)");
  }
  SECTION("dtype, strides") {
    p.checkpoints->dtype = DType::BF16;
    CHECK(err(p) == P + "checkpoints has dtype bf16; expected f32");
    p.checkpoints->dtype = DType::F32;
    p.checkpoints->strides = {1, 12, 12 * 8, 12 * 8 * 128};
    CHECK(err(p) == P + "checkpoints must be contiguous; got strides [1, 12, 96, 12288]");
  }
  SECTION("an output must not overlap them") {
    p.dq.data = p.checkpoints->data;
    CHECK(err(p).find("dq overlaps checkpoints") != std::string::npos);
  }
}

TEST_CASE("GDN C ABI: the checkpoints' shape and the checkpoints arguments", "[gdn][checkpoints][capi]") {
  qla_gdn_forward_args a;
  qla_gdn_forward_args_init(&a);
  CHECK(a.abi_version == 11);
  CHECK(a.initial_slots_host == nullptr);
  CHECK(a.checkpoints.data == nullptr);
  auto put = [](qla_gdn_tensor &t, int slot, int32_t dt, std::vector<int64_t> shape) {
    t.data = fakePtr(slot);
    t.dtype = dt;
    t.rank = int32_t(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) t.shape[i] = shape[i];
  };
  put(a.q, 0, QLA_GDN_BF16, {2, 1000, 4, 128});
  put(a.k, 1, QLA_GDN_BF16, {2, 1000, 4, 128});
  put(a.v, 2, QLA_GDN_BF16, {2, 1000, 8, 128});
  put(a.g, 3, QLA_GDN_F32, {2, 1000, 8});
  put(a.beta, 4, QLA_GDN_F32, {2, 1000, 8});
  put(a.o, 5, QLA_GDN_BF16, {2, 1000, 8, 128});
  a.segment_chunks = 3;
  int64_t shape[4] = {-1, -1, -1, -1}, seg = -1;
  char err[512] = {};
  REQUIRE(qla_gdn_forward_checkpoint_shape(&a, shape, &seg, err, sizeof err) == 0);
  CHECK(std::vector<int64_t>(shape, shape + 4) == std::vector<int64_t>{12, 8, 128, 128});
  CHECK(seg == 3);
  a.segment_chunks = -1;
  REQUIRE(qla_gdn_forward_checkpoint_shape(&a, shape, &seg, err, sizeof err) == 0);
  CHECK(std::vector<int64_t>(shape, shape + 4) == std::vector<int64_t>{0, 0, 0, 0});
  CHECK(seg == 0);
  CHECK(qla_gdn_forward_checkpoint_shape(&a, nullptr, &seg, err, sizeof err) == -1);
  CHECK(std::string(err) == P + "the output pointer `shape` or `segment_chunks` is NULL");
  // Given while the forward does not split: refused, naming them.
  put(a.checkpoints, 17, QLA_GDN_F32, {12, 8, 128, 128});
  size_t n = 0;
  CHECK(qla_gdn_forward_workspace_bytes(&a, &n, err, sizeof err) == -1);
  CHECK(std::string(err).find("checkpoints are given but forwardCheckpointShape is empty") != std::string::npos);
  a.segment_chunks = 3;
  CHECK(qla_gdn_forward_workspace_bytes(&a, &n, err, sizeof err) == 0);

  qla_gdn_backward_args b;
  qla_gdn_backward_args_init(&b);
  CHECK(b.checkpoints.data == nullptr);
  b.q = a.q, b.k = a.k, b.v = a.v, b.g = a.g, b.beta = a.beta;
  put(b.dout, 9, QLA_GDN_BF16, {2, 1000, 8, 128});
  put(b.dq, 11, QLA_GDN_BF16, {2, 1000, 4, 128});
  put(b.dk, 12, QLA_GDN_BF16, {2, 1000, 4, 128});
  put(b.dv, 13, QLA_GDN_BF16, {2, 1000, 8, 128});
  put(b.dg, 14, QLA_GDN_F32, {2, 1000, 8});
  put(b.dbeta, 15, QLA_GDN_F32, {2, 1000, 8});
  put(b.checkpoints, 17, QLA_GDN_F32, {12, 8, 128, 128});
  b.segment_chunks = 3;
  CHECK(qla_gdn_backward_workspace_bytes(&b, &n, err, sizeof err) == 0);
  b.segment_chunks = 0;
  CHECK(qla_gdn_backward_workspace_bytes(&b, &n, err, sizeof err) == -1);
  CHECK(std::string(err) == P + "checkpoints are given with segment_chunks = 0; expected the forward's segment "
                                "length (forwardCheckpointShape)");
}
