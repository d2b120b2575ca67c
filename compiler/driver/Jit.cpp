// The JIT API: compiler driver + NVRTC + kernel cache + launcher.
#include "qla/jit.h"
#include "qla/runtime/Sim.h"

#include "qla/runtime/Log.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
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

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

std::string formatDefines(const std::map<std::string, std::string> &defines) {
  std::string s = "{";
  for (auto &[k, v] : defines) s += (s.size() > 1 ? ", " : "") + k + "=" + v;
  return s + "}";
}

}  // namespace

namespace {
// 1/on/true/yes (anything else) → true; unset, empty, 0/off/false/no → false.
bool flagFromEnvironment(const char *name) {
  const char *v = std::getenv(name);
  if (!v || !*v) return false;
  for (const char *off : {"0", "off", "OFF", "false", "FALSE", "no", "NO"})
    if (std::strcmp(v, off) == 0) return false;
  return true;
}
}  // namespace

bool lineInfoFromEnvironment() { return flagFromEnvironment("QLA_LINE_INFO"); }
bool partialWaitsFromEnvironment() { return flagFromEnvironment("QLA_PARTIAL_WAITS"); }
bool traceFromEnvironment() { return flagFromEnvironment("QLA_TRACE"); }
int freshAddressRegsFromEnvironment(int fallback) {
  const char *v = std::getenv("QLA_FRESH_ADDRESS_REGS");
  if (!v || !*v) return fallback;
  char *end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end || n < 1 || n > 1024) {
    static bool warned = false;
    if (!warned) std::fprintf(stderr, "qla: warning: QLA_FRESH_ADDRESS_REGS='%s' is not a register count; ignored\n", v);
    warned = true;
    return fallback;
  }
  return int(n);
}

JitKernel jitCompileString(const std::string &source, const std::string &filename, const JitOptions &options) {
  const auto t0 = Clock::now();
  const bool logging = rt::logEnabled(rt::LogLevel::Error);
  const std::string defines = logging ? formatDefines(options.defines) : std::string();
  rt::logPrintf(rt::LogLevel::Debug, "jit: request %s kernel=%s defines=%s", filename.c_str(),
                options.kernel.empty() ? "(the file's only kernel)" : options.kernel.c_str(), defines.c_str());
  CompileOptions co;
  co.defines = options.defines;
  co.kernel = options.kernel;
  const bool lineInfo = options.lineInfo || lineInfoFromEnvironment();
  co.lineInfo = lineInfo;
  co.partialWaits = options.partialWaits || partialWaitsFromEnvironment();
  co.trace = options.trace || traceFromEnvironment();
  co.freshAddressRegs = freshAddressRegsFromEnvironment(options.freshAddressRegs);
  co.sharedPointers32 = options.sharedPointers32 || flagFromEnvironment("QLA_SMEM_PTR32");
  co.includeDirs = options.includeDirs;
  co.includeLookup = options.includeLookup;
  CompiledKernel ck;
  std::vector<std::string> diags;
  if (!compileQla(source, filename, co, ck, diags)) {
    rt::logPrintf(rt::LogLevel::Error, "jit: %s defines=%s: compile error after %.3f ms: %s", filename.c_str(),
                  defines.c_str(), msSince(t0), diags.empty() ? "(no diagnostic)" : diags.front().c_str());
    throw CompileError(diags);
  }
  const double frontMs = msSince(t0);

  // On the CPU simulator (QLA_SIM) a kernel is its CUDA: no NVRTC, no cubin
  // (LoadedKernel compiles it for the host).
  if (rt::simEnabled()) {
    JitKernel k;
    k.info_ = std::move(ck.info);
    k.cuda_ = std::move(ck.cuda);
    k.seconds_ = std::chrono::duration<double>(Clock::now() - t0).count();
    return k;
  }

  rt::NvrtcOptions no;
  if (!options.arch.empty()) no.arch = options.arch;
  else if (rt::gpuAvailable()) no.arch = rt::deviceArch();
  no.extra = options.nvrtcOptions;
  if (lineInfo) no.extra.push_back(lineInfoNvrtcOption());  // in the key through nvrtcOptionList
  rt::CacheKeyParts parts;
  parts.source = ck.cuda;
  for (auto &o : rt::nvrtcOptionList(no)) parts.options += o + "\n";
  parts.nvrtcVersion = rt::nvrtcVersion();
  parts.arch = no.arch;
  parts.qlaVersion = qlaVersion();
  std::string key = rt::cacheKey(parts);

  // "gemm [qla_gemm_1a2b3c4d] (gemm.qla) defines={BN=128} arch=sm_90a"
  const std::string what = logging ? ck.kernelName + " [" + ck.info.name + "] (" + filename + ") defines=" +
                                         defines + " arch=" + no.arch
                                   : std::string();
  rt::KernelCache &cache = options.cache ? *options.cache : rt::KernelCache::global();
  JitKernel k;
  std::string error;
  double nvrtcMs = 0;
  const auto tLookup = Clock::now();
  bool ok = cache.getOrBuild(
      key,
      [&](rt::CacheEntry &e, std::string &err) {
        rt::logPrintf(rt::LogLevel::Debug, "jit: %s: cache miss (key %s); running NVRTC", what.c_str(),
                      key.c_str());
        const auto tn = Clock::now();
        rt::NvrtcResult r = rt::compileCuda(ck.cuda, ck.info.name, no);
        nvrtcMs = msSince(tn);
        if (!r.ok) {
          err = r.error;
          return false;
        }
        if (!r.log.empty()) rt::logPrintf(rt::LogLevel::Debug, "nvrtc: %s: %s", ck.info.name.c_str(), r.log.c_str());
        e.cubin = std::move(r.cubin);
        e.ptx = std::move(r.ptx);
        e.kernelInfo = ck.info.serialize();
        return true;
      },
      k.entry_, error, &k.hit_);
  const double cacheMs = msSince(tLookup);  // lookup (+ NVRTC + store on a miss)
  if (!ok) {
    rt::logPrintf(rt::LogLevel::Error, "jit: %s: NVRTC failed after %.3f ms", what.c_str(), nvrtcMs);
    throw CompileError({filename + ": error: " + error});
  }
  k.info_ = std::move(ck.info);
  k.cuda_ = std::move(ck.cuda);
  k.seconds_ = std::chrono::duration<double>(Clock::now() - t0).count();
  if (rt::logEnabled(rt::LogLevel::Info)) {
    const double totalMs = k.seconds_ * 1e3;
    switch (k.hit_) {
      case rt::CacheHit::Memory:
        rt::logPrintf(rt::LogLevel::Info, "jit: %s: memory-cache hit; front end+passes+emit %.3f ms, total %.3f ms",
                      what.c_str(), frontMs, totalMs);
        break;
      case rt::CacheHit::Disk:
        rt::logPrintf(rt::LogLevel::Info,
                      "jit: %s: disk-cache hit %s; front end+passes+emit %.3f ms, cache read %.3f ms, total %.3f ms",
                      what.c_str(), cache.pathFor(key).c_str(), frontMs, cacheMs, totalMs);
        break;
      case rt::CacheHit::Miss:
        rt::logPrintf(rt::LogLevel::Info,
                      "jit: %s: cache miss, compiled; front end+passes+emit %.3f ms, NVRTC %.3f ms, total %.3f ms; "
                      "entry %s",
                      what.c_str(), frontMs, nvrtcMs, totalMs, cache.pathFor(key).c_str());
        break;
    }
  }
  return k;
}

JitKernel jitCompileFile(const std::string &path, const JitOptions &options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CompileError({path + ": error: cannot open file"});
  std::stringstream ss;
  ss << in.rdbuf();
  // `include` finds files beside this one first.
  JitOptions o = options;
  o.includeDirs.insert(o.includeDirs.begin(), std::filesystem::path(path).parent_path().string());
  return jitCompileString(ss.str(), path, o);
}

void JitKernel::launch(const rt::LaunchArgs &args) {
  if (!loaded_)
    loaded_ = rt::simEnabled() ? std::make_shared<rt::LoadedKernel>(rt::LoadedKernel::Simulated{}, cuda_, info_)
                               : std::make_shared<rt::LoadedKernel>(entry_.cubin, info_);
  loaded_->launch(args);
}

}  // namespace qla
