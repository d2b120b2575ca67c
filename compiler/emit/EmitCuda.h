// Emission of CUDA C++ from a fully lowered kernel (qlanv + the qla ops that
// the emitter prints as per-thread register loops + arith/math/scf).
#pragma once

#include <string>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "qla/runtime/KernelInfo.h"

namespace qla::compiler {

struct EmittedKernel {
  std::string source;   // a complete NVRTC translation unit
  KernelInfo info;      // symbol, parameters, launch shape
};

// Fails with an error at the offending op (through the MLIR diagnostic
// engine) if the kernel holds something the emitter cannot print.
mlir::LogicalResult emitCuda(mlir::func::FuncOp kernel, EmittedKernel &out);

}  // namespace qla::compiler
