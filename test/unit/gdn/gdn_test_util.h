// Shared helpers of the GDN operator tests: valid parameters over fake,
// far-apart device addresses (the host-side checks never dereference them).
#pragma once

#include <cstdint>

#include "qla/gdn.h"

namespace gdntest {

using qla::DType;
using qla::gdn::ForwardParams;
using qla::gdn::TensorRef;

// Argument i lives at (i + 1) TiB: 4 KiB aligned, never overlapping.
inline void *fakePtr(int i) { return reinterpret_cast<void *>(uintptr_t(i + 1) << 40); }
inline void *fakeWorkspace() { return fakePtr(20); }

struct Shape {
  int64_t B = 2, T = 100, Hqk = 4, Hv = 8, K = 128, V = 128;
  DType dt = DType::BF16;
};

inline ForwardParams validParams(const Shape &s = {}) {
  ForwardParams p;
  p.q = {fakePtr(0), s.dt, {s.B, s.T, s.Hqk, s.K}, {}};
  p.k = {fakePtr(1), s.dt, {s.B, s.T, s.Hqk, s.K}, {}};
  p.v = {fakePtr(2), s.dt, {s.B, s.T, s.Hv, s.V}, {}};
  p.g = {fakePtr(3), DType::F32, {s.B, s.T, s.Hv}, {}};
  p.beta = {fakePtr(4), DType::F32, {s.B, s.T, s.Hv}, {}};
  p.o = {fakePtr(5), s.dt, {s.B, s.T, s.Hv, s.V}, {}};
  return p;
}

inline TensorRef stateRef(int slot, int64_t N, const Shape &s = {}) {
  return {fakePtr(slot), DType::F32, {N, s.Hv, s.K, s.V}, {}};
}

// Varlen: B = 1, T = the last offset.
inline ForwardParams varlenParams(const std::vector<int64_t> &offsets, DType cuDtype = DType::I32, Shape s = {}) {
  s.B = 1;
  s.T = offsets.back();
  ForwardParams p = validParams(s);
  p.cu_seqlens = TensorRef{fakePtr(8), cuDtype, {int64_t(offsets.size())}, {}};
  return p;
}

}  // namespace gdntest
