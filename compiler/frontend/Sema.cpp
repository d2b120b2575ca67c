// Sema for modules and kernels: diagnostics and scopes, -D overrides and
// specialization constants, arguments, launch shape, channel use, and the
// checkQla entry point. Statements are in SemaStmt.cpp, expressions in
// SemaExpr.cpp.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "Sema.h"
#include "qla/frontend/Frontend.h"

namespace qla::fe {

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void Sema::error(const SourceLoc &loc, const std::string &msg) {
  diags_.push_back(Diagnostic{loc, msg});
  ++errors_;
}

Decl *Sema::lookup(const std::string &name) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto f = it->find(name);
    if (f != it->end()) return f->second;
  }
  return nullptr;
}

// Names may not shadow: one name means one thing anywhere in its scope.
void Sema::declare(Decl *d) {
  if (Decl *prev = lookup(d->name)) {
    error(d->nameLoc, "redefinition of '" + d->name + "' (previously declared at line " +
                          std::to_string(prev->nameLoc.line) + ", column " + std::to_string(prev->nameLoc.col) + ")");
    return;
  }
  scopes_.back()[d->name] = d;
}

std::string Sema::describe(const Decl *d) {
  switch (d->declKind) {
  case DeclKind::Param: return "a specialization constant";
  case DeclKind::TensorArg: return "a global tensor";
  case DeclKind::ScalarArg: return "a scalar argument";
  case DeclKind::Dim: return "a dim symbol";
  case DeclKind::Let: return "a let value";
  case DeclKind::LoopVar: return "a loop variable";
  case DeclKind::Shared: return "a shared tile";
  case DeclKind::Frag: return "a fragment";
  case DeclKind::SlotBinding: return "a channel slot tile (shared)";
  case DeclKind::Channel: return "a channel";
  case DeclKind::Var: return "a var";
  }
  return "something else";
}

//===----------------------------------------------------------------------===//
// Module, kernels, specialization constants
//===----------------------------------------------------------------------===//

bool Sema::run() {
  for (size_t i = 0; i < module_.kernels.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (module_.kernels[i]->name == module_.kernels[j]->name)
        error(module_.kernels[i]->nameLoc, "redefinition of kernel '" + module_.kernels[i]->name + "'");
  collectDefines();
  for (auto &k : module_.kernels) checkKernel(*k);
  return errors_ == 0;
}

// Sorts the -D values per kernel: NAME applies to every kernel declaring NAME,
// KERNEL.NAME to one kernel (and wins over NAME).
bool Sema::collectDefines() {
  SourceLoc fileLoc{module_.filename, 1, 1};
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto &[key, value] : defines_) {
      size_t dot = key.find('.');
      if ((dot != std::string::npos) != (pass == 1)) continue;
      if (dot == std::string::npos) {
        bool found = false;
        for (auto &k : module_.kernels)
          if (k->findParam(key)) {
            overrides_[k.get()][key] = value;
            found = true;
          }
        if (found) continue;
        if (module_.kernels.size() == 1)
          error(module_.kernels[0]->nameLoc,
                "no specialization constant '" + key + "' in kernel '" + module_.kernels[0]->name + "'");
        else
          error(fileLoc, "no specialization constant '" + key + "' in any kernel of this file");
        continue;
      }
      std::string kname = key.substr(0, dot), pname = key.substr(dot + 1);
      KernelDecl *k = nullptr;
      for (auto &kk : module_.kernels)
        if (kk->name == kname) k = kk.get();
      if (!k)
        error(fileLoc, "no kernel '" + kname + "' for the define '" + key + "'");
      else if (!k->findParam(pname))
        error(k->nameLoc, "no specialization constant '" + pname + "' in kernel '" + kname + "'");
      else
        overrides_[k][pname] = value;
    }
  }
  return true;
}

bool Sema::parseDefineValue(const std::string &raw, ScalarType type, ConstValue &out) {
  size_t b = raw.find_first_not_of(" \t"), e = raw.find_last_not_of(" \t");
  if (b == std::string::npos) return false;
  std::string s = raw.substr(b, e - b + 1);
  switch (type) {
  case ScalarType::Bool:
    if (s != "true" && s != "false") return false;
    out = ConstValue::ofBool(s == "true");
    return true;
  case ScalarType::Int: {
    size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
    if (i == s.size()) return false;
    for (size_t k = i; k < s.size(); ++k)
      if (s[k] < '0' || s[k] > '9') return false;
    errno = 0;
    long long v = std::strtoll(s.c_str(), nullptr, 10);
    if (errno == ERANGE) return false;
    out = ConstValue::ofInt(v);
    return true;
  }
  case ScalarType::Float: {
    char *end = nullptr;
    errno = 0;
    double v = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v)) return false;
    // strtod also takes "0x1p3" and "infinity"; only decimal forms are floats here.
    if (s.find_first_not_of("+-0123456789.eE") != std::string::npos) return false;
    out = ConstValue::ofFloat(v);
    return true;
  }
  case ScalarType::Unknown: break;
  }
  return false;
}

namespace {
std::string trimmed(const std::string &raw) {
  size_t b = raw.find_first_not_of(" \t"), e = raw.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : raw.substr(b, e - b + 1);
}
}  // namespace

void Sema::checkParams(KernelDecl &k) {
  const auto &ov = overrides_[&k];
  for (auto &p : k.params) {
    p->value = ConstValue();
    p->overridden = false;
    p->isDType = false;
    p->dtypeValue = DType::F32;
    // A dtype constant: the default names a dtype (or an earlier dtype constant).
    if (auto *n = as<NameExpr>(p->defaultExpr.get())) {
      n->type = ScalarType::Unknown;
      n->value.reset();
      n->decl = nullptr;
      DType dt;
      auto *prev = as<ParamDecl>(lookup(n->name));
      if (dtypeFromName(n->name, dt)) {
        p->isDType = true;
        p->dtypeValue = dt;
      } else if (prev && prev->isDType) {
        p->isDType = true;
        p->dtypeValue = prev->dtypeValue;
        n->decl = prev;
      }
    }
    if (p->isDType) {
      auto it = ov.find(p->name);
      if (it != ov.end()) {
        DType dt;
        if (dtypeFromName(trimmed(it->second), dt)) {
          p->dtypeValue = dt;
          p->overridden = true;
        } else {
          error(p->nameLoc, "specialization constant '" + p->name + "' is a dtype; '" + it->second +
                                "' is not one of bf16, f16, f32, i32, i64");
        }
      }
      declare(p.get());
      continue;
    }
    checkExpr(p->defaultExpr);
    if (p->defaultExpr->type != ScalarType::Unknown) {
      if (!p->defaultExpr->value)
        requireConst(*p->defaultExpr, "the default of specialization constant '" + p->name + "'");
      else
        p->value = *p->defaultExpr->value;
    }
    auto it = ov.find(p->name);
    if (it != ov.end() && p->value.type != ScalarType::Unknown) {
      ConstValue v;
      if (parseDefineValue(it->second, p->value.type, v)) {
        p->value = v;
        p->overridden = true;
      } else {
        error(p->nameLoc, "invalid value '" + it->second + "' for specialization constant '" + p->name +
                              "' (expected " + (p->value.type == ScalarType::Int     ? "an int"
                                                : p->value.type == ScalarType::Float ? "a float"
                                                                                     : "true or false") +
                              ")");
      }
    }
    declare(p.get());  // later defaults may refer to it
  }
}

void Sema::checkArgs(KernelDecl &k) {
  for (auto &a : k.args) {
    declare(a.get());
    if (auto *t = as<TensorArgDecl>(a.get())) {
      if (!resolveDType(t->dtypeName, t->dtypeLoc, t->dtype, t->dtypeParam)) badDtype_.insert(static_cast<Decl *>(t));
      for (auto &d : t->dims) {
        if (d.sym && d.sym->nameLoc.line == d.loc.line && d.sym->nameLoc.col == d.loc.col) declare(d.sym);
        if (!d.sym && d.literal <= 0) error(d.loc, "tensor dim must be positive, got " + std::to_string(d.literal));
      }
    } else if (auto *s = as<ScalarArgDecl>(a.get())) {
      if (!dtypeFromName(s->dtypeName, s->dtype) || (s->dtype != DType::I32 && s->dtype != DType::F32)) {
        auto *p = as<ParamDecl>(lookup(s->dtypeName));
        error(s->dtypeLoc, "scalar argument '" + s->name + "' must be i32 or f32, got '" + s->dtypeName + "'" +
                               (p && p->isDType ? " (scalar arguments cannot use a dtype specialization constant)" : ""));
        badDtype_.insert(static_cast<Decl *>(s));
      }
    }
  }
}

bool Sema::resolveDType(const std::string &name, const SourceLoc &loc, DType &dtype, ParamDecl *&param) {
  param = nullptr;
  if (dtypeFromName(name, dtype)) return true;
  if (auto *p = as<ParamDecl>(lookup(name))) {
    if (p->isDType) {
      dtype = p->dtypeValue;
      param = p;
      return true;
    }
    if (p->value.type != ScalarType::Unknown)  // else its default already failed
      error(loc, "specialization constant '" + name + "' is " +
                     (p->value.type == ScalarType::Int ? "an int" : p->value.type == ScalarType::Float ? "a float" : "a bool") +
                     ", not a dtype");
    return false;
  }
  error(loc, "unknown dtype '" + name + "' (expected bf16, f16, f32, i32 or i64)");
  return false;
}

// Grid sizes reach the runtime as strings over dim symbols (KernelInfo::grid).
void Sema::checkGridExpr(const Expr &e) {
  if (e.value) return;  // folded: printed as a literal
  switch (e.kind) {
  case ExprKind::Name: {
    auto &n = static_cast<const NameExpr &>(e);
    if (n.decl && n.decl->declKind != DeclKind::Dim)
      error(e.loc, "grid sizes may only use dim symbols and specialization constants; '" + n.name + "' is " +
                       describe(n.decl));
    return;
  }
  case ExprKind::Binary: {
    auto &b = static_cast<const BinaryExpr &>(e);
    if (b.op > BinaryOp::Rem) {
      error(b.opLoc, std::string("operator '") + binaryOpStr(b.op) + "' is not allowed in a grid size (use + - * / %, cdiv, min, max)");
      return;
    }
    checkGridExpr(*b.lhs);
    checkGridExpr(*b.rhs);
    return;
  }
  case ExprKind::Unary: checkGridExpr(*static_cast<const UnaryExpr &>(e).operand); return;
  case ExprKind::Call: {
    auto &c = static_cast<const CallExpr &>(e);
    if (c.builtin != Builtin::Cdiv && c.builtin != Builtin::Min && c.builtin != Builtin::Max) {
      error(e.loc, "'" + c.callee + "' is not allowed in a grid size (only cdiv, min and max)");
      return;
    }
    for (auto &a : c.args) checkGridExpr(*a);
    return;
  }
  case ExprKind::BlockIdx: error(e.loc, "block indices cannot be used in a grid size"); return;
  case ExprKind::Select: {
    // A constant condition selects a branch at compile time (both must be valid).
    auto &s = static_cast<const SelectExpr &>(e);
    if (!s.cond->value) {
      error(s.opLoc, "'?:' is not allowed in a grid size unless its condition is a compile-time constant");
      return;
    }
    checkGridExpr(*s.thenExpr);
    checkGridExpr(*s.elseExpr);
    return;
  }
  case ExprKind::GlobalElem: error(e.loc, "global tensor elements cannot be used in a grid size"); return;
  default: error(e.loc, "this expression is not allowed in a grid size"); return;
  }
}

void Sema::checkLaunch(KernelDecl &k) {
  k.numThreads = k.numWarpgroups = 0;
  if (auto t = constInt(k.threads, "the thread count")) {
    if (*t <= 0 || *t % 128 != 0 || *t > 1024)
      error(k.threads->loc, "threads must be a positive multiple of 128 (one warpgroup) and at most 1024, got " +
                                std::to_string(*t));
    else
      k.numThreads = *t, k.numWarpgroups = *t / 128;
  }
  k.clusterDims = {1, 1, 1};
  int64_t blocks = 1;
  bool clusterOk = true;
  for (size_t i = 0; i < k.cluster.size(); ++i) {
    auto v = constInt(k.cluster[i], "a cluster size", /*positive=*/true);
    if (!v) {
      clusterOk = false;
      continue;
    }
    k.clusterDims[i] = *v;
    blocks = *v > 64 ? 1000 : blocks * *v;
  }
  if (clusterOk && blocks > 8)
    error(k.clusterLoc, "a cluster of " + std::to_string(blocks) + " blocks is too large (at most 8)");
  k.minBlocks = 1;
  if (k.occupancy) {
    if (auto v = constInt(k.occupancy, "the occupancy", /*positive=*/true)) {
      if (k.numThreads > 0 && *v * k.numThreads > 2048)
        error(k.occupancyLoc, "occupancy(" + std::to_string(*v) + ") of blocks of " + std::to_string(k.numThreads) +
                                  " threads needs " + std::to_string(*v * k.numThreads) +
                                  " threads per SM (at most 2048)");
      else
        k.minBlocks = *v;
    }
  }
  k.followsTensors.clear();
  for (const auto &[n, loc] : k.follows) {
    const TensorArgDecl *t = nullptr;
    bool scalar = false;
    for (const auto &a : k.args) {
      if (a->name != n) continue;
      if (auto *ta = as<TensorArgDecl>(a.get())) t = ta;
      else scalar = true;
    }
    if (!t) {
      error(loc, scalar ? "follows(" + n + "): '" + n + "' is a scalar; follows lists the tensor arguments that the "
                              "preceding kernel writes"
                        : "follows(" + n + "): kernel '" + k.name + "' has no tensor argument '" + n + "'");
      continue;
    }
    if (std::find(k.followsTensors.begin(), k.followsTensors.end(), t->tensorIndex) != k.followsTensors.end()) {
      error(loc, "follows lists '" + n + "' twice");
      continue;
    }
    k.followsTensors.push_back(t->tensorIndex);
  }
  k.gridStrings = {"1", "1", "1"};
  for (size_t i = 0; i < k.grid.size(); ++i) {
    ExprPtr &g = k.grid[i];
    size_t before = errors_;
    checkIntExpr(g, "a grid size");
    if (errors_ != before || g->type != ScalarType::Int) continue;
    checkGridExpr(*g);
    if (errors_ != before) continue;
    if (g->value && g->value->i <= 0) {
      error(g->loc, "a grid size must be positive, got " + std::to_string(g->value->i));
      continue;
    }
    k.gridStrings[i] = gridExprString(*g);
  }
}

void Sema::checkKernel(KernelDecl &k) {
  kernel_ = &k;
  roleFrags_.clear();
  k.roles.clear();
  k.channels.clear();
  ctx_ = Ctx();
  scopes_.clear();
  ScopeGuard kernelScope(*this);
  checkParams(k);
  checkArgs(k);
  checkLaunch(k);

  roleKernel_ = std::any_of(k.body.stmts.begin(), k.body.stmts.end(),
                            [](const StmtPtr &s) { return s->kind == StmtKind::Role; });
  {
    ScopeGuard bodyScope(*this);
    ctx_.topLevel = true;
    for (auto &s : k.body.stmts) checkStmt(s);
    ctx_ = Ctx();
  }
  checkChannelUse(k);
  kernel_ = nullptr;
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

bool checkQla(Module &module, const std::map<std::string, std::string> &defines, std::vector<Diagnostic> &diags) {
  return Sema(module, defines, diags).run();
}

std::unique_ptr<Module> parseAndCheckQla(const std::string &source, const std::string &filename,
                                         const std::map<std::string, std::string> &defines,
                                         std::vector<Diagnostic> &diags, const IncludeResolver &includes) {
  ParseResult r = parseQla(source, filename, includes);
  diags.insert(diags.end(), r.diags.begin(), r.diags.end());
  if (!r.module) return nullptr;
  if (!checkQla(*r.module, defines, diags)) return nullptr;
  return std::move(r.module);
}

}  // namespace qla::fe
