// Host side of emit-frag-global-cpu.qla and emit-frag-shared-cpu.qla: KEY=VALUE
// arguments, strided tensors in guarded buffers, the element type and an
// independent reference for its conversions (nothing here calls the qla::dev
// stand-ins the kernel uses). Follows the kernel's text, precedes the main.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#ifdef SIM_BF16
using Elem = qla::dev::bf16;
static const char *const kDt = "bf16";
#else
using Elem = float;
static const char *const kDt = "f32";
#endif

static std::uint32_t bitsOf(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
static float floatOf(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
#ifdef SIM_BF16
[[maybe_unused]] static float refToFloat(Elem e) { return floatOf(std::uint32_t(e.bits) << 16); }
// Only for values that are exactly representable (they came from a bf16, or 0).
[[maybe_unused]] static Elem refFromExact(float f) {
  const std::uint32_t u = bitsOf(f);
  if (u & 0xffffu) {
    std::fprintf(stderr, "internal: %a is not a bf16 value\n", double(f));
    std::exit(2);
  }
  return Elem{(unsigned short)(u >> 16)};
}
#else
[[maybe_unused]] static float refToFloat(Elem e) { return e; }
[[maybe_unused]] static Elem refFromExact(float f) { return f; }
#endif

// f32 -> bf16 by the definition: the nearer of the two neighbouring bf16
// values, the even one on a tie (finite inputs well inside the range).
[[maybe_unused]] static std::uint16_t refRoundBf16(float x) {
  const std::uint32_t u = bitsOf(x);
  const std::uint32_t down = u & 0xffff0000u, up = down + 0x10000u;
  const double dd = std::fabs(double(x) - double(floatOf(down))), du = std::fabs(double(floatOf(up)) - double(x));
  if (dd < du) return std::uint16_t(down >> 16);
  if (du < dd) return std::uint16_t(up >> 16);
  return std::uint16_t(((down >> 16) & 1u) ? (up >> 16) : (down >> 16));
}

// A small deterministic generator (splitmix64).
struct Rng {
  std::uint64_t s;
  explicit Rng(std::uint64_t seed) : s(seed) {}
  std::uint32_t operator()() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return std::uint32_t((z ^ (z >> 31)) >> 32);
  }
};

struct Args {
  std::vector<std::pair<std::string, std::string>> kv;
  Args(int argc, char **argv) {
    for (int i = 1; i < argc; ++i) {
      const char *eq = std::strchr(argv[i], '=');
      if (!eq) {
        std::fprintf(stderr, "argument %s is not KEY=VALUE\n", argv[i]);
        std::exit(2);
      }
      kv.emplace_back(std::string(argv[i], size_t(eq - argv[i])), eq + 1);
    }
  }
  // The value of KEY (the last one given), which counts as used; `def` if none.
  std::string str(const std::string &k, const std::string &def) {
    std::string v = def;
    for (size_t i = 0; i < kv.size();)
      if (kv[i].first == k) v = kv[i].second, kv.erase(kv.begin() + long(i));
      else ++i;
    return v;
  }
  long long num(const std::string &k, long long def) {
    const std::string v = str(k, "");
    return v.empty() ? def : std::atoll(v.c_str());
  }
  std::vector<long long> list(const std::string &k) {
    std::vector<long long> out;
    const std::string v = str(k, "");
    for (const char *p = v.c_str(); *p;) {
      char *end;
      out.push_back(std::strtoll(p, &end, 10));
      if (end == p || (*end && *end != ',')) {
        std::fprintf(stderr, "bad list %s=%s\n", k.c_str(), v.c_str());
        std::exit(2);
      }
      p = *end ? end + 1 : end;
    }
    return out;
  }
  // Every argument must have been used: a typo must not silently test the default.
  void done() {
    for (auto &[k, v] : kv) {
      std::fprintf(stderr, "unknown argument %s=%s\n", k.c_str(), v.c_str());
      std::exit(2);
    }
  }
};

// A tensor of dims `dims` with strides NAME.s=... (default: packed,
// row-major) at element offset NAME.off=... (default 0) into a buffer with
// kMargin elements on either side. Every element of the buffer, inside the
// tensor or not, is either input data (nonzero) or poison, and all of it is
// compared after the run.
template <class T>
struct Tensor {
  static constexpr long long kMargin = 512;
  std::string name;
  std::vector<long long> dims, strides;
  long long off = 0;
  std::vector<T> buf;
  Tensor(const std::string &n, std::vector<long long> d, Args &args) : name(n), dims(std::move(d)) {
    strides = args.list(n + ".s");
    if (strides.empty()) {
      strides.assign(dims.size(), 1);
      for (int k = int(dims.size()) - 2; k >= 0; --k) strides[k] = strides[k + 1] * dims[k + 1];
    }
    if (strides.size() != dims.size()) {
      std::fprintf(stderr, "%s.s needs %zu strides\n", n.c_str(), dims.size());
      std::exit(2);
    }
    off = args.num(n + ".off", 0);
    long long span = 1;
    for (size_t k = 0; k < dims.size(); ++k) span += (dims[k] - 1) * strides[k];
    buf.resize(size_t(2 * kMargin + off + span));
  }
  T *ptr() { return buf.data() + kMargin + off; }
  // Buffer position of element idx (which must be in range).
  size_t at(const std::vector<long long> &idx) const {
    long long e = kMargin + off;
    for (size_t k = 0; k < idx.size(); ++k) e += idx[k] * strides[k];
    return size_t(e);
  }
  bool inRange(const std::vector<long long> &idx) const {
    for (size_t k = 0; k < idx.size(); ++k)
      if (idx[k] < 0 || idx[k] >= dims[k]) return false;
    return true;
  }
  void poison() { std::memset(static_cast<void *>(buf.data()), 0xA5, buf.size() * sizeof(T)); }
};

// Random nonzero values, exactly representable in Elem: loads of elements out
// of range must give 0, which no in-range element (nor any other element of
// the buffer) holds. Magnitudes 2^-15 .. 2^16, random mantissa and sign.
template <class T>
void fillInput(Tensor<T> &t, Rng &rng) {
  for (T &e : t.buf) {
    const std::uint32_t r = rng();
    const std::uint32_t f32 = ((r & 1u) << 31) | ((112u + (r >> 1) % 32u) << 23) | ((r >> 6) & 0x7fffffu);
#ifdef SIM_BF16
    if constexpr (std::is_same_v<T, Elem>) {
      e = Elem{(unsigned short)(f32 >> 16)};
      continue;
    }
#endif
    std::memcpy(&e, &f32, 4);
  }
}

// Byte-exact comparison of a whole buffer (tensor, gaps and margins) with its
// expectation; reports the first few differences on stderr.
template <class T>
int compareBuffers(const Tensor<T> &got, const std::vector<T> &want) {
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::memcmp(&got.buf[i], &want[i], sizeof(T)) == 0) continue;
    if (bad < 5) {
      unsigned g = 0, w = 0;
      std::memcpy(&g, &got.buf[i], sizeof(T));
      std::memcpy(&w, &want[i], sizeof(T));
      std::fprintf(stderr, "%s: buffer element %lld (tensor offset %lld): got 0x%x, want 0x%x\n", got.name.c_str(),
                   (long long)i, (long long)i - Tensor<T>::kMargin - got.off, g, w);
    }
    ++bad;
  }
  return bad;
}

// The arena offsets of the kernel's shared tiles, read from its emitted CUDA
// (cu): each tile's declaration, `T* const name = reinterpret_cast<T*>(qla_smem
// + N);`, or with --smem-ptr32 (QLA_LIT_SMEM_PTR32 set for the run) `const
// qla::dev::sptr<T> name(qla_smem_base + Nu);`. False if cu cannot be read.
static bool qla_sim_tile_offsets(const std::string &cu, std::vector<unsigned> &offsets) {
  std::FILE *in = std::fopen(cu.c_str(), "r");
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", cu.c_str());
    return false;
  }
  const bool ptr32 = std::getenv("QLA_LIT_SMEM_PTR32") != nullptr;
  const char *const key = ptr32 ? "(qla_smem_base + " : "*>(qla_smem + ";
  for (char line[4096]; std::fgets(line, sizeof line, in);)
    if (const char *k = std::strstr(line, key); k && std::strstr(line, ptr32 ? "qla::dev::sptr<" : "reinterpret_cast<"))
      offsets.push_back(unsigned(std::atoi(k + std::strlen(key))));
  std::fclose(in);
  return true;
}
