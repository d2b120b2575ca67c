#include "dialects/qla/Transforms/TmaStores.h"

#include "dialects/qlanv/IR/QlanvDialect.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::qla;

bool mlir::qla::tmaStoreCandidate(StoreOp op, std::vector<uint32_t> *box) {
  auto src = dyn_cast<SharedType>(op.getSrc().getType());
  if (!src || src.getShape().size() != 2 || !src.getSwizzle()) return false;
  // A tile of its own (not a channel's or pipeline's slot, which TMA loads
  // refill behind one elected thread's back), and a staging tile: no TMA load
  // writes it and no wgmma reads it (a product's operand is rewritten early in
  // the next step, where the issuer would wait for the store's reads on the
  // critical path; H200, 2026-12-01: gdn_fwd_state's V_new/O tile by TMA made
  // the two-kernel forward 10-15% slower).
  auto alloc = op.getSrc().getDefiningOp<AllocSharedOp>();
  if (!alloc || alloc.getCount() > 1) return false;
  for (Operation *u : op.getSrc().getUsers())
    if (isa<qlanv::WgmmaOp, qlanv::TmaLoadOp>(u)) return false;
  auto g = op.getDst().getType();
  const int64_t rank = g.getRank(), eb = elementBytes(src.getElementType());
  if (g.getElementType() != src.getElementType() || llvm::is_contained(op.getDropped(), rank - 1)) return false;
  const int64_t cols = src.getShape()[1];
  int64_t blockCols = cols;
  if (cols * eb > src.getSwizzle()) {
    blockCols = src.getSwizzle() / eb;
    if (cols % blockCols) return false;
  }
  std::vector<uint32_t> b;
  size_t t = 0;
  for (int64_t d = 0; d < rank; ++d) b.push_back(llvm::is_contained(op.getDropped(), d) ? 1u : (uint32_t)src.getShape()[t++]);
  if (t != 2) return false;
  b.back() = (uint32_t)blockCols;
  for (uint32_t x : b)
    if (x > 256) return false;
  if (box) *box = std::move(b);
  return true;
}
