// The GDN forward operator: the contract of its arguments, the workspace
// layout, the kernel specializations, the launch plan and the launches. What
// any operator needs (argument and device checks, workspace regions, the
// kernel registry, launch-plan checks, running launches) is the shared layer
// in kernels/common (qla::op). See qla/gdn.h and kernels/gdn/KERNELS.md.
#include "qla/gdn.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "GdnInternal.h"
#include "qla/kernels/gdn_fwd_fused.h"
#include "qla/kernels/gdn_fwd_fused_pass1.h"
#include "qla/kernels/gdn_fwd_merge.h"
#include "qla/kernels/gdn_fwd_prepare.h"
#include "qla/kernels/gdn_fwd_state.h"
#include "qla/op/Device.h"
#include "qla/runtime/Log.h"

namespace qla::gdn {
namespace detail {
const std::vector<std::pair<std::string, std::string>> &embeddedKernelTable();  // generated

using op::dims;
using op::kMaxBytes;
using op::kMaxExtent;
using op::ptrText;
using op::roundUp;

constexpr const char *kPrepareFile = "gdn_fwd_prepare.qla";
constexpr const char *kStateFile = "gdn_fwd_state.qla";
constexpr const char *kMergeFile = "gdn_fwd_merge.qla";
constexpr const char *kFusedFile = "gdn_fwd_fused.qla";
constexpr const char *kFusedPass1File = "gdn_fwd_fused_pass1.qla";
constexpr const char *kSourceDir = "kernels/gdn/";  // the compiler sees kernels/gdn/<file>

void fail(const std::string &msg) { throw Error(kOp + msg); }


bool isHalf(DType d) { return d == DType::BF16 || d == DType::F16; }

std::string slotsError(int64_t slots, const std::vector<SlotUse> &uses) {
  std::map<int32_t, const SlotUse *> writer;  // the first sequence that writes each slot
  for (const SlotUse &u : uses) {
    if (u.slot < 0) continue;
    if (u.slot >= slots)
      return u.what + " = " + std::to_string(u.slot) + " is past the pool's " + std::to_string(slots) + " slots";
    if (!u.write) continue;
    auto [it, fresh] = writer.emplace(u.slot, &u);
    if (!fresh && it->second->seq != u.seq)
      return it->second->what + " and " + u.what + " both write slot " + std::to_string(u.slot) +
             " (two sequences of one call)";
  }
  for (const SlotUse &u : uses) {
    if (u.slot < 0 || u.write) continue;
    auto it = writer.find(u.slot);
    if (it != writer.end() && it->second->seq != u.seq)
      return u.what + " = " + std::to_string(u.slot) + " is written by another sequence of the call (" +
             it->second->what + ")";
  }
  return "";
}

std::string headDimsError(int64_t K, int64_t V) {
  if (K != 64 && K != 128 && K != 256) return "K = " + std::to_string(K) + " is not supported (64, 128 or 256)";
  if (V != 64 && V != 128 && V != 256) return "V = " + std::to_string(V) + " is not supported (64, 128 or 256)";
  return "";
}

// Every tensor argument, in argument order (the optional ones when given).
std::vector<op::NamedTensor> namedTensors(const ForwardParams &p, const char *oName) {
  std::vector<op::NamedTensor> v = {{"q", view(p.q), false},       {"k", view(p.k), false},
                                    {"v", view(p.v), false},       {"g", view(p.g), false},
                                    {"beta", view(p.beta), false}, {oName, view(p.o), true}};
  if (p.initial_state) v.push_back({"initial_state", view(*p.initial_state), false});
  if (p.final_state) v.push_back({"final_state", view(*p.final_state), true});
  if (p.cu_seqlens) v.push_back({"cu_seqlens", view(*p.cu_seqlens), false});
  if (p.checkpoints) v.push_back({"checkpoints", view(*p.checkpoints), true});
  if (p.state_pool) v.push_back({"state_pool", view(*p.state_pool), true});
  if (p.initial_slots) v.push_back({"initial_slots", view(*p.initial_slots), false});
  if (p.final_slots) v.push_back({"final_slots", view(*p.final_slots), false});
  if (p.checkpoint_slots) v.push_back({"checkpoint_slots", view(*p.checkpoint_slots), false});
  if (p.A_log) v.push_back({"A_log", view(*p.A_log), false});
  if (p.dt_bias) v.push_back({"dt_bias", view(*p.dt_bias), false});
  return v;
}

//===----------------------------------------------------------------------===//
// Workspace layout
//===----------------------------------------------------------------------===//

// QLA_GDN_FUSED_BV=64 (or =V) asks the fused kernel for 64-wide V slices (or
// whole heads) per CTA, for tests and benchmarks; unset: the model's choice.
int64_t fusedBvFromEnvironment() {
  const char *e = std::getenv("QLA_GDN_FUSED_BV");
  return e && *e ? std::atoll(e) : 0;
}

// Regions W, U, GC (the two-kernel path; then HS, LS, PH, PL with a split) of `ws`, each 256-byte
// aligned. GC is [B, Hv, gcSlots] f32: γ of chunk c of a sequence lives in slot
// (bos / C + n + c) of C values (varlen; n the sequence index) or slot c
// (fixed length), so that every chunk's γ starts 16-byte aligned for TMA.
// Slots needed: cdiv(T, C) + N - 1 with N sequences (B = 1), cdiv(T, C) otherwise.
// With a split schedule (context parallelism), HS and LS are [NZ, Hv, K, V]
// f32 (segment start and end states) and PH, PL [NZ, Hv, K, K] bf16 (the
// segments' state transitions as hi + lo), NZ the schedule's segment ids;
// on the fused path also TS [B, T, Hv, 64] (prepare's T per token, dtype)
// and RK [B, T, Hv] f32 (1 / ‖k‖, with L2 normalization) for both passes.
WorkspaceLayout addForwardRegions(op::WorkspacePlanner &ws, DType dtype, const ForwardShape &s, int64_t segmentChunks,
                                  int fusedMode, bool l2norm, bool withoutWU) {
  const int64_t B = s.B, T = s.T, Hv = s.Hv, K = s.K, V = s.V, numSequences = s.numSequences;
  const size_t eb = size_t(dtypeBytes(dtype));
  WorkspaceLayout l;
  MachineModel m;
  m.sms = deviceSmCount();
  l.schedule = forwardSchedule(s, m, segmentChunks, fusedMode, fusedBvFromEnvironment());
  l.gcSlots = ((T + kChunk - 1) / kChunk + std::max<int64_t>(numSequences - 1, 0)) * kChunk;
  // The fused path does its chunk-local work in registers: no W, U, GC.
  if (!l.schedule.fused) {
    if (!withoutWU) {
      l.w = ws.add(size_t(B * T * Hv * K) * eb);
      l.u = ws.add(size_t(B * T * Hv * V) * eb);
    }
    l.gc = ws.add(size_t(B * Hv * l.gcSlots) * 4);
  }
  if (l.schedule.split) {
    const size_t nz = size_t(l.schedule.numIds);
    l.hs = ws.add(nz * size_t(Hv * K * V) * 4);
    l.ls = ws.add(nz * size_t(Hv * K * V) * 4);
    l.ph = ws.add(nz * size_t(Hv * K * K) * 2);
    l.pl = ws.add(nz * size_t(Hv * K * K) * 2);
    if (l.schedule.fused) {
      l.ts = ws.add(size_t(B * T * Hv * kChunk) * eb);
      if (l2norm) l.rk = ws.add(size_t(B * T * Hv) * 4);
    }
  }
  return l;
}

// The forward's workspace: its regions, then the dummy (op::WorkspacePlanner).
WorkspaceLayout workspaceLayout(DType dtype, const ForwardShape &s, int64_t segmentChunks, int fusedMode = -1,
                                bool l2norm = false) {
  op::WorkspacePlanner ws;
  WorkspaceLayout l = addForwardRegions(ws, dtype, s, segmentChunks, fusedMode, l2norm);
  l.dummy = ws.addDummy();
  l.total = ws.total();
  return l;
}

//===----------------------------------------------------------------------===//
// The forward's kernels: one registry slot per specialization, and the four
// slots of a configuration memoized by its key.
//===----------------------------------------------------------------------===//

op::KernelRegistry &registry() {
  static op::KernelRegistry r(kSourceDir, embeddedKernelTable());
  return r;
}

op::KernelSpec opSpec(const KernelSpec &s) { return {s.file, s.defines}; }
KernelSpec publicSpec(const op::KernelSlot &s) { return {s.spec.file, s.spec.defines}; }

struct ConfigKernels {
  op::KernelSlot *prepare = nullptr, *state = nullptr;  // the two-kernel path
  op::KernelSlot *segment = nullptr, *merge = nullptr;  // with a split schedule
  op::KernelSlot *fused = nullptr;                      // the fused path, BV = fusedWideBv(V) (a whole head up to 128)
  op::KernelSlot *fusedSlice = nullptr;                 // ... a 64-wide V slice per CTA (= fused when V = 64)
  op::KernelSlot *fusedPass1 = nullptr;                 // its pass 1 (context parallelism)
  op::KernelSlot *tmat = nullptr;                       // prepare's T for a fused split (OUT_T=1)
};

uint32_t configKey(const ForwardConfig &c) {
  uint32_t k = 0;
  auto put = [&](uint32_t v, int bits) { k = (k << bits) | v; };
  put(uint32_t(c.dtype), 3);
  put(uint32_t(c.betaDtype), 3);
  put(uint32_t(c.gDtype), 3);
  put(c.K == 64 ? 0 : c.K == 128 ? 1 : 2, 2);
  put(c.V == 64 ? 0 : c.V == 128 ? 1 : 2, 2);
  put(c.varlen, 1);
  put(uint32_t(c.cuDtype), 3);
  put(c.l2norm, 1);
  put(c.initialState, 1);
  put(c.finalState, 1);
  put(uint32_t(c.betaActivation) & 3u, 2);
  put(c.gate, 1);
  put(c.gateBias, 1);
  put(c.stateVFirst, 1);
  put(c.pool, 1);
  put(c.poolDtype == DType::BF16, 1);
  put(c.poolKFirst, 1);
  put(c.poolCheckpoints, 1);
  return k;
}

ConfigKernels kernelsFor(const ForwardConfig &c) {
  static std::mutex mu;
  static std::map<uint32_t, ConfigKernels> memo;
  const uint32_t key = configKey(c);
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = memo.find(key);
    if (it != memo.end()) return it->second;
  }
  op::KernelRegistry &r = registry();
  ConfigKernels ck;
  ck.prepare = &r.slot(opSpec(prepareKernelSpec(c)));
  ck.state = &r.slot(opSpec(stateKernelSpec(c)));
  ck.segment = &r.slot(opSpec(segmentKernelSpec(c)));
  ck.merge = &r.slot(opSpec(mergeKernelSpec(c)));
  ck.fused = &r.slot(opSpec(fusedKernelSpec(c, fusedWideBv(c.V))));
  ck.fusedSlice = &r.slot(opSpec(fusedKernelSpec(c, 64)));
  ck.fusedPass1 = &r.slot(opSpec(fusedPass1KernelSpec(c)));
  ck.tmat = &r.slot(opSpec(tmatKernelSpec(c)));
  std::lock_guard<std::mutex> lock(mu);
  memo[key] = ck;
  return ck;
}

const JitKernel &compiled(op::KernelSlot &s) { return registry().compiled(s); }

//===----------------------------------------------------------------------===//
// Launch plan
//===----------------------------------------------------------------------===//

rt::TensorArg arg(const TensorRef &t) { return op::launchArg(view(t)); }

// User-facing names of the kernels' tensor arguments (of the forward's and
// the backward's kernels).
const op::ArgNames &userNames() {
  static const op::ArgNames names = {
      {"Q", "q"},       {"Kt", "k"},          {"Vt", "v"},           {"G", "g"},
      {"Beta", "beta"}, {"CU", "cu_seqlens"}, {"H0", "initial_state"}, {"HT", "final_state"},
      {"O", "o"},       {"W", "workspace (W)"}, {"U", "workspace (U)"}, {"GC", "workspace (GC)"},
      {"HS", "workspace (HS)"}, {"LS", "workspace (LS)"}, {"PH", "workspace (PH)"}, {"PL", "workspace (PL)"},
      {"AM", "workspace (AM)"}, {"H", "workspace (H)"}, {"VN", "workspace (VN)"}, {"DH", "workspace (DH)"},
      {"DVD", "workspace (DVD)"}, {"SD", "workspace (SD)"}, {"DQH", "workspace (DQH)"},
      {"DKH", "workspace (DKH)"}, {"DK2", "workspace (DK2)"}, {"RQ", "workspace (RQ)"},
      {"RK", "workspace (RK)"}, {"RW", "workspace (RW)"}, {"DO", "do"}, {"DHT", "dht"}, {"DH0", "dh0"}, {"DQ", "dq"},
      {"DKO", "dk"}, {"DVO", "dv"}, {"DG", "dg"}, {"DBETA", "dbeta"}};
  return names;
}

struct Plan {
  ForwardConfig config;
  ConfigKernels kernels;
  Schedule schedule;
  // prepare: launchesPrepare(schedule); state: without schedule.fused;
  // segment, merge: with schedule.split; fusedArgs: with schedule.fused.
  rt::LaunchArgs prepare, state, segment, merge, fusedArgs;
  std::array<int64_t, 3> prepareGrid{}, stateGrid{}, segmentGrid{}, mergeGrid{}, fusedGrid{};
};

// Prepare runs on the two-kernel path and, for the fused path's passes (T
// per chunk, OUT_T=1), with a split.
bool launchesPrepare(const Schedule &s) { return !s.fused || s.split; }

// The path a call asks for (ForwardParams::fused; where it leaves the choice
// to the operator, QLA_GDN_FUSED=0 asks for the two-kernel path and
// QLA_GDN_FUSED=1 for the fused kernel): forwardSchedule's fusedMode.
int fusedMode(const ForwardParams &p) {
  if (p.state_pool) return 1;  // only the fused path reads and writes a pool
  if (p.fused != 0) return p.fused > 0 ? 1 : -1;
  const char *e = std::getenv("QLA_GDN_FUSED");
  if (e && std::string(e) == "0") return -1;
  if (e && std::string(e) == "1") return 1;
  return 0;
}

ForwardShape shapeOf(const ForwardParams &p) {
  ForwardShape s{p.q.shape[0], p.q.shape[1], p.v.shape[2], p.q.shape[3], p.v.shape[3],
                 p.cu_seqlens ? p.cu_seqlens->shape[0] - 1 : 0, 0, 0, {}};
  if (p.cu_seqlens) setSequenceChunks(s, p.cu_seqlens_host);
  if (p.cu_seqlens && !p.cu_seqlens_host && p.max_seqlen > 0) s.maxChunks = (p.max_seqlen + kChunk - 1) / kChunk;
  return s;
}

WorkspaceLayout layoutOf(const ForwardParams &p) {
  return workspaceLayout(p.q.dtype, shapeOf(p), p.segment_chunks, fusedMode(p), p.use_qk_l2norm);
}

// p validated.
size_t workspaceBytesOf(const ForwardParams &p) { return layoutOf(p).total; }

void checkWorkspace(const ForwardParams &p, const WorkspaceLayout &l, void *workspace, size_t workspaceBytes) {
  op::checkWorkspace(workspace, workspaceBytes, l.total, namedTensors(p, "o"));
}

// p validated, workspace checked against l = layoutOf(p) (computed once per call).
Plan buildPlan(const ForwardParams &p, const WorkspaceLayout &l, void *workspace) {
  Plan plan;
  const ForwardConfig c = forwardConfig(p);
  plan.config = c;
  plan.kernels = kernelsFor(c);
  plan.schedule = l.schedule;
  // The fused kernel of the schedule's V slice; with a split, its pass 1
  // stands in for the state kernel's, and prepare gives both passes T (OUT_T=1).
  if (l.schedule.fused && l.schedule.fusedBv < fusedWideBv(c.V)) plan.kernels.fused = plan.kernels.fusedSlice;
  const bool split = l.schedule.split;
  const bool fused = l.schedule.fused;
  if (fused) {
    plan.kernels.segment = plan.kernels.fusedPass1;
    plan.kernels.prepare = plan.kernels.tmat;
  }
  // Only the kernels this call launches are compiled.
  const KernelInfo *ip = nullptr, *is = nullptr, *iseg = nullptr, *imerge = nullptr, *ifu = nullptr;
  if (launchesPrepare(l.schedule)) {
    ip = &compiled(*plan.kernels.prepare).info();
    kernels::gdn_fwd_prepare::check(plan.kernels.prepare->spec, *ip, kContractDoc);
  }
  if (!fused) {
    is = &compiled(*plan.kernels.state).info();
    kernels::gdn_fwd_state::check(plan.kernels.state->spec, *is, kContractDoc);
  } else {
    ifu = &compiled(*plan.kernels.fused).info();
    kernels::gdn_fwd_fused::check(plan.kernels.fused->spec, *ifu, kContractDoc);
  }
  if (split) {
    iseg = &compiled(*plan.kernels.segment).info();
    imerge = &compiled(*plan.kernels.merge).info();
    if (fused) kernels::gdn_fwd_fused_pass1::check(plan.kernels.segment->spec, *iseg, kContractDoc);
    else kernels::gdn_fwd_state::check(plan.kernels.segment->spec, *iseg, kContractDoc);
    kernels::gdn_fwd_merge::check(plan.kernels.merge->spec, *imerge, kContractDoc);
  }

  const int64_t B = p.q.shape[0], T = p.q.shape[1], Hv = p.v.shape[2], K = p.q.shape[3], V = p.v.shape[3];
  const int64_t N = c.varlen ? p.cu_seqlens->shape[0] - 1 : B;
  const int64_t NZ = l.schedule.numIds;
  char *ws = static_cast<char *>(workspace);
  void *dummy = ws + l.dummy;
  using op::contiguousArg;

  // (The fused path has no W, U, GC regions: the merge reads GC's shape only.)
  rt::TensorArg W = contiguousArg(fused ? dummy : ws + l.w, {B, T, Hv, K});
  rt::TensorArg U = contiguousArg(fused ? dummy : ws + l.u, {B, T, Hv, V});
  const int64_t TC = l.gcSlots;
  rt::TensorArg GC = contiguousArg(fused ? dummy : ws + l.gc, {B, Hv, TC});
  rt::TensorArg CU = c.varlen ? arg(*p.cu_seqlens) : contiguousArg(dummy, {1});
  rt::TensorArg H0 = c.initialState ? arg(*p.initial_state) : contiguousArg(dummy, {N, Hv, K, V});
  rt::TensorArg HT = c.finalState ? arg(*p.final_state) : contiguousArg(dummy, {N, Hv, K, V});
  // Serving: the state pool and its slots (POOL=1), else stand-ins.
  rt::TensorArg Pool = p.state_pool ? arg(*p.state_pool) : contiguousArg(dummy, {1, Hv, V, K});
  rt::TensorArg PI = p.initial_slots ? arg(*p.initial_slots) : contiguousArg(dummy, {1});
  rt::TensorArg PO = p.final_slots ? arg(*p.final_slots) : contiguousArg(dummy, {1});
  rt::TensorArg CS = p.checkpoint_slots ? arg(*p.checkpoint_slots) : contiguousArg(dummy, {1, 1});
  const double ckptChunks = p.checkpoint_every > 0 ? double(p.checkpoint_every / kChunk) : 1.0;
  // Without a split the segment tensors are never touched: the dummy stands
  // in. In training mode the segment start states go to the caller's
  // checkpoints (validated: given only with a split, of HS's shape).
  rt::TensorArg HS = p.checkpoints ? arg(*p.checkpoints) : contiguousArg(split ? ws + l.hs : dummy, {NZ, Hv, K, V});
  rt::TensorArg LS = contiguousArg(split ? ws + l.ls : dummy, {NZ, Hv, K, V});
  rt::TensorArg PH = contiguousArg(split ? ws + l.ph : dummy, {NZ, Hv, K, K});
  rt::TensorArg PL = contiguousArg(split ? ws + l.pl : dummy, {NZ, Hv, K, K});

  // The fused path's pass 1 and output pass read T (and 1 / ‖k‖) from
  // prepare (OUT_T=1) for the sequences a split cuts.
  const bool tmat = fused && split;
  rt::TensorArg TS = contiguousArg(tmat ? ws + l.ts : dummy, {B, T, Hv, kChunk});
  rt::TensorArg RK = contiguousArg(tmat && c.l2norm ? ws + l.rk : dummy, {B, T, Hv});

  // Tensors only the backward's specializations touch: the dummy stands in.
  rt::TensorArg AM = contiguousArg(dummy, {B, Hv, TC, kChunk});
  rt::TensorArg H = contiguousArg(dummy, {B, 1, Hv, K, V});
  rt::TensorArg VN = contiguousArg(dummy, {B, T, Hv, V});
  rt::TensorArg UL = contiguousArg(dummy, {B, T, Hv, V});
  rt::TensorArg VNL = contiguousArg(dummy, {B, T, Hv, V});
  const double scale = std::isnan(p.scale) ? 1.0 / std::sqrt(double(K)) : p.scale;
  const double segChunks = double(l.schedule.segChunks);
  kernels::gdn_fwd_prepare::Args pr;
  pr.Kt = arg(p.k), pr.Vt = arg(p.v), pr.G = arg(p.g), pr.Beta = arg(p.beta), pr.CU = CU, pr.W = W, pr.U = U;
  pr.GC = GC, pr.AM = AM, pr.TS = TS, pr.RK = RK, pr.UL = UL;
  pr.ls = segChunks;  // (read with OUT_T=1 only)
  plan.prepare = pr.launch(p.stream);
  kernels::gdn_fwd_state::Args st;
  st.Q = arg(p.q), st.Kt = arg(p.k), st.W = W, st.U = U, st.GC = GC, st.CU = CU, st.H0 = H0, st.O = arg(p.o);
  st.HT = HT, st.HS = HS, st.LS = LS, st.PH = PH, st.PL = PL, st.H = H, st.VN = VN, st.UL = UL, st.VNL = VNL;
  st.scale = scale, st.ls = segChunks;
  plan.state = st.launch(p.stream);
  if (fused) {
    kernels::gdn_fwd_fused::Args f;
    f.Q = arg(p.q), f.Kt = arg(p.k), f.Vt = arg(p.v), f.G = arg(p.g), f.Beta = arg(p.beta), f.CU = CU, f.H0 = H0;
    f.HS = HS, f.TS = TS, f.O = arg(p.o), f.HT = HT, f.Pool = Pool, f.PI = PI, f.PO = PO, f.CS = CS;
    f.H = H, f.AM = AM, f.GC = GC, f.W = W;  // (the backward's recompute only)
    f.scale = scale, f.ls = segChunks, f.ce = ckptChunks;
    plan.fusedArgs = f.launch(p.stream);
  }
  if (split) {
    if (fused) {
      kernels::gdn_fwd_fused_pass1::Args s1;
      s1.Kt = arg(p.k), s1.Vt = arg(p.v), s1.G = arg(p.g), s1.TS = TS, s1.RK = RK, s1.CU = CU, s1.H0 = H0;
      s1.Pool = Pool, s1.PI = PI, s1.LS = LS, s1.PH = PH, s1.PL = PL, s1.HS = HS;
      s1.ls = segChunks;
      plan.segment = s1.launch(p.stream);
    } else {
      plan.segment = plan.state;
    }
    kernels::gdn_fwd_merge::Args m;
    m.GC = GC, m.CU = CU, m.LS = LS, m.PH = PH, m.PL = PL, m.HS = HS;
    m.ls = segChunks;
    plan.merge = m.launch(p.stream);
  }

  // Before any launches: what the runtime would refuse, with user-facing names.
  if (ip) {
    op::checkAgainstKernel(plan.kernels.prepare->spec, *ip, plan.prepare, userNames());
    plan.prepareGrid = op::launchGrid(*ip, plan.prepare);
  }
  if (is) {
    op::checkAgainstKernel(plan.kernels.state->spec, *is, plan.state, userNames());
    plan.stateGrid = op::launchGrid(*is, plan.state);
  }
  if (ifu) {
    op::checkAgainstKernel(plan.kernels.fused->spec, *ifu, plan.fusedArgs, userNames());
    plan.fusedGrid = op::launchGrid(*ifu, plan.fusedArgs);
  }
  if (split) {
    if (fused) op::checkAgainstKernel(plan.kernels.segment->spec, *iseg, plan.segment, userNames());
    plan.segmentGrid = op::launchGrid(*iseg, plan.segment);
    plan.mergeGrid = op::launchGrid(*imerge, plan.merge);
  }
  return plan;
}

// The contract of the forward's arguments (validateForward).
void validate(const ForwardParams &p, const char *oName) {
  if (p.beta_activation < 0 || p.beta_activation > 2)
    fail("beta_activation is " + std::to_string(p.beta_activation) +
         " (0: beta is beta; 1: beta = sigmoid(beta), FLA's use_beta_sigmoid_in_kernel; 2: beta = 2 sigmoid(beta), "
         "with allow_neg_eigval)");
  // q, k, v: dtypes and shapes.
  const op::HeadSizes h = op::checkQKV(view(p.q), view(p.k), view(p.v), "[B, T, Hv, V]");
  const int64_t B = h.B, T = h.T, K = h.K, Hv = h.H, V = h.V;
  if (const std::string e = headDimsError(K, V); !e.empty()) fail(e);

  // g, beta, o.
  const std::vector<int64_t> gShape = {B, T, Hv}, oShape = {B, T, Hv, V};
  if (p.g.dtype != DType::F32 && p.g.dtype != p.q.dtype)
    fail(std::string("g has dtype ") + dtypeName(p.g.dtype) + "; expected f32 or " + dtypeName(p.q.dtype) +
         " (the dtype of q)");
  op::checkBasic("g", view(p.g), 3, "[B, T, Hv]");
  if (p.g.shape != gShape) fail("g has shape " + dims(p.g.shape) + "; expected [B, T, Hv] = " + dims(gShape));
  if (p.beta.dtype != DType::F32 && p.beta.dtype != p.q.dtype)
    fail(std::string("beta has dtype ") + dtypeName(p.beta.dtype) + "; expected f32 or " + dtypeName(p.q.dtype) +
         " (the dtype of q)");
  op::checkBasic("beta", view(p.beta), 3, "[B, T, Hv]");
  if (p.beta.shape != gShape)
    fail("beta has shape " + dims(p.beta.shape) + "; expected [B, T, Hv] = " + dims(gShape));
  const std::string on = oName;
  if (p.o.dtype != p.q.dtype)
    fail(on + " has dtype " + dtypeName(p.o.dtype) + "; expected " + dtypeName(p.q.dtype) + " (the dtype of q)");
  op::checkBasic(oName, view(p.o), 4, "[B, T, Hv, V]");
  if (p.o.shape != oShape) fail(on + " has shape " + dims(p.o.shape) + "; expected [B, T, Hv, V] = " + dims(oShape));

  // cu_seqlens.
  std::optional<op::TensorView> cuView;
  if (p.cu_seqlens) cuView.emplace(view(*p.cu_seqlens));
  const int64_t N = op::checkCuSeqlens(cuView ? &*cuView : nullptr, p.cu_seqlens_host, B, T);
  if (p.max_seqlen < 0) fail("max_seqlen = " + std::to_string(p.max_seqlen) + " (a bound on the longest sequence; 0: none)");
  if (p.max_seqlen > 0 && !p.cu_seqlens)
    fail("max_seqlen bounds the lengths of cu_seqlens' sequences, but cu_seqlens is not given");
  if (p.max_seqlen > 0 && p.cu_seqlens_host)
    for (int64_t n = 0; n < N; ++n)
      if (p.cu_seqlens_host[n + 1] - p.cu_seqlens_host[n] > p.max_seqlen)
        fail("sequence " + std::to_string(n) + " has " + std::to_string(p.cu_seqlens_host[n + 1] - p.cu_seqlens_host[n]) +
             " tokens, more than max_seqlen = " + std::to_string(p.max_seqlen));

  // States ([N, Hv, V, K] with state_v_first).
  const std::vector<int64_t> sShape = p.state_v_first ? std::vector<int64_t>{N, Hv, V, K}
                                                      : std::vector<int64_t>{N, Hv, K, V};
  const char *sText = p.state_v_first ? "[N, Hv, V, K] (state_v_first)" : "[N, Hv, K, V]";
  for (const auto &[name, t] : {std::pair<const char *, const std::optional<TensorRef> *>{"initial_state", &p.initial_state},
                                {"final_state", &p.final_state}}) {
    if (!*t) continue;
    const TensorRef &s = **t;
    if (s.dtype != DType::F32) fail(std::string(name) + " has dtype " + dtypeName(s.dtype) + "; expected f32");
    op::checkBasic(name, view(s), 4, sText);
    if (s.shape != sShape)
      fail(std::string(name) + " has shape " + dims(s.shape) + "; expected " + sText + " = " + dims(sShape));
    if (p.state_v_first && op::stridesOf(view(s)) != std::vector<int64_t>{Hv * V * K, V * K, K, 1})
      fail(std::string(name) + " must be contiguous with state_v_first; got strides " + dims(op::stridesOf(view(s))));
  }

  if (!std::isnan(p.scale) && !std::isfinite(p.scale)) fail("scale = " + std::to_string(p.scale) + " is not finite");
  if (p.segment_chunks < -1)
    fail("segment_chunks = " + std::to_string(p.segment_chunks) +
         " (0: the cost model, -1: never split, n > 0: segments of n chunks)");
  // K = 256: the two-kernel path, unsplit (Schedule.h, splitAndFusedTake).
  if (!splitAndFusedTake(K)) {
    const std::string why = " (K = " + std::to_string(K) + " runs the two-kernel forward without a split: the fused "
                            "kernels and the segments' merge take K up to " + std::to_string(kMaxFusedK) + ")";
    if (p.segment_chunks > 0) fail("segment_chunks = " + std::to_string(p.segment_chunks) + why);
    if (p.state_pool) fail("state_pool needs the fused kernel" + why);
    if (p.fused > 0) fail("fused = " + std::to_string(p.fused) + why);
  }

  // Layouts: q, k, v, o and the states are read/written by TMA (16-byte rows);
  // g, beta and cu_seqlens need a unit last-dim stride (the kernels' own
  // signatures add what else they need, checked in planForward).
  op::checkLayout("q", view(p.q), true);
  op::checkLayout("k", view(p.k), true);
  op::checkLayout("v", view(p.v), true);
  op::checkLayout("g", view(p.g), false);
  op::checkLayout("beta", view(p.beta), false);
  op::checkLayout(oName, view(p.o), true);
  if (p.initial_state) op::checkLayout("initial_state", view(*p.initial_state), true);
  if (p.final_state) op::checkLayout("final_state", view(*p.final_state), true);
  if (p.cu_seqlens) op::checkCuSeqlensLayout(view(*p.cu_seqlens));

  validateOptions(p);

  // Serving: the state pool and its slots.
  if (p.state_pool) {
    const TensorRef &pool = *p.state_pool;
    if (p.initial_state || p.final_state)
      fail("state_pool excludes initial_state and final_state (the pool's slots are the states)");
    if (p.checkpoints) fail("state_pool excludes checkpoints (a prefill into a pool keeps no training state)");
    if (p.state_v_first)
      fail("state_v_first does not apply to a state_pool (V-first by default; state_pool_k_first for K-first)");
    if (pool.dtype != DType::F32 && pool.dtype != DType::BF16)
      fail(std::string("state_pool has dtype ") + dtypeName(pool.dtype) + "; expected f32 or bf16");
    const bool kf = p.state_pool_k_first;
    const char *layout = kf ? "[slots, Hv, K, V]" : "[slots, Hv, V, K]";
    const int64_t d2 = kf ? K : V, d3 = kf ? V : K;
    op::checkBasic("state_pool", view(pool), 4, layout);
    if (pool.shape[0] < 1 || pool.shape[1] != Hv || pool.shape[2] != d2 || pool.shape[3] != d3)
      fail("state_pool has shape " + dims(pool.shape) + "; expected " + layout + " = [slots, " + std::to_string(Hv) +
           ", " + std::to_string(d2) + ", " + std::to_string(d3) + "]" +
           (kf ? " (state_pool_k_first)" : " (V-first; state_pool_k_first for [slots, Hv, K, V])"));
    const std::vector<int64_t> st = op::stridesOf(view(pool));
    if (st != std::vector<int64_t>{Hv * V * K, V * K, d3, 1})
      fail("state_pool must be contiguous; got strides " + dims(st));
    op::checkNoSelfOverlap("state_pool", view(pool));
    for (const auto &[name, t] : {std::pair<const char *, const std::optional<TensorRef> *>{"initial_slots",
                                                                                            &p.initial_slots},
                                  {"final_slots", &p.final_slots}}) {
      if (!*t) continue;
      const TensorRef &s = **t;
      if (s.dtype != DType::I32) fail(std::string(name) + " has dtype " + dtypeName(s.dtype) + "; expected i32");
      op::checkBasic(name, view(s), 1, "[N]");
      if (s.shape[0] != N) fail(std::string(name) + " has shape " + dims(s.shape) + "; expected [N] = [" +
                                std::to_string(N) + "]");
      op::checkLayout(name, view(s), false);
    }
    if (p.checkpoint_every != 0 || p.checkpoint_slots) {
      if (p.checkpoint_every <= 0 || p.checkpoint_every % kChunk != 0)
        fail("checkpoint_every = " + std::to_string(p.checkpoint_every) + ": a positive multiple of " +
             std::to_string(kChunk) + " tokens (the chunk) is needed with checkpoint_slots");
      if (!p.checkpoint_slots) fail("checkpoint_every needs checkpoint_slots ([N, M] int32 pool slots)");
      const TensorRef &s = *p.checkpoint_slots;
      if (s.dtype != DType::I32) fail(std::string("checkpoint_slots has dtype ") + dtypeName(s.dtype) + "; expected i32");
      op::checkBasic("checkpoint_slots", view(s), 2, "[N, M]");
      if (s.shape[0] != N || s.shape[1] < 1)
        fail("checkpoint_slots has shape " + dims(s.shape) + "; expected [N, M] = [" + std::to_string(N) +
             ", M] with M >= 1");
      op::checkLayout("checkpoint_slots", view(s), false);
    }
    // The slots' host copies, where given: in range, no slot written by two
    // sequences, none that one sequence reads written by another.
    if ((p.initial_slots_host && !p.initial_slots) || (p.final_slots_host && !p.final_slots) ||
        (p.checkpoint_slots_host && !p.checkpoint_slots))
      fail("a host copy of initial_slots, final_slots or checkpoint_slots is given without the slots themselves");
    if (p.initial_slots_host || p.final_slots_host || p.checkpoint_slots_host) {
      auto at = [](const char *name, int64_t i) { return std::string(name) + "[" + std::to_string(i) + "]"; };
      std::vector<SlotUse> uses;
      for (int64_t n = 0; n < N; ++n) {
        if (p.initial_slots_host) uses.push_back({at("initial_slots", n), n, p.initial_slots_host[n], false});
        if (p.final_slots_host) uses.push_back({at("final_slots", n), n, p.final_slots_host[n], true});
      }
      if (p.checkpoint_slots_host) {
        // The m-th state of sequence n is stored where (m + 1) checkpoint_every
        // tokens fit in it; with unknown lengths (varlen, no host copy of
        // cu_seqlens) every entry counts.
        const int64_t M = p.checkpoint_slots->shape[1];
        const bool known = !p.cu_seqlens || p.cu_seqlens_host;
        for (int64_t n = 0; n < N; ++n) {
          const int64_t len = !p.cu_seqlens ? T : known ? p.cu_seqlens_host[n + 1] - p.cu_seqlens_host[n] : 0;
          for (int64_t m = 0; m < M && (!known || (m + 1) * p.checkpoint_every <= len); ++m)
            uses.push_back({"checkpoint_slots[" + std::to_string(n) + ", " + std::to_string(m) + "]", n,
                            p.checkpoint_slots_host[n * M + m], true});
        }
      }
      if (const std::string e = slotsError(pool.shape[0], uses); !e.empty()) fail(e);
    }
  } else if (p.initial_slots || p.final_slots || p.checkpoint_slots || p.checkpoint_every != 0 ||
             p.state_pool_k_first || p.initial_slots_host || p.final_slots_host || p.checkpoint_slots_host) {
    fail("initial_slots, final_slots, checkpoint_every, checkpoint_slots and state_pool_k_first go with a "
         "state_pool, which is not given");
  }

  // Outputs: no element written twice, no overlap with any other argument.
  op::checkNoSelfOverlap(oName, view(p.o));
  if (p.final_state) op::checkNoSelfOverlap("final_state", view(*p.final_state));
}

void checkCheckpoints(const TensorRef &c, const std::vector<int64_t> &want, const std::string &wantText) {
  if (c.dtype != DType::F32) fail(std::string("checkpoints has dtype ") + dtypeName(c.dtype) + "; expected f32");
  op::checkBasic("checkpoints", view(c), 4, "[NZ, Hv, K, V]");
  if (c.shape != want) fail("checkpoints has shape " + dims(c.shape) + "; expected " + wantText);
  const std::vector<int64_t> st = op::stridesOf(view(c));
  if (st != std::vector<int64_t>{want[1] * want[2] * want[3], want[2] * want[3], want[3], 1})
    fail("checkpoints must be contiguous; got strides " + dims(st));
  op::checkLayout("checkpoints", view(c), true);
}

void logPlan(const std::string &line) {
  if (!rt::logEnabled(rt::LogLevel::Debug)) {
    static std::mutex mu;
    static std::set<std::string> seen;
    std::lock_guard<std::mutex> lock(mu);
    if (!seen.insert(line).second) return;
  }
  rt::logMessage(rt::LogLevel::Info, line);
}

}  // namespace detail

using namespace detail;

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

namespace {
// The checkpoints' shape for p (validated): {} unless both the forward and
// the backward's recompute (its schedule for the same shape and
// segment_chunks: recomputeFusedMode's path) split. Where the recompute alone would not
// split, its unsplit pass is faster than starting from the forward's
// segments (H200, 16/32 heads, 1 x 8192 tokens: forward + backward 1.79 ms
// unsplit, 1.98 ms from checkpoints; docs/performance.md).
std::vector<int64_t> checkpointShape(const ForwardParams &p, int64_t *segChunks) {
  const WorkspaceLayout l = layoutOf(p);
  MachineModel m;
  m.sms = deviceSmCount();
  const bool keep =
      l.schedule.split &&
      forwardSchedule(shapeOf(p), m, p.segment_chunks, recomputeFusedMode(p.q.shape[3], p.v.shape[3])).split;
  if (segChunks) *segChunks = keep ? l.schedule.segChunks : 0;
  if (!keep) return {};
  return {l.schedule.numIds, p.v.shape[2], p.q.shape[3], p.v.shape[3]};
}

void validateAll(const ForwardParams &p) {
  validate(p, "o");
  if (p.checkpoints) {
    const TensorRef &c = *p.checkpoints;
    const std::vector<int64_t> want = checkpointShape(p, nullptr);
    if (want.empty())
      fail("checkpoints are given but forwardCheckpointShape is empty for this call (the forward, or the "
           "backward's recompute, does not split its sequences: the backward needs no checkpoints)");
    checkCheckpoints(c, want, "forwardCheckpointShape = " + dims(want));
    op::checkNoSelfOverlap("checkpoints", view(c));
  }
  op::checkOutputsDisjoint(namedTensors(p, "o"));
}
}  // namespace

std::vector<int64_t> forwardCheckpointShape(const ForwardParams &p, int64_t *segmentChunks) {
  return guarded([&] {
    ForwardParams q = p;
    q.checkpoints.reset();
    validateAll(q);
    return checkpointShape(hasOptions(q) ? optionsPart(q, q.g.data) : q, segmentChunks);
  });
}

void validateForward(const ForwardParams &p) {
  guarded([&] { validateAll(p); });
}

size_t forwardWorkspaceBytes(DType dtype, int64_t B, int64_t T, int64_t Hv, int64_t K, int64_t V,
                             int64_t numSequences, int64_t segmentChunks) {
  if (B < 1 || T < 1 || Hv < 1 || K < 1 || V < 1 || B > kMaxExtent || T > kMaxExtent || Hv > kMaxExtent ||
      K > 128 || V > 128 || numSequences < 0 || numSequences > kMaxExtent || (numSequences > 0 && B != 1))
    fail("forwardWorkspaceBytes: bad sizes B = " + std::to_string(B) + ", T = " + std::to_string(T) +
         ", Hv = " + std::to_string(Hv) + ", K = " + std::to_string(K) + ", V = " + std::to_string(V) +
         ", numSequences = " + std::to_string(numSequences));
  if ((long double)B * T * roundUp(Hv, 4) * (K + V + 4) * 2 > (long double)kMaxBytes)
    fail("forwardWorkspaceBytes: the problem is too large");
  if (segmentChunks < -1)
    fail("forwardWorkspaceBytes: segmentChunks = " + std::to_string(segmentChunks) +
         " (0: the cost model, -1: never split, n > 0: segments of n chunks)");
  return workspaceLayout(dtype, ForwardShape{B, T, Hv, K, V, numSequences, 0, 0, {}}, segmentChunks).total;
}

// With the in-kernel gate: its scratch, then the operator's on its output.
static size_t totalWorkspaceBytes(const ForwardParams &p) {
  if (!hasOptions(p)) return workspaceBytesOf(p);
  return optionsWorkspaceBytes(p) + workspaceBytesOf(optionsPart(p, p.g.data));
}

size_t forwardWorkspaceBytes(const ForwardParams &p) {
  return guarded([&] {
    validateAll(p);
    return totalWorkspaceBytes(p);
  });
}

ForwardConfig forwardConfig(const ForwardParams &p) {
  ForwardConfig c;
  c.dtype = p.q.dtype;
  c.betaDtype = p.beta.dtype;
  c.gDtype = p.g.dtype;
  c.K = int(p.q.shape.size() == 4 ? p.q.shape[3] : 0);
  c.V = int(p.v.shape.size() == 4 ? p.v.shape[3] : 0);
  c.varlen = p.cu_seqlens.has_value();
  c.cuDtype = c.varlen ? p.cu_seqlens->dtype : DType::I32;
  c.l2norm = p.use_qk_l2norm;
  c.initialState = p.initial_state.has_value();
  c.finalState = p.final_state.has_value();
  c.betaActivation = p.beta_activation;
  c.gate = p.use_gate;
  c.gateBias = p.use_gate && p.dt_bias.has_value();
  c.stateVFirst = p.state_v_first;
  c.pool = p.state_pool.has_value();
  c.poolDtype = p.state_pool ? p.state_pool->dtype : DType::F32;
  c.poolKFirst = p.state_pool && p.state_pool_k_first;
  c.poolCheckpoints = p.state_pool && p.checkpoint_every > 0;
  return c;
}

bool ForwardConfig::operator==(const ForwardConfig &o) const { return configKey(*this) == configKey(o); }

std::string ForwardConfig::str() const {
  std::ostringstream s;
  s << "dtype=" << dtypeName(dtype) << " beta=" << dtypeName(betaDtype) << " g=" << dtypeName(gDtype) << " K=" << K
    << " V=" << V
    << " varlen=" << varlen;
  if (varlen) s << " cu=" << dtypeName(cuDtype);
  s << " l2norm=" << l2norm << " initial_state=" << initialState << " final_state=" << finalState;
  if (betaActivation) s << " beta_activation=" << betaActivation;
  if (gate) s << " gate=1 dt_bias=" << gateBias;
  if (stateVFirst) s << " state_v_first=1";
  if (pool) s << " pool=" << dtypeName(poolDtype);
  if (pool && poolKFirst) s << " pool_k_first=1";
  if (pool && poolCheckpoints) s << " pool_checkpoints=1";
  return s.str();
}

std::vector<ForwardConfig> allForwardConfigs() {
  std::vector<ForwardConfig> out;
  for (DType dt : {DType::BF16, DType::F16})
    for (bool betaF32 : {true, false})
      for (bool gF32 : {true, false})
      for (int K : {64, 128, 256})
        for (int V : {64, 128, 256})
          for (int vl : {0, 1, 2})  // dense, varlen i32, varlen i64
            for (bool l2 : {false, true})
              for (bool h0 : {false, true})
                for (bool ht : {false, true}) {
                  ForwardConfig c;
                  c.dtype = dt;
                  c.betaDtype = betaF32 ? DType::F32 : dt;
                  c.gDtype = gF32 ? DType::F32 : dt;
                  c.K = K;
                  c.V = V;
                  c.varlen = vl != 0;
                  c.cuDtype = vl == 2 ? DType::I64 : DType::I32;
                  c.l2norm = l2;
                  c.initialState = h0;
                  c.finalState = ht;
                  out.push_back(c);
                }
  return out;
}

std::string KernelSpec::str() const { return op::specText(file, defines); }

KernelSpec prepareKernelSpec(const ForwardConfig &c) {
  KernelSpec s;
  s.file = kPrepareFile;
  s.defines = {{"DT", dtypeName(c.dtype)},
               {"BT", dtypeName(c.betaDtype)},
               {"GT", dtypeName(c.gDtype)},
               {"CT", dtypeName(c.varlen ? c.cuDtype : DType::I32)},
               {"DK", std::to_string(c.K)},
               {"DV", std::to_string(c.V)},
               {"VARLEN", c.varlen ? "1" : "0"},
               {"L2NORM", c.l2norm ? "1" : "0"}};
  if (c.betaActivation) s.defines["BSIG"] = std::to_string(c.betaActivation);
  return s;
}

KernelSpec stateKernelSpec(const ForwardConfig &c) {
  KernelSpec s;
  s.file = kStateFile;
  s.defines = {{"DT", dtypeName(c.dtype)},
               {"CT", dtypeName(c.varlen ? c.cuDtype : DType::I32)},
               {"DK", std::to_string(c.K)},
               {"DV", std::to_string(c.V)},
               {"VARLEN", c.varlen ? "1" : "0"},
               {"L2NORM", c.l2norm ? "1" : "0"},
               {"HAS_H0", c.initialState ? "1" : "0"},
               {"STORE_HT", c.finalState ? "1" : "0"},
               {"PASS", "2"}};
  return s;
}

KernelSpec segmentKernelSpec(const ForwardConfig &c) {
  KernelSpec s = stateKernelSpec(c);
  s.defines["STORE_HT"] = "0";  // pass 1 writes segment states only
  s.defines["PASS"] = "1";
  return s;
}

KernelSpec fusedKernelSpec(const ForwardConfig &c, int64_t bv) {
  // Every constant of prepare's (the chunk-local work) and the states' of
  // the state kernel's output pass; BV only where it is not the default (V).
  KernelSpec s = prepareKernelSpec(c);
  s.file = kFusedFile;
  if (c.pool) {
    s.defines["POOL"] = "1";
    s.defines["PT"] = dtypeName(c.poolDtype);
    if (c.poolKFirst) s.defines["PKF"] = "1";
    if (c.poolCheckpoints) s.defines["CKPT"] = "1";
  }
  s.defines["HAS_H0"] = c.initialState ? "1" : "0";
  s.defines["STORE_HT"] = c.finalState ? "1" : "0";
  if (bv == 0) bv = fusedWideBv(c.V);
  if ((bv != 64 && bv != fusedWideBv(c.V)) || c.V % bv != 0)
    fail("fused kernel: V slice " + std::to_string(bv) + " for V = " + std::to_string(c.V) + " (64 or " +
         std::to_string(fusedWideBv(c.V)) + ")");
  if (bv != c.V) s.defines["BV"] = std::to_string(bv);
  return s;
}

KernelSpec fusedPass1KernelSpec(const ForwardConfig &c) {
  KernelSpec s;
  s.file = kFusedPass1File;
  s.defines = {{"DT", dtypeName(c.dtype)},
               {"GT", dtypeName(c.gDtype)},
               {"CT", dtypeName(c.varlen ? c.cuDtype : DType::I32)},
               {"DK", std::to_string(c.K)},
               {"DV", std::to_string(c.V)},
               {"VARLEN", c.varlen ? "1" : "0"},
               {"L2NORM", c.l2norm ? "1" : "0"},
               {"HAS_H0", c.initialState ? "1" : "0"}};
  if (c.pool) {
    s.defines["POOL"] = "1";
    s.defines["PT"] = dtypeName(c.poolDtype);
    if (c.poolKFirst) s.defines["PKF"] = "1";
  }
  return s;
}

KernelSpec tmatKernelSpec(const ForwardConfig &c) {
  KernelSpec s = prepareKernelSpec(c);
  s.defines["OUT_T"] = "1";
  return s;
}

KernelSpec mergeKernelSpec(const ForwardConfig &c) {
  KernelSpec s;
  s.file = kMergeFile;
  s.defines = {{"CT", dtypeName(c.varlen ? c.cuDtype : DType::I32)},
               {"DK", std::to_string(c.K)},
               {"DV", std::to_string(c.V)},
               {"VARLEN", c.varlen ? "1" : "0"}};
  return s;
}

const std::vector<std::pair<std::string, std::string>> &embeddedKernelSources() {
  return detail::embeddedKernelTable();
}

const std::string *embeddedKernelSource(const std::string &file) {
  return op::KernelRegistry::find(detail::embeddedKernelTable(), file);
}

void detail::checkConfig(const ForwardConfig &c) {
  if (!isHalf(c.dtype)) fail(std::string("warmup: dtype ") + dtypeName(c.dtype) + " is not bf16 or f16");
  if (c.betaDtype != DType::F32 && c.betaDtype != c.dtype)
    fail(std::string("warmup: beta dtype ") + dtypeName(c.betaDtype) + " is not f32 or " + dtypeName(c.dtype));
  if (c.gDtype != DType::F32 && c.gDtype != c.dtype)
    fail(std::string("warmup: g dtype ") + dtypeName(c.gDtype) + " is not f32 or " + dtypeName(c.dtype));
  if (const std::string e = headDimsError(c.K, c.V); !e.empty()) fail("warmup: " + e);
  if (c.varlen && c.cuDtype != DType::I32 && c.cuDtype != DType::I64)
    fail(std::string("warmup: cu_seqlens dtype ") + dtypeName(c.cuDtype) + " is not i32 or i64");
}

namespace {

void warmupConfig(const ForwardConfig &cIn, bool loadOnGpu) {
  checkConfig(cIn);
  // The gate's first pass and the states' transposes, then the rest on
  // their outputs.
  std::vector<KernelSpec> around;
  if (cIn.gate) around.push_back(gateKernelSpec(cIn, 0));
  if (cIn.stateVFirst && cIn.initialState) around.push_back(stateTransposeKernelSpec(cIn, true));
  if (cIn.stateVFirst && cIn.finalState) around.push_back(stateTransposeKernelSpec(cIn, false));
  for (const KernelSpec &spec : around) registry().warm({&registry().slot(opSpec(spec))}, loadOnGpu);
  const ForwardConfig c = ungated(cIn);
  ConfigKernels ck = kernelsFor(c);
  // (K = 256: the two-kernel path alone, unsplit.)
  const std::vector<op::KernelSlot *> slots =
      splitAndFusedTake(c.K) ? std::vector<op::KernelSlot *>{ck.prepare, ck.state,      ck.segment,    ck.merge,
                                                              ck.fused,   ck.fusedSlice, ck.fusedPass1, ck.tmat}
                             : std::vector<op::KernelSlot *>{ck.prepare, ck.state};
  registry().warm(slots, loadOnGpu);
}

LaunchPlan makeLaunchPlan(const ForwardParams &p, void *workspace, size_t workspaceBytes) {
  validateAll(p);
  if (hasOptions(p))
    fail("planForward does not plan the in-kernel gate or V-first states: plan the call they run (K-first states, "
         "g the gate's output) instead");
  const WorkspaceLayout l = layoutOf(p);
  checkWorkspace(p, l, workspace, workspaceBytes);
  Plan plan = buildPlan(p, l, workspace);
  LaunchPlan lp;
  lp.config = plan.config;
  lp.fused = plan.schedule.fused;
  if (launchesPrepare(plan.schedule)) {
    lp.prepareSpec = publicSpec(*plan.kernels.prepare);
    lp.prepare = std::move(plan.prepare);
    lp.prepareInfo = compiled(*plan.kernels.prepare).info();
    lp.prepareGrid = plan.prepareGrid;
  }
  if (!plan.schedule.fused) {
    lp.stateSpec = publicSpec(*plan.kernels.state);
    lp.state = std::move(plan.state);
    lp.stateInfo = compiled(*plan.kernels.state).info();
    lp.stateGrid = plan.stateGrid;
  } else {
    lp.fusedSpec = publicSpec(*plan.kernels.fused);
    lp.fusedArgs = std::move(plan.fusedArgs);
    lp.fusedInfo = compiled(*plan.kernels.fused).info();
    lp.fusedGrid = plan.fusedGrid;
  }
  lp.split = plan.schedule.split;
  lp.segmentChunks = plan.schedule.segChunks;
  if (lp.split) {
    lp.segmentSpec = publicSpec(*plan.kernels.segment);
    lp.mergeSpec = publicSpec(*plan.kernels.merge);
    lp.segment = std::move(plan.segment);
    lp.merge = std::move(plan.merge);
    lp.segmentInfo = compiled(*plan.kernels.segment).info();
    lp.mergeInfo = compiled(*plan.kernels.merge).info();
    lp.segmentGrid = plan.segmentGrid;
    lp.mergeGrid = plan.mergeGrid;
  }
  return lp;
}

// The plan in the log (detail::logPlan).
void logSchedule(const ForwardParams &p, const Schedule &s) {
  if (!rt::logEnabled(rt::LogLevel::Info)) return;
  detail::logPlan("gdn forward " + describeSchedule(shapeOf(p), s));
}

void launchForward(const ForwardParams &p, void *workspace, size_t workspaceBytes) {
  validateAll(p);
  const WorkspaceLayout l = layoutOf(p);
  checkWorkspace(p, l, workspace, workspaceBytes);
  CUcontext ctx = op::checkDevice(namedTensors(p, "o"), workspace, l.total);
  Plan plan = buildPlan(p, l, workspace);
  logSchedule(p, l.schedule);
  // Launch order: prepare (the two-kernel path, or T for the fused path's
  // split), (with a split) pass 1 and the merge, then pass 2 (the state
  // kernel, or the fused kernel).
  std::vector<op::LaunchStep> steps;
  if (launchesPrepare(plan.schedule)) steps.push_back({plan.kernels.prepare, &plan.prepare});
  if (plan.schedule.split) {
    steps.push_back({plan.kernels.segment, &plan.segment});
    steps.push_back({plan.kernels.merge, &plan.merge});
  }
  if (plan.schedule.fused) steps.push_back({plan.kernels.fused, &plan.fusedArgs});
  else steps.push_back({plan.kernels.state, &plan.state});
  op::launchAll(registry(), ctx, steps);
}

}  // namespace

void warmup(const ForwardConfig &c, bool loadOnGpu) {
  guarded([&] { warmupConfig(c, loadOnGpu); });
}

void warmup(DType dtype, int K, int V, bool loadOnGpu) {
  for (const ForwardConfig &c : allForwardConfigs())
    if (c.dtype == dtype && c.K == K && c.V == V) warmup(c, loadOnGpu);
}

LaunchPlan planForward(const ForwardParams &p, void *workspace, size_t workspaceBytes) {
  return guarded([&] { return makeLaunchPlan(p, workspace, workspaceBytes); });
}

void forward(const ForwardParams &p, void *workspace, size_t workspaceBytes) {
  guarded([&] {
    if (!hasOptions(p)) {
      launchForward(p, workspace, workspaceBytes);
      return;
    }
    validateAll(p);
    op::checkWorkspace(workspace, workspaceBytes, totalWorkspaceBytes(p), namedTensors(p, "o"));
    launchWithOptions(p, workspace, workspaceBytes);
  });
}

void detail::launchForwardImpl(const ForwardParams &p, void *workspace, size_t workspaceBytes) {
  launchForward(p, workspace, workspaceBytes);
}

}  // namespace qla::gdn
