// The GDN forward and backward operators, every kernel they launch run on
// QLA's CPU simulator (QLA_SIM=1, qla/runtime/Sim.h), against the recurrence
// and its gradients in float64 (GDN.md's bars: o, final state <= 0.005; dq,
// dk, dv, dh0 <= 0.008; dbeta, dg <= 0.02), fresh random inputs each run
// (QLA_GDN_TEST_SEED fixes them), outputs poisoned with NaN. The float64
// gradients are themselves checked against finite differences.
//
// Small shapes (two or three chunks of 64 tokens, K = V = 64): the simulator
// runs one fiber per CUDA thread, about a second per kernel launch here.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "../../../../kernels/gdn/src/Schedule.h"
#include "qla/gdn.h"
#include "qla/gdn_c.h"

static_assert(sizeof(qla_gdn_recurrent_args) == 16 + 11 * 88 + 40, "python/qla/gdn.py mirrors this layout");

namespace {

using qla::DType;
using qla::gdn::TensorRef;

// Turned on before anything compiles or launches (this binary only).
const bool kSimOn = [] {
  setenv("QLA_SIM", "1", 1);
  return true;
}();

std::mt19937_64 &rng() {
  static std::mt19937_64 r = [] {
    uint64_t seed = std::random_device{}();
    if (const char *e = std::getenv("QLA_GDN_TEST_SEED")) seed = std::strtoull(e, nullptr, 10);
    std::printf("gdn sim tests: seed %llu (QLA_GDN_TEST_SEED)\n", (unsigned long long)seed);
    return std::mt19937_64(seed);
  }();
  return r;
}
double randn() { return std::normal_distribution<double>(0.0, 1.0)(rng()); }

// 16-bit storage.
uint16_t toHalf(DType dt, float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if (dt == DType::BF16) return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  // f16, normal range only (test inputs are well inside it).
  const uint32_t s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a < 0x38800000u) {  // below the normal range: round through double
    const double q = std::nearbyint(double(std::fabs(x)) * 16777216.0);
    return uint16_t(s | uint32_t(q));
  }
  const uint32_t r = a + 0xfffu + ((a >> 13) & 1u) - (112u << 23);
  return uint16_t(s | (r >> 13));
}
float fromHalf(DType dt, uint16_t h) {
  if (dt == DType::BF16) {
    uint32_t u = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  const uint32_t s = uint32_t(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0) {
    const float v = std::ldexp(float(m), -24);
    return s ? -v : v;
  }
  uint32_t u = s | ((e + 112) << 23) | (m << 13);
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct Problem {
  std::string name;
  int64_t B = 1, T = 100, Hqk = 1, Hv = 1, K = 64, V = 64;
  DType dt = DType::F16;
  std::vector<int64_t> offsets;  // varlen when non-empty (B = 1, T = offsets.back())
  bool l2norm = false, h0 = false, dht = false;
  // 1: the backward's default, gdn_bwd_fused.qla (QLA_GDN_BWD_FUSED unset);
  // 0: QLA_GDN_BWD_FUSED=0, the six kernels (dh, dqk, wy in its place).
  int fusedBackward = 0;
  int fusedForward = 0;   // ForwardParams::fused (1: gdn_fwd_fused.qla)
  int betaAct = 0;        // ForwardParams::beta_activation: beta holds logits b, β = betaAct sigmoid(b)
  bool gate = false;      // ForwardParams::use_gate: g holds g_raw, log decay −exp(A_log) softplus(g_raw + dt_bias)
  bool gateBias = true;   // with dt_bias
  bool vFirst = false;    // ForwardParams::state_v_first: the states [N, Hv, V, K]
  int64_t segChunks = 0;  // ForwardParams/BackwardParams::segment_chunks (1: a split at every chunk)
  // The state gradient's segment length the backward must take (0: not
  // checked; qla::gdn::kNoSplit: none).
  int64_t dhSegments = 0;
  int fusedBv = 0;        // QLA_GDN_FUSED_BV: the fused forward's V slice (0: the model's)
  int recomputeBv = 0;    // QLA_GDN_FUSED_BV during the backward: its recompute's V slice (0: the model's)
  bool pastPool = false;  // serving: the device's slot arrays hold slots past the pool where the tests put -1
  int64_t N() const { return offsets.empty() ? B : int64_t(offsets.size()) - 1; }
  double scale() const { return 1.0 / std::sqrt(double(K)); }
};

// Inputs as the kernels see them (after rounding), and the upstream gradients.
struct Data {
  std::vector<double> q, k, v, g, beta, h0, dout, dht, alog, dtb;
};

// The recurrence and its reverse in float64 (GDN.md): per sequence and v-head,
// S_t = a_t S_{t-1} + k_t u_t^T, u_t = beta_t (v_t - a_t S_{t-1}^T k_t),
// o_t = scale S_t^T q_t (S is [K, V]); with L2 norm q, k -> x / sqrt(|x|^2 + 1e-6).
struct Grads {
  std::vector<double> o, ht, dq, dk, dv, dg, dbeta, dh0, dalog, ddtb;
  // Root-sum-square of the terms of dalog's and ddtb's sums, per head.
  std::vector<double> dalogScale, ddtbScale;
};

// The log decay of token-head gi (v-head hv): g itself, or the in-kernel
// gate's −exp(A_log) softplus(g_raw + dt_bias) (softplus(u) = u above 20, as FLA).
double logDecay(const Problem &pb, const Data &d, size_t gi, int64_t hv) {
  if (!pb.gate) return d.g[gi];
  const double u = d.g[gi] + (pb.gateBias ? d.dtb[size_t(hv)] : 0.0);
  return -std::exp(d.alog[size_t(hv)]) * (u > 20 ? u : std::log1p(std::exp(u)));
}

double betaOf(const Problem &pb, double b) { return pb.betaAct ? pb.betaAct / (1.0 + std::exp(-b)) : b; }

Grads reference(const Problem &pb, const Data &d, bool backward = true) {
  const int64_t T = pb.T, Hqk = pb.Hqk, Hv = pb.Hv, K = pb.K, V = pb.V, N = pb.N();
  const double scale = pb.scale();
  Grads r;
  r.o.assign(size_t(pb.B * T * Hv * V), 0);
  r.ht.assign(size_t(N * Hv * K * V), 0);
  r.dq.assign(size_t(pb.B * T * Hqk * K), 0);
  r.dk = r.dq;
  r.dv.assign(size_t(pb.B * T * Hv * V), 0);
  r.dg.assign(size_t(pb.B * T * Hv), 0);
  r.dbeta = r.dg;
  r.dh0.assign(size_t(N * Hv * K * V), 0);
  r.dalog.assign(size_t(Hv), 0);
  r.ddtb.assign(size_t(Hv), 0);
  r.dalogScale.assign(size_t(Hv), 0);
  r.ddtbScale.assign(size_t(Hv), 0);
  for (int64_t n = 0; n < N; ++n) {
    const int64_t b = pb.offsets.empty() ? n : 0;
    const int64_t t0 = pb.offsets.empty() ? 0 : pb.offsets[size_t(n)];
    const int64_t t1 = pb.offsets.empty() ? T : pb.offsets[size_t(n) + 1];
    const int64_t L = t1 - t0;
    for (int64_t hv = 0; hv < Hv; ++hv) {
      const int64_t hk = hv / (Hv / Hqk);
      // Forward, keeping every state (S[0] the initial one).
      std::vector<std::vector<double>> S(size_t(L + 1), std::vector<double>(size_t(K * V), 0.0));
      std::vector<std::vector<double>> qn(static_cast<size_t>(L)), kn(static_cast<size_t>(L)), uu(static_cast<size_t>(L)), rr(static_cast<size_t>(L));
      std::vector<double> nq(static_cast<size_t>(L)), nk(static_cast<size_t>(L));
      if (pb.h0)
        for (int64_t i = 0; i < K * V; ++i) S[0][size_t(i)] = d.h0[size_t((n * Hv + hv) * K * V + i)];
      for (int64_t s = 0; s < L; ++s) {
        const int64_t t = t0 + s;
        const size_t qk = size_t(((b * T + t) * Hqk + hk) * K), gi = size_t((b * T + t) * Hv + hv),
                     vi = size_t(((b * T + t) * Hv + hv) * V);
        std::vector<double> q(d.q.begin() + long(qk), d.q.begin() + long(qk + size_t(K)));
        std::vector<double> k(d.k.begin() + long(qk), d.k.begin() + long(qk + size_t(K)));
        double sq = 0, sk = 0;
        for (int64_t i = 0; i < K; ++i) sq += q[size_t(i)] * q[size_t(i)], sk += k[size_t(i)] * k[size_t(i)];
        nq[size_t(s)] = std::sqrt(sq + 1e-6);
        nk[size_t(s)] = std::sqrt(sk + 1e-6);
        if (pb.l2norm)
          for (int64_t i = 0; i < K; ++i) q[size_t(i)] /= nq[size_t(s)], k[size_t(i)] /= nk[size_t(s)];
        const double a = std::exp(logDecay(pb, d, gi, hv)), be = betaOf(pb, d.beta[gi]);
        std::vector<double> &P = S[size_t(s)], &Nx = S[size_t(s) + 1];
        std::vector<double> u(static_cast<size_t>(V)), rv(static_cast<size_t>(V));
        for (int64_t j = 0; j < V; ++j) {
          double ks = 0;
          for (int64_t i = 0; i < K; ++i) ks += a * P[size_t(i * V + j)] * k[size_t(i)];
          rv[size_t(j)] = d.v[vi + size_t(j)] - ks;
          u[size_t(j)] = be * rv[size_t(j)];
        }
        for (int64_t i = 0; i < K; ++i)
          for (int64_t j = 0; j < V; ++j)
            Nx[size_t(i * V + j)] = a * P[size_t(i * V + j)] + k[size_t(i)] * u[size_t(j)];
        for (int64_t j = 0; j < V; ++j) {
          double acc = 0;
          for (int64_t i = 0; i < K; ++i) acc += Nx[size_t(i * V + j)] * q[size_t(i)];
          r.o[vi + size_t(j)] = scale * acc;
        }
        qn[size_t(s)] = q, kn[size_t(s)] = k, uu[size_t(s)] = u, rr[size_t(s)] = rv;
      }
      for (int64_t i = 0; i < K * V; ++i) r.ht[size_t((n * Hv + hv) * K * V + i)] = S[size_t(L)][size_t(i)];
      if (!backward) continue;
      // Reverse.
      std::vector<double> dS(size_t(K * V), 0.0), dSd(size_t(K * V));
      if (pb.dht)
        for (int64_t i = 0; i < K * V; ++i) dS[size_t(i)] = d.dht[size_t((n * Hv + hv) * K * V + i)];
      for (int64_t s = L - 1; s >= 0; --s) {
        const int64_t t = t0 + s;
        const size_t qk = size_t(((b * T + t) * Hqk + hk) * K), gi = size_t((b * T + t) * Hv + hv),
                     vi = size_t(((b * T + t) * Hv + hv) * V);
        const std::vector<double> &q = qn[size_t(s)], &k = kn[size_t(s)], &u = uu[size_t(s)], &rv = rr[size_t(s)];
        const std::vector<double> &P = S[size_t(s)], &Nx = S[size_t(s) + 1];
        const double a = std::exp(logDecay(pb, d, gi, hv)), be = betaOf(pb, d.beta[gi]);
        std::vector<double> dqh(static_cast<size_t>(K), 0.0), dkh(size_t(K), 0.0), du(size_t(V), 0.0);
        for (int64_t i = 0; i < K; ++i)
          for (int64_t j = 0; j < V; ++j) {
            const double dov = d.dout[vi + size_t(j)];
            dqh[size_t(i)] += scale * Nx[size_t(i * V + j)] * dov;
            dS[size_t(i * V + j)] += scale * q[size_t(i)] * dov;
          }
        for (int64_t i = 0; i < K; ++i)
          for (int64_t j = 0; j < V; ++j) {
            du[size_t(j)] += dS[size_t(i * V + j)] * k[size_t(i)];
            dkh[size_t(i)] += dS[size_t(i * V + j)] * u[size_t(j)];
          }
        dSd = dS;
        double dbe = 0;
        std::vector<double> dr(static_cast<size_t>(V));
        for (int64_t j = 0; j < V; ++j) {
          dbe += du[size_t(j)] * rv[size_t(j)];
          dr[size_t(j)] = be * du[size_t(j)];
          r.dv[vi + size_t(j)] = dr[size_t(j)];
        }
        for (int64_t i = 0; i < K; ++i)
          for (int64_t j = 0; j < V; ++j) {
            dSd[size_t(i * V + j)] -= k[size_t(i)] * dr[size_t(j)];
            dkh[size_t(i)] -= a * P[size_t(i * V + j)] * dr[size_t(j)];
          }
        double da = 0;
        for (int64_t i = 0; i < K * V; ++i) da += dSd[size_t(i)] * P[size_t(i)];
        r.dg[gi] = a * da;
        if (pb.gate) {  // through the gate: d/dg_raw, and the parameters' sums
          const double u = d.g[gi] + (pb.gateBias ? d.dtb[size_t(hv)] : 0.0);
          const double ea = std::exp(d.alog[size_t(hv)]), sg = 1.0 / (1.0 + std::exp(-u));
          const double ta = r.dg[gi] * logDecay(pb, d, gi, hv);
          r.dalog[size_t(hv)] += ta;
          r.dalogScale[size_t(hv)] += ta * ta;
          r.dg[gi] = r.dg[gi] * -ea * (u > 20 ? 1.0 : sg);
          r.ddtb[size_t(hv)] += r.dg[gi];
          r.ddtbScale[size_t(hv)] += r.dg[gi] * r.dg[gi];
        }
        // dβ/db with β = act sigmoid(b): act s (1 - s).
        const double sg = 1.0 / (1.0 + std::exp(-d.beta[gi]));
        r.dbeta[gi] = pb.betaAct ? dbe * pb.betaAct * sg * (1.0 - sg) : dbe;
        for (int64_t i = 0; i < K * V; ++i) dS[size_t(i)] = a * dSd[size_t(i)];
        // Through the L2 norm (x / r, r = sqrt(|x|^2 + eps)): dx = dxh / r - x (x . dxh) / r^3.
        auto back = [&](const std::vector<double> &xh, const std::vector<double> &dxh, double rn,
                        std::vector<double> &out, size_t at) {
          if (!pb.l2norm) {
            for (int64_t i = 0; i < K; ++i) out[at + size_t(i)] += dxh[size_t(i)];
            return;
          }
          double dot = 0;  // x . dxh = rn (xh . dxh)
          for (int64_t i = 0; i < K; ++i) dot += xh[size_t(i)] * dxh[size_t(i)];
          for (int64_t i = 0; i < K; ++i) out[at + size_t(i)] += (dxh[size_t(i)] - xh[size_t(i)] * dot) / rn;
        };
        back(q, dqh, nq[size_t(s)], r.dq, qk);
        back(k, dkh, nk[size_t(s)], r.dk, qk);
      }
      for (int64_t i = 0; i < K * V; ++i) r.dh0[size_t((n * Hv + hv) * K * V + i)] = dS[size_t(i)];
      if (n == N - 1 && pb.gate) {
        r.dalogScale[size_t(hv)] = std::sqrt(r.dalogScale[size_t(hv)]);
        r.ddtbScale[size_t(hv)] = std::sqrt(r.ddtbScale[size_t(hv)]);
      }
    }
  }
  return r;
}

Data makeData(const Problem &pb) {
  Data d;
  const int64_t N = pb.N();
  auto half = [&](size_t n, double sd, bool unit, int64_t K) {
    std::vector<double> x(n);
    for (double &e : x) e = sd * randn();
    if (unit)  // rows of K L2-normalized (what the inputs look like without the kernel's norm)
      for (size_t r = 0; r < n; r += size_t(K)) {
        double s = 0;
        for (size_t i = 0; i < size_t(K); ++i) s += x[r + i] * x[r + i];
        for (size_t i = 0; i < size_t(K); ++i) x[r + i] /= std::sqrt(s);
      }
    for (double &e : x) e = fromHalf(pb.dt, toHalf(pb.dt, float(e)));
    return x;
  };
  const size_t nqk = size_t(pb.B * pb.T * pb.Hqk * pb.K), nv = size_t(pb.B * pb.T * pb.Hv * pb.V),
               ng = size_t(pb.B * pb.T * pb.Hv), ns = size_t(N * pb.Hv * pb.K * pb.V);
  d.q = half(nqk, 1.0, !pb.l2norm, pb.K);
  d.k = half(nqk, 1.0, !pb.l2norm, pb.K);
  d.v = half(nv, 1.0, false, pb.K);
  d.dout = half(nv, 1.0, false, pb.K);
  d.g.resize(ng);
  d.beta.resize(ng);
  for (size_t i = 0; i < ng; ++i) {
    const double x = randn(), y = randn();
    d.g[i] = double(float(-std::log1p(std::exp(-x))));  // logsigmoid, as f32
    d.beta[i] = pb.betaAct ? double(float(y)) : double(float(1.0 / (1.0 + std::exp(-y))));  // logits, or β
  }
  d.h0.resize(ns);
  d.dht.resize(ns);
  d.alog.resize(size_t(pb.Hv));
  d.dtb.resize(size_t(pb.Hv));
  for (double &e : d.alog) e = double(float(0.5 * randn()));
  for (double &e : d.dtb) e = double(float(0.5 * randn()));
  if (pb.gate)  // g_raw, as FLA's layer gives it (a projection): centred below 0
    for (double &e : d.g) e = double(float(randn() - 1.0));
  for (double &e : d.h0) e = double(float(0.1 * randn()));
  for (double &e : d.dht) e = double(float(0.1 * randn()));
  return d;
}

// [M][A][B] -> [M][B][A] (states between K-first and V-first).
template <class T>
std::vector<T> swapLast(const std::vector<T> &x, int64_t A, int64_t Bd) {
  std::vector<T> y(x.size());
  for (size_t m = 0; m < x.size() / size_t(A * Bd); ++m)
    for (int64_t a = 0; a < A; ++a)
      for (int64_t b = 0; b < Bd; ++b) y[m * size_t(A * Bd) + size_t(b * A + a)] = x[m * size_t(A * Bd) + size_t(a * Bd + b)];
  return y;
}

// The error of per-head sums (dA_log, ddt_bias: sums over every token of
// terms of both signs) against the root-sum-square of their terms, the
// scale the rounding of the terms acts on: against the sums themselves it
// measures how much they cancel (seed 2070893044: dA_log 2.3e-2, ddt_bias
// 4.7e-2 relative to the sums, with dg itself at 1.7e-3).
double sumError(const std::vector<float> &out, const std::vector<double> &ref, const std::vector<double> &scale) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double e = std::isfinite(out[i]) ? double(out[i]) - ref[i] : 1e300;
    num += e * e;
    den += scale[i] * scale[i];
  }
  return std::sqrt(num / den);
}

double relRms(const std::vector<float> &out, const std::vector<double> &ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double e = double(out[i]) - ref[i];
    if (!std::isfinite(out[i])) e = 1e300;  // never written (poison) or not finite
    num += e * e;
    den += ref[i] * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// Host buffers in the kernels' dtypes, 256-byte aligned.
struct Buf {
  std::vector<unsigned char> mem;
  void *p = nullptr;
  explicit Buf(size_t bytes) : mem(bytes + 256) {
    p = mem.data() + (256 - reinterpret_cast<uintptr_t>(mem.data()) % 256) % 256;
  }
};
struct Tensor {
  DType dt;
  std::vector<int64_t> shape;
  Buf buf;
  Tensor(DType d, std::vector<int64_t> s) : dt(d), shape(s), buf(bytesOf(d, s)) {}
  static size_t bytesOf(DType d, const std::vector<int64_t> &s) {
    size_t n = 1;
    for (int64_t e : s) n *= size_t(e);
    return n * size_t(qla::dtypeBytes(d));
  }
  size_t count() const { return bytesOf(DType::I32, shape) / 4; }
  TensorRef ref() { return TensorRef{buf.p, dt, shape, {}}; }
  void set(const std::vector<double> &x) {
    for (size_t i = 0; i < x.size(); ++i) {
      if (dt == DType::F32) static_cast<float *>(buf.p)[i] = float(x[i]);
      else static_cast<uint16_t *>(buf.p)[i] = toHalf(dt, float(x[i]));
    }
  }
  void poison() {
    for (size_t i = 0; i < count(); ++i) {
      if (dt == DType::F32) static_cast<float *>(buf.p)[i] = NAN;
      else static_cast<uint16_t *>(buf.p)[i] = dt == DType::BF16 ? 0x7fc0 : 0x7e00;
    }
  }
  std::vector<float> get() const {
    std::vector<float> out(count());
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = dt == DType::F32 ? static_cast<const float *>(buf.p)[i]
                                : fromHalf(dt, static_cast<const uint16_t *>(buf.p)[i]);
    return out;
  }
};

struct Errors {
  double o = 0, ht = 0, dq = 0, dk = 0, dv = 0, dg = 0, dbeta = 0, dh0 = 0;
};

// Runs the forward (unless skipForward) and the backward of pb on fresh
// inputs and checks them against the bars (unless measureOnly).
Errors measure(const Problem &pb, bool skipForward, bool measureOnly);

void runCase(const Problem &pb) { measure(pb, false, false); }

Errors measure(const Problem &pb, bool skipForward, bool measureOnly) {
  Errors out;
  INFO(pb.name);
  const Data d = makeData(pb);
  const Grads ref = reference(pb, d);
  const int64_t B = pb.B, T = pb.T, Hqk = pb.Hqk, Hv = pb.Hv, K = pb.K, V = pb.V, N = pb.N();
  // States K-first [N, Hv, K, V], or V-first [N, Hv, V, K] (transposed here
  // on the way in and out: the reference is K-first).
  const std::vector<int64_t> ss = pb.vFirst ? std::vector<int64_t>{N, Hv, V, K} : std::vector<int64_t>{N, Hv, K, V};
  Tensor q(pb.dt, {B, T, Hqk, K}), k(pb.dt, {B, T, Hqk, K}), v(pb.dt, {B, T, Hv, V}), g(DType::F32, {B, T, Hv}),
      beta(DType::F32, {B, T, Hv}), o(pb.dt, {B, T, Hv, V}), h0(DType::F32, ss), ht(DType::F32, ss),
      dout(pb.dt, {B, T, Hv, V}), dht(DType::F32, ss), dq(pb.dt, {B, T, Hqk, K}), dk(pb.dt, {B, T, Hqk, K}),
      dv(pb.dt, {B, T, Hv, V}), dg(DType::F32, {B, T, Hv}), dbeta(DType::F32, {B, T, Hv}), dh0(DType::F32, ss),
      cu(DType::I32, {N + 1}),
      alog(DType::F32, {Hv}), dtb(DType::F32, {Hv}), dalog(DType::F32, {Hv}), ddtb(DType::F32, {Hv});
  alog.set(d.alog), dtb.set(d.dtb);
  q.set(d.q), k.set(d.k), v.set(d.v), g.set(d.g), beta.set(d.beta), dout.set(d.dout);
  h0.set(pb.vFirst ? swapLast(d.h0, K, V) : d.h0);
  dht.set(pb.vFirst ? swapLast(d.dht, K, V) : d.dht);
  auto kFirst = [&](const Tensor &t) { return pb.vFirst ? swapLast(t.get(), V, K) : t.get(); };
  std::vector<int64_t> cuHost;
  if (!pb.offsets.empty()) {
    std::vector<double> c(pb.offsets.begin(), pb.offsets.end());
    for (size_t i = 0; i < c.size(); ++i) static_cast<int32_t *>(cu.buf.p)[i] = int32_t(pb.offsets[i]);
    cuHost = pb.offsets;
  }

  qla::gdn::ForwardParams fp;
  fp.q = q.ref(), fp.k = k.ref(), fp.v = v.ref(), fp.g = g.ref(), fp.beta = beta.ref(), fp.o = o.ref();
  if (pb.h0) fp.initial_state = h0.ref();
  fp.final_state = ht.ref();
  if (!pb.offsets.empty()) fp.cu_seqlens = cu.ref(), fp.cu_seqlens_host = cuHost.data();
  fp.use_qk_l2norm = pb.l2norm;
  fp.beta_activation = pb.betaAct;
  fp.fused = pb.fusedForward;
  fp.state_v_first = pb.vFirst;
  fp.segment_chunks = pb.segChunks;
  if (pb.gate) {
    fp.use_gate = true;
    fp.A_log = alog.ref();
    if (pb.gateBias) fp.dt_bias = dtb.ref();
  }
  o.poison(), ht.poison();
  if (!skipForward) {
    if (pb.fusedBv) setenv("QLA_GDN_FUSED_BV", std::to_string(pb.fusedBv).c_str(), 1);
    Buf ws(qla::gdn::forwardWorkspaceBytes(fp));
    qla::gdn::forward(fp, ws.p, qla::gdn::forwardWorkspaceBytes(fp));
    unsetenv("QLA_GDN_FUSED_BV");
  }
  if (!skipForward) {
    out.o = relRms(o.get(), ref.o), out.ht = relRms(kFirst(ht), ref.ht);
    if (!measureOnly) {
      std::printf("%-40s forward: o %.2e  ht %.2e\n", pb.name.c_str(), out.o, out.ht);
      CHECK(out.o <= 0.005);
      CHECK(out.ht <= 0.005);
    }
  }

  qla::gdn::BackwardParams bp;
  bp.q = q.ref(), bp.k = k.ref(), bp.v = v.ref(), bp.g = g.ref(), bp.beta = beta.ref();
  if (pb.h0) bp.initial_state = h0.ref(), bp.dh0 = dh0.ref();
  if (!pb.offsets.empty()) bp.cu_seqlens = cu.ref(), bp.cu_seqlens_host = cuHost.data();
  bp.use_qk_l2norm = pb.l2norm;
  bp.beta_activation = pb.betaAct;
  bp.state_v_first = pb.vFirst;
  bp.segment_chunks = pb.segChunks;
  if (pb.gate) {
    bp.use_gate = true;
    bp.A_log = alog.ref();
    bp.dA_log = dalog.ref();
    if (pb.gateBias) bp.dt_bias = dtb.ref(), bp.ddt_bias = ddtb.ref();
  }
  bp.dout = dout.ref();
  if (pb.dht) bp.dht = dht.ref();
  bp.dq = dq.ref(), bp.dk = dk.ref(), bp.dv = dv.ref(), bp.dg = dg.ref(), bp.dbeta = dbeta.ref();
  dq.poison(), dk.poison(), dv.poison(), dg.poison(), dbeta.poison(), dh0.poison(), dalog.poison(), ddtb.poison();
  if (pb.fusedBackward) unsetenv("QLA_GDN_BWD_FUSED");
  else setenv("QLA_GDN_BWD_FUSED", "0", 1);
  INFO("backward kernels: " << qla::gdn::backwardConfig(bp).str());
  REQUIRE(qla::gdn::backwardConfig(bp).fused == (pb.fusedBackward != 0));
  if (pb.dhSegments) CHECK(qla::gdn::backwardStateGradientSegments(bp) == pb.dhSegments);
  if (pb.recomputeBv) setenv("QLA_GDN_FUSED_BV", std::to_string(pb.recomputeBv).c_str(), 1);
  {
    Buf ws(qla::gdn::backwardWorkspaceBytes(bp));
    qla::gdn::backward(bp, ws.p, qla::gdn::backwardWorkspaceBytes(bp));
  }
  unsetenv("QLA_GDN_FUSED_BV");
  unsetenv("QLA_GDN_BWD_FUSED");
  struct {
    const char *name;
    double err, bar;
  } rows[] = {{"dq", relRms(dq.get(), ref.dq), 0.008},         {"dk", relRms(dk.get(), ref.dk), 0.008},
              {"dv", relRms(dv.get(), ref.dv), 0.008},         {"dg", relRms(dg.get(), ref.dg), 0.02},
              {"dbeta", relRms(dbeta.get(), ref.dbeta), 0.02}, {"dh0", pb.h0 ? relRms(kFirst(dh0), ref.dh0) : 0, 0.008},
              // The gate's parameters: sums over every token of dg's terms
              // (dg's bar, against the terms' scale: sumError).
              {"dA_log", pb.gate ? sumError(dalog.get(), ref.dalog, ref.dalogScale) : 0, 0.02},
              {"ddt_bias", pb.gate && pb.gateBias ? sumError(ddtb.get(), ref.ddtb, ref.ddtbScale) : 0, 0.02}};
  out.dq = rows[0].err, out.dk = rows[1].err, out.dv = rows[2].err, out.dg = rows[3].err, out.dbeta = rows[4].err,
  out.dh0 = rows[5].err;
  if (measureOnly) return out;
  std::printf("%-40s backward:", pb.name.c_str());
  for (auto &r : rows) std::printf(" %s %.2e", r.name, r.err);
  std::printf("\n");
  for (auto &r : rows) {
    INFO(r.name << " rel rms " << r.err << " (bar " << r.bar << ")");
    CHECK(r.err <= r.bar);
  }
  return out;
}

}  // namespace

TEST_CASE("the float64 reference gradients match finite differences", "[gdn][sim]") {
  for (int variant = 0; variant < 4; ++variant) {
    Problem pb;
    pb.name = variant == 3   ? "fd in-kernel gate"
              : variant == 2 ? "fd beta = 2 sigmoid(b)"
              : variant      ? "fd l2norm h0 dht gva varlen"
                             : "fd plain";
    pb.betaAct = variant == 2 ? 2 : 0;
    pb.gate = variant == 3;
    pb.K = 3, pb.V = 2, pb.Hqk = 1;
    pb.l2norm = pb.h0 = pb.dht = variant == 1;
    pb.Hv = variant == 1 ? 2 : 1;
    if (variant == 1) pb.offsets = {0, 2, 5}, pb.T = 5;
    else pb.T = 4;
    Data d = makeData(pb);
    const Grads r = reference(pb, d);
    auto loss = [&](const Data &x) {
      const Grads f = reference(pb, x, false);
      double l = 0;
      for (size_t i = 0; i < f.o.size(); ++i) l += f.o[i] * x.dout[i];
      if (pb.dht)
        for (size_t i = 0; i < f.ht.size(); ++i) l += f.ht[i] * x.dht[i];
      return l;
    };
    auto check = [&](std::vector<double> Data::*field, const std::vector<double> &grad, const char *name) {
      for (size_t i = 0; i < grad.size(); ++i) {
        Data p = d, m = d;
        const double h = 1e-6;
        (p.*field)[i] += h;
        (m.*field)[i] -= h;
        const double fd = (loss(p) - loss(m)) / (2 * h);
        INFO(pb.name << ": d" << name << "[" << i << "] analytic " << grad[i] << ", finite difference " << fd);
        CHECK(std::fabs(fd - grad[i]) <= 1e-6 * (1 + std::fabs(fd)));
      }
    };
    check(&Data::q, r.dq, "q");
    check(&Data::k, r.dk, "k");
    check(&Data::v, r.dv, "v");
    check(&Data::g, r.dg, "g");
    check(&Data::beta, r.dbeta, "beta");
    if (pb.h0) check(&Data::h0, r.dh0, "h0");
    if (pb.gate) check(&Data::alog, r.dalog, "A_log"), check(&Data::dtb, r.ddtb, "dt_bias");
  }
}

TEST_CASE("GDN forward and backward on the simulator: one sequence, two chunks and a tail", "[gdn][sim]") {
  Problem pb;
  pb.name = "f16 T=150 K=V=64";
  pb.T = 150;
  runCase(pb);
}

TEST_CASE("GDN forward and backward on the simulator: GVA, varlen, h0, dht, L2 norm, bf16", "[gdn][sim]") {
  Problem pb;
  pb.name = "bf16 varlen [0,1,70,130] Hv=2 l2 h0 dht";
  pb.dt = DType::BF16;
  pb.offsets = {0, 1, 70, 130};
  pb.T = 130;
  pb.Hv = 2;
  pb.l2norm = pb.h0 = pb.dht = true;
  runCase(pb);
}

TEST_CASE("GDN backward on the simulator: the fused gradient kernel", "[gdn][sim][fused]") {
  Problem pb;
  pb.name = "fused f16 T=150 K=V=64 h0 dht";
  pb.T = 150;
  pb.h0 = pb.dht = true;
  pb.fusedForward = 1;
  pb.fusedBackward = 1;
  // Three chunks on one v-head: the fused kernel's own split cuts them into
  // segments of one chunk (pass 1, reverse merge; the forward does not split).
  pb.dhSegments = 1;
  runCase(pb);
  // ... and without a split: one CTA runs the three chunks.
  pb.name = "fused f16 T=150 K=V=64 h0 dht, no split";
  pb.segChunks = -1;
  pb.dhSegments = qla::gdn::kNoSplit;
  runCase(pb);
}

TEST_CASE("GDN backward on the simulator: the fused gradient kernel, K = V = 128, GVA, varlen", "[gdn][sim][fused]") {
  Problem pb;
  pb.name = "fused f16 varlen [0,65,66,200] K=V=128 Hv=2 h0 dht";
  pb.offsets = {0, 65, 66, 200};
  pb.T = 200;
  pb.K = pb.V = 128;
  pb.Hv = 2;
  pb.h0 = pb.dht = true;
  pb.fusedBackward = 1;
  pb.dhSegments = 1;
  runCase(pb);
}

TEST_CASE("GDN backward on the simulator: the fused gradient kernel, bf16 (forced), L2 norm, GVA, varlen",
          "[gdn][sim][fused]") {
  Problem pb;
  // bf16: V_new and dQK as hi + lo pairs (HILO).
  pb.name = "fused bf16 varlen [0,1,70,200] Hv=2 l2 h0 dht";
  pb.dt = DType::BF16;
  pb.offsets = {0, 1, 70, 200};
  pb.T = 200;
  pb.Hv = 2;
  pb.l2norm = pb.h0 = pb.dht = true;
  pb.fusedBackward = 1;
  runCase(pb);
}

TEST_CASE("GDN backward on the simulator: the fused kernel's one-kernel recompute, split and in 64-wide slices",
          "[gdn][sim][fused]") {
  // The recompute (gdn_fwd_fused.qla BWD=1) with a split at every chunk:
  // prepare's T and 1/|k| (OUT_T, L2 norm), the fused pass 1 and the merge,
  // then the recompute writing H, A, gamma and W (the state gradient's split,
  // SAVE_W) in 64-wide V slices, the first slice's CTAs alone writing A,
  // gamma and W; bf16, GVA, varlen with a one-token sequence, h0 and dht.
  Problem pb;
  pb.name = "fused bf16 varlen l2 GVA split BV=64";
  pb.dt = DType::BF16;
  pb.offsets = {0, 130, 131, 200};
  pb.T = 200;
  pb.K = pb.V = 128;
  pb.Hv = 2;
  pb.l2norm = pb.h0 = pb.dht = true;
  pb.fusedBackward = 1;
  pb.segChunks = 1;
  pb.recomputeBv = 64;
  pb.dhSegments = 1;
  runCase(pb);
  // ... and whole heads, f16.
  pb.name = "fused f16 varlen l2 GVA split BV=128";
  pb.dt = DType::F16;
  pb.recomputeBv = 128;
  runCase(pb);
}

TEST_CASE("GDN forward and backward on the simulator: beta = sigmoid(b) computed in the kernels", "[gdn][sim]") {
  Problem pb;
  pb.name = "beta = sigmoid(b) bf16 T=130 Hv=2 h0";
  pb.dt = DType::BF16;
  pb.T = 130;
  pb.Hv = 2;
  pb.h0 = true;
  pb.betaAct = 1;
  runCase(pb);
  pb.name = "fused beta = 2 sigmoid(b) f16 T=100 l2";
  pb.dt = DType::F16;
  pb.T = 100;
  pb.Hv = 1;
  pb.l2norm = true;
  pb.betaAct = 2;
  pb.fusedForward = 1;
  pb.fusedBackward = 1;
  runCase(pb);
}

TEST_CASE("GDN forward and backward on the simulator: the in-kernel gate", "[gdn][sim][gate]") {
  Problem pb;
  pb.name = "gate bf16 B=2 T=100 Hv=2 h0 dht";
  pb.dt = DType::BF16;
  pb.B = 2;
  pb.T = 100;
  pb.Hv = 2;
  pb.h0 = pb.dht = true;
  pb.gate = true;
  runCase(pb);
  pb.name = "gate without dt_bias, beta sigmoid, fused f16 varlen [0,30,130]";
  pb.dt = DType::F16;
  pb.B = 1;
  pb.offsets = {0, 30, 130};
  pb.T = 130;
  pb.Hv = 1;
  pb.gateBias = false;
  pb.betaAct = 1;
  pb.fusedForward = 1;
  pb.fusedBackward = 1;
  runCase(pb);
}

TEST_CASE("GDN forward and backward on the simulator: V-first states, K != V", "[gdn][sim][vfirst]") {
  Problem pb;
  pb.name = "state_v_first K=64 V=128 bf16 h0 dht Hv=2";
  pb.dt = DType::BF16;
  pb.T = 100;
  pb.K = 64;
  pb.V = 128;
  pb.Hv = 2;
  pb.h0 = pb.dht = true;
  pb.vFirst = true;
  runCase(pb);
  pb.name = "state_v_first K=128 V=64 f16 varlen, gate, fused";
  pb.dt = DType::F16;
  pb.K = 128;
  pb.V = 64;
  pb.Hv = 1;
  pb.offsets = {0, 40, 100};
  pb.gate = true;
  pb.fusedForward = pb.fusedBackward = 1;
  runCase(pb);
}

TEST_CASE("GDN forward and backward on the simulator: V = 256", "[gdn][sim][v256]") {
  // The two-kernel forward (32-wide V slices) and the six-kernel backward
  // (dqk in two 128-column parts of V).
  Problem pb;
  pb.name = "V=256 K=128 bf16 l2 h0 dht Hv=2 two-kernel";
  pb.dt = DType::BF16;
  pb.T = 130;
  pb.K = 128;
  pb.V = 256;
  pb.Hv = 2;
  pb.l2norm = pb.h0 = pb.dht = true;
  pb.fusedForward = -1;
  runCase(pb);
  // The fused forward in 128-wide slices (two CTAs per head), varlen.
  pb.name = "V=256 K=64 f16 varlen h0 dht fused BV=128";
  pb.dt = DType::F16;
  pb.K = 64;
  pb.Hv = 1;
  pb.l2norm = false;
  pb.T = 200;
  pb.offsets = {0, 70, 71, 200};
  pb.fusedForward = 1;
  pb.fusedBv = 128;
  runCase(pb);
  // 64-wide slices, split at every chunk (pass 1, the merge; the backward's
  // recompute and dh split as well).
  pb.name = "V=256 K=128 bf16 l2 fused BV=64 split";
  pb.dt = DType::BF16;
  pb.K = 128;
  pb.offsets.clear();
  pb.T = 150;
  pb.l2norm = true;
  pb.fusedBv = 64;
  pb.segChunks = 1;
  runCase(pb);
}

TEST_CASE("GDN forward and backward on the simulator: K = 256", "[gdn][sim][k256]") {
  // The two-kernel forward without a split (whatever is asked), the six-kernel
  // backward (gdn_bwd_dqk.qla in two 128-column parts of K, with V's parts
  // at V = 256; gdn_bwd_dh.qla unpipelined).
  Problem pb;
  pb.name = "K=256 V=128 bf16 l2 h0 dht GVA";
  pb.dt = DType::BF16;
  pb.T = 130;
  pb.K = 256;
  pb.V = 128;
  pb.Hqk = 1;
  pb.Hv = 2;
  pb.l2norm = pb.h0 = pb.dht = true;
  runCase(pb);
  pb.name = "K=256 V=256 f16 varlen h0";
  pb.dt = DType::F16;
  pb.V = 256;
  pb.Hv = 1;
  pb.l2norm = pb.dht = false;
  pb.offsets = {0, 65, 66, 150};
  pb.T = 150;
  runCase(pb);
  pb.name = "K=256 V=64 bf16 dht";
  pb.dt = DType::BF16;
  pb.V = 64;
  pb.offsets.clear();
  pb.T = 100;
  pb.h0 = false;
  pb.dht = true;
  runCase(pb);
}

// Not run by default ([.tail]): the error tail of the hardest case (B = 2,
// T = 1 at 2/4 heads, K = V = 128, bf16, an initial state; docs/gdn.md,
// "Backward") over QLA_SIM_TAIL_SEEDS seeds (default 200), for the
// six-kernel backward and the fused kernel: median / 90th percentile / max
// of each gradient's error and the seeds over its bar. QLA_SIM_TAIL_T sets
// another length (the same statistics over chunks of recomputed states).
TEST_CASE("the backward's error tail at T = 1 on the simulator", "[.tail]") {
  const char *e = std::getenv("QLA_SIM_TAIL_SEEDS");
  const int seeds = e ? std::atoi(e) : 200;
  const char *et = std::getenv("QLA_SIM_TAIL_T");
  const int64_t T = et ? std::atoll(et) : 1;
  for (int fused = 0; fused < 2; ++fused) {
    Problem pb;
    pb.name = fused ? "fused" : "six kernels";
    pb.B = 2, pb.T = T, pb.Hqk = 2, pb.Hv = 4, pb.K = pb.V = 128, pb.dt = DType::BF16, pb.h0 = true;
    pb.fusedBackward = fused;
    std::vector<Errors> all;
    for (int s = 0; s < seeds; ++s) all.push_back(measure(pb, true, true));
    auto stat = [&](double Errors::*f, double bar, const char *name) {
      std::vector<double> v;
      for (const Errors &x : all) v.push_back(x.*f);
      std::sort(v.begin(), v.end());
      const size_t over = size_t(std::count_if(v.begin(), v.end(), [&](double x) { return x > bar; }));
      std::printf("%-12s %-6s median %.2e  p90 %.2e  max %.2e  over %.3g: %zu of %d\n", pb.name.c_str(), name,
                  v[v.size() / 2], v[v.size() * 9 / 10], v.back(), bar, over, seeds);
    };
    stat(&Errors::dq, 0.008, "dq");
    stat(&Errors::dk, 0.008, "dk");
    stat(&Errors::dv, 0.008, "dv");
    stat(&Errors::dg, 0.02, "dg");
    stat(&Errors::dbeta, 0.02, "dbeta");
    stat(&Errors::dh0, 0.008, "dh0");
  }
}

namespace {

// The first Tp tokens of every sequence of d (B sequences of T tokens).
Data prefix(const Problem &pb, const Data &d, int64_t Tp) {
  auto cut = [&](const std::vector<double> &x, int64_t inner) {
    std::vector<double> y;
    for (int64_t b = 0; b < pb.B; ++b)
      y.insert(y.end(), x.begin() + long(b * pb.T * inner), x.begin() + long((b * pb.T + Tp) * inner));
    return y;
  };
  Data e = d;
  e.q = cut(d.q, pb.Hqk * pb.K), e.k = cut(d.k, pb.Hqk * pb.K), e.v = cut(d.v, pb.Hv * pb.V);
  e.dout = cut(d.dout, pb.Hv * pb.V), e.g = cut(d.g, pb.Hv), e.beta = cut(d.beta, pb.Hv);
  return e;
}

// A random V-first state pool of `slots` slots of sv values (0.1 randn,
// exact in its dtype).
std::vector<double> randomPool(int64_t slots, size_t sv, DType poolDt) {
  std::vector<double> pool(size_t(slots) * sv);
  for (double &x : pool) {
    x = 0.1 * randn();
    x = poolDt == DType::BF16 ? fromHalf(DType::BF16, toHalf(DType::BF16, float(x))) : double(float(x));
  }
  return pool;
}

// The reference's initial states (K-first, into h0) from the pool's slots
// `from` (< 0: zero).
void startStates(const std::vector<double> &pool, const std::vector<int32_t> &from, size_t sv, int64_t V, int64_t K,
                 std::vector<double> &h0) {
  for (size_t n = 0; n < from.size(); ++n) {
    std::vector<double> s(sv, 0.0);
    if (from[n] >= 0) s.assign(pool.begin() + long(size_t(from[n]) * sv), pool.begin() + long(size_t(from[n] + 1) * sv));
    const std::vector<double> kf = swapLast(s, V, K);
    std::copy(kf.begin(), kf.end(), h0.begin() + long(n * sv));
  }
}

// Every slot not in `written` is the pool as it was, bit for bit.
void checkUntouched(const std::vector<float> &got, const std::vector<double> &pool, const std::vector<int32_t> &written,
                    size_t sv, DType poolDt) {
  for (size_t s = 0; s < pool.size() / sv; ++s) {
    if (std::find(written.begin(), written.end(), int32_t(s)) != written.end()) continue;
    for (size_t i = 0; i < sv; ++i) {
      const double x = pool[s * sv + i];
      const float want = poolDt == DType::BF16 ? fromHalf(DType::BF16, toHalf(DType::BF16, float(x))) : float(x);
      if (got[s * sv + i] != want) {
        INFO("slot " << s << " element " << i);
        CHECK(got[s * sv + i] == want);
        break;
      }
    }
  }
}

// Decode / verify through qla::gdn::recurrent on the simulator: N
// sequences of T tokens over a V-first pool; reads from slots 0.. (one
// sequence from none), every token's state written to its own slot (one
// write skipped); o and every written slot against the float64 recurrence,
// every other slot unchanged. kFirst: the pool is [slots, Hv, K, V].
// The slot array the device gets: `s`, or with pastPool each -1 (none) as a
// slot past the pool's `slots` (the kernels must treat it as none).
std::vector<int32_t> devSlots(std::vector<int32_t> s, int64_t slots, bool pastPool) {
  if (pastPool)
    for (int32_t &x : s)
      if (x < 0) x = int32_t(slots + 7);
  return s;
}

void runRecurrent(Problem pb, DType poolDt, bool kFirst = false) {
  INFO(pb.name);
  pb.l2norm = true;
  pb.h0 = true;
  const int64_t N = pb.B, T = pb.T, Hv = pb.Hv, K = pb.K, V = pb.V;
  Data d = makeData(pb);
  // q, k as given (the kernel normalizes them): fresh, not unit rows.
  for (double &x : d.q) x = fromHalf(pb.dt, toHalf(pb.dt, float(randn())));
  for (double &x : d.k) x = fromHalf(pb.dt, toHalf(pb.dt, float(randn())));
  const int64_t slots = N + N * T;
  std::vector<int32_t> ri(static_cast<size_t>(N)), wi(static_cast<size_t>(N * T));
  for (int64_t n = 0; n < N; ++n) ri[size_t(n)] = n == 1 ? -1 : int32_t(n);
  for (int64_t i = 0; i < N * T; ++i) wi[size_t(i)] = i == 1 ? -1 : int32_t(N + i);
  // The pool (V-first), random; the reference's initial states from it (K-first).
  const size_t sv = size_t(Hv * V * K);
  const std::vector<double> pool = randomPool(slots, sv, poolDt);
  startStates(pool, ri, sv, V, K, d.h0);
  Tensor q(pb.dt, {N, T, pb.Hqk, K}), k(pb.dt, {N, T, pb.Hqk, K}), v(pb.dt, {N, T, Hv, V}), g(DType::F32, {N, T, Hv}),
      beta(DType::F32, {N, T, Hv}), o(pb.dt, {N, T, Hv, V}),
      P(poolDt, kFirst ? std::vector<int64_t>{slots, Hv, K, V} : std::vector<int64_t>{slots, Hv, V, K}),
      R(DType::I32, {N}), W(DType::I32, {N, T}), alog(DType::F32, {Hv}), dtb(DType::F32, {Hv});
  const std::vector<double> devPool = kFirst ? swapLast(pool, V, K) : pool;
  q.set(d.q), k.set(d.k), v.set(d.v), g.set(d.g), beta.set(d.beta), P.set(devPool), alog.set(d.alog), dtb.set(d.dtb);
  std::memcpy(R.buf.p, devSlots(ri, slots, pb.pastPool).data(), ri.size() * 4);
  std::memcpy(W.buf.p, devSlots(wi, slots, pb.pastPool).data(), wi.size() * 4);
  o.poison();
  qla::gdn::RecurrentParams rp;
  rp.q = q.ref(), rp.k = k.ref(), rp.v = v.ref(), rp.g = g.ref(), rp.beta = beta.ref(), rp.o = o.ref();
  rp.state_pool = P.ref(), rp.read_index = R.ref(), rp.write_index = W.ref();
  rp.state_pool_k_first = kFirst;
  rp.beta_activation = pb.betaAct;
  if (pb.gate) {
    rp.use_gate = true;
    rp.A_log = alog.ref();
    if (pb.gateBias) rp.dt_bias = dtb.ref();
  }
  // Through the C ABI (what the Python package calls): the same outputs.
  {
    Tensor o2(pb.dt, {N, T, Hv, V}), P2(poolDt, P.shape);
    P2.set(devPool);
    o2.poison();
    auto ct = [](Tensor &t) {
      qla_gdn_tensor c{};
      c.data = t.buf.p;
      c.dtype = int32_t(t.dt);
      c.rank = int32_t(t.shape.size());
      for (size_t i = 0; i < t.shape.size(); ++i) c.shape[i] = t.shape[i];
      return c;
    };
    qla_gdn_recurrent_args a;
    qla_gdn_recurrent_args_init(&a);
    CHECK(a.use_qk_l2norm == 1);
    a.q = ct(q), a.k = ct(k), a.v = ct(v), a.g = ct(g), a.beta = ct(beta), a.o = ct(o2);
    a.state_pool = ct(P2), a.read_index = ct(R), a.write_index = ct(W);
    a.beta_activation = pb.betaAct;
    a.state_pool_k_first = kFirst ? 1 : 0;
    if (pb.gate) {
      a.use_gate = 1;
      a.A_log = ct(alog);
      if (pb.gateBias) a.dt_bias = ct(dtb);
    }
    char err[1024];
    REQUIRE(qla_gdn_recurrent(&a, err, sizeof err) == 0);
    qla::gdn::recurrent(rp);
    CHECK(std::memcmp(o.buf.p, o2.buf.p, Tensor::bytesOf(o.dt, o.shape)) == 0);
    CHECK(std::memcmp(P.buf.p, P2.buf.p, Tensor::bytesOf(P.dt, P.shape)) == 0);
    a.read_index = ct(W);  // [N, T] where [N] is expected
    CHECK(qla_gdn_recurrent(&a, err, sizeof err) == -1);
    INFO(err);
    CHECK(std::string(err) == "fused_recurrent_gated_delta_rule: read_index must have 1 dim [N], got shape [" +
                               std::to_string(N) + ", " + std::to_string(T) + "]");
    // The indices' host copies are checked before the launch (the pool and
    // o as they were: nothing ran).
    a.read_index = ct(R);
    const std::string RP = "fused_recurrent_gated_delta_rule: ";
    std::vector<int32_t> rh = ri, wh = wi;
    a.read_index_host = rh.data(), a.write_index_host = wh.data();
    rh[0] = int32_t(slots);
    const std::vector<float> before = P2.get();
    CHECK(qla_gdn_recurrent(&a, err, sizeof err) == -1);
    CHECK(std::string(err) == RP + "read_index[0] = " + std::to_string(slots) + " is past the pool's " +
                                  std::to_string(slots) + " slots");
    CHECK(P2.get() == before);
    rh = ri;
    a.read_index_host = rh.data();
    if (N >= 2) {
      wh[size_t(T)] = wh[0];  // sequences 0 and 1 write one slot after their first tokens
      CHECK(qla_gdn_recurrent(&a, err, sizeof err) == -1);
      CHECK(std::string(err) == RP + "write_index[0, 0] and write_index[1, 0] both write slot " +
                                    std::to_string(wh[0]) + " (two sequences of one call)");
      wh = wi;
      a.write_index_host = wh.data();
      rh[1] = wh[0];  // sequence 1 starts from the slot sequence 0 writes
      CHECK(qla_gdn_recurrent(&a, err, sizeof err) == -1);
      CHECK(std::string(err) == RP + "read_index[1] = " + std::to_string(wh[0]) +
                                    " is written by another sequence of the call (write_index[0, 0])");
      CHECK(P2.get() == before);
    }
  }

  const Grads full = reference(pb, d, false);
  const double eo = relRms(o.get(), full.o);
  std::printf("%-40s recurrent: o %.2e", pb.name.c_str(), eo);
  CHECK(eo <= 0.005);
  const std::vector<float> got = kFirst ? swapLast(P.get(), K, V) : P.get();  // V-first
  double worst = 0;
  for (int64_t t = 0; t < T; ++t) {
    Problem pt = pb;
    pt.T = t + 1;
    const Grads r = reference(pt, prefix(pb, d, t + 1), false);
    for (int64_t n = 0; n < N; ++n) {
      const int32_t w = wi[size_t(n * T + t)];
      if (w < 0) continue;
      const std::vector<double> want(r.ht.begin() + long(size_t(n) * sv), r.ht.begin() + long(size_t(n + 1) * sv));
      const std::vector<float> slot(got.begin() + long(size_t(w) * sv), got.begin() + long(size_t(w + 1) * sv));
      const double e = relRms(swapLast(slot, V, K), want);
      worst = std::max(worst, e);
      INFO("sequence " << n << " token " << t << " slot " << w);
      CHECK(e <= 0.005);
    }
  }
  std::printf("  written states (worst) %.2e\n", worst);
  // Slots nobody writes (the read slots, the skipped write) are unchanged.
  checkUntouched(got, pool, wi, sv, poolDt);
}

}  // namespace

namespace {

// Sequence n of (pb, d) cut to its first L tokens, as a problem of its own
// (one sequence, its initial state).
std::pair<Problem, Data> sequencePrefix(const Problem &pb, const Data &d, int64_t n, int64_t L) {
  const int64_t base = pb.offsets.empty() ? n * pb.T : pb.offsets[size_t(n)];
  Problem p = pb;
  p.offsets.clear();
  p.B = 1;
  p.T = L;
  Data e = d;
  auto cut = [&](const std::vector<double> &x, int64_t inner) {
    return std::vector<double>(x.begin() + long(base * inner), x.begin() + long((base + L) * inner));
  };
  e.q = cut(d.q, pb.Hqk * pb.K), e.k = cut(d.k, pb.Hqk * pb.K), e.v = cut(d.v, pb.Hv * pb.V);
  e.dout = cut(d.dout, pb.Hv * pb.V), e.g = cut(d.g, pb.Hv), e.beta = cut(d.beta, pb.Hv);
  const size_t sv = size_t(pb.Hv * pb.K * pb.V);
  e.h0.assign(d.h0.begin() + long(size_t(n) * sv), d.h0.begin() + long(size_t(n + 1) * sv));
  return {p, e};
}

}  // namespace

// Prefill into a state pool (ForwardParams::state_pool): the fused kernel
// reads each sequence's start state from its slot (one sequence from none)
// and writes the final state to another slot, in place; o and the written
// slots against the float64 recurrence, every other slot unchanged. With
// split = true the long sequence is cut into segments (its pass 1 reads
// the pool too); kFirst: the pool is [slots, Hv, K, V]; ckptEvery > 0:
// prefix-caching states every ckptEvery tokens into slots of their own (M
// = 2 per sequence, one of them -1), each against the float64 recurrence
// of the sequence's prefix.
// maxSeqlen < 0: the host copy of cu_seqlens is given (the plan for the
// lengths); 0: none (the worst case); > 0: none, with that bound
// (ForwardParams::max_seqlen).
void runPrefill(Problem pb, DType poolDt, bool split, bool kFirst = false, int64_t ckptEvery = 0,
                int64_t maxSeqlen = -1) {
  INFO(pb.name);
  pb.h0 = true;
  const int64_t T = pb.T, Hv = pb.Hv, K = pb.K, V = pb.V;
  const int64_t N = pb.offsets.empty() ? pb.B : int64_t(pb.offsets.size()) - 1;
  Data d = makeData(pb);
  const int64_t M = 2;
  const int64_t slots = 2 * N + 1 + (ckptEvery ? N * M : 0);
  const size_t sv = size_t(Hv * V * K);
  const std::vector<double> pool = randomPool(slots, sv, poolDt);  // V-first; K-first on the device with kFirst
  std::vector<int32_t> in(static_cast<size_t>(N)), out(static_cast<size_t>(N)), cks(static_cast<size_t>(N * M));
  for (int64_t n = 0; n < N; ++n) {
    in[size_t(n)] = n == 0 ? -1 : int32_t(n);
    out[size_t(n)] = n == N - 1 ? int32_t(n) : int32_t(N + n);  // the last in place
  }
  for (int64_t i = 0; i < N * M; ++i) cks[size_t(i)] = i == 1 ? -1 : int32_t(2 * N + 1 + i);
  startStates(pool, in, sv, V, K, d.h0);
  const Grads ref = reference(pb, d, false);
  const int64_t B = pb.B;
  Tensor q(pb.dt, {B, T, pb.Hqk, K}), k(pb.dt, {B, T, pb.Hqk, K}), v(pb.dt, {B, T, Hv, V}), g(DType::F32, {B, T, Hv}),
      beta(DType::F32, {B, T, Hv}), o(pb.dt, {B, T, Hv, V}),
      P(poolDt, kFirst ? std::vector<int64_t>{slots, Hv, K, V} : std::vector<int64_t>{slots, Hv, V, K}),
      SI(DType::I32, {N}), SO(DType::I32, {N}), CS(DType::I32, {N, M}), cu(DType::I32, {N + 1});
  q.set(d.q), k.set(d.k), v.set(d.v), g.set(d.g), beta.set(d.beta), P.set(kFirst ? swapLast(pool, V, K) : pool);
  std::memcpy(SI.buf.p, devSlots(in, slots, pb.pastPool).data(), in.size() * 4);
  std::memcpy(SO.buf.p, devSlots(out, slots, pb.pastPool).data(), out.size() * 4);
  std::memcpy(CS.buf.p, devSlots(cks, slots, pb.pastPool).data(), cks.size() * 4);
  o.poison();
  qla::gdn::ForwardParams fp;
  fp.q = q.ref(), fp.k = k.ref(), fp.v = v.ref(), fp.g = g.ref(), fp.beta = beta.ref(), fp.o = o.ref();
  fp.state_pool = P.ref(), fp.initial_slots = SI.ref(), fp.final_slots = SO.ref();
  fp.state_pool_k_first = kFirst;
  if (ckptEvery) fp.checkpoint_every = ckptEvery, fp.checkpoint_slots = CS.ref();
  fp.use_qk_l2norm = pb.l2norm;
  std::vector<int64_t> cuHost;
  if (!pb.offsets.empty()) {
    for (size_t i = 0; i < pb.offsets.size(); ++i) static_cast<int32_t *>(cu.buf.p)[i] = int32_t(pb.offsets[i]);
    cuHost = pb.offsets;
    fp.cu_seqlens = cu.ref(), fp.cu_seqlens_host = maxSeqlen < 0 ? cuHost.data() : nullptr;
    fp.max_seqlen = std::max<int64_t>(maxSeqlen, 0);
  }
  if (split) fp.segment_chunks = 1;
  REQUIRE(qla::gdn::forwardConfig(fp).pool);
  {
    Buf ws(qla::gdn::forwardWorkspaceBytes(fp));
    qla::gdn::forward(fp, ws.p, qla::gdn::forwardWorkspaceBytes(fp));
  }
  const double eo = relRms(o.get(), ref.o);
  std::printf("%-40s prefill: o %.2e", pb.name.c_str(), eo);
  CHECK(eo <= 0.005);
  const std::vector<float> got = kFirst ? swapLast(P.get(), K, V) : P.get();  // V-first
  double worst = 0;
  std::vector<int32_t> written = out;
  for (int64_t n = 0; n < N && ckptEvery; ++n) {
    const int64_t len = pb.offsets.empty() ? T : pb.offsets[size_t(n) + 1] - pb.offsets[size_t(n)];
    for (int64_t m = 0; m < M; ++m) {
      const int32_t w = cks[size_t(n * M + m)];
      if (w < 0 || (m + 1) * ckptEvery > len) continue;  // not stored: the slot stays as it was
      written.push_back(w);
      auto [pp, dd] = sequencePrefix(pb, d, n, (m + 1) * ckptEvery);
      const Grads r = reference(pp, dd, false);
      const std::vector<float> slot(got.begin() + long(size_t(w) * sv), got.begin() + long(size_t(w + 1) * sv));
      const double e = relRms(swapLast(slot, V, K), r.ht);
      worst = std::max(worst, e);
      INFO("sequence " << n << " checkpoint " << m << " slot " << w);
      CHECK(e <= 0.005);
    }
  }
  for (int64_t n = 0; n < N; ++n) {
    const int32_t w = out[size_t(n)];
    const std::vector<double> want(ref.ht.begin() + long(size_t(n) * sv), ref.ht.begin() + long(size_t(n + 1) * sv));
    const std::vector<float> slot(got.begin() + long(size_t(w) * sv), got.begin() + long(size_t(w + 1) * sv));
    const double e = relRms(swapLast(slot, V, K), want);
    worst = std::max(worst, e);
    INFO("sequence " << n << " slot " << w);
    CHECK(e <= 0.005);
  }
  std::printf("  final states%s %.2e\n", ckptEvery ? " and checkpoints" : "", worst);
  checkUntouched(got, pool, written, sv, poolDt);
}

TEST_CASE("GDN prefill into a state pool on the simulator", "[gdn][sim][pool]") {
  Problem pb;
  pb.name = "prefill varlen [0,5,130,200] Hv=2 f32 pool";
  pb.dt = DType::BF16;
  pb.offsets = {0, 5, 130, 200};
  pb.T = 200;
  pb.Hv = 2;
  pb.K = pb.V = 64;
  runPrefill(pb, DType::F32, false);
  pb.name = "prefill varlen, no host copy of cu_seqlens (the worst case's plan)";
  runPrefill(pb, DType::F32, false, false, 0, 0);
  pb.name = "prefill varlen, no host copy, max_seqlen 125 (the longest)";
  runPrefill(pb, DType::F32, false, false, 0, 125);
  pb.name = "prefill varlen, no host copy, max_seqlen 64 (exceeded: slower, still exact)";
  runPrefill(pb, DType::F32, false, false, 0, 64);
  pb.name = "prefill split segments, l2, bf16 pool";
  pb.l2norm = true;
  runPrefill(pb, DType::BF16, true);
  pb.name = "prefill B=2 T=100 K=V=128 f32 pool";
  pb.offsets.clear();
  pb.B = 2;
  pb.T = 100;
  pb.Hv = 1;
  pb.K = pb.V = 128;
  pb.l2norm = false;
  runPrefill(pb, DType::F32, false);
}

TEST_CASE("GDN prefill: K-first pools and prefix-caching checkpoints on the simulator", "[gdn][sim][pool]") {
  Problem pb;
  pb.name = "prefill K-first K=64 V=128 varlen f32 pool";
  pb.dt = DType::BF16;
  pb.offsets = {0, 5, 150, 300};
  pb.T = 300;
  pb.Hv = 2;
  pb.K = 64;
  pb.V = 128;
  runPrefill(pb, DType::F32, false, true);
  pb.name = "prefill K-first split, checkpoints every 64";
  pb.l2norm = true;
  runPrefill(pb, DType::BF16, true, true, 64);
  pb.name = "prefill V-first varlen, checkpoints every 128";
  pb.K = 128;
  pb.V = 64;
  pb.l2norm = false;
  runPrefill(pb, DType::F32, false, false, 128);
  pb.name = "prefill V-first B=2 T=200 split, checkpoints every 64";
  pb.offsets.clear();
  pb.B = 2;
  pb.T = 200;
  pb.K = pb.V = 64;
  runPrefill(pb, DType::F32, true, false, 64);
  // V = 256: the fused kernel's 128-wide slices (the model's or forced).
  pb.name = "prefill V=256 K=128 split, checkpoints every 64";
  pb.B = 1;
  pb.T = 150;
  pb.K = 128;
  pb.V = 256;
  runPrefill(pb, DType::BF16, true, false, 64);
  setenv("QLA_GDN_FUSED_BV", "64", 1);
  pb.name = "prefill V=256 K=64 K-first, 64-wide slices";
  pb.K = 64;
  pb.offsets = {0, 90, 150};
  runPrefill(pb, DType::F32, false, true);
  unsetenv("QLA_GDN_FUSED_BV");
  // In place (the last sequence's final slot is its start slot) with a
  // split, the blocks run last first: the last segment writes the slot
  // before segment 0 would read it (segment 0 reads pass 1's copy).
  setenv("QLA_SIM_BLOCK_ORDER", "reverse", 1);
  pb.name = "prefill in place, split, blocks in reverse";
  pb.V = 64;
  pb.offsets = {0, 5, 150, 300};
  pb.T = 300;
  runPrefill(pb, DType::F32, true);
  unsetenv("QLA_SIM_BLOCK_ORDER");
  // Slots past the pool (start, final and checkpoint slots) as none.
  pb.name = "prefill slots past the pool, split, checkpoints";
  pb.V = 64;
  pb.offsets = {0, 5, 150, 300};
  pb.T = 300;
  pb.pastPool = true;
  runPrefill(pb, DType::F32, true, false, 64);
}

TEST_CASE("GDN decode and verify over a state pool on the simulator", "[gdn][sim][recurrent]") {
  Problem pb;
  pb.name = "verify N=3 T=3 GVA K=V=64 f32 pool";
  pb.B = 3;
  pb.T = 3;
  pb.Hqk = 1;
  pb.Hv = 2;
  pb.K = pb.V = 64;
  pb.dt = DType::BF16;
  runRecurrent(pb, DType::F32);
  pb.name = "decode N=2 T=1 K=V=128 gate beta-sigmoid bf16 pool";
  pb.B = 2;
  pb.T = 1;
  pb.Hv = 1;
  pb.K = pb.V = 128;
  pb.gate = true;
  pb.betaAct = 1;
  runRecurrent(pb, DType::BF16);
  // The same with a whole head per CTA (the default is 64-row slices).
  setenv("QLA_GDN_DECODE_BV", "128", 1);
  pb.name = "decode N=2 T=1 K=V=128 gate, whole heads (BV=128)";
  runRecurrent(pb, DType::BF16);
  CHECK(qla::gdn::recurrentSliceOf(128) == 128);
  qla::gdn::RecurrentConfig rc;  // bv 0: as recurrent() picks it, so warmupRecurrent(rc) compiles that kernel
  CHECK(qla::gdn::recurrentKernelSpec(rc).defines.count("BV") == 0);
  unsetenv("QLA_GDN_DECODE_BV");
  CHECK(qla::gdn::recurrentKernelSpec(rc).defines.at("BV") == "64");
  setenv("QLA_GDN_DECODE_BV", "32", 1);
  CHECK_THROWS_WITH(qla::gdn::recurrentSliceOf(128),
                    Catch::Contains("QLA_GDN_DECODE_BV=32: 64 (64-row slices of the state) or 128 (whole heads up to V = 128)"));
  unsetenv("QLA_GDN_DECODE_BV");
  CHECK(qla::gdn::recurrentSliceOf(128) == 64);
  CHECK(qla::gdn::recurrentSliceOf(64) == 64);
  pb.name = "verify N=2 T=2 K=64 V=128 K-first f32 pool";
  pb.T = 2;
  pb.K = 64;
  pb.gate = false;
  pb.betaAct = 0;
  runRecurrent(pb, DType::F32, true);
  // V = 256: four 64-row slices of the state (two 128-row ones with
  // QLA_GDN_DECODE_BV=128).
  pb.name = "verify N=2 T=2 K=128 V=256 bf16 pool";
  pb.K = 128;
  pb.V = 256;
  runRecurrent(pb, DType::BF16);
  setenv("QLA_GDN_DECODE_BV", "128", 1);
  CHECK(qla::gdn::recurrentSliceOf(256) == 128);
  pb.name = "decode N=2 T=1 K=64 V=256 f32 pool, BV=128";
  pb.T = 1;
  pb.K = 64;
  runRecurrent(pb, DType::F32);
  unsetenv("QLA_GDN_DECODE_BV");
  pb.name = "verify N=2 T=2 K=256 V=128 gate bf16 pool";
  pb.T = 2;
  pb.K = 256;
  pb.V = 128;
  pb.gate = true;
  runRecurrent(pb, DType::BF16);
  // Slots past the pool read a zero state and store nothing (every other
  // slot checked untouched).
  pb.name = "verify N=3 T=2 K=V=64 slots past the pool";
  pb.B = 3;
  pb.K = pb.V = 64;
  pb.gate = false;
  pb.pastPool = true;
  runRecurrent(pb, DType::F32);
}
