// The compiler driver: .qla source → qla IR → passes → CUDA C++ (+ KernelInfo).
// No MLIR types in this header: tools, the JIT API and the GDN operators use it.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "qla/runtime/KernelInfo.h"

namespace qla {

struct CompileOptions {
  std::map<std::string, std::string> defines;  // specialization constants (-D NAME=VALUE)
  std::string kernel;            // which kernel of the file; empty: the file's only kernel
  bool printIrAfterAll = false;  // print the IR after every pass to stderr
  bool frontEndOnly = false;     // stop after building the tile-level IR (tileIr only)
  // Map the CUDA to .qla lines: `#line N "file.qla"` before the code of every
  // statement (instead of `// file.qla:N` comments). Pass `--generate-line-info`
  // to NVRTC as well (lineInfoNvrtcOption) to get the line table into the
  // cubin, for compute-sanitizer and ncu's source view. Off by default.
  bool lineInfo = false;
  // Shared wgmma waits sunk to the first use of each product and split into
  // partial waits (qla-lower-to-qlanv{partial-waits}; docs/internals.md). Off
  // by default; QLA_PARTIAL_WAITS=1 turns it on for JIT compiles.
  bool partialWaits = false;
  // Shared → global copies of a role's own tiles by TMA where the slice lies
  // whole in the tensor (docs/internals.md); false: always by threads.
  bool tmaStores = true;
  // Record every channel wait, wgmma wait and slot release with its clock64
  // into a device buffer of the module (qla/device/trace.cuh), read back by
  // qla_trace_dump (docs/internals.md, "Tracing"). Off by default;
  // QLA_TRACE=1 turns it on for JIT compiles. The traced kernel is a
  // different symbol (and cache entry) from the untraced one.
  bool trace = false;
  // A shared <-> fragment copy of a fragment of at least this many registers
  // a thread computes its shared addresses in the copy (lane and warp ids
  // taken afresh) rather than letting them be hoisted out of an enclosing
  // loop and held (EmitOptions::freshAddressRegs). 128 by default; 32 cuts
  // the fused backward's spills by about a quarter (kernels/gdn/KERNELS.md,
  // section 5), unmeasured on a GPU. QLA_FRESH_ADDRESS_REGS=N sets it for JIT
  // compiles (the CUDA text, hence the cache key, changes).
  int freshAddressRegs = 128;
  // Shared tiles as 32-bit shared addresses (qla::dev::sptr,
  // qla/device/smem_ptr.cuh) instead of generic 64-bit pointers, which NVRTC
  // keeps 64 bits wide: the fused GDN backward spills about a fifth less
  // (kernels/gdn/KERNELS.md, section 5), but the whole-head fused forward
  // spills 24-28 bytes where it spilled none, so it stays off until a GPU
  // times both. QLA_SMEM_PTR32=1 sets it for JIT compiles (the CUDA text,
  // hence the cache key, changes).
  bool sharedPointers32 = false;
  // Where `include "NAME"` finds NAME: first NAME under each folder of
  // includeDirs, in order, then includeLookup(NAME) (files in memory, such as
  // a kernel family's embedded sources; null: none). qlac and jitCompileFile
  // put the compiled file's own folder first.
  std::vector<std::string> includeDirs;
  std::function<const std::string *(const std::string &name)> includeLookup;
};

// The NVRTC option that puts line info into the cubin (same as nvcc -lineinfo).
inline const char *lineInfoNvrtcOption() { return "--generate-line-info"; }

struct CompiledKernel {
  std::string tileIr;     // the qla dialect as the front end built it
  std::string loweredIr;  // after the pass pipeline (qlanv level)
  std::string cuda;       // the NVRTC translation unit
  std::string kernelName; // the kernel's name in the source (info.name is the emitted symbol)
  KernelInfo info;
};

// Returns false and fills `diagnostics` ("file:line:col: error: ...", one per
// entry) on any error in the source or the compilation.
bool compileQla(const std::string &source, const std::string &filename, const CompileOptions &options,
                CompiledKernel &out, std::vector<std::string> &diagnostics);

// The same from tile-level MLIR text (a module holding qla kernels as
// func.func with qla.* attributes, as `--emit=mlir` prints them): runs the
// pass pipeline and the emitter. For tests and for front ends other than ours.
bool compileQlaMlir(const std::string &mlirText, const std::string &filename, const CompileOptions &options,
                    CompiledKernel &out, std::vector<std::string> &diagnostics);

// Kernel names in a file (parse only), for tools.
bool listKernels(const std::string &source, const std::string &filename, std::vector<std::string> &names,
                 std::vector<std::string> &diagnostics, const CompileOptions &options = CompileOptions());

// A C++ header for the host code that launches the kernel (qlac
// --emit=args): in namespace qla::kernels::KERNEL, kFile, the
// specialization constants' names (constants()), struct Args (one
// rt::TensorArg per tensor argument and one double per scalar, in the
// kernel's order, with launch(stream) -> rt::LaunchArgs) and
// signature(defines) -> op::Signature (each tensor's dtype: a dtype
// constant's value in the defines, else its default). The header includes
// "qla/op/KernelArgs.h". Parses and checks the file with options.defines.
bool kernelArgsHeader(const std::string &source, const std::string &filename, const CompileOptions &options,
                      std::string &header, std::vector<std::string> &diagnostics);

const char *qlaVersion();  // e.g. "0.1.0"

}  // namespace qla
