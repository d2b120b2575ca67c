// CPU stand-ins for the TMA-store side of an emitted kernel (for
// emit-shared-global-cpu.qla's TMA cases, after the other prologues): the
// tensor map the kernel takes first, the bulk tensor store from a shared
// tile's column block (the layout smem_tile_index gives a swizzled tile:
// rows of S bytes, 16-byte chunks XOR-permuted by bits [7, ...) of the row
// start), and the fence / commit / wait, which have nothing to order on one
// CPU thread. The harness fills the map as the runtime would
// (encodeTensorMap: 16-byte aligned base, contiguous last dim, other strides
// multiples of 16 bytes) and zeroes it where the runtime could not encode
// it: a store through a zeroed map aborts, so the kernel's own check must
// keep it on the thread copy there.
#include <atomic>
#include <cstdlib>
#include <cstring>

#define __grid_constant__
namespace qla::dev {
struct TensorMap {
  unsigned char *base = nullptr;  // null: could not be encoded
  int rank = 0, eb = 0, swizzle = 0;
  long long dims[5] = {}, strides[5] = {};  // innermost last, strides in elements
  unsigned box[5] = {};                     // outermost first
};
inline std::atomic<long long> simTmaStores{0};
inline void fence_proxy_async_shared() {}
inline void tma_store_commit() {}
template <int N>
inline void tma_store_wait() {}
// Element (row, col) of one swizzled column block, in elements.
inline long long simBlockIndex(const TensorMap &m, long long row, long long col) {
  if (m.swizzle == 0) return row * m.box[m.rank - 1] + col;
  const long long byte = col * m.eb, key = ((row * m.swizzle) >> 7) & (m.swizzle / 16 - 1);
  return (row * m.swizzle + ((byte / 16) ^ key) * 16 + byte % 16) / m.eb;
}
// coords innermost first (the PTX order); the box's non-innermost dims are
// the block's rows (outermost slowest).
inline void simTmaStore(const TensorMap *m, const void *smem, const long long *coordsInner) {
  if (!m->base) {
    std::fprintf(stderr, "TMA store through a map the runtime could not encode\n");
    std::abort();
  }
  ++simTmaStores;
  const int R = m->rank;
  long long c[5], n = 1;
  for (int d = 0; d < R; ++d) c[d] = coordsInner[R - 1 - d];  // outermost first
  for (int d = 0; d + 1 < R; ++d) n *= m->box[d];
  const auto *s = static_cast<const unsigned char *>(smem);
  for (long long row = 0; row < n; ++row) {
    long long idx[5], rem = row;
    for (int d = R - 2; d >= 0; --d) idx[d] = rem % m->box[d], rem /= m->box[d];
    for (long long col = 0; col < m->box[R - 1]; ++col) {
      idx[R - 1] = col;
      bool in = true;
      long long off = 0;
      for (int d = 0; d < R; ++d) {
        const long long g = c[d] + idx[d];
        in = in && g >= 0 && g < m->dims[d];
        off += g * m->strides[d];
      }
      if (in) std::memcpy(m->base + off * m->eb, s + simBlockIndex(*m, row, col) * m->eb, size_t(m->eb));
    }
  }
}
inline void tma_store_2d(const TensorMap *m, const void *s, int c0, int c1) {
  const long long c[] = {c0, c1};
  simTmaStore(m, s, c);
}
inline void tma_store_3d(const TensorMap *m, const void *s, int c0, int c1, int c2) {
  const long long c[] = {c0, c1, c2};
  simTmaStore(m, s, c);
}
}  // namespace qla::dev
