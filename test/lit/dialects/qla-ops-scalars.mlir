// Round trip of the scalar-access ops and bounded copies: qla.var /
// var_get / var_set, qla.global_read, qla.frag_pick, qla.inv_unit_lower, and
// qla.load / qla.store with `until` limits.
// RUN: %qla-opt %s | %qla-opt | FileCheck %s
// RUN: %qla-opt %s -mlir-print-op-generic | %qla-opt | FileCheck %s

// CHECK-LABEL: func.func @vars
// CHECK-SAME: (%[[I:.*]]: index, %[[X:.*]]: f32)
func.func @vars(%i: index, %x: f32) {
  // CHECK: %[[V:.*]] = qla.var %[[I]] : index -> <index>
  %v = qla.var %i : index -> !qla.var<index>
  // CHECK-NEXT: %[[W:.*]] = qla.var %[[X]] : f32 -> <f32>
  %w = qla.var %x : f32 -> !qla.var<f32>
  // CHECK-NEXT: %[[G:.*]] = qla.var_get %[[V]] : <index> -> index
  %g = qla.var_get %v : !qla.var<index> -> index
  // CHECK-NEXT: %[[S:.*]] = arith.addi %[[G]], %[[I]] : index
  %s = arith.addi %g, %i : index
  // CHECK-NEXT: qla.var_set %[[S]] -> %[[V]] : index -> <index>
  qla.var_set %s -> %v : index -> !qla.var<index>
  // CHECK-NEXT: qla.var_get %[[W]] : <f32> -> f32
  %h = qla.var_get %w : !qla.var<f32> -> f32
  // CHECK-NEXT: qla.var_set %[[X]] -> %[[W]] : f32 -> <f32>
  qla.var_set %x -> %w : f32 -> !qla.var<f32>
  return
}

// CHECK-LABEL: func.func @reads
// CHECK-SAME: (%[[CU:[^:]*]]: !qla.global<i32, 1>, %[[G:[^:]*]]: !qla.global<bf16, 2>, %[[N:[^:]*]]: index)
func.func @reads(%cu: !qla.global<i32, 1>, %g: !qla.global<bf16, 2>, %n: index) {
  // Integer tensors read as index, float tensors as f32.
  // CHECK: qla.global_read %[[CU]][%[[N]]] : <i32, 1> -> index
  %bos = qla.global_read %cu[%n] : !qla.global<i32, 1> -> index
  // CHECK-NEXT: qla.global_read %[[G]][%[[N]], %[[N]]] : <bf16, 2> -> f32
  %e = qla.global_read %g[%n, %n] : !qla.global<bf16, 2> -> f32
  // CHECK-NEXT: %[[F:.*]] = qla.alloc_frag : <64xf32>
  %f = qla.alloc_frag : !qla.frag<64xf32>
  // CHECK-NEXT: qla.frag_pick %[[F]][%[[N]]] : <64xf32> -> f32
  %p = qla.frag_pick %f[%n] : !qla.frag<64xf32> -> f32
  // CHECK-NEXT: %[[FI:.*]] = qla.alloc_frag : <64x64xi32>
  %fi = qla.alloc_frag : !qla.frag<64x64xi32>
  // CHECK-NEXT: qla.frag_pick %[[FI]][%[[N]], %[[N]]] : <64x64xi32> -> index
  %q = qla.frag_pick %fi[%n, %n] : !qla.frag<64x64xi32> -> index
  return
}

// CHECK-LABEL: func.func @inverse
func.func @inverse() {
  %l = qla.alloc_frag : !qla.frag<64x64xf32>
  %a = qla.alloc_frag : !qla.frag<64x64xf32>
  // CHECK: qla.inv_unit_lower %{{.*}} -> %{{.*}} : <64x64xf32> -> <64x64xf32>
  qla.inv_unit_lower %l -> %a : !qla.frag<64x64xf32> -> !qla.frag<64x64xf32>
  return
}

// CHECK-LABEL: func.func @bounded
// CHECK-SAME: (%[[A:[^:]*]]: !qla.global<bf16, 2>, %[[I:[^:]*]]: index, %[[EOS:[^:]*]]: index)
func.func @bounded(%A: !qla.global<bf16, 2>, %i: index, %eos: index) {
  %s = qla.alloc_shared : !qla.smem<64x64xbf16>
  %f = qla.alloc_frag : !qla.frag<64x64xf32>
  // CHECK: qla.load %[[A]][%[[I]], %[[I]]] -> %{{.*}} until{{ ?}}[%[[EOS]]] {limitDims = array<i64: 0>} : <bf16, 2> -> !qla.smem<64x64xbf16>
  qla.load %A[%i, %i] -> %s until [%eos] {limitDims = array<i64: 0>} : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16>
  // CHECK-NEXT: qla.load %[[A]][%[[I]], %[[I]]] -> %{{.*}} until{{ ?}}[%[[EOS]], %[[I]]] {limitDims = array<i64: 0, 1>} : <bf16, 2> -> !qla.frag<64x64xf32>
  qla.load %A[%i, %i] -> %f until [%eos, %i] {limitDims = array<i64: 0, 1>} : !qla.global<bf16, 2> -> !qla.frag<64x64xf32>
  // CHECK-NEXT: qla.store %{{.*}} -> %[[A]][%[[I]], %[[I]]] until{{ ?}}[%[[EOS]]] {limitDims = array<i64: 0>} : !qla.frag<64x64xf32> -> <bf16, 2>
  qla.store %f -> %A[%i, %i] until [%eos] {limitDims = array<i64: 0>} : !qla.frag<64x64xf32> -> !qla.global<bf16, 2>
  // Without limits the clause is omitted.
  // CHECK-NEXT: qla.store %{{.*}} -> %[[A]][%[[I]], %[[I]]] : !qla.smem<64x64xbf16> -> <bf16, 2>
  qla.store %s -> %A[%i, %i] : !qla.smem<64x64xbf16> -> !qla.global<bf16, 2>
  return
}

// qla.prefetch: a 2-D slice of a 4-D tensor with a limit, and a 1-D one.
// CHECK-LABEL: func.func @prefetch
// CHECK-SAME: (%[[Q:[^:]*]]: !qla.global<bf16, 4>, %[[P:[^:]*]]: !qla.global<f32, 1>, %[[I:[^:]*]]: index, %[[EOS:[^:]*]]: index)
func.func @prefetch(%Q: !qla.global<bf16, 4>, %P: !qla.global<f32, 1>, %i: index, %eos: index) {
  // CHECK: qla.prefetch %[[Q]][%[[I]], %[[I]], %[[I]], %[[I]]] until{{ ?}}[%[[EOS]]] {dropped = array<i64: 0, 2>, limitDims = array<i64: 1>, shape = array<i64: 64, 128>} : <bf16, 4>
  qla.prefetch %Q[%i, %i, %i, %i] until [%eos] {shape = array<i64: 64, 128>, dropped = array<i64: 0, 2>, limitDims = array<i64: 1>} : !qla.global<bf16, 4>
  // CHECK-NEXT: qla.prefetch %[[P]][%[[I]]] {shape = array<i64: 64>} : <f32, 1>
  qla.prefetch %P[%i] {shape = array<i64: 64>} : !qla.global<f32, 1>
  return
}
