// An `until` limit on a dropped dim (reachable from .mlir input; the front
// end only puts limits on sliced dims) bounds fragment<->global copies too:
// it joins the dropped dims' range check, as it does for shared<->global
// copies. (Regression: the fragment path used to ignore it.)
// RUN: %qlac %s --emit=cuda | FileCheck %s

// CHECK: const bool [[OK:tok_[0-9]+]] = true && [[H:v_[0-9]+]] >= 0 && [[H]] < H && [[H]] < [[N:v_[0-9]+]];
// CHECK: const bool in_{{[0-9]+}} = [[OK]] &&
module {
  func.func @lim(%arg0: !qla.global<f32, 3>, %arg1: !qla.global<f32, 3>, %arg2: index, %arg3: index, %arg4: index, %arg5: i32, %arg6: i32) attributes {qla.arg_names = ["X", "Y", "T", "H", "D", "h", "n"], qla.cluster = array<i64: 1, 1, 1>, qla.grid = ["1", "1", "1"], qla.kernel, qla.outputs = array<i1: false, true>, qla.source = "lim.qla", qla.tensor_dims = [["T", "H", "D"], ["T", "H", "D"]], qla.threads = 128 : i64} {
    %0 = arith.index_cast %arg5 : i32 to index
    %1 = arith.index_cast %arg6 : i32 to index
    %2 = qla.alloc_frag : <64x32xf32>
    %c0 = arith.constant 0 : index
    qla.load %arg0[%c0, %0, %c0] -> %2 until[%1] {dropped = array<i64: 1>, limitDims = array<i64: 1>} : <f32, 3> -> !qla.frag<64x32xf32>
    qla.store %2 -> %arg1[%c0, %0, %c0] {dropped = array<i64: 1>} : !qla.frag<64x32xf32> -> <f32, 3>
    return
  }
}
