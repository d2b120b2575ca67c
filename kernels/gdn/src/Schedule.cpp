// The GDN forward's cost model (Schedule.h).
#include "Schedule.h"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include <cuda.h>

namespace qla::gdn {
namespace {

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A pass of `units` equally long CTAs of `chunks` chunks each: the busiest
// SM holds k = cdiv(units, sms) of them, run `resident` at a time, each
// chunk step taking `pair` while they share the SM and `alone` otherwise.
double passUs(int64_t units, int64_t chunks, double alone, double pair, const MachineModel &m) {
  const int64_t k = cdiv(units, m.sms);
  const int64_t waves = cdiv(k, m.resident);
  const double step = k <= 1 ? alone : double(k / m.resident) * pair + double(k % m.resident) * alone;
  return double(waves) * m.waveStartUs + double(chunks) * step;
}

}  // namespace

int64_t segmentIds(const ForwardShape &s, int64_t segChunks) {
  const int64_t chunks = cdiv(s.T, kChunk);
  // Varlen: segment j of sequence n has id n + (bos / C + n) / ls + j, below
  // N + (cdiv(T, C) + N) / ls (see gdn_fwd_state.qla).
  if (s.numSequences > 0) return s.numSequences + cdiv(chunks + s.numSequences, segChunks);
  return s.B * cdiv(chunks, segChunks);
}

Schedule forwardSchedule(const ForwardShape &s, const MachineModel &m, int64_t force, int fusedMode,
                         int64_t forceBv) {
  const int64_t N = s.numSequences > 0 ? s.numSequences : s.B;
  const int64_t nV = s.V / kSlice, nK = s.K / kSlice, total = cdiv(s.T, kChunk);

  // The recurrence's time for `seqs` sequences of `chunks` chunks each, cut
  // into segments of ls chunks.
  auto cost = [&](int64_t seqs, int64_t chunks, int64_t ls) {
    const int64_t heads = seqs * s.Hv, ns = cdiv(chunks, ls);
    if (ns <= 1) return passUs(heads * nV, chunks, m.pass2AloneUs, m.pass2PairUs, m);
    const double pass1 = passUs(heads * ((ns - 1) * nV + (ns - 2) * nK), ls, m.pass1AloneUs, m.pass1PairUs, m);
    const double pass2 = passUs(heads * ns * nV, ls, m.pass2AloneUs, m.pass2PairUs, m);
    return pass1 + m.mergeStepUs * double(ns - 2) + 2 * m.launchUs + pass2;
  };
  // Fixed length: one scenario, the shapes say it all. With cu_seqlens only
  // the total is known on the host (the device cuts each real sequence by
  // the chosen length), so the model weighs two extremes, N equal sequences
  // and one sequence holding (nearly) every token, and takes the segment
  // length whose worse ratio to that scenario's best is smallest.
  struct Scenario {
    int64_t seqs, chunks;
    double best = 0;
  };
  std::vector<Scenario> scen;
  if (s.numSequences > 1) {
    scen.push_back({N, std::max<int64_t>(1, cdiv(s.T, kChunk * N))});
    scen.push_back({1, total});
  } else {
    scen.push_back({N, total});
  }
  std::vector<int64_t> cands = {kNoSplit};
  for (const Scenario &c : scen)
    for (int64_t ns = 2; ns <= 64 && ns <= c.chunks; ++ns) cands.push_back(cdiv(c.chunks, ns));
  for (Scenario &c : scen) {
    c.best = cost(c.seqs, c.chunks, kNoSplit);
    for (int64_t ls : cands) c.best = std::min(c.best, cost(c.seqs, c.chunks, ls));
  }
  auto regret = [&](int64_t ls) {
    double r = 0;
    for (const Scenario &c : scen) r = std::max(r, cost(c.seqs, c.chunks, ls) / c.best);
    return r;
  };

  Schedule best;
  if (force > 0) {
    best.segChunks = force;
  } else if (force == 0) {
    // Split only for a clear gain: the model is a model.
    double bestRegret = regret(kNoSplit) * 0.85;
    for (int64_t ls : cands) {
      const double r = regret(ls);
      if (r < bestRegret || (r == bestRegret && ls > best.segChunks && best.segChunks != kNoSplit)) {
        bestRegret = r;
        best.segChunks = ls;
      }
    }
  }
  best.predictedUs = cost(scen[0].seqs, scen[0].chunks, best.segChunks);
  // The passes run whenever some sequence can have more than one segment.
  best.split = best.segChunks < kNoSplit && total > best.segChunks;
  if (!best.split) best.segChunks = kNoSplit;
  best.numIds = segmentIds(s, best.segChunks);

  // The path. Two-kernel: prepare (parallel over every chunk and v-head)
  // plus the recurrence as scheduled above. Fused: one CTA per SM for each
  // (sequence, v-head, V slice), every chunk step on the CTA's chain.
  auto prepareUs = [&](const Scenario &c) {
    return double(c.seqs * c.chunks * s.Hv) * m.prepareChunkHeadUs / double(m.sms);
  };
  // Fused, each CTA taking a V slice of bv columns: the 64-wide slice
  // doubles the CTAs (and the chunk-local work), the whole head takes one
  // CTA per head and a longer step.
  auto fusedBvUs = [&](const Scenario &c, int64_t bv) {
    const int64_t units = c.seqs * s.Hv * cdiv(s.V, bv);
    const double step = bv < s.V ? m.fusedChunkUs : m.fusedHeadChunkUs;
    return double(cdiv(units, m.sms)) * (double(c.chunks) * step + m.waveStartUs);
  };
  // Of two choices timed by a(c) and b(c), whether a's worse ratio to the
  // better one, over the scenarios, is smaller than b's (ties: false).
  auto aWins = [&](auto a, auto b) {
    double ra = 0, rb = 0;
    for (const Scenario &c : scen) {
      const double x = a(c), y = b(c);
      ra = std::max(ra, x / std::min(x, y));
      rb = std::max(rb, y / std::min(x, y));
    }
    return ra < rb;
  };
  // The slice for the scenarios, as for the path below.
  const int64_t fusedBv = [&] {
    if (s.V <= 64) return s.V;
    if (forceBv == 64 || forceBv == s.V) return forceBv;
    return aWins([&](const Scenario &c) { return fusedBvUs(c, 64); },
                 [&](const Scenario &c) { return fusedBvUs(c, s.V); })
               ? int64_t(64)
               : s.V;
  }();
  auto fusedUs = [&](const Scenario &c) { return fusedBvUs(c, fusedBv); };
  // The fused path splits only when forced.
  auto goFused = [&] {
    best.fused = true;
    best.fusedBv = fusedBv;
    if (force > 0) return;
    best.split = false;
    best.segChunks = kNoSplit;
    best.numIds = segmentIds(s, kNoSplit);
  };
  if (fusedMode == 1) {
    goFused();
  } else if (fusedMode == 0 && force <= 0) {
    // As for the split: the path whose worse ratio to the better path, over
    // the scenarios, is smaller.
    auto twoKernelUs = [&](const Scenario &c) { return prepareUs(c) + cost(c.seqs, c.chunks, best.segChunks); };
    best.fusedUs = fusedUs(scen[0]);
    best.twoKernelUs = prepareUs(scen[0]) + best.predictedUs;
    if (aWins(fusedUs, twoKernelUs)) goFused();
  }
  return best;
}

int deviceSmCount() {
  static const int count = [] {
    void *lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return 132;
    using GetAttr = CUresult (*)(int *, CUdevice_attribute, CUdevice);
    using CtxDev = CUresult (*)(CUdevice *);
    using Init = CUresult (*)(unsigned);
    auto init = reinterpret_cast<Init>(::dlsym(lib, "cuInit"));
    auto attr = reinterpret_cast<GetAttr>(::dlsym(lib, "cuDeviceGetAttribute"));
    auto ctxDev = reinterpret_cast<CtxDev>(::dlsym(lib, "cuCtxGetDevice"));
    if (!init || !attr || init(0) != CUDA_SUCCESS) return 132;
    CUdevice dev = 0;
    if (!ctxDev || ctxDev(&dev) != CUDA_SUCCESS) dev = 0;
    int n = 0;
    if (attr(&n, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) != CUDA_SUCCESS || n < 1) return 132;
    return n;
  }();
  return count;
}

}  // namespace qla::gdn
