// The qlanv dialect: the Hopper level. TMA, mbarriers with explicit phases,
// wgmma with descriptors, setmaxnreg, named barriers, fences, warpgroup
// regions. The CUDA emitter prints these as calls into qla/device headers.
#ifndef QLANV_OPS_TD
#define QLANV_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "dialects/qla/IR/QlaBase.td"

def Qlanv_Dialect : Dialect {
  let name = "qlanv";
  let summary = "QLA Hopper-level dialect";
  let cppNamespace = "::mlir::qlanv";
  let useDefaultTypePrinterParser = 1;
  let dependentDialects = ["::mlir::qla::QlaDialect"];
}

class Qlanv_Type<string name, string typeMnemonic> : TypeDef<Qlanv_Dialect, name> {
  let mnemonic = typeMnemonic;
}

def Qlanv_BarriersType : Qlanv_Type<"Barriers", "barriers"> {
  let summary = "an array of mbarriers in shared memory";
  let description = [{ `!qlanv.barriers<4>` }];
  let parameters = (ins "unsigned":$count);
  let assemblyFormat = "`<` $count `>`";
}

def Qlanv_RingType : Qlanv_Type<"Ring", "ring"> {
  let summary = "a per-thread cursor over a ring of slots: (slot, phase)";
  let description = [{
    `!qlanv.ring<4>`. The phase flips each time the slot index wraps, so the
    phase a wait uses is carried state, never recomputed from loop indices.
  }];
  let parameters = (ins "unsigned":$depth);
  let assemblyFormat = "`<` $depth `>`";
}

class Qlanv_Op<string mnemonic, list<Trait> traits = []> : Op<Qlanv_Dialect, mnemonic, traits>;

def Qlanv_YieldOp : Qlanv_Op<"yield", [Pure, Terminator, ReturnLike]> {
  let summary = "terminates qlanv regions";
  let assemblyFormat = "attr-dict";
}

//===--- Storage -----------------------------------------------------------===//

def Qlanv_SlotOp : Qlanv_Op<"slot", [Pure, AllTypesMatch<["buffer", "result"]>]> {
  let summary = "the tile of one slot of a multi-buffered shared allocation";
  let description = [{ `%a1 = qlanv.slot %a[%s] : !qla.smem<128x64xbf16, swizzle 128>` }];
  let arguments = (ins Qla_SharedType:$buffer, Index:$slot);
  let results = (outs Qla_SharedType:$result);
  let assemblyFormat = "$buffer `[` $slot `]` attr-dict `:` type($result)";
}

def Qlanv_BarriersOp : Qlanv_Op<"barriers"> {
  let summary = "allocate an array of mbarriers, each expecting `arrivals` arrivals per phase";
  let description = [{ `%full = qlanv.barriers {arrivals = 1} : !qlanv.barriers<4>` }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntMinValue<1>]>:$arrivals, OptionalAttr<I64Attr>:$offset);
  let results = (outs Qlanv_BarriersType:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Qlanv_RingOp : Qlanv_Op<"ring"> {
  let summary = "a per-thread ring cursor starting at slot 0, phase 0";
  let arguments = (ins StrAttr:$name);
  let results = (outs Qlanv_RingType:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def Qlanv_RingSlotOp : Qlanv_Op<"ring_slot"> {
  let summary = "the ring's current slot";
  let arguments = (ins Qlanv_RingType:$ring);
  let results = (outs Index:$result);
  let assemblyFormat = "$ring attr-dict `:` type($ring)";
}

def Qlanv_RingPhaseOp : Qlanv_Op<"ring_phase"> {
  let summary = "the ring's current phase bit (0 or 1)";
  let arguments = (ins Qlanv_RingType:$ring);
  let results = (outs I32:$result);
  let assemblyFormat = "$ring attr-dict `:` type($ring)";
}

def Qlanv_RingAdvanceOp : Qlanv_Op<"ring_advance"> {
  let summary = "move to the next slot; flip the phase when the slot wraps";
  let arguments = (ins Qlanv_RingType:$ring);
  let assemblyFormat = "$ring attr-dict `:` type($ring)";
}

//===--- Barriers ----------------------------------------------------------===//

def Qlanv_BarrierInitOp : Qlanv_Op<"barrier_init"> {
  let summary = "initialize every mbarrier of an array (one thread), then fence";
  let arguments = (ins Qlanv_BarriersType:$barriers);
  let assemblyFormat = "$barriers attr-dict `:` type($barriers)";
}

def Qlanv_BarrierWaitOp : Qlanv_Op<"barrier_wait"> {
  let summary = "wait until barrier[slot] completes the phase with parity `phase`";
  let arguments = (ins Qlanv_BarriersType:$barriers, Index:$slot, I32:$phase);
  let assemblyFormat = "$barriers `[` $slot `]` `,` $phase attr-dict `:` type($barriers)";
}

def Qlanv_BarrierArriveOp : Qlanv_Op<"barrier_arrive"> {
  let summary = "every executing thread arrives on barrier[slot] (an elected thread inside qlanv.elect)";
  let arguments = (ins Qlanv_BarriersType:$barriers, Index:$slot);
  let assemblyFormat = "$barriers `[` $slot `]` attr-dict `:` type($barriers)";
}

def Qlanv_BarrierExpectTxOp : Qlanv_Op<"barrier_arrive_expect_tx"> {
  let summary = "arrive on barrier[slot] expecting `bytes` of TMA transactions (one thread); with `noArrive` only expect them (the thread arrives later, as every other)";
  let arguments = (ins Qlanv_BarriersType:$barriers, Index:$slot, I64Attr:$bytes, UnitAttr:$noArrive);
  let assemblyFormat = "$barriers `[` $slot `]` `,` $bytes attr-dict `:` type($barriers)";
}

def Qlanv_NamedBarrierOp : Qlanv_Op<"named_barrier"> {
  let summary = "bar.sync on a named barrier among `threads` threads";
  let arguments = (ins I64Attr:$id, I64Attr:$threads);
  let assemblyFormat = "$id `,` $threads attr-dict";
}

def Qlanv_BlockSyncOp : Qlanv_Op<"block_sync"> {
  let summary = "__syncthreads()";
  let assemblyFormat = "attr-dict";
}

def Qlanv_GridDependentsLaunchOp : Qlanv_Op<"grid_dependents_launch"> {
  let summary = "let the next kernel on the stream start (griddepcontrol.launch_dependents; follows(...))";
  let description = [{
    Inserted at the top of a kernel with `follows(...)` by
    qlanv-insert-grid-dependency: every CTA lets the next kernel start once
    all CTAs have started, since that kernel waits for this one before
    touching what it writes.
  }];
  let assemblyFormat = "attr-dict";
}

def Qlanv_GridDependencyWaitOp : Qlanv_Op<"grid_dependency_wait"> {
  let summary = "wait until the preceding kernel on the stream is done (griddepcontrol.wait; follows(...))";
  let description = [{
    Inserted by qlanv-insert-grid-dependency before the first statement of
    the kernel, or of a role's body, that reads a tensor `follows(...)`
    lists or writes an output; with `atExit`, at the end of the kernel (a
    kernel must not finish before the one it follows).
  }];
  let arguments = (ins UnitAttr:$atExit);
  let assemblyFormat = "attr-dict";
}

// Turns (a role with `turns` over n >= 2 warpgroups): a token goes round
// the role's warpgroups through the named barriers base .. base + n - 1 of
// 256 threads each (the holder's 128 wait, the previous holder's 128
// arrive), inserted by qlanv-insert-turns.
def Qlanv_TurnStartOp : Qlanv_Op<"turn_start"> {
  let summary = "the role's last warpgroup hands warpgroup 0 the first turn (arrive on barrier base)";
  let arguments = (ins I64Attr:$base, I64Attr:$count);
  let assemblyFormat = "$base `,` $count attr-dict";
}

def Qlanv_TurnWaitOp : Qlanv_Op<"turn_wait"> {
  let summary = "warpgroup w of the role waits for its turn (sync on barrier base + w) before a product's fence";
  let arguments = (ins I64Attr:$base);
  let assemblyFormat = "$base attr-dict";
}

def Qlanv_TurnPassOp : Qlanv_Op<"turn_pass"> {
  let summary = "warpgroup w hands the turn to w + 1 mod count (arrive on its barrier) after a product's commit";
  let arguments = (ins I64Attr:$base, I64Attr:$count);
  let assemblyFormat = "$base `,` $count attr-dict";
}

def Qlanv_TurnFinishOp : Qlanv_Op<"turn_finish"> {
  let summary = "warpgroup 0 takes back the last hand-off at the role's end (sync on barrier base): every barrier balanced";
  let arguments = (ins I64Attr:$base);
  let assemblyFormat = "$base attr-dict";
}

def Qlanv_FenceProxyAsyncOp : Qlanv_Op<"fence_proxy_async"> {
  let summary = "order generic-proxy shared writes before async-proxy (TMA, wgmma) reads";
  let assemblyFormat = "attr-dict";
}

//===--- Thread groups -----------------------------------------------------===//

def Qlanv_WarpgroupsOp : Qlanv_Op<"warpgroups", [SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "a region run only by warpgroups begin..end (inclusive)";
  let arguments = (ins StrAttr:$name, I64Attr:$wgBegin, I64Attr:$wgEnd);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$name $wgBegin `to` $wgEnd $body attr-dict";
}

def Qlanv_ElectOp : Qlanv_Op<"elect", [SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "a region run by one thread: the first of the enclosing warpgroup range";
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$body attr-dict";
}

def Qlanv_SetMaxNRegOp : Qlanv_Op<"setmaxnreg"> {
  let summary = "setmaxnreg.inc/dec: change the register budget of the executing warpgroup";
  let arguments = (ins ConfinedAttr<I64Attr, [IntMinValue<24>, IntMaxValue<256>]>:$regs, BoolAttr:$increase);
  let assemblyFormat = "$regs attr-dict";
  let hasVerifier = 1;
}

//===--- TMA ---------------------------------------------------------------===//

def Qlanv_TmaLoadOp : Qlanv_Op<"tma_load"> {
  let summary = "bulk tensor copy global→shared, completing on barrier[slot]";
  let description = [{
    Issued by one thread. `coords` are element offsets, outermost first; the
    box is the tile shape (with 1 for `dropped` dims). A tile whose rows are
    wider than the swizzle span is loaded as several column blocks.
  }];
  let arguments = (ins Qla_GlobalType:$src, Variadic<Index>:$coords, Qla_SharedType:$dst,
                       Qlanv_BarriersType:$barriers, Index:$slot,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$dropped);
  let assemblyFormat = "$src `[` $coords `]` `->` $dst `,` $barriers `[` $slot `]` attr-dict `:` type($src) `->` type($dst) `,` type($barriers)";
  let hasVerifier = 1;
}

//===--- wgmma -------------------------------------------------------------===//

def Qlanv_WgmmaOp : Qlanv_Op<"wgmma"> {
  let summary = "a warpgroup's share of a tile gemm as a chain of m64nNk16 wgmma instructions";
  let description = [{
    Each of the `warpgroups` executing warpgroups computes rows
    [w·M/W, (w+1)·M/W) of C: M/W/64 row blocks, K/16 instructions each.
    A from shared memory (descriptors) or from a fragment (registers, RS).
    Asynchronous: pair with `wgmma_commit` and `wgmma_wait`.
    `a_box` / `b_box` = [r0, c0, nr, nc]: a sub-tile operand (qla.gemm's).
  }];
  let arguments = (ins Qla_AnyTile:$a, Qla_SharedType:$b, Qla_FragType:$c,
                       UnitAttr:$transA, UnitAttr:$transB, UnitAttr:$accumulate,
                       I64Attr:$warpgroups,
                       OptionalAttr<DenseI64ArrayAttr>:$a_box, OptionalAttr<DenseI64ArrayAttr>:$b_box);
  let assemblyFormat = "$a `,` $b `,` $c attr-dict `:` type($a) `,` type($b) `,` type($c)";
  let hasVerifier = 1;
}

def Qlanv_WgmmaFenceOp : Qlanv_Op<"wgmma_fence"> {
  let summary = "wgmma.fence: order register/shared accesses before the next wgmma";
  let arguments = (ins Variadic<Qla_FragType>:$frags);
  let assemblyFormat = "($frags^ `:` type($frags))? attr-dict";
}

def Qlanv_WgmmaCommitOp : Qlanv_Op<"wgmma_commit"> {
  let summary = "wgmma.commit_group";
  let assemblyFormat = "attr-dict";
}

def Qlanv_WgmmaWaitOp : Qlanv_Op<"wgmma_wait"> {
  let summary = "wgmma.wait_group: wait until at most `pending` groups are in flight";
  let arguments = (ins I64Attr:$pending, Variadic<Qla_FragType>:$frags);
  let assemblyFormat = "$pending ($frags^ `:` type($frags))? attr-dict";
}

#endif
