// CUDA emitter: register fragments: the per-thread loops over a layout's
// registers, fills, casts, picks, scratch, and the fresh-ids scope.
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

// Opens a scope in which qla_lane and qla_warp are taken afresh
// (qla::dev::opaque): what the scope computes from them is computed there,
// not hoisted out of an enclosing loop and held in registers across it.
// Masked to their ranges (& 31, & 3) so that the compiler still knows them
// non-negative and small: a register's row and column then fold into
// shifts and constants, and a swizzled tile's XOR key into the lane's bits
// (without the masks ptxas emitted signed divisions and per-register
// address arithmetic: a third of gdn_bwd_fused.qla's instructions).
// Closed with closeLoop().
void Emitter::openFreshIds() {
  line("{");
  ++indent_;
  std::string ln = fresh("qla_fresh_lane"), wn = fresh("qla_fresh_warp");
  line(fmt::format("const int {} = qla::dev::opaque(qla_lane) & 31, {} = qla::dev::opaque(qla_warp) & 3;", ln, wn));
  line(fmt::format("const int qla_lane = {}, qla_warp = {};", ln, wn));
  line("(void)qla_lane; (void)qla_warp;");
}

// Declares `name` as a float pointer to the op's scratch in the arena.
LogicalResult Emitter::scratchPointer(Operation *op, const std::string &name) {
  auto off = op->getAttrOfType<IntegerAttr>("qla.scratch_offset");
  if (!off) return op->emitOpError("has no shared scratch (run qla-assign-resources)");
  line(fmt::format("float* const {} = reinterpret_cast<float*>(qla_smem + {});", name, off.getInt()));
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

}  // namespace qla::compiler
