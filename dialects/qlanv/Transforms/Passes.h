// The qlanv passes: transformations of Hopper-level IR that make the
// synchronization the emitter prints explicit as qlanv ops (issue 30). See
// Passes.td for what each pass does.
#pragma once

#include "dialects/qla/IR/QlaDialect.h"
#include "dialects/qlanv/IR/QlanvDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::qlanv {

#define GEN_PASS_DECL
#include "dialects/qlanv/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialects/qlanv/Transforms/Passes.h.inc"

}  // namespace mlir::qlanv
