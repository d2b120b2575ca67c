// FLA's options that QLA runs around its operators (KERNELS.md, "FLA's
// options"): the in-kernel gate (use_gate_in_kernel), whose gdn_gate.qla
// computes the log decay g = −exp(A_log) softplus(g_raw + dt_bias) into the
// scratch and, in the backward, turns the gradient of g into the raw
// input's and the parameters'; and V-first states (state_v_first), which
// gdn_state_t.qla transposes to and from QLA's K-first layout. The operators
// in between run unchanged, on the scratch.
#include "GdnInternal.h"
#include "qla/kernels/gdn_gate.h"
#include "qla/kernels/gdn_state_t.h"

#include "qla/op/Device.h"

namespace qla::gdn {
namespace detail {

constexpr const char *kGateFile = "gdn_gate.qla";
constexpr const char *kStateTFile = "gdn_state_t.qla";

namespace {

constexpr int64_t kGateTokens = 64;  // gdn_gate.qla's C

int64_t gateRows(int64_t B, int64_t T) { return B * ((T + kGateTokens - 1) / kGateTokens); }

void checkParam(const char *name, const TensorRef &t, int64_t Hv) {
  if (t.dtype != DType::F32) fail(std::string(name) + " has dtype " + dtypeName(t.dtype) + "; expected f32");
  op::checkBasic(name, view(t), 1, "[Hv]");
  if (t.shape[0] != Hv)
    fail(std::string(name) + " has shape " + op::dims(t.shape) + "; expected [Hv] = [" + std::to_string(Hv) + "]");
  op::checkLayout(name, view(t), false);
}

// The scratch in front of the operator's: the gate's (the log decay; in the
// backward also dg of it, the partial sums and the sums when not wanted) and
// K-first copies of the V-first states.
struct OptionLayout {
  size_t go = 0, dgw = 0, pa = 0, pd = 0, da = 0, dd = 0;  // the gate
  size_t s0 = 0, s1 = 0;  // K-first states: forward h0, ht; backward h0, dht (then dh0 in s2)
  size_t s2 = 0;
  size_t dummy = 0, total = 0;
};

struct Shape3 {
  int64_t B, T, Hv, K, V, N;
};

Shape3 shape3(const TensorRef &q, const TensorRef &v, const std::optional<TensorRef> &cu) {
  return {q.shape[0], q.shape[1], v.shape[2], q.shape[3], v.shape[3], cu ? cu->shape[0] - 1 : q.shape[0]};
}

OptionLayout optionLayout(const Shape3 &s, bool gate, bool backward, int states) {
  op::WorkspacePlanner ws;
  OptionLayout l;
  const size_t tokens = size_t(s.B * s.T * s.Hv) * 4, state = size_t(s.N * s.Hv * s.K * s.V) * 4;
  if (gate) {
    l.go = ws.add(tokens);
    if (backward) {
      l.dgw = ws.add(tokens);
      l.pa = ws.add(size_t(gateRows(s.B, s.T) * s.Hv) * 4);
      l.pd = ws.add(size_t(gateRows(s.B, s.T) * s.Hv) * 4);
      l.da = ws.add(size_t(s.Hv) * 4);
      l.dd = ws.add(size_t(s.Hv) * 4);
    }
  }
  if (states & 1) l.s0 = ws.add(state);
  if (states & 2) l.s1 = ws.add(state);
  if (states & 4) l.s2 = ws.add(state);
  l.dummy = ws.addDummy();
  l.total = ws.total();
  return l;
}

// The gate's tensors for one launch (qla/kernels/gdn_gate.h); what a pass
// does not touch points at the dummy region.
using GateArgs = kernels::gdn_gate::Args;

GateArgs gateArgs(const TensorRef &g, const TensorRef &alog, const std::optional<TensorRef> &dtb,
                  const OptionLayout &l, char *ws, bool backward) {
  const int64_t B = g.shape[0], T = g.shape[1], Hv = g.shape[2], NP = gateRows(B, T);
  void *dummy = ws + l.dummy;
  auto region = [&](size_t off, bool present, std::vector<int64_t> shape) {
    return op::contiguousArg(present ? ws + off : dummy, std::move(shape));
  };
  GateArgs a;
  a.G = arg(g);
  a.ALog = arg(alog);
  a.DtB = dtb ? arg(*dtb) : op::contiguousArg(dummy, {Hv});
  a.GO = region(l.go, true, {B, T, Hv});
  a.DGW = region(l.dgw, backward, {B, T, Hv});
  a.DG = op::contiguousArg(dummy, {B, T, Hv});
  a.PA = region(l.pa, backward, {NP, Hv});
  a.PD = region(l.pd, backward, {NP, Hv});
  a.DA = region(l.da, backward, {Hv});
  a.DD = region(l.dd, backward, {Hv});
  return a;
}

// One launch of `spec`, checked against its generated header's check.
using Checker = void (*)(const op::KernelSpec &, const KernelInfo &, const std::string &);
void launchOne(const KernelSpec &spec, const rt::LaunchArgs &args, Checker check, CUcontext ctx) {
  op::KernelSlot &slot = registry().slot(opSpec(spec));
  check(slot.spec, compiled(slot).info(), kContractDoc);
  op::launchAll(registry(), ctx, {{&slot, &args}});
}

void launchGate(const ForwardConfig &c, int pass, const GateArgs &a, CUstream stream, CUcontext ctx) {
  launchOne(gateKernelSpec(c, pass), a.launch(stream), kernels::gdn_gate::check, ctx);
}

// One state tensor [N, Hv, X, Y] into `out` [N, Hv, Y, X] (both contiguous).
void transposeStates(const ForwardConfig &c, bool toKFirst, void *in, void *out, const Shape3 &s, CUstream stream,
                     CUcontext ctx) {
  const int64_t R = toKFirst ? s.V : s.K, CC = toKFirst ? s.K : s.V;
  kernels::gdn_state_t::Args a;
  a.X = op::contiguousArg(in, {s.N * s.Hv, R, CC}), a.Y = op::contiguousArg(out, {s.N * s.Hv, CC, R});
  launchOne(stateTransposeKernelSpec(c, toKFirst), a.launch(stream), kernels::gdn_state_t::check, ctx);
}

ForwardConfig optionConfig(const TensorRef &g, bool gate, bool bias) {
  ForwardConfig c;
  c.gDtype = g.dtype;
  c.gate = gate;
  c.gateBias = gate && bias;
  c.stateVFirst = true;
  return c;
}

TensorRef scratch(char *ws, size_t off, DType dt, std::vector<int64_t> shape) {
  return TensorRef{ws + off, dt, std::move(shape), {}};
}

}  // namespace

void validateOptions(const ForwardParams &p) {
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

bool hasOptions(const ForwardParams &p) { return p.use_gate || (p.state_v_first && (p.initial_state || p.final_state)); }
bool hasOptions(const BackwardParams &p) {
  return p.use_gate || (p.state_v_first && (p.initial_state || p.dht || p.dh0));
}

namespace {
int forwardStates(const ForwardParams &p) {
  return p.state_v_first ? (p.initial_state ? 1 : 0) | (p.final_state ? 2 : 0) : 0;
}
int backwardStates(const BackwardParams &p) {
  return p.state_v_first ? (p.initial_state ? 1 : 0) | (p.dht ? 2 : 0) | (p.dh0 ? 4 : 0) : 0;
}
}  // namespace

ForwardParams optionsPart(const ForwardParams &p, void *workspace) {
  const Shape3 s = shape3(p.q, p.v, p.cu_seqlens);
  const OptionLayout l = optionLayout(s, p.use_gate, false, forwardStates(p));
  char *ws = static_cast<char *>(workspace);
  ForwardParams q = p;
  if (p.use_gate) q.g = scratch(ws, l.go, DType::F32, p.g.shape);
  q.use_gate = false;
  q.A_log.reset();
  q.dt_bias.reset();
  if (p.state_v_first) {
    if (p.initial_state) q.initial_state = scratch(ws, l.s0, DType::F32, {s.N, s.Hv, s.K, s.V});
    if (p.final_state) q.final_state = scratch(ws, l.s1, DType::F32, {s.N, s.Hv, s.K, s.V});
  }
  q.state_v_first = false;
  return q;
}

size_t optionsWorkspaceBytes(const ForwardParams &p) {
  return optionLayout(shape3(p.q, p.v, p.cu_seqlens), p.use_gate, false, forwardStates(p)).total;
}

size_t optionsWorkspaceBytes(const BackwardParams &p) {
  return optionLayout(shape3(p.q, p.v, p.cu_seqlens), p.use_gate, true, backwardStates(p)).total;
}

BackwardParams optionsPart(const BackwardParams &p, void *workspace) {
  const Shape3 s = shape3(p.q, p.v, p.cu_seqlens);
  const OptionLayout l = optionLayout(s, p.use_gate, true, backwardStates(p));
  char *ws = static_cast<char *>(workspace);
  BackwardParams q = p;
  if (p.use_gate) {
    q.g = scratch(ws, l.go, DType::F32, p.g.shape);
    q.dg = scratch(ws, l.dgw, DType::F32, p.g.shape);
  }
  q.use_gate = false;
  q.A_log.reset();
  q.dt_bias.reset();
  q.dA_log.reset();
  q.ddt_bias.reset();
  if (p.state_v_first) {
    const std::vector<int64_t> kf = {s.N, s.Hv, s.K, s.V};
    if (p.initial_state) q.initial_state = scratch(ws, l.s0, DType::F32, kf);
    if (p.dht) q.dht = scratch(ws, l.s1, DType::F32, kf);
    if (p.dh0) q.dh0 = scratch(ws, l.s2, DType::F32, kf);
  }
  q.state_v_first = false;
  return q;
}

void launchWithOptions(const ForwardParams &p, void *workspace, size_t workspaceBytes) {
  const Shape3 s = shape3(p.q, p.v, p.cu_seqlens);
  const OptionLayout l = optionLayout(s, p.use_gate, false, forwardStates(p));
  if (workspaceBytes < l.total) fail("the workspace is smaller than forwardWorkspaceBytes");
  char *ws = static_cast<char *>(workspace);
  CUcontext ctx = op::checkDevice(namedTensors(p, "o"), workspace, l.total);
  const ForwardConfig c = optionConfig(p.g, p.use_gate, p.dt_bias.has_value());
  if (p.use_gate) launchGate(c, 0, gateArgs(p.g, *p.A_log, p.dt_bias, l, ws, false), p.stream, ctx);
  if (p.state_v_first && p.initial_state) transposeStates(c, true, p.initial_state->data, ws + l.s0, s, p.stream, ctx);
  launchForwardImpl(optionsPart(p, workspace), ws + l.total, workspaceBytes - l.total);
  if (p.state_v_first && p.final_state) transposeStates(c, false, ws + l.s1, p.final_state->data, s, p.stream, ctx);
}

void launchWithOptions(const BackwardParams &p, void *workspace, size_t workspaceBytes) {
  const Shape3 s = shape3(p.q, p.v, p.cu_seqlens);
  const OptionLayout l = optionLayout(s, p.use_gate, true, backwardStates(p));
  if (workspaceBytes < l.total) fail("the workspace is smaller than backwardWorkspaceBytes");
  char *ws = static_cast<char *>(workspace);
  std::vector<op::NamedTensor> named = {{"g", view(p.g), false}};
  CUcontext ctx = op::checkDevice(named, workspace, l.total);
  const ForwardConfig c = optionConfig(p.g, p.use_gate, p.dt_bias.has_value());
  GateArgs a;
  if (p.use_gate) {
    a = gateArgs(p.g, *p.A_log, p.dt_bias, l, ws, true);
    launchGate(c, 0, a, p.stream, ctx);  // the log decay again
  }
  if (p.state_v_first) {
    if (p.initial_state) transposeStates(c, true, p.initial_state->data, ws + l.s0, s, p.stream, ctx);
    if (p.dht) transposeStates(c, true, p.dht->data, ws + l.s1, s, p.stream, ctx);
  }
  launchBackwardImpl(optionsPart(p, workspace), ws + l.total, workspaceBytes - l.total);
  if (p.state_v_first && p.dh0) transposeStates(c, false, ws + l.s2, p.dh0->data, s, p.stream, ctx);
  if (p.use_gate) {
    // The raw input's gradient into dg, then the parameters' sums.
    a.DG = arg(p.dg);
    launchGate(c, 1, a, p.stream, ctx);
    if (p.dA_log || p.ddt_bias) {
      if (p.dA_log) a.DA = arg(*p.dA_log);
      if (p.ddt_bias) a.DD = arg(*p.ddt_bias);
      launchGate(c, 2, a, p.stream, ctx);
    }
  }
}

}  // namespace detail

KernelSpec gateKernelSpec(const ForwardConfig &c, int pass) {
  if (pass < 0 || pass > 2) detail::fail("gdn_gate.qla: pass " + std::to_string(pass) + " (0, 1 or 2)");
  return {detail::kGateFile,
          {{"GT", dtypeName(c.gDtype)}, {"HAS_DTB", c.gateBias ? "1" : "0"}, {"PASS", std::to_string(pass)}}};
}

KernelSpec stateTransposeKernelSpec(const ForwardConfig &c, bool toKFirst) {
  return {detail::kStateTFile,
          {{"R", std::to_string(toKFirst ? c.V : c.K)}, {"CC", std::to_string(toKFirst ? c.K : c.V)}}};
}

ForwardConfig ungated(const ForwardConfig &c) {
  ForwardConfig u = c;
  if (u.gate) u.gDtype = DType::F32;
  u.gate = false;
  u.gateBias = false;
  u.stateVFirst = false;
  return u;
}

}  // namespace qla::gdn
