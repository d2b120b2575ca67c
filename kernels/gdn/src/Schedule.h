// The GDN forward's schedule: whether and how finely the recurrence splits
// long sequences into segments (exact context parallelism, KERNELS.md), chosen
// by a cost model from the shapes alone (no look at cu_seqlens' values, so no
// host synchronization; the device cuts each sequence by the chosen length).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace qla::gdn {

// The kernels' chunk length and V slice width (C and BV in the .qla files).
constexpr int64_t kChunk = 64;
constexpr int64_t kSlice = 32;
// Segment length meaning "never split": every sequence is one segment.
constexpr int64_t kNoSplit = int64_t(1) << 30;

struct ForwardShape {
  int64_t B = 1, T = 1, Hv = 1, K = 128, V = 128;
  int64_t numSequences = 0;  // N with cu_seqlens (B = 1), 0 without
  // With cu_seqlens and its host copy (ForwardParams::cu_seqlens_host), the
  // sequences' lengths in chunks: the longest one's and their sum (0:
  // unknown, as under CUDA graph capture without a copy). Then the model
  // plans for these lengths; without them it hedges between N equal
  // sequences and one that holds every token. Either plan is exact for any
  // lengths: the device cuts each sequence by the chosen segment length.
  int64_t longestChunks = 0, sumChunks = 0;
  // Without the lengths, a bound on the longest one in chunks
  // (ForwardParams::max_seqlen, 0: none): the model then hedges between N
  // equal sequences and as many of that length as hold every token, rather
  // than one that holds them all.
  int64_t maxChunks = 0;
  // (chunks, how many sequences), longest first, empty sequences left out;
  // past 32 distinct lengths rounded up to a grid (setSequenceChunks).
  std::vector<std::pair<int64_t, int64_t>> lengths;
};

// The lengths cu_seqlens' host copy gives (N + 1 offsets), for ForwardShape.
void setSequenceChunks(ForwardShape &s, const int64_t *cuHost);

// The fused forward's widest V slice per CTA: the whole head up to V = 128,
// 128 columns at V = 256 (two math warpgroups, as at V = 128; four would not
// fit the registers).
inline int64_t fusedWideBv(int64_t V) { return V > 128 ? 128 : V; }

// The fused kernels (gdn_fwd_fused, its pass 1) and the segments' merge
// take K up to 128; K = 256 runs the two-kernel forward (prepare, state)
// without a split, and the schedule says so whatever it is asked
// (kernels/gdn/KERNELS.md, "Head sizes").
constexpr int64_t kMaxFusedK = 128;
inline bool splitAndFusedTake(int64_t K) { return K <= kMaxFusedK; }

struct Schedule {
  int64_t segChunks = kNoSplit;  // segment length in chunks
  int64_t numIds = 1;            // segment ids: grid z of the state passes (NZ)
  bool split = false;            // passes 1 and the merge run
  bool fused = false;            // the fused kernel computes the output
  int64_t fusedBv = 0;           // with fused: the V slice of one CTA (64, or fusedWideBv(V): a whole head up to 128)
  double predictedUs = 0;        // the model's time of the recurrence, µs (the two-kernel path: without prepare)
  double fusedUs = 0, twoKernelUs = 0;  // the model's whole forward on either path, µs (fusedMode 0)
};

// The machine the model describes: SMs, CTAs resident per SM, and the
// recurrence's per-chunk step times, measured on the H200 with
// bench/gdn_context_parallel.py (docs/performance.md): pass 2 (the full step)
// alone on an SM and two per SM, pass 1 (no output) likewise.
struct MachineModel {
  int sms = 132;
  int resident = 2;             // CTAs of either pass per SM (shared memory)
  double pass2AloneUs = 2.2;
  double pass2PairUs = 3.0;     // each of two CTAs sharing an SM
  double pass1AloneUs = 1.0;
  double pass1PairUs = 1.13;
  double waveStartUs = 4.0;     // a wave of CTAs starting: state load, first loads
  double mergeStepUs = 3.0;     // one segment step of the merge
  double launchUs = 3.0;        // each extra kernel
  // The fused kernel (one CTA per SM), its chunk step with a 64-wide V
  // slice per CTA (three warpgroups) and with a whole head per CTA (one
  // math warpgroup per 64 columns of V), and the prepare kernel's SM time
  // per chunk and v-head, measured on the H200 (bench/gdn_paths.py,
  // bench/gdn_kernel_split.py, docs/performance.md). Refitted on 2026-12-01,
  // after aux's inverse went to registers (inv_unit_lower(l,
  // operands = f16); bench/results/gdn_fused_mma_inverse_h200_2026-12-01.log):
  // 16/64 1x32768 (64-wide slices, one wave of 128 CTAs) 1.345 ms over 512
  // chunks; 16/64 and 8/32 at 8192x4 (whole heads, two waves and one) 0.891
  // and 0.460 ms over 128 chunks. (2026-12-04: the kernel's step is now
  // about 2.2 µs at BV = 64 and 3.2-3.3 at whole heads, but fitted so,
  // 2.21 and 3.3, the model gave up split whole heads for unsplit 64-wide
  // slices at 24 and 32 heads, 1.05-1.24x slower on 20 of FlashQLA's rows,
  // faster on 7: the split's costs below are too high. These constants keep
  // the measured plans until the split's are refitted; docs/performance.md,
  // "Tried and not kept", 2026-12-04.)
  double fusedChunkUs = 2.62;
  double fusedHeadChunkUs = 3.5;
  // The fused path's context parallelism: prepare's T (OUT_T=1), SM time per
  // chunk and v-head, and pass 1 (gdn_fwd_fused_pass1.qla: one CTA per
  // segment, v-head and 64-wide slice carrying both of its chains, two CTAs
  // per SM), its chunk step alone on an SM and with a second CTA beside it.
  // First estimates (2026-12-02), before a measurement.
  double tmatChunkHeadUs = 1.7;
  double fusedPass1AloneUs = 1.6;
  double fusedPass1PairUs = 2.6;
  // A split's CTAs that find nothing to do (prepare's for chunks of last
  // segments, pass 1's and pass 2's for ids past a sequence's last segment):
  // each wave of them, fitted to 8192x4 and 4096x8 rows whose sequences the
  // split does not cut (2026-12-02, docs/performance.md's git history: 0.466
  // -> 0.498 ms at 32/32, 0.666 -> 0.770 at 16/48).
  double emptyWaveUs = 1.5;
  // The fused kernel's step where T comes from prepare (a cut sequence),
  // relative to its own inverse's: 2/8 1x32768 in segments of 32, 64 and 128
  // chunks went 0.312 -> 0.299, 0.424 -> 0.390 and 0.714 -> 0.649 ms
  // (2026-12-02), about a tenth of the output pass.
  double fusedTStepScale = 0.9;
  // The prepare kernel: the same runs' two-kernel rows at 8192x4 (16/64
  // 2.758 -> 2.495 ms, 8/32 1.353 -> 1.238 ms, all of it prepare's).
  double prepareChunkHeadUs = 3.6;
  // The fused gradient kernel (gdn_bwd_fused.qla: one CTA per SM for each
  // segment and v-head, its chunks in sequence): its chunk step with few
  // CTAs on the machine and with every SM busy (all of them streaming their
  // inputs and f32 partial gradients), interpolated by the share of SMs in
  // use; measured on an H100 (2026-12-05, bench/results/gdn_bwd_fused_gpu_*):
  // 16/32 1x8192 unsplit, 32 CTAs, 2.237 ms over 128 chunks; 16/32 8x1024,
  // 256 CTAs in two waves, 0.870 ms over 16 chunks. The state gradient's
  // pass 1 (gdn_bwd_dh.qla PASS = 1: a 128-thread CTA per segment, v-head and
  // 64-wide slice of V or of P's columns), alone and two per SM, fitted to
  // the same day's runs: 16/32 1x8192 in segments of 32 chunks 0.226 ms
  // (0.244 in 32-wide slices), 2/4 1x32768 in segments of 16 0.170 ms (the
  // model gives 0.27 and 0.10: its chain of chunk steps is not all it is).
  // The fused kernel over those segments: 0.784 and 0.411 ms (24.5 and
  // 25.7 µs a chunk step, 128 CTAs).
  double bwdChunkAloneUs = 17.5;
  double bwdChunkFullUs = 27.0;
  double dhPass1AloneUs = 2.0;
  double dhPass1PairUs = 2.6;
};

// `force`: 0 picks by the model; -1 never splits; n > 0 segments of n chunks.
// `fusedMode`: -1 the two-kernel path (prepare + state); 1 the fused kernel;
// 0 the model picks the path, weighing the same scenarios as the split. Each
// path takes its own segment length (its pass 1, merge and pass 2 against
// its unsplit time), unless `force` sets it.
// `fusedBv`: 0 lets the model pick the fused kernel's V slice; 64 or
// fusedWideBv(V) (V itself is taken for it) force it.
// Memoized per process on every input (the shape with its sequences'
// lengths, force, fusedMode, fusedBv and each constant of `m`): one
// evaluation takes about 27 µs, and a training step asks for the same
// schedules several times.
Schedule forwardSchedule(const ForwardShape &s, const MachineModel &m, int64_t force = 0, int fusedMode = -1,
                         int64_t fusedBv = 0);

// The state gradient's segments for the fused gradient kernel (its own
// split, independent of the recompute's: that kernel's chunk step is some ten
// times the state pass's, so it cuts where the forward would not): the
// length whose time (pass 1 of gdn_bwd_dh.qla, the reverse merge, the fused
// kernel over every segment) has the smallest worst ratio to each scenario's
// best, split only for a clear gain over the whole sequences. `force` as in
// forwardSchedule (0 the model, -1 never, n > 0 segments of n chunks).
// fused, fusedBv and twoKernelUs are not set; predictedUs is the model's time.
Schedule fusedBackwardSchedule(const ForwardShape &s, const MachineModel &m, int64_t force = 0);

struct BackwardParams;
// The state gradient's segment length the backward takes for p (kNoSplit:
// none): the recompute's on the six-kernel path, fusedBackwardSchedule's on
// the fused gradient kernel's (GdnBackward.cpp). p must be valid.
int64_t backwardStateGradientSegments(const BackwardParams &p);

// Segment ids for a segment length (the grid z of both state passes).
int64_t segmentIds(const ForwardShape &s, int64_t segChunks);

// One line for the log (QLA_LOG=info): the shape, the path, the V slice,
// the split and the model's times, e.g. "B=1 T=32768 Hv=8 K=128 V=128 N=1:
// fused kernel, whole heads (BV=128), segments of 32 chunks (prepare's T,
// pass 1, merge, pass 2; 18 segment ids); model 309 us (two-kernel path 484 us)".
std::string describeSchedule(const ForwardShape &s, const Schedule &sch);
// Its head: "B=1 T=32768 Hv=8 K=128 V=128 N=1: " and, with several
// sequences, what is known of their lengths ("lengths known (longest 16 of
// 128 chunks), ").
std::string describeShape(const ForwardShape &s);

// The SM count of the current (or first) CUDA device; 132 (H200) without one.
int deviceSmCount();

}  // namespace qla::gdn
