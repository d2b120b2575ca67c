// qlanv dialect registration and verifiers.
#include "dialects/qlanv/IR/QlanvDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::qlanv;

#include "dialects/qlanv/IR/QlanvDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/qlanv/IR/QlanvTypes.cpp.inc"

void QlanvDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/qlanv/IR/QlanvTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/qlanv/IR/QlanvOps.cpp.inc"
      >();
}

LogicalResult SetMaxNRegOp::verify() {
  if (getRegs() % 8 != 0) return emitOpError("register count must be a multiple of 8, got ") << getRegs();
  return success();
}

LogicalResult TmaLoadOp::verify() {
  auto g = getSrc().getType();
  auto t = getDst().getType();
  if (t.getShape().empty()) return emitOpError("TMA needs a tile of rank 1 or more");
  if (getCoords().size() != g.getRank())
    return emitOpError("needs one coordinate per tensor dim");
  if (t.getElementType() != g.getElementType())
    return emitOpError("TMA keeps the dtype");
  if (t.getShape().size() + getDropped().size() != g.getRank())
    return emitOpError("box rank does not match the tensor rank");
  int64_t inner = t.getShape().back() * qla::elementBytes(t.getElementType());
  if (inner % 16 != 0) return emitOpError("TMA rows must be a multiple of 16 bytes, got ") << inner;
  for (int64_t d : t.getShape())
    if (d > 256 && d != t.getShape().back()) return emitOpError("TMA box extents are at most 256");
  return success();
}

LogicalResult WgmmaOp::verify() {
  auto c = getC().getType();
  if (c.getLayout() != qla::FragType::Acc || c.getShape().size() != 2)
    return emitOpError("C must be a 2-D fragment with the accumulator layout");
  int64_t w = getWarpgroups();
  if (w < 1) return emitOpError("needs at least one warpgroup, got ") << w;
  if (c.getShape()[0] % (64 * w) != 0) return emitOpError("M must be a multiple of 64 per warpgroup");
  if (c.getShape()[1] % 8 != 0 || c.getShape()[1] > 256)
    return emitOpError("N must be a multiple of 8 and at most 256, got ") << c.getShape()[1];
  if (auto b = getB().getType(); b.getSwizzle() == 0)
    return emitOpError("B must be a swizzled shared tile (run layout inference)");
  return success();
}

#define GET_OP_CLASSES
#include "dialects/qlanv/IR/QlanvOps.cpp.inc"
