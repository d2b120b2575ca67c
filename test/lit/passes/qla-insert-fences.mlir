// Fence insertion: a fragment→shared copy whose tile a wgmma reads is
// followed by fence.proxy.async and a barrier among the writing threads.
// RUN: %qla-opt %s -split-input-file -qla-insert-fences | FileCheck %s

// Inside a warpgroup region: the region's named barrier (id = 1 + its index
// among the kernel's regions, threads = warpgroups × 128).
// CHECK-LABEL: func.func @in_warpgroups
// CHECK: qlanv.warpgroups "load" 0 to 0 {
// CHECK-NOT: qlanv.fence_proxy_async
// CHECK: qlanv.warpgroups "math" 1 to 2 {
// CHECK: qla.copy %[[P:.*]] -> %[[S:.*]] : !qla.frag<128x64xf32, acc x2> -> !qla.smem<128x64xbf16, swizzle 128>
// CHECK-NEXT: qlanv.fence_proxy_async
// CHECK-NEXT: qlanv.named_barrier 2, 256
// CHECK-NEXT: qlanv.wgmma_fence
// CHECK-NEXT: qlanv.wgmma %[[S]], %{{.*}}, %{{.*}}
// CHECK-NOT: qlanv.fence_proxy_async
func.func @in_warpgroups() attributes {qla.threads = 384 : i64} {
  qlanv.warpgroups "load" 0 to 0 {
  }
  qlanv.warpgroups "math" 1 to 2 {
    %p = qla.alloc_frag : !qla.frag<128x64xf32, acc x2>
    %s = qla.alloc_shared : !qla.smem<128x64xbf16, swizzle 128>
    %b = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
    %c = qla.alloc_frag : !qla.frag<128x64xf32, acc x2>
    qla.copy %p -> %s : !qla.frag<128x64xf32, acc x2> -> !qla.smem<128x64xbf16, swizzle 128>
    qlanv.wgmma_fence %c : !qla.frag<128x64xf32, acc x2>
    qlanv.wgmma %s, %b, %c {warpgroups = 2 : i64} : !qla.smem<128x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<128x64xf32, acc x2>
    qlanv.wgmma_commit
    qlanv.wgmma_wait 0 %c : !qla.frag<128x64xf32, acc x2>
  }
  return
}

// -----

// Outside warpgroup regions the whole block synchronizes. The tile is read
// as B here.
// CHECK-LABEL: func.func @whole_block
// CHECK: qla.copy %{{.*}} -> %[[S:.*]] : !qla.frag<64x64xf32, acc x1> -> !qla.smem<64x64xbf16, swizzle 128>
// CHECK-NEXT: qlanv.fence_proxy_async
// CHECK-NEXT: qlanv.block_sync
// CHECK-NEXT: qlanv.wgmma %{{.*}}, %[[S]], %{{.*}}
func.func @whole_block() attributes {qla.threads = 128 : i64} {
  %p = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %s = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %c = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  qla.copy %p -> %s : !qla.frag<64x64xf32, acc x1> -> !qla.smem<64x64xbf16, swizzle 128>
  qlanv.wgmma %a, %s, %c {warpgroups = 1 : i64} : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  return
}

// -----

// The wgmma reads a slot of the written buffer.
// CHECK-LABEL: func.func @through_slot
// CHECK: qla.copy
// CHECK-NEXT: qlanv.fence_proxy_async
// CHECK-NEXT: qlanv.block_sync
// CHECK-NEXT: qlanv.slot
func.func @through_slot(%i: index) {
  %p = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  %buf = qla.alloc_shared {count = 2 : i64} : !qla.smem<64x64xbf16, swizzle 128>
  %c = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  qla.copy %p -> %buf : !qla.frag<64x64xf32, acc x1> -> !qla.smem<64x64xbf16, swizzle 128>
  %s = qlanv.slot %buf[%i] : !qla.smem<64x64xbf16, swizzle 128>
  qlanv.wgmma %s, %s, %c {warpgroups = 1 : i64} : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  return
}

// -----

// No fence: the written tile is only read back by ordinary loads (generic
// proxy), and shared→fragment copies are reads.
// CHECK-LABEL: func.func @no_async_reader
// CHECK-NOT: qlanv.fence_proxy_async
// CHECK-NOT: qlanv.block_sync
// CHECK-NOT: qlanv.named_barrier
// CHECK: return
func.func @no_async_reader() {
  %p = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  %s = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %t = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %c = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  qla.copy %p -> %s : !qla.frag<64x64xf32, acc x1> -> !qla.smem<64x64xbf16, swizzle 128>
  qla.copy %s -> %c : !qla.smem<64x64xbf16, swizzle 128> -> !qla.frag<64x64xf32, acc x1>
  // %t is read by a wgmma, but only ever read here: nothing to order.
  qla.copy %t -> %p : !qla.smem<64x64xbf16, swizzle 128> -> !qla.frag<64x64xf32, acc x1>
  qlanv.wgmma %t, %t, %c {warpgroups = 1 : i64} : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  return
}
