// Driver-side checks that need no GPU: availability reporting, dim binding,
// launch argument validation and tensor-map argument validation.
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>

#include "qla/runtime/Driver.h"

using namespace qla;
using namespace qla::rt;

namespace {

// A 16-byte aligned fake device address: never dereferenced on the host.
void *fakePtr(uintptr_t offset = 0) { return reinterpret_cast<void *>(uintptr_t(0x7f0000000000) + offset); }

KernelInfo gemmInfo() {
  KernelInfo k;
  k.name = "gemm";
  k.tensors = {{"A", DType::BF16, {"M", "K"}, false},
               {"B", DType::BF16, {"N", "K"}, false},
               {"C", DType::F32, {"M", "N"}, true}};
  k.scalars = {{"alpha", DType::F32}, {"split", DType::I32}};
  k.dimSymbols = {"M", "N", "K"};
  ParamInfo a;
  a.kind = ParamInfo::Kind::TensorMap;
  a.index = 0;
  a.box = {128, 64};
  a.swizzle = Swizzle::B128;
  ParamInfo b = a;
  b.index = 1;
  ParamInfo c;
  c.kind = ParamInfo::Kind::Pointer;
  c.index = 2;
  ParamInfo cs;
  cs.kind = ParamInfo::Kind::Stride;
  cs.index = 2;
  cs.dim = 0;
  ParamInfo dm;
  dm.kind = ParamInfo::Kind::Dim;
  dm.index = 0;
  ParamInfo s0;
  s0.kind = ParamInfo::Kind::Scalar;
  ParamInfo s1 = s0;
  s1.index = 1;
  k.params = {a, b, c, cs, dm, s0, s1};
  k.grid = {"cdiv(N,128)", "cdiv(M,128)", "1"};
  k.threads = 384;
  return k;
}

LaunchArgs gemmArgs(int64_t M, int64_t N, int64_t K) {
  LaunchArgs a;
  a.tensors = {{fakePtr(), {M, K}, {}}, {fakePtr(1 << 20), {N, K}, {}}, {fakePtr(2 << 20), {M, N}, {}}};
  a.scalars = {1.0, 2};
  return a;
}

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  FAIL("expected qla::rt::Error");
  return {};
}

bool contains(const std::string &s, const std::string &sub) { return s.find(sub) != std::string::npos; }

}  // namespace

TEST_CASE("gpuAvailable reports why not, and never throws", "[runtime][driver]") {
  std::string why = "unset";
  bool gpu = false;
  REQUIRE_NOTHROW(gpu = gpuAvailable(&why));
  REQUIRE_NOTHROW(gpuAvailable(nullptr));
  if (gpu) {
    CHECK(why.empty());
    std::string arch = deviceArch();
    CHECK_FALSE(arch.empty());
    CHECK(arch.rfind("sm_", 0) == 0);
  } else {
    INFO(why);
    CHECK_FALSE(why.empty());
    CHECK(why != "unset");
    CHECK((contains(why, "driver") || contains(why, "device") || contains(why, "cuInit")));
    // Everything that needs the driver fails with an Error, not a crash.
    CHECK_THROWS_AS(deviceArch(), Error);
    CHECK_THROWS_AS(LoadedKernel("\x7f" "ELF....", gemmInfo()), Error);
  }
}

TEST_CASE("bindDims derives one value per dim symbol", "[runtime][driver]") {
  KernelInfo k = gemmInfo();
  auto dims = LoadedKernel::bindDimsFor(k, gemmArgs(1000, 256, 64));
  CHECK(dims == std::vector<int64_t>{1000, 256, 64});
  CHECK(LoadedKernel::launchGridFor(k, gemmArgs(1000, 256, 64)) == std::array<int64_t, 3>{2, 8, 1});

  // Conflicting values name the symbol and both tensors.
  LaunchArgs bad = gemmArgs(1000, 256, 64);
  bad.tensors[1].shape = {256, 32};
  CHECK(errorOf([&] { LoadedKernel::bindDimsFor(k, bad); }) ==
        "kernel 'gemm': dim 'K' is 64 for tensor A but 32 for tensor B");

  bad = gemmArgs(1000, 256, 64);
  bad.tensors[2].shape = {1000, 256, 1};
  std::string e = errorOf([&] { LoadedKernel::bindDimsFor(k, bad); });
  CHECK(contains(e, "kernel 'gemm'"));
  CHECK(contains(e, "tensor 'C' has rank 3"));
  CHECK(contains(e, "expects rank 2 (M,N)"));

  bad = gemmArgs(1000, 256, 64);
  bad.tensors.pop_back();
  CHECK(contains(errorOf([&] { LoadedKernel::bindDimsFor(k, bad); }), "expected 3 tensor argument(s), got 2"));

  bad = gemmArgs(1000, 256, 64);
  bad.tensors[0].strides = {64};
  CHECK(contains(errorOf([&] { LoadedKernel::bindDimsFor(k, bad); }), "tensor 'A' has 1 strides for rank 2"));

  bad = gemmArgs(1000, 256, 64);
  bad.tensors[0].shape = {-1, 64};
  CHECK(contains(errorOf([&] { LoadedKernel::bindDimsFor(k, bad); }), "negative extent"));

  // Literal dims must match exactly.
  KernelInfo lit = k;
  lit.tensors[1].dims = {"N", "64"};
  CHECK(LoadedKernel::bindDimsFor(lit, gemmArgs(10, 20, 64)) == std::vector<int64_t>{10, 20, 64});
  CHECK(contains(errorOf([&] { LoadedKernel::bindDimsFor(lit, gemmArgs(10, 20, 32)); }),
                 "tensor 'B' dim 1 must be 64 but is 32"));

  // A symbol no tensor determines.
  KernelInfo extra = k;
  extra.dimSymbols.push_back("L");
  CHECK(contains(errorOf([&] { LoadedKernel::bindDimsFor(extra, gemmArgs(1, 2, 3)); }),
                 "dim 'L' is not the extent of any tensor"));
}

TEST_CASE("launch argument validation without a GPU", "[runtime][driver]") {
  KernelInfo k = gemmInfo();

  LaunchArgs a = gemmArgs(128, 128, 64);
  a.scalars = {1.0};
  CHECK(contains(errorOf([&] { LoadedKernel::launchGridFor(k, a); }), "expected 2 scalar argument(s), got 1"));
  a.scalars = {1.0, 2.5};
  CHECK(contains(errorOf([&] { LoadedKernel::launchGridFor(k, a); }), "scalar 'split' (i32) cannot hold"));
  a.scalars = {1.0, 3e9};
  CHECK(contains(errorOf([&] { LoadedKernel::launchGridFor(k, a); }), "scalar 'split'"));
  a.scalars = {1.5, -7};
  CHECK_NOTHROW(LoadedKernel::launchGridFor(k, a));

  // A zero grid dim means "nothing to do", not an error.
  CHECK(LoadedKernel::launchGridFor(k, gemmArgs(0, 128, 64))[1] == 0);

  // Grid errors name the kernel and the expression.
  KernelInfo g = k;
  g.grid[2] = "K / (M - M)";
  std::string e = errorOf([&] { LoadedKernel::launchGridFor(g, gemmArgs(128, 128, 64)); });
  CHECK(contains(e, "kernel 'gemm'"));
  CHECK(contains(e, "grid expression 'K / (M - M)'"));
  CHECK(contains(e, "division by zero"));
  g.grid[2] = "0 - M";
  CHECK(contains(errorOf([&] { LoadedKernel::launchGridFor(g, gemmArgs(128, 128, 64)); }), "out of range"));
  g.grid[1] = "M * 1000";
  g.grid[2] = "1";
  CHECK(contains(errorOf([&] { LoadedKernel::launchGridFor(g, gemmArgs(128, 128, 64)); }), "grid dim 1"));

  // Cluster dims must divide the grid.
  KernelInfo c = k;
  c.cluster = {2, 1, 1};
  CHECK_NOTHROW(LoadedKernel::launchGridFor(c, gemmArgs(128, 256, 64)));
  CHECK(contains(errorOf([&] { LoadedKernel::launchGridFor(c, gemmArgs(128, 384, 64)); }),
                 "not a multiple of the cluster dim 2"));

  // A pointer-passed tensor must be contiguous in dims without a Stride param.
  LaunchArgs s = gemmArgs(128, 128, 64);
  s.tensors[2].strides = {256, 1};  // row stride is passed: fine
  CHECK_NOTHROW(LoadedKernel::launchGridFor(k, s));
  s.tensors[2].strides = {128, 2};  // inner stride is not
  CHECK(contains(errorOf([&] { LoadedKernel::launchGridFor(k, s); }), "tensor 'C' must be contiguous"));

  // Inconsistent KernelInfo built in code.
  KernelInfo broken = k;
  broken.params[2].index = 9;
  CHECK(contains(errorOf([&] { LoadedKernel::launchGridFor(broken, gemmArgs(128, 128, 64)); }),
                 "refers to a missing argument"));
}

TEST_CASE("effectiveStrides is row-major when strides are empty", "[runtime][driver]") {
  CHECK(effectiveStrides(TensorArg{nullptr, {4, 5, 6}, {}}) == std::vector<int64_t>{30, 6, 1});
  CHECK(effectiveStrides(TensorArg{nullptr, {4, 0, 6}, {}}) == std::vector<int64_t>{6, 6, 1});
  CHECK(effectiveStrides(TensorArg{nullptr, {4, 5}, {7, 1}}) == std::vector<int64_t>{7, 1});
  CHECK(effectiveStrides(TensorArg{nullptr, {}, {}}).empty());
}

TEST_CASE("encodeTensorMap validates its arguments before the driver", "[runtime][driver][tma]") {
  auto err = [](DType dt, void *p, std::vector<int64_t> shape, std::vector<int64_t> strides,
                std::vector<uint32_t> box, Swizzle sw) {
    return errorOf([&] { encodeTensorMap("tensor 'A'", dt, p, shape, strides, box, sw); });
  };
  const auto B = DType::BF16;
  std::string e;
  e = err(B, fakePtr(), {}, {}, {}, Swizzle::None);
  CHECK(contains(e, "tensor map for tensor 'A'"));
  CHECK(contains(e, "rank 0 is not in 1..5"));
  CHECK(contains(err(B, fakePtr(), {2, 2, 2, 2, 2, 2}, {}, {1, 1, 1, 1, 1, 8}, Swizzle::None), "rank 6"));
  CHECK(contains(err(B, fakePtr(), {64, 64}, {64}, {64, 64}, Swizzle::None), "strides"));
  CHECK(contains(err(B, fakePtr(), {64, 64}, {}, {64}, Swizzle::None), "box has 1 extents"));
  CHECK(contains(err(B, fakePtr(), {64, 0}, {}, {64, 64}, Swizzle::None), "extent 0"));
  CHECK(contains(err(B, fakePtr(), {64, 64}, {1, 64}, {64, 64}, Swizzle::None), "innermost stride is 64"));
  CHECK(contains(err(B, nullptr, {64, 64}, {}, {64, 64}, Swizzle::None), "null data pointer"));
  CHECK(contains(err(B, fakePtr(8), {64, 64}, {}, {64, 64}, Swizzle::None), "not 16-byte aligned"));
  // 12 bf16 = 24 bytes per row: not a multiple of 16.
  CHECK(contains(err(B, fakePtr(), {64, 12}, {}, {64, 8}, Swizzle::None), "24 bytes, TMA needs a multiple of 16"));
  CHECK(contains(err(B, fakePtr(), {64, 64}, {-64, 1}, {64, 64}, Swizzle::None), "out of range"));
  CHECK(contains(err(B, fakePtr(), {512, 512}, {}, {257, 64}, Swizzle::None), "257"));
  CHECK(contains(err(B, fakePtr(), {512, 512}, {}, {0, 64}, Swizzle::None), "1..256"));
  // Inner box bytes: a multiple of 16, and within the swizzle span.
  CHECK(contains(err(B, fakePtr(), {512, 512}, {}, {64, 4}, Swizzle::None), "multiple of 16 bytes"));
  CHECK(contains(err(B, fakePtr(), {512, 512}, {}, {64, 128}, Swizzle::B128), "exceeds the 128-byte swizzle span"));
  CHECK(contains(err(B, fakePtr(), {512, 512}, {}, {64, 64}, Swizzle::B64), "64-byte swizzle span"));
  CHECK(contains(err(DType::F32, fakePtr(), {512, 512}, {}, {64, 16}, Swizzle::B32), "32-byte swizzle span"));

  // Valid arguments reach the driver: without one that is a driver Error, with
  // one (a fake pointer is fine for encoding) it succeeds.
  std::string why;
  if (!gpuAvailable(&why)) {
    e = err(B, fakePtr(), {512, 512}, {}, {128, 64}, Swizzle::B128);
    CHECK(e == why);
  } else {
    CHECK_NOTHROW(encodeTensorMap("A", B, fakePtr(), {512, 512}, {}, {128, 64}, Swizzle::B128));
    CHECK_NOTHROW(encodeTensorMap("A", DType::F32, fakePtr(), {3, 100, 32}, {6400, 64, 1}, {1, 64, 32},
                                  Swizzle::B128));
  }
}
