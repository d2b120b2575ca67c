// Parser: every construct builds the expected AST (before sema), and syntax
// errors point at the offending token.
#include <catch2/catch.hpp>

#include "qla/frontend/Frontend.h"

using namespace qla::fe;

namespace {

std::unique_ptr<Module> parse(const std::string &src) {
  ParseResult r = parseQla(src, "t.qla");
  INFO(src);
  INFO(formatDiagnostics(r.diags));
  REQUIRE(r.diags.empty());
  REQUIRE(r.module);
  return std::move(r.module);
}

// A kernel whose body is `body` (the body starts on line 3, column 1).
std::string kernelWith(const std::string &body) {
  return "kernel k(A: bf16[M, K]) grid(1) threads(128)\n{\n" + body + "\n}\n";
}

const Block &bodyOf(const Module &m) { return m.kernels.at(0)->body; }

template <typename T>
const T &stmt(const Module &m, size_t i) {
  const Stmt *s = bodyOf(m).stmts.at(i).get();
  const T *t = as<T>(s);
  REQUIRE(t);
  return *t;
}

std::string parseError(const std::string &src) {
  ParseResult r = parseQla(src, "t.qla");
  REQUIRE_FALSE(r.module);
  REQUIRE(r.diags.size() == 1);
  return r.diags[0].str();
}

std::string exprOf(const std::string &e) {
  auto m = parse(kernelWith("let x = " + e));
  return exprString(*stmt<LetDecl>(*m, 0).init);
}

}  // namespace

TEST_CASE("parser: kernel header", "[parser]") {
  auto m = parse(
      "kernel gemm<BM = 128, BN = BM * 2, F = 1.5, B = true>(A: bf16[M, K], B2: bf16[N, K], "
      "C: out f32[M, N], s: f32, n: i32, V: i64[16])\n"
      "  grid(cdiv(N, BN), cdiv(M, BM), 2) threads(256) cluster(2, 1)\n{ }\n"
      "kernel second() grid(1) threads(128) {}");
  REQUIRE(m->kernels.size() == 2);
  const KernelDecl &k = *m->kernels[0];
  CHECK(k.name == "gemm");  // a keyword is fine as a kernel name
  CHECK(k.nameLoc.col == 8);
  REQUIRE(k.params.size() == 4);
  CHECK(k.params[0]->name == "BM");
  CHECK(exprString(*k.params[1]->defaultExpr) == "(BM * 2)");
  CHECK(k.params[3]->index == 3);
  REQUIRE(k.args.size() == 6);
  REQUIRE(k.tensors.size() == 4);
  REQUIRE(k.scalars.size() == 2);
  CHECK(k.tensors[2]->name == "C");
  CHECK(k.tensors[2]->isOutput);
  CHECK_FALSE(k.tensors[0]->isOutput);
  CHECK(k.tensors[2]->argIndex == 2);
  CHECK(k.tensors[3]->argIndex == 5);
  CHECK(k.tensors[3]->tensorIndex == 3);
  CHECK(k.scalars[0]->name == "s");
  CHECK(k.scalars[1]->scalarIndex == 1);
  CHECK(k.scalars[1]->argIndex == 4);
  // Dim symbols in first-seen order, shared between tensors.
  REQUIRE(k.dims.size() == 3);
  CHECK(k.dims[0]->name == "M");
  CHECK(k.dims[1]->name == "K");
  CHECK(k.dims[2]->name == "N");
  CHECK(k.dims[2]->index == 2);
  CHECK(k.tensors[1]->dims[1].sym == k.dims[1].get());
  CHECK(k.tensors[2]->dims[0].sym == k.dims[0].get());
  CHECK_FALSE(k.tensors[3]->dims[0].isSymbolic());
  CHECK(k.tensors[3]->dims[0].literal == 16);
  REQUIRE(k.grid.size() == 3);
  CHECK(exprString(*k.grid[0]) == "cdiv(N, BN)");
  CHECK(k.cluster.size() == 2);
  CHECK(m->kernels[1]->args.empty());
  CHECK(m->kernels[1]->params.empty());
}

TEST_CASE("parser: declarations", "[parser]") {
  auto m = parse(kernelWith("let a = 1; let b = a + 2\n"
                            "shared s: bf16[64, 32]\n"
                            "frag f: f32[64, 32] = 0\n"
                            "frag g: f32[64]\n"
                            "frag r: f32[64] = reduce(max, f, dim = 1)\n"
                            "frag q: f32[64, 32] = scan(+, f)\n"
                            "frag p: f32[64, 32] = scan(min, f, dim = 0)\n"
                            "frag c: bf16[64, 32] = cast(f)"));
  REQUIRE(bodyOf(*m).stmts.size() == 9);
  CHECK(stmt<LetDecl>(*m, 1).name == "b");
  auto &s = stmt<SharedDecl>(*m, 2);
  CHECK(s.dtypeName == "bf16");
  CHECK(s.extents.size() == 2);
  CHECK(s.loc.line == 4);
  CHECK(s.nameLoc.col == 8);
  auto &f = stmt<FragDecl>(*m, 3);
  CHECK(f.init.kind == FragInit::Kind::Fill);
  CHECK(stmt<FragDecl>(*m, 4).init.kind == FragInit::Kind::None);
  auto &r = stmt<FragDecl>(*m, 5);
  CHECK(r.init.kind == FragInit::Kind::Reduce);
  CHECK(r.init.op == RedOp::Max);
  CHECK(r.init.sourceName == "f");
  CHECK(r.init.dim == 1);
  auto &q = stmt<FragDecl>(*m, 6);
  CHECK(q.init.kind == FragInit::Kind::Scan);
  CHECK(q.init.op == RedOp::Add);
  CHECK_FALSE(q.init.dimGiven);
  auto &p = stmt<FragDecl>(*m, 7);
  CHECK(p.init.op == RedOp::Min);
  CHECK(p.init.dimGiven);
  CHECK(p.init.dim == 0);
  CHECK(stmt<FragDecl>(*m, 8).init.kind == FragInit::Kind::Cast);
}

TEST_CASE("parser: copy, gemm and fragment assignment", "[parser]") {
  auto m = parse(kernelWith("copy A[m0 :+ 64, k * 32 :+ 32] -> a\n"
                            "copy acc -> C[i, 0 :+ 64]\n"
                            "acc = gemm(a, b^T)\n"
                            "acc += gemm(x^T, b)\n"
                            "acc = 0.5\n"
                            "acc = cast(y)"));
  auto &c0 = stmt<CopyStmt>(*m, 0);
  CHECK(c0.src.sliced);
  CHECK(c0.src.name == "A");
  REQUIRE(c0.src.slices.size() == 2);
  CHECK(exprString(*c0.src.slices[1].start) == "(k * 32)");
  CHECK(exprString(*c0.src.slices[1].extent) == "32");
  CHECK_FALSE(c0.dst.sliced);
  CHECK(c0.dst.loc.col == 35);
  auto &c1 = stmt<CopyStmt>(*m, 1);
  CHECK(c1.dst.slices[0].isIndex());
  CHECK_FALSE(c1.dst.slices[1].isIndex());
  auto &g0 = stmt<GemmStmt>(*m, 2);
  CHECK(g0.target == "acc");
  CHECK_FALSE(g0.accumulate);
  CHECK_FALSE(g0.a.transposed);
  CHECK(g0.b.transposed);
  CHECK(g0.gemmLoc.col == 7);
  auto &g1 = stmt<GemmStmt>(*m, 3);
  CHECK(g1.accumulate);
  CHECK(g1.a.transposed);
  CHECK(stmt<FragAssignStmt>(*m, 4).init.kind == FragInit::Kind::Fill);
  CHECK(stmt<FragAssignStmt>(*m, 5).init.kind == FragInit::Kind::Cast);
}

TEST_CASE("parser: transposed copy operands", "[parser]") {
  auto m = parse(kernelWith("copy o^T -> s\n"
                            "copy A[0 :+ 64, 0 :+ 32] -> o^T\n"
                            "copy A[0 :+ 64, 0 :+ 32]^T -> o\n"
                            "copy o -> s"));
  auto &c0 = stmt<CopyStmt>(*m, 0);
  CHECK(c0.src.transposed);
  CHECK_FALSE(c0.src.sliced);
  CHECK(c0.src.transposeLoc.col == 7);
  CHECK_FALSE(c0.dst.transposed);
  CHECK(c0.dst.name == "s");
  auto &c1 = stmt<CopyStmt>(*m, 1);
  CHECK(c1.src.sliced);
  CHECK_FALSE(c1.src.transposed);
  CHECK(c1.dst.transposed);
  CHECK(c1.transposed());
  auto &c2 = stmt<CopyStmt>(*m, 2);  // parsed; sema rejects it (not a fragment)
  CHECK(c2.src.transposed);
  CHECK(c2.src.slices.size() == 2);
  CHECK(c2.src.transposeLoc.col == 25);
  CHECK_FALSE(stmt<CopyStmt>(*m, 3).transposed());
}

TEST_CASE("parser: loops, parallel, if", "[parser]") {
  auto m = parse(kernelWith("for k in 0 .. cdiv(K, 64) { }\n"
                            "for u in 0..4 unroll { let z = u }\n"
                            "pipeline k in 1 .. n stages(3) { copy A[k :+ 1, 0 :+ 8] -> t }\n"
                            "for (i, j) in parallel(64, 32) { let t = x[i, j]; y[i, j] += t * 2 }\n"
                            "for (i) in parallel(64) { v[i] -= 1; v[i] *= 2 }\n"
                            "if a < b { } else if c { } else { let q = 1 }"));
  auto &f0 = stmt<ForStmt>(*m, 0);
  CHECK(f0.var->name == "k");
  CHECK(f0.var->owner == &f0);
  CHECK_FALSE(f0.unroll);
  CHECK(exprString(*f0.hi) == "cdiv(K, 64)");
  auto &f1 = stmt<ForStmt>(*m, 1);
  CHECK(f1.unroll);
  CHECK(f1.body.stmts.size() == 1);
  auto &p = stmt<PipelineStmt>(*m, 2);
  CHECK(exprString(*p.stages) == "3");
  CHECK(p.body.stmts.size() == 1);
  auto &par = stmt<ParallelStmt>(*m, 3);
  REQUIRE(par.vars.size() == 2);
  CHECK(par.vars[1]->name == "j");
  CHECK(par.vars[1]->parallelDim == 1);
  CHECK(par.extents.size() == 2);
  REQUIRE(par.body.stmts.size() == 2);
  auto *ea = as<ElemAssignStmt>(par.body.stmts[1].get());
  REQUIRE(ea);
  CHECK(ea->op == AssignOp::Add);
  CHECK(ea->target == "y");
  CHECK(exprString(*ea->value) == "(t * 2)");
  auto &par1 = stmt<ParallelStmt>(*m, 4);
  CHECK(as<ElemAssignStmt>(par1.body.stmts[0].get())->op == AssignOp::Sub);
  CHECK(as<ElemAssignStmt>(par1.body.stmts[1].get())->op == AssignOp::Mul);
  auto &i = stmt<IfStmt>(*m, 5);
  REQUIRE(i.elseBlock);
  REQUIRE(i.elseBlock->stmts.size() == 1);
  auto *elif = as<IfStmt>(i.elseBlock->stmts[0].get());
  REQUIRE(elif);
  REQUIRE(elif->elseBlock);
  CHECK(elif->elseBlock->stmts.size() == 1);
}

TEST_CASE("parser: roles and channels", "[parser]") {
  auto m = parse(kernelWith("channel ch: { a: bf16[64, 32], b: f16[32] } depth(2)\n"
                            "role load: warpgroup 0 { put ch -> (x, y) { } }\n"
                            "role math: warpgroups 1 .. 3, regs 240 { get ch -> (x, y) { } }"));
  auto &ch = stmt<ChannelDecl>(*m, 0);
  CHECK(ch.name == "ch");
  REQUIRE(ch.fields.size() == 2);
  CHECK(ch.fields[1].name == "b");
  CHECK(ch.fields[1].dtypeName == "f16");
  CHECK(ch.fields[1].extents.size() == 1);
  auto &r0 = stmt<RoleStmt>(*m, 1);
  CHECK(r0.name == "load");
  CHECK(r0.wgFirst == 0);
  CHECK(r0.wgLast == 0);
  CHECK(r0.regs == 0);
  auto *put = as<SlotStmt>(r0.body.stmts.at(0).get());
  REQUIRE(put);
  CHECK(put->isPut());
  CHECK(put->kind == StmtKind::Put);
  CHECK(put->channelName == "ch");
  REQUIRE(put->bindings.size() == 2);
  CHECK(put->bindings[1]->name == "y");
  CHECK(put->bindings[1]->field == 1);
  CHECK(put->bindings[1]->owner == put);
  auto &r1 = stmt<RoleStmt>(*m, 2);
  CHECK(r1.wgFirst == 1);
  CHECK(r1.wgLast == 3);
  CHECK(r1.numWarpgroups() == 3);
  CHECK(r1.regs == 240);
  auto *get = as<SlotStmt>(r1.body.stmts.at(0).get());
  REQUIRE(get);
  CHECK(get->kind == StmtKind::Get);
}

TEST_CASE("parser: expression precedence", "[parser]") {
  CHECK(exprOf("a + b * c") == "(a + (b * c))");
  CHECK(exprOf("a - b - c") == "((a - b) - c)");
  CHECK(exprOf("a * (b + c) % d") == "((a * (b + c)) % d)");
  CHECK(exprOf("-a * !b") == "(-a * !b)");
  CHECK(exprOf("a < b == c >= d") == "((a < b) == (c >= d))");
  CHECK(exprOf("a || b && c") == "(a || (b && c))");
  CHECK(exprOf("a ? b : c ? d : e") == "(a ? b : (c ? d : e))");
  CHECK(exprOf("a || b ? 1 : 2") == "((a || b) ? 1 : 2)");
  CHECK(exprOf("max(a, 1) + min(b, 2)") == "(max(a, 1) + min(b, 2))");
  CHECK(exprOf("block.x * 64 + block.z") == "((block.x * 64) + block.z)");
  CHECK(exprOf("x[i, j] * exp2(y[i])") == "(x[i, j] * exp2(y[i]))");
  CHECK(exprOf("1e-6 + .5") == "(1e-06 + 0.5)");
  CHECK(exprOf("f32(n) / 2") == "(f32(n) / 2)");
}

TEST_CASE("parser: '>' inside specialization constant defaults", "[parser]") {
  // '>' closes the list; in parentheses it is a comparison again.
  auto m = parse("kernel k<A = 2, B = (A > 1)>() grid(1) threads(128) {}");
  CHECK(exprString(*m->kernels[0]->params[1]->defaultExpr) == "(A > 1)");
  CHECK(parseError("kernel k<A = 2 > 1>() grid(1) threads(128) {}") ==
        "t.qla:1:18: error: expected '(' before the kernel arguments, found '1'");
}

TEST_CASE("parser: newlines and semicolons are insignificant", "[parser]") {
  auto m = parse("kernel k() grid(1) threads(128) { let a = 1 let b = 2; ; let c =\n 3\n\n copy X[0 :+ 4] ->\n t }");
  REQUIRE(bodyOf(*m).stmts.size() == 4);
  CHECK(stmt<LetDecl>(*m, 2).name == "c");
  CHECK(stmt<CopyStmt>(*m, 3).dst.name == "t");
  CHECK(stmt<CopyStmt>(*m, 3).dst.loc.line == 5);
}

TEST_CASE("parser: syntax errors point at the offending token", "[parser]") {
  CHECK(parseError("") == "t.qla:1:1: error: expected 'kernel', found end of file (a file holds one or more kernels)");
  CHECK(parseError("// nothing\n") == "t.qla:2:1: error: expected 'kernel', found end of file (a file holds one or more kernels)");
  CHECK(parseError("kernel k() grid(1) threads(128) {\n  let = 3\n}") ==
        "t.qla:2:7: error: expected a name after 'let', found '='");
  CHECK(parseError("kernel k() grid(1) threads(128) {\n  let x = (1 + 2\n}") ==
        "t.qla:3:1: error: expected ')' to close '(', found '}'");
  // (`acc += 1` parses as a var update; sema rejects it on a fragment.)
  CHECK(parseError("kernel k() grid(1) threads(128) {\n  x -= gemm(a, b)\n}") ==
        "t.qla:2:8: error: gemm can only be assigned with '=' or '+='");
  CHECK(parseError("kernel k() grid(1) threads(128) {\n  x / 2\n}") ==
        "t.qla:2:5: error: expected '=', '+=', '-=', '*=' or '[' after 'x', found '/'");
  CHECK(parseError("kernel k() grid(1) threads(128) {\n  42\n}") ==
        "t.qla:2:3: error: expected a statement, found '42'");
  CHECK(parseError("kernel k() grid(1) threads(128) {\n  let x = block.w\n}") ==
        "t.qla:2:17: error: expected 'x', 'y' or 'z' after 'block.', found 'w'");
  CHECK(parseError("kernel k() grid(1) threads(128) {\n  let x = a.b\n}") ==
        "t.qla:2:12: error: unexpected '.' after 'a' (only block.x, block.y and block.z have members)");
  CHECK(parseError("kernel k() grid(1) threads(128) {\n  copy a b\n}") ==
        "t.qla:2:10: error: expected '->' between the source and destination of 'copy', found 'b'");
  CHECK(parseError("kernel k() grid(1) threads(128) {\n  x = reduce(*, y, dim = 0)\n}") ==
        "t.qla:2:14: error: expected a reduction operator ('+', 'max' or 'min'), found '*'");
  CHECK(parseError("kernel k() grid(1) threads(128) {\n  x = reduce(+, y)\n}") ==
        "t.qla:2:18: error: expected ',' after the source (reduce needs 'dim = 0' or 'dim = 1'), found ')'");
  CHECK(parseError("kernel k() grid(1) threads(128) {\n  role r: warpgroup { }\n}") ==
        "t.qla:2:21: error: expected integer after 'warpgroup', found '{'");
  CHECK(parseError("kernel k(A: out f32) grid(1) threads(128) {}") ==
        "t.qla:1:20: error: expected '[' after 'f32': an 'out' argument must be a tensor");
  CHECK(parseError("kernel k(A: f32[M, ]) grid(1) threads(128) {}") ==
        "t.qla:1:20: error: expected a dim name or size, found ']'");
  CHECK(parseError("kernel k() grid(1, 2, 3, 4) threads(128) {}") ==
        "t.qla:1:26: error: grid takes at most 3 values");
  CHECK(parseError("kernel k() grid(1) threads(128) {\n  let x = 1") ==
        "t.qla:2:12: error: expected '}' to close the block, found end of file");
  CHECK(parseError("kernel k() grid(1) {}") == "t.qla:1:20: error: expected 'threads' after the grid, found '{'");
  CHECK(parseError("kernel k() grid(1) threads(128) { x[i] = }") ==
        "t.qla:1:42: error: expected an expression, found '}'");
}

TEST_CASE("parser: deep nesting is an error, not a crash", "[parser]") {
  std::string deep = "kernel k() grid(1) threads(128) { let x = " + std::string(5000, '(') + "1" +
                     std::string(5000, ')') + " }";
  ParseResult r = parseQla(deep, "t.qla");
  REQUIRE_FALSE(r.module);
  REQUIRE(r.diags.size() == 1);
  CHECK(r.diags[0].message == "nesting too deep");
  std::string blocks = "kernel k() grid(1) threads(128) {";
  for (int i = 0; i < 3000; ++i) blocks += " if true {";
  r = parseQla(blocks, "t.qla");
  REQUIRE_FALSE(r.module);
  CHECK(r.diags[0].message == "nesting too deep");
  std::string chain = "kernel k() grid(1) threads(128) { let x = 1";
  for (int i = 0; i < 100000; ++i) chain += " + 1";
  r = parseQla(chain + " }", "t.qla");
  REQUIRE_FALSE(r.module);
  CHECK(r.diags[0].message == "expression too long (more than 4000 tokens)");
  std::string neg = "kernel k() grid(1) threads(128) { let x = " + std::string(5000, '-') + "1 }";
  r = parseQla(neg, "t.qla");
  REQUIRE_FALSE(r.module);
  CHECK(r.diags[0].message == "nesting too deep");
}
