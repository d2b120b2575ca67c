// qla/sim/abi.h — what QLA's runtime (runtime/src/Sim.cpp) and a simulated
// kernel's shared object (qla/sim/device.h) agree on: the launch entry and
// the simulator's encoding of a tensor map. Plain C++, no state.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {
struct qla_sim_config {
  unsigned grid[3];
  unsigned threads;
  unsigned smem_bytes;  // dynamic shared memory the kernel asked for
  unsigned cluster[3];
};
// Runs the whole grid; 0 on success, else writes the reason into err.
typedef int (*qla_sim_launch_fn)(void **args, const qla_sim_config *cfg, char *err, size_t errlen);
}

namespace qla {
namespace sim {

// A tensor map as the simulator encodes it (in place of the driver's
// 128-byte CUtensorMap): dims and box innermost first, byte strides of
// dims 1.., swizzle 0 none / 1 32B / 2 64B / 3 128B (rt::Swizzle's codes).
struct SimMap {
  std::uint64_t magic;
  const unsigned char *base;
  std::uint32_t rank, elemBytes;
  std::uint64_t dims[5];
  std::uint64_t strides[4];
  std::uint32_t box[5];
  std::uint32_t swizzle;
};
static_assert(sizeof(SimMap) <= 128, "a tensor map is 128 bytes");
constexpr std::uint64_t kMapMagic = 0x51414c53494d4150ull;  // "QALSIMAP"

}  // namespace sim
}  // namespace qla
