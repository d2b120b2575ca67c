// The GDN forward operator on a GPU against the recurrence in float64 on the
// CPU (GDN.md's correctness bar: rms(out - ref) / rms(ref) <= 0.005 for o and
// the final state, fresh random inputs every run, outputs poisoned with NaN
// before the call); CUDA graph capture and replay; device-side argument
// errors (host pointers, tensors past their allocation) leave the outputs
// untouched. Skips with a WARN when no GPU is present.
//
// Device memory goes through the driver API (dlopen'ed, like the runtime):
// the test links no CUDA runtime.
#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gdn_test_util.h"

using namespace gdntest;

namespace {

//===----------------------------------------------------------------------===//
// Driver access
//===----------------------------------------------------------------------===//

struct Cu {
  bool ok = false;
  std::string why;
#define QLA_T(name) decltype(&::name) name = nullptr;
  QLA_T(cuDeviceGet)
  QLA_T(cuDevicePrimaryCtxRetain)
  QLA_T(cuCtxSetCurrent)
  QLA_T(cuCtxSynchronize)
  QLA_T(cuMemAlloc)
  QLA_T(cuMemFree)
  QLA_T(cuMemAllocHost)
  QLA_T(cuMemFreeHost)
  QLA_T(cuMemcpyHtoD)
  QLA_T(cuMemcpyDtoH)
  QLA_T(cuMemsetD8)
  QLA_T(cuStreamCreate)
  QLA_T(cuStreamDestroy)
  QLA_T(cuStreamSynchronize)
  QLA_T(cuStreamBeginCapture)
  QLA_T(cuStreamEndCapture)
  QLA_T(cuGraphInstantiateWithFlags)
  QLA_T(cuGraphLaunch)
  QLA_T(cuGraphExecDestroy)
  QLA_T(cuGraphDestroy)
  QLA_T(cuGetErrorName)
#undef QLA_T
};

const Cu &cu() {
  static const Cu c = [] {
    Cu c;
    if (!qla::rt::gpuAvailable(&c.why)) return c;
    void *lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    bool ok = lib != nullptr;
    auto get = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(lib ? ::dlsym(lib, name) : nullptr);
      if (!fn && ok) {
        ok = false;
        c.why = std::string("libcuda.so.1 has no ") + name;
      }
    };
    get(c.cuDeviceGet, "cuDeviceGet");
    get(c.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    get(c.cuCtxSetCurrent, "cuCtxSetCurrent");
    get(c.cuCtxSynchronize, "cuCtxSynchronize");
    get(c.cuMemAlloc, "cuMemAlloc_v2");
    get(c.cuMemFree, "cuMemFree_v2");
    get(c.cuMemAllocHost, "cuMemAllocHost_v2");
    get(c.cuMemFreeHost, "cuMemFreeHost");
    get(c.cuMemcpyHtoD, "cuMemcpyHtoD_v2");
    get(c.cuMemcpyDtoH, "cuMemcpyDtoH_v2");
    get(c.cuMemsetD8, "cuMemsetD8_v2");
    get(c.cuStreamCreate, "cuStreamCreate");
    get(c.cuStreamDestroy, "cuStreamDestroy_v2");
    get(c.cuStreamSynchronize, "cuStreamSynchronize");
    get(c.cuStreamBeginCapture, "cuStreamBeginCapture_v2");
    get(c.cuStreamEndCapture, "cuStreamEndCapture");
    get(c.cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
    get(c.cuGraphLaunch, "cuGraphLaunch");
    get(c.cuGraphExecDestroy, "cuGraphExecDestroy");
    get(c.cuGraphDestroy, "cuGraphDestroy");
    get(c.cuGetErrorName, "cuGetErrorName");
    if (!ok) return c;
    CUdevice dev;
    CUcontext ctx;
    if (c.cuDeviceGet(&dev, 0) != CUDA_SUCCESS || c.cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
        c.cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
      c.why = "cannot make device 0's primary context current";
      return c;
    }
    c.ok = true;
    return c;
  }();
  return c;
}

bool haveGpu() {
  if (cu().ok) {
    // Each Catch2 test case may run on the main thread only, but be explicit.
    return true;
  }
  WARN("no GPU: " << cu().why << ": skipping");
  return false;
}

void ck(CUresult r, const char *what) {
  if (r == CUDA_SUCCESS) return;
  const char *n = nullptr;
  cu().cuGetErrorName(r, &n);
  FAIL(what << " failed: " << (n ? n : "?"));
}

struct DevBuf {
  CUdeviceptr p = 0;
  size_t n = 0;
  explicit DevBuf(size_t bytes) : n(bytes) { ck(cu().cuMemAlloc(&p, std::max<size_t>(bytes, 1)), "cuMemAlloc"); }
  ~DevBuf() {
    if (p) cu().cuMemFree(p);
  }
  DevBuf(const DevBuf &) = delete;
  DevBuf &operator=(const DevBuf &) = delete;
  void *ptr() const { return reinterpret_cast<void *>(p); }
  void upload(const void *src, size_t bytes) { ck(cu().cuMemcpyHtoD(p, src, bytes), "cuMemcpyHtoD"); }
  void download(void *dst, size_t bytes) const { ck(cu().cuMemcpyDtoH(dst, p, bytes), "cuMemcpyDtoH"); }
  void poison() { ck(cu().cuMemsetD8(p, 0xFF, n), "cuMemsetD8"); }  // NaN in bf16, f16 and f32
};

//===----------------------------------------------------------------------===//
// Host data
//===----------------------------------------------------------------------===//

uint16_t toBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  x += 0x7FFF + ((x >> 16) & 1);
  return uint16_t(x >> 16);
}
float fromBf16(uint16_t h) {
  uint32_t x = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
uint16_t toF16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000, mant = x & 0x7FFFFF;
  int e = int((x >> 23) & 0xFF);
  if (e == 0xFF) return uint16_t(sign | 0x7C00 | (mant ? 0x200 : 0));
  int exp = e - 127 + 15;
  if (exp >= 31) return uint16_t(sign | 0x7C00);
  if (exp <= 0) {
    if (exp < -10) return uint16_t(sign);
    mant |= 0x800000;
    int shift = 14 - exp;
    uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return uint16_t(sign | h);
  }
  uint32_t h = (uint32_t(exp) << 10) | (mant >> 13), rem = mant & 0x1FFF;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
  return uint16_t(sign | h);
}
float fromF16(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1F, mant = h & 0x3FF, x;
  if (exp == 0) {
    float f = std::ldexp(float(mant), -24);
    return sign ? -f : f;
  }
  if (exp == 31) x = sign | 0x7F800000 | (mant << 13);
  else x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// A half-precision host array and its exact float values.
struct Half {
  DType dt;
  std::vector<uint16_t> bits;
  std::vector<float> val;
  Half(DType d, const std::vector<float> &x) : dt(d), bits(x.size()), val(x.size()) {
    for (size_t i = 0; i < x.size(); ++i) {
      bits[i] = d == DType::BF16 ? toBf16(x[i]) : toF16(x[i]);
      val[i] = d == DType::BF16 ? fromBf16(bits[i]) : fromF16(bits[i]);
    }
  }
};

std::vector<float> halfToFloat(DType dt, const std::vector<uint16_t> &b) {
  std::vector<float> f(b.size());
  for (size_t i = 0; i < b.size(); ++i) f[i] = dt == DType::BF16 ? fromBf16(b[i]) : fromF16(b[i]);
  return f;
}

double relRms(const std::vector<float> &out, const std::vector<double> &ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double d = double(out[i]) - ref[i];
    if (std::isnan(out[i])) d = 1e300;  // an element never written
    num += d * d;
    den += ref[i] * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

struct Problem {
  const char *name;
  Shape s;
  std::vector<int64_t> offsets;  // varlen when non-empty (s.B = 1, s.T = offsets.back())
  DType cuDtype = DType::I32;
  bool harsh = false;            // g = -a softplus(0.5 randn + 1), a per head in [0, 16]
  bool l2norm = false;
  bool h0 = false, ht = false;
  bool betaHalf = false;         // beta in the input dtype
  bool fusedQkv = false;         // q, k, v as strided views of one [B, T, ...] buffer
  double scale = std::nan("");
};

struct Inputs {
  std::vector<float> q, k, v, g, beta, h0;  // exact values the kernel sees (after rounding)
};

// The recurrence (GDN.md) in float64, per sequence and v-head.
void reference(const Problem &pb, const Inputs &in, std::vector<double> &o, std::vector<double> &ht) {
  const Shape &s = pb.s;
  const int64_t B = s.B, T = s.T, Hqk = s.Hqk, Hv = s.Hv, K = s.K, V = s.V;
  const int64_t N = pb.offsets.empty() ? B : int64_t(pb.offsets.size()) - 1;
  const double scale = std::isnan(pb.scale) ? 1.0 / std::sqrt(double(K)) : pb.scale;
  o.assign(size_t(B * T * Hv * V), 0.0);
  ht.assign(size_t(N * Hv * K * V), 0.0);
  std::vector<double> S(static_cast<size_t>(K * V)), qv(static_cast<size_t>(K)), kv(static_cast<size_t>(K)),
      u(static_cast<size_t>(V));
  for (int64_t n = 0; n < N; ++n) {
    const int64_t b = pb.offsets.empty() ? n : 0;
    const int64_t t0 = pb.offsets.empty() ? 0 : pb.offsets[size_t(n)];
    const int64_t t1 = pb.offsets.empty() ? T : pb.offsets[size_t(n) + 1];
    for (int64_t hv = 0; hv < Hv; ++hv) {
      const int64_t hk = hv / (Hv / Hqk);
      for (int64_t i = 0; i < K * V; ++i) S[size_t(i)] = pb.h0 ? in.h0[size_t((n * Hv + hv) * K * V + i)] : 0.0;
      for (int64_t t = t0; t < t1; ++t) {
        const size_t qk = size_t(((b * T + t) * Hqk + hk) * K);
        double nq = 0, nk = 0;
        for (int64_t i = 0; i < K; ++i) {
          qv[size_t(i)] = in.q[qk + size_t(i)];
          kv[size_t(i)] = in.k[qk + size_t(i)];
          nq += qv[size_t(i)] * qv[size_t(i)];
          nk += kv[size_t(i)] * kv[size_t(i)];
        }
        if (pb.l2norm)
          for (int64_t i = 0; i < K; ++i) {
            qv[size_t(i)] /= std::sqrt(nq + 1e-6);
            kv[size_t(i)] /= std::sqrt(nk + 1e-6);
          }
        const size_t gi = size_t((b * T + t) * Hv + hv);
        const double decay = std::exp(double(in.g[gi])), beta = in.beta[gi];
        for (double &x : S) x *= decay;
        const size_t vi = size_t(((b * T + t) * Hv + hv) * V);
        for (int64_t j = 0; j < V; ++j) {
          double ks = 0;
          for (int64_t i = 0; i < K; ++i) ks += S[size_t(i * V + j)] * kv[size_t(i)];
          u[size_t(j)] = beta * (double(in.v[vi + size_t(j)]) - ks);
        }
        for (int64_t i = 0; i < K; ++i)
          for (int64_t j = 0; j < V; ++j) S[size_t(i * V + j)] += kv[size_t(i)] * u[size_t(j)];
        for (int64_t j = 0; j < V; ++j) {
          double acc = 0;
          for (int64_t i = 0; i < K; ++i) acc += S[size_t(i * V + j)] * qv[size_t(i)];
          o[vi + size_t(j)] = scale * acc;
        }
      }
      for (int64_t i = 0; i < K * V; ++i) ht[size_t((n * Hv + hv) * K * V + i)] = S[size_t(i)];
    }
  }
}

struct Device {
  // Separate buffers, or one fused qkv buffer.
  std::unique_ptr<DevBuf> q, k, v, qkv, g, beta, o, h0, ht, cuBuf, ws;
  ForwardParams p;
  size_t oBytes = 0, htBytes = 0;
};

std::mt19937_64 &rng() {
  static std::mt19937_64 r = [] {
    uint64_t seed = std::random_device{}();
    if (const char *e = std::getenv("QLA_GDN_TEST_SEED")) seed = std::strtoull(e, nullptr, 10);
    std::printf("gdn gpu tests: seed %llu (QLA_GDN_TEST_SEED to repeat)\n", (unsigned long long)seed);
    return std::mt19937_64(seed);
  }();
  return r;
}

void makeInputs(const Problem &pb, Inputs &in, Half *&qh, Half *&kh, Half *&vh, std::vector<std::unique_ptr<Half>> &keep) {
  const Shape &s = pb.s;
  std::normal_distribution<float> nd(0.f, 1.f);
  std::uniform_real_distribution<float> ud(0.f, 16.f);
  auto randn = [&](size_t n) {
    std::vector<float> x(n);
    for (float &f : x) f = nd(rng());
    return x;
  };
  const size_t nqk = size_t(s.B * s.T * s.Hqk * s.K), nv = size_t(s.B * s.T * s.Hv * s.V),
               ng = size_t(s.B * s.T * s.Hv);
  std::vector<float> q = randn(nqk), k = randn(nqk);
  if (!pb.l2norm) {  // GDN.md: q, k random then L2-normalized (the kernel normalizes them itself with l2norm)
    for (std::vector<float> *x : {&q, &k})
      for (size_t r = 0; r < nqk; r += size_t(s.K)) {
        double n2 = 0;
        for (int64_t i = 0; i < s.K; ++i) n2 += double((*x)[r + size_t(i)]) * (*x)[r + size_t(i)];
        for (int64_t i = 0; i < s.K; ++i) (*x)[r + size_t(i)] = float((*x)[r + size_t(i)] / std::sqrt(n2));
      }
  }
  keep.push_back(std::make_unique<Half>(s.dt, q));
  qh = keep.back().get();
  keep.push_back(std::make_unique<Half>(s.dt, k));
  kh = keep.back().get();
  keep.push_back(std::make_unique<Half>(s.dt, randn(nv)));
  vh = keep.back().get();
  in.q = qh->val;
  in.k = kh->val;
  in.v = vh->val;

  in.g.resize(ng);
  std::vector<float> a(size_t(s.Hv));
  for (int64_t h = 0; h < s.Hv; ++h) a[size_t(h)] = h == 0 ? 0.f : h == 1 ? 16.f : ud(rng());
  for (size_t i = 0; i < ng; ++i) {
    float x = nd(rng());
    if (pb.harsh) {
      float z = 0.5f * x + 1.f;
      float softplus = z > 20 ? z : std::log1p(std::exp(z));
      in.g[i] = -a[i % size_t(s.Hv)] * softplus;
    } else {
      in.g[i] = x < 0 ? x - std::log1p(std::exp(x)) : -std::log1p(std::exp(-x));  // logsigmoid
    }
  }
  in.beta.resize(ng);
  for (size_t i = 0; i < ng; ++i) in.beta[i] = 1.f / (1.f + std::exp(-nd(rng())));
  if (pb.betaHalf) {
    keep.push_back(std::make_unique<Half>(s.dt, in.beta));
    in.beta = keep.back()->val;
  }
  if (pb.h0) {
    const int64_t N = pb.offsets.empty() ? s.B : int64_t(pb.offsets.size()) - 1;
    in.h0 = randn(size_t(N * s.Hv * s.K * s.V));
    for (float &x : in.h0) x *= 0.1f;
  }
}

// Uploads the inputs, allocates and poisons the outputs, fills dev.p.
void setUp(const Problem &pb, Device &dev, Inputs &in, std::vector<std::unique_ptr<Half>> &keep) {
  const Shape &s = pb.s;
  Half *qh, *kh, *vh;
  makeInputs(pb, in, qh, kh, vh, keep);
  const int64_t N = pb.offsets.empty() ? s.B : int64_t(pb.offsets.size()) - 1;
  ForwardParams &p = dev.p;
  p = ForwardParams{};
  const std::vector<int64_t> qs = {s.B, s.T, s.Hqk, s.K}, vs = {s.B, s.T, s.Hv, s.V}, gs = {s.B, s.T, s.Hv},
                             ss = {N, s.Hv, s.K, s.V};
  if (pb.fusedQkv) {
    // [B, T, Hqk*K | Hqk*K | Hv*V] rows.
    const int64_t row = 2 * s.Hqk * s.K + s.Hv * s.V;
    std::vector<uint16_t> host(size_t(s.B * s.T * row));
    for (int64_t bt = 0; bt < s.B * s.T; ++bt) {
      std::memcpy(&host[size_t(bt * row)], &qh->bits[size_t(bt * s.Hqk * s.K)], size_t(s.Hqk * s.K) * 2);
      std::memcpy(&host[size_t(bt * row + s.Hqk * s.K)], &kh->bits[size_t(bt * s.Hqk * s.K)], size_t(s.Hqk * s.K) * 2);
      std::memcpy(&host[size_t(bt * row + 2 * s.Hqk * s.K)], &vh->bits[size_t(bt * s.Hv * s.V)], size_t(s.Hv * s.V) * 2);
    }
    dev.qkv = std::make_unique<DevBuf>(host.size() * 2);
    dev.qkv->upload(host.data(), host.size() * 2);
    char *base = static_cast<char *>(dev.qkv->ptr());
    p.q = {base, s.dt, qs, {s.T * row, row, s.K, 1}};
    p.k = {base + s.Hqk * s.K * 2, s.dt, qs, {s.T * row, row, s.K, 1}};
    p.v = {base + 2 * s.Hqk * s.K * 2, s.dt, vs, {s.T * row, row, s.V, 1}};
  } else {
    dev.q = std::make_unique<DevBuf>(qh->bits.size() * 2);
    dev.q->upload(qh->bits.data(), qh->bits.size() * 2);
    dev.k = std::make_unique<DevBuf>(kh->bits.size() * 2);
    dev.k->upload(kh->bits.data(), kh->bits.size() * 2);
    dev.v = std::make_unique<DevBuf>(vh->bits.size() * 2);
    dev.v->upload(vh->bits.data(), vh->bits.size() * 2);
    p.q = {dev.q->ptr(), s.dt, qs, {}};
    p.k = {dev.k->ptr(), s.dt, qs, {}};
    p.v = {dev.v->ptr(), s.dt, vs, {}};
  }
  dev.g = std::make_unique<DevBuf>(in.g.size() * 4);
  dev.g->upload(in.g.data(), in.g.size() * 4);
  p.g = {dev.g->ptr(), DType::F32, gs, {}};
  if (pb.betaHalf) {
    const Half &bh = *keep.back();
    dev.beta = std::make_unique<DevBuf>(bh.bits.size() * 2);
    dev.beta->upload(bh.bits.data(), bh.bits.size() * 2);
    p.beta = {dev.beta->ptr(), s.dt, gs, {}};
  } else {
    dev.beta = std::make_unique<DevBuf>(in.beta.size() * 4);
    dev.beta->upload(in.beta.data(), in.beta.size() * 4);
    p.beta = {dev.beta->ptr(), DType::F32, gs, {}};
  }
  dev.oBytes = size_t(s.B * s.T * s.Hv * s.V) * 2;
  dev.o = std::make_unique<DevBuf>(dev.oBytes);
  dev.o->poison();
  p.o = {dev.o->ptr(), s.dt, vs, {}};
  dev.htBytes = size_t(N * s.Hv * s.K * s.V) * 4;
  if (pb.h0) {
    dev.h0 = std::make_unique<DevBuf>(dev.htBytes);
    dev.h0->upload(in.h0.data(), dev.htBytes);
    p.initial_state = TensorRef{dev.h0->ptr(), DType::F32, ss, {}};
  }
  if (pb.ht) {
    dev.ht = std::make_unique<DevBuf>(dev.htBytes);
    dev.ht->poison();
    p.final_state = TensorRef{dev.ht->ptr(), DType::F32, ss, {}};
  }
  if (!pb.offsets.empty()) {
    const size_t n = pb.offsets.size();
    if (pb.cuDtype == DType::I64) {
      dev.cuBuf = std::make_unique<DevBuf>(n * 8);
      dev.cuBuf->upload(pb.offsets.data(), n * 8);
    } else {
      std::vector<int32_t> c32(pb.offsets.begin(), pb.offsets.end());
      dev.cuBuf = std::make_unique<DevBuf>(n * 4);
      dev.cuBuf->upload(c32.data(), n * 4);
    }
    p.cu_seqlens = TensorRef{dev.cuBuf->ptr(), pb.cuDtype, {int64_t(n)}, {}};
    p.cu_seqlens_host = pb.offsets.data();
  }
  p.use_qk_l2norm = pb.l2norm;
  p.scale = pb.scale;
  dev.ws = std::make_unique<DevBuf>(qla::gdn::forwardWorkspaceBytes(p));
  dev.ws->poison();
}

void checkResults(const Problem &pb, const Device &dev, const Inputs &in, const char *how) {
  std::vector<double> oRef, htRef;
  reference(pb, in, oRef, htRef);
  std::vector<uint16_t> ob(dev.oBytes / 2);
  dev.o->download(ob.data(), dev.oBytes);
  double eo = relRms(halfToFloat(pb.s.dt, ob), oRef);
  double eh = -1;
  if (pb.ht) {
    std::vector<float> hb(dev.htBytes / 4);
    dev.ht->download(hb.data(), dev.htBytes);
    eh = relRms(hb, htRef);
  }
  std::printf("  gdn %-44s %-8s o %.5f  final state %s\n", pb.name, how, eo,
              pb.ht ? std::to_string(eh).substr(0, 7).c_str() : "-");
  INFO(pb.name << " (" << how << ")");
  CHECK(eo <= 0.005);
  if (pb.ht) CHECK(eh <= 0.005);
}

Shape shp(int64_t B, int64_t T, int64_t Hqk, int64_t Hv, int64_t K, int64_t V, DType dt = DType::BF16) {
  Shape s;
  s.B = B, s.T = T, s.Hqk = Hqk, s.Hv = Hv, s.K = K, s.V = V, s.dt = dt;
  return s;
}

std::vector<Problem> problems() {
  auto varlen = [](Problem p, std::vector<int64_t> lens) {
    p.offsets = {0};
    for (int64_t l : lens) p.offsets.push_back(p.offsets.back() + l);
    p.s.B = 1;
    p.s.T = p.offsets.back();
    return p;
  };
  std::vector<Problem> v;
  Problem p;
  p = {"T=1, B=2, GVA 2, h0+ht", shp(2, 1, 2, 4, 128, 128)};
  p.h0 = p.ht = true;
  v.push_back(p);
  p = {"T=63", shp(1, 63, 2, 2, 128, 128)};
  v.push_back(p);
  p = {"T=64, ht", shp(1, 64, 1, 2, 128, 128)};
  p.ht = true;
  v.push_back(p);
  p = {"T=65, B=2, ht", shp(2, 65, 2, 2, 128, 128)};
  p.ht = true;
  v.push_back(p);
  p = {"T=333, GVA 3, harsh gates, l2norm, h0+ht", shp(1, 333, 1, 3, 128, 128)};
  p.harsh = p.l2norm = p.h0 = p.ht = true;
  v.push_back(p);
  p = {"T=1000, K=64 V=128, harsh, ht, scale 0.3", shp(1, 1000, 1, 2, 64, 128)};
  p.harsh = p.ht = true;
  p.scale = 0.3;
  v.push_back(p);
  p = {"T=4096, K=128 V=64, GVA 4, ht", shp(1, 4096, 1, 4, 128, 64)};
  p.ht = true;
  v.push_back(p);
  p = {"f16 K=V=64 B=2 T=100, beta f16, h0+ht", shp(2, 100, 2, 4, 64, 64, DType::F16)};
  p.betaHalf = p.h0 = p.ht = true;
  v.push_back(p);
  p = {"fused qkv views, T=200, GVA 2", shp(2, 200, 2, 4, 128, 128)};
  p.fusedQkv = p.ht = true;
  v.push_back(p);
  p = varlen({"varlen [1,15,64,100,411,1500] i32, GVA 4, h0+ht", shp(1, 0, 1, 4, 128, 128)},
             {1, 15, 64, 100, 411, 1500});
  p.h0 = p.ht = true;
  v.push_back(p);
  p = varlen({"varlen [64,1,129,0,70] i64, harsh, beta bf16, ht", shp(1, 0, 2, 4, 128, 128)}, {64, 1, 129, 0, 70});
  p.cuDtype = DType::I64;
  p.harsh = p.betaHalf = p.ht = true;
  v.push_back(p);
  p = varlen({"varlen f16 K=V=64 l2norm [333, 65]", shp(1, 0, 2, 2, 64, 64, DType::F16)}, {333, 65});
  p.l2norm = p.ht = true;
  v.push_back(p);
  return v;
}

std::string anyErrorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const std::exception &e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST_CASE("GDN forward on the GPU matches the float64 recurrence", "[gdn][gpu]") {
  if (!haveGpu()) return;
  for (const Problem &pb : problems()) {
    Device dev;
    Inputs in;
    std::vector<std::unique_ptr<Half>> keep;
    setUp(pb, dev, in, keep);
    try {
      qla::gdn::forward(dev.p, dev.ws->ptr(), dev.ws->n);
    } catch (const std::exception &e) {
      FAIL(pb.name << ": " << e.what());
    }
    ck(cu().cuCtxSynchronize(), "cuCtxSynchronize");
    checkResults(pb, dev, in, "stream");
  }
}

TEST_CASE("GDN forward under CUDA graph capture", "[gdn][gpu]") {
  if (!haveGpu()) return;
  Problem pb = problems()[9];  // varlen, h0 + ht
  pb.name = "varlen, h0+ht";
  Device dev;
  Inputs in;
  std::vector<std::unique_ptr<Half>> keep;
  setUp(pb, dev, in, keep);
  qla::gdn::warmup(qla::gdn::forwardConfig(dev.p));  // compile and load before capturing
  CUstream stream;
  ck(cu().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  dev.p.stream = stream;
  dev.p.cu_seqlens_host = nullptr;  // as a caller would while capturing
  ck(cu().cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), "cuStreamBeginCapture");
  std::string err = anyErrorOf([&] { qla::gdn::forward(dev.p, dev.ws->ptr(), dev.ws->n); });
  CUgraph graph = nullptr;
  ck(cu().cuStreamEndCapture(stream, &graph), "cuStreamEndCapture");
  REQUIRE(err == "<no error>");
  CUgraphExec exec;
  ck(cu().cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiate");
  for (int rep = 0; rep < 2; ++rep) {
    dev.o->poison();
    if (dev.ht) dev.ht->poison();
    ck(cu().cuGraphLaunch(exec, stream), "cuGraphLaunch");
    ck(cu().cuStreamSynchronize(stream), "cuStreamSynchronize");
    checkResults(pb, dev, in, rep ? "replay 2" : "replay 1");
  }
  cu().cuGraphExecDestroy(exec);
  cu().cuGraphDestroy(graph);
  cu().cuStreamDestroy(stream);
}

TEST_CASE("GDN forward: device-side argument errors leave the outputs untouched", "[gdn][gpu]") {
  if (!haveGpu()) return;
  Problem pb = {"errors", shp(2, 100, 2, 4, 128, 128)};
  pb.ht = true;
  Device dev;
  Inputs in;
  std::vector<std::unique_ptr<Half>> keep;
  setUp(pb, dev, in, keep);
  const std::string P = "chunk_gated_delta_rule: ";
  auto untouched = [&] {
    ck(cu().cuCtxSynchronize(), "cuCtxSynchronize");
    std::vector<uint8_t> ob(dev.oBytes), hb(dev.htBytes);
    dev.o->download(ob.data(), ob.size());
    dev.ht->download(hb.data(), hb.size());
    for (uint8_t b : ob)
      if (b != 0xFF) return false;
    for (uint8_t b : hb)
      if (b != 0xFF) return false;
    return true;
  };

  SECTION("host memory") {
    std::vector<uint16_t> host(size_t(2 * 100 * 2 * 128));
    ForwardParams p = dev.p;
    p.q.data = host.data();
    CHECK(anyErrorOf([&] { qla::gdn::forward(p, dev.ws->ptr(), dev.ws->n); }) ==
          P + "q is not a CUDA device pointer (" + [&] {
            char b[32];
            std::snprintf(b, sizeof b, "%p", p.q.data);
            return std::string(b);
          }() + ")");
    void *pinned = nullptr;
    ck(cu().cuMemAllocHost(&pinned, 2 * 100 * 4 * 4), "cuMemAllocHost");
    p = dev.p;
    p.g.data = pinned;
    std::string e = anyErrorOf([&] { qla::gdn::forward(p, dev.ws->ptr(), dev.ws->n); });
    CHECK(e.find(P + "g is not a CUDA device pointer (") == 0);
    CHECK(e.find("is pinned host memory)") != std::string::npos);
    cu().cuMemFreeHost(pinned);
    CHECK(untouched());
  }
  SECTION("a tensor past the end of its allocation") {
    DevBuf small(1024);
    ForwardParams p = dev.p;
    p.v.data = small.ptr();
    std::string e = anyErrorOf([&] { qla::gdn::forward(p, dev.ws->ptr(), dev.ws->n); });
    INFO(e);
    CHECK(e.find(P + "v does not fit in its allocation: shape [2, 100, 4, 128], strides [51200, 512, 128, 1] "
                     "needs 204800 bytes from ") == 0);
    CHECK(untouched());
  }
  SECTION("bad cu_seqlens host copy") {
    Problem vp = problems()[9];
    Device vd;
    Inputs vin;
    std::vector<std::unique_ptr<Half>> vkeep;
    setUp(vp, vd, vin, vkeep);
    std::vector<int64_t> bad = vp.offsets;
    std::swap(bad[2], bad[3]);
    vd.p.cu_seqlens_host = bad.data();
    CHECK(anyErrorOf([&] { qla::gdn::forward(vd.p, vd.ws->ptr(), vd.ws->n); }).find(P + "cu_seqlens must be non-decreasing") == 0);
    ck(cu().cuCtxSynchronize(), "cuCtxSynchronize");
    std::vector<uint8_t> ob(vd.oBytes);
    vd.o->download(ob.data(), ob.size());
    bool allPoison = true;
    for (uint8_t b : ob) allPoison = allPoison && b == 0xFF;
    CHECK(allPoison);
  }
}

TEST_CASE("GDN GPU test helpers: half conversions and the reference", "[gdn]") {
  CHECK(toBf16(1.0f) == 0x3F80);
  CHECK(toBf16(-2.5f) == 0xC020);
  CHECK(fromBf16(0x3F80) == 1.0f);
  CHECK(toF16(1.0f) == 0x3C00);
  CHECK(toF16(-2.5f) == 0xC100);
  CHECK(toF16(65504.f) == 0x7BFF);
  CHECK(toF16(1e-7f) == 0x0002);
  CHECK(fromF16(0x0002) == std::ldexp(1.0f, -23));
  CHECK(fromF16(0xC100) == -2.5f);
  std::mt19937 r(1);
  std::normal_distribution<float> nd;
  for (int i = 0; i < 10000; ++i) {
    float x = nd(r) * 10;
    CHECK(std::fabs(fromF16(toF16(x)) - x) <= std::fabs(x) * (1.0f / 2048) + 1e-7f);
    CHECK(std::fabs(fromBf16(toBf16(x)) - x) <= std::fabs(x) * (1.0f / 256));
  }

  // One token, no initial state: S = k (beta v)^T, o = scale (k.q) beta v;
  // two sequences of a varlen batch, GVA 2.
  Problem pb = {"ref", shp(1, 2, 1, 2, 64, 64)};
  pb.offsets = {0, 1, 2};
  pb.ht = true;
  Inputs in;
  std::normal_distribution<float> n2;
  auto fill = [&](size_t n) {
    std::vector<float> x(n);
    for (float &f : x) f = n2(r);
    return x;
  };
  in.q = fill(2 * 64);
  in.k = fill(2 * 64);
  in.v = fill(2 * 2 * 64);
  in.g = {-0.5f, -1.f, -0.25f, -2.f};
  in.beta = {0.3f, 0.6f, 0.9f, 0.1f};
  std::vector<double> o, ht;
  reference(pb, in, o, ht);
  const double scale = 1.0 / 8;
  for (int t = 0; t < 2; ++t)
    for (int hv = 0; hv < 2; ++hv) {
      double kq = 0;
      for (int i = 0; i < 64; ++i) kq += double(in.k[size_t(t * 64 + i)]) * in.q[size_t(t * 64 + i)];
      for (int j = 0; j < 64; ++j) {
        double bv = double(in.beta[size_t(t * 2 + hv)]) * in.v[size_t((t * 2 + hv) * 64 + j)];
        CHECK(o[size_t((t * 2 + hv) * 64 + j)] == Approx(scale * kq * bv).epsilon(1e-9));
        CHECK(ht[size_t(((t * 2 + hv) * 64 + 5) * 64 + j)] == Approx(in.k[size_t(t * 64 + 5)] * bv).epsilon(1e-9));
      }
    }
}
