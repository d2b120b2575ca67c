// qla/sim/device.h — QLA's device primitives (qla/device/*.cuh) and the CUDA
// built-ins an emitted kernel uses, simulated on the CPU.
//
// The simulator (runtime/src/Sim.cpp; QLA_SIM=1, docs/internals.md,
// "Simulator") compiles an emitted kernel's CUDA with the host C++ compiler,
// this header in place of qla/device/all.cuh, and runs it: one fiber per
// CUDA thread (qla/sim/sched.h), the CTAs one after the other. What it models
// is what the kernels' correctness rests on, and it models it strictly:
// - mbarriers (arrival counts, transaction bytes, phases), named barriers
//   and __syncthreads with their thread counts;
// - TMA loads as asynchronous copies that land only when no thread can go
//   on (a thread that reads a stage without waiting for its barrier reads
//   old data), with the tensor map's box, zero fill and swizzle; TMA stores
//   performed at the wait that retires their group;
// - wgmma as asynchronous products computed at the wait that retires their
//   group, operands decoded from the shared-memory descriptors (every
//   swizzle, both majors); a register A operand changed before that wait,
//   or lanes of a warpgroup that issue different products, are errors;
// - warp-wide operations (shuffles, ldmatrix/stmatrix, movmatrix, mma.sync,
//   __syncwarp) as collectives of the 32 lanes, which must meet at the same
//   operation.
// Arithmetic is IEEE f32 (the GPU's approximate exp2/rcp/rsqrt are exact
// here, and products accumulate in f32 in k order), so results agree with
// the GPU's to rounding, not bit for bit. Clusters are not simulated.
#pragma once

#include "qla/sim/sched.h"

#include <algorithm>
#include <cmath>
#include <utility>

#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__
#define __align__(n)
#define __restrict__ __restrict
#define __grid_constant__

// The dynamic shared memory of the CTA that runs (one at a time); the
// kernel's `extern __shared__ ... qla_smem_raw[]` refers to it.
alignas(1024) unsigned char qla_smem_raw[qla::sim::kSmemMax + qla::sim::kSmemGuard];

// CUDA's vector types the emitted code moves data with.
struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
struct alignas(8) uint2 {
  unsigned x, y;
};
inline float2 make_float2(float x, float y) { return float2{x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }

// CUDA's overloaded min/max on the host's types.
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }

[[noreturn]] inline void __trap() { qla::sim::fail("__trap()"); }

namespace qla {
namespace sim {

//===----------------------------------------------------------------------===//
// Per-CTA state
//===----------------------------------------------------------------------===//

struct MBar {
  unsigned count = 0, pending = 0, phase = 0;
  long long tx = 0;
};

struct Coll {  // one warp's collectives, double-buffered by generation
  unsigned arrived = 0, gen = 0;
  int kind[2] = {0, 0};
  unsigned long long val[2][32][4];
  const void *ptr[2][32];
};

struct WgInstr {
  int n = 0, ta = 0, tb = 0, rs = 0, f16 = 0, scale = 0;
  unsigned long long da = 0, db = 0;
  unsigned group = 0;
  float *d[128];
  const unsigned *aptr[128];
  unsigned a[128][4];
  unsigned issued = 0;
};

struct Warpgroup {
  std::vector<WgInstr> instrs;  // issued, not yet computed (oldest first)
  unsigned base = 0;            // products computed and dropped
  unsigned issued[128];
  unsigned commits[128];
  unsigned arrived = 0, gen = 0;
};

struct NamedBar {
  unsigned arrived = 0, expected = 0, gen = 0;
};

struct TmaLoad {
  unsigned dst, bar, bytes;
  unsigned char map[128];
  int c[5];
};
struct TmaStore {
  unsigned src;
  unsigned group;
  unsigned char map[128];
  int c[5];
};

struct Cta {
  unsigned smemBytes = 0;
  std::unordered_map<unsigned, MBar> mbars;
  NamedBar named[16];
  Coll warps[32];
  Warpgroup wgs[8];
  std::vector<TmaLoad> loads;
  std::vector<TmaStore> stores[1024];
  unsigned storeGroups[1024];
};

inline Cta &cta() {
  static Cta *c = new Cta;
  return *c;
}

inline unsigned smemOffset(const void *p, const char *what) {
  const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(p), b = reinterpret_cast<std::uintptr_t>(qla_smem_raw);
  if (a < b || a > b + cta().smemBytes)  // one past the end is an address too
    fail("%s: address %p is not in the CTA's %u bytes of shared memory", what, p, cta().smemBytes);
  return unsigned(a - b);
}
inline unsigned char *smemAt(unsigned off, unsigned bytes, const char *what) {
  if (std::uint64_t(off) + bytes > cta().smemBytes)
    fail("%s: shared-memory bytes [%u, %u) past the CTA's %u", what, off, off + bytes, cta().smemBytes);
  return qla_smem_raw + off;
}
}  // namespace sim

// qla/device/smem_ptr.cuh on the CPU: a sptr<T> is an arena offset; every
// element access is checked against the CTA's shared memory.
namespace dev {
template <class V> inline V smem_load(unsigned a) {
  V v;
  std::memcpy(&v, sim::smemAt(a, sizeof(V), "a shared-memory load"), sizeof(V));
  return v;
}
template <class V> inline void smem_store(unsigned a, const V &v) {
  std::memcpy(sim::smemAt(a, sizeof(V), "a shared-memory store"), &v, sizeof(V));
}
template <class T> struct sref {
  unsigned a;
  operator T() const { return smem_load<T>(a); }
  const sref &operator=(const T &v) const {
    smem_store<T>(a, v);
    return *this;
  }
  const sref &operator=(const sref &o) const { return *this = T(o); }
  const sref &operator+=(const T &v) const { return *this = T(*this) + v; }
  const sref &operator-=(const T &v) const { return *this = T(*this) - v; }
  const sref &operator*=(const T &v) const { return *this = T(*this) * v; }
};
template <class T> struct sptr {
  unsigned a;
  explicit sptr(unsigned addr) : a(addr) {}
  sptr operator+(int i) const { return sptr(a + unsigned(i) * unsigned(sizeof(T))); }
  sref<T> operator[](int i) const { return sref<T>{a + unsigned(i) * unsigned(sizeof(T))}; }
  template <class V> V load(int i) const { return smem_load<V>(a + unsigned(i) * unsigned(sizeof(T))); }
  template <class V> void store(int i, const V &v) const { smem_store<V>(a + unsigned(i) * unsigned(sizeof(T)), v); }
  operator T *() const { return reinterpret_cast<T *>(sim::smemAt(a, 0, "a shared-memory pointer")); }
};
template <class V, class T> inline V smem_get(sptr<T> p, int i) { return p.template load<V>(i); }
template <class V, class T> inline V smem_get(const T *p, int i) {
  V v;
  std::memcpy(&v, p + i, sizeof(V));
  return v;
}
template <class V, class T> inline void smem_put(sptr<T> p, int i, const V &v) { p.template store<V>(i, v); }
template <class V, class T> inline void smem_put(T *p, int i, const V &v) { std::memcpy(p + i, &v, sizeof(V)); }
}  // namespace dev

namespace sim {

//===----------------------------------------------------------------------===//
// 16-bit floats (bit exact: round to nearest even, NaN kept)
//===----------------------------------------------------------------------===//

inline float bitsToFloat(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline std::uint32_t floatToBits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bf16ToFloat(std::uint16_t b) { return bitsToFloat(std::uint32_t(b) << 16); }
inline std::uint16_t floatToBf16(float x) {
  const std::uint32_t u = floatToBits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((u >> 16) | 0x40u);
  return std::uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
inline float f16ToFloat(std::uint16_t h) {
  const std::uint32_t s = std::uint32_t(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0x1f) return bitsToFloat(s | 0x7f800000u | (m << 13));
  if (e != 0) return bitsToFloat(s | ((e + 112) << 23) | (m << 13));
  const float v = std::ldexp(float(m), -24);  // subnormal (or zero)
  return s ? -v : v;
}
inline std::uint16_t floatToF16(float x) {
  const std::uint32_t u = floatToBits(x), s = (u >> 16) & 0x8000u;
  const std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return std::uint16_t(s | 0x7e00u | ((a >> 13) & 0x3ffu));  // NaN
  if (a >= 0x477ff000u) return std::uint16_t(s | 0x7c00u);  // rounds to >= 65520: inf
  if (a >= 0x38800000u) {  // normal half
    const std::uint32_t r = a + 0xfffu + ((a >> 13) & 1u) - (112u << 23);
    return std::uint16_t(s | (r >> 13));
  }
  // Subnormal half: value / 2^-24, rounded to nearest even.
  const double q = double(bitsToFloat(a)) * 16777216.0;
  double fl = std::floor(q);
  const double rem = q - fl;
  if (rem > 0.5 || (rem == 0.5 && std::fmod(fl, 2.0) != 0.0)) fl += 1.0;
  return std::uint16_t(s | std::uint32_t(fl));
}

//===----------------------------------------------------------------------===//
// Warp collectives
//===----------------------------------------------------------------------===//

enum Kind { kShfl = 1, kSyncwarp, kLdmatrix, kStmatrix, kMovmatrix, kMma };
inline const char *kindName(int k) {
  switch (k) {
  case kShfl: return "a shuffle";
  case kSyncwarp: return "__syncwarp";
  case kLdmatrix: return "ldmatrix";
  case kStmatrix: return "stmatrix";
  case kMovmatrix: return "movmatrix";
  case kMma: return "mma.sync";
  }
  return "?";
}

struct GenWait {
  const unsigned *gen;
  unsigned was;
};
inline bool genMoved(const void *p) {
  const GenWait *w = static_cast<const GenWait *>(p);
  return *w->gen != w->was;
}

// Deposits this lane's values (and pointer) for a warp-wide operation of
// `kind`; returns the buffer every lane's deposits are in once all 32 came.
inline int warpMeet(int kind, const unsigned long long *v, int nv, const void *ptr) {
  const unsigned t = tid(), lane = t % 32;
  Coll &w = cta().warps[t / 32];
  const unsigned g = w.gen;
  const int b = int(g & 1u);
  if (w.arrived == 0) w.kind[b] = kind;
  else if (w.kind[b] != kind)
    fail("lanes of warp %u meet at different warp-wide operations (%s here, %s in a lane before)", t / 32,
         kindName(kind), kindName(w.kind[b]));
  for (int i = 0; i < nv; ++i) w.val[b][lane][i] = v[i];
  w.ptr[b][lane] = ptr;
  if (++w.arrived == 32) {
    w.arrived = 0;
    ++w.gen;
  } else {
    GenWait gw{&w.gen, g};
    waitUntil(genMoved, &gw, "%s of warp %u", kindName(kind), t / 32);
  }
  return b;
}

template <class T>
inline T shflValue(T v, int src) {
  static_assert(sizeof(T) == 4, "32-bit shuffles");
  unsigned long long x = 0;
  std::memcpy(&x, &v, 4);
  const int b = warpMeet(kShfl, &x, 1, nullptr);
  T r;
  std::memcpy(&r, &cta().warps[tid() / 32].val[b][src & 31][0], 4);
  return r;
}

inline void checkMask(unsigned mask) {
  if (mask != 0xffffffffu) fail("a warp-wide operation with mask 0x%x (only full warps are simulated)", mask);
}

}  // namespace sim
}  // namespace qla

template <class T>
inline T __shfl_sync(unsigned mask, T v, int src) {
  qla::sim::checkMask(mask);
  return qla::sim::shflValue(v, src);
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T v, int laneMask) {
  qla::sim::checkMask(mask);
  return qla::sim::shflValue(v, int(threadIdx.x % 32u) ^ laneMask);
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned delta) {
  qla::sim::checkMask(mask);
  const int lane = int(threadIdx.x % 32u);
  const T r = qla::sim::shflValue(v, lane - int(delta) < 0 ? lane : lane - int(delta));
  return r;
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned delta) {
  qla::sim::checkMask(mask);
  const int lane = int(threadIdx.x % 32u);
  return qla::sim::shflValue(v, lane + int(delta) > 31 ? lane : lane + int(delta));
}
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  qla::sim::checkMask(mask);
  qla::sim::warpMeet(qla::sim::kSyncwarp, nullptr, 0, nullptr);
}
inline float __int_as_float(int x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
inline int __float_as_int(float f) {
  int x;
  std::memcpy(&x, &f, 4);
  return x;
}

namespace qla {
namespace sim {

struct BarWait {
  const unsigned *gen;
  unsigned was;
};

// bar.sync / bar.arrive id, n (n threads; __syncthreads: id 0, every thread).
inline void namedBarrier(int id, int n, bool wait) {
  if (id < 0 || id > 15) fail("named barrier id %d outside 0..15", id);
  if (n <= 0 || n % 32 != 0 || unsigned(n) > blockDim.x)
    fail("named barrier %d with %d threads (a multiple of 32, at most the CTA's %u)", id, n, blockDim.x);
  NamedBar &b = cta().named[id];
  if (b.arrived == 0) b.expected = unsigned(n);
  else if (b.expected != unsigned(n))
    fail("named barrier %d: %d threads here, %u at an earlier arrival of the same phase", id, n, b.expected);
  const unsigned g = b.gen;
  if (++b.arrived == b.expected) {
    b.arrived = 0;
    ++b.gen;
    return;
  }
  if (!wait) return;
  GenWait gw{&b.gen, g};
  waitUntil(genMoved, &gw, "named barrier %d (%d threads)", id, n);
}

}  // namespace sim
}  // namespace qla

inline void __syncthreads() { qla::sim::namedBarrier(0, int(blockDim.x), true); }

namespace qla {
namespace dev {

typedef unsigned int u32;
typedef unsigned long long u64;
typedef int i32;
typedef long long i64;
typedef unsigned short u16;

struct bf16 {
  unsigned short bits;
};
struct f16 {
  unsigned short bits;
};

inline float u32_as_float(u32 x) { return sim::bitsToFloat(x); }
inline u32 float_as_u32(float f) { return sim::floatToBits(f); }
inline float to_float(bf16 x) { return sim::bf16ToFloat(x.bits); }
inline float to_float(f16 x) { return sim::f16ToFloat(x.bits); }
inline bf16 to_bf16(float x) { return bf16{sim::floatToBf16(x)}; }
inline f16 to_f16(float x) { return f16{sim::floatToF16(x)}; }
inline u32 pack_bf16x2(float lo, float hi) { return u32(sim::floatToBf16(lo)) | (u32(sim::floatToBf16(hi)) << 16); }
inline u32 pack_f16x2(float lo, float hi) { return u32(sim::floatToF16(lo)) | (u32(sim::floatToF16(hi)) << 16); }
inline float unpack_bf16x2_lo(u32 v) { return u32_as_float(v << 16); }
inline float unpack_bf16x2_hi(u32 v) { return u32_as_float(v & 0xffff0000u); }
inline float unpack_f16x2_lo(u32 v) { return sim::f16ToFloat(u16(v & 0xffffu)); }
inline float unpack_f16x2_hi(u32 v) { return sim::f16ToFloat(u16(v >> 16)); }
inline void set_bf16x2_half(u32 &w, int hi, float v) {
  const u32 b = pack_bf16x2(v, v);
  w = hi ? ((w & 0x0000ffffu) | (b & 0xffff0000u)) : ((w & 0xffff0000u) | (b & 0x0000ffffu));
}
inline void set_f16x2_half(u32 &w, int hi, float v) {
  const u32 b = pack_f16x2(v, v);
  w = hi ? ((w & 0x0000ffffu) | (b & 0xffff0000u)) : ((w & 0xffff0000u) | (b & 0x0000ffffu));
}

struct alignas(128) TensorMap {
  u64 opaque[16];
};

inline u32 smem_u32(const void *p) { return sim::smemOffset(p, "a shared-memory address"); }

// ---- sync.cuh
inline int warpgroup_index() { return int(threadIdx.x / 128u); }
inline int warp_index_in_warpgroup() { return int((threadIdx.x / 32u) % 4u); }
inline int lane_index() { return int(threadIdx.x % 32u); }
inline int opaque(int x) { return x; }
inline int thread_index_in_warpgroup() { return int(threadIdx.x % 128u); }
inline void named_barrier_sync(int id, int n) { sim::namedBarrier(id, n, true); }
inline void named_barrier_arrive(int id, int n) { sim::namedBarrier(id, n, false); }
inline void fence_proxy_async_shared() {}
inline void prefetch_l2(const void *) {}  // prefetch.cuh: a hint, nothing to simulate
}  // namespace dev
}  // namespace qla
#include "qla/device/prefetch.cuh"
namespace qla {
namespace dev {
inline void fence_mbarrier_init() {}
inline void fence_acq_rel_cta() {}
inline u32 cluster_ctarank() { return 0; }
inline u32 cluster_nctarank() { return 1; }
inline void cluster_arrive() {}
inline void cluster_wait() {}
inline void cluster_sync() {}
inline void grid_dependency_wait() {}
inline void grid_dependents_launch() {}

// ---- regs.cuh
template <int R>
inline void setmaxnreg_inc() {
  static_assert(R >= 24 && R <= 256 && R % 8 == 0, "setmaxnreg: R in [24,256], multiple of 8");
}
template <int R>
inline void setmaxnreg_dec() {
  static_assert(R >= 24 && R <= 256 && R % 8 == 0, "setmaxnreg: R in [24,256], multiple of 8");
}

}  // namespace dev

namespace sim {

//===----------------------------------------------------------------------===//
// mbarriers
//===----------------------------------------------------------------------===//

inline MBar &mbar(dev::u64 *bar, const char *what) {
  const unsigned off = smemOffset(bar, what);
  if (off % 8) fail("%s: mbarrier at shared offset %u is not 8-byte aligned", what, off);
  auto it = cta().mbars.find(off);
  if (it == cta().mbars.end()) fail("%s: no mbarrier was initialized at shared offset %u", what, off);
  return it->second;
}
inline void mbarCheck(MBar &b) {
  if (b.pending == 0 && b.tx == 0) {
    ++b.phase;
    b.pending = b.count;
  }
}
inline void mbarArrive(MBar &b, unsigned off) {
  if (b.pending == 0) fail("mbarrier at shared offset %u: more arrivals than its count %u in a phase", off, b.count);
  --b.pending;
  mbarCheck(b);
}
struct PhaseWait {
  const MBar *b;
  unsigned parity;
};
inline bool phaseDone(const void *p) {
  const PhaseWait *w = static_cast<const PhaseWait *>(p);
  return (w->b->phase & 1u) != w->parity;
}

}  // namespace sim

namespace dev {

inline void mbarrier_init(u64 *bar, u32 count) {
  const unsigned off = sim::smemOffset(bar, "mbarrier_init");
  if (off % 8) sim::fail("mbarrier_init at shared offset %u: not 8-byte aligned", off);
  if (count == 0) sim::fail("mbarrier_init at shared offset %u with count 0", off);
  sim::MBar &b = sim::cta().mbars[off];
  b.count = b.pending = count;
  b.phase = 0;
  b.tx = 0;
}
inline void mbarrier_arrive(u64 *bar) {
  sim::mbarArrive(sim::mbar(bar, "mbarrier_arrive"), sim::smemOffset(bar, "mbarrier_arrive"));
}
inline void mbarrier_arrive_expect_tx(u64 *bar, u32 bytes) {
  sim::MBar &b = sim::mbar(bar, "mbarrier_arrive_expect_tx");
  b.tx += bytes;
  sim::mbarArrive(b, sim::smemOffset(bar, "mbarrier_arrive_expect_tx"));
}
inline void mbarrier_expect_tx(u64 *bar, u32 bytes) { sim::mbar(bar, "mbarrier_expect_tx").tx += bytes; }
inline bool mbarrier_try_wait(u64 *bar, u32 phase) {
  return (sim::mbar(bar, "mbarrier_try_wait").phase & 1u) != (phase & 1u);
}
inline void mbarrier_wait(u64 *bar, u32 phase) {
  sim::MBar &b = sim::mbar(bar, "mbarrier_wait");
  sim::PhaseWait w{&b, phase & 1u};
  sim::waitUntil(sim::phaseDone, &w, "mbarrier at shared offset %u, parity %u", sim::smemOffset(bar, "mbarrier_wait"),
                 phase & 1u);
}
inline bool mbarrier_try_wait_cluster(u64 *bar, u32 phase) { return mbarrier_try_wait(bar, phase); }
inline void mbarrier_wait_cluster(u64 *bar, u32 phase) { mbarrier_wait(bar, phase); }
inline void mbarrier_arrive_cluster(u64 *bar, u32 cta) {
  if (cta != 0) sim::fail("mbarrier_arrive_cluster to CTA %u: clusters are not simulated", cta);
  mbarrier_arrive(bar);
}

}  // namespace dev

namespace sim {

//===----------------------------------------------------------------------===//
// Tensor maps and TMA
//===----------------------------------------------------------------------===//

// SimMap (qla/sim/abi.h): what runtime/src/Sim.cpp writes in place of the
// driver's tensor map.

inline const SimMap &simMap(const void *m, const char *what) {
  const SimMap *s = static_cast<const SimMap *>(m);
  if (s->magic != kMapMagic) fail("%s: the tensor map was not encoded for the simulator (or is absent)", what);
  return *s;
}
inline unsigned swizzleBytes(unsigned sw) { return sw == 0 ? 0u : 16u << sw; }  // 32, 64, 128
// Swizzle<B,4,3> on a shared-memory byte offset of a 1024-aligned arena:
// bits [4, 4+B) ^= bits [7, 7+B).
inline unsigned swizzleAddr(unsigned addr, unsigned spanBytes) {
  if (spanBytes == 0) return addr;
  const unsigned mask = spanBytes / 16 - 1;
  return addr ^ (((addr >> 7) & mask) << 4);
}

// Calls f(smemOffset, globalPtr or null when out of bounds, elemBytes) per
// element of the box at coordinates c, smem box starting at `smem`.
template <class F>
inline void forBox(const SimMap &m, unsigned smem, const int *c, const char *what, F f) {
  const unsigned span = swizzleBytes(m.swizzle);
  const unsigned innerBytes = m.box[0] * m.elemBytes;
  if (span && innerBytes != span)
    fail("%s: a box of %u bytes along its inner dim with a %u-byte swizzle (the simulator models only equal ones)",
         what, innerBytes, span);
  if (smem % (span == 128 ? 1024u : 128u))
    fail("%s: shared destination offset %u is not %u-byte aligned", what, smem, span == 128 ? 1024u : 128u);
  unsigned idx[5] = {0, 0, 0, 0, 0};
  std::uint64_t total = 1;
  for (unsigned d = 0; d < m.rank; ++d) total *= m.box[d];
  for (std::uint64_t e = 0; e < total; ++e) {
    std::uint64_t rest = e;
    bool in = true;
    std::uint64_t goff = 0;
    for (unsigned d = 0; d < m.rank; ++d) {
      idx[d] = unsigned(rest % m.box[d]);
      rest /= m.box[d];
      const long long g = (long long)c[d] + idx[d];
      if (g < 0 || (std::uint64_t)g >= m.dims[d]) in = false;
      else goff += d == 0 ? std::uint64_t(g) * m.elemBytes : std::uint64_t(g) * m.strides[d - 1];
    }
    const unsigned lin = smem + unsigned(e) * m.elemBytes;
    f(swizzleAddr(lin, span), in ? m.base + goff : nullptr, m.elemBytes);
  }
}

inline unsigned boxBytes(const SimMap &m) {
  unsigned b = m.elemBytes;
  for (unsigned d = 0; d < m.rank; ++d) b *= m.box[d];
  return b;
}

inline void tmaLoad(void *dst, const void *map, dev::u64 *bar, int rank, const int *c) {
  const SimMap &m = simMap(map, "a TMA load");
  if (int(m.rank) != rank) fail("a %dd TMA load through a tensor map of rank %u", rank, m.rank);
  TmaLoad l;
  l.dst = smemOffset(dst, "a TMA load's destination");
  l.bar = smemOffset(bar, "a TMA load's mbarrier");
  mbar(bar, "a TMA load");  // must exist now
  l.bytes = boxBytes(m);
  smemAt(l.dst, l.bytes, "a TMA load's destination");
  std::memcpy(l.map, map, 128);
  for (int i = 0; i < 5; ++i) l.c[i] = i < rank ? c[i] : 0;
  cta().loads.push_back(l);
}

// Lands every TMA load issued so far (the scheduler calls it when no thread
// can go on); true if there was one.
// The state of the CTA's barriers, for a deadlock report.
inline std::string describeState() {
  std::string r;
  char line[200];
  Cta &k = cta();
  for (int i = 0; i < 16; ++i)
    if (k.named[i].arrived) {
      std::snprintf(line, sizeof line, "\n  named barrier %d: %u of %u threads arrived", i, k.named[i].arrived,
                    k.named[i].expected);
      r += line;
    }
  std::vector<unsigned> offs;
  for (auto &e : k.mbars) offs.push_back(e.first);
  std::sort(offs.begin(), offs.end());
  for (unsigned o : offs) {
    const MBar &b = k.mbars[o];
    std::snprintf(line, sizeof line, "\n  mbarrier at shared offset %u: phase %u, %u of %u arrivals missing, %lld tx bytes",
                  o, b.phase, b.pending, b.count, b.tx);
    r += line;
  }
  for (unsigned w = 0; w < 8; ++w)
    if (k.wgs[w].arrived) {
      std::snprintf(line, sizeof line, "\n  wgmma_wait of warpgroup %u: %u of 128 threads arrived", w, k.wgs[w].arrived);
      r += line;
    }
  for (unsigned w = 0; w < 32; ++w)
    if (k.warps[w].arrived) {
      std::snprintf(line, sizeof line, "\n  warp %u: %u of 32 lanes at %s", w, k.warps[w].arrived,
                    kindName(k.warps[w].kind[k.warps[w].gen & 1u]));
      r += line;
    }
  return r;
}

inline bool deliverLoads() {
  Cta &k = cta();
  if (k.loads.empty()) return false;
  std::vector<TmaLoad> batch;
  batch.swap(k.loads);
  for (const TmaLoad &l : batch) {
    const SimMap &m = *reinterpret_cast<const SimMap *>(l.map);
    forBox(m, l.dst, l.c, "a TMA load", [&](unsigned s, const unsigned char *g, unsigned eb) {
      unsigned char *p = smemAt(s, eb, "a TMA load");
      if (g) std::memcpy(p, g, eb);
      else std::memset(p, 0, eb);
    });
    auto it = k.mbars.find(l.bar);
    if (it == k.mbars.end()) fail("a TMA load completes on shared offset %u, which holds no mbarrier", l.bar);
    it->second.tx -= l.bytes;
    mbarCheck(it->second);
  }
  return true;
}

inline void tmaStore(const void *map, const void *src, int rank, const int *c) {
  const SimMap &m = simMap(map, "a TMA store");
  if (int(m.rank) != rank) fail("a %dd TMA store through a tensor map of rank %u", rank, m.rank);
  TmaStore s;
  s.src = smemOffset(src, "a TMA store's source");
  smemAt(s.src, boxBytes(m), "a TMA store's source");
  std::memcpy(s.map, map, 128);
  for (int i = 0; i < 5; ++i) s.c[i] = i < rank ? c[i] : 0;
  s.group = cta().storeGroups[tid()];
  cta().stores[tid()].push_back(s);
}
// Performs this thread's stores of groups older than the newest `keep`
// committed ones (keep < 0: all, committed or not).
inline void retireStores(int keep) {
  Cta &k = cta();
  std::vector<TmaStore> &q = k.stores[tid()];
  const unsigned groups = k.storeGroups[tid()];
  std::vector<TmaStore> left;
  for (const TmaStore &s : q) {
    if (keep >= 0 && s.group + unsigned(keep) >= groups) {
      left.push_back(s);
      continue;
    }
    const SimMap &m = *reinterpret_cast<const SimMap *>(s.map);
    forBox(m, s.src, s.c, "a TMA store", [&](unsigned so, const unsigned char *g, unsigned eb) {
      if (g) std::memcpy(const_cast<unsigned char *>(g), smemAt(so, eb, "a TMA store"), eb);
    });
  }
  q.swap(left);
}

}  // namespace sim

namespace dev {

inline void prefetch_tensormap(const TensorMap *) {}
// tma.cuh's tensor prefetches: hints, nothing to simulate.
inline void tma_prefetch_1d(const TensorMap *, int) {}
inline void tma_prefetch_2d(const TensorMap *, int, int) {}
inline void tma_prefetch_3d(const TensorMap *, int, int, int) {}
inline void tma_prefetch_4d(const TensorMap *, int, int, int, int) {}
inline void tma_prefetch_5d(const TensorMap *, int, int, int, int, int) {}
inline void tma_load_1d(void *d, const TensorMap *m, u64 *b, int c0) {
  const int c[] = {c0};
  sim::tmaLoad(d, m, b, 1, c);
}
inline void tma_load_2d(void *d, const TensorMap *m, u64 *b, int c0, int c1) {
  const int c[] = {c0, c1};
  sim::tmaLoad(d, m, b, 2, c);
}
inline void tma_load_3d(void *d, const TensorMap *m, u64 *b, int c0, int c1, int c2) {
  const int c[] = {c0, c1, c2};
  sim::tmaLoad(d, m, b, 3, c);
}
inline void tma_load_4d(void *d, const TensorMap *m, u64 *b, int c0, int c1, int c2, int c3) {
  const int c[] = {c0, c1, c2, c3};
  sim::tmaLoad(d, m, b, 4, c);
}
inline void tma_load_5d(void *d, const TensorMap *m, u64 *b, int c0, int c1, int c2, int c3, int c4) {
  const int c[] = {c0, c1, c2, c3, c4};
  sim::tmaLoad(d, m, b, 5, c);
}
inline void tma_load_2d_multicast(void *, const TensorMap *, u64 *, int, int, unsigned short) {
  sim::fail("multicast TMA loads: clusters are not simulated");
}
inline void tma_load_3d_multicast(void *, const TensorMap *, u64 *, int, int, int, unsigned short) {
  sim::fail("multicast TMA loads: clusters are not simulated");
}
inline void tma_load_4d_multicast(void *, const TensorMap *, u64 *, int, int, int, int, unsigned short) {
  sim::fail("multicast TMA loads: clusters are not simulated");
}
inline void tma_store_1d(const TensorMap *m, const void *s, int c0) {
  const int c[] = {c0};
  sim::tmaStore(m, s, 1, c);
}
inline void tma_store_2d(const TensorMap *m, const void *s, int c0, int c1) {
  const int c[] = {c0, c1};
  sim::tmaStore(m, s, 2, c);
}
inline void tma_store_3d(const TensorMap *m, const void *s, int c0, int c1, int c2) {
  const int c[] = {c0, c1, c2};
  sim::tmaStore(m, s, 3, c);
}
inline void tma_store_4d(const TensorMap *m, const void *s, int c0, int c1, int c2, int c3) {
  const int c[] = {c0, c1, c2, c3};
  sim::tmaStore(m, s, 4, c);
}
inline void tma_store_5d(const TensorMap *m, const void *s, int c0, int c1, int c2, int c3, int c4) {
  const int c[] = {c0, c1, c2, c3, c4};
  sim::tmaStore(m, s, 5, c);
}
inline void tma_store_commit() { ++sim::cta().storeGroups[sim::tid()]; }
template <int N>
inline void tma_store_wait() {
  sim::retireStores(N);
}
template <int N>
inline void tma_store_wait_complete() {
  sim::retireStores(N);
}

// ---- wgmma.cuh
inline void wgmma_fence() {}
template <int N>
inline void warpgroup_fence_regs(float (&)[N]) {}
template <int N>
inline void warpgroup_fence_regs(u32 (&)[N]) {}

inline u64 make_wgmma_desc(const void *smem, u32 lbo_bytes, u32 sbo_bytes, int swizzle) {
  const u32 addr = smem_u32(smem);
  u64 desc = 0;
  desc |= u64((addr & 0x3FFFFu) >> 4);
  desc |= u64((lbo_bytes >> 4) & 0x3FFFu) << 16;
  desc |= u64((sbo_bytes >> 4) & 0x3FFFu) << 32;
  desc |= u64(u32(swizzle) & 3u) << 62;
  return desc;
}
inline u64 wgmma_desc_advance(u64 desc, u32 bytes) { return desc + u64(bytes >> 4); }

constexpr int acc_row_of(int t, int r) { return 16 * ((t % 128) / 32) + (t % 32) / 4 + 8 * ((r / 2) % 2); }
constexpr int acc_col_of(int t, int r) { return 8 * (r / 4) + 2 * (t % 4) + (r % 2); }
inline int acc_row(int r) { return acc_row_of(int(threadIdx.x), r); }
inline int acc_col(int r) { return acc_col_of(int(threadIdx.x), r); }

template <int N>
inline void acc_to_a_bf16(u32 (&a)[N / 16][4], const float (&d)[N / 2]) {
  for (int kk = 0; kk < N / 16; ++kk)
    for (int j = 0; j < 4; ++j) a[kk][j] = pack_bf16x2(d[8 * kk + 2 * j], d[8 * kk + 2 * j + 1]);
}
template <int N>
inline void acc_to_a_f16(u32 (&a)[N / 16][4], const float (&d)[N / 2]) {
  for (int kk = 0; kk < N / 16; ++kk)
    for (int j = 0; j < 4; ++j) a[kk][j] = pack_f16x2(d[8 * kk + 2 * j], d[8 * kk + 2 * j + 1]);
}

}  // namespace dev

namespace sim {

// Byte offset of element (mn, k) of a wgmma shared-memory operand (A: mn = m;
// B: mn = n) from its descriptor, for 16-bit elements: the canonical layouts
// of the PTX ISA's matrix descriptors (cute's make_gmma_desc), K-major
// (trans 0) or MN-major (trans 1), then the swizzle on the address.
inline unsigned operandAddr(unsigned long long desc, int trans, int mn, int k) {
  const unsigned start = unsigned(desc & 0x3FFFu) << 4;
  const unsigned lbo = unsigned((desc >> 16) & 0x3FFFu) << 4;
  const unsigned sbo = unsigned((desc >> 32) & 0x3FFFu) << 4;
  const unsigned sw = unsigned(desc >> 62) & 3u;  // 0 none, 1 128B, 2 64B, 3 32B
  const unsigned span = sw == 1 ? 128u : sw == 2 ? 64u : sw == 3 ? 32u : 0u;
  const unsigned e = 2;  // bytes per element
  unsigned off;
  if (span == 0) {
    if (trans == 0)  // ((8,m),(T,2)):((1T,SBO),(1,LBO)), T = 8 elements
      off = (mn / 8) * sbo + (mn % 8) * 16 + (k / 8) * lbo + (k % 8) * e;
    else  // ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))
      off = (mn / 8) * sbo + (mn % 8) * e + (k % 8) * 16 + (k / 8) * lbo;
  } else if (trans == 0) {  // rows of `span` bytes, K contiguous; 8-row groups SBO apart
    off = (mn / 8) * sbo + (mn % 8) * span + k * e;
  } else {  // per k a row of `span` bytes along MN; 8-deep K groups SBO apart; MN atoms LBO apart
    const unsigned per = span / e;
    off = (mn / per) * lbo + (mn % per) * e + (k % 8) * span + (k / 8) * sbo;
  }
  return swizzleAddr(start + off, span);
}

inline float loadHalf(unsigned addr, int f16) {
  std::uint16_t h;
  std::memcpy(&h, smemAt(addr, 2, "a wgmma operand"), 2);
  return f16 ? f16ToFloat(h) : bf16ToFloat(h);
}

inline void runProduct(WgInstr &in, unsigned wg) {
  const int N = in.n;
  static float A[64][16], B[16][256], D[64][256];
  for (unsigned t = 0; t < 128; ++t)
    if (!in.d[t]) fail("warpgroup %u: a wgmma issued by only some of its threads", wg);
  if (in.rs) {
    for (int t = 0; t < 128; ++t) {
      for (int j = 0; j < 4; ++j) {
        if (in.aptr[t][j] != in.a[t][j])
          fail("warpgroup %u thread %d: a register A operand changed between its wgmma and the wait for it", wg, t);
        const int w = t / 32, l = t % 32, row = 16 * w + l / 4 + 8 * (j % 2), col = 2 * (l % 4) + 8 * (j / 2);
        const unsigned v = in.a[t][j];
        A[row][col] = in.f16 ? f16ToFloat(std::uint16_t(v)) : bf16ToFloat(std::uint16_t(v));
        A[row][col + 1] = in.f16 ? f16ToFloat(std::uint16_t(v >> 16)) : bf16ToFloat(std::uint16_t(v >> 16));
      }
    }
  } else {
    for (int m = 0; m < 64; ++m)
      for (int k = 0; k < 16; ++k) A[m][k] = loadHalf(operandAddr(in.da, in.ta, m, k), in.f16);
  }
  for (int k = 0; k < 16; ++k)
    for (int n = 0; n < N; ++n) B[k][n] = loadHalf(operandAddr(in.db, in.tb, n, k), in.f16);
  for (int t = 0; t < 128; ++t)
    for (int r = 0; r < N / 2; ++r) D[dev::acc_row_of(t, r)][dev::acc_col_of(t, r)] = in.scale ? in.d[t][r] : 0.0f;
  for (int m = 0; m < 64; ++m)
    for (int n = 0; n < N; ++n) {
      float s = D[m][n];
      for (int k = 0; k < 16; ++k) s = std::fma(A[m][k], B[k][n], s);
      D[m][n] = s;
    }
  for (int t = 0; t < 128; ++t)
    for (int r = 0; r < N / 2; ++r) in.d[t][r] = D[dev::acc_row_of(t, r)][dev::acc_col_of(t, r)];
}

inline void wgIssue(int n, int ta, int tb, int rs, int f16, float *d, const unsigned *a, unsigned long long da,
                    unsigned long long db, int scale) {
  const unsigned t = tid(), wg = t / 128, lt = t % 128;
  Warpgroup &w = cta().wgs[wg];
  const unsigned i = w.issued[lt]++ - w.base;
  if (i == w.instrs.size()) {
    w.instrs.emplace_back();
    WgInstr &x = w.instrs.back();
    x.n = n, x.ta = ta, x.tb = tb, x.rs = rs, x.f16 = f16, x.da = rs ? 0 : da, x.db = db, x.scale = scale != 0;
    x.group = w.commits[lt];
    std::memset(x.d, 0, sizeof x.d);
  }
  if (i > w.instrs.size()) fail("warpgroup %u: thread %u is ahead of the warpgroup's wgmmas", wg, lt);
  WgInstr &x = w.instrs[i];
  if (x.n != n || x.ta != ta || x.tb != tb || x.rs != rs || x.f16 != f16 || x.db != db ||
      (!rs && x.da != da) || x.scale != (scale != 0) || x.group != w.commits[lt])
    fail("warpgroup %u: its threads issue different wgmmas (thread %u differs from the first)", wg, lt);
  if (x.d[lt]) fail("warpgroup %u thread %u: issued the same wgmma twice", wg, lt);
  x.d[lt] = d;
  if (rs) {
    x.aptr[lt] = a;
    for (int j = 0; j < 4; ++j) x.a[lt][j] = a[j];
  }
}

struct WgWait {
  const unsigned *gen;
  unsigned was;
};

inline void wgWait(int keep) {
  const unsigned t = tid(), wg = t / 128, lt = t % 128;
  Warpgroup &w = cta().wgs[wg];
  const unsigned g = w.gen;
  if (++w.arrived < 128) {
    GenWait gw{&w.gen, g};
    waitUntil(genMoved, &gw, "wgmma_wait of warpgroup %u", wg);
    return;
  }
  w.arrived = 0;
  const unsigned groups = w.commits[lt];
  for (unsigned x = 0; x < 128; ++x)
    if (w.commits[x] != groups) fail("warpgroup %u: its threads committed different numbers of wgmma groups", wg);
  unsigned done = 0;
  while (done < w.instrs.size() && w.instrs[done].group + unsigned(keep) < groups) {
    runProduct(w.instrs[done], wg);
    ++done;
  }
  w.instrs.erase(w.instrs.begin(), w.instrs.begin() + done);
  w.base += done;
  ++w.gen;
}

}  // namespace sim

namespace dev {

inline void wgmma_commit() { ++sim::cta().wgs[sim::tid() / 128].commits[sim::tid() % 128]; }
template <int N>
inline void wgmma_wait() {
  static_assert(N >= 0 && N <= 7, "wgmma.wait_group N in [0,7]");
  sim::wgWait(N);
}
template <int N, int TRANS_A, int TRANS_B>
inline void wgmma_ss_bf16(float (&d)[N / 2], u64 desc_a, u64 desc_b, int scale_d) {
  static_assert(N >= 8 && N <= 256 && N % 8 == 0, "wgmma N: multiple of 8 in [8,256]");
  sim::wgIssue(N, TRANS_A, TRANS_B, 0, 0, d, nullptr, desc_a, desc_b, scale_d);
}
template <int N, int TRANS_A, int TRANS_B>
inline void wgmma_ss_f16(float (&d)[N / 2], u64 desc_a, u64 desc_b, int scale_d) {
  static_assert(N >= 8 && N <= 256 && N % 8 == 0, "wgmma N: multiple of 8 in [8,256]");
  sim::wgIssue(N, TRANS_A, TRANS_B, 0, 1, d, nullptr, desc_a, desc_b, scale_d);
}
template <int N, int TRANS_B>
inline void wgmma_rs_bf16(float (&d)[N / 2], const u32 (&a)[4], u64 desc_b, int scale_d) {
  static_assert(N >= 8 && N <= 256 && N % 8 == 0, "wgmma N: multiple of 8 in [8,256]");
  sim::wgIssue(N, 0, TRANS_B, 1, 0, d, a, 0, desc_b, scale_d);
}
template <int N, int TRANS_B>
inline void wgmma_rs_f16(float (&d)[N / 2], const u32 (&a)[4], u64 desc_b, int scale_d) {
  static_assert(N >= 8 && N <= 256 && N % 8 == 0, "wgmma N: multiple of 8 in [8,256]");
  sim::wgIssue(N, 0, TRANS_B, 1, 1, d, a, 0, desc_b, scale_d);
}

// ---- ldstmatrix.cuh: matrix i's rows are addressed by lanes 8i..8i+7.
template <int X, bool TRANS>
inline void ldmatrixSim(u32 *r, const void *smem) {
  const int b = sim::warpMeet(sim::kLdmatrix, nullptr, 0, smem);
  const sim::Coll &w = sim::cta().warps[sim::tid() / 32];
  const int l = lane_index();
  for (int i = 0; i < X; ++i) {
    if (!TRANS) {
      const unsigned o = sim::smemOffset(w.ptr[b][8 * i + l / 4], "ldmatrix") + 4u * unsigned(l % 4);
      std::memcpy(&r[i], sim::smemAt(o, 4, "ldmatrix"), 4);
    } else {
      std::uint16_t lo, hi;
      const unsigned o0 = sim::smemOffset(w.ptr[b][8 * i + 2 * (l % 4)], "ldmatrix") + 2u * unsigned(l / 4);
      const unsigned o1 = sim::smemOffset(w.ptr[b][8 * i + 2 * (l % 4) + 1], "ldmatrix") + 2u * unsigned(l / 4);
      std::memcpy(&lo, sim::smemAt(o0, 2, "ldmatrix"), 2);
      std::memcpy(&hi, sim::smemAt(o1, 2, "ldmatrix"), 2);
      r[i] = u32(lo) | (u32(hi) << 16);
    }
  }
}
template <int X, bool TRANS>
inline void stmatrixSim(void *smem, const u32 *r) {
  const int b = sim::warpMeet(sim::kStmatrix, nullptr, 0, smem);
  const sim::Coll &w = sim::cta().warps[sim::tid() / 32];
  const int l = lane_index();
  for (int i = 0; i < X; ++i) {
    if (!TRANS) {
      const unsigned o = sim::smemOffset(w.ptr[b][8 * i + l / 4], "stmatrix") + 4u * unsigned(l % 4);
      std::memcpy(sim::smemAt(o, 4, "stmatrix"), &r[i], 4);
    } else {
      const std::uint16_t lo = std::uint16_t(r[i]), hi = std::uint16_t(r[i] >> 16);
      const unsigned o0 = sim::smemOffset(w.ptr[b][8 * i + 2 * (l % 4)], "stmatrix") + 2u * unsigned(l / 4);
      const unsigned o1 = sim::smemOffset(w.ptr[b][8 * i + 2 * (l % 4) + 1], "stmatrix") + 2u * unsigned(l / 4);
      std::memcpy(sim::smemAt(o0, 2, "stmatrix"), &lo, 2);
      std::memcpy(sim::smemAt(o1, 2, "stmatrix"), &hi, 2);
    }
  }
  // No lane may reuse the rows before every lane has written.
  sim::warpMeet(sim::kStmatrix, nullptr, 0, nullptr);
}
inline void ldmatrix_x4(u32 (&r)[4], const void *s) { ldmatrixSim<4, false>(r, s); }
inline void ldmatrix_x4_trans(u32 (&r)[4], const void *s) { ldmatrixSim<4, true>(r, s); }
inline void ldmatrix_x2(u32 (&r)[2], const void *s) { ldmatrixSim<2, false>(r, s); }
inline void ldmatrix_x2_trans(u32 (&r)[2], const void *s) { ldmatrixSim<2, true>(r, s); }
inline void stmatrix_x4(void *s, const u32 (&r)[4]) { stmatrixSim<4, false>(s, r); }
inline void stmatrix_x4_trans(void *s, const u32 (&r)[4]) { stmatrixSim<4, true>(s, r); }
inline void stmatrix_x2(void *s, const u32 (&r)[2]) { stmatrixSim<2, false>(s, r); }
inline void stmatrix_x2_trans(void *s, const u32 (&r)[2]) { stmatrixSim<2, true>(s, r); }

// ---- mma_sync.cuh
inline float unpack(u32 v, int hi) { return sim::f16ToFloat(u16(hi ? v >> 16 : v & 0xffffu)); }
inline void mma_m16n8k16_f16_f32(float &d0, float &d1, float &d2, float &d3, const u32 (&a)[4], u32 b0, u32 b1) {
  unsigned long long v[4] = {(u64(a[0]) << 32) | a[1], (u64(a[2]) << 32) | a[3], (u64(b0) << 32) | b1, 0};
  const int b = sim::warpMeet(sim::kMma, v, 3, nullptr);
  const sim::Coll &w = sim::cta().warps[sim::tid() / 32];
  float A[16][16], B[16][8];
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, t = l % 4;
    const u32 ar[4] = {u32(w.val[b][l][0] >> 32), u32(w.val[b][l][0]), u32(w.val[b][l][1] >> 32),
                       u32(w.val[b][l][1])};
    const u32 br[2] = {u32(w.val[b][l][2] >> 32), u32(w.val[b][l][2])};
    for (int h = 0; h < 2; ++h) {
      A[g][2 * t + h] = unpack(ar[0], h);
      A[g + 8][2 * t + h] = unpack(ar[1], h);
      A[g][2 * t + 8 + h] = unpack(ar[2], h);
      A[g + 8][2 * t + 8 + h] = unpack(ar[3], h);
      B[2 * t + h][g] = unpack(br[0], h);
      B[2 * t + 8 + h][g] = unpack(br[1], h);
    }
  }
  const int l = lane_index(), g = l / 4, t = l % 4;
  float *out[4] = {&d0, &d1, &d2, &d3};
  for (int q = 0; q < 4; ++q) {
    const int row = g + 8 * (q / 2), col = 2 * t + (q % 2);
    float s = *out[q];
    for (int k = 0; k < 16; ++k) s = std::fma(A[row][k], B[k][col], s);
    *out[q] = s;
  }
  // Every lane has read the deposits before any lane's next operation.
  sim::warpMeet(sim::kMma, nullptr, 0, nullptr);
}
inline u32 movmatrix_trans(u32 a) {
  unsigned long long v = a;
  const int b = sim::warpMeet(sim::kMovmatrix, &v, 1, nullptr);
  const sim::Coll &w = sim::cta().warps[sim::tid() / 32];
  const int t = lane_index();
  // Element (r, c) of the stored matrix is held by lane 4 r + c / 2, half c % 2.
  auto elem = [&](int r, int c) { return u32(w.val[b][4 * r + c / 2][0] >> (16 * (c % 2))) & 0xffffu; };
  const u32 r = elem(2 * (t % 4), t / 4) | (elem(2 * (t % 4) + 1, t / 4) << 16);
  sim::warpMeet(sim::kMovmatrix, nullptr, 0, nullptr);
  return r;
}

// ---- atomic.cuh: the add at L2, with its flush of subnormals to zero (the
// simulator runs one thread at a time: a plain read-modify-write)
inline float red_flush(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; }
inline void red_add_f32(float *p, float v) { *p = red_flush(red_flush(*p) + red_flush(v)); }
inline void red_add_f32x2(float *p, float v0, float v1) {
  red_add_f32(p, v0);
  red_add_f32(p + 1, v1);
}

// ---- math.cuh
inline float fast_exp2(float x) { return std::exp2(x); }
inline float fast_exp(float x) { return fast_exp2(x * 1.4426950408889634f); }
inline float fast_log2(float x) { return std::log2(x); }
inline float fast_rcp(float x) { return 1.0f / x; }
inline float fast_rsqrt(float x) { return 1.0f / std::sqrt(x); }
inline float sigmoid(float x) { return fast_rcp(1.0f + fast_exp(-x)); }
inline float shfl_xor(float v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }
inline int shfl_xor(int v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }
inline float shfl_idx(float v, int src) { return __shfl_sync(0xffffffffu, v, src); }
inline int shfl_idx(int v, int src) { return __shfl_sync(0xffffffffu, v, src); }
inline float max_f32(float a, float b) { return std::fmax(a, b); }
inline float quad_sum(float v) {
  v += shfl_xor(v, 1);
  v += shfl_xor(v, 2);
  return v;
}
inline float quad_max(float v) {
  v = max_f32(v, shfl_xor(v, 1));
  v = max_f32(v, shfl_xor(v, 2));
  return v;
}
inline float warp_sum(float v) {
  for (int m = 16; m >= 1; m >>= 1) v += shfl_xor(v, m);
  return v;
}
inline float warp_max(float v) {
  for (int m = 16; m >= 1; m >>= 1) v = max_f32(v, shfl_xor(v, m));
  return v;
}

}  // namespace dev
}  // namespace qla

// The device headers that are plain C++ (their primitives above).
#define QLA_DEVICE_SIM 1
#include "qla/device/smem_layout.cuh"
#include "qla/device/warp_block.cuh"

//===----------------------------------------------------------------------===//
// The launch
//===----------------------------------------------------------------------===//

namespace qla {
namespace sim {

template <class... P, std::size_t... I>
inline void callKernel(void (*k)(P...), void **args, std::index_sequence<I...>) {
  k(*static_cast<std::remove_cv_t<std::remove_reference_t<P>> *>(args[I])...);
}

struct Launch {
  void **args;
  void (*run)(void **);
};
inline Launch &launchState() {
  static Launch l;
  return l;
}
inline void threadBody() {
  Launch &l = launchState();
  l.run(l.args);
  retireStores(-1);  // bulk stores still in flight complete after the thread ends
}

template <class... P>
inline int launch(void (*k)(P...), void **args, const qla_sim_config *cfg, char *err, size_t errlen) {
  static void (*kernel)(P...) = nullptr;
  kernel = k;
  auto report = [&](const std::string &m) {
    std::snprintf(err, errlen, "%s", m.c_str());
    return 1;
  };
  if (cfg->cluster[0] * cfg->cluster[1] * cfg->cluster[2] != 1) return report("clusters are not simulated");
  if (cfg->threads == 0 || cfg->threads > 1024 || cfg->threads % 32) return report("bad thread count");
  if (cfg->smem_bytes > kSmemMax) return report("more dynamic shared memory than an sm_90 CTA has");
  Sched s;
  sched() = &s;
  s.threads = cfg->threads;
  s.body = &threadBody;
  s.deliver = &deliverLoads;
  s.describe = &describeState;
  if (const char *seed = std::getenv("QLA_SIM_SEED"); seed && *seed)
    s.rng = std::strtoull(seed, nullptr, 10) * 0x9e3779b97f4a7c15ull | 1u;
  Launch &l = launchState();
  l.args = args;
  l.run = [](void **a) { callKernel(kernel, a, std::index_sequence_for<P...>{}); };
  blockDim.x = cfg->threads, blockDim.y = 1, blockDim.z = 1;
  gridDim.x = cfg->grid[0], gridDim.y = cfg->grid[1], gridDim.z = cfg->grid[2];
  int rc = 0;
  // Blocks run one after another, in grid order, or with
  // QLA_SIM_BLOCK_ORDER=reverse last block first: a kernel whose result
  // depends on the order of its blocks (one block reading what another
  // writes) then differs between the two.
  const char *order = std::getenv("QLA_SIM_BLOCK_ORDER");
  const bool reverse = order && std::string(order) == "reverse";
  const unsigned long long blocks = 1ull * cfg->grid[0] * cfg->grid[1] * cfg->grid[2];
  for (unsigned long long bi = 0; bi < blocks && !rc; ++bi) {
      const unsigned long long b = reverse ? blocks - 1 - bi : bi;
      const unsigned x = unsigned(b % cfg->grid[0]), y = unsigned(b / cfg->grid[0] % cfg->grid[1]),
                     z = unsigned(b / cfg->grid[0] / cfg->grid[1]);
      {
        blockIdx.x = x, blockIdx.y = y, blockIdx.z = z;
        Cta &c = cta();
        c.~Cta();
        new (&c) Cta();
        c.smemBytes = cfg->smem_bytes;
        // Poison shared memory (a kernel must not read what it did not
        // write) and fill the guard behind it.
        std::memset(qla_smem_raw, 0xA5, cfg->smem_bytes);
        std::memset(qla_smem_raw + cfg->smem_bytes, 0x5A, kSmemMax + kSmemGuard - cfg->smem_bytes);
        bool ok = false;
        try {
          ok = runCta(s);
        } catch (const Abort &) {
          ok = false;
        }
        if (!ok) {
          rc = report(s.error);
          break;
        }
        for (unsigned i = cfg->smem_bytes; i < kSmemMax + kSmemGuard; ++i)
          if (qla_smem_raw[i] != 0x5A) {
            char m[160];
            std::snprintf(m, sizeof m, "block (%u,%u,%u) wrote shared memory at offset %u, past the %u bytes it asked for",
                          x, y, z, i, cfg->smem_bytes);
            rc = report(m);
            break;
          }
        if (!rc && !c.loads.empty()) rc = report("a TMA load nobody waited for at the end of a block");
      }
  }
  for (Fiber &f : s.fibers)
    if (f.stack) munmap(f.stack, kStackBytes);
  sched() = nullptr;
  return rc;
}

}  // namespace sim
}  // namespace qla
