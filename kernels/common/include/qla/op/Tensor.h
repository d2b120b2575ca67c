// Tensor arguments of an operator: a non-owning view of the caller's tensor,
// its byte span, and the host-side checks every operator makes of its
// arguments (rank, extents, size, layout, alignment, overlaps). Throws
// op::Error (Error.h) naming the argument.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "qla/DType.h"
#include "qla/Tensor.h"

namespace qla::op {

constexpr int64_t kMaxExtent = (int64_t(1) << 31) - 1;  // dims are int32 in the kernels
constexpr int64_t kMaxBytes = int64_t(1) << 46;         // far beyond any GPU, far below overflow

// A tensor argument as the checks see it: the caller's pointer, dtype, shape
// (outermost first) and strides (elements; empty: contiguous row-major). The
// shape and strides are referenced, not copied: the view must not outlive them.
struct TensorView {
  void *data;
  DType dtype;
  const std::vector<int64_t> &shape;
  const std::vector<int64_t> &strides;
};
// The view of a family's tensor argument (qla/Tensor.h).
inline TensorView view(const TensorRef &t) { return {t.data, t.dtype, t.shape, t.strides}; }

// An argument with its user-facing name; outputs are checked for overlaps.
struct NamedTensor {
  const char *name;
  TensorView t;
  bool output;
};

int64_t roundUp(int64_t x, int64_t m);

// The strides in elements (the view's own, or contiguous row-major).
std::vector<int64_t> stridesOf(const TensorView &t);

// Byte span [lo, hi) that a (checkBasic-valid) tensor may touch.
std::pair<uintptr_t, uintptr_t> byteSpan(const TensorView &t);

// Rank, stride count, non-null data, extents in 1..2^31-1, at most 2^46 bytes.
// `layout` names the dims in the message ("[B, T, H, K]").
void checkBasic(const std::string &name, const TensorView &t, size_t rank, const char *layout);

// Last dim stride 1 (or extent 1), positive strides; with rowAlign16 the other
// strides (of dims with extent > 1) are multiples of 16 bytes and the data
// pointer is 16-byte aligned (TMA); otherwise it is aligned to the element size.
void checkLayout(const std::string &name, const TensorView &t, bool rowAlign16);

// An output must not write the same element twice (a broadcast or overlapping view).
void checkNoSelfOverlap(const std::string &name, const TensorView &t);

// No output overlaps any other argument in memory: the first pair found, the
// output first, in argument order ("o overlaps q in memory").
void checkOutputsDisjoint(const std::vector<NamedTensor> &args);

// Varlen offsets, as every chunked operator takes them (FLA's contract):
// cu_seqlens (null: none) i32 or i64 [N + 1] with N + 1 >= 2 and B = 1; with
// its host copy (null: not checked) starting at 0, non-decreasing, ending at
// T; a host copy without cu_seqlens is an error. Returns N (B without
// cu_seqlens).
int64_t checkCuSeqlens(const TensorView *cu, const int64_t *host, int64_t B, int64_t T);
// cu_seqlens read by plain loads: contiguous and aligned to its element size.
void checkCuSeqlensLayout(const TensorView &cu);

// The linear-attention operators' q, k, v: q and k [B, T, Hqk, K] of one
// dtype, bf16 or f16; v [B, T, H, V] (`vLayout` names its dims) of q's dtype,
// with H a multiple of Hqk. Returns the sizes.
struct HeadSizes {
  int64_t B, T, Hqk, K, H, V;
};
HeadSizes checkQKV(const TensorView &q, const TensorView &k, const TensorView &v, const char *vLayout);

// A tensor of dtype `want` ("; expected f32" + `why`), rank and extents
// `shape` (`layout` names them: "[B, T, H]").
void checkTensor(const std::string &name, const TensorView &t, DType want, const std::string &why,
                 const std::vector<int64_t> &shape, const char *layout);

}  // namespace qla::op
