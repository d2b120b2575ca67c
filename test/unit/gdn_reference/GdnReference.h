// Float64 CPU reference of the Gated Delta Network forward (the recurrence of
// the design's GDN.md, token by token). It is the ground truth of the GDN unit
// and GPU tests: slow on purpose, written to be read, not to be fast.
//
// Per sequence n and v-head j (q/k head j / (Hv / Hqk)), S (K x V) starts at
// the initial state or 0, and for every token t:
//   S   = e^{g_t} S
//   u   = beta_t (v_t - S^T k_t)
//   S  += k_t u^T
//   o_t = scale S^T q_t
// The final state is S after the sequence's last token.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace qla::gdn::reference {

// Every array is dense row-major in the layout of the operator's contract.
// Pointers are borrowed; nothing is copied until forward() runs.
struct Inputs {
  int B = 1;    // batch; must be 1 when cuSeqlens is given
  int T = 0;    // tokens per batch row (the packed length with cuSeqlens)
  int Hqk = 1;  // q/k heads
  int Hv = 1;   // v heads; Hv % Hqk == 0
  int K = 0;    // key dim
  int V = 0;    // value dim
  const double* q = nullptr;     // [B, T, Hqk, K]
  const double* k = nullptr;     // [B, T, Hqk, K]
  const double* v = nullptr;     // [B, T, Hv, V]
  const double* g = nullptr;     // [B, T, Hv]  log-space decay, natural log
  const double* beta = nullptr;  // [B, T, Hv]
  std::optional<double> scale;   // default K^-0.5
  const double* initialState = nullptr;  // [N, Hv, K, V] or null (zero state)
  // Sequence offsets [N + 1], 0 = cu[0] <= cu[1] <= ... <= cu[N] = T; null:
  // N = B sequences of T tokens each.
  const std::int64_t* cuSeqlens = nullptr;
  int numCuSeqlens = 0;  // N + 1 entries in cuSeqlens
  bool l2normQK = false; // q, k <- x / sqrt(sum x^2 + 1e-6) first
};

struct Outputs {
  int N = 0;                      // number of sequences
  std::vector<double> o;          // [B, T, Hv, V]
  std::vector<double> finalState; // [N, Hv, K, V]
};

// Runs the recurrence. Throws std::invalid_argument with a message naming the
// problem for inconsistent inputs (bad dims, Hv % Hqk != 0, B != 1 with
// cuSeqlens, decreasing offsets, a missing array).
Outputs forward(const Inputs& in);

// Number of sequences the inputs describe (B, or numCuSeqlens - 1).
int numSequences(const Inputs& in);

// rms(out - ref) / rms(ref); 0 when both are all zero; +inf when only ref is
// zero; NaN if out holds a NaN.
double rmsRelativeError(const std::vector<double>& out, const std::vector<double>& ref);

// Random inputs as the design asks for them, owned. Deterministic in the seed.
enum class GateKind {
  LogSigmoid,  // g = logsigmoid(randn)
  Harsh,       // g = -a_h softplus(0.5 randn + 1), a_h spread over [0, 16], head 0 gets a = 0
};

struct RandomProblem {
  int B = 1, T = 1, Hqk = 1, Hv = 1, K = 64, V = 64;
  std::vector<std::int64_t> seqLens;  // non-empty: varlen (B must be 1, T = sum)
  GateKind gates = GateKind::LogSigmoid;
  bool initialState = false;
  bool normalizeQK = true;  // L2-normalize q, k when generating them
};

struct OwnedInputs {
  std::vector<double> q, k, v, g, beta, h0;
  std::vector<std::int64_t> cu;
  Inputs view;  // points into the vectors above; do not copy an OwnedInputs
  OwnedInputs() = default;
  OwnedInputs(const OwnedInputs&) = delete;
  OwnedInputs& operator=(const OwnedInputs&) = delete;
};

// Fills `out` (vectors and view). T is taken from seqLens when those are set.
void makeRandomInputs(const RandomProblem& p, std::uint64_t seed, OwnedInputs& out);

}  // namespace qla::gdn::reference
