// qlanv-insert-turns: a role with `turns` over two warpgroups gets the token
// hand-offs (the emitter prints them: test/lit/emit/emit-turns-staging.qla);
// one without, or of one warpgroup, nothing.
// RUN: %qla-opt %s -qlanv-insert-turns | FileCheck %s
// RUN: %qla-opt %s -qlanv-insert-turns | %qla-opt | FileCheck %s

// Three roles, 384 threads (3 warpgroups): the turn barriers start at
// 3 + 1 + 3 = 7, role "math" (warpgroups 1 and 2) takes 7 + 1 = 8.
// CHECK-LABEL: func.func @turns
// CHECK: qlanv.warpgroups "load"
// CHECK-NOT: qlanv.turn_
// CHECK: qlanv.warpgroups "math"
// CHECK-NEXT: qlanv.turn_start 8, 2
// CHECK: qlanv.turn_wait 8
// CHECK-NEXT: qlanv.wgmma_fence
// CHECK: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.turn_pass 8, 2
// Inside a loop too.
// CHECK: scf.for
// CHECK: qlanv.turn_wait 8
// CHECK-NEXT: qlanv.wgmma_fence
// CHECK: qlanv.wgmma_commit
// CHECK-NEXT: qlanv.turn_pass 8, 2
// CHECK: qlanv.turn_finish 8
// CHECK-NEXT: } {turns}
// CHECK: qlanv.warpgroups "solo"
// CHECK-NOT: qlanv.turn_
// CHECK: return
func.func @turns(%a: !qla.smem<64x64xbf16, swizzle 128>, %b: !qla.smem<64x64xbf16, swizzle 128>) attributes {qla.threads = 384 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  qlanv.warpgroups "load" 0 to 0 {
  }
  qlanv.warpgroups "math" 1 to 2 {
    %acc = qla.alloc_frag : <128x64xf32, acc x2>
    qlanv.wgmma_fence %acc : !qla.frag<128x64xf32, acc x2>
    qlanv.wgmma %a, %b, %acc {transB, warpgroups = 2 : i64} : !qla.smem<64x64xbf16, swizzle 128>, <64x64xbf16, swizzle 128>, <128x64xf32, acc x2>
    qlanv.wgmma_commit
    qlanv.wgmma_wait 0 %acc : !qla.frag<128x64xf32, acc x2>
    scf.for %i = %c0 to %c2 step %c1 {
      qlanv.wgmma_fence %acc : !qla.frag<128x64xf32, acc x2>
      qlanv.wgmma %a, %b, %acc {accumulate, transB, warpgroups = 2 : i64} : !qla.smem<64x64xbf16, swizzle 128>, <64x64xbf16, swizzle 128>, <128x64xf32, acc x2>
      qlanv.wgmma_commit
      qlanv.wgmma_wait 0 %acc : !qla.frag<128x64xf32, acc x2>
    }
  } {turns}
  qlanv.warpgroups "solo" 0 to 0 {
    %acc = qla.alloc_frag : <64x64xf32, acc x1>
    qlanv.wgmma_fence %acc : !qla.frag<64x64xf32, acc x1>
    qlanv.wgmma_commit
  } {turns}
  return
}
