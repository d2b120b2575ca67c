// Programmatic dependent launch as IR: for a kernel with follows(...), the
// launch of the next kernel at the top and the waits for the preceding one
// where the kernel first touches what that kernel writes (see Passes.td).
#include "dialects/qlanv/Transforms/Passes.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

namespace mlir::qlanv {
#define GEN_PASS_DEF_QLANVINSERTGRIDDEPENDENCY
#include "dialects/qlanv/Transforms/Passes.h.inc"
}  // namespace mlir::qlanv

using namespace mlir;
using namespace mlir::qlanv;

namespace {

struct InsertGridDependency : ::mlir::qlanv::impl::QlanvInsertGridDependencyBase<InsertGridDependency> {
  func::FuncOp fn;
  llvm::DenseSet<Operation *> touching;  // the ops that use a followed tensor or an output, or a value derived from one

  // The inserted ops' location: where they stand, marked as follows(...)'s
  // (a fused location, so that the emitter's `// file:line` comments stay
  // with the statements).
  Location inserted(Location at) {
    return FusedLoc::get(fn.getContext(), {at}, StringAttr::get(fn.getContext(), "qla.follows"));
  }

  bool touches(Operation *op) const {
    bool hit = false;
    op->walk([&](Operation *o) {
      if (!touching.contains(o)) return WalkResult::advance();
      hit = true;
      return WalkResult::interrupt();
    });
    return hit;
  }

  // The kernel's and each role's body are scopes: the first operation in one
  // that touches gets a wait, unless the threads have waited already (at
  // kernel level, before the role). Nested blocks are covered by their
  // operation; roles nested in them are scopes of their own.
  void visit(Block &b, bool &waited) {
    Operation *parent = b.getParentOp();
    const bool scope = parent == fn.getOperation() || isa<WarpgroupsOp>(parent);
    for (Operation &op : llvm::make_early_inc_range(b)) {
      if (scope && !waited && !isa<WarpgroupsOp>(op) && touches(&op)) {
        OpBuilder at(&op);
        GridDependencyWaitOp::create(at, inserted(op.getLoc()), /*atExit=*/false);
        waited = true;
      }
      // A role's threads have waited only if the kernel's had before it.
      const bool role = isa<WarpgroupsOp>(op);
      const bool before = waited;
      for (Region &r : op.getRegions())
        for (Block &inner : r) visit(inner, waited);
      if (role) waited = before;
    }
  }

  void runOnOperation() override {
    fn = getOperation();
    auto follows = fn->getAttrOfType<DenseI64ArrayAttr>(qla::kFollowsAttr);
    if (!follows || fn.getBody().empty()) return;
    auto outputs = fn->getAttrOfType<DenseBoolArrayAttr>(qla::kOutputsAttr);
    llvm::DenseSet<int64_t> followed(follows.asArrayRef().begin(), follows.asArrayRef().end());
    Block &entry = fn.getBody().front();

    // The followed tensors and the outputs, then every op using them,
    // directly or through the values it derives from them.
    SmallVector<Value> work;
    int64_t tensor = 0;
    for (BlockArgument arg : entry.getArguments()) {
      if (!isa<qla::GlobalType>(arg.getType())) continue;
      const bool output = outputs && tensor < int64_t(outputs.size()) && outputs[tensor];
      if (followed.contains(tensor) || output) work.push_back(arg);
      ++tensor;
    }
    touching.clear();
    llvm::DenseSet<Value> seen(work.begin(), work.end());
    while (!work.empty()) {
      Value v = work.pop_back_val();
      for (Operation *user : v.getUsers()) {
        if (!touching.insert(user).second) continue;
        for (Value r : user->getResults())
          if (seen.insert(r).second) work.push_back(r);
      }
    }

    OpBuilder top = OpBuilder::atBlockBegin(&entry);
    GridDependentsLaunchOp::create(top, inserted(fn.getLoc()));
    bool waited = false;
    visit(entry, waited);
    // The end: a kernel must not finish before the one it follows.
    OpBuilder end(entry.getTerminator());
    GridDependencyWaitOp::create(end, inserted(fn.getLoc()), /*atExit=*/true);
  }
};

}  // namespace
