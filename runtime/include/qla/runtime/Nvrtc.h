// NVRTC: CUDA C++ (emitted by the compiler, including qla/device headers) to
// PTX and cubin. Works without a GPU.
#pragma once

#include <string>
#include <vector>

namespace qla::rt {

struct NvrtcResult {
  bool ok = false;
  std::string ptx;
  std::string cubin;      // bytes
  std::string log;        // NVRTC's log (warnings too)
  std::string error;      // on failure: "NVRTC failed to compile kernel '<name>': <log>"
};

struct NvrtcOptions {
  std::string arch = "sm_90a";          // -arch=<arch>; "sm_90a" → compute_90a PTX + sm_90a cubin
  std::vector<std::string> extra;       // extra NVRTC options (e.g. "-lineinfo")
  bool wantCubin = true;
  // Add -I<cuda>/include and -I<cuda>/include/cccl (from $CUDA_HOME, $CUDA_PATH
  // or the build's toolkit, where they exist) so that sources may include
  // <cuda_bf16.h> or <cuda/...>; NVRTC has no include path of its own. The
  // qla/device headers never need them (a test compiles them with this off).
  bool toolkitIncludes = true;
};

// The NVRTC option list actually passed (part of the cache key).
std::vector<std::string> nvrtcOptionList(const NvrtcOptions &opts);

// Compiles `source` (program name `kernelName` + ".cu"). The qla/device headers
// are provided to NVRTC from copies embedded in the library, so no include path
// is needed at run time.
NvrtcResult compileCuda(const std::string &source, const std::string &kernelName,
                        const NvrtcOptions &opts);

// "13.0" etc.
std::string nvrtcVersion();

// The embedded device headers: (include name, contents), e.g. ("qla/device/wgmma.cuh", "...").
const std::vector<std::pair<std::string, std::string>> &embeddedDeviceHeaders();

}  // namespace qla::rt
