// The simple-GLA operator's argument contract (validateForward): every
// message names the argument, and a valid call passes. Launch plans
// (planForward: the kernel compiled, its signature and the launch checked
// against it, no GPU) for dense, varlen, GVA and state shapes. The C ABI.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "gla_test_util.h"
#include "qla/gla_c.h"

using namespace glatest;

namespace {

std::string errorOf(const ForwardParams &p) {
  try {
    qla::gla::validateForward(p);
  } catch (const qla::gla::Error &e) {
    return e.what();
  }
  return "";
}

void expectError(const ForwardParams &p, const std::string &msg) {
  std::string e = errorOf(p);
  INFO("got: " << e);
  CHECK(e == "chunk_simple_gla: " + msg);
}

}  // namespace

TEST_CASE("GLA: valid calls pass", "[gla][validate]") {
  CHECK(errorOf(validParams()) == "");
  ForwardParams p = validParams();
  p.initial_state = stateRef(6, 2);
  p.final_state = stateRef(7, 2);
  p.scale = 0.5;
  CHECK(errorOf(p) == "");
  ForwardParams v = varlenParams({0, 0, 15, 64, 100}, DType::I64);
  const int64_t host[] = {0, 0, 15, 64, 100};
  v.cu_seqlens_host = host;
  v.initial_state = stateRef(6, 4);
  CHECK(errorOf(v) == "");
  Shape gva;
  gva.Hqk = 2;
  gva.H = 6;
  gva.K = 64;
  gva.V = 64;
  gva.dt = DType::F16;
  CHECK(errorOf(validParams(gva)) == "");
}

TEST_CASE("GLA: argument errors", "[gla][validate]") {
  ForwardParams p = validParams();
  p.q.dtype = DType::F32;
  expectError(p, "q has dtype f32; expected bf16 or f16");
  p = validParams();
  p.k.dtype = DType::F16;
  expectError(p, "k has dtype f16 but q has bf16");
  p = validParams();
  p.k.shape[1] = 99;
  expectError(p, "k has shape [2, 99, 4, 128] but q has shape [2, 100, 4, 128]");
  p = validParams();
  p.v.shape[1] = 99;
  expectError(p, "v has shape [2, 99, 4, 128] but q has shape [2, 100, 4, 128] (B and T must match)");
  Shape s;
  s.H = 6;
  p = validParams(s);
  expectError(p, "v has 6 heads, not a multiple of the 4 q/k heads");
  s = {};
  s.K = 96;
  expectError(validParams(s), "K = 96 is not supported (64 or 128)");
  s = {};
  s.V = 256;
  expectError(validParams(s), "V = 256 is not supported (64 or 128)");
  p = validParams();
  p.g.dtype = DType::BF16;
  expectError(p, "g has dtype bf16; expected f32");
  p = validParams();
  p.g.shape = {2, 100, 3};
  expectError(p, "g has shape [2, 100, 3]; expected [B, T, H] = [2, 100, 4]");
  p = validParams();
  p.o.dtype = DType::F16;
  expectError(p, "o has dtype f16; expected bf16 (the dtype of q)");
  p = validParams();
  p.o.shape[3] = 64;
  expectError(p, "o has shape [2, 100, 4, 64]; expected [B, T, H, V] = [2, 100, 4, 128]");
  p = validParams();
  p.initial_state = stateRef(6, 3);
  expectError(p, "initial_state has shape [3, 4, 128, 128]; expected [N, H, K, V] = [2, 4, 128, 128]");
  p = validParams();
  p.final_state = stateRef(7, 2);
  p.final_state->dtype = DType::BF16;
  expectError(p, "final_state has dtype bf16; expected f32");
  p = validParams();
  p.scale = INFINITY;
  expectError(p, "scale = inf is not finite");
  p = validParams();
  p.o.data = fakePtr(0);
  expectError(p, "o overlaps q in memory");
  p = validParams();
  p.q.strides = {100 * 4 * 128, 4 * 128, 128, 2};
  expectError(p, "q must be contiguous in its last dim (stride 1) with 16-byte aligned rows; got strides "
                 "[51200, 512, 128, 2] for shape [2, 100, 4, 128]");
}

TEST_CASE("GLA: cu_seqlens errors", "[gla][validate]") {
  ForwardParams p = varlenParams({0, 5, 100});
  p.cu_seqlens->dtype = DType::F32;
  expectError(p, "cu_seqlens has dtype f32; expected i32 or i64");
  p = varlenParams({0});
  p.q.shape[1] = p.k.shape[1] = p.v.shape[1] = p.o.shape[1] = p.g.shape[1] = 10;
  expectError(p, "cu_seqlens must have N + 1 >= 2 entries, got 1");
  p = validParams();
  p.cu_seqlens = TensorRef{fakePtr(8), DType::I32, {3}, {}};
  expectError(p, "cu_seqlens requires B = 1, got B = 2");
  p = varlenParams({0, 50, 100});
  const int64_t bad0[] = {1, 50, 100}, dec[] = {0, 60, 50}, end[] = {0, 50, 90};
  p.cu_seqlens_host = bad0;
  expectError(p, "cu_seqlens[0] must be 0, got 1");
  p.cu_seqlens_host = dec;
  expectError(p, "cu_seqlens must be non-decreasing: cu_seqlens[2] = 50 < cu_seqlens[1] = 60");
  p.cu_seqlens_host = end;
  expectError(p, "cu_seqlens must end at T = 100, got cu_seqlens[2] = 90");
  p = validParams();
  p.cu_seqlens_host = end;
  expectError(p, "cu_seqlens_host is given but cu_seqlens is not");
  p = varlenParams({0, 50, 100});
  p.final_state = stateRef(7, 2);
  p.final_state->shape[0] = 1;
  p.final_state->shape[1] = 4;
  expectError(p, "final_state has shape [1, 4, 128, 128]; expected [N, H, K, V] = [2, 4, 128, 128]");
}

TEST_CASE("GLA: launch plans against the compiled kernel", "[gla][plan]") {
  ForwardParams p = validParams();
  p.initial_state = stateRef(6, 2);
  p.final_state = stateRef(7, 2);
  qla::gla::LaunchPlan lp = qla::gla::planForward(p);
  CHECK(lp.spec.str() == "gla_fwd.qla -D CT=i32 -D DK=128 -D DT=bf16 -D DV=128 -D HAS_H0=1 -D STORE_HT=1 -D VARLEN=0");
  CHECK(lp.grid == std::array<int64_t, 3>{4, 4, 2});  // V / 32 slices, heads, sequences
  REQUIRE(lp.args.tensors.size() == 8);
  REQUIRE(lp.args.scalars.size() == 1);
  CHECK(lp.args.scalars[0] == Approx(1.0 / std::sqrt(128.0)));
  CHECK(lp.info.threads == 128);

  // Varlen with GVA: N sequences on grid z; absent states stood in for by o.
  Shape s;
  s.Hqk = 1;
  s.H = 3;
  s.V = 64;
  ForwardParams v = varlenParams({0, 1, 15, 64, 100, 411, 1500}, DType::I64, s);
  v.scale = 0.25;
  lp = qla::gla::planForward(v);
  CHECK(lp.grid == std::array<int64_t, 3>{2, 3, 6});
  CHECK(lp.args.scalars[0] == 0.25);
  CHECK(lp.args.tensors[5].data == v.o.data);  // H0 absent
  CHECK(lp.args.tensors[7].data == v.o.data);  // HT absent
  CHECK(lp.spec.defines.at("CT") == "i64");

  // T = 1 (a single, partial chunk).
  Shape one;
  one.B = 3;
  one.T = 1;
  one.K = 64;
  lp = qla::gla::planForward(validParams(one));
  CHECK(lp.grid == std::array<int64_t, 3>{4, 4, 3});

  // A TMA-incompatible q view is refused before launch (with the user's name).
  ForwardParams bad = validParams();
  bad.q.data = reinterpret_cast<char *>(bad.q.data) + 2;
  CHECK_THROWS_WITH(qla::gla::planForward(bad), Catch::Contains("chunk_simple_gla: q"));
}

TEST_CASE("GLA: C ABI", "[gla][capi]") {
  char err[512];
  CHECK(qla_gla_forward_validate(nullptr, err, sizeof err) == -1);
  CHECK(std::string(err) == "chunk_simple_gla: the argument struct is NULL");
  qla_gla_forward_args a;
  qla_gla_forward_args_init(&a);
  CHECK(a.abi_version == QLA_GLA_ABI_VERSION);
  CHECK(std::isnan(a.scale));
  auto put = [](qla_gla_tensor &t, int slot, int32_t dtype, std::vector<int64_t> shape) {
    t.data = fakePtr(slot);
    t.dtype = dtype;
    t.rank = int32_t(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) t.shape[i] = shape[i];
  };
  put(a.q, 0, QLA_GLA_BF16, {1, 64, 2, 64});
  put(a.k, 1, QLA_GLA_BF16, {1, 64, 2, 64});
  put(a.v, 2, QLA_GLA_BF16, {1, 64, 2, 128});
  put(a.g, 3, QLA_GLA_F32, {1, 64, 2});
  put(a.o, 5, QLA_GLA_BF16, {1, 64, 2, 128});
  CHECK(qla_gla_forward_validate(&a, err, sizeof err) == 0);
  CHECK(std::string(err).empty());
  a.g.dtype = QLA_GLA_F16;
  CHECK(qla_gla_forward_validate(&a, err, sizeof err) == -1);
  CHECK(std::string(err) == "chunk_simple_gla: g has dtype f16; expected f32");
  a.g.dtype = 9;
  CHECK(qla_gla_forward_validate(&a, err, sizeof err) == -1);
  CHECK(std::string(err) == "chunk_simple_gla: g has an unknown dtype code 9");
  a.g.dtype = QLA_GLA_F32;
  a.abi_version = 0;
  CHECK(qla_gla_forward_validate(&a, err, sizeof err) == -1);
  CHECK(std::string(err) == "chunk_simple_gla: ABI version 0 of the caller does not match the library's 1");
  qla_gla_forward_config c{QLA_GLA_F32, 64, 64, 0, QLA_GLA_I32, 0, 0};
  CHECK(qla_gla_forward_warmup(&c, err, sizeof err) == -1);
  CHECK(std::string(err) == "chunk_simple_gla: warmup: dtype f32 is not bf16 or f16");
}
