// A CPU stand-in for qla::dev::stmatrix_x4_trans (ldstmatrix.cuh), after
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
static std::atomic<long long> simStmCalls{0}, simStmBad{0};

namespace qla::dev {
inline void stmatrix_x4_trans(void *smem, const u32 (&r)[4]) {
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
    for (unsigned b = 0; b < 8; ++b) {          // stored column b comes from thread 4b + ra/2
      const unsigned w = simStm[warp0 + 4 * b + ra / 2].regs[m];
      const unsigned short h = (unsigned short)(ra % 2 ? w >> 16 : w & 0xffffu);
      std::memcpy(row + 2 * b, &h, 2);
    }
  }
  __syncthreads();
}
}  // namespace qla::dev
