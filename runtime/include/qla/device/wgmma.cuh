// qla/device/wgmma.cuh — warpgroup MMA (wgmma.mma_async, sm_90a).
//
// One warpgroup (4 consecutive warps starting at a warp index divisible by 4)
// computes D[64 x N] (+)= A[64 x 16] * B[16 x N] per instruction, A from
// shared memory (ss) or registers (rs), B always from shared memory, D in
// f32 registers (N/2 per thread). The instruction bodies live in the
// generated wgmma_gen.cuh (see gen_wgmma.py); this file holds the API,
// the fences, the shared-memory descriptors and the register layouts.
//
// Protocol per batch of MMAs:
//   warpgroup_fence_regs(acc);   // pin accumulator accesses (compiler only)
//   wgmma_fence();               // registers (acc / A) written before -> visible
//   wgmma_ss_bf16<N,0,0>(...) x k-steps
//   wgmma_commit();              // close the group
//   wgmma_wait<0>();             // (or <1> to keep one group in flight)
//   warpgroup_fence_regs(acc);   // before reading/writing acc in C++
// Smem operands written with ordinary stores need fence_proxy_async_shared()
// + a barrier before the wgmma; TMA-written ones only need the mbarrier wait.
#pragma once

#include "qla/device/types.cuh"
#include "qla/device/wgmma_gen.cuh"

namespace qla {
namespace dev {

// ------------------------------------------------------------ fences
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
// Wait until at most N committed wgmma groups are pending.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  static_assert(N >= 0 && N <= 7, "wgmma.wait_group N in [0,7]");
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// Compiler-only fence: an empty asm that "reads and writes" every register of
// the array, so the compiler can neither move accumulator (or A-fragment)
// accesses across the asynchronous wgmma nor keep stale copies.
template <int N>
__device__ __forceinline__ void warpgroup_fence_regs(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
template <int N>
__device__ __forceinline__ void warpgroup_fence_regs(u32 (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i])::"memory");
}

// --------------------------------------------- shared-memory descriptors
// 64-bit matrix descriptor (PTX ISA "Matrix Descriptor Format" for wgmma):
//   bits  0-13  start address >> 4        (shared-window address)
//   bits 16-29  leading dimension byte offset (LBO) >> 4
//   bits 32-45  stride dimension byte offset  (SBO) >> 4
//   bits 49-51  base offset (0: tiles start 1024-byte aligned for 128B swizzle)
//   bits 62-63  swizzle: 0 none, 1 128B, 2 64B, 3 32B
//
// What LBO/SBO mean (from CUTLASS cute/atom/mma_traits_sm90_gmma.hpp,
// make_gmma_desc, which spells the canonical layouts out in 16-byte units
// T = 16 B / sizeof(elem); cross-checked against the PTX ISA "Strides"
// text: LBO = stride between core-matrix groups along the leading dimension,
// SBO = stride between 8-row groups along the strided dimension):
//
//  K-major (imm-trans = 0; rows are M or N, K contiguous), 128B swizzle:
//    Swizzle<3,4,3> o ((8,m),(T,2)) : ((8T,SBO),(1,T))
//    A row is 128 bytes (64 bf16 along K), 8 rows form a 1024-byte swizzle
//    atom; SBO = byte distance between consecutive 8-row groups; LBO is
//    unused (K never leaves the 128-byte row within one k16 step).
//    -> tile [rows][64] bf16 dense (e.g. TMA box {64, rows} with
//       CU_TENSOR_MAP_SWIZZLE_128B): SBO = 1024, LBO = 16 (any; ignored).
//    K-step advance: +32 bytes of start address per k16 (wgmma_desc_advance),
//    up to 96 inside the 128-byte row; the hardware applies the swizzle XOR
//    on absolute address bits, so base_offset stays 0 when the tile base is
//    1024-aligned. For K > 64, put further 64-wide K chunks in separate
//    [rows][64] tiles and point the descriptor at them.
//
//  MN-major (imm-trans = 1; K rows, M or N contiguous), 128B swizzle:
//    Swizzle<3,4,3> o ((T,8,m),(8,k)) : ((1,T,LBO),(8T,SBO))
//    The swizzle atom is 64 elements along MN (128 bytes) x 8 along K
//    (1024 bytes). LBO = byte distance between consecutive 64-wide atoms
//    along MN; SBO = byte distance between consecutive 8-deep K groups.
//    -> N = 64 stored [K][64] dense (TMA box {64, K}): SBO = 1024, LBO unused
//       (one atom along N; pass e.g. 8192).
//    -> N = 128 stored as two [K][64] panels (two TMA boxes {64, K} at
//       n = 0 and n = 64, panel p at p * K * 128 bytes): SBO = 1024,
//       LBO = K * 128 bytes (= 8192 for K = 64).
//       (CUTLASS's own tile_to_shape order puts the MN atoms next to each
//       other instead: then LBO = 1024 and SBO = (MN/64) * 1024.)
//    K-step advance: +16 rows * 128 B = 2048 bytes per k16.
//
//  K-major, no swizzle (interleaved core matrices of 8 rows x 16 bytes):
//    ((8,m),(T,2)) : ((1T,SBO),(1,LBO)): LBO = byte distance between the two
//    core matrices along K, SBO = between 8-row groups along M/N.
//
// All smem operand tiles with 128B swizzle must start 1024-byte aligned.
__device__ __forceinline__ u64 make_wgmma_desc(const void* smem, u32 lbo_bytes, u32 sbo_bytes,
                                               int swizzle) {
  const u32 addr = smem_u32(smem);
  u64 desc = 0;
  desc |= u64((addr & 0x3FFFFu) >> 4);
  desc |= u64((lbo_bytes >> 4) & 0x3FFFu) << 16;
  desc |= u64((sbo_bytes >> 4) & 0x3FFFu) << 32;
  desc |= u64(u32(swizzle) & 3u) << 62;
  return desc;
}
// Move the start address by `bytes` (multiple of 16). The address field is
// 14 bits of a <=228 KB window, so adding to the low word never carries out.
__device__ __forceinline__ u64 wgmma_desc_advance(u64 desc, u32 bytes) {
  return desc + u64(bytes >> 4);
}

// ----------------------------------------------------- register layouts
// Accumulator of m64nNk16 (f32, N/2 registers per thread). For thread t of
// the warpgroup (warp w = t/32, lane l = t%32), register r holds
//   row = 16*w + l/4 + 8*((r/2)%2)
//   col = 8*(r/4) + 2*(l%4) + (r%2)
// i.e. each warp owns 16 rows; in every 8-column block a thread holds the
// pair (col, col+1) of row l/4 (regs r%4 = 0,1) and of row l/4+8 (r%4 = 2,3).
// The 4 lanes 4q..4q+3 share a row (quad_sum / quad_max reduce a row).
//
// Register A operand of m64k16 (rs variants): four u32, each a packed
// bf16x2/f16x2 (lower column in the low half), laid out exactly like the
// accumulator of a 64x16 tile with pairs packed:
//   a[0] = (r0,r1)  row l/4,   cols 2*(l%4)+{0,1}
//   a[1] = (r2,r3)  row l/4+8, cols 2*(l%4)+{0,1}
//   a[2] = (r4,r5)  row l/4,   cols 8+2*(l%4)+{0,1}
//   a[3] = (r6,r7)  row l/4+8, cols 8+2*(l%4)+{0,1}
// (rows offset by 16*w). So for an accumulator D[64 x N] the A fragment for
// k-step kk (columns 16*kk .. 16*kk+15 of D) is
//   a[j] = pack(d[8*kk + 2*j], d[8*kk + 2*j + 1]),  j = 0..3
// which is what acc_to_a_bf16 / acc_to_a_f16 do: an accumulator can feed the
// next wgmma as A without touching shared memory. The A registers must not
// be modified until the wgmma that reads them has been waited for.
__host__ __device__ constexpr int acc_row_of(int t, int r) {
  return 16 * ((t % 128) / 32) + (t % 32) / 4 + 8 * ((r / 2) % 2);
}
__host__ __device__ constexpr int acc_col_of(int t, int r) {
  return 8 * (r / 4) + 2 * (t % 4) + (r % 2);
}
__device__ __forceinline__ int acc_row(int r) { return acc_row_of(int(threadIdx.x), r); }
__device__ __forceinline__ int acc_col(int r) { return acc_col_of(int(threadIdx.x), r); }

static_assert(acc_row_of(0, 0) == 0 && acc_col_of(0, 0) == 0, "acc layout");
static_assert(acc_row_of(37, 2) == 16 + 1 + 8 && acc_col_of(37, 5) == 8 + 2 + 1, "acc layout");

// D[64 x N] accumulator -> N/16 register A fragments (k-steps of 16).
template <int N>
__device__ __forceinline__ void acc_to_a_bf16(u32 (&a)[N / 16][4], const float (&d)[N / 2]) {
  static_assert(N % 16 == 0, "A fragments cover 16 columns each");
#pragma unroll
  for (int kk = 0; kk < N / 16; ++kk)
#pragma unroll
    for (int j = 0; j < 4; ++j) a[kk][j] = pack_bf16x2(d[8 * kk + 2 * j], d[8 * kk + 2 * j + 1]);
}
template <int N>
__device__ __forceinline__ void acc_to_a_f16(u32 (&a)[N / 16][4], const float (&d)[N / 2]) {
  static_assert(N % 16 == 0, "A fragments cover 16 columns each");
#pragma unroll
  for (int kk = 0; kk < N / 16; ++kk)
#pragma unroll
    for (int j = 0; j < 4; ++j) a[kk][j] = pack_f16x2(d[8 * kk + 2 * j], d[8 * kk + 2 * j + 1]);
}

// ------------------------------------------------------------------ MMAs
// D[64 x N] = (scale_d ? D : 0) + A[64 x 16] * B[16 x N], f32 accumulate.
// TRANS_A / TRANS_B: 0 = K-major operand, 1 = MN-major (the PTX imm-trans
// fields, which must be immediates, hence template parameters). scale_d is a
// run-time value turned into the predicate operand (0 -> overwrite D).
// N: multiple of 8 in [8, 256]. Each instantiation is one asm statement.
template <int N, int TRANS_A, int TRANS_B>
__device__ __forceinline__ void wgmma_ss_bf16(float (&d)[N / 2], u64 desc_a, u64 desc_b,
                                              int scale_d) {
  static_assert(N >= 8 && N <= 256 && N % 8 == 0, "wgmma N: multiple of 8 in [8,256]");
  static_assert((TRANS_A == 0 || TRANS_A == 1) && (TRANS_B == 0 || TRANS_B == 1), "trans: 0/1");
  detail::wgmma_n<N>::template ss_bf16<TRANS_A, TRANS_B>(d, desc_a, desc_b, scale_d);
}
template <int N, int TRANS_A, int TRANS_B>
__device__ __forceinline__ void wgmma_ss_f16(float (&d)[N / 2], u64 desc_a, u64 desc_b,
                                             int scale_d) {
  static_assert(N >= 8 && N <= 256 && N % 8 == 0, "wgmma N: multiple of 8 in [8,256]");
  static_assert((TRANS_A == 0 || TRANS_A == 1) && (TRANS_B == 0 || TRANS_B == 1), "trans: 0/1");
  detail::wgmma_n<N>::template ss_f16<TRANS_A, TRANS_B>(d, desc_a, desc_b, scale_d);
}
// A from registers (layout above; always "K-major" in registers).
template <int N, int TRANS_B>
__device__ __forceinline__ void wgmma_rs_bf16(float (&d)[N / 2], const u32 (&a)[4], u64 desc_b,
                                              int scale_d) {
  static_assert(N >= 8 && N <= 256 && N % 8 == 0, "wgmma N: multiple of 8 in [8,256]");
  static_assert(TRANS_B == 0 || TRANS_B == 1, "trans: 0/1");
  detail::wgmma_n<N>::template rs_bf16<TRANS_B>(d, a, desc_b, scale_d);
}
template <int N, int TRANS_B>
__device__ __forceinline__ void wgmma_rs_f16(float (&d)[N / 2], const u32 (&a)[4], u64 desc_b,
                                             int scale_d) {
  static_assert(N >= 8 && N <= 256 && N % 8 == 0, "wgmma N: multiple of 8 in [8,256]");
  static_assert(TRANS_B == 0 || TRANS_B == 1, "trans: 0/1");
  detail::wgmma_n<N>::template rs_f16<TRANS_B>(d, a, desc_b, scale_d);
}

}  // namespace dev
}  // namespace qla
