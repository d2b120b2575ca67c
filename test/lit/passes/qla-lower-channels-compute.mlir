// Channels between compute roles: puts whose threads store into the slot
// (fragment→shared copies, mixed with TMA loads), channels got by several
// roles, and puts/gets nested in gets of other channels.
// RUN: %qla-opt %s -split-input-file -qla-lower-channels | FileCheck %s

// A compute put: every thread of role "aux" waits for the slot to be empty,
// stores its part of the fragment (then fence.proxy.async); one elected
// thread arms `full` with the bytes of the put's TMA copy only (64*64*2,
// expect_tx without an arrival) and issues it; then every thread arrives, with
// no barrier among them: `full` expects the role's 128 arrivals.
// CHECK-LABEL: func.func @compute_put
// CHECK-NEXT: %[[BUFM:.*]] = qla.alloc_shared {count = 2 : i64} : <64x64xbf16, swizzle 128>
// CHECK-NEXT: %[[BUFU:.*]] = qla.alloc_shared {count = 2 : i64} : <64x64xbf16, swizzle 128>
// CHECK-NEXT: %[[FULL:.*]] = qlanv.barriers {arrivals = 128 : i64} : <2>
// CHECK-NEXT: qlanv.barrier_init %[[FULL]] : <2>
// CHECK-NEXT: %[[EMPTY:.*]] = qlanv.barriers {arrivals = 128 : i64} : <2>
// CHECK: qla.role "aux" warpgroups 0 to 0 regs 0 {
// CHECK-NEXT: %[[PR:.*]] = qlanv.ring "mid.put" : <2>
// CHECK-NEXT: %[[F:.*]] = qla.alloc_frag
// CHECK-NEXT: %[[PS:.*]] = qlanv.ring_slot %[[PR]] : <2>
// CHECK-NEXT: %[[PP:.*]] = qlanv.ring_phase %[[PR]] : <2>
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[FLIP:.*]] = arith.xori %[[PP]], %[[ONE]] : i32
// CHECK-NEXT: qlanv.barrier_wait %[[EMPTY]][%[[PS]]], %[[FLIP]] {qla.what = {{"[a-z0-9_]+\.?[a-z]*"}}} : <2>
// CHECK-NEXT: %[[SM:.*]] = qlanv.slot %[[BUFM]][%[[PS]]]
// CHECK-NEXT: %[[SU:.*]] = qlanv.slot %[[BUFU]][%[[PS]]]
// CHECK-NEXT: qla.copy %[[F]] -> %[[SM]] {qla.slot_fill}
// CHECK-NEXT: qlanv.fence_proxy_async
// CHECK-NEXT: qlanv.elect {
// CHECK-NEXT: qlanv.barrier_arrive_expect_tx %[[FULL]][%[[PS]]], 8192 {noArrive} : <2>
// CHECK-NEXT: qlanv.tma_load %{{.*}} -> %[[SU]], %[[FULL]][%[[PS]]]
// CHECK-NEXT: }
// CHECK-NEXT: qlanv.barrier_arrive %[[FULL]][%[[PS]]] {qla.what = {{"[a-z0-9_]+\.?[a-z]*"}}} : <2>
// CHECK-NEXT: qlanv.ring_advance %[[PR]] : <2>
// CHECK-NOT: qla.put
// The consumer is unchanged: wait full, gemm on the slot, release (every
// thread arrives: `empty` expects the role's 128).
// CHECK: qla.role "math" warpgroups 1 to 1 regs 0 {
// CHECK: qlanv.barrier_wait %[[FULL]]
// CHECK: qla.gemm
// CHECK-NEXT: qlanv.barrier_arrive %[[EMPTY]][%{{.*}}] {qla.what = {{"[a-z0-9_]+\.?[a-z]*"}}} : <2>
func.func @compute_put(%A: !qla.global<bf16, 2>, %i: index) attributes {qla.threads = 256 : i64} {
  %ch = qla.channel "mid" : !qla.channel<[!qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>], 2>
  qla.role "aux" warpgroups 0 to 0 regs 0 {
    %f = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
    qla.put %ch {
    ^bb0(%m: !qla.smem<64x64xbf16, swizzle 128>, %u: !qla.smem<64x64xbf16, swizzle 128>):
      qla.copy %f -> %m : !qla.frag<64x64xf32, acc x1> -> !qla.smem<64x64xbf16, swizzle 128>
      qla.load %A[%i, %i] -> %u : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16, swizzle 128>
    } : !qla.channel<[!qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>], 2>
  }
  qla.role "math" warpgroups 1 to 1 regs 0 {
    %acc = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
    qla.get %ch {
    ^bb0(%m: !qla.smem<64x64xbf16, swizzle 128>, %u: !qla.smem<64x64xbf16, swizzle 128>):
      qla.gemm %m, %u, %acc {transB} : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
    } : !qla.channel<[!qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>], 2>
  }
  return
}

// -----

// Two consumer roles (1 + 2 warpgroups): `empty` expects 384 arrivals (one
// per consumer thread), and
// each consumer role keeps its own ring cursor over the same barriers.
// CHECK-LABEL: func.func @two_consumers
// CHECK: %[[FULL:.*]] = qlanv.barriers {arrivals = 1 : i64} : <2>
// CHECK: %[[EMPTY:.*]] = qlanv.barriers {arrivals = 384 : i64} : <2>
// CHECK: qla.role "load"
// CHECK-NEXT: qlanv.ring "inp.put" : <2>
// CHECK: qla.role "aux" warpgroups 1 to 1
// CHECK-NEXT: %[[R1:.*]] = qlanv.ring "inp.get.aux" : <2>
// CHECK-NEXT: qla.alloc_frag
// CHECK-NEXT: %[[S1:.*]] = qlanv.ring_slot %[[R1]]
// CHECK-NEXT: %[[P1:.*]] = qlanv.ring_phase %[[R1]]
// CHECK-NEXT: qlanv.barrier_wait %[[FULL]][%[[S1]]], %[[P1]]
// CHECK: qlanv.barrier_arrive %[[EMPTY]][%[[S1]]] {qla.what = "inp.release"} :
// CHECK-NEXT: qlanv.ring_advance %[[R1]]
// CHECK: qla.role "math" warpgroups 2 to 3
// CHECK-NEXT: %[[R2:.*]] = qlanv.ring "inp.get.math" : <2>
// CHECK-NEXT: %[[S2:.*]] = qlanv.ring_slot %[[R2]]
// CHECK-NEXT: %[[P2:.*]] = qlanv.ring_phase %[[R2]]
// CHECK-NEXT: qlanv.barrier_wait %[[FULL]][%[[S2]]], %[[P2]]
// CHECK: qlanv.barrier_arrive %[[EMPTY]][%[[S2]]] {qla.what = "inp.release"} :
// CHECK-NEXT: qlanv.ring_advance %[[R2]]
func.func @two_consumers(%A: !qla.global<bf16, 2>, %i: index) attributes {qla.threads = 512 : i64} {
  %ch = qla.channel "inp" : !qla.channel<[!qla.smem<64x64xbf16, swizzle 128>], 2>
  qla.role "load" warpgroups 0 to 0 regs 0 {
    qla.put %ch {
    ^bb0(%x: !qla.smem<64x64xbf16, swizzle 128>):
      qla.load %A[%i, %i] -> %x : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16, swizzle 128>
    } : !qla.channel<[!qla.smem<64x64xbf16, swizzle 128>], 2>
  }
  qla.role "aux" warpgroups 1 to 1 regs 0 {
    %f = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
    qla.get %ch {
    ^bb0(%x: !qla.smem<64x64xbf16, swizzle 128>):
      qla.gemm %x, %x, %f {transB} : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
    } : !qla.channel<[!qla.smem<64x64xbf16, swizzle 128>], 2>
  }
  qla.role "math" warpgroups 2 to 3 regs 0 {
    qla.get %ch {
    ^bb0(%x: !qla.smem<64x64xbf16, swizzle 128>):
    } : !qla.channel<[!qla.smem<64x64xbf16, swizzle 128>], 2>
  }
  return
}

// -----

// Nesting: aux's put of `mid` (a store only: every thread arrives) sits in
// its get of `inp`; math's get of `mid` in its get of `inp`, and reads the
// slot with threads: each thread releases after its own reads, no barrier.
// Each get releases at the end of its own body, the inner one first.
// CHECK-LABEL: func.func @nested
// CHECK: %[[IFULL:.*]] = qlanv.barriers {arrivals = 1 : i64} : <2>
// CHECK: %[[IEMPTY:.*]] = qlanv.barriers {arrivals = 256 : i64} : <2>
// CHECK: %[[MFULL:.*]] = qlanv.barriers {arrivals = 128 : i64} : <2>
// CHECK: %[[MEMPTY:.*]] = qlanv.barriers {arrivals = 128 : i64} : <2>
// CHECK: qla.role "aux"
// CHECK: qlanv.barrier_wait %[[IFULL]]
// CHECK: qla.gemm
// CHECK-NEXT: %[[MS:.*]] = qlanv.ring_slot
// CHECK: qlanv.barrier_wait %[[MEMPTY]][%[[MS]]]
// CHECK: qla.copy {{.*}} {qla.slot_fill}
// CHECK-NEXT: qlanv.fence_proxy_async
// CHECK-NEXT: qlanv.barrier_arrive %[[MFULL]][%[[MS]]] {qla.what = {{"[a-z0-9_]+\.?[a-z]*"}}} : <2>
// CHECK-NEXT: qlanv.ring_advance
// CHECK-NEXT: qlanv.barrier_arrive %[[IEMPTY]]
// CHECK: qla.role "math"
// CHECK: qlanv.barrier_wait %[[IFULL]]
// CHECK: qlanv.barrier_wait %[[MFULL]]
// CHECK: qla.copy
// CHECK-NEXT: qla.gemm
// CHECK-NEXT: qlanv.barrier_arrive %[[MEMPTY]]
// CHECK-NEXT: qlanv.ring_advance
// CHECK-NEXT: qlanv.barrier_arrive %[[IEMPTY]]
// CHECK-NEXT: qlanv.ring_advance
func.func @nested(%A: !qla.global<bf16, 2>, %i: index) attributes {qla.threads = 384 : i64} {
  %inp = qla.channel "inp" : !qla.channel<[!qla.smem<64x64xbf16, swizzle 128>], 2>
  %mid = qla.channel "mid" : !qla.channel<[!qla.smem<64x64xbf16, swizzle 128>], 2>
  qla.role "load" warpgroups 0 to 0 regs 0 {
    qla.put %inp {
    ^bb0(%x: !qla.smem<64x64xbf16, swizzle 128>):
      qla.load %A[%i, %i] -> %x : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16, swizzle 128>
    } : !qla.channel<[!qla.smem<64x64xbf16, swizzle 128>], 2>
  }
  qla.role "aux" warpgroups 1 to 1 regs 0 {
    %f = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
    qla.get %inp {
    ^bb0(%x: !qla.smem<64x64xbf16, swizzle 128>):
      qla.gemm %x, %x, %f {transB} : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
      qla.put %mid {
      ^bb0(%m: !qla.smem<64x64xbf16, swizzle 128>):
        qla.copy %f -> %m : !qla.frag<64x64xf32, acc x1> -> !qla.smem<64x64xbf16, swizzle 128>
      } : !qla.channel<[!qla.smem<64x64xbf16, swizzle 128>], 2>
    } : !qla.channel<[!qla.smem<64x64xbf16, swizzle 128>], 2>
  }
  qla.role "math" warpgroups 2 to 2 regs 0 {
    %y = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
    %a = qla.alloc_frag : !qla.frag<64x64xbf16, acc x1>
    qla.get %inp {
    ^bb0(%x: !qla.smem<64x64xbf16, swizzle 128>):
      qla.get %mid {
      ^bb0(%m: !qla.smem<64x64xbf16, swizzle 128>):
        qla.copy %m -> %a : !qla.smem<64x64xbf16, swizzle 128> -> !qla.frag<64x64xbf16, acc x1>
        qla.gemm %a, %x, %y : !qla.frag<64x64xbf16, acc x1>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
      } : !qla.channel<[!qla.smem<64x64xbf16, swizzle 128>], 2>
    } : !qla.channel<[!qla.smem<64x64xbf16, swizzle 128>], 2>
  }
  return
}

// -----

// A role that reads back the slots it put (the producer among the consumers):
// its put and its get keep their own ring cursors ("back.put", "back.get.aux"),
// its threads' arrivals on `full` are what its get waits for, and `empty`
// counts its releases with the other consumer's (2 x 128).
// CHECK-LABEL: func.func @read_back
// CHECK: %[[FULL:.*]] = qlanv.barriers {arrivals = 128 : i64} : <1>
// CHECK: %[[EMPTY:.*]] = qlanv.barriers {arrivals = 256 : i64} : <1>
// CHECK: qla.role "aux" warpgroups 0 to 0 regs 0 {
// CHECK-DAG: %[[GR:.*]] = qlanv.ring "back.get.aux" : <1>
// CHECK-DAG: %[[PR:.*]] = qlanv.ring "back.put" : <1>
// CHECK: qlanv.ring_slot %[[PR]]
// CHECK: qlanv.barrier_wait %[[EMPTY]]
// CHECK: qla.copy %{{.*}} -> %{{.*}} {qla.slot_fill}
// CHECK: qlanv.barrier_arrive %[[FULL]]
// CHECK: qlanv.ring_advance %[[PR]]
// CHECK: %[[GS:.*]] = qlanv.ring_slot %[[GR]]
// CHECK: qlanv.barrier_wait %[[FULL]][%[[GS]]]
// CHECK: qla.gemm
// CHECK: qlanv.barrier_arrive %[[EMPTY]][%[[GS]]]
// CHECK: qlanv.ring_advance %[[GR]]
// CHECK: qla.role "math" warpgroups 1 to 1 regs 0 {
// CHECK: qlanv.barrier_wait %[[FULL]]
// CHECK: qlanv.barrier_arrive %[[EMPTY]]
func.func @read_back(%i: index) attributes {qla.threads = 256 : i64} {
  %ch = qla.channel "back" : !qla.channel<[!qla.smem<64x64xbf16, swizzle 128>], 1>
  qla.role "aux" warpgroups 0 to 0 regs 0 {
    %f = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
    %acc = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
    qla.put %ch {
    ^bb0(%m: !qla.smem<64x64xbf16, swizzle 128>):
      qla.copy %f -> %m : !qla.frag<64x64xf32, acc x1> -> !qla.smem<64x64xbf16, swizzle 128>
    } : !qla.channel<[!qla.smem<64x64xbf16, swizzle 128>], 1>
    qla.get %ch {
    ^bb0(%m: !qla.smem<64x64xbf16, swizzle 128>):
      qla.gemm %m, %m, %acc {transB} : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
    } : !qla.channel<[!qla.smem<64x64xbf16, swizzle 128>], 1>
  }
  qla.role "math" warpgroups 1 to 1 regs 0 {
    %acc = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
    qla.get %ch {
    ^bb0(%m: !qla.smem<64x64xbf16, swizzle 128>):
      qla.gemm %m, %m, %acc {transB} : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
    } : !qla.channel<[!qla.smem<64x64xbf16, swizzle 128>], 1>
  }
  return
}

// -----

// A put staged in its own fragments (a load into a fragment of the put, then
// the fragment's copy into the slot) is a compute put although it has no
// fragment of the role: every thread waits for the slot, then loads and
// stores its part (the load is the threads' own, not TMA: no elect, no
// expect_tx), then arrives.
// CHECK-LABEL: func.func @staged_put
// CHECK: %[[FULL:.*]] = qlanv.barriers {arrivals = 128 : i64} : <1>
// CHECK: %[[EMPTY:.*]] = qlanv.barriers {arrivals = 128 : i64} : <1>
// CHECK: qla.role "aux" warpgroups 0 to 0 regs 0 {
// CHECK: qlanv.barrier_wait %[[EMPTY]]
// CHECK-NEXT: %[[S:.*]] = qlanv.slot
// CHECK-NEXT: %[[H:.*]] = qla.alloc_frag
// CHECK-NEXT: qla.load %{{.*}} -> %[[H]]
// CHECK-NEXT: qla.copy %[[H]] -> %[[S]] {qla.slot_fill}
// CHECK-NEXT: qlanv.fence_proxy_async
// CHECK-NEXT: qlanv.barrier_arrive %[[FULL]]
// CHECK-NOT: qlanv.elect
// CHECK: qla.role "math"
func.func @staged_put(%A: !qla.global<f32, 2>, %i: index) attributes {qla.threads = 256 : i64} {
  %ch = qla.channel "mid" : !qla.channel<[!qla.smem<64x64xbf16, swizzle 128>], 1>
  qla.role "aux" warpgroups 0 to 0 regs 0 {
    qla.put %ch {
    ^bb0(%m: !qla.smem<64x64xbf16, swizzle 128>):
      %h = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
      qla.load %A[%i, %i] -> %h : !qla.global<f32, 2> -> !qla.frag<64x64xf32, acc x1>
      qla.copy %h -> %m : !qla.frag<64x64xf32, acc x1> -> !qla.smem<64x64xbf16, swizzle 128>
    } : !qla.channel<[!qla.smem<64x64xbf16, swizzle 128>], 1>
  }
  qla.role "math" warpgroups 1 to 1 regs 0 {
    %acc = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
    qla.get %ch {
    ^bb0(%m: !qla.smem<64x64xbf16, swizzle 128>):
      qla.gemm %m, %m, %acc {transB} : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
    } : !qla.channel<[!qla.smem<64x64xbf16, swizzle 128>], 1>
  }
  return
}
