// qla/device/mma_sync.cuh — warp-level tensor-core products (mma.sync) and
// the register transpose that feeds them.
//
// mma.sync.m16n8k16 (f16 operands, f32 accumulation), per lane l with
// g = l / 4 and t = l % 4 (PTX ISA, "Matrix Fragments for mma.m16n8k16"):
//   A (16 x 16, row-major), four f16x2 registers: a[0] = (g, 2t .. 2t+1),
//     a[1] = (g + 8, 2t ..), a[2] = (g, 2t + 8 ..), a[3] = (g + 8, 2t + 8 ..);
//   B (16 x 8, k x n), two f16x2 registers: b0 = (k = 2t .. 2t+1, n = g),
//     b1 = (k = 2t + 8 .., n = g);
//   C, D (16 x 8, f32): d[0], d[1] = (g, 2t + e), d[2], d[3] = (g + 8, 2t + e).
// The low half of an f16x2 register is the lower column (or k) index.
#pragma once

#include "qla/device/types.cuh"

namespace qla {
namespace dev {

// d += a * b, one m16n8k16 product.
__device__ __forceinline__ void mma_m16n8k16_f16_f32(float& d0, float& d1, float& d2, float& d3, const u32 (&a)[4],
                                                     u32 b0, u32 b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The transpose of an 8 x 8 matrix of 16-bit elements held one register per
// lane, lane l holding row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1: after
// it, lane l holds row l / 4 of the transpose, i.e. rows 2 (l % 4) and
// 2 (l % 4) + 1 of column l / 4 (sm_75+).
__device__ __forceinline__ u32 movmatrix_trans(u32 a) {
  u32 r;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(r) : "r"(a));
  return r;
}

}  // namespace dev
}  // namespace qla
