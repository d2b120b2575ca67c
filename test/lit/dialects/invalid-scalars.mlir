// Verifier errors of the scalar-access ops and of `until` limits.
// RUN: %qla-opt %s -split-input-file -verify-diagnostics

func.func @limits_count(%A: !qla.global<bf16, 2>, %i: index) {
  %s = qla.alloc_shared : !qla.smem<64x64xbf16>
  // expected-error @+1 {{'qla.load' op needs one limit per entry of limitDims}}
  qla.load %A[%i, %i] -> %s until [%i] : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16>
  return
}

// -----

func.func @limits_dim(%A: !qla.global<bf16, 2>, %i: index) {
  %f = qla.alloc_frag : !qla.frag<64x64xf32>
  // expected-error @+1 {{'qla.store' op limit dim 2 out of range}}
  qla.store %f -> %A[%i, %i] until [%i] {limitDims = array<i64: 2>} : !qla.frag<64x64xf32> -> !qla.global<bf16, 2>
  return
}

// -----

func.func @global_read_indices(%g: !qla.global<f32, 2>, %i: index) {
  // expected-error @+1 {{'qla.global_read' op needs one index per tensor dim}}
  %x = qla.global_read %g[%i] : !qla.global<f32, 2> -> f32
  return
}

// -----

func.func @global_read_int_as_f32(%g: !qla.global<i32, 1>, %i: index) {
  // expected-error @+1 {{'qla.global_read' op integer tensors read as index, float tensors as f32}}
  %x = qla.global_read %g[%i] : !qla.global<i32, 1> -> f32
  return
}

// -----

func.func @global_read_float_as_index(%g: !qla.global<bf16, 1>, %i: index) {
  // expected-error @+1 {{'qla.global_read' op integer tensors read as index, float tensors as f32}}
  %x = qla.global_read %g[%i] : !qla.global<bf16, 1> -> index
  return
}

// -----

func.func @frag_pick_indices(%i: index) {
  %f = qla.alloc_frag : !qla.frag<64x64xf32>
  // expected-error @+1 {{'qla.frag_pick' op needs one index per fragment dim}}
  %x = qla.frag_pick %f[%i] : !qla.frag<64x64xf32> -> f32
  return
}

// -----

func.func @frag_pick_in_parallel(%i: index) {
  %f = qla.alloc_frag : !qla.frag<64xf32>
  qla.parallel [64] {
  ^bb0(%j: index):
    // expected-error @+1 {{'qla.frag_pick' op is not valid inside qla.parallel (use qla.elem_read)}}
    %x = qla.frag_pick %f[%i] : !qla.frag<64xf32> -> f32
  }
  return
}

// -----

func.func @var_init(%x: f32) {
  // expected-error @+1 {{'qla.var' op initializer type must be the variable's type}}
  %v = qla.var %x : f32 -> !qla.var<index>
  return
}

// -----

func.func @var_set_type(%x: f32, %i: index) {
  %v = qla.var %i : index -> !qla.var<index>
  // expected-error @+1 {{'qla.var_set' op value type must be the variable's type}}
  qla.var_set %x -> %v : f32 -> !qla.var<index>
  return
}

// -----

func.func @var_set_in_parallel(%i: index) {
  %v = qla.var %i : index -> !qla.var<index>
  qla.parallel [64] {
  ^bb0(%j: index):
    // expected-error @+1 {{'qla.var_set' op variables cannot be assigned inside qla.parallel}}
    qla.var_set %j -> %v : index -> !qla.var<index>
  }
  return
}

// -----

func.func @inv_not_square() {
  %l = qla.alloc_frag : !qla.frag<64x32xf32>
  // expected-error @+1 {{'qla.inv_unit_lower' op needs a square 2-D fragment}}
  qla.inv_unit_lower %l -> %l : !qla.frag<64x32xf32> -> !qla.frag<64x32xf32>
  return
}

// -----

func.func @inv_shapes() {
  %l = qla.alloc_frag : !qla.frag<64x64xf32>
  %a = qla.alloc_frag : !qla.frag<128x128xf32>
  // expected-error @+1 {{'qla.inv_unit_lower' op source and result shapes differ}}
  qla.inv_unit_lower %l -> %a : !qla.frag<64x64xf32> -> !qla.frag<128x128xf32>
  return
}

// -----

func.func @inv_dtype() {
  %l = qla.alloc_frag : !qla.frag<64x64xbf16>
  %a = qla.alloc_frag : !qla.frag<64x64xf32>
  // expected-error @+1 {{'qla.inv_unit_lower' op works on f32 fragments}}
  qla.inv_unit_lower %l -> %a : !qla.frag<64x64xbf16> -> !qla.frag<64x64xf32>
  return
}

// -----

func.func @inv_blocks_not_dividing() {
  %l = qla.alloc_frag : !qla.frag<64x64xf32>
  // expected-error @+1 {{'qla.inv_unit_lower' op blocks = 48 must divide the extent 64}}
  qla.inv_unit_lower %l -> %l {blocks = 48 : i64} : !qla.frag<64x64xf32> -> !qla.frag<64x64xf32>
  return
}

// -----

func.func @inv_blocks_and_f16_operands() {
  %l = qla.alloc_frag : !qla.frag<64x64xf32>
  // expected-error @+1 {{'qla.inv_unit_lower' op takes blocks or f16_operands, not both}}
  qla.inv_unit_lower %l -> %l {blocks = 16 : i64, f16_operands} : !qla.frag<64x64xf32> -> !qla.frag<64x64xf32>
  return
}

// -----

func.func @inv_f16_operands_not_64() {
  %l = qla.alloc_frag : !qla.frag<128x128xf32>
  // expected-error @+1 {{'qla.inv_unit_lower' op with f16_operands needs a 64 x 64 fragment, not 128 x 128}}
  qla.inv_unit_lower %l -> %l {f16_operands} : !qla.frag<128x128xf32> -> !qla.frag<128x128xf32>
  return
}

// -----

func.func @prefetch_offsets(%A: !qla.global<bf16, 2>, %i: index) {
  // expected-error @+1 {{'qla.prefetch' op needs one offset per tensor dim: 2 dims, 1 offsets}}
  qla.prefetch %A[%i] {shape = array<i64: 64, 64>} : !qla.global<bf16, 2>
  return
}

// -----

func.func @prefetch_shape(%A: !qla.global<bf16, 3>, %i: index) {
  // expected-error @+1 {{'qla.prefetch' op slice keeps 2 dim(s) but its shape has 1}}
  qla.prefetch %A[%i, %i, %i] {shape = array<i64: 64>, dropped = array<i64: 0>} : !qla.global<bf16, 3>
  return
}

// -----

func.func @prefetch_rank(%A: !qla.global<bf16, 3>, %i: index) {
  // expected-error @+1 {{'qla.prefetch' op prefetches a 1-D or 2-D slice, not 3-D}}
  qla.prefetch %A[%i, %i, %i] {shape = array<i64: 2, 64, 64>} : !qla.global<bf16, 3>
  return
}

// -----

func.func @prefetch_limits(%A: !qla.global<bf16, 2>, %i: index) {
  // expected-error @+1 {{'qla.prefetch' op needs one limit per entry of limitDims}}
  qla.prefetch %A[%i, %i] until [%i] {shape = array<i64: 64, 64>} : !qla.global<bf16, 2>
  return
}

// -----

func.func @prefetch_dropped(%A: !qla.global<bf16, 2>, %i: index) {
  // expected-error @+1 {{'qla.prefetch' op dropped dim 2 out of range}}
  qla.prefetch %A[%i, %i] {shape = array<i64: 64>, dropped = array<i64: 2>} : !qla.global<bf16, 2>
  return
}
