// CUDA emitter: wgmma (the products) and the fences around register operands.
#include "compiler/emit/EmitterCore.h"

#include <cstring>

#include <fmt/format.h>

#include "llvm/ADT/MapVector.h"

#include "compiler/emit/EmitHelpers.h"
#include "dialects/qla/IR/FragLayout.h"
#include "dialects/qla/Transforms/TmaStores.h"

using namespace mlir;
using namespace mlir::qla;
using namespace mlir::qlanv;

namespace qla::compiler {

using namespace emit_detail;

LogicalResult Emitter::emitWgmmaFence(ValueRange frags) {
  // wgmma is a .sync.aligned instruction: every warp must be converged when
  // it reaches it. Loops with per-thread trip counts before it (scans, the
  // triangular inverse, bounded copies) do not guarantee that by themselves.
  // (Turns: a qlanv.turn_wait before the fence, a qlanv.turn_pass after the commit.)
  line("__syncwarp();");
  for (Value f : frags) line(fmt::format("qla::dev::warpgroup_fence_regs({});", name(f)));
  line("qla::dev::wgmma_fence();");
  return success();
}

LogicalResult Emitter::emitWgmma(WgmmaOp op) {
  auto c = op.getC().getType();
  auto b = op.getB().getType();
  int64_t w = op.getWarpgroups(), M = c.getShape()[0], N = c.getShape()[1];
  int64_t mw = M / w, mt = mw / 64;
  bool ta = op.getTransA(), tb = op.getTransB();
  Type et = b.getElementType();
  int64_t elt = elementBytes(et);
  auto bs = gemmOperandShape(b.getShape(), op.getBBox());
  int64_t K = tb ? bs[1] : bs[0];

  // Shared operands: one descriptor per operand at its origin (the
  // warpgroup's rows for A), then per (m-tile, k-step) a constant byte
  // advance. K-major tiles: element (row, k) lies in column block k/E, row
  // `row`, byte (k%E)*elt of the row. MN-major tiles ([K rows][MN cols]):
  // MN start `row` (a multiple of E) in block row/E, row k.
  auto swzCode = [](unsigned s) { return s == 128 ? 1 : s == 64 ? 2 : 3; };
  std::string cn = name(op.getC()), bn = name(op.getB());
  auto baseDesc = [&](const std::string &tile, SharedType t, bool mnMajor, bool isA) {
    unsigned S = t.getSwizzle();
    int64_t E = S / elt, rows = t.getShape()[0];
    std::string rt = "0";  // runtime byte offset: this warpgroup's rows of A
    if (isA) rt = mnMajor ? fmt::format("(qla_wgl * {}) * {}", mw / E, rows * S) : fmt::format("qla_wgl * {}", mw * S);
    std::string lbo = mnMajor ? std::to_string(rows * S) : "16";
    return declareStr("qla::dev::u64",
                      fmt::format("qla::dev::make_wgmma_desc({} + ({}) / {}, {}, {}, {})", tile, rt, elt, lbo, 8 * S,
                                  swzCode(S)),
                      "desc");
  };
  // (row, k): the M (A) or N (B) index and the K index of one instruction's
  // corner in the operand; a sub-tile's box [r0, c0, ...] moves it in the
  // tile's own (row, column) coordinates (K-major: rows are M/N, columns K;
  // MN-major: rows K, columns M/N). qla-lower-to-qlanv checked that the box
  // keeps every corner on a k16 step, an 8-row period and (MN) a panel.
  auto advance = [&](const std::string &base, SharedType t, bool mnMajor, int64_t row, int64_t k,
                     std::optional<ArrayRef<int64_t>> box) {
    unsigned S = t.getSwizzle();
    int64_t E = S / elt, rows = t.getShape()[0];
    if (box) {
      row += mnMajor ? (*box)[1] : (*box)[0];
      k += mnMajor ? (*box)[0] : (*box)[1];
    }
    int64_t bytes = mnMajor ? (row / E) * rows * S + k * S : (k / E) * rows * S + (k % E) * elt + row * S;
    return bytes == 0 ? base : fmt::format("qla::dev::wgmma_desc_advance({}, {})", base, bytes);
  };

  std::string kind = et.isBF16() ? "bf16" : "f16";
  line(fmt::format("{{  // wgmma: C[{} x {}] over {} warpgroup(s), K = {}", M, N, w, K));
  ++indent_;
  auto sa = dyn_cast<SharedType>(op.getA().getType());
  std::string dbase = baseDesc(bn, b, !tb, false);
  std::string abase = sa ? baseDesc(name(op.getA()), sa, ta, true) : "";
  for (int64_t m = 0; m < mt; ++m) {
    std::string acc = fmt::format("*reinterpret_cast<float(*)[{}]>(&{}[{}])", N / 2, cn, m * (N / 2));
    for (int64_t k = 0; k < K; k += 16) {
      std::string scale = (!op.getAccumulate() && k == 0) ? "0" : "1";
      std::string db = advance(dbase, b, !tb, 0, k, op.getBBox());
      if (sa) {
        std::string da = advance(abase, sa, ta, m * 64, k, op.getABox());  // A in shared memory
        line(fmt::format("qla::dev::wgmma_ss_{}<{}, {}, {}>({}, {}, {}, {});", kind, N, ta ? 1 : 0, tb ? 0 : 1, acc, da,
                         db, scale));
      } else {
        int64_t ka = cast<FragType>(op.getA().getType()).getShape()[1];
        std::string regs = fmt::format("*reinterpret_cast<const qla::dev::u32(*)[4]>(&{}[{}])", name(op.getA()),
                                       m * (ka / 4) + (k / 16) * 4);
        line(fmt::format("qla::dev::wgmma_rs_{}<{}, {}>({}, {}, {}, {});", kind, N, tb ? 0 : 1, acc, regs, db, scale));
      }
    }
  }
  --indent_;
  line("}");
  return success();
}

}  // namespace qla::compiler
