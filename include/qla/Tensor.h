// A tensor argument as every kernel family's C++ operator takes it: a device
// pointer, its element type, its shape (outermost first) and strides in
// elements (empty: contiguous row-major). One definition: qla::gdn::TensorRef
// and qla::gla::TensorRef are this type.
#pragma once

#include <cstdint>
#include <vector>

#include "qla/DType.h"

namespace qla {

struct TensorRef {
  void *data = nullptr;
  DType dtype = DType::BF16;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

}  // namespace qla
