// CUDA emitter: the unit lower-triangular inverse (inv_unit_lower): in
// registers by warp-level blocks, or merged by mma.sync.
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

// (I + strictly_lower(L))^-1 in shared memory, f32, blocked: the matrix is
// cut into BS x BS blocks (BS = 16 when n is a multiple of 16, else one
// block). X = (I + L)^-1 is lower triangular with unit diagonal.
//  1. Diagonal blocks, all at once: thread t owns column t and runs forward
//     substitution down its block's BS rows (X[r][t] = -sum_k L[r][k] X[k][t]
//     with X[t][t] = 1). No barrier: a column depends only on itself.
//  2. Off-diagonal blocks by distance d = i - j from the diagonal, 1 .. NB-1:
//     T_ij = sum_{k=j}^{i-1} L_ik X_kj (blocks of distance < d are done), then
//     X_ij = -X_ii T_ij. T_ij is kept in block (j, i) of L's unused upper
//     triangle. Two barriers per distance.
// The dependent chain is BS + sum_d (d + 1) BS multiply-adds instead of n^2/2
// (for n = 64: 136 + 144 instead of 2016). Every loop has a trip count that is
// uniform within a warp's work item, so warps reconverge before later wgmma.
LogicalResult Emitter::emitInvUnitLower(InvUnitLowerOp op) {
  auto s = op.getSrc().getType();
  int64_t n = s.getShape()[0];
  const int64_t wgs = group().end - group().begin + 1, nthreads = wgs * 128;
  if (n > nthreads) return op.emitOpError("matrices larger than the group's thread count are not supported yet");
  if (s.getLayout() != FragType::Acc) return op.emitOpError("needs an accumulator-layout fragment");
  if (op.getF16Operands()) {
    if (!op.mmaMerged(wgs))
      return op.emitOpError("with f16 operands needs a 64 x 64 accumulator fragment of one warpgroup (the role or "
                            "kernel has ")
             << wgs << " warpgroups)";
    return emitInvUnitLowerMma(op);
  }
  if (op.inRegisters(wgs)) return emitInvUnitLowerRegisters(op);
  const int64_t blocks = op.getBlocks() ? *op.getBlocks() : 0;  // only the diagonal blocks
  const int64_t bs = blocks ? blocks : n % 16 == 0 ? 16 : n, nb = n / bs;
  // Padded rows (no bank conflicts on column reads). With `blocks` only the
  // diagonal blocks are kept, one after another (bs x (bs + 1) each): entry
  // (r, c) of block r / bs at (r / bs) * bs * ld + (r % bs) * ld + c % bs,
  // that is r * ld + c % bs.
  const int64_t ld = blocks ? bs + 1 : n + 1;
  std::string L = fresh("qla_inv_l"), X = fresh("qla_inv_x");
  if (failed(scratchPointer(op, L))) return failure();
  line(fmt::format("float* const {} = {} + {};", X, L, n * ld));
  // Element (r, c) of L or X (with `blocks`: of a diagonal block).
  auto at = [&](const std::string &r, const std::string &c) {
    if (!blocks) return fmt::format("({}) * {} + ({})", r, ld, c);
    if ((bs & (bs - 1)) == 0) return fmt::format("({}) * {} + (({}) & {})", r, ld, c, bs - 1);
    return fmt::format("({}) * {} + ({}) % {}", r, ld, c, bs);
  };
  std::string tid = declareStr("int", fmt::format("(int)threadIdx.x - {}", group().begin * 128), "tid");
  // The statements below name the scratch matrices {L} and {X}, their padded
  // row length {LD}, the block size {BS}, the group's thread count {NT}, the
  // thread index {tid} and the order {n}.
  auto F = [&](const char *fs, int64_t d = 0) {
    return fmt::format(fmt::runtime(fs), fmt::arg("L", L), fmt::arg("X", X), fmt::arg("LD", ld), fmt::arg("BS", bs),
                       fmt::arg("NT", nthreads), fmt::arg("tid", tid), fmt::arg("n", n), fmt::arg("d", d));
  };
  line(groupSync());
  // X starts as the identity: entries above the diagonal then add nothing.
  // With `blocks` only the diagonal blocks are computed, every entry of them
  // by step 1, and the rest of the result is 0 by construction (the copy out
  // selects it): no fill.
  if (!blocks) {
    std::string z = fresh("z");
    line(fmt::format("for (int {0} = {1}; {0} < {2}; {0} += {3}) {4}[{0}] = ({0} % {5} == {0} / {5}) ? 1.0f : 0.0f;",
                     z, tid, n * ld, nthreads, X, ld));
  }
  {
    RegLoop l = openRegLoop(s);
    if (blocks)
      line(fmt::format("if (({0}) / {1} == ({2}) / {1}) {3}[{4}] = {5};", l.idx[0], bs, l.idx[1], L,
                       at(l.idx[0], l.idx[1]), fragElem(op.getSrc(), l.reg)));
    else
      line(fmt::format("{}[{}] = {};", L, at(l.idx[0], l.idx[1]), fragElem(op.getSrc(), l.reg)));
    closeLoop();
  }
  line(groupSync());
  // 1. Diagonal blocks: the thread's column lives in registers (x_[r] is
  // X[b0 + r][col]); loops are unrolled, indices compile-time constants.
  line("{");
  ++indent_;
  line(fmt::format("const int col_ = {0} < {1} ? {0} : {2};", tid, n, n - 1));
  line(F("const int b0_ = (col_ / {BS}) * {BS}, c_ = col_ - b0_;"));
  line(F("float x_[{BS}];"));
  line("#pragma unroll");
  line(F("for (int r_ = 0; r_ < {BS}; ++r_) {{"));
  ++indent_;
  line(blocks ? F("const float* const lrow_ = {L} + (b0_ + r_) * {LD};")
              : F("const float* const lrow_ = {L} + (b0_ + r_) * {LD} + b0_;"));
  line("float a0 = 0.0f, a1 = 0.0f;");
  line("#pragma unroll");
  line("for (int k_ = 0; k_ + 1 < r_; k_ += 2) { a0 += lrow_[k_] * x_[k_]; a1 += lrow_[k_ + 1] * x_[k_ + 1]; }");
  line("if (r_ % 2 == 1) a0 += lrow_[r_ - 1] * x_[r_ - 1];");
  line("x_[r_] = r_ < c_ ? 0.0f : r_ == c_ ? 1.0f : -(a0 + a1);");
  --indent_;
  line("}");
  line(F("if ({tid} < {n}) {{"));
  line("  #pragma unroll");
  line(blocks ? F("  for (int r_ = 0; r_ < {BS}; ++r_) {X}[(b0_ + r_) * {LD} + c_] = x_[r_];")
              : F("  for (int r_ = 0; r_ < {BS}; ++r_) {X}[(b0_ + r_) * {LD} + col_] = x_[r_];"));
  line("}");
  --indent_;
  line("}");
  line(groupSync());
  // 2. Off-diagonal blocks, by distance d from the diagonal (unrolled here:
  // every trip count is a constant); none with `blocks`.
  for (int64_t d = 1; d < nb && !blocks; ++d) {
    const int64_t cnt = (nb - d) * bs * bs, iters = (cnt + nthreads - 1) / nthreads;
    const bool ragged = cnt % nthreads != 0;
    auto item = [&](const std::vector<std::string> &body) {
      line("#pragma unroll");
      line(fmt::format("for (int q_ = 0; q_ < {}; ++q_) {{", iters));
      ++indent_;
      line(F("const int e_ = {tid} + q_ * {NT};"));
      if (ragged) line(fmt::format("if (e_ < {}) {{", cnt));
      line(fmt::format("const int j_ = e_ / {0}, i_ = j_ + {1}, r_ = (e_ / {2}) % {2}, c_ = e_ % {2};", bs * bs, d, bs));
      for (const std::string &b : body) line(b);
      if (ragged) line("}");
      --indent_;
      line("}");
    };
    line(fmt::format("{{  // distance {}: T_ij = sum_k L_ik X_kj", d));
    ++indent_;
    item({F("const float* const lrow_ = {L} + (i_ * {BS} + r_) * {LD} + j_ * {BS};"),
          F("const float* const xcol_ = {X} + (j_ * {BS}) * {LD} + j_ * {BS} + c_;"),
          "float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;",
          "#pragma unroll",
          fmt::format("for (int k_ = 0; k_ < {}; k_ += 4) {{", d * bs),
          F("  a0 += lrow_[k_] * xcol_[k_ * {LD}];"),
          F("  a1 += lrow_[k_ + 1] * xcol_[(k_ + 1) * {LD}];"),
          F("  a2 += lrow_[k_ + 2] * xcol_[(k_ + 2) * {LD}];"),
          F("  a3 += lrow_[k_ + 3] * xcol_[(k_ + 3) * {LD}];"),
          "}",
          F("{L}[(j_ * {BS} + r_) * {LD} + i_ * {BS} + c_] = (a0 + a1) + (a2 + a3);  // T_ij in block (j, i)")});
    line(groupSync());
    line("// X_ij = -X_ii T_ij");
    item({F("const float* const xrow_ = {X} + (i_ * {BS} + r_) * {LD} + i_ * {BS};"),
          F("const float* const tcol_ = {L} + (j_ * {BS}) * {LD} + i_ * {BS} + c_;"),
          "float a0 = 0.0f, a1 = 0.0f;",
          "#pragma unroll",
          F("for (int m_ = 0; m_ < {BS}; m_ += 2) {{ a0 += xrow_[m_] * tcol_[m_ * {LD}]; a1 += xrow_[m_ + 1] * tcol_[(m_ + 1) * {LD}]; }}"),
          F("{X}[(i_ * {BS} + r_) * {LD} + j_ * {BS} + c_] = -(a0 + a1);")});
    line(groupSync());
    --indent_;
    line("}");
  }
  RegLoop l = openRegLoop(op.getDst().getType());
  if (blocks)
    fragStore(op.getDst(), l.reg,
              fmt::format("({1}) / {3} == ({2}) / {3} ? {0}[{4}] : 0.0f", X, l.idx[0], l.idx[1], bs,
                          at(l.idx[0], l.idx[1])));
  else
    fragStore(op.getDst(), l.reg, fmt::format("{}[{} * {} + {}]", X, l.idx[0], ld, l.idx[1]));
  closeLoop();
  line(groupSync());
  return success();
}

// The registers of a 64 x 64 accumulator fragment of one warpgroup that hold
// its 16 x 16 block (row block w, column block cb): reg[jj][h][e] holds block
// element (l/4 + 8h, 8jj + 2(l%4) + e) in lane l of warp w (the warp_block.cuh
// layout; found from FragLayout, the pattern checked for every lane).
LogicalResult Emitter::warpBlockRegs(InvUnitLowerOp op, int64_t w, int64_t cb, int64_t (&reg)[2][2][2]) {
  const FragLayout lay = FragLayout::of(op.getSrc().getType());
  for (auto &a : reg)
    for (auto &b : a)
      for (auto &c : b) c = -1;
  for (int64_t r = 0; r < lay.regsPerThread(); ++r) {
    std::vector<int64_t> rc = lay.index(r, {0, w, 0});
    const int64_t br = rc[0] - 16 * w, bc = rc[1] - 16 * cb;
    if (br < 0 || br >= 16 || bc < 0 || bc >= 16) continue;
    const int64_t h = br / 8, jj = bc / 8, e = bc % 2;
    if (br % 8 != 0 || (bc % 8) / 2 != 0 || reg[jj][h][e] != -1)
      return op.emitOpError("register inverse: unexpected accumulator layout");
    reg[jj][h][e] = r;
  }
  for (int64_t jj = 0; jj < 2; ++jj)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t e = 0; e < 2; ++e) {
        const int64_t r = reg[jj][h][e];
        if (r < 0) return op.emitOpError("register inverse: a 16 x 16 block is not whole in its warp");
        for (int64_t l = 0; l < 32; ++l) {
          std::vector<int64_t> rc = lay.index(r, {l, w, 0});
          if (rc[0] != 16 * w + l / 4 + 8 * h || rc[1] != 16 * cb + 8 * jj + 2 * (l % 4) + e)
            return op.emitOpError("register inverse: unexpected accumulator layout");
        }
      }
  return success();
}

// Emits, inside an open scope where `float lb_[8]` holds a 16 x 16 block of L
// in the warp_block.cuh layout (slot 4jj + 2h + e), the declaration of
// `float xb_[8]` = (I + strictly_lower(lb_))^-1 in the same layout, and of
// `lr_ = lane / 4`, `lq_ = lane % 4` and `kof_[jj][h][e]` (the slot).
// Right-looking elimination: for each pivot s, row s of X (final by then) and
// column s of L go to every lane by shuffles and X[r, :] -= L[r, s] X[s, :] (a
// no-op for r <= s: L is masked to its strict lower triangle). No shared
// memory, no barrier.
void Emitter::emitBlockInverse16() {
  line("float xb_[8];");
  line("const int lr_ = qla_lane / 4, lq_ = qla_lane % 4;");
  // kof_[jj][h][e] = 4jj + 2h + e, for the loops below (constant once unrolled).
  line("constexpr int kof_[2][2][2] = {{{0, 1}, {2, 3}}, {{4, 5}, {6, 7}}};");
  line("#pragma unroll");
  line("for (int jj_ = 0; jj_ < 2; ++jj_) {");
  line("  #pragma unroll");
  line("  for (int h_ = 0; h_ < 2; ++h_) {");
  line("    #pragma unroll");
  line("    for (int e_ = 0; e_ < 2; ++e_) {");
  line("      const int k_ = kof_[jj_][h_][e_], r_ = lr_ + 8 * h_, c_ = 8 * jj_ + 2 * lq_ + e_;");
  line("      lb_[k_] = r_ > c_ ? lb_[k_] : 0.0f;");
  line("      xb_[k_] = r_ == c_ ? 1.0f : 0.0f;");
  line("    }");
  line("  }");
  line("}");
  // The 16 x 16 block as 8 x 8 quadrants: X = [[X11, 0], [X21, X22]] with
  // X11 = (I + L11)^-1, X22 = (I + L22)^-1 and X21 = X22 Y, Y = -L21 X11.
  // Phase 1, 8 steps: one column-by-column elimination step on the top-left
  // and one on the bottom-right quadrant at once, and Y accumulated from the
  // top-left rows as they become final (half the dependent steps of a
  // 16-step elimination). Phase 2: X21 = X22 Y, an 8 x 8 product whose
  // shuffles do not depend on one another. Slots: top-left k(0, 0, e),
  // bottom-left k(0, 1, e), bottom-right k(1, 1, e).
  line("#pragma unroll");
  line("for (int t_ = 0; t_ < 8; ++t_) {");
  ++indent_;
  line("// Row t of X11 and of X22 (lanes 4t + q), column t of L11, L21 and L22 (lanes 4 (l / 4) + t / 2).");
  line("float xt_[2], xr_[2];");
  line("#pragma unroll");
  line("for (int e_ = 0; e_ < 2; ++e_) {");
  line("  xt_[e_] = __shfl_sync(0xffffffffu, xb_[kof_[0][0][e_]], 4 * t_ + lq_);");
  line("  xr_[e_] = __shfl_sync(0xffffffffu, xb_[kof_[1][1][e_]], 4 * t_ + lq_);");
  line("}");
  line("const float lt_ = __shfl_sync(0xffffffffu, lb_[kof_[0][0][t_ % 2]], lr_ * 4 + t_ / 2);");
  line("const float lbt_ = __shfl_sync(0xffffffffu, lb_[kof_[0][1][t_ % 2]], lr_ * 4 + t_ / 2);");
  line("const float lrt_ = __shfl_sync(0xffffffffu, lb_[kof_[1][1][t_ % 2]], lr_ * 4 + t_ / 2);");
  line("#pragma unroll");
  line("for (int e_ = 0; e_ < 2; ++e_) {");
  line("  xb_[kof_[0][0][e_]] -= lt_ * xt_[e_];");
  line("  xb_[kof_[0][1][e_]] -= lbt_ * xt_[e_];");
  line("  xb_[kof_[1][1][e_]] -= lrt_ * xr_[e_];");
  line("}");
  --indent_;
  line("}");
  line("{");
  ++indent_;
  line("// X21 = X22 Y: row l / 4 of X22 (lanes 4 (l / 4) + m / 2), rows m of Y (lanes 4m + q).");
  line("float z_[2] = {0.0f, 0.0f};");
  line("#pragma unroll");
  line("for (int m_ = 0; m_ < 8; ++m_) {");
  line("  const float xm_ = __shfl_sync(0xffffffffu, xb_[kof_[1][1][m_ % 2]], lr_ * 4 + m_ / 2);");
  line("  #pragma unroll");
  line("  for (int e_ = 0; e_ < 2; ++e_) z_[e_] += xm_ * __shfl_sync(0xffffffffu, xb_[kof_[0][1][e_]], 4 * m_ + lq_);");
  line("}");
  line("xb_[kof_[0][1][0]] = z_[0];");
  line("xb_[kof_[0][1][1]] = z_[1];");
  --indent_;
  line("}");
}

// inv_unit_lower(l, blocks = 16) of a 64 x 64 accumulator fragment held by
// one warpgroup (InvUnitLowerOp::inRegisters): warp w holds diagonal block w
// (rows and columns 16w .. 16w + 15) whole, 8 registers per lane, and inverts
// it in registers (emitBlockInverse16): 8 dependent steps of shuffles and
// FMAs, no shared memory, no barrier. dst is zero off the diagonal blocks.
LogicalResult Emitter::emitInvUnitLowerRegisters(InvUnitLowerOp op) {
  int64_t reg[4][2][2][2];
  for (int64_t w = 0; w < 4; ++w)
    if (failed(warpBlockRegs(op, w, w, reg[w]))) return failure();
  auto k = [](int64_t jj, int64_t h, int64_t e) { return 4 * jj + 2 * h + e; };
  line("{");
  ++indent_;
  line("float lb_[8];");
  for (int64_t w = 0; w < 4; ++w) {
    line(fmt::format("{}if (qla_warp == {}) {{", w ? "} else " : "", w));
    ++indent_;
    for (int64_t jj = 0; jj < 2; ++jj)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t e = 0; e < 2; ++e)
          line(fmt::format("lb_[{}] = {};", k(jj, h, e), fragElem(op.getSrc(), std::to_string(reg[w][jj][h][e]))));
    --indent_;
  }
  line("}");
  emitBlockInverse16();
  // dst: the warp's block, zero elsewhere.
  const FragLayout lay = FragLayout::of(op.getSrc().getType());
  for (int64_t r = 0; r < lay.regsPerThread(); ++r) {
    std::string v = "0.0f";
    for (int64_t w = 0; w < 4; ++w)
      for (int64_t jj = 0; jj < 2; ++jj)
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t e = 0; e < 2; ++e)
            if (reg[w][jj][h][e] == r) v = fmt::format("(qla_warp == {} ? xb_[{}] : {})", w, k(jj, h, e), v);
    fragStore(op.getDst(), std::to_string(r), v);
  }
  --indent_;
  line("}");
  return success();
}

// inv_unit_lower(l, operands = f16) of a 64 x 64 accumulator fragment held by
// one warpgroup (InvUnitLowerOp::mmaMerged): the whole inverse X, in
// registers, with the 16 x 16 blocks of the warp_block.cuh layout (warp w
// holds row block w, all four column blocks). Blocks X_ij, L_ij (i, j the
// warp / column block); D_i = X_ii.
//   Level 0, every warp: D_w = (I + L_ww)^-1 by elimination (emitBlockInverse16).
//   Level 1 (16 -> 32):  X_10 = -D_1 (L_10 D_0),  X_32 = -D_3 (L_32 D_2).
//   Level 2 (32 -> 64):  [X_20 X_21; X_30 X_31] = -X_lr L_ll X_ul, with
//     X_ul = [D_0 0; X_10 D_1], X_lr = [D_2 0; X_32 D_3] and L_ll the blocks
//     (2..3, 0..1) of L: warp 2 takes Z = D_2 [L_20 L_21], warp 3
//     Z = X_32 [L_20 L_21] + D_3 [L_30 L_31], then X_w = -Z X_ul.
// Every product is mma.sync.m16n8k16 on f16 operands with f32 sums; the
// diagonal blocks stay f32. An operand a warp holds itself is a register
// operand (A: as is, B: movmatrix); the others cross warps through an f16
// scratch tile (B by ldmatrix.trans): D_0, X_10 and D_1 (X_ul), D_2, and
// L_20, L_21 (for warp 3), in a 48 x kMmaLd array at their (row, column).
// Three barriers of the group: before the scratch is written (the previous
// use's reads), after level 0's and after level 1's writes.
LogicalResult Emitter::emitInvUnitLowerMma(InvUnitLowerOp op) {
  int64_t reg[4][2][2][2];
  for (int64_t cb = 0; cb < 4; ++cb) {
    if (failed(warpBlockRegs(op, 0, cb, reg[cb]))) return failure();
    for (int64_t w = 1; w < 4; ++w) {
      int64_t rw[2][2][2];
      if (failed(warpBlockRegs(op, w, cb, rw))) return failure();
      if (std::memcmp(rw, reg[cb], sizeof rw) != 0)
        return op.emitOpError("register inverse: the warps' blocks are in different registers");
    }
  }
  auto k = [](int64_t jj, int64_t h, int64_t e) { return 4 * jj + 2 * h + e; };
  const int64_t ld = InvUnitLowerOp::kMmaLd;
  std::string F = fresh("qla_inv_s");
  if (failed(scratchPointer(op, F))) return failure();
  line("{");
  ++indent_;
  line(fmt::format("qla::dev::f16* const s_ = reinterpret_cast<qla::dev::f16*>({});", F));
  // L's four blocks of this warp's rows (read before dst is written: dst may be src).
  line("float lf_[4][8];");
  for (int64_t cb = 0; cb < 4; ++cb)
    for (int64_t jj = 0; jj < 2; ++jj)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t e = 0; e < 2; ++e)
          line(fmt::format("lf_[{}][{}] = {};", cb, k(jj, h, e), fragElem(op.getSrc(), std::to_string(reg[cb][jj][h][e]))));
  line("float lb_[8];");
  line("#pragma unroll");
  line("for (int i_ = 0; i_ < 8; ++i_)");
  line("  lb_[i_] = qla_warp == 0 ? lf_[0][i_] : qla_warp == 1 ? lf_[1][i_] : qla_warp == 2 ? lf_[2][i_] : lf_[3][i_];");
  emitBlockInverse16();
  auto at = [&](int64_t r, int64_t c) { return fmt::format("s_ + {}", r * ld + c); };
  line("qla::dev::u32 a_[4], b_[2][2];");
  line("float x1_[8] = {}, q0_[8] = {}, q1_[8] = {};  // X_10 or X_32; X_w0, X_w1");
  line(groupSync());
  line("if (qla_warp == 0) {");
  line(fmt::format("  qla::dev::wblock_store_f16({}, {}, xb_);  // D_0", at(0, 0), ld));
  line("} else if (qla_warp == 2) {");
  line(fmt::format("  qla::dev::wblock_store_f16({}, {}, xb_);  // D_2", at(32, 32), ld));
  line(fmt::format("  qla::dev::wblock_store_f16({}, {}, lf_[0]);  // L_20", at(32, 0), ld));
  line(fmt::format("  qla::dev::wblock_store_f16({}, {}, lf_[1]);  // L_21", at(32, 16), ld));
  line("}");
  line(groupSync());
  // d += A B on the tensor cores: A from a register block (a_ is kept when
  // `a` is empty), B from shared memory at (r, c) or from a register block.
  auto bShared = [&](int64_t r, int64_t c) { return fmt::format("qla::dev::wblock_b_shared(b_, {}, {});", at(r, c), ld); };
  auto bRegs = [](const std::string &x) { return fmt::format("qla::dev::wblock_b(b_, {});", x); };
  auto mma = [&](const std::string &d, const std::string &a, const std::string &loadB) {
    if (!a.empty()) line(fmt::format("qla::dev::wblock_a(a_, {});", a));
    line(loadB);
    line(fmt::format("qla::dev::wblock_mma({}, a_, b_);", d));
  };
  // Level 1: warp 1 (i = 1, j = 0) and warp 3 (i = 3, j = 2).
  for (int64_t w : {1, 3}) {
    line(fmt::format("if (qla_warp == {}) {{  // X_{}{} = -D_{} (L_{}{} D_{})", w, w, w - 1, w, w, w - 1, w - 1));
    ++indent_;
    line("float y_[8] = {};");
    mma("y_", fmt::format("lf_[{}]", w - 1), bShared(16 * (w - 1), 16 * (w - 1)));
    line("#pragma unroll");
    line("for (int i_ = 0; i_ < 8; ++i_) y_[i_] = -y_[i_];");
    mma("x1_", "xb_", bRegs("y_"));
    if (w == 1) {
      line(fmt::format("qla::dev::wblock_store_f16({}, {}, x1_);  // X_10", at(16, 0), ld));
      line(fmt::format("qla::dev::wblock_store_f16({}, {}, xb_);  // D_1", at(16, 16), ld));
    }
    --indent_;
    line("}");
  }
  line(groupSync());
  // Level 2: warps 2 and 3.
  line("if (qla_warp >= 2) {  // X_w0, X_w1 = -Z X_ul");
  ++indent_;
  line("float z0_[8] = {}, z1_[8] = {};");
  line("if (qla_warp == 3) {  // Z += X_32 [L_20 L_21]");
  ++indent_;
  mma("z0_", "x1_", bShared(32, 0));
  mma("z1_", "", bShared(32, 16));
  --indent_;
  line("}");
  line("// Z += D_w [L_w0 L_w1]");
  mma("z0_", "xb_", bRegs("lf_[0]"));
  mma("z1_", "", bRegs("lf_[1]"));
  line("#pragma unroll");
  line("for (int i_ = 0; i_ < 8; ++i_) { z0_[i_] = -z0_[i_]; z1_[i_] = -z1_[i_]; }");
  line("// X_w0 = Z_0 D_0 + Z_1 X_10, X_w1 = Z_1 D_1 (block (0, 1) of X_ul is 0)");
  mma("q0_", "z0_", bShared(0, 0));
  mma("q0_", "z1_", bShared(16, 0));
  mma("q1_", "", bShared(16, 16));
  --indent_;
  line("}");
  // dst: block (w, cb) of the warp's rows.
  const char *pick[4] = {"qla_warp == 0 ? xb_[{0}] : qla_warp == 1 ? x1_[{0}] : q0_[{0}]",
                         "qla_warp == 0 ? 0.0f : qla_warp == 1 ? xb_[{0}] : q1_[{0}]",
                         "qla_warp == 2 ? xb_[{0}] : qla_warp == 3 ? x1_[{0}] : 0.0f",
                         "qla_warp == 3 ? xb_[{0}] : 0.0f"};
  for (int64_t cb = 0; cb < 4; ++cb)
    for (int64_t jj = 0; jj < 2; ++jj)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t e = 0; e < 2; ++e)
          fragStore(op.getDst(), std::to_string(reg[cb][jj][h][e]),
                    "(" + fmt::format(fmt::runtime(pick[cb]), k(jj, h, e)) + ")");
  --indent_;
  line("}");
  return success();
}

}  // namespace qla::compiler
