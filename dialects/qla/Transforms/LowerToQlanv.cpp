// Lowering to qlanv: gemm → wgmma chain, role → warpgroup region.
#include "dialects/qla/Transforms/Passes.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::qla {
#define GEN_PASS_DEF_QLALOWERTOQLANV
#include "dialects/qla/Transforms/Passes.h.inc"
}  // namespace mlir::qla

using namespace mlir;
using namespace mlir::qla;
using namespace mlir::qlanv;

namespace {

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

// Independent gemms in a row share one wait, so their wgmma groups overlap:
// a wait followed (through fragment allocations and arithmetic that reads no
// fragment) by another chain that touches none of the first chain's
// fragments is dropped, and the later wait also covers the first chain's
// accumulator. Shared memory cannot change in between: only allocations and
// scalar arithmetic are stepped over.
void mergeWaits(func::FuncOp fn) {
  SmallVector<WgmmaWaitOp> waits;
  fn.walk([&](WgmmaWaitOp w) { waits.push_back(w); });
  for (WgmmaWaitOp w : waits) {
    if (w.getPending() != 0) continue;
    SmallVector<Value> fs = chainFrags(w);
    Operation *o = w->getNextNode();
    auto readsNoFrag = [](Operation *op) {
      return llvm::none_of(op->getOperandTypes(), [](Type t) { return isa<FragType>(t); });
    };
    while (o && (isa<AllocFragOp>(o) ||
                 (o->getNumRegions() == 0 && isMemoryEffectFree(o) && readsNoFrag(o) && o->getDialect() &&
                  o->getDialect()->getNamespace() == "arith")))
      o = o->getNextNode();
    auto fence = dyn_cast_or_null<WgmmaFenceOp>(o);
    if (!fence) continue;
    auto mma = dyn_cast_or_null<WgmmaOp>(fence->getNextNode());
    auto commit = mma ? dyn_cast_or_null<WgmmaCommitOp>(mma->getNextNode()) : WgmmaCommitOp();
    auto next = commit ? dyn_cast_or_null<WgmmaWaitOp>(commit->getNextNode()) : WgmmaWaitOp();
    if (!next || next.getPending() != 0) continue;
    if (llvm::any_of(chainFrags(next), [&](Value v) { return llvm::is_contained(fs, v); })) continue;
    SmallVector<Value> covered(w.getFrags().begin(), w.getFrags().end());
    for (Value v : next.getFrags())
      if (!llvm::is_contained(covered, v)) covered.push_back(v);
    next.getFragsMutable().assign(covered);  // `next` may merge further down
    w.erase();
  }
}

struct LowerToQlanv : ::mlir::qla::impl::QlaLowerToQlanvBase<LowerToQlanv> {
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
      OpBuilder bld(g);
      Location l = g.getLoc();
      SmallVector<Value> frags{g.getC()};
      if (isa<FragType>(g.getA().getType())) frags.push_back(g.getA());
      WgmmaFenceOp::create(bld, l, frags);
      WgmmaOp::create(bld, l, g.getA(), g.getB(), g.getC(), g.getTransAAttr(), g.getTransBAttr(),
                          g.getAccumulateAttr(), bld.getI64IntegerAttr(c.getWarpgroups()));
      WgmmaCommitOp::create(bld, l);
      WgmmaWaitOp::create(bld, l, bld.getI64IntegerAttr(0), ValueRange{g.getC()});
      g.erase();
    }
    if (!failed) mergeWaits(fn);

    SmallVector<RoleOp> roles;
    fn.walk([&](RoleOp r) { roles.push_back(r); });
    for (RoleOp r : roles) {
      OpBuilder bld(r);
      auto wg = WarpgroupsOp::create(bld, r.getLoc(), r.getNameAttr(), r.getWgBeginAttr(), r.getWgEndAttr());
      wg->setAttr("regs", r.getRegsAttr());
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
