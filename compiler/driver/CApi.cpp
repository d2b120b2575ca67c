// The C ABI over the JIT API: no exception crosses it.
#include "qla/c_api.h"

#include <cstring>
#include <string>

#include "qla/jit.h"

struct qla_kernel {
  qla::JitKernel kernel;
  std::string infoText;
};

namespace {

void setErr(char *err, size_t len, const std::string &msg) {
  if (!err || !len) return;
  size_t n = std::min(len - 1, msg.size());
  std::memcpy(err, msg.data(), n);
  err[n] = 0;
}

bool parseDefines(const char *text, std::map<std::string, std::string> &out, std::string &error) {
  if (!text) return true;
  std::string s = text;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t end = s.find(';', pos);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(pos, end - pos);
    if (!item.empty()) {
      size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0) {
        error = "bad define '" + item + "' (expected NAME=VALUE)";
        return false;
      }
      out[item.substr(0, eq)] = item.substr(eq + 1);
    }
    pos = end + 1;
  }
  return true;
}

template <typename F>
qla_kernel *compileWith(F &&f, const char *defines, const char *kernel, char *err, size_t errlen) {
  try {
    qla::JitOptions opt;
    std::string e;
    if (!parseDefines(defines, opt.defines, e)) {
      setErr(err, errlen, e);
      return nullptr;
    }
    if (kernel) opt.kernel = kernel;
    auto *k = new qla_kernel{f(opt), {}};
    k->infoText = k->kernel.info().serialize();
    return k;
  } catch (const std::exception &ex) {
    setErr(err, errlen, ex.what());
  } catch (...) {
    setErr(err, errlen, "unknown error");
  }
  return nullptr;
}

}  // namespace

extern "C" {

qla_kernel *qla_compile_file(const char *path, const char *defines, const char *kernel, char *err, size_t errlen) {
  if (!path) {
    setErr(err, errlen, "qla_compile_file: path is NULL");
    return nullptr;
  }
  return compileWith([&](const qla::JitOptions &o) { return qla::jitCompileFile(path, o); }, defines, kernel, err,
                     errlen);
}

qla_kernel *qla_compile_string(const char *source, const char *filename, const char *defines, const char *kernel,
                               char *err, size_t errlen) {
  if (!source) {
    setErr(err, errlen, "qla_compile_string: source is NULL");
    return nullptr;
  }
  std::string fn = filename ? filename : "<string>";
  return compileWith([&](const qla::JitOptions &o) { return qla::jitCompileString(source, fn, o); }, defines,
                     kernel, err, errlen);
}

void qla_kernel_free(qla_kernel *k) { delete k; }

const char *qla_kernel_info(const qla_kernel *k) { return k ? k->infoText.c_str() : ""; }

int qla_kernel_cache_hit(const qla_kernel *k) {
  if (!k) return -1;
  switch (k->kernel.cacheHit()) {
    case qla::rt::CacheHit::Miss: return 0;
    case qla::rt::CacheHit::Memory: return 1;
    case qla::rt::CacheHit::Disk: return 2;
  }
  return -1;
}

double qla_kernel_build_seconds(const qla_kernel *k) { return k ? k->kernel.buildSeconds() : 0.0; }

int qla_launch(qla_kernel *k, int ntensors, void *const *ptrs, const int *ranks, const int64_t *shapes,
               const int64_t *strides, int nscalars, const double *scalars, void *stream, char *err,
               size_t errlen) {
  if (!k) {
    setErr(err, errlen, "qla_launch: kernel is NULL");
    return -1;
  }
  try {
    qla::rt::LaunchArgs args;
    size_t off = 0;
    for (int i = 0; i < ntensors; ++i) {
      qla::rt::TensorArg t;
      t.data = ptrs[i];
      t.shape.assign(shapes + off, shapes + off + ranks[i]);
      if (strides) t.strides.assign(strides + off, strides + off + ranks[i]);
      off += ranks[i];
      args.tensors.push_back(std::move(t));
    }
    args.scalars.assign(scalars, scalars + (scalars ? nscalars : 0));
    args.stream = static_cast<CUstream>(stream);
    k->kernel.launch(args);
    return 0;
  } catch (const std::exception &ex) {
    setErr(err, errlen, ex.what());
  } catch (...) {
    setErr(err, errlen, "unknown error");
  }
  return -1;
}

int qla_trace_dump(const char *path, char *err, size_t errlen) {
  if (!path || !*path) {
    setErr(err, errlen, "qla_trace_dump: no path");
    return -1;
  }
  try {
    return qla::rt::dumpTraces(path);
  } catch (const std::exception &e) {
    setErr(err, errlen, e.what());
    return -1;
  }
}

const char *qla_version(void) { return qla::qlaVersion(); }

const char *qla_nvrtc_version(void) {
  static const std::string v = [] {
    try {
      return qla::rt::nvrtcVersion();
    } catch (...) {
      return std::string("unknown");
    }
  }();
  return v.c_str();
}

const char *qla_cache_dir(void) { return qla::rt::KernelCache::global().directory().c_str(); }

const char *qla_prebuilt_dirs(void) {
  static const std::string s = [] {
    std::string j;
    for (const std::string &d : qla::rt::KernelCache::global().prebuiltDirectories()) j += (j.empty() ? "" : ":") + d;
    return j;
  }();
  return s.c_str();
}

int qla_gpu_available(char *msg, size_t msglen) {
  try {
    std::string why;
    if (!qla::rt::gpuAvailable(&why)) {
      setErr(msg, msglen, why);
      return 0;
    }
    std::string arch = qla::rt::deviceArch(0);
    if (arch != "sm_90a") {
      setErr(msg, msglen, "device 0 is " + arch + "; QLA kernels need sm_90a (H100/H200)");
      return 0;
    }
    setErr(msg, msglen, arch);
    return 1;
  } catch (const std::exception &ex) {
    setErr(msg, msglen, ex.what());
  } catch (...) {
    setErr(msg, msglen, "unknown error");
  }
  return 0;
}

}  // extern "C"
