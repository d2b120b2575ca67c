// Helpers shared by the Catch2 test binaries: scratch directories and files.
#pragma once

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace qla::test {

// A fresh directory under $TMPDIR, removed (with its files) at scope exit.
struct TempDir {
  std::string path;
  explicit TempDir(const std::string &prefix = "qla-test") {
    const char *base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" + prefix + "-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    REQUIRE(::mkdtemp(buf.data()) != nullptr);
    path = buf.data();
  }
  ~TempDir() { removeTree(path); }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  static void removeTree(const std::string &p) {
    if (DIR *d = ::opendir(p.c_str())) {
      while (dirent *e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n == "." || n == "..") continue;
        std::string child = p + "/" + n;
        struct stat st;
        if (::lstat(child.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) removeTree(child);
        else ::unlink(child.c_str());
      }
      ::closedir(d);
    }
    ::rmdir(p.c_str());
  }
};

inline std::string readFile(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::string joined(const std::vector<std::string> &v) {
  std::string s;
  for (auto &l : v) s += l + "\n";
  return s;
}

// The bits of x as a bf16 (dt "bf16") or an f16 (otherwise), for x a multiple
// of 1/16 in [-8, 8): exact in both (the simulator tests' operands).
inline uint16_t halfBits(const std::string &dt, float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if (dt == "bf16") return uint16_t(u >> 16);
  const int sign = x < 0;
  float m_ = std::fabs(x);
  if (m_ == 0) return uint16_t(sign << 15);
  int e = 0;
  float m = std::frexp(m_, &e);
  return uint16_t((sign << 15) | ((e - 1 + 15) << 10) | (uint16_t(std::lround((m * 2 - 1) * 1024)) & 0x3ff));
}

}  // namespace qla::test
