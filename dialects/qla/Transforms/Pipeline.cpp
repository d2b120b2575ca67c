#include "dialects/qla/Transforms/Passes.h"
#include "dialects/qlanv/Transforms/Passes.h"

#include "mlir/Transforms/Passes.h"

void mlir::qla::buildQlaPipeline(OpPassManager &pm, const PipelineOptions &options) {
  pm.addPass(createCanonicalizerPass());
  auto &fpm = pm.nest<func::FuncOp>();
  fpm.addPass(createQlaInferLayouts());
  fpm.addPass(createQlaLowerPipelines());
  fpm.addPass(createQlaLowerChannels());
  QlaLowerToQlanvOptions lo;
  lo.partialWaits = options.partialWaits;
  fpm.addPass(createQlaLowerToQlanv(lo));
  fpm.addPass(createQlaInsertFences());
  fpm.addPass(createQlaAssignResources());
  fpm.addPass(qlanv::createQlanvInsertGridDependency());
  fpm.addPass(qlanv::createQlanvInsertTurns());
}
