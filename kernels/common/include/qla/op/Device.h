// Device-side checks of an operator's arguments through the CUDA driver
// (loaded with dlopen; the runtime loads it for compiling and launching, this
// only asks it about pointers and contexts), and the context to launch in.
// Throws op::Error.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <vector>

#include "qla/op/Tensor.h"

namespace qla::op {

// Every tensor, and the workspace ([workspace, workspace + workspaceBytes)),
// is CUDA device memory (not host, not pinned host) of one device and lies
// inside its allocation (where the driver reports one). Makes that device's
// primary context current if no context is, and returns the current context;
// a current context of another device is an error. Without a GPU it throws
// the runtime's reason ("no CUDA driver ...").
CUcontext checkDevice(const std::vector<NamedTensor> &tensors, void *workspace, size_t workspaceBytes);

// The current context, or device 0's primary context made current (warmup).
CUcontext currentOrPrimaryContext();

}  // namespace qla::op
