// Sema for statements: scoping, tiles, copies, gemms, fragment initialisers,
// loops, parallel blocks, roles and channels. Errors are collected (not
// fatal); a construct whose parts already failed is skipped quietly.
#include <algorithm>

#include "Sema.h"

namespace qla::fe {

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

void Sema::checkBlock(Block &b) {
  ScopeGuard g(*this);
  for (auto &s : b.stmts) checkStmt(s);
}

// Where each statement may appear. Reported, then the statement is still
// checked so that its declarations exist and later uses do not cascade.
void Sema::checkStmtPlacement(Stmt &s) {
  StmtKind k = s.kind;
  if (ctx_.parallel) {
    if (k == StmtKind::Assign) return;  // checkAssign explains
    if (k != StmtKind::Let && k != StmtKind::ElemAssign)
      return error(s.loc, "only 'let' and element assignments are allowed inside a parallel block");
  } else if (ctx_.slot && ctx_.slot->isPut() && k != StmtKind::Copy && k != StmtKind::Frag &&
             k != StmtKind::Parallel && k != StmtKind::If) {
    // A put's threads may stage the slot's contents in fragments of the put
    // (loaded, mapped, then copied into the slot), nothing else; an 'if' on
    // a constant picks a specialization's copies (checkIf).
    return error(s.loc, "only copies, fragments, parallel blocks over them and 'if' on a compile-time constant are "
                        "allowed inside 'put'");
  }
  if (k == StmtKind::Role && !ctx_.topLevel)
    return error(s.loc, "'role' must be at the top level of the kernel body");
  if (k == StmtKind::Channel && !ctx_.topLevel)
    return error(s.loc, "'channel' must be at the top level of the kernel body, outside roles");
  // Outside the roles every thread of the block runs the same scalar code
  // (the prologue: which sequence and segment this block has, say); tiles,
  // copies and products belong to roles.
  auto scalar = [](StmtKind k) {
    return k == StmtKind::Let || k == StmtKind::Var || k == StmtKind::Assign || k == StmtKind::For ||
           k == StmtKind::If;
  };
  if (ctx_.topLevel && roleKernel_ && !scalar(k) && k != StmtKind::Shared && k != StmtKind::Channel &&
      k != StmtKind::Role)
    return error(s.loc, "in a kernel with roles, only 'let', 'var', assignments, 'for', 'if', 'shared', "
                        "'channel' and 'role' may appear outside the roles");
  if (ctx_.prologue && !scalar(k))
    return error(s.loc, "a 'for' or 'if' outside the roles may contain only 'let', 'var', assignments, 'for' "
                        "and 'if' (tiles, copies and products belong to roles)");
  if ((k == StmtKind::Put || k == StmtKind::Get) && !ctx_.role)
    return error(s.loc, std::string("'") + (k == StmtKind::Put ? "put" : "get") + "' must be inside a role");
  if (k == StmtKind::ElemAssign && !ctx_.parallel)
    return error(s.loc, "element assignment outside a parallel block");
}

void Sema::checkStmt(StmtPtr &sp) {
  // `x = e` on a var was parsed as a fragment fill: make it an AssignStmt.
  if (auto *fa = as<FragAssignStmt>(sp.get()); fa && fa->init.kind == FragInit::Kind::Fill) {
    if (is<VarDecl>(lookup(fa->target))) {
      auto a = std::make_unique<AssignStmt>(fa->loc);
      a->target = fa->target;
      a->op = AssignOp::Set;
      a->opLoc = fa->opLoc;
      a->value = std::move(fa->init.fill);
      sp = std::move(a);
    }
  }
  Stmt &s = *sp;
  checkStmtPlacement(s);
  switch (s.kind) {
  case StmtKind::Let: return checkLet(static_cast<LetDecl &>(s));
  case StmtKind::Var: return checkVar(static_cast<VarDecl &>(s));
  case StmtKind::Assign: return checkAssign(static_cast<AssignStmt &>(s));
  case StmtKind::Shared: return checkShared(static_cast<SharedDecl &>(s));
  case StmtKind::Frag: return checkFrag(static_cast<FragDecl &>(s));
  case StmtKind::Copy: return checkCopy(static_cast<CopyStmt &>(s));
  case StmtKind::Prefetch: return checkPrefetch(static_cast<PrefetchStmt &>(s));
  case StmtKind::Gemm: return checkGemm(static_cast<GemmStmt &>(s));
  case StmtKind::FragAssign: return checkFragAssign(static_cast<FragAssignStmt &>(s));
  case StmtKind::For: return checkFor(static_cast<ForStmt &>(s));
  case StmtKind::Pipeline: return checkPipeline(static_cast<PipelineStmt &>(s));
  case StmtKind::Parallel: return checkParallel(static_cast<ParallelStmt &>(s));
  case StmtKind::ElemAssign: return checkElemAssign(static_cast<ElemAssignStmt &>(s));
  case StmtKind::If: return checkIf(static_cast<IfStmt &>(s));
  case StmtKind::Role: return checkRole(static_cast<RoleStmt &>(s));
  case StmtKind::Channel: return checkChannel(static_cast<ChannelDecl &>(s));
  case StmtKind::Put:
  case StmtKind::Get: return checkSlot(static_cast<SlotStmt &>(s));
  }
}

void Sema::checkLet(LetDecl &s) {
  checkExpr(s.init);
  if (s.init->type == ScalarType::Bool) {
    error(s.init->loc, "a 'let' value must be int or float, got bool");
    s.init->type = ScalarType::Unknown;
  }
  declare(&s);
}

void Sema::checkVar(VarDecl &s) {
  checkExpr(s.init);
  s.type = s.init->type;
  if (s.type == ScalarType::Bool) {
    error(s.init->loc, "a 'var' must be int or float, got bool");
    s.type = ScalarType::Unknown;
  }
  s.outsideRoles = roleKernel_ && !ctx_.role;
  declare(&s);
}

void Sema::checkAssign(AssignStmt &s) {
  checkExpr(s.value);
  s.var = nullptr;
  Decl *d = lookup(s.target);
  if (!d) return error(s.loc, "use of undeclared name '" + s.target + "'");
  std::string op = assignOpStr(s.op);
  if (d->declKind == DeclKind::Frag) {
    if (s.op == AssignOp::Add)
      return error(s.opLoc, "'+=' on a whole fragment must be followed by gemm(...); "
                            "use a parallel block for elementwise updates");
    return error(s.opLoc, "'" + op + "' is not allowed on a whole fragment; use a parallel block for "
                          "elementwise updates (" + s.target + "[i, j] " + op + " v)");
  }
  s.var = as<VarDecl>(d);
  if (!s.var) {
    if (d->declKind == DeclKind::Let)
      return error(s.loc, "cannot assign to '" + s.target + "': a let value is immutable (declare it with 'var')");
    return error(s.loc, "cannot assign to '" + s.target + "': it is " + describe(d) +
                            " (only vars and fragments can be assigned)");
  }
  if (s.var->outsideRoles && ctx_.role)
    return error(s.loc, "cannot assign to var '" + s.target + "' inside role '" + ctx_.role->name +
                            "': it is declared outside the roles, where every role reads the same value "
                            "(declare a var inside the role to change it)");
  if (ctx_.parallel)
    return error(s.loc, "cannot assign to var '" + s.target +
                            "' inside a parallel block (the body runs once per element; vars are read-only there)");
  ScalarType t = s.value->type, vt = s.var->type;
  if (t == ScalarType::Unknown || vt == ScalarType::Unknown) return;
  if (t == ScalarType::Bool)
    return error(s.value->loc, std::string("cannot assign a bool to ") + scalarTypeName(vt) + " var '" + s.target + "'");
  if (t == ScalarType::Float && vt == ScalarType::Int)
    return error(s.value->loc, "cannot assign a float to int var '" + s.target + "' (convert with i32(...))");
  convertTo(s.value, vt);
}

// Sanity caps (far above what the hardware can use) so that later size
// arithmetic and unrolling cannot blow up.
constexpr int64_t kMaxTileElems = int64_t(1) << 24;
constexpr int64_t kMaxBuffers = 64;      // pipeline stages, channel depth
constexpr int64_t kMaxUnroll = 1024;     // iterations of an unrolled loop

bool Sema::checkTileType(const std::string &dtypeName, const SourceLoc &dtypeLoc, DType &dtype,
                         ParamDecl *&dtypeParam, bool &dtypeOk, std::vector<ExprPtr> &extents,
                         std::vector<int64_t> &shape, const char *what) {
  bool ok = dtypeOk = resolveDType(dtypeName, dtypeLoc, dtype, dtypeParam);
  std::vector<int64_t> sh;
  for (auto &e : extents) {
    auto v = constInt(e, "a tile extent", /*positive=*/true);
    if (v) sh.push_back(*v);
    else ok = false;
  }
  if (extents.size() > 2) {
    error(extents[2]->loc, std::string("a ") + what + " must have rank 1 or 2, got " + std::to_string(extents.size()));
    ok = false;
  }
  // A cap far above any shared-memory or register budget keeps later size
  // arithmetic (elements x bytes, x stages) clear of overflow.
  int64_t elems = 1;
  for (int64_t v : sh) elems = v > kMaxTileElems ? kMaxTileElems + 1 : std::min(elems * v, kMaxTileElems + 1);
  if (ok && elems > kMaxTileElems) {
    error(extents[0]->loc, std::string("a ") + what + " may hold at most " + std::to_string(kMaxTileElems) +
                               " elements, " + shapeString(sh) + " is too large");
    ok = false;
  }
  shape.clear();
  if (ok) shape = sh;
  return ok;
}

void Sema::checkShared(SharedDecl &s) {
  bool dtypeOk = true;
  checkTileType(s.dtypeName, s.dtypeLoc, s.dtype, s.dtypeParam, dtypeOk, s.extents, s.shape, "shared tile");
  if (!dtypeOk) badDtype_.insert(static_cast<Decl *>(&s));
  declare(&s);
}

void Sema::checkFrag(FragDecl &s) {
  bool dtypeOk = true;
  checkTileType(s.dtypeName, s.dtypeLoc, s.dtype, s.dtypeParam, dtypeOk, s.extents, s.shape, "fragment");
  if (!dtypeOk) badDtype_.insert(static_cast<Decl *>(&s));
  s.role = ctx_.role;
  if (s.role) roleFrags_.push_back(&s);
  if (ctx_.slot && ctx_.slot->isPut()) {
    s.put = ctx_.slot;
    using K = FragInit::Kind;
    if (s.init.kind != K::None && s.init.kind != K::Fill && s.init.kind != K::Cast)
      error(s.init.loc, "a fragment declared inside 'put' is filled with a value, a cast or a copy (no "
                        "reductions, scans or inverses)");
  }
  checkFragInit(s, s.init);
  declare(&s);
}

FragDecl *Sema::resolveFrag(const std::string &name, const SourceLoc &loc, const std::string &what) {
  Decl *d = lookup(name);
  if (!d) {
    error(loc, "use of undeclared name '" + name + "'");
    return nullptr;
  }
  auto *f = as<FragDecl>(d);
  if (!f) error(loc, what + " '" + name + "' must be a fragment, but it is " + describe(d));
  return f;
}

void Sema::convertForStore(ExprPtr &value, const FragDecl &frag) {
  ScalarType t = value->type;
  if (t == ScalarType::Unknown || badDtype_.count(static_cast<const Decl *>(&frag))) return;
  ScalarType elem = elementScalarType(frag.dtype);
  if (t == ScalarType::Bool) {
    error(value->loc, "cannot store a bool in " + std::string(dtypeStr(frag.dtype)) + " fragment '" + frag.name + "'");
  } else if (t == ScalarType::Float && elem == ScalarType::Int) {
    error(value->loc, "cannot store a float in " + std::string(dtypeStr(frag.dtype)) + " fragment '" + frag.name +
                          "' (convert with i32(...))");
  } else {
    convertTo(value, elem);
  }
}

void Sema::checkFragInit(FragDecl &target, FragInit &fi) {
  if (fi.kind == FragInit::Kind::None) return;
  if (fi.kind == FragInit::Kind::Fill) {
    checkExpr(fi.fill);
    convertForStore(fi.fill, target);
    return;
  }
  const char *what = fi.kind == FragInit::Kind::Reduce ? "the reduce source"
                     : fi.kind == FragInit::Kind::Scan ? "the scan source"
                     : fi.kind == FragInit::Kind::Cast ? "the cast source" : "the inv_unit_lower source";
  fi.source = resolveFrag(fi.sourceName, fi.sourceLoc, what);
  if (!fi.source || fi.source->shape.empty() || target.shape.empty()) return;
  const std::vector<int64_t> &src = fi.source->shape;
  if (fi.kind == FragInit::Kind::InvUnitLower) {
    if (src.size() != 2 || src[0] != src[1])
      return error(fi.sourceLoc, "inv_unit_lower needs a square 2-D fragment, '" + fi.sourceName + "' has shape " +
                                     shapeString(src));
    for (const FragDecl *f : {static_cast<const FragDecl *>(fi.source), static_cast<const FragDecl *>(&target)}) {
      if (badDtype_.count(static_cast<const Decl *>(f))) return;
      if (f->dtype != DType::F32)
        return error(f == fi.source ? fi.sourceLoc : fi.loc, "inv_unit_lower needs f32 fragments, '" + f->name +
                                                                  "' is " + dtypeStr(f->dtype));
    }
    if (target.shape != src)
      return error(fi.loc, "inv_unit_lower keeps the shape: '" + fi.sourceName + "' has shape " + shapeString(src) +
                               " but '" + target.name + "' has shape " + shapeString(target.shape));
    if (fi.blocksExpr) {
      std::optional<int64_t> b = constInt(fi.blocksExpr, "inv_unit_lower's blocks");
      if (!b) return;
      if (*b < 1 || src[0] % *b != 0)
        return error(fi.blocksLoc, "inv_unit_lower blocks = " + std::to_string(*b) + " must divide the extent " +
                                       std::to_string(src[0]) + " of '" + fi.sourceName + "'");
      fi.blocks = *b;
    }
    if (fi.f16Operands && fi.blocksExpr)
      return error(fi.operandsLoc, "inv_unit_lower takes 'blocks' or 'operands', not both");
    if (fi.f16Operands && src[0] != 64)
      return error(fi.operandsLoc, "inv_unit_lower(..., operands = f16) needs a 64 x 64 fragment, '" + fi.sourceName +
                                       "' has shape " + shapeString(src));
    return;
  }
  if (fi.kind == FragInit::Kind::Reduce) {
    if (src.size() != 2)
      return error(fi.sourceLoc, "reduce needs a 2-D source fragment, '" + fi.sourceName + "' has shape " + shapeString(src));
    if (fi.dim != 0 && fi.dim != 1)
      return error(fi.dimLoc, "reduce dim must be 0 or 1, got " + std::to_string(fi.dim));
    std::vector<int64_t> want = {src[size_t(1 - fi.dim)]};
    if (target.shape != want)
      error(fi.loc, "reducing '" + fi.sourceName + "' " + shapeString(src) + " along dim " + std::to_string(fi.dim) +
                        " gives shape " + shapeString(want) + ", but '" + target.name + "' has shape " +
                        shapeString(target.shape));
    return;
  }
  if (fi.kind == FragInit::Kind::Scan) {
    if (!fi.dimGiven) fi.dim = int(src.size()) - 1;  // default: the last dim
    if (fi.dim < 0 || fi.dim >= int(src.size()))
      return error(fi.dimLoc, "scan dim must be " + std::string(src.size() == 1 ? "0" : "0 or 1") + " for '" +
                                  fi.sourceName + "' of shape " + shapeString(src) + ", got " + std::to_string(fi.dim));
  }
  if (target.shape != src)
    error(fi.loc, std::string(fi.kind == FragInit::Kind::Scan ? "scan" : "cast") + " keeps the shape: '" +
                      fi.sourceName + "' has shape " + shapeString(src) + " but '" + target.name + "' has shape " +
                      shapeString(target.shape));
}

void Sema::checkFragAssign(FragAssignStmt &s) {
  Decl *d = lookup(s.target);
  if (!d) return error(s.loc, "use of undeclared name '" + s.target + "'");
  s.frag = as<FragDecl>(d);
  if (!s.frag) {
    if (d->declKind == DeclKind::Let)
      return error(s.loc, "cannot assign to '" + s.target + "': a let value is immutable (declare it with 'var')");
    if (d->declKind == DeclKind::Var)  // (a fill of a var became an AssignStmt)
      return error(s.loc, "cannot assign to var '" + s.target +
                              "': reduce, scan, cast and inv_unit_lower produce fragments");
    return error(s.loc, "cannot assign to '" + s.target + "': it is " + describe(d) +
                            " (only vars and fragments can be assigned)");
  }
  checkFragInit(*s.frag, s.init);
}

Sema::Side Sema::checkRef(TileRef &r) {
  Decl *d = lookup(r.name);
  if (!d) {
    // Another role's fragment is out of scope; say so rather than "undeclared".
    for (FragDecl *f : roleFrags_)
      if (f->name == r.name && ctx_.role && f->role != ctx_.role) {
        error(r.loc, "fragment '" + r.name + "' belongs to role '" + f->role->name + "', not to role '" +
                         ctx_.role->name + "' (hand tiles to another role through a channel)");
        return Side::Bad;
      }
    error(r.loc, "use of undeclared name '" + r.name + "'");
    return Side::Bad;
  }
  r.decl = d;
  if (!r.sliced) {
    if (d->declKind == DeclKind::TensorArg) {
      error(r.loc, "global tensor '" + r.name + "' must be sliced: " + r.name + "[start :+ extent, ...]");
      return Side::Bad;
    }
    auto *t = as<TileDecl>(d);
    if (!t) {
      error(r.loc, "'" + r.name + "' is " + describe(d) + ", not a tile");
      return Side::Bad;
    }
    if (t->shape.empty()) return Side::Bad;  // declaration already reported
    return t->space() == MemSpace::Frag ? Side::Frag : Side::Shared;
  }
  auto *t = as<TensorArgDecl>(d);
  if (auto *tile = as<TileDecl>(d); tile && tile->space() == MemSpace::Shared) {
    // A shared tile's sub-tile: NAME[r0 :+ nr, c0 :+ nc], constant starts
    // (multiples of 8) and extents inside the tile (checkCopy: the other
    // operand a fragment).
    if (tile->shape.empty()) return Side::Bad;  // declaration already reported
    if (tile->rank() != 2 || r.slices.size() != 2) {
      error(r.loc, "a sub-tile of shared tile '" + r.name + "' is NAME[r0 :+ rows, c0 :+ cols] of a 2-D tile");
      return Side::Bad;
    }
    for (const Slice &sl : r.slices)
      if (!sl.extent || sl.limit) {
        error(sl.loc, "a sub-tile's slice is START :+ EXTENT (constants), without 'until'");
        return Side::Bad;
      }
    auto outside = [&](int64_t st, int64_t ex, int dim) {
      return "the sub-tile " + std::to_string(st) + " :+ " + std::to_string(ex) + " of '" + r.name +
             "' must start at a multiple of 8 and stay in its " + (dim == 0 ? "rows" : "columns") + " [0, " +
             std::to_string(tile->shape[dim]) + ")";
    };
    if (!constantBox(r.slices, tile->shape, "a sub-tile", /*align=*/8, outside, r.box)) return Side::Bad;
    r.subTile = true;
    return Side::Shared;
  }
  if (!t) {
    error(r.loc, "only global tensors and shared tiles can be sliced; '" + r.name + "' is " + describe(d));
    return Side::Bad;
  }
  size_t before = errors_;
  r.sliceShape.clear();
  r.droppedDims.clear();
  for (size_t i = 0; i < r.slices.size(); ++i) {
    Slice &s = r.slices[i];
    checkIntExpr(s.start, s.extent ? "a slice start" : "a slice index");
    if (s.limit) checkIntExpr(s.limit, "a slice limit");
    if (!s.extent) {
      s.extentValue = 1;
      r.droppedDims.push_back(int(i));
      continue;
    }
    if (auto v = constInt(s.extent, "a slice extent", /*positive=*/true)) {
      s.extentValue = *v;
      r.sliceShape.push_back(*v);
    }
  }
  if (r.slices.size() != t->dims.size()) {
    error(r.loc, "tensor '" + r.name + "' has " + std::to_string(t->dims.size()) + " dim" +
                     (t->dims.size() == 1 ? "" : "s") + " but the slice has " + std::to_string(r.slices.size()));
    return Side::Bad;
  }
  return errors_ == before ? Side::Global : Side::Bad;
}

// prefetch G[...]: a global tensor's slice of one or two dims after the
// single-index ones (its rows are what the threads share).
void Sema::checkPrefetch(PrefetchStmt &s) {
  TileRef &r = s.src;
  if (!r.sliced) {
    Decl *d = lookup(r.name);
    if (d && d->declKind != DeclKind::TensorArg)
      return error(r.loc, "prefetch takes a global tensor's slice, NAME[start :+ extent, ...]; '" + r.name + "' is " +
                              describe(d));
  }
  Side side = checkRef(r);
  if (side == Side::Bad) return;
  if (side != Side::Global)
    return error(r.loc, "prefetch takes a global tensor's slice, NAME[start :+ extent, ...]; '" + r.name + "' is " +
                            describe(r.decl));
  if (r.transposed) return error(r.transposeLoc, "'^T' transposes a fragment; a prefetch reads into no fragment");
  if (r.sliceShape.empty() || r.sliceShape.size() > 2)
    return error(r.loc, "prefetch takes a 1-D or 2-D slice (after the dims indexed by one element); '" + r.name +
                            "' is sliced to " + shapeString(r.sliceShape));
}

void Sema::checkCopy(CopyStmt &s) {
  Side from = checkRef(s.src), to = checkRef(s.dst);
  if (from == Side::Bad || to == Side::Bad) return;
  // `^T` transposes the fragment operand (its 2-D register layout is read
  // with (row, col) swapped on the memory side); nothing else.
  const std::pair<TileRef *, Side> refs[] = {{&s.src, from}, {&s.dst, to}};
  for (auto [r, side] : refs) {
    if (!r->transposed) continue;
    if (side != Side::Frag)
      return error(r->transposeLoc, "'^T' transposes the fragment operand of a copy; '" + r->name + "' is " +
                                        (side == Side::Global ? std::string("a global tensor slice")
                                                              : describe(r->decl)));
    if (r->tile()->rank() != 2)
      return error(r->transposeLoc, "'^T' needs a 2-D fragment, '" + r->name + "' has shape " +
                                        shapeString(r->tile()->shape));
  }
  const bool trans = s.transposed();
  // A shared tile's sub-tile goes to or from a fragment, untransposed.
  const bool fragShared = (from == Side::Frag && to == Side::Shared) || (from == Side::Shared && to == Side::Frag);
  for (auto [r, side] : refs)
    if (r->subTile && (!fragShared || trans))
      return error(r->loc, "a sub-tile of shared tile '" + r->name +
                               "' is copied to or from a fragment only, and not transposed");
  auto fragShape = [&](TileDecl *t) {
    std::vector<int64_t> sh = t->shape;
    if (trans && t->space() == MemSpace::Frag && sh.size() == 2) std::swap(sh[0], sh[1]);
    return sh;
  };
  const char *ofFrag = trans ? "the transposed shape " : "shape ";
  if (from == Side::Global && to == Side::Global)
    return error(s.loc, "cannot copy from a global tensor to a global tensor");
  if (from == Side::Frag && to == Side::Frag)
    return error(s.loc, "cannot copy a fragment to a fragment (use cast(...) to convert)");
  bool inPut = ctx_.slot && ctx_.slot->isPut();
  if (from == Side::Shared && to == Side::Shared && !inPut)
    return error(s.loc, "cannot copy a shared tile to a shared tile");

  if (inPut) {
    // A put fills its slot from global memory (TMA), or from the role's
    // fragments or shared tiles (stores by the role's threads); see LowerChannels.
    if (auto *b = as<SlotBindingDecl>(s.src.decl))
      return error(s.src.loc, "cannot copy out of slot tile '" + b->name +
                                  "' inside 'put'; a put only writes its slot's tiles");
    auto *b = as<SlotBindingDecl>(s.dst.decl);
    auto *staged = as<FragDecl>(s.dst.decl);
    if ((!b || b->owner != ctx_.slot) && !(staged && staged->put == ctx_.slot))
      return error(s.dst.loc, "inside 'put', a copy must write one of the slot's tiles or a fragment declared in "
                              "the put; '" +
                                  s.dst.name + "' is neither");
  }
  if (auto *b = as<SlotBindingDecl>(s.dst.decl); b && !b->owner->isPut())
    return error(s.dst.loc, "slot tile '" + b->name + "' is read-only inside 'get'");
  if (to == Side::Global && !s.dst.tensor()->isOutput)
    return error(s.dst.loc, "cannot write tensor '" + s.dst.name + "': it is not declared 'out'");

  if (from == Side::Global || to == Side::Global) {
    TileRef &g = from == Side::Global ? s.src : s.dst;
    TileRef &t = from == Side::Global ? s.dst : s.src;
    TileDecl *tile = t.tile();
    if (g.sliceShape != fragShape(tile))
      return error(g.loc, "slice shape " + shapeString(g.sliceShape) + " of '" + g.name + "' does not match " +
                              ofFrag + shapeString(fragShape(tile)) + (trans ? " of fragment '" : " of tile '") +
                              t.name + "'");
    TensorArgDecl *tensor = g.tensor();
    bool shared = tile->space() == MemSpace::Shared;
    if (shared && tensor->dtype != tile->dtype && !badDtype_.count(static_cast<Decl *>(tensor)) &&
        !badDtype_.count(static_cast<Decl *>(tile)))
      return error(t.loc, std::string("copies between global and shared memory keep the dtype: '") + g.name +
                              "' is " + dtypeStr(tensor->dtype) + " but '" + t.name + "' is " + dtypeStr(tile->dtype));
    if (from == Side::Global)
      s.copyKind = shared ? CopyKind::GlobalToShared : CopyKind::GlobalToFrag;
    else
      s.copyKind = shared ? CopyKind::SharedToGlobal : CopyKind::FragToGlobal;
    if (s.add && s.copyKind != CopyKind::FragToGlobal)
      return error(s.opLoc, std::string("copy(+) adds a fragment into a global tensor's slice; this copy is ") +
                                copyKindStr(s.copyKind));
    if (s.add && trans) return error(s.opLoc, "copy(+) does not transpose: add the fragment as it is laid out");
    if (s.add && tensor->dtype != DType::F32 && !badDtype_.count(static_cast<Decl *>(tensor)))
      return error(g.loc, "copy(+) adds into f32 tensors only (one atomic f32 add an element); '" + g.name +
                              "' is " + dtypeStr(tensor->dtype));
    return;
  }
  if (s.add)
    return error(s.opLoc, "copy(+) adds a fragment into a global tensor's slice; '" + s.dst.name +
                              "' is not a global tensor");
  TileDecl *a = s.src.tile(), *b = s.dst.tile();
  if (trans) {
    TileDecl *f = from == Side::Frag ? a : b, *m = from == Side::Frag ? b : a;
    const std::string &fn = from == Side::Frag ? s.src.name : s.dst.name;
    const std::string &mn = from == Side::Frag ? s.dst.name : s.src.name;
    if (m->shape != fragShape(f))
      return error(s.dst.loc, "shape " + shapeString(m->shape) + " of '" + mn +
                                  "' does not match the transposed shape " + shapeString(fragShape(f)) +
                                  " of fragment '" + fn + "'");
  } else if (s.src.shape() != s.dst.shape()) {
    return error(s.dst.loc, "shape " + shapeString(s.src.shape()) + " of '" + s.src.name + "' does not match shape " +
                                shapeString(s.dst.shape()) + " of '" + s.dst.name + "'");
  }
  if (from == Side::Shared) s.copyKind = to == Side::Shared ? CopyKind::SharedToShared : CopyKind::SharedToFrag;
  else s.copyKind = CopyKind::FragToShared;
}

// The box [r0, c0, nr, nc] of a 2-D tile's slices [r0 :+ nr, c0 :+ nc] (a
// gemm operand's or a copy's sub-tile): constant starts (multiples of
// `align`) and positive extents inside `shape`; each bad start or extent
// reported (`outside` words a range error). False if any was bad.
bool Sema::constantBox(std::vector<Slice> &slices, const std::vector<int64_t> &shape, const std::string &what,
                       int64_t align, const std::function<std::string(int64_t, int64_t, int)> &outside,
                       std::array<int64_t, 4> &box) {
  bool ok = true;
  for (int i = 0; i < 2; ++i) {
    Slice &sl = slices[i];
    auto st = constInt(sl.start, "the start of " + what);
    auto ex = constInt(sl.extent, "the extent of " + what, /*positive=*/true);
    if (!st || !ex) {
      ok = false;
      continue;
    }
    if (*st < 0 || *st + *ex > shape[i] || *st % align != 0) {
      // In the side of an `if` on a constant that this specialization does
      // not take nothing is built: a box that only another specialization's
      // shapes make valid (`if DV == 128 { ... t[0 :+ 64, 64 :+ 64] }`) is
      // not an error there.
      if (ctx_.dead) {
        box[i] = 0;
        box[2 + i] = *ex;
        continue;
      }
      error(sl.loc, outside(*st, *ex, i));
      ok = false;
      continue;
    }
    box[i] = *st;
    box[2 + i] = *ex;
  }
  return ok;
}

TileDecl *Sema::resolveOperand(GemmOperand &o, const char *which) {
  Decl *d = lookup(o.name);
  if (!d) {
    error(o.loc, "use of undeclared name '" + o.name + "'");
    return nullptr;
  }
  auto *t = as<TileDecl>(d);
  bool needShared = std::string(which) == "B";
  if (!t || (needShared && t->space() != MemSpace::Shared)) {
    error(o.loc, std::string("gemm operand ") + which + " '" + o.name + "' must be " +
                     (needShared ? "a shared tile" : "a shared tile or a fragment") + ", but it is " + describe(d));
    return nullptr;
  }
  o.decl = t;
  if (t->shape.empty() || badDtype_.count(static_cast<Decl *>(t))) return nullptr;
  if (t->dtype != DType::BF16 && t->dtype != DType::F16) {
    error(o.loc, std::string("gemm operands must be bf16 or f16; '") + o.name + "' is " + dtypeStr(t->dtype));
    return nullptr;
  }
  if (t->rank() != 2) {
    error(o.loc, "gemm operand '" + o.name + "' must be 2-D, got shape " + shapeString(t->shape));
    return nullptr;
  }
  if (t->space() == MemSpace::Frag && o.transposed) {
    error(o.loc, "fragment operand '" + o.name + "' cannot be transposed");
    return nullptr;
  }
  if (o.sliced()) {
    if (t->space() != MemSpace::Shared) {
      error(o.loc, "fragment operand '" + o.name + "' cannot be sliced (only a shared tile's sub-tile is a gemm operand)");
      return nullptr;
    }
    if (o.slices.size() != 2) {
      error(o.slices[0].loc, "a gemm operand's slice has 2 components (rows, columns), got " +
                                 std::to_string(o.slices.size()));
      return nullptr;
    }
    auto outside = [&](int64_t st, int64_t ex, int dim) {
      return "the slice " + std::to_string(st) + " :+ " + std::to_string(ex) + " of '" + o.name + "' leaves its " +
             (dim == 0 ? "rows" : "columns") + " [0, " + std::to_string(t->shape[dim]) + ")";
    };
    if (!constantBox(o.slices, t->shape, "a gemm operand's slice", /*align=*/1, outside, o.box)) return nullptr;
  }
  return t;
}

void Sema::checkGemm(GemmStmt &s) {
  TileDecl *a = resolveOperand(s.a, "A");
  TileDecl *b = resolveOperand(s.b, "B");
  Decl *d = lookup(s.target);
  if (!d) return error(s.loc, "use of undeclared name '" + s.target + "'");
  s.c = as<FragDecl>(d);
  if (!s.c) return error(s.loc, "gemm result '" + s.target + "' must be an f32 fragment, but it is " + describe(d));
  if (s.c->shape.empty() || badDtype_.count(static_cast<Decl *>(s.c))) return;
  if (s.c->dtype != DType::F32)
    return error(s.loc, std::string("gemm result '") + s.target + "' must be an f32 fragment, got " + dtypeStr(s.c->dtype));
  if (s.c->rank() != 2)
    return error(s.loc, "gemm result '" + s.target + "' must be 2-D, got shape " + shapeString(s.c->shape));
  if (!a || !b) return;
  if (a->dtype != b->dtype)
    return error(s.b.loc, std::string("gemm operands must have the same dtype: '") + s.a.name + "' is " +
                              dtypeStr(a->dtype) + " but '" + s.b.name + "' is " + dtypeStr(b->dtype));
  std::vector<int64_t> opA = s.a.shape(), opB = s.b.shape();
  if (s.a.transposed) std::swap(opA[0], opA[1]);
  if (s.b.transposed) std::swap(opB[0], opB[1]);
  if (opA[1] != opB[0] || s.c->shape != std::vector<int64_t>{opA[0], opB[1]})
    return error(s.gemmLoc, "gemm shapes do not match: op(A) is " + shapeString(opA) + ", op(B) is " +
                                shapeString(opB) + ", C is " + shapeString(s.c->shape) +
                                " (need [M, K] x [K, N] -> [M, N])");
  s.m = opA[0];
  s.k = opA[1];
  s.n = opB[1];
}

void Sema::checkLoopBounds(ExprPtr &lo, ExprPtr &hi, bool needConst) {
  for (ExprPtr *e : {&lo, &hi}) {
    size_t before = errors_;
    checkIntExpr(*e, "a loop bound");
    if (needConst && errors_ == before && (*e)->type == ScalarType::Int && !(*e)->value)
      requireConst(**e, "an unrolled loop bound");
  }
}

void Sema::checkFor(ForStmt &s) {
  checkLoopBounds(s.lo, s.hi, s.unroll);
  if (s.unroll && s.lo->value && s.hi->value && s.lo->type == ScalarType::Int && s.hi->type == ScalarType::Int) {
    int64_t lo = s.lo->value->i, hi = s.hi->value->i, n = 0;
    if (hi > lo && (__builtin_sub_overflow(hi, lo, &n) || n > kMaxUnroll))
      error(s.loc, "an unrolled loop may run at most " + std::to_string(kMaxUnroll) + " iterations, " +
                       std::to_string(lo) + " .. " + std::to_string(hi) + " is too many");
  }
  CtxGuard c(*this);
  ctx_.prologue = c.saved.prologue || (c.saved.topLevel && roleKernel_);
  ScopeGuard g(*this);
  declare(s.var.get());
  checkBlock(s.body);
}

void Sema::checkPipeline(PipelineStmt &s) {
  if (ctx_.pipeline) error(s.loc, "pipelines cannot be nested");
  checkLoopBounds(s.lo, s.hi, false);
  s.numStages = 0;
  if (auto v = constInt(s.stages, "the number of pipeline stages")) {
    if (*v < 1) error(s.stages->loc, "a pipeline needs at least 1 stage, got " + std::to_string(*v));
    else if (*v > kMaxBuffers) error(s.stages->loc, "a pipeline may have at most " + std::to_string(kMaxBuffers) + " stages, got " + std::to_string(*v));
    else s.numStages = *v;
  }
  CtxGuard c(*this);
  ctx_.pipeline = &s;
  ScopeGuard g(*this);
  declare(s.var.get());
  checkBlock(s.body);
}

void Sema::checkParallel(ParallelStmt &s) {
  std::vector<int64_t> shape;
  bool ok = true;
  for (auto &e : s.extents) {
    if (auto v = constInt(e, "a parallel extent", /*positive=*/true)) shape.push_back(*v);
    else ok = false;
  }
  if (s.vars.size() != s.extents.size()) {
    error(s.loc, "the parallel block has " + std::to_string(s.vars.size()) + " index variable" +
                     (s.vars.size() == 1 ? "" : "s") + " but " + std::to_string(s.extents.size()) + " extent" +
                     (s.extents.size() == 1 ? "" : "s"));
    ok = false;
  } else if (s.extents.size() > 2) {
    error(s.extents[2]->loc, "a parallel block must have rank 1 or 2, got " + std::to_string(s.extents.size()));
    ok = false;
  }
  s.shape.clear();
  if (ok) s.shape = shape;
  CtxGuard c(*this);
  ctx_.parallel = &s;
  ScopeGuard g(*this);
  for (auto &v : s.vars) declare(v.get());
  checkBlock(s.body);
}

void Sema::checkElemAssign(ElemAssignStmt &s) {
  for (auto &i : s.indices) checkExpr(i);
  checkExpr(s.value);
  Decl *d = lookup(s.target);
  if (!d) return error(s.loc, "use of undeclared name '" + s.target + "'");
  s.frag = as<FragDecl>(d);
  if (!s.frag) {
    if (d->declKind == DeclKind::TensorArg)
      return error(s.loc, "cannot assign elements of global tensor '" + s.target + "' (compute in a fragment and copy it out)");
    return error(s.loc, "cannot assign elements of '" + s.target + "': it is " + describe(d) + ", not a fragment");
  }
  convertForStore(s.value, *s.frag);
  if (ctx_.slot && ctx_.slot->isPut() && s.frag->put != ctx_.slot)
    return error(s.loc, "inside 'put', a parallel block writes only fragments declared in the put; '" + s.target +
                            "' is not");
  ParallelStmt *p = ctx_.parallel;
  if (!p || p->shape.empty() || s.frag->shape.empty()) return;
  // v[i] += e in a 2-D block: a row sum of e into the 1-D v.
  if (p->shape.size() == 2 && s.frag->shape.size() == 1 && s.indices.size() == 1 && s.op == AssignOp::Add &&
      parallelDimOf(*s.indices[0]) == 0) {
    if (s.frag->dtype != DType::F32)
      return error(s.loc, "a row sum accumulates into an f32 fragment; '" + s.target + "' is " +
                              qla::dtypeName(s.frag->dtype));
    if (s.frag->shape[0] != p->shape[0])
      return error(s.loc, "fragment '" + s.target + "' has extent " + std::to_string(s.frag->shape[0]) +
                              " but the parallel block's rows range over " + std::to_string(p->shape[0]));
    s.rowSum = true;
    return;
  }
  if (s.frag->shape.size() != p->shape.size())
    return error(s.loc, "element assignment target '" + s.target + "' must have the parallel block's rank " +
                            std::to_string(p->shape.size()) + ", but it has shape " + shapeString(s.frag->shape) +
                            (p->shape.size() == 2 && s.frag->shape.size() == 1
                                 ? " (a 1-D fragment takes a row sum: '" + s.target + "[i] += ...', i the first index)"
                                 : ""));
  if (s.indices.size() != p->shape.size())
    return error(s.loc, "fragment '" + s.target + "' has rank " + std::to_string(p->shape.size()) +
                            " but is indexed with " + std::to_string(s.indices.size()) + " index" +
                            (s.indices.size() == 1 ? "" : "es"));
  for (size_t d = 0; d < s.indices.size(); ++d)
    if (parallelDimOf(*s.indices[d]) != int(d)) {
      if (s.indices[d]->type == ScalarType::Unknown) return;
      return error(s.indices[d]->loc, "element assignment must index '" + s.target +
                                          "' with the parallel index variables in order");
    }
  if (s.frag->shape != p->shape)
    error(s.loc, "fragment '" + s.target + "' has shape " + shapeString(s.frag->shape) +
                     " but the parallel block iterates over " + shapeString(p->shape));
}

void Sema::checkIf(IfStmt &s) {
  checkExpr(s.cond);
  if (s.cond->type != ScalarType::Unknown && s.cond->type != ScalarType::Bool)
    error(s.cond->loc, std::string("a condition must be bool, got ") + scalarTypeName(s.cond->type));
  CtxGuard c(*this);
  ctx_.prologue = c.saved.prologue || (c.saved.topLevel && roleKernel_);
  // A constant condition: the side not taken is checked as dead code.
  const bool known = s.cond->isConst() && s.cond->type == ScalarType::Bool;
  // In a put only the specialization's side is built: the slot's copies
  // cannot depend on a runtime value (every tile is filled exactly once).
  if (ctx_.slot && ctx_.slot->isPut() && !known && s.cond->type == ScalarType::Bool)
    error(s.cond->loc, "an 'if' inside 'put' needs a compile-time constant condition (it picks the copies of a "
                       "specialization; every slot tile is filled exactly once)");
  ctx_.dead = c.saved.dead || (known && !s.cond->value->b);
  checkBlock(s.thenBlock);
  ctx_.dead = c.saved.dead || (known && s.cond->value->b);
  if (s.elseBlock) checkBlock(*s.elseBlock);
}

void Sema::checkRole(RoleStmt &s) {
  KernelDecl &k = *kernel_;
  for (RoleStmt *r : k.roles)
    if (r->name == s.name) error(s.nameLoc, "redefinition of role '" + s.name + "'");
  bool rangeOk = true;
  // Constant expressions of the specialization constants fold here.
  auto fold = [&](ExprPtr &e, int64_t &value, const char *what) {
    if (!e) return;
    if (auto v = constInt(e, what)) value = *v;
    else rangeOk = false;
  };
  fold(s.wgFirstExpr, s.wgFirst, "a warpgroup index");
  fold(s.wgLastExpr, s.wgLast, "a warpgroup index");
  if (s.wgFirstExpr && s.wgLastLoc.line == s.wgFirstLoc.line && s.wgLastLoc.col == s.wgFirstLoc.col)
    s.wgLast = s.wgFirst;  // `warpgroup E`: one warpgroup
  bool regsOk = true;
  if (s.regsExpr) {
    if (auto v = constInt(s.regsExpr, "the register budget")) s.regs = *v;
    else regsOk = false;
  }
  if (s.freshAddressesExpr)
    if (auto v = constInt(s.freshAddressesExpr, "the register count of fresh_addresses", /*positive=*/true))
      s.freshAddresses = *v;
  if (s.partialWaitsExpr) {
    // A constant condition of the specialization constants.
    const char *what = "the partial_waits condition";
    checkExpr(s.partialWaitsExpr);
    const Expr &e = *s.partialWaitsExpr;
    if (e.type == ScalarType::Unknown) {
    } else if (e.type != ScalarType::Bool) {
      error(e.loc, std::string(what) + " must be a bool, got " + scalarTypeName(e.type));
    } else if (!e.value) {
      requireConst(e, what);
    } else {
      s.partialWaits = e.value->b;
    }
  }
  s.absent = false;
  if (!rangeOk) {
  } else if (s.wgFirst == s.wgLast + 1 && (s.wgFirstExpr || s.wgLastExpr)) {
    // `warpgroups F .. F - 1` from constant expressions: this
    // specialization has no such role.
    s.absent = true;
  } else if (s.wgFirst > s.wgLast) {
    error(s.wgLastLoc, "empty warpgroup range " + std::to_string(s.wgFirst) + " .. " + std::to_string(s.wgLast));
    rangeOk = false;
  } else if (k.numWarpgroups > 0 && s.wgLast >= k.numWarpgroups) {
    error(s.wgFirst >= k.numWarpgroups ? s.wgFirstLoc : s.wgLastLoc,
          "warpgroup " + std::to_string(s.wgFirst >= k.numWarpgroups ? s.wgFirst : s.wgLast) +
              " is out of range: threads(" + std::to_string(k.numThreads) + ") has warpgroups 0 .. " +
              std::to_string(k.numWarpgroups - 1));
    rangeOk = false;
  }
  if (rangeOk && !s.absent)
    for (RoleStmt *r : k.roles)
      if (s.wgFirst <= r->wgLast && r->wgFirst <= s.wgLast) {
        error(s.nameLoc, "role '" + s.name + "' overlaps role '" + r->name + "' (both use warpgroup " +
                             std::to_string(std::max(s.wgFirst, r->wgFirst)) + ")");
        break;
      }
  // setmaxnreg takes a multiple of 8 in [24, 256].
  if (regsOk && s.regsLoc.line != 0 && (s.regs < 24 || s.regs > 256 || s.regs % 8 != 0))
    error(s.regsLoc, "regs must be a multiple of 8 between 24 and 256, got " + std::to_string(s.regs));
  s.index = s.absent ? -1 : int(k.roles.size());
  if (!s.absent) k.roles.push_back(&s);
  CtxGuard c(*this);
  ctx_.role = &s;
  ctx_.dead = c.saved.dead || s.absent;
  checkBlock(s.body);
}

void Sema::checkChannel(ChannelDecl &s) {
  for (size_t i = 0; i < s.fields.size(); ++i) {
    ChannelField &f = s.fields[i];
    for (size_t j = 0; j < i; ++j)
      if (s.fields[j].name == f.name) error(f.loc, "duplicate slot field '" + f.name + "' in channel '" + s.name + "'");
    bool dtypeOk = true;
    checkTileType(f.dtypeName, f.dtypeLoc, f.dtype, f.dtypeParam, dtypeOk, f.extents, f.shape, "channel slot tile");
    if (!dtypeOk) badDtype_.insert(&f);
  }
  s.depthValue = 0;
  if (auto v = constInt(s.depth, "a channel depth")) {
    if (*v < 1) error(s.depth->loc, "a channel needs a depth of at least 1, got " + std::to_string(*v));
    else if (*v > kMaxBuffers) error(s.depth->loc, "a channel may have a depth of at most " + std::to_string(kMaxBuffers) + ", got " + std::to_string(*v));
    else s.depthValue = *v;
  }
  s.over = s.under = nullptr;
  if (!s.overName.empty()) {
    Decl *d = s.overName == s.name ? nullptr : lookup(s.overName);
    auto *x = d ? as<ChannelDecl>(d) : nullptr;
    if (s.overName == s.name)
      error(s.overLoc, "channel '" + s.name + "' cannot share its own slot ('over' names another channel, declared before it)");
    else if (!d)
      error(s.overLoc, "use of undeclared name '" + s.overName + "' (the channel after 'over' is declared before this one)");
    else if (!x)
      error(s.overLoc, "'" + s.overName + "' is " + describe(d) + ", not a channel");
    else if (x->over)
      error(s.overLoc, "channel '" + x->name + "' shares the slot of '" + x->over->name + "' itself; '" + s.name +
                           "' cannot share it in turn (no chains of 'over')");
    else if (x->under)
      error(s.overLoc, "channel '" + x->name + "' already has '" + x->under->name + "' over it; one channel at most shares a slot's bytes");
    else if (s.depthValue != 1 || x->depthValue != 1)
      error(s.overLoc, "'over' needs two channels of depth 1 ('" + s.name + "' has depth " + std::to_string(s.depthValue) +
                           ", '" + x->name + "' " + std::to_string(x->depthValue) + ")");
    else {
      s.over = x;
      x->under = &s;
    }
  }
  s.producer = nullptr;
  s.consumers.clear();
  s.puts.clear();
  s.gets.clear();
  s.index = int(kernel_->channels.size());
  kernel_->channels.push_back(&s);
  declare(&s);
}

void Sema::checkSlot(SlotStmt &s) {
  const char *kw = s.isPut() ? "put" : "get";
  s.role = ctx_.role;
  s.dead = ctx_.dead;
  Decl *d = lookup(s.channelName);
  ChannelDecl *ch = nullptr;
  if (!d)
    error(s.channelLoc, "use of undeclared name '" + s.channelName + "'");
  else if (!(ch = as<ChannelDecl>(d)))
    error(s.channelLoc, "'" + s.channelName + "' is " + describe(d) + ", not a channel");
  s.channel = ch;
  if (ch) {
    if (s.bindings.size() != ch->fields.size())
      error(s.channelLoc, "channel '" + ch->name + "' has " + std::to_string(ch->fields.size()) + " tile" +
                              (ch->fields.size() == 1 ? "" : "s") + " per slot but '" + kw + "' binds " +
                              std::to_string(s.bindings.size()) + " name" + (s.bindings.size() == 1 ? "" : "s"));
    // One producer role; any number of consumer roles, the producer among
    // them if it reads back its own slots (a get after its put).
    bool consumes = s.role && std::find(ch->consumers.begin(), ch->consumers.end(), s.role) != ch->consumers.end();
    if (s.role && !ctx_.dead) {
      if (s.isPut() && ch->producer && ch->producer != s.role)
        error(s.loc, "channel '" + ch->name + "' already has its puts in role '" + ch->producer->name +
                         "'; all puts of a channel must be in one role");
      else if (s.isPut())
        ch->producer = s.role;
      else if (!consumes)
        ch->consumers.push_back(s.role);
    }
    for (SlotStmt *o = ctx_.slot; o; o = o->outer)
      if (o->channel == ch) {
        error(s.loc, std::string("'") + kw + " " + ch->name + "' is nested in a '" + (o->isPut() ? "put" : "get") +
                         "' of the same channel (at line " + std::to_string(o->loc.line) +
                         "); it would wait on a slot that the outer one holds");
        break;
      }
    (s.isPut() ? ch->puts : ch->gets).push_back(&s);
  }
  s.outer = ctx_.slot;
  CtxGuard c(*this);
  ctx_.slot = &s;
  ScopeGuard g(*this);
  for (size_t i = 0; i < s.bindings.size(); ++i) {
    SlotBindingDecl &b = *s.bindings[i];
    b.channel = ch;
    b.field = int(i);
    b.shape.clear();
    if (ch && i < ch->fields.size()) {
      const ChannelField &f = ch->fields[i];
      b.dtypeName = f.dtypeName;
      b.dtypeLoc = f.dtypeLoc;
      b.dtype = f.dtype;
      b.dtypeParam = f.dtypeParam;
      b.shape = f.shape;
      if (badDtype_.count(&f)) badDtype_.insert(static_cast<Decl *>(&b));
    }
    declare(&b);
  }
  checkBlock(s.body);
}

void Sema::checkChannelUse(KernelDecl &k) {
  for (ChannelDecl *ch : k.channels) {
    if (ch->puts.empty() && ch->gets.empty())
      error(ch->nameLoc, "channel '" + ch->name + "' is never used (it needs a 'put' in one role and a 'get' in another)");
    else if (ch->puts.empty())
      error(ch->nameLoc, "channel '" + ch->name + "' has a 'get' but no 'put'");
    else if (ch->gets.empty())
      error(ch->nameLoc, "channel '" + ch->name + "' has a 'put' but no 'get'");
    else if (ch->over)
      checkOver(*ch->over, *ch);
  }
}

// y over x: y's slot takes x's bytes once every role has released x, and x's
// next fill waits until every role has released y (qla-lower-channels adds
// the waits). That order is the program's: x and y filled once each per
// iteration, in that order in every role, neither held while the other is
// waited for.
void Sema::checkOver(ChannelDecl &x, ChannelDecl &y) {
  if (x.puts.empty() || x.gets.empty()) return;  // reported above
  const std::string pair = "channel '" + y.name + "' shares the slot of '" + x.name + "'";
  // What this specialization takes (puts in untaken branches of constant
  // conditions do not count).
  auto live = [](const std::vector<SlotStmt *> &v) {
    std::vector<SlotStmt *> r;
    for (SlotStmt *s : v)
      if (!s->dead) r.push_back(s);
    return r;
  };
  for (ChannelDecl *c : {&x, &y}) {
    std::vector<SlotStmt *> puts = live(c->puts);
    if (puts.size() > 1)
      error(puts[1]->loc, pair + ": each of the two needs exactly one 'put' (one fill of each per iteration, "
                                 "alternating); '" + c->name + "' has " + std::to_string(puts.size()));
  }
  auto before = [](const SourceLoc &a, const SourceLoc &b) {
    return a.line < b.line || (a.line == b.line && a.col < b.col);
  };
  // Nested: a put or get of one inside a get of the other holds a slot the
  // other's fill waits for.
  for (ChannelDecl *c : {&x, &y}) {
    ChannelDecl *other = c == &x ? &y : &x;
    for (auto *list : {&c->puts, &c->gets})
      for (SlotStmt *s : live(*list))
        for (SlotStmt *o = s->outer; o; o = o->outer)
          if (o->channel == other && !o->isPut()) {
            error(s->loc, pair + ": '" + (s->isPut() ? "put " : "get ") + c->name + "' is nested in a 'get " +
                              other->name + "' (at line " + std::to_string(o->loc.line) + "); " +
                              (c == &y ? "'" + y.name + "' is filled only once every role has released '" + x.name + "'"
                                       : "'" + x.name + "' is refilled only once every role has released '" + y.name + "'") +
                              ": end the 'get' first");
            break;
          }
  }
  // In each role, every put or get of x before every put or get of y.
  std::vector<SlotStmt *> xs = live(x.puts), ys = live(y.puts), xg = live(x.gets), yg = live(y.gets);
  xs.insert(xs.end(), xg.begin(), xg.end());
  ys.insert(ys.end(), yg.begin(), yg.end());
  for (SlotStmt *b : ys)
    for (SlotStmt *a : xs)
      if (a->role && a->role == b->role && before(b->loc, a->loc)) {
        error(b->loc, pair + ": in role '" + b->role->name + "' this '" + (b->isPut() ? "put " : "get ") + y.name +
                          "' comes before the '" + (a->isPut() ? "put " : "get ") + x.name + "' at line " +
                          std::to_string(a->loc.line) + " (each iteration uses '" + x.name + "', then '" + y.name + "')");
        return;
      }
}

}  // namespace qla::fe
