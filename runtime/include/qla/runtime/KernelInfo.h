// What the compiler tells the runtime about one compiled kernel: its symbol,
// its parameters in launch order, and how to size its launch. Plain C++ (no
// MLIR), so an AOT deployment can launch a cubin without the compiler.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "qla/DType.h"

namespace qla {

// A runtime tensor argument: a global tensor view with symbolic dims.
struct TensorArgInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::string> dims;  // symbolic dim names, outermost first
  bool isOutput = false;
};

// A runtime scalar argument (i32 or f32).
struct ScalarArgInfo {
  std::string name;
  DType dtype = DType::F32;
};

enum class Swizzle : uint8_t { None = 0, B32 = 1, B64 = 2, B128 = 3 };

// One kernel parameter, in launch order.
struct ParamInfo {
  enum class Kind : uint8_t {
    TensorMap,  // CUtensorMap (by value, __grid_constant__) of tensor `index`
    Pointer,    // device pointer of tensor `index`
    Dim,        // int32 value of dim symbol `index` (into KernelInfo::dimSymbols)
    Stride,     // int64 element stride of tensor `index`, dimension `dim`
    Scalar,     // scalar argument `index` (into KernelInfo::scalars)
  };
  Kind kind = Kind::Pointer;
  int index = 0;
  int dim = 0;                 // Stride only
  // TensorMap only: box extents, outermost first (same order as the tensor's
  // dims; a box extent of 1 on a dim is allowed), and the shared-memory swizzle.
  std::vector<uint32_t> box;
  Swizzle swizzle = Swizzle::None;
  // TensorMap only: read by TMA stores alone, each behind an in-kernel check
  // of what encoding needs (aligned base and strides, contiguous last dim):
  // a tensor the map cannot describe gets a zeroed map, not an error (the
  // kernel then copies with threads). "optional" in the text form.
  bool optional = false;
};

struct KernelInfo {
  std::string name;                       // the extern "C" symbol
  std::vector<TensorArgInfo> tensors;
  std::vector<ScalarArgInfo> scalars;
  std::vector<std::string> dimSymbols;    // every symbolic dim, first-seen order
  std::vector<ParamInfo> params;
  // Launch shape: expressions over dim symbols (integer literals, + - * / %,
  // parentheses, cdiv(a,b), min(a,b), max(a,b)). Specialization constants are
  // already folded in.
  std::array<std::string, 3> grid = {"1", "1", "1"};
  int threads = 128;
  std::array<int, 3> cluster = {1, 1, 1};
  int dynamicSmemBytes = 0;
  // The kernel was declared with follows(...): it waits for the kernel ahead
  // of it in the stream before touching what that kernel writes, so it may be
  // launched with programmatic stream serialization (LoadedKernel::launch).
  bool follows = false;

  // A line-oriented text form, stable across versions of this struct's users;
  // embedded in the emitted CUDA source as a comment block and kept in the cache.
  std::string serialize() const;
  static bool deserialize(const std::string &text, KernelInfo &out, std::string &error);
};

// Evaluates a grid expression over dim values. Returns false with a message
// naming the expression on a syntax error, an unknown symbol or a division by 0.
bool evalGridExpr(const std::string &expr, const std::vector<std::string> &symbols,
                  const std::vector<int64_t> &values, int64_t &out, std::string &error);

}  // namespace qla
