// CPU stand-ins for the CUDA built-ins and qla::dev helpers that an emitted
// inv_unit_lower kernel uses (see emit-inv-unit-lower-cpu.qla). The kernel's
// text follows this file unchanged (renamed qla_kernel), then
// inv_unit_lower_cpu_main.cpp. One std::thread per CUDA thread;
// __syncthreads() is a barrier over all of them. Only what that kernel needs:
// no wgmma, TMA, named barriers or shuffles. Compile with
// -fno-strict-aliasing (float2 accesses through reinterpret_cast).
#include <condition_variable>
#include <cstdint>
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

// Vectorized fragment <-> global copies.
struct alignas(8) float2 {
  float x, y;
};
inline float2 make_float2(float x, float y) { return float2{x, y}; }

// The kernel's dynamic shared memory (it aligns the start to 1024 itself).
alignas(1024) unsigned char qla_smem_raw[(1 << 18) + 1024];

namespace qla::dev {
inline unsigned smem_u32(const void *p) { return unsigned(reinterpret_cast<std::uintptr_t>(p)); }
inline int warpgroup_index() { return int(threadIdx.x / 128u); }
inline int warp_index_in_warpgroup() { return int((threadIdx.x / 32u) % 4u); }
inline int lane_index() { return int(threadIdx.x % 32u); }
}  // namespace qla::dev

