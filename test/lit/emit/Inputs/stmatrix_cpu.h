// CPU stand-ins for qla::dev::stmatrix_x4(_trans) and ldmatrix_x4_trans (ldstmatrix.cuh), after
// frag_copy_cpu_prologue.h (the kernel's text follows). Written from the
// instruction's documented semantics, independently of the emitter and of
// FragLayout: stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 stores four 8x8
// matrices of 16-bit elements; lane l of the warp supplies the address of
// row l % 8 of matrix l / 8 (16 bytes, 16-byte aligned); thread t's register
// i holds column t / 4, rows 2(t%4) (low half) and 2(t%4) + 1 (high half)
// of matrix i as stored. It is warp-collective: every thread deposits its
// registers and address, a barrier (the whole block: the kernels call it
// uniformly), each thread writes the row it addressed, another barrier.
#include <atomic>
#include <cstring>

struct SimStmatrixSlot {
  unsigned regs[4];
  unsigned char *addr;
};
static SimStmatrixSlot simStm[1024];
static std::atomic<long long> simStmCalls{0}, simStmBad{0}, simLdmCalls{0};

namespace qla::dev {
// Both stmatrix forms: with .trans as above; without it thread t's register
// i holds row t / 4, columns 2(t%4) (low half) and 2(t%4) + 1 (high half)
// of matrix i as stored. Lane l addresses row l % 8 of matrix l / 8 either way.
inline void simStmatrix(void *smem, const u32 (&r)[4], bool trans) {
  const unsigned t = threadIdx.x, warp0 = t / 32 * 32, lane = t % 32;
  for (int i = 0; i < 4; ++i) simStm[t].regs[i] = r[i];
  simStm[t].addr = static_cast<unsigned char *>(smem);
  ++simStmCalls;
  __syncthreads();
  unsigned char *const row = simStm[t].addr;
  const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(row), a0 = reinterpret_cast<std::uintptr_t>(qla_smem_raw);
  if ((a & 15u) || a < a0 || a + 16 > a0 + QLA_SMEM_BYTES) {
    ++simStmBad;
  } else {
    const unsigned m = lane / 8, ra = lane % 8;  // this lane's matrix and stored row
    for (unsigned b = 0; b < 8; ++b) {
      // stored column b: from thread 4b + ra/2 (.trans), else from thread 4 ra + b/2
      const unsigned w = simStm[warp0 + (trans ? 4 * b + ra / 2 : 4 * ra + b / 2)].regs[m];
      const unsigned short h = (unsigned short)((trans ? ra : b) % 2 ? w >> 16 : w & 0xffffu);
      std::memcpy(row + 2 * b, &h, 2);
    }
  }
  __syncthreads();
}
inline void stmatrix_x4_trans(void *smem, const u32 (&r)[4]) { simStmatrix(smem, r, true); }
inline void stmatrix_x4(void *smem, const u32 (&r)[4]) { simStmatrix(smem, r, false); }

// ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 loads four 8x8 matrices:
// lane l supplies the address of row l % 8 of matrix l / 8 (16 aligned
// bytes), and with .trans thread t's register i receives column t / 4, rows
// 2(t%4) (low half) and 2(t%4) + 1 (high half) of matrix i as stored. Every
// thread deposits its address, a barrier, each thread reads its registers,
// another barrier. A bad address counts in simStmBad (reads as 0).
inline void ldmatrix_x4_trans(u32 (&r)[4], const void *smem) {
  const unsigned t = threadIdx.x, warp0 = t / 32 * 32, lane = t % 32;
  simStm[t].addr = static_cast<unsigned char *>(const_cast<void *>(smem));
  ++simLdmCalls;
  __syncthreads();
  const std::uintptr_t a0 = reinterpret_cast<std::uintptr_t>(qla_smem_raw);
  for (unsigned i = 0; i < 4; ++i) {
    unsigned short h[2] = {0, 0};
    for (unsigned e = 0; e < 2; ++e) {
      const unsigned char *const row = simStm[warp0 + 8 * i + 2 * (lane % 4) + e].addr;  // stored row 2(t%4) + e
      const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(row);
      if ((a & 15u) || a < a0 || a + 16 > a0 + QLA_SMEM_BYTES) ++simStmBad;
      else std::memcpy(&h[e], row + 2 * (lane / 4), 2);  // stored column t / 4
    }
    r[i] = unsigned(h[0]) | (unsigned(h[1]) << 16);
  }
  __syncthreads();
}

}  // namespace qla::dev
