// AST (checked by sema) → qla dialect. One func.func per kernel.
#pragma once

#include "mlir/IR/BuiltinOps.h"
#include "qla/frontend/AST.h"

namespace qla::compiler {

// Builds the kernel as a func.func in `module`. Errors (constructs the IR
// cannot express yet) are reported through the MLIR diagnostic engine at the
// construct's source location.
mlir::LogicalResult buildKernelIR(const fe::KernelDecl &kernel, const std::string &filename,
                                  mlir::ModuleOp module);

}  // namespace qla::compiler
