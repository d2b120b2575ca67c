// The JIT API: compiler driver + NVRTC + kernel cache + launcher.
#include "qla/jit.h"

#include <chrono>
#include <fstream>
#include <sstream>

namespace qla {

static std::string joinLines(const std::vector<std::string> &v) {
  std::string s;
  for (auto &l : v) s += (s.empty() ? "" : "\n") + l;
  return s;
}

CompileError::CompileError(std::vector<std::string> diags)
    : std::runtime_error(joinLines(diags)), diagnostics(std::move(diags)) {}

JitKernel jitCompileString(const std::string &source, const std::string &filename, const JitOptions &options) {
  auto t0 = std::chrono::steady_clock::now();
  CompileOptions co;
  co.defines = options.defines;
  co.kernel = options.kernel;
  CompiledKernel ck;
  std::vector<std::string> diags;
  if (!compileQla(source, filename, co, ck, diags)) throw CompileError(diags);

  rt::NvrtcOptions no;
  if (!options.arch.empty()) no.arch = options.arch;
  else if (rt::gpuAvailable()) no.arch = rt::deviceArch();
  no.extra = options.nvrtcOptions;
  rt::CacheKeyParts parts;
  parts.source = ck.cuda;
  for (auto &o : rt::nvrtcOptionList(no)) parts.options += o + "\n";
  parts.nvrtcVersion = rt::nvrtcVersion();
  parts.arch = no.arch;
  parts.qlaVersion = qlaVersion();
  std::string key = rt::cacheKey(parts);

  rt::KernelCache &cache = options.cache ? *options.cache : rt::KernelCache::global();
  JitKernel k;
  std::string error;
  bool ok = cache.getOrBuild(
      key,
      [&](rt::CacheEntry &e, std::string &err) {
        rt::NvrtcResult r = rt::compileCuda(ck.cuda, ck.info.name, no);
        if (!r.ok) {
          err = r.error;
          return false;
        }
        e.cubin = std::move(r.cubin);
        e.ptx = std::move(r.ptx);
        e.kernelInfo = ck.info.serialize();
        return true;
      },
      k.entry_, error, &k.hit_);
  if (!ok) throw CompileError({filename + ": error: " + error});
  k.info_ = std::move(ck.info);
  k.cuda_ = std::move(ck.cuda);
  k.seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return k;
}

JitKernel jitCompileFile(const std::string &path, const JitOptions &options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CompileError({path + ": error: cannot open file"});
  std::stringstream ss;
  ss << in.rdbuf();
  return jitCompileString(ss.str(), path, options);
}

void JitKernel::launch(const rt::LaunchArgs &args) {
  if (!loaded_) loaded_ = std::make_shared<rt::LoadedKernel>(entry_.cubin, info_);
  loaded_->launch(args);
}

}  // namespace qla
