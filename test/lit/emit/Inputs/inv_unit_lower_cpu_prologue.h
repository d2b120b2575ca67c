// CPU stand-ins for the CUDA built-ins and qla::dev helpers that an emitted
// inv_unit_lower kernel uses (see emit-inv-unit-lower-cpu.qla). The kernel's
// text follows this file unchanged (renamed qla_kernel), then
// inv_unit_lower_cpu_main.cpp. One std::thread per CUDA thread;
// __syncthreads() is a barrier over all of them. Only what that kernel needs:
// no wgmma, TMA or named barriers; shuffles of floats only. Compile with
// -fno-strict-aliasing (float2 accesses through reinterpret_cast).
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#define __global__
#define __launch_bounds__(threads, blocks)
#define __shared__
#define __align__(n)
#define __restrict__ __restrict

struct SimDim3 {
  unsigned x = 0, y = 0, z = 0;
};
static thread_local SimDim3 threadIdx;

struct SimBarrier {
  std::mutex m;
  std::condition_variable cv;
  unsigned count = 0, generation = 0, threads = 0;
  void wait() {
    std::unique_lock<std::mutex> l(m);
    const unsigned gen = generation;
    if (++count == threads) {
      count = 0;
      ++generation;
      cv.notify_all();
    } else {
      cv.wait(l, [&] { return gen != generation; });
    }
  }
};
static SimBarrier simBarrier;
static void __syncthreads() { simBarrier.wait(); }

// __shfl_sync over a warp of simulated threads (the register path of
// inv_unit_lower): every lane of the warp calls it (the kernels' shuffles are
// warp-uniform), puts its value in the warp's slots, and reads the source
// lane's after a barrier over the warp; a second barrier before the slots are
// reused.
struct SimWarp {
  SimBarrier bar;
  float slot[32];
  SimWarp() { bar.threads = 32; }
};
static SimWarp simWarps[32];  // up to 1024 threads
static float __shfl_sync(unsigned, float v, int srcLane) {
  SimWarp &w = simWarps[threadIdx.x / 32];
  w.slot[threadIdx.x % 32] = v;
  w.bar.wait();
  const float r = w.slot[srcLane & 31];
  w.bar.wait();
  return r;
}

// Vectorized fragment <-> global copies.
struct alignas(8) float2 {
  float x, y;
};
inline float2 make_float2(float x, float y) { return float2{x, y}; }

// The kernel's dynamic shared memory. QLA_SMEM_BYTES is the `// smem` line of
// the emitted kernel (what a launch requests: qla.smem_bytes, no slack); the
// RUN lines define it from there. The arena is exactly that, 1024-aligned as
// on the GPU, followed by a guard that main() fills before the run and checks
// after it: the kernel must not write past the bytes it asked for.
#ifndef QLA_SMEM_BYTES
#error "define QLA_SMEM_BYTES (the emitted kernel's `// smem` line)"
#endif
constexpr unsigned kSimSmemGuard = 4096;
alignas(1024) unsigned char qla_smem_raw[QLA_SMEM_BYTES + kSimSmemGuard];

// __trap() aborts the kernel; here the whole process, loudly, so that a RUN
// line fails rather than the check being skipped.
[[noreturn]] inline void __trap() {
  std::fputs("__trap() in the kernel\n", stderr);
  std::abort();
}

// The shared-window address of a pointer. QLA_SIM_SMEM_SHIFT (default 0)
// moves the arena's simulated address off 1024-alignment, to see the
// kernel's alignment check fire.
#ifndef QLA_SIM_SMEM_SHIFT
#define QLA_SIM_SMEM_SHIFT 0
#endif
namespace qla::dev {
inline unsigned smem_u32(const void *p) { return unsigned(reinterpret_cast<std::uintptr_t>(p)) + QLA_SIM_SMEM_SHIFT; }
inline int warpgroup_index() { return int(threadIdx.x / 128u); }
inline int warp_index_in_warpgroup() { return int((threadIdx.x / 32u) % 4u); }
inline int lane_index() { return int(threadIdx.x % 32u); }

// qla/device/smem_ptr.cuh's stand-ins: a sptr<T> holds the 32-bit shared
// address smem_u32 gives, mapped back to the arena for each access.
typedef unsigned int u32;
inline unsigned char *smem_host(u32 a) { return qla_smem_raw + u32(a - smem_u32(qla_smem_raw)); }
template <class T> struct sref {
  u32 a;
  operator T() const {
    T v;
    std::memcpy(&v, smem_host(a), sizeof(T));
    return v;
  }
  const sref &operator=(const T &v) const {
    std::memcpy(smem_host(a), &v, sizeof(T));
    return *this;
  }
  const sref &operator=(const sref &o) const { return *this = T(o); }
  const sref &operator+=(const T &v) const { return *this = T(*this) + v; }
  const sref &operator-=(const T &v) const { return *this = T(*this) - v; }
  const sref &operator*=(const T &v) const { return *this = T(*this) * v; }
};
template <class T> struct sptr {
  u32 a;
  explicit sptr(u32 addr) : a(addr) {}
  sptr operator+(int i) const { return sptr(a + u32(i) * u32(sizeof(T))); }
  sref<T> operator[](int i) const { return sref<T>{a + u32(i) * u32(sizeof(T))}; }
  operator T *() const { return reinterpret_cast<T *>(smem_host(a)); }
};
// smem_get reads in place (a reference into the arena), so that the
// stand-ins' uint4 sees where a 16-byte move reads from.
template <class V, class T> inline const V &smem_get(sptr<T> p, int i) {
  return *reinterpret_cast<const V *>(static_cast<T *>(p) + i);
}
template <class V, class T> inline const V &smem_get(const T *p, int i) { return *reinterpret_cast<const V *>(p + i); }
template <class V, class T> inline void smem_put(sptr<T> p, int i, const V &v) {
  std::memcpy(static_cast<T *>(p) + i, &v, sizeof(V));
}
template <class V, class T> inline void smem_put(T *p, int i, const V &v) { std::memcpy(p + i, &v, sizeof(V)); }
}  // namespace qla::dev

