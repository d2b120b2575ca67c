// qla_consumer: JIT-compiles a QLA kernel through the public C++ API
// (qla/jit.h, libqla.so, found with find_package(qla)), prints its launch
// metadata (KernelInfo) and the size of its sm_90a cubin, and, where an sm_90a
// GPU is present, launches the built-in kernel and checks its result.
//
//   qla_consumer [FILE.qla] [-D NAME=VALUE]...
//
// Without FILE it compiles the built-in kernel below (Y = a * X + 1). FILE's
// kernel is compiled only: this program knows the arguments of its own kernel
// alone. Compiling needs no GPU. Exit status: 0 when the kernel compiled (and,
// on a GPU, the result matched), 1 on any error.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "qla/jit.h"

namespace {

const char *kBuiltinName = "axpb.qla";
const char *kBuiltin = R"qla(// Y = a * X + 1, 256 elements per block
kernel axpb<B = 256>(X: f32[N], Y: out f32[N], a: f32)
  grid(cdiv(N, B)) threads(128)
{
  let i0 = block.x * B
  frag x: f32[B]
  copy X[i0 :+ B] -> x
  for (i) in parallel(B) { x[i] = x[i] * a + 1.0 }
  copy x -> Y[i0 :+ B]
}
)qla";

int usage(const char *argv0, const std::string &problem) {
  std::fprintf(stderr, "error: %s\nusage: %s [FILE.qla] [-D NAME=VALUE]...\n", problem.c_str(), argv0);
  return 1;
}

#define CUDA_CHECK(call)                                                                   \
  do {                                                                                     \
    cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "error: %s: %s\n", #call, cudaGetErrorString(e_));              \
      return false;                                                                        \
    }                                                                                      \
  } while (0)

// Runs the built-in kernel on N elements (not a multiple of its 256-element
// tile) and compares with the host: a * x + 1 is exact in f32 for these values.
bool launchBuiltin(qla::JitKernel &kernel) {
  const int64_t n = 1000;
  const float a = 3.0f;
  std::vector<float> x(n), y(n, NAN);
  for (int64_t i = 0; i < n; ++i) x[size_t(i)] = 0.5f * float(i);
  float *dX = nullptr, *dY = nullptr;
  CUDA_CHECK(cudaSetDevice(0));
  CUDA_CHECK(cudaMalloc(&dX, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&dY, n * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(dX, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  qla::rt::LaunchArgs args;
  args.tensors = {{dX, {n}}, {dY, {n}}};
  args.scalars = {a};
  kernel.launch(args);  // the default stream; throws qla::rt::Error
  CUDA_CHECK(cudaMemcpy(y.data(), dY, n * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaFree(dX));
  CUDA_CHECK(cudaFree(dY));
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) bad += y[size_t(i)] != a * x[size_t(i)] + 1.0f;
  std::printf("launch: N=%lld, %d wrong elements: %s\n", (long long)n, bad, bad ? "FAIL" : "PASS");
  return bad == 0;
}

}  // namespace

int main(int argc, char **argv) {
  std::string file;
  qla::JitOptions opt;
  opt.arch = "sm_90a";  // explicit, so that it compiles without a GPU too
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string def;
    if (arg == "-D") {
      if (i + 1 >= argc) return usage(argv[0], "-D needs NAME=VALUE");
      def = argv[++i];
    } else if (arg.rfind("-D", 0) == 0) {
      def = arg.substr(2);
    } else if (!arg.empty() && arg[0] == '-') {
      return usage(argv[0], "unknown option '" + arg + "'");
    } else if (file.empty()) {
      file = arg;
      continue;
    } else {
      return usage(argv[0], "more than one kernel file ('" + file + "', '" + arg + "')");
    }
    size_t eq = def.find('=');
    if (eq == std::string::npos || eq == 0) return usage(argv[0], "bad define '" + def + "' (expected NAME=VALUE)");
    opt.defines[def.substr(0, eq)] = def.substr(eq + 1);
  }

  try {
    qla::JitKernel kernel = file.empty() ? qla::jitCompileString(kBuiltin, kBuiltinName, opt)
                                         : qla::jitCompileFile(file, opt);
    std::printf("QLA %s, NVRTC %s: compiled %s in %.1f ms (%s)\n", qla::qlaVersion(),
                qla::rt::nvrtcVersion().c_str(), file.empty() ? kBuiltinName : file.c_str(),
                kernel.buildSeconds() * 1e3,
                kernel.cacheHit() == qla::rt::CacheHit::Miss ? "built with NVRTC" : "from the kernel cache");
    std::printf("cubin: %zu bytes, sm_90a\n", kernel.cubin().size());
    std::printf("KernelInfo:\n%s", kernel.info().serialize().c_str());
    if (kernel.cubin().size() < 4 || kernel.cubin().compare(0, 4, "\x7f" "ELF") != 0) {
      std::fprintf(stderr, "error: the cubin is not an ELF file\n");
      return 1;
    }

    std::string why;
    bool gpu = qla::rt::gpuAvailable(&why);
    if (gpu && qla::rt::deviceArch(0) != "sm_90a") {
      why = "device 0 is " + qla::rt::deviceArch(0) + ", the kernel is sm_90a";
      gpu = false;
    }
    if (!gpu) {
      std::printf("no GPU (%s): compiled, not launched\n", why.c_str());
      return 0;
    }
    if (!file.empty()) {
      std::printf("launch: not attempted (this program knows the arguments of its built-in kernel only)\n");
      return 0;
    }
    return launchBuiltin(kernel) ? 0 : 1;
  } catch (const qla::CompileError &e) {  // file:line:col: error: ...
    std::fprintf(stderr, "%s\n", e.what());
  } catch (const std::exception &e) {  // qla::rt::Error (driver, launch) and others
    std::fprintf(stderr, "error: %s\n", e.what());
  }
  return 1;
}
