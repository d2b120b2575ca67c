// Which shared → global stores can go by TMA: one predicate for the emitter
// (which emits them) and AssignResources (which keeps their sources out of
// shared-memory sharing, since a TMA store reads its source after the
// barrier that follows it, until its issuer waits).
#pragma once

#include <cstdint>
#include <vector>

#include "dialects/qla/IR/QlaDialect.h"

namespace mlir::qla {

// True when `op` copies a swizzled 2-D staging tile of its own (not a
// channel's or pipeline's slot, no TMA load's destination, no wgmma's
// operand) whole into a global tensor of its dtype, with its last dim kept
// and boxes of at most 256 per dim. `box` (if given) gets the tensor map's
// box: 1 for dropped dims, the tile's rows, and the columns of one swizzle
// span. Whether the slice lies whole in the tensor is the kernel's run-time
// check, not this one.
bool tmaStoreCandidate(StoreOp op, std::vector<uint32_t> *box = nullptr);

}  // namespace mlir::qla
