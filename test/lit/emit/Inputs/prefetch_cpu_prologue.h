// What emit-prefetch-cpu.qla's kernel hands to qla::dev::prefetch_l2 through
// qla::dev::prefetch_rows_l2 (the device header itself): every address, from
// every thread (Inputs/prefetch_main.cpp checks them).
#include <set>
namespace qla::dev {
inline std::mutex prefetchMu;
inline std::multiset<const char *> prefetched;
inline void prefetch_l2(const void *p) {
  std::lock_guard<std::mutex> g(prefetchMu);
  prefetched.insert(static_cast<const char *>(p));
}
}  // namespace qla::dev
#include "qla/device/prefetch.cuh"  // the code the GPU and the simulator run
