// AST helpers: names of enums, constants, the debug dump and the expression
// printers (exprString for debugging, gridExprString for the runtime).
#include <cstdio>
#include <sstream>

#include "qla/frontend/AST.h"
#include "qla/frontend/Frontend.h"

namespace qla::fe {

std::string SourceLoc::str() const {
  return file + ":" + std::to_string(line) + ":" + std::to_string(col);
}

std::string SourceLoc::expansionNote() const {
  std::string s;
  for (const Expansion *e = via.get(); e; e = e->call.via.get())
    s += " (in fn '" + e->fn + "' called at " + e->call.str() + ")";
  return s;
}

std::string Diagnostic::str() const { return loc.str() + ": error: " + message + loc.expansionNote(); }

std::string formatDiagnostics(const std::vector<Diagnostic> &diags) {
  std::string s;
  for (const auto &d : diags) s += d.str() + "\n";
  return s;
}

const char *scalarTypeName(ScalarType t) {
  switch (t) {
  case ScalarType::Int: return "int";
  case ScalarType::Float: return "float";
  case ScalarType::Bool: return "bool";
  case ScalarType::Unknown: break;
  }
  return "?";
}

const char *dtypeStr(DType t) { return qla::dtypeName(t); }

bool dtypeFromName(const std::string &name, DType &out) {
  for (DType t : {DType::BF16, DType::F16, DType::F32, DType::I32, DType::I64})
    if (name == dtypeStr(t)) {
      out = t;
      return true;
    }
  return false;
}

ScalarType elementScalarType(DType t) {
  return (t == DType::I32 || t == DType::I64) ? ScalarType::Int : ScalarType::Float;
}

ConstValue ConstValue::ofInt(int64_t v) {
  ConstValue c;
  c.type = ScalarType::Int;
  c.i = v;
  return c;
}
ConstValue ConstValue::ofFloat(double v) {
  ConstValue c;
  c.type = ScalarType::Float;
  c.f = v;
  return c;
}
ConstValue ConstValue::ofBool(bool v) {
  ConstValue c;
  c.type = ScalarType::Bool;
  c.b = v;
  return c;
}

std::string ConstValue::str() const {
  switch (type) {
  case ScalarType::Int: return std::to_string(i);
  case ScalarType::Bool: return b ? "true" : "false";
  case ScalarType::Float: {
    char buf[64];
    snprintf(buf, sizeof buf, "%.9g", f);
    std::string s = buf;
    // Keep floats recognisable as floats ("1" -> "1.0").
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
    return s;
  }
  case ScalarType::Unknown: break;
  }
  return "?";
}

const char *binaryOpStr(BinaryOp op) {
  switch (op) {
  case BinaryOp::Add: return "+";
  case BinaryOp::Sub: return "-";
  case BinaryOp::Mul: return "*";
  case BinaryOp::Div: return "/";
  case BinaryOp::Rem: return "%";
  case BinaryOp::Lt: return "<";
  case BinaryOp::Le: return "<=";
  case BinaryOp::Gt: return ">";
  case BinaryOp::Ge: return ">=";
  case BinaryOp::Eq: return "==";
  case BinaryOp::Ne: return "!=";
  case BinaryOp::And: return "&&";
  case BinaryOp::Or: return "||";
  }
  return "?";
}

namespace {
struct BuiltinName {
  Builtin b;
  const char *name;
};
const BuiltinName kBuiltins[] = {
    {Builtin::Cdiv, "cdiv"},   {Builtin::Min, "min"},         {Builtin::Max, "max"},
    {Builtin::Exp, "exp"},     {Builtin::Exp2, "exp2"},       {Builtin::Log, "log"},
    {Builtin::Log2, "log2"},   {Builtin::Sqrt, "sqrt"},       {Builtin::Rsqrt, "rsqrt"},
    {Builtin::Sigmoid, "sigmoid"}, {Builtin::Abs, "abs"},     {Builtin::ToF32, "f32"},
    {Builtin::ToI32, "i32"},   {Builtin::FastExp2, "fast_exp2"},
};
}  // namespace

const char *builtinName(Builtin b) {
  for (const auto &e : kBuiltins)
    if (e.b == b) return e.name;
  return "?";
}

Builtin builtinFromName(const std::string &name) {
  for (const auto &e : kBuiltins)
    if (name == e.name) return e.b;
  return Builtin::Unknown;
}

const char *redOpStr(RedOp op) {
  switch (op) {
  case RedOp::Add: return "+";
  case RedOp::Max: return "max";
  case RedOp::Min: return "min";
  }
  return "?";
}

const char *copyKindStr(CopyKind k) {
  switch (k) {
  case CopyKind::GlobalToShared: return "global->shared";
  case CopyKind::GlobalToFrag: return "global->frag";
  case CopyKind::SharedToFrag: return "shared->frag";
  case CopyKind::FragToShared: return "frag->shared";
  case CopyKind::FragToGlobal: return "frag->global";
  case CopyKind::SharedToGlobal: return "shared->global";
  case CopyKind::SharedToShared: return "shared->shared";
  }
  return "?";
}

const char *assignOpStr(AssignOp op) {
  switch (op) {
  case AssignOp::Set: return "=";
  case AssignOp::Add: return "+=";
  case AssignOp::Sub: return "-=";
  case AssignOp::Mul: return "*=";
  }
  return "?";
}

TensorArgDecl *TileRef::tensor() const { return sliced && !subTile ? as<TensorArgDecl>(decl) : nullptr; }
TileDecl *TileRef::tile() const { return sliced && !subTile ? nullptr : as<TileDecl>(decl); }
std::vector<int64_t> TileRef::shape() const {
  if (subTile) return {box[2], box[3]};
  if (sliced) return sliceShape;
  TileDecl *t = tile();
  return t ? t->shape : std::vector<int64_t>{};
}

std::vector<int64_t> GemmOperand::shape() const {
  if (sliced()) return {box[2], box[3]};
  return decl ? decl->shape : std::vector<int64_t>{};
}

const ParamDecl *KernelDecl::findParam(const std::string &n) const {
  for (const auto &p : params)
    if (p->name == n) return p.get();
  return nullptr;
}

const KernelDecl *Module::findKernel(const std::string &n) const {
  for (const auto &k : kernels)
    if (k->name == n) return k.get();
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Expression printers
//===----------------------------------------------------------------------===//

std::string exprString(const Expr &e) {
  switch (e.kind) {
  case ExprKind::IntLit: return std::to_string(static_cast<const IntLitExpr &>(e).literal);
  case ExprKind::FloatLit: return ConstValue::ofFloat(static_cast<const FloatLitExpr &>(e).literal).str();
  case ExprKind::BoolLit: return static_cast<const BoolLitExpr &>(e).literal ? "true" : "false";
  case ExprKind::Name: {
    auto &n = static_cast<const NameExpr &>(e);
    // Constants show their folded value: "BM{128}".
    if (e.value && n.decl && n.decl->declKind == DeclKind::Param) return n.name + "{" + e.value->str() + "}";
    return n.name;
  }
  case ExprKind::BlockIdx: return std::string("block.") + "xyz"[static_cast<const BlockIdxExpr &>(e).dim];
  case ExprKind::Unary: {
    auto &u = static_cast<const UnaryExpr &>(e);
    return std::string(u.op == UnaryOp::Neg ? "-" : "!") + exprString(*u.operand);
  }
  case ExprKind::Binary: {
    auto &b = static_cast<const BinaryExpr &>(e);
    return "(" + exprString(*b.lhs) + " " + binaryOpStr(b.op) + " " + exprString(*b.rhs) + ")";
  }
  case ExprKind::Select: {
    auto &s = static_cast<const SelectExpr &>(e);
    return "(" + exprString(*s.cond) + " ? " + exprString(*s.thenExpr) + " : " + exprString(*s.elseExpr) + ")";
  }
  case ExprKind::Call: {
    auto &c = static_cast<const CallExpr &>(e);
    std::string s = c.callee + "(";
    for (size_t i = 0; i < c.args.size(); ++i) s += (i ? ", " : "") + exprString(*c.args[i]);
    return s + ")";
  }
  case ExprKind::Elem: {
    auto &x = static_cast<const ElemExpr &>(e);
    std::string s = x.name + "[";
    for (size_t i = 0; i < x.indices.size(); ++i) s += (i ? ", " : "") + exprString(*x.indices[i]);
    return s + "]";
  }
  case ExprKind::Convert:
    return std::string("convert<") + scalarTypeName(e.type) + ">(" +
           exprString(*static_cast<const ConvertExpr &>(e).operand) + ")";
  case ExprKind::GlobalElem: {
    auto &x = static_cast<const GlobalElemExpr &>(e);
    std::string s = x.name + "[";
    for (size_t i = 0; i < x.indices.size(); ++i) s += (i ? ", " : "") + exprString(*x.indices[i]);
    return s + "]";
  }
  case ExprKind::FragPick: {
    auto &x = static_cast<const FragPickExpr &>(e);
    std::string s = x.name + "[";
    for (size_t i = 0; i < x.indices.size(); ++i) s += (i ? ", " : "") + exprString(*x.indices[i]);
    return s + "]";
  }
  case ExprKind::SlotPick: {
    auto &x = static_cast<const SlotPickExpr &>(e);
    std::string s = x.name + "[";
    for (size_t i = 0; i < x.indices.size(); ++i) s += (i ? ", " : "") + exprString(*x.indices[i]);
    return s + "]";
  }
  }
  return "?";
}

namespace {

// A `?:` with a constant condition stands for its taken branch.
const Expr &gridTaken(const Expr &e) {
  if (auto *s = as<SelectExpr>(&e); s && !e.value && s->cond->value)
    return gridTaken(s->cond->value->b ? *s->thenExpr : *s->elseExpr);
  return e;
}

// Binding strength for minimal parentheses: atoms 3, * / % 2, + - 1.
int gridPrec(const Expr &x) {
  const Expr &e = gridTaken(x);
  if (e.value) return e.value->i < 0 ? 0 : 3;
  if (auto *b = as<BinaryExpr>(&e)) {
    if (b->op == BinaryOp::Add || b->op == BinaryOp::Sub) return 1;
    return 2;
  }
  if (e.kind == ExprKind::Unary) return 0;
  return 3;
}

std::string gridStr(const Expr &x) {
  const Expr &e = gridTaken(x);
  if (e.value) {
    int64_t v = e.value->type == ScalarType::Int ? e.value->i : int64_t(e.value->asDouble());
    return std::to_string(v);
  }
  switch (e.kind) {
  case ExprKind::Name: return static_cast<const NameExpr &>(e).name;
  case ExprKind::Unary: {
    auto &u = static_cast<const UnaryExpr &>(e);
    std::string x = gridStr(*u.operand);
    return gridPrec(*u.operand) >= 3 ? "-" + x : "-(" + x + ")";
  }
  case ExprKind::Binary: {
    auto &b = static_cast<const BinaryExpr &>(e);
    int p = gridPrec(e);
    std::string l = gridStr(*b.lhs), r = gridStr(*b.rhs);
    // Left-associative: the right operand needs parens at equal precedence.
    if (gridPrec(*b.lhs) < p) l = "(" + l + ")";
    if (gridPrec(*b.rhs) <= p) r = "(" + r + ")";
    return l + " " + binaryOpStr(b.op) + " " + r;
  }
  case ExprKind::Call: {
    auto &c = static_cast<const CallExpr &>(e);
    std::string s = std::string(builtinName(c.builtin)) + "(";
    for (size_t i = 0; i < c.args.size(); ++i) s += (i ? ", " : "") + gridStr(*c.args[i]);
    return s + ")";
  }
  default: break;
  }
  return exprString(e);  // not reachable after a successful sema
}

}  // namespace

std::string gridExprString(const Expr &e) { return gridStr(e); }

//===----------------------------------------------------------------------===//
// Debug dump
//===----------------------------------------------------------------------===//

namespace {

class Dumper {
 public:
  std::string run(const Module &m) {
    line(0, "module \"" + m.filename + "\"");
    for (const auto &k : m.kernels) kernel(*k);
    return os_.str();
  }

 private:
  void line(int ind, const std::string &s) { os_ << std::string(size_t(ind) * 2, ' ') << s << "\n"; }

  static std::string shapeStr(const std::vector<int64_t> &s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
  }
  static std::string exprsStr(const std::vector<ExprPtr> &v) {
    std::string r = "[";
    for (size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + ex(v[i]);
    return r + "]";
  }
  static std::string ex(const ExprPtr &e) {
    if (!e) return "<null>";
    std::string s = exprString(*e);
    if (e->type != ScalarType::Unknown) s += " : " + std::string(scalarTypeName(e->type));
    if (e->value && e->kind != ExprKind::IntLit && e->kind != ExprKind::FloatLit && e->kind != ExprKind::BoolLit)
      s += " = " + e->value->str();
    return s;
  }
  // "bf16", or "DT{bf16}" for a dtype specialization constant.
  static std::string dtype(const std::string &name, const ParamDecl *param, DType dt) {
    return param ? name + "{" + dtypeStr(dt) + "}" : name;
  }
  static std::string tile(const TileDecl &t, const std::vector<ExprPtr> &extents) {
    std::string s = t.name + ": " + dtype(t.dtypeName, t.dtypeParam, t.dtype);
    return s + (t.shape.empty() ? exprsStr(extents) : shapeStr(t.shape));
  }
  static std::string init(const FragInit &fi) {
    switch (fi.kind) {
    case FragInit::Kind::InvUnitLower:
      return "inv_unit_lower(" + fi.sourceName + (fi.blocks ? ", blocks = " + std::to_string(fi.blocks) : "") +
             (fi.f16Operands ? ", operands = f16" : "") + ")";
    case FragInit::Kind::None: return "";
    case FragInit::Kind::Fill: return "fill " + ex(fi.fill);
    case FragInit::Kind::Reduce:
      return std::string("reduce(") + redOpStr(fi.op) + ", " + fi.sourceName + ", dim = " + std::to_string(fi.dim) + ")";
    case FragInit::Kind::Scan:
      return std::string("scan(") + redOpStr(fi.op) + ", " + fi.sourceName + ", dim = " + std::to_string(fi.dim) + ")";
    case FragInit::Kind::Cast: return "cast(" + fi.sourceName + ")";
    }
    return "?";
  }
  static std::string ref(const TileRef &r) {
    if (!r.sliced) return r.name;
    std::string s = r.name + "[";
    for (size_t i = 0; i < r.slices.size(); ++i) {
      const Slice &sl = r.slices[i];
      s += (i ? ", " : "") + exprString(*sl.start);
      if (sl.extent) s += " :+ " + std::to_string(sl.extentValue);
      if (sl.limit) s += " until " + exprString(*sl.limit);
    }
    return s + "]";
  }

  void kernel(const KernelDecl &k) {
    line(1, "kernel " + k.name + " threads=" + std::to_string(k.numThreads) + " cluster=" +
                std::to_string(k.clusterDims[0]) + "x" + std::to_string(k.clusterDims[1]) + "x" +
                std::to_string(k.clusterDims[2]) + " grid=(" + k.gridStrings[0] + ", " + k.gridStrings[1] +
                ", " + k.gridStrings[2] + ")" + (k.minBlocks != 1 ? " occupancy=" + std::to_string(k.minBlocks) : ""));
    for (const auto &p : k.params)
      line(2, "param " + p->name + " = " + ex(p->defaultExpr) + " -> " +
                  (p->isDType ? std::string("dtype ") + dtypeStr(p->dtypeValue) : p->value.str()) +
                  (p->overridden ? " (-D)" : ""));
    for (const auto &a : k.args) {
      if (auto *t = as<TensorArgDecl>(a.get())) {
        std::string s = "tensor " + t->name + ": " + (t->isOutput ? "out " : "") +
                        dtype(t->dtypeName, t->dtypeParam, t->dtype) + "[";
        for (size_t i = 0; i < t->dims.size(); ++i)
          s += (i ? ", " : "") + (t->dims[i].sym ? t->dims[i].sym->name : std::to_string(t->dims[i].literal));
        line(2, s + "]");
      } else if (auto *sc = as<ScalarArgDecl>(a.get())) {
        line(2, "scalar " + sc->name + ": " + sc->dtypeName);
      }
    }
    std::string dims = "dims";
    for (const auto &d : k.dims) dims += " " + d->name;
    line(2, dims);
    for (size_t i = 0; i < k.grid.size(); ++i) line(2, "grid." + std::string(1, "xyz"[i]) + " = " + ex(k.grid[i]));
    line(2, "threads = " + ex(k.threads));
    if (!k.cluster.empty()) line(2, "cluster = " + exprsStr(k.cluster));
    if (k.occupancy) line(2, "occupancy = " + ex(k.occupancy));
    if (k.hasFollows) {
      std::string f;
      for (const auto &n : k.follows) f += (f.empty() ? "" : ", ") + n.first;
      line(2, "follows(" + f + ")");
    }
    block(2, k.body);
  }

  void block(int ind, const Block &b) {
    for (const auto &s : b.stmts) stmt(ind, *s);
  }

  void stmt(int ind, const Stmt &s) {
    switch (s.kind) {
    case StmtKind::Let: {
      auto &x = static_cast<const LetDecl &>(s);
      line(ind, "let " + x.name + " = " + ex(x.init));
      return;
    }
    case StmtKind::Var: {
      auto &x = static_cast<const VarDecl &>(s);
      line(ind, "var " + x.name + " = " + ex(x.init));
      return;
    }
    case StmtKind::Assign: {
      auto &x = static_cast<const AssignStmt &>(s);
      line(ind, "assign " + x.target + " " + assignOpStr(x.op) + " " + ex(x.value));
      return;
    }
    case StmtKind::Shared: {
      auto &x = static_cast<const SharedDecl &>(s);
      line(ind, "shared " + tile(x, x.extents));
      return;
    }
    case StmtKind::Frag: {
      auto &x = static_cast<const FragDecl &>(s);
      std::string r = x.role ? " (role " + x.role->name + ")" : "";
      std::string i = init(x.init);
      line(ind, "frag " + tile(x, x.extents) + r + (i.empty() ? "" : " = " + i));
      return;
    }
    case StmtKind::Copy: {
      auto &x = static_cast<const CopyStmt &>(s);
      std::string sh = x.src.sliced ? shapeStr(x.src.sliceShape) : x.dst.sliced ? shapeStr(x.dst.sliceShape) : "";
      line(ind, std::string(x.add ? "copy(+) " : "copy ") + ref(x.src) + " -> " + ref(x.dst) + " (" + copyKindStr(x.copyKind) + (sh.empty() ? "" : " " + sh) + ")");
      return;
    }
    case StmtKind::Prefetch: {
      auto &x = static_cast<const PrefetchStmt &>(s);
      line(ind, "prefetch " + ref(x.src) + " (" + shapeStr(x.src.sliceShape) + ")");
      return;
    }
    case StmtKind::Gemm: {
      auto &x = static_cast<const GemmStmt &>(s);
      auto operand = [](const GemmOperand &o) {
        std::string r = o.name;
        if (o.sliced())
          r += "[" + std::to_string(o.box[0]) + " :+ " + std::to_string(o.box[2]) + ", " + std::to_string(o.box[1]) +
               " :+ " + std::to_string(o.box[3]) + "]";
        return r + (o.transposed ? "^T" : "");
      };
      line(ind, x.target + (x.accumulate ? " += " : " = ") + "gemm(" + operand(x.a) + ", " + operand(x.b) + ") m=" + std::to_string(x.m) +
                    " n=" + std::to_string(x.n) + " k=" + std::to_string(x.k));
      return;
    }
    case StmtKind::FragAssign: {
      auto &x = static_cast<const FragAssignStmt &>(s);
      line(ind, x.target + " = " + init(x.init));
      return;
    }
    case StmtKind::For: {
      auto &x = static_cast<const ForStmt &>(s);
      line(ind, "for " + x.var->name + " in " + ex(x.lo) + " .. " + ex(x.hi) + (x.unroll ? " unroll" : ""));
      block(ind + 1, x.body);
      return;
    }
    case StmtKind::Pipeline: {
      auto &x = static_cast<const PipelineStmt &>(s);
      line(ind, "pipeline " + x.var->name + " in " + ex(x.lo) + " .. " + ex(x.hi) + " stages " +
                    std::to_string(x.numStages));
      block(ind + 1, x.body);
      return;
    }
    case StmtKind::Parallel: {
      auto &x = static_cast<const ParallelStmt &>(s);
      std::string v;
      for (size_t i = 0; i < x.vars.size(); ++i) v += (i ? ", " : "") + x.vars[i]->name;
      line(ind, "parallel (" + v + ") " + (x.shape.empty() ? exprsStr(x.extents) : shapeStr(x.shape)));
      block(ind + 1, x.body);
      return;
    }
    case StmtKind::ElemAssign: {
      auto &x = static_cast<const ElemAssignStmt &>(s);
      std::string i;
      for (size_t k = 0; k < x.indices.size(); ++k) i += (k ? ", " : "") + exprString(*x.indices[k]);
      line(ind, x.target + "[" + i + "] " + assignOpStr(x.op) + " " + ex(x.value));
      return;
    }
    case StmtKind::If: {
      auto &x = static_cast<const IfStmt &>(s);
      line(ind, "if " + ex(x.cond));
      block(ind + 1, x.thenBlock);
      if (x.elseBlock) {
        line(ind, "else");
        block(ind + 1, *x.elseBlock);
      }
      return;
    }
    case StmtKind::Role: {
      auto &x = static_cast<const RoleStmt &>(s);
      line(ind, "role " + x.name + " warpgroups " + std::to_string(x.wgFirst) + ".." + std::to_string(x.wgLast) +
                    " regs " + std::to_string(x.regs) + (x.turns ? " turns" : "") +
                    (x.partialWaits ? " partial_waits" : "") +
                    (x.freshAddresses ? " fresh_addresses=" + std::to_string(x.freshAddresses) : ""));
      block(ind + 1, x.body);
      return;
    }
    case StmtKind::Channel: {
      auto &x = static_cast<const ChannelDecl &>(s);
      std::string f;
      for (size_t i = 0; i < x.fields.size(); ++i) {
        const auto &fd = x.fields[i];
        f += (i ? ", " : "") + fd.name + ": " + dtype(fd.dtypeName, fd.dtypeParam, fd.dtype) +
             (fd.shape.empty() ? exprsStr(fd.extents) : shapeStr(fd.shape));
      }
      std::string consumers;
      for (size_t i = 0; i < x.consumers.size(); ++i) consumers += (i ? ", " : " consumer ") + x.consumers[i]->name;
      line(ind, "channel " + x.name + " {" + f + "} depth " + std::to_string(x.depthValue) +
                    (x.producer ? " producer " + x.producer->name : "") + consumers);
      return;
    }
    case StmtKind::Put:
    case StmtKind::Get: {
      auto &x = static_cast<const SlotStmt &>(s);
      std::string b;
      for (size_t i = 0; i < x.bindings.size(); ++i) b += (i ? ", " : "") + x.bindings[i]->name;
      line(ind, std::string(x.isPut() ? "put " : "get ") + x.channelName + " -> (" + b + ")");
      block(ind + 1, x.body);
      return;
    }
    }
  }

  std::ostringstream os_;
};

}  // namespace

std::string dumpAst(const Module &m) { return Dumper().run(m); }

}  // namespace qla::fe
