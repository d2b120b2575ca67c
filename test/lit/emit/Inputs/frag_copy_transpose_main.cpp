// Runs qla_kernel (the ftrans kernel of emit-frag-transpose-cpu.qla) on the
// CPU with 128 * W threads and checks, for X: f32[ROWS, COLS] of random
// values (COLS = 64 * W: the fragments are [COLS, ROWS]; Elem is the tiles'
// element type):
//   - both shared tiles [ROWS, COLS] hold Elem(X[r, c]) at the byte offset
//     that an independent formula of the swizzled layout gives (what TMA,
//     wgmma and shared -> global copies read);
//   - Z and V (through the tiles and transposed loads from them) are
//     Elem(X) exactly, Q (the transposed global load, stored untransposed)
//     is Xᵀ, U (transposed store bounded by `until L` on its rows) is X on
//     rows < L and untouched poison below, P (transposed load bounded by
//     `until L`) is Xᵀ on columns < L and 0 elsewhere;
//   - nothing outside the tensors nor past the arena is written;
//   - stmatrix .x4 .trans was called the expected number of times (stm=N),
//     and ldmatrix .x4 .trans (ldm=N; both per thread).
// Usage: sim cu=KERNEL.cu rows=ROWS cols=COLS swizzle=S limit=L.

static long long refTileByte(int swizzle, int eb, long long rows, long long cols, long long r, long long c) {
  if (swizzle == 0) return (r * cols + c) * eb;
  const long long perBlock = swizzle / eb;
  const long long lin = r * swizzle + (c % perBlock) * eb;
  const long long swz = lin ^ (((lin >> 7) & (swizzle / 16 - 1)) << 4);
  return (c / perBlock) * rows * swizzle + swz;
}

static std::uint32_t elemBits(Elem e) {
  std::uint32_t u = 0;
  std::memcpy(&u, &e, sizeof(Elem));
  return u;
}

int main(int argc, char **argv) {
  Args args(argc, argv);
  const long long rows = args.num("rows", 64), cols = args.num("cols", 64), limit = args.num("limit", rows);
  const int swizzle = int(args.num("swizzle", -1));
  const std::string cu = args.str("cu", "");
  Tensor<float> X("X", {rows, cols}, args), Z("Z", {rows, cols}, args), V("V", {rows, cols}, args),
      Q("Q", {cols, rows}, args), U("U", {rows, cols}, args), P("P", {cols, rows}, args);
  args.done();
  const int eb = int(sizeof(Elem));
  if (!(swizzle == 0 || swizzle == 32 || swizzle == 64 || swizzle == 128) || cols % 64 != 0) {
    std::fprintf(stderr, "bad cols/swizzle\n");
    return 2;
  }
  Rng rng(4242);
  fillInput(X, rng);
  for (long long r = 0; r < rows; r += 5) {  // a few bf16 ties
    std::uint32_t u = bitsOf(X.buf[X.at({r, (r * 3) % cols})]);
    X.buf[X.at({r, (r * 3) % cols})] = floatOf((u & 0xffff0000u) | 0x8000u);
  }
  const std::vector<float> wantX = X.buf;
  for (Tensor<float> *t : {&Z, &V, &Q, &U, &P}) t->poison();
  std::vector<std::vector<Elem>> e(static_cast<size_t>(rows), std::vector<Elem>(static_cast<size_t>(cols)));
  std::vector<float> wantZ = Z.buf, wantV = V.buf, wantQ = Q.buf, wantU = U.buf, wantP = P.buf;
  for (long long r = 0; r < rows; ++r)
    for (long long c = 0; c < cols; ++c) {
      const float x = X.buf[X.at({r, c})];
#ifdef SIM_BF16
      e[r][c] = Elem{refRoundBf16(x)};
#else
      e[r][c] = x;
#endif
      wantZ[Z.at({r, c})] = refToFloat(e[r][c]);
      wantV[V.at({r, c})] = refToFloat(e[r][c]);
      wantQ[Q.at({c, r})] = x;
      if (r < limit) wantU[U.at({r, c})] = x;
      wantP[P.at({c, r})] = r < limit ? x : 0.0f;
    }

  std::vector<unsigned> offsets;
  if (!qla_sim_tile_offsets(cu, offsets)) return 2;
  const unsigned ntiles = unsigned(offsets.size());
  const long long tileBytes = rows * cols * eb;
  std::memset(qla_smem_raw, 0x5A, QLA_SMEM_BYTES + kSimSmemGuard);
  const unsigned nthreads = unsigned(cols / 64 * 128);
  simBarrier.threads = nthreads;
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < nthreads; ++t)
    threads.emplace_back([&, t] {
      threadIdx.x = t;
      qla_kernel(X.ptr(), Z.ptr(), V.ptr(), Q.ptr(), U.ptr(), P.ptr(), X.strides[0], X.strides[1], Z.strides[0],
                 Z.strides[1], V.strides[0], V.strides[1], Q.strides[0], Q.strides[1], U.strides[0], U.strides[1],
                 P.strides[0], P.strides[1], int(rows), int(cols), int(limit));
      qla_sim_publish_vec(t);
    });
  for (auto &t : threads) t.join();

  int badTile = 0;
  for (unsigned k = 0; k < ntiles; ++k) {
    if (offsets[k] + tileBytes > QLA_SMEM_BYTES) {
      std::fprintf(stderr, "tile %u at %u does not fit the arena\n", k, offsets[k]);
      ++badTile;
      continue;
    }
    for (long long r = 0; r < rows; ++r)
      for (long long c = 0; c < cols; ++c) {
        Elem got;
        std::memcpy(&got, qla_smem_raw + offsets[k] + refTileByte(swizzle, eb, rows, cols, r, c), sizeof(Elem));
        if (elemBits(got) == elemBits(e[r][c])) continue;
        if (badTile < 5)
          std::fprintf(stderr, "tile %u (%lld, %lld): got 0x%x, want 0x%x\n", k, r, c, elemBits(got),
                       elemBits(e[r][c]));
        ++badTile;
      }
  }
  const int badZ = compareBuffers(Z, wantZ), badV = compareBuffers(V, wantV), badQ = compareBuffers(Q, wantQ);
  const int badU = compareBuffers(U, wantU), badP = compareBuffers(P, wantP), badIn = compareBuffers(X, wantX);
  int guardWrites = 0;
  for (unsigned i = 0; i < kSimSmemGuard; ++i) guardWrites += qla_smem_raw[QLA_SMEM_BYTES + i] != 0x5A;
  const bool ok = ntiles == 2 && badTile + badZ + badV + badQ + badU + badP + badIn + guardWrites + simStmBad == 0;
  std::printf("dt=%s rows=%lld cols=%lld threads=%u swizzle=%d limit=%lld tiles=%u bad=tiles:%d,Z:%d,V:%d,Q:%d,U:%d,"
              "P:%d,in:%d,stm:%lld past_arena_writes=%d stm=%lld ldm=%lld %s\n",
              kDt, rows, cols, nthreads, swizzle, limit, ntiles, badTile, badZ, badV, badQ, badU, badP, badIn,
              (long long)simStmBad, guardWrites, (long long)simStmCalls / nthreads, (long long)simLdmCalls / nthreads, ok ? "OK" : "MISMATCH");
  return ok ? 0 : 1;
}
