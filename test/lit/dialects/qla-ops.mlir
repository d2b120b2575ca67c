// Every qla op and type parses, prints and re-parses; the generic form too.
// RUN: %qla-opt %s | %qla-opt | FileCheck %s
// RUN: %qla-opt %s -mlir-print-op-generic | %qla-opt | FileCheck %s

// CHECK-LABEL: func.func private @types
// CHECK-SAME: !qla.global<bf16, 2>
// CHECK-SAME: !qla.global<f32, 1>
// CHECK-SAME: !qla.smem<128x64xbf16>
// CHECK-SAME: !qla.smem<128x64xbf16, swizzle 128>
// CHECK-SAME: !qla.smem<64x32xf16, swizzle 64>
// CHECK-SAME: !qla.smem<64x16xbf16, swizzle 32>
// CHECK-SAME: !qla.smem<256xf32>
// CHECK-SAME: !qla.frag<128x256xf32>
// CHECK-SAME: !qla.frag<128x256xf32, acc x2>
// CHECK-SAME: !qla.frag<64x64xbf16, acc x1>
// CHECK-SAME: !qla.frag<128xf32, row x2>
// CHECK-SAME: !qla.frag<64xi32, col x1>
// CHECK-SAME: !qla.channel<[!qla.smem<128x64xbf16>, !qla.smem<256x64xbf16>], 4>
// CHECK-SAME: !qla.channel<[!qla.smem<64x64xf16, swizzle 128>], 1>
func.func private @types(!qla.global<bf16, 2>, !qla.global<f32, 1>,
    !qla.smem<128x64xbf16>, !qla.smem<128x64xbf16, swizzle 128>,
    !qla.smem<64x32xf16, swizzle 64>, !qla.smem<64x16xbf16, swizzle 32>,
    !qla.smem<256xf32>,
    !qla.frag<128x256xf32>, !qla.frag<128x256xf32, acc x2>, !qla.frag<64x64xbf16, acc x1>,
    !qla.frag<128xf32, row x2>, !qla.frag<64xi32, col x1>,
    !qla.channel<[!qla.smem<128x64xbf16>, !qla.smem<256x64xbf16>], 4>,
    !qla.channel<[!qla.smem<64x64xf16, swizzle 128>], 1>)

// An explicit `swizzle 0` is the unswizzled tile (printed without it).
// CHECK-LABEL: func.func private @swizzle_zero
// CHECK-SAME: (!qla.smem<64x64xbf16>)
func.func private @swizzle_zero(!qla.smem<64x64xbf16, swizzle 0>)

// CHECK-LABEL: func.func @storage
func.func @storage() {
  // CHECK: qla.block_id 0
  // CHECK: qla.block_id 1
  // CHECK: qla.block_id 2
  %x = qla.block_id 0
  %y = qla.block_id 1
  %z = qla.block_id 2
  // CHECK: qla.alloc_shared : <128x64xbf16>
  %a = qla.alloc_shared : !qla.smem<128x64xbf16>
  // CHECK: qla.alloc_shared {count = 4 : i64, offset = 1024 : i64} : <256x64xbf16, swizzle 128>
  %b = qla.alloc_shared {count = 4 : i64, offset = 1024 : i64} : !qla.smem<256x64xbf16, swizzle 128>
  // CHECK: qla.alloc_shared : <128xf32>
  %v = qla.alloc_shared : !qla.smem<128xf32>
  // CHECK: qla.alloc_frag : <128x256xf32>
  %f = qla.alloc_frag : !qla.frag<128x256xf32>
  // CHECK: qla.alloc_frag : <128x256xf32, acc x2>
  %g = qla.alloc_frag : !qla.frag<128x256xf32, acc x2>
  // CHECK: qla.alloc_frag : <128xf32, row x2>
  %r = qla.alloc_frag : !qla.frag<128xf32, row x2>
  // CHECK: qla.alloc_frag : <256xf32, col x1>
  %c = qla.alloc_frag : !qla.frag<256xf32, col x1>
  return
}

// CHECK-LABEL: func.func @copies
// CHECK-SAME: (%[[A:.*]]: !qla.global<bf16, 2>, %[[W:.*]]: !qla.global<bf16, 1>, %[[C:.*]]: !qla.global<bf16, 2>, %[[M:.*]]: index)
func.func @copies(%A: !qla.global<bf16, 2>, %W: !qla.global<bf16, 1>, %C: !qla.global<bf16, 2>, %m: index) {
  %c0 = arith.constant 0 : index
  %s = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %f = qla.alloc_frag : !qla.frag<64x64xf32>
  %w = qla.alloc_frag : !qla.frag<64xf32>
  // CHECK: qla.load %[[A]][%[[M]], %{{.*}}] -> %{{.*}} : <bf16, 2> -> !qla.smem<64x64xbf16, swizzle 128>
  qla.load %A[%m, %c0] -> %s : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16, swizzle 128>
  // CHECK: qla.load %[[A]][%[[M]], %{{.*}}] -> %{{.*}} : <bf16, 2> -> !qla.frag<64x64xf32>
  qla.load %A[%m, %c0] -> %f : !qla.global<bf16, 2> -> !qla.frag<64x64xf32>
  // CHECK: qla.load %[[W]][%{{.*}}] -> %{{.*}} : <bf16, 1> -> !qla.frag<64xf32>
  qla.load %W[%c0] -> %w : !qla.global<bf16, 1> -> !qla.frag<64xf32>
  // A single row of a 2-D tensor: dim 0 is dropped.
  // CHECK: qla.load %[[A]][%[[M]], %{{.*}}] -> %{{.*}} {dropped = array<i64: 0>} : <bf16, 2> -> !qla.frag<64xf32>
  qla.load %A[%m, %c0] -> %w {dropped = array<i64: 0>} : !qla.global<bf16, 2> -> !qla.frag<64xf32>
  // CHECK: qla.copy %{{.*}} -> %{{.*}} : !qla.smem<64x64xbf16, swizzle 128> -> !qla.frag<64x64xf32>
  qla.copy %s -> %f : !qla.smem<64x64xbf16, swizzle 128> -> !qla.frag<64x64xf32>
  // CHECK: qla.copy %{{.*}} -> %{{.*}} : !qla.frag<64x64xf32> -> !qla.smem<64x64xbf16, swizzle 128>
  qla.copy %f -> %s : !qla.frag<64x64xf32> -> !qla.smem<64x64xbf16, swizzle 128>
  // A sub-tile of a shared tile (here the whole of it).
  // CHECK: qla.copy %{{.*}} -> %{{.*}} {box = array<i64: 0, 0, 64, 64>} : !qla.frag<64x64xf32> -> !qla.smem<64x64xbf16, swizzle 128>
  qla.copy %f -> %s {box = array<i64: 0, 0, 64, 64>} : !qla.frag<64x64xf32> -> !qla.smem<64x64xbf16, swizzle 128>
  // CHECK: qla.store %{{.*}} -> %[[C]][%[[M]], %{{.*}}] : !qla.frag<64x64xf32> -> <bf16, 2>
  qla.store %f -> %C[%m, %c0] : !qla.frag<64x64xf32> -> !qla.global<bf16, 2>
  // CHECK: qla.store %{{.*}} -> %[[C]][%[[M]], %{{.*}}] : !qla.smem<64x64xbf16, swizzle 128> -> <bf16, 2>
  qla.store %s -> %C[%m, %c0] : !qla.smem<64x64xbf16, swizzle 128> -> !qla.global<bf16, 2>
  // CHECK: qla.store %{{.*}} -> %[[C]][%[[M]], %{{.*}}] {dropped = array<i64: 1>} : !qla.frag<64xf32> -> <bf16, 2>
  qla.store %w -> %C[%m, %c0] {dropped = array<i64: 1>} : !qla.frag<64xf32> -> !qla.global<bf16, 2>
  return
}

// An add into an f32 tensor (the language's copy(+)).
// CHECK-LABEL: func.func @store_accumulate
func.func @store_accumulate(%Y: !qla.global<f32, 2>, %m: index) {
  %f = qla.alloc_frag : !qla.frag<64x64xf32>
  // CHECK: qla.store %{{.*}} -> %{{.*}}[%{{.*}}, %{{.*}}] {accumulate} : !qla.frag<64x64xf32> -> <f32, 2>
  qla.store %f -> %Y[%m, %m] {accumulate} : !qla.frag<64x64xf32> -> !qla.global<f32, 2>
  return
}

// CHECK-LABEL: func.func @compute
func.func @compute() {
  %a = qla.alloc_shared : !qla.smem<128x64xbf16>
  %b = qla.alloc_shared : !qla.smem<256x64xbf16>
  %bt = qla.alloc_shared : !qla.smem<64x256xbf16>
  %at = qla.alloc_shared : !qla.smem<64x128xbf16>
  %acc = qla.alloc_frag : !qla.frag<128x256xf32>
  %p = qla.alloc_frag : !qla.frag<128x64xbf16>
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1 : index
  %i1 = arith.constant 1 : i32
  // CHECK: qla.gemm %{{.*}}, %{{.*}}, %{{.*}} : !qla.smem<128x64xbf16>, <64x256xbf16>, <128x256xf32>
  qla.gemm %a, %bt, %acc : !qla.smem<128x64xbf16>, !qla.smem<64x256xbf16>, !qla.frag<128x256xf32>
  // CHECK: qla.gemm %{{.*}}, %{{.*}}, %{{.*}} {accumulate, transB} : !qla.smem<128x64xbf16>, <256x64xbf16>, <128x256xf32>
  qla.gemm %a, %b, %acc {transB, accumulate} : !qla.smem<128x64xbf16>, !qla.smem<256x64xbf16>, !qla.frag<128x256xf32>
  // CHECK: qla.gemm %{{.*}}, %{{.*}}, %{{.*}} {transA, transB} : !qla.smem<64x128xbf16>, <256x64xbf16>, <128x256xf32>
  qla.gemm %at, %b, %acc {transA, transB} : !qla.smem<64x128xbf16>, !qla.smem<256x64xbf16>, !qla.frag<128x256xf32>
  // Register-sourced A.
  // CHECK: qla.gemm %{{.*}}, %{{.*}}, %{{.*}} {accumulate} : !qla.frag<128x64xbf16>, <64x256xbf16>, <128x256xf32>
  qla.gemm %p, %bt, %acc {accumulate} : !qla.frag<128x64xbf16>, !qla.smem<64x256xbf16>, !qla.frag<128x256xf32>

  // CHECK: qla.fill %{{.*}}, %{{.*}} : <128x256xf32>, f32
  qla.fill %acc, %zero : !qla.frag<128x256xf32>, f32
  %ci = qla.alloc_frag : !qla.frag<64xi32>
  // CHECK: qla.fill %{{.*}}, %{{.*}} : <64xi32>, index
  qla.fill %ci, %one : !qla.frag<64xi32>, index
  // CHECK: qla.fill %{{.*}}, %{{.*}} : <64xi32>, i32
  qla.fill %ci, %i1 : !qla.frag<64xi32>, i32

  %s = qla.alloc_frag : !qla.frag<128x64xf32>
  // CHECK: qla.cast %{{.*}} -> %{{.*}} : <128x64xf32> -> <128x64xbf16>
  qla.cast %s -> %p : !qla.frag<128x64xf32> -> !qla.frag<128x64xbf16>

  %rows = qla.alloc_frag : !qla.frag<128xf32>
  %cols = qla.alloc_frag : !qla.frag<64xf32>
  // CHECK: qla.reduce add %{{.*}} -> %{{.*}} {dim = 1 : i64} : <128x64xf32> -> <128xf32>
  qla.reduce add %s -> %rows {dim = 1} : !qla.frag<128x64xf32> -> !qla.frag<128xf32>
  // CHECK: qla.reduce max %{{.*}} -> %{{.*}} {dim = 0 : i64} : <128x64xf32> -> <64xf32>
  qla.reduce max %s -> %cols {dim = 0} : !qla.frag<128x64xf32> -> !qla.frag<64xf32>
  // CHECK: qla.reduce min %{{.*}} -> %{{.*}} {dim = 1 : i64} : <128x64xf32> -> <128xf32>
  qla.reduce min %s -> %rows {dim = 1} : !qla.frag<128x64xf32> -> !qla.frag<128xf32>
  // CHECK: qla.scan add %{{.*}} -> %{{.*}} {dim = 0 : i64} : <64xf32> -> <64xf32>
  qla.scan add %cols -> %cols {dim = 0} : !qla.frag<64xf32> -> !qla.frag<64xf32>
  // CHECK: qla.scan max %{{.*}} -> %{{.*}} {dim = 1 : i64} : <128x64xf32> -> <128x64xf32>
  qla.scan max %s -> %s {dim = 1} : !qla.frag<128x64xf32> -> !qla.frag<128x64xf32>
  return
}

// CHECK-LABEL: func.func @parallel
func.func @parallel() {
  %s = qla.alloc_frag : !qla.frag<64x128xf32>
  %r = qla.alloc_frag : !qla.frag<64xf32>
  %c = qla.alloc_frag : !qla.frag<128xf32>
  // CHECK: qla.parallel [64, 128] {
  // CHECK-NEXT: ^bb0(%[[I:.*]]: index, %[[J:.*]]: index):
  // CHECK-NEXT: %[[X:.*]] = qla.elem_read %{{.*}}[%[[I]], %[[J]]] : <64x128xf32> -> f32
  // CHECK-NEXT: %[[R:.*]] = qla.elem_read %{{.*}}[%[[I]]] : <64xf32> -> f32
  // CHECK-NEXT: %[[C:.*]] = qla.elem_read %{{.*}}[%[[J]]] : <128xf32> -> f32
  // CHECK-NEXT: %[[Y:.*]] = arith.mulf %[[X]], %[[R]] : f32
  // CHECK-NEXT: %[[Z:.*]] = arith.addf %[[Y]], %[[C]] : f32
  // CHECK-NEXT: qla.elem_write %[[Z]] -> %{{.*}}[%[[I]], %[[J]]] : f32 -> <64x128xf32>
  // CHECK-NEXT: }
  qla.parallel [64, 128] {
  ^bb0(%i: index, %j: index):
    %x = qla.elem_read %s[%i, %j] : !qla.frag<64x128xf32> -> f32
    %y = qla.elem_read %r[%i] : !qla.frag<64xf32> -> f32
    %z = qla.elem_read %c[%j] : !qla.frag<128xf32> -> f32
    %m = arith.mulf %x, %y : f32
    %n = arith.addf %m, %z : f32
    qla.elem_write %n -> %s[%i, %j] : f32 -> !qla.frag<64x128xf32>
  }
  // CHECK: qla.parallel [64] {
  // CHECK-NEXT: ^bb0(%[[K:.*]]: index):
  // CHECK-NEXT: qla.elem_read %{{.*}}[%[[K]]] : <64xf32> -> f32
  // CHECK: qla.elem_write
  // CHECK-NEXT: }
  qla.parallel [64] {
  ^bb0(%k: index):
    %x = qla.elem_read %r[%k] : !qla.frag<64xf32> -> f32
    qla.elem_write %x -> %r[%k] : f32 -> !qla.frag<64xf32>
    qla.yield
  }
  // A square block: a 1-D fragment of its extent is a broadcast vector along
  // either dim (a value per row with the first index, per column with the
  // second); the 2-D fragment is still indexed [i, j].
  // CHECK: qla.parallel [64, 64] {
  // CHECK-NEXT: ^bb0(%[[I2:.*]]: index, %[[J2:.*]]: index):
  // CHECK-NEXT: qla.elem_read %{{.*}}[%[[I2]], %[[J2]]] : <64x64xf32> -> f32
  // CHECK-NEXT: qla.elem_read %{{.*}}[%[[I2]]] : <64xf32> -> f32
  // CHECK-NEXT: qla.elem_read %{{.*}}[%[[J2]]] : <64xf32> -> f32
  %q = qla.alloc_frag : !qla.frag<64x64xf32>
  %w = qla.alloc_frag : !qla.frag<64xf32>
  qla.parallel [64, 64] {
  ^bb0(%i: index, %j: index):
    %x = qla.elem_read %q[%i, %j] : !qla.frag<64x64xf32> -> f32
    %y = qla.elem_read %r[%i] : !qla.frag<64xf32> -> f32
    %z = qla.elem_read %w[%j] : !qla.frag<64xf32> -> f32
    %m = arith.mulf %x, %y : f32
    %n = arith.addf %m, %z : f32
    qla.elem_write %n -> %q[%i, %j] : f32 -> !qla.frag<64x64xf32>
  }
  return
}

// CHECK-LABEL: func.func @pipeline
func.func @pipeline(%A: !qla.global<bf16, 2>, %n: index) {
  %c0 = arith.constant 0 : index
  %a = qla.alloc_shared : !qla.smem<128x64xbf16>
  // CHECK: qla.pipeline %{{.*}} to %{{.*}} stages 3 {
  // CHECK-NEXT: ^bb0(%[[K:.*]]: index):
  // CHECK-NEXT: qla.load %{{.*}}[%{{.*}}, %[[K]]] -> %{{.*}} : <bf16, 2> -> !qla.smem<128x64xbf16>
  // CHECK-NEXT: }
  qla.pipeline %c0 to %n stages 3 {
  ^bb0(%k: index):
    qla.load %A[%c0, %k] -> %a : !qla.global<bf16, 2> -> !qla.smem<128x64xbf16>
  }
  return
}

// Roles on adjacent, disjoint warpgroup ranges (0, 1-2, 3) within the 4
// warpgroups of 512 threads; the put copies into each slot tile once.
// CHECK-LABEL: func.func @roles
// CHECK-SAME: qla.threads = 512
func.func @roles(%A: !qla.global<bf16, 2>, %B: !qla.global<bf16, 2>, %n: index) attributes {qla.threads = 512 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // CHECK: %[[CH:.*]] = qla.channel "ab" : <[!qla.smem<128x64xbf16>, !qla.smem<256x64xbf16>], 4>
  %ch = qla.channel "ab" : !qla.channel<[!qla.smem<128x64xbf16>, !qla.smem<256x64xbf16>], 4>
  // CHECK: qla.role "load" warpgroups 0 to 0 regs 40 {
  qla.role "load" warpgroups 0 to 0 regs 40 {
    scf.for %k = %c0 to %n step %c1 {
      // CHECK: qla.put %[[CH]] {
      // CHECK-NEXT: ^bb0(%[[PA:.*]]: !qla.smem<128x64xbf16>, %[[PB:.*]]: !qla.smem<256x64xbf16>):
      // CHECK-NEXT: arith.constant 64 : index
      // CHECK-NEXT: arith.muli
      // CHECK-NEXT: qla.load %{{.*}} -> %[[PA]] : <bf16, 2> -> !qla.smem<128x64xbf16>
      // CHECK-NEXT: qla.load %{{.*}} -> %[[PB]] : <bf16, 2> -> !qla.smem<256x64xbf16>
      // CHECK-NEXT: } : <[!qla.smem<128x64xbf16>, !qla.smem<256x64xbf16>], 4>
      qla.put %ch {
      ^bb0(%a: !qla.smem<128x64xbf16>, %b: !qla.smem<256x64xbf16>):
        %c64 = arith.constant 64 : index
        %k0 = arith.muli %k, %c64 : index
        qla.load %A[%c0, %k0] -> %a : !qla.global<bf16, 2> -> !qla.smem<128x64xbf16>
        qla.load %B[%c0, %k0] -> %b : !qla.global<bf16, 2> -> !qla.smem<256x64xbf16>
      } : !qla.channel<[!qla.smem<128x64xbf16>, !qla.smem<256x64xbf16>], 4>
    }
  }
  // CHECK: qla.role "math" warpgroups 1 to 2 regs 232 {
  qla.role "math" warpgroups 1 to 2 regs 232 {
    %acc = qla.alloc_frag : !qla.frag<128x256xf32>
    scf.for %k = %c0 to %n step %c1 {
      // CHECK: qla.get %[[CH]] {
      // CHECK-NEXT: ^bb0(%[[GA:.*]]: !qla.smem<128x64xbf16>, %[[GB:.*]]: !qla.smem<256x64xbf16>):
      // CHECK-NEXT: qla.gemm %[[GA]], %[[GB]], %{{.*}} {accumulate, transB}
      // CHECK-NEXT: } : <[!qla.smem<128x64xbf16>, !qla.smem<256x64xbf16>], 4>
      qla.get %ch {
      ^bb0(%a: !qla.smem<128x64xbf16>, %b: !qla.smem<256x64xbf16>):
        qla.gemm %a, %b, %acc {transB, accumulate} : !qla.smem<128x64xbf16>, !qla.smem<256x64xbf16>, !qla.frag<128x256xf32>
        qla.yield
      } : !qla.channel<[!qla.smem<128x64xbf16>, !qla.smem<256x64xbf16>], 4>
    }
  }
  // A role with the compiler's choice of budget.
  // CHECK: qla.role "epilogue" warpgroups 3 to 3 regs 0 {
  // CHECK-NEXT: }
  qla.role "epilogue" warpgroups 3 to 3 regs 0 {
    qla.yield
  }
  return
}

// -----

// CHECK-LABEL: func.func @inv_blocks
// CHECK: qla.inv_unit_lower %{{.*}} -> %{{.*}} {blocks = 16 : i64} : <64x64xf32> -> <64x64xf32>
func.func @inv_blocks() {
  %l = qla.alloc_frag : <64x64xf32>
  %d = qla.alloc_frag : <64x64xf32>
  qla.inv_unit_lower %l -> %d {blocks = 16 : i64} : <64x64xf32> -> <64x64xf32>
  return
}
