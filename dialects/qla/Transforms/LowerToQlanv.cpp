// Lowering to qlanv: gemm → wgmma chain, role → warpgroup region.
#include "dialects/qla/Transforms/Passes.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::qla {
#define GEN_PASS_DEF_QLALOWERTOQLANV
#include "dialects/qla/Transforms/Passes.h.inc"
}  // namespace mlir::qla

using namespace mlir;
using namespace mlir::qla;
using namespace mlir::qlanv;

namespace {

// Whether partial waits apply to `op`: everywhere with the pass option, else
// inside a role marked `partial_waits` (the language's role option).
bool partialAt(Operation *op, bool everywhere) {
  if (everywhere) return true;
  auto r = op->getParentOfType<RoleOp>();
  return r && r->hasAttr("partial_waits");
}

// Frags that a wgmma chain (fence, wgmma, commit, wait) reads or writes.
SmallVector<Value> chainFrags(WgmmaWaitOp wait) {
  SmallVector<Value> fs(wait.getFrags().begin(), wait.getFrags().end());
  for (Operation *o = wait->getPrevNode(); o && !isa<WgmmaWaitOp>(o); o = o->getPrevNode()) {
    if (auto f = dyn_cast<WgmmaFenceOp>(o)) {
      for (Value v : f.getFrags())
        if (!llvm::is_contained(fs, v)) fs.push_back(v);
      break;
    }
  }
  return fs;
}

// What may stand between two wgmma chains that share a wait: fragment
// allocations and pure, fragment-free `arith`.
bool chainGap(Operation *op) {
  if (isa<AllocFragOp>(op)) return true;
  return op->getNumRegions() == 0 && isMemoryEffectFree(op) && op->getDialect() &&
         op->getDialect()->getNamespace() == "arith" &&
         llvm::none_of(op->getOperandTypes(), [](Type t) { return isa<FragType>(t); });
}

// Independent gemms in a row share one wait, so their wgmma groups overlap:
// a wait followed (through fragment allocations and arithmetic that reads no
// fragment) by another chain that touches none of the first chain's
// fragments is dropped, and the later wait also covers the first chain's
// accumulator. Shared memory cannot change in between: only allocations and
// scalar arithmetic are stepped over.
//
// sharedA (with partial-waits): two chains that only read the same
// register-sourced A (Sᵀ cast once, multiplied by two operands) are
// independent too; only an accumulator of one that the other touches
// conflicts.
void mergeWaits(func::FuncOp fn, bool partialEverywhere) {
  SmallVector<WgmmaWaitOp> waits;
  fn.walk([&](WgmmaWaitOp w) { waits.push_back(w); });
  for (WgmmaWaitOp w : waits) {
    if (w.getPending() != 0) continue;
    const bool sharedA = partialAt(w, partialEverywhere);
    SmallVector<Value> fs = chainFrags(w);
    Operation *o = w->getNextNode();
    while (o && chainGap(o)) o = o->getNextNode();
    auto fence = dyn_cast_or_null<WgmmaFenceOp>(o);
    if (!fence) continue;
    auto mma = dyn_cast_or_null<WgmmaOp>(fence->getNextNode());
    auto commit = mma ? dyn_cast_or_null<WgmmaCommitOp>(mma->getNextNode()) : WgmmaCommitOp();
    auto next = commit ? dyn_cast_or_null<WgmmaWaitOp>(commit->getNextNode()) : WgmmaWaitOp();
    if (!next || next.getPending() != 0) continue;
    SmallVector<Value> nextFs = chainFrags(next);
    const bool conflict =
        sharedA ? llvm::any_of(next.getFrags(), [&](Value v) { return llvm::is_contained(fs, v); }) ||
                      llvm::any_of(w.getFrags(), [&](Value v) { return llvm::is_contained(nextFs, v); })
                : llvm::any_of(nextFs, [&](Value v) { return llvm::is_contained(fs, v); });
    // Products of the same shape into the same accumulator, from shared
    // operands, are ordered by the tensor cores themselves (PTX: no
    // wgmma.fence is needed between them), so the first need not complete
    // before the second is issued: `s += A1 B1; s += A2 B2` issues both.
    auto prevMma = [&]() -> WgmmaOp {
      auto c = dyn_cast_or_null<WgmmaCommitOp>(w->getPrevNode());
      return c ? dyn_cast_or_null<WgmmaOp>(c->getPrevNode()) : WgmmaOp();
    }();
    const bool sameAccumulator =
        prevMma && prevMma.getC() == mma.getC() && w.getFrags().size() == 1 && next.getFrags().size() == 1 &&
        w.getFrags()[0] == mma.getC() && next.getFrags()[0] == mma.getC() &&
        isa<SharedType>(prevMma.getA().getType()) && isa<SharedType>(mma.getA().getType()) &&
        prevMma.getA().getType() == mma.getA().getType() && prevMma.getB().getType() == mma.getB().getType() &&
        prevMma.getTransA() == mma.getTransA() && prevMma.getTransB() == mma.getTransB() && mma.getAccumulate() &&
        prevMma->getAttr("warpgroups") == mma->getAttr("warpgroups");
    if (conflict && !sameAccumulator) continue;
    SmallVector<Value> covered(w.getFrags().begin(), w.getFrags().end());
    for (Value v : next.getFrags())
      if (!llvm::is_contained(covered, v)) covered.push_back(v);
    next.getFragsMutable().assign(covered);  // `next` may merge further down
    w.erase();
  }
}

// Fragments an op (with its regions) reads or writes.
SmallVector<Value> touchedFrags(Operation *op) {
  SmallVector<Value> fs;
  op->walk([&](Operation *o) {
    for (Value v : o->getOperands())
      if (isa<FragType>(v.getType()) && !llvm::is_contained(fs, v)) fs.push_back(v);
  });
  return fs;
}

// Ops a pending wgmma group may stay in flight across: they write no shared
// memory (the group may still read its operands there), wait on nothing and
// run no wgmma. Fragments they touch are checked by the caller.
bool steppable(Operation *op) {
  if (isa<AllocFragOp, FragPickOp, SlotPickOp, CastOp, FillOp, GlobalReadOp, VarGetOp, VarSetOp>(op)) return true;
  // A channel's get (lowered before this pass): its ring cursor, slot views
  // and the wait for a full slot touch no fragment and write no shared
  // memory, so the groups stay in flight into the get's body. (The release,
  // an arrival, is not stepped over: a group may read the slot.)
  if (isa<RingSlotOp, RingPhaseOp, SlotOp, BarrierWaitOp>(op)) return true;
  if (auto c = dyn_cast<CopyOp>(op)) return isa<SharedType>(c.getSrc().getType()) && isa<FragType>(c.getDst().getType());
  if (auto l = dyn_cast<LoadOp>(op)) return isa<FragType>(l.getDst().getType());
  if (auto s = dyn_cast<StoreOp>(op)) return isa<FragType>(s.getSrc().getType());
  auto scalar = [](Operation *o) {
    StringRef d = o->getDialect() ? o->getDialect()->getNamespace() : "";
    return o->getNumRegions() == 0 && (d == "arith" || d == "math") && isMemoryEffectFree(o);
  };
  if (auto par = dyn_cast<ParallelOp>(op)) {
    bool ok = true;
    par.getBody().walk([&](Operation *o) {
      if (!(isa<ElemReadOp, ElemWriteOp, GlobalReadOp, FragPickOp, qla::YieldOp>(o) || scalar(o))) ok = false;
    });
    return ok;
  }
  // A runtime `if` whose branches hold only such ops.
  if (auto ifOp = dyn_cast<scf::IfOp>(op)) {
    for (Region *r : {&ifOp.getThenRegion(), &ifOp.getElseRegion()})
      for (Block &b : *r)
        for (Operation &o : b)
          if (!isa<scf::YieldOp>(o) && !steppable(&o)) return false;
    return true;
  }
  return scalar(op);
}

// The wgmma groups a wait covers, in commit order: the chains right before
// it (fence, wgmma, commit, with chainGap ops between chains, as mergeWaits
// leaves them). Empty when the wait covers anything
// else.
struct Group {
  SmallVector<Value> touched;  // C and a register A
  SmallVector<Value> reads;    // shared operands: B and a shared A
  Value acc;
};
// One chain's group: its accumulator, the fragments its fence names, the
// shared operands it reads.
Group groupOf(WgmmaFenceOp fence, WgmmaOp mma) {
  Group g;
  g.acc = mma.getC();
  g.touched.assign(fence.getFrags().begin(), fence.getFrags().end());
  if (isa<SharedType>(mma.getA().getType())) g.reads.push_back(mma.getA());
  g.reads.push_back(mma.getB());
  return g;
}
// Whether `wait` covers exactly these groups' accumulators.
bool coversExactly(WgmmaWaitOp wait, ArrayRef<Group> gs) {
  return !gs.empty() && wait.getFrags().size() == gs.size() &&
         llvm::all_of(gs, [&](const Group &g) { return llvm::is_contained(wait.getFrags(), g.acc); });
}
SmallVector<Group> groupsOf(WgmmaWaitOp wait) {
  SmallVector<Group> rev;
  Operation *o = wait->getPrevNode();
  while (o) {
    if (chainGap(o)) {
      o = o->getPrevNode();
      continue;
    }
    auto commit = dyn_cast<WgmmaCommitOp>(o);
    auto mma = commit ? dyn_cast_or_null<WgmmaOp>(commit->getPrevNode()) : WgmmaOp();
    auto fence = mma ? dyn_cast_or_null<WgmmaFenceOp>(mma->getPrevNode()) : WgmmaFenceOp();
    if (!fence) break;
    rev.push_back(groupOf(fence, mma));
    o = fence->getPrevNode();
  }
  SmallVector<Group> gs(rev.rbegin(), rev.rend());
  if (!coversExactly(wait, gs)) return {};
  return gs;
}

// An output's staging that groups still in flight may stay in flight across
// (with the waits its fragments need before it): a fragment → shared copy
// into a plain tile that none of `pending` reads, and a shared → global
// store (which only reads shared memory; wgmma writes none). A slot of a
// ring is not a plain tile: another slot of the same ring may be in flight.
// Such a tile cannot share bytes with an operand of a pending group either:
// qla-assign-resources keeps a wgmma's shared operands live until the
// `wgmma_wait 0` after it, which then comes after the copy.
bool stagingAside(Operation *op, ArrayRef<Group> pending) {
  if (auto s = dyn_cast<StoreOp>(op)) return isa<SharedType>(s.getSrc().getType());
  auto c = dyn_cast<CopyOp>(op);
  if (!c || !isa<FragType>(c.getSrc().getType()) || !isa<SharedType>(c.getDst().getType())) return false;
  Value dst = c.getDst();
  if (dst.getDefiningOp<SlotOp>()) return false;
  for (const Group &g : pending)
    if (llvm::is_contained(g.reads, dst)) return false;
  return true;
}

// The wgmma chains that start at `op` and share the wait right after them
// (as mergeWaits leaves them: fence, wgmma, commit, with chainGap ops
// between chains), with the last op before that wait; none when `op` does
// not start such chains.
std::pair<Operation *, SmallVector<Group>> laterChains(Operation *op) {
  SmallVector<Group> gs;
  Operation *o = op;
  while (o && !isa<WgmmaWaitOp>(o)) {
    if (chainGap(o)) {
      o = o->getNextNode();
      continue;
    }
    auto fence = dyn_cast<WgmmaFenceOp>(o);
    auto mma = fence ? dyn_cast_or_null<WgmmaOp>(fence->getNextNode()) : WgmmaOp();
    auto commit = mma ? dyn_cast_or_null<WgmmaCommitOp>(mma->getNextNode()) : WgmmaCommitOp();
    if (!commit) return {nullptr, {}};
    gs.push_back(groupOf(fence, mma));
    o = commit->getNextNode();
  }
  auto next = dyn_cast_or_null<WgmmaWaitOp>(o);
  if (!next || next.getPending() != 0 || !coversExactly(next, gs)) return {nullptr, {}};
  return {next->getPrevNode(), gs};
}

// qla-lower-to-qlanv{partial-waits}: see the pass description.
void sinkWaits(func::FuncOp fn, bool partialEverywhere) {
  SmallVector<WgmmaWaitOp> waits;
  fn.walk([&](WgmmaWaitOp w) { waits.push_back(w); });
  llvm::SmallPtrSet<Operation *, 8> joined;  // waits whose groups joined an earlier wait's
  for (WgmmaWaitOp w : waits) {
    if (joined.contains(w.getOperation()) || w.getPending() != 0 || !partialAt(w, partialEverywhere)) continue;
    SmallVector<Group> gs = groupsOf(w);
    if (gs.empty()) continue;
    int64_t n = int64_t(gs.size());
    int64_t done = 0;  // groups 0 .. done-1 are waited for
    auto waitThrough = [&](OpBuilder &b, int64_t k) {  // groups 0 .. k complete
      SmallVector<Value> accs;
      for (int64_t i = done; i <= k; ++i) accs.push_back(gs[i].acc);
      WgmmaWaitOp::create(b, w.getLoc(), b.getI64IntegerAttr(n - 1 - k), accs);
      done = k + 1;
    };
    // The last pending group whose fragments `op` reads or writes (-1: none).
    auto lastTouched = [&](Operation *op) {
      SmallVector<Value> t = touchedFrags(op);
      int64_t last = -1;
      for (int64_t i = 0; i < n; ++i)
        if (llvm::any_of(gs[i].touched, [&](Value v) { return llvm::is_contained(t, v); })) last = i;
      return last;
    };
    Operation *o = w->getNextNode();
    for (; o && done < n; o = o->getNextNode()) {
      // A later product (its chains up to their shared wait) is issued
      // while these groups are in flight, once the groups it touches are
      // waited for: its groups join the pending ones (committed after
      // them), and its wait sinks with theirs.
      if (auto [last, later] = laterChains(o); !later.empty()) {
        int64_t need = -1;
        for (Operation *c = o; c != last->getNextNode(); c = c->getNextNode()) need = std::max(need, lastTouched(c));
        if (need >= done) {
          OpBuilder b(o);
          waitThrough(b, need);
        }
        WgmmaWaitOp next = cast<WgmmaWaitOp>(last->getNextNode());
        joined.insert(next.getOperation());
        next.erase();
        gs.append(later.begin(), later.end());
        n = int64_t(gs.size());
        o = last;
        continue;
      }
      const int64_t need = lastTouched(o);
      // (staging: against the groups still in flight once `need` is waited for)
      if (!steppable(o) && !stagingAside(o, ArrayRef<Group>(gs).drop_front(std::max(done, need + 1)))) break;
      if (need >= done) {
        OpBuilder b(o);
        waitThrough(b, need);
      }
    }
    if (done < n) {
      OpBuilder b(w->getBlock(), o ? Block::iterator(o) : w->getBlock()->end());
      if (!o && w->getBlock()->mightHaveTerminator()) b.setInsertionPoint(w->getBlock()->getTerminator());
      waitThrough(b, n - 1);
    }
    w.erase();
  }
}

struct LowerToQlanv : ::mlir::qla::impl::QlaLowerToQlanvBase<LowerToQlanv> {
  using QlaLowerToQlanvBase::QlaLowerToQlanvBase;
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    bool failed = false;
    SmallVector<GemmOp> gemms;
    fn.walk([&](GemmOp g) { gemms.push_back(g); });
    for (GemmOp g : gemms) {
      auto c = g.getC().getType();
      if (c.getLayout() != FragType::Acc) {
        g.emitOpError("C has no accumulator layout (run qla-infer-layouts first)");
        failed = true;
        continue;
      }
      auto b = g.getB().getType();
      if (b.getSwizzle() == 0) {
        g.emitOpError("operand B of shape [")
            << b.getShape()[0] << ", " << b.getShape()[1]
            << "] cannot be laid out for wgmma: its rows must be 32, 64 or a multiple of 128 bytes";
        failed = true;
        continue;
      }
      if (auto a = dyn_cast<SharedType>(g.getA().getType()); a && a.getSwizzle() == 0) {
        g.emitOpError("operand A cannot be laid out for wgmma: its rows must be 32, 64 or a multiple of 128 bytes");
        failed = true;
        continue;
      }
      if (auto a = dyn_cast<FragType>(g.getA().getType());
          a && (a.getLayout() != FragType::Acc || a.getWarpgroups() != c.getWarpgroups())) {
        g.emitOpError("a register-sourced A must have the accumulator layout of C");
        failed = true;
        continue;
      }
      auto bShape = gemmOperandShape(b.getShape(), g.getBBox());
      if (int64_t k = g.getTransB() ? bShape[1] : bShape[0]; k % 16 != 0) {
        g.emitOpError("the product's K must be a multiple of 16 (wgmma takes k16 steps), got ") << k;
        failed = true;
        continue;
      }
      // A sub-tile operand is a byte offset into its tile's layout (EmitWgmma):
      // its first row on the swizzle's 8-row period; its first column on a
      // 16-element k step where the columns are K (A, or B transposed: K-major),
      // on a swizzle panel where they are M or N (MN-major), whose extent is then
      // whole panels or the tile's width.
      auto boxOk = [&](SharedType t, std::optional<ArrayRef<int64_t>> box, bool mnMajor, const char *which) {
        if (!box) return true;
        int64_t E = t.getSwizzle() / elementBytes(t.getElementType()), cols = t.getShape()[1];
        int64_t r0 = (*box)[0], c0 = (*box)[1], nc = (*box)[3];
        std::string why;
        if (r0 % 8 != 0) why = "its first row, " + std::to_string(r0) + ", is not a multiple of 8";
        else if (!mnMajor && c0 % 16 != 0)
          why = "its first column, " + std::to_string(c0) + ", is not a multiple of 16 (a k16 step)";
        else if (mnMajor && c0 % E != 0)
          why = "its first column, " + std::to_string(c0) + ", is not on a " + std::to_string(E) +
                "-column swizzle panel of the tile";
        else if (mnMajor && nc % E != 0 && nc != cols)
          why = "its " + std::to_string(nc) + " columns are not whole " + std::to_string(E) + "-column swizzle panels";
        if (why.empty()) return true;
        g.emitOpError("the sub-tile operand ") << which << " cannot be read by wgmma: " << why;
        return false;
      };
      if (!boxOk(b, g.getBBox(), !g.getTransB(), "B")) {
        failed = true;
        continue;
      }
      if (auto a = dyn_cast<SharedType>(g.getA().getType()); a && !boxOk(a, g.getABox(), g.getTransA(), "A")) {
        failed = true;
        continue;
      }
      OpBuilder bld(g);
      Location l = g.getLoc();
      SmallVector<Value> frags{g.getC()};
      if (isa<FragType>(g.getA().getType())) frags.push_back(g.getA());
      WgmmaFenceOp::create(bld, l, frags);
      WgmmaOp::create(bld, l, g.getA(), g.getB(), g.getC(), g.getTransAAttr(), g.getTransBAttr(),
                          g.getAccumulateAttr(), bld.getI64IntegerAttr(c.getWarpgroups()), g.getABoxAttr(),
                          g.getBBoxAttr());
      WgmmaCommitOp::create(bld, l);
      WgmmaWaitOp::create(bld, l, bld.getI64IntegerAttr(0), ValueRange{g.getC()});
      g.erase();
    }
    if (!failed) mergeWaits(fn, partialWaits);
    if (!failed) sinkWaits(fn, partialWaits);

    SmallVector<RoleOp> roles;
    fn.walk([&](RoleOp r) { roles.push_back(r); });
    for (RoleOp r : roles) {
      OpBuilder bld(r);
      auto wg = WarpgroupsOp::create(bld, r.getLoc(), r.getNameAttr(), r.getWgBeginAttr(), r.getWgEndAttr());
      wg->setAttr("regs", r.getRegsAttr());
      if (r->hasAttr("turns")) wg->setAttr("turns", UnitAttr::get(r.getContext()));
      if (auto f = r->getAttr("fresh_addresses")) wg->setAttr("fresh_addresses", f);
      wg.getBody().takeBody(r.getBody());
      Block &blk = wg.getBody().front();
      Operation *term = blk.getTerminator();
      OpBuilder tb(term);
      qlanv::YieldOp::create(tb, term->getLoc());
      term->erase();
      r.erase();
    }
    if (failed) signalPassFailure();
  }
};

}  // namespace
