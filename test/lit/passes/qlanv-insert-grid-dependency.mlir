// qlanv-insert-grid-dependency, one function per rule (the emitter prints the
// ops: test/lit/emit/emit-follows.qla).
// RUN: %qla-opt %s -split-input-file -qlanv-insert-grid-dependency | FileCheck %s
// The output re-parses.
// RUN: %qla-opt %s -split-input-file -qlanv-insert-grid-dependency | %qla-opt -split-input-file | FileCheck %s

// Without qla.follows: nothing.
// CHECK-LABEL: func.func @no_follows
// CHECK-NOT: qlanv.grid_
// CHECK: return
func.func @no_follows(%x: !qla.global<f32, 2>, %y: !qla.global<f32, 2>) attributes {qla.outputs = array<i1: false, true>} {
  %c0 = arith.constant 0 : index
  %f = qla.alloc_frag : <64x64xf32, acc x1>
  qla.load %x[%c0, %c0] -> %f : <f32, 2> -> !qla.frag<64x64xf32, acc x1>
  qla.store %f -> %y[%c0, %c0] : !qla.frag<64x64xf32, acc x1> -> <f32, 2>
  return
}

// -----

// The launch first; at kernel level the wait goes before the first
// operation that touches an output (here a loop holding the store: nested
// blocks are covered by it), not before the read of X (not followed); one
// wait at the end.
// CHECK-LABEL: func.func @kernel_level
// CHECK-NEXT: qlanv.grid_dependents_launch
// CHECK-NOT: qlanv.grid_dependency_wait
// CHECK: qla.load
// CHECK-NEXT: qlanv.grid_dependency_wait{{$}}
// CHECK-NEXT: scf.for
// CHECK-NOT: qlanv.grid_dependency_wait
// CHECK: qla.store
// CHECK: }
// CHECK-NEXT: qlanv.grid_dependency_wait {atExit}
// CHECK-NEXT: return
func.func @kernel_level(%x: !qla.global<f32, 2>, %d: !qla.global<f32, 2>, %y: !qla.global<f32, 2>) attributes {qla.follows = array<i64>, qla.outputs = array<i1: false, false, true>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %f = qla.alloc_frag : <64x64xf32, acc x1>
  qla.load %x[%c0, %c0] -> %f : <f32, 2> -> !qla.frag<64x64xf32, acc x1>
  scf.for %i = %c0 to %c2 step %c1 {
    qla.store %f -> %y[%c0, %c0] : !qla.frag<64x64xf32, acc x1> -> <f32, 2>
  }
  return
}

// -----

// In roles: a role whose statements touch nothing followed waits for
// nothing; a role reading a followed tensor (D, index 1) waits before that
// read; a role writing an output waits before the write; the end waits.
// CHECK-LABEL: func.func @roles
// CHECK-NEXT: qlanv.grid_dependents_launch
// CHECK: qlanv.warpgroups "load"
// CHECK-NOT: qlanv.grid_dependency_wait
// CHECK: qlanv.warpgroups "aux"
// CHECK: qla.fill
// CHECK-NEXT: qlanv.grid_dependency_wait{{$}}
// CHECK-NEXT: qla.load %arg1
// CHECK: qlanv.warpgroups "math"
// CHECK: qla.fill
// CHECK-NEXT: qlanv.grid_dependency_wait{{$}}
// CHECK-NEXT: qla.store
// CHECK: qlanv.grid_dependency_wait {atExit}
// CHECK-NEXT: return
func.func @roles(%x: !qla.global<f32, 2>, %d: !qla.global<f32, 2>, %y: !qla.global<f32, 2>) attributes {qla.follows = array<i64: 1>, qla.outputs = array<i1: false, false, true>} {
  %c0 = arith.constant 0 : index
  %cst = arith.constant 0.000000e+00 : f32
  qlanv.warpgroups "load" 0 to 0 {
    %f = qla.alloc_frag : <64x64xf32, acc x1>
    qla.load %x[%c0, %c0] -> %f : <f32, 2> -> !qla.frag<64x64xf32, acc x1>
  }
  qlanv.warpgroups "aux" 1 to 1 {
    %f = qla.alloc_frag : <64x64xf32, acc x1>
    qla.fill %f, %cst : <64x64xf32, acc x1>, f32
    qla.load %d[%c0, %c0] -> %f : <f32, 2> -> !qla.frag<64x64xf32, acc x1>
  }
  qlanv.warpgroups "math" 2 to 2 {
    %f = qla.alloc_frag : <64x64xf32, acc x1>
    qla.fill %f, %cst : <64x64xf32, acc x1>, f32
    qla.store %f -> %y[%c0, %c0] : !qla.frag<64x64xf32, acc x1> -> <f32, 2>
  }
  return
}

// -----

// A wait at kernel level before the roles covers them: no role waits again.
// CHECK-LABEL: func.func @before_roles
// CHECK-NEXT: qlanv.grid_dependents_launch
// CHECK: qlanv.grid_dependency_wait{{$}}
// CHECK-NEXT: qla.load %arg0
// CHECK: qlanv.warpgroups "math"
// CHECK-NOT: qlanv.grid_dependency_wait{{$}}
// CHECK: qlanv.grid_dependency_wait {atExit}
func.func @before_roles(%d: !qla.global<f32, 2>, %y: !qla.global<f32, 2>) attributes {qla.follows = array<i64: 0>, qla.outputs = array<i1: false, true>} {
  %c0 = arith.constant 0 : index
  %f = qla.alloc_frag : <64x64xf32, acc x1>
  qla.load %d[%c0, %c0] -> %f : <f32, 2> -> !qla.frag<64x64xf32, acc x1>
  qlanv.warpgroups "math" 0 to 0 {
    qla.store %f -> %y[%c0, %c0] : !qla.frag<64x64xf32, acc x1> -> <f32, 2>
  }
  return
}
