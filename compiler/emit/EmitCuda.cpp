// CUDA C++ emission. One `extern "C" __global__` function per kernel, named
// after the kernel and a hash of its text; readable code with one statement a
// line, variables named after the .qla names they hold (`acc_19`), and
// comments (or #line directives, EmitOptions) naming the .qla line each group
// of statements came from.
#include "compiler/emit/EmitCuda.h"

#include <sstream>

#include "compiler/emit/EmitterCore.h"

using namespace mlir;
using namespace mlir::qla;
using namespace mlir::qlanv;

namespace qla::compiler {

LogicalResult emitCuda(func::FuncOp fn, EmittedKernel &out, const EmitOptions &options) {
  Emitter e(fn, out.info, options.lineDirectives, options.tmaStores, options.trace, options.freshAddressRegs,
            options.sharedPointers32);
  if (failed(e.emitKernel())) return failure();
  out.source = e.takeSource();
  return success();
}

}  // namespace qla::compiler
