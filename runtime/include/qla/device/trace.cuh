// qla/device/trace.cuh — timestamps of a kernel's waits into a device buffer,
// for kernels compiled with tracing on (CompileOptions::trace, qlac --trace,
// QLA_TRACE=1 for JIT compiles; docs/internals.md, "Tracing").
//
// The buffer is one __device__ array of the traced kernel's module, read back
// by the host (qla_trace_dump). Its layout, in 64-bit words:
//   block table, kTraceBlockWords words per block for the first
//   kTraceMaxBlocks blocks (linear id x + X (y + Y z)):
//     [0] %globaltimer at the block's start (ns), [1] the latest warpgroup's
//     end (%globaltimer, atomicMax), [2] %smid, [3] clock64 at the start,
//     [8 + w] the number of events warpgroup w recorded (its last launch);
//   events, for the first kTraceBlocks blocks, kTraceCap words per
//   warpgroup (kTraceWarpgroups of them per block): one word per event,
//   site id << 48 | clock64 (low 48 bits), recorded by the warpgroup's
//   first thread. Events past kTraceCap are dropped (the count still grows).
// Every launch of the kernel writes the same places: the buffer holds the
// last launch's trace.
#pragma once

#include "qla/device/types.cuh"

namespace qla {
namespace dev {

constexpr unsigned kTraceMaxBlocks = 65536;
constexpr unsigned kTraceBlockWords = 16;
constexpr unsigned kTraceBlocks = 8;
constexpr unsigned kTraceWarpgroups = 8;
constexpr unsigned kTraceCap = 16384;
constexpr unsigned long long kTraceWords =
    (unsigned long long)kTraceMaxBlocks * kTraceBlockWords +
    (unsigned long long)kTraceBlocks * kTraceWarpgroups * kTraceCap;

__device__ __forceinline__ u64 globaltimer() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ unsigned smid() {
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}
__device__ __forceinline__ u64 clock_now() {
  u64 t;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t));
  return t;
}

// One warpgroup's event stream (its first thread records; the others hold a
// null pointer and record nothing).
struct TraceCursor {
  u64 *events;    // null: not recorded by this thread
  unsigned n;
};

__device__ __forceinline__ unsigned trace_block_id() {
  return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}

// At the kernel's start, by every thread.
__device__ __forceinline__ TraceCursor trace_open(u64 *buf) {
  const unsigned b = trace_block_id();
  const unsigned wg = threadIdx.x / 128u;
  if (threadIdx.x == 0 && b < kTraceMaxBlocks) {
    u64 *h = buf + (u64)b * kTraceBlockWords;
    h[0] = globaltimer();
    h[1] = 0;
    h[2] = smid();
    h[3] = clock_now();
  }
  TraceCursor c{nullptr, 0};
  if (threadIdx.x % 128u == 0 && b < kTraceBlocks && wg < kTraceWarpgroups)
    c.events = buf + (u64)kTraceMaxBlocks * kTraceBlockWords + ((u64)b * kTraceWarpgroups + wg) * kTraceCap;
  return c;
}

__device__ __forceinline__ void trace_event(TraceCursor &c, unsigned site) {
  if (c.events) {
    if (c.n < kTraceCap) c.events[c.n] = ((u64)site << 48) | (clock_now() & 0xffffffffffffull);
    ++c.n;
  }
}

// At the kernel's end, by every thread (each warpgroup's first thread writes).
__device__ __forceinline__ void trace_close(u64 *buf, const TraceCursor &c) {
  const unsigned b = trace_block_id();
  if (threadIdx.x % 128u != 0 || b >= kTraceMaxBlocks) return;
  u64 *h = buf + (u64)b * kTraceBlockWords;
  atomicMax(reinterpret_cast<unsigned long long *>(&h[1]), (unsigned long long)globaltimer());
  const unsigned wg = threadIdx.x / 128u;
  if (wg < kTraceWarpgroups) h[8 + wg] = c.n;
}

}  // namespace dev
}  // namespace qla
