// Pipeline lowering: the shared tiles a pipeline loads become `stages`-slot
// rings with a `full` barrier per slot; a prologue issues the first `stages`
// iterations' loads, each iteration waits on its slot, runs the body on the
// slot's tiles, syncs the group and refills the slot for iteration k + stages.
// The error cases at the end are checked by -verify-diagnostics.
// RUN: %qla-opt %s -split-input-file -qla-lower-pipelines -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @pipe
// CHECK-SAME: (%[[A:[^:]*]]: !qla.global<bf16, 2>, %[[B:[^:]*]]: !qla.global<bf16, 2>, %[[N:[^:]*]]: index, %[[M0:[^:]*]]: index)
// CHECK-NEXT: %[[FULL:.*]] = qlanv.barriers {arrivals = 1 : i64} : <3>
// CHECK-NEXT: qlanv.barrier_init %[[FULL]] : <3>
// CHECK-NEXT: qlanv.block_sync
// CHECK-NEXT: %[[LB:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[BUFA:.*]] = qla.alloc_shared {count = 3 : i64} : <64x64xbf16, swizzle 128>
// CHECK-NEXT: %[[BUFB:.*]] = qla.alloc_shared {count = 3 : i64} : <128x64xbf16, swizzle 128>
// CHECK-NEXT: %[[ACC:.*]] = qla.alloc_frag
// Prologue, one guarded block per stage: iteration lb + s into slot s, the
// offsets recomputed for that iteration; 64*64*2 + 128*64*2 = 24576 bytes.
// CHECK-NEXT: %[[S0:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[I0:.*]] = arith.addi %[[LB]], %[[S0]] : index
// CHECK-NEXT: %[[IN0:.*]] = arith.cmpi slt, %[[I0]], %[[N]] : index
// CHECK-NEXT: scf.if %[[IN0]] {
// CHECK-NEXT: qlanv.elect {
// CHECK-NEXT: qlanv.barrier_arrive_expect_tx %[[FULL]][%[[S0]]], 24576 : <3>
// CHECK-NEXT: %[[C64:.*]] = arith.constant 64 : index
// CHECK-NEXT: %[[K0:.*]] = arith.muli %[[I0]], %[[C64]] : index
// CHECK-NEXT: %[[VA0:.*]] = qlanv.slot %[[BUFA]][%[[S0]]]
// CHECK-NEXT: qlanv.tma_load %[[A]][%[[M0]], %[[K0]]] -> %[[VA0]], %[[FULL]][%[[S0]]]
// CHECK-NEXT: %[[VB0:.*]] = qlanv.slot %[[BUFB]][%[[S0]]]
// CHECK-NEXT: qlanv.tma_load %[[B]][%[[LB]], %[[K0]]] -> %[[VB0]], %[[FULL]][%[[S0]]]
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: %[[S1:.*]] = arith.constant 1 : index
// CHECK-NEXT: %[[I1:.*]] = arith.addi %[[LB]], %[[S1]] : index
// CHECK: qlanv.barrier_arrive_expect_tx %[[FULL]][%[[S1]]], 24576 : <3>
// CHECK: %[[S2:.*]] = arith.constant 2 : index
// CHECK-NEXT: %[[I2:.*]] = arith.addi %[[LB]], %[[S2]] : index
// CHECK: qlanv.barrier_arrive_expect_tx %[[FULL]][%[[S2]]], 24576 : <3>
// CHECK-NOT: arith.constant 3 : index
// The steady state.
// CHECK: %[[RING:.*]] = qlanv.ring "pipeline" : <3>
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT: scf.for %[[K:.*]] = %[[LB]] to %[[N]] step %[[ONE]] {
// CHECK-NEXT: %[[SL:.*]] = qlanv.ring_slot %[[RING]] : <3>
// CHECK-NEXT: %[[PH:.*]] = qlanv.ring_phase %[[RING]] : <3>
// CHECK-NEXT: qlanv.barrier_wait %[[FULL]][%[[SL]]], %[[PH]] : <3>
// CHECK-DAG: %[[VA:.*]] = qlanv.slot %[[BUFA]][%[[SL]]]
// CHECK-DAG: %[[VB:.*]] = qlanv.slot %[[BUFB]][%[[SL]]]
// CHECK: qla.gemm %[[VA]], %[[VB]], %[[ACC]] {accumulate, transB}
// CHECK-NEXT: qlanv.block_sync
// CHECK-NEXT: %[[C3:.*]] = arith.constant 3 : index
// CHECK-NEXT: %[[AHEAD:.*]] = arith.addi %[[K]], %[[C3]] : index
// CHECK-NEXT: %[[INR:.*]] = arith.cmpi slt, %[[AHEAD]], %[[N]] : index
// CHECK-NEXT: scf.if %[[INR]] {
// CHECK-NEXT: qlanv.elect {
// CHECK-NEXT: qlanv.barrier_arrive_expect_tx %[[FULL]][%[[SL]]], 24576 : <3>
// CHECK-NEXT: %[[C64B:.*]] = arith.constant 64 : index
// CHECK-NEXT: %[[KA:.*]] = arith.muli %[[AHEAD]], %[[C64B]] : index
// CHECK-NEXT: %[[RA:.*]] = qlanv.slot %[[BUFA]][%[[SL]]]
// CHECK-NEXT: qlanv.tma_load %[[A]][%[[M0]], %[[KA]]] -> %[[RA]], %[[FULL]][%[[SL]]]
// CHECK-NEXT: %[[RB:.*]] = qlanv.slot %[[BUFB]][%[[SL]]]
// CHECK-NEXT: qlanv.tma_load %[[B]][%[[LB]], %[[KA]]] -> %[[RB]], %[[FULL]][%[[SL]]]
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: qlanv.ring_advance %[[RING]] : <3>
// CHECK-NEXT: }
// CHECK-NOT: qla.pipeline
func.func @pipe(%A: !qla.global<bf16, 2>, %B: !qla.global<bf16, 2>, %n: index, %m0: index) attributes {qla.threads = 128 : i64} {
  %c0 = arith.constant 0 : index
  %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %b = qla.alloc_shared : !qla.smem<128x64xbf16, swizzle 128>
  %acc = qla.alloc_frag : !qla.frag<64x128xf32, acc x1>
  qla.pipeline %c0 to %n stages 3 {
  ^bb0(%k: index):
    %c64 = arith.constant 64 : index
    %k0 = arith.muli %k, %c64 : index
    qla.load %A[%m0, %k0] -> %a : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16, swizzle 128>
    qla.load %B[%c0, %k0] -> %b : !qla.global<bf16, 2> -> !qla.smem<128x64xbf16, swizzle 128>
    qla.gemm %a, %b, %acc {transB, accumulate} : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<128x64xbf16, swizzle 128>, !qla.frag<64x128xf32, acc x1>
  }
  return
}

// -----

// Inside a role, the group sync before a refill is the role's named barrier.
// CHECK-LABEL: func.func @pipe_in_role
// CHECK: qla.role "math" warpgroups 1 to 2
// CHECK: scf.for
// CHECK: qla.gemm
// CHECK-NEXT: qlanv.named_barrier 2, 256
func.func @pipe_in_role(%A: !qla.global<bf16, 2>, %n: index) attributes {qla.threads = 384 : i64} {
  qla.role "other" warpgroups 0 to 0 regs 0 {
  }
  qla.role "math" warpgroups 1 to 2 regs 0 {
    %c0 = arith.constant 0 : index
    %a = qla.alloc_shared : !qla.smem<128x64xbf16, swizzle 128>
    %acc = qla.alloc_frag : !qla.frag<128x128xf32, acc x2>
    qla.pipeline %c0 to %n stages 2 {
    ^bb0(%k: index):
      qla.load %A[%c0, %k] -> %a : !qla.global<bf16, 2> -> !qla.smem<128x64xbf16, swizzle 128>
      qla.gemm %a, %a, %acc {transB} : !qla.smem<128x64xbf16, swizzle 128>, !qla.smem<128x64xbf16, swizzle 128>, !qla.frag<128x128xf32, acc x2>
    }
  }
  return
}

// -----

func.func @no_loads(%n: index) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'qla.pipeline' op a pipeline needs at least one global→shared copy in its body}}
  qla.pipeline %c0 to %n stages 2 {
  ^bb0(%k: index):
  }
  return
}

// -----

func.func @tile_inside(%A: !qla.global<bf16, 2>, %n: index) {
  %c0 = arith.constant 0 : index
  qla.pipeline %c0 to %n stages 2 {
  ^bb0(%k: index):
    %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
    // expected-error @+1 {{'qla.load' op a pipelined load must target a shared tile declared before the pipeline}}
    qla.load %A[%c0, %k] -> %a : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16, swizzle 128>
  }
  return
}

// -----

func.func @tile_used_outside(%A: !qla.global<bf16, 2>, %n: index) {
  %c0 = arith.constant 0 : index
  %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %f = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  qla.pipeline %c0 to %n stages 2 {
  ^bb0(%k: index):
    qla.load %A[%c0, %k] -> %a : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16, swizzle 128>
  }
  // expected-error @+1 {{'qla.copy' op a pipelined shared tile may only be used inside its pipeline}}
  qla.copy %a -> %f : !qla.smem<64x64xbf16, swizzle 128> -> !qla.frag<64x64xf32, acc x1>
  return
}

// -----

func.func @offset_not_arithmetic(%A: !qla.global<bf16, 2>, %n: index) {
  %c0 = arith.constant 0 : index
  %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  qla.pipeline %c0 to %n stages 2 {
  ^bb0(%k: index):
    %o = scf.execute_region -> index {
      scf.yield %k : index
    }
    // expected-error @+1 {{'qla.load' op pipeline load offsets must be arithmetic on the loop index}}
    qla.load %A[%c0, %o] -> %a : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16, swizzle 128>
  }
  return
}

// -----

func.func @bounded(%A: !qla.global<bf16, 2>, %n: index, %eos: index) {
  %c0 = arith.constant 0 : index
  %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  qla.pipeline %c0 to %n stages 2 {
  ^bb0(%k: index):
    // expected-error @+1 {{'qla.load' op a pipelined copy cannot be bounded with `until` (TMA clips only at the tensor's edge); mask the rows in a map instead}}
    qla.load %A[%c0, %k] -> %a until [%eos] {limitDims = array<i64: 0>} : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16, swizzle 128>
  }
  return
}
