// The GDN forward's cost model (Schedule.h).
#include "Schedule.h"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
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

void setSequenceChunks(ForwardShape &s, const int64_t *cuHost) {
  s.longestChunks = s.sumChunks = 0;
  s.lengths.clear();
  if (!cuHost || s.numSequences < 1) return;
  std::map<int64_t, int64_t, std::greater<>> count;
  for (int64_t n = 0; n < s.numSequences; ++n) {
    const int64_t c = cdiv(std::max<int64_t>(cuHost[n + 1] - cuHost[n], 0), kChunk);
    s.longestChunks = std::max(s.longestChunks, c);
    s.sumChunks += c;
    if (c > 0) ++count[c];
  }
  // Many distinct lengths (a packed batch of thousands of sequences) cost
  // the model time per plan (each option walks them): past 32 of them each
  // length is rounded up to a grid of 1 .. 16 chunks, then steps of about
  // 10% (at most the longest), which keeps a new plan under 0.1 ms
  // (bench/gdn_schedule_cost.cpp).
  if (count.size() > 32) {
    std::map<int64_t, int64_t, std::greater<>> grid;
    for (const auto &[c, k] : count) {
      int64_t g = 1;
      while (g < c) g = g < 16 ? g + 1 : g + (g + 9) / 10;
      grid[std::min(g, s.longestChunks)] += k;
    }
    count.swap(grid);
  }
  s.lengths.assign(count.begin(), count.end());
}

int64_t segmentIds(const ForwardShape &s, int64_t segChunks) {
  const int64_t chunks = cdiv(s.T, kChunk);
  // Varlen: segment j of sequence n has id n + (bos / C + n) / ls + j, below
  // N + (cdiv(T, C) + N) / ls (see gdn_fwd_state.qla).
  if (s.numSequences > 0) return s.numSequences + cdiv(chunks + s.numSequences, segChunks);
  return s.B * cdiv(chunks, segChunks);
}

namespace {

// The batches a schedule is weighed against. Fixed length: one scenario,
// the shapes say it all. With cu_seqlens only the total is known on the host
// (the device cuts each real sequence by the chosen length), so the model
// weighs two extremes, N equal sequences and one sequence holding (nearly)
// every token, and takes the segment length whose worse ratio to that
// scenario's best is smallest. With known lengths the scenario is the batch
// itself: `lens` holds its sequences (chunks, how many), and seqs x chunks
// stands in for it where the model takes equal sequences (the two-kernel
// path: as many of the longest one's length as hold every chunk).
struct Scenario {
  int64_t seqs, chunks;
  std::vector<std::pair<int64_t, int64_t>> lens;
};

std::vector<Scenario> scenariosOf(const ForwardShape &s) {
  const int64_t N = s.numSequences > 0 ? s.numSequences : s.B, total = cdiv(s.T, kChunk);
  std::vector<Scenario> scen;
  if (s.numSequences > 1 && s.longestChunks > 0) {
    scen.push_back({cdiv(std::max(s.sumChunks, s.longestChunks), s.longestChunks), s.longestChunks, s.lengths});
  } else if (s.numSequences > 1) {
    // The longest a sequence can be: all the tokens, or the caller's bound.
    const int64_t longest = s.maxChunks > 0 ? std::min(s.maxChunks, std::max<int64_t>(total, 1)) : total;
    scen.push_back({N, std::max<int64_t>(1, std::min(longest, cdiv(s.T, kChunk * N))), {}});
    scen.push_back({std::min(N, cdiv(total, std::max<int64_t>(longest, 1))), longest, {}});
  } else {
    scen.push_back({N, total, {}});
  }
  return scen;
}

// Segment lengths worth weighing: each scenario's sequences cut into 2 .. 64
// equal parts.
std::vector<int64_t> segmentCandidates(const std::vector<Scenario> &scen) {
  std::vector<int64_t> cands;
  for (const Scenario &c : scen)
    for (int64_t ns = 2; ns <= 64 && ns <= c.chunks; ++ns) cands.push_back(cdiv(c.chunks, ns));
  return cands;
}

Schedule computeSchedule(const ForwardShape &s, const MachineModel &m, int64_t force, int fusedMode,
                         int64_t forceBv) {
  if (!splitAndFusedTake(s.K)) {
    fusedMode = -1;
    force = -1;
  }
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
  const std::vector<Scenario> scen = scenariosOf(s);
  const std::vector<int64_t> cands = segmentCandidates(scen);

  // Each path's whole forward for a scenario. Two-kernel: prepare (parallel
  // over every chunk and v-head) plus the recurrence as above.
  auto prepareUs = [&](const Scenario &c) {
    return double(c.seqs * c.chunks * s.Hv) * m.prepareChunkHeadUs / double(m.sms);
  };
  auto twoKernelUs = [&](const Scenario &c, int64_t ls) { return prepareUs(c) + cost(c.seqs, c.chunks, ls); };
  // Fused, one CTA per SM for each (segment, v-head, V slice of bv columns),
  // every chunk step of a segment on its CTA's chain: the 64-wide slice
  // doubles the CTAs (and the chunk-local work), the whole head takes one CTA
  // per head and a longer step. Split: prepare's T (parallel over the chunks
  // of the cut sequences and every v-head), pass 1 (every segment but the
  // last: a CTA per 64-wide slice, two per SM), the merge's chain, pass 2
  // (reading that T rather than inverting: fusedTStepScale). A split
  // schedule launches its three extra kernels also where a scenario's
  // sequences are too short to be cut.
  // With known lengths, pass 2's CTAs differ in length (a sequence's last
  // segment holds the rest, and sequences differ): its time is the larger of
  // the waves of the long CTAs (over half the longest one's time), each as
  // long as the longest, and all the CTAs' time spread over the SMs.
  auto fusedLensUs = [&](const Scenario &c, int64_t ls, int64_t bv) {
    const int64_t hs = s.Hv * cdiv(s.V, bv), nk = cdiv(std::max(s.K, s.V), 64);
    const double step = bv < fusedWideBv(s.V) ? m.fusedChunkUs : m.fusedHeadChunkUs;
    auto stepOf = [&](int64_t ns) { return ns > 1 ? step * m.fusedTStepScale : step; };
    double dmax = 0;
    for (const auto &[ch, k] : c.lens) dmax = std::max(dmax, double(std::min(ch, ls)) * stepOf(cdiv(ch, ls)));
    double work = 0;
    int64_t big = 0, segs = 0, cutChunks = 0, units1 = 0, chain = 0;
    for (const auto &[ch, k] : c.lens) {
      const int64_t ns = cdiv(ch, ls), last = ch - (ns - 1) * ls;
      const double st = stepOf(ns);
      work += double(k * ch) * st;
      big += k * ((ns - 1) + (2 * double(last) * st > dmax ? 1 : 0));
      segs += k * ns;
      if (ns > 1) {
        cutChunks += k * ch;
        units1 += k * (ns - 1);
        chain = std::max(chain, ns - 2);
      }
    }
    const double pass2 = std::max(double(cdiv(hs * big, m.sms)) * (dmax + m.waveStartUs),
                                  double(hs) * work / double(m.sms) + m.waveStartUs);
    if (ls == kNoSplit) return pass2;
    const int64_t ids = segmentIds(s, ls);
    const int64_t tmatCtas = (s.B * total + std::max<int64_t>(s.numSequences - 1, 0)) * s.Hv;
    const int64_t emptyIds = std::max<int64_t>(ids - segs, 0) * hs;
    const double empty = m.emptyWaveUs * double(cdiv(tmatCtas, 6 * m.sms) + cdiv(ids * s.Hv * nk, 2 * m.sms) +
                                                cdiv(emptyIds, m.sms));
    if (units1 == 0) return pass2 + 3 * m.launchUs + empty;
    const double tmat = double(cutChunks * s.Hv) * m.tmatChunkHeadUs / double(m.sms);
    const double pass1 = passUs(s.Hv * units1 * nk, ls, m.fusedPass1AloneUs, m.fusedPass1PairUs, m);
    return tmat + pass1 + m.mergeStepUs * double(chain) + 3 * m.launchUs + pass2 + empty;
  };
  auto fusedUs = [&](const Scenario &c, int64_t ls, int64_t bv) {
    if (!c.lens.empty()) return fusedLensUs(c, ls, bv);
    const int64_t heads = c.seqs * s.Hv, ns = cdiv(c.chunks, ls);
    const double step = bv < fusedWideBv(s.V) ? m.fusedChunkUs : m.fusedHeadChunkUs;
    const double whole = double(cdiv(heads * cdiv(s.V, bv), m.sms)) * (double(c.chunks) * step + m.waveStartUs);
    if (ls == kNoSplit) return whole;
    // The grids of a split are the shape's, whatever the scenario: prepare's
    // (every chunk, six CTAs per SM), pass 1's (two per SM) and pass 2's
    // ids that this scenario leaves empty.
    const int64_t ids = segmentIds(s, ls);
    const int64_t tmatCtas = (s.B * total + std::max<int64_t>(s.numSequences - 1, 0)) * s.Hv;
    const int64_t pass1Ctas = ids * s.Hv * cdiv(std::max(s.K, s.V), 64);
    const int64_t emptyIds = std::max<int64_t>(ids - c.seqs * ns, 0) * s.Hv * cdiv(s.V, bv);
    const double empty = m.emptyWaveUs * double(cdiv(tmatCtas, 6 * m.sms) + cdiv(pass1Ctas, 2 * m.sms) +
                                                cdiv(emptyIds, m.sms));
    if (ns <= 1) return whole + 3 * m.launchUs + empty;
    const double tmat = double(c.seqs * c.chunks * s.Hv) * m.tmatChunkHeadUs / double(m.sms);
    const int64_t units1 = heads * (ns - 1) * cdiv(std::max(s.K, s.V), 64);
    const double pass1 = passUs(units1, ls, m.fusedPass1AloneUs, m.fusedPass1PairUs, m);
    const double pass2 =
        double(cdiv(heads * ns * cdiv(s.V, bv), m.sms)) * (double(ls) * step * m.fusedTStepScale + m.waveStartUs);
    return tmat + pass1 + m.mergeStepUs * double(ns - 2) + 3 * m.launchUs + pass2 + empty;
  };

  // One path's choice among its options (a segment length, and for the fused
  // kernel a V slice): the option whose worse ratio, over the scenarios, to
  // that scenario's best option is smallest; a split only for a clear gain
  // (the model is a model) over the best unsplit option. `force` > 0 fixes
  // the segment length, -1 forbids a split.
  struct Option {
    int64_t ls, bv;
  };
  auto choose = [&](auto time, const std::vector<int64_t> &bvs) {
    std::vector<Option> opts;
    for (int64_t bv : bvs) {
      if (force > 0) {
        opts.push_back({force, bv});
        continue;
      }
      opts.push_back({kNoSplit, bv});
      if (force == 0)
        for (int64_t ls : cands) opts.push_back({ls, bv});
    }
    std::vector<double> best(scen.size(), 0);
    for (size_t i = 0; i < scen.size(); ++i) {
      best[i] = time(scen[i], opts[0]);
      for (const Option &o : opts) best[i] = std::min(best[i], time(scen[i], o));
    }
    auto regret = [&](const Option &o) {
      double r = 0;
      for (size_t i = 0; i < scen.size(); ++i) r = std::max(r, time(scen[i], o) / best[i]);
      return r;
    };
    // Unsplit (or forced) options first, in the order given (ties: the
    // first); a narrower V slice than the first option's only for a clear
    // gain (5%: two-sequence mixes at 16/64, predicted 3% faster in 64-wide
    // slices, measured 3% slower on 2026-12-03; docs/performance.md's git history).
    Option pick = opts[0];
    double pr = regret(pick);
    for (const Option &o : opts)
      if ((o.ls == kNoSplit || force > 0) && regret(o) < (o.bv < opts[0].bv ? 0.95 : 1.0) * pr) {
        pick = o;
        pr = regret(o);
      }
    if (force != 0) return pick;
    double bar = pr * 0.85;
    for (const Option &o : opts) {
      if (o.ls == kNoSplit) continue;
      const double r = regret(o);
      if (r < bar || (r == bar && pick.ls != kNoSplit && o.ls > pick.ls)) {
        bar = r;
        pick = o;
      }
    }
    return pick;
  };

  Schedule best;
  const Option two = choose([&](const Scenario &c, const Option &o) { return twoKernelUs(c, o.ls); },
                            std::vector<int64_t>{s.V});
  // The fused kernel's V slices: the widest (a whole head up to 128) first
  // (ties), then 64 columns; forceBv (64, or the widest or V) keeps one.
  const int64_t wide = fusedWideBv(s.V);
  std::vector<int64_t> bvs = {wide};
  if (wide > 64) {
    if (forceBv == 64) bvs = {64};
    else if (forceBv != wide && forceBv != s.V) bvs.push_back(64);
  }
  auto fusedTime = [&](const Scenario &c, const Option &o) { return fusedUs(c, o.ls, o.bv); };
  const Option fused = choose(fusedTime, bvs);
  best.twoKernelUs = twoKernelUs(scen[0], two.ls);
  best.fusedUs = fusedTime(scen[0], fused);
  // The path: as for the options, the one whose worse ratio to the better
  // path, over the scenarios, is smaller (ties: the two-kernel path).
  bool goFused = fusedMode == 1;
  if (fusedMode == 0) {
    double rf = 0, rt = 0;
    for (const Scenario &c : scen) {
      const double x = fusedTime(c, fused), y = twoKernelUs(c, two.ls);
      rf = std::max(rf, x / std::min(x, y));
      rt = std::max(rt, y / std::min(x, y));
    }
    goFused = rf < rt;
  }
  const Option &o = goFused ? fused : two;
  best.fused = goFused;
  best.fusedBv = goFused ? fused.bv : 0;
  best.segChunks = o.ls;
  best.predictedUs = goFused ? best.fusedUs : cost(scen[0].seqs, scen[0].chunks, o.ls);
  // The passes run whenever some sequence can have more than one segment.
  best.split = best.segChunks < kNoSplit && total > best.segChunks;
  if (!best.split) best.segChunks = kNoSplit;
  best.numIds = segmentIds(s, best.segChunks);
  return best;
}

Schedule computeBackwardSchedule(const ForwardShape &s, const MachineModel &m, int64_t force) {
  const std::vector<Scenario> scen = scenariosOf(s);
  const int64_t total = cdiv(s.T, kChunk), nV = cdiv(s.V, 64), nK = cdiv(s.K, 64);
  // The fused kernel over a scenario's segments: CTAs of ls chunks (each
  // sequence's last one holds the rest), one per SM at a time; the busiest
  // SM runs the long CTAs' waves or its share of all the chunk steps.
  auto timeUs = [&](const Scenario &c, int64_t ls) {
    std::vector<std::pair<int64_t, int64_t>> lens = c.lens;
    if (lens.empty()) lens.push_back({c.chunks, c.seqs});
    int64_t units = 0, longest = 0, steps = 0, units1 = 0, chain = 0;
    for (const auto &[ch, k] : lens) {
      const int64_t ns = cdiv(ch, ls);
      units += k * ns;
      steps += k * ch;
      longest = std::max(longest, std::min(ch, ls));
      units1 += k * (ns - 1);
      chain = std::max(chain, ns - 2);
    }
    int64_t big = 0;
    for (const auto &[ch, k] : lens) {
      const int64_t ns = cdiv(ch, ls), last = ch - (ns - 1) * ls;
      big += k * ((ns - 1) * (2 * ls > longest ? 1 : 0) + (2 * last > longest ? 1 : 0));
    }
    units *= s.Hv;
    big *= s.Hv;
    steps *= s.Hv;
    const double busy = std::min(1.0, double(units) / double(m.sms));
    const double step = m.bwdChunkAloneUs + (m.bwdChunkFullUs - m.bwdChunkAloneUs) * busy;
    const double fused = std::max(double(cdiv(big, m.sms) * longest), double(steps) / double(m.sms)) * step +
                         double(cdiv(units, m.sms)) * m.waveStartUs;
    if (ls == kNoSplit) return fused;
    // A split launches pass 1 and the merge whatever the scenario, and its
    // ids past a sequence's last segment start CTAs that do nothing.
    const int64_t ids = segmentIds(s, ls);
    const double empty = m.emptyWaveUs * double(cdiv(std::max<int64_t>(ids * s.Hv - units, 0), m.sms));
    if (units1 == 0) return fused + 2 * m.launchUs + empty;
    const double pass1 =
        passUs(s.Hv * units1 * (nV + nK), std::min(ls, longest), m.dhPass1AloneUs, m.dhPass1PairUs, m);
    return pass1 + m.mergeStepUs * double(chain) + 2 * m.launchUs + fused + empty;
  };
  Schedule sch;
  int64_t pick = kNoSplit;
  if (!splitAndFusedTake(s.K) || force < 0) {
    pick = kNoSplit;
  } else if (force > 0) {
    pick = force;
  } else {
    std::vector<int64_t> opts = {kNoSplit};
    for (int64_t ls : segmentCandidates(scen)) opts.push_back(ls);
    std::vector<double> best(scen.size());
    for (size_t i = 0; i < scen.size(); ++i) {
      best[i] = timeUs(scen[i], kNoSplit);
      for (int64_t ls : opts) best[i] = std::min(best[i], timeUs(scen[i], ls));
    }
    auto regret = [&](int64_t ls) {
      double r = 0;
      for (size_t i = 0; i < scen.size(); ++i) r = std::max(r, timeUs(scen[i], ls) / best[i]);
      return r;
    };
    // A split for a clear gain only (the model is a model): 10%.
    double bar = 0.9 * regret(kNoSplit);
    for (int64_t ls : opts) {
      if (ls == kNoSplit) continue;
      const double r = regret(ls);
      if (r < bar || (r == bar && pick != kNoSplit && ls > pick)) {
        bar = r;
        pick = ls;
      }
    }
  }
  sch.split = pick < kNoSplit && total > pick;
  sch.segChunks = sch.split ? pick : kNoSplit;
  sch.numIds = segmentIds(s, sch.segChunks);
  sch.predictedUs = timeUs(scen[0], sch.segChunks);
  return sch;
}

// Every input of the model, for the memo below.
std::vector<double> scheduleKey(const ForwardShape &s, const MachineModel &m, int64_t force, int fusedMode,
                                int64_t forceBv) {
  std::vector<double> k = {double(s.B), double(s.T), double(s.Hv), double(s.K), double(s.V), double(s.numSequences),
                           double(s.longestChunks), double(s.sumChunks), double(s.maxChunks),
                           double(force), double(fusedMode), double(forceBv), double(m.sms), double(m.resident),
                           m.pass2AloneUs, m.pass2PairUs, m.pass1AloneUs, m.pass1PairUs, m.waveStartUs, m.mergeStepUs,
                           m.launchUs, m.fusedChunkUs, m.fusedHeadChunkUs, m.tmatChunkHeadUs, m.fusedPass1AloneUs,
                           m.fusedPass1PairUs, m.emptyWaveUs, m.fusedTStepScale, m.prepareChunkHeadUs};
  for (const auto &[ch, n] : s.lengths) {
    k.push_back(double(ch));
    k.push_back(double(n));
  }
  return k;
}

}  // namespace

// The model weighs every segment length and V slice against two scenarios
// (27 µs on the build machine); an operator call asks for the same
// schedule several times (workspace size, validation, the launch, the
// backward's), so results are memoized per process (at most 4096 entries,
// then the memo starts over).
Schedule forwardSchedule(const ForwardShape &s, const MachineModel &m, int64_t force, int fusedMode,
                         int64_t forceBv) {
  static std::mutex mu;
  static std::map<std::vector<double>, Schedule> memo;
  std::vector<double> key = scheduleKey(s, m, force, fusedMode, forceBv);
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = memo.find(key);
    if (it != memo.end()) return it->second;
  }
  const Schedule sch = computeSchedule(s, m, force, fusedMode, forceBv);
  std::lock_guard<std::mutex> lock(mu);
  if (memo.size() >= 4096) memo.clear();
  memo.emplace(std::move(key), sch);
  return sch;
}

Schedule fusedBackwardSchedule(const ForwardShape &s, const MachineModel &m, int64_t force) {
  static std::mutex mu;
  static std::map<std::vector<double>, Schedule> memo;
  std::vector<double> key = scheduleKey(s, m, force, 2, 0);
  for (double c : {m.bwdChunkAloneUs, m.bwdChunkFullUs, m.dhPass1AloneUs, m.dhPass1PairUs}) key.push_back(c);
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = memo.find(key);
    if (it != memo.end()) return it->second;
  }
  const Schedule sch = computeBackwardSchedule(s, m, force);
  std::lock_guard<std::mutex> lock(mu);
  if (memo.size() >= 4096) memo.clear();
  memo.emplace(std::move(key), sch);
  return sch;
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

std::string describeShape(const ForwardShape &s) {
  char head[160];
  std::snprintf(head, sizeof head, "B=%lld T=%lld Hv=%lld K=%lld V=%lld N=%lld: ", (long long)s.B, (long long)s.T,
                (long long)s.Hv, (long long)s.K, (long long)s.V,
                (long long)(s.numSequences > 0 ? s.numSequences : s.B));
  std::string d = head;
  if (s.numSequences > 1)
    d += s.longestChunks > 0 ? "lengths known (longest " + std::to_string(s.longestChunks) + " of " +
                                   std::to_string(s.sumChunks) + " chunks), "
                             : s.maxChunks > 0 ? "lengths unknown (at most " + std::to_string(s.maxChunks) + " chunks each), "
                                               : "lengths unknown, ";
  return d;
}

std::string describeSchedule(const ForwardShape &s, const Schedule &sch) {
  char tail[96];
  std::string d = describeShape(s);
  if (sch.fused) {
    d += "fused kernel, ";
    d += sch.fusedBv >= s.V ? "whole heads (BV=" + std::to_string(sch.fusedBv) + ")"
                            : std::to_string(sch.fusedBv) + "-wide V slices";
  } else {
    d += "two-kernel path (prepare, state)";
  }
  if (sch.split)
    d += ", segments of " + std::to_string(sch.segChunks) + " chunks (" +
         (sch.fused ? "prepare's T, " : "") + "pass 1, merge, pass 2; " + std::to_string(sch.numIds) +
         " segment ids)";
  else
    d += ", no split";
  std::snprintf(tail, sizeof tail, "; model %.0f us (%s %.0f us)", sch.fused ? sch.fusedUs : sch.twoKernelUs,
                sch.fused ? "two-kernel path" : "fused kernel", sch.fused ? sch.twoKernelUs : sch.fusedUs);
  return d + tail;
}

}  // namespace qla::gdn
