// Kernel cache: compiled kernels (cubin + PTX + KernelInfo text) keyed by a hash
// of everything that determines them. In memory, and on disk under
// $QLA_CACHE_DIR (default ~/.cache/qla). Disk writes are atomic (temp file +
// rename); entries carry a checksum and are rebuilt when corrupt or truncated;
// several processes may share the directory.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace qla::rt {

struct CacheEntry {
  std::string cubin;
  std::string ptx;
  std::string kernelInfo;  // KernelInfo::serialize()
};

struct CacheKeyParts {
  std::string source;        // emitted CUDA source
  std::string options;       // NVRTC options, joined
  std::string nvrtcVersion;
  std::string arch;
  std::string qlaVersion;
};

// 128-bit content hash (hex, 32 chars) of the key parts.
std::string cacheKey(const CacheKeyParts &parts);

enum class CacheHit { Memory, Disk, Miss };

class KernelCache {
 public:
  // dir empty → $QLA_CACHE_DIR, else $HOME/.cache/qla. Created on first write.
  explicit KernelCache(std::string dir = {});
  static KernelCache &global();

  const std::string &directory() const { return dir_; }

  std::optional<CacheEntry> lookup(const std::string &key, CacheHit *hit = nullptr);
  // Writes to memory and disk. Disk failures are reported in `warning` but are
  // not fatal (the entry still lives in memory).
  void store(const std::string &key, const CacheEntry &entry, std::string *warning = nullptr);
  // lookup, else build() and store. `hit` says where it came from.
  // build returns false (with error) on failure; nothing is stored then.
  bool getOrBuild(const std::string &key,
                  const std::function<bool(CacheEntry &, std::string &)> &build,
                  CacheEntry &out, std::string &error, CacheHit *hit = nullptr);
  void clearMemory();
  std::string pathFor(const std::string &key) const;

 private:
  std::string dir_;
  std::mutex mu_;
  std::unordered_map<std::string, CacheEntry> mem_;
};

}  // namespace qla::rt
