// CPU stand-ins, beyond inv_unit_lower_cpu_prologue.h and
// frag_copy_cpu_prologue.h, for what emitted reductions use: butterfly
// shuffles (__shfl_xor_sync over the simulated warp), the quad reductions
// of qla/device/math.cuh, __int_as_float. Used by emit-reduce-cpu.qla.
#include <cmath>

static float __shfl_xor_sync(unsigned mask, float v, int laneMask) {
  return __shfl_sync(mask, v, int(threadIdx.x % 32u) ^ laneMask);
}
static float __int_as_float(int x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
namespace qla::dev {
inline float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  v += __shfl_xor_sync(0xffffffffu, v, 2);
  return v;
}
inline float quad_max(float v) {
  v = std::fmax(v, __shfl_xor_sync(0xffffffffu, v, 1));
  v = std::fmax(v, __shfl_xor_sync(0xffffffffu, v, 2));
  return v;
}
}  // namespace qla::dev
