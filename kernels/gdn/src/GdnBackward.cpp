// The GDN backward operator: the contract of its arguments, its workspace,
// the kernel specializations and the launches (qla/gdn.h, KERNELS.md
// "Backward"). It shares the input contract, the forward's workspace regions
// and the kernel registry with the forward (GdnInternal.h) and the generic
// parts with every operator (kernels/common, qla::op).
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <sstream>

#include "GdnInternal.h"
#include "qla/kernels/gdn_bwd_dh.h"
#include "qla/kernels/gdn_bwd_dqk.h"
#include "qla/kernels/gdn_bwd_finish.h"
#include "qla/kernels/gdn_bwd_fused.h"
#include "qla/kernels/gdn_bwd_wy.h"
#include "qla/kernels/gdn_fwd_fused.h"
#include "qla/kernels/gdn_fwd_fused_pass1.h"
#include "qla/kernels/gdn_fwd_merge.h"
#include "qla/kernels/gdn_fwd_prepare.h"
#include "qla/kernels/gdn_fwd_state.h"
#include "qla/op/Device.h"
#include "qla/runtime/Log.h"

namespace qla::gdn {
namespace {

using namespace detail;
using op::dims;

constexpr const char *kDhFile = "gdn_bwd_dh.qla";
constexpr const char *kDqkFile = "gdn_bwd_dqk.qla";
constexpr const char *kWyFile = "gdn_bwd_wy.qla";
constexpr const char *kFinishFile = "gdn_bwd_finish.qla";
constexpr const char *kFusedBwdFile = "gdn_bwd_fused.qla";

// The V slice of gdn_bwd_dh.qla's CTAs (and so SD's partial sums: V / slice
// of them), from the shapes and the backward's schedule: 64 when the
// 32-wide slices' CTAs (V / 32 per v-head and segment) are more than one
// wave of the machine, else 32. A 64-wide CTA computes K Qᵀ and loads q, k,
// w once for twice the columns (its chunk step measured 1.4x the 32-wide
// one's); under one wave the narrow slices keep the chain parallel. H200,
// FlashQLA's 32 backward rows (measured 2026-12-03; docs/performance.md's git
// history): this rule picks the faster slice on every row but one tie (2/4
// 8k_2seq, 0.995).
// Segments: the split's real ones, max(N, chunks / segment length) (cu_seqlens'
// values are not looked at), or one per sequence; on the fused gradient
// kernel's path the split is its own (dhScheduleOf), and the slice is its
// pass 1's (H100, 2026-12-05: 16/32 1x8192 in segments of 32 chunks, 0.244
// ms in 32-wide slices, 0.226 in 64-wide; 2/4 1x32768 0.170 both).
// QLA_GDN_DH_BV=32 or 64 forces the slice (experiments).
int dhSliceOf(const BackwardParams &p, const Schedule &sch, int sms) {
  const int64_t B = p.q.shape[0], T = p.q.shape[1], Hv = p.v.shape[2], V = p.v.shape[3];
  const char *e = std::getenv("QLA_GDN_DH_BV");
  if (e && *e) {
    const int bv = std::atoi(e);
    if (bv != 32 && bv != 64) fail("QLA_GDN_DH_BV = " + std::string(e) + " (32 or 64)");
    if (bv <= V) return bv;
  }
  if (V < 64 || p.q.shape[3] > 128) return 32;  // (at K = 256 the 64-wide slice spills)
  const int64_t N = p.cu_seqlens ? p.cu_seqlens->shape[0] - 1 : B;
  const int64_t chunks = (T + kChunk - 1) / kChunk;  // per sequence (dense) or in all (varlen)
  int64_t segs = N;
  if (sch.split) {
    const int64_t per = (chunks + sch.segChunks - 1) / sch.segChunks;
    segs = p.cu_seqlens ? std::max(N, per) : B * per;
  }
  return (V / 32) * Hv * segs > sms ? 64 : 32;
}

// The fused gradient kernel is the default; QLA_GDN_BWD_FUSED=0 (read at
// every call) keeps the six kernels (dh, dqk, wy in its place).
bool fusedBackwardRequested() {
  const char *e = std::getenv("QLA_GDN_BWD_FUSED");
  return !(e && std::string(e) == "0");
}

// The head sizes gdn_bwd_fused.qla takes (fusedBackwardEligible).
bool fusedBackwardTakes(int64_t K, int64_t V) { return K <= 128 && V <= 128; }

}  // namespace

int detail::recomputeFusedMode(int64_t K, int64_t V) {
  return fusedBackwardRequested() && fusedBackwardTakes(K, V) ? 1 : -1;
}

namespace {

// The fused gradient kernel takes the call (backwardConfig's c.fused, from
// the shapes alone).
bool fusedPathTaken(const BackwardParams &p) {
  return fusedBackwardRequested() && p.q.shape.size() == 4 && p.v.shape.size() == 4 &&
         fusedBackwardTakes(p.q.shape[3], p.v.shape[3]);
}

ForwardParams forwardPart(const BackwardParams &p) {
  ForwardParams f;
  f.q = p.q;
  f.k = p.k;
  f.v = p.v;
  f.g = p.g;
  f.beta = p.beta;
  f.o = p.dv;  // checked as o would be: [B, T, Hv, V], the dtype of q
  f.initial_state = p.initial_state;
  f.cu_seqlens = p.cu_seqlens;
  f.scale = p.scale;
  f.use_qk_l2norm = p.use_qk_l2norm;
  f.beta_activation = p.beta_activation;
  f.use_gate = p.use_gate;
  f.A_log = p.A_log;
  f.dt_bias = p.dt_bias;
  f.state_v_first = p.state_v_first;
  f.cu_seqlens_host = p.cu_seqlens_host;
  f.stream = p.stream;
  f.segment_chunks = p.segment_chunks;
  return f;
}

// The backward's schedule (the recompute's split, also the dh kernel's).
Schedule backwardSchedule(const BackwardParams &p, int sms) {
  MachineModel m;
  m.sms = sms;
  return forwardSchedule(shapeOf(forwardPart(p)), m, p.segment_chunks, fusedPathTaken(p) ? 1 : -1);
}

// The state gradient's segments: the recompute's (fwd) for the dh kernel;
// the fused gradient kernel's own (fusedBackwardSchedule), unless
// segment_chunks forces a length (as it does the recompute's) or -1 forbids
// a split. With checkpoints, segment_chunks is the forward's segment length
// (made for the forward's pass, some ten times lighter a chunk) and says
// nothing of these: the model picks (measured, H100, 2026-12-05: 2/4
// 1x8192 in the forward's segments of 16 chunks 0.567 ms a step, the
// model's 4 chunks 0.459).
Schedule dhScheduleOf(const BackwardParams &p, const Schedule &fwd) {
  if (!fusedPathTaken(p)) return fwd;
  MachineModel m;
  m.sms = deviceSmCount();
  return fusedBackwardSchedule(shapeOf(forwardPart(p)), m, p.checkpoints ? 0 : p.segment_chunks);
}

// Every tensor argument (op::TensorView refers to p's shape vectors: p must
// outlive the list).
std::vector<op::NamedTensor> namedTensors(const BackwardParams &p) {
  std::vector<op::NamedTensor> v = {{"q", view(p.q), false},       {"k", view(p.k), false},
                                    {"v", view(p.v), false},       {"g", view(p.g), false},
                                    {"beta", view(p.beta), false}, {"dv", view(p.dv), true}};
  if (p.initial_state) v.push_back({"initial_state", view(*p.initial_state), false});
  if (p.cu_seqlens) v.push_back({"cu_seqlens", view(*p.cu_seqlens), false});
  v.push_back({"do", view(p.dout), false});
  if (p.dht) v.push_back({"dht", view(*p.dht), false});
  if (p.checkpoints) v.push_back({"checkpoints", view(*p.checkpoints), false});
  v.push_back({"dq", view(p.dq), true});
  v.push_back({"dk", view(p.dk), true});
  v.push_back({"dg", view(p.dg), true});
  v.push_back({"dbeta", view(p.dbeta), true});
  if (p.dh0) v.push_back({"dh0", view(*p.dh0), true});
  if (p.A_log) v.push_back({"A_log", view(*p.A_log), false});
  if (p.dt_bias) v.push_back({"dt_bias", view(*p.dt_bias), false});
  if (p.dA_log) v.push_back({"dA_log", view(*p.dA_log), true});
  if (p.ddt_bias) v.push_back({"ddt_bias", view(*p.ddt_bias), true});
  return v;
}

void checkTensor(const char *name, const TensorRef &t, DType want, const char *wantWhy,
                 const std::vector<int64_t> &shape, const char *shapeText, bool tma) {
  op::checkTensor(name, view(t), want, wantWhy, shape, shapeText);
  op::checkLayout(name, view(t), tma);
}

void validate(const BackwardParams &p) {
  const ForwardParams f = forwardPart(p);
  detail::validate(f, "dv");
  const int64_t B = p.q.shape[0], T = p.q.shape[1], Hqk = p.q.shape[2], K = p.q.shape[3];
  const int64_t Hv = p.v.shape[2], V = p.v.shape[3];
  const int64_t N = p.cu_seqlens ? p.cu_seqlens->shape[0] - 1 : B;
  const DType dt = p.q.dtype;
  checkTensor("do", p.dout, dt, " (the dtype of q)", {B, T, Hv, V}, "[B, T, Hv, V]", true);
  const std::vector<int64_t> sShape = p.state_v_first ? std::vector<int64_t>{N, Hv, V, K}
                                                      : std::vector<int64_t>{N, Hv, K, V};
  const char *sText = p.state_v_first ? "[N, Hv, V, K] (state_v_first)" : "[N, Hv, K, V]";
  if (p.dht) checkTensor("dht", *p.dht, DType::F32, "", sShape, sText, true);
  checkTensor("dq", p.dq, dt, " (the dtype of q)", {B, T, Hqk, K}, "[B, T, Hqk, K]", true);
  checkTensor("dk", p.dk, dt, " (the dtype of q)", {B, T, Hqk, K}, "[B, T, Hqk, K]", true);
  checkTensor("dg", p.dg, p.g.dtype, " (the dtype of g)", {B, T, Hv}, "[B, T, Hv]", false);
  checkTensor("dbeta", p.dbeta, p.beta.dtype, " (the dtype of beta)", {B, T, Hv}, "[B, T, Hv]", false);
  if (p.dh0) {
    if (!p.initial_state) fail("dh0 is given but initial_state is not (dh0 is the initial state's gradient)");
    checkTensor("dh0", *p.dh0, DType::F32, "", sShape, sText, true);
  }
  if (p.state_v_first)  // transposed by gdn_state_t.qla, which indexes them densely
    for (const auto &[name, t] : {std::pair<const char *, const std::optional<TensorRef> *>{"dht", &p.dht},
                                  {"dh0", &p.dh0}})
      if (*t && op::stridesOf(view(**t)) != std::vector<int64_t>{Hv * V * K, V * K, K, 1})
        fail(std::string(name) + " must be contiguous with state_v_first; got strides " +
             dims(op::stridesOf(view(**t))));
  for (const auto &[name, t] : {std::pair<const char *, const TensorRef *>{"dq", &p.dq},
                                {"dk", &p.dk},
                                {"dg", &p.dg},
                                {"dbeta", &p.dbeta}})
    op::checkNoSelfOverlap(name, view(*t));
  if (p.dh0) op::checkNoSelfOverlap("dh0", view(*p.dh0));
  // The in-kernel gate's parameters' gradients.
  if (p.dA_log) {
    if (!p.use_gate) fail("dA_log is given but use_gate is off (dA_log is the in-kernel gate's A_log's gradient)");
    checkTensor("dA_log", *p.dA_log, DType::F32, "", {Hv}, "[Hv]", false);
    op::checkNoSelfOverlap("dA_log", view(*p.dA_log));
  }
  if (p.ddt_bias) {
    if (!p.use_gate || !p.dt_bias)
      fail("ddt_bias is given but dt_bias is not (ddt_bias is the in-kernel gate's dt_bias's gradient)");
    checkTensor("ddt_bias", *p.ddt_bias, DType::F32, "", {Hv}, "[Hv]", false);
    op::checkNoSelfOverlap("ddt_bias", view(*p.ddt_bias));
  }
  if (p.checkpoints) {
    // The forward's segment start states: its split, given again as
    // segment_chunks, fixes their count.
    const TensorRef &c = *p.checkpoints;
    const int64_t S = p.segment_chunks, chunks = (T + kChunk - 1) / kChunk;
    if (S <= 0)
      fail("checkpoints are given with segment_chunks = " + std::to_string(S) +
           "; expected the forward's segment length (forwardCheckpointShape)");
    const ForwardShape shape{B, T, Hv, K, V, p.cu_seqlens ? N : 0, 0, 0, {}};
    if (chunks <= S)
      fail("checkpoints are given but segments of segment_chunks = " + std::to_string(S) +
           " chunks cut no sequence (the forward kept no checkpoints for this shape)");
    const std::vector<int64_t> want = {segmentIds(shape, S), Hv, K, V};
    checkCheckpoints(c, want, dims(want) + " (the forward's, for segments of " + std::to_string(S) + " chunks)");
  }
  op::checkOutputsDisjoint(namedTensors(p));
}

//===----------------------------------------------------------------------===//
// Workspace: the forward's regions (W, U, GC, the split's), then A, the
// states H and V_new, the state gradients DH and dVd, and the per-v-head
// partial gradients.
//===----------------------------------------------------------------------===//

struct BackwardLayout {
  WorkspaceLayout fwd;
  // The state gradient's segments (dhScheduleOf) and their regions: the
  // segments' end gradients (GS), pass 1's L and its P as a hi + lo pair.
  // The recompute's regions where both split alike, else their own.
  Schedule dhSched;
  size_t gs = 0, dls = 0, dph = 0, dpl = 0;
  size_t am = 0, h = 0, vn = 0, dh = 0, dvd = 0, sd = 0, dqh = 0, dkh = 0, dk2 = 0, dw = 0, rq = 0, rk = 0, rw = 0;
  size_t ul = 0, vnl = 0;  // U's and V_new's lo parts (BackwardConfig::hilo)
  size_t dummy = 0, total = 0;
  int64_t stateSlots = 0;  // H's and DH's second dim
};

BackwardLayout layoutOf(const BackwardParams &p) {
  const int64_t B = p.q.shape[0], T = p.q.shape[1], Hv = p.v.shape[2], K = p.q.shape[3], V = p.v.shape[3];
  const int64_t N = p.cu_seqlens ? p.cu_seqlens->shape[0] - 1 : 0;
  const size_t eb = size_t(dtypeBytes(p.q.dtype));
  op::WorkspacePlanner ws;
  BackwardLayout l;
  // The recompute: prepare and the state kernel (W, U, GC, the split's
  // regions), or on the fused gradient kernel's path gdn_fwd_fused.qla with
  // BWD = 1 (GC, below; with a split TS, RK and the split's regions).
  const bool six = !fusedPathTaken(p);
  l.fwd = addForwardRegions(ws, p.q.dtype, shapeOf(forwardPart(p)), p.segment_chunks, six ? -1 : 1,
                            p.use_qk_l2norm, /*withoutWU=*/true);
  l.dhSched = dhScheduleOf(p, l.fwd.schedule);
  if (l.dhSched.split && l.fwd.schedule.split && l.dhSched.segChunks == l.fwd.schedule.segChunks) {
    l.gs = l.fwd.hs, l.dls = l.fwd.ls, l.dph = l.fwd.ph, l.dpl = l.fwd.pl;
  } else if (l.dhSched.split) {
    const size_t nz = size_t(l.dhSched.numIds);
    l.gs = ws.add(nz * size_t(Hv * K * V) * 4);
    l.dls = ws.add(nz * size_t(Hv * K * V) * 4);
    l.dph = ws.add(nz * size_t(Hv * K * K) * 2);
    l.dpl = ws.add(nz * size_t(Hv * K * K) * 2);
  }
  const int64_t TC = l.fwd.gcSlots;
  const size_t nt = size_t(B * T * Hv);
  // State slots: chunk c of sequence n enters with slot bos / C + 2n + c
  // (varlen) or c; the slot after a sequence's last chunk holds its final
  // state: cdiv(T, C) + 2N - 1 slots (varlen), cdiv(T, C) + 1 otherwise.
  l.stateSlots = (T + kChunk - 1) / kChunk + (N > 0 ? 2 * N - 1 : 1);
  const size_t stateBytes = size_t(B * l.stateSlots * Hv * K * V) * eb;
  if (!six) l.fwd.gc = ws.add(size_t(B * Hv * TC) * 4);
  // The six kernels' intermediates (dS' per chunk, dVd, dw, SD per V slice
  // of dh) only where they run: the fused gradient kernel keeps them on chip
  // (SD: one slice).
  l.am = ws.add(size_t(B * Hv * TC * kChunk) * (six ? 4 : eb));  // A in f32, or DT for the fused kernel
  l.h = ws.add(stateBytes);
  // V_new (and its lo part, below) only for the six kernels: the fused
  // gradient kernel makes it from H and A.
  if (six) {
    l.vn = ws.add(nt * size_t(V) * eb);
    l.dh = ws.add(stateBytes);
    l.dvd = ws.add(nt * size_t(V) * eb);
  }
  l.sd = ws.add(size_t((six ? V / dhSliceOf(p, l.fwd.schedule, deviceSmCount()) : 1) * B * Hv * TC) * 4);
  l.rq = ws.add(size_t(B * Hv * TC) * 4);
  l.rk = ws.add(size_t(B * Hv * TC) * 4);
  l.rw = ws.add(size_t(B * Hv * TC) * 4);
  if (six && recomputeHiLo(p.q.dtype)) l.vnl = ws.add(nt * size_t(V) * eb);
  // The six kernels' recompute's W, U and U's lo part UL are read last by
  // the state kernel, its split's pass 1 and the state gradient's dh kernels
  // (W); the gradients' per-v-head partials are written first by the kernels
  // after them (dqk), on the same stream (no kernel of the backward starts
  // before its predecessor is done): the two groups share bytes.
  // On the fused path W alone, where the state gradient's pass 1 reads it
  // (its schedule splits: the recompute's SAVE_W), shares them the same way.
  if (six || l.dhSched.split) {
    const size_t shared = ws.mark();
    l.fwd.w = ws.add(nt * size_t(K) * eb);
    if (six) l.fwd.u = ws.add(nt * size_t(V) * eb);
    if (six && recomputeHiLo(p.q.dtype)) l.ul = ws.add(nt * size_t(V) * eb);
    ws.rewind(shared);
  }
  l.dqh = ws.add(nt * size_t(K) * 4);
  if (six) l.dkh = ws.add(nt * size_t(K) * 4);  // the fused kernel sums dk's terms into DK2
  l.dk2 = ws.add(nt * size_t(K) * 4);
  if (six) l.dw = ws.add(nt * size_t(K) * eb);
  l.dummy = ws.addDummy();
  l.total = ws.total();
  return l;
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

// The recompute is prepare, state (and with a split segment, merge); on the
// fused gradient kernel's path prepare is prepare's T (OUT_T = 1, launched
// with a split only), segment gdn_fwd_fused_pass1.qla and state
// gdn_fwd_fused.qla with BWD = 1 (whole heads; stateSlice: 64-wide V slices).
struct BackwardKernels {
  op::KernelSlot *prepare = nullptr, *segment = nullptr, *merge = nullptr, *state = nullptr;
  op::KernelSlot *stateSlice = nullptr;
  op::KernelSlot *dh = nullptr, *dqk = nullptr, *wy = nullptr, *finish = nullptr;
  op::KernelSlot *dhSegment = nullptr, *dhMerge = nullptr;  // with a split schedule
  op::KernelSlot *fused = nullptr;                           // c.fused: in place of dh, dqk, wy
};

std::string key(const BackwardConfig &c) { return c.str(); }

BackwardKernels kernelsFor(const BackwardConfig &c) {
  static std::mutex mu;
  static std::map<std::string, BackwardKernels> memo;
  const std::string k = key(c);
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = memo.find(k);
    if (it != memo.end()) return it->second;
  }
  op::KernelRegistry &r = registry();
  BackwardKernels bk;
  if (c.fused) {
    bk.prepare = &r.slot(opSpec(tmatKernelSpec(c.fwd)));
    bk.segment = &r.slot(opSpec(fusedPass1KernelSpec(c.fwd)));
    bk.state = &r.slot(opSpec(backwardRecomputeKernelSpec(c, fusedWideBv(c.fwd.V))));
    bk.stateSlice = &r.slot(opSpec(backwardRecomputeKernelSpec(c, 64)));
  } else {
    bk.prepare = &r.slot(opSpec(backwardPrepareKernelSpec(c)));
    bk.segment = &r.slot(opSpec(backwardSegmentKernelSpec(c)));
    bk.state = &r.slot(opSpec(backwardStateKernelSpec(c)));
  }
  bk.merge = &r.slot(opSpec(mergeKernelSpec(c.fwd)));
  bk.dh = &r.slot(opSpec(dhKernelSpec(c)));
  bk.dhSegment = &r.slot(opSpec(dhSegmentKernelSpec(c)));
  bk.dhMerge = &r.slot(opSpec(dhMergeKernelSpec(c)));
  bk.dqk = &r.slot(opSpec(dqkKernelSpec(c)));
  bk.wy = &r.slot(opSpec(wyKernelSpec(c)));
  bk.finish = &r.slot(opSpec(finishKernelSpec(c)));
  if (c.fused) bk.fused = &r.slot(opSpec(fusedBackwardKernelSpec(c)));
  std::lock_guard<std::mutex> lock(mu);
  memo[k] = bk;
  return bk;
}

// The kernels a configuration can launch (at K = 256 no split: no segment
// passes or merges).
std::vector<op::KernelSlot *> all(const BackwardKernels &k, const BackwardConfig &c) {
  if (!splitAndFusedTake(c.fwd.K)) return {k.prepare, k.state, k.dh, k.dqk, k.wy, k.finish};
  if (k.fused)
    return {k.prepare, k.segment, k.merge, k.state, k.stateSlice, k.dhSegment, k.dhMerge, k.fused, k.finish};
  return {k.prepare, k.segment, k.merge, k.state, k.dhSegment, k.dhMerge, k.dh, k.dqk, k.wy, k.finish};
}

struct Plan {
  BackwardKernels kernels;
  bool split = false;
  bool recomputeSplit = false;  // split without the forward's checkpoints: the states' pass 1 and merge run
  rt::LaunchArgs prepare, segment, merge, state, dhSegment, dhMerge, dh, dqk, wy, finish, fused;
};

// The state gradient's split in the log (QLA_LOG=info: the first call of
// each shape and choice; debug: every call), e.g. "gdn backward B=1 T=8192
// Hv=32 ...: fused gradient kernel, state gradient in segments of 32 chunks
// (4 segment ids); model 947 us".
void logStateGradientSchedule(const BackwardParams &p, const BackwardLayout &l) {
  if (!rt::logEnabled(rt::LogLevel::Info)) return;
  const Schedule &d = l.dhSched;
  std::string line = "gdn backward " + describeShape(shapeOf(forwardPart(p)));
  if (fusedPathTaken(p)) {
    line += "fused gradient kernel, state gradient ";
    line += d.split ? "in segments of " + std::to_string(d.segChunks) + " chunks (" + std::to_string(d.numIds) +
                          " segment ids)"
                    : std::string("unsplit");
    char model[48];
    std::snprintf(model, sizeof model, "; model %.0f us", d.predictedUs);
    line += model;
  } else {
    line += "dh, dqk, wy kernels, state gradient ";
    line += d.split ? "in the recompute's segments of " + std::to_string(d.segChunks) + " chunks" : "unsplit";
  }
  detail::logPlan(line);
}

// p validated, workspace checked against l = layoutOf(p).
Plan buildPlan(const BackwardParams &p, const BackwardLayout &l, void *workspace) {
  const BackwardConfig c = backwardConfig(p);
  const ForwardConfig &fc = c.fwd;
  Plan plan;
  plan.kernels = kernelsFor(c);
  plan.split = l.dhSched.split;
  plan.recomputeSplit = l.fwd.schedule.split && !p.checkpoints;
  // The fused recompute in the schedule's V slice.
  if (c.fused && l.fwd.schedule.fusedBv < fusedWideBv(c.fwd.V)) plan.kernels.state = plan.kernels.stateSlice;
  const int64_t B = p.q.shape[0], T = p.q.shape[1], Hv = p.v.shape[2], K = p.q.shape[3], V = p.v.shape[3];
  const int64_t N = fc.varlen ? p.cu_seqlens->shape[0] - 1 : B;
  const int64_t NZ = l.fwd.schedule.numIds, DZ = l.dhSched.numIds, TC = l.fwd.gcSlots, NH = l.stateSlots;
  const bool fsplit = l.fwd.schedule.split;
  char *ws = static_cast<char *>(workspace);
  void *dummy = ws + l.dummy;
  using op::contiguousArg;

  // (The fused recompute writes W only for the state gradient's split.)
  rt::TensorArg W = contiguousArg(c.fused && !c.saveW ? dummy : ws + l.fwd.w, {B, T, Hv, K});
  rt::TensorArg U = contiguousArg(ws + l.fwd.u, {B, T, Hv, V});
  rt::TensorArg GC = contiguousArg(ws + l.fwd.gc, {B, Hv, TC});
  rt::TensorArg CU = fc.varlen ? arg(*p.cu_seqlens) : contiguousArg(dummy, {1});
  rt::TensorArg H0 = fc.initialState ? arg(*p.initial_state) : contiguousArg(dummy, {N, Hv, K, V});
  rt::TensorArg HS = contiguousArg(fsplit ? ws + l.fwd.hs : dummy, {NZ, Hv, K, V});
  // The states' pass 2 starts each segment from the forward's checkpoints
  // when given (validated: of HS's shape), else from the merge's HS.
  rt::TensorArg HSin = p.checkpoints ? arg(*p.checkpoints) : HS;
  rt::TensorArg LS = contiguousArg(fsplit ? ws + l.fwd.ls : dummy, {NZ, Hv, K, V});
  rt::TensorArg PH = contiguousArg(fsplit ? ws + l.fwd.ph : dummy, {NZ, Hv, K, K});
  rt::TensorArg PL = contiguousArg(fsplit ? ws + l.fwd.pl : dummy, {NZ, Hv, K, K});
  // The state gradient's segments (BackwardLayout::dhSched).
  rt::TensorArg GS = contiguousArg(plan.split ? ws + l.gs : dummy, {DZ, Hv, K, V});
  rt::TensorArg DLS = contiguousArg(plan.split ? ws + l.dls : dummy, {DZ, Hv, K, V});
  rt::TensorArg DPH = contiguousArg(plan.split ? ws + l.dph : dummy, {DZ, Hv, K, K});
  rt::TensorArg DPL = contiguousArg(plan.split ? ws + l.dpl : dummy, {DZ, Hv, K, K});
  rt::TensorArg AM = contiguousArg(ws + l.am, {B, Hv, TC, kChunk});
  rt::TensorArg H = contiguousArg(ws + l.h, {B, NH, Hv, K, V});
  rt::TensorArg VN = contiguousArg(c.fused ? dummy : ws + l.vn, {B, T, Hv, V});
  rt::TensorArg UL = contiguousArg(c.hilo() ? ws + l.ul : dummy, {B, T, Hv, V});
  rt::TensorArg VNL = contiguousArg(c.hilo() && !c.fused ? ws + l.vnl : dummy, {B, T, Hv, V});
  rt::TensorArg DH = contiguousArg(c.fused ? dummy : ws + l.dh, {B, NH, Hv, K, V});
  rt::TensorArg DVD = contiguousArg(c.fused ? dummy : ws + l.dvd, {B, T, Hv, V});
  rt::TensorArg SD = contiguousArg(ws + l.sd, {c.fused ? 1 : V / c.dhBv, B, Hv, TC});
  rt::TensorArg DQH = contiguousArg(ws + l.dqh, {B, T, Hv, K});
  rt::TensorArg DKH = contiguousArg(c.fused ? dummy : ws + l.dkh, {B, T, Hv, K});
  rt::TensorArg DK2 = contiguousArg(ws + l.dk2, {B, T, Hv, K});
  rt::TensorArg DW = contiguousArg(c.fused ? dummy : ws + l.dw, {B, T, Hv, K});
  rt::TensorArg RQ = contiguousArg(ws + l.rq, {B, Hv, TC});
  rt::TensorArg RK = contiguousArg(ws + l.rk, {B, Hv, TC});
  rt::TensorArg RW = contiguousArg(ws + l.rw, {B, Hv, TC});
  // Never touched by these specializations (no O, no final state; PASS = 1
  // neither writes H nor VN).
  rt::TensorArg O = contiguousArg(dummy, {B, T, Hv, V});
  rt::TensorArg HT = contiguousArg(dummy, {N, Hv, K, V});
  rt::TensorArg DHT = c.dht ? arg(*p.dht) : contiguousArg(dummy, {N, Hv, K, V});
  rt::TensorArg DH0 = c.dh0 ? arg(*p.dh0) : contiguousArg(dummy, {N, Hv, K, V});
  // Prepare's outputs for the fused path's split (OUT_T=1 only).
  rt::TensorArg PTS = contiguousArg(dummy, {B, T, Hv, kChunk});
  rt::TensorArg PRK = contiguousArg(dummy, {B, T, Hv});

  const double scale = std::isnan(p.scale) ? 1.0 / std::sqrt(double(K)) : p.scale;
  const double segChunks = double(l.fwd.schedule.segChunks), dhChunks = double(l.dhSched.segChunks);
  // Each kernel's arguments by name (qla/kernels/NAME.h, generated from the
  // .qla file), then its check: the compiled kernel against that header.
  using Checker = void (*)(const op::KernelSpec &, const KernelInfo &, const std::string &);
  struct Check {
    op::KernelSlot *k;
    const rt::LaunchArgs *a;
    Checker check;
  };
  std::vector<Check> checks;
  namespace kn = kernels;
  if (c.fused) {
    // gdn_fwd_fused.qla with BWD = 1 (no O, no pool: stand-ins), with a
    // split after prepare's T (OUT_T = 1: TS and RK only), the fused pass 1
    // and the merge, as the forward's fused path runs them.
    rt::TensorArg TS = contiguousArg(fsplit ? ws + l.fwd.ts : dummy, {B, T, Hv, kChunk});
    rt::TensorArg RK1 = contiguousArg(fsplit && fc.l2norm ? ws + l.fwd.rk : dummy, {B, T, Hv});
    rt::TensorArg Pool = contiguousArg(dummy, {1, Hv, V, K});
    rt::TensorArg PI = contiguousArg(dummy, {1}), PO = contiguousArg(dummy, {1});
    rt::TensorArg CS = contiguousArg(dummy, {1, 1});
    kn::gdn_fwd_prepare::Args pr;
    pr.Kt = arg(p.k), pr.Vt = arg(p.v), pr.G = arg(p.g), pr.Beta = arg(p.beta), pr.CU = CU, pr.W = W, pr.U = U;
    pr.GC = GC, pr.AM = AM, pr.TS = TS, pr.RK = RK1, pr.UL = UL, pr.ls = segChunks;
    plan.prepare = pr.launch(p.stream);
    kn::gdn_fwd_fused::Args r;
    r.Q = arg(p.q), r.Kt = arg(p.k), r.Vt = arg(p.v), r.G = arg(p.g), r.Beta = arg(p.beta), r.CU = CU, r.H0 = H0;
    r.HS = HSin, r.TS = TS, r.O = O, r.HT = HT, r.Pool = Pool, r.PI = PI, r.PO = PO, r.CS = CS;
    r.H = H, r.AM = AM, r.GC = GC, r.W = W;
    r.scale = scale, r.ls = segChunks, r.ce = 1;
    plan.state = r.launch(p.stream);
    checks.push_back({plan.kernels.state, &plan.state, kn::gdn_fwd_fused::check});
    if (plan.recomputeSplit) {
      kn::gdn_fwd_fused_pass1::Args s1;
      s1.Kt = arg(p.k), s1.Vt = arg(p.v), s1.G = arg(p.g), s1.TS = TS, s1.RK = RK1, s1.CU = CU, s1.H0 = H0;
      s1.Pool = Pool, s1.PI = PI, s1.LS = LS, s1.PH = PH, s1.PL = PL, s1.HS = HS, s1.ls = segChunks;
      plan.segment = s1.launch(p.stream);
      checks.push_back({plan.kernels.prepare, &plan.prepare, kn::gdn_fwd_prepare::check});
      checks.push_back({plan.kernels.segment, &plan.segment, kn::gdn_fwd_fused_pass1::check});
    }
  } else {
    kn::gdn_fwd_prepare::Args pr;
    pr.Kt = arg(p.k), pr.Vt = arg(p.v), pr.G = arg(p.g), pr.Beta = arg(p.beta), pr.CU = CU, pr.W = W, pr.U = U;
    pr.GC = GC, pr.AM = AM, pr.TS = PTS, pr.RK = PRK, pr.UL = UL, pr.ls = segChunks;
    plan.prepare = pr.launch(p.stream);
    kn::gdn_fwd_state::Args st;
    st.Q = arg(p.q), st.Kt = arg(p.k), st.W = W, st.U = U, st.GC = GC, st.CU = CU, st.H0 = H0, st.O = O, st.HT = HT;
    st.HS = HSin, st.LS = LS, st.PH = PH, st.PL = PL, st.H = H, st.VN = VN, st.UL = UL, st.VNL = VNL;
    st.scale = scale, st.ls = segChunks;
    plan.state = st.launch(p.stream);
    checks.push_back({plan.kernels.prepare, &plan.prepare, kn::gdn_fwd_prepare::check});
    checks.push_back({plan.kernels.state, &plan.state, kn::gdn_fwd_state::check});
    if (plan.recomputeSplit) {
      st.HS = HS;  // (pass 1 writes LS, PH, PL; the merge HS)
      plan.segment = st.launch(p.stream);
      checks.push_back({plan.kernels.segment, &plan.segment, kn::gdn_fwd_state::check});
    }
  }
  if (plan.recomputeSplit) {
    kn::gdn_fwd_merge::Args m;
    m.GC = GC, m.CU = CU, m.LS = LS, m.PH = PH, m.PL = PL, m.HS = HS, m.ls = segChunks;
    plan.merge = m.launch(p.stream);
    checks.push_back({plan.kernels.merge, &plan.merge, kn::gdn_fwd_merge::check});
  }
  // The state gradient's context parallelism (its own segments, or the
  // recompute's regions reused where it splits alike: free once the states'
  // recompute is done; same stream): GS takes the segments' end gradients,
  // DLS, DPH, DPL the reverse pass 1's output (never the caller's
  // checkpoints).
  kn::gdn_bwd_dh::Args dh;
  dh.Q = arg(p.q), dh.Kt = arg(p.k), dh.W = W, dh.DO = arg(p.dout), dh.GC = GC, dh.CU = CU, dh.H = H, dh.DHT = DHT;
  dh.DH = DH, dh.DVD = DVD, dh.DH0 = DH0, dh.SD = SD, dh.GS = GS, dh.LS = DLS, dh.PH = DPH, dh.PL = DPL;
  dh.scale = scale, dh.ls = dhChunks;
  plan.dh = dh.launch(p.stream);
  if (plan.split) {
    plan.dhSegment = plan.dh;
    kn::gdn_fwd_merge::Args m;
    m.GC = GC, m.CU = CU, m.LS = DLS, m.PH = DPH, m.PL = DPL, m.HS = GS, m.ls = dhChunks;
    plan.dhMerge = m.launch(p.stream);
    checks.push_back({plan.kernels.dhSegment, &plan.dhSegment, kn::gdn_bwd_dh::check});
    checks.push_back({plan.kernels.dhMerge, &plan.dhMerge, kn::gdn_fwd_merge::check});
  }
  // The fused kernel: SD has one slice (whole V), the segments' end
  // gradients are GS (from the dh pass 1 and reverse merge, as for dh).
  rt::TensorArg SD1 = contiguousArg(ws + l.sd, {1, B, Hv, TC});
  if (c.fused) {
    kn::gdn_bwd_fused::Args f;
    f.Q = arg(p.q), f.Kt = arg(p.k), f.Vt = arg(p.v), f.DO = arg(p.dout), f.Beta = arg(p.beta), f.GC = GC;
    f.AM = AM, f.CU = CU, f.H = H, f.DHT = DHT, f.GS = GS, f.DQH = DQH, f.DK2 = DK2, f.DVO = arg(p.dv);
    f.DBETA = arg(p.dbeta), f.DH0 = DH0, f.SD = SD1, f.RQ = RQ, f.RK = RK, f.RW = RW;
    f.scale = scale, f.ls = dhChunks;
    plan.fused = f.launch(p.stream);
    checks.push_back({plan.kernels.fused, &plan.fused, kn::gdn_bwd_fused::check});
  } else {
    kn::gdn_bwd_dqk::Args q;
    q.Q = arg(p.q), q.Kt = arg(p.k), q.VN = VN, q.DVD = DVD, q.DO = arg(p.dout), q.GC = GC, q.CU = CU, q.H = H;
    q.DH = DH, q.DQH = DQH, q.DKH = DKH, q.DW = DW, q.RQ = RQ, q.RK = RK, q.VNL = VNL, q.scale = scale;
    plan.dqk = q.launch(p.stream);
    kn::gdn_bwd_wy::Args y;
    y.Kt = arg(p.k), y.Vt = arg(p.v), y.Beta = arg(p.beta), y.GC = GC, y.AM = AM, y.CU = CU, y.DW = DW, y.DVD = DVD;
    y.DK2 = DK2, y.DVO = arg(p.dv), y.DBETA = arg(p.dbeta), y.RW = RW;
    plan.wy = y.launch(p.stream);
    checks.push_back({plan.kernels.dh, &plan.dh, kn::gdn_bwd_dh::check});
    checks.push_back({plan.kernels.dqk, &plan.dqk, kn::gdn_bwd_dqk::check});
    checks.push_back({plan.kernels.wy, &plan.wy, kn::gdn_bwd_wy::check});
  }
  kn::gdn_bwd_finish::Args fin;
  fin.Q = arg(p.q), fin.Kt = arg(p.k), fin.CU = CU, fin.DQH = DQH, fin.DKH = DKH, fin.DK2 = DK2, fin.RQ = RQ;
  fin.RK = RK, fin.RW = RW, fin.SD = c.fused ? SD1 : SD, fin.DQ = arg(p.dq), fin.DKO = arg(p.dk), fin.DG = arg(p.dg);
  plan.finish = fin.launch(p.stream);
  checks.push_back({plan.kernels.finish, &plan.finish, kn::gdn_bwd_finish::check});

  // Before anything launches: each compiled kernel against its header, then
  // what the runtime would refuse.
  for (const Check &ch : checks) {
    const KernelInfo &info = compiled(*ch.k).info();
    ch.check(ch.k->spec, info, kContractDoc);
    op::checkAgainstKernel(ch.k->spec, info, *ch.a, userNames());
    op::launchGrid(info, *ch.a);
  }
  return plan;
}

void launchBackward(const BackwardParams &p, void *workspace, size_t workspaceBytes) {
  validate(p);
  const BackwardLayout l = layoutOf(p);
  logStateGradientSchedule(p, l);
  op::checkWorkspace(workspace, workspaceBytes, l.total, namedTensors(p));
  CUcontext ctx = op::checkDevice(namedTensors(p), workspace, l.total);
  Plan plan = buildPlan(p, l, workspace);
  // (The fused recompute runs prepare, for T, only with a split.)
  std::vector<op::LaunchStep> steps;
  if (!plan.kernels.fused || plan.recomputeSplit) steps.push_back({plan.kernels.prepare, &plan.prepare});
  if (plan.recomputeSplit) {
    steps.push_back({plan.kernels.segment, &plan.segment});
    steps.push_back({plan.kernels.merge, &plan.merge});
  }
  steps.push_back({plan.kernels.state, &plan.state});
  if (plan.split) {
    steps.push_back({plan.kernels.dhSegment, &plan.dhSegment});
    steps.push_back({plan.kernels.dhMerge, &plan.dhMerge});
  }
  if (plan.kernels.fused) {
    steps.push_back({plan.kernels.fused, &plan.fused});
  } else {
    for (auto s : {std::pair{plan.kernels.dh, &plan.dh}, {plan.kernels.dqk, &plan.dqk}, {plan.kernels.wy, &plan.wy}})
      steps.push_back({s.first, s.second});
  }
  steps.push_back({plan.kernels.finish, &plan.finish});
  op::launchAll(registry(), ctx, steps);
}

std::string cuText(const ForwardConfig &c) { return dtypeName(c.varlen ? c.cuDtype : DType::I32); }

}  // namespace

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

void validateBackward(const BackwardParams &p) {
  guarded([&] { validate(p); });
}

// With the in-kernel gate: its scratch, then the operator's on its output
// (g and dg f32, the shapes unchanged).
static size_t totalWorkspaceBytes(const BackwardParams &p) {
  if (!hasOptions(p)) return layoutOf(p).total;
  return optionsWorkspaceBytes(p) + layoutOf(optionsPart(p, p.g.data)).total;
}

size_t backwardWorkspaceBytes(const BackwardParams &p) {
  return guarded([&] {
    validate(p);
    return totalWorkspaceBytes(p);
  });
}

void backward(const BackwardParams &p, void *workspace, size_t workspaceBytes) {
  guarded([&] {
    if (!hasOptions(p)) {
      launchBackward(p, workspace, workspaceBytes);
      return;
    }
    validate(p);
    op::checkWorkspace(workspace, workspaceBytes, totalWorkspaceBytes(p), namedTensors(p));
    launchWithOptions(p, workspace, workspaceBytes);
  });
}

int64_t backwardStateGradientSegments(const BackwardParams &p) {
  return guarded([&] { return layoutOf(p).dhSched.segChunks; });
}

void detail::launchBackwardImpl(const BackwardParams &p, void *workspace, size_t workspaceBytes) {
  launchBackward(p, workspace, workspaceBytes);
}

BackwardConfig backwardConfig(const BackwardParams &p) {
  BackwardConfig c;
  c.fwd = forwardConfig(forwardPart(p));
  c.fwd.finalState = false;
  c.dht = p.dht.has_value();
  c.dh0 = p.dh0.has_value();
  // (The slice needs the shapes: a call that is not valid keeps the default.)
  const bool shaped = p.q.shape.size() == 4 && p.v.shape.size() == 4 && p.q.shape[1] > 0 &&
                      (!p.cu_seqlens || p.cu_seqlens->shape.size() == 1);
  // The fused gradient kernel, where asked for and its first version takes
  // the call.
  c.fused = fusedBackwardRequested() && fusedBackwardEligible(c);
  if (shaped) {
    const int sms = deviceSmCount();
    const Schedule dh = dhScheduleOf(p, backwardSchedule(p, sms));
    c.dhBv = dhSliceOf(p, dh, sms);
    c.saveW = c.fused && dh.split;
  }
  return c;
}

// Every configuration the backward takes with V up to 128 (f16, and bf16
// with the recompute's V_new and its own dQK as hi + lo pairs, HILO).
bool fusedBackwardEligible(const BackwardConfig &c) { return fusedBackwardTakes(c.fwd.K, c.fwd.V); }

std::string BackwardConfig::str() const {
  std::ostringstream s;
  ForwardConfig f = fwd;
  f.finalState = false;
  s << f.str() << " dht=" << dht << " dh0=" << dh0;
  if (dhBv != 32) s << " dh_bv=" << dhBv;
  if (fused) s << " fused=1";
  if (saveW) s << " save_w=1";
  return s.str();
}

KernelSpec backwardPrepareKernelSpec(const BackwardConfig &c) {
  KernelSpec s = prepareKernelSpec(c.fwd);
  s.defines["SAVE_A"] = "1";
  if (c.hilo()) s.defines["HILO"] = "1";
  return s;
}

KernelSpec backwardSegmentKernelSpec(const BackwardConfig &c) {
  KernelSpec s = segmentKernelSpec(c.fwd);
  if (c.hilo()) s.defines["HILO"] = "1";
  return s;
}

KernelSpec backwardStateKernelSpec(const BackwardConfig &c) {
  ForwardConfig f = c.fwd;
  f.finalState = false;
  KernelSpec s = stateKernelSpec(f);
  s.defines["SAVE_H"] = "1";
  s.defines["STORE_O"] = "0";
  if (c.hilo()) s.defines["HILO"] = "1";
  return s;
}

KernelSpec backwardRecomputeKernelSpec(const BackwardConfig &c, int64_t bv) {
  ForwardConfig f = c.fwd;
  f.finalState = false;
  f.pool = false;
  KernelSpec s = fusedKernelSpec(f, bv);
  s.defines["BWD"] = "1";
  if (c.saveW) s.defines["SAVE_W"] = "1";
  return s;
}

KernelSpec dhKernelSpec(const BackwardConfig &c) {
  if (c.dhBv != 32 && c.dhBv != 64) fail("gdn_bwd_dh.qla: V slice " + std::to_string(c.dhBv) + " (32 or 64)");
  KernelSpec s{kDhFile,
          {{"DT", dtypeName(c.fwd.dtype)},
           {"CT", cuText(c.fwd)},
           {"DK", std::to_string(c.fwd.K)},
           {"DV", std::to_string(c.fwd.V)},
           {"VARLEN", c.fwd.varlen ? "1" : "0"},
           {"L2NORM", c.fwd.l2norm ? "1" : "0"},
           {"HAS_H0", c.dh0 ? "1" : "0"},
           {"HAS_DHT", c.dht ? "1" : "0"},
           {"PASS", "2"}}};
  if (c.dhBv != 32) s.defines["BV"] = std::to_string(c.dhBv);
  return s;
}

KernelSpec dhSegmentKernelSpec(const BackwardConfig &c) {
  KernelSpec s = dhKernelSpec(c);
  s.defines["HAS_H0"] = "0";  // pass 1 writes segment gradients only
  s.defines["PASS"] = "1";
  return s;
}

KernelSpec dhMergeKernelSpec(const BackwardConfig &c) {
  KernelSpec s = mergeKernelSpec(c.fwd);
  s.defines["REVERSE"] = "1";
  return s;
}

KernelSpec dqkKernelSpec(const BackwardConfig &c) {
  KernelSpec s{kDqkFile,
               {{"DT", dtypeName(c.fwd.dtype)},
                {"CT", cuText(c.fwd)},
                {"DK", std::to_string(c.fwd.K)},
                {"DV", std::to_string(c.fwd.V)},
                {"VARLEN", c.fwd.varlen ? "1" : "0"},
                {"L2NORM", c.fwd.l2norm ? "1" : "0"}}};
  if (c.hilo()) s.defines["HILO"] = "1";
  return s;
}

KernelSpec wyKernelSpec(const BackwardConfig &c) {
  KernelSpec s{kWyFile,
          {{"DT", dtypeName(c.fwd.dtype)},
           {"BT", dtypeName(c.fwd.betaDtype)},
           {"CT", cuText(c.fwd)},
           {"DK", std::to_string(c.fwd.K)},
           {"DV", std::to_string(c.fwd.V)},
           {"VARLEN", c.fwd.varlen ? "1" : "0"},
           {"L2NORM", c.fwd.l2norm ? "1" : "0"}}};
  if (c.fwd.betaActivation) s.defines["BSIG"] = std::to_string(c.fwd.betaActivation);
  return s;
}

KernelSpec finishKernelSpec(const BackwardConfig &c) {
  KernelSpec s{kFinishFile,
               {{"DT", dtypeName(c.fwd.dtype)},
                {"GT", dtypeName(c.fwd.gDtype)},
                {"CT", cuText(c.fwd)},
                {"DK", std::to_string(c.fwd.K)},
                {"VARLEN", c.fwd.varlen ? "1" : "0"},
                {"L2NORM", c.fwd.l2norm ? "1" : "0"}}};
  // The fused gradient kernel adds dk's two terms into DK2 (no DKH).
  if (c.fused) s.defines["DKPARTS"] = "1";
  return s;
}

KernelSpec fusedBackwardKernelSpec(const BackwardConfig &c) {
  if (!fusedBackwardEligible(c)) fail("gdn_bwd_fused.qla takes K and V up to 128: " + c.str());
  // wy's constants (L2NORM among them), the state gradient's ends, and
  // with bf16 the pairs (HILO: VNL from the recompute, dQK split).
  KernelSpec s = wyKernelSpec(c);
  s.file = kFusedBwdFile;
  s.defines["HAS_H0"] = c.dh0 ? "1" : "0";
  s.defines["HAS_DHT"] = c.dht ? "1" : "0";
  if (c.hilo()) s.defines["HILO"] = "1";
  return s;
}

std::vector<KernelSpec> backwardKernelSpecs(const BackwardConfig &c) {
  if (!splitAndFusedTake(c.fwd.K))  // K = 256: no split, no fused kernel
    return {backwardPrepareKernelSpec(c), backwardStateKernelSpec(c), dhKernelSpec(c),
            dqkKernelSpec(c),             wyKernelSpec(c),            finishKernelSpec(c)};
  if (c.fused) {
    std::vector<KernelSpec> v = {tmatKernelSpec(c.fwd), fusedPass1KernelSpec(c.fwd), mergeKernelSpec(c.fwd),
                                 backwardRecomputeKernelSpec(c, fusedWideBv(c.fwd.V))};
    if (fusedWideBv(c.fwd.V) != 64) v.push_back(backwardRecomputeKernelSpec(c, 64));
    for (const KernelSpec &k : {dhSegmentKernelSpec(c), dhMergeKernelSpec(c), fusedBackwardKernelSpec(c),
                                finishKernelSpec(c)})
      v.push_back(k);
    return v;
  }
  return {backwardPrepareKernelSpec(c), backwardSegmentKernelSpec(c), mergeKernelSpec(c.fwd),
          backwardStateKernelSpec(c),   dhSegmentKernelSpec(c),    dhMergeKernelSpec(c),
          dhKernelSpec(c),              dqkKernelSpec(c),          wyKernelSpec(c),
          finishKernelSpec(c)};
}

void warmupBackward(const BackwardConfig &cIn, bool loadOnGpu) {
  guarded([&] {
    checkConfig(cIn.fwd);
    // With the in-kernel gate: its three passes, and the rest on its f32 output.
    BackwardConfig c = cIn;
    c.fwd = ungated(cIn.fwd);
    // Both V slices of the dh kernel (backwardConfig picks one per call).
    std::vector<op::KernelSlot *> slots = all(kernelsFor(c), c);
    if (cIn.fwd.gate)
      for (int pass : {0, 1, 2}) slots.push_back(&registry().slot(opSpec(gateKernelSpec(cIn.fwd, pass))));
    if (cIn.fwd.stateVFirst)
      for (bool toK : {true, false}) slots.push_back(&registry().slot(opSpec(stateTransposeKernelSpec(cIn.fwd, toK))));
    for (int bv : {32, 64}) {
      if (bv == c.dhBv || bv > c.fwd.V) continue;
      BackwardConfig o = c;
      o.dhBv = bv;
      BackwardKernels k = kernelsFor(o);
      slots.push_back(k.dh);
      if (splitAndFusedTake(c.fwd.K)) slots.push_back(k.dhSegment);
    }
    // The fused recompute with and without W (backwardConfig picks one per call).
    if (c.fused) {
      BackwardConfig o = c;
      o.saveW = !c.saveW;
      const BackwardKernels k = kernelsFor(o);
      slots.push_back(k.state);
      slots.push_back(k.stateSlice);
    }
    // The fused gradient kernel too where QLA_GDN_BWD_FUSED asks for it.
    if (!c.fused && fusedBackwardRequested() && fusedBackwardEligible(c)) {
      BackwardConfig f = c;
      f.fused = true;
      slots.push_back(kernelsFor(f).fused);
    }
    registry().warm(slots, loadOnGpu);
  });
}

}  // namespace qla::gdn
