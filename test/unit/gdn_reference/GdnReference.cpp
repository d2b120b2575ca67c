#include "GdnReference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>

namespace qla::gdn::reference {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok)
    throw std::invalid_argument("gdn reference: " + what);
}

// x / sqrt(sum x^2 + 1e-6), the normalization of use_qk_l2norm_in_kernel.
void l2normalize(const double* x, int n, double* out) {
  double ss = 0;
  for (int i = 0; i < n; ++i)
    ss += x[i] * x[i];
  const double r = 1.0 / std::sqrt(ss + 1e-6);
  for (int i = 0; i < n; ++i)
    out[i] = x[i] * r;
}

constexpr double kTwoPi = 6.283185307179586476925286766559;

// Standard normal from two uniforms (Box-Muller), so that the inputs do not
// depend on the standard library's normal_distribution.
class Normal {
public:
  explicit Normal(std::uint64_t seed) : rng_(seed) {}
  double operator()() {
    if (haveSpare_) {
      haveSpare_ = false;
      return spare_;
    }
    double u1 = 0;
    while (u1 <= 0)
      u1 = uniform(rng_);
    const double u2 = uniform(rng_);
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(kTwoPi * u2);
    haveSpare_ = true;
    return r * std::cos(kTwoPi * u2);
  }

private:
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> uniform{0.0, 1.0};
  double spare_ = 0;
  bool haveSpare_ = false;
};

double logSigmoid(double x) { return x >= 0 ? -std::log1p(std::exp(-x)) : x - std::log1p(std::exp(x)); }
double softplus(double x) { return x > 30 ? x : std::log1p(std::exp(x)); }
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

}  // namespace

int numSequences(const Inputs& in) { return in.cuSeqlens ? in.numCuSeqlens - 1 : in.B; }

Outputs forward(const Inputs& in) {
  require(in.B >= 1 && in.T >= 0, "B must be >= 1 and T >= 0");
  require(in.Hqk >= 1 && in.Hv >= 1, "head counts must be >= 1");
  require(in.Hv % in.Hqk == 0, "Hv (" + std::to_string(in.Hv) + ") must be a multiple of Hqk (" +
                                   std::to_string(in.Hqk) + ")");
  require(in.K >= 1 && in.V >= 1, "K and V must be >= 1");
  require(in.q && in.k && in.v && in.g && in.beta, "q, k, v, g and beta are required");
  if (in.cuSeqlens) {
    require(in.B == 1, "cu_seqlens requires B = 1, got B = " + std::to_string(in.B));
    require(in.numCuSeqlens >= 2, "cu_seqlens needs at least 2 entries");
    require(in.cuSeqlens[0] == 0, "cu_seqlens[0] must be 0");
    require(in.cuSeqlens[in.numCuSeqlens - 1] == in.T, "cu_seqlens must end at T");
    for (int i = 1; i < in.numCuSeqlens; ++i)
      require(in.cuSeqlens[i] >= in.cuSeqlens[i - 1], "cu_seqlens must be non-decreasing");
  }

  const int B = in.B, T = in.T, Hqk = in.Hqk, Hv = in.Hv, K = in.K, V = in.V;
  const int group = Hv / Hqk;
  const int N = numSequences(in);
  const double scale = in.scale ? *in.scale : 1.0 / std::sqrt(double(K));

  Outputs out;
  out.N = N;
  out.o.assign(std::size_t(B) * T * Hv * V, 0.0);
  out.finalState.assign(std::size_t(N) * Hv * K * V, 0.0);

  std::vector<double> S(std::size_t(K) * V), qn(K), kn(K), u(V);
  for (int n = 0; n < N; ++n) {
    const int b = in.cuSeqlens ? 0 : n;
    const std::int64_t bos = in.cuSeqlens ? in.cuSeqlens[n] : 0;
    const std::int64_t eos = in.cuSeqlens ? in.cuSeqlens[n + 1] : T;
    for (int j = 0; j < Hv; ++j) {
      const int hk = j / group;
      const std::size_t stateOff = (std::size_t(n) * Hv + j) * K * V;
      if (in.initialState)
        for (int i = 0; i < K * V; ++i)
          S[i] = in.initialState[stateOff + i];
      else
        std::fill(S.begin(), S.end(), 0.0);

      for (std::int64_t t = bos; t < eos; ++t) {
        const std::size_t row = std::size_t(b) * T + std::size_t(t);
        const double* qt = in.q + (row * Hqk + hk) * K;
        const double* kt = in.k + (row * Hqk + hk) * K;
        const double* vt = in.v + (row * Hv + j) * V;
        const double gt = in.g[row * Hv + j];
        const double bt = in.beta[row * Hv + j];
        if (in.l2normQK) {
          l2normalize(qt, K, qn.data());
          l2normalize(kt, K, kn.data());
        } else {
          std::copy(qt, qt + K, qn.begin());
          std::copy(kt, kt + K, kn.begin());
        }
        // S = e^g S
        const double decay = std::exp(gt);
        for (double& s : S)
          s *= decay;
        // u = beta (v - S^T k)
        for (int c = 0; c < V; ++c) {
          double acc = 0;
          for (int r = 0; r < K; ++r)
            acc += S[std::size_t(r) * V + c] * kn[r];
          u[c] = bt * (vt[c] - acc);
        }
        // S += k u^T
        for (int r = 0; r < K; ++r)
          for (int c = 0; c < V; ++c)
            S[std::size_t(r) * V + c] += kn[r] * u[c];
        // o = scale S^T q
        double* ot = out.o.data() + (row * Hv + j) * V;
        for (int c = 0; c < V; ++c) {
          double acc = 0;
          for (int r = 0; r < K; ++r)
            acc += S[std::size_t(r) * V + c] * qn[r];
          ot[c] = scale * acc;
        }
      }
      std::copy(S.begin(), S.end(), out.finalState.begin() + std::ptrdiff_t(stateOff));
    }
  }
  return out;
}

double rmsRelativeError(const std::vector<double>& out, const std::vector<double>& ref) {
  require(out.size() == ref.size(), "rmsRelativeError: sizes differ");
  double num = 0, den = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (std::isnan(out[i]))
      return std::numeric_limits<double>::quiet_NaN();
    const double d = out[i] - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  if (den == 0)
    return num == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return std::sqrt(num / den);
}

void makeRandomInputs(const RandomProblem& p, std::uint64_t seed, OwnedInputs& out) {
  Normal randn(seed);
  int B = p.B, T = p.T;
  out.cu.clear();
  if (!p.seqLens.empty()) {
    require(p.B == 1, "makeRandomInputs: seqLens requires B = 1");
    out.cu.push_back(0);
    for (std::int64_t len : p.seqLens) {
      require(len >= 0, "makeRandomInputs: negative sequence length");
      out.cu.push_back(out.cu.back() + len);
    }
    T = int(out.cu.back());
  }
  const int N = out.cu.empty() ? B : int(out.cu.size()) - 1;
  const std::size_t rows = std::size_t(B) * T;

  auto fillQK = [&](std::vector<double>& x) {
    x.resize(rows * p.Hqk * p.K);
    for (double& e : x)
      e = randn();
    if (p.normalizeQK)
      for (std::size_t i = 0; i < rows * p.Hqk; ++i)
        l2normalize(&x[i * p.K], p.K, &x[i * p.K]);
  };
  fillQK(out.q);
  fillQK(out.k);
  out.v.resize(rows * p.Hv * p.V);
  for (double& e : out.v)
    e = randn();

  out.g.resize(rows * p.Hv);
  out.beta.resize(rows * p.Hv);
  for (std::size_t r = 0; r < rows; ++r) {
    for (int h = 0; h < p.Hv; ++h) {
      double gv;
      if (p.gates == GateKind::LogSigmoid) {
        gv = logSigmoid(randn());
      } else {
        // a spread over [0, 16] across the heads, head 0 without any decay.
        const double a = p.Hv == 1 ? 0.0 : 16.0 * h / (p.Hv - 1);
        gv = -a * softplus(0.5 * randn() + 1.0);
      }
      out.g[r * p.Hv + h] = gv;
      out.beta[r * p.Hv + h] = sigmoid(randn());
    }
  }
  out.h0.clear();
  if (p.initialState) {
    out.h0.resize(std::size_t(N) * p.Hv * p.K * p.V);
    for (double& e : out.h0)
      e = randn();
  }

  Inputs& in = out.view;
  in = Inputs{};
  in.B = B;
  in.T = T;
  in.Hqk = p.Hqk;
  in.Hv = p.Hv;
  in.K = p.K;
  in.V = p.V;
  in.q = out.q.data();
  in.k = out.k.data();
  in.v = out.v.data();
  in.g = out.g.data();
  in.beta = out.beta.data();
  in.initialState = p.initialState ? out.h0.data() : nullptr;
  if (!out.cu.empty()) {
    in.cuSeqlens = out.cu.data();
    in.numCuSeqlens = int(out.cu.size());
  }
  in.l2normQK = false;
}

}  // namespace qla::gdn::reference
