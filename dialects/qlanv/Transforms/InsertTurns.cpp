// Turns as IR: the hand-offs of a token that makes a role's warpgroups issue
// their products one after another (the role option `turns`; see Passes.td).
#include "dialects/qlanv/Transforms/Passes.h"

namespace mlir::qlanv {
#define GEN_PASS_DEF_QLANVINSERTTURNS
#include "dialects/qlanv/Transforms/Passes.h.inc"
}  // namespace mlir::qlanv

using namespace mlir;
using namespace mlir::qlanv;

namespace {

struct InsertTurns : ::mlir::qlanv::impl::QlanvInsertTurnsBase<InsertTurns> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    // The named barriers: the roles' 1 .. R, one per warpgroup for staging,
    // then one per warpgroup for turns (the emitter's numbering).
    const int64_t roles = std::distance(fn.getOps<WarpgroupsOp>().begin(), fn.getOps<WarpgroupsOp>().end());
    int64_t threads = 128;
    if (auto t = fn->getAttrOfType<IntegerAttr>(qla::kThreadsAttr)) threads = t.getInt();
    const int64_t turnBase = roles + 1 + (threads + 127) / 128;
    MLIRContext *ctx = fn.getContext();
    for (auto wg : fn.getOps<WarpgroupsOp>()) {
      const int64_t n = int64_t(wg.getWgEnd()) - int64_t(wg.getWgBegin()) + 1;
      if (!wg->hasAttr("turns") || n < 2) continue;
      const int64_t base = turnBase + int64_t(wg.getWgBegin());
      // The start and the finish stand for no statement (no `// file:line`
      // of their own); a wait and a pass take their product's location.
      Location none = FusedLoc::get(ctx, {wg.getLoc()}, StringAttr::get(ctx, "qla.turns"));
      Block &body = wg.getBody().front();
      OpBuilder b = OpBuilder::atBlockBegin(&body);
      TurnStartOp::create(b, none, base, n);
      wg.getBody().walk([&](Operation *op) {
        if (isa<WgmmaFenceOp>(op)) {
          OpBuilder at(op);
          TurnWaitOp::create(at, op->getLoc(), base);
        } else if (isa<WgmmaCommitOp>(op)) {
          OpBuilder after(op->getContext());
          after.setInsertionPointAfter(op);
          TurnPassOp::create(after, op->getLoc(), base, n);
        }
      });
      OpBuilder end(body.getTerminator());
      TurnFinishOp::create(end, none, base);
    }
  }
};

}  // namespace
