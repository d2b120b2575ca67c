// The sample kernels of test/frontend-inputs parse, check, and come out with
// the expected folded constants, resolved names and launch shape.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "qla/frontend/Frontend.h"

using namespace qla::fe;

namespace {

std::string readInput(const std::string &name) {
#ifdef QLA_SOURCE_DIR
  std::ifstream f(std::string(QLA_SOURCE_DIR) + "/test/frontend-inputs/" + name);
#else
  std::string here = __FILE__;
  std::ifstream f(here.substr(0, here.rfind('/')) + "/../../frontend-inputs/" + name);
#endif
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::unique_ptr<Module> check(const std::string &src, const std::map<std::string, std::string> &defs = {}) {
  std::vector<Diagnostic> diags;
  auto m = parseAndCheckQla(src, "t.qla", defs, diags);
  INFO(formatDiagnostics(diags));
  REQUIRE(diags.empty());
  REQUIRE(m);
  return m;
}

template <typename T>
T *nth(Block &b, size_t i) {
  REQUIRE(i < b.stmts.size());
  T *t = as<T>(b.stmts[i].get());
  REQUIRE(t);
  return t;
}

}  // namespace

TEST_CASE("samples: gemm", "[samples]") {
  auto m = check(readInput("gemm.qla"));
  INFO(dumpAst(*m));
  REQUIRE(m->kernels.size() == 1);
  KernelDecl &k = *m->kernels[0];
  CHECK(k.name == "gemm");
  REQUIRE(k.params.size() == 4);
  CHECK(k.params[3]->name == "STAGES");
  CHECK(k.params[3]->value.i == 4);
  REQUIRE(k.dims.size() == 3);
  CHECK(k.dims[0]->name == "M");
  CHECK(k.dims[1]->name == "K");
  CHECK(k.dims[2]->name == "N");
  REQUIRE(k.tensors.size() == 3);
  CHECK(k.tensors[2]->isOutput);
  CHECK(k.tensors[2]->dtype == qla::DType::BF16);
  CHECK(k.gridStrings == std::array<std::string, 3>{"cdiv(N, 256)", "cdiv(M, 128)", "1"});
  CHECK(gridExprString(*k.grid[0]) == "cdiv(N, 256)");
  CHECK(k.numThreads == 384);
  CHECK(k.numWarpgroups == 3);
  CHECK(k.clusterDims == std::array<int64_t, 3>{1, 1, 1});

  REQUIRE(k.roles.size() == 2);
  RoleStmt &load = *k.roles[0], &math = *k.roles[1];
  CHECK(load.name == "load");
  CHECK(load.wgFirst == 0);
  CHECK(load.wgLast == 0);
  CHECK(load.regs == 40);
  CHECK(math.wgFirst == 1);
  CHECK(math.wgLast == 2);
  CHECK(math.regs == 232);

  REQUIRE(k.channels.size() == 1);
  ChannelDecl &ab = *k.channels[0];
  CHECK(ab.depthValue == 4);
  CHECK(ab.fields[0].shape == std::vector<int64_t>{128, 64});
  CHECK(ab.fields[1].shape == std::vector<int64_t>{256, 64});
  CHECK(ab.producer == &load);
  CHECK(ab.consumers == std::vector<qla::fe::RoleStmt *>{&math});

  // role load: for k { put ab -> (a, b) { copy; copy } }
  auto *loop = nth<ForStmt>(load.body, 0);
  CHECK(exprString(*loop->hi) == "cdiv(K, BK{64})");
  auto *put = nth<SlotStmt>(loop->body, 0);
  CHECK(put->isPut());
  CHECK(put->channel == &ab);
  CHECK(put->role == &load);
  auto *c0 = nth<CopyStmt>(put->body, 0);
  CHECK(c0->copyKind == CopyKind::GlobalToShared);
  CHECK(c0->src.tensor() == k.tensors[0]);
  CHECK(c0->src.sliceShape == std::vector<int64_t>{128, 64});
  CHECK(c0->dst.decl == put->bindings[0].get());
  // The slice start `m0` resolves to the top-level let.
  auto *m0 = as<NameExpr>(c0->src.slices[0].start.get());
  REQUIRE(m0);
  auto *m0decl = as<LetDecl>(m0->decl);
  REQUIRE(m0decl);
  CHECK(m0decl->name == "m0");
  CHECK(m0decl->init->type == ScalarType::Int);

  // role math: frag acc = 0; for k { get ab -> (a, b) { acc += gemm(a, b^T) } }; copy acc -> C[...]
  auto *acc = nth<FragDecl>(math.body, 0);
  CHECK(acc->shape == std::vector<int64_t>{128, 256});
  CHECK(acc->role == &math);
  CHECK(acc->init.kind == FragInit::Kind::Fill);
  REQUIRE(acc->init.fill->isConst());
  CHECK(acc->init.fill->type == ScalarType::Float);
  auto *get = nth<SlotStmt>(nth<ForStmt>(math.body, 1)->body, 0);
  CHECK(get->kind == StmtKind::Get);
  auto *g = nth<GemmStmt>(get->body, 0);
  CHECK(g->accumulate);
  CHECK(g->c == acc);
  CHECK(g->a.decl == get->bindings[0].get());
  CHECK(g->b.transposed);
  CHECK(g->m == 128);
  CHECK(g->n == 256);
  CHECK(g->k == 64);
  auto *out = nth<CopyStmt>(math.body, 2);
  CHECK(out->copyKind == CopyKind::FragToGlobal);
  CHECK(out->dst.tensor()->name == "C");

  CHECK(dumpAst(*m).find("acc += gemm(a, b^T) m=128 n=256 k=64") != std::string::npos);
}

TEST_CASE("samples: gemm with -D", "[samples][defines]") {
  auto m = check(readInput("gemm.qla"), {{"BM", "64"}, {"BN", "128"}, {"STAGES", "3"}});
  KernelDecl &k = *m->kernels[0];
  CHECK(k.gridStrings[0] == "cdiv(N, 128)");
  CHECK(k.gridStrings[1] == "cdiv(M, 64)");
  CHECK(k.channels[0]->depthValue == 3);
  CHECK(k.channels[0]->fields[0].shape == std::vector<int64_t>{64, 64});
  auto *g = as<GemmStmt>(
      as<SlotStmt>(as<ForStmt>(k.roles[1]->body.stmts[1].get())->body.stmts[0].get())->body.stmts[0].get());
  REQUIRE(g);
  CHECK(g->m == 64);
  CHECK(g->n == 128);
  // An unknown -D name is reported at the kernel name.
  std::vector<Diagnostic> diags;
  CHECK_FALSE(parseAndCheckQla(readInput("gemm.qla"), "gemm.qla", {{"BM", "32"}, {"BX", "1"}}, diags));
  REQUIRE(diags.size() == 1);
  CHECK(diags[0].str() == "gemm.qla:2:8: error: no specialization constant 'BX' in kernel 'gemm'");
}

TEST_CASE("samples: rmsnorm", "[samples]") {
  auto m = check(readInput("rmsnorm.qla"));
  INFO(dumpAst(*m));
  KernelDecl &k = *m->kernels[0];
  REQUIRE(k.dims.size() == 1);
  CHECK(k.dims[0]->name == "R");
  CHECK_FALSE(k.tensors[1]->dims[0].isSymbolic());
  CHECK(k.tensors[1]->dims[0].literal == 128);
  CHECK(k.gridStrings[0] == "cdiv(R, 64)");
  CHECK(k.numThreads == 128);
  CHECK(k.roles.empty());
  CHECK(k.params[2]->value.type == ScalarType::Float);
  CHECK(k.params[2]->value.f == Approx(1e-6));

  Block &b = k.body;
  auto *x = nth<FragDecl>(b, 1);
  CHECK(x->role == nullptr);
  auto *w = nth<FragDecl>(b, 2);
  CHECK(w->shape == std::vector<int64_t>{128});
  auto *cw = nth<CopyStmt>(b, 4);
  CHECK(cw->copyKind == CopyKind::GlobalToFrag);
  CHECK(cw->src.sliceShape == std::vector<int64_t>{128});
  auto *ss = nth<FragDecl>(b, 7);
  CHECK(ss->init.kind == FragInit::Kind::Reduce);
  CHECK(ss->init.op == RedOp::Add);
  CHECK(ss->init.dim == 1);
  CHECK(ss->init.source == nth<FragDecl>(b, 5));
  auto *p = nth<ParallelStmt>(b, 8);
  CHECK(p->shape == std::vector<int64_t>{64, 128});
  auto *ea = nth<ElemAssignStmt>(p->body, 0);
  CHECK(ea->frag == x);
  CHECK(ea->value->type == ScalarType::Float);
  // f32(D) and EPS are folded.
  std::string dump = dumpAst(*m);
  CHECK(dump.find("f32(convert<float>(D{128}))") != std::string::npos);
  CHECK(dump.find("EPS{1e-06}") != std::string::npos);
  auto *store = nth<CopyStmt>(b, 9);
  CHECK(store->copyKind == CopyKind::FragToGlobal);

  m = check(readInput("rmsnorm.qla"), {{"BR", "32"}, {"EPS", "1e-5"}});
  CHECK(m->kernels[0]->gridStrings[0] == "cdiv(R, 32)");
  CHECK(m->kernels[0]->params[2]->value.f == Approx(1e-5));
  // Slices are boxes (not required to cover the tensor dim), so D = 64 checks.
  check(readInput("rmsnorm.qla"), {{"D", "64"}});
}

TEST_CASE("samples: features (GDN building blocks)", "[samples][features]") {
  auto m = check(readInput("features.qla"));
  INFO(dumpAst(*m));
  KernelDecl &k = *m->kernels[0];
  CHECK(k.name == "gdn_features");
  // Dtype specialization constants resolve every dtype written with them.
  ParamDecl &dt = *k.params[0];
  CHECK(dt.isDType);
  CHECK(dt.dtypeValue == qla::DType::BF16);
  CHECK(k.tensors[0]->dtype == qla::DType::BF16);
  CHECK(k.tensors[0]->dtypeParam == &dt);
  CHECK(k.tensors[3]->dtype == qla::DType::F32);  // Beta: BT
  CHECK(k.gridStrings == std::array<std::string, 3>{"2", "HV", "max(B, NCU - 1)"});
  CHECK(k.numThreads == 256);
  REQUIRE(k.roles.size() == 2);
  REQUIRE(k.channels.size() == 1);
  CHECK(k.channels[0]->fields[0].dtypeParam == &dt);
  CHECK(k.channels[0]->fields[1].shape == std::vector<int64_t>{64, 64});
  // let b = VARLEN == 1 ? 0 : n folds to 0.
  auto *b = nth<LetDecl>(k.body, 3);
  REQUIRE(b->init->isConst());
  CHECK(b->init->constInt() == 0);
  CHECK(nth<SharedDecl>(k.body, 5)->dtype == qla::DType::BF16);

  RoleStmt &load = *k.roles[0], &math = *k.roles[1];
  auto *bos = nth<VarDecl>(load.body, 0);
  CHECK(bos->type == ScalarType::Int);
  auto *ifv = nth<IfStmt>(load.body, 2);
  REQUIRE(ifv->cond->isConst());
  CHECK(ifv->cond->value->b);
  auto *set = nth<AssignStmt>(ifv->thenBlock, 0);
  CHECK(set->var == bos);
  auto *cu = as<GlobalElemExpr>(set->value.get());
  REQUIRE(cu);
  CHECK(cu->tensor->name == "CU");
  CHECK(cu->type == ScalarType::Int);
  auto *loop = nth<ForStmt>(load.body, 3);
  CHECK_FALSE(loop->hi->isConst());  // reads vars
  auto *put = nth<SlotStmt>(loop->body, 0);
  auto *ck = nth<CopyStmt>(put->body, 0);
  REQUIRE(ck->src.slices[1].limit);
  CHECK(as<NameExpr>(ck->src.slices[1].limit.get())->decl == static_cast<Decl *>(nth<VarDecl>(load.body, 1)));
  CHECK(ck->src.sliceShape == std::vector<int64_t>{64, 128});
  CHECK(ck->src.droppedDims == std::vector<int>{0, 2});

  auto *chunks = nth<ForStmt>(math.body, 10);
  auto *gl = nth<LetDecl>(chunks->body, 2);
  auto *pick = as<FragPickExpr>(gl->init.get());
  REQUIRE(pick);
  CHECK(pick->frag->name == "gam");
  CHECK(pick->indices[0]->constInt() == 63);
  auto *get = nth<SlotStmt>(chunks->body, 4);
  auto *inv = nth<FragAssignStmt>(get->body, 2);
  CHECK(inv->init.kind == FragInit::Kind::InvUnitLower);
  CHECK(inv->init.source->name == "kk");
  CHECK(inv->frag->name == "a");
  CHECK(nth<FragDecl>(get->body, 4)->dtypeParam == &dt);
  auto *tr = nth<AssignStmt>(chunks->body, 9);
  CHECK(tr->op == AssignOp::Add);
  CHECK(tr->var->type == ScalarType::Float);
  auto *sum = as<BinaryExpr>(tr->value.get());
  REQUIRE(sum);
  CHECK(sum->lhs->kind == ExprKind::FragPick);
  CHECK(as<FragPickExpr>(sum->lhs.get())->indices.size() == 2);

  // -D: another dtype and the dense layout.
  m = check(readInput("features.qla"), {{"DT", "f16"}, {"VARLEN", "0"}, {"DV", "64"}});
  KernelDecl &k2 = *m->kernels[0];
  CHECK(k2.tensors[1]->dtype == qla::DType::F16);
  CHECK(k2.tensors[5]->dtype == qla::DType::F16);
  CHECK(k2.gridStrings[0] == "1");
  CHECK_FALSE(nth<LetDecl>(k2.body, 3)->init->isConst());  // b = n
  CHECK_FALSE(nth<IfStmt>(k2.roles[0]->body, 2)->cond->value->b);
  // f32 operands cannot feed the gemms.
  std::vector<Diagnostic> diags;
  CHECK_FALSE(parseAndCheckQla(readInput("features.qla"), "f.qla", {{"DT", "f32"}}, diags));
  REQUIRE_FALSE(diags.empty());
  CHECK(diags[0].message == "gemm operands must be bf16 or f16; 'k' is f32");
  diags.clear();
  CHECK_FALSE(parseAndCheckQla(readInput("features.qla"), "f.qla", {{"DT", "f8"}}, diags));
  REQUIRE(diags.size() == 1);
  CHECK(diags[0].str() == "f.qla:12:21: error: specialization constant 'DT' is a dtype; 'f8' is not one of bf16, f16, "
                          "f32, i32, i64");
}
