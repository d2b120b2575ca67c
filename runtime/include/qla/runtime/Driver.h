// The CUDA driver, loaded with dlopen("libcuda.so.1") on first use so that our
// binaries start on machines without a GPU driver; every call is checked and
// failures become qla::rt::Error with the driver's error name and the call.
#pragma once

#include <cuda.h>

#include <array>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "qla/runtime/KernelInfo.h"

namespace qla::rt {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// True when the driver loads and at least one device is present. `why` says
// otherwise ("no CUDA driver (libcuda.so.1 not found)", "no CUDA device").
bool gpuAvailable(std::string *why = nullptr);

// "sm_90a" for a 9.0 device (arch-specific target), "sm_XY" otherwise; throws without a GPU.
std::string deviceArch(int device = 0);

// The host-side view of one tensor argument at launch time.
struct TensorArg {
  void *data = nullptr;                 // device pointer
  std::vector<int64_t> shape;           // outermost first
  std::vector<int64_t> strides;         // in elements; empty = contiguous row-major
};

struct LaunchArgs {
  std::vector<TensorArg> tensors;       // in KernelInfo::tensors order
  std::vector<double> scalars;          // in KernelInfo::scalars order (converted to the arg's dtype)
  CUstream stream = nullptr;
};

// A loaded module + function. Encodes TMA descriptors on the host (cached
// while pointer, shape and strides are unchanged), sets the dynamic smem
// attribute, launches (with cluster dims where asked) on the caller's stream.
class LoadedKernel {
 public:
  LoadedKernel(const std::string &cubin, const KernelInfo &info);  // throws Error
  // The kernel on QLA's CPU simulator (qla/runtime/Sim.h), from its emitted
  // CUDA: launches run on the calling thread, tensors are host memory.
  struct Simulated {};
  LoadedKernel(Simulated, const std::string &cuda, const KernelInfo &info);  // throws Error
  bool simulated() const;
  ~LoadedKernel();
  LoadedKernel(const LoadedKernel &) = delete;
  LoadedKernel &operator=(const LoadedKernel &) = delete;

  const KernelInfo &info() const { return info_; }

  // Checks the tensors against the signature (count, rank, one value per dim
  // symbol across tensors, 16-byte aligned pointers/strides where TMA is used),
  // derives dim values, evaluates the grid, launches. Throws Error with a clear
  // message naming the kernel and the argument on any mismatch.
  //
  // `programmatic`: launch with programmatic stream serialization, so that
  // the kernel may start while the kernel ahead of it on the stream finishes
  // (programmatic dependent launch). Only for kernels declared follows(...)
  // (KernelInfo::follows), which wait for that kernel themselves; others throw.
  void launch(const LaunchArgs &args, bool programmatic = false);

  // Dim symbol values derived from the tensors (for tests and benchmarks).
  std::vector<int64_t> bindDims(const LaunchArgs &args) const;

  // The checks behind bindDims/launch that need no GPU, usable without a
  // loaded module. bindDimsFor: values in info.dimSymbols order (tensor count,
  // ranks, stride counts, one value per symbol, literal dims). launchGridFor:
  // also checks scalars and the strides of pointer-passed tensors, then
  // evaluates the grid; a 0 in the result means there is nothing to launch.
  static std::vector<int64_t> bindDimsFor(const KernelInfo &info, const LaunchArgs &args);
  static std::array<int64_t, 3> launchGridFor(const KernelInfo &info, const LaunchArgs &args);

 private:
  struct Impl;
  KernelInfo info_;
  std::unique_ptr<Impl> impl_;
};

// Writes the traces of every loaded kernel compiled with tracing
// (CompileOptions::trace) to `path` after synchronizing the context, and
// clears their buffers. Returns how many kernels it wrote (0: none is
// traced, and no file is written). Throws Error on a driver or file error.
// The format: per kernel "QLATRACE1 <symbol> <site text bytes> <words>\n",
// the site text, the buffer (qla/device/trace.cuh); python/qla/trace.py
// (python -m qla.trace) reads it.
int dumpTraces(const std::string &path);

// Element strides of `t` (its own, or contiguous row-major when empty).
std::vector<int64_t> effectiveStrides(const TensorArg &t);

// Encodes a tiled tensor map (cuTensorMapEncodeTiled) for a tensor with the given
// dtype, shape (outermost first), strides (elements, outermost first; innermost
// must be 1), box (outermost first) and swizzle. Out-of-range elements read as
// zero. Throws Error naming `what` on invalid input; the arguments are checked
// before the driver is touched, so those errors need no GPU.
CUtensorMap encodeTensorMap(const std::string &what, DType dtype, void *data,
                            const std::vector<int64_t> &shape,
                            const std::vector<int64_t> &strides,
                            const std::vector<uint32_t> &box, Swizzle swizzle);

}  // namespace qla::rt
