// qla/device/types.cuh — scalar aliases, 16-bit float storage types, TensorMap.
//
// These headers are compiled by NVRTC at run time with no CUDA toolkit
// headers available, so nothing here includes <cuda.h>, <cstdint>,
// <cuda_bf16.h> or any standard header: everything needed is defined locally
// and conversions are inline PTX.
#pragma once

namespace qla {
namespace dev {

typedef unsigned int u32;
typedef unsigned long long u64;
typedef int i32;
typedef long long i64;
typedef unsigned short u16;

static_assert(sizeof(u32) == 4 && sizeof(u64) == 8 && sizeof(i64) == 8 && sizeof(u16) == 2,
              "unexpected scalar sizes");

// 16-bit storage-only float types (bit pattern in `bits`). Arithmetic is done
// in f32; these only exist so that loads/stores have the right width.
struct bf16 { unsigned short bits; };
struct f16 { unsigned short bits; };
static_assert(sizeof(bf16) == 2 && sizeof(f16) == 2, "16-bit storage types");

// Bit casts through a register move (no dependence on __uint_as_float etc.).
__device__ __forceinline__ float u32_as_float(u32 x) {
  float f;
  asm("mov.b32 %0, %1;" : "=f"(f) : "r"(x));
  return f;
}
__device__ __forceinline__ u32 float_as_u32(float f) {
  u32 x;
  asm("mov.b32 %0, %1;" : "=r"(x) : "f"(f));
  return x;
}

// bf16 -> f32 is exact: the bf16 bits are the top half of an f32.
__device__ __forceinline__ float to_float(bf16 x) { return u32_as_float(u32(x.bits) << 16); }

// f16 -> f32 is exact but needs a real conversion (different exponent width).
__device__ __forceinline__ float to_float(f16 x) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x.bits));
  return f;
}

// f32 -> bf16/f16, round to nearest even (NaN preserved by the hardware cvt).
__device__ __forceinline__ bf16 to_bf16(float x) {
  bf16 r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r.bits) : "f"(x));
  return r;
}
__device__ __forceinline__ f16 to_f16(float x) {
  f16 r;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r.bits) : "f"(x));
  return r;
}

// Two f32 -> one packed bf16x2 / f16x2 register with `lo` in bits 0..15.
// Note the PTX operand order: cvt.rn.bf16x2.f32 d, a, b puts a in the UPPER
// half, so `hi` is passed first.
__device__ __forceinline__ u32 pack_bf16x2(float lo, float hi) {
  u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ u32 pack_f16x2(float lo, float hi) {
  u32 r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// Unpack a bf16x2 register by shifts (exact).
__device__ __forceinline__ float unpack_bf16x2_lo(u32 v) { return u32_as_float(v << 16); }
__device__ __forceinline__ float unpack_bf16x2_hi(u32 v) { return u32_as_float(v & 0xffff0000u); }
// Unpack an f16x2 register (needs cvt for the exponent rebias).
__device__ __forceinline__ float unpack_f16x2_lo(u32 v) {
  f16 h; h.bits = (unsigned short)(v & 0xffffu); return to_float(h);
}
__device__ __forceinline__ float unpack_f16x2_hi(u32 v) {
  f16 h; h.bits = (unsigned short)(v >> 16); return to_float(h);
}
// Replace one half (hi != 0: the upper) of a packed pair, e.g. one element of
// a 16-bit register fragment stored two to a register.
__device__ __forceinline__ void set_bf16x2_half(u32& w, int hi, float v) {
  const u32 b = pack_bf16x2(v, v);
  w = hi ? ((w & 0x0000ffffu) | (b & 0xffff0000u)) : ((w & 0xffff0000u) | (b & 0x0000ffffu));
}
__device__ __forceinline__ void set_f16x2_half(u32& w, int hi, float v) {
  const u32 b = pack_f16x2(v, v);
  w = hi ? ((w & 0x0000ffffu) | (b & 0xffff0000u)) : ((w & 0xffff0000u) | (b & 0x0000ffffu));
}

// Opaque TMA descriptor, layout-compatible with the driver's CUtensorMap:
// 128 bytes. The TMA unit needs it 64-byte aligned; CUDA 13's cuda.h declares
// CUtensorMap alignas(128) (CUDA 12 used 64), so we use 128, which satisfies
// both. Kernels take it as `const __grid_constant__ qla::dev::TensorMap map`
// so that its address is a parameter-space address the TMA unit can read
// (never copy it to a local).
struct alignas(128) TensorMap { u64 opaque[16]; };
static_assert(sizeof(TensorMap) == 128 && alignof(TensorMap) == 128, "CUtensorMap layout");

// Generic -> shared-window address (what every smem PTX operand wants).
__device__ __forceinline__ u32 smem_u32(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

}  // namespace dev
}  // namespace qla
