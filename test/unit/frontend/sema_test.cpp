// Sema: every semantic error names the offending token (file:line:col), and
// successful checks annotate the AST (types, folded constants, resolved names).
#include <catch2/catch.hpp>

#include "qla/frontend/Frontend.h"

using namespace qla::fe;

namespace {

// Lines 1-3 are the header; the body starts on line 4, column 1.
const std::string kHeader =
    "kernel k<T = 64, F = 0.5, B = true>(A: bf16[M, K], H: out f16[M, K], C: out f32[M, K], s: f32, n: i32)\n"
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

std::unique_ptr<Module> ok(const std::string &src, const std::map<std::string, std::string> &defs = {}) {
  std::vector<Diagnostic> diags;
  auto m = parseAndCheckQla(src, "t.qla", defs, diags);
  INFO(src);
  INFO(formatDiagnostics(diags));
  REQUIRE(diags.empty());
  REQUIRE(m);
  return m;
}

template <typename T>
T &stmtAt(Module &m, size_t i) {
  T *t = as<T>(m.kernels.at(0)->body.stmts.at(i).get());
  REQUIRE(t);
  return *t;
}

}  // namespace

TEST_CASE("sema: names", "[sema]") {
  CHECK(err(K("let x = y + 1")) == "t.qla:4:9: error: use of undeclared name 'y'");
  CHECK(err(K("let x = 1\nlet x = 2")) ==
        "t.qla:5:5: error: redefinition of 'x' (previously declared at line 4, column 5)");
  CHECK(err(K("let T = 1")) == "t.qla:4:5: error: redefinition of 'T' (previously declared at line 1, column 10)");
  CHECK(err(K("for k in 0 .. 4 { let k = 1 }")) ==
        "t.qla:4:23: error: redefinition of 'k' (previously declared at line 4, column 5)");
  // Sibling scopes may reuse a name.
  ok(K("for k in 0 .. 4 { let z = k }\nfor k in 0 .. 4 { let z = k }"));
  CHECK(err("kernel k(A: f32[A]) grid(1) threads(128) {}") ==
        "t.qla:1:17: error: redefinition of 'A' (previously declared at line 1, column 10)");
  CHECK(err("kernel k(A: f32[N], N: i32) grid(1) threads(128) {}") ==
        "t.qla:1:21: error: redefinition of 'N' (previously declared at line 1, column 17)");
  CHECK(err("kernel k() grid(1) threads(128) {}\nkernel k() grid(1) threads(128) {}") ==
        "t.qla:2:8: error: redefinition of kernel 'k'");
  CHECK(err(K("let x = A + 1")) ==
        "t.qla:4:9: error: global tensor 'A' cannot be used as a scalar (copy a slice of it into a tile)");
  CHECK(err(K("frag f: f32[64]\nlet x = f")) ==
        "t.qla:5:9: error: fragment 'f' cannot be used as a scalar (read an element, e.g. f[i, j])");
  CHECK(err(K("shared t: bf16[64]\nlet x = t * 2")) == "t.qla:5:9: error: 't' is a shared tile, not a scalar");
  CHECK(err(K("let x = foo(1)")) ==
        "t.qla:4:9: error: unknown function 'foo' (builtins: cdiv, min, max, exp, exp2, fast_exp2, log, log2, sqrt, "
        "rsqrt, sigmoid, abs, f32, i32)");
  CHECK(err(K("let x = cdiv(1)")) == "t.qla:4:9: error: 'cdiv' takes 2 arguments, got 1");
  CHECK(err(K("let x = exp(1, 2)")) == "t.qla:4:9: error: 'exp' takes 1 argument, got 2");
}

TEST_CASE("sema: scalar types", "[sema]") {
  CHECK(err(K("let x = 1.5 % 2")) == "t.qla:4:13: error: operator '%' needs int operands, got float and int");
  CHECK(err(K("let x = s % 2")) == "t.qla:4:11: error: operator '%' needs int operands, got float and int");
  CHECK(err(K("if 1 { }")) == "t.qla:4:4: error: a condition must be bool, got int");
  CHECK(err(K("if n + 1 { }")) == "t.qla:4:4: error: a condition must be bool, got int");
  CHECK(err(K("let x = !n")) == "t.qla:4:9: error: '!' needs a bool operand, got int");
  CHECK(err(K("let x = B + 1")) == "t.qla:4:11: error: operator '+' needs int or float operands, got bool and int");
  CHECK(err(K("if n && B { }")) == "t.qla:4:6: error: operator '&&' needs bool operands, got int and bool");
  CHECK(err(K("if n == B { }")) == "t.qla:4:6: error: operator '==' cannot compare int and bool");
  CHECK(err(K("let x = B")) == "t.qla:4:9: error: a 'let' value must be int or float, got bool");
  CHECK(err(K("let x = B ? 1 : true")) == "t.qla:4:11: error: branches of '?:' have different types: int and bool");
  CHECK(err(K("let x = n ? 1 : 2")) == "t.qla:4:9: error: condition of '?:' must be bool, got int");
  CHECK(err(K("let x = cdiv(n, 2.0)")) == "t.qla:4:17: error: 'cdiv' needs int arguments, got float");
  CHECK(err(K("let x = max(B, 1)")) == "t.qla:4:13: error: 'max' needs int or float arguments, got bool");
  CHECK(err(K("let x = -B")) == "t.qla:4:9: error: unary '-' needs an int or float operand, got bool");
  CHECK(err(K("let x = T / (T - 64)")) == "t.qla:4:11: error: division by zero in constant expression");
  CHECK(err(K("let x = cdiv(n, 0)")) == "t.qla:4:17: error: division by zero in constant expression");
  CHECK(err(K("let x = 9223372036854775807 + T")) == "t.qla:4:29: error: integer overflow in constant expression");
  CHECK(err(K("let x = log(-1.0)")) == "t.qla:4:9: error: constant expression does not evaluate to a finite number");

  // Promotion: int and float mix to float, with the conversion explicit.
  auto m = ok(K("let a = n + 2.5\nlet b = T * F\nlet c = n < s ? 1 : 0\nlet d = max(n, s)\nlet e = i32(s) % 3\n"
                "let f = cdiv(T, 3) + T % 5 + T / 5 - abs(-T)\nlet g = exp2(T)\nlet h = B && !(T > 1) ? 1 : 2"));
  auto &a = stmtAt<LetDecl>(*m, 0);
  CHECK(a.init->type == ScalarType::Float);
  auto *add = as<BinaryExpr>(a.init.get());
  REQUIRE(add);
  CHECK(add->lhs->kind == ExprKind::Convert);
  CHECK(add->lhs->type == ScalarType::Float);
  CHECK(add->rhs->kind == ExprKind::FloatLit);
  CHECK_FALSE(a.init->isConst());
  auto &b = stmtAt<LetDecl>(*m, 1);
  REQUIRE(b.init->isConst());
  CHECK(b.init->value->type == ScalarType::Float);
  CHECK(b.init->value->f == 32.0);
  auto &c = stmtAt<LetDecl>(*m, 2);
  CHECK(as<SelectExpr>(c.init.get())->cond->type == ScalarType::Bool);
  CHECK(stmtAt<LetDecl>(*m, 3).init->type == ScalarType::Float);
  CHECK(stmtAt<LetDecl>(*m, 4).init->type == ScalarType::Int);
  auto &f = stmtAt<LetDecl>(*m, 5);
  REQUIRE(f.init->isConst());
  CHECK(f.init->constInt() == 22 + 4 + 12 - 64);
  auto &g = stmtAt<LetDecl>(*m, 6);
  REQUIRE(g.init->isConst());
  CHECK(g.init->value->f == Approx(18446744073709551616.0));
  auto &h = stmtAt<LetDecl>(*m, 7);
  REQUIRE(h.init->isConst());
  CHECK(h.init->constInt() == 2);
}

TEST_CASE("sema: specialization constants and -D", "[sema][defines]") {
  const std::string src =
      "kernel k<BM = 64, BN = BM * 2, R = 0.5, FLAG = false>(A: f32[M, N]) grid(cdiv(M, BM)) threads(128) {\n"
      "  shared t: f32[BM, BN]\n"
      "}\n";
  auto m = ok(src);
  KernelDecl &k = *m->kernels[0];
  CHECK(k.params[1]->value.i == 128);
  CHECK(k.gridStrings[0] == "cdiv(M, 64)");
  CHECK(stmtAt<SharedDecl>(*m, 0).shape == std::vector<int64_t>{64, 128});

  // An override re-folds the later defaults and every constant that uses it.
  m = ok(src, {{"BM", "32"}, {"R", "2"}, {"FLAG", "true"}});
  KernelDecl &k2 = *m->kernels[0];
  CHECK(k2.params[0]->value.i == 32);
  CHECK(k2.params[0]->overridden);
  CHECK(k2.params[1]->value.i == 64);
  CHECK_FALSE(k2.params[1]->overridden);
  CHECK(k2.params[2]->value.type == ScalarType::Float);
  CHECK(k2.params[2]->value.f == 2.0);
  CHECK(k2.params[3]->value.b);
  CHECK(k2.gridStrings[0] == "cdiv(M, 32)");
  CHECK(stmtAt<SharedDecl>(*m, 0).shape == std::vector<int64_t>{32, 64});
  // Qualified form KERNEL.NAME.
  m = ok(src, {{"k.BN", "16"}});
  CHECK(stmtAt<SharedDecl>(*m, 0).shape == std::vector<int64_t>{64, 16});
  m = ok(src, {{"R", "-1.5e-3"}});
  CHECK(m->kernels[0]->params[2]->value.f == Approx(-1.5e-3));

  CHECK(err(src, {{"BX", "1"}}) == "t.qla:1:8: error: no specialization constant 'BX' in kernel 'k'");
  CHECK(err(src, {{"k.BX", "1"}}) == "t.qla:1:8: error: no specialization constant 'BX' in kernel 'k'");
  CHECK(err(src, {{"q.BM", "1"}}) == "t.qla:1:1: error: no kernel 'q' for the define 'q.BM'");
  CHECK(err(src, {{"BM", "abc"}}) ==
        "t.qla:1:10: error: invalid value 'abc' for specialization constant 'BM' (expected an int)");
  CHECK(err(src, {{"BM", "1.5"}}) ==
        "t.qla:1:10: error: invalid value '1.5' for specialization constant 'BM' (expected an int)");
  CHECK(err(src, {{"R", "x"}}) ==
        "t.qla:1:32: error: invalid value 'x' for specialization constant 'R' (expected a float)");
  CHECK(err(src, {{"FLAG", "1"}}) ==
        "t.qla:1:41: error: invalid value '1' for specialization constant 'FLAG' (expected true or false)");
  // The override is checked where it is used: a zero extent.
  CHECK(err(src, {{"BN", "0"}}) == "t.qla:2:21: error: a tile extent must be positive, got 0");

  const std::string two = "kernel a<X = 1>() grid(1) threads(128) {}\nkernel b<X = 2, Y = 3>() grid(1) threads(128) {}\n";
  m = ok(two, {{"X", "5"}, {"b.X", "7"}});
  CHECK(m->kernels[0]->params[0]->value.i == 5);
  CHECK(m->kernels[1]->params[0]->value.i == 7);
  CHECK(err(two, {{"Z", "1"}}) == "t.qla:1:1: error: no specialization constant 'Z' in any kernel of this file");

  CHECK(err("kernel k<A = B, B = 1>() grid(1) threads(128) {}") == "t.qla:1:14: error: use of undeclared name 'B'");
  CHECK(err("kernel k<A = M>(X: f32[M]) grid(1) threads(128) {}") == "t.qla:1:14: error: use of undeclared name 'M'");
}

TEST_CASE("sema: launch shape", "[sema]") {
  CHECK(err("kernel k() grid(1) threads(100) {}") ==
        "t.qla:1:28: error: threads must be a positive multiple of 128 (one warpgroup) and at most 1024, got 100");
  CHECK(err("kernel k() grid(1) threads(1152) {}") ==
        "t.qla:1:28: error: threads must be a positive multiple of 128 (one warpgroup) and at most 1024, got 1152");
  CHECK(err("kernel k(n: i32) grid(1) threads(n) {}") ==
        "t.qla:1:34: error: the thread count must be a compile-time constant, but 'n' is not");
  CHECK(err("kernel k(A: f32[M], n: i32) grid(cdiv(M, n)) threads(128) {}") ==
        "t.qla:1:42: error: grid sizes may only use dim symbols and specialization constants; 'n' is a scalar "
        "argument");
  CHECK(err("kernel k(A: f32[M]) grid(M / 2.0) threads(128) {}") ==
        "t.qla:1:26: error: a grid size must be an int, got float");
  CHECK(err("kernel k(A: f32[M]) grid(M > 2 ? 1 : 2) threads(128) {}") ==
        "t.qla:1:32: error: '?:' is not allowed in a grid size unless its condition is a compile-time constant");
  CHECK(err("kernel k(A: f32[M]) grid(abs(M)) threads(128) {}") ==
        "t.qla:1:26: error: 'abs' is not allowed in a grid size (only cdiv, min and max)");
  CHECK(err("kernel k(A: f32[M]) grid(block.x) threads(128) {}") ==
        "t.qla:1:26: error: block indices cannot be used in a grid size");
  CHECK(err("kernel k<G = 0>() grid(G) threads(128) {}") == "t.qla:1:24: error: a grid size must be positive, got 0");
  CHECK(err("kernel k() grid(1) threads(128) cluster(4, 4) {}") ==
        "t.qla:1:33: error: a cluster of 16 blocks is too large (at most 8)");
  CHECK(err("kernel k() grid(1) threads(128) cluster(0) {}") ==
        "t.qla:1:41: error: a cluster size must be positive, got 0");
  CHECK(err("kernel k(A: f32[0]) grid(1) threads(128) {}") == "t.qla:1:17: error: tensor dim must be positive, got 0");
  CHECK(err("kernel k(A: f64[M]) grid(1) threads(128) {}") ==
        "t.qla:1:13: error: unknown dtype 'f64' (expected bf16, f16, f32, i32 or i64)");
  CHECK(err("kernel k(s: bf16) grid(1) threads(128) {}") ==
        "t.qla:1:13: error: scalar argument 's' must be i32 or f32, got 'bf16'");

  auto m = ok("kernel k<B = 64>(A: f32[M, N], X: f32[K]) grid(cdiv(N, B * 2), (M + 1) * 2 - 1, min(K, 8) % 3) "
              "threads(512) cluster(2, 1, 1) {}");
  const KernelDecl &k = *m->kernels[0];
  CHECK(k.numThreads == 512);
  CHECK(k.numWarpgroups == 4);
  CHECK(k.clusterDims == std::array<int64_t, 3>{2, 1, 1});
  CHECK(k.gridStrings[0] == "cdiv(N, 128)");
  CHECK(k.gridStrings[1] == "(M + 1) * 2 - 1");
  CHECK(k.gridStrings[2] == "min(K, 8) % 3");
  CHECK(gridExprString(*k.grid[1]) == "(M + 1) * 2 - 1");
  m = ok("kernel k(A: f32[M, N]) grid(M - (N - 1), M / (N * 2), N * 4 / 2) threads(128) {}");
  CHECK(m->kernels[0]->gridStrings[0] == "M - (N - 1)");
  CHECK(m->kernels[0]->gridStrings[1] == "M / (N * 2)");
  CHECK(m->kernels[0]->gridStrings[2] == "N * 4 / 2");
  m = ok("kernel k(A: f32[M]) grid(1) threads(128) {}");
  CHECK(m->kernels[0]->gridStrings == std::array<std::string, 3>{"1", "1", "1"});
}

TEST_CASE("sema: tiles", "[sema]") {
  CHECK(err(K("shared a: bf16[n, 64]")) ==
        "t.qla:4:16: error: a tile extent must be a compile-time constant, but 'n' is not");
  CHECK(err(K("let m0 = block.x * 64\nfrag a: f32[m0]")) ==
        "t.qla:5:13: error: a tile extent must be a compile-time constant, but 'm0' is not");
  CHECK(err(K("shared a: bf16[T - 64, 64]")) == "t.qla:4:16: error: a tile extent must be positive, got 0");
  CHECK(err(K("frag a: f32[-4]")) == "t.qla:4:13: error: a tile extent must be positive, got -4");
  CHECK(err(K("frag a: f32[4, 4, 4]")) == "t.qla:4:19: error: a fragment must have rank 1 or 2, got 3");
  CHECK(err(K("shared a: f32[4, 4, 4]")) == "t.qla:4:21: error: a shared tile must have rank 1 or 2, got 3");
  CHECK(err(K("frag a: f32[F]")) == "t.qla:4:13: error: a tile extent must be an int, got float");
  CHECK(err(K("frag a: q8[4]")) == "t.qla:4:9: error: unknown dtype 'q8' (expected bf16, f16, f32, i32 or i64)");
  CHECK(err(K("frag a: f32[8192, 4096]")) ==
        "t.qla:4:13: error: a fragment may hold at most 16777216 elements, [8192, 4096] is too large");
  // Constant lets fold like specialization constants.
  auto m = ok(K("let W = T / 2\nshared a: bf16[W, T]\nfrag f: i32[W] = 7"));
  CHECK(stmtAt<SharedDecl>(*m, 1).shape == std::vector<int64_t>{32, 64});
  CHECK(stmtAt<FragDecl>(*m, 2).dtype == qla::DType::I32);
}

TEST_CASE("sema: copies", "[sema]") {
  const std::string decls = "shared a: bf16[64, 32]\nfrag f: f32[64, 32]\nshared h: f16[64, 32]\n";  // lines 4-6
  CHECK(err(K(decls + "copy A[0 :+ 64, 0 :+ 32] -> C[0 :+ 64, 0 :+ 32]")) ==
        "t.qla:7:1: error: cannot copy from a global tensor to a global tensor");
  CHECK(err(K(decls + "frag g: f32[64, 32]\ncopy f -> g")) ==
        "t.qla:8:1: error: cannot copy a fragment to a fragment (use cast(...) to convert)");
  CHECK(err(K(decls + "copy a -> h")) == "t.qla:7:1: error: cannot copy a shared tile to a shared tile");
  CHECK(err(K(decls + "copy A[0 :+ 64, 0 :+ 32] -> h")) ==
        "t.qla:7:29: error: copies between global and shared memory keep the dtype: 'A' is bf16 but 'h' is f16");
  CHECK(err(K(decls + "copy A[0 :+ 64] -> a")) == "t.qla:7:6: error: tensor 'A' has 2 dims but the slice has 1");
  CHECK(err(K(decls + "copy A[0 :+ 64, 0 :+ 64] -> a")) ==
        "t.qla:7:6: error: slice shape [64, 64] of 'A' does not match shape [64, 32] of tile 'a'");
  CHECK(err(K(decls + "copy f -> C[0, 0 :+ 32]")) ==
        "t.qla:7:11: error: slice shape [32] of 'C' does not match shape [64, 32] of tile 'f'");
  CHECK(err(K(decls + "copy A[0 :+ n, 0 :+ 32] -> a")) ==
        "t.qla:7:13: error: a slice extent must be a compile-time constant, but 'n' is not");
  CHECK(err(K(decls + "copy A[s :+ 64, 0 :+ 32] -> a")) == "t.qla:7:8: error: a slice start must be an int, got float");
  CHECK(err(K(decls + "copy a -> A[0 :+ 64, 0 :+ 32]")) ==
        "t.qla:7:11: error: cannot write tensor 'A': it is not declared 'out'");
  CHECK(err(K(decls + "copy A -> a")) == "t.qla:7:6: error: global tensor 'A' must be sliced: A[start :+ extent, ...]");
  // A shared tile's sub-tile, to or from a fragment (constant, 8-aligned starts).
  ok(K(decls + "copy a[0 :+ 64, 0 :+ 32] -> f"));
  ok(K(decls + "frag g: f32[32, 16]\ncopy g -> a[32 :+ 32, 16 :+ 16]\ncopy a[8 :+ 32, 0 :+ 16] -> g"));
  CHECK(err(K(decls + "frag g: f32[32, 16]\ncopy a[4 :+ 32, 0 :+ 16] -> g")) == 
        "t.qla:8:8: error: the sub-tile 4 :+ 32 of 'a' must start at a multiple of 8 and stay in its rows [0, 64)");
  CHECK(err(K(decls + "frag g: f32[32, 16]\ncopy g -> a[40 :+ 32, 0 :+ 16]")) == 
        "t.qla:8:13: error: the sub-tile 40 :+ 32 of 'a' must start at a multiple of 8 and stay in its rows [0, 64)");
  // In the side of an `if` on a constant that is not taken, a box outside the
  // tile is no error (nothing of it is built); on the taken side it is.
  ok(K(decls + "frag g: f32[32, 16]\nif 1 == 2 { copy g -> a[40 :+ 32, 0 :+ 16] }"));
  ok(K(decls + "frag g: f32[32, 16]\nif 1 == 1 { copy g -> a[32 :+ 32, 0 :+ 16] } else { copy a[64 :+ 32, 0 :+ 16] -> g }"));
  CHECK(err(K(decls + "frag g: f32[32, 16]\nif 1 == 1 { copy g -> a[40 :+ 32, 0 :+ 16] }")) ==
        "t.qla:8:25: error: the sub-tile 40 :+ 32 of 'a' must start at a multiple of 8 and stay in its rows [0, 64)");
  CHECK(err(K(decls + "copy a[n :+ 64, 0 :+ 32] -> f")) == 
        "t.qla:7:8: error: the start of a sub-tile must be a compile-time constant, but 'n' is not");
  CHECK(err(K(decls + "copy A[0 :+ 64, 0 :+ 32] -> a[0 :+ 64, 0 :+ 32]")) == 
        "t.qla:7:29: error: a sub-tile of shared tile 'a' is copied to or from a fragment only, and not transposed");
  CHECK(err(K(decls + "frag g: f32[32, 32]\ncopy g^T -> a[0 :+ 32, 0 :+ 32]")) == 
        "t.qla:8:13: error: a sub-tile of shared tile 'a' is copied to or from a fragment only, and not transposed");
  CHECK(err(K(decls + "frag g: f32[32, 16]\ncopy a[0 :+ 32, 0 :+ 32] -> g")) == 
        "t.qla:8:29: error: shape [32, 32] of 'a' does not match shape [32, 16] of 'g'");
  CHECK(err(K(decls + "copy a[0 :+ 64] -> f")) == 
        "t.qla:7:6: error: a sub-tile of shared tile 'a' is NAME[r0 :+ rows, c0 :+ cols] of a 2-D tile");
  CHECK(err(K(decls + "copy f[0 :+ 64, 0 :+ 32] -> a")) ==
        "t.qla:7:6: error: only global tensors and shared tiles can be sliced; 'f' is a fragment");
  CHECK(err(K(decls + "copy n -> f")) == "t.qla:7:6: error: 'n' is a scalar argument, not a tile");
  CHECK(err(K(decls + "frag g: f32[32, 64]\ncopy a -> g")) ==
        "t.qla:8:11: error: shape [64, 32] of 'a' does not match shape [32, 64] of 'g'");

  auto m = ok(K(decls + "copy A[block.x * 64 :+ 64, 0 :+ 32] -> a\ncopy A[0 :+ 64, 0 :+ 32] -> f\n"
                        "copy a -> f\ncopy f -> a\ncopy f -> C[0 :+ 64, 0 :+ 32]\nfrag c: f32[64, 32]\n"
                        "frag v: bf16[32]\ncopy H[3, 0 :+ 32] -> v\ncopy h -> H[0 :+ 64, 0 :+ 32]"));
  CHECK(stmtAt<CopyStmt>(*m, 3).copyKind == CopyKind::GlobalToShared);
  CHECK(stmtAt<CopyStmt>(*m, 4).copyKind == CopyKind::GlobalToFrag);
  CHECK(stmtAt<CopyStmt>(*m, 5).copyKind == CopyKind::SharedToFrag);
  CHECK(stmtAt<CopyStmt>(*m, 6).copyKind == CopyKind::FragToShared);
  CHECK(stmtAt<CopyStmt>(*m, 7).copyKind == CopyKind::FragToGlobal);
  auto &v = stmtAt<CopyStmt>(*m, 10);
  CHECK(v.copyKind == CopyKind::GlobalToFrag);
  CHECK(v.src.sliceShape == std::vector<int64_t>{32});
  CHECK(v.src.droppedDims == std::vector<int>{0});
  CHECK(v.src.slices[0].extentValue == 1);
  CHECK(v.src.slices[1].extentValue == 32);
  CHECK(v.src.tensor() == m->kernels[0]->tensors[1]);
  CHECK(v.dst.tile()->name == "v");
  CHECK(stmtAt<CopyStmt>(*m, 11).copyKind == CopyKind::SharedToGlobal);
}

TEST_CASE("sema: transposed copies", "[sema]") {
  // lines 4-7; the copy under test is on line 8
  const std::string decls = "frag o: f32[64, 32]\nshared t: bf16[32, 64]\nshared w: bf16[64, 32]\nfrag v: f32[64]\n";
  CHECK(err(K(decls + "copy v^T -> C[0, 0 :+ 64]")) ==
        "t.qla:8:7: error: '^T' needs a 2-D fragment, 'v' has shape [64]");
  CHECK(err(K(decls + "copy w^T -> o")) ==
        "t.qla:8:7: error: '^T' transposes the fragment operand of a copy; 'w' is a shared tile");
  CHECK(err(K(decls + "copy o -> w^T")) ==
        "t.qla:8:12: error: '^T' transposes the fragment operand of a copy; 'w' is a shared tile");
  CHECK(err(K(decls + "copy t^T -> w")) ==
        "t.qla:8:7: error: '^T' transposes the fragment operand of a copy; 't' is a shared tile");
  CHECK(err(K(decls + "copy A[0 :+ 32, 0 :+ 64]^T -> o")) ==
        "t.qla:8:25: error: '^T' transposes the fragment operand of a copy; 'A' is a global tensor slice");
  CHECK(err(K(decls + "copy o -> C^T[0 :+ 32, 0 :+ 64]")) ==
        "t.qla:8:12: error: '^T' transposes the fragment operand of a copy; 'C' is a global tensor slice");
  CHECK(err(K(decls + "copy o^T -> C[0 :+ 64, 0 :+ 32]")) ==
        "t.qla:8:13: error: slice shape [64, 32] of 'C' does not match the transposed shape [32, 64] of fragment 'o'");
  CHECK(err(K(decls + "copy A[0 :+ 64, 0 :+ 32] -> o^T")) ==
        "t.qla:8:6: error: slice shape [64, 32] of 'A' does not match the transposed shape [32, 64] of fragment 'o'");
  CHECK(err(K(decls + "copy o^T -> w")) ==
        "t.qla:8:13: error: shape [64, 32] of 'w' does not match the transposed shape [32, 64] of fragment 'o'");
  CHECK(err(K(decls + "copy w -> o^T")) ==
        "t.qla:8:11: error: shape [64, 32] of 'w' does not match the transposed shape [32, 64] of fragment 'o'");

  auto m = ok(K(decls + "copy o^T -> t\ncopy t -> o^T\ncopy o^T -> C[0 :+ 32, 0 :+ 64]\n"
                        "copy A[0 :+ 32, 0 :+ 64] -> o^T\ncopy o^T -> C[0 :+ 32 until n, 0 :+ 64 until n]\n"
                        "copy A[0 :+ 32 until n, 0 :+ 64] -> o^T\nfrag p: bf16[64, 32]\ncopy p^T -> t"));
  CHECK(stmtAt<CopyStmt>(*m, 4).copyKind == CopyKind::FragToShared);
  CHECK(stmtAt<CopyStmt>(*m, 4).src.transposed);
  CHECK_FALSE(stmtAt<CopyStmt>(*m, 4).dst.transposed);
  CHECK(stmtAt<CopyStmt>(*m, 5).copyKind == CopyKind::SharedToFrag);
  CHECK(stmtAt<CopyStmt>(*m, 5).dst.transposed);
  CHECK(stmtAt<CopyStmt>(*m, 6).copyKind == CopyKind::FragToGlobal);
  CHECK(stmtAt<CopyStmt>(*m, 6).transposed());
  CHECK(stmtAt<CopyStmt>(*m, 7).copyKind == CopyKind::GlobalToFrag);
  CHECK(stmtAt<CopyStmt>(*m, 7).transposed());
  CHECK(stmtAt<CopyStmt>(*m, 8).dst.sliceShape == std::vector<int64_t>{32, 64});
  CHECK(stmtAt<CopyStmt>(*m, 9).copyKind == CopyKind::GlobalToFrag);
  CHECK(stmtAt<CopyStmt>(*m, 11).copyKind == CopyKind::FragToShared);
  // Untransposed copies are unchanged.
  CHECK_FALSE(stmtAt<CopyStmt>(*ok(K(decls + "copy o -> w")), 4).transposed());
}

TEST_CASE("sema: gemm", "[sema]") {
  const std::string decls =
      "shared a: bf16[64, 32]\nshared b: bf16[128, 32]\nfrag c: f32[64, 128]\nfrag fa: bf16[64, 32]\n"
      "shared h: f16[128, 32]\nfrag c16: bf16[64, 128]\nshared x: f32[64, 32]\n";  // lines 4-10
  auto m = ok(K(decls + "c = gemm(a, b^T)\nc += gemm(fa, b^T)\nshared bt: bf16[32, 128]\nc += gemm(a, bt)"));
  auto &g = stmtAt<GemmStmt>(*m, 7);
  CHECK(g.m == 64);
  CHECK(g.n == 128);
  CHECK(g.k == 32);
  CHECK(g.c->name == "c");
  CHECK(g.a.decl->name == "a");
  CHECK(g.b.decl->space() == MemSpace::Shared);
  CHECK(stmtAt<GemmStmt>(*m, 8).a.decl->space() == MemSpace::Frag);
  CHECK(stmtAt<GemmStmt>(*m, 8).accumulate);

  CHECK(err(K(decls + "c16 = gemm(a, b^T)")) == "t.qla:11:1: error: gemm result 'c16' must be an f32 fragment, got bf16");
  CHECK(err(K(decls + "a = gemm(a, b^T)")) ==
        "t.qla:11:1: error: gemm result 'a' must be an f32 fragment, but it is a shared tile");
  CHECK(err(K(decls + "c = gemm(x, b^T)")) == "t.qla:11:10: error: gemm operands must be bf16 or f16; 'x' is f32");
  CHECK(err(K(decls + "c = gemm(a, fa^T)")) ==
        "t.qla:11:13: error: gemm operand B 'fa' must be a shared tile, but it is a fragment");
  CHECK(err(K(decls + "c = gemm(A, b^T)")) ==
        "t.qla:11:10: error: gemm operand A 'A' must be a shared tile or a fragment, but it is a global tensor");
  CHECK(err(K(decls + "c = gemm(a, h^T)")) ==
        "t.qla:11:13: error: gemm operands must have the same dtype: 'a' is bf16 but 'h' is f16");
  CHECK(err(K(decls + "c = gemm(a, b)")) ==
        "t.qla:11:5: error: gemm shapes do not match: op(A) is [64, 32], op(B) is [128, 32], C is [64, 128] (need "
        "[M, K] x [K, N] -> [M, N])");
  CHECK(err(K(decls + "c = gemm(a^T, b^T)")) ==
        "t.qla:11:5: error: gemm shapes do not match: op(A) is [32, 64], op(B) is [32, 128], C is [64, 128] (need "
        "[M, K] x [K, N] -> [M, N])");
  CHECK(err(K(decls + "c = gemm(fa^T, b^T)")) == "t.qla:11:10: error: fragment operand 'fa' cannot be transposed");
  CHECK(err(K(decls + "shared v: bf16[64]\nc = gemm(v, b^T)")) ==
        "t.qla:12:10: error: gemm operand 'v' must be 2-D, got shape [64]");
}

TEST_CASE("sema: reduce, scan, cast, fill", "[sema]") {
  const std::string decls = "frag x: f32[64, 128]\nfrag r: f32[64]\nfrag q: f32[128]\n";  // lines 4-6
  auto m = ok(K(decls + "r = reduce(max, x, dim = 1)\nq = reduce(+, x, dim = 0)\nfrag y: f32[64, 128] = scan(+, x)\n"
                        "frag z: f32[64, 128] = scan(min, x, dim = 0)\nr = scan(+, r)\nfrag b: bf16[64, 128] = cast(x)\n"
                        "frag i: i32[64] = n\nr = s\nr = 1"));
  CHECK(stmtAt<FragAssignStmt>(*m, 3).init.source->name == "x");
  CHECK(stmtAt<FragAssignStmt>(*m, 3).frag->name == "r");
  CHECK(stmtAt<FragDecl>(*m, 5).init.dim == 1);  // scan defaults to the last dim
  CHECK(stmtAt<FragDecl>(*m, 6).init.dim == 0);
  CHECK(stmtAt<FragAssignStmt>(*m, 7).init.dim == 0);
  CHECK(stmtAt<FragAssignStmt>(*m, 11).init.fill->kind == ExprKind::Convert);  // 1 -> 1.0

  CHECK(err(K(decls + "q = reduce(+, r, dim = 0)")) ==
        "t.qla:7:15: error: reduce needs a 2-D source fragment, 'r' has shape [64]");
  CHECK(err(K(decls + "r = reduce(+, x, dim = 2)")) == "t.qla:7:24: error: reduce dim must be 0 or 1, got 2");
  CHECK(err(K(decls + "r = reduce(+, x, dim = 0)")) ==
        "t.qla:7:5: error: reducing 'x' [64, 128] along dim 0 gives shape [128], but 'r' has shape [64]");
  CHECK(err(K(decls + "frag y: f32[64, 128] = reduce(+, x, dim = 1)")) ==
        "t.qla:7:24: error: reducing 'x' [64, 128] along dim 1 gives shape [64], but 'y' has shape [64, 128]");
  CHECK(err(K(decls + "shared t: f32[64, 128]\nr = reduce(+, t, dim = 1)")) ==
        "t.qla:8:15: error: the reduce source 't' must be a fragment, but it is a shared tile");
  CHECK(err(K(decls + "r = scan(+, x)")) ==
        "t.qla:7:5: error: scan keeps the shape: 'x' has shape [64, 128] but 'r' has shape [64]");
  CHECK(err(K(decls + "r = scan(+, r, dim = 1)")) ==
        "t.qla:7:22: error: scan dim must be 0 for 'r' of shape [64], got 1");
  CHECK(err(K(decls + "q = cast(r)")) ==
        "t.qla:7:5: error: cast keeps the shape: 'r' has shape [64] but 'q' has shape [128]");
  CHECK(err(K(decls + "frag i: i32[64] = s")) ==
        "t.qla:7:19: error: cannot store a float in i32 fragment 'i' (convert with i32(...))");
  CHECK(err(K(decls + "r = B")) == "t.qla:7:5: error: cannot store a bool in f32 fragment 'r'");
  CHECK(err(K(decls + "let v = 1\nv = 2")) ==
        "t.qla:8:1: error: cannot assign to 'v': a let value is immutable (declare it with 'var')");
  CHECK(err(K(decls + "shared t: f32[64]\nt = 0")) ==
        "t.qla:8:1: error: cannot assign to 't': it is a shared tile (only vars and fragments can be assigned)");
  CHECK(err(K(decls + "w = 0")) == "t.qla:7:1: error: use of undeclared name 'w'");
}

TEST_CASE("sema: parallel blocks", "[sema]") {
  const std::string decls = "frag x: f32[64, 128]\nfrag r: f32[64]\nfrag c: f32[128]\nfrag i8: i32[64, 128]\n";  // 4-7
  auto m = ok(K(decls + "for (i, j) in parallel(64, 128) {\n  let t = x[i, j] * r[i] + c[j]\n  x[i, j] = t\n"
                        "  i8[i, j] += 1\n  x[i, j] *= exp(t) > 1.0 ? 1 : 0\n}\n"
                        "for (i) in parallel(64) { r[i] = r[i] / 2 }"));
  auto &p = stmtAt<ParallelStmt>(*m, 4);
  CHECK(p.shape == std::vector<int64_t>{64, 128});
  auto &let = *as<LetDecl>(p.body.stmts[0].get());
  // ((x[i, j] * r[i]) + c[j])
  auto *sum = as<BinaryExpr>(let.init.get());
  REQUIRE(sum);
  auto *col = as<ElemExpr>(sum->rhs.get());
  REQUIRE(col);
  CHECK(col->frag->name == "c");
  CHECK(col->parallelDims == std::vector<int>{1});
  auto *prod = as<BinaryExpr>(sum->lhs.get());
  REQUIRE(prod);
  CHECK(as<ElemExpr>(prod->lhs.get())->parallelDims == std::vector<int>{0, 1});
  CHECK(as<ElemExpr>(prod->rhs.get())->parallelDims == std::vector<int>{0});
  auto *idx = as<NameExpr>(as<ElemExpr>(prod->rhs.get())->indices[0].get());
  REQUIRE(idx);
  CHECK(as<LoopVarDecl>(idx->decl)->owner == &p);
  auto &ea = *as<ElemAssignStmt>(p.body.stmts[1].get());
  CHECK(ea.frag->name == "x");
  CHECK(ea.value->type == ScalarType::Float);
  auto &ei = *as<ElemAssignStmt>(p.body.stmts[2].get());
  CHECK(ei.value->type == ScalarType::Int);  // stays int for an i32 fragment
  auto &em = *as<ElemAssignStmt>(p.body.stmts[3].get());
  CHECK(em.value->type == ScalarType::Float);
  CHECK(em.op == AssignOp::Mul);

  const std::string par = "for (i, j) in parallel(64, 128) { ";  // body text starts at line 8, column 35
  CHECK(err(K(decls + par + "r[i] = 1 }")) ==
        "t.qla:8:35: error: element assignment target 'r' must have the parallel block's rank 2, but it has shape [64] "
        "(a 1-D fragment takes a row sum: 'r[i] += ...', i the first index)");
  CHECK(err(K(decls + "frag y: f32[64, 64]\n" + par + "y[i, j] = 1 }")) ==
        "t.qla:9:35: error: fragment 'y' has shape [64, 64] but the parallel block iterates over [64, 128]");
  CHECK(err(K(decls + par + "x[j, i] = 1 }")) ==
        "t.qla:8:37: error: element assignment must index 'x' with the parallel index variables in order");
  CHECK(err(K(decls + par + "x[i, 0] = 1 }")) ==
        "t.qla:8:40: error: element assignment must index 'x' with the parallel index variables in order");
  CHECK(err(K(decls + par + "x[i, j] = c[i] }")) == "t.qla:8:47: error: fragment 'c' has extent 128 but index 'i' ranges over 64");
  CHECK(err(K(decls + par + "x[i, j] = r[j] }")) == "t.qla:8:47: error: fragment 'r' has extent 64 but index 'j' ranges over 128");
  CHECK(err(K(decls + par + "x[i, j] = x[j, i] }")) ==
        "t.qla:8:47: error: fragment 'x' must be indexed by the parallel index variables in order");
  CHECK(err(K(decls + par + "x[i, j] = r[i + 1] }")) ==
        "t.qla:8:47: error: a fragment index must be one of the parallel block's index variables");
  CHECK(err(K(decls + par + "x[i, j] = r[i, j] }")) == "t.qla:8:45: error: fragment 'r' has rank 1 but is indexed with 2 indexes");
  CHECK(err(K(decls + par + "i8[i, j] = 0.5 }")) ==
        "t.qla:8:46: error: cannot store a float in i32 fragment 'i8' (convert with i32(...))");
  CHECK(err(K(decls + par + "copy x -> C[0 :+ 64, 0 :+ 128] }")) ==
        "t.qla:8:35: error: only 'let' and element assignments are allowed inside a parallel block");
  // A global tensor element can be read inside a parallel block (GlobalElemExpr).
  ok(K(decls + par + "x[i, j] = A[i, j] }"));
  CHECK(err(K(decls + "for (i) in parallel(64) { c[i] = 0 }")) ==
        "t.qla:8:27: error: fragment 'c' has shape [128] but the parallel block iterates over [64]");
  CHECK(err(K(decls + "for (i) in parallel(64) { r[i] = x[i, i] }")) ==
        "t.qla:8:34: error: fragment 'x' has rank 2 but the parallel block has rank 1");
  CHECK(err(K(decls + "for (i, j) in parallel(64) { }")) ==
        "t.qla:8:1: error: the parallel block has 2 index variables but 1 extent");
  CHECK(err(K(decls + "for (i) in parallel(n) { }")) ==
        "t.qla:8:21: error: a parallel extent must be a compile-time constant, but 'n' is not");
  // Outside a parallel block an element read is a FragPickExpr (see "sema: fragment picks").
  ok(K(decls + "let v = r[0]"));
  CHECK(err(K(decls + "r[0] = 1")) == "t.qla:8:1: error: element assignment outside a parallel block");
}

TEST_CASE("sema: loops and if", "[sema]") {
  auto m = ok(K("for k in 0 .. T / 16 unroll { }\npipeline k in 0 .. cdiv(n, 64) stages(T / 16) { }\n"
                "for k in n .. 2 * n { if k > 3 && B { } else if k == 0 { } else { } }"));
  auto &f = stmtAt<ForStmt>(*m, 0);
  REQUIRE(f.hi->isConst());
  CHECK(f.hi->constInt() == 4);
  CHECK(f.lo->constInt() == 0);
  CHECK(stmtAt<PipelineStmt>(*m, 1).numStages == 4);
  CHECK(err(K("for k in 0 .. n unroll { }")) ==
        "t.qla:4:15: error: an unrolled loop bound must be a compile-time constant, but 'n' is not");
  CHECK(err(K("for k in 0 .. s { }")) == "t.qla:4:15: error: a loop bound must be an int, got float");
  CHECK(err(K("pipeline k in 0 .. n stages(0) { }")) == "t.qla:4:29: error: a pipeline needs at least 1 stage, got 0");
  CHECK(err(K("pipeline k in 0 .. n stages(n) { }")) ==
        "t.qla:4:29: error: the number of pipeline stages must be a compile-time constant, but 'n' is not");
  CHECK(err(K("pipeline k in 0 .. n stages(65) { }")) == "t.qla:4:29: error: a pipeline may have at most 64 stages, got 65");
  CHECK(err(K("for k in -1 .. 1024 unroll { }")) ==
        "t.qla:4:1: error: an unrolled loop may run at most 1024 iterations, -1 .. 1024 is too many");
  ok(K("for k in 5 .. 1 unroll { }\nfor k in -1 .. 1023 unroll { }"));
  CHECK(err(K("pipeline k in 0 .. n stages(2) {\n  pipeline j in 0 .. n stages(2) { }\n}")) ==
        "t.qla:5:3: error: pipelines cannot be nested");
}

namespace {
// Lines 1-2 header, 3 '{', 4 channel, roles from line 5.
std::string R(const std::string &roles, const std::string &threads = "384") {
  return "kernel w(A: bf16[M, K], C: out f32[M, K]) grid(1) threads(" + threads + ")\n"
         "{\n"
         "let m0 = block.x * 64\n"
         "channel ch: { a: bf16[64, 32], b: bf16[32, 32] } depth(3)\n" +
         roles + "\n}\n";
}
const std::string kLoad = "role load: warpgroup 0, regs 40 { put ch -> (a, b) { copy A[m0 :+ 64, 0 :+ 32] -> a; copy A[0 :+ 32, 0 :+ 32] -> b } }\n";
const std::string kMath = "role math: warpgroups 1 .. 2, regs 232 { frag c: f32[64, 32] = 0\n get ch -> (x, y) { c += gemm(x, y) } }";
}  // namespace

TEST_CASE("sema: roles and channels", "[sema]") {
  auto m = ok(R(kLoad + kMath));
  KernelDecl &k = *m->kernels[0];
  REQUIRE(k.roles.size() == 2);
  REQUIRE(k.channels.size() == 1);
  ChannelDecl &ch = *k.channels[0];
  CHECK(ch.depthValue == 3);
  CHECK(ch.producer == k.roles[0]);
  CHECK(ch.consumers == std::vector<RoleStmt *>{k.roles[1]});
  REQUIRE(ch.puts.size() == 1);
  REQUIRE(ch.gets.size() == 1);
  CHECK(ch.fields[1].shape == std::vector<int64_t>{32, 32});
  SlotStmt &get = *ch.gets[0];
  CHECK(get.role == k.roles[1]);
  CHECK(get.channel == &ch);
  CHECK(get.bindings[0]->shape == std::vector<int64_t>{64, 32});
  CHECK(get.bindings[1]->dtype == qla::DType::BF16);
  CHECK(get.bindings[1]->channel == &ch);
  auto *frag = as<FragDecl>(k.roles[1]->body.stmts[0].get());
  REQUIRE(frag);
  CHECK(frag->role == k.roles[1]);
  auto *gemm = as<GemmStmt>(get.body.stmts[0].get());
  REQUIRE(gemm);
  CHECK(as<SlotBindingDecl>(gemm->a.decl)->owner == &get);
  auto *copy = as<CopyStmt>(ch.puts[0]->body.stmts[0].get());
  REQUIRE(copy);
  CHECK(copy->copyKind == CopyKind::GlobalToShared);
  CHECK(as<SlotBindingDecl>(copy->dst.decl)->field == 0);

  CHECK(err(R(kLoad + kMath, "256")) ==
        "t.qla:6:28: error: warpgroup 2 is out of range: threads(256) has warpgroups 0 .. 1");
  CHECK(err(R(kLoad + "role math: warpgroups 0 .. 2 { get ch -> (x, y) { } }")) ==
        "t.qla:6:6: error: role 'math' overlaps role 'load' (both use warpgroup 0)");
  CHECK(err(R(kLoad + "role math: warpgroups 2 .. 1 { get ch -> (x, y) { } }")) ==
        "t.qla:6:28: error: empty warpgroup range 2 .. 1");
  CHECK(err(R(kLoad + "role math: warpgroup 1, regs 100 { get ch -> (x, y) { } }")) ==
        "t.qla:6:30: error: regs must be a multiple of 8 between 24 and 256, got 100");
  CHECK(err(R(kLoad + "role load: warpgroup 1 { get ch -> (x, y) { } }")) == "t.qla:6:6: error: redefinition of role 'load'");
  CHECK(err(R("role a: warpgroup 0 { }")) ==
        "t.qla:4:9: error: channel 'ch' is never used (it needs a 'put' in one role and a 'get' in another)");
  CHECK(err(R(kLoad)) == "t.qla:4:9: error: channel 'ch' has a 'put' but no 'get'");
  CHECK(err(R("role a: warpgroup 0 { get ch -> (x, y) { } }")) == "t.qla:4:9: error: channel 'ch' has a 'get' but no 'put'");
  CHECK(err(R(kLoad + kMath + "\nrole more: warpgroup 3 { put ch -> (p, q) { } }", "512")) ==
        "t.qla:8:26: error: channel 'ch' already has its puts in role 'load'; all puts of a channel must be in one role");
  // A role may read back the slots it put (the producer among the consumers).
  {
    auto m = ok(R("role a: warpgroup 0 { put ch -> (p, q) { }\n get ch -> (x, y) { } }"));
    const ChannelDecl *ch = m->kernels[0]->channels[0];
    CHECK(ch->producer->name == "a");
    REQUIRE(ch->consumers.size() == 1);
    CHECK(ch->consumers[0] == ch->producer);
  }
  CHECK(err(R("role a: warpgroup 0 { put ch -> (p) { } }\nrole b: warpgroup 1 { get ch -> (x, y) { } }")) ==
        "t.qla:5:27: error: channel 'ch' has 2 tiles per slot but 'put' binds 1 name");
  CHECK(err(R("role a: warpgroup 0 { put ch -> (p, q) { let z = 1 } }\nrole b: warpgroup 1 { get ch -> (x, y) { } }")) ==
        "t.qla:5:42: error: only copies, fragments, parallel blocks over them and 'if' on a compile-time constant are allowed inside 'put'");
  CHECK(err(R("role a: warpgroup 0 { shared t: bf16[64, 32]\n put ch -> (p, q) { copy A[0 :+ 64, 0 :+ 32] -> t } }\n"
              "role b: warpgroup 1 { get ch -> (x, y) { } }")) ==
        "t.qla:6:49: error: inside 'put', a copy must write one of the slot's tiles or a fragment declared in the put; 't' is neither");
  CHECK(err(R(kLoad + "role b: warpgroup 1 { get ch -> (x, y) { copy A[0 :+ 64, 0 :+ 32] -> x } }")) ==
        "t.qla:6:70: error: slot tile 'x' is read-only inside 'get'");
  CHECK(err(R(kLoad + "role b: warpgroup 1 { get ch -> (x, y) { } }\nput ch -> (p, q) { }")) ==
        "t.qla:7:1: error: in a kernel with roles, only 'let', 'var', assignments, 'for', 'if', 'shared', 'channel' and 'role' may appear outside the "
        "roles");
  CHECK(err(R(kLoad + "role b: warpgroup 1 { get ch -> (x, y) { } }\nfrag f: f32[64]")) ==
        "t.qla:7:1: error: in a kernel with roles, only 'let', 'var', assignments, 'for', 'if', 'shared', 'channel' and 'role' may appear outside the "
        "roles");
  CHECK(err(R(kLoad + "role b: warpgroup 1 { get ch -> (x, y) { }\n role c: warpgroup 2 { } }")) ==
        "t.qla:7:2: error: 'role' must be at the top level of the kernel body");
  // (the misplaced channel is also never used: two errors)
  CHECK(diagsOf(R(kLoad + "role b: warpgroup 1 { get ch -> (x, y) { }\n channel d: { t: f32[4] } depth(1) }"))[0].str() ==
        "t.qla:7:2: error: 'channel' must be at the top level of the kernel body, outside roles");
  CHECK(diagsOf("kernel k() grid(1) threads(128) {\n  channel d: { t: f32[4] } depth(1)\n  put d -> (t) { }\n}")[0].str() ==
        "t.qla:3:3: error: 'put' must be inside a role");
  CHECK(diagsOf(R(kLoad + "role b: warpgroup 1 { get m0 -> (x, y) { } }"))[0].str() == "t.qla:6:27: error: 'm0' is a let value, not a channel");
  CHECK(err(R(kLoad + kMath).replace(R(kLoad + kMath).find("depth(3)"), 8, "depth(0)")) ==
        "t.qla:4:56: error: a channel needs a depth of at least 1, got 0");
  CHECK(err("kernel k() grid(1) threads(256) {\n  channel d: { t: f32[4], t: f32[4] } depth(1)\n"
            "  role a: warpgroup 0 { put d -> (x, y) { } }\n  role b: warpgroup 1 { get d -> (x, y) { } }\n}") ==
        "t.qla:2:27: error: duplicate slot field 't' in channel 'd'");
  // A frag of one role is not visible in another.
  CHECK(err(R(kLoad + kMath + "\nrole c: warpgroup 3 { c = 0 }", "512")) == "t.qla:8:23: error: use of undeclared name 'c'");
}

namespace {
// Compute channels: `ch` as in R() from role load, `mid` (one tile) filled by
// role aux from its fragments. Lines 1-2 header, 3 '{', 4-5 channels, 6 aux, 7 math.
std::string C(const std::string &aux, const std::string &math) {
  return "kernel w(A: bf16[M, K], C: out f32[M, K]) grid(1) threads(512)\n"
         "{\n"
         "let m0 = block.x * 64\n"
         "channel ch: { a: bf16[64, 32], b: bf16[32, 32] } depth(3)\n"
         "channel mid: { t: bf16[64, 32], u: bf16[32, 32] } depth(2)\n"
         "role aux: warpgroup 1 { frag f: f32[64, 32] = 0\n shared s: bf16[64, 32]\n" + aux + " }\n" +
         "role math: warpgroup 2 { frag g: f32[64, 32] = 0\n" + math + " }\n" + kLoad + "}\n";
}
// aux: one step of the aux role (get ch, compute, put mid) with the given put body.
std::string auxStep(const std::string &put) {
  return " get ch -> (x, y) { f += gemm(x, y)\n  put mid -> (t, u) { " + put + " } }";
}
const std::string kAuxPut = "copy f -> t; copy A[0 :+ 32, 0 :+ 32] -> u";
const std::string kMathGets = " get ch -> (x, y) { get mid -> (p, q) { g += gemm(p, q) } }";
}  // namespace

TEST_CASE("sema: compute channels", "[sema]") {
  // A put mixing a fragment store and a TMA load, nested in a get of another
  // channel; `ch` has two consumer roles, `mid` is got inside a get of `ch`.
  auto m = ok(C(auxStep(kAuxPut), kMathGets));
  KernelDecl &k = *m->kernels[0];
  REQUIRE(k.roles.size() == 3);
  RoleStmt *aux = k.roles[0], *math = k.roles[1], *load = k.roles[2];
  ChannelDecl &ch = *k.channels[0], &mid = *k.channels[1];
  CHECK(ch.producer == load);
  CHECK(ch.consumers == std::vector<RoleStmt *>{aux, math});
  CHECK(ch.gets.size() == 2);
  CHECK(mid.producer == aux);
  CHECK(mid.consumers == std::vector<RoleStmt *>{math});
  SlotStmt &put = *mid.puts[0];
  CHECK(put.outer == ch.gets[0]);
  CHECK(mid.gets[0]->outer == ch.gets[1]);
  CHECK(ch.gets[0]->outer == nullptr);
  REQUIRE(put.body.stmts.size() == 2);
  CHECK(as<CopyStmt>(put.body.stmts[0].get())->copyKind == CopyKind::FragToShared);
  CHECK(as<CopyStmt>(put.body.stmts[1].get())->copyKind == CopyKind::GlobalToShared);

  // The destination of a put's copy is one of its slot's tiles.
  CHECK(err(C(auxStep("copy f -> s; copy A[0 :+ 32, 0 :+ 32] -> u"), kMathGets)) ==
        "t.qla:9:33: error: inside 'put', a copy must write one of the slot's tiles or a fragment declared in the put; 's' is neither");
  // ... and a put reads no slot tile, neither its own nor an enclosing get's.
  CHECK(err(C(auxStep("copy t -> f; copy A[0 :+ 32, 0 :+ 32] -> u"), kMathGets)) ==
        "t.qla:9:28: error: cannot copy out of slot tile 't' inside 'put'; a put only writes its slot's tiles");
  CHECK(err(C(auxStep("copy x -> f; copy A[0 :+ 32, 0 :+ 32] -> u"), kMathGets)) ==
        "t.qla:9:28: error: cannot copy out of slot tile 'x' inside 'put'; a put only writes its slot's tiles");
  // A put stores only fragments of its own role (a fragment of a role
  // declared earlier is out of scope, and named as such).
  CHECK(err("kernel w(A: bf16[M, K]) grid(1) threads(256)\n{\nchannel ch: { t: bf16[64, 32] } depth(2)\n"
            "role a: warpgroup 0 { frag g: f32[64, 32] = 0\n get ch -> (x) { } }\n"
            "role b: warpgroup 1 { put ch -> (t) { copy g -> t } }\n}\n") ==
        "t.qla:6:44: error: fragment 'g' belongs to role 'a', not to role 'b' (hand tiles to another role "
        "through a channel)");
  // A channel cannot be nested in itself.
  CHECK(err(C(auxStep(kAuxPut), " get ch -> (x, y) { get ch -> (p, q) { } }\n get mid -> (p, q) { }")) ==
        "t.qla:11:21: error: 'get ch' is nested in a 'get' of the same channel (at line 11); it would wait on a slot "
        "that the outer one holds");
  // A consumer of a channel that another role fills cannot put into it too.
  CHECK(err(C(auxStep(kAuxPut), kMathGets + "\n put ch -> (p, q) { copy g -> p; copy A[0 :+ 32, 0 :+ 32] -> q }")) ==
        "t.qla:13:35: error: channel 'ch' already has its puts in role 'math'; all puts of a channel must be in one "
        "role");
  // A shared tile of the role may fill a slot tile too (a thread copy).
  auto m2 = ok(C(auxStep("copy s -> t; copy A[0 :+ 32, 0 :+ 32] -> u"), kMathGets));
  CHECK(as<CopyStmt>(m2->kernels[0]->channels[1]->puts[0]->body.stmts[0].get())->copyKind == CopyKind::SharedToShared);
  // ... but outside a put, shared → shared stays an error.
  CHECK(err(C(auxStep(kAuxPut) + "\n copy s -> s", kMathGets)) ==
        "t.qla:10:2: error: cannot copy a shared tile to a shared tile");

  // Staging: fragments declared in the put, loaded from global memory,
  // mapped (reading the role's other fragments) and cast, then copied in.
  auto m3 = ok(C(auxStep("frag h: f32[64, 32]\n copy A[0 :+ 64, 0 :+ 32] -> h\n"
                         " for (i, j) in parallel(64, 32) { h[i, j] = h[i, j] * f[i, j] }\n"
                         " frag hb: bf16[64, 32] = cast(h)\n copy hb -> t; copy A[0 :+ 32, 0 :+ 32] -> u"),
                 kMathGets));
  const Block &staged = m3->kernels[0]->channels[1]->puts[0]->body;
  REQUIRE(staged.stmts.size() == 6);
  auto *h = as<FragDecl>(staged.stmts[0].get());
  REQUIRE(h);
  CHECK(h->put == m3->kernels[0]->channels[1]->puts[0]);
  CHECK(as<CopyStmt>(staged.stmts[1].get())->copyKind == CopyKind::GlobalToFrag);
  // What a put may not stage: products, reductions, writes to the role's
  // other fragments, other statements.
  CHECK(err(C(auxStep("frag h: f32[64, 32] = 0\n h += gemm(x, y)\n copy h -> t; copy A[0 :+ 32, 0 :+ 32] -> u"),
              kMathGets)) ==
        "t.qla:10:2: error: only copies, fragments, parallel blocks over them and 'if' on a compile-time constant are allowed inside 'put'");
  CHECK(err(C(auxStep("frag r: f32[64] = reduce(+, f, dim = 1)\n copy f -> t; copy A[0 :+ 32, 0 :+ 32] -> u"),
              kMathGets)) ==
        "t.qla:9:41: error: a fragment declared inside 'put' is filled with a value, a cast or a copy (no "
        "reductions, scans or inverses)");
  CHECK(err(C(auxStep("for (i, j) in parallel(64, 32) { f[i, j] = 0.0 }\n copy f -> t; copy A[0 :+ 32, 0 :+ 32] -> u"),
              kMathGets)) ==
        "t.qla:9:56: error: inside 'put', a parallel block writes only fragments declared in the put; 'f' is not");
  CHECK(err(C(auxStep("copy A[0 :+ 64, 0 :+ 32] -> f\n copy f -> t; copy A[0 :+ 32, 0 :+ 32] -> u"), kMathGets)) ==
        "t.qla:9:51: error: inside 'put', a copy must write one of the slot's tiles or a fragment declared in the put; "
        "'f' is neither");
}

TEST_CASE("sema: errors are collected, not fatal", "[sema]") {
  auto d = diagsOf(K("let a = 1.5 % 2\nlet b = q\nfrag f: f32[n]\nlet c = f * a"));
  REQUIRE(d.size() == 4);
  CHECK(d[0].loc.line == 4);
  CHECK(d[1].message == "use of undeclared name 'q'");
  CHECK(d[2].loc.line == 6);
  CHECK(d[3].message.find("cannot be used as a scalar") != std::string::npos);
}

TEST_CASE("sema: the error example of docs/language.md", "[sema]") {
  auto d = diagsOf(
      "kernel k(A: bf16[M, K], C: out f32[M, K], s: f32, n: i32) grid(1) threads(256) {\n"
      "  let x = 1.5 % 2\n"
      "  shared a: bf16[n, 64]\n"
      "  frag f: f32[64, 32]\n"
      "  copy A[0 :+ 64, 0 :+ 64] -> f\n"
      "  copy f -> A[0 :+ 64, 0 :+ 32]\n"
      "  if n { }\n"
      "}\n");
  CHECK(formatDiagnostics(d) ==
        "t.qla:2:15: error: operator '%' needs int operands, got float and int\n"
        "t.qla:3:18: error: a tile extent must be a compile-time constant, but 'n' is not\n"
        "t.qla:5:8: error: slice shape [64, 64] of 'A' does not match shape [64, 32] of tile 'f'\n"
        "t.qla:6:13: error: cannot write tensor 'A': it is not declared 'out'\n"
        "t.qla:7:6: error: a condition must be bool, got int\n");
}

TEST_CASE("sema: names are visible from their declaration on", "[sema]") {
  CHECK(err(K("let a = b\nlet b = 1")) == "t.qla:4:9: error: use of undeclared name 'b'");
  CHECK(diagsOf("kernel k() grid(1) threads(256) {\n  role a: warpgroup 0 { put ch -> (x) { } }\n"
                "  channel ch: { t: f32[4] } depth(1)\n  role b: warpgroup 1 { get ch -> (y) { } }\n}")[0]
            .str() == "t.qla:2:29: error: use of undeclared name 'ch'");
}

TEST_CASE("sema: copy(+) adds a fragment into an f32 tensor's slice", "[sema]") {
  const std::string f = "frag f: f32[64, 64]\n";
  ok(K(f + "copy(+) f -> C[0 :+ 64, 0 :+ 64]"));
  ok(K(f + "copy(+) f -> C[0 :+ 64 until n, 0 :+ 64]"));
  CHECK(err(K(f + "copy(+) f -> H[0 :+ 64, 0 :+ 64]")) ==
        "t.qla:5:14: error: copy(+) adds into f32 tensors only (one atomic f32 add an element); 'H' is f16");
  CHECK(err(K(f + "copy(+) A[0 :+ 64, 0 :+ 64] -> f")) ==
        "t.qla:5:5: error: copy(+) adds a fragment into a global tensor's slice; this copy is global->frag");
  CHECK(err(K(f + "copy(+) f^T -> C[0 :+ 64, 0 :+ 64]")) ==
        "t.qla:5:5: error: copy(+) does not transpose: add the fragment as it is laid out");
  CHECK(err(K(f + "shared sm: f32[64, 64]\ncopy(+) f -> sm")) ==
        "t.qla:6:5: error: copy(+) adds a fragment into a global tensor's slice; 'sm' is not a global tensor");
  // A parse error: copy(op) takes '+' alone.
  ParseResult r = parseQla(K(f + "copy(*) f -> C[0 :+ 64, 0 :+ 64]"), "t.qla");
  REQUIRE(r.diags.size() == 1);
  CHECK(r.diags[0].str() == "t.qla:5:6: error: copy(op) takes '+' (add into the destination), found '*'");
}
