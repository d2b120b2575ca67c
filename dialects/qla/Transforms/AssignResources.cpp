// Resource assignment: the shared-memory arena and register budgets.
#include "dialects/qla/Transforms/Passes.h"
#include "dialects/qla/Transforms/TmaStores.h"

#include <array>
#include <functional>
#include <map>

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
constexpr int64_t kSmemPerSm = 228 * 1024;      // shared memory per SM on sm_90
constexpr int64_t kReservedSmemBytes = 1024;    // reserved by the system per block

int64_t alignTo(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

// The warpgroups that execute `op`: its role's, or the kernel's (qla.threads / 128).
int64_t groupWarpgroups(Operation *op) {
  if (auto wg = op->getParentOfType<WarpgroupsOp>()) return int64_t(wg.getWgEnd()) - int64_t(wg.getWgBegin()) + 1;
  if (auto fn = op->getParentOfType<func::FuncOp>())
    if (auto t = fn->getAttrOfType<IntegerAttr>("qla.threads")) return t.getInt() / 128;
  return 0;
}

// Shared scratch (bytes) the emitter needs for `op`: scans and picks stage a
// vector or one value, column reductions one row per warp; the triangular
// inverse keeps L and X, padded rows.
int64_t scratchBytes(Operation *op) {
  if (auto s = dyn_cast<ScanOp>(op)) return 4 * s.getSrc().getType().getShape()[0];
  // A column reduction: one row of partial results per warp of the group.
  if (auto r = dyn_cast<ReduceOp>(op))
    if (r.getDim() == 0) return 4 * 4 * std::max<int64_t>(1, groupWarpgroups(op)) * r.getSrc().getType().getShape()[1];
  if (isa<FragPickOp>(op)) return 4;
  if (auto inv = dyn_cast<InvUnitLowerOp>(op)) {
    // None where the blocks are inverted in registers; with `blocks` only
    // the diagonal blocks, bs x (bs + 1) each (the emitter's layout).
    if (inv.inRegisters(groupWarpgroups(op))) return 0;
    if (inv.getF16Operands()) return InvUnitLowerOp::kMmaScratchBytes;
    int64_t n = inv.getSrc().getType().getShape()[0];
    if (auto bs = inv.getBlocks()) return 2 * 4 * n * (*bs + 1);
    return 2 * 4 * n * (n + 1);
  }
  return 0;
}

struct AssignResources : ::mlir::qla::impl::QlaAssignResourcesBase<AssignResources> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn.isExternal()) return;
    Builder b(&getContext());

    // The arena: tiles and op scratch placed by liveness (first fit; two
    // tiles share bytes when their live ranges are disjoint), then the
    // barriers. Swizzled tiles need 1024-byte alignment (the 8-row swizzle
    // atom), other tiles 128 (TMA destinations); mbarriers 8 bytes.
    int64_t offset = 0;
    bool failed = false;

    // Program positions: pre-order index, and the last index inside each op.
    llvm::DenseMap<Operation *, int64_t> pos, last;
    int64_t n = 0;
    std::function<void(Operation *)> number = [&](Operation *op) {
      pos[op] = n++;
      for (Region &r : op->getRegions())
        for (Block &blk : r)
          for (Operation &o : blk) number(&o);
      last[op] = n - 1;
    };
    for (Block &blk : fn.getBody())
      for (Operation &o : blk) number(&o);
    // Warp-specialized roles run concurrently although they are laid out one
    // after another: in such kernels only items of one role share (in the
    // role's program order, as in a kernel without roles), and items outside
    // every role (the channels' slots, the prologue's) share with nothing.
    bool hasRoles = false;
    fn.walk([&](WarpgroupsOp) { hasRoles = true; });
    auto roleOf = [](Operation *op) -> Operation * { return op->getParentOfType<WarpgroupsOp>(); };

    struct Item {
      Operation *op;
      int64_t begin, end, bytes, align;
      Operation *role;  // the enclosing role, null outside every role
    };
    SmallVector<Item> items;
    // Channel slots that share bytes (`over`, qla-lower-channels: qla.union
    // and qla.union_member 0 or 1 on their tiles): one region as large as the
    // larger member, each member's tiles laid out from its start.
    std::map<int64_t, std::array<SmallVector<AllocSharedOp>, 2>> unionTiles;
    fn.walk([&](AllocSharedOp a) {
      if (auto g = a->getAttrOfType<IntegerAttr>("qla.union"))
        unionTiles[g.getInt()][a->getAttrOfType<IntegerAttr>("qla.union_member").getInt() != 0].push_back(a);
    });
    // Member tiles' offsets within the region, and its size.
    auto layOut = [](ArrayRef<AllocSharedOp> tiles, SmallVectorImpl<int64_t> &offs) {
      int64_t at = 0;
      for (AllocSharedOp t : tiles) {
        at = alignTo(at, t.getType().getSwizzle() ? 1024 : 128);
        offs.push_back(at);
        at += t.getType().getSizeInBytes() * t.getCount();
      }
      return at;
    };
    for (auto &[g, members] : unionTiles) {
      SmallVector<int64_t> o0, o1;
      const int64_t bytes = std::max(layOut(members[0], o0), layOut(members[1], o1));
      Operation *first = members[0].empty() ? members[1].front() : members[0].front();
      items.push_back({first, 0, n, bytes, 1024, nullptr});
    }
    fn.walk([&](Operation *op) {
      if (op->hasAttr("qla.union")) return;  // placed with its region
      if (auto a = dyn_cast<AllocSharedOp>(op)) {
        // A tile no op uses (one that only a specialization's untaken
        // branches read or write) takes no bytes.
        if (a.getResult().use_empty()) {
          a.setOffsetAttr(b.getI64IntegerAttr(0));
          return;
        }
        Block *home = a->getBlock();
        int64_t endPos = pos[a];
        // Uses, through slot views; an async read (wgmma) lasts until the
        // wait after it. A use nested in a loop keeps the tile for the loop.
        bool pinned = false;  // shares with nothing
        SmallVector<Value> work{a.getResult()};
        while (!work.empty()) {
          Value v = work.pop_back_val();
          for (Operation *u : v.getUsers()) {
            if (auto sl = dyn_cast<SlotOp>(u)) work.push_back(sl.getResult());
            Operation *at = u;
            if (isa<WgmmaOp>(u)) {
              at = nullptr;  // no wait 0 after it in its block: keep the tile to the end
              for (Operation *o = u->getNextNode(); o; o = o->getNextNode())
                if (auto w = dyn_cast<WgmmaWaitOp>(o); w && w.getPending() == 0) {
                  at = o;
                  break;
                }
            }
            if (isa<TmaLoadOp>(u)) pinned = true;  // see below
            // A store the emitter may do by TMA (tmaStoreCandidate; with
            // --no-tma-stores too) reads its source after the barrier that
            // follows it.
            if (auto st = dyn_cast<StoreOp>(u); st && st.getSrc() == v && tmaStoreCandidate(st)) pinned = true;
            Operation *anc = at ? home->findAncestorOpInBlock(*at) : nullptr;
            endPos = std::max(endPos, anc ? last[anc] : (int64_t)n);
          }
        }
        // A TMA write is issued by one thread with no barrier in front of it
        // and lands whenever its barrier says so, a TMA store reads its source
        // until its issuer waits: such tiles share with nothing (live from the
        // start to the end).
        int64_t beginPos = pinned ? 0 : pos[a];
        if (pinned) endPos = n;
        auto t = a.getType();
        items.push_back(
            {op, beginPos, endPos, t.getSizeInBytes() * a.getCount(), t.getSwizzle() ? 1024 : 128, roleOf(op)});
      } else if (int64_t bytes = scratchBytes(op)) {
        // Staging space of ops that exchange fragment elements between threads.
        items.push_back({op, pos[op], last[op], bytes, 16, roleOf(op)});
      }
    });
    struct Placed {
      int64_t off, size, begin, end;
      Operation *role;
    };
    SmallVector<Placed> placed;
    // First fit, the most aligned items first (no alignment holes in front
    // of 1024-byte tiles), program order among equals.
    llvm::stable_sort(items, [](const Item &x, const Item &y) { return x.align > y.align; });
    for (const Item &it : items) {
      int64_t off = 0;
      // Lowest aligned offset clear of every placed item it may not share with.
      auto apart = [&](const Placed &p) {
        if (hasRoles && (!it.role || it.role != p.role)) return false;
        return p.end < it.begin || it.end < p.begin;
      };
      bool moved = true;
      while (moved) {
        moved = false;
        for (const Placed &p : placed) {
          if (apart(p)) continue;
          if (off < p.off + p.size && p.off < off + it.bytes) {
            off = alignTo(p.off + p.size, it.align);
            moved = true;
          }
        }
      }
      placed.push_back({off, it.bytes, it.begin, it.end, it.role});
      offset = std::max(offset, off + it.bytes);
      if (auto g = it.op->getAttrOfType<IntegerAttr>("qla.union")) {
        for (auto &tiles : unionTiles[g.getInt()]) {
          SmallVector<int64_t> offs;
          layOut(tiles, offs);
          for (auto [t, o] : llvm::zip(tiles, offs)) t.setOffsetAttr(b.getI64IntegerAttr(off + o));
        }
      } else if (auto a = dyn_cast<AllocSharedOp>(it.op)) {
        a.setOffsetAttr(b.getI64IntegerAttr(off));
      } else {
        it.op->setAttr("qla.scratch_offset", b.getI64IntegerAttr(off));
      }
    }
    // Barriers after the tiles (no alignment gap in front of the first tile).
    fn.walk([&](BarriersOp bars) {
      offset = alignTo(offset, 8);
      bars.setOffsetAttr(b.getI64IntegerAttr(offset));
      offset += 8 * bars.getType().getCount();
    });
    int64_t smem = alignTo(offset, 16);
    if (smem > kMaxSmemBytes) {
      fn.emitError("shared memory needed (") << smem << " bytes) exceeds the " << kMaxSmemBytes
                                             << " bytes a block can have on sm_90";
      return signalPassFailure();
    }
    // occupancy(N): N blocks share an SM's shared memory (each also holds
    // 1 KB the system reserves) and its register file.
    int64_t minBlocks = 1;
    if (auto mb = fn->getAttrOfType<IntegerAttr>(kMinBlocksAttr)) minBlocks = mb.getInt();
    if (minBlocks > 1 && minBlocks * (smem + kReservedSmemBytes) > kSmemPerSm) {
      fn.emitError("occupancy(") << minBlocks << ") needs " << minBlocks << " x (" << smem << " + "
                                 << kReservedSmemBytes << ") bytes of shared memory but an SM has " << kSmemPerSm;
      return signalPassFailure();
    }
    const int64_t regFile = kRegisterFile / minBlocks;
    fn->setAttr("qla.smem_bytes", b.getI64IntegerAttr(smem));

    // Register budgets. With __launch_bounds__(threads, N) every thread starts
    // with the block's share of the file (1 / N of it) divided evenly (rounded
    // down to 8); roles move from there.
    int64_t threads = 128;
    if (auto th = fn->getAttrOfType<IntegerAttr>(kThreadsAttr)) threads = th.getInt();
    int64_t base = std::min<int64_t>(255, regFile / threads) / 8 * 8;
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
        SetMaxNRegOp::create(ob, wg.getLoc(), ob.getI64IntegerAttr(regs), ob.getBoolAttr(regs > base));
      }
    }
    total += (threads / 128 - coveredWgs) * 128 * base;
    if (total > regFile) {
      const std::string holder =
          minBlocks > 1 ? "a block of occupancy(" + std::to_string(minBlocks) + ")" : std::string("the register file");
      fn.emitError("register budgets need ") << total << " registers but " << holder << " has " << regFile
                                             << " (reduce some role's regs)";
      failed = true;
    }
    fn->setAttr("qla.base_regs", b.getI64IntegerAttr(base));
    if (failed) signalPassFailure();
  }
};

}  // namespace
