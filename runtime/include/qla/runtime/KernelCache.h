// Kernel cache: compiled kernels (cubin + PTX + KernelInfo text) keyed by a hash
// of everything that determines them. In memory, and on disk under
// $QLA_CACHE_DIR (default ~/.cache/qla). Disk writes are atomic (temp file +
// rename); entries carry a checksum and are rebuilt when corrupt or truncated;
// several processes may share the directory.
//
// Prebuilt entries: a miss in the cache directory is looked up next in
// read-only folders of the same format, never written: those named by
// $QLA_PREBUILT_DIRS (':'-separated), then `prebuilt/` beside the shared
// object this code is linked into (libqla.so: a wheel carries the kernels a
// serving process needs there, filled by `python -m qla warmup --cache-dir`).
// An entry's key holds the NVRTC version and the architecture, so a prebuilt
// entry only serves the toolkit and GPU it was built for.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

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

enum class CacheHit { Memory, Disk, Miss };  // Disk: the cache directory or a prebuilt one

class KernelCache {
 public:
  // dir empty → $QLA_CACHE_DIR, else $HOME/.cache/qla. Created on first write.
  // prebuilt: the read-only folders searched after dir (above); the global
  // cache takes the default ones.
  explicit KernelCache(std::string dir = {}, std::vector<std::string> prebuilt = {});
  static KernelCache &global();
  // $QLA_PREBUILT_DIRS' folders, then prebuilt/ beside this shared object
  // (when the code is in one and the folder exists).
  static std::vector<std::string> defaultPrebuiltDirs();

  const std::string &directory() const { return dir_; }
  const std::vector<std::string> &prebuiltDirectories() const { return prebuilt_; }

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
  std::vector<std::string> prebuilt_;
  std::mutex mu_;
  std::unordered_map<std::string, CacheEntry> mem_;
};

}  // namespace qla::rt
