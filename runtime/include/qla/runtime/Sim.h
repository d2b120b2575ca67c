// QLA's CPU simulator of Hopper kernels, as a backend of the runtime.
//
// With QLA_SIM=1 in the environment every kernel QLA launches runs on the
// CPU instead of a GPU: the JIT skips NVRTC, LoadedKernel compiles the
// kernel's emitted CUDA with the host C++ compiler against
// qla/sim/device.h (the device primitives simulated: one fiber per CUDA
// thread, asynchronous TMA and wgmma, mbarriers, named barriers, warp
// collectives) into a shared object, and a launch runs its grid, CTA after
// CTA, on the calling thread before it returns. Tensors are host memory;
// streams are ignored. Deadlocks, traps, shared memory past the kernel's
// request and misused primitives become rt::Error naming the block and
// thread. docs/internals.md, "Simulator", says what it models and what not.
//
// Environment: QLA_SIM_CXX (the host compiler; default the one QLA was
// built with), QLA_SIM_CACHE_DIR (compiled kernels; default
// $QLA_CACHE_DIR/sim, else ~/.cache/qla/sim), QLA_SIM_CXXFLAGS (extra flags,
// e.g. -fsanitize=address).
#pragma once

#include <cuda.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "qla/runtime/KernelInfo.h"

namespace qla::rt {

// QLA_SIM: 1/on/true/yes → true (read on every call).
bool simEnabled();

// A kernel compiled for the simulator (a loaded shared object).
class SimModule {
 public:
  // Compiles `cuda` (an emitted kernel, entry `symbol`) or takes it from the
  // simulator's cache. Throws Error with the compiler's output on failure.
  SimModule(const std::string &cuda, const std::string &symbol);
  ~SimModule();
  SimModule(const SimModule &) = delete;
  SimModule &operator=(const SimModule &) = delete;
  // Runs the grid (argv as for cuLaunchKernel); throws Error on any failure.
  void run(void **argv, const std::array<int64_t, 3> &grid, int threads, int smemBytes,
           const std::array<int, 3> &cluster) const;
  const std::string &path() const { return path_; }

 private:
  std::string symbol_, path_;
  void *lib_ = nullptr;
  void *entry_ = nullptr;
};

// The simulator's tensor map (what qla/sim/device.h reads) for a tensor of
// dtype at data with shape, element strides, box (outermost first) and
// swizzle, written over the driver's 128-byte CUtensorMap.
CUtensorMap simTensorMap(DType dtype, void *data, const std::vector<int64_t> &shape,
                         const std::vector<int64_t> &strides, const std::vector<uint32_t> &box, Swizzle swizzle);

}  // namespace qla::rt
