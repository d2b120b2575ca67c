// qlac: the QLA compiler command line. Works on a machine without a GPU.
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <iterator>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "qla/compiler/Compiler.h"
#include "qla/runtime/Nvrtc.h"

namespace {

const char *kUsage =
    "usage: qlac FILE.qla [options]\n"
    "       qlac FILE.mlir [options]   (tile-level IR, as --emit=mlir prints it)\n"
    "\n"
    "Compiles a QLA kernel. Output goes to stdout unless -o is given.\n"
    "\n"
    "options:\n"
    "  --emit=KIND            mlir (tile-level IR as built by the front end),\n"
    "                         mlir-lowered (after the pass pipeline), cuda, ptx,\n"
    "                         cubin, info (launch metadata), or args (a C++\n"
    "                         header with the kernel's argument struct and\n"
    "                         signature, for host code). Default: cuda.\n"
    "  -D NAME=VALUE          override a specialization constant (repeatable;\n"
    "                         also -DNAME=VALUE)\n"
    "  -I DIR                 a folder where `include \"NAME\"` looks for NAME\n"
    "                         (repeatable; after the input file's own folder)\n"
    "  --kernel NAME          the kernel to compile when the file has several\n"
    "  -o FILE                write the output to FILE\n"
    "  --arch ARCH            NVRTC target (default sm_90a)\n"
    "  --line-info            map the CUDA to .qla lines (#line directives) and\n"
    "                         put line info into the PTX/cubin (NVRTC\n"
    "                         --generate-line-info), for compute-sanitizer and\n"
    "                         ncu's source view\n"
    "  --fresh-address-regs=N a shared <-> fragment copy of a fragment of N or more\n"
    "                         registers a thread computes its addresses in the copy\n"
    "                         (default 128; QLA_FRESH_ADDRESS_REGS=N for JIT)\n"
    "  --smem-ptr32           shared tiles as 32-bit shared addresses, not 64-bit\n"
    "                         generic pointers (QLA_SMEM_PTR32=1 for JIT)\n"
    "  --partial-waits        sink shared wgmma waits to the first use of each\n"
    "                         product and wait for only the groups it needs\n"
    "                         (wgmma.wait_group N; QLA_PARTIAL_WAITS=1 for JIT)\n"
    "  --trace                record every channel wait, wgmma wait and slot\n"
    "                         release (clock64) into a device buffer, read back\n"
    "                         by qla_trace_dump (QLA_TRACE=1 for JIT)\n"
    "  --no-tma-stores        copy shared tiles to global memory with threads\n"
    "                         only (no cp.async.bulk.tensor stores)\n"
    "  --print-ir-after-all   print the IR after every pass to stderr\n"
    "  --ptxas-verbose        print ptxas' register/spill report (ptx, cubin)\n"
    "  --version              print the QLA and NVRTC versions\n"
    "  -h, --help             this text\n";

int fail(const std::string &msg) {
  std::cerr << "qlac: error: " << msg << "\n";
  return 1;
}

bool addDefine(const std::string &kv, qla::CompileOptions &o) {
  auto eq = kv.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  o.defines[kv.substr(0, eq)] = kv.substr(eq + 1);
  return true;
}

}  // namespace

int main(int argc, char **argv) {
  std::string input, output, emit = "cuda", arch = "sm_90a";
  bool ptxasVerbose = false;
  qla::CompileOptions opts;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&](const char *what) -> const char * {
      if (i + 1 >= argc) return nullptr;
      (void)what;
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return 0;
    } else if (a == "--version") {
      std::cout << "qlac " << qla::qlaVersion() << " (NVRTC " << qla::rt::nvrtcVersion() << ")\n";
      return 0;
    } else if (a.rfind("--emit=", 0) == 0) {
      emit = a.substr(7);
    } else if (a == "--emit") {
      const char *v = next("--emit");
      if (!v) return fail("--emit needs a value");
      emit = v;
    } else if (a == "-D") {
      const char *v = next("-D");
      if (!v || !addDefine(v, opts)) return fail("-D needs NAME=VALUE");
    } else if (a.rfind("-D", 0) == 0) {
      if (!addDefine(a.substr(2), opts)) return fail("-D needs NAME=VALUE, got '" + a + "'");
    } else if (a == "-o") {
      const char *v = next("-o");
      if (!v) return fail("-o needs a file name");
      output = v;
    } else if (a == "--arch" || a.rfind("--arch=", 0) == 0) {
      const char *v = a == "--arch" ? next("--arch") : argv[i] + 7;
      if (!v || !*v) return fail("--arch needs a value");
      arch = v;
    } else if (a == "-I") {
      const char *v = next("-I");
      if (!v || !*v) return fail("-I needs a folder");
      opts.includeDirs.push_back(v);
    } else if (a.rfind("-I", 0) == 0) {
      opts.includeDirs.push_back(a.substr(2));
    } else if (a == "--kernel") {
      const char *v = next("--kernel");
      if (!v) return fail("--kernel needs a name");
      opts.kernel = v;
    } else if (a == "--line-info") {
      opts.lineInfo = true;
    } else if (a == "--partial-waits") {
      opts.partialWaits = true;
    } else if (a.rfind("--fresh-address-regs=", 0) == 0) {
      const std::string v = a.substr(21);
      char *end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || n < 1 || n > 1024) return fail("--fresh-address-regs needs a register count");
      opts.freshAddressRegs = int(n);
    } else if (a == "--smem-ptr32") {
      opts.sharedPointers32 = true;
    } else if (a == "--trace") {
      opts.trace = true;
    } else if (a == "--no-tma-stores") {
      opts.tmaStores = false;
    } else if (a == "--print-ir-after-all") {
      opts.printIrAfterAll = true;
    } else if (a == "--ptxas-verbose") {
      ptxasVerbose = true;
    } else if (!a.empty() && a[0] == '-') {
      return fail("unknown option '" + a + "' (see --help)");
    } else if (input.empty()) {
      input = a;
    } else {
      return fail("more than one input file ('" + input + "', '" + a + "')");
    }
  }
  if (input.empty()) {
    std::cerr << kUsage;
    return fail("no input file");
  }
  static const char *kinds[] = {"mlir", "mlir-lowered", "cuda", "ptx", "cubin", "info", "args"};
  if (std::find(std::begin(kinds), std::end(kinds), emit) == std::end(kinds))
    return fail("unknown --emit kind '" + emit + "' (mlir, mlir-lowered, cuda, ptx, cubin, info, args)");

  opts.frontEndOnly = emit == "mlir";
  // `include "NAME"`: beside the input first, then the -I folders.
  opts.includeDirs.insert(opts.includeDirs.begin(), std::filesystem::path(input).parent_path().string());
  std::ifstream in(input, std::ios::binary);
  if (!in) return fail("cannot open '" + input + "'");
  std::stringstream ss;
  ss << in.rdbuf();

  qla::CompiledKernel ck;
  std::vector<std::string> diags;
  if (emit == "args") {
    std::string header;
    if (!qla::kernelArgsHeader(ss.str(), input, opts, header, diags)) {
      for (auto &d : diags) std::cerr << d << "\n";
      return 1;
    }
    if (output.empty()) {
      std::cout << header;
      return 0;
    }
    std::ofstream out(output, std::ios::binary);
    if (!out) return fail("cannot write '" + output + "'");
    out << header;
    return 0;
  }
  // .mlir input: tile-level IR (as --emit=mlir prints it), straight to the passes.
  bool isMlir = input.size() > 5 && input.compare(input.size() - 5, 5, ".mlir") == 0;
  bool ok = isMlir ? qla::compileQlaMlir(ss.str(), input, opts, ck, diags)
                   : qla::compileQla(ss.str(), input, opts, ck, diags);
  if (!ok) {
    for (auto &d : diags) std::cerr << d << "\n";
    return 1;
  }
  std::string result;
  if (emit == "mlir") result = ck.tileIr;
  else if (emit == "mlir-lowered") result = ck.loweredIr;
  else if (emit == "cuda") result = ck.cuda;
  else if (emit == "info") result = ck.info.serialize();
  else {
    qla::rt::NvrtcOptions no;
    no.arch = arch;
    if (ptxasVerbose) no.extra.push_back("--ptxas-options=-v");
    if (opts.lineInfo) no.extra.push_back(qla::lineInfoNvrtcOption());
    qla::rt::NvrtcResult r = qla::rt::compileCuda(ck.cuda, ck.info.name, no);
    if (!r.ok) {
      std::cerr << input << ": error: " << r.error << "\n";
      return 1;
    }
    if (ptxasVerbose) std::cerr << r.log;
    result = emit == "ptx" ? r.ptx : r.cubin;
  }
  if (output.empty()) {
    std::cout << result;
    if (emit == "cubin") std::cerr << "qlac: note: writing a cubin to stdout\n";
  } else {
    std::ofstream out(output, std::ios::binary);
    if (!out) return fail("cannot write '" + output + "'");
    out << result;
  }
  return 0;
}
