// Fence insertion: shared memory written through the generic proxy (ordinary
// stores from fragments) and then read by the async proxy (wgmma operands,
// TMA stores) needs fence.proxy.async in every writing thread, then a barrier
// among the threads of the group before the read.
#include "dialects/qla/Transforms/Passes.h"

namespace mlir::qla {
#define GEN_PASS_DEF_QLAINSERTFENCES
#include "dialects/qla/Transforms/Passes.h.inc"
}  // namespace mlir::qla

using namespace mlir;
using namespace mlir::qla;
using namespace mlir::qlanv;

namespace {

// Is `tile` (or a slot of it) read by a wgmma anywhere in the function?
bool readByAsyncProxy(Value tile) {
  for (Operation *u : tile.getUsers()) {
    if (isa<WgmmaOp>(u)) return true;
    if (auto s = dyn_cast<SlotOp>(u); s && readByAsyncProxy(s.getResult())) return true;
  }
  return false;
}

struct InsertFences : ::mlir::qla::impl::QlaInsertFencesBase<InsertFences> {
  void runOnOperation() override {
    getOperation().walk([&](CopyOp copy) {
      if (!isa<SharedType>(copy.getDst().getType()) || !readByAsyncProxy(copy.getDst())) return;
      OpBuilder b(copy->getContext());
      b.setInsertionPointAfter(copy);
      FenceProxyAsyncOp::create(b, copy.getLoc());
      if (auto wg = copy->getParentOfType<WarpgroupsOp>()) {
        int64_t id = 1;
        for (auto w : copy->getParentOfType<func::FuncOp>().getOps<WarpgroupsOp>()) {
          if (w == wg) break;
          ++id;
        }
        NamedBarrierOp::create(b, copy.getLoc(), id, (wg.getWgEnd() - wg.getWgBegin() + 1) * 128);
      } else {
        BlockSyncOp::create(b, copy.getLoc());
      }
    });
  }
};

}  // namespace
