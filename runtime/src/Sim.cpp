// The simulator backend (qla/runtime/Sim.h): compiles an emitted kernel for
// the CPU against the embedded qla/sim headers, loads it, runs grids.
#include "qla/runtime/Sim.h"

#include "qla/runtime/Driver.h"
#include "qla/runtime/KernelCache.h"
#include "qla/runtime/Log.h"

#include <dlfcn.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

#include "qla/sim/abi.h"  // qla_sim_config, qla_sim_launch_fn, SimMap

#ifndef QLA_SIM_DEFAULT_CXX
#define QLA_SIM_DEFAULT_CXX "c++"
#endif

namespace qla::rt {
namespace detail {
const std::vector<std::pair<std::string, std::string>> &embeddedSimHeaderTable();
}

namespace {

bool envTrue(const char *name) {
  const char *e = std::getenv(name);
  if (!e || !*e) return false;
  const std::string v = e;
  return !(v == "0" || v == "off" || v == "false" || v == "no");
}

std::string envOr(const char *name, const std::string &def) {
  const char *e = std::getenv(name);
  return e && *e ? std::string(e) : def;
}

std::string simCacheDir() {
  if (const char *d = std::getenv("QLA_SIM_CACHE_DIR"); d && *d) return d;
  if (const char *d = std::getenv("QLA_CACHE_DIR"); d && *d) return std::string(d) + "/sim";
  std::string home;
  if (const char *h = std::getenv("HOME"); h && *h) home = h;
  else if (const passwd *pw = getpwuid(getuid()); pw && pw->pw_dir) home = pw->pw_dir;
  if (home.empty()) return "/tmp/qla-sim-" + std::to_string(getuid());
  return home + "/.cache/qla/sim";
}

void mkdirs(const std::string &dir) {
  std::string cur;
  for (size_t pos = 0; pos <= dir.size();) {
    size_t next = dir.find('/', pos);
    if (next == std::string::npos) next = dir.size();
    cur = dir.substr(0, next);
    pos = next + 1;
    if (!cur.empty()) ::mkdir(cur.c_str(), 0755);
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) throw Error("simulator: cannot create " + dir);
}

void writeFile(const std::string &path, const std::string &text) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out) throw Error("simulator: cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw Error("simulator: cannot rename " + tmp + " to " + path);
}

bool exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Runs argv (no shell), output into `log`; the exit status.
int runCommand(const std::vector<std::string> &argv, std::string &log) {
  int fds[2];
  if (::pipe(fds) != 0) throw Error("simulator: pipe failed");
  const pid_t pid = ::fork();
  if (pid < 0) throw Error("simulator: fork failed");
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::close(fds[0]);
    ::close(fds[1]);
    std::vector<char *> args;
    for (const std::string &a : argv) args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(fds[1]);
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) log.append(buf, size_t(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

std::vector<std::string> splitFlags(const std::string &s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

}  // namespace

bool simEnabled() { return envTrue("QLA_SIM"); }

SimModule::SimModule(const std::string &cuda, const std::string &symbol) : symbol_(symbol) {
  static const std::string kInclude = "#include \"qla/device/all.cuh\"";
  std::string src = cuda;
  const size_t at = src.find(kInclude);
  if (at == std::string::npos) throw Error("simulator: kernel '" + symbol + "' does not include qla/device/all.cuh");
  src.replace(at, kInclude.size(), "#include \"qla/sim/device.h\"");
  src += "\n// The simulator's entry (runtime/src/Sim.cpp).\nextern \"C\" int qla_sim_launch(void **args, "
         "const qla_sim_config *cfg, char *err, size_t errlen) {\n  return qla::sim::launch(&" +
         symbol + ", args, cfg, err, errlen);\n}\n";

  const std::string cxx = envOr("QLA_SIM_CXX", QLA_SIM_DEFAULT_CXX);
  std::vector<std::string> flags = {"-std=c++17", "-O1", "-fPIC", "-shared", "-fno-strict-aliasing", "-w"};
  for (const std::string &f : splitFlags(envOr("QLA_SIM_CXXFLAGS", ""))) flags.push_back(f);

  // The key: the source, the headers, the command.
  CacheKeyParts parts;
  parts.source = src;
  for (auto &[name, text] : detail::embeddedSimHeaderTable()) parts.source += "\n//@" + name + "\n" + text;
  parts.options = cxx;
  for (const std::string &f : flags) parts.options += " " + f;
  parts.arch = "sim";
  const std::string key = cacheKey(parts);

  const std::string dir = simCacheDir();
  path_ = dir + "/" + key + ".so";
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (!exists(path_)) {
    const auto t0 = std::chrono::steady_clock::now();
    // The headers, once per content.
    const std::string inc = dir + "/include-" + key.substr(0, 16);
    for (auto &[name, text] : detail::embeddedSimHeaderTable()) {
      const std::string p = inc + "/" + name;
      mkdirs(p.substr(0, p.rfind('/')));
      writeFile(p, text);
    }
    const std::string cpp = dir + "/" + key + ".cpp";
    writeFile(cpp, src);
    const std::string tmp = path_ + ".tmp" + std::to_string(::getpid());
    std::vector<std::string> argv = {cxx};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"-I" + inc, cpp, "-o", tmp});
    std::string log;
    const int rc = runCommand(argv, log);
    if (rc != 0) {
      std::string cmd;
      for (const std::string &a : argv) cmd += (cmd.empty() ? "" : " ") + a;
      if (log.size() > 8000) log = log.substr(0, 8000) + "\n...";
      throw Error("simulator: compiling kernel '" + symbol + "' for the CPU failed (" + cmd + "):\n" + log);
    }
    if (std::rename(tmp.c_str(), path_.c_str()) != 0) throw Error("simulator: cannot rename " + tmp);
    logPrintf(LogLevel::Info, "sim: compiled %s for the CPU in %.1f s (%s)", symbol.c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), path_.c_str());
  }
  lib_ = ::dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib_) {
    const char *e = ::dlerror();
    throw Error("simulator: cannot load " + path_ + ": " + (e ? e : "?"));
  }
  entry_ = ::dlsym(lib_, "qla_sim_launch");
  if (!entry_) throw Error("simulator: " + path_ + " has no qla_sim_launch");
}

SimModule::~SimModule() {
  if (lib_) ::dlclose(lib_);
}

void SimModule::run(void **argv, const std::array<int64_t, 3> &grid, int threads, int smemBytes,
                    const std::array<int, 3> &cluster) const {
  qla_sim_config cfg{};
  for (int i = 0; i < 3; ++i) {
    cfg.grid[i] = unsigned(grid[i]);
    cfg.cluster[i] = unsigned(cluster[i]);
  }
  cfg.threads = unsigned(threads);
  cfg.smem_bytes = unsigned(smemBytes);
  char err[4096] = {0};
  // One launch at a time: a kernel's shared object holds one CTA's state.
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = reinterpret_cast<qla_sim_launch_fn>(entry_)(argv, &cfg, err, sizeof err);
  logPrintf(LogLevel::Info, "sim: %s grid (%lld,%lld,%lld) x %d threads in %.2f s", symbol_.c_str(),
            (long long)grid[0], (long long)grid[1], (long long)grid[2], threads,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (rc != 0) throw Error("kernel '" + symbol_ + "' (simulated): " + err);
}

CUtensorMap simTensorMap(DType dtype, void *data, const std::vector<int64_t> &shape,
                         const std::vector<int64_t> &strides, const std::vector<uint32_t> &box, Swizzle swizzle) {
  using qla::sim::SimMap;
  static_assert(sizeof(SimMap) <= sizeof(CUtensorMap), "fits a CUtensorMap");
  SimMap m{};
  m.magic = qla::sim::kMapMagic;
  m.base = static_cast<const unsigned char *>(data);
  const size_t rank = shape.size();
  m.rank = uint32_t(rank);
  m.elemBytes = uint32_t(dtypeBytes(dtype));
  for (size_t i = 0; i < rank; ++i) {
    const size_t src = rank - 1 - i;
    m.dims[i] = uint64_t(shape[src]);
    m.box[i] = box[src];
    if (i > 0) m.strides[i - 1] = uint64_t(strides[src]) * m.elemBytes;
  }
  m.swizzle = uint32_t(swizzle) & 3u;  // rt::Swizzle's codes are the simulator's
  CUtensorMap out;
  std::memset(&out, 0, sizeof out);
  std::memcpy(&out, &m, sizeof m);
  return out;
}

}  // namespace qla::rt
