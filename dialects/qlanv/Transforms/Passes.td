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

#endif
