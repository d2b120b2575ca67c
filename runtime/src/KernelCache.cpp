// Kernel cache: memory map + one file per key on disk.
//
// Disk entry <dir>/<key>.qlak, all integers little-endian:
//   "QLAK" | u32 version | u32 keyLen | u32 0 | u64 cubinLen | u64 ptxLen |
//   u64 infoLen | key | cubin | ptx | info | u64 checksum
// where checksum is the first 8 bytes of SHA-256 over everything before it.
// Files are written to a private temp name and rename()d into place, so a
// reader sees either the old file, the new one, or none — never a mix — even
// with several processes writing the same key. Anything that fails validation
// (truncation, garbage, another format version) is a miss.
#include "qla/runtime/KernelCache.h"
#include "qla/runtime/Log.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

namespace qla::rt {
namespace {

constexpr uint32_t kFormatVersion = 1;
constexpr size_t kHeaderBytes = 40;
constexpr size_t kChecksumBytes = 8;

//===----------------------------------------------------------------------===//
// SHA-256 (FIPS 180-4): deterministic everywhere, no dependency.
//===----------------------------------------------------------------------===//

class Sha256 {
 public:
  Sha256() { reset(); }
  void update(const void *data, size_t n) {
    const auto *p = static_cast<const uint8_t *>(data);
    total_ += n;
    while (n > 0) {
      size_t take = std::min(n, size_t(64) - used_);
      std::memcpy(buf_ + used_, p, take);
      used_ += take;
      p += take;
      n -= take;
      if (used_ == 64) {
        block(buf_);
        used_ = 0;
      }
    }
  }
  void update(const std::string &s) { update(s.data(), s.size()); }
  std::array<uint8_t, 32> finish() {
    uint64_t bits = total_ * 8;
    uint8_t pad = 0x80;
    update(&pad, 1);
    uint8_t zero = 0;
    while (used_ != 56) update(&zero, 1);
    uint8_t len[8];
    for (int i = 0; i < 8; ++i) len[i] = uint8_t(bits >> (56 - 8 * i));
    update(len, 8);
    std::array<uint8_t, 32> out;
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 4; ++j) out[4 * i + j] = uint8_t(h_[i] >> (24 - 8 * j));
    reset();
    return out;
  }

 private:
  static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
  void reset() {
    static const uint32_t init[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    std::memcpy(h_, init, sizeof h_);
    used_ = 0;
    total_ = 0;
  }
  void block(const uint8_t *b) {
    static const uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2};
    uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = uint32_t(b[4 * i]) << 24 | uint32_t(b[4 * i + 1]) << 16 | uint32_t(b[4 * i + 2]) << 8 |
             uint32_t(b[4 * i + 3]);
    for (int i = 16; i < 64; ++i) {
      uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h_[0], bb = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
    for (int i = 0; i < 64; ++i) {
      uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & bb) ^ (a & c) ^ (bb & c));
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = bb;
      bb = a;
      a = t1 + t2;
    }
    h_[0] += a; h_[1] += bb; h_[2] += c; h_[3] += d;
    h_[4] += e; h_[5] += f; h_[6] += g; h_[7] += h;
  }

  uint32_t h_[8];
  uint8_t buf_[64];
  size_t used_ = 0;
  uint64_t total_ = 0;
};

void putU32(std::string &s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(char(uint8_t(v >> (8 * i))));
}
void putU64(std::string &s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(char(uint8_t(v >> (8 * i))));
}
uint32_t getU32(const char *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(uint8_t(p[i])) << (8 * i);
  return v;
}
uint64_t getU64(const char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(uint8_t(p[i])) << (8 * i);
  return v;
}

uint64_t checksum(const char *data, size_t n) {
  Sha256 h;
  h.update(data, n);
  auto d = h.finish();
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(d[i]) << (8 * i);
  return v;
}

// Keys become file names: allow only a safe alphabet (cacheKey() yields hex).
bool isDiskSafeKey(const std::string &key) {
  if (key.empty() || key.size() > 200 || key[0] == '.') return false;
  for (char c : key)
    if (!(std::isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.')) return false;
  return true;
}

std::string defaultDir() {
  if (const char *d = std::getenv("QLA_CACHE_DIR"); d && *d) return d;
  std::string home;
  if (const char *h = std::getenv("HOME"); h && *h) home = h;
  else if (const passwd *pw = getpwuid(getuid()); pw && pw->pw_dir) home = pw->pw_dir;
  if (home.empty()) return "/tmp/qla-cache-" + std::to_string(getuid());
  return home + "/.cache/qla";
}

// mkdir -p with mode 0755 (umask applies).
bool makeDirs(const std::string &dir, std::string &err) {
  std::string cur;
  size_t pos = 0;
  while (pos <= dir.size()) {
    size_t next = dir.find('/', pos);
    if (next == std::string::npos) next = dir.size();
    cur = dir.substr(0, next);
    pos = next + 1;
    if (cur.empty()) continue;  // leading '/'
    if (::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) {
      err = "cannot create directory '" + cur + "': " + std::strerror(errno);
      return false;
    }
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    err = "'" + dir + "' is not a directory";
    return false;
  }
  return true;
}

std::string randomSuffix() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t seed = [] {
    std::random_device rd;
    return (uint64_t(rd()) << 32) ^ rd();
  }();
  uint64_t v = seed ^ (counter.fetch_add(1) * 0x9e3779b97f4a7c15ull) ^
               uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)v);
  return buf;
}

bool writeAll(int fd, const std::string &data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    off += size_t(n);
  }
  return true;
}

bool readFile(const std::string &path, std::string &out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 0 &&
            uint64_t(st.st_size) < (uint64_t(1) << 34);  // 16 GiB: surely not ours
  if (ok) {
    out.resize(size_t(st.st_size));
    size_t off = 0;
    while (off < out.size()) {
      ssize_t n = ::read(fd, &out[off], out.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      off += size_t(n);
    }
    out.resize(off);  // a concurrent truncation just fails validation below
  }
  ::close(fd);
  return ok;
}

std::string encodeEntry(const std::string &key, const CacheEntry &e) {
  std::string s;
  s.reserve(kHeaderBytes + key.size() + e.cubin.size() + e.ptx.size() + e.kernelInfo.size() +
            kChecksumBytes);
  s += "QLAK";
  putU32(s, kFormatVersion);
  putU32(s, uint32_t(key.size()));
  putU32(s, 0);
  putU64(s, e.cubin.size());
  putU64(s, e.ptx.size());
  putU64(s, e.kernelInfo.size());
  s += key;
  s += e.cubin;
  s += e.ptx;
  s += e.kernelInfo;
  putU64(s, checksum(s.data(), s.size()));
  return s;
}

bool decodeEntry(const std::string &key, const std::string &s, CacheEntry &e, const char **why) {
  auto fail = [&](const char *w) {
    *why = w;
    return false;
  };
  if (s.size() < kHeaderBytes + kChecksumBytes) return fail("truncated header");
  const char *p = s.data();
  if (std::memcmp(p, "QLAK", 4) != 0) return fail("not a kernel cache entry");
  if (getU32(p + 4) != kFormatVersion) return fail("another format version");
  uint64_t keyLen = getU32(p + 8), cubinLen = getU64(p + 16), ptxLen = getU64(p + 24),
           infoLen = getU64(p + 32);
  uint64_t avail = s.size() - kHeaderBytes - kChecksumBytes;
  // Compare piecewise so that absurd lengths cannot overflow the sum.
  if (keyLen != key.size() || keyLen > avail) return fail("key length mismatch");
  avail -= keyLen;
  if (cubinLen > avail) return fail("truncated");
  avail -= cubinLen;
  if (ptxLen > avail) return fail("truncated");
  avail -= ptxLen;
  if (infoLen != avail) return fail("truncated or trailing bytes");
  if (s.compare(kHeaderBytes, keyLen, key) != 0) return fail("key mismatch");
  size_t body = s.size() - kChecksumBytes;
  if (getU64(p + body) != checksum(p, body)) return fail("checksum mismatch");
  size_t off = kHeaderBytes + keyLen;
  e.cubin.assign(p + off, cubinLen);
  off += cubinLen;
  e.ptx.assign(p + off, ptxLen);
  off += ptxLen;
  e.kernelInfo.assign(p + off, infoLen);
  return true;
}

}  // namespace

std::string cacheKey(const CacheKeyParts &parts) {
  // Length-prefixed so that moving bytes between parts changes the key.
  Sha256 h;
  const std::string tag = "qla-kernel-cache-key-v1";
  auto part = [&](const std::string &s) {
    std::string len;
    putU64(len, s.size());
    h.update(len);
    h.update(s);
  };
  part(tag);
  part(parts.source);
  part(parts.options);
  part(parts.nvrtcVersion);
  part(parts.arch);
  part(parts.qlaVersion);
  auto d = h.finish();
  static const char hex[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 16; ++i) {
    out += hex[d[i] >> 4];
    out += hex[d[i] & 15];
  }
  return out;
}

KernelCache::KernelCache(std::string dir, std::vector<std::string> prebuilt)
    : dir_(dir.empty() ? defaultDir() : std::move(dir)), prebuilt_(std::move(prebuilt)) {
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
}

KernelCache &KernelCache::global() {
  // Never destroyed: kernels may be looked up from static destructors.
  static KernelCache *cache = new KernelCache({}, defaultPrebuiltDirs());
  return *cache;
}

std::vector<std::string> KernelCache::defaultPrebuiltDirs() {
  std::vector<std::string> dirs;
  if (const char *e = std::getenv("QLA_PREBUILT_DIRS"); e && *e) {
    std::string s = e;
    size_t pos = 0;
    while (pos <= s.size()) {
      size_t next = s.find(':', pos);
      if (next == std::string::npos) next = s.size();
      if (next > pos) dirs.push_back(s.substr(pos, next - pos));
      pos = next + 1;
    }
  }
  // The shared object this function is in (libqla.so), not the executable.
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void *>(&KernelCache::defaultPrebuiltDirs), &info) && info.dli_fname) {
    std::string so = info.dli_fname;
    const size_t slash = so.rfind('/');
    const bool shared = so.size() > 3 && so.find(".so") != std::string::npos;
    if (shared && slash != std::string::npos) {
      const std::string d = so.substr(0, slash) + "/prebuilt";
      struct stat st;
      if (::stat(d.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) dirs.push_back(d);
    }
  }
  return dirs;
}

std::string KernelCache::pathFor(const std::string &key) const {
  return dir_ + "/" + key + ".qlak";
}

std::optional<CacheEntry> KernelCache::lookup(const std::string &key, CacheHit *hit) {
  if (hit) *hit = CacheHit::Miss;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = mem_.find(key);
    if (it != mem_.end()) {
      if (hit) *hit = CacheHit::Memory;
      return it->second;
    }
  }
  if (!isDiskSafeKey(key)) return std::nullopt;
  std::string bytes;
  CacheEntry e;
  // The cache directory, then the read-only prebuilt ones.
  bool found = false;
  for (size_t i = 0; i <= prebuilt_.size() && !found; ++i) {
    const std::string path = i == 0 ? pathFor(key) : prebuilt_[i - 1] + "/" + key + ".qlak";
    if (!readFile(path, bytes)) {
      logPrintf(LogLevel::Debug, "cache: %s not in %s", key.c_str(), path.c_str());
      continue;
    }
    const char *why = "";
    if (!decodeEntry(key, bytes, e, &why)) {
      // In the cache directory: rebuilt by getOrBuild() (the store replaces
      // the file atomically); in a prebuilt one: skipped.
      logPrintf(LogLevel::Info, "cache: corrupt entry %s (%s, %zu bytes); %s", path.c_str(), why, bytes.size(),
                i == 0 ? "rebuilding" : "skipped");
      continue;
    }
    if (i > 0) logPrintf(LogLevel::Debug, "cache: %s from the prebuilt %s", key.c_str(), path.c_str());
    found = true;
  }
  if (!found) return std::nullopt;
  {
    std::lock_guard<std::mutex> lock(mu_);
    mem_.emplace(key, e);
  }
  if (hit) *hit = CacheHit::Disk;
  return e;
}

void KernelCache::store(const std::string &key, const CacheEntry &entry, std::string *warning) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    mem_[key] = entry;
  }
  auto warn = [&](const std::string &msg) {
    if (warning) *warning = "kernel cache: " + msg;
  };
  if (!isDiskSafeKey(key)) return warn("key '" + key + "' is not usable as a file name; kept in memory only");
  std::string err;
  if (!makeDirs(dir_, err)) return warn(err);

  std::string tmp = dir_ + "/.tmp." + key + "." + std::to_string(::getpid()) + "." + randomSuffix();
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return warn("cannot create '" + tmp + "': " + std::strerror(errno));
  bool ok = writeAll(fd, encodeEntry(key, entry));
  int writeErr = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    writeErr = errno;
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    return warn("cannot write '" + tmp + "': " + std::strerror(writeErr));
  }
  // Atomic replace: concurrent writers of one key both write complete files.
  if (::rename(tmp.c_str(), pathFor(key).c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return warn("cannot rename '" + tmp + "' to '" + pathFor(key) + "': " + std::strerror(e));
  }
}

bool KernelCache::getOrBuild(const std::string &key,
                             const std::function<bool(CacheEntry &, std::string &)> &build,
                             CacheEntry &out, std::string &error, CacheHit *hit) {
  if (auto e = lookup(key, hit)) {
    out = std::move(*e);
    return true;
  }
  if (hit) *hit = CacheHit::Miss;
  // Built without holding the lock, so that different kernels build in
  // parallel; two threads racing on one key both build and the last store wins.
  CacheEntry built;
  std::string err;
  if (!build(built, err)) {
    error = err.empty() ? "kernel build failed" : err;
    return false;
  }
  std::string warning;
  store(key, built, &warning);
  if (!warning.empty()) {
    // A read-only or full cache directory must not fail the build; say so once.
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) std::fprintf(stderr, "qla: warning: %s\n", warning.c_str());
    logPrintf(LogLevel::Error, "%s", warning.c_str());
  } else {
    logPrintf(LogLevel::Debug, "cache: stored %s", isDiskSafeKey(key) ? pathFor(key).c_str() : key.c_str());
  }
  out = std::move(built);
  return true;
}

void KernelCache::clearMemory() {
  std::lock_guard<std::mutex> lock(mu_);
  mem_.clear();
}

}  // namespace qla::rt
