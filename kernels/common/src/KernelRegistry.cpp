#include "qla/op/KernelRegistry.h"

#include "qla/op/Device.h"
#include "qla/op/Error.h"
#include "qla/runtime/Log.h"
#include "qla/runtime/Sim.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace qla::op {

std::string specText(const std::string &file, const std::map<std::string, std::string> &defines) {
  std::string s = file;
  for (auto &[k, v] : defines) s += " -D " + k + "=" + v;
  return s;
}

std::string KernelSpec::str() const { return specText(file, defines); }

std::mutex &compileMutex() {
  static std::mutex mu;
  return mu;
}

const std::string *KernelRegistry::find(const EmbeddedTable &table, const std::string &file) {
  for (const auto &e : table)
    if (e.first == file) return &e.second;
  return nullptr;
}

void KernelRegistry::warm(const std::vector<KernelSlot *> &slots, bool loadOnGpu) {
  for (KernelSlot *s : slots) compiled(*s);
  if (!loadOnGpu || !rt::gpuAvailable()) return;
  CUcontext ctx = currentOrPrimaryContext();
  for (KernelSlot *s : slots) loaded(*s, ctx);
}

KernelRegistry::KernelRegistry(std::string sourceDir, SourceLookup source, Compiler compile)
    : dir_(std::move(sourceDir)), source_(std::move(source)), compile_(std::move(compile)) {}

KernelSlot &KernelRegistry::slot(const KernelSpec &spec) {
  std::lock_guard<std::mutex> lock(mu_);
  auto &s = slots_[spec.str()];
  if (!s) {
    s = std::make_unique<KernelSlot>();
    s->spec = spec;
  }
  return *s;
}

const JitKernel &KernelRegistry::compiled(KernelSlot &s) {
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.compiled) return s.kernel;
  const std::string *source = source_ ? source_(s.spec.file) : nullptr;
  // $QLA_KERNEL_DIR/<file>, where it exists, replaces the embedded source
  // (kernel variants without a rebuild; docs/internals.md).
  std::string override;
  const char *kernelDir = std::getenv("QLA_KERNEL_DIR");
  if (kernelDir && *kernelDir) {
    const std::string path = std::string(kernelDir) + "/" + s.spec.file;
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::ostringstream text;
      text << in.rdbuf();
      override = text.str();
      source = &override;
      rt::logPrintf(rt::LogLevel::Info, "kernels: %s from %s (QLA_KERNEL_DIR)", s.spec.file.c_str(), path.c_str());
    }
  }
  if (!source)
    fail("the kernel " + s.spec.file + " was not embedded in this build of QLA (" + dir_ + s.spec.file +
         " missing at build time)");
  try {
    std::lock_guard<std::mutex> clock(compileMutex());
    JitOptions opt;
    opt.defines = s.spec.defines;
    // `include "NAME"`: $QLA_KERNEL_DIR/NAME where it exists, else the
    // family's embedded NAME.
    if (kernelDir && *kernelDir) opt.includeDirs.push_back(kernelDir);
    opt.includeLookup = source_;
    s.kernel = compile_(*source, dir_ + s.spec.file, opt);
  } catch (const std::exception &e) {
    fail("compiling " + s.spec.str() + " failed:\n" + e.what());
  }
  s.compiled = true;
  return s.kernel;
}

std::shared_ptr<rt::LoadedKernel> KernelRegistry::loaded(KernelSlot &s, CUcontext ctx) {
  const JitKernel &k = compiled(s);
  std::lock_guard<std::mutex> lock(s.mu);
  for (auto &e : s.loaded)
    if (e.first == ctx) return e.second;
  std::shared_ptr<rt::LoadedKernel> lk;
  try {
    lk = rt::simEnabled() ? std::make_shared<rt::LoadedKernel>(rt::LoadedKernel::Simulated{}, k.cuda(), k.info())
                          : std::make_shared<rt::LoadedKernel>(k.cubin(), k.info());
  } catch (const std::exception &e) {
    fail("loading " + s.spec.str() + " failed: " + e.what());
  }
  s.loaded.emplace_back(ctx, lk);
  return lk;
}

}  // namespace qla::op
