// The simple-GLA forward operator: the contract of its arguments, the kernel
// specializations, the launch plan and the launch, on the shared operator
// layer of kernels/common (qla::op). See qla/gla.h, kernels/gla/KERNELS.md
// and docs/tutorial.md.
#include "qla/kernels/gla_fwd.h"
#include "qla/gla.h"

#include <cmath>
#include <mutex>
#include <sstream>

#include "qla/jit.h"
#include "qla/op/Device.h"
#include "qla/op/Error.h"
#include "qla/op/KernelRegistry.h"
#include "qla/op/Launch.h"
#include "qla/op/Tensor.h"

namespace qla::gla {
namespace detail {
const std::vector<std::pair<std::string, std::string>> &embeddedKernelTable();  // generated

constexpr const char *kOp = "chunk_simple_gla: ";
constexpr const char *kContractDoc = "kernels/gla/KERNELS.md";
constexpr const char *kForwardFile = "gla_fwd.qla";
constexpr const char *kSourceDir = "kernels/gla/";  // the compiler sees kernels/gla/<file>

using op::dims;

[[noreturn]] void fail(const std::string &msg) { throw Error(kOp + msg); }

template <class F>
decltype(auto) guarded(F &&f) {
  return op::rethrowAs<Error>(kOp, std::forward<F>(f));
}

using op::view;
rt::TensorArg arg(const TensorRef &t) { return op::launchArg(view(t)); }
bool isHalf(DType d) { return d == DType::BF16 || d == DType::F16; }

std::vector<op::NamedTensor> namedTensors(const ForwardParams &p) {
  std::vector<op::NamedTensor> v = {{"q", view(p.q), false},
                                    {"k", view(p.k), false},
                                    {"v", view(p.v), false},
                                    {"g", view(p.g), false},
                                    {"o", view(p.o), true}};
  if (p.initial_state) v.push_back({"initial_state", view(*p.initial_state), false});
  if (p.final_state) v.push_back({"final_state", view(*p.final_state), true});
  if (p.cu_seqlens) v.push_back({"cu_seqlens", view(*p.cu_seqlens), false});
  return v;
}

// The contract of the arguments (validateForward).
void validate(const ForwardParams &p) {
  const op::HeadSizes h = op::checkQKV(view(p.q), view(p.k), view(p.v), "[B, T, H, V]");
  const int64_t B = h.B, T = h.T, K = h.K, H = h.H, V = h.V;
  if (K != 64 && K != 128) fail("K = " + std::to_string(K) + " is not supported (64 or 128)");
  if (V != 64 && V != 128) fail("V = " + std::to_string(V) + " is not supported (64 or 128)");
  op::checkTensor("g", view(p.g), DType::F32, "", {B, T, H}, "[B, T, H]");
  op::checkTensor("o", view(p.o), p.q.dtype, " (the dtype of q)", {B, T, H, V}, "[B, T, H, V]");

  std::optional<op::TensorView> cuView;
  if (p.cu_seqlens) cuView.emplace(view(*p.cu_seqlens));
  const int64_t N = op::checkCuSeqlens(cuView ? &*cuView : nullptr, p.cu_seqlens_host, B, T);

  if (p.initial_state) op::checkTensor("initial_state", view(*p.initial_state), DType::F32, "", {N, H, K, V}, "[N, H, K, V]");
  if (p.final_state) op::checkTensor("final_state", view(*p.final_state), DType::F32, "", {N, H, K, V}, "[N, H, K, V]");
  if (!std::isnan(p.scale) && !std::isfinite(p.scale)) fail("scale = " + std::to_string(p.scale) + " is not finite");

  // q, k, v are read by TMA (16-byte rows); g, o, the states and cu_seqlens
  // by plain loads and stores (unit last-dim stride, element alignment; the
  // kernel's own signature adds what else it needs, checked in the plan).
  op::checkLayout("q", view(p.q), true);
  op::checkLayout("k", view(p.k), true);
  op::checkLayout("v", view(p.v), true);
  op::checkLayout("g", view(p.g), false);
  op::checkLayout("o", view(p.o), false);
  if (p.initial_state) op::checkLayout("initial_state", view(*p.initial_state), false);
  if (p.final_state) op::checkLayout("final_state", view(*p.final_state), false);
  if (p.cu_seqlens) op::checkCuSeqlensLayout(view(*p.cu_seqlens));
  op::checkNoSelfOverlap("o", view(p.o));
  if (p.final_state) op::checkNoSelfOverlap("final_state", view(*p.final_state));
  op::checkOutputsDisjoint(namedTensors(p));
}

op::KernelRegistry &registry() {
  static op::KernelRegistry r(kSourceDir, embeddedKernelTable());
  return r;
}

op::KernelSlot &slotFor(const ForwardConfig &c) {
  KernelSpec s = forwardKernelSpec(c);
  return registry().slot({s.file, s.defines});
}

// The kernel's argument list (KERNELS.md).
const op::ArgNames &userNames() {
  static const op::ArgNames names = {{"Q", "q"},  {"Kt", "k"},           {"Vt", "v"},
                                     {"G", "g"},  {"CU", "cu_seqlens"},  {"H0", "initial_state"},
                                     {"O", "o"},  {"HT", "final_state"}};
  return names;
}

void checkConfig(const ForwardConfig &c) {
  if (!isHalf(c.dtype)) fail(std::string("warmup: dtype ") + dtypeName(c.dtype) + " is not bf16 or f16");
  if ((c.K != 64 && c.K != 128) || (c.V != 64 && c.V != 128))
    fail("warmup: K = " + std::to_string(c.K) + ", V = " + std::to_string(c.V) + " is not supported (64 or 128)");
  if (c.varlen && c.cuDtype != DType::I32 && c.cuDtype != DType::I64)
    fail(std::string("warmup: cu_seqlens dtype ") + dtypeName(c.cuDtype) + " is not i32 or i64");
}

struct Plan {
  ForwardConfig config;
  op::KernelSlot *kernel = nullptr;
  rt::LaunchArgs args;
  std::array<int64_t, 3> grid{};
};

// p validated. Absent optional tensors (and cu_seqlens without varlen) are
// stood in for by o's pointer with the shape the kernel expects: the
// specialization has no code that touches them (HAS_H0 = 0, STORE_HT = 0,
// VARLEN = 0 are compile-time branches), so no workspace is needed.
Plan buildPlan(const ForwardParams &p) {
  Plan plan;
  plan.config = forwardConfig(p);
  const ForwardConfig &c = plan.config;
  plan.kernel = &slotFor(c);
  const KernelInfo &info = registry().compiled(*plan.kernel).info();
  kernels::gla_fwd::check(plan.kernel->spec, info, kContractDoc);

  const int64_t B = p.q.shape[0], H = p.v.shape[2], K = p.q.shape[3], V = p.v.shape[3];
  const int64_t N = c.varlen ? p.cu_seqlens->shape[0] - 1 : B;
  void *stand = p.o.data;
  using op::contiguousArg;
  rt::TensorArg CU = c.varlen ? arg(*p.cu_seqlens) : contiguousArg(stand, {1});
  rt::TensorArg H0 = c.initialState ? arg(*p.initial_state) : contiguousArg(stand, {N, H, K, V});
  rt::TensorArg HT = c.finalState ? arg(*p.final_state) : contiguousArg(stand, {N, H, K, V});
  kernels::gla_fwd::Args a;
  a.Q = arg(p.q), a.Kt = arg(p.k), a.Vt = arg(p.v), a.G = arg(p.g), a.CU = CU, a.H0 = H0, a.O = arg(p.o), a.HT = HT;
  a.scale = std::isnan(p.scale) ? 1.0 / std::sqrt(double(K)) : p.scale;
  plan.args = a.launch(p.stream);
  op::checkAgainstKernel(plan.kernel->spec, info, plan.args, userNames());
  plan.grid = op::launchGrid(info, plan.args);
  return plan;
}

}  // namespace detail

using namespace detail;

void validateForward(const ForwardParams &p) {
  guarded([&] { validate(p); });
}

ForwardConfig forwardConfig(const ForwardParams &p) {
  ForwardConfig c;
  c.dtype = p.q.dtype;
  c.K = int(p.q.shape.size() == 4 ? p.q.shape[3] : 0);
  c.V = int(p.v.shape.size() == 4 ? p.v.shape[3] : 0);
  c.varlen = p.cu_seqlens.has_value();
  c.cuDtype = c.varlen ? p.cu_seqlens->dtype : DType::I32;
  c.initialState = p.initial_state.has_value();
  c.finalState = p.final_state.has_value();
  return c;
}

bool ForwardConfig::operator==(const ForwardConfig &o) const { return str() == o.str(); }

std::string ForwardConfig::str() const {
  std::ostringstream s;
  s << "dtype=" << dtypeName(dtype) << " K=" << K << " V=" << V << " varlen=" << varlen;
  if (varlen) s << " cu=" << dtypeName(cuDtype);
  s << " initial_state=" << initialState << " final_state=" << finalState;
  return s.str();
}

std::vector<ForwardConfig> allForwardConfigs() {
  std::vector<ForwardConfig> out;
  for (DType dt : {DType::BF16, DType::F16})
    for (int K : {64, 128})
      for (int V : {64, 128})
        for (int vl : {0, 1, 2})  // dense, varlen i32, varlen i64
          for (bool h0 : {false, true})
            for (bool ht : {false, true}) {
              ForwardConfig c;
              c.dtype = dt;
              c.K = K;
              c.V = V;
              c.varlen = vl != 0;
              c.cuDtype = vl == 2 ? DType::I64 : DType::I32;
              c.initialState = h0;
              c.finalState = ht;
              out.push_back(c);
            }
  return out;
}

std::string KernelSpec::str() const { return op::specText(file, defines); }

KernelSpec forwardKernelSpec(const ForwardConfig &c) {
  KernelSpec s;
  s.file = kForwardFile;
  s.defines = {{"DT", dtypeName(c.dtype)},
               {"CT", dtypeName(c.varlen ? c.cuDtype : DType::I32)},
               {"DK", std::to_string(c.K)},
               {"DV", std::to_string(c.V)},
               {"VARLEN", c.varlen ? "1" : "0"},
               {"HAS_H0", c.initialState ? "1" : "0"},
               {"STORE_HT", c.finalState ? "1" : "0"}};
  return s;
}

const std::vector<std::pair<std::string, std::string>> &embeddedKernelSources() {
  return detail::embeddedKernelTable();
}

const std::string *embeddedKernelSource(const std::string &file) {
  return op::KernelRegistry::find(detail::embeddedKernelTable(), file);
}

void warmup(const ForwardConfig &c, bool loadOnGpu) {
  guarded([&] {
    checkConfig(c);
    registry().warm({&slotFor(c)}, loadOnGpu);
  });
}

LaunchPlan planForward(const ForwardParams &p) {
  return guarded([&] {
    validate(p);
    Plan plan = buildPlan(p);
    LaunchPlan lp;
    lp.config = plan.config;
    lp.spec = {plan.kernel->spec.file, plan.kernel->spec.defines};
    lp.args = std::move(plan.args);
    lp.info = registry().compiled(*plan.kernel).info();
    lp.grid = plan.grid;
    return lp;
  });
}

void forward(const ForwardParams &p) {
  guarded([&] {
    validate(p);
    // No workspace: o's pointer with 0 bytes stands in for it (the check
    // then only asks that o be device memory, which it asks anyway).
    CUcontext ctx = op::checkDevice(namedTensors(p), p.o.data, 0);
    Plan plan = buildPlan(p);
    op::launchAll(registry(), ctx, {{plan.kernel, &plan.args}});
  });
}

}  // namespace qla::gla
