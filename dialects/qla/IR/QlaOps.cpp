// Verifiers of the qla ops: shapes, dtypes and memory spaces must agree.
#include "dialects/qla/IR/QlaDialect.h"
#include "dialects/qla/IR/FragLayout.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::qla;

static ArrayRef<int64_t> tileShape(Type t) {
  if (auto s = dyn_cast<SharedType>(t)) return s.getShape();
  return cast<FragType>(t).getShape();
}
static Type tileElt(Type t) {
  if (auto s = dyn_cast<SharedType>(t)) return s.getElementType();
  return cast<FragType>(t).getElementType();
}
static std::string shapeStr(ArrayRef<int64_t> s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}
static bool isTileDType(Type t) {
  return t.isBF16() || t.isF16() || t.isF32() || t.isInteger(32);
}

static LogicalResult verifyTileShape(Operation *op, ArrayRef<int64_t> shape, Type elt) {
  if (shape.empty() || shape.size() > 2)
    return op->emitOpError("tiles have rank 1 or 2, got rank ") << shape.size();
  for (int64_t d : shape)
    if (d <= 0) return op->emitOpError("tile extents must be positive, got ") << shapeStr(shape);
  if (!isTileDType(elt)) return op->emitOpError("unsupported tile dtype ") << elt;
  return success();
}

LogicalResult AllocSharedOp::verify() {
  auto t = getType();
  return verifyTileShape(*this, t.getShape(), t.getElementType());
}

LogicalResult AllocFragOp::verify() {
  auto t = getType();
  if (failed(verifyTileShape(*this, t.getShape(), t.getElementType()))) return failure();
  if (t.hasLayout()) {
    auto s = t.getShape();
    int64_t w = t.getWarpgroups();
    const std::vector<int64_t> sv(s.begin(), s.end());
    const bool fits = t.getLayout() <= FragType::Col &&
                      FragLayout::fits(static_cast<FragLayout::Kind>(t.getLayout()), sv, unsigned(w));
    if (t.getLayout() == FragType::Acc && !fits)
      return emitOpError("accumulator layout needs rows a multiple of 64 per warpgroup and columns a multiple of 8, got ")
             << shapeStr(s) << " over " << w << " warpgroup(s)";
    if (t.getLayout() == FragType::Row && !fits)
      return emitOpError("row-vector layout needs a 1-D fragment of 64 rows per warpgroup, got ") << shapeStr(s);
    if (t.getLayout() == FragType::Col && !fits)
      return emitOpError("column-vector layout needs a 1-D fragment of a multiple of 8, got ") << shapeStr(s);
  }
  return success();
}

// A transposed load/store/copy: the fragment is 2-D (its memory side is
// [N, M] for a fragment [M, N]).
static LogicalResult verifyTransposedFrag(Operation *op, Type frag) {
  auto f = dyn_cast<FragType>(frag);
  if (!f || f.getShape().size() != 2)
    return op->emitOpError("transpose needs a 2-D fragment operand");
  return success();
}

// The global-side box of a load/store: the tile's shape with 1 inserted at dropped dims.
static LogicalResult verifyGlobalSlice(Operation *op, GlobalType g, size_t numOffsets,
                                       ArrayRef<int64_t> dropped, Type tile) {
  if (numOffsets != g.getRank())
    return op->emitOpError("needs one offset per tensor dim: ") << g.getRank() << " dims, "
                                                                 << numOffsets << " offsets";
  for (int64_t d : dropped)
    if (d < 0 || d >= (int64_t)g.getRank())
      return op->emitOpError("dropped dim ") << d << " out of range";
  size_t kept = g.getRank() - dropped.size();
  if (tileShape(tile).size() != kept)
    return op->emitOpError("slice keeps ") << kept << " dim(s) but the tile has shape "
                                           << shapeStr(tileShape(tile));
  return success();
}

static LogicalResult verifyLimits(Operation *op, size_t numLimits, ArrayRef<int64_t> dims, unsigned rank) {
  if (numLimits != dims.size()) return op->emitOpError("needs one limit per entry of limitDims");
  for (int64_t d : dims)
    if (d < 0 || d >= (int64_t)rank) return op->emitOpError("limit dim ") << d << " out of range";
  return success();
}

LogicalResult LoadOp::verify() {
  auto g = getSrc().getType();
  if (failed(verifyLimits(*this, getLimits().size(), getLimitDims(), g.getRank()))) return failure();
  if (failed(verifyGlobalSlice(*this, g, getOffsets().size(), getDropped(), getDst().getType())))
    return failure();
  if (getTranspose() && failed(verifyTransposedFrag(*this, getDst().getType()))) return failure();
  if (isa<SharedType>(getDst().getType()) && tileElt(getDst().getType()) != g.getElementType())
    return emitOpError("global→shared copies keep the dtype: ")
           << g.getElementType() << " vs " << tileElt(getDst().getType());
  return success();
}

LogicalResult StoreOp::verify() {
  auto g = getDst().getType();
  if (failed(verifyLimits(*this, getLimits().size(), getLimitDims(), g.getRank()))) return failure();
  if (failed(verifyGlobalSlice(*this, g, getOffsets().size(), getDropped(), getSrc().getType())))
    return failure();
  if (getTranspose() && failed(verifyTransposedFrag(*this, getSrc().getType()))) return failure();
  if (getAccumulate()) {
    if (!isa<FragType>(getSrc().getType())) return emitOpError("accumulate adds a fragment, not a shared tile");
    if (getTranspose()) return emitOpError("accumulate does not transpose");
    if (!g.getElementType().isF32())
      return emitOpError("accumulate adds into f32 tensors only, not ") << g.getElementType();
  }
  if (isa<SharedType>(getSrc().getType()) && tileElt(getSrc().getType()) != g.getElementType())
    return emitOpError("shared→global copies keep the dtype: ")
           << tileElt(getSrc().getType()) << " vs " << g.getElementType();
  return success();
}

LogicalResult PrefetchOp::verify() {
  auto g = getSrc().getType();
  if (failed(verifyLimits(*this, getLimits().size(), getLimitDims(), g.getRank()))) return failure();
  if (getOffsets().size() != g.getRank())
    return emitOpError("needs one offset per tensor dim: ") << g.getRank() << " dims, " << getOffsets().size()
                                                            << " offsets";
  for (int64_t d : getDropped())
    if (d < 0 || d >= (int64_t)g.getRank()) return emitOpError("dropped dim ") << d << " out of range";
  const size_t kept = g.getRank() - getDropped().size();
  if (getShape().size() != kept)
    return emitOpError("slice keeps ") << kept << " dim(s) but its shape has " << getShape().size();
  if (kept < 1 || kept > 2) return emitOpError("prefetches a 1-D or 2-D slice, not ") << kept << "-D";
  for (int64_t e : getShape())
    if (e < 1) return emitOpError("slice extents must be positive, got ") << e;
  return success();
}

LogicalResult CopyOp::verify() {
  Type s = getSrc().getType(), d = getDst().getType();
  if (isa<FragType>(s) && isa<FragType>(d))
    return emitOpError("copies between tiles go shared→fragment or fragment→shared");
  if (auto box = getBox()) {
    if (isa<SharedType>(s) == isa<SharedType>(d))
      return emitOpError("a sub-tile (box) needs a fragment <-> shared copy");
    if (getTranspose()) return emitOpError("a sub-tile (box) copy cannot be transposed");
    auto ms = tileShape(isa<SharedType>(s) ? s : d), fs = tileShape(isa<FragType>(s) ? s : d);
    if (box->size() != 4 || ms.size() != 2)
      return emitOpError("a box is [r0, c0, nr, nc] of a 2-D tile");
    const int64_t r0 = (*box)[0], c0 = (*box)[1], nr = (*box)[2], nc = (*box)[3];
    if (r0 < 0 || c0 < 0 || nr <= 0 || nc <= 0 || r0 + nr > ms[0] || c0 + nc > ms[1])
      return emitOpError("box [") << r0 << ", " << c0 << ", " << nr << ", " << nc << "] is not inside the tile "
                                  << shapeStr(ms);
    if (r0 % 8 != 0 || c0 % 8 != 0)
      return emitOpError("a box's origin must be a multiple of 8 (rows and columns), got [") << r0 << ", " << c0
                                                                                             << "]";
    if (fs.size() != 2 || fs[0] != nr || fs[1] != nc)
      return emitOpError("shape mismatch: fragment ") << shapeStr(fs) << ", box [" << nr << ", " << nc << "]";
    return success();
  }
  if (getTranspose()) {
    Type f = isa<FragType>(s) ? s : d, m = isa<FragType>(s) ? d : s;
    if (failed(verifyTransposedFrag(*this, f))) return failure();
    auto fs = tileShape(f), ms = tileShape(m);
    if (ms.size() != 2 || ms[0] != fs[1] || ms[1] != fs[0])
      return emitOpError("transposed shape mismatch: fragment ") << shapeStr(fs) << ", tile " << shapeStr(ms);
    return success();
  }
  // Shared→shared (a thread copy) only fills a put's slot, before and after
  // qla-lower-channels (which marks the copies it takes out of the put).
  if (isa<SharedType>(s) && isa<SharedType>(d) && !(*this)->getParentOfType<PutOp>() &&
      !(*this)->hasAttr("qla.slot_fill"))
    return emitOpError("copies between shared tiles are only valid inside a qla.put, into its slot");
  if (tileShape(s) != tileShape(d))
    return emitOpError("shape mismatch: ") << shapeStr(tileShape(s)) << " vs " << shapeStr(tileShape(d));
  return success();
}

LogicalResult GemmOp::verify() {
  Type at = getA().getType();
  auto bt = getB().getType();
  auto ct = getC().getType();
  Type ae = tileElt(at);
  if (!(ae.isBF16() || ae.isF16()))
    return emitOpError("A must be bf16 or f16, got ") << ae;
  if (bt.getElementType() != ae)
    return emitOpError("A and B must have the same dtype: ") << ae << " vs " << bt.getElementType();
  if (!ct.getElementType().isF32())
    return emitOpError("C must be an f32 fragment, got ") << ct.getElementType();
  if (tileShape(at).size() != 2 || bt.getShape().size() != 2 || ct.getShape().size() != 2)
    return emitOpError("gemm operands are 2-D");
  if (isa<FragType>(at) && getTransA())
    return emitOpError("a register-sourced A cannot be transposed");
  if (isa<FragType>(at) && getABox())
    return emitOpError("a register-sourced A cannot be a sub-tile");
  if (auto box = getABox(); box && !gemmBoxError(tileShape(at), *box).empty())
    return emitOpError("A: ") << gemmBoxError(tileShape(at), *box);
  if (auto box = getBBox(); box && !gemmBoxError(bt.getShape(), *box).empty())
    return emitOpError("B: ") << gemmBoxError(bt.getShape(), *box);
  auto as = gemmOperandShape(tileShape(at), getABox()), bs = gemmOperandShape(bt.getShape(), getBBox());
  auto cs = ct.getShape();
  int64_t m = getTransA() ? as[1] : as[0], ka = getTransA() ? as[0] : as[1];
  int64_t kb = getTransB() ? bs[1] : bs[0], n = getTransB() ? bs[0] : bs[1];
  if (ka != kb || cs[0] != m || cs[1] != n)
    return emitOpError("shapes do not agree: op(A) is [")
           << m << ", " << ka << "], op(B) is [" << kb << ", " << n << "], C is " << shapeStr(cs);
  return success();
}

LogicalResult FillOp::verify() { return success(); }

LogicalResult CastOp::verify() {
  if (getSrc().getType().getShape() != getDst().getType().getShape())
    return emitOpError("cast keeps the shape: ") << shapeStr(getSrc().getType().getShape()) << " vs "
                                                 << shapeStr(getDst().getType().getShape());
  return success();
}

LogicalResult ReduceOp::verify() {
  auto s = getSrc().getType().getShape(), d = getDst().getType().getShape();
  if (s.size() != 2 || d.size() != 1)
    return emitOpError("reduces a 2-D fragment into a 1-D fragment");
  int64_t kept = s[1 - getDim()];
  if (d[0] != kept)
    return emitOpError("result has ") << d[0] << " elements but the kept dim has " << kept;
  return success();
}

LogicalResult ScanOp::verify() {
  auto s = getSrc().getType().getShape();
  if (s != getDst().getType().getShape())
    return emitOpError("scan keeps the shape");
  if (getDim() >= (int64_t)s.size()) return emitOpError("scan dim out of range");
  return success();
}

LogicalResult ParallelOp::verify() {
  auto ext = getExtents();
  if (ext.empty() || ext.size() > 2) return emitOpError("iterates 1 or 2 dims");
  Block &b = getBody().front();
  if (b.getNumArguments() != ext.size())
    return emitOpError("body takes one index per dim");
  for (auto a : b.getArguments())
    if (!a.getType().isIndex()) return emitOpError("body arguments are indices");
  return success();
}

// Element accesses inside qla.parallel index with the parallel's own block
// arguments only, so that lowering can map them to the fragment's registers.
// A fragment of the parallel's rank is indexed by the index arguments in
// order; a 1-D fragment in a 2-D parallel is a broadcast vector, indexed by
// either argument. A fragment of higher rank than the parallel has no valid
// indexing: the emitter would map all its indices to the one loop.
static LogicalResult verifyElemAccess(Operation *op, FragType f, ValueRange idx) {
  auto par = op->getParentOfType<ParallelOp>();
  if (!par) return op->emitOpError("is only valid inside qla.parallel");
  auto ext = par.getExtents();
  Block &b = par.getBody().front();
  size_t rank = f.getShape().size();
  if (idx.size() != rank)
    return op->emitOpError("needs ") << rank << " indices";
  if (rank > ext.size())
    return op->emitOpError("fragment has rank ") << rank << " but the enclosing qla.parallel has rank "
                                                 << ext.size();
  for (auto [k, v] : llvm::enumerate(idx)) {
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg || arg.getOwner() != &b)
      return op->emitOpError("indices must be the enclosing qla.parallel's index arguments");
    if (f.getShape()[k] != ext[arg.getArgNumber()])
      return op->emitOpError("fragment dim ") << k << " has extent " << f.getShape()[k]
                                              << " but is indexed by a loop of extent "
                                              << ext[arg.getArgNumber()];
  }
  if (idx.size() == 2 && ext.size() == 2 &&
      (cast<BlockArgument>(idx[0]).getArgNumber() != 0 || cast<BlockArgument>(idx[1]).getArgNumber() != 1))
    return op->emitOpError("2-D fragments are indexed [i, j] in loop order");
  return success();
}

// Element values are f32 for float fragments (bf16/f16/f32) and index for
// integer ones; the conversion is part of the access.
static Type elementValueType(FragType f) {
  Type e = f.getElementType();
  if (e.isInteger(32) || e.isInteger(64)) return IndexType::get(f.getContext());
  return Float32Type::get(f.getContext());
}

LogicalResult ElemReadOp::verify() {
  if (getResult().getType() != elementValueType(getFrag().getType()))
    return emitOpError("result type must be f32 (float fragments) or index (integer fragments)");
  return verifyElemAccess(*this, getFrag().getType(), getIndices());
}

LogicalResult ElemWriteOp::verify() {
  if (getValue().getType() != elementValueType(getFrag().getType()))
    return emitOpError("value type must be f32 (float fragments) or index (integer fragments)");
  return verifyElemAccess(*this, getFrag().getType(), getIndices());
}

LogicalResult GlobalReadOp::verify() {
  if (getIndices().size() != getSrc().getType().getRank())
    return emitOpError("needs one index per tensor dim");
  Type e = getSrc().getType().getElementType();
  bool isInt = e.isInteger(32) || e.isInteger(64);
  if (isInt != getResult().getType().isIndex())
    return emitOpError("integer tensors read as index, float tensors as f32");
  return success();
}

LogicalResult FragPickOp::verify() {
  if (getIndices().size() != getFrag().getType().getShape().size())
    return emitOpError("needs one index per fragment dim");
  if ((*this)->getParentOfType<ParallelOp>())
    return emitOpError("is not valid inside qla.parallel (use qla.elem_read)");
  return success();
}

LogicalResult SlotPickOp::verify() {
  if (getIndices().size() != getTile().getType().getShape().size())
    return emitOpError("needs one index per tile dim");
  if (!isa<FloatType>(getTile().getType().getElementType())) return emitOpError("needs a tile of floats");
  // Inside qla.parallel: at the map's own position (its index arguments, in
  // order), or at a constant offset from it, inside the tile.
  if (auto par = (*this)->getParentOfType<ParallelOp>()) {
    auto ext = par.getExtents();
    auto shape = getTile().getType().getShape();
    if (ext.size() != shape.size()) return emitOpError("inside qla.parallel, the tile has the map's rank");
    for (auto [k, v] : llvm::enumerate(getIndices())) {
      std::optional<int64_t> off = mapIndexOffset(v, par.getBody().front(), unsigned(k));
      if (!off || *off < 0 || *off + ext[k] > shape[k])
        return emitOpError("inside qla.parallel, the indices are the map's index arguments in order, each plus a "
                           "constant, inside the tile");
    }
  }
  return success();
}

LogicalResult VarOp::verify() {
  if (getInit().getType() != getType().getValueType())
    return emitOpError("initializer type must be the variable's type");
  return success();
}

LogicalResult VarSetOp::verify() {
  if (getValue().getType() != getVar().getType().getValueType())
    return emitOpError("value type must be the variable's type");
  if ((*this)->getParentOfType<ParallelOp>())
    return emitOpError("variables cannot be assigned inside qla.parallel");
  return success();
}

bool InvUnitLowerOp::inRegisters(int64_t warpgroups) {
  auto s = getSrc().getType();
  return warpgroups == 1 && getBlocks() && *getBlocks() == 16 && s.getShape()[0] == 64 &&
         s.getLayout() == FragType::Acc;
}

bool InvUnitLowerOp::mmaMerged(int64_t warpgroups) {
  auto s = getSrc().getType();
  return warpgroups == 1 && getF16Operands() && !getBlocks() && s.getShape()[0] == 64 &&
         s.getLayout() == FragType::Acc;
}

LogicalResult InvUnitLowerOp::verify() {
  auto s = getSrc().getType(), d = getDst().getType();
  if (s.getShape().size() != 2 || s.getShape()[0] != s.getShape()[1])
    return emitOpError("needs a square 2-D fragment");
  if (s.getShape() != d.getShape()) return emitOpError("source and result shapes differ");
  if (!s.getElementType().isF32() || !d.getElementType().isF32())
    return emitOpError("works on f32 fragments");
  if (auto b = getBlocks())
    if (*b < 1 || s.getShape()[0] % *b != 0)
      return emitOpError("blocks = ") << *b << " must divide the extent " << s.getShape()[0];
  if (getF16Operands() && getBlocks()) return emitOpError("takes blocks or f16_operands, not both");
  if (getF16Operands() && s.getShape()[0] != 64)
    return emitOpError("with f16_operands needs a 64 x 64 fragment, not ") << s.getShape()[0] << " x " << s.getShape()[0];
  return success();
}

LogicalResult PipelineOp::verify() {
  Block &b = getBody().front();
  if (b.getNumArguments() != 1 || !b.getArgument(0).getType().isIndex())
    return emitOpError("body takes the induction variable (index)");
  return success();
}

LogicalResult RoleOp::verify() {
  if (getWgBegin() < 0 || getWgEnd() < getWgBegin())
    return emitOpError("bad warpgroup range ") << getWgBegin() << ".." << getWgEnd();
  if (getRegs() != 0 && (getRegs() < 24 || getRegs() > 256 || getRegs() % 8 != 0))
    return emitOpError("register budget must be a multiple of 8 in [24, 256], got ") << getRegs();
  if ((*this)->getParentOfType<RoleOp>())
    return emitOpError("roles do not nest");
  auto fn = (*this)->getParentOfType<func::FuncOp>();
  if (!fn) return success();
  if (auto th = fn->getAttrOfType<IntegerAttr>(kThreadsAttr))
    if ((getWgEnd() + 1) * 128 > th.getInt())
      return emitOpError("warpgroup ") << getWgEnd() << " does not exist with " << th.getInt()
                                       << " threads";
  // Roles run concurrently on disjoint warpgroups. Compare with the roles
  // before this one in the function, so an overlap is reported once, at the
  // later role (as the front end does).
  RoleOp clash;
  fn.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op == getOperation()) return WalkResult::interrupt();
    auto r = dyn_cast<RoleOp>(op);
    if (!r) return WalkResult::advance();
    if (r.getWgBegin() <= getWgEnd() && getWgBegin() <= r.getWgEnd()) {
      clash = r;
      return WalkResult::interrupt();
    }
    return WalkResult::skip();  // roles do not nest
  });
  if (clash)
    return emitOpError("role '") << getName() << "' overlaps role '" << clash.getName()
                                 << "' (both use warpgroup " << std::max(getWgBegin(), clash.getWgBegin())
                                 << ")";
  return success();
}

LogicalResult ChannelOp::verify() {
  auto t = getType();
  if (t.getDepth() < 1) return emitOpError("depth must be at least 1");
  if (t.getSlotTypes().empty()) return emitOpError("a slot holds at least one tile");
  for (Type s : t.getSlotTypes())
    if (!isa<SharedType>(s)) return emitOpError("slots hold shared tiles, got ") << s;
  // Producers and consumers: puts in exactly one role, gets in one or more
  // roles (the producer among them where it reads back its own slots).
  RoleOp putRole;
  SmallVector<RoleOp> getRoles;
  bool hasPut = false;
  for (Operation *user : getResult().getUsers()) {
    auto role = user->getParentOfType<RoleOp>();
    if (isa<PutOp>(user)) {
      if (hasPut && role != putRole) return user->emitOpError("puts to channel '") << getName() << "' from two roles";
      hasPut = true;
      putRole = role;
    } else if (isa<GetOp>(user)) {
      getRoles.push_back(role);
    }
  }
  if (!hasPut || getRoles.empty())
    return emitOpError("channel '") << getName() << "' needs a put and a get";
  return success();
}

static LogicalResult verifySlotBlock(Operation *op, ChannelType ch, Region &r) {
  Block &b = r.front();
  if (b.getNumArguments() != ch.getSlotTypes().size())
    return op->emitOpError("binds ") << b.getNumArguments() << " tiles but each slot holds "
                                     << ch.getSlotTypes().size();
  for (auto [a, t] : llvm::zip(b.getArgumentTypes(), ch.getSlotTypes()))
    if (a != t) return op->emitOpError("slot tile type mismatch: ") << a << " vs " << t;
  if (!op->getParentOfType<RoleOp>())
    return op->emitOpError("is only valid inside a qla.role");
  return success();
}

LogicalResult PutOp::verify() {
  if (failed(verifySlotBlock(*this, getChannel().getType(), getBody()))) return failure();
  Block &body = getBody().front();
  auto args = body.getArguments();
  // The tile a load or copy of the body writes, if it is one.
  auto written = [](Operation *o) -> Value {
    if (auto l = dyn_cast<LoadOp>(o)) return l.getDst();
    if (auto c = dyn_cast<CopyOp>(o)) return c.getDst();
    return {};
  };
  // A fragment of the put (staging: allocated in its body).
  auto staged = [&](Value v) {
    auto a = v.getDefiningOp<AllocFragOp>();
    return a && a->getBlock() == &body;
  };
  for (Operation &o : body.without_terminator()) {
    if (o.hasTrait<OpTrait::ConstantLike>() || isa<arith::ArithDialect>(o.getDialect()) || isa<AllocFragOp>(o))
      continue;
    if (Value dst = written(&o)) {
      if (!llvm::is_contained(args, dst) && !staged(dst))
        return o.emitOpError("in a put must write one of the slot's tiles or a fragment allocated in the put");
      if (auto c = dyn_cast<CopyOp>(o); c && llvm::is_contained(args, c.getSrc()))
        return o.emitOpError("in a put cannot read the slot's tiles");
      continue;
    }
    // Staging: fills, casts and maps of the put's own fragments.
    Value dst;
    if (auto f = dyn_cast<FillOp>(o)) dst = f.getDst();
    else if (auto c = dyn_cast<CastOp>(o)) dst = c.getDst();
    if (dst) {
      if (!staged(dst)) return o.emitOpError("in a put must write a fragment allocated in the put");
      continue;
    }
    if (auto p = dyn_cast<ParallelOp>(o)) {
      WalkResult r = p.getBody().walk([&](Operation *in) {
        if (auto w = dyn_cast<ElemWriteOp>(in); w && !staged(w.getFrag())) {
          w.emitOpError("in a put must write a fragment allocated in the put");
          return WalkResult::interrupt();
        }
        for (Value v : in->getOperands())
          if (llvm::is_contained(args, v)) {
            in->emitOpError("in a put cannot read the slot's tiles");
            return WalkResult::interrupt();
          }
        return WalkResult::advance();
      });
      if (r.wasInterrupted()) return failure();
      continue;
    }
    return o.emitOpError("is not allowed in a put: a put copies global tiles, fragments or shared tiles into its "
                         "slot, staging them in fragments allocated in the put (loads, fills, casts, maps)");
  }
  // Every slot tile is filled exactly once: the slot's byte count is armed
  // for all of them, so a missing copy would hang the consumer. Copies into
  // sub-tiles (box) of a 2-D slot tile count when they cover it exactly
  // once: disjoint, their areas summing to the tile's.
  for (BlockArgument arg : args) {
    int writes = 0;
    int64_t area = 0;
    SmallVector<ArrayRef<int64_t>> boxes;
    for (Operation *u : arg.getUsers()) {
      if (written(u) != arg) continue;
      auto c = dyn_cast<CopyOp>(u);
      if (!c || !c.getBox()) {
        ++writes;
        continue;
      }
      ArrayRef<int64_t> b = *c.getBox();
      for (ArrayRef<int64_t> o : boxes)
        if (b[0] < o[0] + o[2] && o[0] < b[0] + b[2] && b[1] < o[1] + o[3] && o[1] < b[1] + b[3])
          return emitOpError("copies into overlapping sub-tiles of slot tile #") << arg.getArgNumber();
      boxes.push_back(b);
      area += b[2] * b[3];
    }
    if (!boxes.empty()) {
      auto shape = cast<SharedType>(arg.getType()).getShape();
      if (writes != 0 || area != shape[0] * shape[1])
        return emitOpError("must copy into each slot tile exactly once; the sub-tiles written into tile #")
               << arg.getArgNumber() << " do not cover it";
      continue;
    }
    if (writes != 1)
      return emitOpError("must copy into each slot tile exactly once; tile #")
             << arg.getArgNumber() << " is written " << writes << " time(s)";
  }
  return success();
}

LogicalResult GetOp::verify() {
  return verifySlotBlock(*this, getChannel().getType(), getBody());
}

#define GET_OP_CLASSES
#include "dialects/qla/IR/QlaOps.cpp.inc"
