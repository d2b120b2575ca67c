// Runs qla_kernel (the sglobal kernel of emit-shared-global-cpu.qla) on the
// CPU with 128 * ROWS / 64 threads. X: Elem[ROWS, COLS] holds random nonzero
// values; the kernel takes it to a fragment, the fragment to the shared tile
// s (an exact round trip: Elem -> f32 -> Elem), and s, the copy under test,
// to Y[t1 :+ ROWS until eos, h1, c1 :+ COLS until ecol]. The reference:
//   Y[t1 + i, h1, c1 + j] = X[i, j]   where (t1 + i, h1, c1 + j) is in range,
//                                     t1 + i < eos and c1 + j < ecol,
// and nothing else written: every byte of Y's buffer (elements, the gaps its
// strides leave, margins on either side) is compared, and Y starts as 0xA5
// bytes, which no value of X has. X must stay as it was, and nothing may land
// past the arena.
//
// The path the store takes is recorded (its `tvec_N` condition, rewritten to
// qla_sim_note_vec by the RUN lines) and printed as Y:vec16 (16-byte chunks
// where they are in bounds) or Y:scalar (element by element), after X:pair or
// X:scalar for the fragment load in front of it. The uint4 stand-in counts
// the 16-byte moves (u4=) and checks their addresses. Chunks are the
// 16 / sizeof(Elem) columns [q * n, q * n + n) of a tile row; the reference
// counts those wholly in range (full) and those partly in range (part). On
// the vec16 path every full chunk, and nothing else, must move as one uint4
// (a partly-in-range chunk goes element by element); on the scalar path
// none may. The RUN lines state which path each case takes.
//
// The tile's layout is read from the emitted kernel (cu=): the
// smem_tile_index<SWIZZLE, ELT_BYTES, ROWS, COLS> of the 16-byte move, which
// must agree with the element size and shape; swizzle=S is printed so that
// each RUN line states the layout it covers.
//
// Built with -DSIM_TMA (a kernel emitted with TMA stores, tma_store_cpu.h
// before it): the kernel takes Y's tensor map first, filled here as the
// runtime would (null where encodeTensorMap would refuse Y); where the kernel
// takes its TMA path the stores are counted (tma=N, one per column block of
// the tile) and Y's thread copy must not run (no Y: path, no uint4 move);
// the bytes of Y are checked the same way either way.
//
// Usage: sim cu=KERNEL.cu rows=ROWS cols=COLS [KEY=VALUE ...] with keys T H D (Y's dims,
// default 256 3 160), t1 h1 c1 eos ecol (the kernel's scalars, default 16 1
// 16, no limits), and for X and Y: N.s=S0,S1,... (strides, default packed)
// and N.off=K (element offset of the tensor in its buffer, default 0:
// buffers are 16-byte aligned).
int main(int argc, char **argv) {
  Args args(argc, argv);
  const std::string cu = args.str("cu", "");
  const long long rows = args.num("rows", 64), cols = args.num("cols", 32);
  const long long T = args.num("T", 256), H = args.num("H", 3), D = args.num("D", 160);
  const long long t1 = args.num("t1", 16), h1 = args.num("h1", 1), c1 = args.num("c1", 16);
  const long long eos = args.num("eos", 1 << 30), ecol = args.num("ecol", 1 << 30);
  Tensor<Elem> X("X", {rows, cols}, args), Y("Y", {T, H, D}, args);
  args.done();
  const long long per = 16 / (long long)sizeof(Elem);
  if (rows % 64 != 0 || cols % per != 0 || (reinterpret_cast<std::uintptr_t>(Y.buf.data()) & 15u) != 0) {
    std::fprintf(stderr, "bad rows/cols, or Y's buffer is not 16-byte aligned\n");
    return 2;
  }

  // The layout of the tile that the 16-byte move reads.
  int swizzle = -1;
  {
    std::FILE *in = std::fopen(cu.c_str(), "r");
    if (!in) {
      std::fprintf(stderr, "cannot read %s\n", cu.c_str());
      return 2;
    }
    const char *const key = "qla::dev::smem_get<uint4>(";
    for (char line[8192]; std::fgets(line, sizeof line, in);) {
      const char *k = std::strstr(line, key), *t = k ? std::strstr(k, "smem_tile_index<") : nullptr;
      long long sw, eb, r, c;
      if (!t) continue;
      if (swizzle != -1 || std::sscanf(t, "smem_tile_index<%lld, %lld, %lld, %lld>", &sw, &eb, &r, &c) != 4 ||
          eb != (long long)sizeof(Elem) || r != rows || c != cols) {
        std::fprintf(stderr, "unexpected 16-byte move (or more than one): %s", line);
        return 2;
      }
      swizzle = int(sw);
    }
    std::fclose(in);
    if (swizzle == -1) {
      std::fprintf(stderr, "no 16-byte move in %s\n", cu.c_str());
      return 2;
    }
  }

  Rng rng(2468);
  fillInput(X, rng);
  const std::vector<Elem> wantX = X.buf;
  Y.poison();

  // The reference.
  std::vector<Elem> wantY = Y.buf;
  auto stored = [&](long long i, long long j) {
    return t1 + i < eos && c1 + j < ecol && Y.inRange({t1 + i, h1, c1 + j});
  };
  long long storedY = 0, fullChunks = 0, partChunks = 0;
  for (long long i = 0; i < rows; ++i)
    for (long long q = 0; q < cols / per; ++q) {
      long long in = 0;
      for (long long j = q * per; j < q * per + per; ++j)
        if (stored(i, j)) wantY[Y.at({t1 + i, h1, c1 + j})] = X.buf[X.at({i, j})], ++in;
      storedY += in;
      fullChunks += in == per;
      partChunks += in != 0 && in != per;
    }

  std::memset(qla_smem_raw, 0x5A, QLA_SMEM_BYTES + kSimSmemGuard);
  const unsigned nthreads = unsigned(rows / 64 * 128);
  simBarrier.threads = nthreads;
#ifdef SIM_TMA
  // Y's map as the runtime encodes it: box (rows, 1, one column block).
  qla::dev::TensorMap ymap;
  const long long eb = (long long)sizeof(Elem), blockCols = swizzle && cols * eb > swizzle ? swizzle / eb : cols;
  bool encodable = (reinterpret_cast<std::uintptr_t>(Y.ptr()) & 15u) == 0 && Y.strides[2] == 1;
  for (int d = 0; d < 2; ++d) encodable = encodable && Y.strides[d] >= 1 && Y.strides[d] * eb % 16 == 0;
  ymap.base = encodable ? reinterpret_cast<unsigned char *>(Y.ptr()) : nullptr;
  ymap.rank = 3;
  ymap.eb = int(eb);
  ymap.swizzle = swizzle;
  const long long ydims[3] = {T, H, D};
  const unsigned ybox[3] = {unsigned(rows), 1u, unsigned(blockCols)};
  for (int d = 0; d < 3; ++d) ymap.dims[d] = ydims[d], ymap.strides[d] = Y.strides[d], ymap.box[d] = ybox[d];
#define QLA_SIM_MAP ymap,
#else
#define QLA_SIM_MAP
#endif
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < nthreads; ++t)
    threads.emplace_back([&, t] {
      threadIdx.x = t;
      qla_kernel(QLA_SIM_MAP X.ptr(), Y.ptr(), X.strides[0], X.strides[1], Y.strides[0], Y.strides[1], Y.strides[2],  //
                 int(rows), int(cols), int(T), int(H), int(D),                                            //
                 int(t1), int(h1), int(c1), int(eos), int(ecol));
      qla_sim_publish_vec(t);
    });
  for (auto &t : threads) t.join();

  const int badY = compareBuffers(Y, wantY), badIn = compareBuffers(X, wantX);
  int guardWrites = 0;
  for (unsigned i = 0; i < kSimSmemGuard; ++i) guardWrites += qla_smem_raw[QLA_SMEM_BYTES + i] != 0x5A;
  // The recorded choices, in the kernel's order: X's paired load, Y's store.
#ifdef SIM_TMA
  // The TMA path: one store per column block, and Y's thread copy not run
  // (its path is never noted).
  const long long tma = qla::dev::simTmaStores;
  std::string vec = tma ? qla_sim_vec_summary({"X"}, {"pair"}) : qla_sim_vec_summary({"X", "Y"}, {"pair", "vec16"});
  bool yPath = tma ? tma == cols / blockCols && vec.find(",Y:") == std::string::npos
                   : vec.find(",Y:") != std::string::npos;
  if (tma && !yPath) std::fprintf(stderr, "Y: %lld TMA stores, want %lld\n", tma, cols / blockCols);
  vec += " tma=" + std::to_string(tma);
#else
  std::string vec = qla_sim_vec_summary({"X", "Y"}, {"pair", "vec16"});
  const bool yPath = vec.find(",Y:") != std::string::npos;
#endif
  const bool yVec = vec.find(",Y:vec16") != std::string::npos;
  const long long u4 = simU4Moves, wantU4 = yVec ? fullChunks : 0;
  if (u4 != wantU4) std::fprintf(stderr, "Y: %lld 16-byte moves, want %lld\n", u4, wantU4);
  const bool ok = badY + badIn + guardWrites == 0 && yPath && u4 == wantU4 &&
                  simU4Misaligned + simU4BadSrc + simU4BadDst == 0;
  std::printf("dt=%s rows=%lld cols=%lld threads=%u swizzle=%d vec=%s stored=Y:%lld chunks=full:%lld,part:%lld u4=%lld "
              "bad=Y:%d,in:%d u4_bad=align:%lld,src:%lld,dst:%lld smem_writes=%d %s\n",
              kDt, rows, cols, nthreads, swizzle, vec.c_str(), storedY, fullChunks, partChunks, u4, badY, badIn,
              (long long)simU4Misaligned, (long long)simU4BadSrc, (long long)simU4BadDst, guardWrites,
              ok ? "OK" : "MISMATCH");
  return ok ? 0 : 1;
}
