// qla/device/tma.cuh — Tensor Memory Accelerator (cp.async.bulk.tensor).
//
// Coordinates are element indices, c0 the INNERMOST (contiguous) dimension,
// matching the order of globalDim in cuTensorMapEncodeTiled. Out-of-bounds
// box elements are zero-filled on load and skipped on store.
//
// Loads complete on an mbarrier with complete_tx::bytes: the issuing side
// must have announced the box bytes with mbarrier_arrive_expect_tx (or
// mbarrier_expect_tx) for the phase. Destination smem must be 128-byte
// aligned (1024-byte for 128B swizzle, so that the swizzle pattern and the
// wgmma descriptor agree).
#pragma once

#include "qla/device/types.cuh"

namespace qla {
namespace dev {

namespace detail {
__device__ __forceinline__ u64 tmap_addr(const TensorMap* map) {
  return reinterpret_cast<u64>(map);
}
}  // namespace detail

// Warm the descriptor into the TMA unit's cache (issue once per CTA early).
__device__ __forceinline__ void prefetch_tensormap(const TensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(detail::tmap_addr(map)) : "memory");
}

// ---------------------------------------------------------------- loads
__device__ __forceinline__ void tma_load_1d(void* smem_dst, const TensorMap* map, u64* bar,
                                            int c0) {
  asm volatile(
      "cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3}], [%2];" ::"r"(smem_u32(smem_dst)),
      "l"(detail::tmap_addr(map)), "r"(smem_u32(bar)), "r"(c0)
      : "memory");
}
__device__ __forceinline__ void tma_load_2d(void* smem_dst, const TensorMap* map, u64* bar,
                                            int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];" ::"r"(smem_u32(smem_dst)),
      "l"(detail::tmap_addr(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
      : "memory");
}
__device__ __forceinline__ void tma_load_3d(void* smem_dst, const TensorMap* map, u64* bar,
                                            int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(smem_u32(smem_dst)),
      "l"(detail::tmap_addr(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}
__device__ __forceinline__ void tma_load_4d(void* smem_dst, const TensorMap* map, u64* bar,
                                            int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2];" ::"r"(smem_u32(smem_dst)),
      "l"(detail::tmap_addr(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}
__device__ __forceinline__ void tma_load_5d(void* smem_dst, const TensorMap* map, u64* bar,
                                            int c0, int c1, int c2, int c3, int c4) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6, %7}], [%2];" ::"r"(smem_u32(smem_dst)),
      "l"(detail::tmap_addr(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3),
      "r"(c4)
      : "memory");
}

// ------------------------------------------------------ multicast loads
// One CTA issues; the box lands at the same smem offset in every CTA of the
// cluster whose bit is set in cta_mask, and each destination's mbarrier (same
// offset) receives the complete_tx bytes. Every destination CTA must have
// initialised its barrier (fence_mbarrier_init + cluster_sync) beforehand and
// announced the bytes it expects.
__device__ __forceinline__ void tma_load_2d_multicast(void* smem_dst, const TensorMap* map,
                                                      u64* bar, int c0, int c1,
                                                      unsigned short cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%4, %5}], [%2], %3;" ::"r"(smem_u32(smem_dst)),
      "l"(detail::tmap_addr(map)), "r"(smem_u32(bar)), "h"(cta_mask), "r"(c0), "r"(c1)
      : "memory");
}
__device__ __forceinline__ void tma_load_3d_multicast(void* smem_dst, const TensorMap* map,
                                                      u64* bar, int c0, int c1, int c2,
                                                      unsigned short cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%4, %5, %6}], [%2], %3;" ::"r"(smem_u32(smem_dst)),
      "l"(detail::tmap_addr(map)), "r"(smem_u32(bar)), "h"(cta_mask), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}
__device__ __forceinline__ void tma_load_4d_multicast(void* smem_dst, const TensorMap* map,
                                                      u64* bar, int c0, int c1, int c2, int c3,
                                                      unsigned short cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%4, %5, %6, %7}], [%2], %3;" ::"r"(smem_u32(smem_dst)),
      "l"(detail::tmap_addr(map)), "r"(smem_u32(bar)), "h"(cta_mask), "r"(c0), "r"(c1), "r"(c2),
      "r"(c3)
      : "memory");
}

// --------------------------------------------------------------- prefetch
// A tensor prefetch into L2 of the box at the coordinates (innermost first),
// through a map a TMA load uses: a hint, nothing written, nothing to wait for.
__device__ __forceinline__ void tma_prefetch_1d(const TensorMap* map, int c0) {
  asm volatile("cp.async.bulk.prefetch.tensor.1d.L2.global.tile [%0, {%1}];" ::"l"(detail::tmap_addr(map)), "r"(c0)
               : "memory");
}
__device__ __forceinline__ void tma_prefetch_2d(const TensorMap* map, int c0, int c1) {
  asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];" ::"l"(detail::tmap_addr(map)),
               "r"(c0), "r"(c1)
               : "memory");
}
__device__ __forceinline__ void tma_prefetch_3d(const TensorMap* map, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.prefetch.tensor.3d.L2.global.tile [%0, {%1, %2, %3}];" ::"l"(detail::tmap_addr(map)),
               "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}
__device__ __forceinline__ void tma_prefetch_4d(const TensorMap* map, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.prefetch.tensor.4d.L2.global.tile [%0, {%1, %2, %3, %4}];" ::"l"(
                   detail::tmap_addr(map)),
               "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}
__device__ __forceinline__ void tma_prefetch_5d(const TensorMap* map, int c0, int c1, int c2, int c3, int c4) {
  asm volatile("cp.async.bulk.prefetch.tensor.5d.L2.global.tile [%0, {%1, %2, %3, %4, %5}];" ::"l"(
                   detail::tmap_addr(map)),
               "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
               : "memory");
}

// --------------------------------------------------------------- stores
// smem -> global, tracked by bulk async-groups: tma_store_commit() closes the
// group of stores issued so far by this thread, tma_store_wait<N>() waits
// until at most N groups still READ shared memory (the source may then be
// overwritten). If the smem source was written by ordinary stores, call
// fence_proxy_async_shared() in the writers and synchronise before issuing.
__device__ __forceinline__ void tma_store_1d(const TensorMap* map, const void* smem_src, int c0) {
  asm volatile("cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [%0, {%2}], [%1];" ::"l"(
                   detail::tmap_addr(map)),
               "r"(smem_u32(smem_src)), "r"(c0)
               : "memory");
}
__device__ __forceinline__ void tma_store_2d(const TensorMap* map, const void* smem_src, int c0,
                                             int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(
                   detail::tmap_addr(map)),
               "r"(smem_u32(smem_src)), "r"(c0), "r"(c1)
               : "memory");
}
__device__ __forceinline__ void tma_store_3d(const TensorMap* map, const void* smem_src, int c0,
                                             int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(
          detail::tmap_addr(map)),
      "r"(smem_u32(smem_src)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}
__device__ __forceinline__ void tma_store_4d(const TensorMap* map, const void* smem_src, int c0,
                                             int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];" ::"l"(
          detail::tmap_addr(map)),
      "r"(smem_u32(smem_src)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}
__device__ __forceinline__ void tma_store_5d(const TensorMap* map, const void* smem_src, int c0,
                                             int c1, int c2, int c3, int c4) {
  asm volatile(
      "cp.async.bulk.tensor.5d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];" ::
          "l"(detail::tmap_addr(map)),
      "r"(smem_u32(smem_src)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
      : "memory");
}

__device__ __forceinline__ void tma_store_commit() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
// Wait until at most N committed store groups are still reading smem.
template <int N>
__device__ __forceinline__ void tma_store_wait() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
// Stronger: wait until at most N groups are incomplete (writes performed to
// global), e.g. before a kernel-internal consumer reads the data back.
template <int N>
__device__ __forceinline__ void tma_store_wait_complete() {
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}

}  // namespace dev
}  // namespace qla
