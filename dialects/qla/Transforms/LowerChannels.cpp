// Channel lowering: put/get → mbarrier rings with explicit phases (TMA puts
// by one elected thread, puts that store fragments or shared tiles by all
// threads of the producer role; one ring cursor per consumer role); one-shot
// global→shared loads → TMA on a one-slot ring.
#include "dialects/qla/Transforms/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::qla {
#define GEN_PASS_DEF_QLALOWERCHANNELS
#include "dialects/qla/Transforms/Passes.h.inc"
}  // namespace mlir::qla

using namespace mlir;
using namespace mlir::qla;
using namespace mlir::qlanv;

namespace {

// What a wait or arrival is for ("<channel>.get", ".put", ".release",
// ".filled", "load"): read by the emitter's tracing (EmitOptions::trace).
constexpr llvm::StringLiteral kWhat("qla.what");

// `l`, carrying the source name of a put/get binding (`put ab -> (a, b)`) if
// the front end gave it one: the emitter names the slot's pointer after it.
Location namedAs(Value arg, Location l) {
  if (auto n = dyn_cast<NameLoc>(cast<BlockArgument>(arg).getLoc())) return NameLoc::get(n.getName(), l);
  return l;
}

// Named barrier id and thread count for the threads that execute `op`:
// its role's warpgroups (ids 1.. per role), else the whole block (id 0).
std::pair<int64_t, int64_t> groupBarrier(Operation *op) {
  if (auto role = op->getParentOfType<RoleOp>()) {
    int64_t id = 1;
    for (auto r : op->getParentOfType<func::FuncOp>().getOps<RoleOp>()) {
      if (r == role) break;
      ++id;
    }
    return {id, role.getNumWarpgroups() * 128};
  }
  return {0, 0};
}

void emitGroupSync(OpBuilder &b, Location loc, Operation *at) {
  auto [id, threads] = groupBarrier(at);
  if (id == 0) BlockSyncOp::create(b, loc);
  else NamedBarrierOp::create(b, loc, id, threads);
}

int64_t tileBytes(Type t) { return cast<SharedType>(t).getSizeInBytes(); }

struct LowerChannels : ::mlir::qla::impl::QlaLowerChannelsBase<LowerChannels> {
  func::FuncOp fn;
  Block *entry = nullptr;
  Operation *initPoint = nullptr;  // barrier_inits go before this; the block_sync after them
  bool needSync = false;
  // A channel's slot tiles, full and empty barriers, and whether its puts
  // store with the producer's threads (prepareChannel).
  struct Bars {
    SmallVector<Value> buffers;  // `depth` copies of every slot tile
    Value full, empty;
    bool byThreads = false;
  };
  DenseMap<Operation *, Bars> bars;
  // `over` pairs: a channel's partner, and whether it is the one over (y) or
  // the one under (x).
  struct Partner {
    Operation *other = nullptr;  // erased once lowered: a key, never dereferenced
    bool isOver = false;
    int64_t group = 0;           // the pair's id (qla.union on the slot tiles)
  };
  DenseMap<Operation *, Partner> partner;

  // Barriers and rings are created at function entry so that every role sees them.
  Value makeBarriers(Location loc, unsigned count, int64_t arrivals) {
    OpBuilder b(initPoint);
    auto bars = BarriersOp::create(b, loc, BarriersType::get(&getContext(), count),
                                     b.getI64IntegerAttr(arrivals), IntegerAttr());
    BarrierInitOp::create(b, loc, bars);
    needSync = true;
    return bars;
  }

  void runOnOperation() override {
    fn = getOperation();
    if (fn.getBody().empty()) return;
    entry = &fn.getBody().front();
    // Insert the setup after the leading allocations/constants.
    OpBuilder b0(entry, entry->begin());
    auto marker = BlockSyncOp::create(b0, fn.getLoc());
    initPoint = marker;

    SmallVector<ChannelOp> channels;
    fn.walk([&](ChannelOp ch) { channels.push_back(ch); });
    // `over`: channel y's slot shares channel x's bytes (both depth 1). A
    // partner the specialization left out leaves the other a plain channel.
    for (ChannelOp y : channels) {
      auto over = y->getAttrOfType<StringAttr>("qla.over");
      if (!over) continue;
      for (ChannelOp x : channels)
        if (x != y && x.getName() == over.getValue()) {
          if (x.getType().getDepth() != 1 || y.getType().getDepth() != 1) {
            y.emitOpError("'over' needs two channels of depth 1");
            return signalPassFailure();
          }
          if (partner.count(x) || partner.count(y)) {
            y.emitOpError("a channel shares its slot with one other at most");
            return signalPassFailure();
          }
          const int64_t group = int64_t(partner.size() / 2);
          partner[x] = {y.getOperation(), false, group};
          partner[y] = {x.getOperation(), true, group};
        }
    }
    // Every channel's barriers first: a put of one channel of a pair waits
    // on the other's `empty`.
    for (ChannelOp ch : channels)
      if (failed(prepareChannel(ch))) return signalPassFailure();
    for (ChannelOp ch : channels)
      if (failed(lowerChannel(ch))) return signalPassFailure();

    // One-shot loads: consecutive loads (only side-effect-free ops between
    // them) share one barrier and one wait, so their copies overlap.
    SmallVector<SmallVector<LoadOp>> groups;
    fn.walk([&](Block *block) {
      SmallVector<LoadOp> run;
      auto close = [&] {
        if (!run.empty()) groups.push_back(run);
        run.clear();
      };
      for (Operation &op : *block) {
        auto load = dyn_cast<LoadOp>(op);
        // Bounded (`until`) loads stay per-thread copies: TMA only clips at the tensor's edge.
        if (load && isa<SharedType>(load.getDst().getType()) && !op.getParentOfType<PutOp>() &&
            load.getLimits().empty()) {
          // A second copy into a tile already in the group must land after the first.
          if (llvm::any_of(run, [&](LoadOp o) { return o.getDst() == load.getDst(); })) close();
          run.push_back(load);
        } else if (isa<AllocSharedOp, AllocFragOp>(op)) {
          // Declarations between the copies do not separate them.
        } else if (op.getNumRegions() != 0 || !isMemoryEffectFree(&op))
          close();
      }
      close();
    });
    for (auto &g : groups) lowerOneShotLoads(g);

    if (!needSync) marker.erase();
  }

  // A channel's `full` and `empty` barriers. full: one arrival per phase (the
  // elected producer thread) where every put is TMA loads only; one per
  // thread of the producer role where a put's threads write the slot
  // (lowerComputePut, which then lowers every put of the channel). empty: one
  // arrival per thread of every consumer role, so a slot is free only once
  // all of them released it (each thread after its own reads: no barrier
  // among a role's threads).
  LogicalResult prepareChannel(ChannelOp ch) {
    Location loc = ch.getLoc();
    unsigned depth = ch.getType().getDepth();
    SmallVector<PutOp> puts;
    SmallVector<RoleOp> getRoles;
    for (Operation *u : ch.getResult().getUsers()) {
      if (auto p = dyn_cast<PutOp>(u)) puts.push_back(p);
      else if (auto g = dyn_cast<GetOp>(u)) {
        if (!llvm::is_contained(getRoles, g->getParentOfType<RoleOp>())) getRoles.push_back(g->getParentOfType<RoleOp>());
      } else
        return u->emitOpError("cannot use a channel");
    }
    if (puts.empty()) return ch.emitOpError("has no put");
    RoleOp putRole = puts.front()->getParentOfType<RoleOp>();
    int64_t releases = 0;
    for (RoleOp r : getRoles) releases += r.getNumWarpgroups() * 128;
    // A put whose body is more than TMA loads into the slot (and their
    // offsets' arithmetic) runs on the producer role's threads: fragment
    // stores, or staging (fragments loaded, filled, cast or mapped in the put;
    // what else a put may hold, PutOp::verify says).
    const bool byThreads = llvm::any_of(puts, [](PutOp p) {
      return llvm::any_of(p.getBody().front().without_terminator(), [](Operation &o) {
        if (auto l = dyn_cast<LoadOp>(o)) return !isa<SharedType>(l.getDst().getType());
        return !o.hasTrait<OpTrait::ConstantLike>() && !isa<arith::ArithDialect>(o.getDialect());
      });
    });
    Bars &b = bars[ch];
    // Storage: `depth` copies of every slot tile (before the barriers, as
    // each channel's were when channels were lowered one by one). The tiles
    // of an `over` pair share one region of the arena (qla-assign-resources),
    // x's tiles and y's each from its start.
    {
      OpBuilder ob(initPoint);
      auto it = partner.find(ch);
      for (Type t : ch.getType().getSlotTypes()) {
        auto a = AllocSharedOp::create(ob, loc, t, ob.getI64IntegerAttr(depth), IntegerAttr());
        if (it != partner.end()) {
          a->setAttr("qla.union", ob.getI64IntegerAttr(it->second.group));
          a->setAttr("qla.union_member", ob.getI64IntegerAttr(it->second.isOver ? 1 : 0));
        }
        b.buffers.push_back(a);
      }
    }
    b.byThreads = byThreads;
    b.full = makeBarriers(loc, depth, byThreads ? putRole.getNumWarpgroups() * 128 : 1);
    b.empty = makeBarriers(loc, depth, releases);
    return success();
  }

  LogicalResult lowerChannel(ChannelOp ch) {
    Location loc = ch.getLoc();
    auto ct = ch.getType();
    unsigned depth = ct.getDepth();
    SmallVector<PutOp> puts;
    SmallVector<GetOp> gets;
    for (Operation *u : ch.getResult().getUsers()) {
      if (auto p = dyn_cast<PutOp>(u)) puts.push_back(p);
      else if (auto g = dyn_cast<GetOp>(u)) gets.push_back(g);
      else return u->emitOpError("cannot use a channel");
    }
    RoleOp putRole = puts.front()->getParentOfType<RoleOp>();
    // The consumer roles; each has its own ring cursor.
    SmallVector<RoleOp> getRoles;
    for (GetOp g : gets)
      if (!llvm::is_contained(getRoles, g->getParentOfType<RoleOp>())) getRoles.push_back(g->getParentOfType<RoleOp>());

    const Bars &cb = bars[ch];
    ArrayRef<Value> buffers = cb.buffers;
    Value full = cb.full, empty = cb.empty;
    const bool byThreads = cb.byThreads;
    std::string name = ch.getName().str();
    // The partner's `empty` and the phase to wait for on it, in a put: y's
    // fill n waits for x's release n (y's own phase); x's fill n + 1 for y's
    // release n (x's flipped phase, as for its own slot: a fresh barrier
    // passes the first time).
    auto waitPartner = [&](OpBuilder &pb, Location l, Value slot, Value phase, Value flipped) {
      auto it = partner.find(ch);
      if (it == partner.end()) return;
      const Bars &ob = bars[it->second.other];
      BarrierWaitOp::create(pb, l, ob.empty, slot, it->second.isOver ? phase : flipped)
          ->setAttr(kWhat, pb.getStringAttr(name + ".put.over"));
    };

    auto makeRing = [&](RoleOp role, StringRef suffix) {
      OpBuilder b(&role.getBody().front(), role.getBody().front().begin());
      return RingOp::create(b, loc, RingType::get(&getContext(), depth), b.getStringAttr(name + suffix))
          .getResult();
    };
    Value putRing = makeRing(putRole, ".put");
    DenseMap<Operation *, Value> getRings;
    for (RoleOp r : getRoles)
      getRings[r] = makeRing(r, getRoles.size() == 1 ? std::string(".get") : ".get." + r.getName().str());

    int64_t slotBytes = 0;
    for (Type t : ct.getSlotTypes()) slotBytes += tileBytes(t);

    for (PutOp put : puts) {
      if (byThreads) {
        if (failed(lowerComputePut(put, buffers, full, empty, putRing, name, waitPartner))) return failure();
        continue;
      }
      OpBuilder b(put);
      Location l = put.getLoc();
      Value slot = RingSlotOp::create(b, l, b.getIndexType(), putRing);
      Value phase = RingPhaseOp::create(b, l, b.getI32Type(), putRing);
      auto elect = ElectOp::create(b, l);
      elect.getBody().emplaceBlock();
      OpBuilder eb = OpBuilder::atBlockEnd(&elect.getBody().front());
      // A fresh barrier completes phase "1" at once, so the first pass over
      // the ring does not wait: producers wait on the flipped phase.
      Value one = arith::ConstantIntOp::create(eb, l, eb.getI32Type(), 1);
      Value flipped = arith::XOrIOp::create(eb, l, phase, one);
      BarrierWaitOp::create(eb, l, empty, slot, flipped)->setAttr(kWhat, eb.getStringAttr(name + ".put"));
      waitPartner(eb, l, slot, phase, flipped);
      BarrierExpectTxOp::create(eb, l, full, slot, eb.getI64IntegerAttr(slotBytes));
      IRMapping map;
      for (auto [arg, buf] : llvm::zip(put.getBody().front().getArguments(), buffers))
        map.map(arg, SlotOp::create(eb, namedAs(arg, l), buf.getType(), buf, slot).getResult());
      for (Operation &op : put.getBody().front().without_terminator()) {
        if (auto load = dyn_cast<LoadOp>(op)) {
          if (failed(checkTmaLoad(load))) return failure();
          SmallVector<Value> coords;
          for (Value v : load.getOffsets()) coords.push_back(map.lookupOrDefault(v));
          TmaLoadOp::create(eb, load.getLoc(), load.getSrc(), coords, map.lookup(load.getDst()),
                               full, slot, load.getDroppedAttr());
        } else {
          eb.clone(op, map);
        }
      }
      qlanv::YieldOp::create(eb, l);
      RingAdvanceOp::create(b, l, putRing);
      put.erase();
    }

    for (GetOp get : gets) {
      Value getRing = getRings.lookup(get->getParentOfType<RoleOp>());
      OpBuilder b(get);
      Location l = get.getLoc();
      Value slot = RingSlotOp::create(b, l, b.getIndexType(), getRing);
      Value phase = RingPhaseOp::create(b, l, b.getI32Type(), getRing);
      BarrierWaitOp::create(b, l, full, slot, phase)->setAttr(kWhat, b.getStringAttr(name + ".get"));
      IRMapping map;
      for (auto [arg, buf] : llvm::zip(get.getBody().front().getArguments(), buffers))
        map.map(arg, SlotOp::create(b, namedAs(arg, l), buf.getType(), buf, slot).getResult());
      for (Operation &op : get.getBody().front().without_terminator()) b.clone(op, map);
      // Gemms in the body are waited on (wgmma_wait) before this point once
      // lowered, so the slot's tiles are no longer read by the async proxy
      // (a warpgroup's products are collective: one thread's wait covers
      // them). Thread copies out of the slot are the thread's own loads,
      // which its arrival (release) orders before the producer's wait
      // (acquire) and refill: every thread arrives, none waits for another.
      BarrierArriveOp::create(b, l, empty, slot)->setAttr(kWhat, b.getStringAttr(name + ".release"));
      RingAdvanceOp::create(b, l, getRing);
      get.erase();
    }
    ch.erase();
    return success();
  }

  static LogicalResult checkTmaLoad(LoadOp load) {
    if (load.getLimits().empty()) return success();
    return load.emitOpError("a put cannot bound its copies with `until` (TMA clips only at the tensor's edge); "
                            "mask the rows in a map instead");
  }

  // A put of a channel some put of which stores fragments into the slot
  // (qla.copy) runs on every thread of the producer role: all wait for the
  // slot to be empty, each stores its part, and the elected thread issues the
  // TMA loads if any. Ordering for the consumers (async proxy: wgmma, TMA
  // store; or threads): every writing thread: fence.proxy.async.shared::cta
  // (its generic-proxy stores become visible to the async proxy), then its
  // own arrival on `full` (release), which the consumer's wait acquires; the
  // elected thread arms the TMA bytes (expect_tx) before it arrives. So
  // `full` expects one arrival per producer thread for every put of such a
  // channel (a TMA-only put of it lowers here too), and no thread waits for
  // another (before: a named barrier of the role, then one elected arrival).
  LogicalResult lowerComputePut(PutOp put, ArrayRef<Value> buffers, Value full, Value empty, Value putRing,
                                StringRef name,
                                llvm::function_ref<void(OpBuilder &, Location, Value, Value, Value)> waitPartner) {
    OpBuilder b(put);
    Location l = put.getLoc();
    Value slot = RingSlotOp::create(b, l, b.getIndexType(), putRing);
    Value phase = RingPhaseOp::create(b, l, b.getI32Type(), putRing);
    // A fresh barrier completes phase "1" at once (see the TMA put).
    Value one = arith::ConstantIntOp::create(b, l, b.getI32Type(), 1);
    Value flipped = arith::XOrIOp::create(b, l, phase, one);
    BarrierWaitOp::create(b, l, empty, slot, flipped)->setAttr(kWhat, b.getStringAttr(name + ".put"));
    waitPartner(b, l, slot, phase, flipped);
    IRMapping map;
    for (auto [arg, buf] : llvm::zip(put.getBody().front().getArguments(), buffers))
      map.map(arg, SlotOp::create(b, namedAs(arg, l), buf.getType(), buf, slot).getResult());
    SmallVector<LoadOp> tma;
    for (Operation &op : put.getBody().front().without_terminator()) {
      auto load = dyn_cast<LoadOp>(op);
      if (load && isa<SharedType>(load.getDst().getType())) {
        if (failed(checkTmaLoad(load))) return failure();
        tma.push_back(load);
      } else if (auto copy = dyn_cast<CopyOp>(op); copy && isa<SharedType>(copy.getDst().getType())) {
        b.clone(op, map)->setAttr("qla.slot_fill", b.getUnitAttr());
        FenceProxyAsyncOp::create(b, copy.getLoc());
      } else {  // staging in the put's fragments (a load into one is the threads' own)
        b.clone(op, map);
      }
    }
    // The elected thread arms `full` with the TMA bytes (expect_tx without an
    // arrival) and issues the loads; then every thread arrives after its own
    // stores and fence (release), the elected one too, so the phase cannot
    // complete before the bytes are armed. No barrier among the role's threads.
    if (!tma.empty()) {
      auto elect = ElectOp::create(b, l);
      elect.getBody().emplaceBlock();
      OpBuilder eb = OpBuilder::atBlockEnd(&elect.getBody().front());
      int64_t bytes = 0;
      for (LoadOp ld : tma) bytes += tileBytes(ld.getDst().getType());
      BarrierExpectTxOp::create(eb, l, full, slot, eb.getI64IntegerAttr(bytes), eb.getUnitAttr());
      for (LoadOp ld : tma) {
        SmallVector<Value> coords;
        for (Value v : ld.getOffsets()) coords.push_back(map.lookupOrDefault(v));
        TmaLoadOp::create(eb, ld.getLoc(), ld.getSrc(), coords, map.lookup(ld.getDst()), full, slot,
                             ld.getDroppedAttr());
      }
      qlanv::YieldOp::create(eb, l);
    }
    BarrierArriveOp::create(b, l, full, slot)->setAttr(kWhat, b.getStringAttr(name + ".filled"));
    RingAdvanceOp::create(b, l, putRing);
    put.erase();
    return success();
  }

  void lowerOneShotLoads(SmallVector<LoadOp> &loads) {
    LoadOp last = loads.back();  // every offset is defined before it
    Location l = loads.front().getLoc();
    Value bars = makeBarriers(l, 1, 1);
    Value ring;
    {
      OpBuilder b(initPoint);
      ring = RingOp::create(b, l, RingType::get(&getContext(), 1), b.getStringAttr("load")).getResult();
    }
    int64_t bytes = 0;
    for (LoadOp ld : loads) bytes += tileBytes(ld.getDst().getType());
    OpBuilder b(last);
    // The tiles may still be read by the group from an earlier iteration.
    emitGroupSync(b, l, last);
    Value slot = RingSlotOp::create(b, l, b.getIndexType(), ring);
    Value phase = RingPhaseOp::create(b, l, b.getI32Type(), ring);
    auto elect = ElectOp::create(b, l);
    elect.getBody().emplaceBlock();
    OpBuilder eb = OpBuilder::atBlockEnd(&elect.getBody().front());
    BarrierExpectTxOp::create(eb, l, bars, slot, eb.getI64IntegerAttr(bytes));
    for (LoadOp ld : loads)
      TmaLoadOp::create(eb, ld.getLoc(), ld.getSrc(), ld.getOffsets(), ld.getDst(), bars, slot, ld.getDroppedAttr());
    qlanv::YieldOp::create(eb, l);
    auto wait = BarrierWaitOp::create(b, l, bars, slot, phase);
    wait->setAttr(kWhat, b.getStringAttr("load"));
    auto advance = RingAdvanceOp::create(b, l, ring);
    // The wait moves down to the first op that touches one of the tiles (or
    // the block's end), so that the copies overlap the work in between.
    llvm::SmallPtrSet<Value, 8> tiles;
    for (LoadOp ld : loads) tiles.insert(ld.getDst());
    for (LoadOp ld : loads) ld->erase();
    auto touches = [&](Operation *op) {
      return op->walk([&](Operation *o) {
               for (Value v : o->getOperands())
                 if (tiles.contains(v)) return WalkResult::interrupt();
               return WalkResult::advance();
             }).wasInterrupted();
    };
    Operation *at = advance->getNextNode();
    while (at && !at->hasTrait<OpTrait::IsTerminator>() && !touches(at)) at = at->getNextNode();
    if (at && at != advance->getNextNode()) {
      wait->moveBefore(at);
      advance->moveBefore(at);
    }
  }
};

}  // namespace
