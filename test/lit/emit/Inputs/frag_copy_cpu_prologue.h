// CPU stand-ins for what the emitted fragment <-> global, fragment <->
// shared and shared -> global copies use, on top of
// inv_unit_lower_cpu_prologue.h (threadIdx, __syncthreads() over
// std::threads, float2, the arena, __trap(), smem_u32, warp indices), which
// the RUN lines put in front of this file. Used by emit-frag-global-cpu.qla,
// emit-frag-shared-cpu.qla and emit-shared-global-cpu.qla; the kernel's text
// follows this file (renamed qla_kernel), then the test's main.
//
// The 16-bit helpers mirror runtime/include/qla/device/types.cuh bit for
// bit: bf16 -> f32 is the bf16 bits as the top half of an f32, f32 -> bf16
// rounds to nearest even (cvt.rn.bf16.f32), packed pairs hold the lower
// column in bits 0..15. smem_tile_index is the device header itself
// (runtime/include/qla/device/smem_layout.cuh is plain C++), so the tests'
// independent swizzle formula checks it too.
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#define __device__
#define __forceinline__ inline
#include "qla/device/smem_layout.cuh"

namespace qla::dev {
typedef unsigned int u32;
typedef unsigned long long u64;
struct bf16 {
  unsigned short bits;
};
static_assert(sizeof(bf16) == 2, "16-bit storage type");

inline float u32_as_float(u32 x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
inline u32 float_as_u32(float f) {
  u32 x;
  std::memcpy(&x, &f, 4);
  return x;
}
inline float to_float(bf16 x) { return u32_as_float(u32(x.bits) << 16); }
// cvt.rn.bf16.f32: round to nearest, ties to even; a NaN stays a (quiet) NaN.
inline bf16 to_bf16(float x) {
  const u32 u = float_as_u32(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16{(unsigned short)((u >> 16) | 0x40u)};
  return bf16{(unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};
}
inline u32 pack_bf16x2(float lo, float hi) { return u32(to_bf16(lo).bits) | (u32(to_bf16(hi).bits) << 16); }
inline float unpack_bf16x2_lo(u32 v) { return u32_as_float(v << 16); }
inline float unpack_bf16x2_hi(u32 v) { return u32_as_float(v & 0xffff0000u); }
inline void set_bf16x2_half(u32 &w, int hi, float v) {
  const u32 b = pack_bf16x2(v, v);
  w = hi ? ((w & 0x0000ffffu) | (b & 0xffff0000u)) : ((w & 0xffff0000u) | (b & 0x0000ffffu));
}
}  // namespace qla::dev

// CUDA's uint4: 16 bytes, 16-byte aligned. The kernels use it only to move
// a 16-byte chunk of a shared tile to global memory (Emitter::
// emitSharedGlobalVectors: `*reinterpret_cast<uint4*>(dst) =
// *reinterpret_cast<const uint4*>(src)`), so its assignment also counts the
// moves and checks what the GPU would fault on or the tests must see: both
// addresses 16-byte aligned (a misaligned vector access traps on the GPU;
// x86 would just do it), the source inside the arena's QLA_SMEM_BYTES, the
// destination outside the arena.
struct alignas(16) uint4 {
  unsigned x, y, z, w;
  uint4 &operator=(const uint4 &o);
};
static_assert(sizeof(uint4) == 16, "uint4 is 16 bytes");
static std::atomic<long long> simU4Moves{0}, simU4Misaligned{0}, simU4BadSrc{0}, simU4BadDst{0};
inline uint4 &uint4::operator=(const uint4 &o) {
  const std::uintptr_t d = reinterpret_cast<std::uintptr_t>(this), s = reinterpret_cast<std::uintptr_t>(&o);
  const std::uintptr_t a0 = reinterpret_cast<std::uintptr_t>(qla_smem_raw), a1 = a0 + QLA_SMEM_BYTES;
  ++simU4Moves;
  if ((d | s) & 15u) ++simU4Misaligned;
  if (s < a0 || s + 16 > a1) ++simU4BadSrc;
  if (d + 16 > a0 && d < a1 + kSimSmemGuard) ++simU4BadDst;
  std::memcpy(static_cast<void *>(this), &o, 16);
  return *this;
}

// CUDA's integer min and max (the bounds of a copy with an `until` limit, a
// prefetch's columns).
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline void __syncwarp() {}

// The RUN lines rewrite every `const bool tvec_N = COND;` of the kernel (a
// paired fragment <-> global copy choosing between one access per register
// pair and the per-element fallback; a shared -> global copy choosing
// between 16-byte chunks and elements) into `... = qla_sim_note_vec(COND);`:
// each thread records its choices in order, and main() prints them (they
// must agree across threads), so that a RUN line states which path it runs.
static thread_local std::vector<bool> simVecChoices;
static std::mutex simVecMutex;
static std::vector<std::vector<bool>> simVecByThread;
inline bool qla_sim_note_vec(bool v) {
  simVecChoices.push_back(v);
  return v;
}
// Called by each thread after the kernel returns.
inline void qla_sim_publish_vec(unsigned tid) {
  std::lock_guard<std::mutex> l(simVecMutex);
  if (simVecByThread.size() <= tid) simVecByThread.resize(tid + 1);
  simVecByThread[tid] = simVecChoices;
}
// "pair"/"scalar" per recorded copy, named by `names` (the vector path's
// word is `words[k]` where given, else "pair"); "DISAGREE" when the threads
// did not all choose alike, "COUNT" when the number differs.
inline std::string qla_sim_vec_summary(const std::vector<std::string> &names,
                                       const std::vector<std::string> &words = {}) {
  std::string s;
  for (size_t t = 1; t < simVecByThread.size(); ++t)
    if (simVecByThread[t] != simVecByThread[0]) return "DISAGREE";
  if (simVecByThread.empty() || simVecByThread[0].size() != names.size())
    return "COUNT(" + std::to_string(simVecByThread.empty() ? 0 : simVecByThread[0].size()) + ")";
  for (size_t k = 0; k < names.size(); ++k)
    s += (k ? "," : "") + names[k] + ":" + (simVecByThread[0][k] ? (k < words.size() ? words[k] : "pair") : "scalar");
  return s;
}
