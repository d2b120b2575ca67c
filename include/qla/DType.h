// The element types every part of QLA names: the front end (tensor and tile
// dtypes, dtype specialization constants), the runtime (kernel parameters),
// the kernel families' operators and their C ABIs (whose dtype codes are
// these values). Header-only, no dependency: the one definition.
#pragma once

#include <cstdint>
#include <string>

namespace qla {

enum class DType : uint8_t { BF16, F16, F32, I32, I64 };

// "bf16", "f16", "f32", "i32", "i64".
inline const char *dtypeName(DType t) {
  switch (t) {
    case DType::BF16: return "bf16";
    case DType::F16: return "f16";
    case DType::F32: return "f32";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
  }
  return "?";
}

// Bytes per element: 2, 2, 4, 4, 8.
inline int dtypeBytes(DType t) {
  switch (t) {
    case DType::BF16:
    case DType::F16: return 2;
    case DType::F32:
    case DType::I32: return 4;
    case DType::I64: return 8;
  }
  return 0;
}

// The inverse of dtypeName; false (out unchanged) for any other text.
inline bool parseDType(const std::string &s, DType &out) {
  for (DType t : {DType::BF16, DType::F16, DType::F32, DType::I32, DType::I64})
    if (s == dtypeName(t)) {
      out = t;
      return true;
    }
  return false;
}

}  // namespace qla
