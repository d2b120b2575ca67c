// The float64 reference of simple GLA (GlaReference.h): the chunked form the
// kernel computes agrees with the token-by-token recurrence to rounding, for
// chunk-boundary lengths, varlen offsets with empty and one-token sequences,
// GVA groups, an initial state; and against closed forms (no decay: plain
// linear attention; T = 1).
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "GlaReference.h"

using glaref::Problem;

namespace {

Problem randomProblem(int64_t B, int64_t T, int64_t Hqk, int64_t H, int64_t K, int64_t V, bool h0,
                      std::vector<int64_t> offsets, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::uniform_real_distribution<double> ud(0.0, 1.0);
  Problem p;
  p.B = B;
  p.T = T;
  p.Hqk = Hqk;
  p.H = H;
  p.K = K;
  p.V = V;
  p.offsets = std::move(offsets);
  p.scale = 1.0 / std::sqrt(double(K));
  auto fill = [&](std::vector<double> &x, size_t n) {
    x.resize(n);
    for (double &e : x) e = nd(rng);
  };
  fill(p.q, size_t(B * T * Hqk * K));
  fill(p.k, size_t(B * T * Hqk * K));
  fill(p.v, size_t(B * T * H * V));
  p.g.resize(size_t(B * T * H));
  for (double &e : p.g) e = std::log(0.9 + 0.1 * ud(rng));  // log-sigmoid-like decays in [log 0.9, 0]
  if (h0) fill(p.h0, size_t(p.sequences() * H * K * V));
  return p;
}

void checkAgree(const Problem &p, int64_t C) {
  glaref::Result a = glaref::glaRecurrent(p), b = glaref::glaChunked(p, C);
  INFO("T=" << p.T << " C=" << C << " N=" << p.sequences());
  CHECK(glaref::rmsRel(b.o, a.o) < 1e-12);
  CHECK(glaref::rmsRel(b.ht, a.ht) < 1e-12);
}

}  // namespace

TEST_CASE("GLA reference: chunked form == recurrence", "[gla][reference]") {
  for (int64_t T : {1, 7, 8, 9, 20}) checkAgree(randomProblem(2, T, 2, 2, 8, 4, false, {}, 1 + unsigned(T)), 8);
  checkAgree(randomProblem(1, 17, 1, 3, 4, 8, true, {}, 5), 4);                          // initial state
  checkAgree(randomProblem(1, 30, 1, 2, 4, 4, true, {0, 0, 1, 9, 9, 30}, 6), 8);          // varlen, empty seqs
  checkAgree(randomProblem(2, 19, 1, 4, 4, 4, false, {}, 7), 8);                          // GVA: 4 v-heads, 1 q/k head
  checkAgree(randomProblem(1, 130, 1, 1, 16, 8, true, {0, 64, 65, 130}, 8), 64);          // C = 64 boundaries
}

TEST_CASE("GLA reference: closed forms", "[gla][reference]") {
  // No decay (g = 0): o_t = scale Σ_{s<=t} (q_t · k_s) v_s.
  Problem p = randomProblem(1, 11, 1, 1, 3, 2, false, {}, 9);
  for (double &g : p.g) g = 0;
  glaref::Result r = glaref::glaRecurrent(p);
  for (int64_t t = 0; t < p.T; ++t)
    for (int64_t j = 0; j < p.V; ++j) {
      double want = 0;
      for (int64_t s = 0; s <= t; ++s) {
        double qk = 0;
        for (int64_t d = 0; d < p.K; ++d) qk += p.q[size_t(t * p.K + d)] * p.k[size_t(s * p.K + d)];
        want += qk * p.v[size_t(s * p.V + j)];
      }
      CHECK(r.o[size_t(t * p.V + j)] == Approx(p.scale * want).epsilon(1e-12));
    }
  // T = 1 from h0: S = e^g h0 + k vᵀ.
  Problem q1 = randomProblem(1, 1, 1, 1, 2, 2, true, {}, 10);
  glaref::Result r1 = glaref::glaRecurrent(q1);
  const double a = std::exp(q1.g[0]);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      CHECK(r1.ht[size_t(i * 2 + j)] == Approx(a * q1.h0[size_t(i * 2 + j)] + q1.k[size_t(i)] * q1.v[size_t(j)]));
  // An empty sequence keeps its initial state and writes no output.
  Problem e = randomProblem(1, 3, 1, 1, 2, 2, true, {0, 3, 3}, 11);
  glaref::Result re = glaref::glaRecurrent(e);
  for (int i = 0; i < 4; ++i) CHECK(re.ht[size_t(4 + i)] == e.h0[size_t(4 + i)]);
}
