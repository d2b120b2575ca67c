// qla-gpu-run: runs a GPU test program (argv[1..]) when a Hopper (sm_90a) GPU
// is present; otherwise prints "SKIP: no GPU (<reason>)" and exits 0, so that
// `ctest -L gpu` passes (as skipped) on machines without one. Needed for test
// programs that cannot start at all without the driver (they link libcuda).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "qla/runtime/Driver.h"

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PROGRAM [ARGS...]\n", argv[0]);
    return 2;
  }
  std::string why;
  if (!qla::rt::gpuAvailable(&why)) {
    std::printf("SKIP: no GPU (%s)\n", why.c_str());
    return 0;
  }
  try {
    std::string arch = qla::rt::deviceArch(0);
    if (arch != "sm_90a") {
      std::printf("SKIP: no GPU (device 0 is %s; these tests need sm_90a)\n", arch.c_str());
      return 0;
    }
  } catch (const std::exception &e) {
    std::printf("SKIP: no GPU (%s)\n", e.what());
    return 0;
  }
  std::fflush(stdout);
  ::execv(argv[1], argv + 1);
  std::fprintf(stderr, "%s: cannot run %s: %s\n", argv[0], argv[1], std::strerror(errno));
  return 127;
}
