// The qla dialect (tile level): types and ops. Include this, not the .inc files.
#pragma once

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/qla/IR/QlaDialect.h.inc"
#include "dialects/qla/IR/QlaEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/qla/IR/QlaTypes.h.inc"

#define GET_OP_CLASSES
#include "dialects/qla/IR/QlaOps.h.inc"

namespace mlir::qla {
// Bytes of one element of a tile dtype (bf16, f16, f32, i32).
int64_t elementBytes(Type t);
// A gemm operand's shape before its transpose: [nr, nc] of its box (a_box /
// b_box = [r0, c0, nr, nc], a sub-tile of a shared tile), else the tile's.
SmallVector<int64_t, 2> gemmOperandShape(ArrayRef<int64_t> tile, std::optional<ArrayRef<int64_t>> box);
// Why a box is not a sub-tile of a 2-D tile of shape `tile` ("" when it is).
std::string gemmBoxError(ArrayRef<int64_t> tile, ArrayRef<int64_t> box);
// c when v is argument k of a map's body plus the constant c (v itself: 0;
// arith.addi with a constant, either order), else nullopt.
std::optional<int64_t> mapIndexOffset(Value v, Block &body, unsigned k);
// Kernel function attribute names (func.func carrying a QLA kernel).
inline constexpr const char *kKernelAttr = "qla.kernel";
inline constexpr const char *kGridAttr = "qla.grid";          // ArrayAttr of 3 StringAttr
inline constexpr const char *kThreadsAttr = "qla.threads";    // i64
inline constexpr const char *kClusterAttr = "qla.cluster";    // DenseI64ArrayAttr (3)
inline constexpr const char *kMinBlocksAttr = "qla.min_blocks";  // i64, occupancy(N) > 1 only
inline constexpr const char *kFollowsAttr = "qla.follows";  // DenseI64ArrayAttr: follows(...)'s tensor indices
inline constexpr const char *kArgNamesAttr = "qla.arg_names"; // ArrayAttr of StringAttr
inline constexpr const char *kTensorDimsAttr = "qla.tensor_dims"; // ArrayAttr of ArrayAttr of StringAttr
inline constexpr const char *kOutputsAttr = "qla.outputs";    // DenseBoolArrayAttr per tensor
inline constexpr const char *kSourceAttr = "qla.source";      // original file name
}  // namespace mlir::qla
