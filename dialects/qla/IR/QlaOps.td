#ifndef QLA_OPS_TD
#define QLA_OPS_TD

include "QlaBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/LoopLikeInterface.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/IR/EnumAttr.td"

class Qla_Op<string mnemonic, list<Trait> traits = []>
    : Op<Qla_Dialect, mnemonic, traits>;

def Qla_ReduceKindAttr : I32EnumAttr<"ReduceKind", "reduction combiner", [
    I32EnumAttrCase<"add", 0>, I32EnumAttrCase<"max", 1>, I32EnumAttrCase<"min", 2>]> {
  let cppNamespace = "::mlir::qla";
}

//===----------------------------------------------------------------------===//
// Indices and storage
//===----------------------------------------------------------------------===//

def Qla_BlockIdOp : Qla_Op<"block_id", [Pure]> {
  let summary = "the block (CTA) index along one grid dimension";
  let description = [{ `%by = qla.block_id 1` }];
  let arguments = (ins ConfinedAttr<I32Attr, [IntMinValue<0>, IntMaxValue<2>]>:$dim);
  let results = (outs Index:$result);
  let assemblyFormat = "$dim attr-dict";
}

def Qla_AllocSharedOp : Qla_Op<"alloc_shared"> {
  let summary = "allocate a shared-memory tile";
  let description = [{
    `%a = qla.alloc_shared : !qla.smem<128x64xbf16>`. After channel lowering
    `count` copies back each other (one per slot of a ring); resource
    assignment sets `offset`, the byte offset in the shared-memory arena.
  }];
  let arguments = (ins DefaultValuedAttr<I64Attr, "1">:$count, OptionalAttr<I64Attr>:$offset);
  let results = (outs Qla_SharedType:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Qla_AllocFragOp : Qla_Op<"alloc_frag"> {
  let summary = "allocate a register fragment";
  let description = [{ `%acc = qla.alloc_frag : !qla.frag<128x256xf32>` }];
  let results = (outs Qla_FragType:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Copies
//===----------------------------------------------------------------------===//

def Qla_LoadOp : Qla_Op<"load", [AttrSizedOperandSegments]> {
  let summary = "copy a slice of a global tensor into a tile";
  let description = [{
    `qla.load %A[%m0, %k0] -> %a : !qla.global<bf16, 2> -> !qla.smem<128x64xbf16>`
    reads the box starting at the offsets whose extents are the tile's shape;
    `dropped` lists the global dims indexed by a single element (extent 1,
    not part of the tile shape). Out-of-range elements read as zero; so do
    indices at or past `limits[k]` along global dim `limitDims[k]`
    (`until [%eos] {limitDims = array<i64: 0>}`). With `transpose` the
    destination is a 2-D fragment [M, N] and the box [N, M]: f[i, j] = box[j, i].
  }];
  let arguments = (ins Qla_GlobalType:$src, Variadic<Index>:$offsets,
                       Qla_AnyTile:$dst, Variadic<Index>:$limits,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$dropped,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$limitDims,
                       UnitAttr:$transpose);
  let assemblyFormat = "$src `[` $offsets `]` `->` $dst (`until` `[` $limits^ `]`)? attr-dict `:` type($src) `->` type($dst)";
  let hasVerifier = 1;
}

def Qla_StoreOp : Qla_Op<"store", [AttrSizedOperandSegments]> {
  let summary = "copy a tile into a slice of a global tensor";
  let description = [{
    `qla.store %acc -> %C[%m0, %n0] : !qla.frag<128x256xf32> -> !qla.global<bf16, 2>`
    converts to the tensor's dtype; out-of-range elements are not written,
    nor are indices at or past `limits[k]` along global dim `limitDims[k]`.
    With `transpose` the source is a 2-D fragment [M, N] and the box [N, M]:
    box[j, i] = f[i, j].
    With `accumulate` (the language's `copy(+)`; a fragment into an f32
    tensor, not transposed) each in-range element is added to what the
    tensor holds, by one atomic add (`red.global.add.f32`, a register pair's
    two by one `.v2`; round to nearest, subnormals flushed to zero) rather
    than written.
  }];
  let arguments = (ins Qla_AnyTile:$src, Qla_GlobalType:$dst, Variadic<Index>:$offsets,
                       Variadic<Index>:$limits,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$dropped,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$limitDims,
                       UnitAttr:$transpose, UnitAttr:$accumulate);
  let assemblyFormat = "$src `->` $dst `[` $offsets `]` (`until` `[` $limits^ `]`)? attr-dict `:` type($src) `->` type($dst)";
  let hasVerifier = 1;
}

def Qla_PrefetchOp : Qla_Op<"prefetch", [AttrSizedOperandSegments]> {
  let summary = "a hint: bring a slice of a global tensor into the L2 cache";
  let description = [{
    `qla.prefetch %Q[%b, %t0, %h, %c0] {shape = array<i64: 64, 128>, dropped = array<i64: 0, 2>} : !qla.global<bf16, 4>`
    asks the memory system to fetch the box starting at the offsets, of
    extents `shape` along the dims not in `dropped`, into L2: the role's
    threads each take some of its rows and prefetch every 128-byte line of
    them (`prefetch.global.L2`). Nothing is read into a tile and nothing
    waits: a later load of the same box (a TMA copy into a channel slot, say)
    finds it in L2. Elements outside the tensor or at or past `limits[k]`
    along global dim `limitDims[k]` are not touched. No effect on the
    simulator.
  }];
  let arguments = (ins Qla_GlobalType:$src, Variadic<Index>:$offsets, Variadic<Index>:$limits,
                       DenseI64ArrayAttr:$shape,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$dropped,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$limitDims);
  let assemblyFormat = "$src `[` $offsets `]` (`until` `[` $limits^ `]`)? attr-dict `:` type($src)";
  let hasVerifier = 1;
}

def Qla_CopyOp : Qla_Op<"copy"> {
  let summary = "copy between a shared tile and a fragment";
  let description = [{
    `qla.copy %a -> %f : !qla.smem<64x64xbf16> -> !qla.frag<64x64xf32>`.
    With `transpose` (`qla.copy %o -> %s {transpose} : !qla.frag<64x32xf32> ->
    !qla.smem<32x64xbf16>`) the fragment is 2-D and the tile has its shape
    swapped: s[j, i] = f[i, j] (or f[i, j] = s[j, i]).
    `box` = [r0, c0, nr, nc] (a fragment <-> shared copy, not transposed): the
    shared side is the sub-tile of rows [r0, r0 + nr) and columns
    [c0, c0 + nc) of a 2-D tile, r0 and c0 multiples of 8, and the fragment
    is [nr, nc].
  }];
  let arguments = (ins Qla_AnyTile:$src, Qla_AnyTile:$dst, UnitAttr:$transpose,
                       OptionalAttr<DenseI64ArrayAttr>:$box);
  let assemblyFormat = "$src `->` $dst attr-dict `:` type($src) `->` type($dst)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Compute
//===----------------------------------------------------------------------===//

def Qla_GemmOp : Qla_Op<"gemm"> {
  let summary = "C (+)= op(A) · op(B) on the tensor cores";
  let description = [{
    `qla.gemm %a, %b, %acc {transB, accumulate} : !qla.smem<128x64xbf16>, !qla.smem<256x64xbf16>, !qla.frag<128x256xf32>`
    A is a shared tile or a fragment (register-sourced), B a shared tile, C an
    f32 fragment. op(A) is [M, K], op(B) is [K, N], C is [M, N].
    `a_box` / `b_box` = [r0, c0, nr, nc]: the operand is the sub-tile of rows
    [r0, r0 + nr) and columns [c0, c0 + nc) of a shared tile (before the
    transpose); qla-lower-to-qlanv checks that the tile's layout allows it.
  }];
  let arguments = (ins Qla_AnyTile:$a, Qla_SharedType:$b, Qla_FragType:$c,
                       UnitAttr:$transA, UnitAttr:$transB, UnitAttr:$accumulate,
                       OptionalAttr<DenseI64ArrayAttr>:$a_box, OptionalAttr<DenseI64ArrayAttr>:$b_box);
  let assemblyFormat = "$a `,` $b `,` $c attr-dict `:` type($a) `,` type($b) `,` type($c)";
  let hasVerifier = 1;
}

def Qla_FillOp : Qla_Op<"fill"> {
  let summary = "set every element of a fragment to a scalar";
  let description = [{ `qla.fill %acc, %zero : !qla.frag<128x256xf32>, f32` }];
  let arguments = (ins Qla_FragType:$dst, AnyTypeOf<[F32, Index, I32]>:$value);
  let assemblyFormat = "$dst `,` $value attr-dict `:` type($dst) `,` type($value)";
  let hasVerifier = 1;
}

def Qla_CastOp : Qla_Op<"cast"> {
  let summary = "elementwise dtype conversion between fragments of one shape";
  let description = [{ `qla.cast %s -> %p : !qla.frag<64x64xf32> -> !qla.frag<64x64xbf16>` }];
  let arguments = (ins Qla_FragType:$src, Qla_FragType:$dst);
  let assemblyFormat = "$src `->` $dst attr-dict `:` type($src) `->` type($dst)";
  let hasVerifier = 1;
}

def Qla_ReduceOp : Qla_Op<"reduce"> {
  let summary = "reduce a 2-D fragment along one dim";
  let description = [{ `qla.reduce add %s -> %r {dim = 1} : !qla.frag<64x128xf32> -> !qla.frag<64xf32>` }];
  let arguments = (ins Qla_ReduceKindAttr:$kind, Qla_FragType:$src, Qla_FragType:$dst,
                       ConfinedAttr<I64Attr, [IntMinValue<0>, IntMaxValue<1>]>:$dim);
  let assemblyFormat = "$kind $src `->` $dst attr-dict `:` type($src) `->` type($dst)";
  let hasVerifier = 1;
}

def Qla_ScanOp : Qla_Op<"scan"> {
  let summary = "inclusive prefix scan of a fragment along one dim";
  let description = [{ `qla.scan add %g -> %gam {dim = 0} : !qla.frag<64xf32> -> !qla.frag<64xf32>` }];
  let arguments = (ins Qla_ReduceKindAttr:$kind, Qla_FragType:$src, Qla_FragType:$dst,
                       ConfinedAttr<I64Attr, [IntMinValue<0>, IntMaxValue<1>]>:$dim);
  let assemblyFormat = "$kind $src `->` $dst attr-dict `:` type($src) `->` type($dst)";
  let hasVerifier = 1;
}

def Qla_ParallelOp : Qla_Op<"parallel", [SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "an elementwise map over a fragment index space";
  let description = [{
    The body runs once per element (i, j) of `extents`; it reads fragments
    with `qla.elem_read` and writes them with `qla.elem_write`, indexed only by
    the block arguments (a 1-D fragment is a row or column vector broadcast
    along the other dim). Lowered to a per-thread loop over the registers of
    the fragment layout.

    ```mlir
    qla.parallel [64, 128] {
    ^bb0(%i: index, %j: index):
      %x = qla.elem_read %s[%i, %j] : !qla.frag<64x128xf32>
      %y = arith.mulf %x, %x : f32
      qla.elem_write %y -> %s[%i, %j] : !qla.frag<64x128xf32>
    }
    ```
  }];
  let arguments = (ins DenseI64ArrayAttr:$extents);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$extents $body attr-dict";
  let hasVerifier = 1;
}

def Qla_ElemReadOp : Qla_Op<"elem_read"> {
  let summary = "read one fragment element inside qla.parallel";
  let arguments = (ins Qla_FragType:$frag, Variadic<Index>:$indices);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$frag `[` $indices `]` attr-dict `:` type($frag) `->` type($result)";
  let hasVerifier = 1;
}

def Qla_ElemWriteOp : Qla_Op<"elem_write"> {
  let summary = "write one fragment element inside qla.parallel";
  let arguments = (ins AnyType:$value, Qla_FragType:$frag, Variadic<Index>:$indices);
  let assemblyFormat = "$value `->` $frag `[` $indices `]` attr-dict `:` type($value) `->` type($frag)";
  let hasVerifier = 1;
}

def Qla_YieldOp : Qla_Op<"yield", [Pure, Terminator, ReturnLike]> {
  let summary = "terminates qla region bodies";
  let assemblyFormat = "attr-dict";
}

def Qla_GlobalReadOp : Qla_Op<"global_read", [MemoryEffects<[MemRead]>]> {
  let summary = "read one element of a global tensor (0 when out of range)";
  let description = [{ `%bos = qla.global_read %cu[%n] : !qla.global<i32, 1> -> index` }];
  let arguments = (ins Qla_GlobalType:$src, Variadic<Index>:$indices);
  let results = (outs AnyTypeOf<[Index, F32]>:$result);
  let assemblyFormat = "$src `[` $indices `]` attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Qla_FragPickOp : Qla_Op<"frag_pick"> {
  let summary = "read one fragment element at a uniform index, broadcast to every thread";
  let description = [{ `%gl = qla.frag_pick %gam[%c63] : !qla.frag<64xf32> -> f32` }];
  let arguments = (ins Qla_FragType:$frag, Variadic<Index>:$indices);
  let results = (outs AnyTypeOf<[Index, F32]>:$result);
  let assemblyFormat = "$frag `[` $indices `]` attr-dict `:` type($frag) `->` type($result)";
  let hasVerifier = 1;
}

def Qla_SlotPickOp : Qla_Op<"slot_pick"> {
  let summary = "read one element of a get's slot tile at a uniform index: one shared load per thread";
  let description = [{
    `%gl = qla.slot_pick %gs[%c63] : !qla.smem<64xf32> -> f32`. No barrier:
    the get's wait on the slot's `full` barrier made it visible to every
    thread of the role, and each thread's read precedes its own release.
  }];
  let arguments = (ins Qla_SharedType:$tile, Variadic<Index>:$indices);
  let results = (outs F32:$result);
  let assemblyFormat = "$tile `[` $indices `]` attr-dict `:` type($tile) `->` type($result)";
  let hasVerifier = 1;
}

def Qla_VarOp : Qla_Op<"var"> {
  let summary = "a mutable per-thread scalar, initialized";
  let description = [{ `%x = qla.var %c0 : index -> !qla.var<index>` }];
  let arguments = (ins AnyTypeOf<[Index, F32]>:$init);
  let results = (outs Qla_VarType:$result);
  let assemblyFormat = "$init attr-dict `:` type($init) `->` type($result)";
  let hasVerifier = 1;
}

def Qla_VarGetOp : Qla_Op<"var_get"> {
  let summary = "the current value of a variable";
  let arguments = (ins Qla_VarType:$var);
  let results = (outs AnyTypeOf<[Index, F32]>:$result);
  let assemblyFormat = "$var attr-dict `:` type($var) `->` type($result)";
  let builders = [OpBuilder<(ins "::mlir::Value":$var), [{
    build($_builder, $_state, ::mlir::cast<VarType>(var.getType()).getValueType(), var);
  }]>];
}

def Qla_VarSetOp : Qla_Op<"var_set"> {
  let summary = "assign a variable";
  let arguments = (ins AnyTypeOf<[Index, F32]>:$value, Qla_VarType:$var);
  let assemblyFormat = "$value `->` $var attr-dict `:` type($value) `->` type($var)";
  let hasVerifier = 1;
}

def Qla_InvUnitLowerOp : Qla_Op<"inv_unit_lower"> {
  let summary = "dst = (I + strictly_lower(src))^-1 for a square f32 fragment";
  let description = [{
    `qla.inv_unit_lower %l -> %a : !qla.frag<64x64xf32> -> !qla.frag<64x64xf32>`.
    Computed in f32 by forward substitution (through shared memory, or in
    registers: inRegisters); only the strictly lower triangle of `src` is
    read; `dst` is unit lower triangular.
    With `{blocks = 16}` only the 16 x 16 diagonal blocks are inverted and
    `dst` is zero off them (the block-diagonal factor D of a blocked inverse
    whose off-diagonal part the kernel computes with gemms).
    With `{f16_operands}` the whole inverse, its 16 x 16 diagonal blocks in
    f32 and the rest merged by tensor-core products of f16 operands (f32
    sums), in registers (mmaMerged).
  }];
  let arguments = (ins Qla_FragType:$src, Qla_FragType:$dst, OptionalAttr<I64Attr>:$blocks,
                       UnitAttr:$f16_operands);
  let assemblyFormat = "$src `->` $dst attr-dict `:` type($src) `->` type($dst)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    // With {blocks = 16} on a 64 x 64 accumulator fragment of one warpgroup,
    // each warp holds one diagonal block whole: it is inverted in registers
    // with warp shuffles (no shared memory, no barrier). Otherwise through
    // shared memory (the emitter's scratch, AssignResources' scratchBytes).
    bool inRegisters(int64_t warpgroups);
    // With {f16_operands} on a 64 x 64 accumulator fragment of one
    // warpgroup: the whole inverse in registers, the diagonal blocks as
    // above, merged by mma.sync (f16 operands) with kMmaScratchBytes of
    // shared scratch for the blocks that cross warps (48 rows of kMmaLd f16).
    bool mmaMerged(int64_t warpgroups);
    static constexpr int64_t kMmaLd = 56;
    static constexpr int64_t kMmaScratchBytes = 48 * kMmaLd * 2;
  }];
}

//===----------------------------------------------------------------------===//
// Loops, roles, channels
//===----------------------------------------------------------------------===//

def Qla_PipelineOp : Qla_Op<"pipeline", [SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "a software-pipelined loop";
  let description = [{
    Like `scf.for` with step 1; global→shared `qla.load`s in its body are
    multi-buffered `stages` deep and issued ahead of their use.
    `qla.pipeline %k = %c0 to %n stages 3 { ... }`
  }];
  let arguments = (ins Index:$lowerBound, Index:$upperBound,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$stages);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$lowerBound `to` $upperBound `stages` $stages $body attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::Value getInductionVar() { return getBody().front().getArgument(0); }
  }];
}

def Qla_RoleOp : Qla_Op<"role", [SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "a warp-specialized role: a region run by a range of warpgroups";
  let description = [{
    `qla.role "math" warpgroups 1 to 2 regs 232 { ... }` runs its body on
    warpgroups 1 and 2 (inclusive) with a budget of 232 registers per thread.
    `regs = 0` leaves the budget to the compiler.
  }];
  let arguments = (ins StrAttr:$name, I64Attr:$wgBegin, I64Attr:$wgEnd, I64Attr:$regs);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$name `warpgroups` $wgBegin `to` $wgEnd `regs` $regs $body attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getNumWarpgroups() { return getWgEnd() - getWgBegin() + 1; }
  }];
}

def Qla_ChannelOp : Qla_Op<"channel"> {
  let summary = "create a channel between roles";
  let description = [{ `%ab = qla.channel "ab" : !qla.channel<[!qla.smem<128x64xbf16>], 4>` }];
  let arguments = (ins StrAttr:$name);
  let results = (outs Qla_ChannelType:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Qla_PutOp : Qla_Op<"put", [SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "producer side of a channel: fill the next free slot";
  let description = [{
    Waits for a free slot, binds its tiles to the block arguments and runs the
    body, which holds only global→shared `qla.load`s into those tiles; the slot
    becomes full when their bytes land.
  }];
  let arguments = (ins Qla_ChannelType:$channel);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$channel $body attr-dict `:` type($channel)";
  let hasVerifier = 1;
}

def Qla_GetOp : Qla_Op<"get", [SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "consumer side of a channel: use the next full slot";
  let description = [{
    Waits for a full slot, binds its tiles to the block arguments and runs the
    body; the slot is released once the body's reads (incl. asynchronous gemms)
    have completed.
  }];
  let arguments = (ins Qla_ChannelType:$channel);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$channel $body attr-dict `:` type($channel)";
  let hasVerifier = 1;
}

#endif
