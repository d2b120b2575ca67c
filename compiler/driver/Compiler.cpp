// The compiler driver: front end, IR generation, pass pipeline, emission.
#include "qla/compiler/Compiler.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/emit/EmitCuda.h"
#include "compiler/irgen/IRGen.h"
#include "dialects/qla/Transforms/Passes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "qla/frontend/Frontend.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#ifndef QLA_VERSION
#define QLA_VERSION "0.0.0"
#endif

namespace qla {

const char *qlaVersion() { return QLA_VERSION; }

namespace {

std::string formatMlirDiag(mlir::Diagnostic &d) {
  std::string where = "<unknown>";
  mlir::Location loc = d.getLocation();
  if (auto n = mlir::dyn_cast<mlir::NameLoc>(loc)) loc = n.getChildLoc();
  if (auto f = mlir::dyn_cast<mlir::FileLineColLoc>(loc))
    where = f.getFilename().str() + ":" + std::to_string(f.getLine()) + ":" + std::to_string(f.getColumn());
  const char *sev = d.getSeverity() == mlir::DiagnosticSeverity::Error ? "error"
                    : d.getSeverity() == mlir::DiagnosticSeverity::Warning ? "warning" : "note";
  std::string msg;
  llvm::raw_string_ostream os(msg);
  os << d;
  return where + ": " + sev + ": " + os.str();
}

void loadDialects(mlir::MLIRContext &ctx) {
  ctx.loadDialect<mlir::qla::QlaDialect, mlir::qlanv::QlanvDialect, mlir::arith::ArithDialect,
                  mlir::scf::SCFDialect, mlir::math::MathDialect, mlir::func::FuncDialect>();
  ctx.disableMultithreading();
}

std::string printOp(mlir::Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  op->print(os);
  return os.str();
}

}  // namespace

namespace {
bool lowerAndEmit(mlir::MLIRContext &ctx, mlir::ModuleOp mod, const CompileOptions &options,
                         CompiledKernel &out) {
  mlir::PassManager pm(&ctx);
  if (options.printIrAfterAll) {
    pm.enableIRPrinting(
        [](mlir::Pass *, mlir::Operation *) { return false; },
        [](mlir::Pass *, mlir::Operation *) { return true; },
        /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false);
  }
  mlir::qla::PipelineOptions po;
  po.partialWaits = options.partialWaits;
  mlir::qla::buildQlaPipeline(pm, po);
  if (mlir::failed(pm.run(mod))) return false;
  out.loweredIr = printOp(mod);

  auto fn = *mod.getOps<mlir::func::FuncOp>().begin();
  compiler::EmittedKernel ek;
  compiler::EmitOptions eo;
  eo.lineDirectives = options.lineInfo;
  eo.tmaStores = options.tmaStores;
  eo.trace = options.trace;
  eo.freshAddressRegs = options.freshAddressRegs;
  eo.sharedPointers32 = options.sharedPointers32;
  if (mlir::failed(compiler::emitCuda(fn, ek, eo))) return false;
  out.cuda = std::move(ek.source);
  out.info = std::move(ek.info);
  return true;
}
}  // namespace

namespace {
// CompileOptions::includeDirs, then includeLookup.
fe::IncludeResolver includeResolver(const CompileOptions &o) {
  return [&o](const std::string &name, const std::string &, std::string &path, std::string &text) -> std::string {
    if (name.empty()) return "the file name is empty";
    namespace fs = std::filesystem;
    auto readable = [&](const fs::path &p) {
      std::error_code ec;
      if (!fs::is_regular_file(p, ec)) return false;
      std::ifstream f(p, std::ios::binary);
      if (!f) return false;
      std::ostringstream ss;
      ss << f.rdbuf();
      path = p.lexically_normal().string();
      text = ss.str();
      return true;
    };
    if (fs::path(name).is_absolute()) return readable(name) ? "" : "no such file";
    for (const std::string &dir : o.includeDirs)
      if (readable(fs::path(dir.empty() ? "." : dir) / name)) return "";
    if (o.includeLookup)
      if (const std::string *t = o.includeLookup(name)) {
        path = name;
        text = *t;
        return "";
      }
    std::string where;
    for (const std::string &dir : o.includeDirs) where += (where.empty() ? "" : ", ") + (dir.empty() ? "." : dir);
    if (where.empty() && !o.includeLookup) return "no include folders were given";
    return "not found" + (where.empty() ? std::string() : " in " + where) +
           (o.includeLookup ? std::string(where.empty() ? "" : " nor") + " among the embedded sources" : "");
  };
}
}  // namespace

bool listKernels(const std::string &source, const std::string &filename, std::vector<std::string> &names,
                 std::vector<std::string> &diagnostics, const CompileOptions &options) {
  auto r = fe::parseQla(source, filename, includeResolver(options));
  if (!r.module) {
    for (auto &d : r.diags) diagnostics.push_back(d.str());
    return false;
  }
  for (auto &k : r.module->kernels) names.push_back(k->name);
  return true;
}

namespace {
const char *dtypeEnumerator(DType t) {
  switch (t) {
  case DType::BF16: return "DType::BF16";
  case DType::F16: return "DType::F16";
  case DType::F32: return "DType::F32";
  case DType::I32: return "DType::I32";
  case DType::I64: return "DType::I64";
  }
  return "DType::F32";
}

// The kernel named by options.kernel, or the file's only one.
const fe::KernelDecl *pickKernel(const fe::Module &module, const std::string &filename, const CompileOptions &options,
                                 std::vector<std::string> &diagnostics) {
  if (options.kernel.empty()) {
    if (module.kernels.size() != 1) {
      std::string names;
      for (auto &k : module.kernels) names += (names.empty() ? "" : ", ") + k->name;
      diagnostics.push_back(filename + ": error: the file defines " + std::to_string(module.kernels.size()) +
                            " kernels (" + names + "); name one");
      return nullptr;
    }
    return module.kernels.front().get();
  }
  const fe::KernelDecl *kernel = module.findKernel(options.kernel);
  if (!kernel) diagnostics.push_back(filename + ": error: no kernel named '" + options.kernel + "'");
  return kernel;
}

// The file parsed and checked with options.defines, and the kernel it
// names (pickKernel); null kernel with diagnostics on any error.
const fe::KernelDecl *checkedKernel(const std::string &source, const std::string &filename,
                                    const CompileOptions &options, std::unique_ptr<fe::Module> &module,
                                    std::vector<std::string> &diagnostics) {
  std::vector<fe::Diagnostic> fdiags;
  module = fe::parseAndCheckQla(source, filename, options.defines, fdiags, includeResolver(options));
  if (!module) {
    for (auto &d : fdiags) diagnostics.push_back(d.str());
    return nullptr;
  }
  return pickKernel(*module, filename, options, diagnostics);
}
}  // namespace

bool kernelArgsHeader(const std::string &source, const std::string &filename, const CompileOptions &options,
                      std::string &header, std::vector<std::string> &diagnostics) {
  std::unique_ptr<fe::Module> module;
  const fe::KernelDecl *k = checkedKernel(source, filename, options, module, diagnostics);
  if (!k) return false;
  const std::string file = std::filesystem::path(filename).filename().string();
  std::ostringstream h;
  h << "// Generated by qlac --emit=args from " << file << " (kernel '" << k->name << "'). Do not edit.\n"
    << "#pragma once\n\n#include \"qla/op/KernelArgs.h\"\n\nnamespace qla::kernels::" << k->name << " {\n\n"
    << "inline constexpr const char *kFile = \"" << file << "\";\n\n"
    << "// The specialization constants (op::checkDefines).\n"
    << "inline const std::vector<std::string> &constants() {\n  static const std::vector<std::string> c = {";
  for (size_t i = 0; i < k->params.size(); ++i) h << (i ? ", " : "") << '"' << k->params[i]->name << '"';
  h << "};\n  return c;\n}\n\n// The arguments, in the kernel's order.\nstruct Args {\n";
  auto dims = [](const fe::TensorArgDecl &t) {
    std::string s;
    for (const fe::TensorDim &d : t.dims)
      s += (s.empty() ? "" : ", ") + (d.isSymbolic() ? d.sym->name : std::to_string(d.literal));
    return "[" + s + "]";
  };
  for (const fe::TensorArgDecl *t : k->tensors)
    h << "  rt::TensorArg " << t->name << ";  // " << (t->isOutput ? "out " : "") << t->dtypeName << dims(*t) << "\n";
  for (const fe::ScalarArgDecl *s : k->scalars)
    h << "  double " << s->name << " = 0;  // " << s->dtypeName << "\n";
  h << "  rt::LaunchArgs launch(CUstream stream) const {\n    rt::LaunchArgs a;\n    a.tensors = {";
  for (size_t i = 0; i < k->tensors.size(); ++i) h << (i ? ", " : "") << k->tensors[i]->name;
  h << "};\n    a.scalars = {";
  for (size_t i = 0; i < k->scalars.size(); ++i) h << (i ? ", " : "") << k->scalars[i]->name;
  h << "};\n    a.stream = stream;\n    return a;\n  }\n};\n\n"
    << "// The tensors' names and dtypes under a specialization's defines.\n"
    << "inline op::Signature signature([[maybe_unused]] const std::map<std::string, std::string> &defines) {\n"
    << "  return {{";
  for (size_t i = 0; i < k->tensors.size(); ++i) h << (i ? ", " : "") << '"' << k->tensors[i]->name << '"';
  h << "},\n          {";
  for (size_t i = 0; i < k->tensors.size(); ++i) {
    const fe::TensorArgDecl &t = *k->tensors[i];
    h << (i ? ", " : "");
    // A dtype constant: its value in the defines, else its default (sema
    // resolved the checked default into dtypeValue; with options.defines
    // empty that is the declared default).
    if (t.dtypeParam)
      h << "op::dtypeOf(defines, \"" << t.dtypeParam->name << "\", " << dtypeEnumerator(t.dtypeParam->dtypeValue) << ")";
    else
      h << dtypeEnumerator(t.dtype);
  }
  h << "},\n          " << k->scalars.size() << "};\n}\n\n"
    << "// A compiled specialization against this header: its defines name only\n"
    << "// the kernel's constants, its arguments are Args' (a kernel file replaced\n"
    << "// at run time must keep them).\n"
    << "inline void check(const op::KernelSpec &spec, const KernelInfo &info, const std::string &contractDoc) {\n"
    << "  op::checkDefines(spec, constants());\n"
    << "  op::checkSignature(spec, info, signature(spec.defines), contractDoc);\n}\n\n"
    << "}  // namespace qla::kernels::" << k->name << "\n";
  header = h.str();
  return true;
}

bool compileQla(const std::string &source, const std::string &filename, const CompileOptions &options,
                CompiledKernel &out, std::vector<std::string> &diagnostics) {
  std::unique_ptr<fe::Module> module;
  const fe::KernelDecl *kernel = checkedKernel(source, filename, options, module, diagnostics);
  if (!kernel) return false;

  out.kernelName = kernel->name;

  mlir::MLIRContext ctx;
  loadDialects(ctx);
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    diagnostics.push_back(formatMlirDiag(d));
    return mlir::success();
  });
  mlir::OpBuilder b(&ctx);
  mlir::OwningOpRef<mlir::ModuleOp> owned = mlir::ModuleOp::create(mlir::FileLineColLoc::get(&ctx, filename, 1, 1));
  mlir::ModuleOp mod = *owned;
  if (mlir::failed(compiler::buildKernelIR(*kernel, filename, mod))) return false;
  if (mlir::failed(mlir::verify(mod))) return false;
  out.tileIr = printOp(mod);
  if (options.frontEndOnly) return true;

  return lowerAndEmit(ctx, mod, options, out);
}

bool compileQlaMlir(const std::string &mlirText, const std::string &filename, const CompileOptions &options,
                    CompiledKernel &out, std::vector<std::string> &diagnostics) {
  mlir::MLIRContext ctx;
  loadDialects(ctx);
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    diagnostics.push_back(formatMlirDiag(d));
    return mlir::success();
  });
  mlir::ParserConfig config(&ctx);
  mlir::OwningOpRef<mlir::ModuleOp> owned = mlir::parseSourceString<mlir::ModuleOp>(mlirText, config, filename);
  if (!owned) return false;
  mlir::ModuleOp mod = *owned;
  auto fns = mod.getOps<mlir::func::FuncOp>();
  if (fns.empty()) {
    diagnostics.push_back(filename + ": error: no kernel (func.func) in the module");
    return false;
  }
  // Keep only the requested kernel (default: the first).
  mlir::func::FuncOp keep = *fns.begin();
  if (!options.kernel.empty()) {
    keep = nullptr;
    for (auto f : fns)
      if (f.getSymName() == options.kernel) keep = f;
    if (!keep) {
      diagnostics.push_back(filename + ": error: no kernel named '" + options.kernel + "'");
      return false;
    }
  }
  out.kernelName = keep.getSymName().str();
  for (auto f : llvm::make_early_inc_range(mod.getOps<mlir::func::FuncOp>()))
    if (f != keep) f.erase();
  out.tileIr = printOp(mod);
  return lowerAndEmit(ctx, mod, options, out);
}

}  // namespace qla
