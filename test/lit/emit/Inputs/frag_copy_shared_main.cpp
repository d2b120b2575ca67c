// Runs qla_kernel (the fshared kernel of emit-frag-shared-cpu.qla) on the CPU
// with 128 * W threads and checks, for X: f32[ROWS, COLS] of random values
// (Elem is the tiles' element type):
//   - both shared tiles hold Elem(X[r, c]) at the byte offset that an
//     independent formula of the layout gives (swizzle S: S-byte column
//     blocks of ROWS rows, 16-byte chunks of row r XOR-permuted by address
//     bits 7.. of the row, i.e. Swizzle<log2(S/16), 4, 3>; S = 0: row-major);
//   - Y (f32 fragment -> tile -> f32 fragment), Z (Elem fragment -> tile ->
//     Elem fragment) and Q (the first tile read again at the end) are
//     Elem(X) exactly: X itself for f32, X rounded to nearest even for bf16;
//   - nothing is written past the arena (its `// smem` size).
// Usage: sim cu=KERNEL.cu rows=ROWS cols=COLS swizzle=S: the emitted kernel's
// text (its tiles' declarations give their arena offsets, in order:
// qla_sim_tile_offsets), the tiles' shape and the swizzle that the RUN line
// expects layout inference to pick for them.

// Byte offset of element (r, c) in a [rows x cols] tile of `eb`-byte elements.
static long long refTileByte(int swizzle, int eb, long long rows, long long cols, long long r, long long c) {
  if (swizzle == 0) return (r * cols + c) * eb;
  const long long perBlock = swizzle / eb;  // elements of a row in one column block
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
  const long long rows = args.num("rows", 64), cols = args.num("cols", 64);
  const int swizzle = int(args.num("swizzle", -1));
  const std::string cu = args.str("cu", "");
  Tensor<float> X("X", {rows, cols}, args), Y("Y", {rows, cols}, args), Z("Z", {rows, cols}, args),
      Q("Q", {rows, cols}, args);
  args.done();
  const int eb = int(sizeof(Elem));
  if (!(swizzle == 0 || swizzle == 32 || swizzle == 64 || swizzle == 128) || rows % 64 != 0) {
    std::fprintf(stderr, "bad rows/swizzle\n");
    return 2;
  }

  Rng rng(777);
  fillInput(X, rng);
  // A few bf16 ties (low half exactly 0x8000), both parities of the kept bit.
  for (long long r = 0; r < rows; r += 7) {
    std::uint32_t u = bitsOf(X.buf[X.at({r, (r * 5) % cols})]);
    X.buf[X.at({r, (r * 5) % cols})] = floatOf((u & 0xffff0000u) | 0x8000u);
  }
  const std::vector<float> wantX = X.buf;
  Y.poison();
  Z.poison();
  Q.poison();

  // Elem(X[r, c]), by the reference rounding, and the expected outputs.
  std::vector<std::vector<Elem>> e(static_cast<size_t>(rows), std::vector<Elem>(static_cast<size_t>(cols)));
  std::vector<float> want = Y.buf;
  for (long long r = 0; r < rows; ++r)
    for (long long c = 0; c < cols; ++c) {
      const float x = X.buf[X.at({r, c})];
#ifdef SIM_BF16
      e[r][c] = Elem{refRoundBf16(x)};
#else
      e[r][c] = x;
#endif
      want[Y.at({r, c})] = refToFloat(e[r][c]);
    }

  std::vector<unsigned> offsets;
  if (!qla_sim_tile_offsets(cu, offsets)) return 2;
  const unsigned ntiles = unsigned(offsets.size());
  const long long tileBytes = rows * cols * eb;
  std::memset(qla_smem_raw, 0x5A, QLA_SMEM_BYTES + kSimSmemGuard);
  const unsigned nthreads = unsigned(rows / 64 * 128);
  simBarrier.threads = nthreads;
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < nthreads; ++t)
    threads.emplace_back([&, t] {
      threadIdx.x = t;
      qla_kernel(X.ptr(), Y.ptr(), Z.ptr(), Q.ptr(), X.strides[0], X.strides[1], Y.strides[0], Y.strides[1],
                 Z.strides[0], Z.strides[1], Q.strides[0], Q.strides[1], int(rows), int(cols));
      qla_sim_publish_vec(t);
    });
  for (auto &t : threads) t.join();

  // The tiles, element by element at the reference positions. Every byte of
  // each tile is one element's (the layout is a bijection), so this also
  // sees stray writes inside the tiles.
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
  const int badY = compareBuffers(Y, want), badZ = compareBuffers(Z, want), badQ = compareBuffers(Q, want);
  const int badIn = compareBuffers(X, wantX);
  int guardWrites = 0;
  for (unsigned i = 0; i < kSimSmemGuard; ++i) guardWrites += qla_smem_raw[QLA_SMEM_BYTES + i] != 0x5A;
  const std::string vec = qla_sim_vec_summary({"X", "Y", "Z", "Q"});
  const bool ok = ntiles == 2 && badTile + badY + badZ + badQ + badIn + guardWrites == 0 &&
                  vec == "X:pair,Y:pair,Z:pair,Q:pair";
  std::printf("dt=%s rows=%lld cols=%lld threads=%u swizzle=%d tiles=%u smem=%d bad=tiles:%d,Y:%d,Z:%d,Q:%d,in:%d "
              "past_arena_writes=%d vec=%s %s\n",
              kDt, rows, cols, nthreads, swizzle, ntiles, int(QLA_SMEM_BYTES), badTile, badY, badZ, badQ, badIn,
              guardWrites, vec.c_str(), ok ? "OK" : "MISMATCH");
  return ok ? 0 : 1;
}
