#include "dialects/qla/Transforms/Passes.h"

#include "mlir/Transforms/Passes.h"

void mlir::qla::buildQlaPipeline(OpPassManager &pm) {
  pm.addPass(createCanonicalizerPass());
  auto &fpm = pm.nest<func::FuncOp>();
  fpm.addPass(createQlaInferLayouts());
  fpm.addPass(createQlaLowerPipelines());
  fpm.addPass(createQlaLowerChannels());
  fpm.addPass(createQlaLowerToQlanv());
  fpm.addPass(createQlaInsertFences());
  fpm.addPass(createQlaAssignResources());
}
