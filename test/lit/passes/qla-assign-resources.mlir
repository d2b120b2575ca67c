// Resource assignment: shared-memory arena offsets, qla.smem_bytes, register
// budgets (setmaxnreg). The error cases at the end are checked by
// -verify-diagnostics, the others by FileCheck.
// RUN: %qla-opt %s -split-input-file -qla-assign-resources -verify-diagnostics | FileCheck %s

// Program order; swizzled tiles 1024-aligned, others 16-aligned, mbarriers
// 8-aligned (8 bytes each); `count` copies take count × the tile's bytes.
// CHECK-LABEL: func.func @arena
// CHECK-SAME: qla.base_regs = 248 : i64
// CHECK-SAME: qla.smem_bytes = 22576 : i64
// CHECK-NEXT: qla.alloc_shared {offset = 0 : i64} : <8xf32>
// 32 → 1024 (swizzled); 2 × 8192 bytes.
// CHECK-NEXT: qla.alloc_shared {count = 2 : i64, offset = 1024 : i64} : <64x64xbf16, swizzle 128>
// CHECK-NEXT: qlanv.barriers {arrivals = 1 : i64, offset = 17408 : i64} : <4>
// CHECK-NEXT: qla.alloc_shared {offset = 17440 : i64} : <24xbf16>
// CHECK-NEXT: qlanv.barriers {arrivals = 1 : i64, offset = 17488 : i64} : <1>
// 17496 → 18432 (swizzled).
// CHECK-NEXT: qla.alloc_shared {offset = 18432 : i64} : <64x32xbf16, swizzle 64>
// CHECK-NEXT: qla.alloc_shared {offset = 22528 : i64} : <3xf32>
// 22540 → 22544 (16-aligned); 6 bytes; 22550 → 22552 (8-aligned); + 2 × 8 = 22568 → 22576.
// CHECK-NEXT: qla.alloc_shared {offset = 22544 : i64} : <3xbf16>
// CHECK-NEXT: qlanv.barriers {arrivals = 2 : i64, offset = 22552 : i64} : <2>
func.func @arena() {
  %a = qla.alloc_shared : !qla.smem<8xf32>
  %b = qla.alloc_shared {count = 2 : i64} : !qla.smem<64x64xbf16, swizzle 128>
  %bars = qlanv.barriers {arrivals = 1 : i64} : !qlanv.barriers<4>
  %c = qla.alloc_shared : !qla.smem<24xbf16>
  %bars1 = qlanv.barriers {arrivals = 1 : i64} : !qlanv.barriers<1>
  %d = qla.alloc_shared : !qla.smem<64x32xbf16, swizzle 64>
  %e = qla.alloc_shared : !qla.smem<3xf32>
  %f = qla.alloc_shared : !qla.smem<3xbf16>
  %bars2 = qlanv.barriers {arrivals = 2 : i64} : !qlanv.barriers<2>
  return
}

// -----

// The GEMM's arena: 4 × 16 KiB + 4 × 32 KiB of slots, then two barrier arrays;
// tiles nested in regions are laid out too.
// CHECK-LABEL: func.func @gemm_arena
// CHECK-SAME: qla.smem_bytes = 196704 : i64
// CHECK: qla.alloc_shared {count = 4 : i64, offset = 0 : i64} : <128x64xbf16, swizzle 128>
// CHECK-NEXT: qla.alloc_shared {count = 4 : i64, offset = 65536 : i64} : <256x64xbf16, swizzle 128>
// CHECK-NEXT: qlanv.barriers {arrivals = 1 : i64, offset = 196608 : i64} : <4>
// CHECK-NEXT: qlanv.barriers {arrivals = 2 : i64, offset = 196640 : i64} : <4>
// CHECK: qlanv.warpgroups "math"
// CHECK: qla.alloc_shared {offset = 196672 : i64} : <8xf32>
func.func @gemm_arena() attributes {qla.threads = 384 : i64} {
  %a = qla.alloc_shared {count = 4 : i64} : !qla.smem<128x64xbf16, swizzle 128>
  %b = qla.alloc_shared {count = 4 : i64} : !qla.smem<256x64xbf16, swizzle 128>
  %full = qlanv.barriers {arrivals = 1 : i64} : !qlanv.barriers<4>
  %empty = qlanv.barriers {arrivals = 2 : i64} : !qlanv.barriers<4>
  qlanv.warpgroups "math" 1 to 2 {
    %t = qla.alloc_shared : !qla.smem<8xf32>
  }
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
  %a = qla.alloc_shared : !qla.smem<116224xbf16>
  return
}

// -----

// One element more does not.
// expected-error @+1 {{shared memory needed (232464 bytes) exceeds the 232448 bytes a block can have on sm_90}}
func.func @smem_limit_plus_one() {
  %a = qla.alloc_shared : !qla.smem<116225xbf16>
  return
}

// -----

// expected-error @+1 {{shared memory needed (262144 bytes) exceeds the 232448 bytes a block can have on sm_90}}
func.func @smem_too_many_stages() {
  %a = qla.alloc_shared {count = 8 : i64} : !qla.smem<128x64xbf16, swizzle 128>
  %b = qla.alloc_shared {count = 8 : i64} : !qla.smem<128x64xbf16, swizzle 128>
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
