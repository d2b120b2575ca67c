// qla/sim/sched.h — the scheduler of QLA's CPU simulator of Hopper kernels:
// one fiber per CUDA thread, the CTAs of a launch run one after the other on
// the calling thread, deterministic (round robin over the fibers that can go
// on), deadlocks reported with what every thread waits for.
//
// Included by qla/sim/device.h, which the simulator compiles in front of an
// emitted kernel in place of qla/device/all.cuh (docs/internals.md,
// "Simulator"). Header-only: every kernel's shared object carries its own
// copy, and the runtime (runtime/src/Sim.cpp) only calls qla_sim_launch.
#pragma once

#include <ucontext.h>
#include <sys/mman.h>

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "qla/sim/abi.h"  // qla_sim_config, the launch entry's type

// CUDA's built-in index variables: the scheduler sets them on every switch.
struct qla_sim_dim3 {
  unsigned x = 0, y = 0, z = 0;
};
static qla_sim_dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace qla {
namespace sim {

// Largest dynamic shared memory of an sm_90 CTA (227 KB) and the guard
// behind it, which must be untouched after every CTA.
constexpr unsigned kSmemMax = 232448;
constexpr unsigned kSmemGuard = 4096;
constexpr unsigned kStackBytes = 1u << 20;

struct Fiber;
using WaitFn = bool (*)(const void *);

struct Fiber {
  ucontext_t ctx;
  char *stack = nullptr;
  unsigned tid = 0;
  bool done = false;
  // Blocked until pred(arg) holds; what says what for a deadlock report.
  WaitFn pred = nullptr;
  const void *arg = nullptr;
  char what[160] = {0};
};

// Errors end the launch: the message is kept, the fibers are abandoned.
struct Sched {
  ucontext_t main;
  std::vector<Fiber> fibers;
  int current = -1;
  bool failed = false;
  std::string error;
  unsigned threads = 0;
  void (*body)() = nullptr;
  // Asynchronous work nobody waits for yet (TMA loads): run when no fiber can
  // go on, so that a thread that reads without waiting sees old data.
  std::vector<void (*)(void *)> pendingFns;
  std::vector<void *> pendingArgs;
  bool (*deliver)() = nullptr;  // the device layer's: delivers one batch, true if any
  std::string (*describe)() = nullptr;  // the device layer's: its barriers' state
  // 0: round robin over the fibers that can go on; else the state of a
  // xorshift generator that picks which goes next (QLA_SIM_SEED), so that
  // runs with different seeds interleave the threads differently: a result
  // that changes with the seed is a race the kernel's barriers do not order.
  std::uint64_t rng = 0;
};

inline Sched *&sched() {
  static Sched *s = nullptr;
  return s;
}

inline unsigned tid() { return threadIdx.x; }

struct Abort {};

// Ends the launch with a message (names the CUDA thread and block).
[[noreturn]] inline void fail(const char *fmt, ...) {
  Sched &s = *sched();
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (!s.failed) {
    s.failed = true;
    char where[96];
    std::snprintf(where, sizeof where, "block (%u,%u,%u) thread %u: ", blockIdx.x, blockIdx.y, blockIdx.z,
                  threadIdx.x);
    s.error = std::string(where) + buf;
  }
  // Back to the scheduler for good (from the scheduler itself: unwind to
  // the launch, which catches it).
  if (s.current < 0) throw Abort{};
  swapcontext(&s.fibers[size_t(s.current)].ctx, &s.main);
  std::abort();  // never resumed
}

// Blocks the calling fiber until pred(arg) holds (checked by the scheduler
// without switching to it).
inline void waitUntil(WaitFn pred, const void *arg, const char *fmt, ...) {
  if (pred(arg)) return;
  Sched &s = *sched();
  Fiber &f = s.fibers[size_t(s.current)];
  f.pred = pred;
  f.arg = arg;
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(f.what, sizeof f.what, fmt, ap);
  va_end(ap);
  swapcontext(&f.ctx, &s.main);
}

inline void fiberEntry(unsigned lo, unsigned hi) {
  (void)lo;
  (void)hi;
  Sched &s = *sched();
  s.body();
  s.fibers[size_t(s.current)].done = true;
  // uc_link returns to main.
}

// Runs `threads` fibers of one CTA to completion; false on an error or a
// deadlock (s.error says which).
inline bool runCta(Sched &s) {
  const unsigned n = s.threads;
  if (s.fibers.size() < n) s.fibers.resize(n);
  for (unsigned t = 0; t < n; ++t) {
    Fiber &f = s.fibers[t];
    if (!f.stack) {
      void *p = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED) {
        s.error = "cannot map a fiber stack";
        return false;
      }
      f.stack = static_cast<char *>(p);
    }
    f.tid = t;
    f.done = false;
    f.pred = nullptr;
    f.arg = nullptr;
    f.what[0] = 0;
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack;
    f.ctx.uc_stack.ss_size = kStackBytes;
    f.ctx.uc_link = &s.main;
    makecontext(&f.ctx, reinterpret_cast<void (*)()>(&fiberEntry), 2, 0u, 0u);
  }
  unsigned live = n;
  unsigned next = 0;
  while (live > 0) {
    bool ran = false;
    if (s.rng) {
      s.rng ^= s.rng << 13;
      s.rng ^= s.rng >> 7;
      s.rng ^= s.rng << 17;
      next = unsigned(s.rng % n);
    }
    for (unsigned k = 0; k < n && !s.failed; ++k) {
      const unsigned t = (next + k) % n;
      Fiber &f = s.fibers[t];
      if (f.done) continue;
      if (f.pred && !f.pred(f.arg)) continue;
      f.pred = nullptr;
      s.current = int(t);
      threadIdx.x = t;
      swapcontext(&s.main, &f.ctx);
      s.current = -1;
      ran = true;
      if (f.done) --live;
      next = t + 1;
      break;
    }
    if (s.failed) return false;
    if (ran) continue;
    if (live == 0) break;
    // Nobody can go on: deliver asynchronous work, else it is a deadlock.
    if (s.deliver && s.deliver()) continue;
    std::string r = "deadlock: every live thread waits:";
    // Group consecutive threads that wait for the same thing.
    for (unsigned t = 0; t < n;) {
      if (s.fibers[t].done) {
        ++t;
        continue;
      }
      unsigned e = t + 1;
      while (e < n && !s.fibers[e].done && std::strcmp(s.fibers[e].what, s.fibers[t].what) == 0) ++e;
      char line[256];
      std::snprintf(line, sizeof line, "\n  threads %u..%u: %s", t, e - 1, s.fibers[t].what);
      r += line;
      t = e;
    }
    if (s.describe) r += "\n  where:" + s.describe();
    char where[96];
    std::snprintf(where, sizeof where, "block (%u,%u,%u): ", blockIdx.x, blockIdx.y, blockIdx.z);
    s.error = where + r;
    return false;
  }
  return true;
}

}  // namespace sim
}  // namespace qla
