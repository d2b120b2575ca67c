// Tests of the float64 GDN reference (GdnReference.h) against formulations
// written independently of it: the chunked gate-free form of GDN.md (chunk 64)
// and the closed form S = e^g (I - beta k k^T) S + beta k v^T, plus hand-made
// cases, the GVA head mapping, varlen packing and the input checks.
#include "GdnReference.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace ref = qla::gdn::reference;

namespace {

// Sequence n's token range and batch row, shared by the formulations below.
struct SeqRange {
  int b;
  std::int64_t bos, eos;
};

SeqRange sequence(const ref::Inputs& in, int n) {
  if (in.cuSeqlens)
    return {0, in.cuSeqlens[n], in.cuSeqlens[n + 1]};
  return {n, 0, in.T};
}

// q or k of token `row`, head hk, normalized when the inputs ask for it.
std::vector<double> qkRow(const ref::Inputs& in, const double* x, std::size_t row, int hk) {
  std::vector<double> r(x + (row * in.Hqk + hk) * in.K, x + (row * in.Hqk + hk + 1) * in.K);
  if (in.l2normQK) {
    double ss = 0;
    for (double e : r)
      ss += e * e;
    for (double& e : r)
      e /= std::sqrt(ss + 1e-6);
  }
  return r;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    s += a[i] * b[i];
  return s;
}

// The chunked gate-free form of GDN.md, chunk C, per sequence and v-head:
//   A  = (I + strict_lower(diag(beta) K K^T))^-1     (forward substitution)
//   U  = K S;  W = V - D U;  Vd = (Gamma o A) diag(beta) W
//   O  = scale D (Q S) + (scale Gamma o tril(Q K^T)) Vd
//   S  = e^{gamma_L} S + K^T (e^{gamma_L - gamma} o Vd)
// Gamma_ij = e^{gamma_i - gamma_j} (i >= j) is formed directly, never through
// D^-1, so that harsh gates (gamma down to -1000s) stay finite.
ref::Outputs chunkedForm(const ref::Inputs& in, int C = 64) {
  const int Hv = in.Hv, K = in.K, V = in.V, group = in.Hv / in.Hqk;
  const int N = ref::numSequences(in);
  const double scale = in.scale ? *in.scale : 1.0 / std::sqrt(double(K));
  ref::Outputs out;
  out.N = N;
  out.o.assign(std::size_t(in.B) * in.T * Hv * V, 0.0);
  out.finalState.assign(std::size_t(N) * Hv * K * V, 0.0);

  for (int n = 0; n < N; ++n) {
    const SeqRange sr = sequence(in, n);
    for (int j = 0; j < Hv; ++j) {
      const int hk = j / group;
      std::vector<double> S(std::size_t(K) * V, 0.0);
      const std::size_t stateOff = (std::size_t(n) * Hv + j) * K * V;
      if (in.initialState)
        for (int i = 0; i < K * V; ++i)
          S[i] = in.initialState[stateOff + i];

      for (std::int64_t c0 = sr.bos; c0 < sr.eos; c0 += C) {
        const int L = int(std::min<std::int64_t>(C, sr.eos - c0));
        std::vector<std::vector<double>> Q(L), Kc(L);
        std::vector<double> gam(L), beta(L);
        double acc = 0;
        for (int i = 0; i < L; ++i) {
          const std::size_t row = std::size_t(sr.b) * in.T + std::size_t(c0 + i);
          Q[i] = qkRow(in, in.q, row, hk);
          Kc[i] = qkRow(in, in.k, row, hk);
          acc += in.g[row * Hv + j];
          gam[i] = acc;
          beta[i] = in.beta[row * Hv + j];
        }
        auto vAt = [&](int i, int c) {
          const std::size_t row = std::size_t(sr.b) * in.T + std::size_t(c0 + i);
          return in.v[(row * Hv + j) * V + c];
        };
        auto Gam = [&](int i, int jj) { return i >= jj ? std::exp(gam[i] - gam[jj]) : 0.0; };

        // A = (I + strict_lower(diag(beta) K K^T))^-1, row by row.
        std::vector<double> A(std::size_t(L) * L, 0.0);
        for (int i = 0; i < L; ++i) {
          A[std::size_t(i) * L + i] = 1.0;
          for (int m = 0; m < i; ++m) {
            const double lim = beta[i] * dot(Kc[i], Kc[m]);
            for (int c = 0; c <= m; ++c)
              A[std::size_t(i) * L + c] -= lim * A[std::size_t(m) * L + c];
          }
        }
        // W = V - D (K S)
        std::vector<double> W(std::size_t(L) * V);
        for (int i = 0; i < L; ++i)
          for (int c = 0; c < V; ++c) {
            double ks = 0;
            for (int r = 0; r < K; ++r)
              ks += Kc[i][r] * S[std::size_t(r) * V + c];
            W[std::size_t(i) * V + c] = vAt(i, c) - std::exp(gam[i]) * ks;
          }
        // Vd = (Gamma o A) diag(beta) W
        std::vector<double> Vd(std::size_t(L) * V, 0.0);
        for (int i = 0; i < L; ++i)
          for (int m = 0; m <= i; ++m) {
            const double w = Gam(i, m) * A[std::size_t(i) * L + m] * beta[m];
            for (int c = 0; c < V; ++c)
              Vd[std::size_t(i) * V + c] += w * W[std::size_t(m) * V + c];
          }
        // O = scale D (Q S) + (scale Gamma o tril(Q K^T)) Vd
        for (int i = 0; i < L; ++i) {
          const std::size_t row = std::size_t(sr.b) * in.T + std::size_t(c0 + i);
          double* o = out.o.data() + (row * Hv + j) * V;
          for (int c = 0; c < V; ++c) {
            double qs = 0;
            for (int r = 0; r < K; ++r)
              qs += Q[i][r] * S[std::size_t(r) * V + c];
            o[c] = scale * std::exp(gam[i]) * qs;
          }
          for (int m = 0; m <= i; ++m) {
            const double p = scale * Gam(i, m) * dot(Q[i], Kc[m]);
            for (int c = 0; c < V; ++c)
              o[c] += p * Vd[std::size_t(m) * V + c];
          }
        }
        // S = e^{gamma_L} S + K^T (e^{gamma_L - gamma} o Vd)
        const double gl = gam[L - 1];
        for (double& s : S)
          s *= std::exp(gl);
        for (int i = 0; i < L; ++i) {
          const double d = std::exp(gl - gam[i]);
          for (int r = 0; r < K; ++r)
            for (int c = 0; c < V; ++c)
              S[std::size_t(r) * V + c] += Kc[i][r] * d * Vd[std::size_t(i) * V + c];
        }
      }
      std::copy(S.begin(), S.end(), out.finalState.begin() + std::ptrdiff_t(stateOff));
    }
  }
  return out;
}

// The closed form: S = e^g (S - beta k (k^T S)) + beta k v^T; o = scale S^T q.
ref::Outputs closedForm(const ref::Inputs& in) {
  const int Hv = in.Hv, K = in.K, V = in.V, group = in.Hv / in.Hqk;
  const int N = ref::numSequences(in);
  const double scale = in.scale ? *in.scale : 1.0 / std::sqrt(double(K));
  ref::Outputs out;
  out.N = N;
  out.o.assign(std::size_t(in.B) * in.T * Hv * V, 0.0);
  out.finalState.assign(std::size_t(N) * Hv * K * V, 0.0);
  for (int n = 0; n < N; ++n) {
    const SeqRange sr = sequence(in, n);
    for (int j = 0; j < Hv; ++j) {
      const std::size_t stateOff = (std::size_t(n) * Hv + j) * K * V;
      std::vector<double> S(std::size_t(K) * V, 0.0), kS(V);
      if (in.initialState)
        std::copy(in.initialState + stateOff, in.initialState + stateOff + std::size_t(K) * V, S.begin());
      for (std::int64_t t = sr.bos; t < sr.eos; ++t) {
        const std::size_t row = std::size_t(sr.b) * in.T + std::size_t(t);
        const auto q = qkRow(in, in.q, row, j / group);
        const auto k = qkRow(in, in.k, row, j / group);
        const double e = std::exp(in.g[row * Hv + j]);
        const double b = in.beta[row * Hv + j];
        const double* v = in.v + (row * Hv + j) * V;
        for (int c = 0; c < V; ++c) {
          kS[c] = 0;
          for (int r = 0; r < K; ++r)
            kS[c] += k[r] * S[std::size_t(r) * V + c];
        }
        for (int r = 0; r < K; ++r)
          for (int c = 0; c < V; ++c) {
            double& s = S[std::size_t(r) * V + c];
            s = e * (s - b * k[r] * kS[c]) + b * k[r] * v[c];
          }
        double* o = out.o.data() + (row * Hv + j) * V;
        for (int c = 0; c < V; ++c) {
          double a = 0;
          for (int r = 0; r < K; ++r)
            a += S[std::size_t(r) * V + c] * q[r];
          o[c] = scale * a;
        }
      }
      std::copy(S.begin(), S.end(), out.finalState.begin() + std::ptrdiff_t(stateOff));
    }
  }
  return out;
}

constexpr double kTol = 1e-10;  // two float64 formulations of the same math

std::string describe(const ref::RandomProblem& p) {
  std::ostringstream s;
  s << "B=" << p.B << " T=" << p.T << " Hqk=" << p.Hqk << " Hv=" << p.Hv << " K=" << p.K << " V=" << p.V;
  if (!p.seqLens.empty()) {
    s << " lens=[";
    for (std::size_t i = 0; i < p.seqLens.size(); ++i)
      s << (i ? "," : "") << p.seqLens[i];
    s << "]";
  }
  s << (p.gates == ref::GateKind::Harsh ? " harsh-gates" : " logsigmoid-gates")
    << (p.initialState ? " h0" : "");
  return s.str();
}

void checkAgainstBothForms(const ref::RandomProblem& p, std::uint64_t seed, bool l2normInKernel = false,
                           std::optional<double> scale = std::nullopt) {
  ref::OwnedInputs owned;
  ref::RandomProblem gen = p;
  gen.normalizeQK = !l2normInKernel;
  ref::makeRandomInputs(gen, seed, owned);
  owned.view.l2normQK = l2normInKernel;
  owned.view.scale = scale;
  INFO(describe(p) << (l2normInKernel ? " l2norm-in-kernel" : "") << " seed=" << seed);

  const ref::Outputs got = ref::forward(owned.view);
  REQUIRE(got.o.size() == std::size_t(owned.view.B) * owned.view.T * p.Hv * p.V);
  REQUIRE(got.finalState.size() == std::size_t(got.N) * p.Hv * p.K * p.V);
  auto allFinite = [](const std::vector<double>& x) {
    return std::all_of(x.begin(), x.end(), [](double e) { return std::isfinite(e); });
  };
  REQUIRE(allFinite(got.o));
  REQUIRE(allFinite(got.finalState));

  const ref::Outputs chunked = chunkedForm(owned.view);
  CHECK(ref::rmsRelativeError(got.o, chunked.o) < kTol);
  CHECK(ref::rmsRelativeError(got.finalState, chunked.finalState) < kTol);
  const ref::Outputs closed = closedForm(owned.view);
  CHECK(ref::rmsRelativeError(got.o, closed.o) < kTol);
  CHECK(ref::rmsRelativeError(got.finalState, closed.finalState) < kTol);
}

}  // namespace

TEST_CASE("gdn reference: two tokens worked by hand (K = V = 1)", "[gdn][reference]") {
  // S0 = 2. Token 0: g = ln 0.5, k = q = 1, beta = 0.5, v = 3:
  //   S = 1, u = 0.5 (3 - 1) = 1, S = 2, o = 2.
  // Token 1: g = 0, k = 1, q = 2, beta = 1, v = 5: u = 5 - 2 = 3, S = 5, o = 10.
  const double q[] = {1, 2}, k[] = {1, 1}, v[] = {3, 5}, g[] = {std::log(0.5), 0}, beta[] = {0.5, 1};
  const double h0[] = {2};
  ref::Inputs in;
  in.T = 2;
  in.K = in.V = 1;
  in.q = q;
  in.k = k;
  in.v = v;
  in.g = g;
  in.beta = beta;
  in.initialState = h0;
  in.scale = 1.0;
  const ref::Outputs out = ref::forward(in);
  REQUIRE(out.N == 1);
  CHECK(out.o[0] == Approx(2.0).epsilon(1e-14));
  CHECK(out.o[1] == Approx(10.0).epsilon(1e-14));
  CHECK(out.finalState[0] == Approx(5.0).epsilon(1e-14));

  // Default scale K^-0.5 = 1 for K = 1; without h0 token 0 gives u = 1.5, S = 1.5.
  in.scale.reset();
  in.initialState = nullptr;
  const ref::Outputs out2 = ref::forward(in);
  CHECK(out2.o[0] == Approx(1.5).epsilon(1e-14));
  // Token 1: u = 5 - 1.5 = 3.5, S = 5, o = 2 * 5.
  CHECK(out2.o[1] == Approx(10.0).epsilon(1e-14));
}

TEST_CASE("gdn reference: beta = 1 with orthonormal keys writes v exactly", "[gdn][reference]") {
  // K = V = 4, no decay: with k_t = e_t and beta = 1 the state row t becomes v_t,
  // and q = e_t reads it back (scale 1).
  const int T = 4, K = 4, V = 4;
  std::vector<double> q(T * K, 0), k(T * K, 0), v(T * V), g(T, 0), beta(T, 1);
  for (int t = 0; t < T; ++t) {
    q[t * K + t] = k[t * K + t] = 1;
    for (int c = 0; c < V; ++c)
      v[t * V + c] = 10 * t + c;
  }
  ref::Inputs in;
  in.T = T;
  in.K = K;
  in.V = V;
  in.q = q.data();
  in.k = k.data();
  in.v = v.data();
  in.g = g.data();
  in.beta = beta.data();
  in.scale = 1.0;
  const ref::Outputs out = ref::forward(in);
  CHECK(ref::rmsRelativeError(out.o, v) < 1e-15);
  CHECK(ref::rmsRelativeError(out.finalState, v) < 1e-15);
}

TEST_CASE("gdn reference: matches the chunked and closed forms across chunk boundaries", "[gdn][reference]") {
  std::uint64_t seed = 1000;
  for (int T : {1, 2, 63, 64, 65, 130, 200}) {
    for (int B : {1, 2}) {
      ref::RandomProblem p;
      p.B = B;
      p.T = T;
      p.Hqk = 1;
      p.Hv = 2;
      p.K = 16;
      p.V = 8;
      p.initialState = (T % 2) == 1;
      checkAgainstBothForms(p, ++seed);
    }
  }
}

TEST_CASE("gdn reference: harsh gates (a in [0, 16], one head without decay)", "[gdn][reference]") {
  std::uint64_t seed = 2000;
  for (int T : {64, 65, 200}) {
    for (bool h0 : {false, true}) {
      ref::RandomProblem p;
      p.B = 2;
      p.T = T;
      p.Hqk = 2;
      p.Hv = 4;
      p.K = 16;
      p.V = 16;
      p.gates = ref::GateKind::Harsh;
      p.initialState = h0;
      checkAgainstBothForms(p, ++seed);
    }
  }
}

TEST_CASE("gdn reference: GVA head counts", "[gdn][reference]") {
  std::uint64_t seed = 3000;
  for (auto [hqk, hv] : std::vector<std::pair<int, int>>{{2, 2}, {2, 4}, {2, 6}, {2, 8}, {1, 3}, {3, 12}}) {
    ref::RandomProblem p;
    p.B = 2;
    p.T = 70;
    p.Hqk = hqk;
    p.Hv = hv;
    p.K = 8;
    p.V = 8;
    p.initialState = true;
    checkAgainstBothForms(p, ++seed);
  }
}

TEST_CASE("gdn reference: GVA equals explicitly repeated q/k heads", "[gdn][reference]") {
  // Hqk = 2, Hv = 6: v-heads 0..2 read q/k head 0, 3..5 head 1. Build the same
  // problem with q/k repeated to 6 heads and compare bit for bit.
  ref::RandomProblem p;
  p.B = 1;
  p.T = 90;
  p.Hqk = 2;
  p.Hv = 6;
  p.K = 8;
  p.V = 4;
  p.initialState = true;
  ref::OwnedInputs gva;
  ref::makeRandomInputs(p, 77, gva);
  const int group = p.Hv / p.Hqk;
  std::vector<double> q6(std::size_t(p.T) * p.Hv * p.K), k6(q6.size());
  for (int t = 0; t < p.T; ++t)
    for (int j = 0; j < p.Hv; ++j)
      for (int r = 0; r < p.K; ++r) {
        q6[(std::size_t(t) * p.Hv + j) * p.K + r] = gva.q[(std::size_t(t) * p.Hqk + j / group) * p.K + r];
        k6[(std::size_t(t) * p.Hv + j) * p.K + r] = gva.k[(std::size_t(t) * p.Hqk + j / group) * p.K + r];
      }
  ref::Inputs mha = gva.view;
  mha.Hqk = p.Hv;
  mha.q = q6.data();
  mha.k = k6.data();
  const ref::Outputs a = ref::forward(gva.view), b = ref::forward(mha);
  CHECK(a.o == b.o);
  CHECK(a.finalState == b.finalState);
}

TEST_CASE("gdn reference: varlen", "[gdn][reference]") {
  std::uint64_t seed = 4000;
  const std::vector<std::vector<std::int64_t>> lens = {
      {1, 15, 64, 100, 41, 150}, {1, 1, 1, 1, 1, 15}, {65}, {64, 64}, {3, 0, 5}};
  for (const auto& l : lens) {
    for (bool h0 : {false, true}) {
      ref::RandomProblem p;
      p.seqLens = l;
      p.Hqk = 2;
      p.Hv = 4;
      p.K = 8;
      p.V = 8;
      p.initialState = h0;
      p.gates = h0 ? ref::GateKind::Harsh : ref::GateKind::LogSigmoid;
      checkAgainstBothForms(p, ++seed);
    }
  }
}

TEST_CASE("gdn reference: varlen equals separate sequences", "[gdn][reference]") {
  ref::RandomProblem p;
  p.seqLens = {5, 70, 1, 33};
  p.Hqk = 1;
  p.Hv = 2;
  p.K = 8;
  p.V = 4;
  p.initialState = true;
  ref::OwnedInputs packed;
  ref::makeRandomInputs(p, 99, packed);
  const ref::Outputs all = ref::forward(packed.view);
  const int Hv = p.Hv, K = p.K, V = p.V, Hqk = p.Hqk;
  for (std::size_t n = 0; n < p.seqLens.size(); ++n) {
    const std::int64_t bos = packed.cu[n];
    ref::Inputs one = packed.view;
    one.cuSeqlens = nullptr;
    one.numCuSeqlens = 0;
    one.T = int(p.seqLens[n]);
    one.q = packed.q.data() + bos * Hqk * K;
    one.k = packed.k.data() + bos * Hqk * K;
    one.v = packed.v.data() + bos * Hv * V;
    one.g = packed.g.data() + bos * Hv;
    one.beta = packed.beta.data() + bos * Hv;
    one.initialState = packed.h0.data() + n * Hv * K * V;
    const ref::Outputs sep = ref::forward(one);
    INFO("sequence " << n);
    CHECK(std::equal(sep.o.begin(), sep.o.end(), all.o.begin() + bos * Hv * V));
    CHECK(std::equal(sep.finalState.begin(), sep.finalState.end(), all.finalState.begin() + n * Hv * K * V));
  }
}

TEST_CASE("gdn reference: batch of two equals varlen of two equal lengths", "[gdn][reference]") {
  ref::RandomProblem p;
  p.B = 2;
  p.T = 77;
  p.Hqk = 1;
  p.Hv = 1;
  p.K = 8;
  p.V = 8;
  p.initialState = true;
  ref::OwnedInputs batch;
  ref::makeRandomInputs(p, 5, batch);
  ref::Inputs packed = batch.view;
  const std::int64_t cu[] = {0, 77, 154};
  packed.B = 1;
  packed.T = 154;
  packed.cuSeqlens = cu;
  packed.numCuSeqlens = 3;
  const ref::Outputs a = ref::forward(batch.view), b = ref::forward(packed);
  CHECK(a.o == b.o);
  CHECK(a.finalState == b.finalState);
}

TEST_CASE("gdn reference: K = V = 64 and 128, K != V", "[gdn][reference]") {
  std::uint64_t seed = 5000;
  for (auto [K, V] : std::vector<std::pair<int, int>>{{64, 64}, {128, 128}, {64, 128}, {128, 64}}) {
    ref::RandomProblem p;
    p.B = 1;
    p.T = K == 128 && V == 128 ? 70 : 100;
    p.Hqk = 1;
    p.Hv = 2;
    p.K = K;
    p.V = V;
    p.initialState = true;
    checkAgainstBothForms(p, ++seed);
  }
}

TEST_CASE("gdn reference: in-kernel q/k L2 normalization and explicit scale", "[gdn][reference]") {
  ref::RandomProblem p;
  p.B = 2;
  p.T = 100;
  p.Hqk = 2;
  p.Hv = 4;
  p.K = 16;
  p.V = 8;
  p.initialState = true;
  checkAgainstBothForms(p, 6001, /*l2normInKernel=*/true);
  checkAgainstBothForms(p, 6002, false, 0.3);

  // Normalizing inside equals normalizing the inputs first (x / sqrt(sum x^2 + 1e-6)).
  ref::OwnedInputs raw;
  ref::RandomProblem gen = p;
  gen.normalizeQK = false;
  ref::makeRandomInputs(gen, 6003, raw);
  std::vector<double> qn = raw.q, kn = raw.k;
  for (std::vector<double>* x : {&qn, &kn})
    for (std::size_t i = 0; i < x->size(); i += p.K) {
      double ss = 0;
      for (int r = 0; r < p.K; ++r)
        ss += (*x)[i + r] * (*x)[i + r];
      for (int r = 0; r < p.K; ++r)
        (*x)[i + r] /= std::sqrt(ss + 1e-6);
    }
  ref::Inputs inKernel = raw.view;
  inKernel.l2normQK = true;
  ref::Inputs pre = raw.view;
  pre.q = qn.data();
  pre.k = kn.data();
  const ref::Outputs a = ref::forward(inKernel), b = ref::forward(pre);
  CHECK(ref::rmsRelativeError(a.o, b.o) < 1e-14);
  CHECK(ref::rmsRelativeError(a.finalState, b.finalState) < 1e-14);
}

TEST_CASE("gdn reference: a zero-length sequence passes its initial state through", "[gdn][reference]") {
  ref::RandomProblem p;
  p.seqLens = {4, 0, 3};
  p.Hqk = 1;
  p.Hv = 1;
  p.K = 4;
  p.V = 4;
  p.initialState = true;
  ref::OwnedInputs in;
  ref::makeRandomInputs(p, 8, in);
  const ref::Outputs out = ref::forward(in.view);
  for (int i = 0; i < p.K * p.V; ++i)
    CHECK(out.finalState[p.K * p.V + i] == in.h0[p.K * p.V + i]);
}

TEST_CASE("gdn reference: bad inputs are rejected with a message", "[gdn][reference]") {
  ref::RandomProblem p;
  p.B = 1;
  p.T = 10;
  p.Hqk = 2;
  p.Hv = 4;
  p.K = 4;
  p.V = 4;
  ref::OwnedInputs in;
  ref::makeRandomInputs(p, 9, in);

  ref::Inputs bad = in.view;
  bad.Hv = 3;
  CHECK_THROWS_WITH(ref::forward(bad), Catch::Contains("multiple of Hqk"));

  const std::int64_t cu2[] = {0, 5, 10};
  bad = in.view;
  bad.B = 2;
  bad.T = 5;
  bad.cuSeqlens = cu2;
  bad.numCuSeqlens = 3;
  CHECK_THROWS_WITH(ref::forward(bad), Catch::Contains("B = 1"));

  const std::int64_t dec[] = {0, 6, 4, 10};
  bad = in.view;
  bad.cuSeqlens = dec;
  bad.numCuSeqlens = 4;
  CHECK_THROWS_WITH(ref::forward(bad), Catch::Contains("non-decreasing"));

  const std::int64_t shortEnd[] = {0, 4, 8};
  bad = in.view;
  bad.cuSeqlens = shortEnd;
  bad.numCuSeqlens = 3;
  CHECK_THROWS_WITH(ref::forward(bad), Catch::Contains("end at T"));

  bad = in.view;
  bad.v = nullptr;
  CHECK_THROWS_AS(ref::forward(bad), std::invalid_argument);
}

TEST_CASE("gdn reference: rmsRelativeError", "[gdn][reference]") {
  CHECK(ref::rmsRelativeError({1, 2, 3}, {1, 2, 3}) == 0.0);
  CHECK(ref::rmsRelativeError({0, 0}, {0, 0}) == 0.0);
  CHECK(std::isinf(ref::rmsRelativeError({1, 0}, {0, 0})));
  CHECK(std::isnan(ref::rmsRelativeError({std::nan(""), 0}, {1, 1})));
  // out = 1.01 ref: error 0.01 whatever ref is.
  CHECK(ref::rmsRelativeError({1.01, -2.02}, {1, -2}) == Approx(0.01).epsilon(1e-9));
}

TEST_CASE("gdn reference: random inputs follow the design's recipe", "[gdn][reference]") {
  ref::RandomProblem p;
  p.B = 1;
  p.T = 200;
  p.Hqk = 2;
  p.Hv = 5;
  p.K = 16;
  p.V = 16;
  p.gates = ref::GateKind::Harsh;
  ref::OwnedInputs a, b;
  ref::makeRandomInputs(p, 42, a);
  ref::makeRandomInputs(p, 42, b);
  CHECK(a.q == b.q);  // deterministic in the seed
  CHECK(a.g == b.g);
  double worstNorm = 0;  // q rows have unit norm (up to the 1e-6 epsilon)
  for (std::size_t i = 0; i < a.q.size(); i += p.K) {
    double ss = 0;
    for (int r = 0; r < p.K; ++r)
      ss += a.q[i + r] * a.q[i + r];
    worstNorm = std::max(worstNorm, std::abs(ss - 1.0));
  }
  CHECK(worstNorm < 1e-5);
  bool head0NoDecay = true, gNonPositive = true, betaInside = true;
  for (int t = 0; t < p.T; ++t) {
    head0NoDecay &= a.g[std::size_t(t) * p.Hv + 0] == 0.0;
    for (int h = 0; h < p.Hv; ++h) {
      gNonPositive &= a.g[std::size_t(t) * p.Hv + h] <= 0.0;
      const double bt = a.beta[std::size_t(t) * p.Hv + h];
      betaInside &= bt > 0.0 && bt < 1.0;
    }
  }
  CHECK(head0NoDecay);
  CHECK(gNonPositive);
  CHECK(betaInside);
  // The strongest head decays by more than e^-16 per token on average.
  double mean = 0;
  for (int t = 0; t < p.T; ++t)
    mean += a.g[std::size_t(t) * p.Hv + p.Hv - 1];
  CHECK(mean / p.T < -16.0);
}
