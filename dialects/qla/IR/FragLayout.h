// Register layouts of fragments as index maps: for each layout kind, which
// tile element register r of a thread holds. Defined once here, next to the
// fragment type (FragType::getRegsPerThread is FragLayout's), and used by
// every emit function (as text over the kernel's qla_lane / qla_warp /
// qla_wgl), by the verifiers and layout inference, and by unit tests (as a
// C++ function).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::qla {
class FragType;

// The thread that holds a register: lane in its warp, warp in its
// warpgroup, warpgroup within the fragment's role (0 .. warpgroups - 1).
struct FragThread {
  int64_t lane = 0, warp = 0, wgl = 0;
};

class FragLayout {
 public:
  // Same numbering as mlir::qla::FragType::Layout.
  enum Kind : unsigned { Acc = 1, Row = 2, Col = 3 };

  // `shape`: the fragment's shape ([M, N] for Acc, [M] for Row, [N] for Col);
  // `warpgroups`: the warpgroups of its role (Acc and Row split the rows
  // over them; Col vectors are held whole by every warpgroup).
  FragLayout(Kind kind, std::vector<int64_t> shape, unsigned warpgroups);
  static FragLayout of(FragType t);  // t must have a layout
  // Whether a fragment of `shape` over `warpgroups` can have layout `kind`:
  // Acc [M, N] needs M a multiple of 64 per warpgroup and N of 8, Row [M]
  // 64 rows per warpgroup, Col [N] a multiple of 8. The one statement of
  // these rules: the fragment verifier and layout inference ask it.
  static bool fits(Kind kind, const std::vector<int64_t> &shape, unsigned warpgroups);

  Kind kind() const { return kind_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  unsigned warpgroups() const { return wg_; }
  size_t rank() const { return shape_.size(); }
  int64_t regsPerThread() const;
  // Threads holding each element: 1 (Acc), 4 (Row: the lanes of a quad),
  // 32 x warpgroups (Col: a lane's column pairs repeat in every row group).
  int64_t replication() const;
  // A C++ condition (on qla_lane, qla_warp, qla_wgl) true in exactly one of
  // the threads that hold each element: "true" (Acc), the quad's first lane
  // (Row), the first four lanes of the first warp of the first warpgroup
  // (Col). What a copy that adds into memory runs under.
  std::string ownerText() const;

  // The tile index (row, col) (Acc), (row) (Row) or (col) (Col) of
  // register r of thread t.
  std::vector<int64_t> index(int64_t r, FragThread t) const;
  // The same as C++ expressions of the register expression `r` (evaluated
  // once per use: pass a variable) and the kernel's qla_lane, qla_warp,
  // qla_wgl.
  std::vector<std::string> indexText(const std::string &r) const { return indexText(r, "qla_lane"); }
  // The same with the lane given as an expression (e.g. "0": the first
  // lane's index, the origin of an 8x8 block).
  std::vector<std::string> indexText(const std::string &r, const std::string &lane) const;

  // stmatrix/ldmatrix .x4 over an accumulator layout: in every 64-row block
  // a warp's registers 8q .. 8q + 7 (the packed pairs 4q .. 4q + 3) are four
  // 8x8 blocks in exactly the register layout of ldstmatrix.cuh (lane l: row
  // l/4, columns 2(l%4), 2(l%4) + 1), block m = registers 8q + 2m, 8q + 2m + 1
  // (row half m%2, column group 2(q % (N/16)) + m/2). Needs an accumulator
  // layout with N a multiple of 16; `x4Calls()` = regsPerThread() / 8 per
  // thread. Block m's origin (its element of lane 0, register 8q + 2m) is
  // index(8q + 2m, {0, warp, wgl}).
  bool x4Blocks() const { return kind_ == Acc && shape_[1] % 16 == 0; }
  int64_t x4Calls() const { return regsPerThread() / 8; }

  // Registers r, r + 1 (r even) are columns c, c + 1 of one row (c even):
  // true for Acc and Col layouts with an even register count.
  bool pairsColumns() const;

  // For an Acc layout: the register of a Row (the register's row) or Col
  // (its column) vector layout that holds the index of register r.
  int64_t vectorReg(Kind vec, int64_t r) const;
  std::string vectorRegText(Kind vec, const std::string &r) const;

 private:
  Kind kind_;
  std::vector<int64_t> shape_;
  unsigned wg_;
};

}  // namespace mlir::qla

namespace qla::compiler {
// The emitter's names for them (compiler/emit).
using mlir::qla::FragLayout;
using mlir::qla::FragThread;
}  // namespace qla::compiler
