// Lowering to qlanv: gemm → wgmma chain, role → warpgroup region. The error
// cases at the end are checked by -verify-diagnostics, the others by FileCheck.
// RUN: %qla-opt %s -split-input-file -qla-lower-to-qlanv -verify-diagnostics | FileCheck %s

// A shared-memory A: fence the accumulator, issue, commit, wait for 0 pending.
// CHECK-LABEL: func.func @gemm_ss
// CHECK: %[[A:.*]] = qla.alloc_shared : <128x64xbf16, swizzle 128>
// CHECK-NEXT: %[[B:.*]] = qla.alloc_shared : <256x64xbf16, swizzle 128>
// CHECK-NEXT: %[[C:.*]] = qla.alloc_frag : <128x256xf32, acc x2>
// CHECK-NEXT: qlanv.wgmma_fence %[[C]] : !qla.frag<128x256xf32, acc x2>
// CHECK-NEXT: qlanv.wgmma %[[A]], %[[B]], %[[C]] {accumulate, transB, warpgroups = 2 : i64} : !qla.smem<128x64xbf16, swizzle 128>, <256x64xbf16, swizzle 128>, <128x256xf32, acc x2>
// CHECK-NEXT: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.wgmma_wait 0 %[[C]] : !qla.frag<128x256xf32, acc x2>
// CHECK-NEXT: return
// CHECK-NOT: qla.gemm
func.func @gemm_ss() {
  %a = qla.alloc_shared : !qla.smem<128x64xbf16, swizzle 128>
  %b = qla.alloc_shared : !qla.smem<256x64xbf16, swizzle 128>
  %c = qla.alloc_frag : !qla.frag<128x256xf32, acc x2>
  qla.gemm %a, %b, %c {transB, accumulate} : !qla.smem<128x64xbf16, swizzle 128>, !qla.smem<256x64xbf16, swizzle 128>, !qla.frag<128x256xf32, acc x2>
  return
}

// -----

// Without accumulate and with a transposed A; 64B and 32B swizzles are fine.
// CHECK-LABEL: func.func @gemm_trans_a
// CHECK: qlanv.wgmma_fence %[[C:.*]] : !qla.frag<64x64xf32, acc x1>
// CHECK-NEXT: qlanv.wgmma %{{.*}}, %{{.*}}, %[[C]] {transA, warpgroups = 1 : i64} : !qla.smem<32x64xf16, swizzle 128>, <32x64xf16, swizzle 128>, <64x64xf32, acc x1>
// CHECK-NEXT: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.wgmma_wait 0 %[[C]]
// CHECK: qlanv.wgmma %{{.*}}, %{{.*}}, %{{.*}} {warpgroups = 1 : i64} : !qla.smem<64x32xbf16, swizzle 64>, <32x16xbf16, swizzle 32>, <64x16xf32, acc x1>
func.func @gemm_trans_a() {
  %a = qla.alloc_shared : !qla.smem<32x64xf16, swizzle 128>
  %b = qla.alloc_shared : !qla.smem<32x64xf16, swizzle 128>
  %c = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  qla.gemm %a, %b, %c {transA} : !qla.smem<32x64xf16, swizzle 128>, !qla.smem<32x64xf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  %a2 = qla.alloc_shared : !qla.smem<64x32xbf16, swizzle 64>
  %b2 = qla.alloc_shared : !qla.smem<32x16xbf16, swizzle 32>
  %c2 = qla.alloc_frag : !qla.frag<64x16xf32, acc x1>
  qla.gemm %a2, %b2, %c2 : !qla.smem<64x32xbf16, swizzle 64>, !qla.smem<32x16xbf16, swizzle 32>, !qla.frag<64x16xf32, acc x1>
  return
}

// -----

// A register-sourced A: the fence and the chain also cover A's registers.
// CHECK-LABEL: func.func @gemm_rs
// CHECK: %[[P:.*]] = qla.alloc_frag : <128x64xbf16, acc x2>
// CHECK-NEXT: %[[C:.*]] = qla.alloc_frag : <128x128xf32, acc x2>
// CHECK-NEXT: qlanv.wgmma_fence %[[C]], %[[P]] : !qla.frag<128x128xf32, acc x2>, !qla.frag<128x64xbf16, acc x2>
// CHECK-NEXT: qlanv.wgmma %[[P]], %{{.*}}, %[[C]] {accumulate, warpgroups = 2 : i64} : !qla.frag<128x64xbf16, acc x2>, <64x128xbf16, swizzle 128>, <128x128xf32, acc x2>
// CHECK-NEXT: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.wgmma_wait 0 %[[C]] : !qla.frag<128x128xf32, acc x2>
func.func @gemm_rs() {
  %b = qla.alloc_shared : !qla.smem<64x128xbf16, swizzle 128>
  %p = qla.alloc_frag : !qla.frag<128x64xbf16, acc x2>
  %c = qla.alloc_frag : !qla.frag<128x128xf32, acc x2>
  qla.gemm %p, %b, %c {accumulate} : !qla.frag<128x64xbf16, acc x2>, !qla.smem<64x128xbf16, swizzle 128>, !qla.frag<128x128xf32, acc x2>
  return
}

// -----

// Roles become warpgroup regions that keep the budget as `regs`; their
// bodies (and the gemms in them) move over; other qla ops stay.
// CHECK-LABEL: func.func @roles
// CHECK-NOT: qla.role
// CHECK: qlanv.warpgroups "load" 0 to 0 {
// CHECK-NEXT: qla.block_id 0
// CHECK-NEXT: } {regs = 40 : i64}
// CHECK-NEXT: qlanv.warpgroups "math" 1 to 2 {
// CHECK-NEXT: qla.alloc_shared
// CHECK-NEXT: qla.alloc_shared
// CHECK-NEXT: %[[C:.*]] = qla.alloc_frag : <128x64xf32, acc x2>
// CHECK-NEXT: qlanv.wgmma_fence %[[C]]
// CHECK-NEXT: qlanv.wgmma {{.*}}warpgroups = 2 : i64
// CHECK-NEXT: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.wgmma_wait 0 %[[C]]
// CHECK-NEXT: %[[R:.*]] = qla.alloc_frag : <128xf32, row x2>
// CHECK-NEXT: qla.reduce max %[[C]] -> %[[R]] {dim = 1 : i64}
// CHECK-NEXT: qla.parallel [128, 64] {
// CHECK: qla.elem_write
// CHECK-NEXT: }
// CHECK-NEXT: } {regs = 232 : i64}
// CHECK-NEXT: qlanv.warpgroups "idle" 3 to 3 {
// CHECK-NEXT: } {regs = 0 : i64}
// CHECK-NEXT: return
func.func @roles() attributes {qla.threads = 512 : i64} {
  qla.role "load" warpgroups 0 to 0 regs 40 {
    %x = qla.block_id 0
  }
  qla.role "math" warpgroups 1 to 2 regs 232 {
    %a = qla.alloc_shared : !qla.smem<128x64xbf16, swizzle 128>
    %b = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
    %c = qla.alloc_frag : !qla.frag<128x64xf32, acc x2>
    qla.gemm %a, %b, %c : !qla.smem<128x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<128x64xf32, acc x2>
    %r = qla.alloc_frag : !qla.frag<128xf32, row x2>
    qla.reduce max %c -> %r {dim = 1} : !qla.frag<128x64xf32, acc x2> -> !qla.frag<128xf32, row x2>
    qla.parallel [128, 64] {
    ^bb0(%i: index, %j: index):
      %v = qla.elem_read %c[%i, %j] : !qla.frag<128x64xf32, acc x2> -> f32
      %m = qla.elem_read %r[%i] : !qla.frag<128xf32, row x2> -> f32
      %d = arith.subf %v, %m : f32
      qla.elem_write %d -> %c[%i, %j] : f32 -> !qla.frag<128x64xf32, acc x2>
    }
  }
  qla.role "idle" warpgroups 3 to 3 regs 0 {
  }
  return
}

// -----

func.func @c_without_layout() {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %b = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %c = qla.alloc_frag : !qla.frag<64x64xf32>
  // expected-error @+1 {{'qla.gemm' op C has no accumulator layout (run qla-infer-layouts first)}}
  qla.gemm %a, %b, %c : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32>
  return
}

// -----

func.func @b_unswizzled() {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %b = qla.alloc_shared : !qla.smem<64x24xbf16>
  %c = qla.alloc_frag : !qla.frag<64x24xf32, acc x1>
  // expected-error @+1 {{'qla.gemm' op operand B of shape [64, 24] cannot be laid out for wgmma: its rows must be 32, 64 or a multiple of 128 bytes}}
  qla.gemm %a, %b, %c : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x24xbf16>, !qla.frag<64x24xf32, acc x1>
  return
}

// -----

func.func @a_unswizzled() {
  %a = qla.alloc_shared : !qla.smem<64x24xbf16>
  %b = qla.alloc_shared : !qla.smem<24x64xbf16, swizzle 128>
  %c = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  // expected-error @+1 {{'qla.gemm' op operand A cannot be laid out for wgmma: its rows must be 32, 64 or a multiple of 128 bytes}}
  qla.gemm %a, %b, %c : !qla.smem<64x24xbf16>, !qla.smem<24x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  return
}

// -----

func.func @register_a_layout() {
  %p = qla.alloc_frag : !qla.frag<128x64xbf16, acc x2>
  %b = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %c = qla.alloc_frag : !qla.frag<128x64xf32, acc x1>
  // expected-error @+1 {{'qla.gemm' op a register-sourced A must have the accumulator layout of C}}
  qla.gemm %p, %b, %c : !qla.frag<128x64xbf16, acc x2>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<128x64xf32, acc x1>
  return
}
