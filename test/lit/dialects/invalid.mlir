// One case per verifier error of the qla and qlanv ops (QlaOps.cpp,
// QlanvDialect.cpp), plus the ODS constraints and the type parsers and
// verifiers (QlaDialect.cpp).
// RUN: %qla-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// Tiles
//===----------------------------------------------------------------------===//

// Shared tile types are verified when parsed (SharedType::verify), before
// the op that uses them.
func.func @shared_rank3() {
  // expected-error @+1 {{tiles have rank 1 or 2, got rank 3}}
  %a = qla.alloc_shared : !qla.smem<2x2x2xbf16>
  return
}

// -----

func.func @shared_zero_extent() {
  // expected-error @+1 {{tile extents must be positive, got [64, 0]}}
  %a = qla.alloc_shared : !qla.smem<64x0xbf16>
  return
}

// -----

func.func @shared_swizzle() {
  // The swizzle is the width in bytes of a column block: 0 (none), 32, 64 or 128.
  // expected-error @+1 {{swizzle must be 0, 32, 64 or 128 bytes, got 100}}
  %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 100>
  return
}

// -----

// In a channel's slot list too (the channel type's parser adds its own error).
// expected-error @+2 {{swizzle must be 0, 32, 64 or 128 bytes, got 16}}
// expected-error @+1 {{failed to parse Qla_ChannelType parameter 'slotTypes'}}
func.func private @channel_slot_swizzle(!qla.channel<[!qla.smem<64x64xbf16, swizzle 16>], 2>)

// -----

func.func @frag_zero_extent() {
  // The type is checked where it is parsed (FragType::verify).
  // expected-error @+1 {{tile extents must be positive, got [0, 64]}}
  %a = qla.alloc_frag : !qla.frag<0x64xf32>
  return
}

// -----

func.func @shared_f64() {
  // expected-error @+1 {{'qla.alloc_shared' op unsupported tile dtype 'f64'}}
  %a = qla.alloc_shared : !qla.smem<64x64xf64>
  return
}

// -----

func.func @acc_layout_rows() {
  // 64 rows cannot be split over 2 warpgroups of 64 rows each.
  // expected-error @+1 {{accumulator layout needs rows a multiple of 64 per warpgroup and columns a multiple of 8, got [64, 64] over 2 warpgroup(s)}}
  %a = qla.alloc_frag : !qla.frag<64x64xf32, acc x2>
  return
}

// -----

func.func @acc_layout_cols() {
  // expected-error @+1 {{accumulator layout needs rows a multiple of 64 per warpgroup and columns a multiple of 8, got [64, 12] over 1 warpgroup(s)}}
  %a = qla.alloc_frag : !qla.frag<64x12xf32, acc x1>
  return
}

// -----

func.func @acc_layout_1d() {
  // expected-error @+1 {{the accumulator layout is 2-D}}
  %a = qla.alloc_frag : !qla.frag<64xf32, acc x1>
  return
}

// -----

func.func @row_layout() {
  // expected-error @+1 {{row-vector layout needs a 1-D fragment of 64 rows per warpgroup, got [32]}}
  %a = qla.alloc_frag : !qla.frag<32xf32, row x1>
  return
}

// -----

func.func @row_layout_2d() {
  // expected-error @+1 {{row/column layouts are 1-D}}
  %a = qla.alloc_frag : !qla.frag<64x64xf32, row x1>
  return
}

// -----

func.func @col_layout() {
  // expected-error @+1 {{column-vector layout needs a 1-D fragment of a multiple of 8, got [12]}}
  %a = qla.alloc_frag : !qla.frag<12xf32, col x1>
  return
}

// -----

// expected-error @+1 {{expected fragment layout acc, row or col}}
func.func private @bad_layout_keyword(!qla.frag<64x64xf32, diag x1>)

// -----

// expected-error @+1 {{expected warpgroup count like 'x2'}}
func.func private @bad_warpgroup_count(!qla.frag<64x64xf32, acc x0>)

// -----

//===----------------------------------------------------------------------===//
// Copies
//===----------------------------------------------------------------------===//

func.func @load_offsets(%A: !qla.global<bf16, 2>, %i: index) {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16>
  // expected-error @+1 {{'qla.load' op needs one offset per tensor dim: 2 dims, 1 offsets}}
  qla.load %A[%i] -> %a : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16>
  return
}

// -----

func.func @load_dropped_range(%A: !qla.global<bf16, 2>, %i: index) {
  %a = qla.alloc_frag : !qla.frag<64xf32>
  // expected-error @+1 {{'qla.load' op dropped dim 2 out of range}}
  qla.load %A[%i, %i] -> %a {dropped = array<i64: 2>} : !qla.global<bf16, 2> -> !qla.frag<64xf32>
  return
}

// -----

func.func @load_rank(%A: !qla.global<bf16, 2>, %i: index) {
  %a = qla.alloc_frag : !qla.frag<64xf32>
  // expected-error @+1 {{'qla.load' op slice keeps 2 dim(s) but the tile has shape [64]}}
  qla.load %A[%i, %i] -> %a : !qla.global<bf16, 2> -> !qla.frag<64xf32>
  return
}

// -----

func.func @load_dtype(%A: !qla.global<bf16, 2>, %i: index) {
  %a = qla.alloc_shared : !qla.smem<64x64xf16>
  // expected-error @+1 {{'qla.load' op global→shared copies keep the dtype: 'bf16' vs 'f16'}}
  qla.load %A[%i, %i] -> %a : !qla.global<bf16, 2> -> !qla.smem<64x64xf16>
  return
}

// -----

func.func @store_offsets(%C: !qla.global<bf16, 2>, %i: index) {
  %f = qla.alloc_frag : !qla.frag<64x64xf32>
  // expected-error @+1 {{'qla.store' op needs one offset per tensor dim: 2 dims, 3 offsets}}
  qla.store %f -> %C[%i, %i, %i] : !qla.frag<64x64xf32> -> !qla.global<bf16, 2>
  return
}

// -----

func.func @store_accumulate_dtype(%C: !qla.global<bf16, 2>, %i: index) {
  %f = qla.alloc_frag : !qla.frag<64x64xf32>
  // expected-error @+1 {{'qla.store' op accumulate adds into f32 tensors only, not 'bf16'}}
  qla.store %f -> %C[%i, %i] {accumulate} : !qla.frag<64x64xf32> -> !qla.global<bf16, 2>
  return
}

// -----

func.func @store_accumulate_shared(%C: !qla.global<f32, 2>, %i: index) {
  %s = qla.alloc_shared : !qla.smem<64x64xf32>
  // expected-error @+1 {{'qla.store' op accumulate adds a fragment, not a shared tile}}
  qla.store %s -> %C[%i, %i] {accumulate} : !qla.smem<64x64xf32> -> !qla.global<f32, 2>
  return
}

// -----

func.func @store_accumulate_transpose(%C: !qla.global<f32, 2>, %i: index) {
  %f = qla.alloc_frag : !qla.frag<64x64xf32>
  // expected-error @+1 {{'qla.store' op accumulate does not transpose}}
  qla.store %f -> %C[%i, %i] {accumulate, transpose} : !qla.frag<64x64xf32> -> !qla.global<f32, 2>
  return
}

// -----

func.func @store_dtype(%C: !qla.global<bf16, 2>, %i: index) {
  %s = qla.alloc_shared : !qla.smem<64x64xf32>
  // expected-error @+1 {{'qla.store' op shared→global copies keep the dtype: 'f32' vs 'bf16'}}
  qla.store %s -> %C[%i, %i] : !qla.smem<64x64xf32> -> !qla.global<bf16, 2>
  return
}

// -----

func.func @copy_frag_frag() {
  %f = qla.alloc_frag : !qla.frag<64x64xf32>
  %g = qla.alloc_frag : !qla.frag<64x64xbf16>
  // expected-error @+1 {{'qla.copy' op copies between tiles go shared→fragment or fragment→shared}}
  qla.copy %f -> %g : !qla.frag<64x64xf32> -> !qla.frag<64x64xbf16>
  return
}

// -----

func.func @copy_shared_shared() {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16>
  %b = qla.alloc_shared : !qla.smem<64x64xbf16>
  // expected-error @+1 {{'qla.copy' op copies between shared tiles are only valid inside a qla.put, into its slot}}
  qla.copy %a -> %b : !qla.smem<64x64xbf16> -> !qla.smem<64x64xbf16>
  return
}

// -----

func.func @copy_box_shared_shared() {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16>
  %b = qla.alloc_shared : !qla.smem<64x64xbf16>
  // expected-error @+1 {{'qla.copy' op a sub-tile (box) needs a fragment <-> shared copy}}
  qla.copy %a -> %b {box = array<i64: 0, 0, 64, 64>} : !qla.smem<64x64xbf16> -> !qla.smem<64x64xbf16>
  return
}

// -----

func.func @copy_box_transposed() {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16>
  %f = qla.alloc_frag : !qla.frag<32x32xf32>
  // expected-error @+1 {{'qla.copy' op a sub-tile (box) copy cannot be transposed}}
  qla.copy %f -> %a {transpose, box = array<i64: 0, 0, 32, 32>} : !qla.frag<32x32xf32> -> !qla.smem<64x64xbf16>
  return
}

// -----

func.func @copy_box_outside() {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16>
  %f = qla.alloc_frag : !qla.frag<64x32xf32>
  // expected-error @+1 {{'qla.copy' op box [0, 40, 64, 32] is not inside the tile [64, 64]}}
  qla.copy %f -> %a {box = array<i64: 0, 40, 64, 32>} : !qla.frag<64x32xf32> -> !qla.smem<64x64xbf16>
  return
}

// -----

func.func @copy_box_origin() {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16>
  %f = qla.alloc_frag : !qla.frag<32x32xf32>
  // expected-error @+1 {{'qla.copy' op a box's origin must be a multiple of 8 (rows and columns), got [4, 0]}}
  qla.copy %a -> %f {box = array<i64: 4, 0, 32, 32>} : !qla.smem<64x64xbf16> -> !qla.frag<32x32xf32>
  return
}

// -----

func.func @copy_box_shape() {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16>
  %f = qla.alloc_frag : !qla.frag<64x32xf32>
  // expected-error @+1 {{'qla.copy' op shape mismatch: fragment [64, 32], box [64, 64]}}
  qla.copy %a -> %f {box = array<i64: 0, 0, 64, 64>} : !qla.smem<64x64xbf16> -> !qla.frag<64x32xf32>
  return
}

// -----

func.func @copy_shape() {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16>
  %f = qla.alloc_frag : !qla.frag<64x32xf32>
  // expected-error @+1 {{'qla.copy' op shape mismatch: [64, 64] vs [64, 32]}}
  qla.copy %a -> %f : !qla.smem<64x64xbf16> -> !qla.frag<64x32xf32>
  return
}

// -----

func.func @copy_transpose_shape() {
  %a = qla.alloc_shared : !qla.smem<64x32xbf16>
  %f = qla.alloc_frag : !qla.frag<64x32xf32>
  // expected-error @+1 {{'qla.copy' op transposed shape mismatch: fragment [64, 32], tile [64, 32]}}
  qla.copy %f -> %a {transpose} : !qla.frag<64x32xf32> -> !qla.smem<64x32xbf16>
  return
}

// -----

func.func @copy_transpose_rank() {
  %a = qla.alloc_shared : !qla.smem<64xbf16>
  %f = qla.alloc_frag : !qla.frag<64xf32>
  // expected-error @+1 {{'qla.copy' op transpose needs a 2-D fragment operand}}
  qla.copy %a -> %f {transpose} : !qla.smem<64xbf16> -> !qla.frag<64xf32>
  return
}

// -----

func.func @load_transpose_shared(%A: !qla.global<bf16, 2>, %i: index) {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16>
  // expected-error @+1 {{'qla.load' op transpose needs a 2-D fragment operand}}
  qla.load %A[%i, %i] -> %a {transpose} : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16>
  return
}

// -----

func.func @store_transpose_rank(%C: !qla.global<f32, 2>, %i: index) {
  %f = qla.alloc_frag : !qla.frag<64xf32>
  // expected-error @+1 {{'qla.store' op transpose needs a 2-D fragment operand}}
  qla.store %f -> %C[%i, %i] {dropped = array<i64: 0>, transpose} : !qla.frag<64xf32> -> !qla.global<f32, 2>
  return
}

// -----

//===----------------------------------------------------------------------===//
// gemm
//===----------------------------------------------------------------------===//

func.func @gemm_a_f32() {
  %a = qla.alloc_shared : !qla.smem<64x64xf32>
  %b = qla.alloc_shared : !qla.smem<64x64xf32>
  %c = qla.alloc_frag : !qla.frag<64x64xf32>
  // expected-error @+1 {{'qla.gemm' op A must be bf16 or f16, got 'f32'}}
  qla.gemm %a, %b, %c : !qla.smem<64x64xf32>, !qla.smem<64x64xf32>, !qla.frag<64x64xf32>
  return
}

// -----

func.func @gemm_box_outside() {
  %a = qla.alloc_shared : !qla.smem<64x128xbf16>
  %b = qla.alloc_shared : !qla.smem<64x64xbf16>
  %c = qla.alloc_frag : !qla.frag<64x64xf32>
  // expected-error @+1 {{'qla.gemm' op A: the box's columns [96, 160) leave the tile's [0, 128)}}
  qla.gemm %a, %b, %c {a_box = array<i64: 0, 96, 64, 64>} : !qla.smem<64x128xbf16>, !qla.smem<64x64xbf16>, !qla.frag<64x64xf32>
  return
}

// -----

func.func @gemm_box_shape() {
  %a = qla.alloc_shared : !qla.smem<64x128xbf16>
  %b = qla.alloc_shared : !qla.smem<64x64xbf16>
  %c = qla.alloc_frag : !qla.frag<64x64xf32>
  // expected-error @+1 {{'qla.gemm' op shapes do not agree: op(A) is [64, 128], op(B) is [64, 64], C is [64, 64]}}
  qla.gemm %a, %b, %c {b_box = array<i64: 0, 0, 64, 64>} : !qla.smem<64x128xbf16>, !qla.smem<64x64xbf16>, !qla.frag<64x64xf32>
  return
}

// -----

func.func @gemm_dtype_mismatch() {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16>
  %b = qla.alloc_shared : !qla.smem<64x64xf16>
  %c = qla.alloc_frag : !qla.frag<64x64xf32>
  // expected-error @+1 {{'qla.gemm' op A and B must have the same dtype: 'bf16' vs 'f16'}}
  qla.gemm %a, %b, %c : !qla.smem<64x64xbf16>, !qla.smem<64x64xf16>, !qla.frag<64x64xf32>
  return
}

// -----

func.func @gemm_c_not_f32() {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16>
  %b = qla.alloc_shared : !qla.smem<64x64xbf16>
  %c = qla.alloc_frag : !qla.frag<64x64xbf16>
  // expected-error @+1 {{'qla.gemm' op C must be an f32 fragment, got 'bf16'}}
  qla.gemm %a, %b, %c : !qla.smem<64x64xbf16>, !qla.smem<64x64xbf16>, !qla.frag<64x64xbf16>
  return
}

// -----

func.func @gemm_1d() {
  %a = qla.alloc_shared : !qla.smem<64xbf16>
  %b = qla.alloc_shared : !qla.smem<64x64xbf16>
  %c = qla.alloc_frag : !qla.frag<64x64xf32>
  // expected-error @+1 {{'qla.gemm' op gemm operands are 2-D}}
  qla.gemm %a, %b, %c : !qla.smem<64xbf16>, !qla.smem<64x64xbf16>, !qla.frag<64x64xf32>
  return
}

// -----

func.func @gemm_transposed_register_a() {
  %a = qla.alloc_frag : !qla.frag<64x64xbf16>
  %b = qla.alloc_shared : !qla.smem<64x64xbf16>
  %c = qla.alloc_frag : !qla.frag<64x64xf32>
  // expected-error @+1 {{'qla.gemm' op a register-sourced A cannot be transposed}}
  qla.gemm %a, %b, %c {transA} : !qla.frag<64x64xbf16>, !qla.smem<64x64xbf16>, !qla.frag<64x64xf32>
  return
}

// -----

func.func @gemm_shape_n() {
  %a = qla.alloc_shared : !qla.smem<128x64xbf16>
  %b = qla.alloc_shared : !qla.smem<64x256xbf16>
  %c = qla.alloc_frag : !qla.frag<128x128xf32>
  // expected-error @+1 {{'qla.gemm' op shapes do not agree: op(A) is [128, 64], op(B) is [64, 256], C is [128, 128]}}
  qla.gemm %a, %b, %c : !qla.smem<128x64xbf16>, !qla.smem<64x256xbf16>, !qla.frag<128x128xf32>
  return
}

// -----

func.func @gemm_shape_k_transposed() {
  // Without transB, B = [256, 64] would give op(B) = [256, 64]: K disagrees.
  %a = qla.alloc_shared : !qla.smem<128x64xbf16>
  %b = qla.alloc_shared : !qla.smem<256x64xbf16>
  %c = qla.alloc_frag : !qla.frag<128x256xf32>
  // expected-error @+1 {{'qla.gemm' op shapes do not agree: op(A) is [128, 64], op(B) is [256, 64], C is [128, 256]}}
  qla.gemm %a, %b, %c : !qla.smem<128x64xbf16>, !qla.smem<256x64xbf16>, !qla.frag<128x256xf32>
  return
}

// -----

func.func @gemm_shape_transposed_a() {
  %a = qla.alloc_shared : !qla.smem<128x64xbf16>
  %b = qla.alloc_shared : !qla.smem<64x256xbf16>
  %c = qla.alloc_frag : !qla.frag<128x256xf32>
  // expected-error @+1 {{'qla.gemm' op shapes do not agree: op(A) is [64, 128], op(B) is [64, 256], C is [128, 256]}}
  qla.gemm %a, %b, %c {transA} : !qla.smem<128x64xbf16>, !qla.smem<64x256xbf16>, !qla.frag<128x256xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Fragment maps, reductions, scans
//===----------------------------------------------------------------------===//

func.func @cast_shape() {
  %s = qla.alloc_frag : !qla.frag<64x64xf32>
  %p = qla.alloc_frag : !qla.frag<64x32xbf16>
  // expected-error @+1 {{'qla.cast' op cast keeps the shape: [64, 64] vs [64, 32]}}
  qla.cast %s -> %p : !qla.frag<64x64xf32> -> !qla.frag<64x32xbf16>
  return
}

// -----

func.func @reduce_rank() {
  %s = qla.alloc_frag : !qla.frag<64xf32>
  %r = qla.alloc_frag : !qla.frag<64xf32>
  // expected-error @+1 {{'qla.reduce' op reduces a 2-D fragment into a 1-D fragment}}
  qla.reduce add %s -> %r {dim = 0} : !qla.frag<64xf32> -> !qla.frag<64xf32>
  return
}

// -----

func.func @reduce_shape() {
  %s = qla.alloc_frag : !qla.frag<64x128xf32>
  %r = qla.alloc_frag : !qla.frag<64xf32>
  // Along dim 0 the kept dim is the 128 columns.
  // expected-error @+1 {{'qla.reduce' op result has 64 elements but the kept dim has 128}}
  qla.reduce max %s -> %r {dim = 0} : !qla.frag<64x128xf32> -> !qla.frag<64xf32>
  return
}

// -----

func.func @reduce_dim() {
  %s = qla.alloc_frag : !qla.frag<64x128xf32>
  %r = qla.alloc_frag : !qla.frag<64xf32>
  // expected-error @+1 {{'qla.reduce' op attribute 'dim' failed to satisfy constraint}}
  qla.reduce add %s -> %r {dim = 2} : !qla.frag<64x128xf32> -> !qla.frag<64xf32>
  return
}

// -----

func.func @scan_shape() {
  %s = qla.alloc_frag : !qla.frag<64x128xf32>
  %r = qla.alloc_frag : !qla.frag<64xf32>
  // expected-error @+1 {{'qla.scan' op scan keeps the shape}}
  qla.scan add %s -> %r {dim = 1} : !qla.frag<64x128xf32> -> !qla.frag<64xf32>
  return
}

// -----

func.func @scan_dim() {
  %g = qla.alloc_frag : !qla.frag<64xf32>
  // expected-error @+1 {{'qla.scan' op scan dim out of range}}
  qla.scan add %g -> %g {dim = 1} : !qla.frag<64xf32> -> !qla.frag<64xf32>
  return
}

// -----

func.func @parallel_rank() {
  // expected-error @+1 {{'qla.parallel' op iterates 1 or 2 dims}}
  qla.parallel [4, 4, 4] {
  ^bb0(%i: index, %j: index, %k: index):
  }
  return
}

// -----

func.func @parallel_args() {
  // expected-error @+1 {{'qla.parallel' op body takes one index per dim}}
  qla.parallel [64, 64] {
  ^bb0(%i: index):
  }
  return
}

// -----

func.func @parallel_arg_type() {
  // expected-error @+1 {{'qla.parallel' op body arguments are indices}}
  qla.parallel [64] {
  ^bb0(%i: i32):
  }
  return
}

// -----

func.func @elem_read_outside_parallel(%i: index) {
  %f = qla.alloc_frag : !qla.frag<64xf32>
  // expected-error @+1 {{'qla.elem_read' op is only valid inside qla.parallel}}
  %x = qla.elem_read %f[%i] : !qla.frag<64xf32> -> f32
  return
}

// -----

func.func @elem_write_outside_parallel(%i: index, %x: f32) {
  %f = qla.alloc_frag : !qla.frag<64xf32>
  // expected-error @+1 {{'qla.elem_write' op is only valid inside qla.parallel}}
  qla.elem_write %x -> %f[%i] : f32 -> !qla.frag<64xf32>
  return
}

// -----

func.func @elem_read_not_block_arg() {
  %f = qla.alloc_frag : !qla.frag<64xf32>
  qla.parallel [64] {
  ^bb0(%i: index):
    %c1 = arith.constant 1 : index
    %k = arith.addi %i, %c1 : index
    // expected-error @+1 {{'qla.elem_read' op indices must be the enclosing qla.parallel's index arguments}}
    %x = qla.elem_read %f[%k] : !qla.frag<64xf32> -> f32
  }
  return
}

// -----

func.func @elem_read_outer_block_arg() {
  // An index of an enclosing parallel is not an index of this one.
  %f = qla.alloc_frag : !qla.frag<64xf32>
  qla.parallel [64] {
  ^bb0(%i: index):
    qla.parallel [64] {
    ^bb0(%j: index):
      // expected-error @+1 {{'qla.elem_read' op indices must be the enclosing qla.parallel's index arguments}}
      %x = qla.elem_read %f[%i] : !qla.frag<64xf32> -> f32
    }
  }
  return
}

// -----

func.func @elem_read_index_count() {
  %f = qla.alloc_frag : !qla.frag<64x64xf32>
  qla.parallel [64, 64] {
  ^bb0(%i: index, %j: index):
    // expected-error @+1 {{'qla.elem_read' op needs 2 indices}}
    %x = qla.elem_read %f[%i] : !qla.frag<64x64xf32> -> f32
  }
  return
}

// -----

func.func @elem_read_extent() {
  %f = qla.alloc_frag : !qla.frag<128xf32>
  qla.parallel [64, 128] {
  ^bb0(%i: index, %j: index):
    // expected-error @+1 {{'qla.elem_read' op fragment dim 0 has extent 128 but is indexed by a loop of extent 64}}
    %x = qla.elem_read %f[%i] : !qla.frag<128xf32> -> f32
  }
  return
}

// -----

func.func @elem_read_order() {
  %f = qla.alloc_frag : !qla.frag<64x64xf32>
  qla.parallel [64, 64] {
  ^bb0(%i: index, %j: index):
    // expected-error @+1 {{'qla.elem_read' op 2-D fragments are indexed [i, j] in loop order}}
    %x = qla.elem_read %f[%j, %i] : !qla.frag<64x64xf32> -> f32
  }
  return
}

// -----

func.func @elem_read_diagonal_2d() {
  // The same index twice is not [i, j] either.
  %f = qla.alloc_frag : !qla.frag<64x64xf32>
  qla.parallel [64, 64] {
  ^bb0(%i: index, %j: index):
    // expected-error @+1 {{'qla.elem_read' op 2-D fragments are indexed [i, j] in loop order}}
    %x = qla.elem_read %f[%i, %i] : !qla.frag<64x64xf32> -> f32
  }
  return
}

// -----

func.func @elem_read_rank_above_parallel(%a: !qla.frag<64x64xf32>) {
  // A 2-D fragment indexed [i, i] inside a 1-D parallel: both indices would
  // map to the one loop (a diagonal), which no layout supports.
  qla.parallel [64] {
  ^bb0(%i: index):
    // expected-error @+1 {{'qla.elem_read' op fragment has rank 2 but the enclosing qla.parallel has rank 1}}
    %x = qla.elem_read %a[%i, %i] : !qla.frag<64x64xf32> -> f32
  }
  return
}

// -----

func.func @elem_write_rank_above_parallel(%a: !qla.frag<64x64xf32>, %x: f32) {
  qla.parallel [64] {
  ^bb0(%i: index):
    // expected-error @+1 {{'qla.elem_write' op fragment has rank 2 but the enclosing qla.parallel has rank 1}}
    qla.elem_write %x -> %a[%i, %i] : f32 -> !qla.frag<64x64xf32>
  }
  return
}

// -----

func.func @elem_read_type() {
  %f = qla.alloc_frag : !qla.frag<64xbf16>
  qla.parallel [64] {
  ^bb0(%i: index):
    // expected-error @+1 {{'qla.elem_read' op result type must be f32 (float fragments) or index (integer fragments)}}
    %x = qla.elem_read %f[%i] : !qla.frag<64xbf16> -> index
  }
  return
}

// -----

func.func @elem_write_type(%x: f32) {
  %f = qla.alloc_frag : !qla.frag<64xi32>
  qla.parallel [64] {
  ^bb0(%i: index):
    // expected-error @+1 {{'qla.elem_write' op value type must be f32 (float fragments) or index (integer fragments)}}
    qla.elem_write %x -> %f[%i] : f32 -> !qla.frag<64xi32>
  }
  return
}

// -----

//===----------------------------------------------------------------------===//
// Loops, roles, channels
//===----------------------------------------------------------------------===//

func.func @block_id_dim() {
  // expected-error @+1 {{'qla.block_id' op attribute 'dim' failed to satisfy constraint}}
  %x = qla.block_id 3
  return
}

// -----

func.func @pipeline_no_iv(%n: index) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'qla.pipeline' op body takes the induction variable (index)}}
  qla.pipeline %c0 to %n stages 2 {
  }
  return
}

// -----

func.func @pipeline_stages(%n: index) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'qla.pipeline' op attribute 'stages' failed to satisfy constraint}}
  qla.pipeline %c0 to %n stages 0 {
  ^bb0(%k: index):
  }
  return
}

// -----

func.func @role_range() {
  // expected-error @+1 {{'qla.role' op bad warpgroup range 2..1}}
  qla.role "math" warpgroups 2 to 1 regs 0 {
  }
  return
}

// -----

func.func @role_regs_not_multiple_of_8() {
  // expected-error @+1 {{'qla.role' op register budget must be a multiple of 8 in [24, 256], got 100}}
  qla.role "math" warpgroups 0 to 0 regs 100 {
  }
  return
}

// -----

func.func @role_regs_too_low() {
  // expected-error @+1 {{'qla.role' op register budget must be a multiple of 8 in [24, 256], got 16}}
  qla.role "math" warpgroups 0 to 0 regs 16 {
  }
  return
}

// -----

func.func @role_regs_too_high() {
  // expected-error @+1 {{'qla.role' op register budget must be a multiple of 8 in [24, 256], got 264}}
  qla.role "math" warpgroups 0 to 0 regs 264 {
  }
  return
}

// -----

func.func @nested_roles() {
  qla.role "outer" warpgroups 0 to 1 regs 0 {
    // expected-error @+1 {{'qla.role' op roles do not nest}}
    qla.role "inner" warpgroups 0 to 0 regs 0 {
    }
  }
  return
}

// -----

func.func @role_past_threads() attributes {qla.threads = 256 : i64} {
  // expected-error @+1 {{'qla.role' op warpgroup 2 does not exist with 256 threads}}
  qla.role "math" warpgroups 1 to 2 regs 0 {
  }
  return
}

// -----

// Overlapping roles: warpgroup 1 would run both bodies. Reported at the later
// role, with the front end's wording.
func.func @role_overlap() attributes {qla.threads = 256 : i64} {
  qla.role "a" warpgroups 0 to 1 regs 0 {
  }
  // expected-error @+1 {{'qla.role' op role 'b' overlaps role 'a' (both use warpgroup 1)}}
  qla.role "b" warpgroups 1 to 1 regs 0 {
  }
  return
}

// -----

func.func @role_overlap_contains() attributes {qla.threads = 512 : i64} {
  qla.role "load" warpgroups 0 to 0 regs 0 {
  }
  qla.role "math" warpgroups 2 to 3 regs 0 {
  }
  // expected-error @+1 {{'qla.role' op role 'all' overlaps role 'load' (both use warpgroup 0)}}
  qla.role "all" warpgroups 0 to 3 regs 0 {
  }
  return
}

// -----

func.func @role_overlap_no_threads() {
  // Checked without qla.threads too.
  qla.role "a" warpgroups 1 to 2 regs 0 {
  }
  // expected-error @+1 {{'qla.role' op role 'b' overlaps role 'a' (both use warpgroup 2)}}
  qla.role "b" warpgroups 2 to 3 regs 0 {
  }
  return
}

// -----

func.func @channel_depth() {
  // expected-error @+1 {{'qla.channel' op depth must be at least 1}}
  %ch = qla.channel "ab" : !qla.channel<[!qla.smem<64x64xbf16>], 0>
  return
}

// -----

func.func @channel_frag_slot() {
  // expected-error @+1 {{'qla.channel' op slots hold shared tiles, got '!qla.frag<64x64xf32>'}}
  %ch = qla.channel "ab" : !qla.channel<[!qla.frag<64x64xf32>], 2>
  return
}

// -----

func.func @channel_unused() {
  // expected-error @+1 {{'qla.channel' op channel 'ab' needs a put and a get}}
  %ch = qla.channel "ab" : !qla.channel<[!qla.smem<64x64xbf16>], 2>
  return
}

// -----

func.func @channel_no_get(%A: !qla.global<bf16, 2>, %i: index) {
  // expected-error @+1 {{'qla.channel' op channel 'ab' needs a put and a get}}
  %ch = qla.channel "ab" : !qla.channel<[!qla.smem<64x64xbf16>], 2>
  qla.role "load" warpgroups 0 to 0 regs 0 {
    qla.put %ch {
    ^bb0(%a: !qla.smem<64x64xbf16>):
      qla.load %A[%i, %i] -> %a : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16>
    } : !qla.channel<[!qla.smem<64x64xbf16>], 2>
  }
  return
}

// -----

func.func @channel_no_put() {
  // expected-error @+1 {{'qla.channel' op channel 'ab' needs a put and a get}}
  %ch = qla.channel "ab" : !qla.channel<[!qla.smem<64x64xbf16>], 2>
  qla.role "math" warpgroups 0 to 0 regs 0 {
    qla.get %ch {
    ^bb0(%a: !qla.smem<64x64xbf16>):
    } : !qla.channel<[!qla.smem<64x64xbf16>], 2>
  }
  return
}

// -----

func.func @channel_puts_in_two_roles(%A: !qla.global<bf16, 2>, %i: index) {
  %ch = qla.channel "ab" : !qla.channel<[!qla.smem<64x64xbf16>], 2>
  qla.role "load0" warpgroups 0 to 0 regs 0 {
    // The verifier walks the channel's uses (latest first) and reports the
    // put that disagrees with the role of the puts it has already seen.
    // expected-error @+1 {{'qla.put' op puts to channel 'ab' from two roles}}
    qla.put %ch {
    ^bb0(%a: !qla.smem<64x64xbf16>):
      qla.load %A[%i, %i] -> %a : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16>
    } : !qla.channel<[!qla.smem<64x64xbf16>], 2>
  }
  qla.role "load1" warpgroups 1 to 1 regs 0 {
    qla.put %ch {
    ^bb0(%a: !qla.smem<64x64xbf16>):
      qla.load %A[%i, %i] -> %a : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16>
    } : !qla.channel<[!qla.smem<64x64xbf16>], 2>
  }
  qla.role "math" warpgroups 2 to 2 regs 0 {
    qla.get %ch {
    ^bb0(%a: !qla.smem<64x64xbf16>):
    } : !qla.channel<[!qla.smem<64x64xbf16>], 2>
  }
  return
}

// -----

func.func @put_reads_its_slot(%A: !qla.global<bf16, 2>, %i: index) {
  %ch = qla.channel "ab" : !qla.channel<[!qla.smem<64x64xbf16>, !qla.smem<64x64xbf16>], 2>
  qla.role "load" warpgroups 0 to 0 regs 0 {
    qla.put %ch {
    ^bb0(%a: !qla.smem<64x64xbf16>, %b: !qla.smem<64x64xbf16>):
      qla.load %A[%i, %i] -> %a : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16>
      // expected-error @+1 {{'qla.copy' op in a put cannot read the slot's tiles}}
      qla.copy %a -> %b : !qla.smem<64x64xbf16> -> !qla.smem<64x64xbf16>
    } : !qla.channel<[!qla.smem<64x64xbf16>, !qla.smem<64x64xbf16>], 2>
  }
  qla.role "math" warpgroups 1 to 1 regs 0 {
    qla.get %ch {
    ^bb0(%a: !qla.smem<64x64xbf16>, %b: !qla.smem<64x64xbf16>):
    } : !qla.channel<[!qla.smem<64x64xbf16>, !qla.smem<64x64xbf16>], 2>
  }
  return
}

// -----

func.func @put_non_load(%A: !qla.global<bf16, 2>, %i: index) {
  %ch = qla.channel "ab" : !qla.channel<[!qla.smem<64x64xbf16>], 2>
  qla.role "load" warpgroups 0 to 0 regs 0 {
    %b = qla.alloc_shared : !qla.smem<64x64xbf16>
    qla.put %ch {
    ^bb0(%a: !qla.smem<64x64xbf16>):
      %f = qla.alloc_frag : !qla.frag<64x64xf32>
      // expected-error @+1 {{'qla.gemm' op is not allowed in a put: a put copies global tiles, fragments or shared tiles into its slot, staging them in fragments allocated in the put (loads, fills, casts, maps)}}
      qla.gemm %b, %b, %f : !qla.smem<64x64xbf16>, !qla.smem<64x64xbf16>, !qla.frag<64x64xf32>
      qla.load %A[%i, %i] -> %a : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16>
    } : !qla.channel<[!qla.smem<64x64xbf16>], 2>
  }
  qla.role "math" warpgroups 1 to 1 regs 0 {
    qla.get %ch {
    ^bb0(%a: !qla.smem<64x64xbf16>):
    } : !qla.channel<[!qla.smem<64x64xbf16>], 2>
  }
  return
}

// -----

func.func @put_fills_outer_fragment(%A: !qla.global<f32, 2>, %i: index) {
  %ch = qla.channel "ab" : !qla.channel<[!qla.smem<64x64xbf16>], 2>
  qla.role "load" warpgroups 0 to 0 regs 0 {
    %g = qla.alloc_frag : !qla.frag<64x64xf32>
    qla.put %ch {
    ^bb0(%a: !qla.smem<64x64xbf16>):
      %z = arith.constant 0.0 : f32
      // expected-error @+1 {{'qla.fill' op in a put must write a fragment allocated in the put}}
      qla.fill %g, %z : !qla.frag<64x64xf32>, f32
      qla.copy %g -> %a : !qla.frag<64x64xf32> -> !qla.smem<64x64xbf16>
    } : !qla.channel<[!qla.smem<64x64xbf16>], 2>
  }
  qla.role "math" warpgroups 1 to 1 regs 0 {
    qla.get %ch {
    ^bb0(%a: !qla.smem<64x64xbf16>):
    } : !qla.channel<[!qla.smem<64x64xbf16>], 2>
  }
  return
}

// -----

func.func @put_map_writes_outer_fragment(%A: !qla.global<f32, 2>, %i: index) {
  %ch = qla.channel "ab" : !qla.channel<[!qla.smem<64x64xbf16>], 2>
  qla.role "load" warpgroups 0 to 0 regs 0 {
    %g = qla.alloc_frag : !qla.frag<64x64xf32>
    qla.put %ch {
    ^bb0(%a: !qla.smem<64x64xbf16>):
      %f = qla.alloc_frag : !qla.frag<64x64xf32>
      qla.load %A[%i, %i] -> %f : !qla.global<f32, 2> -> !qla.frag<64x64xf32>
      qla.parallel [64, 64] {
      ^bb0(%r: index, %c: index):
        %x = qla.elem_read %f[%r, %c] : !qla.frag<64x64xf32> -> f32
        // expected-error @+1 {{'qla.elem_write' op in a put must write a fragment allocated in the put}}
        qla.elem_write %x -> %g[%r, %c] : f32 -> !qla.frag<64x64xf32>
      }
      qla.copy %f -> %a : !qla.frag<64x64xf32> -> !qla.smem<64x64xbf16>
    } : !qla.channel<[!qla.smem<64x64xbf16>], 2>
  }
  qla.role "math" warpgroups 1 to 1 regs 0 {
    qla.get %ch {
    ^bb0(%a: !qla.smem<64x64xbf16>):
    } : !qla.channel<[!qla.smem<64x64xbf16>], 2>
  }
  return
}

// -----

func.func @put_load_elsewhere(%A: !qla.global<bf16, 2>, %i: index) {
  %other = qla.alloc_shared : !qla.smem<64x64xbf16>
  %ch = qla.channel "ab" : !qla.channel<[!qla.smem<64x64xbf16>], 2>
  qla.role "load" warpgroups 0 to 0 regs 0 {
    qla.put %ch {
    ^bb0(%a: !qla.smem<64x64xbf16>):
      // expected-error @+1 {{'qla.load' op in a put must write one of the slot's tiles}}
      qla.load %A[%i, %i] -> %other : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16>
    } : !qla.channel<[!qla.smem<64x64xbf16>], 2>
  }
  qla.role "math" warpgroups 1 to 1 regs 0 {
    qla.get %ch {
    ^bb0(%a: !qla.smem<64x64xbf16>):
    } : !qla.channel<[!qla.smem<64x64xbf16>], 2>
  }
  return
}

// -----

func.func @slot_arity(%A: !qla.global<bf16, 2>, %i: index) {
  %ch = qla.channel "ab" : !qla.channel<[!qla.smem<64x64xbf16>, !qla.smem<64x64xbf16>], 2>
  qla.role "load" warpgroups 0 to 0 regs 0 {
    // expected-error @+1 {{'qla.put' op binds 1 tiles but each slot holds 2}}
    qla.put %ch {
    ^bb0(%a: !qla.smem<64x64xbf16>):
      qla.load %A[%i, %i] -> %a : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16>
    } : !qla.channel<[!qla.smem<64x64xbf16>, !qla.smem<64x64xbf16>], 2>
  }
  qla.role "math" warpgroups 1 to 1 regs 0 {
    qla.get %ch {
    ^bb0(%a: !qla.smem<64x64xbf16>, %b: !qla.smem<64x64xbf16>):
    } : !qla.channel<[!qla.smem<64x64xbf16>, !qla.smem<64x64xbf16>], 2>
  }
  return
}

// -----

func.func @slot_type(%A: !qla.global<bf16, 2>, %i: index) {
  %ch = qla.channel "ab" : !qla.channel<[!qla.smem<64x64xbf16>], 2>
  qla.role "load" warpgroups 0 to 0 regs 0 {
    qla.put %ch {
    ^bb0(%a: !qla.smem<64x64xbf16>):
      qla.load %A[%i, %i] -> %a : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16>
    } : !qla.channel<[!qla.smem<64x64xbf16>], 2>
  }
  qla.role "math" warpgroups 1 to 1 regs 0 {
    // expected-error @+1 {{'qla.get' op slot tile type mismatch: '!qla.smem<64x32xbf16>' vs '!qla.smem<64x64xbf16>'}}
    qla.get %ch {
    ^bb0(%a: !qla.smem<64x32xbf16>):
    } : !qla.channel<[!qla.smem<64x64xbf16>], 2>
  }
  return
}

// -----

func.func @get_outside_role(%A: !qla.global<bf16, 2>, %i: index) {
  %ch = qla.channel "ab" : !qla.channel<[!qla.smem<64x64xbf16>], 2>
  qla.role "load" warpgroups 0 to 0 regs 0 {
    qla.put %ch {
    ^bb0(%a: !qla.smem<64x64xbf16>):
      qla.load %A[%i, %i] -> %a : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16>
    } : !qla.channel<[!qla.smem<64x64xbf16>], 2>
  }
  // expected-error @+1 {{'qla.get' op is only valid inside a qla.role}}
  qla.get %ch {
  ^bb0(%a: !qla.smem<64x64xbf16>):
  } : !qla.channel<[!qla.smem<64x64xbf16>], 2>
  return
}

// -----

//===----------------------------------------------------------------------===//
// qlanv
//===----------------------------------------------------------------------===//

func.func @setmaxnreg_multiple_of_8() {
  // expected-error @+1 {{'qlanv.setmaxnreg' op register count must be a multiple of 8, got 100}}
  qlanv.setmaxnreg 100 {increase = true}
  return
}

// -----

func.func @setmaxnreg_range() {
  // expected-error @+1 {{'qlanv.setmaxnreg' op attribute 'regs' failed to satisfy constraint}}
  qlanv.setmaxnreg 16 {increase = false}
  return
}

// -----

func.func @barriers_arrivals() {
  // expected-error @+1 {{'qlanv.barriers' op attribute 'arrivals' failed to satisfy constraint}}
  %b = qlanv.barriers {arrivals = 0 : i64} : !qlanv.barriers<4>
  return
}

// -----

func.func @slot_type(%i: index) {
  %a = qla.alloc_shared {count = 2 : i64} : !qla.smem<64x64xbf16, swizzle 128>
  // expected-error @+1 {{'qlanv.slot' op failed to verify that all of {buffer, result} have same type}}
  %s = "qlanv.slot"(%a, %i) : (!qla.smem<64x64xbf16, swizzle 128>, index) -> !qla.smem<64x64xbf16>
  return
}

// -----

func.func @tma_coords(%A: !qla.global<bf16, 2>, %i: index) {
  %bars = qlanv.barriers {arrivals = 1 : i64} : !qlanv.barriers<1>
  %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  // expected-error @+1 {{'qlanv.tma_load' op needs one coordinate per tensor dim}}
  qlanv.tma_load %A[%i] -> %a, %bars[%i] : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16, swizzle 128>, !qlanv.barriers<1>
  return
}

// -----

func.func @tma_dtype(%A: !qla.global<bf16, 2>, %i: index) {
  %bars = qlanv.barriers {arrivals = 1 : i64} : !qlanv.barriers<1>
  %a = qla.alloc_shared : !qla.smem<64x64xf16, swizzle 128>
  // expected-error @+1 {{'qlanv.tma_load' op TMA keeps the dtype}}
  qlanv.tma_load %A[%i, %i] -> %a, %bars[%i] : !qla.global<bf16, 2> -> !qla.smem<64x64xf16, swizzle 128>, !qlanv.barriers<1>
  return
}

// -----

func.func @tma_box_rank(%A: !qla.global<bf16, 2>, %i: index) {
  %bars = qlanv.barriers {arrivals = 1 : i64} : !qlanv.barriers<1>
  %a = qla.alloc_shared : !qla.smem<64xbf16>
  // expected-error @+1 {{'qlanv.tma_load' op box rank does not match the tensor rank}}
  qlanv.tma_load %A[%i, %i] -> %a, %bars[%i] : !qla.global<bf16, 2> -> !qla.smem<64xbf16>, !qlanv.barriers<1>
  return
}

// -----

func.func @tma_row_bytes(%A: !qla.global<bf16, 2>, %i: index) {
  %bars = qlanv.barriers {arrivals = 1 : i64} : !qlanv.barriers<1>
  %a = qla.alloc_shared : !qla.smem<64x4xbf16>
  // expected-error @+1 {{'qlanv.tma_load' op TMA rows must be a multiple of 16 bytes, got 8}}
  qlanv.tma_load %A[%i, %i] -> %a, %bars[%i] : !qla.global<bf16, 2> -> !qla.smem<64x4xbf16>, !qlanv.barriers<1>
  return
}

// -----

func.func @tma_box_extent(%A: !qla.global<bf16, 2>, %i: index) {
  %bars = qlanv.barriers {arrivals = 1 : i64} : !qlanv.barriers<1>
  %a = qla.alloc_shared : !qla.smem<512x64xbf16, swizzle 128>
  // expected-error @+1 {{'qlanv.tma_load' op TMA box extents are at most 256}}
  qlanv.tma_load %A[%i, %i] -> %a, %bars[%i] : !qla.global<bf16, 2> -> !qla.smem<512x64xbf16, swizzle 128>, !qlanv.barriers<1>
  return
}

// -----

func.func @wgmma_no_acc_layout() {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %b = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %c = qla.alloc_frag : !qla.frag<64x64xf32>
  // expected-error @+1 {{'qlanv.wgmma' op C must be a 2-D fragment with the accumulator layout}}
  qlanv.wgmma %a, %b, %c {warpgroups = 1 : i64} : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32>
  return
}

// -----

func.func @wgmma_m_per_warpgroup() {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %b = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %c = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  // expected-error @+1 {{'qlanv.wgmma' op M must be a multiple of 64 per warpgroup}}
  qlanv.wgmma %a, %b, %c {warpgroups = 2 : i64} : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  return
}

// -----

func.func @wgmma_n() {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %b = qla.alloc_shared : !qla.smem<64x512xbf16, swizzle 128>
  %c = qla.alloc_frag : !qla.frag<64x512xf32, acc x1>
  // expected-error @+1 {{'qlanv.wgmma' op N must be a multiple of 8 and at most 256, got 512}}
  qlanv.wgmma %a, %b, %c {warpgroups = 1 : i64} : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x512xbf16, swizzle 128>, !qla.frag<64x512xf32, acc x1>
  return
}

// -----

func.func @wgmma_unswizzled_b() {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %b = qla.alloc_shared : !qla.smem<64x64xbf16>
  %c = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  // expected-error @+1 {{'qlanv.wgmma' op B must be a swizzled shared tile (run layout inference)}}
  qlanv.wgmma %a, %b, %c {warpgroups = 1 : i64} : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16>, !qla.frag<64x64xf32, acc x1>
  return
}

// -----

// A put that leaves a slot tile empty would arm the barrier for bytes that
// never arrive (qla-lower-channels arms `full` with the bytes of every tile
// of the slot, 2 × 8192 here, but one TMA load brings 8192): the consumer
// would hang. Rejected.
func.func @put_missing_tile(%A: !qla.global<bf16, 2>, %i: index) {
  %ch = qla.channel "ab" : !qla.channel<[!qla.smem<64x64xbf16>, !qla.smem<64x64xbf16>], 2>
  qla.role "load" warpgroups 0 to 0 regs 0 {
    // expected-error @+1 {{'qla.put' op must copy into each slot tile exactly once; tile #1 is written 0 time(s)}}
    qla.put %ch {
    ^bb0(%a: !qla.smem<64x64xbf16>, %b: !qla.smem<64x64xbf16>):
      qla.load %A[%i, %i] -> %a : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16>
    } : !qla.channel<[!qla.smem<64x64xbf16>, !qla.smem<64x64xbf16>], 2>
  }
  qla.role "math" warpgroups 1 to 1 regs 0 {
    qla.get %ch {
    ^bb0(%a: !qla.smem<64x64xbf16>, %b: !qla.smem<64x64xbf16>):
    } : !qla.channel<[!qla.smem<64x64xbf16>, !qla.smem<64x64xbf16>], 2>
  }
  return
}

// -----

// Copies into sub-tiles of a slot tile must cover it exactly once.
func.func @put_sub_tiles_overlap() {
  %ch = qla.channel "c" : !qla.channel<[!qla.smem<64x128xbf16>], 1>
  qla.role "p" warpgroups 0 to 0 regs 0 {
    %f = qla.alloc_frag : !qla.frag<64x64xf32>
    // expected-error @+1 {{'qla.put' op copies into overlapping sub-tiles of slot tile #0}}
    qla.put %ch {
    ^bb0(%t: !qla.smem<64x128xbf16>):
      qla.copy %f -> %t {box = array<i64: 0, 0, 64, 64>} : !qla.frag<64x64xf32> -> !qla.smem<64x128xbf16>
      qla.copy %f -> %t {box = array<i64: 0, 32, 64, 64>} : !qla.frag<64x64xf32> -> !qla.smem<64x128xbf16>
    } : !qla.channel<[!qla.smem<64x128xbf16>], 1>
  }
  qla.role "q" warpgroups 1 to 1 regs 0 {
    qla.get %ch {
    ^bb0(%t: !qla.smem<64x128xbf16>):
    } : !qla.channel<[!qla.smem<64x128xbf16>], 1>
  }
  return
}

// -----

func.func @put_sub_tiles_short() {
  %ch = qla.channel "c" : !qla.channel<[!qla.smem<64x128xbf16>], 1>
  qla.role "p" warpgroups 0 to 0 regs 0 {
    %f = qla.alloc_frag : !qla.frag<64x64xf32>
    // expected-error @+1 {{'qla.put' op must copy into each slot tile exactly once; the sub-tiles written into tile #0 do not cover it}}
    qla.put %ch {
    ^bb0(%t: !qla.smem<64x128xbf16>):
      qla.copy %f -> %t {box = array<i64: 0, 64, 64, 64>} : !qla.frag<64x64xf32> -> !qla.smem<64x128xbf16>
    } : !qla.channel<[!qla.smem<64x128xbf16>], 1>
  }
  qla.role "q" warpgroups 1 to 1 regs 0 {
    qla.get %ch {
    ^bb0(%t: !qla.smem<64x128xbf16>):
    } : !qla.channel<[!qla.smem<64x128xbf16>], 1>
  }
  return
}

// -----

// Writing a slot tile twice completes the barrier with the wrong byte count
// the other way: rejected too.
func.func @put_tile_twice(%A: !qla.global<bf16, 2>, %i: index) {
  %ch = qla.channel "ab" : !qla.channel<[!qla.smem<128x64xbf16>, !qla.smem<128x64xbf16>], 2>
  qla.role "load" warpgroups 0 to 0 regs 0 {
    // expected-error @+1 {{'qla.put' op must copy into each slot tile exactly once; tile #0 is written 2 time(s)}}
    qla.put %ch {
    ^bb0(%a: !qla.smem<128x64xbf16>, %b: !qla.smem<128x64xbf16>):
      qla.load %A[%i, %i] -> %a : !qla.global<bf16, 2> -> !qla.smem<128x64xbf16>
      qla.load %A[%i, %i] -> %a : !qla.global<bf16, 2> -> !qla.smem<128x64xbf16>
      qla.load %A[%i, %i] -> %b : !qla.global<bf16, 2> -> !qla.smem<128x64xbf16>
    } : !qla.channel<[!qla.smem<128x64xbf16>, !qla.smem<128x64xbf16>], 2>
  }
  qla.role "math" warpgroups 1 to 1 regs 0 {
    qla.get %ch {
    ^bb0(%a: !qla.smem<128x64xbf16>, %b: !qla.smem<128x64xbf16>):
    } : !qla.channel<[!qla.smem<128x64xbf16>, !qla.smem<128x64xbf16>], 2>
  }
  return
}
