// Sema for scalar expressions: name resolution, typing (int / float / bool with
// int -> float promotion made explicit as ConvertExpr), element reads inside
// parallel blocks, and constant folding in int64 / double.
#include <cmath>
#include <limits>

#include "Sema.h"

namespace qla::fe {

namespace {

bool isNumeric(ScalarType t) { return t == ScalarType::Int || t == ScalarType::Float; }

ScalarType promote(ScalarType a, ScalarType b) {
  return (a == ScalarType::Float || b == ScalarType::Float) ? ScalarType::Float : ScalarType::Int;
}

// The leftmost-deepest part of `e` that is not constant (for "X is not constant").
const Expr *firstNonConst(const Expr &e) {
  if (e.value) return nullptr;
  std::vector<const Expr *> kids;
  switch (e.kind) {
  case ExprKind::Unary: kids = {static_cast<const UnaryExpr &>(e).operand.get()}; break;
  case ExprKind::Binary: {
    auto &b = static_cast<const BinaryExpr &>(e);
    kids = {b.lhs.get(), b.rhs.get()};
    break;
  }
  case ExprKind::Select: {
    auto &s = static_cast<const SelectExpr &>(e);
    kids = {s.cond.get(), s.thenExpr.get(), s.elseExpr.get()};
    break;
  }
  case ExprKind::Call:
    for (auto &a : static_cast<const CallExpr &>(e).args) kids.push_back(a.get());
    break;
  case ExprKind::Convert: kids = {static_cast<const ConvertExpr &>(e).operand.get()}; break;
  default: break;
  }
  for (const Expr *k : kids)
    if (k && k->type != ScalarType::Unknown)
      if (const Expr *r = firstNonConst(*k)) return r;
  return &e;
}

// Folds an int operation; false on overflow or division by zero (`why` says which).
bool foldInt(BinaryOp op, int64_t a, int64_t b, int64_t &r, const char *&why) {
  why = "integer overflow in constant expression";
  switch (op) {
  case BinaryOp::Add: return !__builtin_add_overflow(a, b, &r);
  case BinaryOp::Sub: return !__builtin_sub_overflow(a, b, &r);
  case BinaryOp::Mul: return !__builtin_mul_overflow(a, b, &r);
  case BinaryOp::Div:
  case BinaryOp::Rem:
    if (b == 0) {
      why = "division by zero in constant expression";
      return false;
    }
    if (a == std::numeric_limits<int64_t>::min() && b == -1) return false;
    r = op == BinaryOp::Div ? a / b : a % b;
    return true;
  default: return false;
  }
}

bool compare(BinaryOp op, double a, double b) {
  switch (op) {
  case BinaryOp::Lt: return a < b;
  case BinaryOp::Le: return a <= b;
  case BinaryOp::Gt: return a > b;
  case BinaryOp::Ge: return a >= b;
  case BinaryOp::Eq: return a == b;
  default: return a != b;
  }
}

bool compareInt(BinaryOp op, int64_t a, int64_t b) {
  switch (op) {
  case BinaryOp::Lt: return a < b;
  case BinaryOp::Le: return a <= b;
  case BinaryOp::Gt: return a > b;
  case BinaryOp::Ge: return a >= b;
  case BinaryOp::Eq: return a == b;
  default: return a != b;
  }
}

}  // namespace

void Sema::convertTo(ExprPtr &e, ScalarType t) {
  if (t != ScalarType::Float || e->type != ScalarType::Int) return;
  SourceLoc l = e->loc;
  std::optional<ConstValue> v = e->value;
  auto c = std::make_unique<ConvertExpr>(l, std::move(e));
  c->type = ScalarType::Float;
  if (v) c->value = ConstValue::ofFloat(double(v->i));
  e = std::move(c);
}

void Sema::foldFloat(Expr &e, double v, const SourceLoc &loc) {
  if (!std::isfinite(v)) {
    error(loc, "constant expression does not evaluate to a finite number");
    e.type = ScalarType::Unknown;
    return;
  }
  e.value = ConstValue::ofFloat(v);
}

void Sema::checkExpr(ExprPtr &ep) {
  if (!ep) return;
  Expr &e = *ep;
  e.value.reset();
  switch (e.kind) {
  case ExprKind::IntLit:
    e.type = ScalarType::Int;
    e.value = ConstValue::ofInt(static_cast<IntLitExpr &>(e).literal);
    return;
  case ExprKind::FloatLit:
    e.type = ScalarType::Float;
    e.value = ConstValue::ofFloat(static_cast<FloatLitExpr &>(e).literal);
    return;
  case ExprKind::BoolLit:
    e.type = ScalarType::Bool;
    e.value = ConstValue::ofBool(static_cast<BoolLitExpr &>(e).literal);
    return;
  case ExprKind::BlockIdx: e.type = ScalarType::Int; return;
  case ExprKind::Name: checkName(static_cast<NameExpr &>(e)); return;
  case ExprKind::Unary: checkUnary(static_cast<UnaryExpr &>(e)); return;
  case ExprKind::Binary: checkBinary(static_cast<BinaryExpr &>(e)); return;
  case ExprKind::Select: checkSelect(static_cast<SelectExpr &>(e)); return;
  case ExprKind::Call: checkCall(static_cast<CallExpr &>(e)); return;
  case ExprKind::Elem: {
    // NAME[...] of a global tensor, or of a fragment outside a parallel block,
    // is a node of its own (see AST.h).
    auto &x = static_cast<ElemExpr &>(e);
    Decl *d = lookup(x.name);
    if (d && d->declKind == DeclKind::TensorArg) {
      auto g = std::make_unique<GlobalElemExpr>(x.loc, x.name);
      g->indices = std::move(x.indices);
      ep = std::move(g);
      checkGlobalElem(static_cast<GlobalElemExpr &>(*ep));
      return;
    }
    if (d && d->declKind == DeclKind::Frag && !ctx_.parallel) {
      auto f = std::make_unique<FragPickExpr>(x.loc, x.name);
      f->indices = std::move(x.indices);
      ep = std::move(f);
      checkFragPick(static_cast<FragPickExpr &>(*ep));
      return;
    }
    if (d && d->declKind == DeclKind::SlotBinding) {
      auto f = std::make_unique<SlotPickExpr>(x.loc, x.name);
      f->indices = std::move(x.indices);
      ep = std::move(f);
      checkSlotPick(static_cast<SlotPickExpr &>(*ep));
      return;
    }
    checkElem(x);
    return;
  }
  case ExprKind::GlobalElem: checkGlobalElem(static_cast<GlobalElemExpr &>(e)); return;
  case ExprKind::FragPick: checkFragPick(static_cast<FragPickExpr &>(e)); return;
  case ExprKind::SlotPick: checkSlotPick(static_cast<SlotPickExpr &>(e)); return;
  case ExprKind::Convert: {
    auto &c = static_cast<ConvertExpr &>(e);
    checkExpr(c.operand);
    e.type = c.operand->type == ScalarType::Unknown ? ScalarType::Unknown : ScalarType::Float;
    if (c.operand->value) e.value = ConstValue::ofFloat(c.operand->value->asDouble());
    return;
  }
  }
}

void Sema::checkName(NameExpr &e) {
  e.type = ScalarType::Unknown;
  Decl *d = lookup(e.name);
  if (!d) {
    error(e.loc, "use of undeclared name '" + e.name + "'");
    return;
  }
  e.decl = d;
  switch (d->declKind) {
  case DeclKind::Param: {
    auto *p = static_cast<ParamDecl *>(d);
    if (p->isDType) {
      error(e.loc, "specialization constant '" + e.name + "' is a dtype (" + dtypeStr(p->dtypeValue) +
                       ") and cannot be used in an expression");
      return;
    }
    e.type = p->value.type;
    if (e.type != ScalarType::Unknown) e.value = p->value;
    return;
  }
  case DeclKind::Dim:
  case DeclKind::LoopVar: e.type = ScalarType::Int; return;
  case DeclKind::ScalarArg:
    if (!badDtype_.count(d)) e.type = static_cast<ScalarArgDecl *>(d)->type();
    return;
  case DeclKind::Let: {
    auto *l = static_cast<LetDecl *>(d);
    if (l->init) {
      e.type = l->init->type;
      e.value = l->init->value;
    }
    return;
  }
  case DeclKind::Var: e.type = static_cast<VarDecl *>(d)->type; return;  // never constant
  case DeclKind::TensorArg:
    error(e.loc, "global tensor '" + e.name + "' cannot be used as a scalar (copy a slice of it into a tile)");
    return;
  case DeclKind::Frag:
    error(e.loc, "fragment '" + e.name + "' cannot be used as a scalar (read an element, e.g. " + e.name +
                     "[i, j])");
    return;
  case DeclKind::Shared:
  case DeclKind::SlotBinding:
  case DeclKind::Channel: error(e.loc, "'" + e.name + "' is " + describe(d) + ", not a scalar"); return;
  }
}

void Sema::checkUnary(UnaryExpr &e) {
  e.type = ScalarType::Unknown;
  checkExpr(e.operand);
  ScalarType t = e.operand->type;
  if (t == ScalarType::Unknown) return;
  if (e.op == UnaryOp::Neg) {
    if (!isNumeric(t)) {
      error(e.opLoc, "unary '-' needs an int or float operand, got bool");
      return;
    }
    e.type = t;
    if (!e.operand->value) return;
    if (t == ScalarType::Float) {
      e.value = ConstValue::ofFloat(-e.operand->value->f);
    } else if (e.operand->value->i == std::numeric_limits<int64_t>::min()) {
      error(e.opLoc, "integer overflow in constant expression");
      e.type = ScalarType::Unknown;
    } else {
      e.value = ConstValue::ofInt(-e.operand->value->i);
    }
    return;
  }
  if (t != ScalarType::Bool) {
    error(e.opLoc, std::string("'!' needs a bool operand, got ") + scalarTypeName(t));
    return;
  }
  e.type = ScalarType::Bool;
  if (e.operand->value) e.value = ConstValue::ofBool(!e.operand->value->b);
}

void Sema::checkBinary(BinaryExpr &e) {
  e.type = ScalarType::Unknown;
  checkExpr(e.lhs);
  checkExpr(e.rhs);
  ScalarType l = e.lhs->type, r = e.rhs->type;
  if (l == ScalarType::Unknown || r == ScalarType::Unknown) return;
  std::string op = binaryOpStr(e.op);
  std::string got = std::string(scalarTypeName(l)) + " and " + scalarTypeName(r);
  ScalarType operand = ScalarType::Unknown;  // the type the operation computes in
  switch (e.op) {
  case BinaryOp::Add:
  case BinaryOp::Sub:
  case BinaryOp::Mul:
  case BinaryOp::Div:
    if (!isNumeric(l) || !isNumeric(r)) {
      error(e.opLoc, "operator '" + op + "' needs int or float operands, got " + got);
      return;
    }
    operand = e.type = promote(l, r);
    break;
  case BinaryOp::Rem:
    if (l != ScalarType::Int || r != ScalarType::Int) {
      error(e.opLoc, "operator '%' needs int operands, got " + got);
      return;
    }
    operand = e.type = ScalarType::Int;
    break;
  case BinaryOp::Lt:
  case BinaryOp::Le:
  case BinaryOp::Gt:
  case BinaryOp::Ge:
    if (!isNumeric(l) || !isNumeric(r)) {
      error(e.opLoc, "operator '" + op + "' needs int or float operands, got " + got);
      return;
    }
    operand = promote(l, r);
    e.type = ScalarType::Bool;
    break;
  case BinaryOp::Eq:
  case BinaryOp::Ne:
    if (l == ScalarType::Bool && r == ScalarType::Bool) {
      operand = ScalarType::Bool;
    } else if (isNumeric(l) && isNumeric(r)) {
      operand = promote(l, r);
    } else {
      error(e.opLoc, "operator '" + op + "' cannot compare " + got);
      return;
    }
    e.type = ScalarType::Bool;
    break;
  case BinaryOp::And:
  case BinaryOp::Or:
    if (l != ScalarType::Bool || r != ScalarType::Bool) {
      error(e.opLoc, "operator '" + op + "' needs bool operands, got " + got);
      return;
    }
    operand = e.type = ScalarType::Bool;
    break;
  }
  convertTo(e.lhs, operand);
  convertTo(e.rhs, operand);
  // Expressions have no side effects: a constant side that decides && / ||
  // makes the whole expression constant.
  if (e.op == BinaryOp::And || e.op == BinaryOp::Or) {
    bool decides = e.op == BinaryOp::Or;  // true decides ||, false decides &&
    for (const ExprPtr *x : {&e.lhs, &e.rhs})
      if ((*x)->value && (*x)->value->b == decides) {
        e.value = ConstValue::ofBool(decides);
        return;
      }
  }
  // A constant zero divisor is a bug even when the dividend is only known at run time.
  if ((e.op == BinaryOp::Div || e.op == BinaryOp::Rem) && e.rhs->value && e.rhs->value->asDouble() == 0) {
    error(e.opLoc, "division by zero in constant expression");
    e.type = ScalarType::Unknown;
    return;
  }
  if (!e.lhs->value || !e.rhs->value) return;
  const ConstValue &a = *e.lhs->value, &b = *e.rhs->value;
  switch (e.op) {
  case BinaryOp::Add:
  case BinaryOp::Sub:
  case BinaryOp::Mul:
  case BinaryOp::Div:
  case BinaryOp::Rem:
    if (operand == ScalarType::Int) {
      int64_t v = 0;
      const char *why = "";
      if (!foldInt(e.op, a.i, b.i, v, why)) {
        error(e.opLoc, why);
        e.type = ScalarType::Unknown;
        return;
      }
      e.value = ConstValue::ofInt(v);
    } else {
      if (e.op == BinaryOp::Div && b.f == 0) {
        error(e.opLoc, "division by zero in constant expression");
        e.type = ScalarType::Unknown;
        return;
      }
      double v = e.op == BinaryOp::Add ? a.f + b.f : e.op == BinaryOp::Sub ? a.f - b.f
               : e.op == BinaryOp::Mul ? a.f * b.f : a.f / b.f;
      foldFloat(e, v, e.opLoc);
    }
    return;
  case BinaryOp::And: e.value = ConstValue::ofBool(a.b && b.b); return;
  case BinaryOp::Or: e.value = ConstValue::ofBool(a.b || b.b); return;
  default:
    if (operand == ScalarType::Bool)
      e.value = ConstValue::ofBool(e.op == BinaryOp::Eq ? a.b == b.b : a.b != b.b);
    else if (operand == ScalarType::Int)
      e.value = ConstValue::ofBool(compareInt(e.op, a.i, b.i));
    else
      e.value = ConstValue::ofBool(compare(e.op, a.f, b.f));
    return;
  }
}

void Sema::checkSelect(SelectExpr &e) {
  e.type = ScalarType::Unknown;
  checkExpr(e.cond);
  checkExpr(e.thenExpr);
  checkExpr(e.elseExpr);
  ScalarType c = e.cond->type, a = e.thenExpr->type, b = e.elseExpr->type;
  if (c != ScalarType::Unknown && c != ScalarType::Bool)
    error(e.cond->loc, std::string("condition of '?:' must be bool, got ") + scalarTypeName(c));
  if (c != ScalarType::Bool || a == ScalarType::Unknown || b == ScalarType::Unknown) return;
  if (a == ScalarType::Bool && b == ScalarType::Bool) {
    e.type = ScalarType::Bool;
  } else if (isNumeric(a) && isNumeric(b)) {
    e.type = promote(a, b);
  } else {
    error(e.opLoc, std::string("branches of '?:' have different types: ") + scalarTypeName(a) + " and " +
                       scalarTypeName(b));
    return;
  }
  convertTo(e.thenExpr, e.type);
  convertTo(e.elseExpr, e.type);
  // A constant condition picks a branch; constant when that branch is.
  if (e.cond->value) e.value = e.cond->value->b ? e.thenExpr->value : e.elseExpr->value;
}

void Sema::checkCall(CallExpr &e) {
  e.type = ScalarType::Unknown;
  for (auto &a : e.args) checkExpr(a);
  if (e.builtin == Builtin::Unknown) {
    error(e.loc, "unknown function '" + e.callee +
                     "' (builtins: cdiv, min, max, exp, exp2, fast_exp2, log, log2, sqrt, rsqrt, sigmoid, abs, f32, i32)");
    return;
  }
  bool binary = e.builtin == Builtin::Cdiv || e.builtin == Builtin::Min || e.builtin == Builtin::Max;
  size_t want = binary ? 2 : 1;
  if (e.args.size() != want) {
    error(e.loc, "'" + e.callee + "' takes " + std::to_string(want) + " argument" + (want == 1 ? "" : "s") +
                     ", got " + std::to_string(e.args.size()));
    return;
  }
  for (auto &a : e.args) {
    if (a->type == ScalarType::Unknown) return;
    bool ok = e.builtin == Builtin::Cdiv ? a->type == ScalarType::Int : isNumeric(a->type);
    if (!ok) {
      error(a->loc, "'" + e.callee + "' needs " + (e.builtin == Builtin::Cdiv ? "int" : "int or float") +
                        " arguments, got " + scalarTypeName(a->type));
      return;
    }
  }
  bool allConst = true;
  for (auto &a : e.args) allConst = allConst && a->value.has_value();
  switch (e.builtin) {
  case Builtin::Cdiv: {
    e.type = ScalarType::Int;
    if (e.args[1]->value && e.args[1]->value->i == 0) {
      error(e.args[1]->loc, "division by zero in constant expression");
      e.type = ScalarType::Unknown;
      return;
    }
    if (!allConst) return;
    int64_t a = e.args[0]->value->i, b = e.args[1]->value->i;
    if (a == std::numeric_limits<int64_t>::min() && b == -1) {
      error(e.loc, "integer overflow in constant expression");
      e.type = ScalarType::Unknown;
      return;
    }
    int64_t q = a / b;
    if (a % b != 0 && ((a < 0) == (b < 0))) ++q;  // round toward +infinity
    e.value = ConstValue::ofInt(q);
    return;
  }
  case Builtin::Min:
  case Builtin::Max: {
    e.type = promote(e.args[0]->type, e.args[1]->type);
    convertTo(e.args[0], e.type);
    convertTo(e.args[1], e.type);
    if (!allConst) return;
    bool isMin = e.builtin == Builtin::Min;
    const ConstValue &a = *e.args[0]->value, &b = *e.args[1]->value;
    if (e.type == ScalarType::Int)
      e.value = ConstValue::ofInt(isMin ? std::min(a.i, b.i) : std::max(a.i, b.i));
    else
      e.value = ConstValue::ofFloat(isMin ? std::min(a.f, b.f) : std::max(a.f, b.f));
    return;
  }
  case Builtin::Abs: {
    e.type = e.args[0]->type;
    if (!allConst) return;
    const ConstValue &a = *e.args[0]->value;
    if (e.type == ScalarType::Float) {
      e.value = ConstValue::ofFloat(std::fabs(a.f));
    } else if (a.i == std::numeric_limits<int64_t>::min()) {
      error(e.loc, "integer overflow in constant expression");
      e.type = ScalarType::Unknown;
    } else {
      e.value = ConstValue::ofInt(a.i < 0 ? -a.i : a.i);
    }
    return;
  }
  case Builtin::ToI32: {
    e.type = ScalarType::Int;
    if (!allConst) return;
    const ConstValue &a = *e.args[0]->value;
    if (a.type == ScalarType::Int) {
      e.value = a;
      return;
    }
    double t = std::trunc(a.f);
    if (!(t >= -9.2e18 && t <= 9.2e18)) {
      error(e.loc, "constant " + a.str() + " does not fit in an int");
      e.type = ScalarType::Unknown;
      return;
    }
    e.value = ConstValue::ofInt(int64_t(t));
    return;
  }
  default: break;
  }
  // f32 and the float math functions: the argument is converted to float.
  e.type = ScalarType::Float;
  convertTo(e.args[0], ScalarType::Float);
  if (!allConst) return;
  double x = e.args[0]->value->f, v = x;
  switch (e.builtin) {
  case Builtin::Exp: v = std::exp(x); break;
  case Builtin::Exp2: v = std::exp2(x); break;
  case Builtin::FastExp2: v = std::exp2(x); break;
  case Builtin::Log: v = std::log(x); break;
  case Builtin::Log2: v = std::log2(x); break;
  case Builtin::Sqrt: v = std::sqrt(x); break;
  case Builtin::Rsqrt: v = 1.0 / std::sqrt(x); break;
  case Builtin::Sigmoid: v = 1.0 / (1.0 + std::exp(-x)); break;
  default: break;  // ToF32
  }
  foldFloat(e, v, e.loc);
}

int Sema::parallelDimOf(const Expr &index) const {
  auto *n = as<NameExpr>(&index);
  if (!n || !n->decl || !ctx_.parallel) return -1;
  auto *v = as<LoopVarDecl>(n->decl);
  if (!v || v->owner != ctx_.parallel) return -1;
  return v->parallelDim;
}

std::optional<int64_t> Sema::parallelOffsetOf(const Expr &index, int dim) const {
  if (parallelDimOf(index) == dim) return 0;
  auto *b = as<BinaryExpr>(&index);
  if (!b || b->op != BinaryOp::Add || !b->lhs || !b->rhs) return std::nullopt;
  for (auto [v, c] : {std::pair{b->lhs.get(), b->rhs.get()}, std::pair{b->rhs.get(), b->lhs.get()}})
    if (parallelDimOf(*v) == dim && c->value && c->type == ScalarType::Int) return c->value->i;
  return std::nullopt;
}

void Sema::checkElem(ElemExpr &e) {
  e.type = ScalarType::Unknown;
  for (auto &i : e.indices) checkExpr(i);
  Decl *d = lookup(e.name);
  if (!d) {
    error(e.loc, "use of undeclared name '" + e.name + "'");
    return;
  }
  e.frag = as<FragDecl>(d);
  if (!e.frag) {
    if (d->declKind == DeclKind::TensorArg)
      error(e.loc, "global tensor '" + e.name +
                       "' cannot be indexed in an expression (copy a slice of it into a fragment first)");
    else if (is<TileDecl>(d))
      error(e.loc, "'" + e.name + "' is " + describe(d) + "; only fragment elements can be read (copy it into a fragment first)");
    else
      error(e.loc, "'" + e.name + "' is " + describe(d) + ", not a fragment");
    return;
  }
  if (!ctx_.parallel) {
    error(e.loc, "fragment elements can only be read inside a parallel block");
    return;
  }
  const std::vector<int64_t> &fs = e.frag->shape, &ps = ctx_.parallel->shape;
  if (fs.empty() || ps.empty()) return;  // already reported
  if (e.indices.size() != fs.size()) {
    error(e.loc, "fragment '" + e.name + "' has rank " + std::to_string(fs.size()) + " but is indexed with " +
                     std::to_string(e.indices.size()) + " index" + (e.indices.size() == 1 ? "" : "es"));
    return;
  }
  if (fs.size() > ps.size()) {
    error(e.loc, "fragment '" + e.name + "' has rank " + std::to_string(fs.size()) +
                     " but the parallel block has rank " + std::to_string(ps.size()));
    return;
  }
  e.parallelDims.clear();
  for (size_t d = 0; d < e.indices.size(); ++d) {
    const Expr &idx = *e.indices[d];
    int k = parallelDimOf(idx);
    if (k < 0) {
      if (idx.type != ScalarType::Unknown)
        error(idx.loc, "a fragment index must be one of the parallel block's index variables");
      return;
    }
    if (fs.size() == ps.size() && k != int(d)) {
      error(idx.loc, "fragment '" + e.name + "' must be indexed by the parallel index variables in order");
      return;
    }
    if (fs[d] != ps[size_t(k)]) {
      if (fs.size() == ps.size())
        error(e.loc, "fragment '" + e.name + "' has shape " + shapeString(fs) +
                         " but the parallel block iterates over " + shapeString(ps));
      else
        error(idx.loc, "fragment '" + e.name + "' has extent " + std::to_string(fs[d]) + " but index '" +
                           static_cast<const NameExpr &>(idx).name + "' ranges over " + std::to_string(ps[size_t(k)]));
      return;
    }
    e.parallelDims.push_back(k);
  }
  if (badDtype_.count(static_cast<Decl *>(e.frag))) return;
  e.type = elementScalarType(e.frag->dtype);
}

void Sema::checkGlobalElem(GlobalElemExpr &e) {
  e.type = ScalarType::Unknown;
  e.value.reset();
  bool ok = true;
  for (auto &i : e.indices) {
    size_t before = errors_;
    checkIntExpr(i, "a tensor index");
    ok = ok && errors_ == before && i->type == ScalarType::Int;
  }
  Decl *d = lookup(e.name);
  e.tensor = as<TensorArgDecl>(d);
  if (!e.tensor) {  // (only when re-checked after the scope changed)
    error(e.loc, d ? "'" + e.name + "' is " + describe(d) + ", not a global tensor" : "use of undeclared name '" + e.name + "'");
    return;
  }
  size_t rank = e.tensor->dims.size();
  if (e.indices.size() != rank) {
    error(e.loc, "tensor '" + e.name + "' has " + std::to_string(rank) + " dim" + (rank == 1 ? "" : "s") +
                     " but is indexed with " + std::to_string(e.indices.size()) + " index" +
                     (e.indices.size() == 1 ? "" : "es"));
    return;
  }
  if (!ok || badDtype_.count(static_cast<Decl *>(e.tensor))) return;
  e.type = elementScalarType(e.tensor->dtype);
}

void Sema::checkFragPick(FragPickExpr &e) {
  e.type = ScalarType::Unknown;
  e.value.reset();
  bool ok = true;
  for (auto &i : e.indices) {
    size_t before = errors_;
    checkIntExpr(i, "a fragment index");
    ok = ok && errors_ == before && i->type == ScalarType::Int;
  }
  Decl *d = lookup(e.name);
  e.frag = as<FragDecl>(d);
  if (!e.frag) {  // (only when re-checked after the scope changed)
    error(e.loc, d ? "'" + e.name + "' is " + describe(d) + ", not a fragment" : "use of undeclared name '" + e.name + "'");
    return;
  }
  if (ctx_.parallel) {
    error(e.loc, "a fragment element read inside a parallel block must use the block's index variables");
    return;
  }
  // A put body is issued by one thread; a pick needs the fragment's warpgroup(s).
  if (ctx_.slot && ctx_.slot->isPut()) {
    error(e.loc, "fragment elements cannot be read inside 'put' (bind the value with a 'let' before the put)");
    return;
  }
  // Scoping keeps other roles' fragments out of sight; this is a safety net.
  if (e.frag->role != ctx_.role) {
    error(e.loc, "fragment '" + e.name + "' belongs to another role");
    return;
  }
  const std::vector<int64_t> &fs = e.frag->shape;
  if (fs.empty()) return;  // already reported
  if (e.indices.size() != fs.size()) {
    error(e.loc, "fragment '" + e.name + "' has rank " + std::to_string(fs.size()) + " but is indexed with " +
                     std::to_string(e.indices.size()) + " index" + (e.indices.size() == 1 ? "" : "es"));
    return;
  }
  if (!ok) return;
  for (size_t k = 0; k < fs.size(); ++k) {
    const Expr &i = *e.indices[k];
    if (i.value && (i.value->i < 0 || i.value->i >= fs[k])) {
      error(i.loc, "index " + std::to_string(i.value->i) + " is out of range for dim " + std::to_string(k) +
                       " of fragment '" + e.name + "' (extent " + std::to_string(fs[k]) + ")");
      return;
    }
  }
  if (badDtype_.count(static_cast<Decl *>(e.frag))) return;
  e.type = elementScalarType(e.frag->dtype);
}

void Sema::checkSlotPick(SlotPickExpr &e) {
  e.type = ScalarType::Unknown;
  e.value.reset();
  bool ok = true;
  for (auto &i : e.indices) {
    size_t before = errors_;
    checkIntExpr(i, "a slot tile index");
    ok = ok && errors_ == before && i->type == ScalarType::Int;
  }
  Decl *d = lookup(e.name);
  e.slot = as<SlotBindingDecl>(d);
  if (!e.slot) {  // (only when re-checked after the scope changed)
    error(e.loc, d ? "'" + e.name + "' is " + describe(d) + ", not a slot tile" : "use of undeclared name '" + e.name + "'");
    return;
  }
  if (e.slot->owner && e.slot->owner->isPut()) {
    error(e.loc, "'" + e.name + "' is a put's slot tile: a put only writes its slot (read elements of a get's slot, or of a fragment)");
    return;
  }
  const std::vector<int64_t> &ts = e.slot->shape;
  if (ts.empty()) return;  // already reported
  if (e.indices.size() != ts.size()) {
    error(e.loc, "slot tile '" + e.name + "' has rank " + std::to_string(ts.size()) + " but is indexed with " +
                     std::to_string(e.indices.size()) + " index" + (e.indices.size() == 1 ? "" : "es"));
    return;
  }
  if (!ok) return;
  // Inside a parallel block: the element at the block's own position, or
  // at a constant offset from it (`ks[i, kk + 64]`: a block over a part of
  // the tile), read per element (indexed by the block's variables in order).
  if (ctx_.parallel) {
    const std::vector<int64_t> &ps = ctx_.parallel->shape;
    if (ps.empty()) return;  // already reported
    if (ts.size() != ps.size()) {
      error(e.loc, "slot tile '" + e.name + "' has shape " + shapeString(ts) + " but the parallel block iterates over " +
                       shapeString(ps) + " (a slot tile is read at the block's own position, or at a constant offset from it)");
      return;
    }
    for (size_t k = 0; k < ts.size(); ++k) {
      std::optional<int64_t> off = parallelOffsetOf(*e.indices[k], int(k));
      if (!off) {
        error(e.indices[k]->loc, "inside a parallel block, slot tile '" + e.name +
                                     "' is indexed by the block's index variables, in order (each plus a constant, "
                                     "if any: i + 64)");
        return;
      }
      // (Not in the untaken side of an `if` on a constant: nothing of it is
      // built, and another specialization's shapes may make the read valid.)
      if ((*off < 0 || *off + ps[k] > ts[k]) && !ctx_.dead) {
        error(e.indices[k]->loc, "slot tile '" + e.name + "' has extent " + std::to_string(ts[k]) + " in dim " +
                                     std::to_string(k) + " but the parallel block reads " + std::to_string(*off) +
                                     " .. " + std::to_string(*off + ps[k] - 1) + " there");
        return;
      }
    }
  }
  for (size_t k = 0; k < ts.size(); ++k) {
    const Expr &i = *e.indices[k];
    if (i.value && (i.value->i < 0 || i.value->i >= ts[k]) && !ctx_.dead) {
      error(i.loc, "index " + std::to_string(i.value->i) + " is out of range for dim " + std::to_string(k) +
                       " of slot tile '" + e.name + "' (extent " + std::to_string(ts[k]) + ")");
      return;
    }
  }
  if (badDtype_.count(static_cast<Decl *>(e.slot))) return;
  e.type = elementScalarType(e.slot->dtype);
  if (e.type != ScalarType::Float) {
    error(e.loc, "slot tile '" + e.name + "' holds " + std::string(qla::dtypeName(e.slot->dtype)) + "; only float elements can be read");
    e.type = ScalarType::Unknown;
  }
}

void Sema::checkIntExpr(ExprPtr &e, const std::string &what) {
  checkExpr(e);
  if (e->type != ScalarType::Unknown && e->type != ScalarType::Int)
    error(e->loc, what + " must be an int, got " + scalarTypeName(e->type));
}

void Sema::requireConst(const Expr &e, const std::string &what) {
  const Expr *leaf = firstNonConst(e);
  std::string why = leaf ? ", but '" + exprString(*leaf) + "' is not" : "";
  error(leaf ? leaf->loc : e.loc, what + " must be a compile-time constant" + why);
}

std::optional<int64_t> Sema::constInt(ExprPtr &e, const std::string &what, bool positive) {
  checkExpr(e);
  if (e->type == ScalarType::Unknown) return std::nullopt;
  if (e->type != ScalarType::Int) {
    error(e->loc, what + " must be an int, got " + scalarTypeName(e->type));
    return std::nullopt;
  }
  if (!e->value) {
    requireConst(*e, what);
    return std::nullopt;
  }
  if (positive && e->value->i <= 0) {
    error(e->loc, what + " must be positive, got " + std::to_string(e->value->i));
    return std::nullopt;
  }
  return e->value->i;
}

}  // namespace qla::fe
