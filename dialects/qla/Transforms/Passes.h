// The qla pass pipeline. See Passes.td for what each pass does.
#pragma once

#include <memory>

#include "dialects/qla/IR/QlaDialect.h"
#include "dialects/qlanv/IR/QlanvDialect.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::qla {

#define GEN_PASS_DECL
#include "dialects/qla/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialects/qla/Transforms/Passes.h.inc"

// The whole pipeline, in order (canonicalize, layouts, channels, qlanv,
// fences, resources, then qlanv's grid dependency and turns).
// `printAfterAll` prints the IR after each pass to stderr.
// The compiler's pipeline. partialWaits: qla-lower-to-qlanv{partial-waits}.
struct PipelineOptions {
  bool partialWaits = false;
};
void buildQlaPipeline(OpPassManager &pm, const PipelineOptions &options = {});

}  // namespace mlir::qla
