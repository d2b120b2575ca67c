// qla/device/smem_ptr.cuh — shared-memory pointers held as 32-bit shared-window
// addresses.
//
// NVRTC's NVVM keeps shared-memory pointers 64 bits wide (nvcc's does not: it
// uses 32-bit shared addresses), so a kernel compiled at run time spends two
// registers on every tile pointer and 64-bit arithmetic on every address:
// in one 512-thread warp-specialized kernel, ptxas spilled 1024 bytes a
// thread that way against 692 with nvcc's 32-bit pointers (CUDA 13.0,
// 2026-12-05). A
// sptr<T> is a u32 shared address; element reads and writes go through
// ld.shared / st.shared with that address, and it converts to a generic T*
// for the primitives that take one (TMA, wgmma descriptors, ldmatrix), which
// take the shared address back at once.
#pragma once
#include "qla/device/types.cuh"

namespace qla {
namespace dev {

template <int BYTES> struct smem_bits;
template <> struct smem_bits<2> {
  __device__ static __forceinline__ unsigned short ld(u32 a) {
    unsigned short v;
    asm volatile("ld.shared.b16 %0, [%1];" : "=h"(v) : "r"(a) : "memory");
    return v;
  }
  __device__ static __forceinline__ void st(u32 a, unsigned short v) {
    asm volatile("st.shared.b16 [%0], %1;" ::"r"(a), "h"(v) : "memory");
  }
};
template <> struct smem_bits<4> {
  __device__ static __forceinline__ u32 ld(u32 a) {
    u32 v;
    asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(a) : "memory");
    return v;
  }
  __device__ static __forceinline__ void st(u32 a, u32 v) {
    asm volatile("st.shared.b32 [%0], %1;" ::"r"(a), "r"(v) : "memory");
  }
};
template <> struct smem_bits<8> {
  __device__ static __forceinline__ uint2 ld(u32 a) {
    uint2 v;
    asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(a) : "memory");
    return v;
  }
  __device__ static __forceinline__ void st(u32 a, uint2 v) {
    asm volatile("st.shared.v2.b32 [%0], {%1, %2};" ::"r"(a), "r"(v.x), "r"(v.y) : "memory");
  }
};
template <> struct smem_bits<16> {
  __device__ static __forceinline__ uint4 ld(u32 a) {
    uint4 v;
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(a) : "memory");
    return v;
  }
  __device__ static __forceinline__ void st(u32 a, uint4 v) {
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
  }
};

// Bit-for-bit load and store of a V (2, 4, 8 or 16 bytes) at shared address a.
template <class To, class From> __device__ __forceinline__ To smem_bit_cast(const From &f) {
  static_assert(sizeof(To) == sizeof(From), "smem_load / smem_store: 2, 4, 8 or 16 bytes");
  union {
    From f;
    To t;
  } u{f};
  return u.t;
}
template <class V> __device__ __forceinline__ V smem_load(u32 a) {
  return smem_bit_cast<V>(smem_bits<sizeof(V)>::ld(a));
}
template <class V> __device__ __forceinline__ void smem_store(u32 a, const V &v) {
  using B = decltype(smem_bits<sizeof(V)>::ld(0));
  smem_bits<sizeof(V)>::st(a, smem_bit_cast<B>(v));
}

// One element of a shared tile: reads as a T, assigns from a T.
template <class T> struct sref {
  u32 a;
  __device__ __forceinline__ operator T() const { return smem_load<T>(a); }
  __device__ __forceinline__ const sref &operator=(const T &v) const {
    smem_store<T>(a, v);
    return *this;
  }
  __device__ __forceinline__ const sref &operator=(const sref &o) const { return *this = T(o); }
  __device__ __forceinline__ const sref &operator+=(const T &v) const { return *this = T(*this) + v; }
  __device__ __forceinline__ const sref &operator-=(const T &v) const { return *this = T(*this) - v; }
  __device__ __forceinline__ const sref &operator*=(const T &v) const { return *this = T(*this) * v; }
};

template <class T> struct sptr {
  u32 a;  // the shared-window byte address
  __device__ __forceinline__ explicit sptr(u32 addr) : a(addr) {}
  __device__ __forceinline__ sptr operator+(int i) const { return sptr(a + u32(i) * u32(sizeof(T))); }
  __device__ __forceinline__ sref<T> operator[](int i) const { return sref<T>{a + u32(i) * u32(sizeof(T))}; }
  // A V (e.g. u32 for two bf16, uint4 for eight) at element i.
  template <class V> __device__ __forceinline__ V load(int i) const {
    return smem_load<V>(a + u32(i) * u32(sizeof(T)));
  }
  template <class V> __device__ __forceinline__ void store(int i, const V &v) const {
    smem_store<V>(a + u32(i) * u32(sizeof(T)), v);
  }
  // The generic pointer, for the primitives that take one.
  __device__ __forceinline__ operator T *() const {
    return static_cast<T *>(__cvta_shared_to_generic(static_cast<size_t>(a)));
  }
};

// A V's bits at element i of a shared tile, through a sptr or a plain
// pointer (the emitter's vector reads and writes of tiles and scratch).
template <class V, class T> __device__ __forceinline__ V smem_get(sptr<T> p, int i) { return p.template load<V>(i); }
template <class V, class T> __device__ __forceinline__ V smem_get(const T *p, int i) {
  return *reinterpret_cast<const V *>(p + i);
}
template <class V, class T> __device__ __forceinline__ void smem_put(sptr<T> p, int i, const V &v) {
  p.template store<V>(i, v);
}
template <class V, class T> __device__ __forceinline__ void smem_put(T *p, int i, const V &v) {
  *reinterpret_cast<V *>(p + i) = v;
}

}  // namespace dev
}  // namespace qla
