// Lowering to qlanv: gemm → wgmma chain, role → warpgroup region.
#include "dialects/qla/Transforms/Passes.h"

namespace mlir::qla {
#define GEN_PASS_DEF_QLALOWERTOQLANV
#include "dialects/qla/Transforms/Passes.h.inc"
}  // namespace mlir::qla

using namespace mlir;
using namespace mlir::qla;
using namespace mlir::qlanv;

namespace {

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
      bld.create<WgmmaFenceOp>(l, frags);
      bld.create<WgmmaOp>(l, g.getA(), g.getB(), g.getC(), g.getTransAAttr(), g.getTransBAttr(),
                          g.getAccumulateAttr(), bld.getI64IntegerAttr(c.getWarpgroups()));
      bld.create<WgmmaCommitOp>(l);
      bld.create<WgmmaWaitOp>(l, bld.getI64IntegerAttr(0), ValueRange{g.getC()});
      g.erase();
    }

    SmallVector<RoleOp> roles;
    fn.walk([&](RoleOp r) { roles.push_back(r); });
    for (RoleOp r : roles) {
      OpBuilder bld(r);
      auto wg = bld.create<WarpgroupsOp>(r.getLoc(), r.getNameAttr(), r.getWgBeginAttr(), r.getWgEndAttr());
      wg->setAttr("regs", r.getRegsAttr());
      wg.getBody().takeBody(r.getBody());
      Block &blk = wg.getBody().front();
      Operation *term = blk.getTerminator();
      OpBuilder tb(term);
      tb.create<qlanv::YieldOp>(term->getLoc());
      term->erase();
      r.erase();
    }
    if (failed) signalPassFailure();
  }
};

}  // namespace
