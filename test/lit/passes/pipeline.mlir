// The five passes in pipeline order on a kernel without roles: one-shot loads,
// a gemm whose result goes back through shared memory into a second gemm.
// RUN: %qla-opt %s -qla-infer-layouts -qla-lower-channels -qla-lower-to-qlanv -qla-insert-fences -qla-assign-resources | FileCheck %s
// The IR after each stage still verifies and re-parses.
// RUN: %qla-opt %s -qla-infer-layouts -qla-lower-channels | %qla-opt -qla-lower-to-qlanv | %qla-opt -qla-insert-fences | %qla-opt -qla-assign-resources | FileCheck %s

// CHECK-LABEL: func.func @two_gemms
// CHECK-SAME: qla.base_regs = 248 : i64
// 3 × 8192 = 24576 of tiles, + 8 (the barrier) = 24584 → 24592 (16-aligned).
// CHECK-SAME: qla.smem_bytes = 24592 : i64
// The two consecutive loads share one one-slot barrier; it goes after the
// tiles. The three tiles are live together (%p is allocated before the first
// wgmma's wait ends %a's lifetime), so none shares: 0, 8192, 16384.
// CHECK-NEXT: %[[BAR:.*]] = qlanv.barriers {arrivals = 1 : i64, offset = 24576 : i64} : <1>
// CHECK-NEXT: qlanv.barrier_init %[[BAR]]
// CHECK-NEXT: %[[RING:.*]] = qlanv.ring "load" : <1>
// CHECK-NEXT: qlanv.block_sync
// CHECK-NEXT: %[[A:.*]] = qla.alloc_shared {offset = 0 : i64} : <64x64xbf16, swizzle 128>
// CHECK-NEXT: %[[B:.*]] = qla.alloc_shared {offset = 8192 : i64} : <64x64xbf16, swizzle 128>
// CHECK-NEXT: %[[P:.*]] = qla.alloc_shared {offset = 16384 : i64} : <64x64xbf16, swizzle 128>
// CHECK-NEXT: %[[S:.*]] = qla.alloc_frag : <64x64xf32, acc x1>
// CHECK-NEXT: %[[O:.*]] = qla.alloc_frag : <64x64xf32, acc x1>
// CHECK-NEXT: qlanv.block_sync
// CHECK-NEXT: %[[SL:.*]] = qlanv.ring_slot %[[RING]]
// CHECK-NEXT: %[[PH:.*]] = qlanv.ring_phase %[[RING]]
// CHECK-NEXT: qlanv.elect {
// CHECK-NEXT: qlanv.barrier_arrive_expect_tx %[[BAR]][%[[SL]]], 16384 : <1>
// CHECK-NEXT: qlanv.tma_load %{{.*}} -> %[[A]], %[[BAR]][%[[SL]]]
// CHECK-NEXT: qlanv.tma_load %{{.*}} -> %[[B]], %[[BAR]][%[[SL]]]
// CHECK-NEXT: }
// CHECK-NEXT: qlanv.barrier_wait %[[BAR]][%[[SL]]], %[[PH]] {qla.what = {{"[a-z0-9_]+\.?[a-z]*"}}} : <1>
// CHECK-NEXT: qlanv.ring_advance %[[RING]]
// CHECK-NEXT: qlanv.wgmma_fence %[[S]]
// CHECK-NEXT: qlanv.wgmma %[[A]], %[[B]], %[[S]] {transB, warpgroups = 1 : i64}
// CHECK-NEXT: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.wgmma_wait 0 %[[S]]
// CHECK-NEXT: qla.copy %[[S]] -> %[[P]]
// CHECK-NEXT: qlanv.fence_proxy_async
// CHECK-NEXT: qlanv.block_sync
// CHECK-NEXT: qlanv.wgmma_fence %[[O]]
// CHECK-NEXT: qlanv.wgmma %[[P]], %[[B]], %[[O]] {warpgroups = 1 : i64}
// CHECK-NEXT: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.wgmma_wait 0 %[[O]]
// CHECK-NEXT: return
func.func @two_gemms(%A: !qla.global<bf16, 2>, %B: !qla.global<bf16, 2>, %i: index) attributes {qla.threads = 128 : i64} {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16>
  %b = qla.alloc_shared : !qla.smem<64x64xbf16>
  %p = qla.alloc_shared : !qla.smem<64x64xbf16>
  %s = qla.alloc_frag : !qla.frag<64x64xf32>
  %o = qla.alloc_frag : !qla.frag<64x64xf32>
  qla.load %A[%i, %i] -> %a : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16>
  qla.load %B[%i, %i] -> %b : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16>
  qla.gemm %a, %b, %s {transB} : !qla.smem<64x64xbf16>, !qla.smem<64x64xbf16>, !qla.frag<64x64xf32>
  qla.copy %s -> %p : !qla.frag<64x64xf32> -> !qla.smem<64x64xbf16>
  qla.gemm %p, %b, %o : !qla.smem<64x64xbf16>, !qla.smem<64x64xbf16>, !qla.frag<64x64xf32>
  return
}
