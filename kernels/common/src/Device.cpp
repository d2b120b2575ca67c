#include "qla/op/Device.h"

#include <dlfcn.h>

#include <map>
#include <mutex>
#include <string>
#include <type_traits>

#include "qla/op/Error.h"
#include "qla/runtime/Driver.h"
#include "qla/runtime/Sim.h"

namespace qla::op {
namespace {

// The driver functions this file calls. Loaded once; never throws.
struct PtrApi {
  bool ok = false;
  CUresult (*cuPointerGetAttributes)(unsigned, CUpointer_attribute *, void **, CUdeviceptr) = nullptr;
  CUresult (*cuCtxGetCurrent)(CUcontext *) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxGetDevice)(CUdevice *) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice *, int) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char **) = nullptr;
};

const PtrApi &ptrApi() {
  static const PtrApi api = [] {
    PtrApi a;
    void *lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return a;
    auto get = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib, name));
      return fn != nullptr;
    };
    a.ok = get(a.cuPointerGetAttributes, "cuPointerGetAttributes") && get(a.cuCtxGetCurrent, "cuCtxGetCurrent") &&
           get(a.cuCtxSetCurrent, "cuCtxSetCurrent") && get(a.cuCtxGetDevice, "cuCtxGetDevice") &&
           get(a.cuDeviceGet, "cuDeviceGet") && get(a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
           get(a.cuGetErrorName, "cuGetErrorName");
    return a;
  }();
  return api;
}

std::string cuErr(CUresult r) {
  const char *n = nullptr;
  if (ptrApi().cuGetErrorName) ptrApi().cuGetErrorName(r, &n);
  return n ? n : "CUDA error " + std::to_string(int(r));
}

struct PtrInfo {
  int device = -1;
  uintptr_t rangeStart = 0;
  size_t rangeSize = 0;
};

PtrInfo devicePointer(const std::string &name, const void *ptr) {
  const PtrApi &a = ptrApi();
  const CUdeviceptr dp = CUdeviceptr(reinterpret_cast<uintptr_t>(ptr));
  unsigned memType = 0;
  int ordinal = -1;
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  void *data[] = {&memType, &ordinal};
  // Not an error for a pointer CUDA does not know: the memory type stays 0.
  CUresult r = a.cuPointerGetAttributes(2, attrs, data, dp);
  if (r != CUDA_SUCCESS || memType == 0)
    fail(name + " is not a CUDA device pointer (" + ptrText(ptr) + ")");
  if (memType == CU_MEMORYTYPE_HOST)
    fail(name + " is not a CUDA device pointer (" + ptrText(ptr) + " is pinned host memory)");
  PtrInfo info;
  info.device = ordinal;
  // The allocation's extent, where the driver reports one (best effort).
  CUdeviceptr start = 0;
  size_t size = 0;
  CUpointer_attribute rattrs[] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  void *rdata[] = {&start, &size};
  if (a.cuPointerGetAttributes(2, rattrs, rdata, dp) == CUDA_SUCCESS) {
    info.rangeStart = uintptr_t(start);
    info.rangeSize = size;
  }
  return info;
}

// A tensor must lie inside the allocation its pointer is in.
void checkInAllocation(const std::string &name, const PtrInfo &info, uintptr_t lo, uintptr_t hi,
                       const std::string &what) {
  if (!info.rangeStart || !info.rangeSize) return;  // not reported (e.g. managed memory)
  uintptr_t end = info.rangeStart + info.rangeSize;
  if (lo < info.rangeStart || hi > end)
    fail(name + " does not fit in its allocation: " + what + " needs " + std::to_string(hi - lo) +
         " bytes from " + ptrText(reinterpret_cast<void *>(lo)) + " but the allocation has " +
         std::to_string(lo < end ? end - lo : 0) + " bytes left");
}

}  // namespace

CUcontext checkDevice(const std::vector<NamedTensor> &tensors, void *workspace, size_t workspaceBytes) {
  // On the CPU simulator (QLA_SIM) tensors are host memory and there is no context.
  if (rt::simEnabled()) return nullptr;
  std::string why;
  if (!rt::gpuAvailable(&why)) fail(why);
  const PtrApi &a = ptrApi();
  if (!a.ok) fail("the CUDA driver (libcuda.so.1) lacks the pointer query functions");
  int device = -1;
  std::string first;  // the first argument whose device is known
  auto one = [&](const std::string &name, const void *ptr, uintptr_t lo, uintptr_t hi, const std::string &what) {
    PtrInfo info = devicePointer(name, ptr);
    if (info.device >= 0) {
      if (device < 0) {
        device = info.device;
        first = name;
      } else if (info.device != device) {
        fail(name + " is on CUDA device " + std::to_string(info.device) + " but " + first + " is on device " +
             std::to_string(device));
      }
    }
    checkInAllocation(name, info, lo, hi, what);
  };
  for (const NamedTensor &n : tensors) {
    auto [lo, hi] = byteSpan(n.t);
    one(n.name, n.t.data, lo, hi, "shape " + dims(n.t.shape) + ", strides " + dims(stridesOf(n.t)));
  }
  uintptr_t w = reinterpret_cast<uintptr_t>(workspace);
  one("workspace", workspace, w, w + workspaceBytes, "the operator");

  CUcontext ctx = nullptr;
  CUresult r = a.cuCtxGetCurrent(&ctx);
  if (r != CUDA_SUCCESS) fail("cuCtxGetCurrent failed: " + cuErr(r));
  if (device < 0) device = 0;
  CUdevice want;
  r = a.cuDeviceGet(&want, device);
  if (r != CUDA_SUCCESS) fail("cuDeviceGet(" + std::to_string(device) + ") failed: " + cuErr(r));
  if (ctx) {
    CUdevice cur;
    r = a.cuCtxGetDevice(&cur);
    if (r != CUDA_SUCCESS) fail("cuCtxGetDevice failed: " + cuErr(r));
    if (cur != want)
      fail("the tensors are on CUDA device " + std::to_string(device) +
           " but the current CUDA context is on device " + std::to_string(int(cur)) +
           " (make their device current first)");
    return ctx;
  }
  // No current context: use the tensors' device's primary context (what the
  // CUDA runtime and PyTorch use), retained for the life of the process.
  static std::mutex mu;
  static std::map<int, CUcontext> primary;
  std::lock_guard<std::mutex> lock(mu);
  CUcontext &pc = primary[device];
  if (!pc) {
    r = a.cuDevicePrimaryCtxRetain(&pc, want);
    if (r != CUDA_SUCCESS) {
      pc = nullptr;
      fail("cuDevicePrimaryCtxRetain failed: " + cuErr(r));
    }
  }
  r = a.cuCtxSetCurrent(pc);
  if (r != CUDA_SUCCESS) fail("cuCtxSetCurrent failed: " + cuErr(r));
  return pc;
}

CUcontext currentOrPrimaryContext() {
  if (rt::simEnabled()) return nullptr;
  const PtrApi &a = ptrApi();
  if (!a.ok) fail("the CUDA driver (libcuda.so.1) lacks the context functions");
  CUcontext ctx = nullptr;
  if (a.cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx) return ctx;
  CUdevice dev;
  CUresult r = a.cuDeviceGet(&dev, 0);
  if (r == CUDA_SUCCESS) r = a.cuDevicePrimaryCtxRetain(&ctx, dev);
  if (r == CUDA_SUCCESS) r = a.cuCtxSetCurrent(ctx);
  if (r != CUDA_SUCCESS) fail("cannot make device 0's primary context current: " + cuErr(r));
  return ctx;
}

}  // namespace qla::op
