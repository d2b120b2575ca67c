// The language features added for linear-attention (GDN) kernels: dtype
// specialization constants, global element reads, fragment picks, vars,
// bounded slices, inv_unit_lower, constant conditions and grid folding.
// Errors are checked with their exact file:line:col.
#include <catch2/catch.hpp>

#include "qla/frontend/Frontend.h"
#include "qla/frontend/Lexer.h"

using namespace qla::fe;

namespace {

// Lines 1-3 are the header; the body starts on line 4, column 1.
const std::string kHeader =
    "kernel k<DT = bf16, BT = f32, T = 64, B = true>(X: DT[M, K], Beta: BT[M], CU: i32[NCU], C64: i64[NCU], "
    "Y: out DT[M, K], s: f32, n: i32)\n"
    "  grid(cdiv(M, 64)) threads(256)\n"
    "{\n";

std::string K(const std::string &body) { return kHeader + body + "\n}\n"; }

std::vector<Diagnostic> diagsOf(const std::string &src, const std::map<std::string, std::string> &defs = {}) {
  ParseResult r = parseQla(src, "t.qla");
  INFO(src);
  INFO(formatDiagnostics(r.diags));
  REQUIRE(r.module);
  std::vector<Diagnostic> diags;
  bool ok = checkQla(*r.module, defs, diags);
  CHECK(ok == diags.empty());
  if (r.module && ok) CHECK_FALSE(dumpAst(*r.module).empty());
  return diags;
}

// The single error of `src` as "file:line:col: error: message".
std::string err(const std::string &src, const std::map<std::string, std::string> &defs = {}) {
  auto d = diagsOf(src, defs);
  INFO(src);
  INFO(formatDiagnostics(d));
  REQUIRE(d.size() == 1);
  return d[0].str();
}

std::string parseError(const std::string &src) {
  ParseResult r = parseQla(src, "t.qla");
  INFO(src);
  REQUIRE_FALSE(r.module);
  REQUIRE(r.diags.size() == 1);
  return r.diags[0].str();
}

std::unique_ptr<Module> ok(const std::string &src, const std::map<std::string, std::string> &defs = {}) {
  std::vector<Diagnostic> diags;
  auto m = parseAndCheckQla(src, "t.qla", defs, diags);
  INFO(src);
  INFO(formatDiagnostics(diags));
  REQUIRE(diags.empty());
  REQUIRE(m);
  CHECK_FALSE(dumpAst(*m).empty());
  return m;
}

template <typename T>
T &stmtAt(Module &m, size_t i) {
  T *t = as<T>(m.kernels.at(0)->body.stmts.at(i).get());
  REQUIRE(t);
  return *t;
}

template <typename T>
T &nth(Block &b, size_t i) {
  REQUIRE(i < b.stmts.size());
  T *t = as<T>(b.stmts[i].get());
  REQUIRE(t);
  return *t;
}

template <typename T>
T &letInit(Module &m, size_t i) {
  T *t = as<T>(stmtAt<LetDecl>(m, i).init.get());
  REQUIRE(t);
  return *t;
}

}  // namespace

//===----------------------------------------------------------------------===//
// 1. Dtype specialization constants
//===----------------------------------------------------------------------===//

TEST_CASE("features: dtype specialization constants", "[features][defines]") {
  auto m = ok(K("shared a: DT[64, 32]\nfrag f: BT[64]\nfrag g: DT[64, 32]\ncopy X[0 :+ 64, 0 :+ 32] -> a"));
  KernelDecl &k = *m->kernels[0];
  ParamDecl &dt = *k.params[0], &bt = *k.params[1];
  CHECK(dt.isDType);
  CHECK(dt.dtypeValue == qla::DType::BF16);
  CHECK(dt.value.type == ScalarType::Unknown);
  CHECK_FALSE(dt.overridden);
  CHECK(bt.isDType);
  CHECK(bt.dtypeValue == qla::DType::F32);
  CHECK_FALSE(k.params[2]->isDType);
  CHECK(k.params[2]->value.i == 64);
  CHECK(k.tensors[0]->dtype == qla::DType::BF16);
  CHECK(k.tensors[0]->dtypeParam == &dt);
  CHECK(k.tensors[0]->dtypeName == "DT");  // as written
  CHECK(k.tensors[1]->dtype == qla::DType::F32);
  CHECK(k.tensors[2]->dtypeParam == nullptr);
  CHECK(stmtAt<SharedDecl>(*m, 0).dtype == qla::DType::BF16);
  CHECK(stmtAt<SharedDecl>(*m, 0).dtypeParam == &dt);
  CHECK(stmtAt<FragDecl>(*m, 1).dtype == qla::DType::F32);
  std::string dump = dumpAst(*m);
  CHECK(dump.find("param DT = bf16 -> dtype bf16") != std::string::npos);
  CHECK(dump.find("tensor X: DT{bf16}[M, K]") != std::string::npos);
  CHECK(dump.find("shared a: DT{bf16}[64, 32]") != std::string::npos);

  // -D DT=f16 changes every use; the copy's dtype rule still holds.
  m = ok(K("shared a: DT[64, 32]\ncopy X[0 :+ 64, 0 :+ 32] -> a"), {{"DT", "f16"}});
  CHECK(m->kernels[0]->params[0]->dtypeValue == qla::DType::F16);
  CHECK(m->kernels[0]->params[0]->overridden);
  CHECK(m->kernels[0]->tensors[0]->dtype == qla::DType::F16);
  CHECK(m->kernels[0]->tensors[4]->dtype == qla::DType::F16);  // Y
  CHECK(stmtAt<SharedDecl>(*m, 0).dtype == qla::DType::F16);
  CHECK(dumpAst(*m).find("param DT = bf16 -> dtype f16 (-D)") != std::string::npos);
  m = ok(K(""), {{"k.BT", " i64 "}});
  CHECK(m->kernels[0]->tensors[1]->dtype == qla::DType::I64);

  // A dtype constant may default to an earlier one.
  const std::string chain = "kernel c<DT = bf16, OT = DT>(X: DT[M], Y: out OT[M]) grid(1) threads(128) {}";
  m = ok(chain);
  CHECK(m->kernels[0]->params[1]->isDType);
  CHECK(m->kernels[0]->tensors[1]->dtype == qla::DType::BF16);
  m = ok(chain, {{"DT", "f16"}});
  CHECK(m->kernels[0]->tensors[1]->dtype == qla::DType::F16);
  m = ok(chain, {{"OT", "f32"}});
  CHECK(m->kernels[0]->tensors[0]->dtype == qla::DType::BF16);
  CHECK(m->kernels[0]->tensors[1]->dtype == qla::DType::F32);

  // An override flows into later checks: f32 gemm operands are rejected at the use.
  const std::string g = "shared a: DT[64, 32]\nshared b: DT[64, 32]\nfrag c: f32[64, 64]\nc = gemm(a, b^T)";
  ok(K(g), {{"DT", "f16"}});
  CHECK(formatDiagnostics(diagsOf(K(g), {{"DT", "f32"}})) ==
        "t.qla:7:10: error: gemm operands must be bf16 or f16; 'a' is f32\n"
        "t.qla:7:13: error: gemm operands must be bf16 or f16; 'b' is f32\n");
  CHECK(err(K("shared a: DT[64, 32]\ncopy Beta[0 :+ 64] -> f\nfrag f: f32[64]")) ==
        "t.qla:5:23: error: use of undeclared name 'f'");

  // Errors.
  CHECK(err(K(""), {{"DT", "f64"}}) ==
        "t.qla:1:10: error: specialization constant 'DT' is a dtype; 'f64' is not one of bf16, f16, f32, i32, i64");
  CHECK(err(K(""), {{"BT", "64"}}) ==
        "t.qla:1:21: error: specialization constant 'BT' is a dtype; '64' is not one of bf16, f16, f32, i32, i64");
  CHECK(err(K(""), {{"T", "bf16"}}) ==
        "t.qla:1:31: error: invalid value 'bf16' for specialization constant 'T' (expected an int)");
  CHECK(err(K("let x = DT")) ==
        "t.qla:4:9: error: specialization constant 'DT' is a dtype (bf16) and cannot be used in an expression");
  CHECK(err(K("let x = n + BT")) ==
        "t.qla:4:13: error: specialization constant 'BT' is a dtype (f32) and cannot be used in an expression");
  CHECK(err(K("shared a: T[64]")) == "t.qla:4:11: error: specialization constant 'T' is an int, not a dtype");
  CHECK(err(K("frag a: B[64]")) == "t.qla:4:9: error: specialization constant 'B' is a bool, not a dtype");
  CHECK(err(K("frag a: n[64]")) == "t.qla:4:9: error: unknown dtype 'n' (expected bf16, f16, f32, i32 or i64)");
  CHECK(err("kernel k<DT = bf16>(s: DT) grid(1) threads(128) {}") ==
        "t.qla:1:24: error: scalar argument 's' must be i32 or f32, got 'DT' (scalar arguments cannot use a dtype "
        "specialization constant)");
  CHECK(err("kernel k<DT = bf16>(X: DT[M]) grid(cdiv(M, DT)) threads(128) {}") ==
        "t.qla:1:44: error: specialization constant 'DT' is a dtype (bf16) and cannot be used in an expression");
  CHECK(err("kernel k<DT = bf16, N = DT * 2>() grid(1) threads(128) {}") ==
        "t.qla:1:25: error: specialization constant 'DT' is a dtype (bf16) and cannot be used in an expression");
  CHECK(err("kernel k<DT = bf61>() grid(1) threads(128) {}") == "t.qla:1:15: error: use of undeclared name 'bf61'");
  CHECK(err("kernel k<N = 4>(X: N[M]) grid(1) threads(128) {}") ==
        "t.qla:1:20: error: specialization constant 'N' is an int, not a dtype");
}

TEST_CASE("features: dtype constants in channel fields", "[features][defines]") {
  const std::string src =
      "kernel w<DT = bf16>(A: DT[M, K]) grid(1) threads(256)\n"
      "{\n"
      "channel ch: { a: DT[64, 32] } depth(2)\n"
      "role load: warpgroup 0 { put ch -> (a) { copy A[0 :+ 64, 0 :+ 32] -> a } }\n"
      "role math: warpgroup 1 { frag c: f32[64, 64] = 0\n get ch -> (x) { c = gemm(x, x^T) } }\n"
      "}\n";
  auto m = ok(src);
  ChannelDecl &ch = *m->kernels[0]->channels[0];
  CHECK(ch.fields[0].dtype == qla::DType::BF16);
  CHECK(ch.fields[0].dtypeParam == m->kernels[0]->params[0].get());
  m = ok(src, {{"DT", "f16"}});
  ChannelDecl &ch2 = *m->kernels[0]->channels[0];
  CHECK(ch2.fields[0].dtype == qla::DType::F16);
  CHECK(ch2.gets[0]->bindings[0]->dtype == qla::DType::F16);
  CHECK(ch2.gets[0]->bindings[0]->dtypeParam == m->kernels[0]->params[0].get());
  CHECK(diagsOf(src, {{"DT", "f32"}}).at(0).str() == "t.qla:6:27: error: gemm operands must be bf16 or f16; 'x' is f32");
}

//===----------------------------------------------------------------------===//
// 2. Global element reads
//===----------------------------------------------------------------------===//

TEST_CASE("features: global element reads", "[features]") {
  auto m = ok(K("let bos = CU[n]\nlet b = Beta[n * 2 + 1]\nlet w = X[bos, 3]\nlet c = CU[0]\nlet l = C64[1]\n"
                "frag x: f32[64, 32]\nfrag a: DT[64, 32]\nshared sa: DT[64, 32]\n"
                "for (i, j) in parallel(64, 32) { x[i, j] = X[bos + i, j] * Beta[i] + f32(CU[j]) }\n"
                "for t in CU[n] .. CU[n + 1] { copy X[CU[t] :+ 64, 0 :+ 32] -> sa }\n"
                "if CU[n + 1] - CU[n] > 64 { }"));
  KernelDecl &k = *m->kernels[0];
  auto &bos = letInit<GlobalElemExpr>(*m, 0);
  CHECK(bos.tensor == k.tensors[2]);
  CHECK(bos.type == ScalarType::Int);
  CHECK_FALSE(bos.isConst());
  REQUIRE(bos.indices.size() == 1);
  CHECK(as<NameExpr>(bos.indices[0].get())->decl == k.scalars[1]);
  CHECK(letInit<GlobalElemExpr>(*m, 1).type == ScalarType::Float);
  auto &w = letInit<GlobalElemExpr>(*m, 2);
  CHECK(w.tensor == k.tensors[0]);
  CHECK(w.indices.size() == 2);
  CHECK(w.type == ScalarType::Float);
  // Constant indices do not make a global read constant.
  CHECK_FALSE(letInit<GlobalElemExpr>(*m, 3).isConst());
  CHECK_FALSE(stmtAt<LetDecl>(*m, 3).init->isConst());
  CHECK(letInit<GlobalElemExpr>(*m, 4).type == ScalarType::Int);  // i64 elements are ints
  auto &p = stmtAt<ParallelStmt>(*m, 8);
  auto &ea = nth<ElemAssignStmt>(p.body, 0);
  auto *sum = as<BinaryExpr>(ea.value.get());
  REQUIRE(sum);
  auto *prod = as<BinaryExpr>(sum->lhs.get());
  REQUIRE(prod);
  CHECK(prod->lhs->kind == ExprKind::GlobalElem);
  CHECK(prod->rhs->kind == ExprKind::GlobalElem);
  auto &f = stmtAt<ForStmt>(*m, 9);
  CHECK(f.lo->kind == ExprKind::GlobalElem);
  CHECK(nth<CopyStmt>(f.body, 0).src.slices[0].start->kind == ExprKind::GlobalElem);
  CHECK(exprString(*stmtAt<LetDecl>(*m, 1).init) == "Beta[((n * 2) + 1)]");

  CHECK(err(K("let v = CU[s]")) == "t.qla:4:12: error: a tensor index must be an int, got float");
  CHECK(err(K("let v = X[1]")) == "t.qla:4:9: error: tensor 'X' has 2 dims but is indexed with 1 index");
  CHECK(err(K("let v = CU[1, 2]")) == "t.qla:4:9: error: tensor 'CU' has 1 dim but is indexed with 2 indexes");
  CHECK(err(K("let v = CU[B]")) == "t.qla:4:12: error: a tensor index must be an int, got bool");
  CHECK(err(K("let v = CU[0] + B")) ==
        "t.qla:4:15: error: operator '+' needs int or float operands, got int and bool");
  CHECK(err(K("shared t: f32[CU[0]]")) ==
        "t.qla:4:15: error: a tile extent must be a compile-time constant, but 'CU[0]' is not");
  CHECK(err(K("for t in 0 .. CU[0] unroll { }")) ==
        "t.qla:4:15: error: an unrolled loop bound must be a compile-time constant, but 'CU[0]' is not");
  CHECK(err("kernel k(CU: i32[N]) grid(CU[0]) threads(128) {}") ==
        "t.qla:1:27: error: global tensor elements cannot be used in a grid size");
  CHECK(err(K("let v = CU")) ==
        "t.qla:4:9: error: global tensor 'CU' cannot be used as a scalar (copy a slice of it into a tile)");
  CHECK(formatDiagnostics(diagsOf(K("CU[0] = 1"))) ==
        "t.qla:4:1: error: element assignment outside a parallel block\n"
        "t.qla:4:1: error: cannot assign elements of global tensor 'CU' (compute in a fragment and copy it out)\n");
}

//===----------------------------------------------------------------------===//
// 3. Fragment picks
//===----------------------------------------------------------------------===//

TEST_CASE("features: fragment element picks outside parallel blocks", "[features]") {
  auto m = ok(K("frag g: f32[64] = 0\nlet gl = g[T - 1]\nfrag sm: f32[64, 32] = 1\nlet i0 = n % 64\n"
                "let v = sm[i0, 31] * gl\nfrag c: i32[8] = 3\nfor t in 0 .. c[7] { let z = g[t] }\n"
                "if g[0] > 0.5 { }\nfor (i) in parallel(64) { g[i] = g[i] * gl }"));
  auto &gl = letInit<FragPickExpr>(*m, 1);
  CHECK(gl.frag == &stmtAt<FragDecl>(*m, 0));
  CHECK(gl.type == ScalarType::Float);
  CHECK_FALSE(gl.isConst());
  REQUIRE(gl.indices.size() == 1);
  REQUIRE(gl.indices[0]->isConst());
  CHECK(gl.indices[0]->constInt() == 63);
  auto *v = as<BinaryExpr>(stmtAt<LetDecl>(*m, 4).init.get());
  REQUIRE(v);
  auto *s2 = as<FragPickExpr>(v->lhs.get());
  REQUIRE(s2);
  CHECK(s2->frag->name == "sm");
  CHECK(s2->indices.size() == 2);
  auto &loop = stmtAt<ForStmt>(*m, 6);
  CHECK(loop.hi->kind == ExprKind::FragPick);
  CHECK(loop.hi->type == ScalarType::Int);
  CHECK(nth<LetDecl>(loop.body, 0).init->kind == ExprKind::FragPick);
  CHECK(stmtAt<IfStmt>(*m, 7).cond->kind == ExprKind::Binary);
  // Inside a parallel block an element read keeps its meaning (an ElemExpr).
  auto &p = stmtAt<ParallelStmt>(*m, 8);
  auto *mul = as<BinaryExpr>(nth<ElemAssignStmt>(p.body, 0).value.get());
  REQUIRE(mul);
  CHECK(mul->lhs->kind == ExprKind::Elem);
  CHECK(as<NameExpr>(mul->rhs.get())->decl == static_cast<Decl *>(&stmtAt<LetDecl>(*m, 1)));

  const std::string decls = "frag g: f32[64] = 0\nfrag sm: f32[64, 32] = 0\nshared t: f32[64]\n";  // lines 4-6
  CHECK(err(K(decls + "let v = g[64]")) == "t.qla:7:11: error: index 64 is out of range for dim 0 of fragment 'g' (extent 64)");
  CHECK(err(K(decls + "let v = sm[0, T - 65]")) ==
        "t.qla:7:15: error: index -1 is out of range for dim 1 of fragment 'sm' (extent 32)");
  CHECK(err(K(decls + "let v = g[sm]")) ==
        "t.qla:7:11: error: fragment 'sm' cannot be used as a scalar (read an element, e.g. sm[i, j])");
  CHECK(err(K(decls + "let v = g[0.5]")) == "t.qla:7:11: error: a fragment index must be an int, got float");
  CHECK(err(K(decls + "let v = g[0, 0]")) == "t.qla:7:9: error: fragment 'g' has rank 1 but is indexed with 2 indexes");
  CHECK(err(K(decls + "let v = sm[1]")) == "t.qla:7:9: error: fragment 'sm' has rank 2 but is indexed with 1 index");
  CHECK(err(K(decls + "let v = t[1]")) ==
        "t.qla:7:9: error: 't' is a shared tile; only fragment elements can be read (copy it into a fragment first)");
  CHECK(err(K(decls + "frag h: f32[i32(g[0])]")) ==
        "t.qla:7:17: error: a tile extent must be a compile-time constant, but 'g[0]' is not");
  // Inside a parallel block, indices must still be the block's index variables.
  CHECK(err(K(decls + "for (i) in parallel(64) { g[i] = g[63] }")) ==
        "t.qla:7:36: error: a fragment index must be one of the parallel block's index variables");

  // In a kernel with roles, a fragment of the current role can be picked; other roles' are not visible.
  const std::string roles =
      "kernel r() grid(1) threads(256)\n{\n"
      "role a: warpgroup 0 { frag g: f32[64] = 1\n let x = g[3] }\n"
      "role b: warpgroup 1 { let y = g[3] }\n}\n";
  CHECK(err(roles) == "t.qla:5:31: error: use of undeclared name 'g'");
  const std::string put =
      "kernel r(A: bf16[M, K]) grid(1) threads(256)\n{\nchannel ch: { a: bf16[64, 32] } depth(2)\n"
      "role p: warpgroup 0 { frag g: i32[64] = 1\n let r0 = g[0]\n put ch -> (a) { copy A[r0 :+ 64, 0 :+ 32] -> a }\n"
      " put ch -> (a) { copy A[g[1] :+ 64, 0 :+ 32] -> a } }\nrole q: warpgroup 1 { get ch -> (x) { } }\n}\n";
  CHECK(err(put) == "t.qla:7:25: error: fragment elements cannot be read inside 'put' (bind the value with a 'let' "
                    "before the put)");
}

TEST_CASE("features: element reads of a get's slot tile", "[features][channels]") {
  // Outside parallel blocks, s[i] / s[i, j] of a get's slot tile is a uniform
  // float (SlotPickExpr): one shared load per thread.
  auto head = [](const std::string &getBody) {
    return "kernel r(A: bf16[M, K], G: f32[M]) grid(1) threads(256)\n{\n"
           "channel ch: { a: bf16[64, 32], g: f32[64] } depth(2)\n"
           "role p: warpgroup 0 { put ch -> (a, g) { copy A[0 :+ 64, 0 :+ 32] -> a\n copy G[0 :+ 64] -> g } }\n"
           "role q: warpgroup 1 { get ch -> (x, gs) { " +
           getBody + " } }\n}\n";
  };
  auto m = ok(head("let v = gs[63]\n let w = x[1, 2] * v"));
  RoleStmt *q = nullptr;
  for (auto &st : m->kernels[0]->body.stmts)
    if (auto *r = as<RoleStmt>(st.get()); r && r->name == "q") q = r;
  REQUIRE(q);
  auto &get = nth<SlotStmt>(q->body, 0);
  auto &v = nth<LetDecl>(get.body, 0);
  REQUIRE(v.init->kind == ExprKind::SlotPick);
  CHECK(v.init->type == ScalarType::Float);
  CHECK(as<SlotPickExpr>(v.init.get())->slot == get.bindings[1].get());
  auto *mul = as<BinaryExpr>(nth<LetDecl>(get.body, 1).init.get());
  REQUIRE(mul);
  CHECK(mul->lhs->kind == ExprKind::SlotPick);  // a 2-D slot tile too
  CHECK(mul->rhs->kind == ExprKind::Name);
  CHECK(err(head("let v = gs[64]")) == "t.qla:6:54: error: index 64 is out of range for dim 0 of slot tile 'gs' (extent 64)");
  CHECK(err(head("let v = gs[0, 1]")) == "t.qla:6:51: error: slot tile 'gs' has rank 1 but is indexed with 2 indexes");
  CHECK(err(head("let v = gs[0.5]")) == "t.qla:6:54: error: a slot tile index must be an int, got float");
  // A put only writes its slot.
  const std::string put =
      "kernel r(A: bf16[M, K]) grid(1) threads(256)\n{\nchannel ch: { a: bf16[64, 32] } depth(2)\n"
      "role p: warpgroup 0 { put ch -> (a) { copy A[i32(a[0, 0]) :+ 64, 0 :+ 32] -> a } }\n"
      "role q: warpgroup 1 { get ch -> (x) { } }\n}\n";
  CHECK(err(put).find("'a' is a put's slot tile: a put only writes its slot") != std::string::npos);
  // Inside a parallel block a slot tile is read at the block's own position.
  {
    auto m = ok(head("frag h: f32[64]\n for (i) in parallel(64) { h[i] = gs[i] }"));
    REQUIRE(m);
  }
  CHECK(err(head("frag h: f32[64]\n for (i) in parallel(64) { h[i] = gs[63 - i] }")) ==
        "t.qla:7:38: error: inside a parallel block, slot tile 'gs' is indexed by the block's index variables, in "
        "order (each plus a constant, if any: i + 64)");
  // ... or at a constant offset from it, inside the tile.
  {
    auto m = ok(head("frag h: f32[32]\n for (i) in parallel(32) { h[i] = gs[i + 32] }"));
    REQUIRE(m);
  }
  CHECK(err(head("frag h: f32[32]\n for (i) in parallel(32) { h[i] = gs[40 + i] }")) ==
        "t.qla:7:38: error: slot tile 'gs' has extent 64 in dim 0 but the parallel block reads 40 .. 71 there");
  // Not in the untaken side of an `if` on a constant (nothing of it is built).
  {
    auto m = ok(head("frag h: f32[32]\n if 1 == 2 { for (i) in parallel(32) { h[i] = gs[40 + i] }\n let v = gs[64] }"));
    REQUIRE(m);
  }
}

//===----------------------------------------------------------------------===//
// 4. Mutable vars
//===----------------------------------------------------------------------===//

TEST_CASE("features: vars", "[features]") {
  auto m = ok(K("var x = 0\nx = x + 1\nx += n\nx -= 2\nx *= 3\nvar f = 0.0\nf = 1\nf += n\nf *= s\n"
                "var c = 64\nlet d = c * 2\nfor k in 0 .. c { x = x + k\n if k > 3 { c -= 1 } }\n"
                "frag r: f32[64] = 0\nfor (i) in parallel(64) { let q = f32(x) + f\n r[i] = q * f32(c) }\n"
                "frag big: f32[64, 32]\ncopy X[c :+ 64, x :+ 32] -> big\nlet e = r[x % 64]"));
  VarDecl &x = stmtAt<VarDecl>(*m, 0);
  CHECK(x.type == ScalarType::Int);
  CHECK(x.name == "x");
  AssignStmt &a1 = stmtAt<AssignStmt>(*m, 1);
  CHECK(a1.var == &x);
  CHECK(a1.op == AssignOp::Set);
  CHECK(a1.opLoc.line == 5);
  CHECK(a1.opLoc.col == 3);
  auto *rhs = as<BinaryExpr>(a1.value.get());
  REQUIRE(rhs);
  auto *xr = as<NameExpr>(rhs->lhs.get());
  REQUIRE(xr);
  CHECK(xr->decl == static_cast<Decl *>(&x));
  CHECK(xr->type == ScalarType::Int);
  CHECK_FALSE(xr->isConst());  // never folded, though the initializer is constant
  CHECK_FALSE(rhs->isConst());
  CHECK(stmtAt<AssignStmt>(*m, 2).op == AssignOp::Add);
  CHECK(stmtAt<AssignStmt>(*m, 3).op == AssignOp::Sub);
  CHECK(stmtAt<AssignStmt>(*m, 4).op == AssignOp::Mul);
  CHECK(stmtAt<AssignStmt>(*m, 4).opLoc.col == 3);
  VarDecl &f = stmtAt<VarDecl>(*m, 5);
  CHECK(f.type == ScalarType::Float);
  CHECK(stmtAt<AssignStmt>(*m, 6).value->kind == ExprKind::Convert);  // 1 -> 1.0
  CHECK(stmtAt<AssignStmt>(*m, 7).value->kind == ExprKind::Convert);  // n -> float
  CHECK(stmtAt<AssignStmt>(*m, 8).value->type == ScalarType::Float);
  CHECK_FALSE(stmtAt<LetDecl>(*m, 10).init->isConst());
  auto &loop = stmtAt<ForStmt>(*m, 11);
  CHECK(as<NameExpr>(loop.hi.get())->decl == static_cast<Decl *>(&stmtAt<VarDecl>(*m, 9)));
  CHECK(nth<AssignStmt>(loop.body, 0).var == &x);
  auto &inner = nth<IfStmt>(loop.body, 1);
  CHECK(nth<AssignStmt>(inner.thenBlock, 0).var == &stmtAt<VarDecl>(*m, 9));
  std::string dump = dumpAst(*m);
  CHECK(dump.find("var x = 0 : int") != std::string::npos);
  CHECK(dump.find("assign x += n : int") != std::string::npos);

  // Errors.
  CHECK(err(K("var i = 0\ni = 1.5")) == "t.qla:5:5: error: cannot assign a float to int var 'i' (convert with i32(...))");
  CHECK(err(K("var i = 0\ni += s")) == "t.qla:5:6: error: cannot assign a float to int var 'i' (convert with i32(...))");
  CHECK(err(K("var i = 0\ni = B")) == "t.qla:5:5: error: cannot assign a bool to int var 'i'");
  CHECK(err(K("var f = 1.0\nf = n > 0")) == "t.qla:5:5: error: cannot assign a bool to float var 'f'");
  CHECK(err(K("var b = true")) == "t.qla:4:9: error: a 'var' must be int or float, got bool");
  CHECK(err(K("var c = 64\nshared t: f32[c]")) ==
        "t.qla:5:15: error: a tile extent must be a compile-time constant, but 'c' is not");
  CHECK(err(K("var c = 4\nfor k in 0 .. c unroll { }")) ==
        "t.qla:5:15: error: an unrolled loop bound must be a compile-time constant, but 'c' is not");
  CHECK(err(K("var c = 4\nfor (i) in parallel(c) { }")) ==
        "t.qla:5:21: error: a parallel extent must be a compile-time constant, but 'c' is not");
  CHECK(err(K("var c = 4\nfrag r: f32[64]\nfor (i) in parallel(64) { c = 1 }")) ==
        "t.qla:6:27: error: cannot assign to var 'c' inside a parallel block (the body runs once per element; vars "
        "are read-only there)");
  CHECK(err(K("var c = 4\nfor (i) in parallel(64) { c += i }")) ==
        "t.qla:5:27: error: cannot assign to var 'c' inside a parallel block (the body runs once per element; vars "
        "are read-only there)");
  CHECK(err(K("for (i) in parallel(64) { var z = i }")) ==
        "t.qla:4:27: error: only 'let' and element assignments are allowed inside a parallel block");
  CHECK(err(K("var x = 1\nvar x = 2")) == "t.qla:5:5: error: redefinition of 'x' (previously declared at line 4, column 5)");
  CHECK(err(K("var n = 1")) == "t.qla:4:5: error: redefinition of 'n' (previously declared at line 1, column 129)");
  CHECK(err(K("x = 1\nvar x = 0")) == "t.qla:4:1: error: use of undeclared name 'x'");
  CHECK(err(K("x += 1")) == "t.qla:4:1: error: use of undeclared name 'x'");
  CHECK(err(K("frag acc: f32[64] = 0\nacc += 1")) ==
        "t.qla:5:5: error: '+=' on a whole fragment must be followed by gemm(...); use a parallel block for "
        "elementwise updates");
  CHECK(err(K("frag acc: f32[64] = 0\nacc *= 2")) ==
        "t.qla:5:5: error: '*=' is not allowed on a whole fragment; use a parallel block for elementwise updates "
        "(acc[i, j] *= v)");
  CHECK(err(K("n = 1")) == "t.qla:4:1: error: cannot assign to 'n': it is a scalar argument (only vars and fragments can be assigned)");
  CHECK(err(K("n += 1")) == "t.qla:4:1: error: cannot assign to 'n': it is a scalar argument (only vars and fragments can be assigned)");
  CHECK(err(K("T -= 1")) ==
        "t.qla:4:1: error: cannot assign to 'T': it is a specialization constant (only vars and fragments can be assigned)");
  CHECK(err(K("let l = 1\nl += 1")) == "t.qla:5:1: error: cannot assign to 'l': a let value is immutable (declare it with 'var')");
  CHECK(err(K("var x = 0.0\nfrag y: f32[64, 32] = 0\nx = reduce(+, y, dim = 1)")) ==
        "t.qla:6:1: error: cannot assign to var 'x': reduce, scan, cast and inv_unit_lower produce fragments");
  CHECK(err(K("var x = 0.0\nshared a: bf16[64, 32]\nx = gemm(a, a^T)")) ==
        "t.qla:6:1: error: gemm result 'x' must be an f32 fragment, but it is a var");
  CHECK(err(K("var x = 0\nlet y = x[0]")) == "t.qla:5:9: error: 'x' is a var, not a fragment");
  CHECK(err(K("var x = 0\ncopy x -> Y[0 :+ 4, 0 :+ 4]")) == "t.qla:5:6: error: 'x' is a var, not a tile");

  // Roles: a var lives in one role, or outside the roles (the prologue every
  // thread runs: scalar statements only), where roles only read it; not inside put.
  const std::string head = "kernel r(A: bf16[M, K]) grid(1) threads(256)\n{\nchannel ch: { a: bf16[64, 32] } depth(2)\n";
  auto rm = ok(head + "role p: warpgroup 0 { var k0 = 0\n for k in 0 .. 4 { put ch -> (a) { copy A[k0 :+ 64, 0 :+ 32] -> a }\n k0 += 64 } }\n"
                      "role q: warpgroup 1 { var n = 0\n for k in 0 .. 4 { get ch -> (x) { n += 1 } } }\n}\n");
  CHECK(rm->kernels[0]->roles.size() == 2);
  auto pro = ok(head + "var v = 0\nfor i in 0 .. 3 { if i > 1 { v += i } }\nlet w = v * 64\n"
                       "role p: warpgroup 0 { put ch -> (a) { copy A[w :+ 64, 0 :+ 32] -> a } }\n"
                       "role q: warpgroup 1 { var n = v\n get ch -> (x) { n += 1 } }\n}\n");
  CHECK(pro->kernels[0]->roles.size() == 2);
  CHECK(err(head + "var v = 0\nrole p: warpgroup 0 { v = 1\n put ch -> (a) { } }\nrole q: warpgroup 1 { get ch -> (x) { } }\n}\n") ==
        "t.qla:5:23: error: cannot assign to var 'v' inside role 'p': it is declared outside the roles, where every "
        "role reads the same value (declare a var inside the role to change it)");
  // Warpgroup indices and regs may be constant expressions of the
  // specialization constants.
  const std::string kw = "kernel r<W = 2>(A: bf16[M, K], s: i32) grid(1) threads(128 * (1 + W))\n{\n"
                         "channel ch: { a: bf16[64, 32] } depth(2)\n";
  auto re = ok(kw + "role p: warpgroup 0, regs 24 + 16 { put ch -> (a) { copy A[0 :+ 64, 0 :+ 32] -> a } }\n"
                    "role q: warpgroups 1 .. W, regs 8 * (29 - W) { get ch -> (x) { } }\n}\n");
  REQUIRE(re->kernels[0]->roles.size() == 2);
  CHECK(re->kernels[0]->roles[0]->regs == 40);
  CHECK(re->kernels[0]->roles[1]->wgFirst == 1);
  CHECK(re->kernels[0]->roles[1]->wgLast == 2);
  CHECK(re->kernels[0]->roles[1]->regs == 216);
  CHECK(err(kw + "role p: warpgroup 0 { put ch -> (a) { } }\nrole q: warpgroups 1 .. s { get ch -> (x) { } }\n}\n") ==
        "t.qla:5:25: error: a warpgroup index must be a compile-time constant, but 's' is not");
  CHECK(err(kw + "role p: warpgroup 0, regs 20 + W { put ch -> (a) { } }\nrole q: warpgroups 1 .. W { get ch -> (x) { } }\n}\n") ==
        "t.qla:4:27: error: regs must be a multiple of 8 between 24 and 256, got 22");
  CHECK(err(head + "for i in 0 .. 2 { frag f: f32[64] }\nrole p: warpgroup 0 { put ch -> (a) { } }\n"
                   "role q: warpgroup 1 { get ch -> (x) { } }\n}\n") ==
        "t.qla:4:19: error: a 'for' or 'if' outside the roles may contain only 'let', 'var', assignments, 'for' and "
        "'if' (tiles, copies and products belong to roles)");
  CHECK(err(head + "role p: warpgroup 0 { var v = 0\n put ch -> (a) { v += 1 } }\nrole q: warpgroup 1 { get ch -> (x) { } }\n}\n") ==
        "t.qla:5:18: error: only copies, fragments, parallel blocks over them and 'if' on a compile-time constant are allowed inside 'put'");
  CHECK(err(head + "role p: warpgroup 0 { var v = 0\n put ch -> (a) { } }\nrole q: warpgroup 1 { get ch -> (x) { v = 1 } }\n}\n") ==
        "t.qla:6:39: error: use of undeclared name 'v'");
}

//===----------------------------------------------------------------------===//
// 5. Bounded slices
//===----------------------------------------------------------------------===//

TEST_CASE("features: bounded slices", "[features]") {
  auto m = ok(K("shared a: DT[64, 32]\nlet bos = CU[n]\nlet eos = CU[n + 1]\n"
                "copy X[bos :+ 64 until eos, 0 :+ 32 until K] -> a\n"
                "frag o: f32[64, 32] = 0\ncopy o -> Y[bos :+ 64 until min(eos, M), 0 :+ 32]\n"
                "frag v: f32[32]\ncopy X[bos, 0 :+ 32 until 16] -> v"));
  auto &c = stmtAt<CopyStmt>(*m, 3);
  REQUIRE(c.src.slices[0].limit);
  CHECK(c.src.slices[0].limit->type == ScalarType::Int);
  CHECK(as<NameExpr>(c.src.slices[0].limit.get())->name == "eos");
  REQUIRE(c.src.slices[1].limit);
  CHECK(c.src.sliceShape == std::vector<int64_t>{64, 32});
  auto &w = stmtAt<CopyStmt>(*m, 5);
  CHECK(w.copyKind == CopyKind::FragToGlobal);
  REQUIRE(w.dst.slices[0].limit);
  CHECK(w.dst.slices[1].limit == nullptr);
  auto &v = stmtAt<CopyStmt>(*m, 7);
  CHECK(v.src.slices[1].limit->isConst());
  CHECK(dumpAst(*m).find("copy X[bos, 0 :+ 32 until 16] -> v") != std::string::npos);

  CHECK(err(K("shared a: DT[64, 32]\ncopy X[0 :+ 64 until s, 0 :+ 32] -> a")) ==
        "t.qla:5:22: error: a slice limit must be an int, got float");
  CHECK(err(K("shared a: DT[64, 32]\ncopy X[0 :+ 64 until q, 0 :+ 32] -> a")) ==
        "t.qla:5:22: error: use of undeclared name 'q'");
  CHECK(parseError(K("copy X[0 until n, 0 :+ 32] -> a")) ==
        "t.qla:4:10: error: 'until' bounds a range slice (start :+ extent until limit), not a single index");
  CHECK(parseError(K("copy X[0 :+ 64 until, 0 :+ 32] -> a")) == "t.qla:4:21: error: expected an expression, found ','");
}

//===----------------------------------------------------------------------===//
// 6. inv_unit_lower
//===----------------------------------------------------------------------===//

TEST_CASE("features: inv_unit_lower", "[features]") {
  const std::string decls = "frag l: f32[64, 64]\nfrag r: f32[64, 32]\nfrag v: f32[64]\nfrag lb: bf16[64, 64]\n";  // 4-7
  auto m = ok(K(decls + "frag a: f32[64, 64] = inv_unit_lower(l)\na = inv_unit_lower(a)\nl = inv_unit_lower(a)"));
  auto &a = stmtAt<FragDecl>(*m, 4);
  CHECK(a.init.kind == FragInit::Kind::InvUnitLower);
  CHECK(a.init.source == &stmtAt<FragDecl>(*m, 0));
  CHECK(a.init.loc.col == 23);
  auto &asg = stmtAt<FragAssignStmt>(*m, 5);
  CHECK(asg.init.kind == FragInit::Kind::InvUnitLower);
  CHECK(asg.init.source == &a);
  CHECK(asg.frag == &a);
  CHECK(dumpAst(*m).find("l = inv_unit_lower(a)") != std::string::npos);

  CHECK(err(K(decls + "r = inv_unit_lower(r)")) ==
        "t.qla:8:20: error: inv_unit_lower needs a square 2-D fragment, 'r' has shape [64, 32]");
  CHECK(err(K(decls + "v = inv_unit_lower(v)")) ==
        "t.qla:8:20: error: inv_unit_lower needs a square 2-D fragment, 'v' has shape [64]");
  CHECK(err(K(decls + "frag a: f32[64, 64] = inv_unit_lower(lb)")) ==
        "t.qla:8:38: error: inv_unit_lower needs f32 fragments, 'lb' is bf16");
  CHECK(err(K(decls + "lb = inv_unit_lower(l)")) == "t.qla:8:6: error: inv_unit_lower needs f32 fragments, 'lb' is bf16");
  CHECK(err(K(decls + "frag a: f32[32, 32] = inv_unit_lower(l)")) ==
        "t.qla:8:23: error: inv_unit_lower keeps the shape: 'l' has shape [64, 64] but 'a' has shape [32, 32]");
  CHECK(err(K(decls + "shared t: f32[64, 64]\nl = inv_unit_lower(t)")) ==
        "t.qla:9:20: error: the inv_unit_lower source 't' must be a fragment, but it is a shared tile");
  CHECK(err(K(decls + "shared t: f32[64, 64]\nt = inv_unit_lower(l)")) ==
        "t.qla:9:1: error: cannot assign to 't': it is a shared tile (only vars and fragments can be assigned)");
  CHECK(parseError(K("let z = inv_unit_lower(l)")) == "t.qla:4:9: error: expected an expression, found 'inv_unit_lower'");
  const std::string want = "expected 'blocks' or 'operands' (inv_unit_lower(l, blocks = B) or inv_unit_lower(l, operands = f16))";
  CHECK(parseError(K("l = inv_unit_lower(l, 1)")) == "t.qla:4:23: error: " + want + ", found '1'");
  CHECK(parseError(K("l = inv_unit_lower(l, dim = 1)")) == "t.qla:4:23: error: " + want + ", found 'dim'");
  CHECK(parseError(K("l = inv_unit_lower(l, size = 1)")) ==
        "t.qla:4:23: error: expected 'blocks' or 'operands' in inv_unit_lower, found 'size'");
  CHECK(parseError(K("l = inv_unit_lower(l, operands = bf16)")) ==
        "t.qla:4:34: error: inv_unit_lower operands = bf16: only f16 is supported (tensor-core products of f16 operands)");
  CHECK(parseError(K("l = inv_unit_lower(l, operands = 16)")) ==
        "t.qla:4:34: error: expected f16 (inv_unit_lower(l, operands = f16)), found '16'");
  CHECK(parseError(K("l = inv_unit_lower(l, blocks = 16, blocks = 16)")) ==
        "t.qla:4:36: error: 'blocks' given twice to inv_unit_lower");
  CHECK(parseError(K("l = inv_unit_lower(l, blocks 16)")) == "t.qla:4:30: error: expected '=' after 'blocks', found '16'");

  // blocks = B: only the diagonal blocks.
  auto mb = ok(K(decls + "frag d: f32[64, 64] = inv_unit_lower(l, blocks = 16)"));
  CHECK(stmtAt<FragDecl>(*mb, 4).init.blocks == 16);
  CHECK(stmtAt<FragDecl>(*mb, 4).init.kind == FragInit::Kind::InvUnitLower);
  CHECK(dumpAst(*mb).find("inv_unit_lower(l, blocks = 16)") != std::string::npos);
  CHECK(stmtAt<FragDecl>(*m, 4).init.blocks == 0);
  CHECK(err(K(decls + "frag d: f32[64, 64] = inv_unit_lower(l, blocks = 48)")) ==
        "t.qla:8:50: error: inv_unit_lower blocks = 48 must divide the extent 64 of 'l'");
  CHECK(err(K(decls + "frag d: f32[64, 64] = inv_unit_lower(l, blocks = 0)")) ==
        "t.qla:8:50: error: inv_unit_lower blocks = 0 must divide the extent 64 of 'l'");

  // operands = f16: the whole inverse, merged by f16 tensor-core products.
  auto mf = ok(K(decls + "frag d: f32[64, 64] = inv_unit_lower(l, operands = f16)"));
  CHECK(stmtAt<FragDecl>(*mf, 4).init.f16Operands);
  CHECK(stmtAt<FragDecl>(*mf, 4).init.blocks == 0);
  CHECK(!stmtAt<FragDecl>(*m, 4).init.f16Operands);
  CHECK(dumpAst(*mf).find("inv_unit_lower(l, operands = f16)") != std::string::npos);
  CHECK(err(K(decls + "frag d: f32[64, 64] = inv_unit_lower(l, blocks = 16, operands = f16)")) ==
        "t.qla:8:54: error: inv_unit_lower takes 'blocks' or 'operands', not both");
  CHECK(err(K("frag w: f32[128, 128]\nw = inv_unit_lower(w, operands = f16)")) ==
        "t.qla:5:23: error: inv_unit_lower(..., operands = f16) needs a 64 x 64 fragment, 'w' has shape [128, 128]");
}

//===----------------------------------------------------------------------===//
// 7. Constant conditions
//===----------------------------------------------------------------------===//

TEST_CASE("features: conditions that fold", "[features]") {
  auto m = ok(K("if B { }\nif T > 32 && B { } else { }\nif n > 0 && false { }\nif n > 0 || T == 64 { }\n"
                "if n > 0 { }\nlet q = B ? 1 : n\nlet q2 = !B ? 1 : n\nlet q3 = n > 0 ? 1 : 2\nlet q4 = B ? 1 : s\n"
                "let q5 = T == 64 ? CU[0] : 0"));
  auto cond = [&](size_t i) -> const Expr & { return *stmtAt<IfStmt>(*m, i).cond; };
  REQUIRE(cond(0).isConst());
  CHECK(cond(0).value->b);
  REQUIRE(cond(1).isConst());
  CHECK(cond(1).value->b);
  REQUIRE(cond(2).isConst());
  CHECK_FALSE(cond(2).value->b);
  REQUIRE(cond(3).isConst());
  CHECK(cond(3).value->b);
  CHECK_FALSE(cond(4).isConst());
  auto &q = letInit<SelectExpr>(*m, 5);
  REQUIRE(q.isConst());
  CHECK(q.constInt() == 1);
  CHECK_FALSE(q.elseExpr->isConst());
  auto &q2 = letInit<SelectExpr>(*m, 6);
  CHECK_FALSE(q2.isConst());  // the taken branch `n` is not constant
  REQUIRE(q2.cond->isConst());
  CHECK_FALSE(q2.cond->value->b);
  CHECK_FALSE(letInit<SelectExpr>(*m, 7).isConst());
  auto &q4 = letInit<SelectExpr>(*m, 8);
  REQUIRE(q4.isConst());
  CHECK(q4.value->type == ScalarType::Float);
  CHECK(q4.value->f == 1.0);
  CHECK(q4.type == ScalarType::Float);
  auto &q5 = letInit<SelectExpr>(*m, 9);
  CHECK_FALSE(q5.isConst());
  CHECK(q5.cond->isConst());
  // A constant let can then size a tile.
  ok(K("let w = B ? 32 : n\nshared t: f32[w]"));
  // Both sides are still checked.
  CHECK(err(K("if B { } else { let z = 1.5 % 2 }")) ==
        "t.qla:4:29: error: operator '%' needs int operands, got float and int");
  CHECK(err(K("let z = B ? 1 : y")) == "t.qla:4:17: error: use of undeclared name 'y'");
  CHECK(err(K("let z = B || y > 0")) == "t.qla:4:14: error: use of undeclared name 'y'");
  CHECK(err(K("let z = B ? 1 : true")) == "t.qla:4:11: error: branches of '?:' have different types: int and bool");
  // -D changes the folded value.
  m = ok(K("if B { }"), {{"B", "false"}});
  CHECK_FALSE(stmtAt<IfStmt>(*m, 0).cond->value->b);
}

//===----------------------------------------------------------------------===//
// 8. Grid expressions
//===----------------------------------------------------------------------===//

TEST_CASE("features: grid expressions with params, min, max, cdiv", "[features]") {
  auto m = ok("kernel s<C = 64, DV = 128, VARLEN = 1>(Q: f32[B, T, H], CU: i32[NCU]) "
              "grid(DV / 64, H, max(B, NCU - 1)) threads(128) {}");
  CHECK(m->kernels[0]->gridStrings == std::array<std::string, 3>{"2", "H", "max(B, NCU - 1)"});
  m = ok("kernel p<C = 64>(Q: f32[B, T, H], CU: i32[NCU]) grid(B * cdiv(T, C) + NCU - 1, H) threads(128) {}");
  CHECK(m->kernels[0]->gridStrings[0] == "B * cdiv(T, 64) + NCU - 1");
  CHECK(gridExprString(*m->kernels[0]->grid[0]) == "B * cdiv(T, 64) + NCU - 1");
  m = ok("kernel p<C = 64>(Q: f32[B, T, H]) grid(min(max(B, 2), cdiv(T + 1, C * 2)) * 2, max(min(H, B - 1), -1), "
         "cdiv(cdiv(T, C), max(H, 1))) threads(128) {}");
  CHECK(m->kernels[0]->gridStrings == std::array<std::string, 3>{"min(max(B, 2), cdiv(T + 1, 128)) * 2",
                                                                  "max(min(H, B - 1), -1)",
                                                                  "cdiv(cdiv(T, 64), max(H, 1))"});
  // Comparisons of constants fold, also as a '?:' condition that picks a branch.
  const std::string sel =
      "kernel v<C = 64, VARLEN = 1>(Q: f32[B, T, H], CU: i32[NCU]) "
      "grid(VARLEN == 1 ? NCU - 1 : B, 2 * (VARLEN > 0 && C >= 64 ? NCU - 1 : B), cdiv(T, C) * (C > 32 ? 2 : 1)) "
      "threads(128) {}";
  m = ok(sel);
  CHECK(m->kernels[0]->gridStrings == std::array<std::string, 3>{"NCU - 1", "2 * (NCU - 1)", "cdiv(T, 64) * 2"});
  m = ok(sel, {{"VARLEN", "0"}, {"C", "16"}});
  CHECK(m->kernels[0]->gridStrings == std::array<std::string, 3>{"B", "2 * B", "cdiv(T, 16) * 1"});
  CHECK(err("kernel v<F = true>(Q: f32[B]) grid(F ? B : block.x) threads(128) {}") ==
        "t.qla:1:44: error: block indices cannot be used in a grid size");
  CHECK(err("kernel v(Q: f32[B]) grid(B > 2 ? B : 1) threads(128) {}") ==
        "t.qla:1:32: error: '?:' is not allowed in a grid size unless its condition is a compile-time constant");
  CHECK(err("kernel v(Q: f32[B]) grid(B > 2) threads(128) {}") == "t.qla:1:26: error: a grid size must be an int, got bool");
  CHECK(err("kernel v<F = false>(Q: f32[B]) grid(F ? 0 : 0) threads(128) {}") ==
        "t.qla:1:37: error: a grid size must be positive, got 0");
}

//===----------------------------------------------------------------------===//
// Parser and lexer
//===----------------------------------------------------------------------===//

TEST_CASE("features: parser", "[features][parser]") {
  ParseResult r = parseQla(K("var x = 1\nx += 2\nx -= y\nx *= 3\nx = 4\nacc += gemm(a, b)\n"
                             "copy X[i :+ 64 until n, 0 :+ 32] -> t\nl = inv_unit_lower(m)\nlet e = CU[i] + g[0]"),
                           "t.qla");
  INFO(formatDiagnostics(r.diags));
  REQUIRE(r.module);
  Block &b = r.module->kernels[0]->body;
  auto &v = nth<VarDecl>(b, 0);
  CHECK(v.name == "x");
  CHECK(v.nameLoc.col == 5);
  CHECK(exprString(*v.init) == "1");
  CHECK(nth<AssignStmt>(b, 1).op == AssignOp::Add);
  CHECK(nth<AssignStmt>(b, 1).target == "x");
  CHECK(nth<AssignStmt>(b, 2).op == AssignOp::Sub);
  CHECK(nth<AssignStmt>(b, 3).op == AssignOp::Mul);
  // `x = 4` is a fill until sema knows what x is.
  CHECK(nth<FragAssignStmt>(b, 4).init.kind == FragInit::Kind::Fill);
  CHECK(nth<FragAssignStmt>(b, 4).opLoc.col == 3);
  CHECK(nth<GemmStmt>(b, 5).accumulate);
  auto &c = nth<CopyStmt>(b, 6);
  REQUIRE(c.src.slices[0].limit);
  CHECK(exprString(*c.src.slices[0].limit) == "n");
  CHECK(c.src.slices[1].limit == nullptr);
  CHECK(nth<FragAssignStmt>(b, 7).init.kind == FragInit::Kind::InvUnitLower);
  CHECK(nth<FragAssignStmt>(b, 7).init.sourceName == "m");
  // Before sema every NAME[...] is an ElemExpr.
  auto *sum = as<BinaryExpr>(nth<LetDecl>(b, 8).init.get());
  REQUIRE(sum);
  CHECK(sum->lhs->kind == ExprKind::Elem);
  CHECK(sum->rhs->kind == ExprKind::Elem);

  CHECK(parseError(K("var = 1")) == "t.qla:4:5: error: expected a name after 'var', found '='");
  CHECK(parseError(K("var x")) ==
        "t.qla:5:1: error: expected '=' after 'var x' (a var needs an initial value), found '}'");
  CHECK(parseError(K("var x += 1")) ==
        "t.qla:4:7: error: expected '=' after 'var x' (a var needs an initial value), found '+='");
  CHECK(parseError(K("let until = 1")) == "t.qla:4:5: error: expected a name after 'let', found 'until'");
  CHECK(parseError(K("frag var: f32[4]")) == "t.qla:4:6: error: expected a name after 'frag', found 'var'");
  // Keywords may still name kernels and roles.
  REQUIRE(parseQla("kernel var() grid(1) threads(128) { role until: warpgroup 0 { } }", "t.qla").module);
}

TEST_CASE("features: lexer keywords", "[features][lexer]") {
  std::vector<Diagnostic> diags;
  auto toks = lexQla("var until inv_unit_lower vars until_ inv_unit", "t.qla", diags);
  REQUIRE(diags.empty());
  std::vector<Tok> want = {Tok::KwVar, Tok::KwUntil, Tok::KwInvUnitLower, Tok::Ident, Tok::Ident, Tok::Ident, Tok::Eof};
  REQUIRE(toks.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) CHECK(toks[i].kind == want[i]);
  CHECK(isKeyword(Tok::KwInvUnitLower));
  CHECK(isKeyword(Tok::KwKernel));
  CHECK_FALSE(isKeyword(Tok::Ident));
  CHECK_FALSE(isKeyword(Tok::LParen));
  CHECK(tokSpelling(Tok::KwUntil) == "'until'");
}
