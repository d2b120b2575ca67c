#ifndef QLA_PASSES_TD
#define QLA_PASSES_TD

include "mlir/Pass/PassBase.td"

def QlaInferLayouts : Pass<"qla-infer-layouts", "::mlir::func::FuncOp"> {
  let summary = "Assign fragment layouts (wgmma accumulator, row/column vectors) and shared-tile swizzles";
  let description = [{
    2-D fragments get the m64nNk16 accumulator layout with rows split over
    the warpgroups of their role; 1-D fragments become row or column vectors
    according to their uses; shared tiles whose rows are a multiple of 128
    bytes get the 128B swizzle (64B/32B for narrower rows). A fragment that
    no layout fits is an error at its declaration.
  }];
  let dependentDialects = ["::mlir::qla::QlaDialect"];
}

def QlaLowerChannels : Pass<"qla-lower-channels", "::mlir::func::FuncOp"> {
  let summary = "Lower channels (put/get) and one-shot global→shared loads to mbarrier rings with explicit phases";
  let description = [{
    A channel of depth D becomes D copies of each slot tile, a `full` and an
    `empty` array of D mbarriers and, in each role that uses it, a ring cursor
    whose slot and phase feed every wait. A put waits on `empty` with the
    flipped phase, arms `full` with the slot's byte count and issues TMA
    loads; a get waits on `full` and releases `empty` once per consumer
    warpgroup after its body. Loads outside channels become a TMA load on a
    one-slot ring followed by a wait.
  }];
  let dependentDialects = ["::mlir::qlanv::QlanvDialect", "::mlir::arith::ArithDialect"];
}

def QlaLowerPipelines : Pass<"qla-lower-pipelines", "::mlir::func::FuncOp"> {
  let summary = "Lower pipeline loops: multi-buffer their global→shared loads and issue them `stages` iterations ahead";
  let description = [{
    The shared tiles a `qla.pipeline` body loads into get `stages` copies and
    a ring of `full` mbarriers. A prologue issues the loads of the first
    `stages` iterations; each iteration waits on its slot (phase from the
    ring cursor), runs the body on that slot's tiles, synchronizes the group
    and refills the slot with the loads of iteration k + stages. The load
    offsets are recomputed for the later iteration by cloning their
    arithmetic.
  }];
  let dependentDialects = ["::mlir::qlanv::QlanvDialect", "::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect"];
}

def QlaLowerToQlanv : Pass<"qla-lower-to-qlanv", "::mlir::func::FuncOp"> {
  let summary = "Lower gemms to wgmma chains and roles to warpgroup regions";
  let description = [{
    `qla.gemm` becomes `wgmma_fence`, `wgmma`, `wgmma_commit`, `wgmma_wait 0`;
    `qla.role` becomes `qlanv.warpgroups`. Fragment maps, reductions and
    per-thread copies stay as qla ops: the emitter prints them as unrolled
    loops over the fragment's registers.

    Gemms in a row share one wait: independent ones (no fragment in common),
    and products into the same accumulator of the same shape from shared
    operands (the tensor cores order those; `s += A1 B1; s += A2 B2` waits
    once, after both).

    With `partial-waits` (or inside a `qla.role` carrying the unit attribute
    `partial_waits`, the language's role option), each wait that independent
    gemms share moves down
    past the work that touches none of their fragments and reads no shared
    memory it could race with (fragment maps and casts of other fragments,
    shared-to-fragment and global-to-fragment copies, scalar arithmetic, and
    a lowered get's ring cursor, slot views and mbarrier wait, so a product
    first used in a get's body is waited for there), and splits into
    `wgmma_wait N` before the first use of each product: a use of the k-th
    of n committed groups waits with N = n - 1 - k groups still in flight.
    It also steps over an output's staging: a fragment → shared copy into a
    plain tile (not a ring slot) that no group in flight reads, and a
    shared → global store. A later product (its chains up to their shared
    wait) is issued while the groups are in flight, once those whose
    fragments it touches are waited for; its groups join the pending ones.
    It stops at the first op it cannot step over (any other write to shared
    memory, an arrival such as a get's release or another barrier, a loop)
    with `wgmma_wait 0`.
  }];
  let options = [
    Option<"partialWaits", "partial-waits", "bool", /*default=*/"false",
           "sink shared wgmma waits to the first use of each product, waiting for as few groups as that use needs">
  ];
  let dependentDialects = ["::mlir::qlanv::QlanvDialect"];
}

def QlaInsertFences : Pass<"qla-insert-fences", "::mlir::func::FuncOp"> {
  let summary = "Insert fence.proxy.async and a role barrier where generic-proxy shared writes feed wgmma or TMA";
  let dependentDialects = ["::mlir::qlanv::QlanvDialect"];
}

def QlaAssignResources : Pass<"qla-assign-resources", "::mlir::func::FuncOp"> {
  let summary = "Lay out the shared-memory arena, check and set register budgets (setmaxnreg)";
  let description = [{
    Gives every shared tile and mbarrier array a byte offset in the dynamic
    shared-memory arena (1024-byte aligned for swizzled tiles; tiles whose
    lifetimes are disjoint regions share bytes; a tile no op uses takes
    none), records the arena size in
    `qla.smem_bytes`, and inserts `setmaxnreg` at the top of every role
    whose budget differs from the launch default. Budgets that exceed the
    register file are an error.
  }];
  let dependentDialects = ["::mlir::qlanv::QlanvDialect"];
}

#endif
