// qla/device/ldstmatrix.cuh — warp-wide 8x8 b16 matrix loads/stores.
//
// ldmatrix/stmatrix .m8n8 move 8x8 matrices of 16-bit elements between shared
// memory and registers, one 32-bit register (2 elements) per thread per
// matrix. For matrix i of an .xK op, threads 8i..8i+7 supply the smem
// addresses of its rows 0..7 (16 bytes each, 16-byte aligned; with .x2 only
// threads 0..15 supply addresses, the others' are ignored). Thread t then
// holds, in register i, row t/4, columns 2*(t%4) and 2*(t%4)+1 of matrix i
// (low half = lower column). With .trans the matrix is transposed on the way:
// register i holds column t/4, rows 2*(t%4), 2*(t%4)+1 of the stored matrix.
// This register layout equals the wgmma accumulator / A-fragment layout of an
// 8x8 block, which is why stmatrix is the cheap way to write bf16 accumulators
// to smem and ldmatrix the way to build register A operands.
#pragma once

#include "qla/device/types.cuh"

namespace qla {
namespace dev {

__device__ __forceinline__ void ldmatrix_x4(u32 (&r)[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(smem))
               : "memory");
}
__device__ __forceinline__ void ldmatrix_x4_trans(u32 (&r)[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(smem))
               : "memory");
}
__device__ __forceinline__ void ldmatrix_x2(u32 (&r)[2], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_u32(smem))
               : "memory");
}
__device__ __forceinline__ void ldmatrix_x2_trans(u32 (&r)[2], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_u32(smem))
               : "memory");
}

__device__ __forceinline__ void stmatrix_x4(void* smem, const u32 (&r)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(
                   smem_u32(smem)),
               "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
}
__device__ __forceinline__ void stmatrix_x4_trans(void* smem, const u32 (&r)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(
                   smem_u32(smem)),
               "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
}
__device__ __forceinline__ void stmatrix_x2(void* smem, const u32 (&r)[2]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};" ::"r"(smem_u32(smem)),
               "r"(r[0]), "r"(r[1])
               : "memory");
}
__device__ __forceinline__ void stmatrix_x2_trans(void* smem, const u32 (&r)[2]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};" ::"r"(
                   smem_u32(smem)),
               "r"(r[0]), "r"(r[1])
               : "memory");
}

}  // namespace dev
}  // namespace qla
