// qla/device/sync.cuh — thread indexing within warpgroups, named barriers,
// proxy / mbarrier-init fences, cluster barriers.
#pragma once

#include "qla/device/types.cuh"

namespace qla {
namespace dev {

// Warpgroup (4 consecutive warps, 128 threads) of this thread. Broadcast from
// lane 0 so the compiler knows it is warp-uniform (lets role branches and
// setmaxnreg stay uniform, no divergence bookkeeping).
__device__ __forceinline__ int warpgroup_index() {
  return __shfl_sync(0xffffffffu, int(threadIdx.x / 128u), 0);
}
// Warp 0..3 inside the warpgroup (also made warp-uniform).
__device__ __forceinline__ int warp_index_in_warpgroup() {
  return __shfl_sync(0xffffffffu, int((threadIdx.x / 32u) % 4u), 0);
}
__device__ __forceinline__ int lane_index() { return int(threadIdx.x % 32u); }
// x, which the compiler cannot see through: what is computed from the result
// is computed where this stands (not hoisted out of an enclosing loop and
// held in registers across it).
__device__ __forceinline__ int opaque(int x) {
  int r;
  asm volatile("mov.b32 %0, %1;" : "=r"(r) : "r"(x));
  return r;
}
// Thread 0..127 inside the warpgroup (accumulator layouts are in terms of it).
__device__ __forceinline__ int thread_index_in_warpgroup() { return int(threadIdx.x % 128u); }

// Named barriers (ids 1..15; id 0 is __syncthreads). nthreads must be a
// multiple of 32 and the same at every participant. bar.arrive does not wait:
// producers signal with arrive, consumers block with sync.
__device__ __forceinline__ void named_barrier_sync(int id, int nthreads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(nthreads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id, int nthreads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(nthreads) : "memory");
}

// Generic-proxy writes to shared memory (st.shared, stmatrix) that the async
// proxy reads next (wgmma operands, TMA stores) need this fence in each
// writing thread, before the barrier that publishes them.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
// Makes mbarrier.init visible to the async proxy and to other CTAs of the
// cluster before anyone (TMA included) arrives on the barrier.
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void fence_acq_rel_cta() {
  asm volatile("fence.acq_rel.cta;" ::: "memory");
}

// ---- clusters (kernels launched with cluster dims) ----
__device__ __forceinline__ u32 cluster_ctarank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ u32 cluster_nctarank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
  return r;
}
// All threads of all CTAs in the cluster must execute arrive then wait.
__device__ __forceinline__ void cluster_arrive() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() {
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_sync() {
  cluster_arrive();
  cluster_wait();
}

// Programmatic dependent launch (sm_90). A kernel launched with the
// programmatic stream serialization attribute may start before the kernel
// ahead of it in the stream has finished. grid_dependency_wait blocks the
// calling thread until that kernel has completed and its memory operations
// are visible to this grid (a no-op when the launch had no such kernel);
// grid_dependents_launch lets the kernel behind this one start once every
// CTA of this grid has called it or exited. Neither orders memory by itself.
__device__ __forceinline__ void grid_dependency_wait() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}
__device__ __forceinline__ void grid_dependents_launch() {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

}  // namespace dev
}  // namespace qla
