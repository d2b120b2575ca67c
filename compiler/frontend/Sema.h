// Private to the front end: the semantic checker behind checkQla. Statements
// and kernels are in Sema.cpp, expressions and constant folding in
// SemaExpr.cpp.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "qla/frontend/AST.h"

namespace qla::fe {

class Sema {
 public:
  Sema(Module &m, const std::map<std::string, std::string> &defines, std::vector<Diagnostic> &diags)
      : module_(m), defines_(defines), diags_(diags) {}
  bool run();

 private:
  // --- diagnostics and scopes (Sema.cpp) -----------------------------------
  void error(const SourceLoc &loc, const std::string &msg);
  Decl *lookup(const std::string &name) const;
  void declare(Decl *d);
  static std::string describe(const Decl *d);  // "a shared tile", "a global tensor", ...
  struct ScopeGuard {
    Sema &s;
    explicit ScopeGuard(Sema &ss) : s(ss) { s.scopes_.emplace_back(); }
    ~ScopeGuard() { s.scopes_.pop_back(); }
  };

  // Where the statement being checked sits.
  struct Ctx {
    bool topLevel = false;             // directly in the kernel body
    RoleStmt *role = nullptr;          // enclosing role
    SlotStmt *slot = nullptr;          // innermost enclosing put / get
    ParallelStmt *parallel = nullptr;  // enclosing parallel block
    PipelineStmt *pipeline = nullptr;  // enclosing pipeline
    bool prologue = false;             // in a top-level for/if of a kernel with roles
    // In a branch of a constant condition that is not taken, or in an absent
    // role: checked, but its puts and gets make no role a channel's producer
    // or consumer (IRGen builds none of it).
    bool dead = false;
  };
  struct CtxGuard {
    Sema &s;
    Ctx saved;
    explicit CtxGuard(Sema &ss) : s(ss), saved(ss.ctx_) { s.ctx_.topLevel = false; }
    ~CtxGuard() { s.ctx_ = saved; }
  };

  // --- kernels (Sema.cpp) ------------------------------------------------------
  bool collectDefines();
  void checkKernel(KernelDecl &k);
  void checkParams(KernelDecl &k);
  void checkArgs(KernelDecl &k);
  void checkLaunch(KernelDecl &k);
  void checkGridExpr(const Expr &e);
  bool parseDefineValue(const std::string &text, ScalarType type, ConstValue &out);
  // Resolves a dtype as written (a dtype name or a dtype specialization
  // constant) into `dtype` / `param`; reports and returns false otherwise.
  bool resolveDType(const std::string &name, const SourceLoc &loc, DType &dtype, ParamDecl *&param);

  // --- statements (Sema.cpp) ---------------------------------------------------
  void checkBlock(Block &b);
  void checkStmt(StmtPtr &s);  // may replace s (FragAssignStmt -> AssignStmt)
  void checkStmtPlacement(Stmt &s);
  void checkLet(LetDecl &s);
  void checkVar(VarDecl &s);
  void checkAssign(AssignStmt &s);
  // Resolves the dtype and folds the extents; `dtypeOk` says whether the
  // dtype resolved. Returns false on any error.
  bool checkTileType(const std::string &dtypeName, const SourceLoc &dtypeLoc, DType &dtype, ParamDecl *&dtypeParam,
                     bool &dtypeOk, std::vector<ExprPtr> &extents, std::vector<int64_t> &shape, const char *what);
  void checkShared(SharedDecl &s);
  void checkFrag(FragDecl &s);
  void checkFragInit(FragDecl &target, FragInit &fi);
  FragDecl *resolveFrag(const std::string &name, const SourceLoc &loc, const std::string &what);
  void checkCopy(CopyStmt &s);
  void checkPrefetch(PrefetchStmt &s);
  enum class Side { Global, Shared, Frag, Bad };
  Side checkRef(TileRef &r);
  void checkGemm(GemmStmt &s);
  TileDecl *resolveOperand(GemmOperand &o, const char *which);
  bool constantBox(std::vector<Slice> &slices, const std::vector<int64_t> &shape, const std::string &what,
                   int64_t align, const std::function<std::string(int64_t, int64_t, int)> &outside,
                   std::array<int64_t, 4> &box);
  void checkFragAssign(FragAssignStmt &s);
  void checkLoopBounds(ExprPtr &lo, ExprPtr &hi, bool needConst);
  void checkFor(ForStmt &s);
  void checkPipeline(PipelineStmt &s);
  void checkParallel(ParallelStmt &s);
  void checkElemAssign(ElemAssignStmt &s);
  void checkIf(IfStmt &s);
  void checkRole(RoleStmt &s);
  void checkChannel(ChannelDecl &s);
  void checkSlot(SlotStmt &s);
  void checkChannelUse(KernelDecl &k);
  void checkOver(ChannelDecl &x, ChannelDecl &y);
  // Converts `value` to the element type of `frag` (int -> float), or reports
  // why it cannot be stored there.
  void convertForStore(ExprPtr &value, const FragDecl &frag);

  // --- expressions (SemaExpr.cpp) ----------------------------------------------
  void checkExpr(ExprPtr &e);
  void checkName(NameExpr &e);
  void checkUnary(UnaryExpr &e);
  void checkBinary(BinaryExpr &e);
  void checkSelect(SelectExpr &e);
  void checkCall(CallExpr &e);
  void checkElem(ElemExpr &e);
  void checkGlobalElem(GlobalElemExpr &e);
  void checkFragPick(FragPickExpr &e);
  void checkSlotPick(SlotPickExpr &e);
  // Checks `e` and requires an int; reports "WHAT must be an int".
  void checkIntExpr(ExprPtr &e, const std::string &what);
  // Checks `e` and requires a compile-time int constant (positive if asked).
  std::optional<int64_t> constInt(ExprPtr &e, const std::string &what, bool positive = false);
  void requireConst(const Expr &e, const std::string &what);
  static void convertTo(ExprPtr &e, ScalarType t);  // wraps int in ConvertExpr when t is Float
  void foldFloat(Expr &e, double v, const SourceLoc &loc);
  // The parallel index dim a fragment index refers to, or -1.
  int parallelDimOf(const Expr &index) const;
  // The constant c of a slot tile's index `v + c` / `c + v` (0 for `v`),
  // v the parallel block's variable of dim `dim`; nullopt for anything else.
  std::optional<int64_t> parallelOffsetOf(const Expr &index, int dim) const;

  Module &module_;
  const std::map<std::string, std::string> &defines_;
  std::vector<Diagnostic> &diags_;
  size_t errors_ = 0;

  std::vector<std::unordered_map<std::string, Decl *>> scopes_;
  std::map<const KernelDecl *, std::map<std::string, std::string>> overrides_;
  std::unordered_set<const void *> badDtype_;  // decls whose dtype name was invalid
  KernelDecl *kernel_ = nullptr;
  bool roleKernel_ = false;
  std::vector<FragDecl *> roleFrags_;  // fragments declared in roles, to name their role when out of scope
  Ctx ctx_;
};

std::string shapeString(const std::vector<int64_t> &shape);  // "[64, 128]"

}  // namespace qla::fe
