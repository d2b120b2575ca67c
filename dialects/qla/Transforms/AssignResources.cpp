// Resource assignment: the shared-memory arena and register budgets.
#include "dialects/qla/Transforms/Passes.h"

namespace mlir::qla {
#define GEN_PASS_DEF_QLAASSIGNRESOURCES
#include "dialects/qla/Transforms/Passes.h.inc"
}  // namespace mlir::qla

using namespace mlir;
using namespace mlir::qla;
using namespace mlir::qlanv;

namespace {

constexpr int64_t kMaxSmemBytes = 227 * 1024;  // per block on sm_90
constexpr int64_t kRegisterFile = 64 * 1024;    // 32-bit registers per SM

int64_t alignTo(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

// Shared scratch (bytes) the emitter needs for `op`: scans and picks stage a
// vector or one value; the triangular inverse keeps L and X, padded rows.
int64_t scratchBytes(Operation *op) {
  if (auto s = dyn_cast<ScanOp>(op)) return 4 * s.getSrc().getType().getShape()[0];
  if (isa<FragPickOp>(op)) return 4;
  if (auto inv = dyn_cast<InvUnitLowerOp>(op)) {
    int64_t n = inv.getSrc().getType().getShape()[0];
    return 2 * 4 * n * (n + 1);
  }
  return 0;
}

struct AssignResources : ::mlir::qla::impl::QlaAssignResourcesBase<AssignResources> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    Builder b(&getContext());

    // The arena is laid out in program order. Swizzled tiles need 1024-byte
    // alignment (the 8-row swizzle atom); mbarriers 8 bytes.
    // TODO(liveness): tiles of disjoint scopes could share bytes; every
    // allocation gets its own range for now.
    int64_t offset = 0;
    bool failed = false;
    fn.walk([&](Operation *op) {
      if (auto a = dyn_cast<AllocSharedOp>(op)) {
        auto t = a.getType();
        offset = alignTo(offset, t.getSwizzle() ? 1024 : 16);
        a.setOffsetAttr(b.getI64IntegerAttr(offset));
        offset += t.getSizeInBytes() * a.getCount();
      } else if (auto bars = dyn_cast<BarriersOp>(op)) {
        offset = alignTo(offset, 8);
        bars.setOffsetAttr(b.getI64IntegerAttr(offset));
        offset += 8 * bars.getType().getCount();
      } else if (int64_t bytes = scratchBytes(op)) {
        // Staging space of ops that exchange fragment elements between threads.
        offset = alignTo(offset, 16);
        op->setAttr("qla.scratch_offset", b.getI64IntegerAttr(offset));
        offset += bytes;
      }
    });
    int64_t smem = alignTo(offset, 16);
    if (smem > kMaxSmemBytes) {
      fn.emitError("shared memory needed (") << smem << " bytes) exceeds the " << kMaxSmemBytes
                                             << " bytes a block can have on sm_90";
      return signalPassFailure();
    }
    fn->setAttr("qla.smem_bytes", b.getI64IntegerAttr(smem));

    // Register budgets. With __launch_bounds__(threads, 1) every thread starts
    // with the file divided evenly (rounded down to 8); roles move from there.
    int64_t threads = 128;
    if (auto th = fn->getAttrOfType<IntegerAttr>(kThreadsAttr)) threads = th.getInt();
    int64_t base = std::min<int64_t>(255, kRegisterFile / threads) / 8 * 8;
    int64_t total = 0, coveredWgs = 0;
    SmallVector<WarpgroupsOp> roles;
    fn.walk([&](WarpgroupsOp wg) { roles.push_back(wg); });
    for (WarpgroupsOp wg : roles) {
      int64_t n = wg.getWgEnd() - wg.getWgBegin() + 1;
      int64_t regs = base;
      if (auto r = wg->getAttrOfType<IntegerAttr>("regs"); r && r.getInt() != 0) regs = r.getInt();
      total += regs * n * 128;
      coveredWgs += n;
      if (regs != base) {
        OpBuilder ob(&wg.getBody().front(), wg.getBody().front().begin());
        ob.create<SetMaxNRegOp>(wg.getLoc(), ob.getI64IntegerAttr(regs), ob.getBoolAttr(regs > base));
      }
    }
    total += (threads / 128 - coveredWgs) * 128 * base;
    if (total > kRegisterFile) {
      fn.emitError("register budgets need ") << total << " registers but the register file has "
                                             << kRegisterFile << " (reduce some role's regs)";
      failed = true;
    }
    fn->setAttr("qla.base_regs", b.getI64IntegerAttr(base));
    if (failed) signalPassFailure();
  }
};

}  // namespace
