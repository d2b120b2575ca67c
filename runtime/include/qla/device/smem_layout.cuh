// qla/device/smem_layout.cuh — element addressing of shared-memory tiles in
// the layouts TMA writes and wgmma reads.
//
// A [ROWS x COLS] tile with swizzle S (32, 64 or 128 bytes) is stored as
// column blocks of S bytes per row: block b holds columns [b*E, (b+1)*E),
// E = S / ELT_BYTES, as ROWS rows of S bytes. Inside a block the 16-byte
// chunks of each row are XOR-permuted by the row (the hardware's
// Swizzle<log2(S/16), 4, 3> pattern on 1024-byte aligned tiles), which is
// what makes 8-row wgmma core matrices conflict-free.
// Swizzle 0 is plain row-major.
#pragma once

namespace qla {
namespace dev {

template <int SWIZZLE, int ELT_BYTES, int ROWS, int COLS>
__device__ __forceinline__ int smem_tile_index(int row, int col) {
  if constexpr (SWIZZLE == 0) {
    return row * COLS + col;
  } else {
    constexpr int E = SWIZZLE / ELT_BYTES;        // elements per block row
    constexpr int CHUNKS = SWIZZLE / 16;          // 16-byte chunks per block row
    const int block = col / E;
    const int byte = (col % E) * ELT_BYTES;
    // The XOR key is address bits [7, 7 + log2(CHUNKS)) of the row start.
    const int key = ((row * SWIZZLE) >> 7) & (CHUNKS - 1);
    const int chunk = (byte / 16) ^ key;
    const int offset = block * ROWS * SWIZZLE + row * SWIZZLE + chunk * 16 + byte % 16;
    return offset / ELT_BYTES;
  }
}

}  // namespace dev
}  // namespace qla
