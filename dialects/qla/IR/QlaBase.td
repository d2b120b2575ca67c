// The qla dialect: the tile level. Shared tiles, register fragments, global
// tensor views, copies, gemms, elementwise maps, reductions, scans, pipelined
// loops, warpgroup roles and channels between roles.
#ifndef QLA_BASE_TD
#define QLA_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Qla_Dialect : Dialect {
  let name = "qla";
  let summary = "QLA tile-level kernel dialect";
  let description = [{
    Tiles and fragments have buffer semantics: `qla.alloc_shared` and
    `qla.alloc_frag` create storage that copies, gemms and maps read and
    write. Global tensors are kernel arguments of type `!qla.global`, their
    symbolic dims are `index` arguments.
  }];
  let cppNamespace = "::mlir::qla";
  let useDefaultTypePrinterParser = 1;
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect",
    "::mlir::math::MathDialect", "::mlir::func::FuncDialect"
  ];
}

class Qla_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Qla_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Qla_GlobalType : Qla_Type<"Global", "global"> {
  let summary = "a global-memory tensor view with symbolic dims";
  let description = [{
    Example: `!qla.global<bf16, 2>` is a rank-2 bf16 tensor whose dims are
    given at launch.
  }];
  let parameters = (ins "::mlir::Type":$elementType, "unsigned":$rank);
  let assemblyFormat = "`<` $elementType `,` $rank `>`";
}

def Qla_SharedType : Qla_Type<"Shared", "smem"> {
  let summary = "a shared-memory tile";
  let description = [{
    Example: `!qla.smem<128x64xbf16>`; after layout inference
    `!qla.smem<128x64xbf16, swizzle 128>`: stored as column blocks of
    `swizzle` bytes per row (the TMA / wgmma canonical layout), each block
    XOR-swizzled in 16-byte chunks.
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape,
                        "::mlir::Type":$elementType,
                        "unsigned":$swizzle);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getNumElements() const;
    int64_t getSizeInBytes() const;
    SharedType withSwizzle(unsigned swizzle) const;
  }];
}

def Qla_FragType : Qla_Type<"Frag", "frag"> {
  let summary = "a register fragment: a tile distributed over warpgroups";
  let description = [{
    Example: `!qla.frag<128x256xf32>`; after layout inference
    `!qla.frag<128x256xf32, acc x2>`: the wgmma accumulator layout, rows split
    over 2 warpgroups. 1-D fragments take the `row` layout (a vector indexed
    like the accumulator's rows) or the `col` layout (like its columns).
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape,
                        "::mlir::Type":$elementType,
                        "unsigned":$layout,
                        "unsigned":$warpgroups);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    enum Layout : unsigned { Unassigned = 0, Acc = 1, Row = 2, Col = 3 };
    bool hasLayout() const { return getLayout() != Unassigned; }
    FragType withLayout(unsigned layout, unsigned warpgroups) const;
    // Registers each thread holds under the assigned layout.
    int64_t getRegsPerThread() const;
  }];
}

def Qla_ChannelType : Qla_Type<"Channel", "channel"> {
  let summary = "a multi-buffered shared-memory handoff between roles";
  let description = [{
    Example: `!qla.channel<[!qla.smem<128x64xbf16>, !qla.smem<256x64xbf16>], 4>`
    holds 4 slots, each with one tile of each listed type.
  }];
  let parameters = (ins ArrayRefParameter<"::mlir::Type">:$slotTypes, "unsigned":$depth);
  let assemblyFormat = "`<` `[` $slotTypes `]` `,` $depth `>`";
}

def Qla_VarType : Qla_Type<"Var", "var"> {
  let summary = "a mutable per-thread scalar variable";
  let description = [{ `!qla.var<index>`, `!qla.var<f32>`: read with `qla.var_get`, written with `qla.var_set`. }];
  let parameters = (ins "::mlir::Type":$valueType);
  let assemblyFormat = "`<` $valueType `>`";
}

def Qla_AnyTile : AnyTypeOf<[Qla_SharedType, Qla_FragType]>;

#endif
