// The C++ JIT API: compile a .qla kernel (file or string) with specialization
// constants, get it from the kernel cache or build it with NVRTC, launch it.
//
//   qla::JitOptions opt;
//   opt.defines["BN"] = "128";
//   qla::JitKernel k = qla::jitCompileFile("gemm.qla", opt);    // throws qla::CompileError
//   qla::rt::LaunchArgs args;
//   args.tensors = {{dA, {M, K}}, {dB, {N, K}}, {dC, {M, N}}};
//   args.stream = stream;
//   k.launch(args);                                           // throws qla::rt::Error
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "qla/compiler/Compiler.h"
#include "qla/runtime/Driver.h"
#include "qla/runtime/KernelCache.h"
#include "qla/runtime/Nvrtc.h"

namespace qla {

struct CompileError : std::runtime_error {
  std::vector<std::string> diagnostics;
  explicit CompileError(std::vector<std::string> diags);
};

struct JitOptions {
  std::map<std::string, std::string> defines;
  std::string kernel;              // which kernel of the file (empty: the only one)
  std::string arch;                // empty: the GPU's (sm_90a on Hopper), else sm_90a
  std::vector<std::string> nvrtcOptions;  // extra NVRTC options
  // .qla line info (CompileOptions::lineInfo + NVRTC --generate-line-info):
  // compute-sanitizer and ncu then point at .qla lines. Also turned on for
  // every JIT compile by QLA_LINE_INFO=1 (lineInfoFromEnvironment). Part of
  // the cache key (the CUDA text and the NVRTC options both change).
  bool lineInfo = false;
  // CompileOptions::partialWaits; also turned on by QLA_PARTIAL_WAITS=1
  // (partialWaitsFromEnvironment). The CUDA text, hence the cache key, changes.
  bool partialWaits = false;
  // CompileOptions::trace; also turned on by QLA_TRACE=1 (traceFromEnvironment).
  bool trace = false;
  // CompileOptions::freshAddressRegs; QLA_FRESH_ADDRESS_REGS=N overrides it.
  int freshAddressRegs = 128;
  // CompileOptions::sharedPointers32; also turned on by QLA_SMEM_PTR32=1.
  bool sharedPointers32 = false;
  // CompileOptions::includeDirs and includeLookup (`include "NAME"`);
  // jitCompileFile puts the file's own folder first.
  std::vector<std::string> includeDirs;
  std::function<const std::string *(const std::string &name)> includeLookup;
  rt::KernelCache *cache = nullptr;       // null: rt::KernelCache::global()
};

// A compiled kernel: cubin + PTX + KernelInfo; loads lazily on first launch.
class JitKernel {
 public:
  const KernelInfo &info() const { return info_; }
  const std::string &cuda() const { return cuda_; }
  const std::string &ptx() const { return entry_.ptx; }
  const std::string &cubin() const { return entry_.cubin; }
  rt::CacheHit cacheHit() const { return hit_; }
  double buildSeconds() const { return seconds_; }  // front end + cache lookup (+ NVRTC on a miss)
  void launch(const rt::LaunchArgs &args);           // needs a GPU

 private:
  friend JitKernel jitCompileString(const std::string &, const std::string &, const JitOptions &);
  KernelInfo info_;
  std::string cuda_;
  rt::CacheEntry entry_;
  rt::CacheHit hit_ = rt::CacheHit::Miss;
  double seconds_ = 0;
  std::shared_ptr<rt::LoadedKernel> loaded_;
};

JitKernel jitCompileString(const std::string &source, const std::string &filename, const JitOptions &options);
// QLA_LINE_INFO: 1/on/true/yes → true; unset, empty, 0/off/false/no → false
// (read on every call; anything else also means true).
bool lineInfoFromEnvironment();
// QLA_PARTIAL_WAITS, read likewise on every call.
bool partialWaitsFromEnvironment();
// QLA_TRACE, read likewise on every call.
bool traceFromEnvironment();
JitKernel jitCompileFile(const std::string &path, const JitOptions &options);

}  // namespace qla
