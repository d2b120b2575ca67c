#ifndef QLANV_PASSES_TD
#define QLANV_PASSES_TD

include "mlir/Pass/PassBase.td"

def QlanvInsertGridDependency : Pass<"qlanv-insert-grid-dependency", "::mlir::func::FuncOp"> {
  let summary = "Insert the programmatic-dependent-launch ops of a kernel with follows(...)";
  let description = [{
    For a kernel with `qla.follows` (the language's `follows(T, ...)`): a
    `qlanv.grid_dependents_launch` at the top; a `qlanv.grid_dependency_wait`
    before the first operation that uses, directly or through values derived
    from it, a tensor follows lists or an output (`qla.outputs`), at kernel
    level for every thread, else at the top of each role's body
    (`qlanv.warpgroups`; a role's statements run in its own threads, so a
    wait at kernel level before the roles covers them, and one in a role
    covers that role only; nested blocks are covered by the operation around
    them); and a `qlanv.grid_dependency_wait {atExit}` at the end of the
    kernel. Kernels without `qla.follows` are left as they are.
  }];
  let dependentDialects = ["::mlir::qlanv::QlanvDialect"];
}

def QlanvInsertTurns : Pass<"qlanv-insert-turns", "::mlir::func::FuncOp"> {
  let summary = "Insert the turn hand-offs of roles with `turns` (the warpgroups issue their products in turn)";
  let description = [{
    For each role (`qlanv.warpgroups`) with the unit attribute `turns` over
    n >= 2 warpgroups: the named barriers base .. base + n - 1, base = the
    kernel's roles + 1 + its warpgroups (after the roles' barriers and the
    per-warpgroup staging ones) + the role's first warpgroup;
    `qlanv.turn_start` at the top of the body, `qlanv.turn_wait` before each
    `qlanv.wgmma_fence`, `qlanv.turn_pass` after each `qlanv.wgmma_commit`
    and `qlanv.turn_finish` at the end. A one-warpgroup role is left alone.
  }];
  let dependentDialects = ["::mlir::qlanv::QlanvDialect"];
}

#endif
