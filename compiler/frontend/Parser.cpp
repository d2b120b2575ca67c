// The QLA parser: recursive descent over the token vector, building the AST of
// AST.h. It stops at the first syntax error (an internal exception unwinds to
// parseQla), which keeps it simple and makes truncated input safe: every
// `expect` checks the token, and the last token is always Eof.
//
// The grammar is newline-insensitive: a statement is recognised by its first
// token (a keyword or, for assignments, a name) and an expression ends at the
// first token that cannot continue it. Semicolons are optional separators.
#include <map>
#include <set>
#include <unordered_map>

#include "qla/frontend/Frontend.h"
#include "qla/frontend/Lexer.h"

namespace qla::fe {

namespace {

struct ParseAbort {};

// Deep nesting ("((((((...") must give an error, not a stack overflow; so
// must a very long operator chain, whose left-deep tree the later recursive
// walks (sema, printers, destructors) would descend.
constexpr int kMaxDepth = 200;
constexpr size_t kMaxExprTokens = 4000;

// A `fn`: its parameters and body tokens (between the braces), expanded in
// place at every call statement (docs/language.md, "Functions and includes").
struct FnDef {
  Token name;
  std::vector<Token> params;
  std::vector<Token> body;
  std::set<std::string> locals;  // names the body declares (other than parameters)
};

// What the parsers of a file and of the files it includes share.
struct Unit {
  const IncludeResolver *resolver = nullptr;
  std::map<std::string, FnDef> fns;
  std::set<std::string> included;  // resolved paths: each file is read once
  int includeDepth = 0;
  int expansions = 0;
};

constexpr int kMaxIncludeDepth = 64;
constexpr int kMaxExpansions = 100000;

class Parser {
 public:
  Parser(std::vector<Token> toks, std::vector<Diagnostic> &diags, Unit &unit)
      : toks_(std::move(toks)), diags_(diags), unit_(unit) {}

  std::unique_ptr<Module> parseModule(const std::string &filename) {
    auto m = std::make_unique<Module>();
    m->filename = filename;
    if (at(Tok::Eof)) fail(cur().loc, "expected 'kernel', found end of file (a file holds one or more kernels)");
    while (!at(Tok::Eof)) {
      if (at(Tok::KwInclude)) parseInclude();
      else if (at(Tok::KwFn)) parseFn();
      else m->kernels.push_back(parseKernel());
    }
    if (m->kernels.empty())
      fail(cur().loc, "expected 'kernel', found end of file (a file holds one or more kernels; one with only "
                      "fns is a library to include)");
    return m;
  }

  // An included file: fns and includes only.
  void parseLibrary() {
    while (!at(Tok::Eof)) {
      if (at(Tok::KwInclude)) parseInclude();
      else if (at(Tok::KwFn)) parseFn();
      else if (at(Tok::KwKernel))
        fail(cur().loc, "an included file holds only fns and includes, found 'kernel'");
      else
        fail(cur().loc, "expected 'fn' or 'include' in an included file, found " + found());
    }
  }

 private:
  // --- token helpers -------------------------------------------------------
  const Token &cur() const { return toks_[pos_]; }
  const Token &ahead(size_t k) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  bool at(Tok k) const { return cur().kind == k; }
  Token take() {
    Token t = cur();
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  bool accept(Tok k) {
    if (!at(k)) return false;
    take();
    return true;
  }
  std::string found() const {
    if (at(Tok::Eof)) return "end of file";
    return "'" + cur().text + "'";
  }
  [[noreturn]] void fail(const SourceLoc &loc, const std::string &msg) {
    diags_.push_back(Diagnostic{loc, msg});
    throw ParseAbort{};
  }
  Token expect(Tok k, const std::string &context = "") {
    if (!at(k))
      fail(cur().loc, "expected " + tokSpelling(k) + (context.empty() ? "" : " " + context) +
                          ", found " + found());
    return take();
  }
  Token expectIdent(const std::string &what) {
    if (!at(Tok::Ident)) fail(cur().loc, "expected " + what + ", found " + found());
    return take();
  }
  // Kernel and role names live apart from the names of the body, so they may
  // also be keywords (`kernel gemm`).
  Token expectNameOrKeyword(const std::string &what) {
    if (!at(Tok::Ident) && !isKeyword(cur().kind))
      fail(cur().loc, "expected " + what + ", found " + found());
    return take();
  }

  struct DepthGuard {
    Parser &p;
    explicit DepthGuard(Parser &pp) : p(pp) {
      if (++p.depth_ > kMaxDepth) p.fail(p.cur().loc, "nesting too deep");
    }
    ~DepthGuard() { --p.depth_; }
  };

  // --- fns and includes ----------------------------------------------------
  // include "NAME": the file's fns, read once per compile.
  void parseInclude() {
    Token kw = take();
    Token name = expect(Tok::String, "after 'include' (include \"file.qla\")");
    if (!unit_.resolver || !*unit_.resolver)
      fail(name.loc, "cannot include \"" + name.text + "\": this compile has no include path");
    std::string path, text;
    std::string why = (*unit_.resolver)(name.text, name.loc.file, path, text);
    if (!why.empty()) fail(name.loc, "cannot include \"" + name.text + "\": " + why);
    if (!unit_.included.insert(path).second) return;
    if (unit_.includeDepth >= kMaxIncludeDepth) fail(kw.loc, "includes nested too deep");
    std::vector<Token> toks = lexQla(text, path, diags_);
    if (!diags_.empty()) throw ParseAbort{};
    ++unit_.includeDepth;
    Parser sub(std::move(toks), diags_, unit_);
    sub.parseLibrary();
    --unit_.includeDepth;
  }

  // fn NAME(P1, P2, ...) { BODY }
  void parseFn() {
    take();
    FnDef f;
    f.name = expectIdent("a function name after 'fn'");
    if (builtinFromName(f.name.text) != Builtin::Unknown)
      fail(f.name.loc, "'" + f.name.text + "' is a builtin function; a fn needs another name");
    if (auto it = unit_.fns.find(f.name.text); it != unit_.fns.end())
      fail(f.name.loc, "fn '" + f.name.text + "' is already defined at " + it->second.name.loc.str());
    expect(Tok::LParen, "after the function name");
    if (!at(Tok::RParen)) {
      do {
        Token p = expectIdent("a parameter name");
        for (auto &q : f.params)
          if (q.text == p.text) fail(p.loc, "parameter '" + p.text + "' is given twice");
        f.params.push_back(p);
      } while (accept(Tok::Comma));
    }
    expect(Tok::RParen, "after the parameters");
    Token open = expect(Tok::LBrace, "before the function body");
    int depth = 1;
    while (true) {
      if (at(Tok::Eof)) fail(open.loc, "the body of fn '" + f.name.text + "' has no closing '}'");
      if (at(Tok::LBrace)) ++depth;
      if (at(Tok::RBrace) && --depth == 0) break;
      switch (cur().kind) {
      case Tok::KwRole:
      case Tok::KwChannel:
      case Tok::KwKernel:
      case Tok::KwFn:
      case Tok::KwInclude:
        fail(cur().loc, "a fn body may not hold " + found() + " (roles, channels, kernels, fns and includes "
                        "stand at the top level)");
      default: break;
      }
      f.body.push_back(take());
    }
    take();
    collectLocals(f);
    unit_.fns.emplace(f.name.text, std::move(f));
  }

  // The names a body declares: let/var/frag/shared NAME, for NAME, pipeline
  // NAME, for (I, J, ...), put/get CH -> (A, B, ...).
  static void collectLocals(FnDef &f) {
    const auto &b = f.body;
    auto ident = [&](size_t i) { return i < b.size() && b[i].kind == Tok::Ident; };
    auto add = [&](const Token &t) { f.locals.insert(t.text); };
    auto list = [&](size_t i) {  // '(' A, B, ... ')' at i
      for (size_t k = i + 1; k < b.size() && b[k].kind != Tok::RParen; ++k)
        if (b[k].kind == Tok::Ident) add(b[k]);
    };
    for (size_t i = 0; i < b.size(); ++i) {
      switch (b[i].kind) {
      case Tok::KwLet:
      case Tok::KwVar:
      case Tok::KwFrag:
      case Tok::KwShared:
      case Tok::KwPipeline:
        if (ident(i + 1)) add(b[i + 1]);
        break;
      case Tok::KwFor:
        if (ident(i + 1)) add(b[i + 1]);
        else if (i + 1 < b.size() && b[i + 1].kind == Tok::LParen) list(i + 1);
        break;
      case Tok::KwPut:
      case Tok::KwGet:
        if (ident(i + 1) && i + 3 < b.size() && b[i + 2].kind == Tok::Arrow && b[i + 3].kind == Tok::LParen)
          list(i + 3);
        break;
      default: break;
      }
    }
    for (auto &p : f.params) f.locals.erase(p.text);
  }

  bool atFnCall() const {
    return at(Tok::Ident) && ahead(1).kind == Tok::LParen && unit_.fns.count(cur().text);
  }

  // NAME(ARGS) at pos_, a call statement: its tokens are replaced by the fn's
  // body, each parameter by its argument (in parentheses unless one token),
  // each name the body declares by NAME'N (N: this expansion), so that it
  // cannot meet a name of the caller. Tokens of the body keep their place in
  // the fn and name the call in loc.via.
  void expandCall() {
    const size_t start = pos_;
    Token name = take();
    const FnDef &f = unit_.fns.at(name.text);
    for (const Expansion *e = name.loc.via.get(); e; e = e->call.via.get())
      if (e->fn == name.text)
        fail(name.loc, "fn '" + name.text + "' calls itself: fns are expanded in place and cannot recurse");
    if (++unit_.expansions > kMaxExpansions) fail(name.loc, "too many fn expansions");
    take();  // '('
    std::vector<std::vector<Token>> args;
    if (!at(Tok::RParen)) {
      args.emplace_back();
      int depth = 0;
      while (true) {
        if (at(Tok::Eof)) fail(name.loc, "the call of fn '" + name.text + "' has no closing ')'");
        if (depth == 0 && at(Tok::RParen)) break;
        if (depth == 0 && at(Tok::Comma)) {
          if (args.back().empty()) fail(cur().loc, "expected an argument before ','");
          take();
          args.emplace_back();
          continue;
        }
        if (at(Tok::LParen) || at(Tok::LBracket)) ++depth;
        if (at(Tok::RParen) || at(Tok::RBracket)) --depth;
        args.back().push_back(take());
      }
      if (args.back().empty()) fail(cur().loc, "expected an argument before ')'");
    }
    take();  // ')'
    if (args.size() != f.params.size())
      fail(name.loc, "fn '" + name.text + "' takes " + std::to_string(f.params.size()) + " argument" +
                         (f.params.size() == 1 ? "" : "s") + ", got " + std::to_string(args.size()));
    auto via = std::make_shared<Expansion>(Expansion{name.text, name.loc});
    const std::string suffix = "'" + std::to_string(unit_.expansions);
    std::vector<Token> out;
    for (size_t i = 0; i < f.body.size(); ++i) {
      Token t = f.body[i];
      t.loc.via = via;
      const bool member = i > 0 && f.body[i - 1].kind == Tok::Dot;
      if (t.kind == Tok::Ident && !member) {
        size_t p = 0;
        while (p < f.params.size() && f.params[p].text != t.text) ++p;
        if (p < f.params.size()) {
          const auto &a = args[p];
          if (a.size() == 1) {
            out.push_back(a[0]);
          } else {
            Token l = a[0], r = a.back();
            l.kind = Tok::LParen, l.text = "(";
            r.kind = Tok::RParen, r.text = ")";
            out.push_back(l);
            out.insert(out.end(), a.begin(), a.end());
            out.push_back(r);
          }
          continue;
        }
        if (f.locals.count(t.text)) t.text += suffix;
      }
      out.push_back(std::move(t));
    }
    toks_.erase(toks_.begin() + long(start), toks_.begin() + long(pos_));
    toks_.insert(toks_.begin() + long(start), out.begin(), out.end());
    pos_ = start;
  }

  // --- kernels ---------------------------------------------------------------
  std::unique_ptr<KernelDecl> parseKernel() {
    auto k = std::make_unique<KernelDecl>();
    k->loc = expect(Tok::KwKernel).loc;
    Token name = expectNameOrKeyword("a kernel name after 'kernel'");
    k->name = name.text;
    k->nameLoc = name.loc;
    if (accept(Tok::Less)) {
      do {
        Token pn = expectIdent("a specialization constant name");
        expect(Tok::Assign, "after specialization constant '" + pn.text + "' (NAME = default)");
        auto p = std::make_unique<ParamDecl>(pn.text, pn.loc);
        p->index = int(k->params.size());
        // '>' closes the list, so it cannot be a comparison here (use parens).
        p->defaultExpr = parseExpr(/*noGreater=*/true);
        k->params.push_back(std::move(p));
      } while (accept(Tok::Comma));
      expect(Tok::Greater, "to close the specialization constants");
    }
    expect(Tok::LParen, "before the kernel arguments");
    if (!at(Tok::RParen)) {
      do parseArg(*k);
      while (accept(Tok::Comma));
    }
    expect(Tok::RParen, "after the kernel arguments");
    expect(Tok::KwGrid, "after the kernel arguments");
    expect(Tok::LParen, "after 'grid'");
    parseExprList(k->grid, 3, "grid");
    expect(Tok::RParen, "after the grid");
    expect(Tok::KwThreads, "after the grid");
    expect(Tok::LParen, "after 'threads'");
    k->threads = parseExpr();
    expect(Tok::RParen, "after the thread count");
    if (at(Tok::KwCluster)) {
      k->clusterLoc = take().loc;
      expect(Tok::LParen, "after 'cluster'");
      parseExprList(k->cluster, 3, "cluster");
      expect(Tok::RParen, "after the cluster shape");
    }
    if (at(Tok::KwOccupancy)) {
      k->occupancyLoc = take().loc;
      expect(Tok::LParen, "after 'occupancy'");
      k->occupancy = parseExpr();
      expect(Tok::RParen, "after the block count");
    }
    if (at(Tok::KwFollows)) {
      k->followsLoc = take().loc;
      k->hasFollows = true;
      expect(Tok::LParen, "after 'follows'");
      if (!at(Tok::RParen)) {
        do {
          Token t = expectIdent("a tensor argument that the preceding kernel writes");
          k->follows.push_back({t.text, t.loc});
        } while (accept(Tok::Comma));
      }
      expect(Tok::RParen, "after the tensors of 'follows'");
    }
    parseBlock(k->body);
    return k;
  }

  void parseExprList(std::vector<ExprPtr> &out, size_t max, const char *what) {
    do {
      if (out.size() == max)
        fail(cur().loc, std::string(what) + " takes at most " + std::to_string(max) + " values");
      out.push_back(parseExpr());
    } while (accept(Tok::Comma));
  }

  void parseArg(KernelDecl &k) {
    Token name = expectIdent("an argument name");
    expect(Tok::Colon, "after argument '" + name.text + "'");
    bool out = accept(Tok::KwOut);
    Token dt = expectIdent("a dtype (bf16, f16, f32, i32 or i64)");
    if (!at(Tok::LBracket)) {
      if (out) fail(cur().loc, "expected '[' after '" + dt.text + "': an 'out' argument must be a tensor");
      auto s = std::make_unique<ScalarArgDecl>(name.text, name.loc);
      s->dtypeName = dt.text;
      s->dtypeLoc = dt.loc;
      s->argIndex = int(k.args.size());
      s->scalarIndex = int(k.scalars.size());
      k.scalars.push_back(s.get());
      k.args.push_back(std::move(s));
      return;
    }
    take();
    auto t = std::make_unique<TensorArgDecl>(name.text, name.loc);
    t->dtypeName = dt.text;
    t->dtypeLoc = dt.loc;
    t->isOutput = out;
    do {
      TensorDim d;
      d.loc = cur().loc;
      if (at(Tok::Int)) {
        d.literal = take().intValue;
      } else if (at(Tok::Ident)) {
        Token dn = take();
        for (auto &existing : k.dims)
          if (existing->name == dn.text) d.sym = existing.get();
        if (!d.sym) {
          k.dims.push_back(std::make_unique<DimDecl>(dn.text, dn.loc));
          k.dims.back()->index = int(k.dims.size()) - 1;
          d.sym = k.dims.back().get();
        }
      } else {
        fail(cur().loc, "expected a dim name or size, found " + found());
      }
      t->dims.push_back(d);
    } while (accept(Tok::Comma));
    expect(Tok::RBracket, "after the tensor dims");
    t->argIndex = int(k.args.size());
    t->tensorIndex = int(k.tensors.size());
    k.tensors.push_back(t.get());
    k.args.push_back(std::move(t));
  }

  // --- statements ------------------------------------------------------------
  void parseBlock(Block &b) {
    DepthGuard g(*this);
    b.loc = expect(Tok::LBrace).loc;
    while (!at(Tok::RBrace)) {
      if (accept(Tok::Semi)) continue;
      if (at(Tok::Eof)) fail(cur().loc, "expected '}' to close the block, found end of file");
      if (atFnCall()) {
        expandCall();
        continue;
      }
      b.stmts.push_back(parseStmt());
    }
    take();
  }

  StmtPtr parseStmt() {
    switch (cur().kind) {
    case Tok::KwLet: return parseLet();
    case Tok::KwVar: return parseVar();
    case Tok::KwShared: return parseShared();
    case Tok::KwFrag: return parseFrag();
    case Tok::KwCopy: return parseCopy();
    case Tok::KwPrefetch: return parsePrefetch();
    case Tok::KwFor: return ahead(1).kind == Tok::LParen ? parseParallel() : parseFor();
    case Tok::KwPipeline: return parsePipeline();
    case Tok::KwIf: return parseIf();
    case Tok::KwRole: return parseRole();
    case Tok::KwChannel: return parseChannel();
    case Tok::KwPut:
    case Tok::KwGet: return parseSlot();
    case Tok::Ident: return parseAssign();
    default: break;
    }
    fail(cur().loc, "expected a statement, found " + found());
  }

  StmtPtr parseLet() {
    SourceLoc loc = take().loc;
    Token n = expectIdent("a name after 'let'");
    auto s = std::make_unique<LetDecl>(loc, n.text, n.loc);
    expect(Tok::Assign, "after 'let " + n.text + "'");
    s->init = parseExpr();
    return s;
  }

  StmtPtr parseVar() {
    SourceLoc loc = take().loc;
    Token n = expectIdent("a name after 'var'");
    auto s = std::make_unique<VarDecl>(loc, n.text, n.loc);
    expect(Tok::Assign, "after 'var " + n.text + "' (a var needs an initial value)");
    s->init = parseExpr();
    return s;
  }

  // NAME ':' DTYPE '[' extents ']' -- shared by shared, frag and channel fields.
  void parseTileType(const Token &name, std::string &dtypeName, SourceLoc &dtypeLoc,
                     std::vector<ExprPtr> &extents) {
    expect(Tok::Colon, "after '" + name.text + "'");
    Token dt = expectIdent("a dtype (bf16, f16, f32, i32 or i64)");
    dtypeName = dt.text;
    dtypeLoc = dt.loc;
    expect(Tok::LBracket, "after the dtype (tiles need a shape, e.g. f32[64, 64])");
    do extents.push_back(parseExpr());
    while (accept(Tok::Comma));
    expect(Tok::RBracket, "after the tile shape");
  }

  StmtPtr parseShared() {
    SourceLoc loc = take().loc;
    Token n = expectIdent("a name after 'shared'");
    auto s = std::make_unique<SharedDecl>(loc, n.text, n.loc);
    parseTileType(n, s->dtypeName, s->dtypeLoc, s->extents);
    return s;
  }

  StmtPtr parseFrag() {
    SourceLoc loc = take().loc;
    Token n = expectIdent("a name after 'frag'");
    auto s = std::make_unique<FragDecl>(loc, n.text, n.loc);
    parseTileType(n, s->dtypeName, s->dtypeLoc, s->extents);
    if (accept(Tok::Assign)) parseFragInit(s->init);
    return s;
  }

  RedOp parseRedOp() {
    if (accept(Tok::Plus)) return RedOp::Add;
    if (accept(Tok::KwMax)) return RedOp::Max;
    if (accept(Tok::KwMin)) return RedOp::Min;
    fail(cur().loc, "expected a reduction operator ('+', 'max' or 'min'), found " + found());
  }

  void parseDimArg(FragInit &fi) {
    expect(Tok::KwDim);
    expect(Tok::Assign, "after 'dim'");
    fi.dimLoc = cur().loc;
    fi.dim = int(std::min<int64_t>(expect(Tok::Int, "after 'dim ='").intValue, 1 << 20));
    fi.dimGiven = true;
  }

  void parseSourceName(FragInit &fi) {
    Token s = expectIdent("a fragment name");
    fi.sourceName = s.text;
    fi.sourceLoc = s.loc;
  }

  void parseFragInit(FragInit &fi) {
    fi.loc = cur().loc;
    if (accept(Tok::KwReduce)) {
      fi.kind = FragInit::Kind::Reduce;
      expect(Tok::LParen, "after 'reduce'");
      fi.op = parseRedOp();
      expect(Tok::Comma, "after the reduction operator");
      parseSourceName(fi);
      expect(Tok::Comma, "after the source (reduce needs 'dim = 0' or 'dim = 1')");
      parseDimArg(fi);
      expect(Tok::RParen, "to close 'reduce('");
    } else if (accept(Tok::KwScan)) {
      fi.kind = FragInit::Kind::Scan;
      expect(Tok::LParen, "after 'scan'");
      fi.op = parseRedOp();
      expect(Tok::Comma, "after the scan operator");
      parseSourceName(fi);
      if (accept(Tok::Comma)) parseDimArg(fi);
      expect(Tok::RParen, "to close 'scan('");
    } else if (accept(Tok::KwCast)) {
      fi.kind = FragInit::Kind::Cast;
      expect(Tok::LParen, "after 'cast'");
      parseSourceName(fi);
      expect(Tok::RParen, "to close 'cast('");
    } else if (accept(Tok::KwInvUnitLower)) {
      fi.kind = FragInit::Kind::InvUnitLower;
      expect(Tok::LParen, "after 'inv_unit_lower'");
      parseSourceName(fi);
      while (accept(Tok::Comma)) {
        Token kw = expectIdent("'blocks' or 'operands' (inv_unit_lower(l, blocks = B) or inv_unit_lower(l, operands = f16))");
        if (kw.text == "blocks" && !fi.blocksExpr) {
          expect(Tok::Assign, "after 'blocks'");
          fi.blocksLoc = cur().loc;
          fi.blocksExpr = parseExpr();
        } else if (kw.text == "operands" && !fi.f16Operands) {
          expect(Tok::Assign, "after 'operands'");
          Token v = expectIdent("f16 (inv_unit_lower(l, operands = f16))");
          if (v.text != "f16")
            fail(v.loc, "inv_unit_lower operands = " + v.text + ": only f16 is supported (tensor-core products of f16 operands)");
          fi.f16Operands = true;
          fi.operandsLoc = kw.loc;
        } else if (kw.text == "blocks" || kw.text == "operands") {
          fail(kw.loc, "'" + kw.text + "' given twice to inv_unit_lower");
        } else {
          fail(kw.loc, "expected 'blocks' or 'operands' in inv_unit_lower, found '" + kw.text + "'");
        }
      }
      expect(Tok::RParen, "to close 'inv_unit_lower('");
    } else {
      fi.kind = FragInit::Kind::Fill;
      fi.fill = parseExpr();
    }
  }

  void parseRef(TileRef &r) {
    Token n = expectIdent("a tile or tensor name");
    r.name = n.text;
    r.loc = n.loc;
    if (at(Tok::CaretT)) {
      r.transposed = true;
      r.transposeLoc = take().loc;
    }
    if (!accept(Tok::LBracket)) return;
    r.sliced = true;
    do {
      Slice s;
      s.loc = cur().loc;
      s.start = parseExpr();
      if (accept(Tok::ColonPlus)) s.extent = parseExpr();
      if (at(Tok::KwUntil)) {
        if (!s.extent)
          fail(cur().loc, "'until' bounds a range slice (start :+ extent until limit), not a single index");
        take();
        s.limit = parseExpr();
      }
      r.slices.push_back(std::move(s));
    } while (accept(Tok::Comma));
    expect(Tok::RBracket, "to close the slice");
    if (at(Tok::CaretT) && !r.transposed) {  // A[...]^T: sema says why not
      r.transposed = true;
      r.transposeLoc = take().loc;
    }
  }

  StmtPtr parseCopy() {
    auto s = std::make_unique<CopyStmt>(take().loc);
    if (at(Tok::LParen)) {  // copy(+): add into the destination
      s->opLoc = take().loc;
      if (!at(Tok::Plus)) fail(cur().loc, "copy(op) takes '+' (add into the destination), found " + found());
      take();
      expect(Tok::RParen, "after 'copy(+'");
      s->add = true;
    }
    parseRef(s->src);
    expect(Tok::Arrow, "between the source and destination of 'copy'");
    parseRef(s->dst);
    return s;
  }

  StmtPtr parsePrefetch() {
    auto s = std::make_unique<PrefetchStmt>(take().loc);
    parseRef(s->src);
    return s;
  }

  std::unique_ptr<LoopVarDecl> parseLoopHead(Stmt *owner, ExprPtr &lo, ExprPtr &hi, const char *kw) {
    Token v = expectIdent(std::string("a loop variable after '") + kw + "'");
    auto var = std::make_unique<LoopVarDecl>(v.text, v.loc);
    var->owner = owner;
    expect(Tok::KwIn, "after the loop variable");
    lo = parseExpr();
    expect(Tok::DotDot, "in the loop range (lo .. hi)");
    hi = parseExpr();
    return var;
  }

  StmtPtr parseFor() {
    auto s = std::make_unique<ForStmt>(take().loc);
    s->var = parseLoopHead(s.get(), s->lo, s->hi, "for");
    s->unroll = accept(Tok::KwUnroll);
    parseBlock(s->body);
    return s;
  }

  StmtPtr parsePipeline() {
    auto s = std::make_unique<PipelineStmt>(take().loc);
    s->var = parseLoopHead(s.get(), s->lo, s->hi, "pipeline");
    expect(Tok::KwStages, "after the pipeline range");
    expect(Tok::LParen, "after 'stages'");
    s->stages = parseExpr();
    expect(Tok::RParen, "after the stage count");
    parseBlock(s->body);
    return s;
  }

  StmtPtr parseParallel() {
    auto s = std::make_unique<ParallelStmt>(take().loc);
    take();  // '('
    do {
      Token v = expectIdent("an index variable");
      auto var = std::make_unique<LoopVarDecl>(v.text, v.loc);
      var->owner = s.get();
      var->parallelDim = int(s->vars.size());
      s->vars.push_back(std::move(var));
    } while (accept(Tok::Comma));
    expect(Tok::RParen, "after the index variables");
    expect(Tok::KwIn, "after the index variables");
    expect(Tok::KwParallel, "after 'for (...) in'");
    expect(Tok::LParen, "after 'parallel'");
    do s->extents.push_back(parseExpr());
    while (accept(Tok::Comma));
    expect(Tok::RParen, "after the parallel extents");
    parseBlock(s->body);
    return s;
  }

  StmtPtr parseIf() {
    auto s = std::make_unique<IfStmt>(take().loc);
    s->cond = parseExpr();
    parseBlock(s->thenBlock);
    if (accept(Tok::KwElse)) {
      s->elseBlock = std::make_unique<Block>();
      if (at(Tok::KwIf)) {
        DepthGuard g(*this);
        s->elseBlock->loc = cur().loc;
        s->elseBlock->stmts.push_back(parseIf());
      } else {
        parseBlock(*s->elseBlock);
      }
    }
    return s;
  }

  StmtPtr parseRole() {
    auto s = std::make_unique<RoleStmt>(take().loc);
    Token n = expectNameOrKeyword("a role name after 'role'");
    s->name = n.text;
    s->nameLoc = n.loc;
    expect(Tok::Colon, "after the role name");
    // A warpgroup index or the regs: an int literal, or a constant
    // expression that sema folds (ExprPtr kept, the int set later).
    auto number = [&](const char *after, int64_t &value, SourceLoc &loc, ExprPtr &expr) {
      if (cur().kind != Tok::Int && cur().kind != Tok::Ident && cur().kind != Tok::LParen)
        fail(cur().loc, std::string("expected integer ") + after + ", found " + found());
      loc = cur().loc;
      expr = parseExpr();
      if (expr->kind == ExprKind::IntLit) {
        value = static_cast<IntLitExpr &>(*expr).literal;
        expr.reset();
      }
    };
    if (accept(Tok::KwWarpgroup)) {
      number("after 'warpgroup'", s->wgFirst, s->wgFirstLoc, s->wgFirstExpr);
      s->wgLast = s->wgFirst;
      s->wgLastLoc = s->wgFirstLoc;
    } else if (accept(Tok::KwWarpgroups)) {
      number("after 'warpgroups'", s->wgFirst, s->wgFirstLoc, s->wgFirstExpr);
      expect(Tok::DotDot, "in the warpgroup range (first .. last)");
      number("after '..'", s->wgLast, s->wgLastLoc, s->wgLastExpr);
    } else {
      fail(cur().loc, "expected 'warpgroup' or 'warpgroups' after 'role " + n.text + ":', found " + found());
    }
    // `, regs R`, `, turns`, `, partial_waits[(COND)]` and
    // `, fresh_addresses(N)`, each at most once, in any order.
    bool regs = false, partialWaits = false;
    while (accept(Tok::Comma)) {
      if (!regs && accept(Tok::KwRegs)) {
        regs = true;
        number("after 'regs'", s->regs, s->regsLoc, s->regsExpr);
      } else if (!s->turns && cur().kind == Tok::Ident && cur().text == "turns") {
        s->turns = true;
        take();
      } else if (!partialWaits && cur().kind == Tok::Ident && cur().text == "partial_waits") {
        partialWaits = s->partialWaits = true;
        take();
        if (accept(Tok::LParen)) {
          s->partialWaitsExpr = parseExpr();
          expect(Tok::RParen, "after the partial_waits condition");
        }
      } else if (!s->freshAddressesExpr && cur().kind == Tok::Ident && cur().text == "fresh_addresses") {
        take();
        expect(Tok::LParen, "after 'fresh_addresses'");
        s->freshAddressesExpr = parseExpr();
        expect(Tok::RParen, "after the register count of 'fresh_addresses'");
      } else {
        std::vector<std::string> left;
        if (!regs) left.push_back("'regs'");
        if (!s->turns) left.push_back("'turns'");
        if (!partialWaits) left.push_back("'partial_waits'");
        if (!s->freshAddressesExpr) left.push_back("'fresh_addresses'");
        std::string expected;
        for (size_t i = 0; i < left.size(); ++i)
          expected += (i == 0 ? "" : i + 1 == left.size() ? " or " : ", ") + left[i];
        fail(cur().loc, "expected " + expected + " after ',', found " + found());
      }
    }
    parseBlock(s->body);
    return s;
  }

  StmtPtr parseChannel() {
    SourceLoc loc = take().loc;
    Token n = expectIdent("a channel name after 'channel'");
    auto s = std::make_unique<ChannelDecl>(loc, n.text, n.loc);
    expect(Tok::Colon, "after the channel name");
    expect(Tok::LBrace, "to start the slot fields");
    do {
      Token fn = expectIdent("a slot field name");
      ChannelField f;
      f.loc = fn.loc;
      f.name = fn.text;
      parseTileType(fn, f.dtypeName, f.dtypeLoc, f.extents);
      s->fields.push_back(std::move(f));
    } while (accept(Tok::Comma));
    expect(Tok::RBrace, "after the slot fields");
    expect(Tok::KwDepth, "after the slot fields");
    expect(Tok::LParen, "after 'depth'");
    s->depth = parseExpr();
    expect(Tok::RParen, "after the channel depth");
    // `over(OTHER)`: a contextual word (not reserved: `over` stays a name elsewhere).
    if (at(Tok::Ident) && cur().text == "over") {
      take();
      expect(Tok::LParen, "after 'over'");
      Token o = expectIdent("the name of the channel whose slot this one shares");
      s->overName = o.text;
      s->overLoc = o.loc;
      expect(Tok::RParen, "after the channel name");
    }
    return s;
  }

  StmtPtr parseSlot() {
    Token kw = take();
    auto s = std::make_unique<SlotStmt>(kw.kind == Tok::KwPut ? StmtKind::Put : StmtKind::Get, kw.loc);
    Token n = expectIdent("a channel name after '" + kw.text + "'");
    s->channelName = n.text;
    s->channelLoc = n.loc;
    expect(Tok::Arrow, "after the channel name");
    expect(Tok::LParen, "before the slot tile names");
    do {
      Token b = expectIdent("a name for a slot tile");
      auto d = std::make_unique<SlotBindingDecl>(b.text, b.loc);
      d->owner = s.get();
      d->field = int(s->bindings.size());
      s->bindings.push_back(std::move(d));
    } while (accept(Tok::Comma));
    expect(Tok::RParen, "after the slot tile names");
    parseBlock(s->body);
    return s;
  }

  static bool assignOp(Tok t, AssignOp &op) {
    switch (t) {
    case Tok::Assign: op = AssignOp::Set; return true;
    case Tok::PlusAssign: op = AssignOp::Add; return true;
    case Tok::MinusAssign: op = AssignOp::Sub; return true;
    case Tok::StarAssign: op = AssignOp::Mul; return true;
    default: return false;
    }
  }

  // Statements that start with a name: gemm, fragment assignment, element
  // assignment, var assignment. `NAME = expr` is a FragAssignStmt (fill) here;
  // sema turns it into an AssignStmt when NAME is a var.
  StmtPtr parseAssign() {
    Token n = take();
    if (at(Tok::Assign) || at(Tok::PlusAssign) || at(Tok::MinusAssign) || at(Tok::StarAssign)) {
      Token op = take();
      if (at(Tok::KwGemm) && (op.kind == Tok::Assign || op.kind == Tok::PlusAssign)) {
        auto s = std::make_unique<GemmStmt>(n.loc);
        s->target = n.text;
        s->accumulate = op.kind == Tok::PlusAssign;
        s->gemmLoc = take().loc;
        expect(Tok::LParen, "after 'gemm'");
        parseOperand(s->a);
        expect(Tok::Comma, "between the gemm operands");
        parseOperand(s->b);
        expect(Tok::RParen, "after the gemm operands");
        return s;
      }
      if (op.kind != Tok::Assign) {
        // x += e, x -= e, x *= e: a var update (sema rejects other targets).
        auto s = std::make_unique<AssignStmt>(n.loc);
        s->target = n.text;
        assignOp(op.kind, s->op);
        s->opLoc = op.loc;
        if (at(Tok::KwGemm)) fail(cur().loc, "gemm can only be assigned with '=' or '+='");
        s->value = parseExpr();
        return s;
      }
      auto s = std::make_unique<FragAssignStmt>(n.loc);
      s->target = n.text;
      s->opLoc = op.loc;
      parseFragInit(s->init);
      return s;
    }
    if (accept(Tok::LBracket)) {
      auto s = std::make_unique<ElemAssignStmt>(n.loc);
      s->target = n.text;
      do s->indices.push_back(parseExpr());
      while (accept(Tok::Comma));
      expect(Tok::RBracket, "after the element indices");
      s->opLoc = cur().loc;
      if (!assignOp(cur().kind, s->op))
        fail(cur().loc, "expected '=', '+=', '-=' or '*=' after '" + n.text + "[...]', found " + found());
      take();
      s->value = parseExpr();
      return s;
    }
    if (at(Tok::LParen))
      fail(n.loc, "no fn named '" + n.text + "' (a fn is defined, or included, before the kernel that calls it)");
    fail(cur().loc, "expected '=', '+=', '-=', '*=' or '[' after '" + n.text + "', found " + found());
  }

  // NAME [ "[" r0 :+ nr "," c0 :+ nc "]" ] [ "^T" ]: a tile or a sub-tile of a
  // shared tile, transposed after slicing (NAME^T[...] is refused: the box is
  // in the tile's own coordinates).
  void parseOperand(GemmOperand &o) {
    Token n = expectIdent("a gemm operand (a tile name)");
    o.name = n.text;
    o.loc = n.loc;
    o.transposed = accept(Tok::CaretT);
    if (!at(Tok::LBracket)) return;
    if (o.transposed)
      fail(cur().loc, "slice a gemm operand before transposing it: write " + o.name + "[...]^T, not " + o.name + "^T[...]");
    take();
    do {
      Slice s;
      s.loc = cur().loc;
      s.start = parseExpr();
      if (!accept(Tok::ColonPlus))
        fail(cur().loc, "a gemm operand's slice has two range components (start :+ extent), found " + found());
      s.extent = parseExpr();
      if (at(Tok::KwUntil)) fail(cur().loc, "'until' bounds a global slice, not a gemm operand's sub-tile");
      o.slices.push_back(std::move(s));
    } while (accept(Tok::Comma));
    expect(Tok::RBracket, "to close the operand's slice");
    o.transposed = accept(Tok::CaretT);
  }

  // --- expressions -------------------------------------------------------------
  // Precedence (low to high): ?: || && ==,!= <,<=,>,>= +,- *,/,% unary postfix.
  struct ExprGuard {
    Parser &p;
    explicit ExprGuard(Parser &pp) : p(pp) {
      if (p.exprNest_++ == 0) p.exprStart_ = p.pos_;
    }
    ~ExprGuard() { --p.exprNest_; }
  };
  void checkExprLength() {
    if (pos_ - exprStart_ > kMaxExprTokens)
      fail(cur().loc, "expression too long (more than " + std::to_string(kMaxExprTokens) + " tokens)");
  }

  ExprPtr parseExpr(bool noGreater = false) {
    DepthGuard g(*this);
    ExprGuard eg(*this);
    ExprPtr c = parseBinary(1, noGreater);
    if (!at(Tok::Question)) return c;
    SourceLoc q = take().loc;
    ExprPtr t = parseExpr(noGreater);
    expect(Tok::Colon, "in the conditional expression (c ? a : b)");
    ExprPtr e = parseExpr(noGreater);
    SourceLoc l = c->loc;
    return std::make_unique<SelectExpr>(l, q, std::move(c), std::move(t), std::move(e));
  }

  static int precedence(Tok t, bool noGreater, BinaryOp &op) {
    switch (t) {
    case Tok::OrOr: op = BinaryOp::Or; return 1;
    case Tok::AndAnd: op = BinaryOp::And; return 2;
    case Tok::EqEq: op = BinaryOp::Eq; return 3;
    case Tok::NotEq: op = BinaryOp::Ne; return 3;
    case Tok::Less: op = BinaryOp::Lt; return 4;
    case Tok::LessEq: op = BinaryOp::Le; return 4;
    case Tok::Greater: op = BinaryOp::Gt; return noGreater ? 0 : 4;
    case Tok::GreaterEq: op = BinaryOp::Ge; return 4;
    case Tok::Plus: op = BinaryOp::Add; return 5;
    case Tok::Minus: op = BinaryOp::Sub; return 5;
    case Tok::Star: op = BinaryOp::Mul; return 6;
    case Tok::Slash: op = BinaryOp::Div; return 6;
    case Tok::Percent: op = BinaryOp::Rem; return 6;
    default: return 0;
    }
  }

  ExprPtr parseBinary(int minPrec, bool noGreater) {
    ExprPtr lhs = parseUnary(noGreater);
    while (true) {
      BinaryOp op = BinaryOp::Add;
      int p = precedence(cur().kind, noGreater, op);
      if (p == 0 || p < minPrec) return lhs;
      checkExprLength();
      SourceLoc opLoc = take().loc;
      ExprPtr rhs = parseBinary(p + 1, noGreater);
      SourceLoc l = lhs->loc;
      lhs = std::make_unique<BinaryExpr>(l, op, opLoc, std::move(lhs), std::move(rhs));
    }
  }

  ExprPtr parseUnary(bool noGreater) {
    if (at(Tok::Minus) || at(Tok::Bang)) {
      DepthGuard g(*this);
      Token t = take();
      ExprPtr x = parseUnary(noGreater);
      return std::make_unique<UnaryExpr>(t.loc, t.kind == Tok::Minus ? UnaryOp::Neg : UnaryOp::Not,
                                         std::move(x));
    }
    return parsePrimary();
  }

  void parseCallArgs(CallExpr &c) {
    expect(Tok::LParen);
    if (accept(Tok::RParen)) return;
    do c.args.push_back(parseExpr());
    while (accept(Tok::Comma));
    expect(Tok::RParen, "after the arguments of '" + c.callee + "'");
  }

  ExprPtr parsePrimary() {
    Token t = cur();
    switch (t.kind) {
    case Tok::Int: take(); return std::make_unique<IntLitExpr>(t.loc, t.intValue);
    case Tok::Float: take(); return std::make_unique<FloatLitExpr>(t.loc, t.floatValue);
    case Tok::KwTrue:
    case Tok::KwFalse: take(); return std::make_unique<BoolLitExpr>(t.loc, t.kind == Tok::KwTrue);
    case Tok::LParen: {
      take();
      ExprPtr e = parseExpr();
      expect(Tok::RParen, "to close '('");
      return e;
    }
    case Tok::KwBlock: {
      take();
      expect(Tok::Dot, "after 'block' (block.x, block.y or block.z)");
      Token m = cur();
      int d = m.text == "x" ? 0 : m.text == "y" ? 1 : m.text == "z" ? 2 : -1;
      if (m.kind != Tok::Ident || d < 0) fail(m.loc, "expected 'x', 'y' or 'z' after 'block.', found " + found());
      take();
      return std::make_unique<BlockIdxExpr>(t.loc, d);
    }
    case Tok::KwMin:
    case Tok::KwMax:
    case Tok::Ident: {
      take();
      if (at(Tok::LParen)) {
        if (t.kind == Tok::Ident && unit_.fns.count(t.text))
          fail(t.loc, "fn '" + t.text + "' has no value: call it as a statement");
        auto c = std::make_unique<CallExpr>(t.loc, t.text);
        c->builtin = builtinFromName(t.text);
        parseCallArgs(*c);
        return c;
      }
      if (t.kind != Tok::Ident) fail(cur().loc, "expected '(' after '" + t.text + "'");
      if (accept(Tok::LBracket)) {
        auto e = std::make_unique<ElemExpr>(t.loc, t.text);
        do e->indices.push_back(parseExpr());
        while (accept(Tok::Comma));
        expect(Tok::RBracket, "after the element indices");
        return e;
      }
      if (at(Tok::Dot))
        fail(cur().loc, "unexpected '.' after '" + t.text + "' (only block.x, block.y and block.z have members)");
      return std::make_unique<NameExpr>(t.loc, t.text);
    }
    default: break;
    }
    fail(t.loc, "expected an expression, found " + found());
  }

  std::vector<Token> toks_;
  std::vector<Diagnostic> &diags_;
  Unit &unit_;
  size_t pos_ = 0;
  int depth_ = 0;
  int exprNest_ = 0;       // parseExpr nesting
  size_t exprStart_ = 0;   // first token of the outermost expression
};

}  // namespace

ParseResult parseQla(const std::string &source, const std::string &filename) {
  return parseQla(source, filename, IncludeResolver());
}

ParseResult parseQla(const std::string &source, const std::string &filename, const IncludeResolver &includes) {
  ParseResult r;
  std::vector<Token> toks = lexQla(source, filename, r.diags);
  if (!r.diags.empty()) return r;
  Unit unit;
  unit.resolver = &includes;
  unit.included.insert(filename);
  Parser p(std::move(toks), r.diags, unit);
  try {
    r.module = p.parseModule(filename);
  } catch (const ParseAbort &) {
    r.module.reset();
  }
  return r;
}

}  // namespace qla::fe
