// Resource assignment: shared-memory arena offsets (tiles and op scratch
// placed by liveness, first fit), qla.smem_bytes, register budgets
// (setmaxnreg). The error cases at the end are checked by
// -verify-diagnostics, the others by FileCheck.
// RUN: %qla-opt %s -split-input-file -qla-assign-resources -verify-diagnostics | FileCheck %s

// Tiles are placed first fit by liveness (a tile lives from its alloc to its
// last use); here every tile is read at the end, so all of them are live at
// once and none shares. Swizzled tiles are 1024-aligned, other tiles
// 128-aligned, op scratch 16-aligned; `count` copies take count × the tile's
// bytes. Items are placed most aligned first (a stable sort: program order
// among equals), each at the lowest aligned offset clear of every placed item
// live with it, so first fit still fills the gaps the alignment leaves. The
// barriers go after all tiles (8-aligned, 8 bytes each), in program order;
// qla.smem_bytes is the end rounded up to 16.
// Order: %b, %d (1024); %a, %c, %e, %f, %g (128); the pick's scratch (16).
// CHECK-LABEL: func.func @arena
// CHECK-SAME: qla.base_regs = 248 : i64
// CHECK-SAME: qla.smem_bytes = 22064 : i64
// %a, 8 × 4 = 32 bytes: 0 meets %b → 16384 meets %d → 20480, to 20512.
// CHECK: qla.alloc_shared {offset = 20480 : i64} : <8xf32>
// %b first: 2 × 64 × 64 × 2 = 16384 bytes at 0.
// CHECK-NEXT: qla.alloc_shared {count = 2 : i64, offset = 0 : i64} : <64x64xbf16, swizzle 128>
// CHECK-NEXT: qlanv.barriers {arrivals = 1 : i64, offset = 22000 : i64} : <4>
// %c, 48 bytes: 0 → 16384 → 20480 meets %a (to 20512) → 20608, to 20656.
// CHECK-NEXT: qla.alloc_shared {offset = 20608 : i64} : <24xbf16>
// CHECK-NEXT: qlanv.barriers {arrivals = 1 : i64, offset = 22032 : i64} : <1>
// %d second, 64 × 32 × 2 = 4096 bytes: 0 meets %b → 16384, to 20480.
// CHECK-NEXT: qla.alloc_shared {offset = 16384 : i64} : <64x32xbf16, swizzle 64>
// %e, 12 bytes: … → 20608 meets %c (to 20656) → 20736, to 20748.
// CHECK-NEXT: qla.alloc_shared {offset = 20736 : i64} : <3xf32>
// %f, 6 bytes: … → 20736 meets %e → 20864, to 20870.
// CHECK-NEXT: qla.alloc_shared {offset = 20864 : i64} : <3xbf16>
// %g, 1002 bytes: … → 20864 meets %f → 20992, to 21994 (the end of the tiles).
// CHECK-NEXT: qla.alloc_shared {offset = 20992 : i64} : <501xbf16>
// Barriers: 21994 → 22000 (8-aligned) + 4 × 8 = 22032; + 1 × 8 = 22040;
// + 2 × 8 = 22056 → 22064 (16-aligned).
// CHECK-NEXT: qlanv.barriers {arrivals = 2 : i64, offset = 22040 : i64} : <2>
// The pick's 4 bytes, last: 0 → 16384 → 20480 meets %a (to 20512) → 20512
// (16-aligned), clear of %c at 20608: the alignment gap behind %a.
// CHECK: qla.frag_pick {{.*}}qla.scratch_offset = 20512 : i64
func.func @arena(%n: index) {
  %fa = qla.alloc_frag : !qla.frag<8xf32>
  %fb = qla.alloc_frag : !qla.frag<64x64xf32>
  %fc = qla.alloc_frag : !qla.frag<24xf32>
  %fd = qla.alloc_frag : !qla.frag<64x32xf32>
  %fe = qla.alloc_frag : !qla.frag<3xf32>
  %fg = qla.alloc_frag : !qla.frag<501xf32>
  %v = qla.alloc_frag : !qla.frag<64xf32>
  %a = qla.alloc_shared : !qla.smem<8xf32>
  %b = qla.alloc_shared {count = 2 : i64} : !qla.smem<64x64xbf16, swizzle 128>
  %bars = qlanv.barriers {arrivals = 1 : i64} : !qlanv.barriers<4>
  %c = qla.alloc_shared : !qla.smem<24xbf16>
  %bars1 = qlanv.barriers {arrivals = 1 : i64} : !qlanv.barriers<1>
  %d = qla.alloc_shared : !qla.smem<64x32xbf16, swizzle 64>
  %e = qla.alloc_shared : !qla.smem<3xf32>
  %f = qla.alloc_shared : !qla.smem<3xbf16>
  %g = qla.alloc_shared : !qla.smem<501xbf16>
  %bars2 = qlanv.barriers {arrivals = 2 : i64} : !qlanv.barriers<2>
  %p = qla.frag_pick %v[%n] : !qla.frag<64xf32> -> f32
  qla.copy %a -> %fa : !qla.smem<8xf32> -> !qla.frag<8xf32>
  qla.copy %b -> %fb : !qla.smem<64x64xbf16, swizzle 128> -> !qla.frag<64x64xf32>
  qla.copy %c -> %fc : !qla.smem<24xbf16> -> !qla.frag<24xf32>
  qla.copy %d -> %fd : !qla.smem<64x32xbf16, swizzle 64> -> !qla.frag<64x32xf32>
  qla.copy %e -> %fe : !qla.smem<3xf32> -> !qla.frag<3xf32>
  qla.copy %f -> %fe : !qla.smem<3xbf16> -> !qla.frag<3xf32>
  qla.copy %g -> %fg : !qla.smem<501xbf16> -> !qla.frag<501xf32>
  return
}

// -----

// The GEMM's arena: 4 × 16 KiB + 4 × 32 KiB of slots; tiles nested in regions
// are laid out too. A kernel with warp-specialized roles (qlanv.warpgroups)
// gets no sharing: tiles in program order, although their live ranges (each
// used once, right after its alloc) are disjoint.
// The barriers go after every tile, also the one inside the role.
// CHECK-LABEL: func.func @gemm_arena
// 65536 + 131072 = 196608; the role's 32-byte tile at 196608 (128-aligned) to
// 196640; barriers 196640 + 4 × 8 = 196672, + 4 × 8 = 196704 (16-aligned).
// CHECK-SAME: qla.smem_bytes = 196704 : i64
// CHECK: qla.alloc_shared {count = 4 : i64, offset = 0 : i64} : <128x64xbf16, swizzle 128>
// CHECK: qla.alloc_shared {count = 4 : i64, offset = 65536 : i64} : <256x64xbf16, swizzle 128>
// CHECK: qlanv.barriers {arrivals = 1 : i64, offset = 196640 : i64} : <4>
// CHECK-NEXT: qlanv.barriers {arrivals = 2 : i64, offset = 196672 : i64} : <4>
// CHECK: qlanv.warpgroups "math"
// CHECK: qla.alloc_shared {offset = 196608 : i64} : <8xf32>
func.func @gemm_arena() attributes {qla.threads = 384 : i64} {
  %c0 = arith.constant 0 : index
  %a = qla.alloc_shared {count = 4 : i64} : !qla.smem<128x64xbf16, swizzle 128>
  %a0 = qlanv.slot %a[%c0] : !qla.smem<128x64xbf16, swizzle 128>
  %b = qla.alloc_shared {count = 4 : i64} : !qla.smem<256x64xbf16, swizzle 128>
  %b0 = qlanv.slot %b[%c0] : !qla.smem<256x64xbf16, swizzle 128>
  %full = qlanv.barriers {arrivals = 1 : i64} : !qlanv.barriers<4>
  %empty = qlanv.barriers {arrivals = 2 : i64} : !qlanv.barriers<4>
  qlanv.warpgroups "math" 1 to 2 {
    %t = qla.alloc_shared : !qla.smem<8xf32>
    %t0 = qlanv.slot %t[%c0] : !qla.smem<8xf32>
  }
  return
}

// -----

// Sharing (a): lifetimes disjoint in one block. %a lives from its alloc to
// its read, %b is allocated after that: both at 0, and the arena is the
// larger tile (16384), not the sum (24576). The barriers follow the larger
// tile: 16384 + 2 × 8 = 16400.
// CHECK-LABEL: func.func @share_disjoint
// CHECK-SAME: qla.smem_bytes = 16400 : i64
// CHECK: qlanv.barriers {arrivals = 1 : i64, offset = 16384 : i64} : <2>
// CHECK: qla.alloc_shared {offset = 0 : i64} : <64x64xbf16>
// CHECK: qla.alloc_shared {offset = 0 : i64} : <128x64xbf16>
func.func @share_disjoint() {
  %bars = qlanv.barriers {arrivals = 1 : i64} : !qlanv.barriers<2>
  %f = qla.alloc_frag : !qla.frag<64x64xf32>
  %g = qla.alloc_frag : !qla.frag<128x64xf32>
  %a = qla.alloc_shared : !qla.smem<64x64xbf16>
  qla.copy %f -> %a : !qla.frag<64x64xf32> -> !qla.smem<64x64xbf16>
  qla.copy %a -> %f : !qla.smem<64x64xbf16> -> !qla.frag<64x64xf32>
  %b = qla.alloc_shared : !qla.smem<128x64xbf16>
  qla.copy %g -> %b : !qla.frag<128x64xf32> -> !qla.smem<128x64xbf16>
  qla.copy %b -> %g : !qla.smem<128x64xbf16> -> !qla.frag<128x64xf32>
  return
}

// -----

// Sharing only makes the limit: two 232448-byte tiles with disjoint
// lifetimes need 232448 bytes (227 KiB exactly), not 464896.
// CHECK-LABEL: func.func @smem_limit_shared
// CHECK-SAME: qla.smem_bytes = 232448 : i64
// CHECK: qla.alloc_shared {offset = 0 : i64} : <116224xbf16>
// CHECK: qla.alloc_shared {offset = 0 : i64} : <116224xbf16>
func.func @smem_limit_shared() {
  %f = qla.alloc_frag : !qla.frag<116224xf32>
  %a = qla.alloc_shared : !qla.smem<116224xbf16>
  qla.copy %f -> %a : !qla.frag<116224xf32> -> !qla.smem<116224xbf16>
  qla.copy %a -> %f : !qla.smem<116224xbf16> -> !qla.frag<116224xf32>
  %b = qla.alloc_shared : !qla.smem<116224xbf16>
  qla.copy %f -> %b : !qla.frag<116224xf32> -> !qla.smem<116224xbf16>
  qla.copy %b -> %f : !qla.smem<116224xbf16> -> !qla.frag<116224xf32>
  return
}

// -----

// Sharing (b): overlapping lifetimes do not share. %b is allocated before
// %a's last read, so it goes past %a: 48 bytes → 128 (128-aligned), to 8320.
// %c is allocated after %a's last read while %b is still live: it takes %a's
// bytes at 0 (0 + 48 ≤ 128, clear of %b), not %b's. Arena 8320.
// CHECK-LABEL: func.func @share_overlapping
// CHECK-SAME: qla.smem_bytes = 8320 : i64
// CHECK: qla.alloc_shared {offset = 0 : i64} : <24xbf16>
// CHECK: qla.alloc_shared {offset = 128 : i64} : <64x64xbf16>
// CHECK: qla.alloc_shared {offset = 0 : i64} : <24xf16>
func.func @share_overlapping() {
  %f = qla.alloc_frag : !qla.frag<24xf32>
  %g = qla.alloc_frag : !qla.frag<64x64xf32>
  %a = qla.alloc_shared : !qla.smem<24xbf16>
  qla.copy %f -> %a : !qla.frag<24xf32> -> !qla.smem<24xbf16>
  %b = qla.alloc_shared : !qla.smem<64x64xbf16>
  qla.copy %a -> %f : !qla.smem<24xbf16> -> !qla.frag<24xf32>
  qla.copy %g -> %b : !qla.frag<64x64xf32> -> !qla.smem<64x64xbf16>
  %c = qla.alloc_shared : !qla.smem<24xf16>
  qla.copy %f -> %c : !qla.frag<24xf32> -> !qla.smem<24xf16>
  qla.copy %b -> %g : !qla.smem<64x64xbf16> -> !qla.frag<64x64xf32>
  qla.copy %c -> %f : !qla.smem<24xf16> -> !qla.frag<24xf32>
  return
}

// -----

// Sharing (c): wgmma reads its operands asynchronously, until the next
// `wgmma_wait 0` after it in its block (a wait with pending 1 does not end
// it). %p is written and read between the wgmma and the wait, so it must not
// take the operands' bytes: 2 × 8192 → 16384. %q is allocated after the wait:
// the operands and %p are dead, %q at 0. 16384 + 8192 = 24576.
// CHECK-LABEL: func.func @share_wgmma_wait
// CHECK-SAME: qla.smem_bytes = 24576 : i64
// CHECK: qla.alloc_shared {offset = 0 : i64} : <64x64xbf16, swizzle 128>
// CHECK-NEXT: qla.alloc_shared {offset = 8192 : i64} : <64x64xbf16, swizzle 128>
// CHECK: qlanv.wgmma %
// CHECK: qlanv.wgmma_wait 1
// CHECK-NEXT: qla.alloc_shared {offset = 16384 : i64} : <64x64xbf16, swizzle 128>
// CHECK: qlanv.wgmma_wait 0
// CHECK-NEXT: qla.alloc_shared {offset = 0 : i64} : <64x64xbf16, swizzle 128>
func.func @share_wgmma_wait() {
  %f = qla.alloc_frag : !qla.frag<64x64xf32>
  %acc = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  %x = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %y = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  qla.copy %f -> %x : !qla.frag<64x64xf32> -> !qla.smem<64x64xbf16, swizzle 128>
  qla.copy %f -> %y : !qla.frag<64x64xf32> -> !qla.smem<64x64xbf16, swizzle 128>
  qlanv.wgmma_fence %acc : !qla.frag<64x64xf32, acc x1>
  qlanv.wgmma %x, %y, %acc {transB, warpgroups = 1 : i64} : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  qlanv.wgmma_commit
  qlanv.wgmma_wait 1 %acc : !qla.frag<64x64xf32, acc x1>
  %p = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  qla.copy %f -> %p : !qla.frag<64x64xf32> -> !qla.smem<64x64xbf16, swizzle 128>
  qla.copy %p -> %f : !qla.smem<64x64xbf16, swizzle 128> -> !qla.frag<64x64xf32>
  qlanv.wgmma_wait 0 %acc : !qla.frag<64x64xf32, acc x1>
  %q = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  qla.copy %f -> %q : !qla.frag<64x64xf32> -> !qla.smem<64x64xbf16, swizzle 128>
  qla.copy %q -> %f : !qla.smem<64x64xbf16, swizzle 128> -> !qla.frag<64x64xf32>
  return
}

// -----

// Sharing (d): %o is allocated before the loop and read at the top of its
// body: the next iteration reads it again, so it lives to the end of the
// scf.for although its last use comes before %t in the body. %t (allocated
// and used only in the body) does not share with it: 8192. %after follows
// the loop: %o and %t are dead, %after at 0.
// CHECK-LABEL: func.func @share_loop
// CHECK-SAME: qla.smem_bytes = 16384 : i64
// CHECK: qla.alloc_shared {offset = 0 : i64} : <64x64xbf16>
// CHECK: scf.for
// CHECK: qla.alloc_shared {offset = 8192 : i64} : <64x64xbf16>
// CHECK: }
// CHECK-NEXT: qla.alloc_shared {offset = 0 : i64} : <64x64xbf16>
func.func @share_loop() {
  %f = qla.alloc_frag : !qla.frag<64x64xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %o = qla.alloc_shared : !qla.smem<64x64xbf16>
  qla.copy %f -> %o : !qla.frag<64x64xf32> -> !qla.smem<64x64xbf16>
  scf.for %k = %c0 to %c4 step %c1 {
    qla.copy %o -> %f : !qla.smem<64x64xbf16> -> !qla.frag<64x64xf32>
    %t = qla.alloc_shared : !qla.smem<64x64xbf16>
    qla.copy %f -> %t : !qla.frag<64x64xf32> -> !qla.smem<64x64xbf16>
    qla.copy %t -> %f : !qla.smem<64x64xbf16> -> !qla.frag<64x64xf32>
  }
  %after = qla.alloc_shared : !qla.smem<64x64xbf16>
  qla.copy %f -> %after : !qla.frag<64x64xf32> -> !qla.smem<64x64xbf16>
  qla.copy %after -> %f : !qla.smem<64x64xbf16> -> !qla.frag<64x64xf32>
  return
}

// -----

// Sharing (e): uses through a slot view count. %buf's only direct user is the
// qlanv.slot before %t's alloc, but the slot is read after it: %t must not
// take %buf's bytes (2 × 8192 = 16384) → 16384. %u comes after the last read
// of the slot: at 0. 16384 + 8192 = 24576.
// CHECK-LABEL: func.func @share_slot
// CHECK-SAME: qla.smem_bytes = 24576 : i64
// CHECK: qla.alloc_shared {count = 2 : i64, offset = 0 : i64} : <64x64xbf16>
// CHECK-NEXT: qlanv.slot
// CHECK-NEXT: qla.alloc_shared {offset = 16384 : i64} : <64x64xbf16>
// CHECK: qla.alloc_shared {offset = 0 : i64} : <64x64xbf16>
func.func @share_slot(%i: index) {
  %f = qla.alloc_frag : !qla.frag<64x64xf32>
  %buf = qla.alloc_shared {count = 2 : i64} : !qla.smem<64x64xbf16>
  %s = qlanv.slot %buf[%i] : !qla.smem<64x64xbf16>
  %t = qla.alloc_shared : !qla.smem<64x64xbf16>
  qla.copy %f -> %t : !qla.frag<64x64xf32> -> !qla.smem<64x64xbf16>
  qla.copy %s -> %f : !qla.smem<64x64xbf16> -> !qla.frag<64x64xf32>
  qla.copy %t -> %f : !qla.smem<64x64xbf16> -> !qla.frag<64x64xf32>
  %u = qla.alloc_shared : !qla.smem<64x64xbf16>
  qla.copy %f -> %u : !qla.frag<64x64xf32> -> !qla.smem<64x64xbf16>
  qla.copy %u -> %f : !qla.smem<64x64xbf16> -> !qla.frag<64x64xf32>
  return
}

// -----

// Sharing (f): in a kernel with qlanv.warpgroups the roles run concurrently
// although they are laid out one after another: tiles of different roles
// never share, tiles of one role share by their lifetimes in the role's
// program order. Most aligned first: %b (swizzled, math) at 0; %a (load, 48
// bytes) clear of %b at 8192; %c (math, after %b's last use) shares %b's
// bytes at 0 → 8192 + 48 = 8240. Without the roles all three would be at 0.
// CHECK-LABEL: func.func @no_share_roles
// CHECK-SAME: qla.smem_bytes = 8240 : i64
// CHECK: qlanv.warpgroups "load" 0 to 0 {
// CHECK-NEXT: qla.alloc_shared {offset = 8192 : i64} : <24xbf16>
// CHECK: qlanv.warpgroups "math" 1 to 1 {
// CHECK-NEXT: qla.alloc_shared {offset = 0 : i64} : <64x64xbf16, swizzle 128>
// CHECK: qla.alloc_shared {offset = 0 : i64} : <24xbf16>
func.func @no_share_roles() attributes {qla.threads = 256 : i64} {
  qlanv.warpgroups "load" 0 to 0 {
    %a = qla.alloc_shared : !qla.smem<24xbf16>
    %f = qla.alloc_frag : !qla.frag<24xf32>
    qla.copy %f -> %a : !qla.frag<24xf32> -> !qla.smem<24xbf16>
    qla.copy %a -> %f : !qla.smem<24xbf16> -> !qla.frag<24xf32>
  }
  qlanv.warpgroups "math" 1 to 1 {
    %b = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
    %g = qla.alloc_frag : !qla.frag<64x64xf32>
    qla.copy %g -> %b : !qla.frag<64x64xf32> -> !qla.smem<64x64xbf16, swizzle 128>
    qla.copy %b -> %g : !qla.smem<64x64xbf16, swizzle 128> -> !qla.frag<64x64xf32>
    %c = qla.alloc_shared : !qla.smem<24xbf16>
    %h = qla.alloc_frag : !qla.frag<24xf32>
    qla.copy %h -> %c : !qla.frag<24xf32> -> !qla.smem<24xbf16>
    qla.copy %c -> %h : !qla.smem<24xbf16> -> !qla.frag<24xf32>
  }
  return
}

// -----

// Sharing (g): op scratch lives only for its op (16-aligned). The first scan
// (64 × 4 = 256 bytes) runs while %t (12 bytes at 0) is live: 12 → 16. The
// inverse (2 × 4 × 64 × 65 = 33280 bytes) comes after %t's last read: at 0;
// so do the second scan and the pick (4 bytes), which share with the
// inverse's scratch. The arena is the inverse's 33280 (16-aligned).
// CHECK-LABEL: func.func @share_scratch
// CHECK-SAME: qla.smem_bytes = 33280 : i64
// CHECK: qla.alloc_shared {offset = 0 : i64} : <3xf32>
// CHECK: qla.scan add {{.*}}qla.scratch_offset = 16 : i64
// CHECK: qla.inv_unit_lower {{.*}}qla.scratch_offset = 0 : i64
// CHECK: qla.scan add {{.*}}qla.scratch_offset = 0 : i64
// CHECK: qla.frag_pick {{.*}}qla.scratch_offset = 0 : i64
func.func @share_scratch(%n: index) {
  %f = qla.alloc_frag : !qla.frag<3xf32>
  %v = qla.alloc_frag : !qla.frag<64xf32>
  %w = qla.alloc_frag : !qla.frag<64xf32>
  %l = qla.alloc_frag : !qla.frag<64x64xf32>
  %m = qla.alloc_frag : !qla.frag<64x64xf32>
  %t = qla.alloc_shared : !qla.smem<3xf32>
  qla.copy %f -> %t : !qla.frag<3xf32> -> !qla.smem<3xf32>
  qla.scan add %v -> %w {dim = 0 : i64} : !qla.frag<64xf32> -> !qla.frag<64xf32>
  qla.copy %t -> %f : !qla.smem<3xf32> -> !qla.frag<3xf32>
  qla.inv_unit_lower %l -> %m : !qla.frag<64x64xf32> -> !qla.frag<64x64xf32>
  qla.scan add %w -> %v {dim = 0 : i64} : !qla.frag<64xf32> -> !qla.frag<64xf32>
  %p = qla.frag_pick %v[%n] : !qla.frag<64xf32> -> f32
  return
}

// -----

// Placement order (a): %a (128-aligned) is declared before %b (swizzled,
// 1024-aligned) and all three tiles are live together, but %b is placed
// first, at 0; %a follows it at 8192 (to 8240), then %c, of %a's alignment,
// in program order: 8240 → 8320, to 8368. Placed in program order, %a would
// take 0, %b 1024 and %c 128, in the hole in front of %b: arena 9216.
// CHECK-LABEL: func.func @align_order
// CHECK-SAME: qla.smem_bytes = 8368 : i64
// CHECK: qla.alloc_shared {offset = 8192 : i64} : <24xbf16>
// CHECK-NEXT: qla.alloc_shared {offset = 0 : i64} : <64x64xbf16, swizzle 128>
// CHECK-NEXT: qla.alloc_shared {offset = 8320 : i64} : <24xf16>
func.func @align_order() {
  %f = qla.alloc_frag : !qla.frag<24xf32>
  %g = qla.alloc_frag : !qla.frag<64x64xf32>
  %a = qla.alloc_shared : !qla.smem<24xbf16>
  %b = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %c = qla.alloc_shared : !qla.smem<24xf16>
  qla.copy %a -> %f : !qla.smem<24xbf16> -> !qla.frag<24xf32>
  qla.copy %b -> %g : !qla.smem<64x64xbf16, swizzle 128> -> !qla.frag<64x64xf32>
  qla.copy %c -> %f : !qla.smem<24xf16> -> !qla.frag<24xf32>
  return
}

// -----

// Sharing (h): a TMA destination lives to the end of the function: the
// bulk copy lands whenever its barrier completes, after the tma_load op.
// %s is never read after its tma_load, so by its uses it would be dead
// before %t's alloc (like %a in @share_disjoint), yet %t does not take its
// bytes: %s at 0, %t at 8192; barriers 16384 + 8 → 16400.
// CHECK-LABEL: func.func @tma_dst_live
// CHECK-SAME: qla.smem_bytes = 16400 : i64
// CHECK: qlanv.barriers {arrivals = 1 : i64, offset = 16384 : i64} : <1>
// CHECK: qla.alloc_shared {offset = 0 : i64} : <64x64xbf16, swizzle 128>
// CHECK-NEXT: qlanv.tma_load
// CHECK-NEXT: qla.alloc_shared {offset = 8192 : i64} : <64x64xbf16, swizzle 128>
func.func @tma_dst_live(%A: !qla.global<bf16, 2>, %i: index) {
  %bars = qlanv.barriers {arrivals = 1 : i64} : !qlanv.barriers<1>
  %f = qla.alloc_frag : !qla.frag<64x64xf32>
  %s = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  qlanv.tma_load %A[%i, %i] -> %s, %bars[%i] : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16, swizzle 128>, !qlanv.barriers<1>
  %t = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  qla.copy %f -> %t : !qla.frag<64x64xf32> -> !qla.smem<64x64xbf16, swizzle 128>
  qla.copy %t -> %f : !qla.smem<64x64xbf16, swizzle 128> -> !qla.frag<64x64xf32>
  return
}

// -----

// The same through a slot view: the tma_load writes one slot of %r (2 ×
// 8192 bytes at 0), so all of %r lives to the end: %t at 16384; barriers
// 24576 + 8 → 24592.
// CHECK-LABEL: func.func @tma_dst_slot_live
// CHECK-SAME: qla.smem_bytes = 24592 : i64
// CHECK: qla.alloc_shared {count = 2 : i64, offset = 0 : i64} : <64x64xbf16, swizzle 128>
// CHECK-NEXT: qlanv.slot
// CHECK-NEXT: qlanv.tma_load
// CHECK-NEXT: qla.alloc_shared {offset = 16384 : i64} : <64x64xbf16, swizzle 128>
func.func @tma_dst_slot_live(%A: !qla.global<bf16, 2>, %i: index) {
  %bars = qlanv.barriers {arrivals = 1 : i64} : !qlanv.barriers<1>
  %f = qla.alloc_frag : !qla.frag<64x64xf32>
  %r = qla.alloc_shared {count = 2 : i64} : !qla.smem<64x64xbf16, swizzle 128>
  %s = qlanv.slot %r[%i] : !qla.smem<64x64xbf16, swizzle 128>
  qlanv.tma_load %A[%i, %i] -> %s, %bars[%i] : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16, swizzle 128>, !qlanv.barriers<1>
  %t = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  qla.copy %f -> %t : !qla.frag<64x64xf32> -> !qla.smem<64x64xbf16, swizzle 128>
  qla.copy %t -> %f : !qla.smem<64x64xbf16, swizzle 128> -> !qla.frag<64x64xf32>
  return
}

// -----

// Sharing (i): a wgmma with no `wgmma_wait 0` after it in its block may
// still be reading its operands when the function's later ops run: they live
// to the end. Here only a wait 1 follows it, so %q, allocated after every
// use of %x and %y, does not take their bytes: %x 0, %y 8192, %q 16384;
// 24576. (With a wait 0 before %q's alloc, %q goes to 0: @share_wgmma_wait.)
// CHECK-LABEL: func.func @wgmma_no_wait
// CHECK-SAME: qla.smem_bytes = 24576 : i64
// CHECK: qla.alloc_shared {offset = 0 : i64} : <64x64xbf16, swizzle 128>
// CHECK-NEXT: qla.alloc_shared {offset = 8192 : i64} : <64x64xbf16, swizzle 128>
// CHECK: qlanv.wgmma_wait 1
// CHECK-NEXT: qla.alloc_shared {offset = 16384 : i64} : <64x64xbf16, swizzle 128>
func.func @wgmma_no_wait() {
  %f = qla.alloc_frag : !qla.frag<64x64xf32>
  %acc = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  %x = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %y = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  qla.copy %f -> %x : !qla.frag<64x64xf32> -> !qla.smem<64x64xbf16, swizzle 128>
  qla.copy %f -> %y : !qla.frag<64x64xf32> -> !qla.smem<64x64xbf16, swizzle 128>
  qlanv.wgmma_fence %acc : !qla.frag<64x64xf32, acc x1>
  qlanv.wgmma %x, %y, %acc {transB, warpgroups = 1 : i64} : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  qlanv.wgmma_commit
  qlanv.wgmma_wait 1 %acc : !qla.frag<64x64xf32, acc x1>
  %q = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  qla.copy %f -> %q : !qla.frag<64x64xf32> -> !qla.smem<64x64xbf16, swizzle 128>
  qla.copy %q -> %f : !qla.smem<64x64xbf16, swizzle 128> -> !qla.frag<64x64xf32>
  return
}

// -----

// The wait 0 must follow the wgmma in the wgmma's own block: one after the
// loop that holds the wgmma does not end the operands' lives (the pass is
// conservative there), so %q, allocated after that wait, still goes past
// %x and %y: 16384; 24576.
// CHECK-LABEL: func.func @wgmma_wait_outside_block
// CHECK-SAME: qla.smem_bytes = 24576 : i64
// CHECK: qla.alloc_shared {offset = 0 : i64} : <64x64xbf16, swizzle 128>
// CHECK-NEXT: qla.alloc_shared {offset = 8192 : i64} : <64x64xbf16, swizzle 128>
// CHECK: scf.for
// CHECK: qlanv.wgmma_wait 0
// CHECK-NEXT: qla.alloc_shared {offset = 16384 : i64} : <64x64xbf16, swizzle 128>
func.func @wgmma_wait_outside_block() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %f = qla.alloc_frag : !qla.frag<64x64xf32>
  %acc = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  %x = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %y = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  qla.copy %f -> %x : !qla.frag<64x64xf32> -> !qla.smem<64x64xbf16, swizzle 128>
  qla.copy %f -> %y : !qla.frag<64x64xf32> -> !qla.smem<64x64xbf16, swizzle 128>
  scf.for %k = %c0 to %c4 step %c1 {
    qlanv.wgmma_fence %acc : !qla.frag<64x64xf32, acc x1>
    qlanv.wgmma %x, %y, %acc {transB, accumulate, warpgroups = 1 : i64} : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
    qlanv.wgmma_commit
    qlanv.wgmma_wait 1 %acc : !qla.frag<64x64xf32, acc x1>
  }
  qlanv.wgmma_wait 0 %acc : !qla.frag<64x64xf32, acc x1>
  %q = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  qla.copy %f -> %q : !qla.frag<64x64xf32> -> !qla.smem<64x64xbf16, swizzle 128>
  qla.copy %q -> %f : !qla.smem<64x64xbf16, swizzle 128> -> !qla.frag<64x64xf32>
  return
}

// -----

// A tile that no op uses (a `shared` declaration that only a specialization's
// untaken branches read or write) takes no bytes: offset 0, and the arena
// holds only the used tile.
// CHECK-LABEL: func.func @unused_tile
// CHECK-SAME: qla.smem_bytes = 8192 : i64
// CHECK: qla.alloc_shared {offset = 0 : i64} : <64x64xbf16>
// CHECK-NEXT: qla.alloc_shared {offset = 0 : i64} : <128x128xbf16>
func.func @unused_tile() {
  %c0 = arith.constant 0 : index
  %a = qla.alloc_shared : !qla.smem<64x64xbf16>
  %unused = qla.alloc_shared : !qla.smem<128x128xbf16>
  %a0 = qlanv.slot %a[%c0] : !qla.smem<64x64xbf16>
  return
}

// -----

// A declaration (no body) is skipped: no attributes, no crash; the
// definition after it is still assigned.
// CHECK-LABEL: func.func private @decl(
// CHECK-NOT: qla.smem_bytes
// CHECK-NOT: qla.base_regs
// CHECK-LABEL: func.func @after_decl
// CHECK-SAME: qla.smem_bytes = 8192 : i64
// CHECK: qla.alloc_shared {offset = 0 : i64} : <64x64xbf16>
func.func private @decl(!qla.smem<64x64xbf16>, !qlanv.barriers<1>, index) attributes {qla.threads = 384 : i64}
func.func @after_decl() {
  %c0 = arith.constant 0 : index
  %a = qla.alloc_shared : !qla.smem<64x64xbf16>
  %a0 = qlanv.slot %a[%c0] : !qla.smem<64x64xbf16>
  return
}

// -----

// Register budgets. 384 threads: 65536 / 384 = 170, rounded down to 8 = 168
// registers each by default. Roles above it grow (inc), roles below shrink
// (dec), roles at it or with regs 0 are left alone.
// CHECK-LABEL: func.func @budgets_384
// CHECK-SAME: qla.base_regs = 168 : i64
// CHECK: qlanv.warpgroups "load" 0 to 0 {
// CHECK-NEXT: qlanv.setmaxnreg 40 {increase = false}
// CHECK-NEXT: qla.block_id 0
// CHECK-NEXT: } {regs = 40 : i64}
// CHECK-NEXT: qlanv.warpgroups "math" 1 to 2 {
// CHECK-NEXT: qlanv.setmaxnreg 232 {increase = true}
// CHECK-NEXT: } {regs = 232 : i64}
func.func @budgets_384() attributes {qla.threads = 384 : i64} {
  qlanv.warpgroups "load" 0 to 0 {
    %x = qla.block_id 0
  } {regs = 40 : i64}
  qlanv.warpgroups "math" 1 to 2 {
  } {regs = 232 : i64}
  return
}

// -----

// CHECK-LABEL: func.func @budgets_default
// CHECK-SAME: qla.base_regs = 168 : i64
// CHECK-NOT: qlanv.setmaxnreg
// CHECK: return
func.func @budgets_default() attributes {qla.threads = 384 : i64} {
  qlanv.warpgroups "a" 0 to 0 {
  } {regs = 0 : i64}
  qlanv.warpgroups "b" 1 to 1 {
  } {regs = 168 : i64}
  qlanv.warpgroups "c" 2 to 2 {
  }
  return
}

// -----

// 512 threads: 128 registers each by default.
// CHECK-LABEL: func.func @budgets_512
// CHECK-SAME: qla.base_regs = 128 : i64
// CHECK: qlanv.warpgroups "producer" 0 to 0 {
// CHECK-NEXT: qlanv.setmaxnreg 24 {increase = false}
// CHECK: qlanv.warpgroups "consumer" 1 to 3 {
// CHECK-NEXT: qlanv.setmaxnreg 160 {increase = true}
func.func @budgets_512() attributes {qla.threads = 512 : i64} {
  qlanv.warpgroups "producer" 0 to 0 {
  } {regs = 24 : i64}
  qlanv.warpgroups "consumer" 1 to 3 {
  } {regs = 160 : i64}
  return
}

// -----

// 128 threads (and no qla.threads: 128 too): 65536 / 128 = 512, capped at 255,
// rounded down to 248.
// CHECK-LABEL: func.func @budgets_128
// CHECK-SAME: qla.base_regs = 248 : i64
// CHECK: qlanv.setmaxnreg 256 {increase = true}
// CHECK-LABEL: func.func @budgets_implicit
// CHECK-SAME: qla.base_regs = 248 : i64
// CHECK: qlanv.setmaxnreg 240 {increase = false}
func.func @budgets_128() attributes {qla.threads = 128 : i64} {
  qlanv.warpgroups "all" 0 to 0 {
  } {regs = 256 : i64}
  return
}
func.func @budgets_implicit() {
  qlanv.warpgroups "all" 0 to 0 {
  } {regs = 240 : i64}
  return
}

// -----

// 227 KiB exactly fits.
// CHECK-LABEL: func.func @smem_limit
// CHECK-SAME: qla.smem_bytes = 232448 : i64
func.func @smem_limit() {
  %c0 = arith.constant 0 : index
  %a = qla.alloc_shared : !qla.smem<116224xbf16>
  %a0 = qlanv.slot %a[%c0] : !qla.smem<116224xbf16>
  return
}

// -----

// One element more does not.
// expected-error @+1 {{shared memory needed (232464 bytes) exceeds the 232448 bytes a block can have on sm_90}}
func.func @smem_limit_plus_one() {
  %c0 = arith.constant 0 : index
  %a = qla.alloc_shared : !qla.smem<116225xbf16>
  %a0 = qlanv.slot %a[%c0] : !qla.smem<116225xbf16>
  return
}

// -----

// Two 8-stage rings read by one wgmma (through slots) are live together and
// cannot share: 2 × 8 × 16384 = 262144.
// expected-error @+1 {{shared memory needed (262144 bytes) exceeds the 232448 bytes a block can have on sm_90}}
func.func @smem_too_many_stages(%i: index) {
  %a = qla.alloc_shared {count = 8 : i64} : !qla.smem<128x64xbf16, swizzle 128>
  %b = qla.alloc_shared {count = 8 : i64} : !qla.smem<128x64xbf16, swizzle 128>
  %acc = qla.alloc_frag : !qla.frag<128x128xf32, acc x1>
  %sa = qlanv.slot %a[%i] : !qla.smem<128x64xbf16, swizzle 128>
  %sb = qlanv.slot %b[%i] : !qla.smem<128x64xbf16, swizzle 128>
  qlanv.wgmma %sa, %sb, %acc {transB, warpgroups = 1 : i64} : !qla.smem<128x64xbf16, swizzle 128>, !qla.smem<128x64xbf16, swizzle 128>, !qla.frag<128x128xf32, acc x1>
  return
}

// -----

// 256 × 128 + 232 × 256 = 92160 > 65536.
// expected-error @+1 {{register budgets need 92160 registers but the register file has 65536 (reduce some role's regs)}}
func.func @regs_over_budget() attributes {qla.threads = 384 : i64} {
  qlanv.warpgroups "load" 0 to 0 {
  } {regs = 256 : i64}
  qlanv.warpgroups "math" 1 to 2 {
  } {regs = 232 : i64}
  return
}

// -----

// Warpgroups outside every role keep the default (168): 256 × 256 + 168 × 128 = 87040.
// expected-error @+1 {{register budgets need 87040 registers but the register file has 65536}}
func.func @regs_uncovered_warpgroups() attributes {qla.threads = 384 : i64} {
  qlanv.warpgroups "math" 1 to 2 {
  } {regs = 256 : i64}
  return
}
