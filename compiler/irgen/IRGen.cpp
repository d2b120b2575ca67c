// AST → qla IR. Scalars are `index` (ints), `f32` (floats) or `i1` (bools);
// tiles are buffers (alloc_shared / alloc_frag) that statements read and write.
#include "compiler/irgen/IRGen.h"

#include <functional>

#include "dialects/qla/IR/QlaDialect.h"
#include "llvm/ADT/DenseMap.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::qla;
namespace fe = ::qla::fe;

namespace qla::compiler {
namespace {

class IRGen {
 public:
  IRGen(MLIRContext *ctx, std::string file) : ctx_(ctx), b_(ctx), file_(std::move(file)) {}

  LogicalResult build(const fe::KernelDecl &k, ModuleOp module);

 private:
  MLIRContext *ctx_;
  OpBuilder b_;
  std::string file_;
  llvm::DenseMap<const fe::Decl *, Value> values_;
  const fe::ParallelStmt *parallel_ = nullptr;  // the enclosing parallel block
  Block *parallelBlock_ = nullptr;
  bool failed_ = false;

  Location loc(const fe::SourceLoc &l) {
    return FileLineColLoc::get(ctx_, l.file.empty() ? file_ : l.file, l.line, l.col);
  }
  // The location with the source name of what it defines: the emitter names
  // the C++ variable after it (`acc_19`), see docs/internals.md.
  // (A name a fn's expansion declared, NAME'N, is named NAME: the C++ names
  // are unique by their `_N` suffix anyway.)
  Location named(Location l, StringRef name) {
    name = name.split('\'').first;
    return name.empty() ? l : (Location)NameLoc::get(StringAttr::get(ctx_, name), l);
  }
  // Names the op that computes a `let`'s value, unless it already has a name
  // (`let b = a`) or is not an op of its own (a block argument, a constant the
  // emitter prints as a literal).
  void nameValue(Value v, StringRef name) {
    Operation *def = v.getDefiningOp();
    if (!def || def->getNumResults() != 1 || isa<NameLoc>(def->getLoc()) || isa<arith::ConstantOp>(def)) return;
    def->setLoc(named(def->getLoc(), name));
  }
  void error(const fe::SourceLoc &l, const Twine &msg) {
    emitError(loc(l)) << msg;
    failed_ = true;
  }
  Type dtype(DType t) {
    switch (t) {
      case DType::BF16: return b_.getBF16Type();
      case DType::F16: return b_.getF16Type();
      case DType::F32: return b_.getF32Type();
      case DType::I32: return b_.getI32Type();
      case DType::I64: return b_.getI64Type();
    }
    return b_.getF32Type();
  }
  Type scalarType(fe::ScalarType t) {
    switch (t) {
      case fe::ScalarType::Int: return b_.getIndexType();
      case fe::ScalarType::Float: return b_.getF32Type();
      default: return b_.getI1Type();
    }
  }
  Value constant(const fe::ConstValue &v, Location l) {
    switch (v.type) {
      case fe::ScalarType::Int: return arith::ConstantIndexOp::create(b_, l, v.i);
      case fe::ScalarType::Float: return arith::ConstantOp::create(b_, l, b_.getF32FloatAttr((float)v.f));
      default: return arith::ConstantIntOp::create(b_, l, b_.getI1Type(), v.b ? 1 : 0);
    }
  }
  Value lookup(const fe::Decl *d, const fe::SourceLoc &at) {
    auto it = values_.find(d);
    if (it == values_.end()) {
      error(at, "internal: '" + (d ? d->name : std::string("?")) + "' has no value here");
      return {};
    }
    return it->second;
  }
  Value toF32(Value v, Location l) {
    if (v.getType().isF32()) return v;
    Value i = arith::IndexCastOp::create(b_, l, b_.getI32Type(), v);
    return arith::SIToFPOp::create(b_, l, b_.getF32Type(), i);
  }

  Value genExpr(const fe::Expr &e);
  Value genCall(const fe::CallExpr &c);
  void genBlock(const fe::Block &blk);
  void genStmt(const fe::Stmt &s);
  void genFragInit(Value frag, const fe::FragInit &init, const fe::SourceLoc &at);
  void genCopy(const fe::CopyStmt &c);
  void genPrefetch(const fe::PrefetchStmt &p);
  SmallVector<Value> sliceStarts(const fe::TileRef &r);
  Type tileType(const fe::TileDecl &t);
};

Type IRGen::tileType(const fe::TileDecl &t) {
  if (t.space() == fe::MemSpace::Frag)
    return FragType::get(ctx_, t.shape, dtype(t.dtype), FragType::Unassigned, 0);
  return SharedType::get(ctx_, t.shape, dtype(t.dtype), 0);
}

Value IRGen::genExpr(const fe::Expr &e) {
  Location l = loc(e.loc);
  if (e.isConst() && e.kind != fe::ExprKind::Elem) return constant(*e.value, l);
  switch (e.kind) {
    case fe::ExprKind::Name: {
      auto &n = static_cast<const fe::NameExpr &>(e);
      if (auto p = fe::as<fe::ParamDecl>(n.decl)) return constant(p->value, l);
      if (fe::is<fe::VarDecl>(n.decl)) {
        Value var = lookup(n.decl, e.loc);
        return var ? VarGetOp::create(b_, l, var).getResult() : Value();
      }
      return lookup(n.decl, e.loc);
    }
    case fe::ExprKind::BlockIdx:
      return BlockIdOp::create(b_, l, b_.getIndexType(), b_.getI32IntegerAttr(static_cast<const fe::BlockIdxExpr &>(e).dim));
    case fe::ExprKind::Unary: {
      auto &u = static_cast<const fe::UnaryExpr &>(e);
      Value x = genExpr(*u.operand);
      if (!x) return {};
      if (u.op == fe::UnaryOp::Not)
        return arith::XOrIOp::create(b_, l, x, arith::ConstantIntOp::create(b_, l, b_.getI1Type(), 1));
      if (x.getType().isF32()) return arith::NegFOp::create(b_, l, x);
      return arith::SubIOp::create(b_, l, arith::ConstantIndexOp::create(b_, l, 0), x);
    }
    case fe::ExprKind::Binary: {
      auto &bin = static_cast<const fe::BinaryExpr &>(e);
      Value a = genExpr(*bin.lhs), c = genExpr(*bin.rhs);
      if (!a || !c) return {};
      bool f = a.getType().isF32();
      using B = fe::BinaryOp;
      switch (bin.op) {
        case B::Add: return f ? (Value)arith::AddFOp::create(b_, l, a, c) : arith::AddIOp::create(b_, l, a, c);
        case B::Sub: return f ? (Value)arith::SubFOp::create(b_, l, a, c) : arith::SubIOp::create(b_, l, a, c);
        case B::Mul: return f ? (Value)arith::MulFOp::create(b_, l, a, c) : arith::MulIOp::create(b_, l, a, c);
        case B::Div: return f ? (Value)arith::DivFOp::create(b_, l, a, c) : arith::DivSIOp::create(b_, l, a, c);
        case B::Rem: return arith::RemSIOp::create(b_, l, a, c);
        case B::And: return arith::AndIOp::create(b_, l, a, c);
        case B::Or: return arith::OrIOp::create(b_, l, a, c);
        default: break;
      }
      if (f) {
        using P = arith::CmpFPredicate;
        P p = bin.op == B::Lt ? P::OLT : bin.op == B::Le ? P::OLE : bin.op == B::Gt ? P::OGT
            : bin.op == B::Ge ? P::OGE : bin.op == B::Eq ? P::OEQ : P::UNE;
        return arith::CmpFOp::create(b_, l, p, a, c);
      }
      using P = arith::CmpIPredicate;
      P p = bin.op == B::Lt ? P::slt : bin.op == B::Le ? P::sle : bin.op == B::Gt ? P::sgt
          : bin.op == B::Ge ? P::sge : bin.op == B::Eq ? P::eq : P::ne;
      return arith::CmpIOp::create(b_, l, p, a, c);
    }
    case fe::ExprKind::Select: {
      auto &s = static_cast<const fe::SelectExpr &>(e);
      if (s.cond->isConst()) return genExpr(s.cond->value->b ? *s.thenExpr : *s.elseExpr);
      Value c = genExpr(*s.cond), t = genExpr(*s.thenExpr), f = genExpr(*s.elseExpr);
      if (!c || !t || !f) return {};
      return arith::SelectOp::create(b_, l, c, t, f);
    }
    case fe::ExprKind::Call: return genCall(static_cast<const fe::CallExpr &>(e));
    case fe::ExprKind::Convert: {
      Value x = genExpr(*static_cast<const fe::ConvertExpr &>(e).operand);
      return x ? toF32(x, l) : Value();
    }
    case fe::ExprKind::GlobalElem: {
      auto &ge = static_cast<const fe::GlobalElemExpr &>(e);
      Value g = lookup(ge.tensor, e.loc);
      SmallVector<Value> idx;
      for (auto &i : ge.indices) idx.push_back(genExpr(*i));
      if (!g || llvm::any_of(idx, [](Value v) { return !v; })) return {};
      Type rt = e.type == fe::ScalarType::Float ? (Type)b_.getF32Type() : (Type)b_.getIndexType();
      return GlobalReadOp::create(b_, l, rt, g, idx);
    }
    case fe::ExprKind::FragPick: {
      auto &fp = static_cast<const fe::FragPickExpr &>(e);
      Value f = lookup(fp.frag, e.loc);
      SmallVector<Value> idx;
      for (auto &i : fp.indices) idx.push_back(genExpr(*i));
      if (!f || llvm::any_of(idx, [](Value v) { return !v; })) return {};
      Type rt = e.type == fe::ScalarType::Float ? (Type)b_.getF32Type() : (Type)b_.getIndexType();
      return FragPickOp::create(b_, l, rt, f, idx);
    }
    case fe::ExprKind::SlotPick: {
      auto &sp = static_cast<const fe::SlotPickExpr &>(e);
      Value t = lookup(sp.slot, e.loc);
      SmallVector<Value> idx;
      for (auto &i : sp.indices) idx.push_back(genExpr(*i));
      if (!t || llvm::any_of(idx, [](Value v) { return !v; })) return {};
      return SlotPickOp::create(b_, l, b_.getF32Type(), t, idx);
    }
    case fe::ExprKind::Elem: {
      auto &el = static_cast<const fe::ElemExpr &>(e);
      Value frag = lookup(el.frag, e.loc);
      if (!frag || !parallelBlock_) return {};
      SmallVector<Value> idx;
      for (int d : el.parallelDims) idx.push_back(parallelBlock_->getArgument(d));
      Type vt = fe::elementScalarType(el.frag->dtype) == fe::ScalarType::Int ? (Type)b_.getIndexType()
                                                                            : (Type)b_.getF32Type();
      return ElemReadOp::create(b_, l, vt, frag, idx);
    }
    default: break;
  }
  error(e.loc, "internal: unexpected expression");
  return {};
}

Value IRGen::genCall(const fe::CallExpr &c) {
  Location l = loc(c.loc);
  SmallVector<Value> a;
  for (auto &arg : c.args) {
    a.push_back(genExpr(*arg));
    if (!a.back()) return {};
  }
  using BI = fe::Builtin;
  bool f = !a.empty() && a[0].getType().isF32();
  switch (c.builtin) {
    case BI::Cdiv: return arith::CeilDivSIOp::create(b_, l, a[0], a[1]);
    case BI::Min: return f ? (Value)arith::MinimumFOp::create(b_, l, a[0], a[1]) : arith::MinSIOp::create(b_, l, a[0], a[1]);
    case BI::Max: return f ? (Value)arith::MaximumFOp::create(b_, l, a[0], a[1]) : arith::MaxSIOp::create(b_, l, a[0], a[1]);
    case BI::Exp: return math::ExpOp::create(b_, l, a[0]);
    case BI::Exp2: return math::Exp2Op::create(b_, l, a[0]);
    // fast_exp2: approximate functions allowed (`afn`), MUFU ex2.approx.ftz.
    case BI::FastExp2:
      return math::Exp2Op::create(b_, l, a[0], arith::FastMathFlagsAttr::get(b_.getContext(), arith::FastMathFlags::afn));
    case BI::Log: return math::LogOp::create(b_, l, a[0]);
    case BI::Log2: return math::Log2Op::create(b_, l, a[0]);
    case BI::Sqrt: return math::SqrtOp::create(b_, l, a[0]);
    case BI::Rsqrt: return math::RsqrtOp::create(b_, l, a[0]);
    case BI::Sigmoid: {
      Value one = arith::ConstantOp::create(b_, l, b_.getF32FloatAttr(1.0f));
      Value e = math::ExpOp::create(b_, l, arith::NegFOp::create(b_, l, a[0]));
      return arith::DivFOp::create(b_, l, one, arith::AddFOp::create(b_, l, one, e));
    }
    case BI::Abs:
      if (f) return math::AbsFOp::create(b_, l, a[0]);
      return arith::MaxSIOp::create(b_, l, a[0], arith::SubIOp::create(b_, l, arith::ConstantIndexOp::create(b_, l, 0), a[0]));
    case BI::ToF32: return toF32(a[0], l);
    case BI::ToI32:
      if (!f) return a[0];
      return arith::IndexCastOp::create(b_, l, b_.getIndexType(), arith::FPToSIOp::create(b_, l, b_.getI32Type(), a[0]));
    default: break;
  }
  error(c.loc, "unknown function '" + c.callee + "'");
  return {};
}

SmallVector<Value> IRGen::sliceStarts(const fe::TileRef &r) {
  SmallVector<Value> starts;
  for (auto &s : r.slices) starts.push_back(genExpr(*s.start));
  return starts;
}

// `until` limits of a slice: the values and the global dims they bound.
static void sliceLimits(IRGen &gen, const fe::TileRef &r, SmallVector<Value> &limits, SmallVector<int64_t> &dims,
                        const std::function<Value(const fe::Expr &)> &genExpr) {
  for (auto [d, s] : llvm::enumerate(r.slices))
    if (s.limit) {
      limits.push_back(genExpr(*s.limit));
      dims.push_back((int64_t)d);
    }
}

void IRGen::genCopy(const fe::CopyStmt &c) {
  Location l = loc(c.loc);
  using K = fe::CopyKind;
  switch (c.copyKind) {
    case K::GlobalToShared:
    case K::GlobalToFrag: {
      Value g = lookup(c.src.tensor(), c.src.loc), t = lookup(c.dst.tile(), c.dst.loc);
      SmallVector<Value> off = sliceStarts(c.src);
      if (!g || !t || llvm::any_of(off, [](Value v) { return !v; })) return;
      SmallVector<int64_t> dropped(c.src.droppedDims.begin(), c.src.droppedDims.end());
      SmallVector<Value> lim;
      SmallVector<int64_t> limDims;
      sliceLimits(*this, c.src, lim, limDims, [&](const fe::Expr &x) { return genExpr(x); });
      if (llvm::any_of(lim, [](Value v) { return !v; })) return;
      auto ld =
          LoadOp::create(b_, l, g, off, t, lim, b_.getDenseI64ArrayAttr(dropped), b_.getDenseI64ArrayAttr(limDims));
      if (c.transposed()) ld.setTranspose(true);
      return;
    }
    case K::FragToGlobal:
    case K::SharedToGlobal: {
      Value t = lookup(c.src.tile(), c.src.loc), g = lookup(c.dst.tensor(), c.dst.loc);
      SmallVector<Value> off = sliceStarts(c.dst);
      if (!g || !t || llvm::any_of(off, [](Value v) { return !v; })) return;
      SmallVector<int64_t> dropped(c.dst.droppedDims.begin(), c.dst.droppedDims.end());
      SmallVector<Value> lim;
      SmallVector<int64_t> limDims;
      sliceLimits(*this, c.dst, lim, limDims, [&](const fe::Expr &x) { return genExpr(x); });
      if (llvm::any_of(lim, [](Value v) { return !v; })) return;
      auto st =
          StoreOp::create(b_, l, t, g, off, lim, b_.getDenseI64ArrayAttr(dropped), b_.getDenseI64ArrayAttr(limDims));
      if (c.transposed()) st.setTranspose(true);
      if (c.add) st.setAccumulate(true);
      return;
    }
    case K::SharedToFrag:
    case K::FragToShared:
    case K::SharedToShared: {
      Value s = lookup(c.src.tile(), c.src.loc), d = lookup(c.dst.tile(), c.dst.loc);
      if (s && d) {
        auto cp = CopyOp::create(b_, l, s, d, /*transpose=*/nullptr, /*box=*/nullptr);
        if (c.transposed()) cp.setTranspose(true);
        for (const fe::TileRef *r : {&c.src, &c.dst})
          if (r->subTile) cp.setBoxAttr(b_.getDenseI64ArrayAttr(r->box));
      }
      return;
    }
  }
}

void IRGen::genPrefetch(const fe::PrefetchStmt &p) {
  Value g = lookup(p.src.tensor(), p.src.loc);
  SmallVector<Value> off = sliceStarts(p.src);
  if (!g || llvm::any_of(off, [](Value v) { return !v; })) return;
  SmallVector<Value> lim;
  SmallVector<int64_t> limDims;
  sliceLimits(*this, p.src, lim, limDims, [&](const fe::Expr &x) { return genExpr(x); });
  if (llvm::any_of(lim, [](Value v) { return !v; })) return;
  SmallVector<int64_t> dropped(p.src.droppedDims.begin(), p.src.droppedDims.end());
  PrefetchOp::create(b_, loc(p.loc), g, off, lim, b_.getDenseI64ArrayAttr(p.src.sliceShape),
                     b_.getDenseI64ArrayAttr(dropped), b_.getDenseI64ArrayAttr(limDims));
}

void IRGen::genFragInit(Value frag, const fe::FragInit &init, const fe::SourceLoc &at) {
  Location l = loc(init.loc.line ? init.loc : at);
  using K = fe::FragInit::Kind;
  static const ReduceKind kinds[] = {ReduceKind::add, ReduceKind::max, ReduceKind::min};
  switch (init.kind) {
    case K::None: return;
    case K::Fill: {
      Value v = genExpr(*init.fill);
      if (v) FillOp::create(b_, l, frag, v);
      return;
    }
    case K::InvUnitLower: {
      Value src = lookup(init.source, init.sourceLoc);
      if (src) {
        InvUnitLowerOp::create(b_, l, src, frag,
                               init.blocks ? b_.getI64IntegerAttr(init.blocks) : IntegerAttr(),
                               init.f16Operands ? b_.getUnitAttr() : UnitAttr());
      }
      return;
    }
    case K::Reduce:
    case K::Scan:
    case K::Cast: {
      Value src = lookup(init.source, init.sourceLoc);
      if (!src) return;
      if (init.kind == K::Cast) CastOp::create(b_, l, src, frag);
      else if (init.kind == K::Reduce)
        ReduceOp::create(b_, l, ReduceKindAttr::get(ctx_, kinds[(int)init.op]), src, frag, b_.getI64IntegerAttr(init.dim));
      else
        ScanOp::create(b_, l, ReduceKindAttr::get(ctx_, kinds[(int)init.op]), src, frag, b_.getI64IntegerAttr(init.dim));
      return;
    }
  }
}

void IRGen::genBlock(const fe::Block &blk) {
  for (auto &s : blk.stmts) {
    genStmt(*s);
    if (failed_) return;
  }
}

void IRGen::genStmt(const fe::Stmt &s) {
  Location l = loc(s.loc);
  using SK = fe::StmtKind;
  switch (s.kind) {
    case SK::Let: {
      auto &let = static_cast<const fe::LetDecl &>(s);
      Value v = genExpr(*let.init);
      if (!v) return;
      nameValue(v, let.name);
      values_[static_cast<const fe::Decl *>(&let)] = v;
      return;
    }
    case SK::Shared: {
      auto &sh = static_cast<const fe::SharedDecl &>(s);
      auto op = AllocSharedOp::create(b_, named(l, sh.name), tileType(sh), b_.getI64IntegerAttr(1), IntegerAttr());
      values_[static_cast<const fe::Decl *>(&sh)] = op;
      return;
    }
    case SK::Frag: {
      auto &fr = static_cast<const fe::FragDecl &>(s);
      Value v = AllocFragOp::create(b_, named(l, fr.name), tileType(fr));
      values_[static_cast<const fe::Decl *>(&fr)] = v;
      genFragInit(v, fr.init, s.loc);
      return;
    }
    case SK::FragAssign: {
      auto &fa = static_cast<const fe::FragAssignStmt &>(s);
      Value v = lookup(fa.frag, s.loc);
      if (v) genFragInit(v, fa.init, s.loc);
      return;
    }
    case SK::Copy: return genCopy(static_cast<const fe::CopyStmt &>(s));
    case SK::Prefetch: return genPrefetch(static_cast<const fe::PrefetchStmt &>(s));
    case SK::Gemm: {
      auto &g = static_cast<const fe::GemmStmt &>(s);
      Value a = lookup(g.a.decl, g.a.loc), bb = lookup(g.b.decl, g.b.loc), c = lookup(g.c, s.loc);
      if (!a || !bb || !c) return;
      auto box = [&](const fe::GemmOperand &o) { return o.sliced() ? b_.getDenseI64ArrayAttr(o.box) : nullptr; };
      GemmOp::create(b_, loc(g.gemmLoc), a, bb, c, g.a.transposed, g.b.transposed, g.accumulate, box(g.a), box(g.b));
      return;
    }
    case SK::For: {
      auto &f = static_cast<const fe::ForStmt &>(s);
      Value lo = genExpr(*f.lo), hi = genExpr(*f.hi);
      if (!lo || !hi) return;
      Value one = arith::ConstantIndexOp::create(b_, l, 1);
      auto loop = scf::ForOp::create(b_, l, lo, hi, one);
      if (f.unroll) loop->setAttr("qla.unroll", b_.getUnitAttr());
      loop.getInductionVar().setLoc(named(l, f.var->name));
      values_[f.var.get()] = loop.getInductionVar();
      OpBuilder::InsertionGuard guard(b_);
      b_.setInsertionPoint(loop.getBody()->getTerminator());
      genBlock(f.body);
      return;
    }
    case SK::Pipeline: {
      auto &p = static_cast<const fe::PipelineStmt &>(s);
      Value lo = genExpr(*p.lo), hi = genExpr(*p.hi);
      if (!lo || !hi) return;
      auto op = PipelineOp::create(b_, l, lo, hi, b_.getI64IntegerAttr(p.numStages));
      OpBuilder::InsertionGuard guard(b_);
      Block *body = b_.createBlock(&op.getBody(), {}, {b_.getIndexType()}, {named(l, p.var->name)});
      values_[p.var.get()] = body->getArgument(0);
      b_.setInsertionPointToEnd(body);
      genBlock(p.body);
      YieldOp::create(b_, l);
      return;
    }
    case SK::Parallel: {
      auto &p = static_cast<const fe::ParallelStmt &>(s);
      auto op = ParallelOp::create(b_, l, b_.getDenseI64ArrayAttr(p.shape));
      SmallVector<Type> types(p.shape.size(), b_.getIndexType());
      SmallVector<Location> locs;
      for (auto &v : p.vars) locs.push_back(named(l, v->name));
      OpBuilder::InsertionGuard guard(b_);
      Block *body = b_.createBlock(&op.getBody(), {}, types, locs);
      for (auto [i, v] : llvm::enumerate(p.vars)) values_[v.get()] = body->getArgument(i);
      auto savedPar = parallel_;
      auto savedBlk = parallelBlock_;
      parallel_ = &p;
      parallelBlock_ = body;
      b_.setInsertionPointToEnd(body);
      genBlock(p.body);
      YieldOp::create(b_, l);
      parallel_ = savedPar;
      parallelBlock_ = savedBlk;
      return;
    }
    case SK::ElemAssign: {
      auto &ea = static_cast<const fe::ElemAssignStmt &>(s);
      Value frag = lookup(ea.frag, s.loc);
      Value v = genExpr(*ea.value);
      if (!frag || !v || !parallelBlock_) return;
      if (ea.rowSum) {  // v[i] += e: the emitter sums e over the row
        auto w = ElemWriteOp::create(b_, l, v, frag, ValueRange{parallelBlock_->getArgument(0)});
        w->setAttr("qla.row_sum", b_.getUnitAttr());
        return;
      }
      SmallVector<Value> idx(parallelBlock_->getArguments().begin(), parallelBlock_->getArguments().end());
      if (ea.op != fe::AssignOp::Set) {
        Value old = ElemReadOp::create(b_, l, v.getType(), frag, idx);
        bool f = v.getType().isF32();
        if (ea.op == fe::AssignOp::Add) v = f ? (Value)arith::AddFOp::create(b_, l, old, v) : arith::AddIOp::create(b_, l, old, v);
        else if (ea.op == fe::AssignOp::Sub) v = f ? (Value)arith::SubFOp::create(b_, l, old, v) : arith::SubIOp::create(b_, l, old, v);
        else v = f ? (Value)arith::MulFOp::create(b_, l, old, v) : arith::MulIOp::create(b_, l, old, v);
      }
      ElemWriteOp::create(b_, l, v, frag, idx);
      return;
    }
    case SK::If: {
      auto &i = static_cast<const fe::IfStmt &>(s);
      if (i.cond->isConst()) {  // only the taken side is built
        if (i.cond->value->b) genBlock(i.thenBlock);
        else if (i.elseBlock) genBlock(*i.elseBlock);
        return;
      }
      Value c = genExpr(*i.cond);
      if (!c) return;
      auto op = scf::IfOp::create(b_, l, c, /*withElseRegion=*/i.elseBlock != nullptr);
      OpBuilder::InsertionGuard guard(b_);
      b_.setInsertionPoint(op.thenBlock()->getTerminator());
      genBlock(i.thenBlock);
      if (i.elseBlock) {
        b_.setInsertionPoint(op.elseBlock()->getTerminator());
        genBlock(*i.elseBlock);
      }
      return;
    }
    case SK::Role: {
      auto &r = static_cast<const fe::RoleStmt &>(s);
      if (r.absent) return;  // an empty warpgroup range: not in this specialization
      auto op = RoleOp::create(b_, l, b_.getStringAttr(r.name), b_.getI64IntegerAttr(r.wgFirst),
                                  b_.getI64IntegerAttr(r.wgLast), b_.getI64IntegerAttr(r.regs));
      if (r.turns) op->setAttr("turns", b_.getUnitAttr());
      if (r.partialWaits) op->setAttr("partial_waits", b_.getUnitAttr());
      if (r.freshAddresses > 0) op->setAttr("fresh_addresses", b_.getI64IntegerAttr(r.freshAddresses));
      OpBuilder::InsertionGuard guard(b_);
      Block *body = b_.createBlock(&op.getBody());
      b_.setInsertionPointToEnd(body);
      genBlock(r.body);
      YieldOp::create(b_, l);
      return;
    }
    case SK::Channel: {
      auto &c = static_cast<const fe::ChannelDecl &>(s);
      SmallVector<Type> slots;
      for (auto &f : c.fields) slots.push_back(SharedType::get(ctx_, f.shape, dtype(f.dtype), 0));
      auto op = ChannelOp::create(b_, l, ChannelType::get(ctx_, slots, (unsigned)c.depthValue), b_.getStringAttr(c.name));
      // `over(x)`: the slot shares channel x's bytes (qla-lower-channels).
      if (c.over) op->setAttr("qla.over", b_.getStringAttr(c.over->name));
      values_[static_cast<const fe::Decl *>(&c)] = op;
      return;
    }
    case SK::Var: {
      auto &v = static_cast<const fe::VarDecl &>(s);
      Value init = genExpr(*v.init);
      if (!init) return;
      auto op = VarOp::create(b_, named(l, v.name), VarType::get(ctx_, init.getType()), init);
      values_[static_cast<const fe::Decl *>(&v)] = op;
      return;
    }
    case SK::Assign: {
      auto &a = static_cast<const fe::AssignStmt &>(s);
      Value var = lookup(a.var, s.loc);
      Value v = genExpr(*a.value);
      if (!var || !v) return;
      if (a.op != fe::AssignOp::Set) {
        Value old = VarGetOp::create(b_, l, var);
        bool f = v.getType().isF32();
        if (a.op == fe::AssignOp::Add) v = f ? (Value)arith::AddFOp::create(b_, l, old, v) : arith::AddIOp::create(b_, l, old, v);
        else if (a.op == fe::AssignOp::Sub) v = f ? (Value)arith::SubFOp::create(b_, l, old, v) : arith::SubIOp::create(b_, l, old, v);
        else v = f ? (Value)arith::MulFOp::create(b_, l, old, v) : arith::MulIOp::create(b_, l, old, v);
      }
      VarSetOp::create(b_, l, v, var);
      return;
    }
    case SK::Put:
    case SK::Get: {
      auto &ss = static_cast<const fe::SlotStmt &>(s);
      Value ch = lookup(ss.channel, ss.channelLoc);
      if (!ch) return;
      auto ct = cast<ChannelType>(ch.getType());
      Operation *op = ss.isPut() ? PutOp::create(b_, l, ch).getOperation() : GetOp::create(b_, l, ch).getOperation();
      SmallVector<Location> locs(ct.getSlotTypes().size(), l);
      for (auto [i, bnd] : llvm::enumerate(ss.bindings))
        if (i < locs.size()) locs[i] = named(l, bnd->name);
      OpBuilder::InsertionGuard guard(b_);
      Block *body = b_.createBlock(&op->getRegion(0), {}, ct.getSlotTypes(), locs);
      for (auto [i, bnd] : llvm::enumerate(ss.bindings)) values_[bnd.get()] = body->getArgument(i);
      b_.setInsertionPointToEnd(body);
      genBlock(ss.body);
      YieldOp::create(b_, l);
      return;
    }
  }
}

LogicalResult IRGen::build(const fe::KernelDecl &k, ModuleOp module) {
  b_.setInsertionPointToEnd(module.getBody());
  SmallVector<Type> argTypes;
  SmallVector<Attribute> names, tensorDims;
  SmallVector<bool> outputs;
  for (auto *t : k.tensors) {
    argTypes.push_back(GlobalType::get(ctx_, dtype(t->dtype), t->rank()));
    names.push_back(b_.getStringAttr(t->name));
    SmallVector<Attribute> dims;
    for (auto &d : t->dims)
      dims.push_back(b_.getStringAttr(d.isSymbolic() ? d.sym->name : std::to_string(d.literal)));
    tensorDims.push_back(b_.getArrayAttr(dims));
    outputs.push_back(t->isOutput);
  }
  for (auto &d : k.dims) {
    argTypes.push_back(b_.getIndexType());
    names.push_back(b_.getStringAttr(d->name));
  }
  for (auto *s : k.scalars) {
    argTypes.push_back(s->dtype == DType::I32 ? (Type)b_.getI32Type() : (Type)b_.getF32Type());
    names.push_back(b_.getStringAttr(s->name));
  }
  auto fn = func::FuncOp::create(b_, loc(k.loc), k.name, b_.getFunctionType(argTypes, {}));
  fn->setAttr(kKernelAttr, b_.getUnitAttr());
  fn->setAttr(kArgNamesAttr, b_.getArrayAttr(names));
  fn->setAttr(kTensorDimsAttr, b_.getArrayAttr(tensorDims));
  fn->setAttr(kOutputsAttr, b_.getDenseBoolArrayAttr(outputs));
  fn->setAttr(kThreadsAttr, b_.getI64IntegerAttr(k.numThreads));
  SmallVector<Attribute> grid;
  for (auto &g : k.gridStrings) grid.push_back(b_.getStringAttr(g));
  fn->setAttr(kGridAttr, b_.getArrayAttr(grid));
  fn->setAttr(kClusterAttr, b_.getDenseI64ArrayAttr({k.clusterDims[0], k.clusterDims[1], k.clusterDims[2]}));
  if (k.minBlocks > 1) fn->setAttr(kMinBlocksAttr, b_.getI64IntegerAttr(k.minBlocks));
  if (k.hasFollows) {
    SmallVector<int64_t> f(k.followsTensors.begin(), k.followsTensors.end());
    fn->setAttr(kFollowsAttr, b_.getDenseI64ArrayAttr(f));
  }
  fn->setAttr(kSourceAttr, b_.getStringAttr(file_));

  Block *entry = fn.addEntryBlock();
  b_.setInsertionPointToEnd(entry);
  size_t a = 0;
  for (auto *t : k.tensors) values_[t] = entry->getArgument(a++);
  for (auto &d : k.dims) values_[d.get()] = entry->getArgument(a++);
  for (auto *s : k.scalars) {
    Value v = entry->getArgument(a++);
    if (s->dtype == DType::I32)
      v = arith::IndexCastOp::create(b_, named(fn.getLoc(), s->name), b_.getIndexType(), v);
    values_[s] = v;
  }
  genBlock(k.body);
  func::ReturnOp::create(b_, fn.getLoc());
  // A channel whose puts and gets all sit in branches this specialization
  // does not take (a constant condition, built one side only) is left out:
  // no ring, no barriers. (Sema has rejected a channel the source never
  // uses; one side taken without the other stays an error of the verifier.)
  SmallVector<ChannelOp> unused;
  fn.walk([&](ChannelOp c) {
    if (c.getResult().use_empty()) unused.push_back(c);
  });
  for (ChannelOp c : unused) c.erase();
  return failed_ ? failure() : success();
}

}  // namespace

LogicalResult buildKernelIR(const fe::KernelDecl &kernel, const std::string &filename, ModuleOp module) {
  IRGen gen(module.getContext(), filename);
  return gen.build(kernel, module);
}

}  // namespace qla::compiler
