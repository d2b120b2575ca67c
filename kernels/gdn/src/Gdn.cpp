// The GDN forward operator: argument checks, workspace layout, kernel
// specialization and JIT memoization, launch plans and the two launches.
// See qla/gdn.h and kernels/gdn/KERNELS.md.
#include "qla/gdn.h"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <mutex>
#include <sstream>

#include "Schedule.h"
#include "qla/jit.h"

namespace qla::gdn {
namespace detail {
const std::vector<std::pair<std::string, std::string>> &embeddedKernelTable();  // generated
}

namespace {

constexpr const char *kOp = "chunk_gated_delta_rule: ";
constexpr const char *kPrepareFile = "gdn_fwd_prepare.qla";
constexpr const char *kStateFile = "gdn_fwd_state.qla";
constexpr const char *kMergeFile = "gdn_fwd_merge.qla";
constexpr size_t kAlign = 256;       // workspace region alignment
constexpr size_t kDummyBytes = 256;  // stands in for absent optional tensors
constexpr int64_t kMaxExtent = (int64_t(1) << 31) - 1;  // dims are int32 in the kernels
constexpr int64_t kMaxBytes = int64_t(1) << 46;         // far beyond any GPU, far below overflow

[[noreturn]] void fail(const std::string &msg) { throw Error(kOp + msg); }

std::string dims(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string ptrText(const void *p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

int64_t roundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

std::vector<int64_t> stridesOf(const TensorRef &t) {
  return rt::effectiveStrides(rt::TensorArg{t.data, t.shape, t.strides});
}

// Byte span [lo, hi) that a (validated) tensor may touch.
std::pair<uintptr_t, uintptr_t> byteSpan(const TensorRef &t) {
  std::vector<int64_t> s = stridesOf(t);
  int64_t last = 0;
  for (size_t i = 0; i < t.shape.size(); ++i) last += (t.shape[i] - 1) * s[i];
  uintptr_t lo = reinterpret_cast<uintptr_t>(t.data);
  return {lo, lo + uintptr_t((last + 1) * dtypeBytes(t.dtype))};
}

bool isHalf(DType d) { return d == DType::BF16 || d == DType::F16; }

// Rank, stride count, non-null data, extents in 1..2^31-1, sane size.
void checkBasic(const std::string &name, const TensorRef &t, size_t rank, const char *layout) {
  if (t.shape.size() != rank)
    fail(name + " must have " + std::to_string(rank) + " dim" + (rank == 1 ? "" : "s") + " " + layout +
         ", got shape " + dims(t.shape));
  if (!t.strides.empty() && t.strides.size() != rank)
    fail(name + " has " + std::to_string(t.strides.size()) + " strides for " + std::to_string(rank) + " dims");
  if (!t.data) fail(name + " is a null pointer");
  for (size_t i = 0; i < rank; ++i) {
    if (t.shape[i] < 1) fail(name + " has an empty or negative dim: shape " + dims(t.shape));
    if (t.shape[i] > kMaxExtent)
      fail(name + " dim " + std::to_string(i) + " = " + std::to_string(t.shape[i]) +
           " is too large (at most 2^31 - 1)");
  }
  std::vector<int64_t> s = stridesOf(t);
  long double span = 1;
  for (size_t i = 0; i < rank; ++i) span += (long double)(t.shape[i] - 1) * std::fabs((long double)s[i]);
  if (span * dtypeBytes(t.dtype) > (long double)kMaxBytes) fail(name + " is too large: shape " + dims(t.shape));
}

// Last dim stride 1 (or extent 1), positive strides; with rowAlign16 the other
// strides (of dims with extent > 1) are multiples of 16 bytes, and the data
// pointer is 16-byte aligned; otherwise it is aligned to the element size.
void checkLayout(const std::string &name, const TensorRef &t, bool rowAlign16) {
  std::vector<int64_t> s = stridesOf(t);
  const size_t r = t.shape.size();
  const int64_t elem = dtypeBytes(t.dtype);
  bool ok = t.shape[r - 1] == 1 || s[r - 1] == 1;
  for (size_t i = 0; i + 1 < r && ok; ++i) {
    if (t.shape[i] == 1) continue;
    if (s[i] < 1) ok = false;
    if (rowAlign16 && s[i] * elem % 16 != 0) ok = false;
  }
  if (!ok) {
    if (rowAlign16)
      fail(name + " must be contiguous in its last dim (stride 1) with 16-byte aligned rows; got strides " +
           dims(s) + " for shape " + dims(t.shape));
    fail(name + " must be contiguous in its last dim (stride 1) with positive strides; got strides " + dims(s) +
         " for shape " + dims(t.shape));
  }
  int64_t align = rowAlign16 ? 16 : elem;
  if (reinterpret_cast<uintptr_t>(t.data) % uintptr_t(align) != 0)
    fail(name + "'s data pointer " + ptrText(t.data) + " is not " + std::to_string(align) + "-byte aligned");
}

// An output must not write the same element twice (a broadcast or overlapping view).
void checkNoSelfOverlap(const std::string &name, const TensorRef &t) {
  std::vector<int64_t> s = stridesOf(t);
  std::vector<size_t> order;
  for (size_t i = 0; i < t.shape.size(); ++i)
    if (t.shape[i] > 1) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s[a] < s[b]; });
  int64_t need = 1;  // the smallest stride the next dim may have
  for (size_t i : order) {
    if (s[i] < need)
      fail(name + " has overlapping elements (strides " + dims(s) + " for shape " + dims(t.shape) +
           "); an output must not be a broadcast or overlapping view");
    need = s[i] * t.shape[i];
  }
}

struct Named {
  const char *name;
  const TensorRef *t;
  bool output;
};

std::vector<Named> namedTensors(const ForwardParams &p) {
  std::vector<Named> v = {{"q", &p.q, false},    {"k", &p.k, false}, {"v", &p.v, false},
                          {"g", &p.g, false},    {"beta", &p.beta, false}, {"o", &p.o, true}};
  if (p.initial_state) v.push_back({"initial_state", &*p.initial_state, false});
  if (p.final_state) v.push_back({"final_state", &*p.final_state, true});
  if (p.cu_seqlens) v.push_back({"cu_seqlens", &*p.cu_seqlens, false});
  return v;
}

//===----------------------------------------------------------------------===//
// Workspace layout
//===----------------------------------------------------------------------===//

struct WorkspaceLayout {
  size_t w = 0, u = 0, gc = 0, dummy = 0, total = 0;  // byte offsets; total size
  size_t hs = 0, ls = 0, ph = 0, pl = 0;               // segment states (schedule.split only)
  int64_t gcSlots = 0;                                 // GC's last dim: chunk slots × kChunk
  Schedule schedule;
};


// GC is [B, Hv, gcSlots] f32: γ of chunk c of a sequence lives in slot
// (bos / C + n + c) of C values (varlen; n the sequence index) or slot c
// (fixed length), so that every chunk's γ starts 16-byte aligned for TMA.
// Slots needed: cdiv(T, C) + N - 1 with N sequences (B = 1), cdiv(T, C) otherwise.
// With a split schedule (context parallelism), HS and LS are [NZ, Hv, K, V]
// f32 (segment start and end states) and PH, PL [NZ, Hv, K, K] bf16 (the
// segments' state transitions as hi + lo), NZ the schedule's segment ids.
WorkspaceLayout workspaceLayout(DType dtype, int64_t B, int64_t T, int64_t Hv, int64_t K, int64_t V,
                                int64_t numSequences, int64_t segmentChunks) {
  auto align = [](size_t x) { return (x + kAlign - 1) / kAlign * kAlign; };
  const size_t eb = size_t(dtypeBytes(dtype));
  WorkspaceLayout l;
  MachineModel m;
  m.sms = deviceSmCount();
  l.schedule = forwardSchedule(ForwardShape{B, T, Hv, K, V, numSequences}, m, segmentChunks);
  l.gcSlots = ((T + kChunk - 1) / kChunk + std::max<int64_t>(numSequences - 1, 0)) * kChunk;
  l.w = 0;
  l.u = align(l.w + size_t(B * T * Hv * K) * eb);
  l.gc = align(l.u + size_t(B * T * Hv * V) * eb);
  size_t end = align(l.gc + size_t(B * Hv * l.gcSlots) * 4);
  if (l.schedule.split) {
    const size_t nz = size_t(l.schedule.numIds);
    l.hs = end;
    l.ls = align(l.hs + nz * size_t(Hv * K * V) * 4);
    l.ph = align(l.ls + nz * size_t(Hv * K * V) * 4);
    l.pl = align(l.ph + nz * size_t(Hv * K * K) * 2);
    end = align(l.pl + nz * size_t(Hv * K * K) * 2);
  }
  l.dummy = end;
  l.total = l.dummy + kDummyBytes;
  return l;
}

//===----------------------------------------------------------------------===//
// CUDA driver queries of our own (pointer attributes, the current context).
// The runtime loads the driver for compiling and launching; this only asks it
// about pointers. Loaded once; never throws.
//===----------------------------------------------------------------------===//

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

// Every pointer is device memory of one device, inside its allocation; makes
// that device's context current if none is (its primary context) and returns it.
CUcontext checkDevice(const ForwardParams &p, void *workspace, size_t workspaceNeed) {
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
  for (const Named &n : namedTensors(p)) {
    auto [lo, hi] = byteSpan(*n.t);
    one(n.name, n.t->data, lo, hi, "shape " + dims(n.t->shape) + ", strides " + dims(stridesOf(*n.t)));
  }
  uintptr_t w = reinterpret_cast<uintptr_t>(workspace);
  one("workspace", workspace, w, w + workspaceNeed, "the operator");

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

// The current context, or device 0's primary context made current (warmup).
CUcontext currentOrPrimaryContext() {
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

//===----------------------------------------------------------------------===//
// Compiled kernels, memoized per specialization; loaded modules per context
//===----------------------------------------------------------------------===//

struct KernelSlot {
  std::mutex mu;
  bool compiled = false;
  KernelSpec spec;
  JitKernel kernel;
  std::vector<std::pair<CUcontext, std::shared_ptr<rt::LoadedKernel>>> loaded;
};

struct ConfigKernels {
  KernelSlot *prepare = nullptr, *state = nullptr;  // always launched
  KernelSlot *segment = nullptr, *merge = nullptr;  // with a split schedule
};

std::mutex &registryMutex() {
  static std::mutex mu;
  return mu;
}

// Compiles are serialized: the front end and MLIR are not known to be
// thread-safe across contexts, and a cold compile happens once per process.
std::mutex &compileMutex() {
  static std::mutex mu;
  return mu;
}

KernelSlot &slotFor(const KernelSpec &spec) {
  static std::map<std::string, std::unique_ptr<KernelSlot>> slots;
  std::lock_guard<std::mutex> lock(registryMutex());
  auto &s = slots[spec.str()];
  if (!s) {
    s = std::make_unique<KernelSlot>();
    s->spec = spec;
  }
  return *s;
}

uint32_t configKey(const ForwardConfig &c) {
  uint32_t k = 0;
  auto put = [&](uint32_t v, int bits) { k = (k << bits) | v; };
  put(uint32_t(c.dtype), 3);
  put(uint32_t(c.betaDtype), 3);
  put(c.K == 128, 1);
  put(c.V == 128, 1);
  put(c.varlen, 1);
  put(uint32_t(c.cuDtype), 3);
  put(c.l2norm, 1);
  put(c.initialState, 1);
  put(c.finalState, 1);
  return k;
}

ConfigKernels kernelsFor(const ForwardConfig &c) {
  static std::map<uint32_t, ConfigKernels> memo;
  const uint32_t key = configKey(c);
  {
    std::lock_guard<std::mutex> lock(registryMutex());
    auto it = memo.find(key);
    if (it != memo.end()) return it->second;
  }
  ConfigKernels ck;
  ck.prepare = &slotFor(prepareKernelSpec(c));
  ck.state = &slotFor(stateKernelSpec(c));
  ck.segment = &slotFor(segmentKernelSpec(c));
  ck.merge = &slotFor(mergeKernelSpec(c));
  std::lock_guard<std::mutex> lock(registryMutex());
  memo[key] = ck;
  return ck;
}

const JitKernel &compiled(KernelSlot &s) {
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.compiled) return s.kernel;
  const std::string *source = embeddedKernelSource(s.spec.file);
  if (!source)
    fail("the kernel " + s.spec.file + " was not embedded in this build of QLA (kernels/gdn/" + s.spec.file +
         " missing at build time)");
  try {
    std::lock_guard<std::mutex> clock(compileMutex());
    JitOptions opt;
    opt.defines = s.spec.defines;
    s.kernel = jitCompileString(*source, "kernels/gdn/" + s.spec.file, opt);
  } catch (const std::exception &e) {
    fail("compiling " + s.spec.str() + " failed:\n" + e.what());
  }
  s.compiled = true;
  return s.kernel;
}

std::shared_ptr<rt::LoadedKernel> loadedFor(KernelSlot &s, CUcontext ctx) {
  const JitKernel &k = compiled(s);
  std::lock_guard<std::mutex> lock(s.mu);
  for (auto &e : s.loaded)
    if (e.first == ctx) return e.second;
  std::shared_ptr<rt::LoadedKernel> lk;
  try {
    lk = std::make_shared<rt::LoadedKernel>(k.cubin(), k.info());
  } catch (const std::exception &e) {
    fail("loading " + s.spec.str() + " failed: " + e.what());
  }
  s.loaded.emplace_back(ctx, lk);
  return lk;
}

//===----------------------------------------------------------------------===//
// Launch arguments
//===----------------------------------------------------------------------===//

// Strides handed to the kernels: the tensor's own, except that a dim of extent
// 1 (whose stride is never used) gets a 16-byte multiple, so that TMA
// descriptors accept views such as q[None] whatever stride they carry there.
std::vector<int64_t> launchStrides(const TensorRef &t) {
  std::vector<int64_t> s = stridesOf(t);
  const int64_t elem = dtypeBytes(t.dtype);
  const int64_t unit = elem >= 16 ? 1 : 16 / elem;
  for (size_t i = s.size(); i-- > 0;) {
    if (t.shape[i] != 1) continue;
    if (i + 1 == s.size()) s[i] = 1;
    else s[i] = roundUp(std::max<int64_t>(1, s[i + 1] * t.shape[i + 1]), unit);
  }
  return s;
}

rt::TensorArg arg(const TensorRef &t) { return rt::TensorArg{t.data, t.shape, launchStrides(t)}; }

rt::TensorArg contiguousArg(void *data, std::vector<int64_t> shape) {
  return rt::TensorArg{data, std::move(shape), {}};
}

// User-facing name of a kernel tensor argument.
std::string userName(const std::string &kernelTensor) {
  static const std::map<std::string, std::string> names = {
      {"Q", "q"},       {"Kt", "k"},          {"Vt", "v"},           {"G", "g"},
      {"Beta", "beta"}, {"CU", "cu_seqlens"}, {"H0", "initial_state"}, {"HT", "final_state"},
      {"O", "o"},       {"W", "workspace (W)"}, {"U", "workspace (U)"}, {"GC", "workspace (GC)"},
      {"HS", "workspace (HS)"}, {"LS", "workspace (LS)"}, {"PH", "workspace (PH)"}, {"PL", "workspace (PL)"}};
  auto it = names.find(kernelTensor);
  return it == names.end() ? kernelTensor : it->second;
}

// The operator and the kernel agree on the argument list (KERNELS.md).
void checkSignature(const KernelSpec &spec, const KernelInfo &info, const std::vector<std::string> &names,
                    const std::vector<DType> &dtypes, size_t nscalars) {
  auto bad = [&](const std::string &m) {
    fail("internal error: " + spec.file + " does not have the signature the operator launches (" + m +
         "; see kernels/gdn/KERNELS.md)");
  };
  if (info.tensors.size() != names.size())
    bad(std::to_string(info.tensors.size()) + " tensor arguments, expected " + std::to_string(names.size()));
  for (size_t i = 0; i < names.size(); ++i) {
    if (info.tensors[i].name != names[i])
      bad("tensor argument " + std::to_string(i) + " is '" + info.tensors[i].name + "', expected '" + names[i] + "'");
    if (info.tensors[i].dtype != dtypes[i])
      bad("tensor '" + names[i] + "' has dtype " + dtypeName(info.tensors[i].dtype) + ", expected " +
          dtypeName(dtypes[i]));
  }
  if (info.scalars.size() != nscalars)
    bad(std::to_string(info.scalars.size()) + " scalar arguments, expected " + std::to_string(nscalars));
}

// What the runtime would refuse at launch (TMA and raw-pointer layout rules),
// checked for both kernels before either launches, with user-facing names.
void checkAgainstKernel(const KernelSpec &spec, const KernelInfo &info, const rt::LaunchArgs &args) {
  for (size_t t = 0; t < info.tensors.size(); ++t) {
    const rt::TensorArg &ta = args.tensors[t];
    const std::string name = userName(info.tensors[t].name);
    const int64_t elem = dtypeBytes(info.tensors[t].dtype);
    std::vector<int64_t> s = rt::effectiveStrides(ta);
    bool tma = false, byPointer = false;
    std::vector<bool> hasStride(ta.shape.size(), false);
    for (const ParamInfo &p : info.params) {
      if (size_t(p.index) != t) continue;
      if (p.kind == ParamInfo::Kind::TensorMap) tma = true;
      if (p.kind == ParamInfo::Kind::Pointer) byPointer = true;
      if (p.kind == ParamInfo::Kind::Stride && size_t(p.dim) < hasStride.size()) hasStride[p.dim] = true;
    }
    if (tma) {
      bool ok = s.back() == 1;
      for (size_t i = 0; i + 1 < s.size(); ++i) ok = ok && s[i] >= 1 && s[i] * elem % 16 == 0;
      if (!ok)
        fail(name + " must be contiguous in its last dim (stride 1) with 16-byte aligned rows (" + spec.file +
             " reads it with TMA); got strides " + dims(s) + " for shape " + dims(ta.shape));
      if (reinterpret_cast<uintptr_t>(ta.data) % 16 != 0)
        fail(name + "'s data pointer " + ptrText(ta.data) + " is not 16-byte aligned (" + spec.file +
             " reads it with TMA)");
    }
    if (byPointer) {
      std::vector<int64_t> c = rt::effectiveStrides(rt::TensorArg{ta.data, ta.shape, {}});
      for (size_t d = 0; d < ta.shape.size(); ++d)
        if (!hasStride[d] && ta.shape[d] > 1 && s[d] != c[d])
          fail(name + " must be contiguous (strides " + dims(c) + ", " + spec.file +
               " indexes it densely); got strides " + dims(s) + " for shape " + dims(ta.shape));
    }
  }
}

struct Plan {
  ForwardConfig config;
  ConfigKernels kernels;
  Schedule schedule;
  rt::LaunchArgs prepare, state, segment, merge;  // segment, merge: schedule.split only
  std::array<int64_t, 3> prepareGrid{}, stateGrid{}, segmentGrid{}, mergeGrid{};
};

WorkspaceLayout layoutOf(const ForwardParams &p) {
  return workspaceLayout(p.q.dtype, p.q.shape[0], p.q.shape[1], p.v.shape[2], p.q.shape[3], p.v.shape[3],
                         p.cu_seqlens ? p.cu_seqlens->shape[0] - 1 : 0, p.segment_chunks);
}

// p validated.
size_t workspaceBytesOf(const ForwardParams &p) { return layoutOf(p).total; }

void checkWorkspace(const ForwardParams &p, void *workspace, size_t workspaceBytes) {
  const size_t need = workspaceBytesOf(p);
  if (!workspace) fail("workspace is a null pointer (it needs " + std::to_string(need) + " bytes)");
  if (reinterpret_cast<uintptr_t>(workspace) % kAlign != 0)
    fail("workspace " + ptrText(workspace) + " is not " + std::to_string(kAlign) + "-byte aligned");
  if (workspaceBytes < need)
    fail("workspace has " + std::to_string(workspaceBytes) + " bytes, needs " + std::to_string(need));
  uintptr_t wlo = reinterpret_cast<uintptr_t>(workspace), whi = wlo + need;
  for (const Named &n : namedTensors(p)) {
    auto [lo, hi] = byteSpan(*n.t);
    if (lo < whi && wlo < hi) fail("workspace overlaps " + std::string(n.name) + " in memory");
  }
}

// p validated, workspace checked.
Plan buildPlan(const ForwardParams &p, void *workspace) {
  Plan plan;
  const ForwardConfig c = forwardConfig(p);
  plan.config = c;
  plan.kernels = kernelsFor(c);
  const WorkspaceLayout l = layoutOf(p);
  plan.schedule = l.schedule;
  const bool split = l.schedule.split;
  const JitKernel &kp = compiled(*plan.kernels.prepare);
  const JitKernel &ks = compiled(*plan.kernels.state);
  const KernelInfo &ip = kp.info(), &is = ks.info();
  const DType dt = c.dtype, f32 = DType::F32, bf = DType::BF16;
  checkSignature(plan.kernels.prepare->spec, ip, {"Kt", "Vt", "G", "Beta", "CU", "W", "U", "GC"},
                 {dt, dt, f32, c.betaDtype, c.cuDtype, dt, dt, f32}, 0);
  const std::vector<std::string> stateNames = {"Q", "Kt", "W", "U", "GC", "CU", "H0", "O", "HT", "HS", "LS", "PH", "PL"};
  const std::vector<DType> stateDtypes = {dt, dt, dt, dt, f32, c.cuDtype, f32, dt, f32, f32, f32, bf, bf};
  checkSignature(plan.kernels.state->spec, is, stateNames, stateDtypes, 2);
  const KernelInfo *iseg = nullptr, *imerge = nullptr;
  if (split) {
    iseg = &compiled(*plan.kernels.segment).info();
    imerge = &compiled(*plan.kernels.merge).info();
    checkSignature(plan.kernels.segment->spec, *iseg, stateNames, stateDtypes, 2);
    checkSignature(plan.kernels.merge->spec, *imerge, {"GC", "CU", "LS", "PH", "PL", "HS"},
                   {f32, c.cuDtype, f32, bf, bf, f32}, 1);
  }

  const int64_t B = p.q.shape[0], T = p.q.shape[1], Hv = p.v.shape[2], K = p.q.shape[3], V = p.v.shape[3];
  const int64_t N = c.varlen ? p.cu_seqlens->shape[0] - 1 : B;
  const int64_t NZ = l.schedule.numIds;
  char *ws = static_cast<char *>(workspace);
  void *dummy = ws + l.dummy;

  rt::TensorArg W = contiguousArg(ws + l.w, {B, T, Hv, K});
  rt::TensorArg U = contiguousArg(ws + l.u, {B, T, Hv, V});
  const int64_t TC = l.gcSlots;
  rt::TensorArg GC = contiguousArg(ws + l.gc, {B, Hv, TC});
  rt::TensorArg CU = c.varlen ? arg(*p.cu_seqlens) : contiguousArg(dummy, {1});
  rt::TensorArg H0 = c.initialState ? arg(*p.initial_state) : contiguousArg(dummy, {N, Hv, K, V});
  rt::TensorArg HT = c.finalState ? arg(*p.final_state) : contiguousArg(dummy, {N, Hv, K, V});
  // Without a split the segment tensors are never touched: the dummy stands in.
  rt::TensorArg HS = contiguousArg(split ? ws + l.hs : dummy, {NZ, Hv, K, V});
  rt::TensorArg LS = contiguousArg(split ? ws + l.ls : dummy, {NZ, Hv, K, V});
  rt::TensorArg PH = contiguousArg(split ? ws + l.ph : dummy, {NZ, Hv, K, K});
  rt::TensorArg PL = contiguousArg(split ? ws + l.pl : dummy, {NZ, Hv, K, K});

  plan.prepare.tensors = {arg(p.k), arg(p.v), arg(p.g), arg(p.beta), CU, W, U, GC};
  plan.prepare.stream = p.stream;
  const double scale = std::isnan(p.scale) ? 1.0 / std::sqrt(double(K)) : p.scale;
  const double segChunks = double(l.schedule.segChunks);
  plan.state.tensors = {arg(p.q), arg(p.k), W, U, GC, CU, H0, arg(p.o), HT, HS, LS, PH, PL};
  plan.state.scalars = {scale, segChunks};
  plan.state.stream = p.stream;
  if (split) {
    plan.segment = plan.state;
    plan.merge.tensors = {GC, CU, LS, PH, PL, HS};
    plan.merge.scalars = {segChunks};
    plan.merge.stream = p.stream;
  }

  checkAgainstKernel(plan.kernels.prepare->spec, ip, plan.prepare);
  checkAgainstKernel(plan.kernels.state->spec, is, plan.state);
  try {
    plan.prepareGrid = rt::LoadedKernel::launchGridFor(ip, plan.prepare);
    plan.stateGrid = rt::LoadedKernel::launchGridFor(is, plan.state);
    if (split) {
      plan.segmentGrid = rt::LoadedKernel::launchGridFor(*iseg, plan.segment);
      plan.mergeGrid = rt::LoadedKernel::launchGridFor(*imerge, plan.merge);
    }
  } catch (const rt::Error &e) {
    fail(e.what());
  }
  return plan;
}

}  // namespace

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

void validateForward(const ForwardParams &p) {
  // q, k, v: dtypes and shapes.
  if (!isHalf(p.q.dtype)) fail(std::string("q has dtype ") + dtypeName(p.q.dtype) + "; expected bf16 or f16");
  checkBasic("q", p.q, 4, "[B, T, Hqk, K]");
  if (p.k.dtype != p.q.dtype)
    fail(std::string("k has dtype ") + dtypeName(p.k.dtype) + " but q has " + dtypeName(p.q.dtype));
  checkBasic("k", p.k, 4, "[B, T, Hqk, K]");
  if (p.k.shape != p.q.shape) fail("k has shape " + dims(p.k.shape) + " but q has shape " + dims(p.q.shape));
  if (p.v.dtype != p.q.dtype)
    fail(std::string("v has dtype ") + dtypeName(p.v.dtype) + " but q has " + dtypeName(p.q.dtype));
  checkBasic("v", p.v, 4, "[B, T, Hv, V]");
  const int64_t B = p.q.shape[0], T = p.q.shape[1], Hqk = p.q.shape[2], K = p.q.shape[3];
  if (p.v.shape[0] != B || p.v.shape[1] != T)
    fail("v has shape " + dims(p.v.shape) + " but q has shape " + dims(p.q.shape) + " (B and T must match)");
  const int64_t Hv = p.v.shape[2], V = p.v.shape[3];
  if (Hv % Hqk != 0)
    fail("v has " + std::to_string(Hv) + " heads, not a multiple of the " + std::to_string(Hqk) + " q/k heads");
  if (K != 64 && K != 128) fail("K = " + std::to_string(K) + " is not supported (64 or 128)");
  if (V != 64 && V != 128) fail("V = " + std::to_string(V) + " is not supported (64 or 128)");

  // g, beta, o.
  const std::vector<int64_t> gShape = {B, T, Hv}, oShape = {B, T, Hv, V};
  if (p.g.dtype != DType::F32) fail(std::string("g has dtype ") + dtypeName(p.g.dtype) + "; expected f32");
  checkBasic("g", p.g, 3, "[B, T, Hv]");
  if (p.g.shape != gShape) fail("g has shape " + dims(p.g.shape) + "; expected [B, T, Hv] = " + dims(gShape));
  if (p.beta.dtype != DType::F32 && p.beta.dtype != p.q.dtype)
    fail(std::string("beta has dtype ") + dtypeName(p.beta.dtype) + "; expected f32 or " + dtypeName(p.q.dtype) +
         " (the dtype of q)");
  checkBasic("beta", p.beta, 3, "[B, T, Hv]");
  if (p.beta.shape != gShape)
    fail("beta has shape " + dims(p.beta.shape) + "; expected [B, T, Hv] = " + dims(gShape));
  if (p.o.dtype != p.q.dtype)
    fail(std::string("o has dtype ") + dtypeName(p.o.dtype) + "; expected " + dtypeName(p.q.dtype) +
         " (the dtype of q)");
  checkBasic("o", p.o, 4, "[B, T, Hv, V]");
  if (p.o.shape != oShape) fail("o has shape " + dims(p.o.shape) + "; expected [B, T, Hv, V] = " + dims(oShape));

  // cu_seqlens.
  int64_t N = B;
  if (p.cu_seqlens) {
    const TensorRef &cu = *p.cu_seqlens;
    if (cu.dtype != DType::I32 && cu.dtype != DType::I64)
      fail(std::string("cu_seqlens has dtype ") + dtypeName(cu.dtype) + "; expected i32 or i64");
    checkBasic("cu_seqlens", cu, 1, "[N + 1]");
    if (cu.shape[0] < 2) fail("cu_seqlens must have N + 1 >= 2 entries, got " + std::to_string(cu.shape[0]));
    if (B != 1) fail("cu_seqlens requires B = 1, got B = " + std::to_string(B));
    N = cu.shape[0] - 1;
    if (const int64_t *h = p.cu_seqlens_host) {
      if (h[0] != 0) fail("cu_seqlens[0] must be 0, got " + std::to_string(h[0]));
      for (int64_t i = 1; i <= N; ++i)
        if (h[i] < h[i - 1])
          fail("cu_seqlens must be non-decreasing: cu_seqlens[" + std::to_string(i) + "] = " + std::to_string(h[i]) +
               " < cu_seqlens[" + std::to_string(i - 1) + "] = " + std::to_string(h[i - 1]));
      if (h[N] != T)
        fail("cu_seqlens must end at T = " + std::to_string(T) + ", got cu_seqlens[" + std::to_string(N) +
             "] = " + std::to_string(h[N]));
    }
  } else if (p.cu_seqlens_host) {
    fail("cu_seqlens_host is given but cu_seqlens is not");
  }

  // States.
  const std::vector<int64_t> sShape = {N, Hv, K, V};
  for (const auto &[name, t] : {std::pair<const char *, const std::optional<TensorRef> *>{"initial_state", &p.initial_state},
                                {"final_state", &p.final_state}}) {
    if (!*t) continue;
    const TensorRef &s = **t;
    if (s.dtype != DType::F32) fail(std::string(name) + " has dtype " + dtypeName(s.dtype) + "; expected f32");
    checkBasic(name, s, 4, "[N, Hv, K, V]");
    if (s.shape != sShape)
      fail(std::string(name) + " has shape " + dims(s.shape) + "; expected [N, Hv, K, V] = " + dims(sShape));
  }

  if (!std::isnan(p.scale) && !std::isfinite(p.scale)) fail("scale = " + std::to_string(p.scale) + " is not finite");
  if (p.segment_chunks < -1)
    fail("segment_chunks = " + std::to_string(p.segment_chunks) +
         " (0: the cost model, -1: never split, n > 0: segments of n chunks)");

  // Layouts: q, k, v, o and the states are read/written by TMA (16-byte rows);
  // g, beta and cu_seqlens need a unit last-dim stride (the kernels' own
  // signatures add what else they need, checked in planForward).
  checkLayout("q", p.q, true);
  checkLayout("k", p.k, true);
  checkLayout("v", p.v, true);
  checkLayout("g", p.g, false);
  checkLayout("beta", p.beta, false);
  checkLayout("o", p.o, true);
  if (p.initial_state) checkLayout("initial_state", *p.initial_state, true);
  if (p.final_state) checkLayout("final_state", *p.final_state, true);
  if (p.cu_seqlens) {
    const TensorRef &cu = *p.cu_seqlens;
    if (cu.shape[0] > 1 && stridesOf(cu)[0] != 1)
      fail("cu_seqlens must be contiguous (stride 1); got strides " + dims(stridesOf(cu)));
    if (reinterpret_cast<uintptr_t>(cu.data) % uintptr_t(dtypeBytes(cu.dtype)) != 0)
      fail("cu_seqlens's data pointer " + ptrText(cu.data) + " is not " + std::to_string(dtypeBytes(cu.dtype)) +
           "-byte aligned");
  }

  // Outputs: no element written twice, no overlap with any other argument.
  checkNoSelfOverlap("o", p.o);
  if (p.final_state) checkNoSelfOverlap("final_state", *p.final_state);
  std::vector<Named> all = namedTensors(p);
  for (const Named &out : all) {
    if (!out.output) continue;
    auto [olo, ohi] = byteSpan(*out.t);
    for (const Named &other : all) {
      if (other.t == out.t) continue;
      auto [lo, hi] = byteSpan(*other.t);
      if (olo < hi && lo < ohi) {
        // Report each pair once, the output first in argument order.
        fail(std::string(out.name) + " overlaps " + other.name + " in memory");
      }
    }
  }
}

size_t forwardWorkspaceBytes(DType dtype, int64_t B, int64_t T, int64_t Hv, int64_t K, int64_t V,
                             int64_t numSequences, int64_t segmentChunks) {
  if (B < 1 || T < 1 || Hv < 1 || K < 1 || V < 1 || B > kMaxExtent || T > kMaxExtent || Hv > kMaxExtent ||
      K > 128 || V > 128 || numSequences < 0 || numSequences > kMaxExtent || (numSequences > 0 && B != 1))
    fail("forwardWorkspaceBytes: bad sizes B = " + std::to_string(B) + ", T = " + std::to_string(T) +
         ", Hv = " + std::to_string(Hv) + ", K = " + std::to_string(K) + ", V = " + std::to_string(V) +
         ", numSequences = " + std::to_string(numSequences));
  if ((long double)B * T * roundUp(Hv, 4) * (K + V + 4) * 2 > (long double)kMaxBytes)
    fail("forwardWorkspaceBytes: the problem is too large");
  if (segmentChunks < -1)
    fail("forwardWorkspaceBytes: segmentChunks = " + std::to_string(segmentChunks) +
         " (0: the cost model, -1: never split, n > 0: segments of n chunks)");
  return workspaceLayout(dtype, B, T, Hv, K, V, numSequences, segmentChunks).total;
}

size_t forwardWorkspaceBytes(const ForwardParams &p) {
  validateForward(p);
  return workspaceBytesOf(p);
}

ForwardConfig forwardConfig(const ForwardParams &p) {
  ForwardConfig c;
  c.dtype = p.q.dtype;
  c.betaDtype = p.beta.dtype;
  c.K = int(p.q.shape.size() == 4 ? p.q.shape[3] : 0);
  c.V = int(p.v.shape.size() == 4 ? p.v.shape[3] : 0);
  c.varlen = p.cu_seqlens.has_value();
  c.cuDtype = c.varlen ? p.cu_seqlens->dtype : DType::I32;
  c.l2norm = p.use_qk_l2norm;
  c.initialState = p.initial_state.has_value();
  c.finalState = p.final_state.has_value();
  return c;
}

bool ForwardConfig::operator==(const ForwardConfig &o) const { return configKey(*this) == configKey(o); }

std::string ForwardConfig::str() const {
  std::ostringstream s;
  s << "dtype=" << dtypeName(dtype) << " beta=" << dtypeName(betaDtype) << " K=" << K << " V=" << V
    << " varlen=" << varlen;
  if (varlen) s << " cu=" << dtypeName(cuDtype);
  s << " l2norm=" << l2norm << " initial_state=" << initialState << " final_state=" << finalState;
  return s.str();
}

std::vector<ForwardConfig> allForwardConfigs() {
  std::vector<ForwardConfig> out;
  for (DType dt : {DType::BF16, DType::F16})
    for (bool betaF32 : {true, false})
      for (int K : {64, 128})
        for (int V : {64, 128})
          for (int vl : {0, 1, 2})  // dense, varlen i32, varlen i64
            for (bool l2 : {false, true})
              for (bool h0 : {false, true})
                for (bool ht : {false, true}) {
                  ForwardConfig c;
                  c.dtype = dt;
                  c.betaDtype = betaF32 ? DType::F32 : dt;
                  c.K = K;
                  c.V = V;
                  c.varlen = vl != 0;
                  c.cuDtype = vl == 2 ? DType::I64 : DType::I32;
                  c.l2norm = l2;
                  c.initialState = h0;
                  c.finalState = ht;
                  out.push_back(c);
                }
  return out;
}

std::string KernelSpec::str() const {
  std::string s = file;
  for (auto &[k, v] : defines) s += " -D " + k + "=" + v;
  return s;
}

KernelSpec prepareKernelSpec(const ForwardConfig &c) {
  KernelSpec s;
  s.file = kPrepareFile;
  s.defines = {{"DT", dtypeName(c.dtype)},
               {"BT", dtypeName(c.betaDtype)},
               {"CT", dtypeName(c.varlen ? c.cuDtype : DType::I32)},
               {"DK", std::to_string(c.K)},
               {"DV", std::to_string(c.V)},
               {"VARLEN", c.varlen ? "1" : "0"},
               {"L2NORM", c.l2norm ? "1" : "0"}};
  return s;
}

KernelSpec stateKernelSpec(const ForwardConfig &c) {
  KernelSpec s;
  s.file = kStateFile;
  s.defines = {{"DT", dtypeName(c.dtype)},
               {"CT", dtypeName(c.varlen ? c.cuDtype : DType::I32)},
               {"DK", std::to_string(c.K)},
               {"DV", std::to_string(c.V)},
               {"VARLEN", c.varlen ? "1" : "0"},
               {"L2NORM", c.l2norm ? "1" : "0"},
               {"HAS_H0", c.initialState ? "1" : "0"},
               {"STORE_HT", c.finalState ? "1" : "0"},
               {"PASS", "2"}};
  return s;
}

KernelSpec segmentKernelSpec(const ForwardConfig &c) {
  KernelSpec s = stateKernelSpec(c);
  s.defines["STORE_HT"] = "0";  // pass 1 writes segment states only
  s.defines["PASS"] = "1";
  return s;
}

KernelSpec mergeKernelSpec(const ForwardConfig &c) {
  KernelSpec s;
  s.file = kMergeFile;
  s.defines = {{"CT", dtypeName(c.varlen ? c.cuDtype : DType::I32)},
               {"DK", std::to_string(c.K)},
               {"DV", std::to_string(c.V)},
               {"VARLEN", c.varlen ? "1" : "0"}};
  return s;
}

const std::vector<std::pair<std::string, std::string>> &embeddedKernelSources() {
  return detail::embeddedKernelTable();
}

const std::string *embeddedKernelSource(const std::string &file) {
  for (auto &e : detail::embeddedKernelTable())
    if (e.first == file) return &e.second;
  return nullptr;
}

void warmup(const ForwardConfig &c, bool loadOnGpu) {
  if (!isHalf(c.dtype)) fail(std::string("warmup: dtype ") + dtypeName(c.dtype) + " is not bf16 or f16");
  if (c.betaDtype != DType::F32 && c.betaDtype != c.dtype)
    fail(std::string("warmup: beta dtype ") + dtypeName(c.betaDtype) + " is not f32 or " + dtypeName(c.dtype));
  if ((c.K != 64 && c.K != 128) || (c.V != 64 && c.V != 128))
    fail("warmup: K = " + std::to_string(c.K) + ", V = " + std::to_string(c.V) + " is not supported (64 or 128)");
  if (c.varlen && c.cuDtype != DType::I32 && c.cuDtype != DType::I64)
    fail(std::string("warmup: cu_seqlens dtype ") + dtypeName(c.cuDtype) + " is not i32 or i64");
  ConfigKernels ck = kernelsFor(c);
  for (KernelSlot *k : {ck.prepare, ck.state, ck.segment, ck.merge}) compiled(*k);
  if (loadOnGpu && rt::gpuAvailable()) {
    CUcontext ctx = currentOrPrimaryContext();
    for (KernelSlot *k : {ck.prepare, ck.state, ck.segment, ck.merge}) loadedFor(*k, ctx);
  }
}

void warmup(DType dtype, int K, int V, bool loadOnGpu) {
  for (const ForwardConfig &c : allForwardConfigs())
    if (c.dtype == dtype && c.K == K && c.V == V) warmup(c, loadOnGpu);
}

LaunchPlan planForward(const ForwardParams &p, void *workspace, size_t workspaceBytes) {
  validateForward(p);
  checkWorkspace(p, workspace, workspaceBytes);
  Plan plan = buildPlan(p, workspace);
  LaunchPlan lp;
  lp.config = plan.config;
  lp.prepareSpec = plan.kernels.prepare->spec;
  lp.stateSpec = plan.kernels.state->spec;
  lp.prepare = std::move(plan.prepare);
  lp.state = std::move(plan.state);
  lp.prepareInfo = compiled(*plan.kernels.prepare).info();
  lp.stateInfo = compiled(*plan.kernels.state).info();
  lp.prepareGrid = plan.prepareGrid;
  lp.stateGrid = plan.stateGrid;
  lp.split = plan.schedule.split;
  lp.segmentChunks = plan.schedule.segChunks;
  if (lp.split) {
    lp.segmentSpec = plan.kernels.segment->spec;
    lp.mergeSpec = plan.kernels.merge->spec;
    lp.segment = std::move(plan.segment);
    lp.merge = std::move(plan.merge);
    lp.segmentInfo = compiled(*plan.kernels.segment).info();
    lp.mergeInfo = compiled(*plan.kernels.merge).info();
    lp.segmentGrid = plan.segmentGrid;
    lp.mergeGrid = plan.mergeGrid;
  }
  return lp;
}

void forward(const ForwardParams &p, void *workspace, size_t workspaceBytes) {
  validateForward(p);
  checkWorkspace(p, workspace, workspaceBytes);
  CUcontext ctx = checkDevice(p, workspace, workspaceBytesOf(p));
  Plan plan = buildPlan(p, workspace);
  // Load every module before launching any, so that a load error leaves the
  // outputs untouched too.
  struct Step {
    std::shared_ptr<rt::LoadedKernel> kernel;
    const rt::LaunchArgs *args;
    const KernelSpec *spec;
  };
  std::vector<Step> steps;
  auto add = [&](KernelSlot *k, const rt::LaunchArgs &a) { steps.push_back({loadedFor(*k, ctx), &a, &k->spec}); };
  add(plan.kernels.prepare, plan.prepare);
  if (plan.schedule.split) {
    add(plan.kernels.segment, plan.segment);
    add(plan.kernels.merge, plan.merge);
  }
  add(plan.kernels.state, plan.state);
  for (const Step &s : steps) {
    try {
      s.kernel->launch(*s.args);
    } catch (const std::exception &e) {
      fail("launching " + s.spec->str() + " failed: " + e.what());
    }
  }
}

}  // namespace qla::gdn
