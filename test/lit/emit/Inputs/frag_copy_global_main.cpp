// Runs qla_kernel (the fglobal kernel of emit-frag-global-cpu.qla) on the CPU
// with 128 threads and compares every byte of every tensor buffer, gaps and
// margins included, with a plain host reference:
//   F[i, j] = X[b, t0 + i, h, c0 + j] where that is in range, else 0
//   G[i, j] = V[t0 + i, c0 + j, h]    where that is in range, else 0
//   Y[t1 + i, h1, c1 + j] = F[i, j]   where that is in range and t1 + i < eos
//   Z[t1 + i, c1 + j, h1] = F[i, j]   likewise
//   P[i] = X[b, t0 + i, h, c0]        where that is in range, else 0
//   R[t1 + i] = P[i]                  where that is in range and t1 + i < eos
// and nothing else written (outputs start as 0xA5 bytes). A row vector's
// element lives in four lanes, which all store it: P and R see the same value
// written by four threads at once, harmless here as on the GPU.
// Usage: sim [KEY=VALUE ...] with keys B T H D (dims), b t0 h c0 t1 h1 c1 eos
// (the kernel's scalars), and per tensor N in X V F G P Y Z R: N.s=S0,S1,...
// (strides, default packed) and N.off=K (element offset of the tensor in its
// buffer, default 0: buffers are 16-byte aligned).
int main(int argc, char **argv) {
  Args args(argc, argv);
  const long long B = args.num("B", 2), T = args.num("T", 128), H = args.num("H", 3), D = args.num("D", 40);
  const long long b = args.num("b", 1), t0 = args.num("t0", 32), h = args.num("h", 2), c0 = args.num("c0", 8);
  const long long t1 = args.num("t1", 16), h1 = args.num("h1", 1), c1 = args.num("c1", 0);
  const long long eos = args.num("eos", 1 << 30);
  Tensor<Elem> X("X", {B, T, H, D}, args), V("V", {T, D, H}, args), Y("Y", {T, H, D}, args), Z("Z", {T, D, H}, args),
      R("R", {T}, args);
  Tensor<float> F("F", {64, 32}, args), G("G", {64, 32}, args), P("P", {64}, args);
  args.done();

  Rng rng(4321);
  fillInput(X, rng);
  fillInput(V, rng);
  const std::vector<Elem> wantX = X.buf, wantV = V.buf;  // inputs stay as they are
  Y.poison();
  Z.poison();
  R.poison();
  F.poison();
  G.poison();
  P.poison();

  // The reference.
  std::vector<float> wantF = F.buf, wantG = G.buf, wantP = P.buf;
  std::vector<Elem> wantY = Y.buf, wantZ = Z.buf, wantR = R.buf;
  long long loadedX = 0, loadedV = 0, loadedP = 0, storedY = 0, storedZ = 0, storedR = 0;
  for (long long i = 0; i < 64; ++i) {
    float p = 0.0f;
    if (X.inRange({b, t0 + i, h, c0})) p = refToFloat(X.buf[X.at({b, t0 + i, h, c0})]), ++loadedP;
    wantP[P.at({i})] = p;
    if (t1 + i < eos && R.inRange({t1 + i})) wantR[R.at({t1 + i})] = refFromExact(p), ++storedR;
    for (long long j = 0; j < 32; ++j) {
      float f = 0.0f, g = 0.0f;
      if (X.inRange({b, t0 + i, h, c0 + j})) f = refToFloat(X.buf[X.at({b, t0 + i, h, c0 + j})]), ++loadedX;
      if (V.inRange({t0 + i, c0 + j, h})) g = refToFloat(V.buf[V.at({t0 + i, c0 + j, h})]), ++loadedV;
      wantF[F.at({i, j})] = f;
      wantG[G.at({i, j})] = g;
      if (t1 + i < eos && Y.inRange({t1 + i, h1, c1 + j})) wantY[Y.at({t1 + i, h1, c1 + j})] = refFromExact(f), ++storedY;
      if (t1 + i < eos && Z.inRange({t1 + i, c1 + j, h1})) wantZ[Z.at({t1 + i, c1 + j, h1})] = refFromExact(f), ++storedZ;
    }
  }

  std::memset(qla_smem_raw + QLA_SMEM_BYTES, 0xA5, kSimSmemGuard);
  const unsigned nthreads = 128;
  simBarrier.threads = nthreads;
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < nthreads; ++t)
    threads.emplace_back([&, t] {
      threadIdx.x = t;
      qla_kernel(X.ptr(), V.ptr(), F.ptr(), G.ptr(), P.ptr(), Y.ptr(), Z.ptr(), R.ptr(),           //
                 X.strides[0], X.strides[1], X.strides[2], X.strides[3], V.strides[0], V.strides[1],  //
                 V.strides[2], F.strides[0], F.strides[1], G.strides[0], G.strides[1], P.strides[0],  //
                 Y.strides[0], Y.strides[1], Y.strides[2], Z.strides[0], Z.strides[1], Z.strides[2],  //
                 R.strides[0],                                                                        //
                 int(B), int(T), int(H), int(D),                                                      //
                 int(b), int(t0), int(h), int(c0), int(t1), int(h1), int(c1), int(eos));
      qla_sim_publish_vec(t);
    });
  for (auto &t : threads) t.join();

  const int badF = compareBuffers(F, wantF), badG = compareBuffers(G, wantG);
  const int badP = compareBuffers(P, wantP);
  const int badY = compareBuffers(Y, wantY), badZ = compareBuffers(Z, wantZ), badR = compareBuffers(R, wantR);
  const int badIn = compareBuffers(X, wantX) + compareBuffers(V, wantV);
  int guardWrites = 0;
  for (unsigned i = 0; i < kSimSmemGuard; ++i) guardWrites += qla_smem_raw[QLA_SMEM_BYTES + i] != 0xA5;
  // The paired copies, in the kernel's order (Z's store and V's load have no
  // pairs: their last dim is dropped; nor have the 1-D copies).
  const std::string vec = qla_sim_vec_summary({"X", "F", "Y", "G"});
  const bool ok = badF + badG + badP + badY + badZ + badR + badIn + guardWrites == 0 && vec.find(':') != std::string::npos;
  std::printf("dt=%s vec=%s loaded=X:%lld,V:%lld,P:%lld stored=Y:%lld,Z:%lld,R:%lld "
              "bad=F:%d,G:%d,P:%d,Y:%d,Z:%d,R:%d,in:%d smem_writes=%d %s\n",
              kDt, vec.c_str(), loadedX, loadedV, loadedP, storedY, storedZ, storedR, badF, badG, badP, badY, badZ,
              badR, badIn, guardWrites, ok ? "OK" : "MISMATCH");
  return ok ? 0 : 1;
}
