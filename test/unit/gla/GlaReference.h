// Float64 CPU references of simple GLA (the recurrence of kernels/gla/gla_fwd.qla):
//   S_t = e^{g_t} S_{t-1} + k_t v_tᵀ,   o_t = scale · S_tᵀ q_t
// token by token (glaRecurrent, the ground truth) and chunk by chunk
// (glaChunked, the form the kernel computes). Plain C++, header only.
// Layouts as the operator's: q, k [B, T, Hqk, K], v, o [B, T, H, V],
// g [B, T, H], states [N, H, K, V]; with offsets (cu_seqlens) B = 1.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace glaref {

struct Problem {
  int64_t B = 1, T = 0, Hqk = 1, H = 1, K = 0, V = 0;
  std::vector<double> q, k, v, g;   // as above, row-major
  std::vector<double> h0;           // [N, H, K, V] or empty (zero)
  std::vector<int64_t> offsets;     // cu_seqlens, or empty (B fixed-length sequences)
  double scale = 1.0;
  int64_t sequences() const { return offsets.empty() ? B : int64_t(offsets.size()) - 1; }
};

struct Result {
  std::vector<double> o;   // [B, T, H, V]
  std::vector<double> ht;  // [N, H, K, V]
};

namespace detail {
struct Seq {
  int64_t b, bos, eos;
};
inline std::vector<Seq> sequencesOf(const Problem &p) {
  std::vector<Seq> s;
  if (p.offsets.empty())
    for (int64_t b = 0; b < p.B; ++b) s.push_back({b, 0, p.T});
  else
    for (size_t n = 0; n + 1 < p.offsets.size(); ++n) s.push_back({0, p.offsets[n], p.offsets[n + 1]});
  return s;
}
}  // namespace detail

inline Result glaRecurrent(const Problem &p) {
  const int64_t N = p.sequences(), H = p.H, K = p.K, V = p.V, G = H / p.Hqk;
  Result r;
  r.o.assign(size_t(p.B * p.T * H * V), 0.0);
  r.ht.assign(size_t(N * H * K * V), 0.0);
  std::vector<detail::Seq> seqs = detail::sequencesOf(p);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t hk = h / G;
      std::vector<double> S(size_t(K * V), 0.0);
      if (!p.h0.empty()) std::copy_n(&p.h0[size_t((n * H + h) * K * V)], K * V, S.begin());
      const auto [b, bos, eos] = seqs[size_t(n)];
      for (int64_t t = bos; t < eos; ++t) {
        const double a = std::exp(p.g[size_t((b * p.T + t) * H + h)]);
        const double *kt = &p.k[size_t(((b * p.T + t) * p.Hqk + hk) * K)];
        const double *qt = &p.q[size_t(((b * p.T + t) * p.Hqk + hk) * K)];
        const double *vt = &p.v[size_t(((b * p.T + t) * H + h) * V)];
        for (int64_t i = 0; i < K; ++i)
          for (int64_t j = 0; j < V; ++j) S[size_t(i * V + j)] = a * S[size_t(i * V + j)] + kt[i] * vt[j];
        double *ot = &r.o[size_t(((b * p.T + t) * H + h) * V)];
        for (int64_t j = 0; j < V; ++j) {
          double acc = 0;
          for (int64_t i = 0; i < K; ++i) acc += S[size_t(i * V + j)] * qt[i];
          ot[j] = p.scale * acc;
        }
      }
      std::copy(S.begin(), S.end(), r.ht.begin() + (n * H + h) * K * V);
    }
  return r;
}

// The kernel's chunked form: per chunk of C tokens [t0, t1) with
// γ = cumsum(g) within the chunk and γ_L its last entry,
//   O = scale (e^γ ∘ (Q S) + (Γ ∘ tril(Q Kᵀ)) V),  Γ_ij = e^{γ_i − γ_j}
//   S = e^{γ_L} S + Kᵀ (e^{γ_L − γ} ∘ V)
inline Result glaChunked(const Problem &p, int64_t C = 64) {
  const int64_t N = p.sequences(), H = p.H, K = p.K, V = p.V, G = H / p.Hqk;
  Result r;
  r.o.assign(size_t(p.B * p.T * H * V), 0.0);
  r.ht.assign(size_t(N * H * K * V), 0.0);
  std::vector<detail::Seq> seqs = detail::sequencesOf(p);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t hk = h / G;
      std::vector<double> S(size_t(K * V), 0.0);
      if (!p.h0.empty()) std::copy_n(&p.h0[size_t((n * H + h) * K * V)], K * V, S.begin());
      const auto [b, bos, eos] = seqs[size_t(n)];
      auto Q = [&](int64_t t, int64_t i) { return p.q[size_t(((b * p.T + t) * p.Hqk + hk) * K + i)]; };
      auto Kf = [&](int64_t t, int64_t i) { return p.k[size_t(((b * p.T + t) * p.Hqk + hk) * K + i)]; };
      auto Vf = [&](int64_t t, int64_t j) { return p.v[size_t(((b * p.T + t) * H + h) * V + j)]; };
      for (int64_t t0 = bos; t0 < eos; t0 += C) {
        const int64_t L = std::min(C, eos - t0);
        std::vector<double> gam(static_cast<size_t>(L));
        double acc = 0;
        for (int64_t i = 0; i < L; ++i) gam[size_t(i)] = acc += p.g[size_t((b * p.T + t0 + i) * H + h)];
        const double gl = gam[size_t(L - 1)];
        for (int64_t i = 0; i < L; ++i) {
          double *ot = &r.o[size_t(((b * p.T + t0 + i) * H + h) * V)];
          for (int64_t j = 0; j < V; ++j) {  // e^γ_i (q_i S)
            double a = 0;
            for (int64_t d = 0; d < K; ++d) a += Q(t0 + i, d) * S[size_t(d * V + j)];
            ot[j] = std::exp(gam[size_t(i)]) * a;
          }
          for (int64_t s = 0; s <= i; ++s) {  // Γ_is (q_i · k_s) v_s
            double qk = 0;
            for (int64_t d = 0; d < K; ++d) qk += Q(t0 + i, d) * Kf(t0 + s, d);
            const double w = std::exp(gam[size_t(i)] - gam[size_t(s)]) * qk;
            for (int64_t j = 0; j < V; ++j) ot[j] += w * Vf(t0 + s, j);
          }
          for (int64_t j = 0; j < V; ++j) ot[j] *= p.scale;
        }
        for (double &x : S) x *= std::exp(gl);
        for (int64_t s = 0; s < L; ++s) {
          const double w = std::exp(gl - gam[size_t(s)]);
          for (int64_t d = 0; d < K; ++d)
            for (int64_t j = 0; j < V; ++j) S[size_t(d * V + j)] += Kf(t0 + s, d) * w * Vf(t0 + s, j);
        }
      }
      std::copy(S.begin(), S.end(), r.ht.begin() + (n * H + h) * K * V);
    }
  return r;
}

// sqrt(Σ (a − b)²) / sqrt(Σ b²) (0 when both are 0).
inline double rmsRel(const std::vector<double> &a, const std::vector<double> &b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

}  // namespace glaref
