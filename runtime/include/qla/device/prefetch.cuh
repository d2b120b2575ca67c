// qla/device/prefetch.cuh — an L2 prefetch of a global slice's rows (the
// language's `prefetch` statement). On the GPU prefetch_l2 is
// prefetch.global.L2; a host compiler (the simulator's device.h: nothing; the
// CPU tests: a recorder) declares its own first, so the simulator and the CPU
// tests run this very code.
#pragma once

#ifndef QLA_NOINLINE
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define QLA_NOINLINE __noinline__
#else
#define QLA_NOINLINE
#endif
#endif

namespace qla::dev {

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
// A hint: the 128-byte line holding p is fetched into L2 (no register
// written, nothing to wait for; a later TMA load of it hits L2).
__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }
#endif

// Rows r0 .. r1 - 1 and columns c0 .. c1 - 1 of the slice at p (element
// indices; rs and cs the row and column strides in bytes): thread t of nt
// prefetches its share of the rows' 128-byte lines, an element every 128
// bytes from column c0 and the row's last one (c1 - 1), so that every
// element's line is prefetched for any alignment, and nothing outside the
// rectangle is touched. Not inlined: a call site is a handful of
// instructions (a kernel prefetches several tiles a chunk).
__device__ QLA_NOINLINE void prefetch_rows_l2(const char* p, long long rs, long long cs, int r0, int r1, int c0,
                                              int c1, int t, int nt) {
  if (r1 <= r0 || c1 <= c0) return;
  const long long acs = cs < 0 ? -cs : cs;
  const int step = acs == 0 || acs >= 128 ? 1 : int(128 / acs);
  const int lines = (c1 - c0 + step - 1) / step + 1;
  const int n = (r1 - r0) * lines;
  for (int e = t; e < n; e += nt) {
    const int r = r0 + e / lines, l = e % lines;
    const int c = l == lines - 1 ? c1 - 1 : c0 + l * step;
    prefetch_l2(p + (long long)r * rs + (long long)c * cs);
  }
}

}  // namespace qla::dev
