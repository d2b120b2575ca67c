// CUDA emitter: register fragments (per-thread loops over the layout's
// registers), global/shared copies of fragments, reductions, maps, wgmma.
#include "compiler/emit/EmitterCore.h"

#include <cstring>

#include <fmt/format.h>

#include "llvm/ADT/MapVector.h"

#include "dialects/qla/IR/FragLayout.h"
#include "dialects/qla/Transforms/TmaStores.h"

using namespace mlir;
using namespace mlir::qla;
using namespace mlir::qlanv;

namespace qla::compiler {

namespace {
bool is16(Type t) { return t.isBF16() || t.isF16(); }
std::string pfx(Type t) { return t.isBF16() ? "bf16" : "f16"; }

// Converts a value of storage type `t` (read from memory) to float.
std::string loadAsFloat(Type t, const std::string &expr) {
  if (is16(t)) return fmt::format("qla::dev::to_float({})", expr);
  if (t.isF32()) return expr;
  return fmt::format("(float)({})", expr);
}
// Converts a float to storage type `t`.
std::string storeFromFloat(Type t, const std::string &expr) {
  if (t.isBF16()) return fmt::format("qla::dev::to_bf16({})", expr);
  if (t.isF16()) return fmt::format("qla::dev::to_f16({})", expr);
  if (t.isF32()) return expr;
  return fmt::format("({})({})", Emitter::dtypeCType(t), expr);
}
// A reduction's identity and how it combines two values (CUDA text).
const char *reduceInit(ReduceKind k) {
  switch (k) {
    case ReduceKind::add: return "0.0f";
    case ReduceKind::max: return "-__int_as_float(0x7f800000)";
    case ReduceKind::min: return "__int_as_float(0x7f800000)";
  }
  return "0.0f";
}
std::string reduceCombine(ReduceKind k, const std::string &a, const std::string &b) {
  switch (k) {
    case ReduceKind::add: return fmt::format("({} + {})", a, b);
    case ReduceKind::max: return fmt::format("fmaxf({}, {})", a, b);
    case ReduceKind::min: return fmt::format("fminf({}, {})", a, b);
  }
  return "";
}
std::string smemIndex(SharedType t, const std::string &row, const std::string &col) {
  auto s = t.getShape();
  int64_t rows = s.size() == 2 ? s[0] : 1, cols = s.back();
  return fmt::format("qla::dev::smem_tile_index<{}, {}, {}, {}>({}, {})", t.getSwizzle(),
                     elementBytes(t.getElementType()), rows, cols, row, col);
}
}  // namespace

Emitter::RegLoop Emitter::openRegLoop(FragType t, const std::vector<std::string> &names) {
  RegLoop l;
  l.reg = fresh("r");
  const FragLayout lay = FragLayout::of(t);
  line("#pragma unroll");
  line(fmt::format("for (int {0} = 0; {0} < {1}; ++{0}) {{", l.reg, lay.regsPerThread()));
  ++indent_;
  std::vector<std::string> idx = lay.indexText(l.reg);
  static const char *const names2[] = {"row", "col"};
  for (size_t d = 0; d < idx.size(); ++d)
    l.idx.push_back(declareStr("int", idx[d],
                               d < names.size() && !names[d].empty() ? names[d]
                               : lay.kind() == FragLayout::Col        ? "col"
                                                                      : names2[d]));
  return l;
}

std::vector<std::string> Emitter::openTileLoop(SharedType t) {
  auto s = t.getShape();
  int64_t cols = s.back(), total = t.getNumElements();
  int64_t nthreads = (group().end - group().begin + 1) * 128;
  std::string e = fresh("e");
  line(fmt::format("for (int {0} = (int)threadIdx.x - {1}; {0} < {2}; {0} += {3}) {{", e, group().begin * 128, total,
                   nthreads));
  ++indent_;
  std::vector<std::string> idx;
  if (s.size() == 2) idx.push_back(declareStr("int", fmt::format("{} / {}", e, cols), "row"));
  idx.push_back(declareStr("int", fmt::format("{} % {}", e, cols), "col"));
  return idx;
}

std::string Emitter::declareStr(const std::string &type, const std::string &expr, const std::string &prefix) {
  std::string n = fresh(prefix);
  line(fmt::format("const {} {} = {};", type, n, expr));
  return n;
}

void Emitter::closeLoop() {
  --indent_;
  line("}");
}

std::string Emitter::fragElem(Value frag, const std::string &reg) {
  auto t = cast<FragType>(frag.getType());
  std::string n = name(frag);
  if (is16(t.getElementType()))
    return fmt::format("(({0}) % 2 ? qla::dev::unpack_{1}x2_hi({2}[({0}) / 2]) : qla::dev::unpack_{1}x2_lo({2}[({0}) / 2]))",
                       reg, pfx(t.getElementType()), n);
  if (t.getElementType().isF32()) return fmt::format("{}[{}]", n, reg);
  return fmt::format("(float){}[{}]", n, reg);
}

void Emitter::fragStore(Value frag, const std::string &reg, const std::string &value) {
  auto t = cast<FragType>(frag.getType());
  std::string n = name(frag);
  if (is16(t.getElementType()))
    line(fmt::format("qla::dev::set_{0}x2_half({1}[({2}) / 2], ({2}) % 2, {3});", pfx(t.getElementType()), n, reg, value));
  else if (t.getElementType().isF32())
    line(fmt::format("{}[{}] = {};", n, reg, value));
  else
    line(fmt::format("{}[{}] = ({})({});", n, reg, cType(t.getElementType()), value));
}

std::string Emitter::vectorRegFor(FragType vec, FragType acc, const std::string &reg) {
  return FragLayout::of(acc).vectorRegText(static_cast<FragLayout::Kind>(vec.getLayout()), reg);
}

LogicalResult Emitter::emitAllocFrag(AllocFragOp op) {
  auto t = op.getType();
  if (!t.hasLayout()) return op.emitOpError("fragment has no layout (run qla-infer-layouts)");
  int64_t n = t.getRegsPerThread();
  std::string nm = fresh(prefixFor(op.getResult(), "frag"));
  if (is16(t.getElementType())) line(fmt::format("qla::dev::u32 {}[{}];", nm, n / 2));
  else line(fmt::format("{} {}[{}];", cType(t.getElementType()), nm, n));
  bind(op.getResult(), nm);
  return success();
}

LogicalResult Emitter::emitFill(FillOp op) {
  auto t = op.getDst().getType();
  std::string v = name(op.getValue());
  if (!op.getValue().getType().isF32()) v = "(float)" + v;
  std::string r = fresh("r");
  std::string n = name(op.getDst());
  if (is16(t.getElementType())) {
    std::string packed =
        declareStr("qla::dev::u32", fmt::format("qla::dev::pack_{0}x2({1}, {1})", pfx(t.getElementType()), v), "fill");
    line("#pragma unroll");
    line(fmt::format("for (int {0} = 0; {0} < {1}; ++{0}) {2}[{0}] = {3};", r, t.getRegsPerThread() / 2, n, packed));
  } else {
    line("#pragma unroll");
    line(fmt::format("for (int {0} = 0; {0} < {1}; ++{0}) {2}[{0}] = {3};", r, t.getRegsPerThread(), n,
                     t.getElementType().isF32() ? v : fmt::format("({}){}", cType(t.getElementType()), v)));
  }
  return success();
}

std::string Emitter::TileAccess::at(const std::vector<std::string> &idx) const {
  std::string e = ptr;
  for (size_t k = 0; k < idx.size(); ++k) e += fmt::format(" + (long long)({}) * {}", idx[k], stride[k]);
  return "(" + e + ")";
}

std::string Emitter::TileAccess::inBounds(const std::vector<std::string> &idx) const {
  std::string e = ok;
  for (size_t k = 0; k < idx.size(); ++k) e += fmt::format(" && ({0}) >= {1} && ({0}) < {2}", idx[k], lo[k], hi[k]);
  return e;
}

Emitter::TileAccess Emitter::openTileAccess(Value g, ValueRange offsets, ArrayRef<int64_t> dropped, ValueRange limits,
                                            ArrayRef<int64_t> limitDims, bool forWrite) {
  int t = tensorIndex(g);
  const TensorArgInfo &ti = info_.tensors[t];
  const std::string &tn = tensorNames_[t];
  TileAccess a;
  std::string off = "0LL", ok = "true";
  for (size_t d = 0; d < ti.dims.size(); ++d) {
    std::string o = name(offsets[d]), stride = fmt::format("{}_stride{}", tn, d);
    off += fmt::format(" + (long long){} * {}", o, stride);
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
                                      ValueRange limits, ArrayRef<int64_t> limitDims, bool store, bool transpose) {
  auto ft = cast<FragType>(frag.getType());
  const FragLayout lay = FragLayout::of(ft);
  Type gt = cast<GlobalType>(g.getType()).getElementType();
  const int64_t rank = cast<GlobalType>(g.getType()).getRank();
  const bool lastIsCol = !llvm::is_contained(dropped, rank - 1);
  const int64_t eb = elementBytes(gt);
  // Transposed: a register pair's columns are neighbouring rows of the slice.
  const bool pairs = !transpose && lay.rank() == 2 && lay.pairsColumns() && lastIsCol &&
                     (gt.isBF16() || gt.isF16() || gt.isF32());
  line("{");
  ++indent_;
  TileAccess a = openTileAccess(g, offsets, dropped, limits, limitDims, store);
  if (!pairs) {
    RegLoop l = openRegLoop(ft);
    std::vector<std::string> at = l.idx;
    if (transpose) std::swap(at[0], at[1]);  // slice [j, i] is fragment [i, j]
    std::string inb = a.inBounds(at), ptr = a.at(at);
    if (store) {
      line(fmt::format("if ({}) *{} = {};", inb, ptr, storeFromFloat(gt, fragElem(frag, l.reg))));
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
  std::string vt = eb == 4 ? "float2" : "qla::dev::u32";
  if (store) {
    std::string v0 = fragElem(frag, l.reg), v1 = fragElem(frag, r1);
    std::string packed = eb == 4 ? fmt::format("make_float2({}, {})", v0, v1)
                                 : fmt::format("qla::dev::pack_{}x2({}, {})", pfx(gt), v0, v1);
    line(fmt::format("if ({} && {} && {}) {{", vec, in0, in1));
    line(fmt::format("  *reinterpret_cast<{}*>({}) = {};", vt, ptr, packed));
    line("} else {");
    line(fmt::format("  if ({}) {}[0] = {};", in0, ptr, storeFromFloat(gt, v0)));
    line(fmt::format("  if ({}) {}[{}] = {};", in1, ptr, cs, storeFromFloat(gt, v1)));
    line("}");
  } else {
    std::string x0 = fresh("x"), x1 = fresh("x");
    line(fmt::format("float {} = 0.0f, {} = 0.0f;", x0, x1));
    line(fmt::format("if ({} && {} && {}) {{", vec, in0, in1));
    ++indent_;
    line(fmt::format("const {0} w_ = *reinterpret_cast<const {0}*>({1});", vt, ptr));
    if (eb == 4) {
      line(fmt::format("{} = w_.x; {} = w_.y;", x0, x1));
    } else {
      line(fmt::format("{1} = qla::dev::unpack_{0}x2_lo(w_); {2} = qla::dev::unpack_{0}x2_hi(w_);", pfx(gt), x0, x1));
    }
    --indent_;
    line("} else {");
    line(fmt::format("  if ({}) {} = {};", in0, x0, loadAsFloat(gt, ptr + "[0]")));
    line(fmt::format("  if ({}) {} = {};", in1, x1, loadAsFloat(gt, fmt::format("{}[{}]", ptr, cs))));
    line("}");
    fragStore(frag, l.reg, x0);
    fragStore(frag, r1, x1);
    // A fragment of half a thread's registers or more: at most 16 of its
    // loads in flight at once (a compiler barrier every 16 registers), so
    // that their addresses and predicates do not all live at once beside it.
    if (ft.getRegsPerThread() >= 128)
      line(fmt::format("if ({} % 16 == 14) asm volatile(\"\" ::: \"memory\");", l.reg));
  }
  --indent_;
  line("}");
  closeLoop();
  --indent_;
  line("}");
  return success();
}

LogicalResult Emitter::emitLoad(LoadOp op) {
  if (!isa<FragType>(op.getDst().getType())) return emitLoadToShared(op);
  return emitFragGlobal(op.getDst(), op.getSrc(), op.getOffsets(), op.getDropped(), op.getLimits(), op.getLimitDims(),
                        /*store=*/false, op.getTranspose());
}

LogicalResult Emitter::emitStore(StoreOp op) {
  Type gt = op.getDst().getType().getElementType();
  std::string g = name(op.getDst());
  if (isa<FragType>(op.getSrc().getType()))
    return emitFragGlobal(op.getSrc(), op.getDst(), op.getOffsets(), op.getDropped(), op.getLimits(),
                          op.getLimitDims(), /*store=*/true, op.getTranspose());
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
        ok = f && c.getTranspose() && f.getLayout() == FragType::Acc && int64_t(f.getWarpgroups()) == n &&
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
  line(fmt::format("  *reinterpret_cast<uint4*>({}) = *reinterpret_cast<const uint4*>(&{}[{}]);", a.at({row, col}), sm,
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
  if (trans && !toFrag && is16(te) && lay.x4Blocks()) {
    emitStmatrixTrans(op);
    if (!fencedAndSynced(op)) line(groupSync());
    return success();
  }
  if (trans && toFrag && is16(te) && lay.x4Blocks()) {
    emitLdmatrixTrans(op);
    return success();
  }
  // A fragment of half a thread's registers or more (freshAddressRegs_):
  // its per-register shared-memory addresses are computed in the copy (lane
  // and warp ids taken afresh), not hoisted out of an enclosing loop and
  // held beside it.
  const bool freshIds = frag.getRegsPerThread() >= freshAddressRegs_;
  if (freshIds) openFreshIds();
  RegLoop l = openRegLoop(frag);
  std::string row = tile.getShape().size() == 2 ? l.idx[0] : "0", col = l.idx.back();
  if (trans) std::swap(row, col);  // tile [j, i] is fragment [i, j]
  std::string at = fmt::format("{}[{}]", tn, smemIndex(tile, row, col));
  if (!pairs) {
    if (toFrag) fragStore(fv, l.reg, loadAsFloat(te, at));
    else line(fmt::format("{} = {};", at, storeFromFloat(te, fragElem(fv, l.reg))));
  } else {
    std::string r1 = fmt::format("({} + 1)", l.reg);  // the pair's second register: the next column
    line(fmt::format("if ({} % 2 == 0) {{", l.reg));
    ++indent_;
    std::string vt = te.isF32() ? "float2" : "qla::dev::u32";
    std::string ref = fmt::format("*reinterpret_cast<{}{}*>(&{})", toFrag ? "const " : "", vt, at);
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
      if (same16) line(fmt::format("{} = {}[{} / 2];", ref, name(fv), l.reg));
      else if (te.isF32()) line(fmt::format("{} = make_float2({}, {});", ref, v0, v1));
      else line(fmt::format("{} = qla::dev::pack_{}x2({}, {});", ref, pfx(te), v0, v1));
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

// The loop of a transposed fragment <-> 16-bit tile copy by 8x8 blocks
// (FragLayout::x4Blocks), shared by stmatrix and ldmatrix: a scope, the
// lane's block offset 2m (`blkName`) and stored row a (`rowName`), then the
// loop over the calls q; `addr` is the tile index of the row lane 8m + a
// addresses, tile row o.col + a at column o.row (o: the origin of block m of
// call q, registers 8q + 2m, 8q + 2m + 1). closeX4TransLoop ends both.
void Emitter::openX4TransLoop(const FragLayout &lay, SharedType tile, const char *blkName, const char *rowName,
                              std::string &q, std::string &addr) {
  line("{");
  ++indent_;
  std::string blk = declareStr("int", "2 * (qla_lane / 8)", blkName);  // 2m: the register offset of this lane's block
  std::string arow = declareStr("int", "qla_lane % 8", rowName);       // the stored row it addresses
  q = fresh("q");
  line("#pragma unroll");
  line(fmt::format("for (int {0} = 0; {0} < {1}; ++{0}) {{", q, lay.x4Calls()));
  ++indent_;
  std::string reg = declareStr("int", fmt::format("8 * {} + {}", q, blk), "r");
  std::vector<std::string> o = lay.indexText(reg, "0");
  std::string orow = declareStr("int", o[0], "row"), ocol = declareStr("int", o[1], "col");
  addr = smemIndex(tile, fmt::format("{} + {}", ocol, arow), orow);
}

void Emitter::closeX4TransLoop() {
  closeLoop();
  --indent_;
  line("}");
}

// A transposed fragment [M, N] -> 16-bit shared tile [N, M] copy with
// stmatrix.sync.aligned.m8n8.x4.trans (FragLayout::x4Blocks: each call
// stores four 8x8 blocks of the warp's registers). In block m of call q
// (registers 8q + 2m, 8q + 2m + 1, packed into one u32 of the tile's dtype)
// lane l holds fragment row o.row + l/4, columns o.col + 2(l%4) + {0, 1},
// o = the block's origin (FragLayout index of lane 0). With .trans, stored
// row a of the block gets the block's column a: tile row o.col + a, tile
// columns o.row .. o.row + 7, which lane 8m + a addresses. Those 8 elements
// are 16 aligned bytes (o.row is a multiple of 8) and every tile layout
// keeps a 16-byte chunk of a row whole (swizzles permute chunks), so the
// address is smem_tile_index of the row's first element, as the
// untransposed copy computes it.
void Emitter::emitStmatrixTrans(CopyOp op) {
  auto frag = cast<FragType>(op.getSrc().getType());
  auto tile = cast<SharedType>(op.getDst().getType());
  Type te = tile.getElementType(), fe = frag.getElementType();
  const FragLayout lay = FragLayout::of(frag);
  const std::string fn = name(op.getSrc()), tn = name(op.getDst());
  const bool same16 = fe == te;  // packed registers move as they are
  std::string q, addr;
  openX4TransLoop(lay, tile, "stm", "sta", q, addr);
  std::vector<std::string> regs;
  for (int m = 0; m < 4; ++m) {
    std::string r0 = fmt::format("8 * {} + {}", q, 2 * m), r1 = fmt::format("8 * {} + {}", q, 2 * m + 1);
    if (same16) regs.push_back(fmt::format("{}[4 * {} + {}]", fn, q, m));
    else regs.push_back(fmt::format("qla::dev::pack_{}x2({}, {})", pfx(te), fragElem(op.getSrc(), r0),
                                    fragElem(op.getSrc(), r1)));
  }
  std::string st = fresh("st");
  line(fmt::format("const qla::dev::u32 {}[4] = {{{}, {}, {}, {}}};", st, regs[0], regs[1], regs[2], regs[3]));
  line(fmt::format("qla::dev::stmatrix_x4_trans(&{}[{}], {});", tn, addr, st));
  closeX4TransLoop();
}

// The mirror of emitStmatrixTrans: a 16-bit shared tile [N, M] -> transposed
// fragment [M, N] copy with ldmatrix.sync.aligned.m8n8.x4.trans. Lane 8m + a
// addresses tile row o.col + a, columns o.row .. o.row + 7 of block m (the
// same 16 aligned bytes the store writes); with .trans register m of lane l
// receives stored rows 2(l%4), 2(l%4) + 1 of column l/4, i.e. fragment row
// o.row + l/4, columns o.col + 2(l%4) + {0, 1}: registers 8q + 2m and
// 8q + 2m + 1 of the accumulator layout.
void Emitter::emitLdmatrixTrans(CopyOp op) {
  auto frag = cast<FragType>(op.getDst().getType());
  auto tile = cast<SharedType>(op.getSrc().getType());
  Type te = tile.getElementType(), fe = frag.getElementType();
  const FragLayout lay = FragLayout::of(frag);
  const std::string fn = name(op.getDst()), tn = name(op.getSrc());
  const bool same16 = fe == te;  // packed registers move as they are
  std::string q, addr;
  openX4TransLoop(lay, tile, "ldm", "lda", q, addr);
  std::string ld = fresh("ld");
  line(fmt::format("qla::dev::u32 {}[4];", ld));
  line(fmt::format("qla::dev::ldmatrix_x4_trans({}, &{}[{}]);", ld, tn, addr));
  for (int m = 0; m < 4; ++m) {
    std::string r0 = fmt::format("8 * {} + {}", q, 2 * m), r1 = fmt::format("8 * {} + {}", q, 2 * m + 1);
    if (same16) {
      line(fmt::format("{}[4 * {} + {}] = {}[{}];", fn, q, m, ld, m));
    } else {
      fragStore(op.getDst(), r0, fmt::format("qla::dev::unpack_{}x2_lo({}[{}])", pfx(te), ld, m));
      fragStore(op.getDst(), r1, fmt::format("qla::dev::unpack_{}x2_hi({}[{}])", pfx(te), ld, m));
    }
  }
  closeX4TransLoop();
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

LogicalResult Emitter::emitCast(CastOp op) {
  auto s = op.getSrc().getType(), d = op.getDst().getType();
  if (s.getLayout() != d.getLayout() || s.getWarpgroups() != d.getWarpgroups())
    return op.emitOpError("cast between fragments of different layouts");
  std::string r = fresh("r");
  int64_t n = s.getRegsPerThread();
  if (s.getElementType().isF32() && is16(d.getElementType())) {
    line("#pragma unroll");
    line(fmt::format("for (int {0} = 0; {0} < {1}; ++{0}) {2}[{0}] = qla::dev::pack_{3}x2({4}[2 * {0}], {4}[2 * {0} + 1]);", r,
                     n / 2, name(op.getDst()), pfx(d.getElementType()), name(op.getSrc())));
    return success();
  }
  line("#pragma unroll");
  line(fmt::format("for (int {0} = 0; {0} < {1}; ++{0}) {{", r, n));
  ++indent_;
  fragStore(op.getDst(), r, fragElem(op.getSrc(), r));
  closeLoop();
  return success();
}

LogicalResult Emitter::emitReduce(ReduceOp op) {
  auto s = op.getSrc().getType(), d = op.getDst().getType();
  if (op.getDim() == 0) return emitColumnReduce(op);
  if (op.getDim() != 1 || s.getLayout() != FragType::Acc || d.getLayout() != FragType::Row)
    return op.emitOpError("only row reductions (dim = 1) of accumulator-layout fragments are emitted yet");
  if (!d.getElementType().isF32()) return op.emitOpError("reduction results are f32");
  std::string comb, init, quad;
  switch (op.getKind()) {
    case ReduceKind::add: comb = "a + b"; init = "0.0f"; quad = "qla::dev::quad_sum"; break;
    case ReduceKind::max: comb = "fmaxf(a, b)"; init = "-__int_as_float(0x7f800000)"; quad = "qla::dev::quad_max"; break;
    case ReduceKind::min: comb = "fminf(a, b)"; init = "__int_as_float(0x7f800000)"; quad = "-qla::dev::quad_max(-"; break;
  }
  std::string dn = name(op.getDst());
  std::string r = fresh("r");
  line("#pragma unroll");
  line(fmt::format("for (int {0} = 0; {0} < {1}; ++{0}) {2}[{0}] = {3};", r, d.getRegsPerThread(), dn, init));
  RegLoop l = openRegLoop(s);
  std::string vr = vectorRegFor(d, s, l.reg);
  std::string a = fmt::format("{}[{}]", dn, vr), b = fragElem(op.getSrc(), l.reg);
  std::string expr = comb;
  expr.replace(expr.find('a'), 1, a);
  expr.replace(expr.rfind('b'), 1, b);
  line(fmt::format("{} = {};", a, expr));
  closeLoop();
  std::string q = fresh("r");
  line("#pragma unroll");
  line(fmt::format("for (int {0} = 0; {0} < {1}; ++{0}) {2}[{0}] = {3}({2}[{0}]){4};", q, d.getRegsPerThread(), dn, quad,
                   op.getKind() == ReduceKind::min ? ")" : ""));
  return success();
}

// Opens a scope in which qla_lane and qla_warp are taken afresh
// (qla::dev::opaque): what the scope computes from them is computed there,
// not hoisted out of an enclosing loop and held in registers across it.
// Closed with closeLoop().
void Emitter::openFreshIds() {
  line("{");
  ++indent_;
  std::string ln = fresh("qla_fresh_lane"), wn = fresh("qla_fresh_warp");
  line(fmt::format("const int {} = qla::dev::opaque(qla_lane), {} = qla::dev::opaque(qla_warp);", ln, wn));
  line(fmt::format("const int qla_lane = {}, qla_warp = {};", ln, wn));
  line("(void)qla_lane; (void)qla_warp;");
}

// Column reduction (dim = 0) of an accumulator-layout fragment into a column
// vector, deterministic (a fixed order, no atomics): each thread combines
// its own rows of each of its columns (the column vector's register q holds
// column 8 (q / 2) + 2 (lane % 4) + q % 2, the same columns its accumulator
// registers hold), the eight lanes of a warp that share lane % 4 combine
// theirs by butterfly shuffles, and where the group has several warps their
// results meet in shared scratch (one row of N per warp), which every thread
// then combines in warp order.
LogicalResult Emitter::emitColumnReduce(ReduceOp op) {
  auto s = op.getSrc().getType(), d = op.getDst().getType();
  if (s.getLayout() != FragType::Acc || d.getLayout() != FragType::Col)
    return op.emitOpError("column reductions (dim = 0) take an accumulator-layout fragment into a column vector");
  if (!d.getElementType().isF32()) return op.emitOpError("reduction results are f32");
  const std::string init = reduceInit(op.getKind());
  auto comb = [&](const std::string &a, const std::string &b) { return reduceCombine(op.getKind(), a, b); };
  const int64_t n = s.getShape()[1], regs = d.getRegsPerThread();
  const int64_t warps = 4 * (group().end - group().begin + 1);
  std::string dn = name(op.getDst());
  std::string q = fresh("r");
  line("#pragma unroll");
  line(fmt::format("for (int {0} = 0; {0} < {1}; ++{0}) {2}[{0}] = {3};", q, regs, dn, init));
  {
    RegLoop l = openRegLoop(s);
    std::string a = fmt::format("{}[{}]", dn, vectorRegFor(d, s, l.reg));
    line(fmt::format("{} = {};", a, comb(a, fragElem(op.getSrc(), l.reg))));
    closeLoop();
  }
  q = fresh("r");
  line("#pragma unroll");
  line(fmt::format("for (int {0} = 0; {0} < {1}; ++{0}) {{", q, regs));
  ++indent_;
  for (int o : {4, 8, 16})
    line(fmt::format("{0}[{1}] = {2};", dn, q,
                     comb(fmt::format("{}[{}]", dn, q), fmt::format("__shfl_xor_sync(0xffffffffu, {}[{}], {})", dn, q, o))));
  closeLoop();
  std::string buf = fresh("qla_colred");
  if (failed(scratchPointer(op, buf))) return failure();
  const std::string col = fmt::format("8 * ({0} / 2) + 2 * (qla_lane % 4) + {0} % 2", q);
  line(groupSync());
  line("if (qla_lane < 4) {");
  ++indent_;
  line("#pragma unroll");
  line(fmt::format("for (int {0} = 0; {0} < {1}; ++{0}) {2}[(qla_wgl * 4 + qla_warp) * {3} + {4}] = {5}[{0}];", q,
                   regs, buf, n, col, dn));
  closeLoop();
  line(groupSync());
  line("#pragma unroll");
  line(fmt::format("for (int {0} = 0; {0} < {1}; ++{0}) {{", q, regs));
  ++indent_;
  line(fmt::format("float v_ = {}[{}];", buf, col));
  line("#pragma unroll");
  line(fmt::format("for (int w_ = 1; w_ < {}; ++w_) v_ = {};", warps,
                   comb("v_", fmt::format("{}[w_ * {} + {}]", buf, n, col))));
  line(fmt::format("{}[{}] = v_;", dn, q));
  closeLoop();
  line(groupSync());
  return success();
}

LogicalResult Emitter::emitParallel(ParallelOp op) {
  Block &body = op.getBody().front();
  auto ext = op.getExtents();
  // The iteration follows the layout of a fragment of the full rank.
  FragType driver;
  for (Operation &o : body) {
    Value f;
    if (auto r = dyn_cast<ElemReadOp>(o)) f = r.getFrag();
    else if (auto w = dyn_cast<ElemWriteOp>(o)) f = w.getFrag();
    if (!f) continue;
    auto t = cast<FragType>(f.getType());
    if (t.getShape().size() != ext.size()) continue;
    if (!driver) driver = t;
    else if (driver.getLayout() != t.getLayout() || driver.getWarpgroups() != t.getWarpgroups())
      return o.emitOpError("fragments of one map must share a layout");
  }
  // A map that reads only slot tiles at full rank (a row sum of tile
  // products) iterates the accumulator layout of their shape over the
  // group's warpgroups.
  if (!driver)
    for (Operation &o : body)
      if (auto p = dyn_cast<SlotPickOp>(o); p && p.getTile().getType().getShape().size() == ext.size()) {
        auto t = p.getTile().getType();
        const int64_t wg = group().end - group().begin + 1;
        if (ext.size() == 2 && t.getShape()[0] % (64 * wg) == 0 && t.getShape()[1] % 8 == 0)
          driver = FragType::get(op.getContext(), t.getShape(), Float32Type::get(op.getContext()), FragType::Acc, wg);
        break;
      }
  if (!driver) return op.emitOpError("a map must access at least one fragment of its full rank");
  // The indices carry the map's names (`parallel i, j`); a 1-D map over a
  // 2-D layout cannot happen (the driver has the map's rank).
  std::vector<std::string> idxNames;
  for (BlockArgument a : body.getArguments()) idxNames.push_back(sourceName(a.getLoc()));
  // Row sums (`v[i] += e`, qla.row_sum): each thread adds e of its own
  // columns into a partial per row register, then the four lanes that share
  // a row combine theirs (quad_sum) into v.
  llvm::MapVector<Value, std::string> rowSums;
  for (Operation &o : body)
    if (auto w = dyn_cast<ElemWriteOp>(o); w && w->hasAttr("qla.row_sum")) {
      auto t = w.getFrag().getType();
      if (ext.size() != 2 || driver.getLayout() != FragType::Acc || t.getLayout() != FragType::Row ||
          !t.getElementType().isF32())
        return w.emitOpError("a row sum needs a 2-D map over an accumulator layout and an f32 row vector");
      if (rowSums.count(w.getFrag())) continue;
      std::string p = fresh("qla_rowsum");
      line(fmt::format("float {}[{}];", p, t.getRegsPerThread()));
      line("#pragma unroll");
      line(fmt::format("for (int r_ = 0; r_ < {}; ++r_) {}[r_] = 0.0f;", t.getRegsPerThread(), p));
      rowSums[w.getFrag()] = p;
    }
  // A map that reads slot tiles computes one shared-memory address per
  // register from the lane and the warp: those are taken afresh here
  // (qla::dev::opaque, shadowing them in a scope of the map's own), so the
  // addresses are computed in the map rather than hoisted out of the
  // enclosing loop and held in registers across it.
  const bool freshIds = llvm::any_of(body, [](Operation &o) { return isa<SlotPickOp>(o); });
  if (freshIds) openFreshIds();
  // A slot tile read at the map's own (row, col) over an accumulator
  // layout: a register pair's two columns are neighbours in shared memory
  // (in one 16-byte chunk under every swizzle), so the pair is read by one
  // 32-bit (64-bit for f32) load at the even register and its second half
  // kept for the odd one: half the loads and half the addresses.
  llvm::DenseMap<Operation *, std::string> pairedPicks;
  if (ext.size() == 2 && driver.getLayout() == FragType::Acc && FragLayout::of(driver).pairsColumns())
    for (Operation &o : body) {
      auto p = dyn_cast<SlotPickOp>(o);
      if (!p || p.getIndices().size() != 2 || p.getIndices()[0] != body.getArgument(0) ||
          p.getIndices()[1] != body.getArgument(1))
        continue;
      Type et = p.getTile().getType().getElementType();
      if (!et.isBF16() && !et.isF16() && !et.isF32()) continue;
      std::string v = fresh("qla_pair");
      line(fmt::format("{} {};", et.isF32() ? "float2" : "qla::dev::u32", v));
      pairedPicks[p] = v;
    }
  RegLoop l = openRegLoop(driver, idxNames);
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    if (ext.size() == 1) bind(arg, l.idx[0]);
    else bind(arg, l.idx[i]);
  }
  auto regFor = [&](FragType t) -> std::string {
    if (t.getShape().size() == ext.size()) return l.reg;
    return vectorRegFor(t, driver, l.reg);
  };
  for (Operation &o : body) {
    setPosition(o.getLoc());
    if (auto it = pairedPicks.find(&o); it != pairedPicks.end()) {
      auto p = cast<SlotPickOp>(o);
      auto t = p.getTile().getType();
      Type et = t.getElementType();
      const std::string &v = it->second;
      const std::string at = fmt::format("{}[{}]", name(p.getTile()), smemIndex(t, l.idx[0], l.idx[1]));
      line(fmt::format("if ({} % 2 == 0) {} = *reinterpret_cast<const {}*>(&{});", l.reg, v,
                       et.isF32() ? "float2" : "qla::dev::u32", at));
      const std::string lo = et.isF32() ? v + ".x" : fmt::format("qla::dev::unpack_{}x2_lo({})", pfx(et), v);
      const std::string hi = et.isF32() ? v + ".y" : fmt::format("qla::dev::unpack_{}x2_hi({})", pfx(et), v);
      declare(p.getResult(), "float", fmt::format("({} % 2 == 0) ? {} : {}", l.reg, lo, hi), "pick");
      continue;
    }
    if (auto r = dyn_cast<ElemReadOp>(o)) {
      if (r.getResult().getType().isIndex())
        declare(r.getResult(), "int", fmt::format("{}[{}]", name(r.getFrag()), regFor(r.getFrag().getType())), "el");
      else
        declare(r.getResult(), "float", fragElem(r.getFrag(), regFor(r.getFrag().getType())), "el");
    } else if (auto w = dyn_cast<ElemWriteOp>(o)) {
      if (w->hasAttr("qla.row_sum")) {
        std::string a = fmt::format("{}[{}]", rowSums.lookup(w.getFrag()), regFor(w.getFrag().getType()));
        line(fmt::format("{0} = {0} + {1};", a, name(w.getValue())));
        continue;
      }
      if (w.getFrag().getType().getShape().size() != ext.size())
        return w.emitOpError("a map writes only fragments of its full rank");
      fragStore(w.getFrag(), l.reg, name(w.getValue()));
    } else if (failed(emitOp(&o))) {
      return failure();
    }
  }
  closeLoop();
  if (freshIds) closeLoop();
  for (auto &[v, p] : rowSums) {
    line("#pragma unroll");
    line(fmt::format("for (int r_ = 0; r_ < {0}; ++r_) {1}[r_] = {1}[r_] + qla::dev::quad_sum({2}[r_]);",
                     cast<FragType>(v.getType()).getRegsPerThread(), name(v), p));
  }
  return success();
}

LogicalResult Emitter::emitWgmmaFence(ValueRange frags) {
  // wgmma is a .sync.aligned instruction: every warp must be converged when
  // it reaches it. Loops with per-thread trip counts before it (scans, the
  // triangular inverse, bounded copies) do not guarantee that by themselves.
  // Turns: wait until this warpgroup holds the token (the commit hands it on).
  if (const Group &g = group(); g.turnBase)
    line(fmt::format("qla::dev::named_barrier_sync({} + qla_wgl, 256);  // turns: this warpgroup's", g.turnBase));
  line("__syncwarp();");
  for (Value f : frags) line(fmt::format("qla::dev::warpgroup_fence_regs({});", name(f)));
  line("qla::dev::wgmma_fence();");
  return success();
}

LogicalResult Emitter::emitWgmma(WgmmaOp op) {
  auto c = op.getC().getType();
  auto b = op.getB().getType();
  int64_t w = op.getWarpgroups(), M = c.getShape()[0], N = c.getShape()[1];
  int64_t mw = M / w, mt = mw / 64;
  bool ta = op.getTransA(), tb = op.getTransB();
  Type et = b.getElementType();
  int64_t elt = elementBytes(et);
  auto bs = b.getShape();
  int64_t K = tb ? bs[1] : bs[0];

  // Shared operands: one descriptor per operand at its origin (the
  // warpgroup's rows for A), then per (m-tile, k-step) a constant byte
  // advance. K-major tiles: element (row, k) lies in column block k/E, row
  // `row`, byte (k%E)*elt of the row. MN-major tiles ([K rows][MN cols]):
  // MN start `row` (a multiple of E) in block row/E, row k.
  auto swzCode = [](unsigned s) { return s == 128 ? 1 : s == 64 ? 2 : 3; };
  std::string cn = name(op.getC()), bn = name(op.getB());
  auto baseDesc = [&](const std::string &tile, SharedType t, bool mnMajor, bool isA) {
    unsigned S = t.getSwizzle();
    int64_t E = S / elt, rows = t.getShape()[0];
    std::string rt = "0";  // runtime byte offset: this warpgroup's rows of A
    if (isA) rt = mnMajor ? fmt::format("(qla_wgl * {}) * {}", mw / E, rows * S) : fmt::format("qla_wgl * {}", mw * S);
    std::string lbo = mnMajor ? std::to_string(rows * S) : "16";
    return declareStr("qla::dev::u64",
                      fmt::format("qla::dev::make_wgmma_desc({} + ({}) / {}, {}, {}, {})", tile, rt, elt, lbo, 8 * S,
                                  swzCode(S)),
                      "desc");
  };
  auto advance = [&](const std::string &base, SharedType t, bool mnMajor, int64_t row, int64_t k) {
    unsigned S = t.getSwizzle();
    int64_t E = S / elt, rows = t.getShape()[0];
    int64_t bytes = mnMajor ? (row / E) * rows * S + k * S : (k / E) * rows * S + (k % E) * elt + row * S;
    return bytes == 0 ? base : fmt::format("qla::dev::wgmma_desc_advance({}, {})", base, bytes);
  };

  std::string kind = et.isBF16() ? "bf16" : "f16";
  line(fmt::format("{{  // wgmma: C[{} x {}] over {} warpgroup(s), K = {}", M, N, w, K));
  ++indent_;
  auto sa = dyn_cast<SharedType>(op.getA().getType());
  std::string dbase = baseDesc(bn, b, !tb, false);
  std::string abase = sa ? baseDesc(name(op.getA()), sa, ta, true) : "";
  for (int64_t m = 0; m < mt; ++m) {
    std::string acc = fmt::format("*reinterpret_cast<float(*)[{}]>(&{}[{}])", N / 2, cn, m * (N / 2));
    for (int64_t k = 0; k < K; k += 16) {
      std::string scale = (!op.getAccumulate() && k == 0) ? "0" : "1";
      std::string db = advance(dbase, b, !tb, 0, k);
      if (sa) {
        std::string da = advance(abase, sa, ta, m * 64, k);  // A in shared memory
        line(fmt::format("qla::dev::wgmma_ss_{}<{}, {}, {}>({}, {}, {}, {});", kind, N, ta ? 1 : 0, tb ? 0 : 1, acc, da,
                         db, scale));
      } else {
        int64_t ka = cast<FragType>(op.getA().getType()).getShape()[1];
        std::string regs = fmt::format("*reinterpret_cast<const qla::dev::u32(*)[4]>(&{}[{}])", name(op.getA()),
                                       m * (ka / 4) + (k / 16) * 4);
        line(fmt::format("qla::dev::wgmma_rs_{}<{}, {}>({}, {}, {}, {});", kind, N, tb ? 0 : 1, acc, regs, db, scale));
      }
    }
  }
  --indent_;
  line("}");
  return success();
}

// Declares `name` as a float pointer to the op's scratch in the arena.
LogicalResult Emitter::scratchPointer(Operation *op, const std::string &name) {
  auto off = op->getAttrOfType<IntegerAttr>("qla.scratch_offset");
  if (!off) return op->emitOpError("has no shared scratch (run qla-assign-resources)");
  line(fmt::format("float* const {} = reinterpret_cast<float*>(qla_smem + {});", name, off.getInt()));
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

LogicalResult Emitter::emitGlobalRead(GlobalReadOp op) {
  int t = tensorIndex(op.getSrc());
  const TensorArgInfo &ti = info_.tensors[t];
  std::string off = "0LL", inb = "true";
  for (auto [d, v] : llvm::enumerate(op.getIndices())) {
    off += fmt::format(" + (long long){} * {}_stride{}", name(v), tensorNames_[t], d);
    inb += fmt::format(" && {0} >= 0 && {0} < {1}", name(v), ti.dims[d]);
  }
  Type et = op.getSrc().getType().getElementType();
  std::string load = fmt::format("{}[{}]", name(op.getSrc()), off);
  if (op.getResult().getType().isIndex())
    declare(op.getResult(), "int", fmt::format("({}) ? (int){} : 0", inb, load), "g");
  else
    declare(op.getResult(), "float", fmt::format("({}) ? {} : 0.0f", inb, loadAsFloat(et, load)), "g");
  return success();
}

// One element at a uniform index: its owner(s) write it to shared memory,
// everyone reads it back.
LogicalResult Emitter::emitFragPick(FragPickOp op) {
  auto t = op.getFrag().getType();
  std::string slot = fresh("qla_pick");
  if (failed(scratchPointer(op, slot))) return failure();
  slot = "(*" + slot + ")";
  line(groupSync());
  RegLoop l = openRegLoop(t);
  std::string cond;
  for (auto [k, v] : llvm::enumerate(op.getIndices()))
    cond += fmt::format("{}{} == {}", k ? " && " : "", l.idx[t.getShape().size() == 1 ? 0 : k], name(v));
  line(fmt::format("if ({}) {} = {};", cond, slot, fragElem(op.getFrag(), l.reg)));
  closeLoop();
  line(groupSync());
  if (op.getResult().getType().isIndex()) declare(op.getResult(), "int", "(int)" + slot, "pick");
  else declare(op.getResult(), "float", slot, "pick");
  return success();
}

// One element of a get's slot tile at a uniform index: every thread loads it
// (the slot is visible to all after the get's wait; no barrier).
LogicalResult Emitter::emitSlotPick(SlotPickOp op) {
  auto t = op.getTile().getType();
  const bool twoD = t.getShape().size() == 2;
  std::string row = twoD ? name(op.getIndices()[0]) : "0", col = name(op.getIndices().back());
  declare(op.getResult(), "float",
          loadAsFloat(t.getElementType(), fmt::format("{}[{}]", name(op.getTile()), smemIndex(t, row, col))), "pick");
  return success();
}

// Inclusive prefix scan of a 1-D fragment: stage the vector in shared
// memory, let the group's first warp scan it in 32-element steps with
// shuffles, then every register reads its prefix. No per-thread trip counts:
// every warp stays converged (later wgmma and bar.sync need that).
LogicalResult Emitter::emitScan(ScanOp op) {
  auto s = op.getSrc().getType(), d = op.getDst().getType();
  // Staging through shared memory lets source and result have different
  // layouts (a row vector scanned into a column vector).
  if (s.getShape().size() != 1 || s.getWarpgroups() != d.getWarpgroups())
    return op.emitOpError("only scans of 1-D fragments (row or column vectors) are emitted yet");
  int64_t n = s.getShape()[0];
  std::string buf = fresh("qla_scan");
  if (failed(scratchPointer(op, buf))) return failure();
  line(groupSync());
  {
    RegLoop l = openRegLoop(s);
    line(fmt::format("{}[{}] = {};", buf, l.idx[0], fragElem(op.getSrc(), l.reg)));
    closeLoop();
  }
  line(groupSync());
  const std::string init = reduceInit(op.getKind());
  auto comb = [&](const std::string &a, const std::string &b) { return reduceCombine(op.getKind(), a, b); };
  line(fmt::format("if ((int)threadIdx.x / 32 == {}) {{  // the group's first warp scans", group().begin * 4));
  ++indent_;
  std::string carry = fresh("carry"), base = fresh("base");
  line(fmt::format("float {} = {};", carry, init));
  line(fmt::format("for (int {0} = 0; {0} < {1}; {0} += 32) {{", base, n));
  ++indent_;
  line(fmt::format("const bool in_ = {} + qla_lane < {};", base, n));
  line(fmt::format("float v_ = in_ ? {}[{} + qla_lane] : {};", buf, base, init));
  line("#pragma unroll");
  line("for (int o_ = 1; o_ < 32; o_ *= 2) {");
  line("  const float u_ = __shfl_up_sync(0xffffffffu, v_, o_);");
  line(fmt::format("  if (qla_lane >= o_) v_ = {};", comb("v_", "u_")));
  line("}");
  line(fmt::format("v_ = {};", comb("v_", carry)));
  line(fmt::format("if (in_) {}[{} + qla_lane] = v_;", buf, base));
  line(fmt::format("{} = __shfl_sync(0xffffffffu, v_, 31);", carry));
  --indent_;
  line("}");
  --indent_;
  line("}");
  line(groupSync());
  RegLoop l = openRegLoop(d);
  fragStore(op.getDst(), l.reg, fmt::format("{}[{}]", buf, l.idx[0]));
  closeLoop();
  line(groupSync());
  return success();
}

// (I + strictly_lower(L))^-1 in shared memory, f32, blocked: the matrix is
// cut into BS x BS blocks (BS = 16 when n is a multiple of 16, else one
// block). X = (I + L)^-1 is lower triangular with unit diagonal.
//  1. Diagonal blocks, all at once: thread t owns column t and runs forward
//     substitution down its block's BS rows (X[r][t] = -sum_k L[r][k] X[k][t]
//     with X[t][t] = 1). No barrier: a column depends only on itself.
//  2. Off-diagonal blocks by distance d = i - j from the diagonal, 1 .. NB-1:
//     T_ij = sum_{k=j}^{i-1} L_ik X_kj (blocks of distance < d are done), then
//     X_ij = -X_ii T_ij. T_ij is kept in block (j, i) of L's unused upper
//     triangle. Two barriers per distance.
// The dependent chain is BS + sum_d (d + 1) BS multiply-adds instead of n^2/2
// (for n = 64: 136 + 144 instead of 2016). Every loop has a trip count that is
// uniform within a warp's work item, so warps reconverge before later wgmma.
LogicalResult Emitter::emitInvUnitLower(InvUnitLowerOp op) {
  auto s = op.getSrc().getType();
  int64_t n = s.getShape()[0];
  const int64_t wgs = group().end - group().begin + 1, nthreads = wgs * 128;
  if (n > nthreads) return op.emitOpError("matrices larger than the group's thread count are not supported yet");
  if (s.getLayout() != FragType::Acc) return op.emitOpError("needs an accumulator-layout fragment");
  if (op.getF16Operands()) {
    if (!op.mmaMerged(wgs))
      return op.emitOpError("with f16 operands needs a 64 x 64 accumulator fragment of one warpgroup (the role or "
                            "kernel has ")
             << wgs << " warpgroups)";
    return emitInvUnitLowerMma(op);
  }
  if (op.inRegisters(wgs)) return emitInvUnitLowerRegisters(op);
  const int64_t blocks = op.getBlocks() ? *op.getBlocks() : 0;  // only the diagonal blocks
  const int64_t bs = blocks ? blocks : n % 16 == 0 ? 16 : n, nb = n / bs;
  // Padded rows (no bank conflicts on column reads). With `blocks` only the
  // diagonal blocks are kept, one after another (bs x (bs + 1) each): entry
  // (r, c) of block r / bs at (r / bs) * bs * ld + (r % bs) * ld + c % bs,
  // that is r * ld + c % bs.
  const int64_t ld = blocks ? bs + 1 : n + 1;
  std::string L = fresh("qla_inv_l"), X = fresh("qla_inv_x");
  if (failed(scratchPointer(op, L))) return failure();
  line(fmt::format("float* const {} = {} + {};", X, L, n * ld));
  // Element (r, c) of L or X (with `blocks`: of a diagonal block).
  auto at = [&](const std::string &r, const std::string &c) {
    if (!blocks) return fmt::format("({}) * {} + ({})", r, ld, c);
    if ((bs & (bs - 1)) == 0) return fmt::format("({}) * {} + (({}) & {})", r, ld, c, bs - 1);
    return fmt::format("({}) * {} + ({}) % {}", r, ld, c, bs);
  };
  std::string tid = declareStr("int", fmt::format("(int)threadIdx.x - {}", group().begin * 128), "tid");
  // The statements below name the scratch matrices {L} and {X}, their padded
  // row length {LD}, the block size {BS}, the group's thread count {NT}, the
  // thread index {tid} and the order {n}.
  auto F = [&](const char *fs, int64_t d = 0) {
    return fmt::format(fmt::runtime(fs), fmt::arg("L", L), fmt::arg("X", X), fmt::arg("LD", ld), fmt::arg("BS", bs),
                       fmt::arg("NT", nthreads), fmt::arg("tid", tid), fmt::arg("n", n), fmt::arg("d", d));
  };
  line(groupSync());
  // X starts as the identity: entries above the diagonal then add nothing.
  // With `blocks` only the diagonal blocks are computed, every entry of them
  // by step 1, and the rest of the result is 0 by construction (the copy out
  // selects it): no fill.
  if (!blocks) {
    std::string z = fresh("z");
    line(fmt::format("for (int {0} = {1}; {0} < {2}; {0} += {3}) {4}[{0}] = ({0} % {5} == {0} / {5}) ? 1.0f : 0.0f;",
                     z, tid, n * ld, nthreads, X, ld));
  }
  {
    RegLoop l = openRegLoop(s);
    if (blocks)
      line(fmt::format("if (({0}) / {1} == ({2}) / {1}) {3}[{4}] = {5};", l.idx[0], bs, l.idx[1], L,
                       at(l.idx[0], l.idx[1]), fragElem(op.getSrc(), l.reg)));
    else
      line(fmt::format("{}[{}] = {};", L, at(l.idx[0], l.idx[1]), fragElem(op.getSrc(), l.reg)));
    closeLoop();
  }
  line(groupSync());
  // 1. Diagonal blocks: the thread's column lives in registers (x_[r] is
  // X[b0 + r][col]); loops are unrolled, indices compile-time constants.
  line("{");
  ++indent_;
  line(fmt::format("const int col_ = {0} < {1} ? {0} : {2};", tid, n, n - 1));
  line(F("const int b0_ = (col_ / {BS}) * {BS}, c_ = col_ - b0_;"));
  line(F("float x_[{BS}];"));
  line("#pragma unroll");
  line(F("for (int r_ = 0; r_ < {BS}; ++r_) {{"));
  ++indent_;
  line(blocks ? F("const float* const lrow_ = {L} + (b0_ + r_) * {LD};")
              : F("const float* const lrow_ = {L} + (b0_ + r_) * {LD} + b0_;"));
  line("float a0 = 0.0f, a1 = 0.0f;");
  line("#pragma unroll");
  line("for (int k_ = 0; k_ + 1 < r_; k_ += 2) { a0 += lrow_[k_] * x_[k_]; a1 += lrow_[k_ + 1] * x_[k_ + 1]; }");
  line("if (r_ % 2 == 1) a0 += lrow_[r_ - 1] * x_[r_ - 1];");
  line("x_[r_] = r_ < c_ ? 0.0f : r_ == c_ ? 1.0f : -(a0 + a1);");
  --indent_;
  line("}");
  line(F("if ({tid} < {n}) {{"));
  line("  #pragma unroll");
  line(blocks ? F("  for (int r_ = 0; r_ < {BS}; ++r_) {X}[(b0_ + r_) * {LD} + c_] = x_[r_];")
              : F("  for (int r_ = 0; r_ < {BS}; ++r_) {X}[(b0_ + r_) * {LD} + col_] = x_[r_];"));
  line("}");
  --indent_;
  line("}");
  line(groupSync());
  // 2. Off-diagonal blocks, by distance d from the diagonal (unrolled here:
  // every trip count is a constant); none with `blocks`.
  for (int64_t d = 1; d < nb && !blocks; ++d) {
    const int64_t cnt = (nb - d) * bs * bs, iters = (cnt + nthreads - 1) / nthreads;
    const bool ragged = cnt % nthreads != 0;
    auto item = [&](const std::vector<std::string> &body) {
      line("#pragma unroll");
      line(fmt::format("for (int q_ = 0; q_ < {}; ++q_) {{", iters));
      ++indent_;
      line(F("const int e_ = {tid} + q_ * {NT};"));
      if (ragged) line(fmt::format("if (e_ < {}) {{", cnt));
      line(fmt::format("const int j_ = e_ / {0}, i_ = j_ + {1}, r_ = (e_ / {2}) % {2}, c_ = e_ % {2};", bs * bs, d, bs));
      for (const std::string &b : body) line(b);
      if (ragged) line("}");
      --indent_;
      line("}");
    };
    line(fmt::format("{{  // distance {}: T_ij = sum_k L_ik X_kj", d));
    ++indent_;
    item({F("const float* const lrow_ = {L} + (i_ * {BS} + r_) * {LD} + j_ * {BS};"),
          F("const float* const xcol_ = {X} + (j_ * {BS}) * {LD} + j_ * {BS} + c_;"),
          "float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;",
          "#pragma unroll",
          fmt::format("for (int k_ = 0; k_ < {}; k_ += 4) {{", d * bs),
          F("  a0 += lrow_[k_] * xcol_[k_ * {LD}];"),
          F("  a1 += lrow_[k_ + 1] * xcol_[(k_ + 1) * {LD}];"),
          F("  a2 += lrow_[k_ + 2] * xcol_[(k_ + 2) * {LD}];"),
          F("  a3 += lrow_[k_ + 3] * xcol_[(k_ + 3) * {LD}];"),
          "}",
          F("{L}[(j_ * {BS} + r_) * {LD} + i_ * {BS} + c_] = (a0 + a1) + (a2 + a3);  // T_ij in block (j, i)")});
    line(groupSync());
    line("// X_ij = -X_ii T_ij");
    item({F("const float* const xrow_ = {X} + (i_ * {BS} + r_) * {LD} + i_ * {BS};"),
          F("const float* const tcol_ = {L} + (j_ * {BS}) * {LD} + i_ * {BS} + c_;"),
          "float a0 = 0.0f, a1 = 0.0f;",
          "#pragma unroll",
          F("for (int m_ = 0; m_ < {BS}; m_ += 2) {{ a0 += xrow_[m_] * tcol_[m_ * {LD}]; a1 += xrow_[m_ + 1] * tcol_[(m_ + 1) * {LD}]; }}"),
          F("{X}[(i_ * {BS} + r_) * {LD} + j_ * {BS} + c_] = -(a0 + a1);")});
    line(groupSync());
    --indent_;
    line("}");
  }
  RegLoop l = openRegLoop(op.getDst().getType());
  if (blocks)
    fragStore(op.getDst(), l.reg,
              fmt::format("({1}) / {3} == ({2}) / {3} ? {0}[{4}] : 0.0f", X, l.idx[0], l.idx[1], bs,
                          at(l.idx[0], l.idx[1])));
  else
    fragStore(op.getDst(), l.reg, fmt::format("{}[{} * {} + {}]", X, l.idx[0], ld, l.idx[1]));
  closeLoop();
  line(groupSync());
  return success();
}

// The registers of a 64 x 64 accumulator fragment of one warpgroup that hold
// its 16 x 16 block (row block w, column block cb): reg[jj][h][e] holds block
// element (l/4 + 8h, 8jj + 2(l%4) + e) in lane l of warp w (the warp_block.cuh
// layout; found from FragLayout, the pattern checked for every lane).
LogicalResult Emitter::warpBlockRegs(InvUnitLowerOp op, int64_t w, int64_t cb, int64_t (&reg)[2][2][2]) {
  const FragLayout lay = FragLayout::of(op.getSrc().getType());
  for (auto &a : reg)
    for (auto &b : a)
      for (auto &c : b) c = -1;
  for (int64_t r = 0; r < lay.regsPerThread(); ++r) {
    std::vector<int64_t> rc = lay.index(r, {0, w, 0});
    const int64_t br = rc[0] - 16 * w, bc = rc[1] - 16 * cb;
    if (br < 0 || br >= 16 || bc < 0 || bc >= 16) continue;
    const int64_t h = br / 8, jj = bc / 8, e = bc % 2;
    if (br % 8 != 0 || (bc % 8) / 2 != 0 || reg[jj][h][e] != -1)
      return op.emitOpError("register inverse: unexpected accumulator layout");
    reg[jj][h][e] = r;
  }
  for (int64_t jj = 0; jj < 2; ++jj)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t e = 0; e < 2; ++e) {
        const int64_t r = reg[jj][h][e];
        if (r < 0) return op.emitOpError("register inverse: a 16 x 16 block is not whole in its warp");
        for (int64_t l = 0; l < 32; ++l) {
          std::vector<int64_t> rc = lay.index(r, {l, w, 0});
          if (rc[0] != 16 * w + l / 4 + 8 * h || rc[1] != 16 * cb + 8 * jj + 2 * (l % 4) + e)
            return op.emitOpError("register inverse: unexpected accumulator layout");
        }
      }
  return success();
}

// Emits, inside an open scope where `float lb_[8]` holds a 16 x 16 block of L
// in the warp_block.cuh layout (slot 4jj + 2h + e), the declaration of
// `float xb_[8]` = (I + strictly_lower(lb_))^-1 in the same layout, and of
// `lr_ = lane / 4`, `lq_ = lane % 4` and `kof_[jj][h][e]` (the slot).
// Right-looking elimination: for each pivot s, row s of X (final by then) and
// column s of L go to every lane by shuffles and X[r, :] -= L[r, s] X[s, :] (a
// no-op for r <= s: L is masked to its strict lower triangle). No shared
// memory, no barrier.
void Emitter::emitBlockInverse16() {
  line("float xb_[8];");
  line("const int lr_ = qla_lane / 4, lq_ = qla_lane % 4;");
  // kof_[jj][h][e] = 4jj + 2h + e, for the loops below (constant once unrolled).
  line("constexpr int kof_[2][2][2] = {{{0, 1}, {2, 3}}, {{4, 5}, {6, 7}}};");
  line("#pragma unroll");
  line("for (int jj_ = 0; jj_ < 2; ++jj_) {");
  line("  #pragma unroll");
  line("  for (int h_ = 0; h_ < 2; ++h_) {");
  line("    #pragma unroll");
  line("    for (int e_ = 0; e_ < 2; ++e_) {");
  line("      const int k_ = kof_[jj_][h_][e_], r_ = lr_ + 8 * h_, c_ = 8 * jj_ + 2 * lq_ + e_;");
  line("      lb_[k_] = r_ > c_ ? lb_[k_] : 0.0f;");
  line("      xb_[k_] = r_ == c_ ? 1.0f : 0.0f;");
  line("    }");
  line("  }");
  line("}");
  // The 16 x 16 block as 8 x 8 quadrants: X = [[X11, 0], [X21, X22]] with
  // X11 = (I + L11)^-1, X22 = (I + L22)^-1 and X21 = X22 Y, Y = -L21 X11.
  // Phase 1, 8 steps: one column-by-column elimination step on the top-left
  // and one on the bottom-right quadrant at once, and Y accumulated from the
  // top-left rows as they become final (half the dependent steps of a
  // 16-step elimination). Phase 2: X21 = X22 Y, an 8 x 8 product whose
  // shuffles do not depend on one another. Slots: top-left k(0, 0, e),
  // bottom-left k(0, 1, e), bottom-right k(1, 1, e).
  line("#pragma unroll");
  line("for (int t_ = 0; t_ < 8; ++t_) {");
  ++indent_;
  line("// Row t of X11 and of X22 (lanes 4t + q), column t of L11, L21 and L22 (lanes 4 (l / 4) + t / 2).");
  line("float xt_[2], xr_[2];");
  line("#pragma unroll");
  line("for (int e_ = 0; e_ < 2; ++e_) {");
  line("  xt_[e_] = __shfl_sync(0xffffffffu, xb_[kof_[0][0][e_]], 4 * t_ + lq_);");
  line("  xr_[e_] = __shfl_sync(0xffffffffu, xb_[kof_[1][1][e_]], 4 * t_ + lq_);");
  line("}");
  line("const float lt_ = __shfl_sync(0xffffffffu, lb_[kof_[0][0][t_ % 2]], lr_ * 4 + t_ / 2);");
  line("const float lbt_ = __shfl_sync(0xffffffffu, lb_[kof_[0][1][t_ % 2]], lr_ * 4 + t_ / 2);");
  line("const float lrt_ = __shfl_sync(0xffffffffu, lb_[kof_[1][1][t_ % 2]], lr_ * 4 + t_ / 2);");
  line("#pragma unroll");
  line("for (int e_ = 0; e_ < 2; ++e_) {");
  line("  xb_[kof_[0][0][e_]] -= lt_ * xt_[e_];");
  line("  xb_[kof_[0][1][e_]] -= lbt_ * xt_[e_];");
  line("  xb_[kof_[1][1][e_]] -= lrt_ * xr_[e_];");
  line("}");
  --indent_;
  line("}");
  line("{");
  ++indent_;
  line("// X21 = X22 Y: row l / 4 of X22 (lanes 4 (l / 4) + m / 2), rows m of Y (lanes 4m + q).");
  line("float z_[2] = {0.0f, 0.0f};");
  line("#pragma unroll");
  line("for (int m_ = 0; m_ < 8; ++m_) {");
  line("  const float xm_ = __shfl_sync(0xffffffffu, xb_[kof_[1][1][m_ % 2]], lr_ * 4 + m_ / 2);");
  line("  #pragma unroll");
  line("  for (int e_ = 0; e_ < 2; ++e_) z_[e_] += xm_ * __shfl_sync(0xffffffffu, xb_[kof_[0][1][e_]], 4 * m_ + lq_);");
  line("}");
  line("xb_[kof_[0][1][0]] = z_[0];");
  line("xb_[kof_[0][1][1]] = z_[1];");
  --indent_;
  line("}");
}

// inv_unit_lower(l, blocks = 16) of a 64 x 64 accumulator fragment held by
// one warpgroup (InvUnitLowerOp::inRegisters): warp w holds diagonal block w
// (rows and columns 16w .. 16w + 15) whole, 8 registers per lane, and inverts
// it in registers (emitBlockInverse16): 8 dependent steps of shuffles and
// FMAs, no shared memory, no barrier. dst is zero off the diagonal blocks.
LogicalResult Emitter::emitInvUnitLowerRegisters(InvUnitLowerOp op) {
  int64_t reg[4][2][2][2];
  for (int64_t w = 0; w < 4; ++w)
    if (failed(warpBlockRegs(op, w, w, reg[w]))) return failure();
  auto k = [](int64_t jj, int64_t h, int64_t e) { return 4 * jj + 2 * h + e; };
  line("{");
  ++indent_;
  line("float lb_[8];");
  for (int64_t w = 0; w < 4; ++w) {
    line(fmt::format("{}if (qla_warp == {}) {{", w ? "} else " : "", w));
    ++indent_;
    for (int64_t jj = 0; jj < 2; ++jj)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t e = 0; e < 2; ++e)
          line(fmt::format("lb_[{}] = {};", k(jj, h, e), fragElem(op.getSrc(), std::to_string(reg[w][jj][h][e]))));
    --indent_;
  }
  line("}");
  emitBlockInverse16();
  // dst: the warp's block, zero elsewhere.
  const FragLayout lay = FragLayout::of(op.getSrc().getType());
  for (int64_t r = 0; r < lay.regsPerThread(); ++r) {
    std::string v = "0.0f";
    for (int64_t w = 0; w < 4; ++w)
      for (int64_t jj = 0; jj < 2; ++jj)
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t e = 0; e < 2; ++e)
            if (reg[w][jj][h][e] == r) v = fmt::format("(qla_warp == {} ? xb_[{}] : {})", w, k(jj, h, e), v);
    fragStore(op.getDst(), std::to_string(r), v);
  }
  --indent_;
  line("}");
  return success();
}

// inv_unit_lower(l, operands = f16) of a 64 x 64 accumulator fragment held by
// one warpgroup (InvUnitLowerOp::mmaMerged): the whole inverse X, in
// registers, with the 16 x 16 blocks of the warp_block.cuh layout (warp w
// holds row block w, all four column blocks). Blocks X_ij, L_ij (i, j the
// warp / column block); D_i = X_ii.
//   Level 0, every warp: D_w = (I + L_ww)^-1 by elimination (emitBlockInverse16).
//   Level 1 (16 -> 32):  X_10 = -D_1 (L_10 D_0),  X_32 = -D_3 (L_32 D_2).
//   Level 2 (32 -> 64):  [X_20 X_21; X_30 X_31] = -X_lr L_ll X_ul, with
//     X_ul = [D_0 0; X_10 D_1], X_lr = [D_2 0; X_32 D_3] and L_ll the blocks
//     (2..3, 0..1) of L: warp 2 takes Z = D_2 [L_20 L_21], warp 3
//     Z = X_32 [L_20 L_21] + D_3 [L_30 L_31], then X_w = -Z X_ul.
// Every product is mma.sync.m16n8k16 on f16 operands with f32 sums; the
// diagonal blocks stay f32. An operand a warp holds itself is a register
// operand (A: as is, B: movmatrix); the others cross warps through an f16
// scratch tile (B by ldmatrix.trans): D_0, X_10 and D_1 (X_ul), D_2, and
// L_20, L_21 (for warp 3), in a 48 x kMmaLd array at their (row, column).
// Three barriers of the group: before the scratch is written (the previous
// use's reads), after level 0's and after level 1's writes.
LogicalResult Emitter::emitInvUnitLowerMma(InvUnitLowerOp op) {
  int64_t reg[4][2][2][2];
  for (int64_t cb = 0; cb < 4; ++cb) {
    if (failed(warpBlockRegs(op, 0, cb, reg[cb]))) return failure();
    for (int64_t w = 1; w < 4; ++w) {
      int64_t rw[2][2][2];
      if (failed(warpBlockRegs(op, w, cb, rw))) return failure();
      if (std::memcmp(rw, reg[cb], sizeof rw) != 0)
        return op.emitOpError("register inverse: the warps' blocks are in different registers");
    }
  }
  auto k = [](int64_t jj, int64_t h, int64_t e) { return 4 * jj + 2 * h + e; };
  const int64_t ld = InvUnitLowerOp::kMmaLd;
  std::string F = fresh("qla_inv_s");
  if (failed(scratchPointer(op, F))) return failure();
  line("{");
  ++indent_;
  line(fmt::format("qla::dev::f16* const s_ = reinterpret_cast<qla::dev::f16*>({});", F));
  // L's four blocks of this warp's rows (read before dst is written: dst may be src).
  line("float lf_[4][8];");
  for (int64_t cb = 0; cb < 4; ++cb)
    for (int64_t jj = 0; jj < 2; ++jj)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t e = 0; e < 2; ++e)
          line(fmt::format("lf_[{}][{}] = {};", cb, k(jj, h, e), fragElem(op.getSrc(), std::to_string(reg[cb][jj][h][e]))));
  line("float lb_[8];");
  line("#pragma unroll");
  line("for (int i_ = 0; i_ < 8; ++i_)");
  line("  lb_[i_] = qla_warp == 0 ? lf_[0][i_] : qla_warp == 1 ? lf_[1][i_] : qla_warp == 2 ? lf_[2][i_] : lf_[3][i_];");
  emitBlockInverse16();
  auto at = [&](int64_t r, int64_t c) { return fmt::format("s_ + {}", r * ld + c); };
  line("qla::dev::u32 a_[4], b_[2][2];");
  line("float x1_[8] = {}, q0_[8] = {}, q1_[8] = {};  // X_10 or X_32; X_w0, X_w1");
  line(groupSync());
  line("if (qla_warp == 0) {");
  line(fmt::format("  qla::dev::wblock_store_f16({}, {}, xb_);  // D_0", at(0, 0), ld));
  line("} else if (qla_warp == 2) {");
  line(fmt::format("  qla::dev::wblock_store_f16({}, {}, xb_);  // D_2", at(32, 32), ld));
  line(fmt::format("  qla::dev::wblock_store_f16({}, {}, lf_[0]);  // L_20", at(32, 0), ld));
  line(fmt::format("  qla::dev::wblock_store_f16({}, {}, lf_[1]);  // L_21", at(32, 16), ld));
  line("}");
  line(groupSync());
  // d += A B on the tensor cores: A from a register block (a_ is kept when
  // `a` is empty), B from shared memory at (r, c) or from a register block.
  auto bShared = [&](int64_t r, int64_t c) { return fmt::format("qla::dev::wblock_b_shared(b_, {}, {});", at(r, c), ld); };
  auto bRegs = [](const std::string &x) { return fmt::format("qla::dev::wblock_b(b_, {});", x); };
  auto mma = [&](const std::string &d, const std::string &a, const std::string &loadB) {
    if (!a.empty()) line(fmt::format("qla::dev::wblock_a(a_, {});", a));
    line(loadB);
    line(fmt::format("qla::dev::wblock_mma({}, a_, b_);", d));
  };
  // Level 1: warp 1 (i = 1, j = 0) and warp 3 (i = 3, j = 2).
  for (int64_t w : {1, 3}) {
    line(fmt::format("if (qla_warp == {}) {{  // X_{}{} = -D_{} (L_{}{} D_{})", w, w, w - 1, w, w, w - 1, w - 1));
    ++indent_;
    line("float y_[8] = {};");
    mma("y_", fmt::format("lf_[{}]", w - 1), bShared(16 * (w - 1), 16 * (w - 1)));
    line("#pragma unroll");
    line("for (int i_ = 0; i_ < 8; ++i_) y_[i_] = -y_[i_];");
    mma("x1_", "xb_", bRegs("y_"));
    if (w == 1) {
      line(fmt::format("qla::dev::wblock_store_f16({}, {}, x1_);  // X_10", at(16, 0), ld));
      line(fmt::format("qla::dev::wblock_store_f16({}, {}, xb_);  // D_1", at(16, 16), ld));
    }
    --indent_;
    line("}");
  }
  line(groupSync());
  // Level 2: warps 2 and 3.
  line("if (qla_warp >= 2) {  // X_w0, X_w1 = -Z X_ul");
  ++indent_;
  line("float z0_[8] = {}, z1_[8] = {};");
  line("if (qla_warp == 3) {  // Z += X_32 [L_20 L_21]");
  ++indent_;
  mma("z0_", "x1_", bShared(32, 0));
  mma("z1_", "", bShared(32, 16));
  --indent_;
  line("}");
  line("// Z += D_w [L_w0 L_w1]");
  mma("z0_", "xb_", bRegs("lf_[0]"));
  mma("z1_", "", bRegs("lf_[1]"));
  line("#pragma unroll");
  line("for (int i_ = 0; i_ < 8; ++i_) { z0_[i_] = -z0_[i_]; z1_[i_] = -z1_[i_]; }");
  line("// X_w0 = Z_0 D_0 + Z_1 X_10, X_w1 = Z_1 D_1 (block (0, 1) of X_ul is 0)");
  mma("q0_", "z0_", bShared(0, 0));
  mma("q0_", "z1_", bShared(16, 0));
  mma("q1_", "", bShared(16, 16));
  --indent_;
  line("}");
  // dst: block (w, cb) of the warp's rows.
  const char *pick[4] = {"qla_warp == 0 ? xb_[{0}] : qla_warp == 1 ? x1_[{0}] : q0_[{0}]",
                         "qla_warp == 0 ? 0.0f : qla_warp == 1 ? xb_[{0}] : q1_[{0}]",
                         "qla_warp == 2 ? xb_[{0}] : qla_warp == 3 ? x1_[{0}] : 0.0f",
                         "qla_warp == 3 ? xb_[{0}] : 0.0f"};
  for (int64_t cb = 0; cb < 4; ++cb)
    for (int64_t jj = 0; jj < 2; ++jj)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t e = 0; e < 2; ++e)
          fragStore(op.getDst(), std::to_string(reg[cb][jj][h][e]),
                    "(" + fmt::format(fmt::runtime(pick[cb]), k(jj, h, e)) + ")");
  --indent_;
  line("}");
  return success();
}

}  // namespace qla::compiler
