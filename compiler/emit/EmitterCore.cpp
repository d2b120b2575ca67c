// CUDA emitter: kernel frame, scalar arithmetic, control flow, barriers, TMA.
#include "compiler/emit/EmitterCore.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/xxhash.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::qla;
using namespace mlir::qlanv;

namespace qla::compiler {

namespace {
std::string hex64(uint64_t v) {
  char buf[17];
  snprintf(buf, sizeof buf, "%016llx", (unsigned long long)v);
  return buf;
}
std::string sanitize(StringRef s) {
  std::string r;
  for (char c : s) r += (isalnum((unsigned char)c) || c == '_') ? c : '_';
  if (r.empty() || isdigit((unsigned char)r[0])) r = "k_" + r;
  return r;
}
std::string floatLiteral(double v) {
  if (std::isnan(v)) return "__int_as_float(0x7fc00000)";
  if (std::isinf(v)) return v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  char buf[64];
  snprintf(buf, sizeof buf, "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + "f";
}
}  // namespace

Swizzle swizzleOf(unsigned bytes) {
  switch (bytes) {
    case 128: return Swizzle::B128;
    case 64: return Swizzle::B64;
    case 32: return Swizzle::B32;
    default: return Swizzle::None;
  }
}

void Emitter::line(const std::string &s) { lines_.push_back({std::string(indent_ * 2, ' ') + s, curFile_, curLine_}); }

// Every generated name ends in _<counter>: no C++ keyword, CUDA built-in,
// runtime name (qla_*, qla::dev) or scaffolding name (`i`, `w_`, `a0`) has
// that form, so only the kernel's own parameters (bare .qla names) can clash.
std::string Emitter::fresh(const std::string &prefix) {
  std::string n;
  do n = prefix + "_" + std::to_string(counter_++);
  while (reserved_.count(n));
  return n;
}

// A .qla identifier ([A-Za-z_][A-Za-z0-9_]*) as the stem of a C++ name: runs
// of underscores become one and none leads or trails, so that the name with
// its `_N` suffix never holds `__` nor starts with `_` (reserved in C++).
static std::string identifierStem(StringRef s) {
  std::string r;
  for (char c : s) {
    char k = (isalnum((unsigned char)c) || c == '_') ? c : '_';
    if (k == '_' && (r.empty() || r.back() == '_')) continue;
    r += k;
  }
  while (!r.empty() && r.back() == '_') r.pop_back();
  if (!r.empty() && isdigit((unsigned char)r[0])) r.clear();
  return r;
}

std::string Emitter::sourceName(Location loc) {
  if (auto n = dyn_cast<NameLoc>(loc)) return identifierStem(n.getName().getValue());
  if (auto f = dyn_cast<FusedLoc>(loc))
    for (Location l : f.getLocations())
      if (std::string n = sourceName(l); !n.empty()) return n;
  return "";
}

std::string Emitter::prefixFor(Value v, const std::string &fallback) {
  std::string n;
  if (auto a = dyn_cast<BlockArgument>(v)) n = sourceName(a.getLoc());
  else if (Operation *def = v.getDefiningOp()) n = sourceName(def->getLoc());
  return n.empty() ? fallback : n;
}

// The file:line of a location: the file position itself, or inside a name,
// a fusion (the first with a position) or a call site (the callee).
static FileLineColLoc filePosition(Location loc) {
  if (auto f = dyn_cast<FileLineColLoc>(loc)) return f;
  if (auto n = dyn_cast<NameLoc>(loc)) return filePosition(n.getChildLoc());
  if (auto c = dyn_cast<CallSiteLoc>(loc)) return filePosition(c.getCallee());
  if (auto f = dyn_cast<FusedLoc>(loc))
    for (Location l : f.getLocations())
      if (auto p = filePosition(l)) return p;
  return {};
}

void Emitter::setPosition(Location loc) {
  if (auto p = filePosition(loc); p && p.getLine()) {
    curFile_ = p.getFilename().str();
    curLine_ = p.getLine();
  }
}

std::string Emitter::traceEvent(const std::string &kind, const std::string &what) {
  const size_t id = traceSites_.size();
  std::string file = curFile_;
  if (size_t slash = file.rfind('/'); slash != std::string::npos) file = file.substr(slash + 1);
  traceSites_.push_back(fmt::format("{} {} {} {}:{} {}", id, kind, roleName_, file.empty() ? "-" : file, curLine_,
                                    what.empty() ? "-" : what));
  return fmt::format("qla::dev::trace_event(qla_tc, {});  // trace: {} {}", id, kind, what);
}

std::string Emitter::name(Value v) {
  auto it = names_.find(v);
  if (it != names_.end()) return it->second;
  return "/*unbound*/";
}

std::string Emitter::declare(Value v, const std::string &type, const std::string &expr,
                             const std::string &prefix) {
  std::string n = fresh(prefixFor(v, prefix));
  line(fmt::format("const {} {} = {};", type, n, expr));
  bind(v, n);
  return n;
}

std::string Emitter::cType(Type t) {
  if (t.isIndex() || t.isInteger(32)) return "int";
  if (t.isInteger(64)) return "long long";
  if (t.isInteger(1)) return "bool";
  if (t.isF32()) return "float";
  return "/*unsupported type*/";
}

std::string Emitter::dtypeCType(Type t) {
  if (t.isBF16()) return "qla::dev::bf16";
  if (t.isF16()) return "qla::dev::f16";
  if (t.isF32()) return "float";
  if (t.isInteger(32)) return "int";
  if (t.isInteger(64)) return "long long";
  return "/*unsupported dtype*/";
}

std::string Emitter::groupSync() const {
  const Group &g = group();
  if (g.barrierId == 0) return "__syncthreads();";
  return fmt::format("qla::dev::named_barrier_sync({}, {});", g.barrierId, (g.end - g.begin + 1) * 128);
}

std::string Emitter::wgSync() const {
  return fmt::format("qla::dev::named_barrier_sync({} + qla_wg, 128);", wgBarrierBase_);
}

void Emitter::noteLocation(Operation *op) {
  auto loc = dyn_cast<FileLineColLoc>(op->getLoc());
  if (!loc) {
    if (auto n = dyn_cast<NameLoc>(op->getLoc())) loc = dyn_cast<FileLineColLoc>(n.getChildLoc());
  }
  if (!loc || loc.getLine() == lastLine_) return;
  lastLine_ = loc.getLine();
  line(fmt::format("// {}:{}", file_, loc.getLine()));
  lines_.back().comment = true;
}

namespace {
std::string quoted(const std::string &s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    r += c;
  }
  return r + "\"";
}
// A line that holds no code: nothing to attribute, no directive needed.
bool holdsNoCode(const std::string &t) {
  size_t b = t.find_first_not_of(' ');
  return b == std::string::npos || t.compare(b, 2, "//") == 0 || t.compare(b, 7, "#pragma") == 0;
}
}  // namespace

// With directives: before each line of code whose .qla position is not the
// one the preprocessor would give it anyway, `#line N` (with the file name
// when it changes); scaffolding after .qla code gets `#line P "<symbol>.cu"`,
// its physical line in the generated file (NVRTC's program name). Every line
// of a statement's code names the statement's line, so each needs its own
// directive. Without: the text as it always was, comments included.
std::string Emitter::renderBody(bool directives, unsigned firstLine, const std::string &generatedFile) const {
  std::string out;
  if (!directives) {
    for (const Line &l : lines_) out += l.text + "\n";
    return out;
  }
  unsigned phys = firstLine;  // physical line number of the next line appended
  bool mapped = false;        // the presumed position is a .qla line
  std::string file;
  unsigned expect = 0;        // the presumed line number of the next line
  auto put = [&](const std::string &t) {
    out += t;
    out += '\n';
    ++phys;
    ++expect;
  };
  for (const Line &l : lines_) {
    if (l.comment) continue;
    if (!holdsNoCode(l.text)) {
      if (l.src == 0) {
        if (mapped) put(fmt::format("#line {} {}", phys + 1, quoted(generatedFile)));
        mapped = false;
      } else if (!(mapped && file == l.file && expect == l.src)) {
        const bool sameFile = mapped && file == l.file;
        put(sameFile ? fmt::format("#line {}", l.src) : fmt::format("#line {} {}", l.src, quoted(l.file)));
        mapped = true;
        file = l.file;
        expect = l.src;
      }
    }
    put(l.text);
  }
  return out;
}

int Emitter::tensorIndex(Value g) const {
  auto it = tensorOf_.find(g);
  return it == tensorOf_.end() ? -1 : it->second;
}

std::string Emitter::tmaParamFor(int tensor, const std::vector<uint32_t> &box, Swizzle s, bool forStore) {
  for (auto &p : tmaParams_)
    if (p.tensor == tensor && p.box == box && p.swizzle == s) {
      p.optional = p.optional && forStore;  // a load needs the map
      return p.name;
    }
  std::string n = fmt::format("{}_tma{}", tensorNames_[tensor], tmaParams_.size());
  tmaParams_.push_back({tensor, box, s, n, forStore});
  return n;
}

LogicalResult Emitter::emitBlock(Block &b) {
  for (Operation &op : b)
    if (failed(emitOp(&op))) return failure();
  return success();
}

LogicalResult Emitter::emitTmaLoad(TmaLoadOp op) {
  auto g = op.getSrc().getType();
  auto tile = op.getDst().getType();
  int64_t rank = g.getRank();
  int64_t elt = elementBytes(tile.getElementType());
  auto dropped = op.getDropped();
  if (llvm::is_contained(dropped, rank - 1))
    return op.emitOpError("TMA needs the tile's last dim to be the tensor's last (contiguous) dim");
  // Box, outermost first; the tile's last dim is split into column blocks of
  // the swizzle span.
  std::vector<uint32_t> box;
  auto shape = tile.getShape();
  size_t t = 0;
  for (int64_t d = 0; d < rank; ++d)
    box.push_back(llvm::is_contained(dropped, d) ? 1u : (uint32_t)shape[t++]);
  int64_t cols = shape.back();
  int64_t blockCols = cols, blocks = 1;
  if (tile.getSwizzle() && cols * elt > tile.getSwizzle()) {
    blockCols = tile.getSwizzle() / elt;
    blocks = cols / blockCols;
  }
  box.back() = (uint32_t)blockCols;
  for (uint32_t b : box)
    if (b > 256) return op.emitOpError("TMA box extent ") << b << " exceeds 256";
  int ti = tensorIndex(op.getSrc());
  std::string map = tmaParamFor(ti, box, swizzleOf(tile.getSwizzle()));
  int64_t rows = tile.getNumElements() / cols;
  std::string bar = fmt::format("&{}[{}]", name(op.getBarriers()), name(op.getSlot()));
  for (int64_t b = 0; b < blocks; ++b) {
    std::string call =
        fmt::format("qla::dev::tma_load_{}d({} + {}, &{}, {}", rank, name(op.getDst()), b * rows * blockCols, map, bar);
    for (int64_t d = rank - 1; d >= 0; --d) {
      std::string c = name(op.getCoords()[d]);
      if (d == rank - 1 && b) c += fmt::format(" + {}", b * blockCols);
      call += ", " + c;
    }
    line(call + ");");
  }
  return success();
}

static std::string binop(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::string>(op)
      .Case<arith::AddIOp, arith::AddFOp>([](auto) { return "+"; })
      .Case<arith::SubIOp, arith::SubFOp>([](auto) { return "-"; })
      .Case<arith::MulIOp, arith::MulFOp>([](auto) { return "*"; })
      .Case<arith::DivSIOp, arith::DivUIOp, arith::DivFOp>([](auto) { return "/"; })
      .Case<arith::RemSIOp, arith::RemUIOp>([](auto) { return "%"; })
      .Case<arith::AndIOp>([](auto) { return "&"; })
      .Case<arith::OrIOp>([](auto) { return "|"; })
      .Case<arith::XOrIOp>([](auto) { return "^"; })
      .Case<arith::ShLIOp>([](auto) { return "<<"; })
      .Case<arith::ShRSIOp, arith::ShRUIOp>([](auto) { return ">>"; })
      .Default([](Operation *) { return ""; });
}

LogicalResult Emitter::emitOp(Operation *op) {
  setPosition(op->getLoc());
  // A role's location comment would split its if/else-if chain.
  if (!isa<WarpgroupsOp>(op)) noteLocation(op);
  LogicalResult r = emitOpCode(op);
  setPosition(op->getLoc());  // a region's closing brace belongs to its op
  return r;
}

LogicalResult Emitter::emitOpCode(Operation *op) {
  auto res = [&](unsigned i = 0) { return op->getResult(i); };
  auto opnd = [&](unsigned i) { return name(op->getOperand(i)); };

  if (auto c = dyn_cast<arith::ConstantOp>(op)) {
    Attribute v = c.getValue();
    if (auto i = dyn_cast<IntegerAttr>(v)) {
      if (i.getType().isInteger(1)) bind(res(), i.getValue().isZero() ? "false" : "true");
      else bind(res(), fmt::format("({})", i.getValue().getSExtValue()));
    } else if (auto f = dyn_cast<FloatAttr>(v)) {
      bind(res(), floatLiteral(f.getValueAsDouble()));
    } else {
      return op->emitOpError("the CUDA emitter cannot print this constant");
    }
    return success();
  }
  if (std::string o = binop(op); !o.empty()) {
    declare(res(), cType(res().getType()), fmt::format("{} {} {}", opnd(0), o, opnd(1)));
    return success();
  }
  if (isa<arith::CeilDivSIOp, arith::CeilDivUIOp>(op)) {
    declare(res(), "int", fmt::format("({0} + {1} - 1) / {1}", opnd(0), opnd(1)));
    return success();
  }
  if (isa<arith::MaxSIOp, arith::MaxUIOp, arith::MinSIOp, arith::MinUIOp>(op)) {
    bool mx = isa<arith::MaxSIOp, arith::MaxUIOp>(op);
    declare(res(), cType(res().getType()), fmt::format("({0} {2} {1} ? {0} : {1})", opnd(0), opnd(1), mx ? ">" : "<"));
    return success();
  }
  if (isa<arith::MaximumFOp, arith::MaxNumFOp>(op)) {
    declare(res(), "float", fmt::format("fmaxf({}, {})", opnd(0), opnd(1)));
    return success();
  }
  if (isa<arith::MinimumFOp, arith::MinNumFOp>(op)) {
    declare(res(), "float", fmt::format("fminf({}, {})", opnd(0), opnd(1)));
    return success();
  }
  if (isa<arith::NegFOp>(op)) {
    declare(res(), "float", "-" + opnd(0));
    return success();
  }
  if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
    static const char *ops[] = {"==", "!=", "<", "<=", ">", ">=", "<", "<=", ">", ">="};
    declare(res(), "bool", fmt::format("{} {} {}", opnd(0), ops[(int)cmp.getPredicate()], opnd(1)));
    return success();
  }
  if (auto cmp = dyn_cast<arith::CmpFOp>(op)) {
    using P = arith::CmpFPredicate;
    std::string o;
    switch (cmp.getPredicate()) {
      case P::OEQ: case P::UEQ: o = "=="; break;
      case P::ONE: case P::UNE: o = "!="; break;
      case P::OLT: case P::ULT: o = "<"; break;
      case P::OLE: case P::ULE: o = "<="; break;
      case P::OGT: case P::UGT: o = ">"; break;
      case P::OGE: case P::UGE: o = ">="; break;
      default: return op->emitOpError("unsupported float comparison");
    }
    declare(res(), "bool", fmt::format("{} {} {}", opnd(0), o, opnd(1)));
    return success();
  }
  if (isa<arith::SelectOp>(op)) {
    declare(res(), cType(res().getType()), fmt::format("{} ? {} : {}", opnd(0), opnd(1), opnd(2)));
    return success();
  }
  if (isa<arith::IndexCastOp, arith::SIToFPOp, arith::UIToFPOp, arith::FPToSIOp, arith::FPToUIOp,
          arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp, arith::IndexCastUIOp>(op)) {
    std::string t = cType(res().getType());
    declare(res(), t, fmt::format("({}){}", t, opnd(0)));
    return success();
  }
  if (isa<math::ExpOp, math::Exp2Op, math::LogOp, math::Log2Op, math::SqrtOp, math::RsqrtOp,
          math::AbsFOp, math::TanhOp>(op)) {
    std::string f = llvm::TypeSwitch<Operation *, std::string>(op)
                        .Case<math::ExpOp>([](auto) { return "expf"; })
                        .Case<math::Exp2Op>([](math::Exp2Op e) {
                          return bitEnumContainsAll(e.getFastmath(), arith::FastMathFlags::afn) ? "qla::dev::fast_exp2"
                                                                                               : "exp2f";
                        })
                        .Case<math::LogOp>([](auto) { return "logf"; })
                        .Case<math::Log2Op>([](auto) { return "log2f"; })
                        .Case<math::SqrtOp>([](auto) { return "sqrtf"; })
                        .Case<math::RsqrtOp>([](auto) { return "rsqrtf"; })
                        .Case<math::AbsFOp>([](auto) { return "fabsf"; })
                        .Case<math::TanhOp>([](auto) { return "tanhf"; })
                        .Default([](Operation *) { return ""; });
    declare(res(), "float", fmt::format("{}({})", f, opnd(0)));
    return success();
  }
  if (auto f = dyn_cast<scf::ForOp>(op)) {
    if (f.getNumResults()) return op->emitOpError("loops with results are not emitted yet");
    std::string iv = fresh(prefixFor(f.getInductionVar(), "i"));
    bind(f.getInductionVar(), iv);
    if (op->hasAttr("qla.unroll")) line("#pragma unroll");
    line(fmt::format("for (int {0} = {1}; {0} < {2}; {0} += {3}) {{", iv, name(f.getLowerBound()),
                     name(f.getUpperBound()), name(f.getStep())));
    ++indent_;
    if (failed(emitBlock(*f.getBody()))) return failure();
    --indent_;
    line("}");
    return success();
  }
  if (auto i = dyn_cast<scf::IfOp>(op)) {
    if (i.getNumResults()) return op->emitOpError("if with results is not emitted yet");
    line(fmt::format("if ({}) {{", name(i.getCondition())));
    ++indent_;
    if (failed(emitBlock(i.getThenRegion().front()))) return failure();
    --indent_;
    if (!i.getElseRegion().empty()) {
      line("} else {");
      ++indent_;
      if (failed(emitBlock(i.getElseRegion().front()))) return failure();
      --indent_;
    }
    line("}");
    return success();
  }
  if (isa<scf::YieldOp, func::ReturnOp, mlir::qla::YieldOp, mlir::qlanv::YieldOp>(op)) return success();

  // --- qla ---
  if (auto b = dyn_cast<BlockIdOp>(op)) {
    static const char *d[] = {"x", "y", "z"};
    declare(res(), "int", std::string("(int)blockIdx.") + d[b.getDim()], "blk");
    return success();
  }
  if (auto a = dyn_cast<AllocSharedOp>(op)) {
    if (!a.getOffset()) return op->emitOpError("has no arena offset (run qla-assign-resources)");
    std::string t = dtypeCType(a.getType().getElementType());
    std::string n = fresh(prefixFor(res(), "smem"));
    if (!sharedPointers32_) line(fmt::format("{0}* const {1} = reinterpret_cast<{0}*>(qla_smem + {2});", t, n, *a.getOffset()));
    else line(fmt::format("const qla::dev::sptr<{}> {}(qla_smem_base + {}u);", t, n, *a.getOffset()));
    bind(res(), n);
    return success();
  }
  if (auto a = dyn_cast<AllocFragOp>(op)) return emitAllocFrag(a);
  if (auto o = dyn_cast<FillOp>(op)) return emitFill(o);
  if (auto o = dyn_cast<LoadOp>(op)) return emitLoad(o);
  if (auto o = dyn_cast<PrefetchOp>(op)) return emitPrefetch(o);
  if (auto o = dyn_cast<StoreOp>(op)) return emitStore(o);
  if (auto o = dyn_cast<CopyOp>(op)) return emitCopy(o);
  if (auto o = dyn_cast<CastOp>(op)) return emitCast(o);
  if (auto o = dyn_cast<ReduceOp>(op)) return emitReduce(o);
  if (auto o = dyn_cast<ParallelOp>(op)) return emitParallel(o);
  if (auto o = dyn_cast<ScanOp>(op)) return emitScan(o);
  if (auto o = dyn_cast<InvUnitLowerOp>(op)) return emitInvUnitLower(o);
  if (auto o = dyn_cast<FragPickOp>(op)) return emitFragPick(o);
  if (auto o = dyn_cast<SlotPickOp>(op)) return emitSlotPick(o);
  if (auto o = dyn_cast<GlobalReadOp>(op)) return emitGlobalRead(o);
  if (auto v = dyn_cast<VarOp>(op)) {
    std::string n = fresh(prefixFor(res(), "var"));
    line(fmt::format("{} {} = {};", cType(v.getInit().getType()), n, name(v.getInit())));
    bind(res(), n);
    return success();
  }
  if (auto v = dyn_cast<VarGetOp>(op)) {
    declare(res(), cType(res().getType()), name(v.getVar()));
    return success();
  }
  if (auto v = dyn_cast<VarSetOp>(op)) {
    line(fmt::format("{} = {};", name(v.getVar()), name(v.getValue())));
    return success();
  }

  // --- qlanv ---
  if (auto s = dyn_cast<SlotOp>(op)) {
    auto t = s.getType();
    std::string ty = dtypeCType(t.getElementType());
    std::string n = fresh(prefixFor(res(), prefixFor(s.getBuffer(), "slot")));
    line(fmt::format("{} {} = {} + {} * {};",
                     sharedPointers32_ ? fmt::format("const qla::dev::sptr<{}>", ty) : ty + "* const", n,
                     name(s.getBuffer()), name(s.getSlot()), t.getNumElements()));
    bind(res(), n);
    return success();
  }
  if (auto b = dyn_cast<BarriersOp>(op)) {
    if (!b.getOffset()) return op->emitOpError("has no arena offset (run qla-assign-resources)");
    std::string n = fresh("bar");
    line(fmt::format("qla::dev::u64* const {} = reinterpret_cast<qla::dev::u64*>(qla_smem + {});", n, *b.getOffset()));
    bind(res(), n);
    return success();
  }
  if (auto b = dyn_cast<BarrierInitOp>(op)) {
    auto bars = b.getBarriers().getDefiningOp<BarriersOp>();
    line("if (threadIdx.x == 0) {");
    line(fmt::format("  for (int i = 0; i < {}; ++i) qla::dev::mbarrier_init(&{}[i], {});", bars.getType().getCount(),
                     name(b.getBarriers()), bars.getArrivals()));
    line("  qla::dev::fence_mbarrier_init();");
    line("}");
    return success();
  }
  if (isa<BlockSyncOp>(op)) {
    line("__syncthreads();");
    return success();
  }
  if (auto r = dyn_cast<RingOp>(op)) {
    std::string n = fresh(sanitize(r.getName()));
    line(fmt::format("int {}_slot = 0;", n));
    line(fmt::format("unsigned {}_phase = 0;", n));
    bind(res(), n);
    return success();
  }
  if (auto r = dyn_cast<RingSlotOp>(op)) {
    declare(res(), "int", name(r.getRing()) + "_slot", "slot_idx");
    return success();
  }
  if (auto r = dyn_cast<RingPhaseOp>(op)) {
    declare(res(), "int", fmt::format("(int){}_phase", name(r.getRing())), "phase");
    return success();
  }
  if (auto r = dyn_cast<RingAdvanceOp>(op)) {
    std::string n = name(r.getRing());
    line(fmt::format("if (++{0}_slot == {1}) {{ {0}_slot = 0; {0}_phase ^= 1u; }}", n, r.getRing().getType().getDepth()));
    return success();
  }
  if (auto w = dyn_cast<BarrierWaitOp>(op)) {
    std::string what;
    if (auto a = w->getAttrOfType<StringAttr>("qla.what")) what = a.str();
    if (trace_) line(traceEvent("wait", what));
    line(fmt::format("qla::dev::mbarrier_wait(&{}[{}], (unsigned){});", name(w.getBarriers()), name(w.getSlot()),
                     name(w.getPhase())));
    if (trace_) line(traceEvent("waited", what));
    return success();
  }
  if (auto a = dyn_cast<BarrierArriveOp>(op)) {
    line(fmt::format("qla::dev::mbarrier_arrive(&{}[{}]);", name(a.getBarriers()), name(a.getSlot())));
    if (trace_)
      if (auto w = a->getAttrOfType<StringAttr>("qla.what")) line(traceEvent("arrive", w.str()));
    return success();
  }
  if (auto a = dyn_cast<BarrierExpectTxOp>(op)) {
    line(fmt::format("qla::dev::mbarrier_{}expect_tx(&{}[{}], {});", a.getNoArrive() ? "" : "arrive_",
                     name(a.getBarriers()), name(a.getSlot()), a.getBytes()));
    return success();
  }
  if (auto nb = dyn_cast<NamedBarrierOp>(op)) {
    line(fmt::format("qla::dev::named_barrier_sync({}, {});", nb.getId(), nb.getThreads()));
    return success();
  }
  if (isa<FenceProxyAsyncOp>(op)) {
    line("qla::dev::fence_proxy_async_shared();");
    return success();
  }
  if (auto wg = dyn_cast<WarpgroupsOp>(op)) {
    // Roles are the branches of one if/else chain so that setmaxnreg applies.
    bool chained = false;
    if (Operation *prev = op->getPrevNode(); prev && isa<WarpgroupsOp>(prev)) chained = true;
    std::string cond = fmt::format("qla_wg >= {} && qla_wg <= {}", wg.getWgBegin(), wg.getWgEnd());
    if (chained) {
      // Reopen: the previous role's closing brace becomes "} else if".
      while (!lines_.empty() && lines_.back().comment) lines_.pop_back();
      assert(!lines_.empty() && lines_.back().text == std::string(indent_ * 2, ' ') + "}");
      lines_.pop_back();
      line(fmt::format("}} else if ({}) {{  // role {}", cond, wg.getName().str()));
    } else {
      line(fmt::format("if ({}) {{  // role {}", cond, wg.getName().str()));
    }
    int64_t id = 1;
    for (auto w : fn_.getOps<WarpgroupsOp>()) {
      if (w == wg) break;
      ++id;
    }
    auto fa = wg->getAttrOfType<IntegerAttr>("fresh_addresses");
    groups_.push_back({int64_t(wg.getWgBegin()), int64_t(wg.getWgEnd()), id, fa ? fa.getInt() : 0});
    ++indent_;
    roleName_ = wg.getName().str();
    line(fmt::format("const int qla_wgl = qla_wg - {};  // warpgroup within the role", wg.getWgBegin()));
    line("(void)qla_wgl;");
    // (Turns: the qlanv.turn_* ops of qlanv-insert-turns.)
    if (failed(emitBlock(wg.getBody().front()))) return failure();
    --indent_;
    groups_.pop_back();
    roleName_ = "block";
    line("}");
    return success();
  }
  if (auto e = dyn_cast<ElectOp>(op)) {
    line(fmt::format("if (threadIdx.x == {}) {{", group().begin * 128));
    ++indent_;
    if (failed(emitBlock(e.getBody().front()))) return failure();
    --indent_;
    line("}");
    return success();
  }
  // Turns: a token passed round the role's warpgroups through named
  // barriers of 256 threads (the holder's 128 wait, the previous holder's
  // 128 arrive); the last warpgroup hands the first turn to warpgroup 0,
  // which takes back the last hand-off at the end: every barrier balanced.
  if (auto t = dyn_cast<TurnStartOp>(op)) {
    line(fmt::format("if (qla_wgl == {}) qla::dev::named_barrier_arrive({}, 256);  // turns: warpgroup 0 first",
                     t.getCount() - 1, t.getBase()));
    return success();
  }
  if (auto t = dyn_cast<TurnWaitOp>(op)) {
    line(fmt::format("qla::dev::named_barrier_sync({} + qla_wgl, 256);  // turns: this warpgroup's", t.getBase()));
    return success();
  }
  if (auto t = dyn_cast<TurnPassOp>(op)) {
    line(fmt::format("qla::dev::named_barrier_arrive({} + (qla_wgl + 1) % {}, 256);  // turns: the next warpgroup's",
                     t.getBase(), t.getCount()));
    return success();
  }
  if (auto t = dyn_cast<TurnFinishOp>(op)) {
    line(fmt::format("if (qla_wgl == 0) qla::dev::named_barrier_sync({}, 256);  // turns: the last hand-off",
                     t.getBase()));
    return success();
  }
  if (isa<GridDependentsLaunchOp>(op)) {
    line("qla::dev::grid_dependents_launch();  // follows(...)");
    return success();
  }
  if (auto w = dyn_cast<GridDependencyWaitOp>(op)) {
    // (atExit: a no-op in threads that have waited; the kernel behind this
    // one waits for this one only, so this one may not finish first.)
    line(w.getAtExit() ? "qla::dev::grid_dependency_wait();  // follows(...): not done before the preceding kernel"
                       : "qla::dev::grid_dependency_wait();  // follows(...): the preceding kernel is done");
    return success();
  }
  if (auto s = dyn_cast<SetMaxNRegOp>(op)) {
    line(fmt::format("qla::dev::setmaxnreg_{}<{}>();", s.getIncrease() ? "inc" : "dec", s.getRegs()));
    return success();
  }
  if (auto t = dyn_cast<TmaLoadOp>(op)) return emitTmaLoad(t);
  if (auto w = dyn_cast<WgmmaOp>(op)) return emitWgmma(w);
  if (auto f = dyn_cast<WgmmaFenceOp>(op)) return emitWgmmaFence(f.getFrags());
  if (isa<WgmmaCommitOp>(op)) {
    line("qla::dev::wgmma_commit();");
    return success();
  }
  if (auto w = dyn_cast<WgmmaWaitOp>(op)) {
    if (trace_) line(traceEvent("wait", fmt::format("wgmma<{}>", w.getPending())));
    line(fmt::format("qla::dev::wgmma_wait<{}>();", w.getPending()));
    if (trace_) line(traceEvent("waited", fmt::format("wgmma<{}>", w.getPending())));
    for (Value f : w.getFrags()) line(fmt::format("qla::dev::warpgroup_fence_regs({});", name(f)));
    return success();
  }
  return op->emitOpError("the CUDA emitter cannot print this operation yet");
}

LogicalResult Emitter::emitKernel() {
  if (fn_.getBody().empty()) return fn_.emitError("kernel has no body");
  if (auto src = fn_->getAttrOfType<StringAttr>(kSourceAttr)) file_ = src.getValue().str();
  else file_ = "<kernel>";
  auto argNames = fn_->getAttrOfType<ArrayAttr>(kArgNamesAttr);
  auto tensorDims = fn_->getAttrOfType<ArrayAttr>(kTensorDimsAttr);
  auto outputs = fn_->getAttrOfType<DenseBoolArrayAttr>(kOutputsAttr);
  if (!argNames || argNames.size() != fn_.getNumArguments())
    return fn_.emitError("kernel lacks qla.arg_names for its arguments");

  int64_t threads = 128;
  if (auto th = fn_->getAttrOfType<IntegerAttr>(kThreadsAttr)) threads = th.getInt();
  info_ = KernelInfo();
  info_.threads = (int)threads;
  if (auto g = fn_->getAttrOfType<ArrayAttr>(kGridAttr))
    for (size_t i = 0; i < 3 && i < g.size(); ++i) info_.grid[i] = cast<StringAttr>(g[i]).getValue().str();
  if (auto c = fn_->getAttrOfType<DenseI64ArrayAttr>(kClusterAttr))
    for (size_t i = 0; i < 3 && i < c.size(); ++i) info_.cluster[i] = (int)c[i];

  // Arguments: tensors, dims, scalars.
  std::vector<std::string> params;  // C parameter declarations, without TMA maps
  Block &entry = fn_.getBody().front();
  int tensorCount = 0;
  for (auto [i, arg] : llvm::enumerate(entry.getArguments())) {
    std::string n = sanitize(cast<StringAttr>(argNames[i]).getValue());
    reserved_.insert(n);
    if (auto g = dyn_cast<GlobalType>(arg.getType())) {
      TensorArgInfo t;
      t.name = n;
      std::string dt = dtypeCType(g.getElementType());
      if (g.getElementType().isBF16()) t.dtype = DType::BF16;
      else if (g.getElementType().isF16()) t.dtype = DType::F16;
      else if (g.getElementType().isF32()) t.dtype = DType::F32;
      else if (g.getElementType().isInteger(32)) t.dtype = DType::I32;
      else if (g.getElementType().isInteger(64)) t.dtype = DType::I64;
      else return fn_.emitError("unsupported tensor dtype ") << g.getElementType();
      if (tensorDims && tensorCount < (int)tensorDims.size())
        for (Attribute d : cast<ArrayAttr>(tensorDims[tensorCount])) t.dims.push_back(cast<StringAttr>(d).getValue().str());
      t.isOutput = outputs && tensorCount < (int)outputs.size() && outputs[tensorCount];
      tensorOf_[arg] = tensorCount;
      tensorNames_.push_back(n);
      info_.tensors.push_back(t);
      bind(arg, n);
      ++tensorCount;
    } else if (arg.getType().isIndex()) {
      info_.dimSymbols.push_back(n);
      bind(arg, n);
    } else if (arg.getType().isF32() || arg.getType().isInteger(32)) {
      info_.scalars.push_back({n, arg.getType().isF32() ? DType::F32 : DType::I32});
      bind(arg, n);
    } else {
      return fn_.emitError("unsupported kernel argument type ") << arg.getType();
    }
  }

  groups_.push_back({0, threads / 128 - 1, 0});
  indent_ = 1;
  // follows(...): the launch and the waits are qlanv ops
  // (qlanv-insert-grid-dependency); the followed tensors are not read-only.
  llvm::DenseSet<int64_t> followed;
  if (auto f = fn_->getAttrOfType<DenseI64ArrayAttr>(kFollowsAttr)) {
    info_.follows = true;
    for (int64_t t : f.asArrayRef()) followed.insert(t);
  }
  // TMA stores' sources (through slot views, as a store reads them): writes
  // to them wait for the stores' reads first (waitTmaStoreReads).
  fn_.walk([&](StoreOp st) {
    std::vector<uint32_t> box;
    if (tmaStoreBox(st, box)) tmaStoreSources_.insert(st.getSrc());
  });
  // Named barriers: the roles' 1 .. R, then one per warpgroup for staging
  // tiles, then one per warpgroup for turns (bar.sync has 16, 0 being
  // __syncthreads).
  const int64_t roles = std::distance(fn_.getOps<WarpgroupsOp>().begin(), fn_.getOps<WarpgroupsOp>().end());
  const int64_t wgs = (threads + 127) / 128;
  wgBarrierBase_ = roles + 1;
  turnBarrierBase_ = wgBarrierBase_ + wgs;
  findWgStaging();
  bool anyTurns = false;
  for (auto w : fn_.getOps<WarpgroupsOp>()) anyTurns |= w->hasAttr("turns") && w.getWgEnd() > w.getWgBegin();
  const int64_t lastId = anyTurns ? turnBarrierBase_ + wgs - 1 : !wgStaging_.empty() ? turnBarrierBase_ - 1 : roles;
  if (lastId > 15)
    return fn_.emitError("the kernel needs ") << lastId + 1 << " named barriers (roles, per-warpgroup staging, turns); "
                                              << "the hardware has 16";
  if (failed(emitBlock(entry))) return failure();
  // A CTA must not exit while its TMA stores still read its shared memory.
  if (!tmaStoreSources_.empty()) line("qla::dev::tma_store_wait<0>();");
  if (trace_) line("qla::dev::trace_close(qla_trace_buf, qla_tc);");

  // Parameters in launch order: tensor maps (64-byte aligned) first.
  std::vector<std::string> decls;
  for (auto &p : tmaParams_) {
    ParamInfo pi;
    pi.kind = ParamInfo::Kind::TensorMap;
    pi.index = p.tensor;
    pi.box = p.box;
    pi.swizzle = p.swizzle;
    pi.optional = p.optional;
    info_.params.push_back(pi);
    decls.push_back(fmt::format("const __grid_constant__ qla::dev::TensorMap {}", p.name));
  }
  for (int t = 0; t < tensorCount; ++t) {
    ParamInfo pi;
    pi.kind = ParamInfo::Kind::Pointer;
    pi.index = t;
    info_.params.push_back(pi);
    Type et = cast<GlobalType>(entry.getArgument(0).getType()).getElementType();
    for (auto arg : entry.getArguments())
      if (tensorIndex(arg) == t) et = cast<GlobalType>(arg.getType()).getElementType();
    std::string ct = dtypeCType(et);
    // A tensor the preceding kernel writes may change while this kernel runs
    // (before its wait), so it is not declared read-only (no ld.global.nc).
    if (followed.contains(t))
      decls.push_back(fmt::format("{}* {}", ct, tensorNames_[t]));
    else
      decls.push_back(fmt::format("{}{}* __restrict__ {}", info_.tensors[t].isOutput ? "" : "const ", ct, tensorNames_[t]));
  }
  for (int t = 0; t < tensorCount; ++t)
    for (size_t d = 0; d < info_.tensors[t].dims.size(); ++d) {
      ParamInfo pi;
      pi.kind = ParamInfo::Kind::Stride;
      pi.index = t;
      pi.dim = (int)d;
      info_.params.push_back(pi);
      decls.push_back(fmt::format("const long long {}_stride{}", tensorNames_[t], d));
    }
  for (size_t d = 0; d < info_.dimSymbols.size(); ++d) {
    ParamInfo pi;
    pi.kind = ParamInfo::Kind::Dim;
    pi.index = (int)d;
    info_.params.push_back(pi);
    decls.push_back(fmt::format("const int {}", info_.dimSymbols[d]));
  }
  for (size_t s = 0; s < info_.scalars.size(); ++s) {
    ParamInfo pi;
    pi.kind = ParamInfo::Kind::Scalar;
    pi.index = (int)s;
    info_.params.push_back(pi);
    decls.push_back(fmt::format("const {} {}", info_.scalars[s].dtype == DType::F32 ? "float" : "int",
                                info_.scalars[s].name));
  }

  int64_t smem = 0;
  if (auto s = fn_->getAttrOfType<IntegerAttr>("qla.smem_bytes")) smem = s.getInt();
  // The arena is declared __align__(1024) and the kernel has no static
  // shared memory, so it starts 1024-aligned; the kernel checks (traps) rather
  // than asking for 1 KB of slack, which would cost a second block per SM.
  info_.dynamicSmemBytes = (int)smem;

  std::string sig;
  for (size_t i = 0; i < decls.size(); ++i) sig += "    " + decls[i] + (i + 1 < decls.size() ? ",\n" : "");
  std::string kernelName = sanitize(fn_.getSymName());
  // The symbol hashes the text without directives: the same with and without them.
  int64_t minBlocks = 1;
  if (auto mb = fn_->getAttrOfType<IntegerAttr>(kMinBlocksAttr)) minBlocks = mb.getInt();
  std::string hash = hex64(llvm::xxh3_64bits(sig + renderBody(false, 0, "") + std::to_string(threads) +
                                             (minBlocks > 1 ? fmt::format("/{}", minBlocks) : "")));
  info_.name = fmt::format("qla_{}_{}", kernelName, hash);

  std::string s;
  s += fmt::format("// Generated by QLA from {} (kernel '{}'). Do not edit.\n", file_, fn_.getSymName().str());
  s += "// QLA-KERNEL-INFO-BEGIN\n";
  std::string ser = info_.serialize();
  size_t pos = 0;
  while (pos < ser.size()) {
    size_t nl = ser.find('\n', pos);
    if (nl == std::string::npos) nl = ser.size();
    s += fmt::format("// {}\n", ser.substr(pos, nl - pos));
    pos = nl + 1;
  }
  s += "// QLA-KERNEL-INFO-END\n";
  s += "#include \"qla/device/all.cuh\"\n\n";
  if (trace_) {
    // The trace buffer and the sites' descriptions, read back by the host
    // (qla_trace_dump) from the module's globals.
    s += "__device__ qla::dev::u64 qla_trace_buf[qla::dev::kTraceWords];\n";
    std::string sites;
    for (auto &d : traceSites_) sites += d + ";";
    s += fmt::format("__device__ const char qla_trace_sites[] = {};\n\n", quoted(sites));
  }
  s += fmt::format("extern \"C\" __global__ void __launch_bounds__({}, {}) {}(\n", threads, minBlocks, info_.name);
  s += sig + ") {\n";
  s += "  extern __shared__ __align__(1024) unsigned char qla_smem_raw[];\n";
  s += "  unsigned char* const qla_smem = qla_smem_raw;\n";
  s += "  if (qla::dev::smem_u32(qla_smem_raw) & 1023u) __trap();  // the arena must start 1024-aligned\n";
  // With sharedPointers32 tiles are 32-bit shared addresses from here (qla/device/smem_ptr.cuh).
  if (sharedPointers32_) s += "  const qla::dev::u32 qla_smem_base = qla::dev::smem_u32(qla_smem_raw);\n";
  s += "  const int qla_wg = qla::dev::warpgroup_index();\n";
  s += "  const int qla_warp = qla::dev::warp_index_in_warpgroup();\n";
  s += "  const int qla_lane = qla::dev::lane_index();\n";
  s += "  const int qla_wgl = qla_wg;\n";
  s += "  (void)qla_smem; (void)qla_warp; (void)qla_lane; (void)qla_wgl;\n";
  if (trace_) s += "  qla::dev::TraceCursor qla_tc = qla::dev::trace_open(qla_trace_buf);\n";
  const unsigned firstLine = 1 + (unsigned)std::count(s.begin(), s.end(), '\n');
  // The kernel's closing brace (its exit) is scaffolding.
  curFile_.clear();
  curLine_ = 0;
  indent_ = 0;
  line("}");
  s += renderBody(lineDirectives_, firstLine, info_.name + ".cu");
  source_ = std::move(s);
  return success();
}

}  // namespace qla::compiler
