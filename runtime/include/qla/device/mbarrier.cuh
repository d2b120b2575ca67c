// qla/device/mbarrier.cuh — shared-memory transaction barriers (mbarrier).
//
// A barrier is a u64 in shared memory. It completes a phase when `count`
// arrivals have happened AND the expected transaction bytes (TMA
// complete_tx) have landed. Waiters pass the parity of the phase they wait
// for (0 for the first completion, then 1, 0, ...).
#pragma once

#include "qla/device/types.cuh"

namespace qla {
namespace dev {

__device__ __forceinline__ void mbarrier_init(u64* bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count)
               : "memory");
}

// Plain arrival (one of `count`).
__device__ __forceinline__ void mbarrier_arrive(u64* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}

// Arrival that also announces `bytes` of incoming async transactions (the
// usual call by the thread that issues the TMA loads of a stage).
__device__ __forceinline__ void mbarrier_arrive_expect_tx(u64* bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)),
               "r"(bytes)
               : "memory");
}

// Announce transaction bytes without arriving.
__device__ __forceinline__ void mbarrier_expect_tx(u64* bar, u32 bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)),
               "r"(bytes)
               : "memory");
}

// Non-blocking-ish probe: true once the phase with parity `phase` completed.
// (try_wait may suspend the thread for a hardware-defined time before
// returning false, which is cheaper than a pure test_wait spin.)
__device__ __forceinline__ bool mbarrier_try_wait(u64* bar, u32 phase) {
  u32 done;
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
      "selp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(done)
      : "r"(smem_u32(bar)), "r"(phase)
      : "memory");
  return done != 0;
}

// Blocking wait (acquire, CTA scope) for the phase with parity `phase`.
__device__ __forceinline__ void mbarrier_wait(u64* bar, u32 phase) {
  while (!mbarrier_try_wait(bar, phase)) {
  }
}

// Wait with acquire at CLUSTER scope: use when the phase is completed by
// remote arrivals (mbarrier_arrive_cluster) that publish data written by
// another CTA of the cluster.
__device__ __forceinline__ bool mbarrier_try_wait_cluster(u64* bar, u32 phase) {
  u32 done;
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n\t"
      "selp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(done)
      : "r"(smem_u32(bar)), "r"(phase)
      : "memory");
  return done != 0;
}
__device__ __forceinline__ void mbarrier_wait_cluster(u64* bar, u32 phase) {
  while (!mbarrier_try_wait_cluster(bar, phase)) {
  }
}

// Arrive on the barrier at the same shared-memory offset in CTA `cta` of the
// cluster (mapa translates our address into that CTA's window). Release at
// cluster scope so our prior writes are visible to that CTA's waiters.
__device__ __forceinline__ void mbarrier_arrive_cluster(u64* bar, u32 cta) {
  asm volatile(
      "{\n\t.reg .b32 remote;\n\t"
      "mapa.shared::cluster.u32 remote, %0, %1;\n\t"
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n\t}" ::"r"(smem_u32(bar)),
      "r"(cta)
      : "memory");
}

}  // namespace dev
}  // namespace qla
