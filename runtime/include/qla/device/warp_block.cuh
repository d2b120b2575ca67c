// qla/device/warp_block.cuh — 16 x 16 f32 matrix blocks held by one warp, and
// their products on the tensor cores (mma.sync, f16 operands, f32 sums).
//
// A block is float[8]: lane l (g = l / 4, t = l % 4) holds in slot
// 4 jj + 2 h + e the element (g + 8 h, 8 jj + 2 t + e). That is two m16n8
// accumulators side by side (n-tile jj, see mma_sync.cuh), and also the
// layout of a 16 x 16 piece of a wgmma accumulator (the rows of one warp of
// the warpgroup, 16 of its columns), so a block is read from and written to
// such a fragment register by register.
//
// Built only on pack_f16x2, movmatrix_trans, ldmatrix_x4_trans,
// mma_m16n8k16_f16_f32 and lane_index (with QLA_DEVICE_SIM defined the
// includer provides those, e.g. CPU stand-ins for a test).
#pragma once

#ifndef QLA_DEVICE_SIM
#include "qla/device/types.cuh"
#include "qla/device/ldstmatrix.cuh"
#include "qla/device/mma_sync.cuh"
#include "qla/device/sync.cuh"
#endif

namespace qla {
namespace dev {

// The block as the A operand of mma.sync.m16n8k16 (rows = m, columns = k):
// register 2 jj + h is slots 4 jj + 2 h and 4 jj + 2 h + 1, no data movement.
__device__ __forceinline__ void wblock_a(u32 (&a)[4], const float (&x)[8]) {
#pragma unroll
  for (int r = 0; r < 4; ++r) a[r] = pack_f16x2(x[2 * r], x[2 * r + 1]);
}

// The block as the B operands (rows = k, columns = n) of the two n-tiles:
// b[jj][h] holds k = 8 h + 2t .. 8 h + 2t + 1 of column n = 8 jj + g, which is
// the transpose of the 8 x 8 piece (rows 8 h .., columns 8 jj ..) the lane
// holds: one movmatrix per piece.
__device__ __forceinline__ void wblock_b(u32 (&b)[2][2], const float (&x)[8]) {
#pragma unroll
  for (int jj = 0; jj < 2; ++jj)
#pragma unroll
    for (int h = 0; h < 2; ++h) b[jj][h] = movmatrix_trans(pack_f16x2(x[4 * jj + 2 * h], x[4 * jj + 2 * h + 1]));
}

// The B operands from a 16 x 16 f16 block in shared memory, row-major:
// element (k, n) at s[k * ld + n], rows 16-byte aligned (ld a multiple of 8).
// One ldmatrix.x4.trans: lanes 8 i .. 8 i + 7 address the rows of piece i
// (k rows 8 (i % 2) .., n columns 8 (i / 2) ..).
__device__ __forceinline__ void wblock_b_shared(u32 (&b)[2][2], const f16* s, int ld) {
  const int l = lane_index();
  u32 r[4];
  ldmatrix_x4_trans(r, s + ((l & 7) + 8 * ((l >> 3) & 1)) * ld + 8 * (l >> 4));
  b[0][0] = r[0];
  b[0][1] = r[1];
  b[1][0] = r[2];
  b[1][1] = r[3];
}

// d += a b over k = 16 (two m16n8k16 products, one per n-tile).
__device__ __forceinline__ void wblock_mma(float (&d)[8], const u32 (&a)[4], const u32 (&b)[2][2]) {
  mma_m16n8k16_f16_f32(d[0], d[1], d[2], d[3], a, b[0][0], b[0][1]);
  mma_m16n8k16_f16_f32(d[4], d[5], d[6], d[7], a, b[1][0], b[1][1]);
}

// The block to shared memory as f16, row-major: element (r, c) at
// s[r * ld + c] (ld even; one 32-bit store per pair of columns).
__device__ __forceinline__ void wblock_store_f16(f16* s, int ld, const float (&x)[8]) {
  const int l = lane_index(), g = l >> 2, t = l & 3;
#pragma unroll
  for (int jj = 0; jj < 2; ++jj)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      *reinterpret_cast<u32*>(s + (g + 8 * h) * ld + 8 * jj + 2 * t) = pack_f16x2(x[4 * jj + 2 * h], x[4 * jj + 2 * h + 1]);
}

}  // namespace dev
}  // namespace qla
