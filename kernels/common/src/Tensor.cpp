#include "qla/op/Tensor.h"

#include <algorithm>
#include <cmath>

#include "qla/op/Error.h"
#include "qla/runtime/Driver.h"

namespace qla::op {

int64_t roundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

std::vector<int64_t> stridesOf(const TensorView &t) {
  return rt::effectiveStrides(rt::TensorArg{t.data, t.shape, t.strides});
}

std::pair<uintptr_t, uintptr_t> byteSpan(const TensorView &t) {
  std::vector<int64_t> s = stridesOf(t);
  int64_t last = 0;
  for (size_t i = 0; i < t.shape.size(); ++i) last += (t.shape[i] - 1) * s[i];
  uintptr_t lo = reinterpret_cast<uintptr_t>(t.data);
  return {lo, lo + uintptr_t((last + 1) * dtypeBytes(t.dtype))};
}

void checkBasic(const std::string &name, const TensorView &t, size_t rank, const char *layout) {
  if (t.shape.size() != rank)
    fail(name + " must have " + std::to_string(rank) + " dim" + (rank == 1 ? "" : "s") + " " + layout +
         ", got shape " + dims(t.shape));
  if (!t.strides.empty() && t.strides.size() != rank)
    fail(name + " has " + std::to_string(t.strides.size()) + " strides for " + std::to_string(rank) + " dims");
  if (!t.data) fail(name + " is a null pointer");
  for (size_t i = 0; i < rank; ++i) {
    if (t.shape[i] < 1) fail(name + " has an empty or negative dim: shape " + dims(t.shape));
    if (t.shape[i] > kMaxExtent)
      fail(name + " dim " + std::to_string(i) + " = " + std::to_string(t.shape[i]) +
           " is too large (at most 2^31 - 1)");
  }
  std::vector<int64_t> s = stridesOf(t);
  long double span = 1;
  for (size_t i = 0; i < rank; ++i) span += (long double)(t.shape[i] - 1) * std::fabs((long double)s[i]);
  if (span * dtypeBytes(t.dtype) > (long double)kMaxBytes) fail(name + " is too large: shape " + dims(t.shape));
}

void checkLayout(const std::string &name, const TensorView &t, bool rowAlign16) {
  std::vector<int64_t> s = stridesOf(t);
  const size_t r = t.shape.size();
  const int64_t elem = dtypeBytes(t.dtype);
  bool ok = t.shape[r - 1] == 1 || s[r - 1] == 1;
  for (size_t i = 0; i + 1 < r && ok; ++i) {
    if (t.shape[i] == 1) continue;
    if (s[i] < 1) ok = false;
    if (rowAlign16 && s[i] * elem % 16 != 0) ok = false;
  }
  if (!ok) {
    if (rowAlign16)
      fail(name + " must be contiguous in its last dim (stride 1) with 16-byte aligned rows; got strides " +
           dims(s) + " for shape " + dims(t.shape));
    fail(name + " must be contiguous in its last dim (stride 1) with positive strides; got strides " + dims(s) +
         " for shape " + dims(t.shape));
  }
  int64_t align = rowAlign16 ? 16 : elem;
  if (reinterpret_cast<uintptr_t>(t.data) % uintptr_t(align) != 0)
    fail(name + "'s data pointer " + ptrText(t.data) + " is not " + std::to_string(align) + "-byte aligned");
}

void checkNoSelfOverlap(const std::string &name, const TensorView &t) {
  std::vector<int64_t> s = stridesOf(t);
  std::vector<size_t> order;
  for (size_t i = 0; i < t.shape.size(); ++i)
    if (t.shape[i] > 1) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s[a] < s[b]; });
  int64_t need = 1;  // the smallest stride the next dim may have
  for (size_t i : order) {
    if (s[i] < need)
      fail(name + " has overlapping elements (strides " + dims(s) + " for shape " + dims(t.shape) +
           "); an output must not be a broadcast or overlapping view");
    need = s[i] * t.shape[i];
  }
}

void checkOutputsDisjoint(const std::vector<NamedTensor> &args) {
  for (size_t o = 0; o < args.size(); ++o) {
    if (!args[o].output) continue;
    auto [olo, ohi] = byteSpan(args[o].t);
    for (size_t i = 0; i < args.size(); ++i) {
      if (i == o) continue;
      auto [lo, hi] = byteSpan(args[i].t);
      if (olo < hi && lo < ohi) fail(std::string(args[o].name) + " overlaps " + args[i].name + " in memory");
    }
  }
}

void checkCuSeqlensLayout(const TensorView &cu) {
  if (cu.shape[0] > 1 && stridesOf(cu)[0] != 1)
    fail("cu_seqlens must be contiguous (stride 1); got strides " + dims(stridesOf(cu)));
  if (reinterpret_cast<uintptr_t>(cu.data) % uintptr_t(dtypeBytes(cu.dtype)) != 0)
    fail("cu_seqlens's data pointer " + ptrText(cu.data) + " is not " + std::to_string(dtypeBytes(cu.dtype)) +
         "-byte aligned");
}

HeadSizes checkQKV(const TensorView &q, const TensorView &k, const TensorView &v, const char *vLayout) {
  if (q.dtype != DType::BF16 && q.dtype != DType::F16)
    fail(std::string("q has dtype ") + dtypeName(q.dtype) + "; expected bf16 or f16");
  checkBasic("q", q, 4, "[B, T, Hqk, K]");
  if (k.dtype != q.dtype) fail(std::string("k has dtype ") + dtypeName(k.dtype) + " but q has " + dtypeName(q.dtype));
  checkBasic("k", k, 4, "[B, T, Hqk, K]");
  if (k.shape != q.shape) fail("k has shape " + dims(k.shape) + " but q has shape " + dims(q.shape));
  if (v.dtype != q.dtype) fail(std::string("v has dtype ") + dtypeName(v.dtype) + " but q has " + dtypeName(q.dtype));
  checkBasic("v", v, 4, vLayout);
  HeadSizes h{q.shape[0], q.shape[1], q.shape[2], q.shape[3], v.shape[2], v.shape[3]};
  if (v.shape[0] != h.B || v.shape[1] != h.T)
    fail("v has shape " + dims(v.shape) + " but q has shape " + dims(q.shape) + " (B and T must match)");
  if (h.H % h.Hqk != 0)
    fail("v has " + std::to_string(h.H) + " heads, not a multiple of the " + std::to_string(h.Hqk) + " q/k heads");
  return h;
}

void checkTensor(const std::string &name, const TensorView &t, DType want, const std::string &why,
                 const std::vector<int64_t> &shape, const char *layout) {
  if (t.dtype != want) fail(name + " has dtype " + dtypeName(t.dtype) + "; expected " + dtypeName(want) + why);
  checkBasic(name, t, shape.size(), layout);
  if (t.shape != shape) fail(name + " has shape " + dims(t.shape) + "; expected " + layout + " = " + dims(shape));
}

int64_t checkCuSeqlens(const TensorView *cu, const int64_t *host, int64_t B, int64_t T) {
  if (!cu) {
    if (host) fail("cu_seqlens_host is given but cu_seqlens is not");
    return B;
  }
  if (cu->dtype != DType::I32 && cu->dtype != DType::I64)
    fail(std::string("cu_seqlens has dtype ") + dtypeName(cu->dtype) + "; expected i32 or i64");
  checkBasic("cu_seqlens", *cu, 1, "[N + 1]");
  if (cu->shape[0] < 2) fail("cu_seqlens must have N + 1 >= 2 entries, got " + std::to_string(cu->shape[0]));
  if (B != 1) fail("cu_seqlens requires B = 1, got B = " + std::to_string(B));
  const int64_t N = cu->shape[0] - 1;
  if (host) {
    if (host[0] != 0) fail("cu_seqlens[0] must be 0, got " + std::to_string(host[0]));
    for (int64_t i = 1; i <= N; ++i)
      if (host[i] < host[i - 1])
        fail("cu_seqlens must be non-decreasing: cu_seqlens[" + std::to_string(i) + "] = " + std::to_string(host[i]) +
             " < cu_seqlens[" + std::to_string(i - 1) + "] = " + std::to_string(host[i - 1]));
    if (host[N] != T)
      fail("cu_seqlens must end at T = " + std::to_string(T) + ", got cu_seqlens[" + std::to_string(N) + "] = " +
           std::to_string(host[N]));
  }
  return N;
}

}  // namespace qla::op
