// qla dialect registration and type syntax.
#include "dialects/qla/IR/QlaDialect.h"
#include "dialects/qla/IR/FragLayout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::qla;

#include "dialects/qla/IR/QlaDialect.cpp.inc"
#include "dialects/qla/IR/QlaEnums.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/qla/IR/QlaTypes.cpp.inc"

void QlaDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/qla/IR/QlaTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/qla/IR/QlaOps.cpp.inc"
      >();
}

SmallVector<int64_t, 2> mlir::qla::gemmOperandShape(ArrayRef<int64_t> tile, std::optional<ArrayRef<int64_t>> box) {
  if (box && box->size() == 4) return {(*box)[2], (*box)[3]};
  return SmallVector<int64_t, 2>(tile.begin(), tile.end());
}

std::optional<int64_t> mlir::qla::mapIndexOffset(Value v, Block &body, unsigned k) {
  auto isArg = [&](Value x) {
    auto a = dyn_cast<BlockArgument>(x);
    return a && a.getOwner() == &body && a.getArgNumber() == k;
  };
  if (isArg(v)) return 0;
  auto add = v.getDefiningOp<arith::AddIOp>();
  if (!add) return std::nullopt;
  for (auto [x, c] : {std::pair{add.getLhs(), add.getRhs()}, std::pair{add.getRhs(), add.getLhs()}}) {
    IntegerAttr a;
    if (isArg(x) && matchPattern(c, m_Constant(&a))) return a.getInt();
  }
  return std::nullopt;
}

std::string mlir::qla::gemmBoxError(ArrayRef<int64_t> tile, ArrayRef<int64_t> box) {
  if (box.size() != 4) return "a box is [r0, c0, nr, nc], got " + std::to_string(box.size()) + " entries";
  if (tile.size() != 2) return "only a 2-D tile has a sub-tile";
  for (int i = 0; i < 2; ++i)
    if (box[i] < 0 || box[2 + i] <= 0 || box[i] + box[2 + i] > tile[i])
      return std::string("the box's ") + (i ? "columns [" : "rows [") + std::to_string(box[i]) + ", " +
             std::to_string(box[i] + box[2 + i]) + ") leave the tile's [0, " + std::to_string(tile[i]) + ")";
  return "";
}

int64_t mlir::qla::elementBytes(Type t) {
  if (t.isBF16() || t.isF16()) return 2;
  if (t.isF32() || t.isInteger(32)) return 4;
  if (t.isInteger(64) || t.isF64()) return 8;
  return 0;
}

//===--- !qla.smem<RxCxT[, swizzle N]> --------------------------------------===//

static ParseResult parseShapeAndType(AsmParser &p, SmallVectorImpl<int64_t> &shape, Type &elt) {
  if (p.parseDimensionList(shape, /*allowDynamic=*/false, /*withTrailingX=*/true) ||
      p.parseType(elt))
    return failure();
  return success();
}

static void printShapeAndType(AsmPrinter &p, ArrayRef<int64_t> shape, Type elt) {
  for (int64_t d : shape) p << d << "x";
  p << elt;
}

Type SharedType::parse(AsmParser &p) {
  SmallVector<int64_t> shape;
  Type elt;
  unsigned swizzle = 0;
  SMLoc loc = p.getCurrentLocation();
  if (p.parseLess() || parseShapeAndType(p, shape, elt)) return {};
  if (succeeded(p.parseOptionalComma())) {
    if (p.parseKeyword("swizzle") || p.parseInteger(swizzle)) return {};
  }
  if (p.parseGreater()) return {};
  // getChecked runs SharedType::verify: `get` checks nothing in release
  // builds, so an invalid swizzle would otherwise parse.
  return SharedType::getChecked([&] { return p.emitError(loc); }, p.getContext(), shape, elt, swizzle);
}

void SharedType::print(AsmPrinter &p) const {
  p << "<";
  printShapeAndType(p, getShape(), getElementType());
  if (getSwizzle()) p << ", swizzle " << getSwizzle();
  p << ">";
}

static LogicalResult verifyShape(function_ref<InFlightDiagnostic()> emitError, ArrayRef<int64_t> shape) {
  if (shape.empty() || shape.size() > 2) return emitError() << "tiles have rank 1 or 2, got rank " << shape.size();
  for (int64_t d : shape)
    if (d <= 0) {
      InFlightDiagnostic diag = emitError();
      diag << "tile extents must be positive, got [";
      for (size_t i = 0; i < shape.size(); ++i) diag << (i ? ", " : "") << shape[i];
      return diag << "]";
    }
  return success();
}

LogicalResult SharedType::verify(function_ref<InFlightDiagnostic()> emitError, ArrayRef<int64_t> shape,
                                 Type elementType, unsigned swizzle) {
  if (failed(verifyShape(emitError, shape))) return failure();
  if (swizzle != 0 && swizzle != 32 && swizzle != 64 && swizzle != 128)
    return emitError() << "swizzle must be 0, 32, 64 or 128 bytes, got " << swizzle;
  return success();
}

LogicalResult FragType::verify(function_ref<InFlightDiagnostic()> emitError, ArrayRef<int64_t> shape,
                               Type elementType, unsigned layout, unsigned warpgroups) {
  if (failed(verifyShape(emitError, shape))) return failure();
  if (layout > Col) return emitError() << "unknown fragment layout " << layout;
  if (layout != Unassigned && warpgroups == 0) return emitError() << "a fragment layout needs a warpgroup count";
  if (layout == Acc && shape.size() != 2) return emitError() << "the accumulator layout is 2-D";
  if ((layout == Row || layout == Col) && shape.size() != 1) return emitError() << "row/column layouts are 1-D";
  return success();
}

int64_t SharedType::getNumElements() const {
  int64_t n = 1;
  for (int64_t d : getShape()) n *= d;
  return n;
}
int64_t SharedType::getSizeInBytes() const { return getNumElements() * elementBytes(getElementType()); }
SharedType SharedType::withSwizzle(unsigned swizzle) const {
  return SharedType::get(getContext(), getShape(), getElementType(), swizzle);
}

//===--- !qla.frag<RxCxT[, acc|row|col xW]> ---------------------------------===//

static const char *layoutName(unsigned l) {
  switch (l) {
    case FragType::Acc: return "acc";
    case FragType::Row: return "row";
    case FragType::Col: return "col";
    default: return "?";
  }
}

Type FragType::parse(AsmParser &p) {
  SMLoc loc = p.getCurrentLocation();
  SmallVector<int64_t> shape;
  Type elt;
  unsigned layout = Unassigned, wgs = 0;
  if (p.parseLess() || parseShapeAndType(p, shape, elt)) return {};
  if (succeeded(p.parseOptionalComma())) {
    StringRef kw;
    if (p.parseKeyword(&kw)) return {};
    if (kw == "acc") layout = Acc;
    else if (kw == "row") layout = Row;
    else if (kw == "col") layout = Col;
    else {
      p.emitError(p.getCurrentLocation(), "expected fragment layout acc, row or col");
      return {};
    }
    // "x2": the lexer reads it as a bare identifier.
    StringRef w;
    if (p.parseKeyword(&w) || !w.consume_front("x") || w.getAsInteger(10, wgs) || wgs == 0) {
      p.emitError(p.getCurrentLocation(), "expected warpgroup count like 'x2'");
      return {};
    }
  }
  if (p.parseGreater()) return {};
  // getChecked runs FragType::verify wherever the type appears (signatures too).
  return FragType::getChecked([&] { return p.emitError(loc); }, p.getContext(), shape, elt, layout, wgs);
}

void FragType::print(AsmPrinter &p) const {
  p << "<";
  printShapeAndType(p, getShape(), getElementType());
  if (hasLayout()) p << ", " << layoutName(getLayout()) << " x" << getWarpgroups();
  p << ">";
}

FragType FragType::withLayout(unsigned layout, unsigned warpgroups) const {
  return FragType::get(getContext(), getShape(), getElementType(), layout, warpgroups);
}

// FragLayout's (FragLayout.h: the one definition of the layouts); 0
// without a layout.
int64_t FragType::getRegsPerThread() const {
  const size_t rank = getShape().size();
  if (!hasLayout() || getLayout() > Col || rank != (getLayout() == Acc ? 2u : 1u)) return 0;
  return FragLayout::of(*this).regsPerThread();
}
