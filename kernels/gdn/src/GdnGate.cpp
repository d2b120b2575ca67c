// The in-kernel gate (FLA's use_gate_in_kernel) around the forward and
// backward operators: gdn_gate.qla computes the log decay
// g = −exp(A_log) softplus(g_raw + dt_bias) into the workspace, the operators
// run on it unchanged, and the backward's gate passes turn the gradient of g
// into the raw input's and the parameters' (KERNELS.md, "The in-kernel gate").
#include "GdnInternal.h"

#include "qla/op/Device.h"

namespace qla::gdn {
namespace detail {

constexpr const char *kGateFile = "gdn_gate.qla";

namespace {

constexpr int64_t kGateTokens = 64;  // the kernel's C

int64_t gateRows(int64_t B, int64_t T) { return B * ((T + kGateTokens - 1) / kGateTokens); }

void checkParam(const char *name, const TensorRef &t, int64_t Hv) {
  if (t.dtype != DType::F32) fail(std::string(name) + " has dtype " + dtypeName(t.dtype) + "; expected f32");
  op::checkBasic(name, view(t), 1, "[Hv]");
  if (t.shape[0] != Hv)
    fail(std::string(name) + " has shape " + op::dims(t.shape) + "; expected [Hv] = [" + std::to_string(Hv) + "]");
  op::checkLayout(name, view(t), false);
}

struct GateLayout {
  size_t go = 0, dgw = 0, pa = 0, pd = 0, da = 0, dd = 0, dummy = 0, total = 0;
};

GateLayout gateLayout(int64_t B, int64_t T, int64_t Hv, bool backward) {
  op::WorkspacePlanner ws;
  GateLayout l;
  const size_t tokens = size_t(B * T * Hv) * 4;
  l.go = ws.add(tokens);
  if (backward) {
    l.dgw = ws.add(tokens);
    l.pa = ws.add(size_t(gateRows(B, T) * Hv) * 4);
    l.pd = ws.add(size_t(gateRows(B, T) * Hv) * 4);
    l.da = ws.add(size_t(Hv) * 4);
    l.dd = ws.add(size_t(Hv) * 4);
  }
  l.dummy = ws.addDummy();
  l.total = ws.total();
  return l;
}

// The gate's tensors for one launch, in the kernel's order (G, ALog, DtB,
// DGW, GO, DG, PA, PD, DA, DD); what a pass does not touch points at the
// dummy region.
struct GateArgs {
  rt::TensorArg g, alog, dtb, dgw, go, dg, pa, pd, da, dd;
};

void launchGate(const ForwardConfig &c, int pass, const GateArgs &a, CUstream stream, CUcontext ctx) {
  op::KernelSlot &slot = registry().slot(opSpec(gateKernelSpec(c, pass)));
  rt::LaunchArgs args;
  args.tensors = {a.g, a.alog, a.dtb, a.dgw, a.go, a.dg, a.pa, a.pd, a.da, a.dd};
  args.stream = stream;
  op::launchAll(registry(), ctx, {{&slot, &args}});
}

GateArgs gateArgs(const TensorRef &g, const TensorRef &alog, const std::optional<TensorRef> &dtb, const GateLayout &l,
                  char *ws) {
  const int64_t B = g.shape[0], T = g.shape[1], Hv = g.shape[2], NP = gateRows(B, T);
  void *dummy = ws + l.dummy;
  auto region = [&](size_t off, bool present, std::vector<int64_t> shape) {
    return op::contiguousArg(present ? ws + off : dummy, std::move(shape));
  };
  const bool bwd = l.dgw != l.go;
  GateArgs a;
  a.g = arg(g);
  a.alog = arg(alog);
  a.dtb = dtb ? arg(*dtb) : op::contiguousArg(dummy, {Hv});
  a.go = region(l.go, true, {B, T, Hv});
  a.dgw = region(l.dgw, bwd, {B, T, Hv});
  a.dg = op::contiguousArg(dummy, {B, T, Hv});
  a.pa = region(l.pa, bwd, {NP, Hv});
  a.pd = region(l.pd, bwd, {NP, Hv});
  a.da = region(l.da, bwd, {Hv});
  a.dd = region(l.dd, bwd, {Hv});
  return a;
}

ForwardConfig gateConfig(const TensorRef &g, bool bias) {
  ForwardConfig c;
  c.gDtype = g.dtype;
  c.gate = true;
  c.gateBias = bias;
  return c;
}

std::vector<op::NamedTensor> gateTensors(const TensorRef &g, const TensorRef &alog,
                                         const std::optional<TensorRef> &dtb) {
  std::vector<op::NamedTensor> v = {{"g", view(g), false}, {"A_log", view(alog), false}};
  if (dtb) v.push_back({"dt_bias", view(*dtb), false});
  return v;
}

}  // namespace

void validateGate(const ForwardParams &p) {
  if (!p.use_gate) {
    if (p.A_log) fail("A_log is given but use_gate is off (A_log is the in-kernel gate's parameter)");
    if (p.dt_bias) fail("dt_bias is given but use_gate is off (dt_bias is the in-kernel gate's parameter)");
    return;
  }
  const int64_t Hv = p.v.shape[2];
  if (!p.A_log) fail("use_gate needs A_log ([Hv] f32: g = -exp(A_log) softplus(g_raw + dt_bias))");
  checkParam("A_log", *p.A_log, Hv);
  if (p.dt_bias) checkParam("dt_bias", *p.dt_bias, Hv);
}

ForwardParams gatedPart(const ForwardParams &p, void *logDecay) {
  ForwardParams q = p;
  q.g = TensorRef{logDecay, DType::F32, p.g.shape, {}};
  q.use_gate = false;
  q.A_log.reset();
  q.dt_bias.reset();
  return q;
}

size_t gateWorkspaceBytes(const TensorRef &g, bool backward) {
  return gateLayout(g.shape[0], g.shape[1], g.shape[2], backward).total;
}

void launchGatedForward(const ForwardParams &p, void *workspace, size_t workspaceBytes) {
  const GateLayout l = gateLayout(p.g.shape[0], p.g.shape[1], p.g.shape[2], false);
  if (workspaceBytes < l.total) fail("the workspace is smaller than forwardWorkspaceBytes");
  char *ws = static_cast<char *>(workspace);
  CUcontext ctx = op::checkDevice(gateTensors(p.g, *p.A_log, p.dt_bias), workspace, l.total);
  launchGate(gateConfig(p.g, p.dt_bias.has_value()), 0, gateArgs(p.g, *p.A_log, p.dt_bias, l, ws), p.stream, ctx);
  launchForwardImpl(gatedPart(p, ws + l.go), ws + l.total, workspaceBytes - l.total);
}

void launchGatedBackward(const BackwardParams &p, void *workspace, size_t workspaceBytes) {
  const GateLayout l = gateLayout(p.g.shape[0], p.g.shape[1], p.g.shape[2], true);
  if (workspaceBytes < l.total) fail("the workspace is smaller than backwardWorkspaceBytes");
  char *ws = static_cast<char *>(workspace);
  CUcontext ctx = op::checkDevice(gateTensors(p.g, *p.A_log, p.dt_bias), workspace, l.total);
  const ForwardConfig c = gateConfig(p.g, p.dt_bias.has_value());
  GateArgs a = gateArgs(p.g, *p.A_log, p.dt_bias, l, ws);
  // The log decay again, the operator on it (its dg into DGW, f32), then
  // the raw input's gradient into dg and the parameters' sums.
  launchGate(c, 0, a, p.stream, ctx);
  BackwardParams q = p;
  q.g = TensorRef{ws + l.go, DType::F32, p.g.shape, {}};
  q.dg = TensorRef{ws + l.dgw, DType::F32, p.g.shape, {}};
  q.use_gate = false;
  q.A_log.reset();
  q.dt_bias.reset();
  q.dA_log.reset();
  q.ddt_bias.reset();
  launchBackwardImpl(q, ws + l.total, workspaceBytes - l.total);
  a.dg = arg(p.dg);
  launchGate(c, 1, a, p.stream, ctx);
  if (p.dA_log || p.ddt_bias) {
    if (p.dA_log) a.da = arg(*p.dA_log);
    if (p.ddt_bias) a.dd = arg(*p.ddt_bias);
    launchGate(c, 2, a, p.stream, ctx);
  }
}

}  // namespace detail

KernelSpec gateKernelSpec(const ForwardConfig &c, int pass) {
  if (pass < 0 || pass > 2) detail::fail("gdn_gate.qla: pass " + std::to_string(pass) + " (0, 1 or 2)");
  return {detail::kGateFile,
          {{"GT", dtypeName(c.gDtype)}, {"HAS_DTB", c.gateBias ? "1" : "0"}, {"PASS", std::to_string(pass)}}};
}

ForwardConfig ungated(const ForwardConfig &c) {
  ForwardConfig u = c;
  if (u.gate) u.gDtype = DType::F32;
  u.gate = false;
  u.gateBias = false;
  return u;
}

}  // namespace qla::gdn
