// Decode and speculative verify over a state pool (qla/gdn.h,
// RecurrentParams; kernels/gdn/gdn_recurrent.qla).
#include "GdnInternal.h"
#include "qla/kernels/gdn_recurrent.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "qla/op/Device.h"

namespace qla::gdn {
namespace {

constexpr const char *kRecurrentFile = "gdn_recurrent.qla";
constexpr const char *kRecOp = "fused_recurrent_gated_delta_rule: ";

[[noreturn]] void rfail(const std::string &m) { throw Error(kRecOp + m); }

template <class F>
decltype(auto) rguarded(F &&f) {
  return op::rethrowAs<Error>(kRecOp, std::forward<F>(f));
}

void expect(const char *name, const TensorRef &t, const std::vector<DType> &dtypes, const std::string &dtypeText,
            const std::vector<int64_t> &shape, const char *shapeText) {
  bool ok = false;
  for (DType d : dtypes) ok = ok || t.dtype == d;
  if (!ok) rfail(std::string(name) + " has dtype " + dtypeName(t.dtype) + "; expected " + dtypeText);
  op::checkBasic(name, detail::view(t), int(shape.size()), shapeText);
  if (t.shape != shape)
    rfail(std::string(name) + " has shape " + op::dims(t.shape) + "; expected " + shapeText + " = " + op::dims(shape));
}

}  // namespace

// QLA_GDN_DECODE_BV where set (64: 64-row slices; 128: whole heads), else
// 64; never more than V.
int recurrentSliceOf(int V) {
  const char *e = std::getenv("QLA_GDN_DECODE_BV");
  if (e && *e) {
    const std::string v = e;
    if (v == "64") return std::min(64, V);
    if (v == "128") return std::min(128, V);
    rfail("QLA_GDN_DECODE_BV=" + v + ": 64 (64-row slices of the state) or 128 (whole heads up to V = 128)");
  }
  return std::min(64, V);
}

void validateRecurrent(const RecurrentParams &p) {
  rguarded([&] {
    if (!detail::isHalf(p.q.dtype)) rfail(std::string("q has dtype ") + dtypeName(p.q.dtype) + "; expected bf16 or f16");
    op::checkBasic("q", detail::view(p.q), 4, "[N, T, Hqk, K]");
    op::checkBasic("v", detail::view(p.v), 4, "[N, T, Hv, V]");
    const int64_t N = p.q.shape[0], T = p.q.shape[1], Hqk = p.q.shape[2], K = p.q.shape[3];
    const int64_t Hv = p.v.shape[2], V = p.v.shape[3];
    const DType dt = p.q.dtype;
    const std::string dn = dtypeName(dt);
    expect("k", p.k, {dt}, dn + " (the dtype of q)", {N, T, Hqk, K}, "[N, T, Hqk, K]");
    expect("v", p.v, {dt}, dn + " (the dtype of q)", {N, T, Hv, V}, "[N, T, Hv, V]");
    if (N < 1 || T < 1) rfail("N and T must be at least 1, got q of shape " + op::dims(p.q.shape));
    if (Hqk < 1 || Hv % Hqk != 0) rfail("Hv = " + std::to_string(Hv) + " is not a multiple of Hqk = " + std::to_string(Hqk));
    if (const std::string e = detail::headDimsError(K, V); !e.empty()) rfail(e);
    expect("g", p.g, {DType::F32, dt}, "f32 or " + dn, {N, T, Hv}, "[N, T, Hv]");
    expect("beta", p.beta, {DType::F32, dt}, "f32 or " + dn, {N, T, Hv}, "[N, T, Hv]");
    if (p.beta_activation < 0 || p.beta_activation > 2)
      rfail("beta_activation is " + std::to_string(p.beta_activation) + " (0, 1 or 2)");
    if (p.use_gate) {
      if (!p.A_log) rfail("use_gate needs A_log ([Hv] f32)");
      expect("A_log", *p.A_log, {DType::F32}, "f32", {Hv}, "[Hv]");
      if (p.dt_bias) expect("dt_bias", *p.dt_bias, {DType::F32}, "f32", {Hv}, "[Hv]");
    } else if (p.A_log || p.dt_bias) {
      rfail("A_log and dt_bias are the in-kernel gate's parameters: they need use_gate");
    }
    const char *layout = p.state_pool_k_first ? "[slots, Hv, K, V] (state_pool_k_first)" : "[slots, Hv, V, K]";
    op::checkBasic("state_pool", detail::view(p.state_pool), 4, layout);
    const int64_t S = p.state_pool.shape[0];
    expect("state_pool", p.state_pool, {DType::F32, DType::BF16}, "f32 or bf16",
           p.state_pool_k_first ? std::vector<int64_t>{S, Hv, K, V} : std::vector<int64_t>{S, Hv, V, K}, layout);
    if (S < 1) rfail("state_pool has no slots");
    expect("read_index", p.read_index, {DType::I32}, "i32", {N}, "[N]");
    expect("write_index", p.write_index, {DType::I32}, "i32", {N, T}, "[N, T]");
    expect("o", p.o, {dt}, dn + " (the dtype of q)", {N, T, Hv, V}, "[N, T, Hv, V]");
    if (!std::isnan(p.scale) && !std::isfinite(p.scale)) rfail("scale = " + std::to_string(p.scale) + " is not finite");
    // The indices' host copies, where given (gdn.h): in range, no slot
    // written by two sequences, none that one reads written by another.
    if (p.read_index_host || p.write_index_host) {
      std::vector<detail::SlotUse> uses;
      for (int64_t n = 0; n < N; ++n) {
        if (p.read_index_host)
          uses.push_back({"read_index[" + std::to_string(n) + "]", n, p.read_index_host[n], false});
        if (p.write_index_host)
          for (int64_t t = 0; t < T; ++t)
            uses.push_back({"write_index[" + std::to_string(n) + ", " + std::to_string(t) + "]", n,
                            p.write_index_host[n * T + t], true});
      }
      if (const std::string e = detail::slotsError(S, uses); !e.empty()) rfail(e);
    }
    for (const auto &[name, t] : {std::pair<const char *, const TensorRef *>{"q", &p.q}, {"k", &p.k}, {"v", &p.v},
                                  {"g", &p.g}, {"beta", &p.beta}, {"state_pool", &p.state_pool},
                                  {"read_index", &p.read_index}, {"write_index", &p.write_index}, {"o", &p.o}})
      op::checkLayout(name, detail::view(*t), false);
    op::checkNoSelfOverlap("o", detail::view(p.o));
    op::checkNoSelfOverlap("state_pool", detail::view(p.state_pool));
    std::vector<op::NamedTensor> all = {{"q", detail::view(p.q), false},         {"k", detail::view(p.k), false},
                                        {"v", detail::view(p.v), false},         {"g", detail::view(p.g), false},
                                        {"beta", detail::view(p.beta), false},   {"o", detail::view(p.o), true},
                                        {"state_pool", detail::view(p.state_pool), true},
                                        {"read_index", detail::view(p.read_index), false},
                                        {"write_index", detail::view(p.write_index), false}};
    if (p.A_log) all.push_back({"A_log", detail::view(*p.A_log), false});
    if (p.dt_bias) all.push_back({"dt_bias", detail::view(*p.dt_bias), false});
    op::checkOutputsDisjoint(all);
  });
}

RecurrentConfig recurrentConfig(const RecurrentParams &p) {
  RecurrentConfig c;
  c.dtype = p.q.dtype;
  c.gDtype = p.g.dtype;
  c.betaDtype = p.beta.dtype;
  c.stateDtype = p.state_pool.dtype;
  c.K = int(p.q.shape.size() == 4 ? p.q.shape[3] : 0);
  c.V = int(p.v.shape.size() == 4 ? p.v.shape[3] : 0);
  c.l2norm = p.use_qk_l2norm;
  c.betaActivation = p.beta_activation;
  c.gate = p.use_gate;
  c.gateBias = p.use_gate && p.dt_bias.has_value();
  c.poolKFirst = p.state_pool_k_first;
  c.bv = recurrentSliceOf(c.V);
  return c;
}

std::string RecurrentConfig::str() const {
  std::ostringstream s;
  s << "dtype=" << dtypeName(dtype) << " g=" << dtypeName(gDtype) << " beta=" << dtypeName(betaDtype)
    << " state=" << dtypeName(stateDtype) << " K=" << K << " V=" << V << " l2norm=" << l2norm
    << " beta_activation=" << betaActivation << " gate=" << gate << " dt_bias=" << gateBias;
  if (poolKFirst) s << " pool_k_first=1";
  const int slice = bv ? bv : recurrentSliceOf(V);
  if (slice != V) s << " bv=" << slice;
  return s.str();
}

KernelSpec recurrentKernelSpec(const RecurrentConfig &c) {
  KernelSpec s{kRecurrentFile,
          {{"DT", dtypeName(c.dtype)},
           {"GT", dtypeName(c.gDtype)},
           {"BT", dtypeName(c.betaDtype)},
           {"ST", dtypeName(c.stateDtype)},
           {"DK", std::to_string(c.K)},
           {"DV", std::to_string(c.V)},
           {"L2NORM", c.l2norm ? "1" : "0"},
           {"GATE", c.gate ? "1" : "0"},
           {"HAS_DTB", c.gateBias ? "1" : "0"},
           {"BSIG", std::to_string(c.betaActivation)}}};
  if (c.poolKFirst) s.defines["PKF"] = "1";
  const int bv = c.bv ? c.bv : recurrentSliceOf(c.V);
  if (bv != c.V) {
    if ((bv != 64 && bv != 128) || c.V % bv != 0)
      rfail("the decode kernel's V slice is 64, 128 or V, not " + std::to_string(bv));
    s.defines["BV"] = std::to_string(bv);
  }
  return s;
}

void warmupRecurrent(const RecurrentConfig &c, bool loadOnGpu) {
  rguarded([&] {
    // What validateRecurrent would accept.
    const std::string dn = dtypeName(c.dtype);
    if (!detail::isHalf(c.dtype)) rfail("dtype is " + dn + "; expected bf16 or f16");
    if (const std::string e = detail::headDimsError(c.K, c.V); !e.empty()) rfail(e);
    if (c.gDtype != DType::F32 && c.gDtype != c.dtype) rfail("g's dtype is " + std::string(dtypeName(c.gDtype)) + "; expected f32 or " + dn);
    if (c.betaDtype != DType::F32 && c.betaDtype != c.dtype)
      rfail("beta's dtype is " + std::string(dtypeName(c.betaDtype)) + "; expected f32 or " + dn);
    if (c.stateDtype != DType::F32 && c.stateDtype != DType::BF16)
      rfail("the state pool's dtype is " + std::string(dtypeName(c.stateDtype)) + "; expected f32 or bf16");
    if (c.betaActivation < 0 || c.betaActivation > 2)
      rfail("beta_activation is " + std::to_string(c.betaActivation) + " (0, 1 or 2)");
    if (c.gateBias && !c.gate) rfail("dt_bias is the in-kernel gate's parameter: it needs gate");
    op::KernelSlot &s = detail::registry().slot(detail::opSpec(recurrentKernelSpec(c)));
    detail::registry().warm({&s}, loadOnGpu);
  });
}

void recurrent(const RecurrentParams &p) {
  validateRecurrent(p);
  rguarded([&] {
    const RecurrentConfig c = recurrentConfig(p);
    op::KernelSlot &slot = detail::registry().slot(detail::opSpec(recurrentKernelSpec(c)));
    std::vector<op::NamedTensor> named = {{"q", detail::view(p.q), false},
                                          {"state_pool", detail::view(p.state_pool), true},
                                          {"o", detail::view(p.o), true}};
    CUcontext ctx = op::checkDevice(named, p.state_pool.data, 0);
    const int64_t Hv = p.v.shape[2];
    // Absent gate parameters: never read (GATE = 0, HAS_DTB = 0); g's
    // pointer stands in.
    auto param = [&](const std::optional<TensorRef> &t) {
      return t ? detail::arg(*t) : op::contiguousArg(p.g.data, {Hv});
    };
    kernels::gdn_recurrent::Args r;
    r.Q = detail::arg(p.q), r.Kt = detail::arg(p.k), r.Vt = detail::arg(p.v), r.G = detail::arg(p.g);
    r.Beta = detail::arg(p.beta), r.ALog = param(p.A_log), r.DtB = param(p.dt_bias);
    r.RI = detail::arg(p.read_index), r.WI = detail::arg(p.write_index), r.Pool = detail::arg(p.state_pool);
    r.O = detail::arg(p.o);
    r.scale = std::isnan(p.scale) ? 1.0 / std::sqrt(double(p.q.shape[3])) : p.scale;
    const rt::LaunchArgs a = r.launch(p.stream);
    kernels::gdn_recurrent::check(slot.spec, detail::compiled(slot).info(), detail::kContractDoc);
    op::launchAll(detail::registry(), ctx, {{&slot, &a}});
  });
}

}  // namespace qla::gdn
