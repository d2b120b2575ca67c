// qla/device/atomic.cuh — adds into global memory (the language's `copy(+)
// f -> G[...]`): one atomic add an element, done at L2 (`red`: nothing comes
// back, nothing waits). f32 only; round to nearest, subnormal inputs and
// results flushed to zero (PTX's red.add.f32). The simulator's device.h
// defines the same functions for the host.
#pragma once

namespace qla::dev {

__device__ __forceinline__ void red_add_f32(float* p, float v) {
  asm volatile("red.global.add.f32 [%0], %1;" ::"l"(p), "f"(v) : "memory");
}

// Two neighbouring elements (p 8-byte aligned) in one vector reduction (sm_90).
__device__ __forceinline__ void red_add_f32x2(float* p, float v0, float v1) {
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(p), "f"(v0), "f"(v1) : "memory");
}

}  // namespace qla::dev
