// Shared helpers of the simple-GLA operator tests: valid parameters over
// fake, far-apart device addresses (the host-side checks never dereference them).
#pragma once

#include <cstdint>

#include "qla/gla.h"

namespace glatest {

using qla::DType;
using qla::gla::ForwardParams;
using qla::gla::TensorRef;

// Argument i lives at (i + 1) TiB: 4 KiB aligned, never overlapping.
inline void *fakePtr(int i) { return reinterpret_cast<void *>(uintptr_t(i + 1) << 40); }

struct Shape {
  int64_t B = 2, T = 100, Hqk = 4, H = 4, K = 128, V = 128;
  DType dt = DType::BF16;
};

inline ForwardParams validParams(const Shape &s = {}) {
  ForwardParams p;
  p.q = {fakePtr(0), s.dt, {s.B, s.T, s.Hqk, s.K}, {}};
  p.k = {fakePtr(1), s.dt, {s.B, s.T, s.Hqk, s.K}, {}};
  p.v = {fakePtr(2), s.dt, {s.B, s.T, s.H, s.V}, {}};
  p.g = {fakePtr(3), DType::F32, {s.B, s.T, s.H}, {}};
  p.o = {fakePtr(5), s.dt, {s.B, s.T, s.H, s.V}, {}};
  return p;
}

inline TensorRef stateRef(int slot, int64_t N, const Shape &s = {}) {
  return {fakePtr(slot), DType::F32, {N, s.H, s.K, s.V}, {}};
}

inline ForwardParams varlenParams(const std::vector<int64_t> &offsets, DType cuDtype = DType::I32, Shape s = {}) {
  s.B = 1;
  s.T = offsets.back();
  ForwardParams p = validParams(s);
  p.cu_seqlens = TensorRef{fakePtr(8), cuDtype, {int64_t(offsets.size())}, {}};
  return p;
}

}  // namespace glatest
