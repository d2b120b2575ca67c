// Launch plans: the tensor arguments an operator hands to its kernels, the
// checks of a compiled kernel against what the operator launches (argument
// list, TMA and raw-pointer layouts, grid), all before anything launches, and
// running the launches. Throws op::Error.
#pragma once

#include <cuda.h>

#include <array>
#include <map>
#include <string>
#include <vector>

#include "qla/op/KernelRegistry.h"
#include "qla/op/Tensor.h"
#include "qla/runtime/Driver.h"
#include "qla/runtime/KernelInfo.h"

namespace qla::op {

// Strides handed to the kernels: the tensor's own, except that a dim of extent
// 1 (whose stride is never used) gets a 16-byte multiple, so that TMA
// descriptors accept views such as q[None] whatever stride they carry there.
std::vector<int64_t> launchStrides(const TensorView &t);
// The caller's tensor as a kernel argument (launchStrides).
rt::TensorArg launchArg(const TensorView &t);
// A contiguous tensor (a workspace region, the dummy).
rt::TensorArg contiguousArg(void *data, std::vector<int64_t> shape);

// The argument list an operator launches a kernel with.
struct Signature {
  std::vector<std::string> tensors;  // the kernel's tensor names, in order
  std::vector<DType> dtypes;         // one per tensor
  size_t scalars = 0;
};
// The compiled kernel has exactly this signature; otherwise an internal error
// naming the kernel file, the mismatch and `contractDoc` (where the operator's
// side of the contract is written, "kernels/x/KERNELS.md").
void checkSignature(const KernelSpec &spec, const KernelInfo &info, const Signature &want,
                    const std::string &contractDoc);

// Kernel tensor name -> the name the operator's caller knows ("Kt" -> "k");
// names not in the map are used as they are.
using ArgNames = std::map<std::string, std::string>;

// What the runtime would refuse at launch (TMA: stride-1 last dim, 16-byte
// rows and pointer; pointer-passed tensors without stride parameters: dense),
// checked before anything launches, with user-facing names.
void checkAgainstKernel(const KernelSpec &spec, const KernelInfo &info, const rt::LaunchArgs &args,
                        const ArgNames &names);

// rt::LoadedKernel::launchGridFor (no GPU needed), its rt::Error as op::Error.
std::array<int64_t, 3> launchGrid(const KernelInfo &info, const rt::LaunchArgs &args);

// One launch: a kernel of `registry`'s and its arguments (both must outlive the call).
struct LaunchStep {
  KernelSlot *kernel;
  const rt::LaunchArgs *args;
};
// Loads every step's module into `ctx` before launching any (so that a load
// error leaves the outputs untouched too), then launches them in order on
// their streams. A step after the first whose kernel was declared
// follows(...) is launched programmatically (it may start while the step
// before it finishes) when both are on one stream; QLA_PDL=0 turns that off.
void launchAll(KernelRegistry &registry, CUcontext ctx, const std::vector<LaunchStep> &steps);

}  // namespace qla::op
