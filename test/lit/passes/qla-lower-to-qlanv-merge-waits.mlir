// qla-lower-to-qlanv, wait merging (mergeWaits): a `wgmma_wait 0` directly
// followed, across nothing but qla.alloc_frag and pure arith, by another
// wgmma chain that touches none of its fragments is dropped, and the later
// wait also lists its accumulator. The commits all stay, so independent
// gemms are in flight together. A shared dependence (same C, same register
// A) or any other op in between keeps both waits.
// RUN: %qla-opt %s -split-input-file -qla-lower-to-qlanv | FileCheck %s

// Two independent gemms, an allocation in between: one wait for both.
// CHECK-LABEL: func.func @two_independent
// CHECK: %[[C1:.*]] = qla.alloc_frag : <64x64xf32, acc x1>
// CHECK-NEXT: qlanv.wgmma_fence %[[C1]] : !qla.frag<64x64xf32, acc x1>
// CHECK-NEXT: qlanv.wgmma %{{.*}}, %{{.*}}, %[[C1]] {warpgroups = 1 : i64}
// CHECK-NEXT: qlanv.wgmma_commit
// CHECK-NEXT: %[[C2:.*]] = qla.alloc_frag : <64x64xf32, acc x1>
// CHECK-NEXT: qlanv.wgmma_fence %[[C2]] : !qla.frag<64x64xf32, acc x1>
// CHECK-NEXT: qlanv.wgmma %{{.*}}, %{{.*}}, %[[C2]] {transB, warpgroups = 1 : i64}
// CHECK-NEXT: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.wgmma_wait 0 %[[C1]], %[[C2]] : !qla.frag<64x64xf32, acc x1>, !qla.frag<64x64xf32, acc x1>
// CHECK-NEXT: return
func.func @two_independent() {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %b = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %c1 = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  qla.gemm %a, %b, %c1 : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  %c2 = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  qla.gemm %a, %b, %c2 {transB} : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  return
}

// -----

// Three in a row, with scalar arithmetic between them and a register-sourced
// A in the third: the merged wait merges again and covers all three
// accumulators (not the register A, which only the fence lists).
// CHECK-LABEL: func.func @three_independent
// CHECK: %[[P:.*]] = qla.alloc_frag : <64x64xbf16, acc x1>
// CHECK-NEXT: %[[C1:.*]] = qla.alloc_frag : <64x64xf32, acc x1>
// CHECK-NEXT: qlanv.wgmma_fence %[[C1]] :
// CHECK-NEXT: qlanv.wgmma
// CHECK-NEXT: qlanv.wgmma_commit
// CHECK-NEXT: arith.constant 3 : index
// CHECK-NEXT: arith.muli
// CHECK-NEXT: %[[C2:.*]] = qla.alloc_frag : <64x64xf32, acc x1>
// CHECK-NEXT: qlanv.wgmma_fence %[[C2]] :
// CHECK-NEXT: qlanv.wgmma
// CHECK-NEXT: qlanv.wgmma_commit
// CHECK-NEXT: %[[C3:.*]] = qla.alloc_frag : <64x64xf32, acc x1>
// CHECK-NEXT: arith.addi
// CHECK-NEXT: qlanv.wgmma_fence %[[C3]], %[[P]] : !qla.frag<64x64xf32, acc x1>, !qla.frag<64x64xbf16, acc x1>
// CHECK-NEXT: qlanv.wgmma %[[P]], %{{.*}}, %[[C3]] {accumulate, warpgroups = 1 : i64}
// CHECK-NEXT: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.wgmma_wait 0 %[[C1]], %[[C2]], %[[C3]] : !qla.frag<64x64xf32, acc x1>, !qla.frag<64x64xf32, acc x1>, !qla.frag<64x64xf32, acc x1>
// CHECK-NEXT: return
func.func @three_independent(%n: index) {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %b = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %p = qla.alloc_frag : !qla.frag<64x64xbf16, acc x1>
  %c1 = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  qla.gemm %a, %b, %c1 : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  %k = arith.constant 3 : index
  %m = arith.muli %n, %k : index
  %c2 = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  qla.gemm %a, %b, %c2 : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  %c3 = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  %s = arith.addi %m, %n : index
  qla.gemm %p, %b, %c3 {accumulate} : !qla.frag<64x64xbf16, acc x1>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  return
}

// -----

// The second gemm accumulates into the first's C, with the same shape and
// shared operands: the tensor cores order the two, so one wait after both.
// CHECK-LABEL: func.func @same_accumulator
// CHECK: %[[C:.*]] = qla.alloc_frag : <64x64xf32, acc x1>
// CHECK-NEXT: qlanv.wgmma_fence %[[C]]
// CHECK-NEXT: qlanv.wgmma
// CHECK-NEXT: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.wgmma_fence %[[C]]
// CHECK-NEXT: qlanv.wgmma {{.*}}accumulate
// CHECK-NEXT: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.wgmma_wait 0 %[[C]] :
// CHECK-NEXT: return
func.func @same_accumulator() {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %b = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %c = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  qla.gemm %a, %b, %c : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  qla.gemm %a, %b, %c {accumulate} : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  return
}

// -----

// The same accumulator, but the second product's A comes from registers (or
// its shape differs): two waits.
// CHECK-LABEL: func.func @same_accumulator_register_a
// CHECK: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.wgmma_wait 0
// CHECK-NEXT: qlanv.wgmma_fence
// CHECK-NEXT: qlanv.wgmma {{.*}}accumulate
// CHECK-NEXT: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.wgmma_wait 0
// CHECK-NEXT: return
func.func @same_accumulator_register_a() {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %b = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %p = qla.alloc_frag : !qla.frag<64x64xbf16, acc x1>
  %c = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  qla.gemm %a, %b, %c : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  qla.gemm %p, %b, %c {accumulate} : !qla.frag<64x64xbf16, acc x1>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  return
}

// -----

// C1, C2, then C1 again: the first two share a wait; the third reuses an
// accumulator of that merged wait, so it keeps its own.
// CHECK-LABEL: func.func @third_reuses_first
// CHECK: %[[C1:.*]] = qla.alloc_frag
// CHECK-NEXT: %[[C2:.*]] = qla.alloc_frag
// CHECK-NEXT: qlanv.wgmma_fence %[[C1]]
// CHECK-NEXT: qlanv.wgmma
// CHECK-NEXT: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.wgmma_fence %[[C2]]
// CHECK-NEXT: qlanv.wgmma
// CHECK-NEXT: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.wgmma_wait 0 %[[C1]], %[[C2]] :
// CHECK-NEXT: qlanv.wgmma_fence %[[C1]]
// CHECK-NEXT: qlanv.wgmma
// CHECK-NEXT: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.wgmma_wait 0 %[[C1]] :
// CHECK-NEXT: return
func.func @third_reuses_first() {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %b = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %c1 = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  %c2 = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  qla.gemm %a, %b, %c1 : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  qla.gemm %a, %b, %c2 : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  qla.gemm %a, %b, %c1 {accumulate} : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  return
}

// -----

// The second gemm reads the first's accumulator as its register A (through
// the cast to bf16 that a register A needs): two waits.
// CHECK-LABEL: func.func @acc_as_register_a
// CHECK: %[[C1:.*]] = qla.alloc_frag : <64x64xf32, acc x1>
// CHECK-NEXT: qlanv.wgmma_fence %[[C1]]
// CHECK-NEXT: qlanv.wgmma
// CHECK-NEXT: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.wgmma_wait 0 %[[C1]] :
// CHECK-NEXT: %[[P:.*]] = qla.alloc_frag : <64x64xbf16, acc x1>
// CHECK-NEXT: qla.cast %[[C1]] -> %[[P]]
// CHECK-NEXT: %[[C2:.*]] = qla.alloc_frag : <64x64xf32, acc x1>
// CHECK-NEXT: qlanv.wgmma_fence %[[C2]], %[[P]]
// CHECK-NEXT: qlanv.wgmma %[[P]], %{{.*}}, %[[C2]]
// CHECK-NEXT: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.wgmma_wait 0 %[[C2]] :
// CHECK-NEXT: return
func.func @acc_as_register_a() {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %b = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %c1 = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  qla.gemm %a, %b, %c1 : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  %p = qla.alloc_frag : !qla.frag<64x64xbf16, acc x1>
  qla.cast %c1 -> %p : !qla.frag<64x64xf32, acc x1> -> !qla.frag<64x64xbf16, acc x1>
  %c2 = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  qla.gemm %p, %b, %c2 : !qla.frag<64x64xbf16, acc x1>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  return
}

// -----

// Both chains use the same register A: the fence of each lists it, so the
// chains share a fragment and keep their own waits.
// CHECK-LABEL: func.func @shared_register_a
// CHECK: %[[P:.*]] = qla.alloc_frag : <64x64xbf16, acc x1>
// CHECK: qlanv.wgmma_fence %[[C1:.*]], %[[P]] :
// CHECK-NEXT: qlanv.wgmma %[[P]]
// CHECK-NEXT: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.wgmma_wait 0 %[[C1]] :
// CHECK-NEXT: qlanv.wgmma_fence %[[C2:.*]], %[[P]] :
// CHECK-NEXT: qlanv.wgmma %[[P]]
// CHECK-NEXT: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.wgmma_wait 0 %[[C2]] :
// CHECK-NEXT: return
func.func @shared_register_a() {
  %b = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %p = qla.alloc_frag : !qla.frag<64x64xbf16, acc x1>
  %c1 = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  %c2 = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  qla.gemm %p, %b, %c1 : !qla.frag<64x64xbf16, acc x1>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  qla.gemm %p, %b, %c2 : !qla.frag<64x64xbf16, acc x1>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  return
}

// -----

// A fragment → shared copy between independent gemms (here into the tile the
// second one reads): shared memory changes, no merge.
// CHECK-LABEL: func.func @copy_to_shared_between
// CHECK: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.wgmma_wait 0 %[[C1:[^ ]*]] :
// CHECK-NEXT: qla.copy %{{.*}} -> %{{.*}} : !qla.frag<64x64xf32, acc x1> -> !qla.smem<64x64xbf16, swizzle 128>
// CHECK-NEXT: qlanv.wgmma_fence %[[C2:[^ ]*]] :
// CHECK-NEXT: qlanv.wgmma
// CHECK-NEXT: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.wgmma_wait 0 %[[C2]] :
// CHECK-NEXT: return
func.func @copy_to_shared_between() {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %b = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %x = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  %c1 = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  %c2 = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  qla.gemm %a, %b, %c1 : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  qla.copy %x -> %b : !qla.frag<64x64xf32, acc x1> -> !qla.smem<64x64xbf16, swizzle 128>
  qla.gemm %a, %b, %c2 : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  return
}

// -----

// Other ops in between stop the merge too: a non-arith op, a shared
// allocation, a fill of an unrelated fragment, a loop (an op with a region).
// CHECK-LABEL: func.func @other_ops_between
// CHECK-COUNT-5: qlanv.wgmma_wait 0 %{{[^,]*}} : !qla.frag<64x64xf32, acc x1>{{$}}
// CHECK-NOT: qlanv.wgmma_wait
// CHECK: return
func.func @other_ops_between(%n: index) {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %b = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %c1 = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  %c2 = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  %c3 = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  %c4 = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  %c5 = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  %x = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1i = arith.constant 1 : index
  qla.gemm %a, %b, %c1 : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  %bid = qla.block_id 0
  qla.gemm %a, %b, %c2 : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  %s = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  qla.gemm %a, %b, %c3 : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  qla.fill %x, %zero : !qla.frag<64x64xf32, acc x1>, f32
  qla.gemm %a, %b, %c4 : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  scf.for %k = %c0 to %n step %c1i {
  }
  qla.gemm %a, %b, %c5 : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  return
}

// -----

// Inside a loop body and a role: merged within the block; the wait stays
// before the loop's yield (nothing merges across iterations), and the merged
// chain ends up in the role's warpgroup region.
// CHECK-LABEL: func.func @loop_in_role
// CHECK: qlanv.warpgroups "math" 0 to 0 {
// CHECK: scf.for
// CHECK-NEXT: qlanv.wgmma_fence %[[C1:[^ ]*]] :
// CHECK-NEXT: qlanv.wgmma
// CHECK-NEXT: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.wgmma_fence %[[C2:[^ ]*]] :
// CHECK-NEXT: qlanv.wgmma
// CHECK-NEXT: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.wgmma_wait 0 %[[C1]], %[[C2]] :
// CHECK-NEXT: }
// CHECK-NEXT: qlanv.wgmma_fence %[[C1]] :
// CHECK-NEXT: qlanv.wgmma
// CHECK-NEXT: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.wgmma_wait 0 %[[C1]] :
// CHECK-NEXT: } {regs = 232 : i64}
func.func @loop_in_role(%n: index) attributes {qla.threads = 128 : i64} {
  qla.role "math" warpgroups 0 to 0 regs 232 {
    %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
    %b = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
    %c1 = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
    %c2 = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
    %c0 = arith.constant 0 : index
    %c1i = arith.constant 1 : index
    scf.for %k = %c0 to %n step %c1i {
      qla.gemm %a, %b, %c1 {accumulate} : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
      qla.gemm %a, %b, %c2 {accumulate} : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
    }
    qla.gemm %a, %b, %c1 {accumulate} : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  }
  return
}
