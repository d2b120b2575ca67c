// Channel lowering: put/get become mbarrier rings with explicit phases, and
// one-shot global→shared loads a TMA load on a one-slot ring. The error
// cases are checked by -verify-diagnostics.
// RUN: %qla-opt %s -split-input-file -qla-lower-channels -verify-diagnostics | FileCheck %s

// The GEMM's channel: 2 tiles per slot, 4 slots, 1 producer and 2 consumer
// warpgroups.
// CHECK-LABEL: func.func @gemm
// CHECK-SAME: (%[[A:[^:]*]]: !qla.global<bf16, 2>, %[[B:[^:]*]]: !qla.global<bf16, 2>, %[[K:[^:]*]]: index, %[[M0:[^:]*]]: index, %[[N0:[^:]*]]: index)
// Storage and barriers at function entry, before every role.
// CHECK-NEXT: %[[BUFA:.*]] = qla.alloc_shared {count = 4 : i64} : <128x64xbf16, swizzle 128>
// CHECK-NEXT: %[[BUFB:.*]] = qla.alloc_shared {count = 4 : i64} : <256x64xbf16, swizzle 128>
// CHECK-NEXT: %[[FULL:.*]] = qlanv.barriers {arrivals = 1 : i64} : <4>
// CHECK-NEXT: qlanv.barrier_init %[[FULL]] : <4>
// CHECK-NEXT: %[[EMPTY:.*]] = qlanv.barriers {arrivals = 256 : i64} : <4>
// CHECK-NEXT: qlanv.barrier_init %[[EMPTY]] : <4>
// CHECK-NEXT: qlanv.block_sync
// CHECK-NOT: qla.channel
// Producer: wait for a free slot on the flipped phase, arm `full` with the
// slot's bytes (128*64*2 + 256*64*2), one TMA load per qla.load.
// CHECK: qla.role "load" warpgroups 0 to 0 regs 40 {
// CHECK-NEXT: %[[PR:.*]] = qlanv.ring "ab.put" : <4>
// CHECK: scf.for %[[KK:.*]] = %{{.*}} to %[[K]]
// CHECK-NEXT: %[[PS:.*]] = qlanv.ring_slot %[[PR]] : <4>
// CHECK-NEXT: %[[PP:.*]] = qlanv.ring_phase %[[PR]] : <4>
// CHECK-NEXT: qlanv.elect {
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[FLIP:.*]] = arith.xori %[[PP]], %[[ONE]] : i32
// CHECK-NEXT: qlanv.barrier_wait %[[EMPTY]][%[[PS]]], %[[FLIP]] {qla.what = "ab.put"} : <4>
// CHECK-NEXT: qlanv.barrier_arrive_expect_tx %[[FULL]][%[[PS]]], 49152 : <4>
// CHECK-NEXT: %[[SA:.*]] = qlanv.slot %[[BUFA]][%[[PS]]] : <128x64xbf16, swizzle 128>
// CHECK-NEXT: %[[SB:.*]] = qlanv.slot %[[BUFB]][%[[PS]]] : <256x64xbf16, swizzle 128>
// The put's index arithmetic is cloned into the elected thread's region.
// CHECK-NEXT: %[[C64:.*]] = arith.constant 64 : index
// CHECK-NEXT: %[[K0:.*]] = arith.muli %[[KK]], %[[C64]] : index
// CHECK-NEXT: qlanv.tma_load %[[A]][%[[M0]], %[[K0]]] -> %[[SA]], %[[FULL]][%[[PS]]] : <bf16, 2> -> <128x64xbf16, swizzle 128>, <4>
// CHECK-NEXT: qlanv.tma_load %[[B]][%[[N0]], %[[K0]]] -> %[[SB]], %[[FULL]][%[[PS]]] : <bf16, 2> -> <256x64xbf16, swizzle 128>, <4>
// CHECK-NEXT: }
// CHECK-NEXT: qlanv.ring_advance %[[PR]] : <4>
// CHECK-NOT: qla.put
// Consumer: wait on `full` with the ring's phase, run the body on the slot's
// tiles, release the slot once per warpgroup, advance.
// CHECK: qla.role "math" warpgroups 1 to 2 regs 232 {
// CHECK-NEXT: %[[GR:.*]] = qlanv.ring "ab.get" : <4>
// CHECK: %[[ACC:.*]] = qla.alloc_frag
// CHECK: scf.for
// CHECK-NEXT: %[[GS:.*]] = qlanv.ring_slot %[[GR]] : <4>
// CHECK-NEXT: %[[GP:.*]] = qlanv.ring_phase %[[GR]] : <4>
// CHECK-NEXT: qlanv.barrier_wait %[[FULL]][%[[GS]]], %[[GP]] {qla.what = "ab.get"} : <4>
// CHECK-NEXT: %[[GA:.*]] = qlanv.slot %[[BUFA]][%[[GS]]] : <128x64xbf16, swizzle 128>
// CHECK-NEXT: %[[GB:.*]] = qlanv.slot %[[BUFB]][%[[GS]]] : <256x64xbf16, swizzle 128>
// CHECK-NEXT: qla.gemm %[[GA]], %[[GB]], %[[ACC]] {accumulate, transB}
// CHECK-NEXT: qlanv.barrier_arrive %[[EMPTY]][%[[GS]]] {qla.what = "ab.release"} : <4>
// CHECK-NEXT: qlanv.ring_advance %[[GR]] : <4>
// CHECK-NOT: qla.get
func.func @gemm(%A: !qla.global<bf16, 2>, %B: !qla.global<bf16, 2>, %K: index, %m0: index, %n0: index) attributes {qla.threads = 384 : i64} {
  %ch = qla.channel "ab" : !qla.channel<[!qla.smem<128x64xbf16, swizzle 128>, !qla.smem<256x64xbf16, swizzle 128>], 4>
  qla.role "load" warpgroups 0 to 0 regs 40 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %k = %c0 to %K step %c1 {
      qla.put %ch {
      ^bb0(%a: !qla.smem<128x64xbf16, swizzle 128>, %b: !qla.smem<256x64xbf16, swizzle 128>):
        %c64 = arith.constant 64 : index
        %k0 = arith.muli %k, %c64 : index
        qla.load %A[%m0, %k0] -> %a : !qla.global<bf16, 2> -> !qla.smem<128x64xbf16, swizzle 128>
        qla.load %B[%n0, %k0] -> %b : !qla.global<bf16, 2> -> !qla.smem<256x64xbf16, swizzle 128>
      } : !qla.channel<[!qla.smem<128x64xbf16, swizzle 128>, !qla.smem<256x64xbf16, swizzle 128>], 4>
    }
  }
  qla.role "math" warpgroups 1 to 2 regs 232 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %acc = qla.alloc_frag : !qla.frag<128x256xf32, acc x2>
    scf.for %k = %c0 to %K step %c1 {
      qla.get %ch {
      ^bb0(%a: !qla.smem<128x64xbf16, swizzle 128>, %b: !qla.smem<256x64xbf16, swizzle 128>):
        qla.gemm %a, %b, %acc {transB, accumulate} : !qla.smem<128x64xbf16, swizzle 128>, !qla.smem<256x64xbf16, swizzle 128>, !qla.frag<128x256xf32, acc x2>
      } : !qla.channel<[!qla.smem<128x64xbf16, swizzle 128>, !qla.smem<256x64xbf16, swizzle 128>], 4>
    }
  }
  return
}

// -----

// Two channels, 3 consumer warpgroups: each channel has its own buffers,
// barrier pair and, in each role, its own ring; `empty` expects one arrival
// per consumer thread; expect_tx counts every tile of the slot
// (64*64*2 = 8192; 128*64*2 + 64*32*4 = 24576).
// CHECK-LABEL: func.func @two_channels
// CHECK-NEXT: %[[XBUF:.*]] = qla.alloc_shared {count = 2 : i64} : <64x64xf16, swizzle 128>
// CHECK-NEXT: %[[XFULL:.*]] = qlanv.barriers {arrivals = 1 : i64} : <2>
// CHECK-NEXT: qlanv.barrier_init %[[XFULL]] : <2>
// CHECK-NEXT: %[[XEMPTY:.*]] = qlanv.barriers {arrivals = 384 : i64} : <2>
// CHECK-NEXT: qlanv.barrier_init %[[XEMPTY]] : <2>
// CHECK-NEXT: %[[YBUF0:.*]] = qla.alloc_shared {count = 3 : i64} : <128x64xbf16, swizzle 128>
// CHECK-NEXT: %[[YBUF1:.*]] = qla.alloc_shared {count = 3 : i64} : <64x32xf32, swizzle 128>
// CHECK-NEXT: %[[YFULL:.*]] = qlanv.barriers {arrivals = 1 : i64} : <3>
// CHECK-NEXT: qlanv.barrier_init %[[YFULL]] : <3>
// CHECK-NEXT: %[[YEMPTY:.*]] = qlanv.barriers {arrivals = 384 : i64} : <3>
// CHECK-NEXT: qlanv.barrier_init %[[YEMPTY]] : <3>
// CHECK-NEXT: qlanv.block_sync
// CHECK-NEXT: qla.role "load"
// CHECK-DAG: %[[YPUT:.*]] = qlanv.ring "y.put" : <3>
// CHECK-DAG: %[[XPUT:.*]] = qlanv.ring "x.put" : <2>
// CHECK: %[[XS:.*]] = qlanv.ring_slot %[[XPUT]] : <2>
// CHECK: qlanv.barrier_wait %[[XEMPTY]][%[[XS]]]
// CHECK-NEXT: qlanv.barrier_arrive_expect_tx %[[XFULL]][%[[XS]]], 8192 : <2>
// CHECK: qlanv.ring_advance %[[XPUT]] : <2>
// CHECK: %[[YS:.*]] = qlanv.ring_slot %[[YPUT]] : <3>
// CHECK: qlanv.barrier_wait %[[YEMPTY]][%[[YS]]]
// CHECK-NEXT: qlanv.barrier_arrive_expect_tx %[[YFULL]][%[[YS]]], 24576 : <3>
// CHECK-NEXT: %[[Y0:.*]] = qlanv.slot %[[YBUF0]][%[[YS]]]
// CHECK-NEXT: %[[Y1:.*]] = qlanv.slot %[[YBUF1]][%[[YS]]]
// CHECK-NEXT: qlanv.tma_load %{{.*}} -> %[[Y0]], %[[YFULL]][%[[YS]]] : <bf16, 2> -> <128x64xbf16, swizzle 128>, <3>
// CHECK-NEXT: qlanv.tma_load %{{.*}} -> %[[Y1]], %[[YFULL]][%[[YS]]] : <f32, 2> -> <64x32xf32, swizzle 128>, <3>
// CHECK: qlanv.ring_advance %[[YPUT]] : <3>
// CHECK: qla.role "math" warpgroups 1 to 3
// CHECK-DAG: %[[YGET:.*]] = qlanv.ring "y.get" : <3>
// CHECK-DAG: %[[XGET:.*]] = qlanv.ring "x.get" : <2>
// CHECK: %[[XG:.*]] = qlanv.ring_slot %[[XGET]] : <2>
// CHECK-NEXT: %[[XP:.*]] = qlanv.ring_phase %[[XGET]] : <2>
// CHECK-NEXT: qlanv.barrier_wait %[[XFULL]][%[[XG]]], %[[XP]] {qla.what = {{"[a-z0-9_]+\.?[a-z]*"}}} : <2>
// CHECK: qlanv.barrier_arrive %[[XEMPTY]][%[[XG]]] {qla.what = {{"[a-z0-9_]+\.?[a-z]*"}}} : <2>
// CHECK-NEXT: qlanv.ring_advance %[[XGET]] : <2>
// CHECK: %[[YG:.*]] = qlanv.ring_slot %[[YGET]] : <3>
// CHECK-NEXT: %[[YP:.*]] = qlanv.ring_phase %[[YGET]] : <3>
// CHECK-NEXT: qlanv.barrier_wait %[[YFULL]][%[[YG]]], %[[YP]] {qla.what = {{"[a-z0-9_]+\.?[a-z]*"}}} : <3>
// CHECK-NEXT: qlanv.slot %[[YBUF0]][%[[YG]]]
// CHECK-NEXT: %[[W:.*]] = qlanv.slot %[[YBUF1]][%[[YG]]]
// CHECK-NEXT: qla.copy %[[W]] -> %{{.*}} : !qla.smem<64x32xf32, swizzle 128> -> !qla.frag<64x32xf32>
// The copy reads the slot with threads: each thread arrives after its own
// reads (384 arrivals free the slot), with no barrier among the role's threads.
// CHECK-NEXT: qlanv.barrier_arrive %[[YEMPTY]][%[[YG]]] {qla.what = {{"[a-z0-9_]+\.?[a-z]*"}}} : <3>
// CHECK-NEXT: qlanv.ring_advance %[[YGET]] : <3>
func.func @two_channels(%A: !qla.global<f16, 2>, %B: !qla.global<bf16, 2>, %W: !qla.global<f32, 2>, %i: index) attributes {qla.threads = 512 : i64} {
  %x = qla.channel "x" : !qla.channel<[!qla.smem<64x64xf16, swizzle 128>], 2>
  %y = qla.channel "y" : !qla.channel<[!qla.smem<128x64xbf16, swizzle 128>, !qla.smem<64x32xf32, swizzle 128>], 3>
  qla.role "load" warpgroups 0 to 0 regs 0 {
    qla.put %x {
    ^bb0(%a: !qla.smem<64x64xf16, swizzle 128>):
      qla.load %A[%i, %i] -> %a : !qla.global<f16, 2> -> !qla.smem<64x64xf16, swizzle 128>
    } : !qla.channel<[!qla.smem<64x64xf16, swizzle 128>], 2>
    qla.put %y {
    ^bb0(%b: !qla.smem<128x64xbf16, swizzle 128>, %w: !qla.smem<64x32xf32, swizzle 128>):
      qla.load %B[%i, %i] -> %b : !qla.global<bf16, 2> -> !qla.smem<128x64xbf16, swizzle 128>
      qla.load %W[%i, %i] -> %w : !qla.global<f32, 2> -> !qla.smem<64x32xf32, swizzle 128>
    } : !qla.channel<[!qla.smem<128x64xbf16, swizzle 128>, !qla.smem<64x32xf32, swizzle 128>], 3>
  }
  qla.role "math" warpgroups 1 to 3 regs 0 {
    %f = qla.alloc_frag : !qla.frag<64x32xf32>
    qla.get %x {
    ^bb0(%a: !qla.smem<64x64xf16, swizzle 128>):
    } : !qla.channel<[!qla.smem<64x64xf16, swizzle 128>], 2>
    qla.get %y {
    ^bb0(%b: !qla.smem<128x64xbf16, swizzle 128>, %w: !qla.smem<64x32xf32, swizzle 128>):
      qla.copy %w -> %f : !qla.smem<64x32xf32, swizzle 128> -> !qla.frag<64x32xf32>
    } : !qla.channel<[!qla.smem<128x64xbf16, swizzle 128>, !qla.smem<64x32xf32, swizzle 128>], 3>
  }
  return
}

// -----

// One-shot loads outside channels: a one-slot barrier armed with the tile's
// bytes by one thread, waited on by all; global→fragment loads stay.
// The group synchronizes first: the tile may still be read from an earlier
// iteration (the whole block outside roles).
// CHECK-LABEL: func.func @one_shot
// CHECK-NEXT: %[[BARS:.*]] = qlanv.barriers {arrivals = 1 : i64} : <1>
// CHECK-NEXT: qlanv.barrier_init %[[BARS]] : <1>
// CHECK-NEXT: %[[RING:.*]] = qlanv.ring "load" : <1>
// CHECK-NEXT: qlanv.block_sync
// CHECK-NEXT: %[[T:.*]] = qla.alloc_shared : <64x64xbf16, swizzle 128>
// CHECK-NEXT: %[[F:.*]] = qla.alloc_frag
// CHECK-NEXT: qlanv.block_sync
// CHECK-NEXT: %[[S:.*]] = qlanv.ring_slot %[[RING]] : <1>
// CHECK-NEXT: %[[P:.*]] = qlanv.ring_phase %[[RING]] : <1>
// CHECK-NEXT: qlanv.elect {
// CHECK-NEXT: qlanv.barrier_arrive_expect_tx %[[BARS]][%[[S]]], 8192 : <1>
// CHECK-NEXT: qlanv.tma_load %{{.*}}[%{{.*}}, %{{.*}}] -> %[[T]], %[[BARS]][%[[S]]] : <bf16, 2> -> <64x64xbf16, swizzle 128>, <1>
// CHECK-NEXT: }
// The wait sinks to the first op that touches the tile (here: the end of the
// block), so that the global→fragment load overlaps the copy.
// CHECK-NEXT: qla.load %{{.*}} -> %[[F]] : <bf16, 2> -> !qla.frag<64x64xf32, acc x1>
// CHECK-NEXT: qlanv.barrier_wait %[[BARS]][%[[S]]], %[[P]] {qla.what = {{"[a-z0-9_]+\.?[a-z]*"}}} : <1>
// CHECK-NEXT: qlanv.ring_advance %[[RING]] : <1>
// CHECK-NEXT: return
func.func @one_shot(%A: !qla.global<bf16, 2>, %i: index) attributes {qla.threads = 128 : i64} {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %f = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  qla.load %A[%i, %i] -> %a : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16, swizzle 128>
  qla.load %A[%i, %i] -> %f : !qla.global<bf16, 2> -> !qla.frag<64x64xf32, acc x1>
  return
}

// -----

// Each one-shot load gets its own barrier and ring. Inside a role the group
// barrier is the role's named barrier (id = 1 + the role's index, threads =
// its warpgroups × 128). Dropped dims carry over to the TMA load.
// CHECK-LABEL: func.func @one_shot_in_roles
// CHECK-DAG: %[[B0:.*]] = qlanv.barriers {arrivals = 1 : i64} : <1>
// CHECK-DAG: %[[B1:.*]] = qlanv.barriers {arrivals = 1 : i64} : <1>
// CHECK-DAG: %[[R0:.*]] = qlanv.ring "load" : <1>
// CHECK-DAG: %[[R1:.*]] = qlanv.ring "load" : <1>
// CHECK: qla.role "first" warpgroups 0 to 0
// CHECK-NEXT: qla.alloc_shared
// CHECK-NEXT: qlanv.named_barrier 1, 128
// CHECK-NEXT: %[[S0:.*]] = qlanv.ring_slot
// CHECK: qlanv.barrier_arrive_expect_tx %{{.*}}[%[[S0]]], 4096 : <1>
// CHECK-NEXT: qlanv.tma_load
// CHECK: qla.role "second" warpgroups 1 to 2
// CHECK-NEXT: qla.alloc_shared
// CHECK-NEXT: qlanv.named_barrier 2, 256
// CHECK-NEXT: %[[S1:.*]] = qlanv.ring_slot
// CHECK: qlanv.barrier_arrive_expect_tx %{{.*}}[%[[S1]]], 256 : <1>
// CHECK-NEXT: qlanv.tma_load %{{.*}} {dropped = array<i64: 0>} : <f32, 2> -> <64xf32>, <1>
func.func @one_shot_in_roles(%A: !qla.global<bf16, 2>, %W: !qla.global<f32, 2>, %i: index) attributes {qla.threads = 384 : i64} {
  qla.role "first" warpgroups 0 to 0 regs 0 {
    %a = qla.alloc_shared : !qla.smem<64x32xbf16, swizzle 64>
    qla.load %A[%i, %i] -> %a : !qla.global<bf16, 2> -> !qla.smem<64x32xbf16, swizzle 64>
  }
  qla.role "second" warpgroups 1 to 2 regs 0 {
    %v = qla.alloc_shared : !qla.smem<64xf32>
    qla.load %W[%i, %i] -> %v {dropped = array<i64: 0>} : !qla.global<f32, 2> -> !qla.smem<64xf32>
  }
  return
}

// -----

// Nothing to lower: no barriers and no block_sync.
// CHECK-LABEL: func.func @nothing
// CHECK-NEXT: qla.alloc_frag
// CHECK-NEXT: qla.load
// CHECK-NEXT: return
func.func @nothing(%A: !qla.global<bf16, 2>, %i: index) {
  %f = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  qla.load %A[%i, %i] -> %f : !qla.global<bf16, 2> -> !qla.frag<64x64xf32, acc x1>
  return
}

// -----

// Consecutive one-shot loads (only side-effect-free ops between them) share
// one barrier armed with their total bytes and one wait; any other op, or a
// different block, starts a new group.
// CHECK-LABEL: func.func @grouped
// CHECK-COUNT-3: qlanv.barriers {arrivals = 1 : i64} : <1>
// CHECK-NOT: qlanv.barriers
// CHECK: %[[A:.*]] = qla.alloc_shared : <64x64xbf16, swizzle 128>
// CHECK-NEXT: %[[B:.*]] = qla.alloc_shared : <64x32xf32, swizzle 128>
// CHECK-NEXT: %[[C:.*]] = qla.alloc_shared : <64x64xbf16, swizzle 128>
// CHECK-NEXT: %[[F:.*]] = qla.alloc_frag
// The offset arithmetic between the two loads stays before the group.
// CHECK-NEXT: arith.constant 64 : index
// CHECK-NEXT: %[[J:.*]] = arith.addi
// CHECK-NEXT: qlanv.block_sync
// CHECK-NEXT: %[[S1:.*]] = qlanv.ring_slot %[[R1:.*]] : <1>
// CHECK-NEXT: %[[P1:.*]] = qlanv.ring_phase %[[R1]] : <1>
// CHECK-NEXT: qlanv.elect {
// 64*64*2 + 64*32*4 = 16384
// CHECK-NEXT: qlanv.barrier_arrive_expect_tx %[[G1:.*]][%[[S1]]], 16384 : <1>
// CHECK-NEXT: qlanv.tma_load %{{.*}} -> %[[A]], %[[G1]][%[[S1]]] : <bf16, 2>
// CHECK-NEXT: qlanv.tma_load %{{.*}}[%[[J]], %{{.*}}] -> %[[B]], %[[G1]][%[[S1]]] : <f32, 2>
// CHECK-NEXT: }
// CHECK-NEXT: qlanv.barrier_wait %[[G1]][%[[S1]]], %[[P1]] {qla.what = {{"[a-z0-9_]+\.?[a-z]*"}}} : <1>
// CHECK-NEXT: qlanv.ring_advance %[[R1]] : <1>
// The copy reads shared memory: the next load is a group of its own.
// CHECK-NEXT: qla.copy %[[A]] -> %[[F]]
// CHECK-NEXT: qlanv.block_sync
// CHECK-NEXT: %[[S2:.*]] = qlanv.ring_slot %[[R2:.*]] : <1>
// CHECK-NEXT: %[[P2:.*]] = qlanv.ring_phase %[[R2]] : <1>
// CHECK-NEXT: qlanv.elect {
// CHECK-NEXT: qlanv.barrier_arrive_expect_tx %[[G2:.*]][%[[S2]]], 8192 : <1>
// CHECK-NEXT: qlanv.tma_load %{{.*}} -> %[[C]], %[[G2]][%[[S2]]]
// CHECK-NEXT: }
// A load in a loop body: its own group, re-armed every iteration.
// CHECK: scf.for
// CHECK-NEXT: qlanv.block_sync
// CHECK-NEXT: %[[S3:.*]] = qlanv.ring_slot %[[R3:.*]] : <1>
// CHECK: qlanv.barrier_arrive_expect_tx %[[G3:.*]][%[[S3]]], 8192 : <1>
// CHECK-NEXT: qlanv.tma_load %{{.*}} -> %[[A]], %[[G3]][%[[S3]]]
// CHECK: qlanv.barrier_wait %[[G3]][%[[S3]]]
// CHECK-NEXT: qlanv.ring_advance %[[R3]] : <1>
// CHECK-NEXT: }
// Nothing after the load into C touches C: its wait sinks to the block's end.
// CHECK-NEXT: qlanv.barrier_wait %[[G2]][%[[S2]]], %[[P2]] {qla.what = {{"[a-z0-9_]+\.?[a-z]*"}}} : <1>
// CHECK-NEXT: qlanv.ring_advance %[[R2]] : <1>
// CHECK-NEXT: return
func.func @grouped(%A: !qla.global<bf16, 2>, %W: !qla.global<f32, 2>, %i: index, %n: index) {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %b = qla.alloc_shared : !qla.smem<64x32xf32, swizzle 128>
  %c = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %f = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  qla.load %A[%i, %i] -> %a : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16, swizzle 128>
  %c64 = arith.constant 64 : index
  %j = arith.addi %i, %c64 : index
  qla.load %W[%j, %i] -> %b : !qla.global<f32, 2> -> !qla.smem<64x32xf32, swizzle 128>
  qla.copy %a -> %f : !qla.smem<64x64xbf16, swizzle 128> -> !qla.frag<64x64xf32, acc x1>
  qla.load %A[%j, %i] -> %c : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16, swizzle 128>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %k = %c0 to %n step %c1 {
    qla.load %A[%k, %i] -> %a : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16, swizzle 128>
  }
  return
}

// -----

// A bounded (`until`) load stays a per-thread copy: TMA only clips at the
// tensor's edge. It also ends the group of one-shot loads before it.
// CHECK-LABEL: func.func @bounded
// CHECK: qlanv.tma_load
// CHECK: qla.load %{{.*}} until{{ ?}}[%{{.*}}] {limitDims = array<i64: 0>} : <bf16, 2> -> !qla.smem<64x64xbf16, swizzle 128>
// CHECK-NOT: qlanv.tma_load
// CHECK: qlanv.barrier_wait
// CHECK: return
func.func @bounded(%A: !qla.global<bf16, 2>, %i: index, %eos: index) {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %b = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  qla.load %A[%i, %i] -> %a : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16, swizzle 128>
  qla.load %A[%i, %i] -> %b until [%eos] {limitDims = array<i64: 0>} : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16, swizzle 128>
  return
}

// -----

func.func @bounded_put(%A: !qla.global<bf16, 2>, %i: index, %eos: index) {
  %ch = qla.channel "ab" : !qla.channel<[!qla.smem<64x64xbf16, swizzle 128>], 2>
  qla.role "load" warpgroups 0 to 0 regs 0 {
    qla.put %ch {
    ^bb0(%a: !qla.smem<64x64xbf16, swizzle 128>):
      // expected-error @+1 {{'qla.load' op a put cannot bound its copies with `until` (TMA clips only at the tensor's edge); mask the rows in a map instead}}
      qla.load %A[%i, %i] -> %a until [%eos] {limitDims = array<i64: 0>} : !qla.global<bf16, 2> -> !qla.smem<64x64xbf16, swizzle 128>
    } : !qla.channel<[!qla.smem<64x64xbf16, swizzle 128>], 2>
  }
  qla.role "math" warpgroups 1 to 1 regs 0 {
    qla.get %ch {
    ^bb0(%a: !qla.smem<64x64xbf16, swizzle 128>):
    } : !qla.channel<[!qla.smem<64x64xbf16, swizzle 128>], 2>
  }
  return
}
