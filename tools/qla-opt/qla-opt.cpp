// qla-opt: mlir-opt for QLA's dialects and passes (used by the lit tests).
#include "dialects/qla/Transforms/Passes.h"
#include "dialects/qlanv/Transforms/Passes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::qla::QlaDialect, mlir::qlanv::QlanvDialect, mlir::arith::ArithDialect,
                  mlir::scf::SCFDialect, mlir::math::MathDialect, mlir::func::FuncDialect>();
  mlir::qla::registerQlaPasses();
  mlir::qlanv::registerQlanvPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, "QLA optimizer driver\n", registry));
}
