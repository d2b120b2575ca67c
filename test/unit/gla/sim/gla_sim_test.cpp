// The simple-GLA forward (kernels/gla/gla_fwd.qla, docs/tutorial.md) run on
// QLA's CPU simulator (QLA_SIM=1) against the float64 recurrence
// (GlaReference.h): o and the final state within 0.005 (rms relative, the
// tutorial's bar), fresh random inputs each run (QLA_GLA_TEST_SEED fixes
// them), outputs poisoned with NaN; dense and varlen, GVA, h0, K != V.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../GlaReference.h"
#include "qla/gla.h"

namespace {

using qla::DType;

const bool kSimOn = [] {
  setenv("QLA_SIM", "1", 1);
  return true;
}();

std::mt19937_64 &rng() {
  static std::mt19937_64 r = [] {
    uint64_t seed = std::random_device{}();
    if (const char *e = std::getenv("QLA_GLA_TEST_SEED")) seed = std::strtoull(e, nullptr, 10);
    std::printf("gla sim tests: seed %llu (QLA_GLA_TEST_SEED)\n", (unsigned long long)seed);
    return std::mt19937_64(seed);
  }();
  return r;
}

uint16_t bf16Of(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
float floatOfBf16(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct Buf {
  std::vector<unsigned char> mem;
  void *p;
  explicit Buf(size_t bytes) : mem(bytes + 256) { p = mem.data() + (256 - reinterpret_cast<uintptr_t>(mem.data()) % 256) % 256; }
};

double relRms(const std::vector<float> &out, const std::vector<double> &ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double e = std::isfinite(out[i]) ? double(out[i]) - ref[i] : 1e300;
    num += e * e;
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}

void run(const char *name, int64_t B, int64_t T, int64_t Hqk, int64_t H, int64_t K, int64_t V,
         std::vector<int64_t> offsets, bool h0) {
  INFO(name);
  glaref::Problem p;
  p.B = B, p.T = T, p.Hqk = Hqk, p.H = H, p.K = K, p.V = V, p.offsets = offsets;
  p.scale = 1.0 / std::sqrt(double(K));
  const int64_t N = p.sequences();
  std::normal_distribution<double> nd(0.0, 1.0);
  auto half = [&](size_t n) {
    std::vector<double> x(n);
    for (double &e : x) e = floatOfBf16(bf16Of(float(nd(rng()) * 0.5)));
    return x;
  };
  p.q = half(size_t(B * T * Hqk * K));
  p.k = half(size_t(B * T * Hqk * K));
  p.v = half(size_t(B * T * H * V));
  p.g.resize(size_t(B * T * H));
  for (double &e : p.g) e = double(float(-std::log1p(std::exp(-nd(rng())))) * 0.25);
  if (h0) {
    p.h0.resize(size_t(N * H * K * V));
    for (double &e : p.h0) e = double(float(0.1 * nd(rng())));
  }
  const glaref::Result ref = glaref::glaRecurrent(p);

  auto bf = [](const std::vector<double> &x, Buf &b) {
    for (size_t i = 0; i < x.size(); ++i) static_cast<uint16_t *>(b.p)[i] = bf16Of(float(x[i]));
  };
  auto f32 = [](const std::vector<double> &x, Buf &b) {
    for (size_t i = 0; i < x.size(); ++i) static_cast<float *>(b.p)[i] = float(x[i]);
  };
  Buf q(p.q.size() * 2), k(p.k.size() * 2), v(p.v.size() * 2), g(p.g.size() * 4), o(size_t(B * T * H * V) * 2),
      hi(size_t(N * H * K * V) * 4), ht(size_t(N * H * K * V) * 4), cu(size_t(N + 1) * 4);
  bf(p.q, q), bf(p.k, k), bf(p.v, v), f32(p.g, g);
  if (h0) f32(p.h0, hi);
  std::memset(o.p, 0xff, size_t(B * T * H * V) * 2);  // NaN
  for (int64_t i = 0; i < N * H * K * V; ++i) static_cast<float *>(ht.p)[i] = NAN;
  qla::gla::ForwardParams fp;
  fp.q = {q.p, DType::BF16, {B, T, Hqk, K}, {}};
  fp.k = {k.p, DType::BF16, {B, T, Hqk, K}, {}};
  fp.v = {v.p, DType::BF16, {B, T, H, V}, {}};
  fp.g = {g.p, DType::F32, {B, T, H}, {}};
  fp.o = {o.p, DType::BF16, {B, T, H, V}, {}};
  if (h0) fp.initial_state = qla::gla::TensorRef{hi.p, DType::F32, {N, H, K, V}, {}};
  fp.final_state = qla::gla::TensorRef{ht.p, DType::F32, {N, H, K, V}, {}};
  if (!offsets.empty()) {
    for (size_t i = 0; i < offsets.size(); ++i) static_cast<int32_t *>(cu.p)[i] = int32_t(offsets[i]);
    fp.cu_seqlens = qla::gla::TensorRef{cu.p, DType::I32, {N + 1}, {}};
    fp.cu_seqlens_host = offsets.data();
  }
  qla::gla::forward(fp);
  std::vector<float> og(size_t(B * T * H * V)), hg(size_t(N * H * K * V));
  for (size_t i = 0; i < og.size(); ++i) og[i] = floatOfBf16(static_cast<uint16_t *>(o.p)[i]);
  std::memcpy(hg.data(), ht.p, hg.size() * 4);
  const double eo = relRms(og, ref.o), eh = relRms(hg, ref.ht);
  std::printf("%-36s o %.2e  ht %.2e\n", name, eo, eh);
  CHECK(eo <= 0.005);
  CHECK(eh <= 0.005);
}

}  // namespace

TEST_CASE("simple GLA forward on the simulator against the float64 recurrence", "[gla][sim]") {
  run("dense B=2 T=150 H=2 K=V=64 h0", 2, 150, 2, 2, 64, 64, {}, true);
  run("varlen [0,1,70,200] GVA 1/2 K=64 V=128", 1, 200, 1, 2, 64, 128, {0, 1, 70, 200}, false);
  run("dense B=1 T=64 K=V=128 h0", 1, 64, 1, 1, 128, 128, {}, true);
}
