// The CPU simulator (qla/runtime/Sim.h, qla/sim/device.h) on hand-written
// kernels: what it must report (deadlocks with every thread's wait, traps,
// shared memory past the request, lanes at different warp-wide operations,
// barrier counts that disagree) and what it must model (a TMA load lands only
// after its barrier's wait, with the box's zero fill and the 128-byte
// swizzle; wgmma reads its operands through the descriptors, K-major and
// MN-major, and accumulates).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "qla/runtime/Driver.h"
#include "qla/runtime/Sim.h"

using namespace qla;

namespace {

std::string errorOf(const rt::SimModule &m, std::vector<void *> argv, int threads, int smem) {
  try {
    m.run(argv.data(), {1, 1, 1}, threads, smem, {1, 1, 1});
  } catch (const rt::Error &e) {
    return e.what();
  }
  return "<no error>";
}

const char *kHead = "#include \"qla/device/all.cuh\"\n";

}  // namespace

TEST_CASE("the simulator reports a deadlock with what every thread waits for", "[sim]") {
  rt::SimModule m(std::string(kHead) + R"(
extern "C" __global__ void k(int* out) {
  extern __shared__ __align__(1024) unsigned char qla_smem_raw[];
  qla::dev::u64* bar = reinterpret_cast<qla::dev::u64*>(qla_smem_raw);
  if (threadIdx.x == 0) qla::dev::mbarrier_init(bar, 1);
  __syncthreads();
  if (threadIdx.x < 64) qla::dev::mbarrier_wait(bar, 0);  // nobody arrives
  else qla::dev::named_barrier_sync(1, 128);              // half the threads come
  out[threadIdx.x] = 1;
})", "k");
  std::vector<int> out(128, 0);
  int *o = out.data();
  const std::string e = errorOf(m, {&o}, 128, 64);
  INFO(e);
  CHECK(e.find("deadlock") != std::string::npos);
  CHECK(e.find("threads 0..63: mbarrier at shared offset 0, parity 0") != std::string::npos);
  CHECK(e.find("threads 64..127: named barrier 1 (128 threads)") != std::string::npos);
  CHECK(e.find("named barrier 1: 64 of 128 threads arrived") != std::string::npos);
  CHECK(e.find("mbarrier at shared offset 0: phase 0, 1 of 1 arrivals missing, 0 tx bytes") != std::string::npos);
  CHECK(out[0] == 0);
}

TEST_CASE("the simulator reports traps, shared memory past the request and misused collectives", "[sim]") {
  rt::SimModule trap(std::string(kHead) + R"(
extern "C" __global__ void k(int* out) { if (threadIdx.x == 37) __trap(); out[threadIdx.x] = 1; })", "k");
  std::vector<int> out(64, 0);
  int *o = out.data();
  std::string e = errorOf(trap, {&o}, 64, 0);
  CHECK(e.find("thread 37: __trap()") != std::string::npos);

  rt::SimModule past(std::string(kHead) + R"(
extern "C" __global__ void k(int n) {
  extern __shared__ __align__(1024) unsigned char qla_smem_raw[];
  if (threadIdx.x == 0) qla_smem_raw[n] = 1;
})", "k");
  int n = 1024;
  CHECK(errorOf(past, {&n}, 32, 2048) == "<no error>");
  n = 2048;
  e = errorOf(past, {&n}, 32, 2048);
  CHECK(e.find("wrote shared memory at offset 2048, past the 2048 bytes it asked for") != std::string::npos);

  rt::SimModule diverge(std::string(kHead) + R"(
extern "C" __global__ void k(float* out) {
  float v = 1.0f;
  if (threadIdx.x % 32 < 16) __syncwarp(); else v = __shfl_xor_sync(0xffffffffu, v, 1);
  out[threadIdx.x] = v;
})", "k");
  std::vector<float> f(32);
  float *fp = f.data();
  e = errorOf(diverge, {&fp}, 32, 0);
  CHECK(e.find("lanes of warp 0 meet at different warp-wide operations") != std::string::npos);

  rt::SimModule counts(std::string(kHead) + R"(
extern "C" __global__ void k(int) {
  qla::dev::named_barrier_sync(2, threadIdx.x < 32 ? 64 : 128);
})", "k");
  int unused = 0;
  e = errorOf(counts, {&unused}, 128, 0);
  CHECK(e.find("named barrier 2: 128 threads here, 64 at an earlier arrival") != std::string::npos);
}

TEST_CASE("on the simulator a TMA load lands only after the wait, zero-filled and swizzled", "[sim]") {
  // A 64 x 64 bf16 box at row 32 of a 80 x 64 tensor: rows 48.. of the box are
  // out of bounds. Threads copy the raw (swizzled) shared bytes out before the
  // wait (must be the poison) and after it.
  rt::SimModule m(std::string(kHead) + R"(
extern "C" __global__ void k(const __grid_constant__ qla::dev::TensorMap map, unsigned short* before,
                             unsigned short* after) {
  extern __shared__ __align__(1024) unsigned char qla_smem_raw[];
  unsigned short* tile = reinterpret_cast<unsigned short*>(qla_smem_raw);
  qla::dev::u64* bar = reinterpret_cast<qla::dev::u64*>(qla_smem_raw + 8192);
  if (threadIdx.x == 0) {
    qla::dev::mbarrier_init(bar, 1);
    qla::dev::fence_mbarrier_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    qla::dev::mbarrier_arrive_expect_tx(bar, 8192);
    qla::dev::tma_load_2d(tile, &map, bar, 0, 32);
  }
  for (int i = threadIdx.x; i < 4096; i += 128) before[i] = tile[i];
  qla::dev::mbarrier_wait(bar, 0);
  for (int i = threadIdx.x; i < 4096; i += 128) after[i] = tile[i];
})", "k");
  std::vector<uint16_t> src(80 * 64);
  for (size_t i = 0; i < src.size(); ++i) src[i] = uint16_t(1 + i);
  alignas(16) static uint16_t srcAligned[80 * 64];
  std::memcpy(srcAligned, src.data(), sizeof srcAligned);
  CUtensorMap map = rt::simTensorMap(DType::BF16, srcAligned, {80, 64}, {64, 1}, {64, 64}, Swizzle::B128);
  std::vector<uint16_t> before(4096, 0), after(4096, 0);
  uint16_t *b = before.data(), *a = after.data();
  std::vector<void *> argv = {&map, &b, &a};
  m.run(argv.data(), {1, 1, 1}, 128, 8192 + 64, {1, 1, 1});
  for (uint16_t x : before) REQUIRE(x == 0xA5A5);
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 64; ++c) {
      // Row r, 16-byte chunk c / 8 lands at chunk (c / 8) ^ (r % 8).
      const int at = r * 64 + (((c / 8) ^ (r % 8)) * 8) + c % 8;
      const uint16_t want = r + 32 < 80 ? srcAligned[(r + 32) * 64 + c] : 0;
      INFO("row " << r << " col " << c);
      REQUIRE(after[size_t(at)] == want);
    }
}

TEST_CASE("on the simulator wgmma reads its operands through the descriptors", "[sim]") {
  // D[64 x 64] = A[64 x 64] B[64 x 64] in four k16 steps, A K-major and B
  // MN-major ([K][N] rows), both 128-byte swizzled tiles as TMA writes them
  // (smem_tile_index), then D += A B again (scale_d = 1).
  rt::SimModule m(std::string(kHead) + R"(
extern "C" __global__ void k(const unsigned short* A, const unsigned short* B, float* D) {
  extern __shared__ __align__(1024) unsigned char qla_smem_raw[];
  qla::dev::bf16* as = reinterpret_cast<qla::dev::bf16*>(qla_smem_raw);
  qla::dev::bf16* bs = reinterpret_cast<qla::dev::bf16*>(qla_smem_raw + 8192);
  for (int i = threadIdx.x; i < 4096; i += 128) {
    const int r = i / 64, c = i % 64;
    as[qla::dev::smem_tile_index<128, 2, 64, 64>(r, c)].bits = A[i];
    bs[qla::dev::smem_tile_index<128, 2, 64, 64>(r, c)].bits = B[i];
  }
  qla::dev::fence_proxy_async_shared();
  __syncthreads();
  float d[32];
  for (int rep = 0; rep < 2; ++rep) {
    qla::dev::wgmma_fence();
    for (int kk = 0; kk < 4; ++kk) {
      const qla::dev::u64 da = qla::dev::wgmma_desc_advance(qla::dev::make_wgmma_desc(as, 16, 1024, 1), 32 * kk);
      const qla::dev::u64 db = qla::dev::wgmma_desc_advance(qla::dev::make_wgmma_desc(bs, 8192, 1024, 1), 2048 * kk);
      qla::dev::wgmma_ss_bf16<64, 0, 1>(d, da, db, rep > 0 || kk > 0);
    }
    qla::dev::wgmma_commit();
    qla::dev::wgmma_wait<0>();
  }
  for (int r = 0; r < 32; ++r)
    D[qla::dev::acc_row(r) * 64 + qla::dev::acc_col(r)] = d[r];
})", "k");
  std::mt19937 g(7);
  std::vector<uint16_t> A(4096), B(4096);
  std::vector<float> Af(4096), Bf(4096);
  for (int i = 0; i < 4096; ++i) {
    const float a = std::ldexp(float(int(g() % 17) - 8), -3), b = std::ldexp(float(int(g() % 17) - 8), -2);
    uint32_t ua, ub;
    std::memcpy(&ua, &a, 4);
    std::memcpy(&ub, &b, 4);
    A[size_t(i)] = uint16_t(ua >> 16), B[size_t(i)] = uint16_t(ub >> 16);  // exact in bf16
    Af[size_t(i)] = a, Bf[size_t(i)] = b;
  }
  std::vector<float> D(4096, NAN);
  const uint16_t *pa = A.data(), *pb = B.data();
  float *pd = D.data();
  std::vector<void *> argv = {&pa, &pb, &pd};
  m.run(argv.data(), {1, 1, 1}, 128, 16384, {1, 1, 1});
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 64; ++c) {
      double s = 0;
      for (int k = 0; k < 64; ++k) s += double(Af[size_t(r * 64 + k)]) * Bf[size_t(k * 64 + c)];
      INFO("D[" << r << "][" << c << "]");
      REQUIRE(D[size_t(r * 64 + c)] == float(2 * s));  // small integers times 2^-5: exact
    }
}

TEST_CASE("QLA_SIM_SEED interleaves the threads differently, exposing an unordered read", "[sim]") {
  // Thread 0 writes a shared word that the others read with no barrier
  // between: in round-robin order thread 0 goes first and everyone sees the
  // write; with a seed some threads run before it and read the poison.
  rt::SimModule m(std::string(kHead) + R"(
extern "C" __global__ void k(int* out) {
  extern __shared__ __align__(1024) unsigned char qla_smem_raw[];
  int* word = reinterpret_cast<int*>(qla_smem_raw);
  if (threadIdx.x == 0) *word = 42;
  out[threadIdx.x] = *word;
})", "k");
  auto seen = [&](const char *seed) {
    if (seed) setenv("QLA_SIM_SEED", seed, 1);
    else unsetenv("QLA_SIM_SEED");
    std::vector<int> out(256, 0);
    int *o = out.data();
    std::vector<void *> argv = {&o};
    m.run(argv.data(), {1, 1, 1}, 256, 64, {1, 1, 1});
    unsetenv("QLA_SIM_SEED");
    int n = 0;
    for (int x : out) n += x == 42;
    return n;
  };
  CHECK(seen(nullptr) == 256);
  const int a = seen("1"), b = seen("2");
  INFO("threads that saw the write: seed 1 " << a << ", seed 2 " << b);
  CHECK(a < 256);
  CHECK(b < 256);
  CHECK(a != b);
}

TEST_CASE("QLA_SIM_BLOCK_ORDER=reverse runs the last block first, exposing a read of another block's write",
          "[sim]") {
  // Block 0 reads a word that the last block writes: in grid order it reads
  // the old value, last block first the new one. Every block also records
  // its turn.
  rt::SimModule m(std::string(kHead) + R"(
extern "C" __global__ void k(int* word, int* turn, int* seen) {
  const int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  if (threadIdx.x == 0) {
    turn[b] = turn[64]++;
    if (b == 0) *seen = *word;
    if (b == int(gridDim.x * gridDim.y * gridDim.z) - 1) *word = 7;
  }
})", "k");
  auto run = [&](const char *order) {
    if (order) setenv("QLA_SIM_BLOCK_ORDER", order, 1);
    else unsetenv("QLA_SIM_BLOCK_ORDER");
    int word = 1, seen = 0;
    std::vector<int> turn(65, 0);
    int *pw = &word, *pt = turn.data(), *ps = &seen;
    std::vector<void *> argv = {&pw, &pt, &ps};
    m.run(argv.data(), {4, 3, 2}, 128, 64, {1, 1, 1});
    unsetenv("QLA_SIM_BLOCK_ORDER");
    return std::make_pair(seen, std::vector<int>(turn.begin(), turn.begin() + 24));
  };
  auto [seenFwd, turnFwd] = run(nullptr);
  CHECK(seenFwd == 1);
  for (int b = 0; b < 24; ++b) CHECK(turnFwd[size_t(b)] == b);  // x fastest, then y, then z
  auto [seenRev, turnRev] = run("reverse");
  CHECK(seenRev == 7);
  for (int b = 0; b < 24; ++b) CHECK(turnRev[size_t(b)] == 23 - b);
}
