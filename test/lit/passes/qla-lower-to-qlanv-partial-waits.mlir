// qla-lower-to-qlanv{partial-waits}: the merged wait of independent gemms
// (here also two that read one register-sourced A) moves down past work that
// touches none of their fragments and writes no shared memory, and splits
// into wgmma_wait N before the first use of each product (N = groups still
// allowed in flight); it stops with wgmma_wait 0 at an op it cannot step over.
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
