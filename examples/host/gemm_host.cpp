// gemm_host: the complete host side of a QLA kernel, from C++.
//
// It JIT-compiles examples/gemm.qla (C = A · Bᵀ, bf16 in, f32 accumulate,
// bf16 out), allocates device memory with the CUDA runtime, fills A and B with
// fresh random bf16 values, launches the kernel on a stream for a few shapes
// (including ones that are not multiples of the 128x256 tile) and checks every
// result against a float64 CPU reference. Copy this file to start your own.
//
//   gemm_host [--seed N] [path/to/gemm.qla] [MxNxK ...]
//
// Without a .qla argument it compiles the installed copy of gemm.qla,
// ../share/qla/examples/gemm.qla beside its own executable (`cmake --install`
// puts it there as bin/qla-gemm-host); without shapes it runs a built-in list.
// Exit status: 0 when every shape passed (or when there is no GPU: then only
// the JIT compile runs), 1 on a mismatch or any error.
//
// Build: link qla_jit (the QLA compiler + runtime) and the CUDA runtime
// (CUDA::cudart_static); see examples/CMakeLists.txt. Against an installed
// QLA, link qla::qla instead (find_package(qla); see examples/consumer).
#include <cuda_runtime.h>
#include <limits.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "qla/jit.h"  // qla::jitCompileFile, qla::JitKernel, qla::rt::LaunchArgs, ...

// ---------------------------------------------------------------------------
// Step 0: error checking. Every CUDA runtime call goes through CUDA_CHECK; a
// failure prints the call, where it was made and CUDA's own message, and exits.
// (QLA's own calls throw: qla::CompileError from the compiler, qla::rt::Error
// from the launcher; main() catches both.)
#define CUDA_CHECK(call)                                                                       \
  do {                                                                                         \
    cudaError_t err_ = (call);                                                                 \
    if (err_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "CUDA error at %s:%d: %s\n  in %s\n", __FILE__, __LINE__,           \
                   cudaGetErrorString(err_), #call);                                           \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

namespace {

// ---------------------------------------------------------------------------
// bf16 on the host is just its 16 bits (the top half of an IEEE float).
// float → bf16 rounds to nearest, ties to even (what cvt.rn.bf16.f32 does on
// the GPU and what torch does); NaN stays a quiet NaN.
uint16_t floatToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);                      // round to nearest even
  return uint16_t(u >> 16);
}

float bf16ToFloat(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

constexpr uint16_t kBf16NaN = 0x7fc0;  // poison: any output the kernel fails to write stays NaN
constexpr size_t kGuard = 4096;        // poisoned elements after C: catches writes past its end

struct Shape {
  int64_t M, N, K;
};

const char *cacheHitName(qla::rt::CacheHit h) {
  switch (h) {
  case qla::rt::CacheHit::Memory: return "memory cache";
  case qla::rt::CacheHit::Disk: return "disk cache";
  case qla::rt::CacheHit::Miss: return "cache miss: built with NVRTC";
  }
  return "?";
}

// The installed gemm.qla: <prefix>/share/qla/examples/gemm.qla for a program
// in <prefix>/bin. Returns "" when it is not there; `where` gets the path looked at.
std::string installedKernel(std::string &where) {
  char exe[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    where = "(the program's own path is unknown: /proc/self/exe)";
    return "";
  }
  std::string dir(exe, size_t(n));
  dir.erase(dir.rfind('/'));
  where = dir + "/../share/qla/examples/gemm.qla";
  char real[PATH_MAX];
  if (::access(where.c_str(), R_OK) != 0 || !::realpath(where.c_str(), real)) return "";
  return real;
}

// Parses "MxNxK" (e.g. 1000x777x520).
bool parseShape(const std::string &s, Shape &out) {
  long long m, n, k;
  char x1, x2;
  char tail;
  if (std::sscanf(s.c_str(), "%lld%c%lld%c%lld%c", &m, &x1, &n, &x2, &k, &tail) != 5) return false;
  if (x1 != 'x' || x2 != 'x' || m <= 0 || n <= 0 || k <= 0) return false;
  out = {m, n, k};
  return true;
}

// C = A · Bᵀ in float64 from the bf16 inputs: A is [M, K], B is [N, K], both row-major.
std::vector<double> referenceGemm(const std::vector<uint16_t> &A, const std::vector<uint16_t> &B,
                                  const Shape &s) {
  std::vector<double> a(A.size()), b(B.size()), c(size_t(s.M * s.N));
  for (size_t i = 0; i < A.size(); ++i) a[i] = bf16ToFloat(A[i]);
  for (size_t i = 0; i < B.size(); ++i) b[i] = bf16ToFloat(B[i]);
  for (int64_t m = 0; m < s.M; ++m)
    for (int64_t n = 0; n < s.N; ++n) {
      const double *ar = &a[size_t(m * s.K)], *br = &b[size_t(n * s.K)];
      double acc = 0;
      for (int64_t k = 0; k < s.K; ++k) acc += ar[k] * br[k];
      c[size_t(m * s.N + n)] = acc;
    }
  return c;
}

// Runs one shape on the GPU and checks it; returns true when it passed.
bool runShape(qla::JitKernel &kernel, cudaStream_t stream, const Shape &s, std::mt19937_64 &rng) {
  // TMA (the Hopper bulk-copy unit the kernel loads A and B with) requires
  // every row stride to be a multiple of 16 bytes: K must be a multiple of 8
  // for bf16. The launcher checks it too and would throw a qla::rt::Error.
  if (s.K % 8 != 0) {
    std::printf("  M=%5lld N=%5lld K=%5lld  FAIL: K must be a multiple of 8 (16-byte TMA row stride)\n",
                (long long)s.M, (long long)s.N, (long long)s.K);
    return false;
  }
  const size_t nA = size_t(s.M * s.K), nB = size_t(s.N * s.K), nC = size_t(s.M * s.N);

  // Step 4: fresh random inputs on the host, rounded to bf16 once (the
  // reference uses exactly the values the GPU sees).
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<uint16_t> hA(nA), hB(nB);
  for (auto &v : hA) v = floatToBf16(normal(rng));
  for (auto &v : hB) v = floatToBf16(normal(rng));
  std::vector<uint16_t> hC(nC + kGuard, kBf16NaN);  // C and its guard zone, poisoned with NaN

  // Step 5: device buffers (cudaMalloc returns 256-byte aligned pointers, as
  // TMA requires) and the copies in, ordered on our stream.
  uint16_t *dA = nullptr, *dB = nullptr, *dC = nullptr;
  CUDA_CHECK(cudaMalloc(&dA, nA * sizeof(uint16_t)));
  CUDA_CHECK(cudaMalloc(&dB, nB * sizeof(uint16_t)));
  CUDA_CHECK(cudaMalloc(&dC, (nC + kGuard) * sizeof(uint16_t)));
  CUDA_CHECK(cudaMemcpyAsync(dA, hA.data(), nA * sizeof(uint16_t), cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaMemcpyAsync(dB, hB.data(), nB * sizeof(uint16_t), cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaMemcpyAsync(dC, hC.data(), hC.size() * sizeof(uint16_t), cudaMemcpyHostToDevice, stream));

  // Step 6: launch. Tensors are passed in the kernel's parameter order
  // (A, B, C) with their shapes, outermost first; strides default to
  // contiguous row-major. The launcher binds the dim symbols (M, K, N) from
  // the shapes, checks that they agree, encodes the TMA descriptors, computes
  // grid(cdiv(N, BN), cdiv(M, BM)) and launches on `stream` (a cudaStream_t
  // is a CUstream). Argument mismatches throw qla::rt::Error (caught in main).
  qla::rt::LaunchArgs args;
  args.tensors = {{dA, {s.M, s.K}}, {dB, {s.N, s.K}}, {dC, {s.M, s.N}}};
  args.stream = stream;
  kernel.launch(args);
  CUDA_CHECK(cudaGetLastError());  // launch/configuration errors surface here ...

  // Step 7: copy the result back; the synchronize reports errors that
  // happened while the kernel ran (e.g. an illegal address).
  CUDA_CHECK(cudaMemcpyAsync(hC.data(), dC, hC.size() * sizeof(uint16_t), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));  // ... and execution errors here
  CUDA_CHECK(cudaFree(dA));
  CUDA_CHECK(cudaFree(dB));
  CUDA_CHECK(cudaFree(dC));

  // Step 8: compare with the float64 reference: rms relative error
  // sqrt(Σ(c - ref)² / Σ ref²) below 1e-2 (bf16 output has an 8-bit
  // mantissa), no NaN (every output written) and the guard zone untouched.
  std::vector<double> ref = referenceGemm(hA, hB, s);
  double errSq = 0, refSq = 0;
  size_t nans = 0, guardHits = 0;
  for (size_t i = 0; i < nC; ++i) {
    double c = bf16ToFloat(hC[i]);
    if (std::isnan(c)) {
      ++nans;
      continue;
    }
    errSq += (c - ref[i]) * (c - ref[i]);
    refSq += ref[i] * ref[i];
  }
  for (size_t i = nC; i < hC.size(); ++i) guardHits += hC[i] != kBf16NaN;
  double rel = refSq > 0 ? std::sqrt(errSq / refSq) : std::sqrt(errSq);
  bool pass = nans == 0 && guardHits == 0 && rel < 1e-2;
  std::printf("  M=%5lld N=%5lld K=%5lld  rms_rel=%.2e  NaN=%zu  out-of-bounds writes=%zu  %s\n",
              (long long)s.M, (long long)s.N, (long long)s.K, rel, nans, guardHits, pass ? "PASS" : "FAIL");
  return pass;
}

}  // namespace

int main(int argc, char **argv) {
  // Command line: [--seed N] [file.qla] [MxNxK ...].
  std::string path;
  std::vector<Shape> shapes;
  uint64_t seed = uint64_t(std::chrono::system_clock::now().time_since_epoch().count());
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    Shape s;
    if (a == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (parseShape(a, s)) {
      shapes.push_back(s);
    } else if (a.size() > 4 && a.compare(a.size() - 4, 4, ".qla") == 0) {
      path = a;
    } else {
      std::fprintf(stderr, "error: unrecognized argument '%s' (not --seed N, a .qla file or MxNxK)\n",
                   a.c_str());
      std::fprintf(stderr, "usage: %s [--seed N] [path/to/gemm.qla] [MxNxK ...]\n", argv[0]);
      return 1;
    }
  }
  if (path.empty()) {
    std::string where;
    path = installedKernel(where);
    if (path.empty()) {
      std::fprintf(stderr,
                   "error: no kernel file given and no installed one at %s\n"
                   "usage: %s [--seed N] [path/to/gemm.qla] [MxNxK ...]  (in the source tree: examples/gemm.qla)\n",
                   where.c_str(), argv[0]);
      return 1;
    }
  }
  if (shapes.empty())  // M x N x K; 257x129x72 etc. are not multiples of the 128x256x64 tile
    shapes = {{128, 256, 64}, {257, 129, 72}, {129, 257, 72}, {1, 300, 64}, {1000, 777, 520}, {768, 1280, 1024}};

  try {
    // Step 1: is there a GPU? gpuAvailable() loads the driver (libcuda.so.1)
    // and counts devices; without one we still compile, to show (and test)
    // that compiling needs no GPU.
    std::string why;
    bool gpu = qla::rt::gpuAvailable(&why);
    std::string arch = gpu ? qla::rt::deviceArch(0) : "sm_90a";
    if (gpu && arch != "sm_90a") {
      why = "device 0 is " + arch + "; this kernel needs an sm_90a GPU (H100/H200)";
      gpu = false;
    }

    // Step 2: JIT-compile the kernel. The .qla source goes through the QLA
    // compiler to CUDA C++ and NVRTC to an sm_90a cubin; the result is cached
    // in memory and on disk ($QLA_CACHE_DIR, default ~/.cache/qla), keyed by
    // the generated source and the compiler versions, so the next run of this
    // program loads it from disk in milliseconds. Specialization constants
    // would go in opt.defines (e.g. opt.defines["BN"] = "128").
    qla::JitOptions opt;
    opt.arch = "sm_90a";  // empty would mean "the GPU's"; explicit so that it also builds without one
    qla::JitKernel kernel = qla::jitCompileFile(path, opt);  // throws qla::CompileError
    const qla::KernelInfo &info = kernel.info();
    std::printf("JIT build of %s: %.1f ms (%s)\n", path.c_str(), kernel.buildSeconds() * 1e3,
                cacheHitName(kernel.cacheHit()));
    std::printf("kernel %s: %d threads, %d bytes of dynamic shared memory, grid (%s, %s, %s)\n",
                info.name.c_str(), info.threads, info.dynamicSmemBytes, info.grid[0].c_str(),
                info.grid[1].c_str(), info.grid[2].c_str());

    if (!gpu) {
      std::printf("no GPU: %s\n", why.c_str());
      std::printf("SKIP: no GPU (%s): compiled, nothing launched\n", why.c_str());
      return 0;
    }

    // Step 3: the CUDA runtime. cudaSetDevice makes the device's primary
    // context current; QLA's launcher uses the current context, so memory
    // from cudaMalloc and kernels launched by QLA share it. Work goes on a
    // stream we create (any cudaStream_t works, including the default 0).
    CUDA_CHECK(cudaSetDevice(0));
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    std::printf("device 0: %s (%s), seed %llu\n", prop.name, arch.c_str(), (unsigned long long)seed);

    // Steps 4-8 for each shape (see runShape).
    std::mt19937_64 rng(seed);
    int failed = 0;
    for (const Shape &s : shapes) failed += !runShape(kernel, stream, s, rng);

    CUDA_CHECK(cudaStreamDestroy(stream));
    std::printf("%s (%zu shapes, seed %llu)\n", failed ? "SOME FAILED" : "ALL PASS", shapes.size(),
                (unsigned long long)seed);
    return failed ? 1 : 0;
  } catch (const qla::CompileError &e) {  // the .qla file did not compile: file:line:col: error: ...
    std::fprintf(stderr, "%s\n", e.what());
  } catch (const qla::rt::Error &e) {  // driver / launch error, naming the kernel and the argument
    std::fprintf(stderr, "error: %s\n", e.what());
  } catch (const std::exception &e) {
    std::fprintf(stderr, "error: %s\n", e.what());
  }
  return 1;
}
