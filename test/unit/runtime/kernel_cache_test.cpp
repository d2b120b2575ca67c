// Kernel cache: keys, memory and disk entries, corruption, and two processes
// sharing one directory.
#include "test/unit/TestSupport.h"
#include <catch2/catch.hpp>

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "qla/runtime/KernelCache.h"

using namespace qla::rt;

using qla::test::TempDir;

namespace {


std::vector<std::string> listDir(const std::string &p) {
  std::vector<std::string> names;
  if (DIR *d = ::opendir(p.c_str())) {
    while (dirent *e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(d);
  }
  return names;
}

// Deterministic entry contents for a key, large enough to span several writes.
CacheEntry entryFor(const std::string &key, size_t cubinBytes = 5000) {
  CacheEntry e;
  e.cubin = std::string("\x7f" "ELF", 4);
  for (size_t i = 0; e.cubin.size() < cubinBytes; ++i)
    e.cubin += char((i * 131 + key.size() * 7 + (unsigned char)key.back()) & 0xff);
  e.ptx = ".version 9.0\n.target sm_90a\n// " + key + "\n";
  e.kernelInfo = "name k_" + key + "\n";
  return e;
}

bool sameEntry(const CacheEntry &a, const CacheEntry &b) {
  return a.cubin == b.cubin && a.ptx == b.ptx && a.kernelInfo == b.kernelInfo;
}

std::string readBytes(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

CacheKeyParts sampleParts() {
  return {"extern \"C\" __global__ void k() {}", "-arch=sm_90a -std=c++17", "13.0", "sm_90a", "0.1.0"};
}

}  // namespace

TEST_CASE("cacheKey is a stable 128-bit hex hash of every part", "[runtime][cache]") {
  CacheKeyParts p = sampleParts();
  std::string k = cacheKey(p);
  REQUIRE(k.size() == 32);
  CHECK(k.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(cacheKey(p) == k);

  std::set<std::string> keys = {k};
  auto vary = [&](std::string CacheKeyParts::*field) {
    CacheKeyParts q = p;
    q.*field += "x";
    CHECK(keys.insert(cacheKey(q)).second);
  };
  vary(&CacheKeyParts::source);
  vary(&CacheKeyParts::options);
  vary(&CacheKeyParts::nvrtcVersion);
  vary(&CacheKeyParts::arch);
  vary(&CacheKeyParts::qlaVersion);

  // Length prefixes: moving a byte from one part to the next changes the key.
  CacheKeyParts a{"ab", "c", "", "", ""}, b{"a", "bc", "", "", ""};
  CHECK(cacheKey(a) != cacheKey(b));

  // Pinned value: keys name files that other processes, machines and later
  // builds read, so they must never drift. (SHA-256 prefix; checked with
  // Python's hashlib over the same length-prefixed message.)
  CHECK(cacheKey(CacheKeyParts{"src", "opts", "13.0", "sm_90a", "0.1.0"}) == "3117b6dbec3154074ba7c3e821d35a05");
}

TEST_CASE("cache directory defaults to $QLA_CACHE_DIR, else ~/.cache/qla", "[runtime][cache]") {
  const char *oldDir = std::getenv("QLA_CACHE_DIR");
  std::string saved = oldDir ? oldDir : "";
  ::setenv("QLA_CACHE_DIR", "/some/where", 1);
  CHECK(KernelCache().directory() == "/some/where");
  ::setenv("QLA_CACHE_DIR", "", 1);
  const char *home = std::getenv("HOME");
  if (home && *home) CHECK(KernelCache().directory() == std::string(home) + "/.cache/qla");
  if (oldDir) ::setenv("QLA_CACHE_DIR", saved.c_str(), 1);
  else ::unsetenv("QLA_CACHE_DIR");
  CHECK(KernelCache("/x/y/").directory() == "/x/y");
  CHECK(KernelCache("/x/y").pathFor("abc") == "/x/y/abc.qlak");
}

TEST_CASE("cache store and lookup in memory and on disk", "[runtime][cache]") {
  TempDir tmp;
  std::string dir = tmp.path + "/nested/cache";  // parents are created on first write
  std::string key = cacheKey(sampleParts());
  CacheEntry e = entryFor(key);

  KernelCache cache(dir);
  CacheHit hit = CacheHit::Memory;
  CHECK_FALSE(cache.lookup(key, &hit).has_value());
  CHECK(hit == CacheHit::Miss);

  std::string warning;
  cache.store(key, e, &warning);
  CHECK(warning.empty());
  auto m = cache.lookup(key, &hit);
  REQUIRE(m.has_value());
  CHECK(hit == CacheHit::Memory);
  CHECK(sameEntry(*m, e));

  struct stat st;
  REQUIRE(::stat(dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == (0755 & ~[] { mode_t u = ::umask(0); ::umask(u); return u; }()));
  REQUIRE(::stat(cache.pathFor(key).c_str(), &st) == 0);
  CHECK(listDir(dir) == std::vector<std::string>{key + ".qlak"});
  CHECK(readBytes(cache.pathFor(key)).compare(0, 4, "QLAK") == 0);

  cache.clearMemory();
  auto d = cache.lookup(key, &hit);
  REQUIRE(d.has_value());
  CHECK(hit == CacheHit::Disk);
  CHECK(sameEntry(*d, e));
  cache.lookup(key, &hit);
  CHECK(hit == CacheHit::Memory);  // promoted

  // Another instance (process) sharing the directory sees it on disk.
  KernelCache other(dir);
  auto o = other.lookup(key, &hit);
  REQUIRE(o.has_value());
  CHECK(hit == CacheHit::Disk);
  CHECK(sameEntry(*o, e));

  // Empty sections are fine; a key used as a file name must be safe.
  CacheEntry empty;
  cache.store("emptykey", empty, &warning);
  cache.clearMemory();
  REQUIRE(cache.lookup("emptykey", &hit).has_value());
  CHECK(hit == CacheHit::Disk);
  warning.clear();
  cache.store("../escape", e, &warning);
  CHECK_FALSE(warning.empty());
  CHECK(cache.lookup("../escape", &hit).has_value());  // still in memory
  cache.clearMemory();
  CHECK_FALSE(cache.lookup("../escape", &hit).has_value());
  CHECK(::access((tmp.path + "/nested/escape.qlak").c_str(), F_OK) != 0);
}

TEST_CASE("cache write failures are warnings, not errors", "[runtime][cache]") {
  TempDir tmp;
  std::string file = tmp.path + "/not-a-dir";
  writeBytes(file, "x");
  KernelCache cache(file + "/sub");
  std::string warning;
  cache.store("k1", entryFor("k1"), &warning);
  CHECK(warning.find("kernel cache:") == 0);
  CHECK(cache.lookup("k1").has_value());

  CacheEntry out;
  std::string err;
  int builds = 0;
  REQUIRE(cache.getOrBuild("k2", [&](CacheEntry &e, std::string &) { ++builds; e = entryFor("k2"); return true; },
                           out, err));
  CHECK(builds == 1);
}

TEST_CASE("corrupt cache files are misses and get rebuilt", "[runtime][cache]") {
  TempDir tmp;
  std::string key = cacheKey(sampleParts());
  CacheEntry good = entryFor(key, 20000);
  std::string goodBytes;
  {
    KernelCache c(tmp.path);
    c.store(key, good);
    goodBytes = readBytes(c.pathFor(key));
  }
  REQUIRE(goodBytes.size() > 20000);

  std::vector<std::pair<std::string, std::string>> damaged = {
      {"truncated", goodBytes.substr(0, goodBytes.size() / 2)},
      {"truncated checksum", goodBytes.substr(0, goodBytes.size() - 3)},
      {"header only", goodBytes.substr(0, 40)},
      {"empty", ""},
      {"garbage", std::string(3000, '\x5a')},
      {"flipped payload byte", [&] { std::string s = goodBytes; s[s.size() / 2] ^= 1; return s; }()},
      {"wrong version", [&] { std::string s = goodBytes; s[4] = 99; return s; }()},
      {"huge length", [&] { std::string s = goodBytes; for (int i = 16; i < 24; ++i) s[i] = '\xff'; return s; }()},
      {"trailing bytes", goodBytes + "xx"},
  };
  for (const auto &[what, bytes] : damaged) {
    SECTION(what) {
      KernelCache cache(tmp.path);
      writeBytes(cache.pathFor(key), bytes);
      CacheHit hit = CacheHit::Memory;
      CHECK_FALSE(cache.lookup(key, &hit).has_value());
      CHECK(hit == CacheHit::Miss);

      int builds = 0;
      CacheEntry out;
      std::string err;
      REQUIRE(cache.getOrBuild(key,
                               [&](CacheEntry &e, std::string &) {
                                 ++builds;
                                 e = good;
                                 return true;
                               },
                               out, err, &hit));
      CHECK(builds == 1);
      CHECK(hit == CacheHit::Miss);
      CHECK(sameEntry(out, good));
      CHECK(readBytes(cache.pathFor(key)) == goodBytes);  // rewritten

      KernelCache fresh(tmp.path);
      REQUIRE(fresh.getOrBuild(key, [&](CacheEntry &, std::string &) { ++builds; return true; }, out,
                               err, &hit));
      CHECK(builds == 1);
      CHECK(hit == CacheHit::Disk);
      CHECK(sameEntry(out, good));
    }
  }

  SECTION("a file stored under another key") {
    KernelCache cache(tmp.path);
    std::string otherKey(32, 'a');
    writeBytes(cache.pathFor(otherKey), goodBytes);  // valid file, wrong name
    CHECK_FALSE(cache.lookup(otherKey).has_value());
  }
}

TEST_CASE("getOrBuild reports build failures and stores nothing", "[runtime][cache]") {
  TempDir tmp;
  KernelCache cache(tmp.path);
  CacheEntry out;
  std::string err;
  CacheHit hit;
  CHECK_FALSE(cache.getOrBuild("kfail", [](CacheEntry &, std::string &e) { e = "boom"; return false; },
                               out, err, &hit));
  CHECK(err == "boom");
  CHECK(hit == CacheHit::Miss);
  CHECK_FALSE(cache.lookup("kfail").has_value());
  CHECK(listDir(tmp.path).empty());

  REQUIRE(cache.getOrBuild("kok", [](CacheEntry &e, std::string &) { e = entryFor("kok"); return true; },
                           out, err, &hit));
  CHECK(hit == CacheHit::Miss);
  REQUIRE(cache.getOrBuild("kok", [](CacheEntry &, std::string &) { return false; }, out, err, &hit));
  CHECK(hit == CacheHit::Memory);
  CHECK(sameEntry(out, entryFor("kok")));
}

TEST_CASE("two processes fill one cache directory at once", "[runtime][cache][multiprocess]") {
  TempDir tmp;
  const int kShared = 40, kPrivate = 40, kRounds = 3;
  auto sharedKey = [](int i) { return "shared" + std::to_string(i); };
  auto privateKey = [](int child, int i) { return "child" + std::to_string(child) + "_" + std::to_string(i); };

  std::vector<pid_t> kids;
  for (int child = 0; child < 2; ++child) {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      // Child: no Catch2 here; report through the exit status only.
      int bad = 0;
      KernelCache cache(tmp.path);
      for (int round = 0; round < kRounds; ++round) {
        for (int i = 0; i < kShared + kPrivate; ++i) {
          std::string key = i < kShared ? sharedKey(i) : privateKey(child, i);
          size_t bytes = 1000 + size_t(i) * 997 % 60000;  // spans many write() calls
          std::string warning;
          cache.store(key, entryFor(key, bytes), &warning);
          if (!warning.empty()) ++bad;
          cache.clearMemory();
          // Whatever is on disk must be complete: the other process may be
          // renaming its copy of the same key right now.
          CacheHit hit;
          auto e = cache.lookup(key, &hit);
          if (!e || hit != CacheHit::Disk || !sameEntry(*e, entryFor(key, bytes))) ++bad;
          if (i < kShared) {
            std::string peer = sharedKey((i + 7) % kShared);
            auto p = cache.lookup(peer, &hit);
            size_t peerBytes = 1000 + size_t((i + 7) % kShared) * 997 % 60000;
            if (p && !sameEntry(*p, entryFor(peer, peerBytes))) ++bad;
          }
        }
      }
      ::_exit(bad == 0 ? 0 : 1);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }

  KernelCache cache(tmp.path);
  int found = 0;
  auto verify = [&](const std::string &key, int i) {
    CacheHit hit;
    auto e = cache.lookup(key, &hit);
    INFO(key);
    REQUIRE(e.has_value());
    CHECK(hit == CacheHit::Disk);
    CHECK(sameEntry(*e, entryFor(key, 1000 + size_t(i) * 997 % 60000)));
    ++found;
  };
  for (int i = 0; i < kShared; ++i) verify(sharedKey(i), i);
  for (int child = 0; child < 2; ++child)
    for (int i = kShared; i < kShared + kPrivate; ++i) verify(privateKey(child, i), i);
  CHECK(found == kShared + 2 * kPrivate);
  std::vector<std::string> files = listDir(tmp.path);
  CHECK(files.size() == size_t(found));
  for (const auto &f : files) {
    INFO(f);
    CHECK(f.find(".tmp.") == std::string::npos);
    CHECK(f.size() > 5);
    CHECK(f.substr(f.size() - 5) == ".qlak");
  }
}

TEST_CASE("prebuilt folders serve misses read-only, after the cache directory", "[runtime][cache]") {
  TempDir a, b, c;
  const std::string key = cacheKey(sampleParts());
  const CacheEntry e = entryFor(key);
  KernelCache(a.path).store(key, e);  // a: what `python -m qla warmup --cache-dir` fills

  // A cache over the empty b with prebuilt [c (empty), a] finds it in a.
  KernelCache k(b.path, {c.path, a.path});
  CacheHit hit = CacheHit::Miss;
  auto got = k.lookup(key, &hit);
  REQUIRE(got);
  CHECK(hit == CacheHit::Disk);
  CHECK(sameEntry(*got, e));
  CHECK(listDir(b.path).empty());  // a lookup writes nothing
  // Then from memory.
  CHECK(k.lookup(key, &hit));
  CHECK(hit == CacheHit::Memory);

  // Stores go to the cache directory only.
  const std::string key2 = cacheKey({"other", "", "", "", ""});
  KernelCache k2(b.path, {a.path});
  k2.store(key2, entryFor(key2));
  CHECK(listDir(b.path) == std::vector<std::string>{key2 + ".qlak"});
  CHECK(listDir(a.path).size() == 1);

  // The cache directory wins over a prebuilt folder; a corrupt prebuilt entry
  // is skipped (a miss), not rebuilt in place.
  const CacheEntry mine = entryFor(key, 7000);
  KernelCache(c.path).store(key, mine);
  auto first = KernelCache(c.path, {a.path}).lookup(key);
  REQUIRE(first);
  CHECK(sameEntry(*first, mine));
  const std::string bytes = readBytes(a.path + "/" + key + ".qlak");
  writeBytes(a.path + "/" + key + ".qlak", bytes.substr(0, bytes.size() / 2));
  CHECK_FALSE(KernelCache(b.path, {a.path}).lookup(key));
  CHECK(readBytes(a.path + "/" + key + ".qlak").size() == bytes.size() / 2);
}

TEST_CASE("prebuilt folders: $QLA_PREBUILT_DIRS, ':'-separated, in order", "[runtime][cache]") {
  const char *old = std::getenv("QLA_PREBUILT_DIRS");
  const std::string saved = old ? old : "";
  setenv("QLA_PREBUILT_DIRS", "/p/one::/p/two", 1);
  std::vector<std::string> d = KernelCache::defaultPrebuiltDirs();
  REQUIRE(d.size() >= 2);
  CHECK(d[0] == "/p/one");
  CHECK(d[1] == "/p/two");
  unsetenv("QLA_PREBUILT_DIRS");
  // Without it: at most prebuilt/ beside the shared object holding this code.
  for (const std::string &x : KernelCache::defaultPrebuiltDirs()) CHECK(x.size() > 9);
  for (const std::string &x : KernelCache::defaultPrebuiltDirs()) CHECK(x.substr(x.size() - 9) == "/prebuilt");
  if (old) setenv("QLA_PREBUILT_DIRS", saved.c_str(), 1);
}
