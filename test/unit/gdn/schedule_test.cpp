// The GDN forward's cost model and segment numbering (kernels/gdn/src/Schedule.h),
// no GPU: which shapes split, that forcing works, and that the varlen segment
// ids the kernels compute (gdn_fwd_state.qla) are distinct, increasing and
// below the count the workspace is sized for.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "../../../kernels/gdn/src/Schedule.h"

using qla::gdn::ForwardShape;
using qla::gdn::MachineModel;
using qla::gdn::Schedule;

namespace {

ForwardShape shape(int64_t B, int64_t T, int64_t Hv, int64_t N = 0) {
  ForwardShape s;
  s.B = B;
  s.T = T;
  s.Hv = Hv;
  s.numSequences = N;
  return s;
}

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

TEST_CASE("GDN schedule: few heads and long sequences split, many heads do not", "[gdn][schedule]") {
  MachineModel m;  // H200
  Schedule s = qla::gdn::forwardSchedule(shape(1, 32768, 8), m);
  CHECK(s.split);
  CHECK(s.segChunks >= 8);
  CHECK(s.segChunks < 512);
  CHECK(s.numIds == cdiv(512, s.segChunks));
  // The split is predicted faster than the whole sequence by the same model.
  Schedule whole = qla::gdn::forwardSchedule(shape(1, 32768, 8), m, -1);
  CHECK_FALSE(whole.split);
  CHECK(s.predictedUs < 0.85 * whole.predictedUs);

  for (auto sh : {shape(1, 32768, 64), shape(4, 8192, 64), shape(1, 512, 8), shape(8, 1024, 8)}) {
    Schedule t = qla::gdn::forwardSchedule(sh, m);
    INFO("B " << sh.B << " T " << sh.T << " Hv " << sh.Hv);
    CHECK_FALSE(t.split);
    CHECK(t.segChunks == qla::gdn::kNoSplit);
    CHECK(t.numIds == sh.B);
  }
  // Varlen without a split: one id per sequence plus one spare.
  Schedule v = qla::gdn::forwardSchedule(shape(1, 8192, 64, 4), m);
  CHECK_FALSE(v.split);
  CHECK(v.numIds == 5);
  // A varlen batch whose total is long splits too (each sequence is cut on the
  // device): the model weighs N equal sequences against one holding every
  // token, so a mix like 28672 + 4096 tokens at 16 v-heads splits although two
  // equal halves alone would not pay for it.
  CHECK(qla::gdn::forwardSchedule(shape(1, 32768, 8, 2), m).split);
  CHECK(qla::gdn::forwardSchedule(shape(1, 32768, 16, 2), m).split);
  CHECK_FALSE(qla::gdn::forwardSchedule(shape(1, 32768, 64, 2), m).split);
  CHECK_FALSE(qla::gdn::forwardSchedule(shape(1, 32768, 64, 8), m).split);
}

TEST_CASE("GDN schedule: the fused kernel where its CTAs fill the machine", "[gdn][schedule]") {
  // H200; the cases measured on 2026-12-01
  // (bench/results/gdn_fused_mma_inverse_h200_2026-12-01.log: the model's
  // choices), and the splits forced with QLA_GDN_FUSED_BV=128 on 2026-12-02
  // (bench/results/gdn_fused_pass1_tmat_h200_2026-12-02.log, call 8: prepare's
  // T for both passes of a cut sequence and the two-chain pass 1).
  MachineModel m;
  auto pick = [&](ForwardShape sh) { return qla::gdn::forwardSchedule(sh, m, 0, 0); };
  // 16/64 1x32768: 128 fused CTAs of 64-wide V slices, 1.345 ms against 2.53
  // for the two-kernel path; a split does not pay (1.52 ms in 2 segments with
  // the pass 1 of 2026-12-01; not measured with the two-chain one of 2026-12-02).
  Schedule a = pick(shape(1, 32768, 64));
  CHECK(a.fused);
  CHECK(a.fusedBv == 64);
  CHECK_FALSE(a.split);
  CHECK(a.fusedUs < a.twoKernelUs);
  CHECK(a.fusedUs == Approx(1345).epsilon(0.05));
  CHECK(qla::gdn::forwardSchedule(shape(1, 32768, 64), m, 256, 1).fusedUs > a.fusedUs);
  // 8/32 1x32768: 64 fused CTAs would leave half the SMs idle (1.50 ms);
  // whole heads in segments (0.922 ms at 128 chunks, 0.949 at 64, 1.006 at
  // 32) beat that and the two-kernel path with its split (1.59).
  Schedule b = pick(shape(1, 32768, 32));
  CHECK(b.fused);
  CHECK(b.split);
  CHECK(b.fusedBv == 128);
  CHECK(b.fusedUs < 0.85 * qla::gdn::forwardSchedule(shape(1, 32768, 32), m, -1, 1).fusedUs);
  CHECK(b.fusedUs == Approx(922).epsilon(0.1));
  CHECK(b.twoKernelUs == Approx(1585).epsilon(0.1));
  CHECK(qla::gdn::forwardSchedule(shape(1, 32768, 32), m, 128, 1, 128).fusedUs == Approx(922).epsilon(0.1));
  CHECK(qla::gdn::forwardSchedule(shape(1, 32768, 32), m, 64, 1, 128).fusedUs == Approx(949).epsilon(0.1));
  CHECK(qla::gdn::forwardSchedule(shape(1, 32768, 32), m, 32, 1, 128).fusedUs == Approx(1006).epsilon(0.1));
  // 16/64 8192x4 with cu_seqlens: fused, a whole head per CTA (256 CTAs,
  // 0.891 ms against 2.50 on the two-kernel path), for 4 equal sequences and
  // for one long one alike.
  Schedule v = pick(shape(1, 32768, 64, 4));
  CHECK(v.fused);
  CHECK(v.fusedBv == 128);
  CHECK_FALSE(v.split);
  CHECK(v.fusedUs == Approx(891).epsilon(0.05));
  // Fixed length 4x8192 at 8/32: 128 CTAs of whole heads (0.460 ms against 1.24).
  Schedule w = pick(shape(4, 8192, 32));
  CHECK(w.fused);
  CHECK(w.fusedBv == 128);
  CHECK_FALSE(w.split);
  CHECK(w.fusedUs == Approx(460).epsilon(0.05));
  // The slice can be forced either way (QLA_GDN_FUSED_BV); V = 64 has one.
  CHECK(qla::gdn::forwardSchedule(shape(1, 32768, 64), m, 0, 1, 128).fusedBv == 128);
  CHECK(qla::gdn::forwardSchedule(shape(4, 8192, 32), m, 0, 1, 64).fusedBv == 64);
  CHECK(qla::gdn::forwardSchedule(shape(4, 8192, 32), m, 0, 1, 96).fusedBv == 128);  // neither: the model's
  ForwardShape v64 = shape(4, 8192, 32);
  v64.V = 64;
  CHECK(qla::gdn::forwardSchedule(v64, m, 0, 1, 128).fusedBv == 64);
  // V = 256: 128-wide slices at most (fusedWideBv; 256 asks for them too), or 64.
  ForwardShape v256 = shape(4, 8192, 32);
  v256.V = 256;
  CHECK(qla::gdn::fusedWideBv(256) == 128);
  CHECK(qla::gdn::forwardSchedule(v256, m, 0, 1, 128).fusedBv == 128);
  CHECK(qla::gdn::forwardSchedule(v256, m, 0, 1, 256).fusedBv == 128);
  CHECK(qla::gdn::forwardSchedule(v256, m, 0, 1, 64).fusedBv == 64);
  const int64_t bv256 = qla::gdn::forwardSchedule(v256, m, 0, 1).fusedBv;
  CHECK((bv256 == 64 || bv256 == 128));
  // Few heads, one long sequence: the fused kernel in segments, whole heads;
  // the model's segment length is the best one measured (32 chunks: 0.299
  // ms; 64: 0.390, 128: 0.649; the two-kernel path 0.49).
  Schedule c = pick(shape(1, 32768, 8));
  CHECK(c.fused);
  CHECK(c.split);
  CHECK(c.fusedBv == 128);
  CHECK(c.segChunks == 32);
  CHECK(c.numIds == 16);
  CHECK(c.fusedUs == Approx(299).epsilon(0.1));
  CHECK(qla::gdn::forwardSchedule(shape(1, 32768, 8), m, 64, 1, 128).fusedUs == Approx(390).epsilon(0.1));
  CHECK(qla::gdn::forwardSchedule(shape(1, 32768, 8), m, 128, 1, 128).fusedUs == Approx(649).epsilon(0.1));
  // The same tokens as 4 sequences (cu_seqlens): split too (0.36 ms at 32 chunks, 0.38 unsplit).
  Schedule c4 = pick(shape(1, 32768, 8, 4));
  CHECK(c4.fused);
  CHECK(c4.split);
  // Short: the two-kernel path (2/8 1x2048: 0.056 ms measured on 2026-12-01).
  CHECK_FALSE(pick(shape(1, 2048, 8)).fused);
  // -1: never fused; 1: fused, with the model's split or a forced one.
  CHECK_FALSE(qla::gdn::forwardSchedule(shape(1, 32768, 64), m, 0, -1).fused);
  Schedule f = qla::gdn::forwardSchedule(shape(1, 32768, 8), m, 0, 1);
  CHECK(f.fused);
  CHECK(f.split);
  CHECK(f.segChunks == 32);
  Schedule f1 = qla::gdn::forwardSchedule(shape(1, 32768, 8), m, -1, 1);
  CHECK(f1.fused);
  CHECK_FALSE(f1.split);
  CHECK(f1.numIds == 1);
  Schedule g = qla::gdn::forwardSchedule(shape(2, 1000, 8), m, 3, 1);
  CHECK(g.fused);
  CHECK(g.split);
  CHECK(g.segChunks == 3);
  // With a forced split the model weighs both paths at that length.
  Schedule h = qla::gdn::forwardSchedule(shape(2, 1000, 8), m, 3, 0);
  CHECK(h.segChunks == 3);
  CHECK(h.fused == (h.fusedUs < h.twoKernelUs));
  CHECK_FALSE(qla::gdn::forwardSchedule(shape(2, 1000, 64), m, 3, -1).fused);
}

TEST_CASE("GDN schedule: varlen with known lengths plans for them, not for the worst case", "[gdn][schedule]") {
  // Measured on the H200, 2026-12-03 (bench/gdn_context_parallel.py
  // on FlashQLA's inputs; bench/results/gdn_forward_known_lengths_h200_2026-12-03_s13.log):
  // without the lengths the model hedges against one sequence holding every
  // token and splits; 8 sequences of 1024 tokens at 4/16 then took 0.088 ms,
  // unsplit 0.063; 4 of 8192 at 8/32 0.458 against 0.413. 4 of 8192 at 2/8
  // (32 CTAs of whole heads would idle most SMs) is faster split (0.243 ms,
  // unsplit 0.313).
  MachineModel m;
  auto lengths = [](ForwardShape s, std::vector<int64_t> lens) {
    std::vector<int64_t> cu = {0};
    for (int64_t l : lens) cu.push_back(cu.back() + l);
    s.T = cu.back();
    s.numSequences = int64_t(lens.size());
    qla::gdn::setSequenceChunks(s, cu.data());
    return s;
  };
  const ForwardShape e8 = lengths(shape(1, 0, 16), std::vector<int64_t>(8, 1024));
  CHECK(e8.longestChunks == 16);
  CHECK(e8.sumChunks == 128);
  CHECK(qla::gdn::forwardSchedule(shape(1, 8192, 16, 8), m, 0, 0).split);  // hedged
  Schedule a = qla::gdn::forwardSchedule(e8, m, 0, 0);
  CHECK(a.fused);
  CHECK_FALSE(a.split);
  CHECK(a.fusedUs == Approx(63).epsilon(0.1));
  CHECK(qla::gdn::describeSchedule(e8, a).find("lengths known (longest 16 of 128 chunks)") != std::string::npos);
  CHECK(qla::gdn::describeSchedule(shape(1, 8192, 16, 8), a).find("lengths unknown") != std::string::npos);
  CHECK_FALSE(qla::gdn::forwardSchedule(lengths(shape(1, 0, 32), std::vector<int64_t>(4, 8192)), m, 0, 0).split);
  CHECK(qla::gdn::forwardSchedule(lengths(shape(1, 0, 8), std::vector<int64_t>(4, 8192)), m, 0, 0).split);
  // One long sequence among short ones still splits; its segments are planned
  // from its length.
  Schedule mix = qla::gdn::forwardSchedule(lengths(shape(1, 0, 16), {28672, 4096}), m, 0, 0);
  CHECK(mix.split);
  CHECK(mix.segChunks < 448);
  // Empty sequences count for nothing; no host copy leaves the lengths unknown.
  const ForwardShape z = lengths(shape(1, 0, 8), {0, 100, 0, 64});
  CHECK(z.longestChunks == 2);
  CHECK(z.sumChunks == 3);
  ForwardShape u = shape(1, 164, 8, 4);
  qla::gdn::setSequenceChunks(u, nullptr);
  CHECK(u.longestChunks == 0);
  // The memo tells the two apart.
  CHECK(qla::gdn::forwardSchedule(shape(1, 8192, 16, 8), m, 0, 0).split);
  CHECK_FALSE(qla::gdn::forwardSchedule(e8, m, 0, 0).split);
  // Past 32 distinct lengths they are rounded up to a grid (1 .. 16 chunks,
  // then steps of about 10%, at most the longest): the model's time per
  // plan stays bounded for packed batches of thousands of sequences. The
  // longest and the sum stay exact; no sequence is counted shorter.
  std::vector<int64_t> many;
  for (int64_t i = 1; i <= 3000; ++i) many.push_back(64 * (1 + (i * 37) % 500) - (i % 64));
  const ForwardShape g = lengths(shape(1, 0, 32), many);
  int64_t longest = 0, sum = 0, count = 0;
  for (int64_t l : many) {
    longest = std::max(longest, cdiv(l, 64));
    sum += cdiv(l, 64);
  }
  CHECK(g.longestChunks == longest);
  CHECK(g.sumChunks == sum);
  CHECK(g.lengths.size() <= 50);
  CHECK(g.lengths.front().first == longest);
  for (size_t i = 0; i < g.lengths.size(); ++i) {
    count += g.lengths[i].second;
    if (i > 0) CHECK(g.lengths[i].first < g.lengths[i - 1].first);
  }
  CHECK(count == 3000);
  // Rounded up: the grid's counts at or above any length cover the sequences at or above it.
  for (int64_t c : {1, 17, 100, 250, 499}) {
    int64_t atLeast = 0, gridAtLeast = 0;
    for (int64_t l : many) atLeast += cdiv(l, 64) >= c;
    for (const auto &[ch, k] : g.lengths) gridAtLeast += ch >= c ? k : 0;
    CHECK(gridAtLeast >= atLeast);
  }
  const Schedule gs = qla::gdn::forwardSchedule(g, m, 0, 0);
  CHECK(gs.fused);
}

TEST_CASE("GDN schedule: a bound on the longest sequence replaces the worst case", "[gdn][schedule]") {
  // Without the lengths the model hedges against one sequence holding every
  // token (8 sequences, 8192 tokens at 16 heads: it splits, where 8 of 1024
  // ran faster unsplit on the H200, see above). A bound of 1024 tokens
  // (ForwardParams::max_seqlen, vLLM's max_query_len) rules that sequence
  // out: no split, as with the lengths known.
  MachineModel m;
  ForwardShape hedged = shape(1, 8192, 16, 8);
  CHECK(qla::gdn::forwardSchedule(hedged, m, 0, 0).split);
  ForwardShape bounded = hedged;
  bounded.maxChunks = 16;
  const Schedule b = qla::gdn::forwardSchedule(bounded, m, 0, 0);
  CHECK_FALSE(b.split);
  CHECK(qla::gdn::describeSchedule(bounded, b).find("lengths unknown (at most 16 chunks each)") != std::string::npos);
  // A bound as long as the whole batch is no bound: the same plan as none.
  ForwardShape loose = hedged;
  loose.maxChunks = 128;
  const Schedule l = qla::gdn::forwardSchedule(loose, m, 0, 0), h = qla::gdn::forwardSchedule(hedged, m, 0, 0);
  CHECK(l.split == h.split);
  CHECK(l.segChunks == h.segChunks);
  CHECK(l.fused == h.fused);
  // Long sequences with a long bound still split (few heads: 4 of 8192 at 2/8 tokens).
  ForwardShape longOnes = shape(1, 4 * 8192, 8, 4);
  longOnes.maxChunks = 128;
  CHECK(qla::gdn::forwardSchedule(longOnes, m, 0, 0).split);
}

TEST_CASE("GDN schedule: forcing a segment length", "[gdn][schedule]") {
  MachineModel m;
  Schedule s = qla::gdn::forwardSchedule(shape(2, 1000, 64), m, 3);
  CHECK(s.split);
  CHECK(s.segChunks == 3);
  CHECK(s.numIds == 2 * cdiv(16, 3));
  // A segment as long as the sequence is no split.
  CHECK_FALSE(qla::gdn::forwardSchedule(shape(2, 1000, 64), m, 16).split);
  CHECK_FALSE(qla::gdn::forwardSchedule(shape(1, 32768, 8), m, -1).split);
}

TEST_CASE("GDN schedule: varlen segment ids are distinct, increasing and in range", "[gdn][schedule]") {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 2000; ++trial) {
    const int N = 1 + int(rng() % 12);
    std::vector<int64_t> cu = {0};
    for (int i = 0; i < N; ++i) {
      const int kind = int(rng() % 4);
      int64_t len = kind == 0 ? 0 : kind == 1 ? 1 + rng() % 3 : kind == 2 ? 1 + rng() % 200 : 1 + rng() % 5000;
      cu.push_back(cu.back() + len);
    }
    if (cu.back() == 0) continue;
    const int64_t T = cu.back();
    const int64_t ls = 1 + int64_t(rng() % 9);
    const int64_t nz = qla::gdn::segmentIds(shape(1, T, 1, N), ls);
    int64_t last = -1;
    for (int n = 0; n < N; ++n) {
      const int64_t bos = cu[n], nc = cdiv(cu[n + 1] - bos, 64), nseg = cdiv(nc, ls);
      const int64_t id0 = n + (bos / 64 + n) / ls;  // as gdn_fwd_state.qla and gdn_fwd_merge.qla
      INFO("trial " << trial << " n " << n << " ls " << ls);
      CHECK(id0 > last);
      for (int64_t j = 0; j < nseg; ++j) {
        CHECK(id0 + j > last);
        last = id0 + j;
        CHECK(last < nz);
      }
      if (nseg == 0) last = id0;  // an empty sequence still has an id0 (the binary search needs them increasing)
    }
  }
}

TEST_CASE("GDN schedule: the log line names the path, the slice, the split and the model's times", "[gdn][schedule]") {
  MachineModel m;
  ForwardShape s = shape(1, 32768, 8);
  Schedule a = qla::gdn::forwardSchedule(s, m, 0, 0);
  REQUIRE(a.fused);
  REQUIRE(a.split);
  const std::string d = qla::gdn::describeSchedule(s, a);
  CHECK(d.rfind("B=1 T=32768 Hv=8 K=128 V=128 N=1: fused kernel, whole heads (BV=128), segments of 32 chunks "
                "(prepare's T, pass 1, merge, pass 2; 16 segment ids); model ", 0) == 0);
  CHECK(d.find("us (two-kernel path ") != std::string::npos);
  // Unsplit, 64-wide slices, cu_seqlens with 4 sequences.
  ForwardShape v = shape(1, 32768, 64, 4);
  Schedule b = qla::gdn::forwardSchedule(v, m, 0, 1, 64);
  REQUIRE(b.fusedBv == 64);
  CHECK(qla::gdn::describeSchedule(v, b).find("N=4: lengths unknown, fused kernel, 64-wide V slices, no split; model ") != std::string::npos);
  // The two-kernel path, forced.
  Schedule t = qla::gdn::forwardSchedule(s, m, -1, -1);
  const std::string dt = qla::gdn::describeSchedule(s, t);
  CHECK(dt.find(": two-kernel path (prepare, state), no split; model ") != std::string::npos);
  CHECK(dt.find("us (fused kernel ") != std::string::npos);
}

TEST_CASE("GDN schedule: memoized per input, the model's constants included", "[gdn][schedule]") {
  auto same = [](const Schedule &a, const Schedule &b) {
    return a.segChunks == b.segChunks && a.numIds == b.numIds && a.split == b.split && a.fused == b.fused &&
           a.fusedBv == b.fusedBv && a.predictedUs == b.predictedUs && a.fusedUs == b.fusedUs &&
           a.twoKernelUs == b.twoKernelUs;
  };
  MachineModel m;
  const ForwardShape s = shape(1, 32768, 8, 1);
  const Schedule a = qla::gdn::forwardSchedule(s, m, 0, 0);
  CHECK(same(a, qla::gdn::forwardSchedule(s, m, 0, 0)));  // the memo's answer
  // Every input reaches the key: a slower fused kernel, another SM count,
  // another path or segment length give other schedules, and the first
  // comes back unchanged.
  MachineModel slow = m;
  slow.fusedChunkUs = 100.0;
  slow.fusedHeadChunkUs = 100.0;
  CHECK(a.fused);
  CHECK_FALSE(qla::gdn::forwardSchedule(s, slow, 0, 0).fused);
  MachineModel few = m;
  few.sms = 8;
  CHECK(qla::gdn::forwardSchedule(s, few, 0, 0).predictedUs > a.predictedUs);
  CHECK_FALSE(qla::gdn::forwardSchedule(s, m, 0, -1).fused);
  CHECK(qla::gdn::forwardSchedule(s, m, 4, 0).segChunks == 4);
  CHECK(same(a, qla::gdn::forwardSchedule(s, m, 0, 0)));
  // Many distinct inputs (past the memo's 4096 entries): each answer equals
  // the one given for the same input before.
  std::vector<Schedule> first;
  for (int64_t T = 64; T <= 64 * 5000; T += 64) first.push_back(qla::gdn::forwardSchedule(shape(1, T, 4, 1), m, 0, 0));
  int64_t i = 0;
  bool all = true;
  for (int64_t T = 64; T <= 64 * 5000; T += 64) all = all && same(first[size_t(i++)], qla::gdn::forwardSchedule(shape(1, T, 4, 1), m, 0, 0));
  CHECK(all);
}

TEST_CASE("GDN backward: the fused gradient kernel's own segments", "[gdn][schedule][backward]") {
  MachineModel m;  // 132 SMs
  // 32 v-heads of one 8192-token sequence: 32 CTAs unsplit, each 128 chunk
  // steps long; four segments of 32 chunks fill the machine in one wave.
  const Schedule a = qla::gdn::fusedBackwardSchedule(shape(1, 8192, 32), m);
  CHECK(a.split);
  CHECK(a.segChunks == 32);
  CHECK(a.numIds == 4);
  const Schedule whole = qla::gdn::fusedBackwardSchedule(shape(1, 8192, 32), m, -1);
  CHECK_FALSE(whole.split);
  CHECK(whole.segChunks == qla::gdn::kNoSplit);
  CHECK(whole.numIds == 1);
  CHECK(a.predictedUs < 0.5 * whole.predictedUs);
  // The recompute's schedule does not split that shape (its state pass is
  // some ten times lighter a chunk): the backward's is its own.
  CHECK_FALSE(qla::gdn::forwardSchedule(shape(1, 8192, 32), m).split);
  // Enough CTAs already (8 x 32 = 256, two waves): no split.
  CHECK_FALSE(qla::gdn::fusedBackwardSchedule(shape(8, 1024, 32), m).split);
  // Few heads, long sequences: many short segments.
  const Schedule few = qla::gdn::fusedBackwardSchedule(shape(1, 32768, 4), m);
  CHECK(few.split);
  CHECK(few.segChunks <= 32);
  CHECK(few.numIds == cdiv(512, few.segChunks));
  // Forced and forbidden, as forwardSchedule's force; K = 256 never splits.
  CHECK(qla::gdn::fusedBackwardSchedule(shape(1, 8192, 32), m, 8).segChunks == 8);
  CHECK(qla::gdn::fusedBackwardSchedule(shape(1, 8192, 32), m, 8).numIds == 16);
  ForwardShape k256 = shape(1, 8192, 4);
  k256.K = 256;
  CHECK_FALSE(qla::gdn::fusedBackwardSchedule(k256, m).split);
  // Varlen with known lengths: eight sequences of 16 chunks at 32 heads fill
  // the machine unsplit; one of 128 chunks among short ones is cut.
  ForwardShape eight = shape(1, 8192, 32, 8);
  std::vector<int64_t> cu8;
  for (int64_t n = 0; n <= 8; ++n) cu8.push_back(n * 1024);
  qla::gdn::setSequenceChunks(eight, cu8.data());
  CHECK_FALSE(qla::gdn::fusedBackwardSchedule(eight, m).split);
  ForwardShape mixed = shape(1, 8192 + 3 * 64, 32, 4);
  const std::vector<int64_t> cuMixed = {0, 64, 128, 192, 8192 + 192};
  qla::gdn::setSequenceChunks(mixed, cuMixed.data());
  const Schedule mx = qla::gdn::fusedBackwardSchedule(mixed, m);
  CHECK(mx.split);
  CHECK(mx.segChunks < 128);
  CHECK(mx.numIds == qla::gdn::segmentIds(mixed, mx.segChunks));
  // Memoized: the same answer again; another SM count another answer.
  CHECK(qla::gdn::fusedBackwardSchedule(shape(1, 8192, 32), m).segChunks == a.segChunks);
  MachineModel big = m;
  big.sms = 1024;
  CHECK(qla::gdn::fusedBackwardSchedule(shape(1, 8192, 32), big).segChunks < a.segChunks);
}
