// Text helpers every part of the CUDA emitter uses (internal to compiler/emit).
#pragma once

#include <string>

#include <fmt/format.h>

#include "compiler/emit/EmitterCore.h"

namespace qla::compiler::emit_detail {

using namespace mlir;
using namespace mlir::qla;
using namespace mlir::qlanv;

inline bool is16(Type t) { return t.isBF16() || t.isF16(); }
inline std::string pfx(Type t) { return t.isBF16() ? "bf16" : "f16"; }

// Converts a value of storage type `t` (read from memory) to float.
inline std::string loadAsFloat(Type t, const std::string &expr) {
  if (is16(t)) return fmt::format("qla::dev::to_float({})", expr);
  if (t.isF32()) return expr;
  return fmt::format("(float)({})", expr);
}
// Converts a float to storage type `t`.
inline std::string storeFromFloat(Type t, const std::string &expr) {
  if (t.isBF16()) return fmt::format("qla::dev::to_bf16({})", expr);
  if (t.isF16()) return fmt::format("qla::dev::to_f16({})", expr);
  if (t.isF32()) return expr;
  return fmt::format("({})({})", Emitter::dtypeCType(t), expr);
}
// A reduction's identity and how it combines two values (CUDA text).
inline const char *reduceInit(ReduceKind k) {
  switch (k) {
    case ReduceKind::add: return "0.0f";
    case ReduceKind::max: return "-__int_as_float(0x7f800000)";
    case ReduceKind::min: return "__int_as_float(0x7f800000)";
  }
  return "0.0f";
}
inline std::string reduceCombine(ReduceKind k, const std::string &a, const std::string &b) {
  switch (k) {
    case ReduceKind::add: return fmt::format("({} + {})", a, b);
    case ReduceKind::max: return fmt::format("fmaxf({}, {})", a, b);
    case ReduceKind::min: return fmt::format("fminf({}, {})", a, b);
  }
  return "";
}
inline std::string smemIndex(SharedType t, const std::string &row, const std::string &col) {
  auto s = t.getShape();
  int64_t rows = s.size() == 2 ? s[0] : 1, cols = s.back();
  return fmt::format("qla::dev::smem_tile_index<{}, {}, {}, {}>({}, {})", t.getSwizzle(),
                     elementBytes(t.getElementType()), rows, cols, row, col);
}

}  // namespace qla::compiler::emit_detail
