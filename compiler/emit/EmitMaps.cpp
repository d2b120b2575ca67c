// CUDA emitter: elementwise maps (`parallel`), row sums, reductions along
// either dim, and scans.
#include "compiler/emit/EmitterCore.h"

#include <cstring>

#include <fmt/format.h>

#include "llvm/ADT/MapVector.h"

#include "compiler/emit/EmitHelpers.h"
#include "dialects/qla/IR/FragLayout.h"
#include "dialects/qla/Transforms/TmaStores.h"

using namespace mlir;
using namespace mlir::qla;
using namespace mlir::qlanv;

namespace qla::compiler {

using namespace emit_detail;

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
        const int64_t wg = group().end - group().begin + 1;
        if (ext.size() == 2 && ext[0] % (64 * wg) == 0 && ext[1] % 8 == 0)
          driver = FragType::get(op.getContext(), ext, Float32Type::get(op.getContext()), FragType::Acc, wg);
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
  // layout, or at a constant offset (r, c) from it with c even: a register
  // pair's two columns are neighbours in shared memory (in one 16-byte chunk
  // under every swizzle), so the pair is read by one 32-bit (64-bit for f32)
  // load at the even register and its second half kept for the odd one:
  // half the loads and half the addresses.
  struct Pair {
    std::string v;
    int64_t r, c;
  };
  llvm::DenseMap<Operation *, Pair> pairedPicks;
  if (ext.size() == 2 && driver.getLayout() == FragType::Acc && FragLayout::of(driver).pairsColumns())
    for (Operation &o : body) {
      auto p = dyn_cast<SlotPickOp>(o);
      if (!p || p.getIndices().size() != 2) continue;
      std::optional<int64_t> r = mapIndexOffset(p.getIndices()[0], body, 0),
                             c = mapIndexOffset(p.getIndices()[1], body, 1);
      if (!r || !c || *c % 2 != 0) continue;
      Type et = p.getTile().getType().getElementType();
      if (!et.isBF16() && !et.isF16() && !et.isF32()) continue;
      std::string v = fresh("qla_pair");
      line(fmt::format("{} {};", et.isF32() ? "float2" : "qla::dev::u32", v));
      pairedPicks[p] = {v, *r, *c};
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
      const std::string &v = it->second.v;
      auto plus = [](const std::string &i, int64_t c) { return c ? fmt::format("({} + {})", i, c) : i; };
      line(fmt::format("if ({} % 2 == 0) {} = qla::dev::smem_get<{}>({}, {});", l.reg, v,
                       et.isF32() ? "float2" : "qla::dev::u32", name(p.getTile()),
                       smemIndex(t, plus(l.idx[0], it->second.r), plus(l.idx[1], it->second.c))));
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

}  // namespace qla::compiler
