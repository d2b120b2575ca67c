// Shared helpers of the GDN operator tests: valid parameters over fake,
// far-apart device addresses (the host-side checks never dereference them).
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <string>

#include "qla/gdn.h"

namespace gdntest {

using qla::DType;
using qla::gdn::BackwardParams;
using qla::gdn::ForwardParams;
using qla::gdn::TensorRef;

// Every operator error starts with this.
inline const std::string P = "chunk_gated_delta_rule: ";

// The message f throws as qla::gdn::Error, "<not a qla::gdn::Error> ..." for
// any other exception, "<no error>" when it returns.
inline std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const qla::gdn::Error &e) {
    return e.what();
  } catch (const std::exception &e) {
    return std::string("<not a qla::gdn::Error> ") + e.what();
  }
  return "<no error>";
}

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

// The backward of the forward call `f`: its inputs (q, k, v, g, beta,
// initial_state, cu_seqlens and the scalars) and valid gradients at fresh
// slots: do 9, dq 11, dk 12, dv 13, dg 14 (g's dtype), dbeta 15 (beta's
// dtype). dht (slot 10) and dh0 (slot 16) are absent; see dhtRef, dh0Ref.
inline BackwardParams backwardOf(const ForwardParams &f) {
  BackwardParams p;
  p.q = f.q;
  p.k = f.k;
  p.v = f.v;
  p.g = f.g;
  p.beta = f.beta;
  p.initial_state = f.initial_state;
  p.cu_seqlens = f.cu_seqlens;
  p.scale = f.scale;
  p.use_qk_l2norm = f.use_qk_l2norm;
  p.cu_seqlens_host = f.cu_seqlens_host;
  p.stream = f.stream;
  p.segment_chunks = f.segment_chunks;
  p.dout = {fakePtr(9), f.q.dtype, f.o.shape, {}};
  p.dq = {fakePtr(11), f.q.dtype, f.q.shape, {}};
  p.dk = {fakePtr(12), f.q.dtype, f.q.shape, {}};
  p.dv = {fakePtr(13), f.q.dtype, f.v.shape, {}};
  p.dg = {fakePtr(14), f.g.dtype, f.g.shape, {}};
  p.dbeta = {fakePtr(15), f.beta.dtype, f.beta.shape, {}};
  return p;
}

inline BackwardParams validBackwardParams(const Shape &s = {}) { return backwardOf(validParams(s)); }

// Varlen: B = 1, T = the last offset.
inline BackwardParams varlenBackwardParams(const std::vector<int64_t> &offsets, DType cuDtype = DType::I32,
                                           Shape s = {}) {
  return backwardOf(varlenParams(offsets, cuDtype, s));
}

// The final state's gradient (an input) and the initial state's (an output).
inline TensorRef dhtRef(int64_t N, const Shape &s = {}) { return stateRef(10, N, s); }
inline TensorRef dh0Ref(int64_t N, const Shape &s = {}) { return stateRef(16, N, s); }

}  // namespace gdntest
