// qla-lower-to-qlanv{partial-waits}: the merged wait of independent gemms
// (here also two that read one register-sourced A) moves down past work that
// touches none of their fragments and writes no shared memory, and splits
// into wgmma_wait N before the first use of each product (N = groups still
// allowed in flight), also past an output's staging (a copy into a plain
// shared tile no product in flight reads, a store of it to global memory); it
// stops with wgmma_wait 0 at an op it cannot step over.
// Without the option the two gemms (one register A) keep a wait each, right
// after their commits.
// RUN: %qla-opt %s -split-input-file -qla-lower-to-qlanv='partial-waits=1' | FileCheck %s
// RUN: %qla-opt %s -split-input-file -qla-lower-to-qlanv | FileCheck %s --check-prefix=OFF

// CHECK-LABEL: func.func @two_products
// CHECK: qlanv.wgmma_fence %[[X:[^,]*]], %[[S:[^ ]*]] :
// CHECK-NEXT: qlanv.wgmma %[[S]], %{{.*}}, %[[X]]
// CHECK-NEXT: qlanv.wgmma_commit
// CHECK-NEXT: %[[O:.*]] = qla.alloc_frag : <64x64xf32, acc x1>
// CHECK-NEXT: qlanv.wgmma_fence %[[O]], %[[S]] :
// CHECK-NEXT: qlanv.wgmma %[[S]], %{{.*}}, %[[O]]
// CHECK-NEXT: qlanv.wgmma_commit
// The factor map touches neither product: it runs while both are in flight.
// CHECK-NEXT: qla.alloc_frag : <64xf32, col x1>
// CHECK-NEXT: qla.copy
// CHECK-NEXT: qla.parallel [64]
// CHECK: qlanv.wgmma_wait 1 %[[X]] :
// CHECK-NEXT: qla.parallel [64, 64]
// CHECK: qlanv.wgmma_wait 0 %[[O]] :
// CHECK-NEXT: qla.parallel [64, 64]
// The copy into shared memory is where waiting would have to stop anyway.
// CHECK: qla.copy %[[O]] -> %{{.*}} : !qla.frag<64x64xf32, acc x1> -> !qla.smem
// OFF-LABEL: func.func @two_products
// OFF: qlanv.wgmma_wait 0
// OFF-NEXT: %{{.*}} = qla.alloc_frag : <64x64xf32, acc x1>
// OFF: qlanv.wgmma_wait 0
// OFF-NEXT: qla.alloc_frag : <64xf32, col x1>
// OFF-NEXT: qla.copy
func.func @two_products() attributes {qla.threads = 128 : i64} {
  %w = qla.alloc_shared : !qla.smem<64x128xbf16, swizzle 128>
  %q = qla.alloc_shared : !qla.smem<64x128xbf16, swizzle 128>
  %gs = qla.alloc_shared : !qla.smem<64xf32>
  %os = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %s = qla.alloc_frag : !qla.frag<64x128xbf16, acc x1>
  %x = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  qla.gemm %s, %w, %x {transB} : !qla.frag<64x128xbf16, acc x1>, !qla.smem<64x128xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  %o = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  qla.gemm %s, %q, %o {transB} : !qla.frag<64x128xbf16, acc x1>, !qla.smem<64x128xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  %g = qla.alloc_frag : !qla.frag<64xf32, col x1>
  qla.copy %gs -> %g : !qla.smem<64xf32> -> !qla.frag<64xf32, col x1>
  qla.parallel [64] {
  ^bb0(%j: index):
    %v = qla.elem_read %g[%j] : !qla.frag<64xf32, col x1> -> f32
    %e = math.exp %v : f32
    qla.elem_write %e -> %g[%j] : f32 -> !qla.frag<64xf32, col x1>
  }
  qla.parallel [64, 64] {
  ^bb0(%i: index, %j: index):
    %a = qla.elem_read %x[%i, %j] : !qla.frag<64x64xf32, acc x1> -> f32
    %b = qla.elem_read %g[%j] : !qla.frag<64xf32, col x1> -> f32
    %c = arith.mulf %a, %b : f32
    qla.elem_write %c -> %x[%i, %j] : f32 -> !qla.frag<64x64xf32, acc x1>
  }
  qla.parallel [64, 64] {
  ^bb0(%i: index, %j: index):
    %a = qla.elem_read %o[%i, %j] : !qla.frag<64x64xf32, acc x1> -> f32
    %b = qla.elem_read %x[%i, %j] : !qla.frag<64x64xf32, acc x1> -> f32
    %c = arith.addf %a, %b : f32
    qla.elem_write %c -> %o[%i, %j] : f32 -> !qla.frag<64x64xf32, acc x1>
  }
  qla.copy %o -> %os : !qla.frag<64x64xf32, acc x1> -> !qla.smem<64x64xbf16, swizzle 128>
  return
}

// -----

// An output's staging: O's product and the state's product are in flight;
// O's copy into a plain shared tile waits for O's group alone (wait 1), the
// store of that tile to global memory steps over the state's group, which is
// waited for only at the end of the block.
// CHECK-LABEL: func.func @staging_aside
// CHECK: qlanv.wgmma_commit
// CHECK: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.wgmma_wait 1 %[[O:[^ ]*]] :
// CHECK-NEXT: qla.copy %[[O]] -> %[[OS:[^ ]*]] {transpose}
// CHECK-NEXT: qla.store %[[OS]] -> %{{.*}}
// CHECK-NEXT: qlanv.wgmma_wait 0 %{{.*}} : !qla.frag<64x128xf32, acc x1>
// CHECK-NEXT: return
// OFF-LABEL: func.func @staging_aside
// OFF: qlanv.wgmma_wait 0
// OFF-NEXT: qla.copy
func.func @staging_aside(%O: !qla.global<bf16, 2>, %i: index) attributes {qla.threads = 128 : i64} {
  %k = qla.alloc_shared : !qla.smem<64x128xbf16, swizzle 128>
  %p = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %os = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %st = qla.alloc_frag : !qla.frag<64x128xf32, acc x1>
  %vd = qla.alloc_frag : !qla.frag<64x64xbf16, acc x1>
  %vn = qla.alloc_frag : !qla.frag<64x64xbf16, acc x1>
  %o = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  qla.gemm %vn, %p, %o {transB, accumulate} : !qla.frag<64x64xbf16, acc x1>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  qla.gemm %vd, %k, %st {accumulate} : !qla.frag<64x64xbf16, acc x1>, !qla.smem<64x128xbf16, swizzle 128>, !qla.frag<64x128xf32, acc x1>
  qla.copy %o -> %os {transpose} : !qla.frag<64x64xf32, acc x1> -> !qla.smem<64x64xbf16, swizzle 128>
  qla.store %os -> %O[%i, %i] : !qla.smem<64x64xbf16, swizzle 128> -> !qla.global<bf16, 2>
  return
}

// -----

// The same, but the tile written is one that a product still in flight
// reads (X reads %q): the copy waits for both groups.
// CHECK-LABEL: func.func @staging_into_operand
// CHECK: qlanv.wgmma_commit
// CHECK: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.wgmma_wait 0
// CHECK-NEXT: qla.copy
func.func @staging_into_operand(%O: !qla.global<bf16, 2>, %i: index) attributes {qla.threads = 128 : i64} {
  %p = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %q = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %vd = qla.alloc_frag : !qla.frag<64x64xbf16, acc x1>
  %vn = qla.alloc_frag : !qla.frag<64x64xbf16, acc x1>
  %o = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  %x = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  qla.gemm %vn, %p, %o {transB, accumulate} : !qla.frag<64x64xbf16, acc x1>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  qla.gemm %vd, %q, %x {transB} : !qla.frag<64x64xbf16, acc x1>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  qla.copy %o -> %q {transpose} : !qla.frag<64x64xf32, acc x1> -> !qla.smem<64x64xbf16, swizzle 128>
  qla.store %q -> %O[%i, %i] : !qla.smem<64x64xbf16, swizzle 128> -> !qla.global<bf16, 2>
  return
}

// -----

// Writing into the tile of the product that is waited for is no hazard once
// it is complete: O reads %p, O's copy goes to %p after wait 1, X stays in
// flight.
// CHECK-LABEL: func.func @staging_into_done_operand
// CHECK: qlanv.wgmma_commit
// CHECK: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.wgmma_wait 1
// CHECK-NEXT: qla.copy
// CHECK-NEXT: qla.store
// CHECK-NEXT: qlanv.wgmma_wait 0
func.func @staging_into_done_operand(%O: !qla.global<bf16, 2>, %i: index) attributes {qla.threads = 128 : i64} {
  %p = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %q = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %vd = qla.alloc_frag : !qla.frag<64x64xbf16, acc x1>
  %vn = qla.alloc_frag : !qla.frag<64x64xbf16, acc x1>
  %o = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  %x = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  qla.gemm %vn, %p, %o {transB, accumulate} : !qla.frag<64x64xbf16, acc x1>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  qla.gemm %vd, %q, %x {transB} : !qla.frag<64x64xbf16, acc x1>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  qla.copy %o -> %p {transpose} : !qla.frag<64x64xf32, acc x1> -> !qla.smem<64x64xbf16, swizzle 128>
  qla.store %p -> %O[%i, %i] : !qla.smem<64x64xbf16, swizzle 128> -> !qla.global<bf16, 2>
  return
}
