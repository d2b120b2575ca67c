// Every qlanv op and type parses, prints and re-parses; the generic form too.
// RUN: %qla-opt %s | %qla-opt | FileCheck %s
// RUN: %qla-opt %s -mlir-print-op-generic | %qla-opt | FileCheck %s

// CHECK-LABEL: func.func private @types
// CHECK-SAME: (!qlanv.barriers<4>, !qlanv.barriers<1>, !qlanv.ring<4>, !qlanv.ring<1>)
func.func private @types(!qlanv.barriers<4>, !qlanv.barriers<1>, !qlanv.ring<4>, !qlanv.ring<1>)

// CHECK-LABEL: func.func @rings
func.func @rings() {
  // CHECK: %[[FULL:.*]] = qlanv.barriers {arrivals = 1 : i64} : <4>
  %full = qlanv.barriers {arrivals = 1 : i64} : !qlanv.barriers<4>
  // CHECK: %[[EMPTY:.*]] = qlanv.barriers {arrivals = 2 : i64, offset = 196640 : i64} : <4>
  %empty = qlanv.barriers {arrivals = 2 : i64, offset = 196640 : i64} : !qlanv.barriers<4>
  // CHECK: qlanv.barrier_init %[[FULL]] : <4>
  qlanv.barrier_init %full : !qlanv.barriers<4>
  // CHECK: %[[RING:.*]] = qlanv.ring "ab.put" : <4>
  %ring = qlanv.ring "ab.put" : !qlanv.ring<4>
  // CHECK: %[[SLOT:.*]] = qlanv.ring_slot %[[RING]] : <4>
  %slot = qlanv.ring_slot %ring : !qlanv.ring<4>
  // CHECK: %[[PHASE:.*]] = qlanv.ring_phase %[[RING]] : <4>
  %phase = qlanv.ring_phase %ring : !qlanv.ring<4>
  // CHECK: qlanv.barrier_wait %[[FULL]][%[[SLOT]]], %[[PHASE]] : <4>
  qlanv.barrier_wait %full[%slot], %phase : !qlanv.barriers<4>
  // CHECK: qlanv.barrier_arrive %[[EMPTY]][%[[SLOT]]] : <4>
  qlanv.barrier_arrive %empty[%slot] : !qlanv.barriers<4>
  // CHECK: qlanv.barrier_arrive_expect_tx %[[FULL]][%[[SLOT]]], 49152 : <4>
  qlanv.barrier_arrive_expect_tx %full[%slot], 49152 : !qlanv.barriers<4>
  // CHECK: qlanv.ring_advance %[[RING]] : <4>
  qlanv.ring_advance %ring : !qlanv.ring<4>
  // CHECK: qlanv.named_barrier 1, 256
  qlanv.named_barrier 1, 256
  // CHECK: qlanv.block_sync
  qlanv.block_sync
  // CHECK: qlanv.fence_proxy_async
  qlanv.fence_proxy_async
  return
}

// CHECK-LABEL: func.func @groups
func.func @groups() attributes {qla.threads = 384 : i64} {
  // CHECK: qlanv.warpgroups "load" 0 to 0 {
  // CHECK-NEXT: qlanv.setmaxnreg 40 {increase = false}
  // CHECK-NEXT: qlanv.elect {
  // CHECK-NEXT: qlanv.block_sync
  // CHECK-NEXT: }
  // CHECK-NEXT: } {regs = 40 : i64}
  qlanv.warpgroups "load" 0 to 0 {
    qlanv.setmaxnreg 40 {increase = false}
    qlanv.elect {
      qlanv.block_sync
      qlanv.yield
    }
  } {regs = 40 : i64}
  // CHECK: qlanv.warpgroups "math" 1 to 2 {
  // CHECK-NEXT: qlanv.setmaxnreg 232 {increase = true}
  // CHECK-NEXT: }
  qlanv.warpgroups "math" 1 to 2 {
    qlanv.setmaxnreg 232 {increase = true}
    qlanv.yield
  }
  return
}

// CHECK-LABEL: func.func @tma
// CHECK-SAME: (%[[A:.*]]: !qla.global<bf16, 2>, %[[W:.*]]: !qla.global<f32, 2>, %[[I:.*]]: index)
func.func @tma(%A: !qla.global<bf16, 2>, %W: !qla.global<f32, 2>, %i: index) {
  %bars = qlanv.barriers {arrivals = 1 : i64} : !qlanv.barriers<4>
  // CHECK: %[[BUF:.*]] = qla.alloc_shared {count = 4 : i64} : <128x64xbf16, swizzle 128>
  %buf = qla.alloc_shared {count = 4 : i64} : !qla.smem<128x64xbf16, swizzle 128>
  // CHECK: %[[S:.*]] = qlanv.slot %[[BUF]][%[[I]]] : <128x64xbf16, swizzle 128>
  %s = qlanv.slot %buf[%i] : !qla.smem<128x64xbf16, swizzle 128>
  // CHECK: qlanv.tma_load %[[A]][%[[I]], %[[I]]] -> %[[S]], %{{.*}}[%[[I]]] : <bf16, 2> -> <128x64xbf16, swizzle 128>, <4>
  qlanv.tma_load %A[%i, %i] -> %s, %bars[%i] : !qla.global<bf16, 2> -> !qla.smem<128x64xbf16, swizzle 128>, !qlanv.barriers<4>
  // A row of a 2-D tensor into a 1-D tile.
  %v = qla.alloc_shared : !qla.smem<64xf32>
  // CHECK: qlanv.tma_load %[[W]][%[[I]], %[[I]]] -> %{{.*}}, %{{.*}}[%[[I]]] {dropped = array<i64: 0>} : <f32, 2> -> <64xf32>, <4>
  qlanv.tma_load %W[%i, %i] -> %v, %bars[%i] {dropped = array<i64: 0>} : !qla.global<f32, 2> -> !qla.smem<64xf32>, !qlanv.barriers<4>
  return
}

// CHECK-LABEL: func.func @wgmma
func.func @wgmma() {
  %a = qla.alloc_shared : !qla.smem<128x64xbf16, swizzle 128>
  %b = qla.alloc_shared : !qla.smem<256x64xbf16, swizzle 128>
  %p = qla.alloc_frag : !qla.frag<128x64xbf16, acc x2>
  %bk = qla.alloc_shared : !qla.smem<64x256xbf16, swizzle 128>
  %acc = qla.alloc_frag : !qla.frag<128x256xf32, acc x2>
  // CHECK: qlanv.wgmma_fence %[[ACC:.*]] : !qla.frag<128x256xf32, acc x2>
  qlanv.wgmma_fence %acc : !qla.frag<128x256xf32, acc x2>
  // CHECK-NEXT: qlanv.wgmma %{{.*}}, %{{.*}}, %[[ACC]] {accumulate, transB, warpgroups = 2 : i64} : !qla.smem<128x64xbf16, swizzle 128>, <256x64xbf16, swizzle 128>, <128x256xf32, acc x2>
  qlanv.wgmma %a, %b, %acc {transB, accumulate, warpgroups = 2 : i64} : !qla.smem<128x64xbf16, swizzle 128>, !qla.smem<256x64xbf16, swizzle 128>, !qla.frag<128x256xf32, acc x2>
  // CHECK-NEXT: qlanv.wgmma_commit
  qlanv.wgmma_commit
  // CHECK-NEXT: qlanv.wgmma_wait 0 %[[ACC]] : !qla.frag<128x256xf32, acc x2>
  qlanv.wgmma_wait 0 %acc : !qla.frag<128x256xf32, acc x2>
  // Register-sourced A: the fence and the wait name both fragments.
  // CHECK: qlanv.wgmma_fence %[[ACC]], %[[P:.*]] : !qla.frag<128x256xf32, acc x2>, !qla.frag<128x64xbf16, acc x2>
  qlanv.wgmma_fence %acc, %p : !qla.frag<128x256xf32, acc x2>, !qla.frag<128x64xbf16, acc x2>
  // CHECK-NEXT: qlanv.wgmma %[[P]], %{{.*}}, %[[ACC]] {warpgroups = 2 : i64} : !qla.frag<128x64xbf16, acc x2>, <64x256xbf16, swizzle 128>, <128x256xf32, acc x2>
  qlanv.wgmma %p, %bk, %acc {warpgroups = 2 : i64} : !qla.frag<128x64xbf16, acc x2>, !qla.smem<64x256xbf16, swizzle 128>, !qla.frag<128x256xf32, acc x2>
  // No fragments: bare forms.
  // CHECK: qlanv.wgmma_fence{{$}}
  qlanv.wgmma_fence
  // CHECK-NEXT: qlanv.wgmma_commit
  qlanv.wgmma_commit
  // CHECK-NEXT: qlanv.wgmma_wait 1{{$}}
  qlanv.wgmma_wait 1
  return
}
