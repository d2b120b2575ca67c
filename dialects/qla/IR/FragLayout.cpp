// The fragment register layouts (see FragLayout.h). wgmma m64nNk16
// accumulators: in each 64-row block, warp w of the warpgroup holds rows
// 16w .. 16w + 15; lane l holds rows l/4 and l/4 + 8 and, in every 8-column
// group, columns 2(l%4) and 2(l%4) + 1. Register r of an [M, N] fragment
// (h = N/2 registers per 64-row block): block r/h, column group (r%h)/4,
// row half ((r%h)/2)%2, column r%2. Row vectors hold the two rows of each
// block (register 2b + half), column vectors the two columns of each group
// (register 2g + column).
#include "dialects/qla/IR/FragLayout.h"

#include <algorithm>
#include <cassert>

#include <fmt/format.h>

#include "dialects/qla/IR/QlaDialect.h"

namespace mlir::qla {

FragLayout::FragLayout(Kind kind, std::vector<int64_t> shape, unsigned warpgroups)
    : kind_(kind), shape_(std::move(shape)), wg_(std::max(1u, warpgroups)) {
  assert(shape_.size() == (kind_ == Acc ? 2u : 1u));
}

bool FragLayout::fits(Kind kind, const std::vector<int64_t> &s, unsigned warpgroups) {
  const int64_t w = std::max(1u, warpgroups);
  switch (kind) {
    case Acc: return s.size() == 2 && s[0] % (64 * w) == 0 && s[1] % 8 == 0;
    case Row: return s.size() == 1 && s[0] % (64 * w) == 0;
    case Col: return s.size() == 1 && s[0] % 8 == 0;
  }
  return false;
}

FragLayout FragLayout::of(FragType t) {
  assert(t.hasLayout());
  return FragLayout(static_cast<Kind>(t.getLayout()), std::vector<int64_t>(t.getShape().begin(), t.getShape().end()),
                    t.getWarpgroups());
}

int64_t FragLayout::regsPerThread() const {
  switch (kind_) {
    case Acc: return (shape_[0] / wg_ / 64) * (shape_[1] / 2);
    case Row: return (shape_[0] / wg_ / 64) * 2;
    case Col: return shape_[0] / 4;
  }
  return 0;
}

int64_t FragLayout::replication() const {
  switch (kind_) {
    case Acc: return 1;
    case Row: return 4;
    case Col: return 32 * wg_;
  }
  return 0;
}

std::string FragLayout::ownerText() const {
  switch (kind_) {
    case Acc: return "true";
    case Row: return "qla_lane % 4 == 0";
    case Col: return "qla_lane < 4 && qla_warp == 0 && qla_wgl == 0";
  }
  return "true";
}

std::vector<int64_t> FragLayout::index(int64_t r, FragThread t) const {
  switch (kind_) {
    case Acc: {
      const int64_t mw = shape_[0] / wg_, half = shape_[1] / 2;
      return {t.wgl * mw + (r / half) * 64 + 16 * t.warp + t.lane / 4 + 8 * (((r % half) / 2) % 2),
              8 * ((r % half) / 4) + 2 * (t.lane % 4) + r % 2};
    }
    case Row: {
      const int64_t mw = shape_[0] / wg_;
      return {t.wgl * mw + (r / 2) * 64 + 16 * t.warp + t.lane / 4 + 8 * (r % 2)};
    }
    case Col:
      return {8 * (r / 2) + 2 * (t.lane % 4) + r % 2};
  }
  return {};
}

std::vector<std::string> FragLayout::indexText(const std::string &r, const std::string &lane) const {
  switch (kind_) {
    case Acc: {
      const int64_t mw = shape_[0] / wg_, half = shape_[1] / 2;
      return {fmt::format("qla_wgl * {1} + ({0} / {2}) * 64 + 16 * qla_warp + {3} / 4 + 8 * ((({0} % {2}) / 2) % 2)",
                          r, mw, half, lane),
              fmt::format("8 * (({0} % {1}) / 4) + 2 * ({2} % 4) + {0} % 2", r, half, lane)};
    }
    case Row: {
      const int64_t mw = shape_[0] / wg_;
      return {fmt::format("qla_wgl * {1} + ({0} / 2) * 64 + 16 * qla_warp + {2} / 4 + 8 * ({0} % 2)", r, mw, lane)};
    }
    case Col:
      return {fmt::format("8 * ({0} / 2) + 2 * ({1} % 4) + {0} % 2", r, lane)};
  }
  return {};
}

bool FragLayout::pairsColumns() const { return kind_ != Row && regsPerThread() % 2 == 0; }

int64_t FragLayout::vectorReg(Kind vec, int64_t r) const {
  assert(kind_ == Acc && vec != Acc);
  const int64_t half = shape_[1] / 2;
  if (vec == Row) return (r / half) * 2 + ((r % half) / 2) % 2;
  return ((r % half) / 4) * 2 + r % 2;
}

std::string FragLayout::vectorRegText(Kind vec, const std::string &r) const {
  assert(kind_ == Acc && vec != Acc);
  const int64_t half = shape_[1] / 2;
  if (vec == Row) return fmt::format("(({0}) / {1}) * 2 + ((({0}) % {1}) / 2) % 2", r, half);
  return fmt::format("((({0}) % {1}) / 4) * 2 + ({0}) % 2", r, half);
}

}  // namespace mlir::qla
