// Layout inference: fragment layouts and shared-tile swizzles. The error
// cases at the end are checked by -verify-diagnostics, the others by FileCheck.
// RUN: %qla-opt %s -split-input-file -qla-infer-layouts -verify-diagnostics | FileCheck %s

// Accumulators take the warpgroup count of their role.
// CHECK-LABEL: func.func @acc_from_role
// CHECK: qla.role "one" warpgroups 0 to 0
// CHECK-NEXT: qla.alloc_frag : <64x128xf32, acc x1>
// CHECK: qla.role "two" warpgroups 1 to 2
// CHECK-NEXT: qla.alloc_frag : <128x256xf32, acc x2>
// CHECK-NEXT: qla.alloc_frag : <128x64xbf16, acc x2>
func.func @acc_from_role() attributes {qla.threads = 384 : i64} {
  qla.role "one" warpgroups 0 to 0 regs 0 {
    %a = qla.alloc_frag : !qla.frag<64x128xf32>
  }
  qla.role "two" warpgroups 1 to 2 regs 0 {
    %b = qla.alloc_frag : !qla.frag<128x256xf32>
    %p = qla.alloc_frag : !qla.frag<128x64xbf16>
  }
  return
}

// -----

// Outside roles every warpgroup of the kernel shares the fragment.
// CHECK-LABEL: func.func @acc_from_threads
// CHECK-NEXT: qla.alloc_frag : <128x64xf32, acc x2>
func.func @acc_from_threads() attributes {qla.threads = 256 : i64} {
  %a = qla.alloc_frag : !qla.frag<128x64xf32>
  return
}

// -----

// No thread count: one warpgroup.
// CHECK-LABEL: func.func @acc_default
// CHECK-NEXT: qla.alloc_frag : <64x8xf32, acc x1>
func.func @acc_default() {
  %a = qla.alloc_frag : !qla.frag<64x8xf32>
  return
}

// -----

// 1-D fragments: the destination of a reduction along dim 1 is indexed like
// the accumulator's rows, along dim 0 like its columns.
// CHECK-LABEL: func.func @vectors_from_reduce
// CHECK: %[[S:.*]] = qla.alloc_frag : <64x128xf32, acc x1>
// CHECK: %[[R:.*]] = qla.alloc_frag : <64xf32, row x1>
// CHECK: %[[C:.*]] = qla.alloc_frag : <128xf32, col x1>
// CHECK: qla.reduce add %[[S]] -> %[[R]] {dim = 1 : i64} : <64x128xf32, acc x1> -> <64xf32, row x1>
// CHECK: qla.reduce max %[[S]] -> %[[C]] {dim = 0 : i64} : <64x128xf32, acc x1> -> <128xf32, col x1>
func.func @vectors_from_reduce() attributes {qla.threads = 128 : i64} {
  %s = qla.alloc_frag : !qla.frag<64x128xf32>
  %r = qla.alloc_frag : !qla.frag<64xf32>
  %c = qla.alloc_frag : !qla.frag<128xf32>
  qla.reduce add %s -> %r {dim = 1} : !qla.frag<64x128xf32> -> !qla.frag<64xf32>
  qla.reduce max %s -> %c {dim = 0} : !qla.frag<64x128xf32> -> !qla.frag<128xf32>
  return
}

// -----

// Broadcast reads in a 2-D parallel: v[i] is a row vector, w[j] a column
// vector; a vector no use says anything about is a row vector.
// CHECK-LABEL: func.func @vectors_from_elem
// CHECK: qla.alloc_frag : <128x64xf32, acc x2>
// CHECK-NEXT: qla.alloc_frag : <128xf32, row x2>
// CHECK-NEXT: qla.alloc_frag : <64xf32, col x2>
// CHECK-NEXT: qla.alloc_frag : <128xf32, row x2>
// CHECK-NEXT: qla.alloc_frag : <256xf32, row x2>
// CHECK: qla.elem_read %{{.*}} : <128x64xf32, acc x2> -> f32
// CHECK-NEXT: qla.elem_read %{{.*}} : <128xf32, row x2> -> f32
// CHECK-NEXT: qla.elem_read %{{.*}} : <64xf32, col x2> -> f32
// CHECK: qla.elem_write %{{.*}} : f32 -> <128xf32, row x2>
func.func @vectors_from_elem() attributes {qla.threads = 256 : i64} {
  %x = qla.alloc_frag : !qla.frag<128x64xf32>
  %v = qla.alloc_frag : !qla.frag<128xf32>
  %w = qla.alloc_frag : !qla.frag<64xf32>
  %o = qla.alloc_frag : !qla.frag<128xf32>
  %unused = qla.alloc_frag : !qla.frag<256xf32>
  qla.parallel [128, 64] {
  ^bb0(%i: index, %j: index):
    %a = qla.elem_read %x[%i, %j] : !qla.frag<128x64xf32> -> f32
    %b = qla.elem_read %v[%i] : !qla.frag<128xf32> -> f32
    %c = qla.elem_read %w[%j] : !qla.frag<64xf32> -> f32
    %d = arith.mulf %a, %b : f32
    %e = arith.addf %d, %c : f32
    qla.elem_write %e -> %o[%i] : f32 -> !qla.frag<128xf32>
  }
  return
}

// -----

// A column vector written in a 2-D parallel; 1-D parallels say nothing.
// CHECK-LABEL: func.func @col_from_write
// CHECK-NEXT: qla.alloc_frag : <64x32xf32, acc x1>
// CHECK-NEXT: qla.alloc_frag : <32xf32, col x1>
// CHECK-NEXT: qla.alloc_frag : <64xf32, row x1>
func.func @col_from_write() {
  %x = qla.alloc_frag : !qla.frag<64x32xf32>
  %c = qla.alloc_frag : !qla.frag<32xf32>
  %r = qla.alloc_frag : !qla.frag<64xf32>
  qla.parallel [64, 32] {
  ^bb0(%i: index, %j: index):
    %a = qla.elem_read %x[%i, %j] : !qla.frag<64x32xf32> -> f32
    qla.elem_write %a -> %c[%j] : f32 -> !qla.frag<32xf32>
  }
  qla.parallel [32] {
  ^bb0(%k: index):
    %a = qla.elem_read %c[%k] : !qla.frag<32xf32> -> f32
    qla.elem_write %a -> %c[%k] : f32 -> !qla.frag<32xf32>
  }
  qla.parallel [64] {
  ^bb0(%k: index):
    %a = qla.elem_read %r[%k] : !qla.frag<64xf32> -> f32
    qla.elem_write %a -> %r[%k] : f32 -> !qla.frag<64xf32>
  }
  return
}

// -----

// A 1-D fragment that only 1-D maps use takes the layout of a placed fragment
// it shares a map with (to a fixed point): %g reaches %e through the first
// map, %h reaches %g through the second; one outside any placed map stays row.
// CHECK-LABEL: func.func @vectors_through_1d_maps
// CHECK: qla.alloc_frag : <64x64xf32, acc x1>
// CHECK-NEXT: qla.alloc_frag : <64xf32, col x1>
// CHECK-NEXT: qla.alloc_frag : <64xf32, col x1>
// CHECK-NEXT: qla.alloc_frag : <64xf32, col x1>
// CHECK-NEXT: qla.alloc_frag : <64xf32, row x1>
func.func @vectors_through_1d_maps() attributes {qla.threads = 128 : i64} {
  %x = qla.alloc_frag : !qla.frag<64x64xf32>
  %e = qla.alloc_frag : !qla.frag<64xf32>
  %g = qla.alloc_frag : !qla.frag<64xf32>
  %h = qla.alloc_frag : !qla.frag<64xf32>
  %u = qla.alloc_frag : !qla.frag<64xf32>
  qla.parallel [64] {
  ^bb0(%k: index):
    %a = qla.elem_read %h[%k] : !qla.frag<64xf32> -> f32
    qla.elem_write %a -> %g[%k] : f32 -> !qla.frag<64xf32>
  }
  qla.parallel [64] {
  ^bb0(%k: index):
    %a = qla.elem_read %g[%k] : !qla.frag<64xf32> -> f32
    qla.elem_write %a -> %e[%k] : f32 -> !qla.frag<64xf32>
  }
  qla.parallel [64, 64] {
  ^bb0(%i: index, %j: index):
    %a = qla.elem_read %x[%i, %j] : !qla.frag<64x64xf32> -> f32
    %b = qla.elem_read %e[%j] : !qla.frag<64xf32> -> f32
    %c = arith.mulf %a, %b : f32
    qla.elem_write %c -> %x[%i, %j] : f32 -> !qla.frag<64x64xf32>
  }
  qla.parallel [64] {
  ^bb0(%k: index):
    %a = qla.elem_read %u[%k] : !qla.frag<64xf32> -> f32
    qla.elem_write %a -> %u[%k] : f32 -> !qla.frag<64xf32>
  }
  return
}

// -----

// Swizzles: 128B for rows that are a multiple of 128 bytes (64 or 128 bf16,
// 32 f32), 64B and 32B for 64- and 32-byte rows, none otherwise.
// CHECK-LABEL: func.func @swizzles
// CHECK-NEXT: qla.alloc_shared : <128x64xbf16, swizzle 128>
// CHECK-NEXT: qla.alloc_shared : <64x128xbf16, swizzle 128>
// CHECK-NEXT: qla.alloc_shared : <256x256xf16, swizzle 128>
// CHECK-NEXT: qla.alloc_shared : <64x32xf32, swizzle 128>
// CHECK-NEXT: qla.alloc_shared : <64x32xbf16, swizzle 64>
// CHECK-NEXT: qla.alloc_shared : <64x16xbf16, swizzle 32>
// CHECK-NEXT: qla.alloc_shared : <64x8xf32, swizzle 32>
// CHECK-NEXT: qla.alloc_shared : <64x24xbf16>
// CHECK-NEXT: qla.alloc_shared : <64x96xbf16>
// CHECK-NEXT: qla.alloc_shared : <64x8xbf16>
// CHECK-NEXT: qla.alloc_shared : <12x64xbf16>
// CHECK-NEXT: qla.alloc_shared : <128xbf16>
// CHECK-NEXT: qla.alloc_shared {count = 2 : i64} : <128x64xbf16, swizzle 128>
func.func @swizzles() {
  %a = qla.alloc_shared : !qla.smem<128x64xbf16>
  %b = qla.alloc_shared : !qla.smem<64x128xbf16>
  %c = qla.alloc_shared : !qla.smem<256x256xf16>
  %d = qla.alloc_shared : !qla.smem<64x32xf32>
  %e = qla.alloc_shared : !qla.smem<64x32xbf16>
  %f = qla.alloc_shared : !qla.smem<64x16xbf16>
  %g = qla.alloc_shared : !qla.smem<64x8xf32>
  // 48-byte and 192-byte rows, 16-byte rows, 12 rows (not a multiple of the
  // 8-row atom), 1-D: no swizzle.
  %h = qla.alloc_shared : !qla.smem<64x24xbf16>
  %i = qla.alloc_shared : !qla.smem<64x96xbf16>
  %j = qla.alloc_shared : !qla.smem<64x8xbf16>
  %k = qla.alloc_shared : !qla.smem<12x64xbf16>
  %l = qla.alloc_shared : !qla.smem<128xbf16>
  // Attributes are kept.
  %m = qla.alloc_shared {count = 2 : i64} : !qla.smem<128x64xbf16>
  return
}

// -----

// The uses see the new types.
// CHECK-LABEL: func.func @uses_updated
// CHECK: %[[A:.*]] = qla.alloc_shared : <128x64xbf16, swizzle 128>
// CHECK: %[[B:.*]] = qla.alloc_shared : <256x64xbf16, swizzle 128>
// CHECK: %[[C:.*]] = qla.alloc_frag : <128x256xf32, acc x2>
// CHECK: qla.gemm %[[A]], %[[B]], %[[C]] {transB} : !qla.smem<128x64xbf16, swizzle 128>, <256x64xbf16, swizzle 128>, <128x256xf32, acc x2>
func.func @uses_updated() attributes {qla.threads = 256 : i64} {
  %a = qla.alloc_shared : !qla.smem<128x64xbf16>
  %b = qla.alloc_shared : !qla.smem<256x64xbf16>
  %c = qla.alloc_frag : !qla.frag<128x256xf32>
  qla.gemm %a, %b, %c {transB} : !qla.smem<128x64xbf16>, !qla.smem<256x64xbf16>, !qla.frag<128x256xf32>
  return
}

// -----

// Channel slots get swizzles; the put and get block arguments follow.
// CHECK-LABEL: func.func @channel_slots
// CHECK: %[[CH:.*]] = qla.channel "ab" : <[!qla.smem<128x64xbf16, swizzle 128>, !qla.smem<128x32xbf16, swizzle 64>, !qla.smem<64x24xbf16>], 3>
// CHECK: qla.put %[[CH]] {
// CHECK-NEXT: ^bb0(%[[PA:.*]]: !qla.smem<128x64xbf16, swizzle 128>, %[[PB:.*]]: !qla.smem<128x32xbf16, swizzle 64>, %[[PC:.*]]: !qla.smem<64x24xbf16>):
// CHECK-NEXT: qla.load %{{.*}} -> %[[PA]] : <bf16, 2> -> !qla.smem<128x64xbf16, swizzle 128>
// CHECK-NEXT: qla.load %{{.*}} -> %[[PB]] : <bf16, 2> -> !qla.smem<128x32xbf16, swizzle 64>
// CHECK-NEXT: qla.load %{{.*}} -> %[[PC]] : <bf16, 2> -> !qla.smem<64x24xbf16>
// CHECK-NEXT: } : <[!qla.smem<128x64xbf16, swizzle 128>, !qla.smem<128x32xbf16, swizzle 64>, !qla.smem<64x24xbf16>], 3>
// CHECK: qla.get %[[CH]] {
// CHECK-NEXT: ^bb0(%[[GA:.*]]: !qla.smem<128x64xbf16, swizzle 128>, %[[GB:.*]]: !qla.smem<128x32xbf16, swizzle 64>, %[[GC:.*]]: !qla.smem<64x24xbf16>):
// CHECK-NEXT: qla.copy %[[GB]] -> %{{.*}} : !qla.smem<128x32xbf16, swizzle 64> -> !qla.frag<128x32xf32, acc x2>
func.func @channel_slots(%A: !qla.global<bf16, 2>, %i: index) attributes {qla.threads = 384 : i64} {
  %ch = qla.channel "ab" : !qla.channel<[!qla.smem<128x64xbf16>, !qla.smem<128x32xbf16>, !qla.smem<64x24xbf16>], 3>
  qla.role "load" warpgroups 0 to 0 regs 40 {
    qla.put %ch {
    ^bb0(%a: !qla.smem<128x64xbf16>, %b: !qla.smem<128x32xbf16>, %c: !qla.smem<64x24xbf16>):
      qla.load %A[%i, %i] -> %a : !qla.global<bf16, 2> -> !qla.smem<128x64xbf16>
      qla.load %A[%i, %i] -> %b : !qla.global<bf16, 2> -> !qla.smem<128x32xbf16>
      qla.load %A[%i, %i] -> %c : !qla.global<bf16, 2> -> !qla.smem<64x24xbf16>
    } : !qla.channel<[!qla.smem<128x64xbf16>, !qla.smem<128x32xbf16>, !qla.smem<64x24xbf16>], 3>
  }
  qla.role "math" warpgroups 1 to 2 regs 232 {
    %f = qla.alloc_frag : !qla.frag<128x32xf32>
    qla.get %ch {
    ^bb0(%a: !qla.smem<128x64xbf16>, %b: !qla.smem<128x32xbf16>, %c: !qla.smem<64x24xbf16>):
      qla.copy %b -> %f : !qla.smem<128x32xbf16> -> !qla.frag<128x32xf32>
    } : !qla.channel<[!qla.smem<128x64xbf16>, !qla.smem<128x32xbf16>, !qla.smem<64x24xbf16>], 3>
  }
  return
}

// -----

func.func @acc_rows_over_two_warpgroups() attributes {qla.threads = 256 : i64} {
  // expected-error @+1 {{no register layout fits fragment of shape [64, 64] over 2 warpgroup(s): the accumulator layout needs 64 rows per warpgroup (rows a multiple of 128) and columns a multiple of 8}}
  %a = qla.alloc_frag : !qla.frag<64x64xf32>
  return
}

// -----

func.func @acc_cols() {
  qla.role "r" warpgroups 0 to 0 regs 0 {
    // expected-error @+1 {{no register layout fits fragment of shape [64, 12] over 1 warpgroup(s)}}
    %a = qla.alloc_frag : !qla.frag<64x12xf32>
  }
  return
}

// -----

// An unplaced 1-D fragment whose length does not fill a row vector over the
// role's warpgroups (64 rows each) is a column vector; one that does, a row
// vector.
// CHECK-LABEL: func.func @unplaced_vectors
// CHECK: qla.alloc_frag : <64xf32, col x2>
// CHECK-NEXT: qla.alloc_frag : <128xf32, row x2>
func.func @unplaced_vectors() attributes {qla.threads = 384 : i64} {
  qla.role "math" warpgroups 1 to 2 regs 0 {
    %r = qla.alloc_frag : !qla.frag<64xf32>
    %s = qla.alloc_frag : !qla.frag<128xf32>
  }
  return
}

// -----

func.func @col_vector() {
  // expected-error @+1 {{no register layout fits column vector of 12 elements: needs a multiple of 8}}
  %c = qla.alloc_frag : !qla.frag<12xf32>
  qla.parallel [64, 12] {
  ^bb0(%i: index, %j: index):
    %x = qla.elem_read %c[%j] : !qla.frag<12xf32> -> f32
  }
  return
}

// -----

func.func @row_and_col() {
  %s = qla.alloc_frag : !qla.frag<64x64xf32>
  %v = qla.alloc_frag : !qla.frag<64xf32>
  qla.parallel [64, 64] {
  ^bb0(%i: index, %j: index):
    // Uses are visited latest first: the earlier, disagreeing use is reported.
    // expected-error @+1 {{fragment is used both as a row vector and as a column vector; copy it into two fragments}}
    %x = qla.elem_read %v[%i] : !qla.frag<64xf32> -> f32
    %y = qla.elem_read %v[%j] : !qla.frag<64xf32> -> f32
    %z = arith.addf %x, %y : f32
    qla.elem_write %z -> %s[%i, %j] : f32 -> !qla.frag<64x64xf32>
  }
  return
}
