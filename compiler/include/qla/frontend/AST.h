// The QLA abstract syntax tree: what the parser builds and sema checks/annotates.
//
// Ownership: every node is owned by its parent through std::unique_ptr (or by
// value); cross references (a name to its declaration, a put to its channel,
// ...) are plain non-owning pointers set by sema (checkQla).
//
// Walking: Expr, Stmt and Decl each carry a kind tag. Switch on it, or use
// fe::is<T>(p) / fe::as<T>(p) (null when p is not a T). Every concrete node has
// `static bool classof(const Base *)`, so llvm::isa / llvm::dyn_cast work too.
// Declaring statements (let, shared, frag, channel) are both a Stmt and a Decl
// (multiple inheritance): a NameExpr's `decl` points at the Decl sub-object;
// fe::as<FragDecl>(decl) gets the full node back.
//
// Invariants after a successful checkQla (see docs/language.md for the rules):
//  * every Expr has `type` != Unknown; compile-time-constant subtrees have
//    `value` set (ints are int64, floats double);
//  * implicit int->float promotions are explicit ConvertExpr nodes, so the two
//    operands of a BinaryExpr, the branches of a SelectExpr, the arguments of
//    min/max and of the float math builtins all have the type the operation
//    computes in; fill values and element-assignment values already have the
//    element type of their fragment (elementScalarType(dtype));
//  * every name is resolved (NameExpr::decl, TileRef::decl, GemmOperand::decl,
//    FragInit::source, ElemExpr::frag, ElemAssignStmt::frag, ...);
//  * every compile-time quantity is folded into an int64 field: tile shapes,
//    slice extents, pipeline stages, channel depth, threads, cluster, gemm
//    M/N/K, parallel extents, and the value of every specialization constant;
//  * every dtype written in the source (tensor arguments, shared, frag,
//    channel fields) is resolved into the `dtype` field, also when it names a
//    dtype specialization constant (`DT` in `kernel k<DT = bf16>`; the
//    `dtypeParam` field then points at it): later stages read `dtype` only;
//  * the parser turns every `NAME[...]` in an expression into an ElemExpr;
//    sema replaces it by a GlobalElemExpr (NAME is a tensor argument) or a
//    FragPickExpr (NAME is a fragment, outside parallel blocks), so after
//    sema an ElemExpr is always a fragment read inside a parallel block;
//  * likewise `NAME = expr` is parsed as a FragAssignStmt with a Fill init;
//    sema replaces it by an AssignStmt when NAME is a VarDecl. After sema a
//    FragAssignStmt always targets a fragment and an AssignStmt a var;
//  * expressions have no side effects, so a condition (IfStmt::cond,
//    SelectExpr::cond) whose `value` is set lets the back end emit only the
//    taken side; both sides are still fully checked. `&&` / `||` fold when
//    either side decides them (`false && x` is the constant false), and a
//    `?:` whose condition and taken branch are constant is constant.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "qla/DType.h"  // qla::DType, shared with the runtime and the operators

namespace qla::fe {

using qla::DType;

//===----------------------------------------------------------------------===//
// Locations and diagnostics
//===----------------------------------------------------------------------===//

struct Expansion;

// 1-based line and column (a tab counts as one column) of a token's first char.
// A token of a `fn`'s body expanded at a call keeps its place in the body and
// names the call in `via` (null outside expansions).
struct SourceLoc {
  std::string file;
  int line = 0;
  int col = 0;
  std::shared_ptr<const Expansion> via;
  std::string str() const;  // "file:line:col"
  // " (in fn 'f' called at file:line:col)" for each expansion, innermost first; "" outside.
  std::string expansionNote() const;
};

// One expansion of a `fn` at a call statement.
struct Expansion {
  std::string fn;
  SourceLoc call;  // the call's name token (itself maybe inside another expansion)
};

struct Diagnostic {
  SourceLoc loc;
  std::string message;
  std::string str() const;  // "file:line:col: error: message"
};

//===----------------------------------------------------------------------===//
// Types and constants
//===----------------------------------------------------------------------===//

// The type of a scalar expression. Int is i32 at run time (index for
// addressing); constants are folded in int64.
enum class ScalarType : uint8_t { Unknown, Int, Float, Bool };
const char *scalarTypeName(ScalarType t);  // "int", "float", "bool", "?"

const char *dtypeStr(DType t);                             // "bf16", "f16", "f32", "i32", "i64"
bool dtypeFromName(const std::string &name, DType &out);  // inverse of dtypeStr
// The scalar type of one element of a tile: Float for bf16/f16/f32, Int for i32/i64.
ScalarType elementScalarType(DType t);

// A folded compile-time value; exactly the member named by `type` is meaningful.
struct ConstValue {
  ScalarType type = ScalarType::Unknown;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  static ConstValue ofInt(int64_t v);
  static ConstValue ofFloat(double v);
  static ConstValue ofBool(bool v);
  double asDouble() const { return type == ScalarType::Int ? double(i) : f; }
  std::string str() const;  // "128", "1e-06", "true"
};

struct Decl;
struct Stmt;
struct FragDecl;
struct TileDecl;
struct ParamDecl;
struct DimDecl;
struct TensorArgDecl;
struct ScalarArgDecl;
struct LetDecl;
struct LoopVarDecl;
struct SharedDecl;
struct SlotBindingDecl;
struct ChannelDecl;
struct VarDecl;
struct RoleStmt;
struct SlotStmt;
struct ParallelStmt;

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

enum class ExprKind : uint8_t {
  IntLit, FloatLit, BoolLit, Name, BlockIdx, Unary, Binary, Select, Call, Elem, Convert,
  GlobalElem,  // GlobalElemExpr: X[i, j] of a global tensor argument
  FragPick,    // FragPickExpr: f[i] / f[i, j] of a fragment outside parallel blocks
  SlotPick,    // SlotPickExpr: s[i] / s[i, j] of a get's slot tile outside parallel blocks
};

struct Expr {
  ExprKind kind;
  SourceLoc loc;                    // first token of the expression
  ScalarType type = ScalarType::Unknown;  // set by sema
  std::optional<ConstValue> value;  // set by sema when the whole subtree is constant

  virtual ~Expr() = default;
  bool isConst() const { return value.has_value(); }
  int64_t constInt() const { return value->i; }  // only when isConst() and type == Int

 protected:
  Expr(ExprKind k, SourceLoc l) : kind(k), loc(std::move(l)) {}
};
using ExprPtr = std::unique_ptr<Expr>;

struct IntLitExpr : Expr {
  int64_t literal;
  IntLitExpr(SourceLoc l, int64_t v) : Expr(ExprKind::IntLit, std::move(l)), literal(v) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::IntLit; }
};

struct FloatLitExpr : Expr {
  double literal;
  FloatLitExpr(SourceLoc l, double v) : Expr(ExprKind::FloatLit, std::move(l)), literal(v) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::FloatLit; }
};

struct BoolLitExpr : Expr {
  bool literal;
  BoolLitExpr(SourceLoc l, bool v) : Expr(ExprKind::BoolLit, std::move(l)), literal(v) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::BoolLit; }
};

// A scalar name: ParamDecl (constant; never a dtype param), DimDecl,
// ScalarArgDecl, LetDecl, LoopVarDecl (for/pipeline/parallel index) or
// VarDecl. Sema rejects any other decl here.
// A name referring to a VarDecl is never constant (`value` is never set, even
// when the var's initializer is constant): its value is the var's current
// value at that point of execution; `type` is VarDecl::type.
struct NameExpr : Expr {
  std::string name;
  Decl *decl = nullptr;  // set by sema
  NameExpr(SourceLoc l, std::string n) : Expr(ExprKind::Name, std::move(l)), name(std::move(n)) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::Name; }
};

// block.x / block.y / block.z: the block (CTA) index, an int.
struct BlockIdxExpr : Expr {
  int dim;  // 0 = x, 1 = y, 2 = z
  BlockIdxExpr(SourceLoc l, int d) : Expr(ExprKind::BlockIdx, std::move(l)), dim(d) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::BlockIdx; }
};

enum class UnaryOp : uint8_t { Neg, Not };
struct UnaryExpr : Expr {
  UnaryOp op;
  SourceLoc opLoc;
  ExprPtr operand;
  UnaryExpr(SourceLoc l, UnaryOp o, ExprPtr x)
      : Expr(ExprKind::Unary, l), op(o), opLoc(l), operand(std::move(x)) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::Unary; }
};

// Div on ints truncates toward zero, Rem has the sign of the dividend (as in C).
enum class BinaryOp : uint8_t { Add, Sub, Mul, Div, Rem, Lt, Le, Gt, Ge, Eq, Ne, And, Or };
const char *binaryOpStr(BinaryOp op);  // "+", "<=", "&&", ...

struct BinaryExpr : Expr {
  BinaryOp op;
  SourceLoc opLoc;  // the operator token (type errors point here)
  ExprPtr lhs, rhs;
  BinaryExpr(SourceLoc l, BinaryOp o, SourceLoc ol, ExprPtr a, ExprPtr b)
      : Expr(ExprKind::Binary, std::move(l)), op(o), opLoc(std::move(ol)), lhs(std::move(a)),
        rhs(std::move(b)) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::Binary; }
};

// cond ? a : b. When cond->value is set only the taken branch needs to be
// evaluated; `value` is set when cond and the taken branch are constant.
struct SelectExpr : Expr {
  SourceLoc opLoc;  // the '?'
  ExprPtr cond, thenExpr, elseExpr;
  SelectExpr(SourceLoc l, SourceLoc ol, ExprPtr c, ExprPtr t, ExprPtr e)
      : Expr(ExprKind::Select, std::move(l)), opLoc(std::move(ol)), cond(std::move(c)),
        thenExpr(std::move(t)), elseExpr(std::move(e)) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::Select; }
};

// Builtin functions. ToF32 / ToI32 are the conversions f32(x) / i32(x)
// (i32 of a float truncates toward zero). Cdiv rounds toward +infinity.
enum class Builtin : uint8_t {
  Unknown, Cdiv, Min, Max, Exp, Exp2, FastExp2, Log, Log2, Sqrt, Rsqrt, Sigmoid, Abs, ToF32, ToI32
};
const char *builtinName(Builtin b);
Builtin builtinFromName(const std::string &name);  // Unknown if none

struct CallExpr : Expr {
  std::string callee;
  Builtin builtin = Builtin::Unknown;  // set by the parser from the name
  std::vector<ExprPtr> args;
  CallExpr(SourceLoc l, std::string c) : Expr(ExprKind::Call, std::move(l)), callee(std::move(c)) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::Call; }
};

// An element read `x[i, j]` of a fragment; only inside a parallel block, and
// every index is one of the block's index variables (a NameExpr whose decl is
// a LoopVarDecl of that ParallelStmt). (The parser makes an ElemExpr for every
// NAME[...]; sema turns the other cases into GlobalElemExpr / FragPickExpr.)
struct ElemExpr : Expr {
  std::string name;
  FragDecl *frag = nullptr;  // set by sema
  std::vector<ExprPtr> indices;
  // Set by sema: for each fragment dim d, the parallel dim it is indexed by.
  // Same rank: {0} or {0, 1}. A 1-D fragment in a 2-D block is a row vector
  // broadcast ({0}: v[i]) or a column vector broadcast ({1}: w[j]).
  std::vector<int> parallelDims;
  ElemExpr(SourceLoc l, std::string n) : Expr(ExprKind::Elem, std::move(l)), name(std::move(n)) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::Elem; }
};

// X[i0, ..., iN-1]: one element of global tensor argument X, read from global
// memory (created by sema from the parser's ElemExpr; see the header
// comment). Allowed anywhere a scalar expression is (inside and outside
// parallel blocks; not in grid / threads / cluster expressions or
// specialization constant defaults, where no tensor is visible or a constant
// is required). Invariants after sema: `tensor` is set, `indices.size() ==
// tensor->rank()`, every index has type Int (any int expression, not
// necessarily constant or uniform), `type` is
// elementScalarType(tensor->dtype) (Float for bf16/f16/f32, Int for i32/i64;
// an i64 element is narrowed to the int type), and `value` is never set.
// An index outside [0, dim size) makes the read give 0 (no fault).
struct GlobalElemExpr : Expr {
  std::string name;
  TensorArgDecl *tensor = nullptr;  // set by sema
  std::vector<ExprPtr> indices;     // outermost dim first
  GlobalElemExpr(SourceLoc l, std::string n) : Expr(ExprKind::GlobalElem, std::move(l)), name(std::move(n)) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::GlobalElem; }
};

// f[i] / f[i, j] outside parallel blocks: the value of one element of fragment
// f, the same for every thread (a uniform scalar). Created by sema from the
// parser's ElemExpr (see the header comment). Invariants after sema: `frag` is
// set and declared in the current role (or the kernel has no roles),
// `indices.size() == frag->rank()`, every index has type Int (any int
// expression; uniform, since it cannot involve parallel index variables), a
// constant index is within the extent of its dim, `type` is
// elementScalarType(frag->dtype), and `value` is never set. A run-time index
// out of range gives an unspecified value.
struct FragPickExpr : Expr {
  std::string name;
  FragDecl *frag = nullptr;      // set by sema
  std::vector<ExprPtr> indices;  // one per fragment dim
  FragPickExpr(SourceLoc l, std::string n) : Expr(ExprKind::FragPick, std::move(l)), name(std::move(n)) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::FragPick; }
};

// s[i] / s[i, j] outside parallel blocks, s a slot tile bound by an enclosing
// `get`: the value of one element, read from shared memory by every thread
// (a uniform scalar; no barrier: the get's wait made the slot visible to all
// of them, and each thread's read comes before its release). Created by sema
// from the parser's ElemExpr. Invariants after sema: `slot` is set and bound
// by a get, `indices.size() == slot->rank()`, every index has type Int, a
// constant index is within its dim, `type` is Float (slot tiles hold floats),
// and `value` is never set. A run-time index out of range reads an
// unspecified value.
struct SlotPickExpr : Expr {
  std::string name;
  SlotBindingDecl *slot = nullptr;  // set by sema
  std::vector<ExprPtr> indices;     // one per tile dim
  SlotPickExpr(SourceLoc l, std::string n) : Expr(ExprKind::SlotPick, std::move(l)), name(std::move(n)) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::SlotPick; }
};

// An implicit int -> float conversion inserted by sema (never by the parser).
// `type` is the target type (always Float today).
struct ConvertExpr : Expr {
  ExprPtr operand;
  ConvertExpr(SourceLoc l, ExprPtr x) : Expr(ExprKind::Convert, std::move(l)), operand(std::move(x)) {}
  static bool classof(const Expr *e) { return e->kind == ExprKind::Convert; }
};

//===----------------------------------------------------------------------===//
// Declarations (things a name can refer to)
//===----------------------------------------------------------------------===//

enum class DeclKind : uint8_t {
  Param,        // ParamDecl: specialization constant
  TensorArg,    // TensorArgDecl: global tensor argument
  ScalarArg,    // ScalarArgDecl: runtime scalar argument
  Dim,          // DimDecl: symbolic tensor dim (a runtime int)
  Let,          // LetDecl (also a Stmt)
  LoopVar,      // LoopVarDecl: index of for / pipeline / parallel
  Shared,       // SharedDecl (also a Stmt)
  Frag,         // FragDecl (also a Stmt)
  SlotBinding,  // SlotBindingDecl: a tile of a channel slot bound by put/get
  Channel,      // ChannelDecl (also a Stmt)
  Var,          // VarDecl (also a Stmt): mutable scalar
};

struct Decl {
  DeclKind declKind;
  std::string name;
  SourceLoc nameLoc;
  virtual ~Decl() = default;

 protected:
  Decl(DeclKind k, std::string n, SourceLoc l)
      : declKind(k), name(std::move(n)), nameLoc(std::move(l)) {}
};

// A specialization constant. Either a value constant (`BM = 64`: `value`) or
// a dtype constant (`DT = bf16`: isDType, `dtypeValue`). A dtype constant's
// default is a NameExpr spelling a dtype (bf16 f16 f32 i32 i64) or naming an
// earlier dtype constant; that NameExpr is left untyped (type Unknown, no
// value; its decl is the earlier dtype constant, or null). A -D override of
// a dtype constant must be a dtype name. A dtype constant can only be used
// where a dtype is written (tensor arguments, shared, frag, channel fields;
// not scalar arguments), never in an expression; a value constant can never
// be used as a dtype.
struct ParamDecl : Decl {
  int index = 0;            // position in KernelDecl::params
  ExprPtr defaultExpr;      // checked and folded by sema
  ConstValue value;         // set by sema: the default, or the -D override (type Unknown when isDType)
  bool overridden = false;  // value (or dtypeValue) came from a -D define
  bool isDType = false;     // set by sema: a dtype specialization constant
  DType dtypeValue = DType::F32;  // set by sema when isDType: the default, or the -D override
  ParamDecl(std::string n, SourceLoc l) : Decl(DeclKind::Param, std::move(n), std::move(l)) {}
  static bool classof(const Decl *d) { return d->declKind == DeclKind::Param; }
};

// A symbolic dim (`M` in `A: bf16[M, K]`); all tensors naming it share the size.
// Created by the parser, one per distinct name, in first-seen order.
struct DimDecl : Decl {
  int index = 0;  // position in KernelDecl::dims (== KernelInfo::dimSymbols order)
  DimDecl(std::string n, SourceLoc l) : Decl(DeclKind::Dim, std::move(n), std::move(l)) {}
  static bool classof(const Decl *d) { return d->declKind == DeclKind::Dim; }
};

// One dim of a tensor argument: symbolic (sym != null) or a literal size.
struct TensorDim {
  SourceLoc loc;
  DimDecl *sym = nullptr;
  int64_t literal = 0;  // when sym == null
  bool isSymbolic() const { return sym != nullptr; }
};

struct TensorArgDecl : Decl {
  int argIndex = 0;     // position in KernelDecl::args
  int tensorIndex = 0;  // position in KernelDecl::tensors
  std::string dtypeName;  // as written: a dtype or a dtype specialization constant
  SourceLoc dtypeLoc;
  DType dtype = DType::F32;  // set by sema from dtypeName
  ParamDecl *dtypeParam = nullptr;  // set by sema when dtypeName names a dtype specialization constant
  bool isOutput = false;     // declared `out`: the kernel may write it
  std::vector<TensorDim> dims;  // outermost first
  TensorArgDecl(std::string n, SourceLoc l) : Decl(DeclKind::TensorArg, std::move(n), std::move(l)) {}
  int rank() const { return int(dims.size()); }
  static bool classof(const Decl *d) { return d->declKind == DeclKind::TensorArg; }
};

struct ScalarArgDecl : Decl {
  int argIndex = 0;     // position in KernelDecl::args
  int scalarIndex = 0;  // position in KernelDecl::scalars
  std::string dtypeName;
  SourceLoc dtypeLoc;
  DType dtype = DType::F32;  // I32 or F32 (sema)
  ScalarArgDecl(std::string n, SourceLoc l) : Decl(DeclKind::ScalarArg, std::move(n), std::move(l)) {}
  ScalarType type() const { return dtype == DType::I32 ? ScalarType::Int : ScalarType::Float; }
  static bool classof(const Decl *d) { return d->declKind == DeclKind::ScalarArg; }
};

// Index variable of a for / pipeline (owner is that stmt, parallelDim = -1) or
// of a parallel block (owner is the ParallelStmt, parallelDim = its position).
struct LoopVarDecl : Decl {
  Stmt *owner = nullptr;
  int parallelDim = -1;
  LoopVarDecl(std::string n, SourceLoc l) : Decl(DeclKind::LoopVar, std::move(n), std::move(l)) {}
  static bool classof(const Decl *d) { return d->declKind == DeclKind::LoopVar; }
};

// Where a tile lives. Channel slot tiles (SlotBindingDecl) are Shared.
enum class MemSpace : uint8_t { Shared, Frag };

// Common view of every tile: SharedDecl, FragDecl and SlotBindingDecl.
struct TileDecl : Decl {
  std::string dtypeName;        // as written: a dtype or a dtype specialization constant
  SourceLoc dtypeLoc;
  DType dtype = DType::F32;     // set by sema
  ParamDecl *dtypeParam = nullptr;  // set by sema when dtypeName names a dtype specialization constant
  std::vector<int64_t> shape;   // set by sema (empty when the declaration had errors)
  MemSpace space() const { return declKind == DeclKind::Frag ? MemSpace::Frag : MemSpace::Shared; }
  int rank() const { return int(shape.size()); }
  static bool classof(const Decl *d) {
    return d->declKind == DeclKind::Shared || d->declKind == DeclKind::Frag ||
           d->declKind == DeclKind::SlotBinding;
  }

 protected:
  TileDecl(DeclKind k, std::string n, SourceLoc l) : Decl(k, std::move(n), std::move(l)) {}
};

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

enum class StmtKind : uint8_t {
  Let, Shared, Frag, Copy, Gemm, FragAssign, For, Pipeline, Parallel, ElemAssign, If,
  Role, Channel, Put, Get,
  Var,       // VarDecl: var NAME = init
  Assign,    // AssignStmt: NAME op= value on a var
  Prefetch,  // PrefetchStmt: prefetch SLICE
};

struct Stmt {
  StmtKind kind;
  SourceLoc loc;  // the statement's first token
  virtual ~Stmt() = default;

 protected:
  Stmt(StmtKind k, SourceLoc l) : kind(k), loc(std::move(l)) {}
};
using StmtPtr = std::unique_ptr<Stmt>;

struct Block {
  SourceLoc loc;  // the '{'
  std::vector<StmtPtr> stmts;
};

// let NAME = init   (immutable int or float; constant when init is)
struct LetDecl : Stmt, Decl {
  ExprPtr init;
  LetDecl(SourceLoc l, std::string n, SourceLoc nl)
      : Stmt(StmtKind::Let, std::move(l)), Decl(DeclKind::Let, std::move(n), std::move(nl)) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::Let; }
  static bool classof(const Decl *d) { return d->declKind == DeclKind::Let; }
};

// var NAME = init   (a mutable int or float scalar)
// Invariants after sema: `type` is init->type after the check, Int or Float
// (a bool init is an error; Unknown only after errors). Not allowed inside a
// parallel block, inside `put`, or at the top level of a kernel with roles.
// Every read is a NameExpr whose decl is this VarDecl (never constant); it is
// visible from its declaration to the end of its block, including nested
// loops, ifs, slices, loop bounds and parallel blocks (read-only there).
// Assignments are AssignStmts, possibly in nested blocks (loop bodies, if
// branches): the back end carries the value through those (loop-carried
// values, if results). A `let` initialised from a var keeps the value the
// var had at the let.
struct VarDecl : Stmt, Decl {
  ExprPtr init;
  ScalarType type = ScalarType::Unknown;  // set by sema
  bool outsideRoles = false;              // set by sema: in a role kernel's prologue (read-only in roles)
  VarDecl(SourceLoc l, std::string n, SourceLoc nl)
      : Stmt(StmtKind::Var, std::move(l)), Decl(DeclKind::Var, std::move(n), std::move(nl)) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::Var; }
  static bool classof(const Decl *d) { return d->declKind == DeclKind::Var; }
};

// shared NAME : DTYPE [extents]
struct SharedDecl : Stmt, TileDecl {
  std::vector<ExprPtr> extents;  // constant; folded into TileDecl::shape
  SharedDecl(SourceLoc l, std::string n, SourceLoc nl)
      : Stmt(StmtKind::Shared, std::move(l)), TileDecl(DeclKind::Shared, std::move(n), std::move(nl)) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::Shared; }
  static bool classof(const Decl *d) { return d->declKind == DeclKind::Shared; }
};

enum class RedOp : uint8_t { Add, Max, Min };
const char *redOpStr(RedOp op);  // "+", "max", "min"

// Right-hand side of a fragment initialisation / assignment.
// InvUnitLower: `inv_unit_lower(l)` is the inverse of (I + strictly_lower(l))
// (a unit lower-triangular matrix; the diagonal and upper part of `l` are
// ignored). Invariants after sema: `source` and the target are 2-D, square,
// f32 and of the same shape; the source may be the target itself.
// `inv_unit_lower(l, blocks = B)` inverts only the B × B diagonal blocks of
// (I + strictly_lower(l)) and is zero off them (B divides the extent).
// `inv_unit_lower(l, operands = f16)` is the whole inverse of a 64 × 64
// fragment with its off-diagonal blocks merged by tensor-core products of f16
// operands (never with `blocks`).
struct FragInit {
  enum class Kind : uint8_t { None, Fill, Reduce, Scan, Cast, InvUnitLower };
  Kind kind = Kind::None;  // None: a frag declaration without '='
  SourceLoc loc;           // the fill expression, or the reduce/scan/cast/inv_unit_lower keyword
  ExprPtr fill;            // Fill: the scalar (converted to the element type)
  RedOp op = RedOp::Add;   // Reduce, Scan
  std::string sourceName;  // Reduce, Scan, Cast, InvUnitLower: the source fragment
  SourceLoc sourceLoc;
  FragDecl *source = nullptr;  // set by sema
  int dim = -1;            // Reduce: the reduced dim; Scan: the scanned dim (sema fills the default)
  SourceLoc dimLoc;
  bool dimGiven = false;   // `dim =` written in the source
  ExprPtr blocksExpr;       // InvUnitLower: `blocks = EXPR` as written (a constant int), or null
  SourceLoc blocksLoc;
  int64_t blocks = 0;       // set by sema: the diagonal block size, 0 for the whole inverse
  bool f16Operands = false; // InvUnitLower: `operands = f16` was written
  SourceLoc operandsLoc;
};

// frag NAME : DTYPE [extents] [= init]
struct FragDecl : Stmt, TileDecl {
  std::vector<ExprPtr> extents;  // constant; folded into TileDecl::shape
  FragInit init;
  RoleStmt *role = nullptr;      // the role it is declared in (null: kernel without roles)
  SlotStmt *put = nullptr;       // the put it is declared in (staging for the slot), if any
  FragDecl(SourceLoc l, std::string n, SourceLoc nl)
      : Stmt(StmtKind::Frag, std::move(l)), TileDecl(DeclKind::Frag, std::move(n), std::move(nl)) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::Frag; }
  static bool classof(const Decl *d) { return d->declKind == DeclKind::Frag; }
};

// One slice component of a global-tensor reference: `start :+ extent` or a
// single index `start` (that dim is dropped from the tile shape).
// `start :+ extent until limit` bounds the box: along this dim, tensor indices
// >= limit (absolute indices, like start; not relative to start) read as 0 and
// are not written, in addition to the tensor's own bound. `limit` is an int
// expression (not necessarily constant; any copy, either direction, on the
// global side). Only a range slice (with an extent) can have a limit (the
// parser enforces it).
struct Slice {
  SourceLoc loc;
  ExprPtr start;             // int
  ExprPtr extent;            // null for a single index
  ExprPtr limit;             // int; null unless `until limit` was written
  int64_t extentValue = 1;   // folded extent (1 for a single index)
  bool isIndex() const { return extent == nullptr; }
};

// An operand of copy: a whole tile (`a`) or a slice of a global tensor (`A[...]`).
struct TileRef {
  SourceLoc loc;  // the name
  std::string name;
  bool sliced = false;
  std::vector<Slice> slices;
  // Written NAME^T (after the name, or after the slice's ']'): the fragment
  // operand of a copy is transposed (sema rejects it on any other operand).
  bool transposed = false;
  SourceLoc transposeLoc;  // the '^T'
  Decl *decl = nullptr;  // set by sema: TensorArgDecl when sliced, else a TileDecl
  // Set by sema for slices: the tile shape (extents of the non-dropped dims, in
  // order) and the tensor dims indexed by a single index.
  std::vector<int64_t> sliceShape;
  std::vector<int> droppedDims;
  // A shared tile's sub-tile, NAME[r0 :+ nr, c0 :+ nc] (constant starts and
  // extents; the other operand a fragment): set by sema, with its box.
  bool subTile = false;
  std::array<int64_t, 4> box{};  // r0, c0, nr, nc
  TensorArgDecl *tensor() const;  // null unless a global tensor's slice
  TileDecl *tile() const;         // null for a global tensor's slice
  // The shape the copy moves: the slice's, the sub-tile's or the tile's.
  std::vector<int64_t> shape() const;
};

enum class CopyKind : uint8_t {
  GlobalToShared, GlobalToFrag, SharedToFrag, FragToShared, FragToGlobal, SharedToGlobal,
  SharedToShared,  // only into a put's slot tiles
};
const char *copyKindStr(CopyKind k);

// copy SRC -> DST. Conversions happen when a fragment is involved (the dtypes
// may differ); global<->shared copies have equal dtypes. `copy f^T -> d` /
// `copy s -> f^T` transpose: d[j, i] = f[i, j] / f[i, j] = s[j, i].
struct CopyStmt : Stmt {
  TileRef src, dst;
  CopyKind copyKind = CopyKind::GlobalToShared;  // set by sema
  // copy(+) f -> G[...]: adds the fragment into the slice (f32, one atomic
  // add an element) instead of writing it.
  bool add = false;
  SourceLoc opLoc;  // the `(+)`'s position
  bool transposed() const { return src.transposed || dst.transposed; }
  CopyStmt(SourceLoc l) : Stmt(StmtKind::Copy, std::move(l)) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::Copy; }
};

// prefetch G[...]: a hint that brings a global tensor's slice (1-D or 2-D
// after the single-index dims) into the L2 cache; the role's threads share
// its rows. Nothing waits for it and nothing reads it into a tile.
struct PrefetchStmt : Stmt {
  TileRef src;
  PrefetchStmt(SourceLoc l) : Stmt(StmtKind::Prefetch, std::move(l)) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::Prefetch; }
};

struct GemmOperand {
  SourceLoc loc;
  std::string name;
  bool transposed = false;  // written NAME^T (after the name, or after the slice's ']')
  // NAME[r0 :+ nr, c0 :+ nc]: a sub-tile of a shared tile (two range slices,
  // constant starts and extents), the whole tile when empty.
  std::vector<Slice> slices;
  std::array<int64_t, 4> box{};  // set by sema when sliced: r0, c0, nr, nc
  TileDecl *decl = nullptr; // set by sema
  bool sliced() const { return !slices.empty(); }
  // The operand's shape before ^T: the box's extents, or the tile's shape.
  std::vector<int64_t> shape() const;
};

// C = gemm(A, B) or C += gemm(A, B):  C (+)= op(A) · op(B)
struct GemmStmt : Stmt {
  std::string target;
  SourceLoc gemmLoc;       // the `gemm` keyword (shape errors point here)
  FragDecl *c = nullptr;   // set by sema: an f32 fragment
  bool accumulate = false; // +=
  GemmOperand a, b;        // a: shared tile or fragment; b: shared tile
  int64_t m = 0, n = 0, k = 0;  // set by sema: op(A) is [m,k], op(B) [k,n], C [m,n]
  GemmStmt(SourceLoc l) : Stmt(StmtKind::Gemm, std::move(l)) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::Gemm; }
};

// NAME = fill | reduce(...) | scan(...) | cast(...) | inv_unit_lower(...)
// on an existing fragment (after sema `frag` is always set; see AssignStmt).
struct FragAssignStmt : Stmt {
  std::string target;
  FragDecl *frag = nullptr;  // set by sema
  FragInit init;
  SourceLoc opLoc;           // the '='
  FragAssignStmt(SourceLoc l) : Stmt(StmtKind::FragAssign, std::move(l)) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::FragAssign; }
};

// for VAR in lo .. hi [unroll] { body }   (half-open, step 1)
struct ForStmt : Stmt {
  std::unique_ptr<LoopVarDecl> var;
  ExprPtr lo, hi;       // ints; constant (value set) when `unroll`
  bool unroll = false;
  Block body;
  ForStmt(SourceLoc l) : Stmt(StmtKind::For, std::move(l)) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::For; }
};

// pipeline VAR in lo .. hi stages(S) { body }
struct PipelineStmt : Stmt {
  std::unique_ptr<LoopVarDecl> var;
  ExprPtr lo, hi;
  ExprPtr stages;
  int64_t numStages = 0;  // set by sema (>= 1)
  Block body;
  PipelineStmt(SourceLoc l) : Stmt(StmtKind::Pipeline, std::move(l)) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::Pipeline; }
};

// for (i, j) in parallel(E0, E1) { lets and element assignments }
struct ParallelStmt : Stmt {
  std::vector<std::unique_ptr<LoopVarDecl>> vars;  // one per dim
  std::vector<ExprPtr> extents;
  std::vector<int64_t> shape;  // set by sema
  Block body;
  ParallelStmt(SourceLoc l) : Stmt(StmtKind::Parallel, std::move(l)) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::Parallel; }
};

enum class AssignOp : uint8_t { Set, Add, Sub, Mul };  // = += -= *=
const char *assignOpStr(AssignOp op);

// NAME op= value on a var (VarDecl), op one of = += -= *=. The parser makes an
// AssignStmt for `NAME += / -= / *= expr` (without gemm); `NAME = expr` is
// parsed as a FragAssignStmt and becomes an AssignStmt in sema when NAME is a
// var. Invariants after sema: `var` is set; `value` has type var->type
// (an int value assigned to a float var is wrapped in a ConvertExpr; a float
// value for an int var, or a bool, is an error); never inside a parallel
// block (the body runs once per element) and never inside `put`. `x op= v`
// means x = x op v, computed in x's type.
struct AssignStmt : Stmt {
  std::string target;
  VarDecl *var = nullptr;  // set by sema
  AssignOp op = AssignOp::Set;
  SourceLoc opLoc;  // the operator token
  ExprPtr value;
  AssignStmt(SourceLoc l) : Stmt(StmtKind::Assign, std::move(l)) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::Assign; }
};

// NAME[i, j] op= value  inside a parallel block; the indices are the block's
// index variables in order and the fragment's shape is the block's shape.
struct ElemAssignStmt : Stmt {
  std::string target;
  FragDecl *frag = nullptr;  // set by sema
  std::vector<ExprPtr> indices;
  AssignOp op = AssignOp::Set;
  SourceLoc opLoc;
  ExprPtr value;  // converted to the fragment's element type
  // Set by sema: `v[i] += e` in a 2-D parallel block, v a 1-D f32 fragment
  // indexed by the block's first variable: v[i] gains the sum of e over the
  // block's second variable (a row sum of e, no 2-D fragment formed).
  bool rowSum = false;
  ElemAssignStmt(SourceLoc l) : Stmt(StmtKind::ElemAssign, std::move(l)) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::ElemAssign; }
};

// if cond { } [else { }]; `else if` is an else block holding one IfStmt.
// When cond->value is set (the condition folds, e.g. `FLAG` or `BM > 64`)
// the back end may emit only the taken block; both blocks are checked.
struct IfStmt : Stmt {
  ExprPtr cond;  // bool
  Block thenBlock;
  std::unique_ptr<Block> elseBlock;  // null when absent
  IfStmt(SourceLoc l) : Stmt(StmtKind::If, std::move(l)) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::If; }
};

// role NAME: warpgroup(s) FIRST[..LAST] [, regs R] [, turns] [, partial_waits[(COND)]]
//   [, fresh_addresses(N)] { body }
// (top level only)
struct RoleStmt : Stmt {
  std::string name;
  SourceLoc nameLoc;
  int64_t wgFirst = 0, wgLast = 0;  // inclusive
  SourceLoc wgFirstLoc, wgLastLoc;
  int64_t regs = 0;                 // 0: not given (compiler's choice)
  SourceLoc regsLoc;
  // `turns`: the role's warpgroups issue each tensor-core product in turn
  // (warpgroup 0's first, then 1's, ...), so that one's products run while
  // the others compute on CUDA cores; the compiler derives the hand-offs.
  bool turns = false;
  // `partial_waits` (or `partial_waits(COND)`, COND a constant expression):
  // in this role each product is waited for just before the first use of its
  // result, and later products are issued while earlier ones are in flight
  // (the compiler option partialWaits, for one role). partialWaitsExpr: the
  // condition, folded by sema; null for the bare flag.
  bool partialWaits = false;
  ExprPtr partialWaitsExpr;
  // `fresh_addresses(N)`: in this role a shared <-> fragment copy of a
  // fragment of N or more registers per thread computes its shared-memory
  // addresses in the copy (the compiler option freshAddressRegs, for one
  // role; the smaller applies). 0: not given. freshAddressesExpr: N, folded
  // by sema.
  int64_t freshAddresses = 0;
  ExprPtr freshAddressesExpr;
  // Non-literal warpgroup indices and regs (constant expressions of the
  // specialization constants, `2 .. 1 + BV / 64`): folded into the ints
  // above by sema; null for a literal.
  ExprPtr wgFirstExpr, wgLastExpr, regsExpr;
  Block body;
  int index = 0;  // set by sema: position in KernelDecl::roles
  // An empty range `F .. F - 1` (a specialization without this role): sema
  // checks the body as in an untaken branch, IRGen builds nothing.
  bool absent = false;
  RoleStmt(SourceLoc l) : Stmt(StmtKind::Role, std::move(l)) {}
  int64_t numWarpgroups() const { return wgLast - wgFirst + 1; }
  static bool classof(const Stmt *s) { return s->kind == StmtKind::Role; }
};

// One tile of a channel slot: NAME : DTYPE [extents]  (shared memory)
struct ChannelField {
  SourceLoc loc;
  std::string name;
  std::string dtypeName;         // as written: a dtype or a dtype specialization constant
  SourceLoc dtypeLoc;
  DType dtype = DType::F32;      // set by sema
  ParamDecl *dtypeParam = nullptr;  // set by sema when dtypeName names a dtype specialization constant
  std::vector<ExprPtr> extents;
  std::vector<int64_t> shape;    // set by sema
};

// channel NAME : { fields } depth(D) [over(OTHER)]   (top level only, outside roles)
struct ChannelDecl : Stmt, Decl {
  std::vector<ChannelField> fields;
  ExprPtr depth;
  int64_t depthValue = 0;  // set by sema (>= 1)
  // `over(OTHER)`: the slot shares its bytes with channel OTHER's (declared
  // before it); set by sema: `over`, and on OTHER `under` (this channel).
  std::string overName;
  SourceLoc overLoc;
  ChannelDecl *over = nullptr, *under = nullptr;
  // Set by sema: the one producer role (all puts), the consumer roles (each
  // with gets; first-use order), and the put / get statements in source order.
  RoleStmt *producer = nullptr;
  std::vector<RoleStmt *> consumers;
  std::vector<SlotStmt *> puts, gets;
  int index = 0;  // position in KernelDecl::channels
  ChannelDecl(SourceLoc l, std::string n, SourceLoc nl)
      : Stmt(StmtKind::Channel, std::move(l)), Decl(DeclKind::Channel, std::move(n), std::move(nl)) {}
  static bool classof(const Stmt *s) { return s->kind == StmtKind::Channel; }
  static bool classof(const Decl *d) { return d->declKind == DeclKind::Channel; }
};

// A name bound by put/get to tile `field` of the current slot (shared memory).
struct SlotBindingDecl : TileDecl {
  SlotStmt *owner = nullptr;      // the put / get
  ChannelDecl *channel = nullptr; // set by sema
  int field = 0;                  // position in channel->fields (== binding position)
  SlotBindingDecl(std::string n, SourceLoc l) : TileDecl(DeclKind::SlotBinding, std::move(n), std::move(l)) {}
  static bool classof(const Decl *d) { return d->declKind == DeclKind::SlotBinding; }
};

// put CH -> (names) { copies }   (kind Put)
// get CH -> (names) { body }     (kind Get)
struct SlotStmt : Stmt {
  std::string channelName;
  SourceLoc channelLoc;
  ChannelDecl *channel = nullptr;  // set by sema
  std::vector<std::unique_ptr<SlotBindingDecl>> bindings;  // in slot-field order
  Block body;
  RoleStmt *role = nullptr;        // set by sema: the enclosing role
  SlotStmt *outer = nullptr;       // set by sema: the enclosing put / get, if any
  bool dead = false;               // set by sema: in a branch this specialization does not take
  SlotStmt(StmtKind k, SourceLoc l) : Stmt(k, std::move(l)) {}
  bool isPut() const { return kind == StmtKind::Put; }
  static bool classof(const Stmt *s) { return s->kind == StmtKind::Put || s->kind == StmtKind::Get; }
};

//===----------------------------------------------------------------------===//
// Kernels and modules
//===----------------------------------------------------------------------===//

struct KernelDecl {
  SourceLoc loc;  // the `kernel` keyword
  std::string name;
  SourceLoc nameLoc;
  std::vector<std::unique_ptr<ParamDecl>> params;  // specialization constants, in order
  std::vector<std::unique_ptr<Decl>> args;         // TensorArgDecl / ScalarArgDecl, in order
  std::vector<TensorArgDecl *> tensors;            // the tensor args, in order
  std::vector<ScalarArgDecl *> scalars;            // the scalar args, in order
  std::vector<std::unique_ptr<DimDecl>> dims;      // dim symbols, first-seen order
  std::vector<ExprPtr> grid;                       // 1..3 int exprs over dims and params
  ExprPtr threads;
  std::vector<ExprPtr> cluster;                    // 0..3 constant exprs
  SourceLoc clusterLoc;
  ExprPtr occupancy;                               // optional constant: blocks resident per SM
  SourceLoc occupancyLoc;
  // follows(A, B): the kernel may start while the kernel before it in the
  // stream finishes (programmatic dependent launch); A and B are what that
  // kernel writes. Empty list: it writes nothing this kernel reads.
  bool hasFollows = false;
  SourceLoc followsLoc;
  std::vector<std::pair<std::string, SourceLoc>> follows;
  Block body;

  // Set by sema.
  int64_t numThreads = 0;                    // multiple of 128, <= 1024
  int64_t numWarpgroups = 0;                 // numThreads / 128
  std::array<int64_t, 3> clusterDims = {1, 1, 1};
  int64_t minBlocks = 1;                     // occupancy(N): N, else 1
  std::vector<int> followsTensors;           // follows(...): the tensors' indices in `tensors`
  std::array<std::string, 3> gridStrings = {"1", "1", "1"};  // gridExprString of each grid expr
  std::vector<RoleStmt *> roles;             // top-level roles, in order (empty: no warp specialization)
  std::vector<ChannelDecl *> channels;       // in order

  const ParamDecl *findParam(const std::string &n) const;
};

struct Module {
  std::string filename;
  std::vector<std::unique_ptr<KernelDecl>> kernels;
  const KernelDecl *findKernel(const std::string &n) const;
};

//===----------------------------------------------------------------------===//
// Casting helpers (usable on Expr*, Stmt* and Decl*)
//===----------------------------------------------------------------------===//

template <typename T, typename B>
bool is(const B *p) {
  return p && T::classof(p);
}
template <typename T, typename B>
T *as(B *p) {
  return is<T>(p) ? static_cast<T *>(p) : nullptr;
}
template <typename T, typename B>
const T *as(const B *p) {
  return is<T>(p) ? static_cast<const T *>(p) : nullptr;
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

// Indented debug dump of the whole tree, with sema annotations where present.
std::string dumpAst(const Module &m);
// Source-like, fully parenthesised rendering of an expression (debugging).
std::string exprString(const Expr &e);
// A grid expression after sema, as the runtime's evalGridExpr reads it: dim
// symbols, integer literals, + - * / %, unary -, parentheses, cdiv/min/max;
// constants (specialization constants included) are folded, e.g. "cdiv(N, 256)",
// and a `c ? a : b` with a constant condition prints as its taken branch
// ("2 * (NCU - 1)" for `2 * (VARLEN == 1 ? NCU - 1 : B)` with VARLEN = 1).
std::string gridExprString(const Expr &e);

}  // namespace qla::fe
