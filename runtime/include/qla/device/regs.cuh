// qla/device/regs.cuh — warpgroup register reallocation (sm_90a).
//
// setmaxnreg moves registers between warpgroups of a CTA: e.g. producer
// warpgroups drop to 24..40 and consumer (wgmma) warpgroups grow to 232..240.
// Only effective when the kernel has a register cap at entry
// (__launch_bounds__(threads, 1) or -maxrregcount) and each warpgroup's role
// is one branch of an if/else; ptxas warns (C7508) when it ignores it.
// R must be a multiple of 8 in [24, 256]; all threads of the warpgroup must
// execute it (.sync.aligned).
#pragma once

#include "qla/device/types.cuh"

namespace qla {
namespace dev {

template <int R>
__device__ __forceinline__ void setmaxnreg_inc() {
  static_assert(R >= 24 && R <= 256 && R % 8 == 0, "setmaxnreg: R in [24,256], multiple of 8");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R));
}
template <int R>
__device__ __forceinline__ void setmaxnreg_dec() {
  static_assert(R >= 24 && R <= 256 && R % 8 == 0, "setmaxnreg: R in [24,256], multiple of 8");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(R));
}

}  // namespace dev
}  // namespace qla
