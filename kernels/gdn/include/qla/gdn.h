// The GDN (Gated Delta Network) chunked forward operator: the host side of
// FLA's `chunk_gated_delta_rule` over QLA's two forward kernels
// (kernels/gdn/gdn_fwd_prepare.qla, kernels/gdn/gdn_fwd_state.qla).
//
//   qla::gdn::ForwardParams p;
//   p.q = {dq, DType::BF16, {B, T, Hqk, K}};  ...  p.o = {dout, DType::BF16, {B, T, Hv, V}};
//   std::vector<char> ... ; size_t n = qla::gdn::forwardWorkspaceBytes(p);  // device scratch
//   qla::gdn::forward(p, workspace, n);   // throws qla::gdn::Error; async on p.stream
//
// forward() checks every argument before it launches anything (on an error
// the outputs are untouched), then launches the prepare and the state kernel
// on p.stream. It never synchronizes and never allocates device memory, so it
// may be captured in a CUDA graph once the kernels are compiled and loaded
// (call warmup() or run it once before capturing).
//
// The kernels are embedded in the library as .qla source, JIT-compiled on
// first use per specialization (dtype, K, V, beta dtype, varlen and its
// offset dtype, L2 norm, initial/final state), memoized per process and kept
// in QLA's kernel cache (memory and $QLA_CACHE_DIR) across runs.
//
// No MLIR and no PyTorch here.
#pragma once

#include <cuda.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "qla/runtime/Driver.h"
#include "qla/Tensor.h"
#include "qla/runtime/KernelInfo.h"

namespace qla::gdn {

// Every error of the operator: bad arguments, no driver, a failed compile or launch.
// Messages start with "chunk_gated_delta_rule: " and name the argument.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A device tensor: pointer, dtype, shape (outermost first), strides in
// elements (empty: contiguous row-major).
using TensorRef = qla::TensorRef;  // qla/Tensor.h: one tensor reference for every family

struct ForwardParams {
  TensorRef q, k;                   // [B, T, Hqk, K], bf16 or f16
  TensorRef v;                      // [B, T, Hv, V], the dtype of q; Hv % Hqk == 0
  TensorRef g;                      // [B, T, Hv], f32 or the dtype of q (natural-log decay, <= 0)
  TensorRef beta;                   // [B, T, Hv], f32 or the dtype of q
  TensorRef o;                      // out [B, T, Hv, V], the dtype of q
  std::optional<TensorRef> initial_state;  // [N, Hv, K, V] f32
  std::optional<TensorRef> final_state;    // out [N, Hv, K, V] f32
  std::optional<TensorRef> cu_seqlens;     // [N + 1] int32/int64 offsets; requires B = 1
  double scale = std::numeric_limits<double>::quiet_NaN();  // NaN: K^-0.5
  bool use_qk_l2norm = false;
  // What beta holds (FLA's use_beta_sigmoid_in_kernel and allow_neg_eigval,
  // computed in the kernels): 0, β itself; 1, logits b with β = sigmoid(b);
  // 2, β = 2 sigmoid(b) (the transition's eigenvalues in (-1, 1]). The
  // backward's dbeta is then dL/db.
  int beta_activation = 0;
  // FLA's use_gate_in_kernel: g holds the raw gate input and the log decay
  // is −exp(A_log) softplus(g + dt_bias) (softplus(u) = u for u > 20),
  // computed by gdn_gate.qla before the other kernels. A_log: [Hv] f32,
  // required with it; dt_bias: optional [Hv] f32. Neither without it.
  bool use_gate = false;
  std::optional<TensorRef> A_log, dt_bias;
  // FLA's state_v_first: initial_state and final_state are [N, Hv, V, K]
  // (V-first; transposed by gdn_state_t.qla around the operator).
  bool state_v_first = false;
  // Serving (prefill into a state pool): the serving stacks' pool [slots,
  // Hv, V, K] (V-first) f32 or bf16, read and written in place by the fused
  // kernel itself (no gather, no scatter): sequence n starts from slot
  // initial_slots[n] ([N] int32; < 0, or initial_slots absent: a zero state)
  // and its final state goes to slot final_slots[n] ([N] int32; < 0 or
  // absent: not stored; it may be initial_slots). Excludes initial_state,
  // final_state and checkpoints; the call then takes the fused path.
  std::optional<TensorRef> state_pool, initial_slots, final_slots;
  // The pool is K-first, [slots, Hv, K, V] (FLA's state layout), instead.
  bool state_pool_k_first = false;
  // Prefix caching (with state_pool): the state after every
  // checkpoint_every tokens of each sequence (a positive multiple of 64;
  // whole chunks: a sequence of L tokens has floor(L / checkpoint_every)
  // such states) goes to pool slot checkpoint_slots[n, m] for the m-th
  // ([N, M] int32; < 0: not stored; m >= M: not stored). 0: none.
  int64_t checkpoint_every = 0;
  std::optional<TensorRef> checkpoint_slots;
  // Optional host copies of initial_slots, final_slots and checkpoint_slots
  // (their values, in their shapes): checked before anything is launched
  // (every slot < the pool's slots; no slot written by two sequences; none
  // that one sequence reads written by another), at the price of the
  // caller's copy (Python: check_slots=True). Without them the kernels still
  // touch no memory outside the pool: a slot index past the pool reads a
  // zero state and stores nothing, as a negative one.
  const int32_t *initial_slots_host = nullptr, *final_slots_host = nullptr, *checkpoint_slots_host = nullptr;
  // Optional host copy of cu_seqlens (N + 1 values): validated (starts at 0,
  // non-decreasing, ends at T), and the cost model plans the split and the V
  // slice for these lengths (without it: for the worst case of the total).
  // Any plan is exact for any lengths the device then finds.
  const int64_t *cu_seqlens_host = nullptr;
  // With cu_seqlens and no host copy, an optional bound on the longest
  // sequence in tokens (vLLM's max_query_len; 0: none): the cost model then
  // plans for sequences of at most this length rather than hedging against
  // one that holds every token (which splits more than short sequences
  // need). The plan stays exact for any lengths: a bound that is exceeded
  // only costs speed. With cu_seqlens_host the lengths must respect it.
  int64_t max_seqlen = 0;
  CUstream stream = nullptr;
  // Context parallelism: 0 lets the cost model choose whether to cut long
  // sequences into segments (KERNELS.md); -1 never cuts; n > 0 cuts them into
  // segments of n chunks of 64 tokens (for tests and experiments).
  int64_t segment_chunks = 0;
  // The kernels: 0 lets the operator choose by its cost model (the
  // environment variable QLA_GDN_FUSED=0 or 1 makes that choice the
  // two-kernel path or the fused kernel); 1 the fused warp-specialized
  // kernel (gdn_fwd_fused.qla; with a split, its own pass 1 and the merge
  // give its segment start states); -1 the two-kernel path
  // (gdn_fwd_prepare.qla, then gdn_fwd_state.qla).
  int fused = 0;
  // Training mode: when a backward will follow, the states the forward
  // computes at the starts of its segments (out, f32, the shape
  // forwardCheckpointShape(p) gives; only where the forward splits its
  // sequences). Given to backward() with segment_chunks = the forward's
  // segment length, they spare it the states' pass 1 and merge. Absent: the
  // forward keeps nothing (inference).
  std::optional<TensorRef> checkpoints;
};

// Host-side checks of every dtype, shape, stride, alignment and of the host
// copy of cu_seqlens; needs no GPU. Throws Error.
void validateForward(const ForwardParams &p);

// Device scratch forward() needs: W [B,T,Hv,K] and U [B,T,Hv,V] in the input
// dtype, GC [B,Hv,S] f32 (the chunk-local gate sums in S = 64 (cdiv(T, 64) +
// N - 1) slots; N = numSequences with cu_seqlens, else 1), each 256-byte
// aligned, plus 256 bytes standing in for absent optional tensors. The first
// form validates `p` first (throws Error) and sizes the plan forward(p) runs
// (its path, and with cu_seqlens_host the plan for those lengths): give
// forward the same p. The second sizes the two-kernel path planned from the
// shapes alone. numSequences: len(cu_seqlens) - 1 with cu_seqlens (then
// B = 1), 0 without.
size_t forwardWorkspaceBytes(const ForwardParams &p);
size_t forwardWorkspaceBytes(DType dtype, int64_t B, int64_t T, int64_t Hv, int64_t K, int64_t V,
                             int64_t numSequences = 0, int64_t segmentChunks = 0);

// Training mode: the shape of ForwardParams::checkpoints for this call
// ({NZ, Hv, K, V}: one state per segment id of the forward's split), or
// empty when the forward does not split its sequences or the backward's
// recompute would not (then it is faster unsplit, and the backward needs
// nothing beyond the inputs). *segmentChunks (if not null) gets the
// forward's segment length, the backward's segment_chunks with these
// checkpoints (0 when empty). Validates p first (checkpoints itself is
// not looked at).
std::vector<int64_t> forwardCheckpointShape(const ForwardParams &p, int64_t *segmentChunks = nullptr);

// Validates, then launches the forward's kernels on p.stream (the fused
// kernel, or prepare and state: ForwardParams::fused, KERNELS.md). `workspace`: a
// device buffer of at least forwardWorkspaceBytes(p) bytes, 256-byte aligned,
// not overlapping any argument; its contents need no initialization.
// Without a CUDA driver it throws "chunk_gated_delta_rule: no CUDA driver ...".
void forward(const ForwardParams &p, void *workspace, size_t workspaceBytes);

//===----------------------------------------------------------------------===//
// Specializations, compilation, launch plans (tests, warmup, tools)
//===----------------------------------------------------------------------===//

// What selects the compiled kernels of one call.
struct ForwardConfig {
  DType dtype = DType::BF16;      // q, k, v, o
  DType betaDtype = DType::F32;   // f32 or dtype
  DType gDtype = DType::F32;      // f32 or dtype
  int K = 128, V = 128;           // K: 64 or 128; V: 64, 128 or 256
  bool varlen = false;
  DType cuDtype = DType::I32;     // cu_seqlens dtype (i32 or i64); i32 when !varlen
  bool l2norm = false;
  bool initialState = false;
  bool finalState = false;
  int betaActivation = 0;         // ForwardParams::beta_activation (BSIG in the kernels)
  // ForwardParams::use_gate (gdn_gate.qla first; gDtype is then the raw g's,
  // the other kernels take the gate's f32 output) and whether dt_bias is given.
  bool gate = false;
  bool gateBias = false;
  bool stateVFirst = false;       // ForwardParams::state_v_first (gdn_state_t.qla around the rest)
  bool pool = false;              // ForwardParams::state_pool (POOL=1 in the fused kernel and its pass 1)
  DType poolDtype = DType::F32;   // its dtype (PT)
  bool poolKFirst = false;        // ForwardParams::state_pool_k_first (PKF=1)
  bool poolCheckpoints = false;   // ForwardParams::checkpoint_every > 0 (CKPT=1 in the fused kernel)

  bool operator==(const ForwardConfig &o) const;
  std::string str() const;  // "dtype=bf16 beta=f32 g=f32 K=128 V=128 varlen=0 ..."
};

// The configuration a (validated) call selects.
ForwardConfig forwardConfig(const ForwardParams &p);
// Every configuration the operator can request (2 dtypes x 2 beta dtypes x
// 2 g dtypes x 2 K x 2 V x 3 varlen/offset dtypes x 2 L2 norm x 2 initial x
// 2 final).
std::vector<ForwardConfig> allForwardConfigs();

// One kernel compile: embedded file name and its specialization constants (-D).
struct KernelSpec {
  std::string file;                            // "gdn_fwd_prepare.qla"
  std::map<std::string, std::string> defines;  // DT=bf16, DK=128, ...
  std::string str() const;                     // "gdn_fwd_prepare.qla -D DT=bf16 -D DK=128 ..."
};
KernelSpec prepareKernelSpec(const ForwardConfig &c);  // DT BT GT CT DK DV VARLEN L2NORM
KernelSpec stateKernelSpec(const ForwardConfig &c);    // DT CT DK DV VARLEN L2NORM HAS_H0 STORE_HT PASS=2
KernelSpec segmentKernelSpec(const ForwardConfig &c);  // the state kernel's PASS=1 (context parallelism)
KernelSpec mergeKernelSpec(const ForwardConfig &c);    // CT DK DV VARLEN
// The fused kernel for a V slice of bv columns per CTA: 0 or V (the default,
// a whole head per CTA) or 64 (BV=64 among the constants).
KernelSpec fusedKernelSpec(const ForwardConfig &c, int64_t bv = 0);  // DT BT GT CT DK DV VARLEN L2NORM HAS_H0 STORE_HT [BV]
// The fused path's context parallelism: its pass 1 (the segments' end states
// and transitions), which reads the T of prepare with OUT_T=1 (tmat), as
// the fused kernel then does for the sequences the split cuts.
KernelSpec fusedPass1KernelSpec(const ForwardConfig &c);  // DT GT CT DK DV VARLEN L2NORM HAS_H0
KernelSpec tmatKernelSpec(const ForwardConfig &c);        // prepare's constants and OUT_T=1
// The in-kernel gate (c.gate): pass 0 the log decay (forward, the backward's
// recompute), 1 the raw input's gradient and per-block partial sums, 2 their
// sums (dA_log, ddt_bias).
KernelSpec gateKernelSpec(const ForwardConfig &c, int pass);  // GT HAS_DTB PASS
// The transpose of c's states between V-first and K-first (c.stateVFirst):
// toKFirst, [V, K] -> [K, V] (initial_state, dht); else [K, V] -> [V, K].
KernelSpec stateTransposeKernelSpec(const ForwardConfig &c, bool toKFirst);  // R CC
// c without the gate and V-first states: what the other kernels of such a
// call are compiled for (g is the gate's f32 output, the states K-first).
ForwardConfig ungated(const ForwardConfig &c);

// The .qla sources embedded at build time (file name → source).
const std::vector<std::pair<std::string, std::string>> &embeddedKernelSources();
// Null when the file was not embedded (the build had no such kernel).
const std::string *embeddedKernelSource(const std::string &file);

// Compiles (JIT, memoized per process, kernel cache underneath) the
// kernels of `c`; with loadOnGpu and a GPU present also loads them into the
// current CUDA context (device 0's primary context when none is current).
// Throws Error naming the kernel file and its -D constants on a compile error.
void warmup(const ForwardConfig &c, bool loadOnGpu = true);
// Every configuration with these dtype, K and V (36 compiles on a cold cache).
void warmup(DType dtype, int K, int V, bool loadOnGpu = true);

// Everything forward() would launch, checked against the compiled kernels'
// signatures (dims, strides, TMA alignment, grid), without a GPU: validates
// `p` and the workspace, compiles the kernels, builds and checks both
// launches. forward() = device checks + this + two launches.
struct LaunchPlan {
  ForwardConfig config;
  KernelSpec prepareSpec, stateSpec;
  rt::LaunchArgs prepare, state;      // tensors in kernel order, scalars, stream
  KernelInfo prepareInfo, stateInfo;  // the compiled kernels' signatures
  std::array<int64_t, 3> prepareGrid{}, stateGrid{};
  // Context parallelism: with split, the state kernel's pass 1 (segment) and
  // the merge run between prepare and state (launch order: prepare, segment,
  // merge, state); segmentChunks is the segment length (2^30: no split).
  bool split = false;
  int64_t segmentChunks = 0;
  KernelSpec segmentSpec, mergeSpec;
  rt::LaunchArgs segment, merge;
  KernelInfo segmentInfo, mergeInfo;
  std::array<int64_t, 3> segmentGrid{}, mergeGrid{};
  // With fused, the fused kernel computes the output (in place of prepare and
  // state, which are then not filled in); with a split too, prepare (then
  // with OUT_T=1: T for both passes), segment (then the fused path's pass 1,
  // gdn_fwd_fused_pass1.qla) and merge run before it (launch order: prepare,
  // segment, merge, fused).
  bool fused = false;
  KernelSpec fusedSpec;
  rt::LaunchArgs fusedArgs;
  KernelInfo fusedInfo;
  std::array<int64_t, 3> fusedGrid{};
};
LaunchPlan planForward(const ForwardParams &p, void *workspace, size_t workspaceBytes);

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

// The gradients of the forward's outputs o (and final_state) with respect to
// its inputs. The forward's inputs are given again as they were (o and
// final_state are not needed); the backward recomputes what it needs from
// them (kernels/gdn/KERNELS.md, "Backward").
struct BackwardParams {
  TensorRef q, k, v, g, beta;              // as in ForwardParams
  std::optional<TensorRef> initial_state;  // as in ForwardParams
  std::optional<TensorRef> cu_seqlens;     // as in ForwardParams
  double scale = std::numeric_limits<double>::quiet_NaN();
  bool use_qk_l2norm = false;
  int beta_activation = 0;                 // as in ForwardParams
  bool use_gate = false;                   // as in ForwardParams (dg is then dL/d of the raw g)
  std::optional<TensorRef> A_log, dt_bias; // as in ForwardParams
  bool state_v_first = false;              // as in ForwardParams: initial_state, dht, dh0 [N, Hv, V, K]
  const int64_t *cu_seqlens_host = nullptr;
  CUstream stream = nullptr;
  // The states' recompute's segments as in ForwardParams (0 the model, -1
  // none, n > 0 segments of n chunks); it also forces the fused gradient
  // kernel's state-gradient segments, which its own model picks otherwise.
  int64_t segment_chunks = 0;
  // The forward's checkpoints (ForwardParams::checkpoints, f32 [NZ, Hv, K,
  // V]), with segment_chunks = the forward's segment length
  // (forwardCheckpointShape): the states' recompute starts each segment
  // from them and skips its pass 1 and merge. Absent: recomputed from the
  // inputs.
  std::optional<TensorRef> checkpoints;

  TensorRef dout;                          // dL/do: [B, T, Hv, V], the dtype of q
  std::optional<TensorRef> dht;            // dL/d final_state: [N, Hv, K, V] f32 (absent: 0)
  TensorRef dq, dk;                        // out [B, T, Hqk, K], the dtype of q (summed over GVA groups)
  TensorRef dv;                            // out [B, T, Hv, V], the dtype of q
  TensorRef dg;                            // out [B, T, Hv], the dtype of g
  TensorRef dbeta;                         // out [B, T, Hv], the dtype of beta
  std::optional<TensorRef> dh0;            // out [N, Hv, K, V] f32; requires initial_state
  std::optional<TensorRef> dA_log;         // out [Hv] f32; requires use_gate
  std::optional<TensorRef> ddt_bias;       // out [Hv] f32; requires use_gate and dt_bias
};

// Host-side checks of every argument (the forward's contract for the inputs;
// every gradient's dtype, shape and layout; outputs disjoint from inputs and
// from each other). Throws Error.
void validateBackward(const BackwardParams &p);
// Device scratch backward() needs (validates p first).
size_t backwardWorkspaceBytes(const BackwardParams &p);
// Validates, then launches the backward's kernels on p.stream: no host
// synchronization, no allocation (capturable in a CUDA graph once compiled:
// warmupBackward). On an error nothing is launched and the outputs are untouched.
void backward(const BackwardParams &p, void *workspace, size_t workspaceBytes);

// Whether the backward keeps U (and its factor A diag(β)), the state's
// operand of W S, V_new and dQK as hi + lo pairs of the inputs' dtype
// (HILO=1 in prepare, state and dqk): with bf16 inputs, where bf16
// intermediates left dk at T = 1 over its bar on about 3% of seeds
// (docs/gdn.md, "Backward"); f16's 11 significant bits suffice.
inline bool recomputeHiLo(DType inputs) { return inputs == DType::BF16; }

// What selects the backward's kernels.
struct BackwardConfig {
  ForwardConfig fwd;  // its finalState is ignored
  bool dht = false;   // a gradient of the final state is given
  bool dh0 = false;   // the initial state's gradient is wanted
  int dhBv = 32;      // the V slice of gdn_bwd_dh.qla's CTAs (32 or 64; backwardConfig picks it)
  // gdn_bwd_fused.qla in place of gdn_bwd_dh (pass 2), gdn_bwd_dqk and
  // gdn_bwd_wy, with its own state-gradient segments: the default where K
  // and V are at most 128 (backwardConfig sets it; QLA_GDN_BWD_FUSED=0, read
  // at every call, keeps the six kernels).
  bool fused = false;
  // With fused: the recompute writes W too (SAVE_W=1), which the state
  // gradient's pass 1 reads where its schedule splits (backwardConfig sets it).
  bool saveW = false;
  bool hilo() const { return recomputeHiLo(fwd.dtype); }  // HILO=1 (above)
  std::string str() const;
};
BackwardConfig backwardConfig(const BackwardParams &p);

// The backward's kernels, in launch order (the recompute of the forward's
// chunk factors and states, then the gradients): prepare (SAVE_A=1), with a
// split the segment (the forward's pass 1, with HILO as the state kernel) and
// merge kernels, state (SAVE_H=1 STORE_O=0), with a
// split gdn_bwd_dh's pass 1 and the reverse merge, then gdn_bwd_dh,
// gdn_bwd_dqk, gdn_bwd_wy, gdn_bwd_finish. With c.fused the recompute is
// gdn_fwd_fused.qla with BWD=1 (backwardRecomputeKernelSpec: V slice bv as
// fusedKernelSpec's), after prepare's T, the fused pass 1 and the merge
// where its schedule splits.
KernelSpec backwardPrepareKernelSpec(const BackwardConfig &c);
KernelSpec backwardSegmentKernelSpec(const BackwardConfig &c);
KernelSpec backwardStateKernelSpec(const BackwardConfig &c);
KernelSpec backwardRecomputeKernelSpec(const BackwardConfig &c, int64_t bv = 0);  // SAVE_W from c.saveW
KernelSpec dhKernelSpec(const BackwardConfig &c);         // PASS=2
KernelSpec dhSegmentKernelSpec(const BackwardConfig &c);  // PASS=1 (context parallelism)
KernelSpec dhMergeKernelSpec(const BackwardConfig &c);    // gdn_fwd_merge.qla REVERSE=1
KernelSpec dqkKernelSpec(const BackwardConfig &c);
KernelSpec wyKernelSpec(const BackwardConfig &c);
KernelSpec finishKernelSpec(const BackwardConfig &c);
// The fused gradient kernel (c.fused; with bf16 HILO=1: V_new's lo part
// from the recompute, dQK as a hi + lo pair); fusedBackwardEligible: whether
// it takes c (K and V up to 128).
KernelSpec fusedBackwardKernelSpec(const BackwardConfig &c);
bool fusedBackwardEligible(const BackwardConfig &c);
// Every kernel spec backward() may launch for c (the nine above, plus the
// forward's merge kernel; with c.fused prepare's T, the fused pass 1, the
// merge, the fused recompute in both V slices, the state gradient's pass 1
// and merge, the fused gradient kernel and finish; at K = 256, which takes
// no split, prepare, state, dh, dqk, wy and finish), in launch order.
std::vector<KernelSpec> backwardKernelSpecs(const BackwardConfig &c);

// Compiles (and with loadOnGpu and a GPU, loads) the kernels of c.
void warmupBackward(const BackwardConfig &c, bool loadOnGpu = true);

//===----------------------------------------------------------------------===//
// Decode and speculative verify (issue 29): the recurrence token by token
// over a state pool
//===----------------------------------------------------------------------===//

// T tokens of each of N sequences (decode: T = 1; speculative verify: the
// draft tokens), the state read from a pool by slot and written back in
// place (gdn_recurrent.qla; one CTA per sequence and v-head, the state in
// registers). The pool is the serving stacks' layout, V-first:
// [slots, Hv, V, K], f32 or bf16. Sequences must not read a slot another
// sequence of the call writes (their order is not defined).
struct RecurrentParams {
  TensorRef q, k;        // [N, T, Hqk, K], bf16 or f16
  TensorRef v;           // [N, T, Hv, V], the dtype of q
  TensorRef g;           // [N, T, Hv]: the log decay, or with use_gate the raw input a; f32 or q's dtype
  TensorRef beta;        // [N, T, Hv]: β, or logits with beta_activation; f32 or q's dtype
  bool use_qk_l2norm = true;
  int beta_activation = 0;               // as in ForwardParams (vLLM: 1, β = sigmoid(b))
  bool use_gate = false;                 // as in ForwardParams: −exp(A_log) softplus(a + dt_bias)
  std::optional<TensorRef> A_log, dt_bias;  // [Hv] f32, with use_gate
  TensorRef state_pool;  // [slots, Hv, V, K] f32 or bf16: read and written in place
  bool state_pool_k_first = false;  // the pool is [slots, Hv, K, V] instead
  TensorRef read_index;  // [N] int32: the slot sequence n starts from (< 0: a zero state)
  TensorRef write_index; // [N, T] int32: the slot the state after token t goes to (< 0: not stored)
  // Optional host copies of read_index and write_index: checked before the
  // launch as ForwardParams' slots are (in range; no slot written by two
  // sequences or read by one and written by another). Without them a slot
  // past the pool reads a zero state and stores nothing.
  const int32_t *read_index_host = nullptr, *write_index_host = nullptr;
  TensorRef o;           // out [N, T, Hv, V], the dtype of q
  double scale = std::numeric_limits<double>::quiet_NaN();  // NaN: K^-0.5
  CUstream stream = nullptr;
};

// Host-side checks of every argument (throws Error with the prefix
// "fused_recurrent_gated_delta_rule: ").
void validateRecurrent(const RecurrentParams &p);
// Validates, then launches on p.stream. No workspace, no host
// synchronization, no allocation: capturable in a CUDA graph once compiled
// (warmupRecurrent, or one call).
void recurrent(const RecurrentParams &p);

struct RecurrentConfig {
  DType dtype = DType::BF16, gDtype = DType::F32, betaDtype = DType::F32, stateDtype = DType::F32;
  int K = 128, V = 128;
  bool l2norm = true;
  int betaActivation = 0;
  bool gate = false, gateBias = false;
  bool poolKFirst = false;
  // The V slice of a CTA (BV): 64 (the default: one CTA per 64 rows of the
  // state, three CTAs an SM, no spills) or V (a whole head per CTA);
  // QLA_GDN_DECODE_BV=64|128 forces it (read at every call). 0: as
  // recurrent() picks it (recurrentSliceOf).
  int bv = 0;
  std::string str() const;
};
RecurrentConfig recurrentConfig(const RecurrentParams &p);
KernelSpec recurrentKernelSpec(const RecurrentConfig &c);  // DT GT BT ST DK DV L2NORM GATE HAS_DTB BSIG [PKF] [BV]
void warmupRecurrent(const RecurrentConfig &c, bool loadOnGpu = true);
int recurrentSliceOf(int V);  // the V slice recurrent() picks (RecurrentConfig::bv)

}  // namespace qla::gdn
