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

struct EmitOptions {
  // `#line N "file.qla"` before the code of every statement (and a directive
  // back to the generated file for the kernel's scaffolding), so that NVRTC's
  // line info (-lineinfo) and its diagnostics name .qla lines. Off: a comment
  // `// file.qla:N` per statement instead. The kernel symbol is the same
  // either way (its hash is taken over the text without directives).
  bool lineDirectives = false;
  // Shared → global copies of a tile of its own by TMA where the slice lies
  // whole in the tensor (Emitter::tmaStoreBox); off: always by threads.
  bool tmaStores = true;
  // Record the kernel's waits (their start and end, clock64) and slot
  // releases into a device buffer (qla/device/trace.cuh): CompileOptions::trace.
  bool trace = false;
  // CompileOptions::freshAddressRegs.
  int freshAddressRegs = 128;
  // CompileOptions::sharedPointers32.
  bool sharedPointers32 = false;
};

// Fails with an error at the offending op (through the MLIR diagnostic
// engine) if the kernel holds something the emitter cannot print.
mlir::LogicalResult emitCuda(mlir::func::FuncOp kernel, EmittedKernel &out, const EmitOptions &options = {});

}  // namespace qla::compiler
