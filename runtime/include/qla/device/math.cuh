// qla/device/math.cuh — approximate transcendental functions (MUFU) and warp
// shuffles / reductions.
//
// The .approx.ftz forms are single MUFU instructions (~2 ulp, denormals
// flushed): fine for f32 exponentials, logs and normalisers, not for
// results that need IEEE-exact rounding.
#pragma once

#include "qla/device/types.cuh"

namespace qla {
namespace dev {

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
// e^x = 2^(x*log2 e): one FMUL + one MUFU.EX2.
__device__ __forceinline__ float fast_exp(float x) { return fast_exp2(x * 1.4426950408889634f); }
__device__ __forceinline__ float fast_log2(float x) {
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float fast_rcp(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float fast_rsqrt(float x) {
  float y;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
// 1/(1+e^-x). For x -> -inf, e^-x -> +inf and rcp(inf) = 0; for x -> +inf
// the result is exactly 1. No NaN for finite x.
__device__ __forceinline__ float sigmoid(float x) { return fast_rcp(1.0f + fast_exp(-x)); }

// ---- shuffles (full warp participates) ----
__device__ __forceinline__ float shfl_xor(float v, int mask) {
  return __shfl_xor_sync(0xffffffffu, v, mask);
}
__device__ __forceinline__ int shfl_xor(int v, int mask) {
  return __shfl_xor_sync(0xffffffffu, v, mask);
}
__device__ __forceinline__ float shfl_idx(float v, int src) {
  return __shfl_sync(0xffffffffu, v, src);
}
__device__ __forceinline__ int shfl_idx(int v, int src) { return __shfl_sync(0xffffffffu, v, src); }

// max.f32 (NaN-ignoring like fmaxf), without relying on libdevice names.
__device__ __forceinline__ float max_f32(float a, float b) {
  float y;
  asm("max.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b));
  return y;
}

// Reductions over the 4 consecutive lanes (4q..4q+3) that hold one row of an
// mma/wgmma accumulator fragment. Result is in all 4 lanes.
__device__ __forceinline__ float quad_sum(float v) {
  v += shfl_xor(v, 1);
  v += shfl_xor(v, 2);
  return v;
}
__device__ __forceinline__ float quad_max(float v) {
  v = max_f32(v, shfl_xor(v, 1));
  v = max_f32(v, shfl_xor(v, 2));
  return v;
}
// Whole-warp butterfly reductions; result in every lane.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int m = 16; m >= 1; m >>= 1) v += shfl_xor(v, m);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int m = 16; m >= 1; m >>= 1) v = max_f32(v, shfl_xor(v, m));
  return v;
}

}  // namespace dev
}  // namespace qla
