// Runs qla_kernel (the pf kernel of emit-prefetch-cpu.qla) on the CPU with
// 128 threads and checks the addresses it prefetched: the 128-byte line of
// every element of X[b, t0 + i, h, c0 + j] (i < 64, j < 96) and P[t0 + i]
// that is in range and before eos must be prefetched (missing), and every
// prefetched address must be one of those elements (outside). Prints the
// number of X's rows in range. Usage: sim [KEY=VALUE ...]: B T H D, b t0 h
// c0 eos, X.s=..., X.off=... (as frag_copy_global_main.cpp).
#include <algorithm>
#include <set>
#include <thread>
int main(int argc, char **argv) {
  Args args(argc, argv);
  const long long B = args.num("B", 2), T = args.num("T", 128), H = args.num("H", 3), D = args.num("D", 100);
  const long long b = args.num("b", 1), t0 = args.num("t0", 32), h = args.num("h", 2), c0 = args.num("c0", 0);
  const long long eos = args.num("eos", 1 << 30);
  Tensor<Elem> X("X", {B, T, H, D}, args), P("P", {T}, args);
  Tensor<float> F("F", {1}, args);
  args.done();
  const unsigned nthreads = 128;
  simBarrier.threads = nthreads;
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < nthreads; ++t)
    threads.emplace_back([&, t] {
      threadIdx.x = t;
      qla_kernel(X.ptr(), P.ptr(), F.ptr(), X.strides[0], X.strides[1], X.strides[2], X.strides[3], P.strides[0],
                 F.strides[0], int(B), int(T), int(H), int(D), int(b), int(t0), int(h), int(c0), int(eos));
    });
  for (auto &t : threads) t.join();
  std::set<const char *> elems;            // the in-range elements' addresses
  std::set<unsigned long long> lines;      // their 128-byte lines
  long long rows = 0;
  auto add = [&](const char *p) {
    elems.insert(p);
    lines.insert(reinterpret_cast<unsigned long long>(p) / 128);
  };
  for (long long i = 0; i < 64; ++i) {
    if (t0 + i >= eos) continue;
    bool any = false;
    for (long long j = 0; j < 96; ++j)
      if (X.inRange({b, t0 + i, h, c0 + j})) {
        add(reinterpret_cast<const char *>(&X.buf[X.at({b, t0 + i, h, c0 + j})]));
        any = true;
      }
    rows += any;
    if (P.inRange({t0 + i})) add(reinterpret_cast<const char *>(&P.buf[P.at({t0 + i})]));
  }
  std::set<unsigned long long> got;
  long long outside = 0;
  for (const char *p : qla::dev::prefetched) {
    got.insert(reinterpret_cast<unsigned long long>(p) / 128);
    outside += !elems.count(p);
  }
  long long missing = 0;
  for (unsigned long long l : lines) missing += !got.count(l);
  const bool ok = missing == 0 && outside == 0;
  std::printf("dt=%s rows=%lld missing=%lld outside=%lld %s\n", kDt, rows, missing, outside, ok ? "OK" : "MISMATCH");
  return ok ? 0 : 1;
}
