#include "qla/op/Launch.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

#include "qla/op/Error.h"

namespace qla::op {

std::vector<int64_t> launchStrides(const TensorView &t) {
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

rt::TensorArg launchArg(const TensorView &t) { return rt::TensorArg{t.data, t.shape, launchStrides(t)}; }

rt::TensorArg contiguousArg(void *data, std::vector<int64_t> shape) {
  return rt::TensorArg{data, std::move(shape), {}};
}

void checkSignature(const KernelSpec &spec, const KernelInfo &info, const Signature &want,
                    const std::string &contractDoc) {
  auto bad = [&](const std::string &m) {
    fail("internal error: " + spec.file + " does not have the signature the operator launches (" + m + "; see " +
         contractDoc + ")");
  };
  const std::vector<std::string> &names = want.tensors;
  if (info.tensors.size() != names.size())
    bad(std::to_string(info.tensors.size()) + " tensor arguments, expected " + std::to_string(names.size()));
  for (size_t i = 0; i < names.size(); ++i) {
    if (info.tensors[i].name != names[i])
      bad("tensor argument " + std::to_string(i) + " is '" + info.tensors[i].name + "', expected '" + names[i] + "'");
    if (info.tensors[i].dtype != want.dtypes[i])
      bad("tensor '" + names[i] + "' has dtype " + dtypeName(info.tensors[i].dtype) + ", expected " +
          dtypeName(want.dtypes[i]));
  }
  if (info.scalars.size() != want.scalars)
    bad(std::to_string(info.scalars.size()) + " scalar arguments, expected " + std::to_string(want.scalars));
}

void checkAgainstKernel(const KernelSpec &spec, const KernelInfo &info, const rt::LaunchArgs &args,
                        const ArgNames &names) {
  for (size_t t = 0; t < info.tensors.size(); ++t) {
    const rt::TensorArg &ta = args.tensors[t];
    auto it = names.find(info.tensors[t].name);
    const std::string name = it == names.end() ? info.tensors[t].name : it->second;
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

std::array<int64_t, 3> launchGrid(const KernelInfo &info, const rt::LaunchArgs &args) {
  try {
    return rt::LoadedKernel::launchGridFor(info, args);
  } catch (const rt::Error &e) {
    fail(e.what());
  }
}

void launchAll(KernelRegistry &registry, CUcontext ctx, const std::vector<LaunchStep> &steps) {
  std::vector<std::shared_ptr<rt::LoadedKernel>> loaded;
  loaded.reserve(steps.size());
  for (const LaunchStep &s : steps) loaded.push_back(registry.loaded(*s.kernel, ctx));
  static const bool overlap = [] {
    const char *e = std::getenv("QLA_PDL");
    return !(e && std::string(e) == "0");
  }();
  for (size_t i = 0; i < steps.size(); ++i) {
    // A kernel declared follows(...) that comes after another step on the same
    // stream may start while that one finishes; the first step never does
    // (what came before the operator is not ours to overlap).
    const bool programmatic = overlap && i > 0 && loaded[i]->info().follows &&
                              steps[i].args->stream == steps[i - 1].args->stream;
    try {
      loaded[i]->launch(*steps[i].args, programmatic);
    } catch (const std::exception &e) {
      fail("launching " + steps[i].kernel->spec.str() + " failed: " + e.what());
    }
  }
}

}  // namespace qla::op
