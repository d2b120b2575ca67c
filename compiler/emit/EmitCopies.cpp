// CUDA emitter: copies between global memory, shared tiles and fragments
// (per-thread, vectorized pairs, TMA stores, ldmatrix/stmatrix transposes).
#include "compiler/emit/EmitterCore.h"

#include <cstring>

#include <fmt/format.h>

#include "llvm/ADT/MapVector.h"
#include "mlir/IR/Matchers.h"

#include "compiler/emit/EmitHelpers.h"
#include "dialects/qla/IR/FragLayout.h"
#include "dialects/qla/Transforms/TmaStores.h"

using namespace mlir;
using namespace mlir::qla;
using namespace mlir::qlanv;

namespace qla::compiler {

using namespace emit_detail;

namespace {
// The origin (r0, c0) of a copy's sub-tile (CopyOp box), (0, 0) without one.
std::pair<int64_t, int64_t> boxOrigin(CopyOp op) {
  if (auto b = op.getBox()) return {(*b)[0], (*b)[1]};
  return {0, 0};
}
std::string plusConst(const std::string &e, int64_t c) { return c ? fmt::format("({} + {})", e, c) : e; }
}  // namespace

Emitter::TileAccess Emitter::openTileAccess(Value g, ValueRange offsets, ArrayRef<int64_t> dropped, ValueRange limits,
                                            ArrayRef<int64_t> limitDims, bool forWrite) {
  int t = tensorIndex(g);
  const TensorArgInfo &ti = info_.tensors[t];
  const std::string &tn = tensorNames_[t];
  TileAccess a;
  std::string off = "0LL", ok = "true";
  // In a role with fresh_addresses, the offsets are taken afresh
  // (qla::dev::opaque): the slice's 64-bit pointer is formed at the access,
  // not hoisted out of the role's loop and held (or spilled) across it.
  const bool freshOffsets = group().freshAddressRegs > 0;
  for (size_t d = 0; d < ti.dims.size(); ++d) {
    std::string o = name(offsets[d]), stride = fmt::format("{}_stride{}", tn, d);
    const bool opaque = freshOffsets && !matchPattern(offsets[d], m_Constant());
    off += fmt::format(" + (long long){} * {}", opaque ? fmt::format("qla::dev::opaque({})", o) : o, stride);
    if (llvm::is_contained(dropped, (int64_t)d)) {
      ok += fmt::format(" && {0} >= 0 && {0} < {1}", o, ti.dims[d]);
      for (auto [lim, ld] : llvm::zip(limits, limitDims))
        if (ld == (int64_t)d) ok += fmt::format(" && {} < {}", o, name(lim));
      continue;
    }
    // Tile index i is in range iff 0 <= o + i < min(dim, limits).
    std::string hi = ti.dims[d];
    for (auto [lim, ld] : llvm::zip(limits, limitDims))
      if (ld == (int64_t)d) hi = fmt::format("min({}, {})", hi, name(lim));
    a.stride.push_back(declareStr("long long", stride, "ts"));
    a.lo.push_back(declareStr("int", fmt::format("-({})", o), "tlo"));
    a.hi.push_back(declareStr("int", fmt::format("{} - ({})", hi, o), "thi"));
  }
  a.ok = declareStr("bool", ok, "tok");
  std::string p = fresh("tp");
  // The pointer is formed only where it is in range (ok), never dereferenced otherwise.
  line(fmt::format("{}auto* const {} = {} + ({} ? {} : 0LL);", forWrite ? "" : "const ", p, tn, a.ok, off));
  a.ptr = p;
  return a;
}

// A fragment <-> global copy. Accumulator-layout registers come in pairs of
// neighbouring columns (FragLayout::pairsColumns: r, r + 1 for even r); where
// the tensor's last dim is the tile's column dim with stride 1 and the pair is
// 4- or 8-byte aligned, the pair moves as one access.
LogicalResult Emitter::emitFragGlobal(Value frag, Value g, ValueRange offsets, ArrayRef<int64_t> dropped,
                                      ValueRange limits, ArrayRef<int64_t> limitDims, bool store, bool transpose,
                                      bool add) {
  auto ft = cast<FragType>(frag.getType());
  const FragLayout lay = FragLayout::of(ft);
  Type gt = cast<GlobalType>(g.getType()).getElementType();
  const int64_t rank = cast<GlobalType>(g.getType()).getRank();
  const bool lastIsCol = !llvm::is_contained(dropped, rank - 1);
  const int64_t eb = elementBytes(gt);
  // Transposed: a register pair's columns are neighbouring rows of the slice.
  const bool pairs = !transpose && lay.rank() == 2 && lay.pairsColumns() && lastIsCol &&
                     (gt.isBF16() || gt.isF16() || gt.isF32());
  // An add into memory: one of the threads that hold a replicated element
  // (a row or column vector's) adds it.
  const bool owned = add && lay.replication() > 1;
  if (owned) line(fmt::format("if ({}) {{", lay.ownerText()));
  else line("{");
  // One element written (or added) at `ptr` (`off`: "" for *ptr, else
  // ptr[off]).
  auto putOne = [&](const std::string &ptr, const std::string &off, const std::string &reg) {
    const std::string v = fragElem(frag, reg);
    if (add) return fmt::format("qla::dev::red_add_f32({}, {});", off.empty() || off == "0" ? ptr : ptr + " + " + off, v);
    return fmt::format("{} = {};", off.empty() ? "*" + ptr : ptr + "[" + off + "]", storeFromFloat(gt, v));
  };
  ++indent_;
  TileAccess a = openTileAccess(g, offsets, dropped, limits, limitDims, store);
  if (!pairs) {
    RegLoop l = openRegLoop(ft);
    std::vector<std::string> at = l.idx;
    if (transpose) std::swap(at[0], at[1]);  // slice [j, i] is fragment [i, j]
    std::string inb = a.inBounds(at), ptr = a.at(at);
    if (store) {
      line(fmt::format("if ({}) {}", inb, putOne(ptr, "", l.reg)));
    } else {
      std::string v = declareStr("float", fmt::format("({}) ? {} : 0.0f", inb, loadAsFloat(gt, "*" + ptr)), "ld");
      fragStore(frag, l.reg, v);
    }
    closeLoop();
    --indent_;
    line("}");
    return success();
  }
  const std::string &cs = a.stride.back(), &rs = a.stride.front();
  std::string vec = declareStr(
      "bool",
      fmt::format("{} == 1 && {} % 2 == 0 && (reinterpret_cast<unsigned long long>({}) & {}) == 0", cs, rs, a.ptr,
                  2 * eb - 1),
      "tvec");
  // A pair as one access: its type, the pair packed from registers r, r + 1,
  // the two values of a loaded word w, and, for a fragment of half a
  // thread's registers or more, a compiler barrier every 16 registers: at
  // most 16 of its loads in flight, so that their addresses and predicates
  // do not all live at once beside it.
  const std::string vt = eb == 4 ? "float2" : "qla::dev::u32";
  auto packed = [&](const std::string &r0, const std::string &r1) {
    std::string v0 = fragElem(frag, r0), v1 = fragElem(frag, r1);
    return eb == 4 ? fmt::format("make_float2({}, {})", v0, v1)
                   : fmt::format("qla::dev::pack_{}x2({}, {})", pfx(gt), v0, v1);
  };
  auto halves = [&](const std::string &w) -> std::pair<std::string, std::string> {
    if (eb == 4) return {w + ".x", w + ".y"};
    return {fmt::format("qla::dev::unpack_{}x2_lo({})", pfx(gt), w), fmt::format("qla::dev::unpack_{}x2_hi({})", pfx(gt), w)};
  };
  // A register pair written (or added) as one access at `p`.
  auto putPair = [&](const std::string &p, const std::string &r0, const std::string &r1) {
    if (add) return fmt::format("qla::dev::red_add_f32x2({}, {}, {});", p, fragElem(frag, r0), fragElem(frag, r1));
    return fmt::format("*reinterpret_cast<{}*>({}) = {};", vt, p, packed(r0, r1));
  };
  auto loadBarrier = [&](const std::string &reg) {
    if (ft.getRegsPerThread() >= 128) line(fmt::format("if ({} % 16 == 14) asm volatile(\"\" ::: \"memory\");", reg));
  };
  // In a role of a warp-specialized kernel, whose loop runs many chunks:
  // the whole tile in bounds and every pair vectorizable (every full chunk
  // of a sequence) takes one unguarded access per pair, with no
  // per-register predicates or branches, and the guarded loop below the
  // rest (a sequence's last chunk). Both are in the code, but the loop runs
  // the first nearly always, which keeps its hot code small (the roles'
  // code shares the SM's instruction cache). Outside roles the guarded loop
  // alone (a second copy of the access raised the decode kernel's spills).
  const bool fastPath = group().barrierId != 0;
  if (fastPath) {
    std::string whole = vec + " && " + a.ok;
    for (size_t d = 0; d < a.lo.size(); ++d)
      whole += fmt::format(" && {} <= 0 && {} >= {}", a.lo[d], a.hi[d], ft.getShape()[d]);
    line(fmt::format("if ({}) {{", whole));
    ++indent_;
    RegLoop f = openRegLoop(ft);
    line(fmt::format("if ({} % 2 == 0) {{", f.reg));
    ++indent_;
    std::string fp = fresh("p");
    // Column stride 1 (vec): the column is an element offset.
    line(fmt::format("{}auto* const {} = {} + (long long)({}) * {} + ({});", store ? "" : "const ", fp, a.ptr, f.idx[0],
                     rs, f.idx[1]));
    std::string f1 = fmt::format("({} + 1)", f.reg);
    if (store) {
      line(putPair(fp, f.reg, f1));
    } else {
      std::string w = fresh("w");
      line(fmt::format("const {0} {1} = *reinterpret_cast<const {0}*>({2});", vt, w, fp));
      auto [lo, hi] = halves(w);
      fragStore(frag, f.reg, lo);
      fragStore(frag, f1, hi);
      loadBarrier(f.reg);
    }
    --indent_;
    line("}");
    closeLoop();
    --indent_;
    line("} else {");
    ++indent_;
  }
  RegLoop l = openRegLoop(ft);  // visits every register; pairs handled at even ones
  line(fmt::format("if ({} % 2 == 0) {{", l.reg));
  ++indent_;
  std::string r1 = fmt::format("({} + 1)", l.reg);  // the pair's second register: the next column
  std::vector<std::string> idx1 = l.idx;
  idx1.back() = fmt::format("({} + 1)", l.idx.back());
  std::string in0 = declareStr("bool", a.inBounds(l.idx), "in");
  std::string in1 = declareStr("bool", a.inBounds(idx1), "in");
  std::string ptr = fresh("p");
  line(fmt::format("{}auto* const {} = {};", store ? "" : "const ", ptr, a.at(l.idx)));
  if (store) {
    line(fmt::format("if ({} && {} && {}) {{", vec, in0, in1));
    line("  " + putPair(ptr, l.reg, r1));
    line("} else {");
    line(fmt::format("  if ({}) {}", in0, putOne(ptr, "0", l.reg)));
    line(fmt::format("  if ({}) {}", in1, putOne(ptr, cs, r1)));
    line("}");
  } else {
    std::string x0 = fresh("x"), x1 = fresh("x");
    line(fmt::format("float {} = 0.0f, {} = 0.0f;", x0, x1));
    line(fmt::format("if ({} && {} && {}) {{", vec, in0, in1));
    ++indent_;
    line(fmt::format("const {0} w_ = *reinterpret_cast<const {0}*>({1});", vt, ptr));
    auto [lo, hi] = halves("w_");
    line(fmt::format("{} = {}; {} = {};", x0, lo, x1, hi));
    --indent_;
    line("} else {");
    line(fmt::format("  if ({}) {} = {};", in0, x0, loadAsFloat(gt, ptr + "[0]")));
    line(fmt::format("  if ({}) {} = {};", in1, x1, loadAsFloat(gt, fmt::format("{}[{}]", ptr, cs))));
    line("}");
    fragStore(frag, l.reg, x0);
    fragStore(frag, r1, x1);
    loadBarrier(l.reg);
  }
  --indent_;
  line("}");
  closeLoop();
  if (fastPath) {
    --indent_;
    line("}");
  }
  --indent_;
  line("}");
  return success();
}

LogicalResult Emitter::emitLoad(LoadOp op) {
  if (!isa<FragType>(op.getDst().getType())) return emitLoadToShared(op);
  return emitFragGlobal(op.getDst(), op.getSrc(), op.getOffsets(), op.getDropped(), op.getLimits(), op.getLimitDims(),
                        /*store=*/false, op.getTranspose());
}

// An L2 prefetch of a 1-D or 2-D slice: by TMA through a load's tensor map
// (below), else the slice's in-range rectangle (openTileAccess's bounds,
// clamped to the slice) goes to qla::dev::prefetch_rows_l2
// (qla/device/prefetch.cuh), in which the group's threads share its rows'
// 128-byte lines; nothing is touched where a dropped dim is out of range,
// and nothing waits.
LogicalResult Emitter::emitPrefetch(PrefetchOp op) {
  auto shape = op.getShape();
  const int64_t eb = elementBytes(op.getSrc().getType().getElementType());
  const bool twoD = shape.size() == 2;
  const int64_t rows = twoD ? shape[0] : 1, cols = shape.back();
  const int64_t nthreads = (group().end - group().begin + 1) * 128;
  // By TMA where a load of the kernel (emitted before this prefetch) has a
  // tensor map of the same tensor whose box tiles the slice (a dropped dim's
  // extent 1, the slice's rows, a divisor of its columns): one thread of the
  // group issues a tensor prefetch per box, a few instructions whatever the
  // slice's size; the box's rows past an `until` limit but inside the tensor
  // are fetched too (a hint), those outside it are not (TMA's bounds).
  const int ti = tensorIndex(op.getSrc());
  const int64_t rank = op.getSrc().getType().getRank();
  for (const TmaParam &p : tmaParams_) {
    if (p.tensor != ti || p.optional || (int64_t)p.box.size() != rank) continue;
    bool tiles = true;
    for (int64_t d = 0, k = 0; d < rank && tiles; ++d) {
      if (llvm::is_contained(op.getDropped(), d)) {
        tiles = p.box[d] == 1;
        continue;
      }
      const int64_t want = shape[k++];
      tiles = k == (int64_t)shape.size() ? p.box[d] >= 1 && want % p.box[d] == 0 : p.box[d] == want;
    }
    if (!tiles) continue;
    const int64_t blockCols = p.box.back();
    line(fmt::format("if (threadIdx.x == {}) {{", group().begin * 128));
    ++indent_;
    for (int64_t b = 0; b < cols / blockCols; ++b) {
      std::string call = fmt::format("qla::dev::tma_prefetch_{}d(&{}", rank, p.name);
      for (int64_t d = rank - 1; d >= 0; --d) {
        std::string c = name(op.getOffsets()[d]);
        if (d == rank - 1 && b) c += fmt::format(" + {}", b * blockCols);
        call += ", " + c;
      }
      line(call + ");");
    }
    --indent_;
    line("}");
    return success();
  }
  line("{");
  ++indent_;
  TileAccess a = openTileAccess(op.getSrc(), op.getOffsets(), op.getDropped(), op.getLimits(), op.getLimitDims(),
                                /*forWrite=*/false);
  auto lo = [&](size_t k) { return fmt::format("max({}, 0)", a.lo[k]); };
  auto hi = [&](size_t k, int64_t n) { return fmt::format("min({}, {})", a.hi[k], n); };
  const size_t c = twoD ? 1 : 0;
  line(fmt::format("if ({}) qla::dev::prefetch_rows_l2(reinterpret_cast<const char*>({}), {}, {} * {}, {}, {}, {}, {}, "
                   "(int)threadIdx.x - {}, {});",
                   a.ok, a.ptr, twoD ? fmt::format("{} * {}", a.stride[0], eb) : std::string("0LL"), a.stride[c], eb,
                   twoD ? lo(0) : std::string("0"), twoD ? hi(0, rows) : std::string("1"), lo(c), hi(c, cols),
                   group().begin * 128, nthreads));
  --indent_;
  line("}");
  return success();
}

LogicalResult Emitter::emitStore(StoreOp op) {
  Type gt = op.getDst().getType().getElementType();
  std::string g = name(op.getDst());
  if (isa<FragType>(op.getSrc().getType()))
    return emitFragGlobal(op.getSrc(), op.getDst(), op.getOffsets(), op.getDropped(), op.getLimits(),
                          op.getLimitDims(), /*store=*/true, op.getTranspose(), op.getAccumulate());
  // Shared → global: by TMA where the tile is one (tmaStoreBox) and the
  // slice lies whole within the tensor and its limits, else the group's
  // threads stride over the tile.
  auto src = cast<SharedType>(op.getSrc().getType());
  std::vector<uint32_t> box;
  const bool tma = tmaStoreBox(op, box);
  // The threads' stores to the tile become visible to the TMA unit.
  if (tma) line("qla::dev::fence_proxy_async_shared();");
  auto staged = wgStaging_.find(op.getSrc());
  const int64_t wgBoxes = staged == wgStaging_.end() ? 0 : staged->second;
  line(wgBoxes ? wgSync() : groupSync());
  line("{");
  ++indent_;
  TileAccess a = openTileAccess(op.getDst(), op.getOffsets(), op.getDropped(), op.getLimits(), op.getLimitDims(),
                                /*forWrite=*/true);
  const int64_t rank = op.getDst().getType().getRank(), eb = elementBytes(gt);
  const bool lastIsCol = !llvm::is_contained(op.getDropped(), rank - 1);
  if (tma) {
    // The slice lies whole in the tensor and its limits, and the tensor is
    // one a tensor map can describe (what encodeTensorMap checks: 16-byte
    // aligned base, contiguous last dim, other strides positive multiples of
    // 16 bytes; the map is optional: zeroed where it cannot be encoded).
    const int ti = tensorIndex(op.getDst());
    const std::string &tn = tensorNames_[ti];
    std::string whole = fmt::format("{} && (reinterpret_cast<unsigned long long>({}) & 15) == 0 && {}_stride{} == 1",
                                    a.ok, tn, tn, rank - 1);
    for (int64_t d = 0; d + 1 < rank; ++d)
      whole += fmt::format(" && {0}_stride{1} >= 1 && ({0}_stride{1} * {2}) % 16 == 0", tn, d, eb);
    for (size_t d = 0; d < a.lo.size(); ++d)
      whole += fmt::format(" && {} <= 0 && {} >= {}", a.lo[d], a.hi[d], src.getShape()[d]);
    std::string map = tmaParamFor(ti, box, swizzleOf(src.getSwizzle()), /*forStore=*/true);
    const int64_t cols = src.getShape().back(), blockCols = box.back(), rows = src.getNumElements() / cols;
    line(fmt::format("if ({}) {{", whole));
    ++indent_;
    // Box b: the tile's columns b blockCols ..; staged by warpgroups, each
    // warpgroup's first thread stores its own wgBoxes boxes.
    line(wgBoxes ? std::string("if (threadIdx.x % 128 == 0) {") : fmt::format("if (threadIdx.x == {}) {{", group().begin * 128));
    ++indent_;
    for (int64_t b = 0; b < (wgBoxes ? wgBoxes : cols / blockCols); ++b) {
      // (the box's first element in the tile, its first column in the tensor)
      std::string bx = fmt::format("(qla_wgl * {} + {})", wgBoxes, b);
      std::string at = wgBoxes ? fmt::format("{} * {}", bx, rows * blockCols) : std::to_string(b * rows * blockCols);
      std::string call = fmt::format("qla::dev::tma_store_{}d(&{}, {} + {}", rank, map, name(op.getSrc()), at);
      for (int64_t d = rank - 1; d >= 0; --d) {
        std::string c = name(op.getOffsets()[d]);
        if (d == rank - 1 && (wgBoxes || b))
          c += wgBoxes ? fmt::format(" + {} * {}", bx, blockCols) : fmt::format(" + {}", b * blockCols);
        call += ", " + c;
      }
      line(call + ");");
    }
    line("qla::dev::tma_store_commit();");
    --indent_;
    line("}");
    --indent_;
    line("} else {");
    ++indent_;
  }
  // By threads, which read every warpgroup's columns: the whole role meets.
  if (wgBoxes) line(groupSync());
  if (eb > 0 && src.getShape().size() == 2 && lastIsCol && src.getShape()[1] * eb % 16 == 0 && a.stride.size() == 2) {
    emitSharedGlobalVectors(op.getSrc(), src, a, eb);
  } else {
    std::vector<std::string> idx = openTileLoop(src);
    std::string row = idx.size() == 2 ? idx[0] : "0", col = idx.back();
    line(fmt::format("if ({}) *{} = {}[{}];", a.inBounds(idx), a.at(idx), name(op.getSrc()), smemIndex(src, row, col)));
    closeLoop();
  }
  // ... and again before any warpgroup writes its columns anew.
  if (wgBoxes) line(groupSync());
  if (tma) {
    --indent_;
    line("}");
  }
  --indent_;
  line("}");
  return success();
}

// A shared → global store the TMA unit does (tmaStoreCandidate, unless
// --no-tma-stores); `box` gets its tensor map's box.
bool Emitter::tmaStoreBox(StoreOp op, std::vector<uint32_t> &box) { return tmaStores_ && tmaStoreCandidate(op, &box); }

// Before the group's threads write a tile that a TMA store reads: the issuing
// thread waits until its stores have read their sources (the barrier that
// precedes every write to a tile then orders the write after that). A tile
// staged by warpgroups: each warpgroup's first thread issues its own boxes.
void Emitter::waitTmaStoreReads(Value tile) {
  if (wgStaging_.contains(tile)) line("if (threadIdx.x % 128 == 0) qla::dev::tma_store_wait<0>();");
  else if (tmaStoreSources_.contains(tile))
    line(fmt::format("if (threadIdx.x == {}) qla::dev::tma_store_wait<0>();", group().begin * 128));
}

// Staging tiles of a role of n >= 2 warpgroups that need no barrier of the
// whole role: the tile is written only by transposed copies of accumulator
// fragments split over the n warpgroups, in which warpgroup w holds rows
// [w M/n, (w + 1) M/n) — tile columns once transposed — and read only by
// TMA stores whose boxes (blockCols columns each) divide those column
// ranges. Then warpgroup w's threads write exactly the boxes w (M/n) /
// blockCols .. (w + 1) (M/n) / blockCols - 1, so each warpgroup fences,
// meets its own 128 threads and stores its boxes from its first thread,
// and waits for its own stores' reads before writing again: the warpgroups
// do not wait for one another. (Where a store falls back to threads, which
// read every column, the whole role meets before and after it.)
void Emitter::findWgStaging() {
  for (Value tile : tmaStoreSources_) {
    auto alloc = tile.getDefiningOp<AllocSharedOp>();
    auto role = alloc ? alloc->getParentOfType<WarpgroupsOp>() : WarpgroupsOp();
    if (!role) continue;
    const int64_t n = role.getWgEnd() - role.getWgBegin() + 1;
    if (n < 2) continue;
    auto shape = cast<SharedType>(tile.getType()).getShape();
    if (shape.size() != 2 || shape[1] % n) continue;
    const int64_t m = shape[1] / n;  // each warpgroup's tile columns
    int64_t writers = 0, blockCols = 0;
    bool ok = true;
    for (Operation *u : tile.getUsers()) {
      if (!ok) break;
      if (u->getParentOfType<WarpgroupsOp>() != role) {
        ok = false;
      } else if (auto c = dyn_cast<CopyOp>(u); c && c.getDst() == tile) {
        auto f = dyn_cast<FragType>(c.getSrc().getType());
        ok = f && c.getTranspose() && !c.getBox() && f.getLayout() == FragType::Acc && int64_t(f.getWarpgroups()) == n &&
             f.getShape()[0] == shape[1];
        if (!ok) break;
        // Warpgroup w holds exactly rows [w M/n, (w + 1) M/n) (FragLayout).
        const FragLayout lay = FragLayout::of(f);
        for (int64_t w = 0; w < n && ok; ++w)
          for (int64_t warp = 0; warp < 4 && ok; ++warp)
            for (int64_t lane = 0; lane < 32 && ok; ++lane)
              for (int64_t r = 0; r < lay.regsPerThread() && ok; ++r) {
                const int64_t row = lay.index(r, {lane, warp, w})[0];
                ok = row >= w * m && row < (w + 1) * m;
              }
        ++writers;
      } else if (auto st = dyn_cast<StoreOp>(u); st && st.getSrc() == tile) {
        std::vector<uint32_t> box;
        ok = tmaStoreBox(st, box) && (blockCols == 0 || blockCols == int64_t(box.back()));
        blockCols = box.empty() ? 0 : int64_t(box.back());
      } else {
        ok = false;
      }
    }
    if (ok && writers > 0 && blockCols > 0 && m % blockCols == 0) wgStaging_[tile] = m / blockCols;
  }
}

// A 2-D shared tile to global memory in 16-byte pieces of a row: every tile
// layout keeps a row's 16-byte chunks whole (swizzles permute chunks), so a
// thread moves one chunk per access where the tensor's rows are contiguous,
// 16-byte aligned and the chunk lies within bounds; other chunks go element
// by element. Consecutive threads take consecutive chunks of a row, so a
// warp writes whole 32-byte sectors (the accumulator-layout stores of a
// fragment fill half of each sector they touch).
void Emitter::emitSharedGlobalVectors(Value smem, SharedType src, const TileAccess &a, int64_t eb) {
  const int64_t cols = src.getShape()[1], per = 16 / eb, chunksPerRow = cols / per;
  const int64_t total = src.getShape()[0] * chunksPerRow;
  const int64_t nthreads = (group().end - group().begin + 1) * 128;
  const std::string &rs = a.stride[0], &cs = a.stride[1];
  std::string vec = declareStr(
      "bool",
      fmt::format("{} == 1 && ({} * {}) % 16 == 0 && (reinterpret_cast<unsigned long long>({}) & 15) == 0", cs, rs, eb,
                  a.ptr),
      "tvec");
  std::string e = fresh("e");
  line(fmt::format("for (int {0} = (int)threadIdx.x - {1}; {0} < {2}; {0} += {3}) {{", e, group().begin * 128, total,
                   nthreads));
  ++indent_;
  std::string row = declareStr("int", fmt::format("{} / {}", e, chunksPerRow), "row");
  std::string col = declareStr("int", fmt::format("({} % {}) * {}", e, chunksPerRow, per), "col");
  std::string last = fmt::format("({} + {})", col, per - 1);
  std::string sm = name(smem);
  line(fmt::format("if ({} && {} && {}) {{", vec, a.inBounds({row, col}), a.inBounds({row, last})));
  line(fmt::format("  *reinterpret_cast<uint4*>({}) = qla::dev::smem_get<uint4>({}, {});", a.at({row, col}), sm,
                   smemIndex(src, row, col)));
  line("} else {");
  ++indent_;
  std::string k = fresh("k");
  line("#pragma unroll");
  line(fmt::format("for (int {0} = 0; {0} < {1}; ++{0}) {{", k, per));
  std::string ck = fmt::format("({} + {})", col, k);
  line(fmt::format("  if ({}) *{} = {}[{}];", a.inBounds({row, ck}), a.at({row, ck}), sm, smemIndex(src, row, ck)));
  line("}");
  --indent_;
  line("}");
  --indent_;
  line("}");
}

// Fragment <-> shared copies. Accumulator-layout registers r, r + 1 (r even)
// are columns c, c + 1 of one row, and c is even: in every tile layout
// (swizzles permute 16-byte chunks) the two elements are neighbours in memory
// and the pair is 4-byte (16-bit) or 8-byte (f32) aligned, so it moves as
// one access.
LogicalResult Emitter::emitCopy(CopyOp op) {
  if (isa<SharedType>(op.getSrc().getType()) && isa<SharedType>(op.getDst().getType())) return emitSharedCopy(op);
  auto frag = dyn_cast<FragType>(op.getDst().getType());
  bool toFrag = frag != nullptr;
  if (!toFrag) frag = cast<FragType>(op.getSrc().getType());
  auto tile = cast<SharedType>(toFrag ? op.getSrc().getType() : op.getDst().getType());
  Value fv = toFrag ? op.getDst() : op.getSrc();
  Type te = tile.getElementType(), fe = frag.getElementType();
  const FragLayout lay = FragLayout::of(frag);
  const bool trans = op.getTranspose();
  // Transposed: a register pair's columns are neighbouring rows of the tile.
  const bool pairs =
      !trans && lay.rank() == 2 && lay.pairsColumns() && tile.getShape().size() == 2 && (is16(te) || te.isF32());
  std::string tn = name(toFrag ? op.getSrc() : op.getDst());
  // Other threads may still read the tile; not a put's slot, which no
  // thread of the role reads (they all waited for it to be empty).
  if (!toFrag) waitTmaStoreReads(op.getDst());
  if (!toFrag && !op->hasAttr("qla.slot_fill")) line(wgStaging_.contains(op.getDst()) ? wgSync() : groupSync());
  // Into a 16-bit tile by 8x8 blocks (stmatrix .x4, transposed or not): one
  // address per four blocks instead of one per register pair. Out of one
  // transposed (ldmatrix .x4 .trans); untransposed loads stay pairs (ldmatrix
  // made ptxas spill in gdn_bwd_dqk.qla, 4 bytes, where pairs spill none).
  if (is16(te) && lay.x4Blocks() && tile.getShape().size() == 2) {
    if (!toFrag) {
      emitStmatrix(op, trans);
      if (!fencedAndSynced(op)) line(groupSync());
      return success();
    }
    if (trans) {
      emitLdmatrixTrans(op);
      return success();
    }
  }
  // A fragment of half a thread's registers or more (freshAddressRegs_; in
  // a role with fresh_addresses(N), N if smaller): its per-register
  // shared-memory addresses are computed in the copy (lane and warp ids
  // taken afresh), not hoisted out of an enclosing loop and held beside it.
  const bool freshIds = freshAddressesFor(frag);
  if (freshIds) openFreshIds();
  RegLoop l = openRegLoop(frag);
  std::string row = tile.getShape().size() == 2 ? l.idx[0] : "0", col = l.idx.back();
  if (trans) std::swap(row, col);  // tile [j, i] is fragment [i, j]
  // A sub-tile (box): its origin offsets the tile index (untransposed).
  auto [r0, c0] = boxOrigin(op);
  row = plusConst(row, r0);
  col = plusConst(col, c0);
  const std::string idx = smemIndex(tile, row, col);
  std::string at = fmt::format("{}[{}]", tn, idx);
  if (!pairs) {
    if (toFrag) fragStore(fv, l.reg, loadAsFloat(te, at));
    else line(fmt::format("{} = {};", at, storeFromFloat(te, fragElem(fv, l.reg))));
  } else {
    std::string r1 = fmt::format("({} + 1)", l.reg);  // the pair's second register: the next column
    line(fmt::format("if ({} % 2 == 0) {{", l.reg));
    ++indent_;
    std::string vt = te.isF32() ? "float2" : "qla::dev::u32";
    // The pair's bits as one load or store (smem_get / smem_put take a plain pointer and a sptr alike).
    std::string ref = fmt::format("qla::dev::smem_get<{}>({}, {})", vt, tn, idx);
    auto put = [&](const std::string &v) { return fmt::format("qla::dev::smem_put<{}>({}, {}, {});", vt, tn, idx, v); };
    const bool same16 = is16(te) && fe == te;  // packed registers move as they are
    if (toFrag) {
      if (same16) {
        line(fmt::format("{}[{} / 2] = {};", name(fv), l.reg, ref));
      } else {
        line(fmt::format("const {} w_ = {};", vt, ref));
        if (te.isF32()) {
          fragStore(fv, l.reg, "w_.x");
          fragStore(fv, r1, "w_.y");
        } else {
          fragStore(fv, l.reg, fmt::format("qla::dev::unpack_{}x2_lo(w_)", pfx(te)));
          fragStore(fv, r1, fmt::format("qla::dev::unpack_{}x2_hi(w_)", pfx(te)));
        }
      }
    } else {
      std::string v0 = fragElem(fv, l.reg), v1 = fragElem(fv, r1);
      if (same16) line(put(fmt::format("{}[{} / 2]", name(fv), l.reg)));
      else if (te.isF32()) line(put(fmt::format("make_float2({}, {})", v0, v1)));
      else line(put(fmt::format("qla::dev::pack_{}x2({}, {})", pfx(te), v0, v1)));
    }
    --indent_;
    line("}");
  }
  closeLoop();
  if (freshIds) closeLoop();
  if (toFrag) return success();
  if (!fencedAndSynced(op)) line(groupSync());
  return success();
}

// The loop of a fragment <-> 16-bit tile copy by 8x8 blocks
// (FragLayout::x4Blocks), shared by stmatrix and ldmatrix: a scope, the
// lane's block offset 2m (`blkName`) and addressed row a (`rowName`), then
// the loop over the calls q; `addr` is the tile index of the row lane 8m + a
// addresses (o: the origin of block m of call q, registers 8q + 2m,
// 8q + 2m + 1): untransposed tile row o.row + a at column o.col, transposed
// (tile [N, M]) tile row o.col + a at column o.row. In block m lane l holds
// fragment row o.row + l/4, columns o.col + 2(l%4) + {0, 1}, which is the
// 8x8 matrix layout of the untransposed instructions; .trans swaps the
// stored rows and columns. Either way a lane addresses 8 elements of one
// tile row, 16 aligned bytes (o.row and o.col are multiples of 8), and every
// tile layout keeps a 16-byte chunk of a row whole (swizzles permute
// chunks), so the address is smem_tile_index of the row's first element.
// With a fragment of freshAddressRegs (or the role's fresh_addresses) or
// more registers a thread, the lane and warp ids are taken afresh (as for
// the element-wise copies). closeX4Loop ends the scopes.
void Emitter::openX4Loop(FragType frag, SharedType tile, bool trans, const char *blkName, const char *rowName,
                         std::string &q, std::string &addr, int64_t r0, int64_t c0) {
  const FragLayout lay = FragLayout::of(frag);
  if (freshAddressesFor(frag)) {
    openFreshIds();  // the scope, with the ids taken afresh
  } else {
    line("{");
    ++indent_;
  }
  std::string blk = declareStr("int", "2 * (qla_lane / 8)", blkName);  // 2m: the register offset of this lane's block
  std::string arow = declareStr("int", "qla_lane % 8", rowName);       // the row it addresses
  q = fresh("q");
  line("#pragma unroll");
  line(fmt::format("for (int {0} = 0; {0} < {1}; ++{0}) {{", q, lay.x4Calls()));
  ++indent_;
  std::string reg = declareStr("int", fmt::format("8 * {} + {}", q, blk), "r");
  std::vector<std::string> o = lay.indexText(reg, "0");
  std::string orow = declareStr("int", o[0], "row"), ocol = declareStr("int", o[1], "col");
  addr = trans ? smemIndex(tile, fmt::format("{} + {}", ocol, arow), orow)
               : smemIndex(tile, fmt::format("{} + {}", plusConst(orow, r0), arow), plusConst(ocol, c0));
}

void Emitter::closeX4Loop() {
  closeLoop();
  --indent_;
  line("}");
}

bool Emitter::freshAddressesFor(FragType frag) const {
  int64_t at = freshAddressRegs_;
  if (group().freshAddressRegs > 0) at = std::min<int64_t>(at, group().freshAddressRegs);
  return frag.getRegsPerThread() >= at;
}

// A fragment [M, N] -> 16-bit shared tile copy by stmatrix.sync.aligned
// .m8n8.x4 (four 8x8 blocks of the warp's registers per call; with `trans`,
// .trans into a tile [N, M]): in block m of call q registers 8q + 2m and
// 8q + 2m + 1, packed into one u32 of the tile's dtype, go to the rows
// openX4Loop addresses.
void Emitter::emitStmatrix(CopyOp op, bool trans) {
  auto frag = cast<FragType>(op.getSrc().getType());
  auto tile = cast<SharedType>(op.getDst().getType());
  Type te = tile.getElementType(), fe = frag.getElementType();
  const std::string fn = name(op.getSrc()), tn = name(op.getDst());
  const bool same16 = fe == te;  // packed registers move as they are
  std::string q, addr;
  auto [r0, c0] = boxOrigin(op);
  openX4Loop(frag, tile, trans, "stm", "sta", q, addr, r0, c0);
  std::vector<std::string> regs;
  for (int m = 0; m < 4; ++m) {
    std::string r0 = fmt::format("8 * {} + {}", q, 2 * m), r1 = fmt::format("8 * {} + {}", q, 2 * m + 1);
    if (same16) regs.push_back(fmt::format("{}[4 * {} + {}]", fn, q, m));
    else regs.push_back(fmt::format("qla::dev::pack_{}x2({}, {})", pfx(te), fragElem(op.getSrc(), r0),
                                    fragElem(op.getSrc(), r1)));
  }
  std::string st = fresh("st");
  line(fmt::format("const qla::dev::u32 {}[4] = {{{}, {}, {}, {}}};", st, regs[0], regs[1], regs[2], regs[3]));
  line(fmt::format("qla::dev::stmatrix_x4{}({} + ({}), {});", trans ? "_trans" : "", tn, addr, st));
  closeX4Loop();
}

// The mirror of emitStmatrix(op, true): a 16-bit shared tile [N, M] ->
// transposed fragment [M, N] copy by ldmatrix.sync.aligned.m8n8.x4.trans:
// register m of lane l receives stored rows 2(l%4), 2(l%4) + 1 of column
// l/4 of block m, i.e. fragment row o.row + l/4, columns o.col + 2(l%4) +
// {0, 1}: registers 8q + 2m and 8q + 2m + 1 of the accumulator layout.
void Emitter::emitLdmatrixTrans(CopyOp op) {
  auto frag = cast<FragType>(op.getDst().getType());
  auto tile = cast<SharedType>(op.getSrc().getType());
  Type te = tile.getElementType(), fe = frag.getElementType();
  const std::string fn = name(op.getDst()), tn = name(op.getSrc());
  const bool same16 = fe == te;  // packed registers move as they are
  std::string q, addr;
  openX4Loop(frag, tile, /*trans=*/true, "ldm", "lda", q, addr);
  std::string ld = fresh("ld");
  line(fmt::format("qla::dev::u32 {}[4];", ld));
  line(fmt::format("qla::dev::ldmatrix_x4_trans({}, {} + ({}));", ld, tn, addr));
  for (int m = 0; m < 4; ++m) {
    std::string r0 = fmt::format("8 * {} + {}", q, 2 * m), r1 = fmt::format("8 * {} + {}", q, 2 * m + 1);
    if (same16) {
      line(fmt::format("{}[4 * {} + {}] = {}[{}];", fn, q, m, ld, m));
    } else {
      fragStore(op.getDst(), r0, fmt::format("qla::dev::unpack_{}x2_lo({}[{}])", pfx(te), ld, m));
      fragStore(op.getDst(), r1, fmt::format("qla::dev::unpack_{}x2_hi({}[{}])", pfx(te), ld, m));
    }
  }
  closeX4Loop();
}

// A proxy fence right after a store to shared memory (qla-insert-fences) is
// followed by its own barrier; a barrier after the store as well would only
// add a wait. A put's stores into its slot (qla-lower-channels) are each
// fenced and need no barrier: the channel's barrier orders them.
bool Emitter::fencedAndSynced(Operation *store) {
  // A put's store into its slot: each thread fences and arrives on the
  // channel's `full` barrier, which every reader waits on (qla-lower-channels).
  if (store->hasAttr("qla.slot_fill")) return true;
  Operation *next = store->getNextNode();
  // A shared → global store of the tile just written begins with the group's
  // barrier (and the fence a TMA store needs) itself.
  // (Scalar ops in between, a var's read say, touch no tile.)
  if (auto c = dyn_cast<CopyOp>(store)) {
    Operation *n = next;
    while (n && n->getNumRegions() == 0 && (isMemoryEffectFree(n) || isa<VarGetOp>(n))) n = n->getNextNode();
    if (auto st = dyn_cast_or_null<StoreOp>(n); st && st.getSrc() == c.getDst()) return true;
  }
  while (isa_and_nonnull<FenceProxyAsyncOp>(next)) {
    next = next->getNextNode();
    if (isa_and_nonnull<BlockSyncOp, NamedBarrierOp>(next)) return true;
    // Another fenced store to shared memory: look past it.
    auto c = dyn_cast_or_null<CopyOp>(next);
    if (!c || !isa<SharedType>(c.getDst().getType())) return false;
    next = next->getNextNode();
  }
  return false;
}

// Shared→shared copy into a put's slot: the group's threads stride over the
// tile, converting the dtype through float when it changes.
LogicalResult Emitter::emitSharedCopy(CopyOp op) {
  auto src = cast<SharedType>(op.getSrc().getType()), dst = cast<SharedType>(op.getDst().getType());
  waitTmaStoreReads(op.getDst());
  std::vector<std::string> idx = openTileLoop(dst);
  std::string row = idx.size() == 2 ? idx[0] : "0", col = idx.back();
  std::string v = fmt::format("{}[{}]", name(op.getSrc()), smemIndex(src, row, col));
  if (src.getElementType() != dst.getElementType())
    v = storeFromFloat(dst.getElementType(), loadAsFloat(src.getElementType(), v));
  line(fmt::format("{}[{}] = {};", name(op.getDst()), smemIndex(dst, row, col), v));
  closeLoop();
  if (!fencedAndSynced(op)) line(groupSync());
  return success();
}

// Bounded (or otherwise non-TMA) global→shared copy: the group's threads
// stride over the tile, then make the generic-proxy writes visible to the
// async proxy (wgmma) and to the group.
LogicalResult Emitter::emitLoadToShared(LoadOp op) {
  auto dst = cast<SharedType>(op.getDst().getType());
  Type gt = op.getSrc().getType().getElementType();
  waitTmaStoreReads(op.getDst());
  line(groupSync());
  line("{");
  ++indent_;
  TileAccess a = openTileAccess(op.getSrc(), op.getOffsets(), op.getDropped(), op.getLimits(), op.getLimitDims(),
                                /*forWrite=*/false);
  std::vector<std::string> idx = openTileLoop(dst);
  std::string row = idx.size() == 2 ? idx[0] : "0", col = idx.back();
  std::string zero = dst.getElementType().isBF16() ? "qla::dev::to_bf16(0.0f)"
                     : dst.getElementType().isF16() ? "qla::dev::to_f16(0.0f)"
                                                    : fmt::format("({})0", dtypeCType(dst.getElementType()));
  std::string v = "*" + a.at(idx);
  if (gt != dst.getElementType()) v = storeFromFloat(dst.getElementType(), loadAsFloat(gt, v));
  line(fmt::format("{}[{}] = ({}) ? {} : {};", name(op.getDst()), smemIndex(dst, row, col), a.inBounds(idx), v, zero));
  closeLoop();
  --indent_;
  line("}");
  line("qla::dev::fence_proxy_async_shared();");
  line(groupSync());
  return success();
}

}  // namespace qla::compiler
