// The shared operator layer (kernels/common) on its own: what a kernel family
// gets from it, with the exact messages (no operator prefix: the family adds
// its own through rethrowAs). No GPU: fake device addresses; the registry is
// exercised with a stand-in compiler, and once with the real one (NVRTC).
#include "test/unit/TestSupport.h"
#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include "qla/op/CAbi.h"
#include "qla/op/Error.h"
#include "qla/op/KernelArgs.h"
#include "qla/op/KernelRegistry.h"
#include "qla/op/Launch.h"
#include "qla/op/Tensor.h"
#include "qla/op/Workspace.h"

using namespace qla;
using op::NamedTensor;
using op::TensorView;

namespace {

// A tensor argument with owned shape and strides; view() refers to them.
struct Tensor {
  void *data;
  DType dtype;
  std::vector<int64_t> shape, strides;
  TensorView view() const { return {data, dtype, shape, strides}; }
};

void *addr(uintptr_t a) { return reinterpret_cast<void *>(a); }

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const op::Error &e) {
    return e.what();
  } catch (const std::exception &e) {
    return std::string("<not an op::Error> ") + e.what();
  }
  return "<no error>";
}

struct PublicError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace

TEST_CASE("op: rethrowAs adds the operator's prefix to op::Error only", "[op]") {
  try {
    op::rethrowAs<PublicError>("my_op: ", [] { op::fail("x is bad"); });
    FAIL("no exception");
  } catch (const PublicError &e) {
    CHECK(std::string(e.what()) == "my_op: x is bad");
  }
  // Other exceptions pass unchanged; values are returned.
  CHECK_THROWS_AS(op::rethrowAs<PublicError>("my_op: ", [] { throw std::logic_error("other"); }), std::logic_error);
  CHECK(op::rethrowAs<PublicError>("my_op: ", [] { return 42; }) == 42);
  CHECK(op::dims({}) == "[]");
  CHECK(op::dims({2, 64, 4}) == "[2, 64, 4]");
}

TEST_CASE("op: C entry points return 0 or -1 with the message", "[op][cabi]") {
  char err[16];
  std::memset(err, 'x', sizeof err);
  CHECK(op::cCall(err, sizeof err, "my_op: ", [] {}) == 0);
  CHECK(std::string(err) == "");
  CHECK(op::cCall(err, sizeof err, "my_op: ", [] { throw std::runtime_error("a long message here"); }) == -1);
  CHECK(std::string(err) == "a long message ");  // truncated to the buffer, NUL-terminated
  CHECK(op::cCall(err, sizeof err, "my_op: ", [] { throw 7; }) == -1);
  CHECK(std::string(err) == "my_op: unknown ");
  CHECK(op::cCall(nullptr, 0, "my_op: ", [] { throw 7; }) == -1);  // no buffer: nothing written
  err[0] = 'x';
  op::setError(err, 0, "ignored");
  CHECK(err[0] == 'x');
  op::setError(err, 1, "ignored");
  CHECK(err[0] == 0);
}

TEST_CASE("op: workspace regions are aligned, in order, then the dummy", "[op][workspace]") {
  op::WorkspacePlanner ws;
  CHECK(ws.add(1000) == 0);
  CHECK(ws.add(0) == 1024);  // an empty region takes no bytes
  CHECK(ws.add(256) == 1024);
  CHECK(ws.add(1) == 1280);
  CHECK(ws.total() == 1536);
  CHECK(ws.addDummy() == 1536);
  CHECK(ws.total() == 1536 + op::kWorkspaceDummyBytes);

  op::WorkspacePlanner w16(16);
  CHECK(w16.add(3) == 0);
  CHECK(w16.add(17) == 16);
  CHECK(w16.addDummy() == 48);
  CHECK(w16.total() == 48 + 256);

  op::WorkspacePlanner none;
  CHECK(none.addDummy() == 0);
  CHECK(none.total() == 256);

  // Two groups of regions sharing bytes: the second starts where the first
  // did, the total and the dummy follow the longer of the two.
  op::WorkspacePlanner sh;
  CHECK(sh.add(100) == 0);
  const size_t m = sh.mark();
  CHECK(m == 256);
  CHECK(sh.add(1000) == 256);  // the first group: [256, 1280)
  sh.rewind(m);
  CHECK(sh.add(300) == 256);  // the second: [256, 768)
  CHECK(sh.total() == 1280);
  CHECK(sh.addDummy() == 1280);
  CHECK(sh.total() == 1280 + op::kWorkspaceDummyBytes);
  CHECK(errorOf([&] { sh.rewind(1 << 20); }) == "WorkspacePlanner::rewind past the end (1048576 > 1536)");
}

TEST_CASE("op: the workspace check", "[op][workspace]") {
  Tensor x{addr(0x10000), DType::F32, {64}, {}};  // bytes [0x10000, 0x10100)
  std::vector<NamedTensor> args = {{"x", x.view(), false}};
  CHECK(errorOf([&] { op::checkWorkspace(nullptr, 0, 512, args); }) ==
        "workspace is a null pointer (it needs 512 bytes)");
  CHECK(errorOf([&] { op::checkWorkspace(addr(0x20010), 1024, 512, args); }) ==
        "workspace " + op::ptrText(addr(0x20010)) + " is not 256-byte aligned");
  CHECK(errorOf([&] { op::checkWorkspace(addr(0x20000), 511, 512, args); }) == "workspace has 511 bytes, needs 512");
  CHECK(errorOf([&] { op::checkWorkspace(addr(0xff00), 512, 512, args); }) == "workspace overlaps x in memory");
  CHECK(errorOf([&] { op::checkWorkspace(addr(0x10100), 512, 512, args); }) == "<no error>");
  CHECK(errorOf([&] { op::checkWorkspace(addr(0xfe00), 512, 512, args); }) == "<no error>");
}

TEST_CASE("op: tensor argument checks", "[op][args]") {
  Tensor t{addr(0x1000), DType::BF16, {2, 8, 64}, {}};
  CHECK(errorOf([&] { op::checkBasic("t", t.view(), 3, "[B, T, D]"); }) == "<no error>");
  CHECK(errorOf([&] { op::checkBasic("t", t.view(), 2, "[T, D]"); }) ==
        "t must have 2 dims [T, D], got shape [2, 8, 64]");
  CHECK(errorOf([&] { op::checkBasic("t", t.view(), 1, "[N]"); }) == "t must have 1 dim [N], got shape [2, 8, 64]");
  Tensor s = t;
  s.strides = {1, 1};
  CHECK(errorOf([&] { op::checkBasic("t", s.view(), 3, "[B, T, D]"); }) == "t has 2 strides for 3 dims");
  Tensor n = t;
  n.data = nullptr;
  CHECK(errorOf([&] { op::checkBasic("t", n.view(), 3, "[B, T, D]"); }) == "t is a null pointer");
  Tensor e = t;
  e.shape = {2, 0, 64};
  CHECK(errorOf([&] { op::checkBasic("t", e.view(), 3, "[B, T, D]"); }) ==
        "t has an empty or negative dim: shape [2, 0, 64]");
  e.shape = {2, int64_t(1) << 31, 64};
  CHECK(errorOf([&] { op::checkBasic("t", e.view(), 3, "[B, T, D]"); }) ==
        "t dim 1 = 2147483648 is too large (at most 2^31 - 1)");
  e.shape = {1 << 20, 1 << 20, 64};
  CHECK(errorOf([&] { op::checkBasic("t", e.view(), 3, "[B, T, D]"); }) ==
        "t is too large: shape [1048576, 1048576, 64]");

  // Layout: stride-1 last dim; 16-byte rows and pointer with rowAlign16.
  CHECK(errorOf([&] { op::checkLayout("t", t.view(), true); }) == "<no error>");
  Tensor r = t;
  r.strides = {8 * 68, 68, 1};  // 136-byte rows
  CHECK(errorOf([&] { op::checkLayout("t", r.view(), true); }) ==
        "t must be contiguous in its last dim (stride 1) with 16-byte aligned rows; got strides [544, 68, 1] "
        "for shape [2, 8, 64]");
  CHECK(errorOf([&] { op::checkLayout("t", r.view(), false); }) == "<no error>");
  r.strides = {512, 64, 2};
  CHECK(errorOf([&] { op::checkLayout("t", r.view(), false); }) ==
        "t must be contiguous in its last dim (stride 1) with positive strides; got strides [512, 64, 2] for "
        "shape [2, 8, 64]");
  Tensor m = t;
  m.data = addr(0x1008);
  CHECK(errorOf([&] { op::checkLayout("t", m.view(), true); }) ==
        "t's data pointer " + op::ptrText(m.data) + " is not 16-byte aligned");
  m.data = addr(0x1001);
  CHECK(errorOf([&] { op::checkLayout("t", m.view(), false); }) ==
        "t's data pointer " + op::ptrText(m.data) + " is not 2-byte aligned");

  // Byte spans and self-overlap of outputs.
  auto [lo, hi] = op::byteSpan(t.view());
  CHECK(lo == 0x1000);
  CHECK(hi == 0x1000 + 2 * 8 * 64 * 2);
  Tensor b = t;
  b.strides = {0, 64, 1};  // a broadcast over B
  CHECK(errorOf([&] { op::checkNoSelfOverlap("o", b.view()); }) ==
        "o has overlapping elements (strides [0, 64, 1] for shape [2, 8, 64]); an output must not be a broadcast "
        "or overlapping view");
  b.strides = {0, 64, 1};
  b.shape = {1, 8, 64};  // extent 1: its stride is never used
  CHECK(errorOf([&] { op::checkNoSelfOverlap("o", b.view()); }) == "<no error>");
  CHECK(errorOf([&] { op::checkNoSelfOverlap("o", t.view()); }) == "<no error>");
}

TEST_CASE("op: outputs must not overlap other arguments", "[op][args]") {
  Tensor x{addr(0x1000), DType::F32, {64}, {}};  // [0x1000, 0x1100)
  Tensor y{addr(0x1100), DType::F32, {64}, {}};  // [0x1100, 0x1200)
  Tensor z{addr(0x10fc), DType::F32, {2}, {}};   // [0x10fc, 0x1104): overlaps both
  CHECK(errorOf([&] { op::checkOutputsDisjoint({{"x", x.view(), false}, {"y", y.view(), true}}); }) == "<no error>");
  CHECK(errorOf([&] { op::checkOutputsDisjoint({{"x", x.view(), false}, {"z", z.view(), false}}); }) ==
        "<no error>");  // inputs may alias
  CHECK(errorOf([&] {
          op::checkOutputsDisjoint({{"x", x.view(), false}, {"y", y.view(), true}, {"z", z.view(), true}});
        }) == "y overlaps z in memory");
  CHECK(errorOf([&] { op::checkOutputsDisjoint({{"z", z.view(), true}, {"x", x.view(), false}}); }) ==
        "z overlaps x in memory");
}

TEST_CASE("op: launch strides of extent-1 dims", "[op][launch]") {
  Tensor q{addr(0x1000), DType::BF16, {1, 8, 1, 64}, {3, 64, 5, 1}};
  CHECK(op::launchStrides(q.view()) == std::vector<int64_t>{512, 64, 64, 1});
  Tensor v{addr(0x1000), DType::F32, {1, 4}, {3, 1}};  // 16-byte unit: 4 f32
  CHECK(op::launchStrides(v.view()) == std::vector<int64_t>{4, 1});
  rt::TensorArg a = op::launchArg(q.view());
  CHECK(a.data == q.data);
  CHECK(a.shape == q.shape);
  CHECK(a.strides == std::vector<int64_t>{512, 64, 64, 1});
  rt::TensorArg c = op::contiguousArg(addr(0x2000), {3, 4});
  CHECK(c.strides.empty());
  CHECK(c.shape == std::vector<int64_t>{3, 4});
}

TEST_CASE("op: signature and launch checks against a kernel's info", "[op][launch]") {
  KernelInfo info;
  info.tensors = {{"X", DType::BF16, {"R", "D"}, false}, {"Y", DType::F32, {"R"}, true}};
  info.scalars = {{"eps", DType::F32}};
  ParamInfo tmap;
  tmap.kind = ParamInfo::Kind::TensorMap;
  tmap.index = 0;
  ParamInfo ptr;
  ptr.kind = ParamInfo::Kind::Pointer;
  ptr.index = 1;
  info.params = {tmap, ptr};
  op::KernelSpec spec{"x.qla", {{"D", "64"}}};
  const std::string doc = "kernels/x/KERNELS.md";
  CHECK(errorOf([&] { op::checkSignature(spec, info, {{"X", "Y"}, {DType::BF16, DType::F32}, 1}, doc); }) ==
        "<no error>");
  const std::string pre = "internal error: x.qla does not have the signature the operator launches (";
  CHECK(errorOf([&] { op::checkSignature(spec, info, {{"X"}, {DType::BF16}, 1}, doc); }) ==
        pre + "2 tensor arguments, expected 1; see kernels/x/KERNELS.md)");
  CHECK(errorOf([&] { op::checkSignature(spec, info, {{"X", "Z"}, {DType::BF16, DType::F32}, 1}, doc); }) ==
        pre + "tensor argument 1 is 'Y', expected 'Z'; see kernels/x/KERNELS.md)");
  CHECK(errorOf([&] { op::checkSignature(spec, info, {{"X", "Y"}, {DType::F16, DType::F32}, 1}, doc); }) ==
        pre + "tensor 'X' has dtype bf16, expected f16; see kernels/x/KERNELS.md)");
  CHECK(errorOf([&] { op::checkSignature(spec, info, {{"X", "Y"}, {DType::BF16, DType::F32}, 0}, doc); }) ==
        pre + "1 scalar arguments, expected 0; see kernels/x/KERNELS.md)");

  const op::ArgNames names = {{"X", "x"}};
  rt::LaunchArgs args;
  args.tensors = {{addr(0x1000), {4, 64}, {}}, {addr(0x2000), {4}, {}}};
  CHECK(errorOf([&] { op::checkAgainstKernel(spec, info, args, names); }) == "<no error>");
  args.tensors[0].strides = {68, 1};
  CHECK(errorOf([&] { op::checkAgainstKernel(spec, info, args, names); }) ==
        "x must be contiguous in its last dim (stride 1) with 16-byte aligned rows (x.qla reads it with TMA); "
        "got strides [68, 1] for shape [4, 64]");
  args.tensors[0] = {addr(0x1008), {4, 64}, {}};
  CHECK(errorOf([&] { op::checkAgainstKernel(spec, info, args, names); }) ==
        "x's data pointer " + op::ptrText(addr(0x1008)) + " is not 16-byte aligned (x.qla reads it with TMA)");
  args.tensors[0] = {addr(0x1000), {4, 64}, {}};
  args.tensors[1].strides = {2};  // Y is passed by pointer without stride parameters: dense only
  CHECK(errorOf([&] { op::checkAgainstKernel(spec, info, args, names); }) ==
        "Y must be contiguous (strides [1], x.qla indexes it densely); got strides [2] for shape [4]");
}

TEST_CASE("op: the kernel registry memoizes slots and compiles once", "[op][registry]") {
  std::map<std::string, std::string> sources = {{"a.qla", "source of a"}};
  std::atomic<int> compiles{0};
  std::vector<std::string> seen;  // filename and defines the compiler got
  bool lockedDuringCompile = false;
  op::KernelRegistry reg(
      "kernels/x/",
      [&](const std::string &f) -> const std::string * {
        auto it = sources.find(f);
        return it == sources.end() ? nullptr : &it->second;
      },
      [&](const std::string &src, const std::string &file, const JitOptions &opt) {
        ++compiles;
        lockedDuringCompile = !op::compileMutex().try_lock();
        if (!lockedDuringCompile) op::compileMutex().unlock();
        std::string d;
        for (auto &[k, v] : opt.defines) d += " " + k + "=" + v;
        seen.push_back(file + ":" + src + ":" + d);
        if (opt.defines.count("BAD")) throw std::runtime_error("x.qla:1:1: error: no");
        return JitKernel{};
      });
  CHECK(reg.sourceDir() == "kernels/x/");

  op::KernelSpec a1{"a.qla", {{"N", "1"}}}, a2{"a.qla", {{"N", "2"}}};
  op::KernelSlot &s1 = reg.slot(a1);
  CHECK(&reg.slot(a1) == &s1);
  CHECK(&reg.slot(op::KernelSpec{"a.qla", {{"N", "1"}}}) == &s1);
  op::KernelSlot &s2 = reg.slot(a2);
  CHECK(&s2 != &s1);
  CHECK(s1.spec.str() == "a.qla -D N=1");
  CHECK(op::specText("a.qla", {{"B", "x"}, {"A", "y"}}) == "a.qla -D A=y -D B=x");
  CHECK(compiles == 0);  // slots compile lazily

  const JitKernel &k1 = reg.compiled(s1);
  CHECK(&reg.compiled(s1) == &k1);
  CHECK(compiles == 1);
  CHECK(lockedDuringCompile);
  CHECK(seen.back() == "kernels/x/a.qla:source of a: N=1");
  reg.compiled(s2);
  CHECK(compiles == 2);

  // Concurrent first use: one compile.
  op::KernelSlot &s3 = reg.slot(op::KernelSpec{"a.qla", {{"N", "3"}}});
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) threads.emplace_back([&] { reg.compiled(s3); });
  for (auto &t : threads) t.join();
  CHECK(compiles == 3);

  // A file the build did not embed; a failed compile (not memoized: it throws again).
  op::KernelSlot &missing = reg.slot(op::KernelSpec{"b.qla", {}});
  CHECK(errorOf([&] { reg.compiled(missing); }) ==
        "the kernel b.qla was not embedded in this build of QLA (kernels/x/b.qla missing at build time)");
  op::KernelSlot &bad = reg.slot(op::KernelSpec{"a.qla", {{"BAD", "1"}}});
  CHECK(errorOf([&] { reg.compiled(bad); }) == "compiling a.qla -D BAD=1 failed:\nx.qla:1:1: error: no");
  CHECK(errorOf([&] { reg.compiled(bad); }) == "compiling a.qla -D BAD=1 failed:\nx.qla:1:1: error: no");
  CHECK(compiles == 5);
}

// A second family's view of the layer, end to end without a GPU: a real kernel
// compiled through the registry, its signature checked, its launch planned.
TEST_CASE("op: a small kernel family through the registry and the launch checks", "[op][registry][nvrtc]") {
  static const std::string rmsnorm = R"(
kernel rmsnorm<BR = 64, D = 128, EPS = 1e-6>(X: bf16[R, 128], W: bf16[128], Y: out bf16[R, 128])
  grid(cdiv(R, BR)) threads(128)
{
  let r0 = block.x * BR
  frag x: f32[BR, D]
  frag w: f32[D]
  copy X[r0 :+ BR, 0 :+ D] -> x
  copy W[0 :+ D] -> w
  frag sq: f32[BR, D]
  for (i, j) in parallel(BR, D) { sq[i, j] = x[i, j] * x[i, j] }
  frag ss: f32[BR] = reduce(+, sq, dim = 1)
  for (i, j) in parallel(BR, D) { x[i, j] = x[i, j] * rsqrt(ss[i] / f32(D) + EPS) * w[j] }
  copy x -> Y[r0 :+ BR, 0 :+ D]
}
)";
  qla::test::TempDir dir("qla-op-test");
  rt::KernelCache cache(dir.path);
  op::KernelRegistry reg(
      "examples/", [](const std::string &f) { return f == "rmsnorm.qla" ? &rmsnorm : nullptr; },
      [&](const std::string &src, const std::string &file, const JitOptions &opt) {
        JitOptions o = opt;
        o.cache = &cache;
        return jitCompileString(src, file, o);
      });
  op::KernelSlot &s = reg.slot(op::KernelSpec{"rmsnorm.qla", {{"EPS", "1e-5"}}});
  const KernelInfo &info = reg.compiled(s).info();
  CHECK(errorOf([&] {
          op::checkSignature(s.spec, info, {{"X", "W", "Y"}, {DType::BF16, DType::BF16, DType::BF16}, 0},
                             "examples/README.md");
        }) == "<no error>");

  Tensor x{addr(0x100000), DType::BF16, {100, 128}, {}}, w{addr(0x200000), DType::BF16, {128}, {}},
      y{addr(0x300000), DType::BF16, {100, 128}, {}};
  rt::LaunchArgs args;
  args.tensors = {op::launchArg(x.view()), op::launchArg(w.view()), op::launchArg(y.view())};
  CHECK(errorOf([&] { op::checkAgainstKernel(s.spec, info, args, {{"X", "x"}, {"W", "w"}, {"Y", "y"}}); }) ==
        "<no error>");
  CHECK(op::launchGrid(info, args) == std::array<int64_t, 3>{2, 1, 1});  // cdiv(100, 64)
  args.tensors.pop_back();
  CHECK_THROWS_AS(op::launchGrid(info, args), op::Error);  // the runtime's rt::Error, as op::Error
}

TEST_CASE("op: generated kernel headers' helpers: dtype constants and defines", "[op][args]") {
  const std::map<std::string, std::string> d = {{"DT", "f16"}, {"BAD", "f8"}};
  CHECK(op::dtypeOf(d, "DT", DType::BF16) == DType::F16);
  CHECK(op::dtypeOf(d, "BT", DType::F32) == DType::F32);  // not defined: the default
  CHECK(errorOf([&] { op::dtypeOf(d, "BAD", DType::F32); }) ==
        "internal error: the dtype constant BAD = 'f8' names no dtype");
  const std::vector<std::string> constants = {"DT", "DK"};
  CHECK(errorOf([&] { op::checkDefines(op::KernelSpec{"x.qla", {{"DT", "bf16"}, {"DK", "64"}}}, constants); }) ==
        "<no error>");
  CHECK(errorOf([&] { op::checkDefines(op::KernelSpec{"x.qla", {{"DT", "bf16"}, {"SAVE_VN", "0"}}}, constants); }) ==
        "internal error: x.qla -D DT=bf16 -D SAVE_VN=0: x.qla has no specialization constant SAVE_VN");
}
