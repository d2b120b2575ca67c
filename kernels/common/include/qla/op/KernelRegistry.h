// The compiled kernels of a kernel family: one slot per specialization
// (embedded .qla file + -D constants), compiled once per process (JIT, QLA's
// kernel cache underneath) and loaded once per CUDA context. Slots live as
// long as the process, so pointers to them may be memoized. Thread-safe.
// Where $QLA_KERNEL_DIR names a folder holding a file of the same name, that
// file's text replaces the embedded source (read at the slot's first compile):
// kernel variants measured without rebuilding the library.
// Throws op::Error naming the kernel file and its constants.
#pragma once

#include <cuda.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "qla/jit.h"

namespace qla::op {

// One kernel compile: embedded file name and its specialization constants.
struct KernelSpec {
  std::string file;                            // "x_fwd.qla"
  std::map<std::string, std::string> defines;  // DT=bf16, DK=128, ...
  std::string str() const;                     // "x_fwd.qla -D DK=128 -D DT=bf16"
};
// KernelSpec{file, defines}.str() without the copies.
std::string specText(const std::string &file, const std::map<std::string, std::string> &defines);

struct KernelSlot {
  std::mutex mu;
  bool compiled = false;
  KernelSpec spec;
  JitKernel kernel;
  std::vector<std::pair<CUcontext, std::shared_ptr<rt::LoadedKernel>>> loaded;
};

// Compiles are serialized across every registry: the front end and MLIR are
// not known to be thread-safe across contexts, and a cold compile happens
// once per process and specialization.
std::mutex &compileMutex();

class KernelRegistry {
 public:
  // The embedded source of a file, or null when the build has no such file.
  using SourceLookup = std::function<const std::string *(const std::string &file)>;
  using Compiler =
      std::function<JitKernel(const std::string &source, const std::string &filename, const JitOptions &options)>;

  // `sourceDir`: the family's folder in the source tree ("kernels/x/"); the
  // compiler sees the file as sourceDir + file (diagnostics name it so).
  // `compile`: jitCompileString, or a stand-in (tests).
  KernelRegistry(std::string sourceDir, SourceLookup source, Compiler compile = jitCompileString);

  const std::string &sourceDir() const { return dir_; }

  // A family's embedded sources (the table qla_embed_files generates: file
  // name, text) and the lookup a registry over them uses.
  using EmbeddedTable = std::vector<std::pair<std::string, std::string>>;
  static const std::string *find(const EmbeddedTable &table, const std::string &file);
  // A registry over `table` (which outlives it).
  KernelRegistry(std::string sourceDir, const EmbeddedTable &table)
      : KernelRegistry(std::move(sourceDir), [&table](const std::string &f) { return find(table, f); }) {}

  // The slot of `spec` (created on first use; the same slot ever after).
  KernelSlot &slot(const KernelSpec &spec);
  // The slot's kernel, compiled on first use.
  const JitKernel &compiled(KernelSlot &s);
  // The slot's kernel loaded into `ctx` (compiled first), once per context.
  std::shared_ptr<rt::LoadedKernel> loaded(KernelSlot &s, CUcontext ctx);
  // Warm-up: each slot compiled, and with loadOnGpu (where a GPU is
  // available) loaded into the current or primary context.
  void warm(const std::vector<KernelSlot *> &slots, bool loadOnGpu);

 private:
  std::string dir_;
  SourceLookup source_;
  Compiler compile_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<KernelSlot>> slots_;
};

}  // namespace qla::op
