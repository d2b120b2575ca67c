// Layout inference: fragment register layouts and shared-tile swizzles.
#include "dialects/qla/Transforms/Passes.h"
#include "dialects/qla/IR/FragLayout.h"

namespace mlir::qla {
#define GEN_PASS_DEF_QLAINFERLAYOUTS
#include "dialects/qla/Transforms/Passes.h.inc"
}  // namespace mlir::qla

using namespace mlir;
using namespace mlir::qla;

namespace {

// The widest swizzle whose 8-row atom fits the tile: rows of 128, 64 or 32
// bytes (or multiples of 128 bytes, stored as 128-byte column blocks).
unsigned chooseSwizzle(SharedType t) {
  auto shape = t.getShape();
  if (shape.size() != 2 || shape[0] % 8 != 0) return 0;
  int64_t rowBytes = shape[1] * elementBytes(t.getElementType());
  if (rowBytes % 128 == 0) return 128;
  if (rowBytes == 64) return 64;
  if (rowBytes == 32) return 32;
  return 0;
}

// Warpgroups that execute `op`: its role's, else all of the kernel's.
int64_t warpgroupsOf(Operation *op) {
  if (auto role = op->getParentOfType<RoleOp>()) return role.getNumWarpgroups();
  if (auto fn = op->getParentOfType<func::FuncOp>())
    if (auto th = fn->getAttrOfType<IntegerAttr>(kThreadsAttr)) return std::max<int64_t>(1, th.getInt() / 128);
  return 1;
}

// How a 1-D fragment is used: as a row vector (indexed like accumulator rows)
// or a column vector. Returns Unassigned when no use says.
unsigned vectorUse(Value frag, Operation *&conflict) {
  unsigned kind = FragType::Unassigned;
  auto note = [&](unsigned k, Operation *user) {
    if (kind != FragType::Unassigned && kind != k) conflict = user;
    kind = k;
  };
  for (OpOperand &use : frag.getUses()) {
    Operation *user = use.getOwner();
    if (auto r = dyn_cast<ReduceOp>(user)) {
      if (r.getDst() == frag) note(r.getDim() == 1 ? FragType::Row : FragType::Col, user);
    } else if (isa<ElemReadOp, ElemWriteOp>(user)) {
      auto par = user->getParentOfType<ParallelOp>();
      if (par.getExtents().size() != 2) continue;
      ValueRange idx = isa<ElemReadOp>(user) ? cast<ElemReadOp>(user).getIndices()
                                             : cast<ElemWriteOp>(user).getIndices();
      unsigned argNo = cast<BlockArgument>(idx[0]).getArgNumber();
      note(argNo == 0 ? FragType::Row : FragType::Col, user);
    }
  }
  return kind;
}

struct InferLayouts : ::mlir::qla::impl::QlaInferLayoutsBase<InferLayouts> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    bool failed = false;

    // Shared tiles: allocations and channel slots (and the put/get block args).
    fn.walk([&](AllocSharedOp op) {
      auto t = op.getType();
      op.getResult().setType(t.withSwizzle(chooseSwizzle(t)));
    });
    fn.walk([&](ChannelOp op) {
      auto t = op.getType();
      SmallVector<Type> slots;
      for (Type s : t.getSlotTypes()) {
        auto st = cast<SharedType>(s);
        slots.push_back(st.withSwizzle(chooseSwizzle(st)));
      }
      op.getResult().setType(ChannelType::get(&getContext(), slots, t.getDepth()));
      for (Operation *user : op.getResult().getUsers())
        for (Region &r : user->getRegions())
          for (auto [arg, ty] : llvm::zip(r.front().getArguments(), slots)) arg.setType(ty);
    });

    // 1-D fragments that no use places (they appear only in 1-D maps) take
    // the layout of a placed fragment they share a 1-D map with, to a fixed
    // point; a 1-D map's fragments must share one layout.
    llvm::DenseMap<Value, unsigned> vecKind;
    fn.walk([&](AllocFragOp op) {
      if (op.getType().getShape().size() != 1) return;
      Operation *conflict = nullptr;
      unsigned k = vectorUse(op.getResult(), conflict);
      if (!conflict && k != FragType::Unassigned) vecKind[op.getResult()] = k;
    });
    SmallVector<SmallVector<Value>> maps1d;
    fn.walk([&](ParallelOp par) {
      if (par.getExtents().size() != 1) return;
      SmallVector<Value> frags;
      par.walk([&](Operation *u) {
        Value f;
        if (auto r = dyn_cast<ElemReadOp>(u)) f = r.getFrag();
        else if (auto w = dyn_cast<ElemWriteOp>(u)) f = w.getFrag();
        if (f && f.getDefiningOp<AllocFragOp>() && !llvm::is_contained(frags, f)) frags.push_back(f);
      });
      maps1d.push_back(frags);
    });
    for (bool changed = true; changed;) {
      changed = false;
      for (auto &frags : maps1d) {
        unsigned k = FragType::Unassigned;
        for (Value f : frags)
          if (auto it = vecKind.find(f); it != vecKind.end()) k = it->second;
        if (k == FragType::Unassigned) continue;
        for (Value f : frags)
          if (!vecKind.count(f)) vecKind[f] = k, changed = true;
      }
    }

    // Fragments.
    fn.walk([&](AllocFragOp op) {
      auto t = op.getType();
      auto shape = t.getShape();
      int64_t w = warpgroupsOf(op);
      unsigned layout = FragType::Acc;
      const std::vector<int64_t> sv(shape.begin(), shape.end());
      auto fits = [&](unsigned l) { return FragLayout::fits(static_cast<FragLayout::Kind>(l), sv, unsigned(w)); };
      if (shape.size() == 2) {
        if (!fits(FragType::Acc)) {
          op.emitError("no register layout fits fragment of shape [")
              << shape[0] << ", " << shape[1] << "] over " << w
              << " warpgroup(s): the accumulator layout needs 64 rows per warpgroup "
                 "(rows a multiple of " << 64 * w << ") and columns a multiple of 8";
          failed = true;
          return;
        }
      } else {
        Operation *conflict = nullptr;
        layout = vectorUse(op.getResult(), conflict);
        if (conflict) {
          conflict->emitError("fragment is used both as a row vector and as a column vector; "
                              "copy it into two fragments");
          failed = true;
          return;
        }
        if (layout == FragType::Unassigned)
          if (auto it = vecKind.find(op.getResult()); it != vecKind.end()) layout = it->second;
        // Nothing places it: a row vector, or a column vector where a row
        // vector does not fit the role's warpgroups (64 rows each).
        if (layout == FragType::Unassigned) layout = fits(FragType::Row) ? FragType::Row : FragType::Col;
        if (layout == FragType::Row && !fits(FragType::Row)) {
          op.emitError("no register layout fits row vector of ")
              << shape[0] << " elements over " << w << " warpgroup(s): needs a multiple of " << 64 * w;
          failed = true;
          return;
        }
        if (layout == FragType::Col && !fits(FragType::Col)) {
          op.emitError("no register layout fits column vector of ")
              << shape[0] << " elements: needs a multiple of 8";
          failed = true;
          return;
        }
      }
      op.getResult().setType(t.withLayout(layout, w));
    });
    if (failed) signalPassFailure();
  }
};

}  // namespace
