// CPU stand-ins for the warp-collective PTX that qla/device/warp_block.cuh is
// built on (mma.sync.m16n8k16 with f16 operands, movmatrix.trans,
// ldmatrix.x4.trans, cvt to f16x2), for emit-inv-unit-lower-mma-cpu.qla. Goes
// after inv_unit_lower_cpu_prologue.h (threads, warps, shared memory) and
// includes the real warp_block.cuh, so that its lane arithmetic is what gets
// checked. Each collective: every lane of the warp deposits its operands,
// a barrier over the warp, each lane computes its own result from all of
// them, and a second barrier before the slots are reused. f16 is _Float16
// (round to nearest even, as cvt.rn); products of two f16 are exact in f32.
#include <cstring>

#define __device__
#define __forceinline__ inline

namespace qla::dev {
typedef unsigned int u32;
struct f16 {
  unsigned short bits;
};

inline u32 pack_f16x2(float lo, float hi) {
  _Float16 h[2] = {static_cast<_Float16>(lo), static_cast<_Float16>(hi)};
  u32 r;
  std::memcpy(&r, h, 4);
  return r;
}
inline float f16x2_half(u32 v, int hi) {
  _Float16 h[2];
  std::memcpy(h, &v, 4);
  return float(h[hi]);
}

struct SimWarpMma {
  u32 u[32][6];
  const void *p[32];
};
static SimWarpMma simWarpMma[32];

inline u32 movmatrix_trans(u32 a) {
  const int l = lane_index();
  SimWarpMma &w = simWarpMma[threadIdx.x / 32];
  SimWarp &sw = simWarps[threadIdx.x / 32];
  w.u[l][0] = a;
  sw.bar.wait();
  // Lane l gets row l / 4 of the transpose: (l / 4, 2 (l % 4) + e) of M^T
  // = M(2 (l % 4) + e, l / 4), held by lane 4 (2 (l % 4) + e) + (l / 4) / 2.
  unsigned short out[2];
  for (int e = 0; e < 2; ++e) {
    const int r = 2 * (l % 4) + e, c = l / 4;
    const u32 src = w.u[4 * r + c / 2][0];
    out[e] = (unsigned short)(c % 2 ? src >> 16 : src & 0xffffu);
  }
  sw.bar.wait();
  return u32(out[0]) | (u32(out[1]) << 16);
}

inline void ldmatrix_x4_trans(u32 (&r)[4], const void *smem) {
  const int l = lane_index();
  SimWarpMma &w = simWarpMma[threadIdx.x / 32];
  SimWarp &sw = simWarps[threadIdx.x / 32];
  w.p[l] = smem;
  sw.bar.wait();
  for (int i = 0; i < 4; ++i) {
    // Matrix i's rows are at the addresses of lanes 8i .. 8i + 7; .trans:
    // register i = rows 2 (l % 4) + e, column l / 4.
    unsigned short out[2];
    for (int e = 0; e < 2; ++e) {
      const unsigned short *row = static_cast<const unsigned short *>(w.p[8 * i + 2 * (l % 4) + e]);
      out[e] = row[l / 4];
    }
    r[i] = u32(out[0]) | (u32(out[1]) << 16);
  }
  sw.bar.wait();
}

inline void mma_m16n8k16_f16_f32(float &d0, float &d1, float &d2, float &d3, const u32 (&a)[4], u32 b0, u32 b1) {
  const int l = lane_index();
  SimWarpMma &w = simWarpMma[threadIdx.x / 32];
  SimWarp &sw = simWarps[threadIdx.x / 32];
  for (int i = 0; i < 4; ++i) w.u[l][i] = a[i];
  w.u[l][4] = b0;
  w.u[l][5] = b1;
  sw.bar.wait();
  // A(m, k): lane 4 (m % 8) + (k % 8) / 2, register (m / 8) + 2 (k / 8), half k % 2.
  auto A = [&](int m, int k) { return f16x2_half(w.u[4 * (m % 8) + (k % 8) / 2][m / 8 + 2 * (k / 8)], k % 2); };
  // B(k, n): lane 4 n + (k % 8) / 2, register 4 + k / 8, half k % 2.
  auto B = [&](int k, int n) { return f16x2_half(w.u[4 * n + (k % 8) / 2][4 + k / 8], k % 2); };
  float *d[4] = {&d0, &d1, &d2, &d3};
  float out[4];
  for (int i = 0; i < 4; ++i) {
    const int m = l / 4 + 8 * (i / 2), n = 2 * (l % 4) + i % 2;
    float s = *d[i];
    for (int k = 0; k < 16; ++k) s += A(m, k) * B(k, n);
    out[i] = s;
  }
  sw.bar.wait();
  for (int i = 0; i < 4; ++i) *d[i] = out[i];
}
}  // namespace qla::dev

#define QLA_DEVICE_SIM
#include "qla/device/warp_block.cuh"
using qla::dev::u32;
