// Pipeline lowering: multi-buffered loads issued `stages` iterations ahead.
#include "dialects/qla/Transforms/Passes.h"

#include "llvm/ADT/MapVector.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::qla {
#define GEN_PASS_DEF_QLALOWERPIPELINES
#include "dialects/qla/Transforms/Passes.h.inc"
}  // namespace mlir::qla

using namespace mlir;
using namespace mlir::qla;
using namespace mlir::qlanv;

namespace {

void emitGroupSync(OpBuilder &b, Location loc, Operation *at) {
  if (auto role = at->getParentOfType<RoleOp>()) {
    int64_t id = 1;
    for (auto r : at->getParentOfType<func::FuncOp>().getOps<RoleOp>()) {
      if (r == role) break;
      ++id;
    }
    NamedBarrierOp::create(b, loc, id, role.getNumWarpgroups() * 128);
  } else {
    BlockSyncOp::create(b, loc);
  }
}

struct LowerPipelines : ::mlir::qla::impl::QlaLowerPipelinesBase<LowerPipelines> {
  void runOnOperation() override {
    SmallVector<PipelineOp> pipes;
    getOperation().walk([&](PipelineOp p) { pipes.push_back(p); });
    for (PipelineOp p : pipes)
      if (failed(lower(p))) return signalPassFailure();
  }

  // Clones the loads of `body` (and the arithmetic their offsets need) with
  // the induction variable replaced by `iv`, retargeted at slot `slot`.
  LogicalResult cloneLoads(OpBuilder &b, ArrayRef<LoadOp> loads, Value oldIv, Value iv,
                           const llvm::MapVector<Value, Value> &buffers, Value full, Value slot) {
    IRMapping map;
    map.map(oldIv, iv);
    Block *body = oldIv.getParentBlock();
    for (LoadOp ld : loads) {
      // Offsets: clone their defining ops inside the body (pure arithmetic only).
      SmallVector<Operation *> slice;
      SmallVector<Value> work(ld.getOffsets().begin(), ld.getOffsets().end());
      while (!work.empty()) {
        Value v = work.pop_back_val();
        Operation *def = v.getDefiningOp();
        if (!def || def->getBlock() != body || map.contains(v) || llvm::is_contained(slice, def)) continue;
        if (!isMemoryEffectFree(def) || def->getNumRegions())
          return ld.emitOpError("pipeline load offsets must be arithmetic on the loop index");
        slice.push_back(def);
        for (Value o : def->getOperands()) work.push_back(o);
      }
      llvm::sort(slice, [](Operation *a, Operation *c) { return a->isBeforeInBlock(c); });
      for (Operation *op : slice)
        if (!map.contains(op->getResult(0))) b.clone(*op, map);
      SmallVector<Value> coords;
      for (Value o : ld.getOffsets()) coords.push_back(map.lookupOrDefault(o));
      Value buf = buffers.lookup(ld.getDst());
      Value view = SlotOp::create(b, ld.getLoc(), buf.getType(), buf, slot);
      TmaLoadOp::create(b, ld.getLoc(), ld.getSrc(), coords, view, full, slot, ld.getDroppedAttr());
    }
    return success();
  }

  LogicalResult lower(PipelineOp pipe) {
    Location l = pipe.getLoc();
    int64_t stages = pipe.getStages();
    Block &body = pipe.getBody().front();
    Value iv = body.getArgument(0);
    SmallVector<LoadOp> loads;
    for (Operation &op : body)
      if (auto ld = dyn_cast<LoadOp>(op); ld && isa<SharedType>(ld.getDst().getType())) loads.push_back(ld);
    // The tiles become rings of `stages` slots; they must live outside the loop.
    // Ordered: the emitted code (and so the kernel hash) must not depend on pointer values.
    llvm::MapVector<Value, Value> buffers;
    int64_t bytes = 0;
    for (LoadOp ld : loads) {
      if (!ld.getLimits().empty())
        return ld.emitOpError("a pipelined copy cannot be bounded with `until` (TMA clips only at the tensor's edge); "
                              "mask the rows in a map instead");
      auto alloc = ld.getDst().getDefiningOp<AllocSharedOp>();
      if (!alloc || pipe->isAncestor(alloc))
        return ld.emitOpError("a pipelined load must target a shared tile declared before the pipeline");
      for (Operation *u : alloc->getUsers())
        if (!pipe->isAncestor(u))
          return u->emitOpError("a pipelined shared tile may only be used inside its pipeline");
      if (!buffers.count(ld.getDst())) {
        alloc.setCount(stages);
        buffers[ld.getDst()] = alloc.getResult();
      }
      bytes += cast<SharedType>(ld.getDst().getType()).getSizeInBytes();
    }
    if (loads.empty()) return pipe.emitOpError("a pipeline needs at least one global→shared copy in its body");

    // Barriers at function entry (before any role) so that the init is
    // ordered by the block-wide sync that channel lowering also relies on.
    func::FuncOp fn = pipe->getParentOfType<func::FuncOp>();
    OpBuilder fb(&fn.getBody().front(), fn.getBody().front().begin());
    auto full = BarriersOp::create(fb, l, BarriersType::get(&getContext(), stages), fb.getI64IntegerAttr(1), IntegerAttr());
    BarrierInitOp::create(fb, l, full);
    BlockSyncOp::create(fb, l);

    OpBuilder b(pipe);
    Value lb = pipe.getLowerBound(), ub = pipe.getUpperBound();
    // Prologue: iterations lb .. lb+stages-1 into slots 0 .. stages-1.
    for (int64_t s = 0; s < stages; ++s) {
      Value sv = arith::ConstantIndexOp::create(b, l, s);
      Value it = arith::AddIOp::create(b, l, lb, sv);
      Value inRange = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, it, ub);
      auto ifOp = scf::IfOp::create(b, l, inRange, false);
      OpBuilder ib = OpBuilder::atBlockBegin(ifOp.thenBlock());
      auto elect = ElectOp::create(ib, l);
      elect.getBody().emplaceBlock();
      OpBuilder eb = OpBuilder::atBlockEnd(&elect.getBody().front());
      BarrierExpectTxOp::create(eb, l, full, sv, eb.getI64IntegerAttr(bytes));
      if (failed(cloneLoads(eb, loads, iv, it, buffers, full, sv))) return failure();
      qlanv::YieldOp::create(eb, l);
    }
    Value ring = RingOp::create(b, l, RingType::get(&getContext(), stages), b.getStringAttr("pipeline")).getResult();
    Value one = arith::ConstantIndexOp::create(b, l, 1);
    auto loop = scf::ForOp::create(b, l, lb, ub, one);
    OpBuilder lbld = OpBuilder::atBlockBegin(loop.getBody());
    Value k = loop.getInductionVar();
    k.setLoc(cast<BlockArgument>(iv).getLoc());  // keeps the source name (`for k in`) for the emitter
    Value slot = RingSlotOp::create(lbld, l, lbld.getIndexType(), ring);
    Value phase = RingPhaseOp::create(lbld, l, lbld.getI32Type(), ring);
    BarrierWaitOp::create(lbld, l, full, slot, phase);
    IRMapping map;
    map.map(iv, k);
    for (auto &[tile, buf] : buffers)
      map.map(tile, SlotOp::create(lbld, l, buf.getType(), buf, slot).getResult());
    for (Operation &op : body.without_terminator())
      if (!llvm::is_contained(loads, dyn_cast<LoadOp>(&op))) lbld.clone(op, map);
    // Everyone is done with the slot before it is refilled.
    emitGroupSync(lbld, l, pipe);
    Value ahead = arith::AddIOp::create(lbld, l, k, arith::ConstantIndexOp::create(lbld, l, stages));
    Value inRange = arith::CmpIOp::create(lbld, l, arith::CmpIPredicate::slt, ahead, ub);
    auto ifOp = scf::IfOp::create(lbld, l, inRange, false);
    OpBuilder ib = OpBuilder::atBlockBegin(ifOp.thenBlock());
    auto elect = ElectOp::create(ib, l);
    elect.getBody().emplaceBlock();
    OpBuilder eb = OpBuilder::atBlockEnd(&elect.getBody().front());
    BarrierExpectTxOp::create(eb, l, full, slot, eb.getI64IntegerAttr(bytes));
    if (failed(cloneLoads(eb, loads, iv, ahead, buffers, full, slot))) return failure();
    qlanv::YieldOp::create(eb, l);
    RingAdvanceOp::create(lbld, l, ring);
    pipe.erase();
    return success();
  }
};

}  // namespace
