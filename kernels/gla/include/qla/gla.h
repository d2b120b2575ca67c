// Chunked gated linear attention with a per-head scalar decay (RetNet /
// simple GLA): the host side of FLA's `chunk_simple_gla` forward over one
// QLA kernel (kernels/gla/gla_fwd.qla; docs/tutorial.md builds it step by step).
//
//   S_t = e^{g_t} S_{t-1} + k_t v_tᵀ,   o_t = scale · S_tᵀ q_t
//
//   qla::gla::ForwardParams p;
//   p.q = {dq, DType::BF16, {B, T, H, K}};  ...  p.o = {dout, DType::BF16, {B, T, H, V}};
//   qla::gla::forward(p);   // throws qla::gla::Error; async on p.stream
//
// forward() checks every argument before it launches anything (on an error
// the outputs are untouched), then launches the kernel on p.stream. It needs
// no workspace, never synchronizes and never allocates, so it may be captured
// in a CUDA graph once the kernel is compiled and loaded (warmup()).
// The kernel is embedded in the library as .qla source and JIT-compiled on
// first use per specialization (dtype, K, V, varlen and its offset dtype,
// initial/final state). No MLIR and no PyTorch here.
#pragma once

#include <cuda.h>

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "qla/runtime/Driver.h"
#include "qla/Tensor.h"
#include "qla/runtime/KernelInfo.h"

namespace qla::gla {

// Every error of the operator; messages start with "chunk_simple_gla: " and
// name the argument.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A device tensor: pointer, dtype, shape (outermost first), strides in
// elements (empty: contiguous row-major).
using TensorRef = qla::TensorRef;  // qla/Tensor.h: one tensor reference for every family

struct ForwardParams {
  TensorRef q, k;                          // [B, T, Hqk, K], bf16 or f16
  TensorRef v;                             // [B, T, H, V], the dtype of q; H % Hqk == 0
  TensorRef g;                             // [B, T, H] f32: natural-log decay per token and head
  TensorRef o;                             // out [B, T, H, V], the dtype of q
  std::optional<TensorRef> initial_state;  // [N, H, K, V] f32
  std::optional<TensorRef> final_state;    // out [N, H, K, V] f32
  std::optional<TensorRef> cu_seqlens;     // [N + 1] int32/int64 offsets; requires B = 1
  double scale = std::numeric_limits<double>::quiet_NaN();  // NaN: K^-0.5
  // Optional host copy of cu_seqlens (N + 1 values), used only to validate.
  const int64_t *cu_seqlens_host = nullptr;
  CUstream stream = nullptr;
};

// Host-side checks of every dtype, shape, stride, alignment, overlap and of
// the host copy of cu_seqlens; needs no GPU. Throws Error.
void validateForward(const ForwardParams &p);

// Validates, then launches the kernel on p.stream. Without a CUDA driver it
// throws "chunk_simple_gla: no CUDA driver ...".
void forward(const ForwardParams &p);

// What selects the compiled kernel of one call.
struct ForwardConfig {
  DType dtype = DType::BF16;   // q, k, v, o
  int K = 128, V = 128;        // 64 or 128 each
  bool varlen = false;
  DType cuDtype = DType::I32;  // cu_seqlens dtype (i32 or i64); i32 when !varlen
  bool initialState = false;
  bool finalState = false;

  bool operator==(const ForwardConfig &o) const;
  std::string str() const;  // "dtype=bf16 K=128 V=128 varlen=0 initial_state=0 final_state=0"
};

ForwardConfig forwardConfig(const ForwardParams &p);
// Every configuration (2 dtypes x 2 K x 2 V x 3 varlen/offset dtypes x 2 initial x 2 final = 96).
std::vector<ForwardConfig> allForwardConfigs();

// One kernel compile: embedded file name and its specialization constants (-D).
struct KernelSpec {
  std::string file;                            // "gla_fwd.qla"
  std::map<std::string, std::string> defines;  // DT=bf16, DK=128, ...
  std::string str() const;                     // "gla_fwd.qla -D CT=i32 -D DK=128 ..."
};
KernelSpec forwardKernelSpec(const ForwardConfig &c);  // DT CT DK DV VARLEN HAS_H0 STORE_HT

const std::vector<std::pair<std::string, std::string>> &embeddedKernelSources();
const std::string *embeddedKernelSource(const std::string &file);

// Compiles (and with loadOnGpu and a GPU present, loads into the current
// context) the kernel of `c`. Throws Error naming the file and its constants.
void warmup(const ForwardConfig &c, bool loadOnGpu = true);

// What forward() would launch, checked against the compiled kernel's
// signature (dims, strides, TMA alignment, grid), without a GPU.
struct LaunchPlan {
  ForwardConfig config;
  KernelSpec spec;
  rt::LaunchArgs args;  // tensors in kernel order, scalars, stream
  KernelInfo info;
  std::array<int64_t, 3> grid{};
};
LaunchPlan planForward(const ForwardParams &p);

}  // namespace qla::gla
