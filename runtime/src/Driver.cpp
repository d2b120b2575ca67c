// CUDA driver access through dlopen("libcuda.so.1"), TMA descriptor encoding
// and kernel launch. Linking libcuda directly would make every QLA binary
// (compiler, tests) fail to start on a machine without a GPU driver.
#include "qla/runtime/Driver.h"
#include "qla/runtime/Log.h"
#include "qla/runtime/Sim.h"

#include <dlfcn.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <chrono>
#include <climits>
#include <cmath>
#include <mutex>
#include <type_traits>

namespace qla::rt {
namespace {

//===----------------------------------------------------------------------===//
// Driver entry points
//===----------------------------------------------------------------------===//

struct DriverApi {
  bool ok = false;        // library loaded, symbols resolved, cuInit succeeded
  std::string error;      // why not
  void *lib = nullptr;
#define QLA_CU_FN(name) decltype(&::name) name = nullptr;
  QLA_CU_FN(cuInit)
  QLA_CU_FN(cuDeviceGet)
  QLA_CU_FN(cuDeviceGetCount)
  QLA_CU_FN(cuDeviceGetAttribute)
  QLA_CU_FN(cuDevicePrimaryCtxRetain)
  QLA_CU_FN(cuCtxGetCurrent)
  QLA_CU_FN(cuCtxSetCurrent)
  QLA_CU_FN(cuModuleLoadData)
  QLA_CU_FN(cuModuleUnload)
  QLA_CU_FN(cuModuleGetFunction)
  QLA_CU_FN(cuFuncSetAttribute)
  QLA_CU_FN(cuLaunchKernel)
  QLA_CU_FN(cuLaunchKernelEx)
  QLA_CU_FN(cuTensorMapEncodeTiled)
  QLA_CU_FN(cuGetErrorName)
  QLA_CU_FN(cuGetErrorString)
  // For tracing only (dumpTraces): resolved as optional.
  QLA_CU_FN(cuModuleGetGlobal_v2)
  QLA_CU_FN(cuMemcpyDtoH_v2)
  QLA_CU_FN(cuMemsetD8_v2)
  QLA_CU_FN(cuCtxSynchronize)
#undef QLA_CU_FN
};

std::string errorText(const DriverApi &api, CUresult r) {
  const char *name = nullptr, *str = nullptr;
  if (api.cuGetErrorName) api.cuGetErrorName(r, &name);
  if (api.cuGetErrorString) api.cuGetErrorString(r, &str);
  std::string s = name ? name : "CUDA error " + std::to_string(int(r));
  if (str) s += std::string(" (") + str + ")";
  return s;
}

// Loaded once per process (thread-safe via the static initializer); never throws.
const DriverApi &driverApi() {
  static const DriverApi api = [] {
    DriverApi a;
    a.lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!a.lib) {
      const char *e = ::dlerror();
      a.error = std::string("no CUDA driver (libcuda.so.1 not found") + (e ? ": " + std::string(e) : "") + ")";
      return a;
    }
    // The plain names are the current ABI for every entry point we use
    // (none has a _v2 variant); cuda.h macros may only add _ptsz suffixes.
    bool missing = false;
    auto resolve = [&](auto &fn, const char *name, bool required) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(a.lib, name));
      if (!fn && required && !missing) {
        missing = true;
        a.error = std::string("CUDA driver too old: libcuda.so.1 has no ") + name;
      }
    };
#define QLA_RESOLVE(name, required) resolve(a.name, #name, required);
    QLA_RESOLVE(cuGetErrorName, true)
    QLA_RESOLVE(cuGetErrorString, true)
    QLA_RESOLVE(cuInit, true)
    QLA_RESOLVE(cuDeviceGet, true)
    QLA_RESOLVE(cuDeviceGetCount, true)
    QLA_RESOLVE(cuDeviceGetAttribute, true)
    QLA_RESOLVE(cuDevicePrimaryCtxRetain, true)
    QLA_RESOLVE(cuCtxGetCurrent, true)
    QLA_RESOLVE(cuCtxSetCurrent, true)
    QLA_RESOLVE(cuModuleLoadData, true)
    QLA_RESOLVE(cuModuleUnload, true)
    QLA_RESOLVE(cuModuleGetFunction, true)
    QLA_RESOLVE(cuFuncSetAttribute, true)
    QLA_RESOLVE(cuLaunchKernel, true)
    // CUDA 12+ only; checked where used, so older drivers still run plain kernels.
    QLA_RESOLVE(cuLaunchKernelEx, false)
    QLA_RESOLVE(cuTensorMapEncodeTiled, false)
    QLA_RESOLVE(cuModuleGetGlobal_v2, false)
    QLA_RESOLVE(cuMemcpyDtoH_v2, false)
    QLA_RESOLVE(cuMemsetD8_v2, false)
    QLA_RESOLVE(cuCtxSynchronize, false)
#undef QLA_RESOLVE
    if (missing) return a;
    CUresult r = a.cuInit(0);
    if (r != CUDA_SUCCESS) {
      a.error = "cuInit failed: " + errorText(a, r);
      return a;
    }
    a.ok = true;
    return a;
  }();
  return api;
}

const DriverApi &requireDriver() {
  const DriverApi &a = driverApi();
  if (!a.ok) throw Error(a.error);
  return a;
}

void check(CUresult r, const char *call, const std::string &context) {
  if (r == CUDA_SUCCESS) return;
  std::string msg = std::string(call) + " failed: " + errorText(driverApi(), r);
  if (!context.empty()) msg += " " + context;
  throw Error(msg);
}

// Makes a context current on this thread: the caller's (e.g. PyTorch's) if it
// has one, else device 0's primary context, which the CUDA runtime shares.
CUcontext ensureContext(const std::string &context) {
  const DriverApi &a = requireDriver();
  CUcontext cur = nullptr;
  check(a.cuCtxGetCurrent(&cur), "cuCtxGetCurrent", context);
  if (cur) return cur;
  static std::mutex mu;
  static CUcontext primary = nullptr;  // retained for the life of the process
  std::lock_guard<std::mutex> lock(mu);
  if (!primary) {
    CUdevice dev;
    check(a.cuDeviceGet(&dev, 0), "cuDeviceGet", context);
    check(a.cuDevicePrimaryCtxRetain(&primary, dev), "cuDevicePrimaryCtxRetain", context);
  }
  check(a.cuCtxSetCurrent(primary), "cuCtxSetCurrent", context);
  return primary;
}

std::string joinDims(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string dimList(const std::vector<std::string> &v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + v[i];
  return "(" + s + ")";
}

bool isIntLiteral(const std::string &s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

int64_t numElements(const TensorArg &t) {
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  return n;
}

// Per-parameter argument storage; the driver copies it at launch.
struct ParamSlot {
  CUtensorMap tmap;
  void *ptr = nullptr;
  int32_t i32 = 0;
  int64_t i64 = 0;
  float f32 = 0;
};

}  // namespace

//===----------------------------------------------------------------------===//
// Device queries
//===----------------------------------------------------------------------===//

bool gpuAvailable(std::string *why) {
  try {
    const DriverApi &a = driverApi();
    if (!a.ok) {
      if (why) *why = a.error;
      return false;
    }
    int count = 0;
    CUresult r = a.cuDeviceGetCount(&count);
    if (r != CUDA_SUCCESS) {
      if (why) *why = "cuDeviceGetCount failed: " + errorText(a, r);
      return false;
    }
    if (count < 1) {
      if (why) *why = "no CUDA device";
      return false;
    }
    if (why) why->clear();
    return true;
  } catch (const std::exception &e) {
    if (why) *why = e.what();
    return false;
  }
}

std::string deviceArch(int device) {
  const DriverApi &a = requireDriver();
  std::string ctx = "while querying device " + std::to_string(device);
  CUdevice dev;
  check(a.cuDeviceGet(&dev, device), "cuDeviceGet", ctx);
  int major = 0, minor = 0;
  check(a.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
        "cuDeviceGetAttribute", ctx);
  check(a.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
        "cuDeviceGetAttribute", ctx);
  // wgmma/setmaxnreg need the arch-specific sm_90a target on Hopper.
  if (major == 9 && minor == 0) return "sm_90a";
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

//===----------------------------------------------------------------------===//
// Tensor maps
//===----------------------------------------------------------------------===//

std::vector<int64_t> effectiveStrides(const TensorArg &t) {
  if (!t.strides.empty()) return t.strides;
  std::vector<int64_t> s(t.shape.size(), 1);
  for (size_t i = t.shape.size(); i-- > 1;) s[i - 1] = s[i] * std::max<int64_t>(t.shape[i], 1);
  return s;
}

CUtensorMap encodeTensorMap(const std::string &what, DType dtype, void *data,
                            const std::vector<int64_t> &shape,
                            const std::vector<int64_t> &stridesIn,
                            const std::vector<uint32_t> &box, Swizzle swizzle) {
  auto bad = [&](const std::string &msg) { return Error("tensor map for " + what + ": " + msg); };
  const size_t rank = shape.size();
  if (rank < 1 || rank > 5) throw bad("rank " + std::to_string(rank) + " is not in 1..5");
  std::vector<int64_t> strides = stridesIn;
  if (strides.empty()) strides = effectiveStrides(TensorArg{data, shape, {}});
  if (strides.size() != rank)
    throw bad("shape " + joinDims(shape) + " has rank " + std::to_string(rank) + " but strides " +
              joinDims(strides) + " have " + std::to_string(strides.size()) + " entries");
  if (box.size() != rank)
    throw bad("box has " + std::to_string(box.size()) + " extents for a rank " +
              std::to_string(rank) + " tensor");
  const int64_t elem = dtypeBytes(dtype);
  for (size_t i = 0; i < rank; ++i)
    if (shape[i] < 1 || shape[i] > (int64_t(1) << 32))
      throw bad("dim " + std::to_string(i) + " has extent " + std::to_string(shape[i]) +
                " (TMA needs 1..2^32)");
  if (strides[rank - 1] != 1)
    throw bad("the innermost stride is " + std::to_string(strides[rank - 1]) +
              ", TMA needs a contiguous innermost dim (stride 1)");
  if (data == nullptr) throw bad("null data pointer");
  if (reinterpret_cast<uintptr_t>(data) % 16 != 0)
    throw bad("data pointer is not 16-byte aligned (TMA needs 16)");
  for (size_t i = 0; i + 1 < rank; ++i) {
    if (strides[i] < 1 || strides[i] > ((int64_t(1) << 40) - 1) / elem)
      throw bad("stride " + std::to_string(strides[i]) + " of dim " + std::to_string(i) +
                " is out of range");
    if (strides[i] * elem % 16 != 0)
      throw bad("stride of dim " + std::to_string(i) + " is " + std::to_string(strides[i] * elem) +
                " bytes, TMA needs a multiple of 16 (strides " + joinDims(strides) + ", " +
                dtypeName(dtype) + ")");
  }
  for (size_t i = 0; i < rank; ++i)
    if (box[i] < 1 || box[i] > 256)
      throw bad("box extent " + std::to_string(box[i]) + " of dim " + std::to_string(i) +
                " is not in 1..256");
  const int64_t innerBytes = int64_t(box[rank - 1]) * elem;
  if (innerBytes % 16 != 0)
    throw bad("box inner extent " + std::to_string(box[rank - 1]) + " x " + std::to_string(elem) +
              " bytes is not a multiple of 16 bytes");
  static const int spans[] = {0, 32, 64, 128};
  int span = spans[int(swizzle) & 3];
  if (span && innerBytes > span)
    throw bad("box inner extent " + std::to_string(box[rank - 1]) + " x " + std::to_string(elem) +
              " bytes exceeds the " + std::to_string(span) + "-byte swizzle span");

  CUtensorMapDataType cuType;
  switch (dtype) {
  case DType::BF16: cuType = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; break;
  case DType::F16: cuType = CU_TENSOR_MAP_DATA_TYPE_FLOAT16; break;
  case DType::F32: cuType = CU_TENSOR_MAP_DATA_TYPE_FLOAT32; break;
  case DType::I32: cuType = CU_TENSOR_MAP_DATA_TYPE_INT32; break;
  case DType::I64: cuType = CU_TENSOR_MAP_DATA_TYPE_INT64; break;
  default: throw bad("unsupported dtype");
  }
  static const CUtensorMapSwizzle cuSwizzle[] = {CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_SWIZZLE_32B,
                                                 CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_SWIZZLE_128B};

  // The driver wants dims innermost first and byte strides for dims 1..rank-1.
  cuuint64_t gdim[5], gstride[4];
  cuuint32_t bdim[5], estride[5];
  for (size_t i = 0; i < rank; ++i) {
    size_t src = rank - 1 - i;
    gdim[i] = cuuint64_t(shape[src]);
    bdim[i] = box[src];
    estride[i] = 1;
    if (i > 0) gstride[i - 1] = cuuint64_t(strides[src] * elem);
  }

  // The simulator reads its own encoding (every check above still applies).
  if (simEnabled()) return simTensorMap(dtype, data, shape, strides, box, swizzle);

  const DriverApi &a = requireDriver();
  ensureContext("while encoding the tensor map for " + what);  // the driver wants one current
  if (!a.cuTensorMapEncodeTiled)
    throw Error("CUDA driver too old: libcuda.so.1 has no cuTensorMapEncodeTiled (needed for " + what + ")");
  CUtensorMap map;
  check(a.cuTensorMapEncodeTiled(&map, cuType, cuuint32_t(rank), data, gdim, gstride, bdim, estride,
                                 CU_TENSOR_MAP_INTERLEAVE_NONE, cuSwizzle[int(swizzle) & 3],
                                 CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                 CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),  // OOB reads are zeros
        "cuTensorMapEncodeTiled",
        "for " + what + " (shape " + joinDims(shape) + ", strides " + joinDims(strides) + ")");
  return map;
}

//===----------------------------------------------------------------------===//
// Argument checks (no GPU needed)
//===----------------------------------------------------------------------===//

std::vector<int64_t> LoadedKernel::bindDimsFor(const KernelInfo &info, const LaunchArgs &args) {
  const std::string k = "kernel '" + info.name + "': ";
  if (args.tensors.size() != info.tensors.size())
    throw Error(k + "expected " + std::to_string(info.tensors.size()) + " tensor argument(s), got " +
                std::to_string(args.tensors.size()));
  std::vector<int64_t> values(info.dimSymbols.size(), -1);
  std::vector<int> boundBy(info.dimSymbols.size(), -1);
  for (size_t t = 0; t < info.tensors.size(); ++t) {
    const TensorArgInfo &ti = info.tensors[t];
    const TensorArg &ta = args.tensors[t];
    if (ta.shape.size() != ti.dims.size())
      throw Error(k + "tensor '" + ti.name + "' has rank " + std::to_string(ta.shape.size()) +
                  " (shape " + joinDims(ta.shape) + ") but the kernel expects rank " +
                  std::to_string(ti.dims.size()) + " " + dimList(ti.dims));
    if (!ta.strides.empty() && ta.strides.size() != ta.shape.size())
      throw Error(k + "tensor '" + ti.name + "' has " + std::to_string(ta.strides.size()) +
                  " strides for rank " + std::to_string(ta.shape.size()));
    for (size_t d = 0; d < ti.dims.size(); ++d) {
      const std::string &sym = ti.dims[d];
      int64_t v = ta.shape[d];
      if (v < 0)
        throw Error(k + "tensor '" + ti.name + "' has negative extent " + std::to_string(v) +
                    " in dim " + std::to_string(d));
      if (isIntLiteral(sym)) {
        if (sym.size() > 18 || std::stoll(sym) != v)
          throw Error(k + "tensor '" + ti.name + "' dim " + std::to_string(d) + " must be " + sym +
                      " but is " + std::to_string(v));
        continue;
      }
      size_t idx = 0;
      while (idx < info.dimSymbols.size() && info.dimSymbols[idx] != sym) ++idx;
      if (idx == info.dimSymbols.size())
        throw Error(k + "tensor '" + ti.name + "' uses unknown dim symbol '" + sym + "'");
      if (boundBy[idx] < 0) {
        values[idx] = v;
        boundBy[idx] = int(t);
      } else if (values[idx] != v) {
        throw Error(k + "dim '" + sym + "' is " + std::to_string(values[idx]) + " for tensor " +
                    info.tensors[boundBy[idx]].name + " but " + std::to_string(v) + " for tensor " +
                    ti.name);
      }
    }
  }
  for (size_t i = 0; i < values.size(); ++i)
    if (boundBy[i] < 0)
      throw Error(k + "dim '" + info.dimSymbols[i] + "' is not the extent of any tensor argument");
  return values;
}

namespace {
// launchGridFor, also handing back the bound dims (launch needs both).
std::array<int64_t, 3> checkLaunch(const KernelInfo &info, const LaunchArgs &args,
                                   std::vector<int64_t> &dims) {
  const std::string k = "kernel '" + info.name + "': ";
  dims = LoadedKernel::bindDimsFor(info, args);
  if (args.scalars.size() != info.scalars.size())
    throw Error(k + "expected " + std::to_string(info.scalars.size()) + " scalar argument(s), got " +
                std::to_string(args.scalars.size()));
  for (size_t i = 0; i < info.scalars.size(); ++i) {
    double v = args.scalars[i];
    const std::string s = "scalar '" + info.scalars[i].name + "' ";
    switch (info.scalars[i].dtype) {
    case DType::F32: break;
    case DType::I32:
    case DType::I64: {
      double lim = info.scalars[i].dtype == DType::I32 ? 2147483648.0 : 9223372036854775808.0;
      if (!std::isfinite(v) || v != std::trunc(v) || v < -lim || v >= lim)
        throw Error(k + s + "(" + dtypeName(info.scalars[i].dtype) + ") cannot hold " +
                    std::to_string(v));
      break;
    }
    default:
      throw Error(k + s + "has dtype " + dtypeName(info.scalars[i].dtype) +
                  "; only f32, i32 and i64 scalars can be passed");
    }
  }

  // KernelInfo may be built in code rather than parsed: check its references.
  for (size_t i = 0; i < info.params.size(); ++i) {
    const ParamInfo &p = info.params[i];
    bool isTensor = p.kind == ParamInfo::Kind::TensorMap || p.kind == ParamInfo::Kind::Pointer ||
                    p.kind == ParamInfo::Kind::Stride;
    size_t limit = isTensor ? info.tensors.size()
                   : p.kind == ParamInfo::Kind::Dim ? info.dimSymbols.size()
                                                    : info.scalars.size();
    bool ok = p.index >= 0 && size_t(p.index) < limit;
    if (ok && p.kind == ParamInfo::Kind::Stride)
      ok = p.dim >= 0 && size_t(p.dim) < info.tensors[p.index].dims.size();
    if (!ok) throw Error(k + "parameter " + std::to_string(i) + " refers to a missing argument");
  }

  // A tensor the kernel indexes through a raw pointer is assumed contiguous in
  // every dim that has no Stride parameter; refuse views that are not.
  for (size_t t = 0; t < info.tensors.size(); ++t) {
    const TensorArg &ta = args.tensors[t];
    bool byPointer = false;
    std::vector<bool> hasStride(ta.shape.size(), false);
    for (const ParamInfo &p : info.params) {
      if (size_t(p.index) != t) continue;
      if (p.kind == ParamInfo::Kind::Pointer) byPointer = true;
      if (p.kind == ParamInfo::Kind::Stride && size_t(p.dim) < hasStride.size()) hasStride[p.dim] = true;
    }
    if (!byPointer || ta.strides.empty()) continue;
    std::vector<int64_t> contiguous = effectiveStrides(TensorArg{ta.data, ta.shape, {}});
    for (size_t d = 0; d < ta.shape.size(); ++d)
      if (!hasStride[d] && ta.shape[d] > 1 && ta.strides[d] != contiguous[d])
        throw Error(k + "tensor '" + info.tensors[t].name + "' must be contiguous (strides " +
                    joinDims(contiguous) + ") but has strides " + joinDims(ta.strides));
  }

  std::array<int64_t, 3> grid{};
  static const int64_t maxGrid[3] = {INT32_MAX, 65535, 65535};
  for (int i = 0; i < 3; ++i) {
    std::string err;
    if (!evalGridExpr(info.grid[i], info.dimSymbols, dims, grid[i], err)) throw Error(k + err);
    if (grid[i] < 0 || grid[i] > maxGrid[i])
      throw Error(k + "grid dim " + std::to_string(i) + " = " + info.grid[i] + " = " +
                  std::to_string(grid[i]) + " is out of range 0.." + std::to_string(maxGrid[i]));
  }
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0) return grid;  // nothing to do
  for (int i = 0; i < 3; ++i)
    if (info.cluster[i] < 1 || grid[i] % info.cluster[i] != 0)
      throw Error(k + "grid dim " + std::to_string(i) + " (" + std::to_string(grid[i]) +
                  ") is not a multiple of the cluster dim " + std::to_string(info.cluster[i]));
  return grid;
}
}  // namespace

std::array<int64_t, 3> LoadedKernel::launchGridFor(const KernelInfo &info, const LaunchArgs &args) {
  std::vector<int64_t> dims;
  return checkLaunch(info, args, dims);
}

//===----------------------------------------------------------------------===//
// LoadedKernel
//===----------------------------------------------------------------------===//

// Every loaded module, for dumpTraces (which reads the traced ones).
struct ModuleRegistry {
  std::mutex mu;
  std::vector<std::pair<std::string, CUmodule>> modules;  // kernel symbol, module
};
ModuleRegistry &moduleRegistry() {
  static ModuleRegistry *r = new ModuleRegistry;  // never destroyed: unloads may run at exit
  return *r;
}

struct LoadedKernel::Impl {
  std::unique_ptr<SimModule> sim;  // simulated (QLA_SIM): no context, module or function
  CUcontext ctx = nullptr;
  CUmodule module = nullptr;
  CUfunction fn = nullptr;
  // Encoded tensor maps by parameter position, reused while the tensor's
  // pointer, shape and strides are unchanged (encoding costs microseconds).
  struct CachedMap {
    bool valid = false;
    void *data = nullptr;
    std::vector<int64_t> shape, strides;
    CUtensorMap map;
  };
  std::mutex mu;
  std::vector<CachedMap> maps;
};

LoadedKernel::LoadedKernel(const std::string &cubin, const KernelInfo &info)
    : info_(info), impl_(std::make_unique<Impl>()) {
  const std::string ctx = "while loading kernel '" + info.name + "'";
  if (cubin.empty()) throw Error("kernel '" + info.name + "': empty cubin");
  const auto t0 = std::chrono::steady_clock::now();
  impl_->ctx = ensureContext(ctx);
  const DriverApi &a = requireDriver();
  check(a.cuModuleLoadData(&impl_->module, cubin.data()), "cuModuleLoadData", ctx);
  try {
    check(a.cuModuleGetFunction(&impl_->fn, impl_->module, info.name.c_str()), "cuModuleGetFunction",
          ctx);
    // Above 48 KiB of dynamic smem a kernel must opt in explicitly.
    if (info.dynamicSmemBytes > 0)
      check(a.cuFuncSetAttribute(impl_->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 info.dynamicSmemBytes),
            "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", ctx);
    if (info.cluster[0] * info.cluster[1] * info.cluster[2] > 8)  // beyond the portable size
      check(a.cuFuncSetAttribute(impl_->fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
            "cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)", ctx);
  } catch (...) {
    a.cuModuleUnload(impl_->module);
    logPrintf(LogLevel::Error, "module: loading %s failed", info.name.c_str());
    throw;
  }
  impl_->maps.resize(info.params.size());
  {
    ModuleRegistry &r = moduleRegistry();
    std::lock_guard<std::mutex> lock(r.mu);
    r.modules.emplace_back(info.name, impl_->module);
  }
  logPrintf(LogLevel::Info, "module: loaded %s (cubin %zu bytes, dynamic smem %d bytes) in %.3f ms",
            info.name.c_str(), cubin.size(), int(info.dynamicSmemBytes),
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
}

LoadedKernel::LoadedKernel(Simulated, const std::string &cuda, const KernelInfo &info)
    : info_(info), impl_(std::make_unique<Impl>()) {
  impl_->sim = std::make_unique<SimModule>(cuda, info.name);
  impl_->maps.resize(info.params.size());
}

bool LoadedKernel::simulated() const { return impl_ && impl_->sim; }

LoadedKernel::~LoadedKernel() {
  if (!impl_ || !impl_->module) return;
  const DriverApi &a = driverApi();
  if (!a.ok) return;
  // Unload acts on the current context; errors (e.g. driver shut down at
  // process exit) are ignored: a destructor must not throw.
  CUcontext cur = nullptr;
  if (a.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == nullptr) a.cuCtxSetCurrent(impl_->ctx);
  {
    ModuleRegistry &r = moduleRegistry();
    std::lock_guard<std::mutex> lock(r.mu);
    r.modules.erase(std::remove_if(r.modules.begin(), r.modules.end(),
                                   [&](const auto &m) { return m.second == impl_->module; }),
                    r.modules.end());
  }
  a.cuModuleUnload(impl_->module);
}

int dumpTraces(const std::string &path) {
  const DriverApi &a = requireDriver();
  if (!a.cuModuleGetGlobal_v2 || !a.cuMemcpyDtoH_v2 || !a.cuMemsetD8_v2 || !a.cuCtxSynchronize)
    throw Error("dumpTraces: the CUDA driver lacks cuModuleGetGlobal/cuMemcpyDtoH/cuMemsetD8/cuCtxSynchronize");
  ensureContext("while dumping traces");
  check(a.cuCtxSynchronize(), "cuCtxSynchronize", "while dumping traces");
  ModuleRegistry &r = moduleRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  // Opened at the first traced module (none: no file); closed on any error too.
  std::unique_ptr<std::FILE, int (*)(std::FILE *)> f(nullptr, &std::fclose);
  int n = 0;
  for (auto &[name, module] : r.modules) {
    CUdeviceptr buf = 0, sites = 0;
    size_t bufBytes = 0, siteBytes = 0;
    if (a.cuModuleGetGlobal_v2(&buf, &bufBytes, module, "qla_trace_buf") != CUDA_SUCCESS) continue;
    check(a.cuModuleGetGlobal_v2(&sites, &siteBytes, module, "qla_trace_sites"), "cuModuleGetGlobal",
          "(qla_trace_sites of " + name + ")");
    std::string text(siteBytes, '\0');
    std::vector<uint64_t> words(bufBytes / 8);
    check(a.cuMemcpyDtoH_v2(text.data(), sites, siteBytes), "cuMemcpyDtoH", "(trace sites of " + name + ")");
    check(a.cuMemcpyDtoH_v2(words.data(), buf, bufBytes), "cuMemcpyDtoH", "(trace of " + name + ")");
    check(a.cuMemsetD8_v2(buf, 0, bufBytes), "cuMemsetD8", "(trace of " + name + ")");
    while (!text.empty() && text.back() == '\0') text.pop_back();
    if (!f) {
      f.reset(std::fopen(path.c_str(), "wb"));
      if (!f) throw Error("dumpTraces: cannot write " + path + ": " + std::strerror(errno));
    }
    // Per kernel: "QLATRACE1 <symbol> <site bytes> <words>\n", the sites
    // text, the words (little-endian u64).
    std::fprintf(f.get(), "QLATRACE1 %s %zu %zu\n", name.c_str(), text.size(), words.size());
    std::fwrite(text.data(), 1, text.size(), f.get());
    std::fwrite(words.data(), 8, words.size(), f.get());
    ++n;
  }
  if (f && std::fclose(f.release()) != 0) throw Error("dumpTraces: writing " + path + " failed");
  return n;
}

std::vector<int64_t> LoadedKernel::bindDims(const LaunchArgs &args) const {
  return bindDimsFor(info_, args);
}

void LoadedKernel::launch(const LaunchArgs &args, bool programmatic) {
  const std::string k = "kernel '" + info_.name + "': ";
  std::vector<int64_t> dims;
  std::array<int64_t, 3> grid = checkLaunch(info_, args, dims);
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0) return;

  std::vector<ParamSlot> slots(info_.params.size());
  std::vector<void *> argv(info_.params.size());
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    for (size_t i = 0; i < info_.params.size(); ++i) {
      const ParamInfo &p = info_.params[i];
      ParamSlot &slot = slots[i];
      switch (p.kind) {
      case ParamInfo::Kind::TensorMap: {
        const TensorArg &t = args.tensors.at(p.index);
        std::vector<int64_t> strides = effectiveStrides(t);
        Impl::CachedMap &c = impl_->maps[i];
        if (!c.valid || c.data != t.data || c.shape != t.shape || c.strides != strides) {
          c.valid = false;
          try {
            c.map = encodeTensorMap("kernel '" + info_.name + "' tensor '" + info_.tensors[p.index].name + "'",
                                    info_.tensors[p.index].dtype, t.data, t.shape, strides, p.box, p.swizzle);
          } catch (const Error &) {
            // A store-only map (ParamInfo::optional): the kernel checks the
            // same conditions before it uses the map and copies with threads
            // where they fail, so the map is never read.
            if (!p.optional) throw;
            std::memset(&c.map, 0, sizeof c.map);
          }
          c.data = t.data;
          c.shape = t.shape;
          c.strides = strides;
          c.valid = true;
        }
        slot.tmap = c.map;
        argv[i] = &slot.tmap;
        break;
      }
      case ParamInfo::Kind::Pointer: {
        const TensorArg &t = args.tensors.at(p.index);
        if (!t.data && numElements(t) > 0)
          throw Error(k + "tensor '" + info_.tensors[p.index].name + "' has a null data pointer");
        slot.ptr = t.data;
        argv[i] = &slot.ptr;
        break;
      }
      case ParamInfo::Kind::Dim: {
        int64_t v = dims.at(p.index);
        if (v > INT32_MAX)
          throw Error(k + "dim '" + info_.dimSymbols[p.index] + "' = " + std::to_string(v) +
                      " does not fit the kernel's int32 parameter");
        slot.i32 = int32_t(v);
        argv[i] = &slot.i32;
        break;
      }
      case ParamInfo::Kind::Stride: {
        std::vector<int64_t> s = effectiveStrides(args.tensors.at(p.index));
        slot.i64 = s.at(p.dim);
        argv[i] = &slot.i64;
        break;
      }
      case ParamInfo::Kind::Scalar: {
        double v = args.scalars.at(p.index);  // range-checked in checkLaunch
        DType dt = info_.scalars.at(p.index).dtype;
        if (dt == DType::I32) {
          slot.i32 = int32_t(v);
          argv[i] = &slot.i32;
        } else if (dt == DType::I64) {
          slot.i64 = int64_t(v);
          argv[i] = &slot.i64;
        } else {
          slot.f32 = float(v);
          argv[i] = &slot.f32;
        }
        break;
      }
      }
    }
  }

  if (impl_->sim) {
    if (programmatic && !info_.follows)
      throw Error("kernel '" + info_.name + "' was not declared follows(...); it cannot be launched programmatically");
    impl_->sim->run(argv.data(), grid, int(info_.threads), int(info_.dynamicSmemBytes),
                    {int(info_.cluster[0]), int(info_.cluster[1]), int(info_.cluster[2])});
    return;
  }
  const std::string ctx = "while launching kernel '" + info_.name + "'";
  const DriverApi &a = requireDriver();
  CUcontext cur = nullptr;
  check(a.cuCtxGetCurrent(&cur), "cuCtxGetCurrent", ctx);
  if (!cur) check(a.cuCtxSetCurrent(impl_->ctx), "cuCtxSetCurrent", ctx);

  if (programmatic && !info_.follows)
    throw Error("kernel '" + info_.name + "' was not declared follows(...), so it does not wait for the kernel " +
                "ahead of it; it cannot be launched programmatically");
  const bool clustered = info_.cluster[0] * info_.cluster[1] * info_.cluster[2] > 1;
  if (!clustered && !programmatic) {
    check(a.cuLaunchKernel(impl_->fn, unsigned(grid[0]), unsigned(grid[1]), unsigned(grid[2]),
                           unsigned(info_.threads), 1, 1, unsigned(info_.dynamicSmemBytes),
                           args.stream, argv.data(), nullptr),
          "cuLaunchKernel", ctx);
    return;
  }
  if (!a.cuLaunchKernelEx)
    throw Error("CUDA driver too old: libcuda.so.1 has no cuLaunchKernelEx (needed for " +
                std::string(clustered ? "cluster" : "programmatic") + " launch " + ctx + ")");
  CUlaunchAttribute attrs[2] = {};
  unsigned numAttrs = 0;
  if (clustered) {
    CUlaunchAttribute &attr = attrs[numAttrs++];
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = unsigned(info_.cluster[0]);
    attr.value.clusterDim.y = unsigned(info_.cluster[1]);
    attr.value.clusterDim.z = unsigned(info_.cluster[2]);
  }
  if (programmatic) {
    CUlaunchAttribute &attr = attrs[numAttrs++];
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
  }
  CUlaunchConfig cfg{};
  cfg.gridDimX = unsigned(grid[0]);
  cfg.gridDimY = unsigned(grid[1]);
  cfg.gridDimZ = unsigned(grid[2]);
  cfg.blockDimX = unsigned(info_.threads);
  cfg.blockDimY = 1;
  cfg.blockDimZ = 1;
  cfg.sharedMemBytes = unsigned(info_.dynamicSmemBytes);
  cfg.hStream = args.stream;
  cfg.attrs = attrs;
  cfg.numAttrs = numAttrs;
  check(a.cuLaunchKernelEx(&cfg, impl_->fn, argv.data(), nullptr), "cuLaunchKernelEx", ctx);
}

}  // namespace qla::rt
