// The fragment register layouts (dialects/qla/IR/FragLayout.h): for every
// layout kind and several shapes and warpgroup counts, the map
// (thread, register) -> tile element covers the tile with every element held
// by the same number of threads (exactly one for the accumulator layout), a
// thread's registers hold distinct elements, the text form the emitter
// prints computes what the C++ form does, paired registers are neighbouring
// columns of one row, and the row/col vector register of an accumulator
// register holds that register's row/col.
#include <catch2/catch.hpp>

#include <cctype>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "dialects/qla/IR/FragLayout.h"
#include "dialects/qla/IR/QlaDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"

using qla::compiler::FragLayout;
using qla::compiler::FragThread;

namespace {

// Evaluates the integer C++ expressions the layouts print (+ - * / %,
// parentheses, decimal literals, identifiers bound in `env`), with C++'s
// precedence and truncating division.
class Eval {
 public:
  Eval(const std::string &s, const std::map<std::string, int64_t> &env) : s_(s), env_(env) {}
  int64_t run() {
    int64_t v = sum();
    skip();
    if (p_ != s_.size()) throw std::runtime_error("trailing text in '" + s_ + "'");
    return v;
  }

 private:
  void skip() {
    while (p_ < s_.size() && s_[p_] == ' ') ++p_;
  }
  int64_t sum() {
    int64_t v = product();
    for (;;) {
      skip();
      if (p_ < s_.size() && (s_[p_] == '+' || s_[p_] == '-')) {
        char op = s_[p_++];
        int64_t w = product();
        v = op == '+' ? v + w : v - w;
      } else {
        return v;
      }
    }
  }
  int64_t product() {
    int64_t v = atom();
    for (;;) {
      skip();
      if (p_ < s_.size() && (s_[p_] == '*' || s_[p_] == '/' || s_[p_] == '%')) {
        char op = s_[p_++];
        int64_t w = atom();
        v = op == '*' ? v * w : op == '/' ? v / w : v % w;
      } else {
        return v;
      }
    }
  }
  int64_t atom() {
    skip();
    if (p_ >= s_.size()) throw std::runtime_error("unexpected end of '" + s_ + "'");
    if (s_[p_] == '(') {
      ++p_;
      int64_t v = sum();
      skip();
      if (p_ >= s_.size() || s_[p_] != ')') throw std::runtime_error("missing ) in '" + s_ + "'");
      ++p_;
      return v;
    }
    size_t b = p_;
    if (std::isdigit((unsigned char)s_[p_])) {
      while (p_ < s_.size() && std::isdigit((unsigned char)s_[p_])) ++p_;
      return std::stoll(s_.substr(b, p_ - b));
    }
    while (p_ < s_.size() && (std::isalnum((unsigned char)s_[p_]) || s_[p_] == '_')) ++p_;
    auto it = env_.find(s_.substr(b, p_ - b));
    if (b == p_ || it == env_.end()) throw std::runtime_error("unknown name at " + std::to_string(b) + " in '" + s_ + "'");
    return it->second;
  }
  const std::string &s_;
  const std::map<std::string, int64_t> &env_;
  size_t p_ = 0;
};

int64_t eval(const std::string &s, int64_t r, FragThread t) {
  std::map<std::string, int64_t> env{{"r_", r}, {"qla_lane", t.lane}, {"qla_warp", t.warp}, {"qla_wgl", t.wgl}};
  return Eval(s, env).run();
}

// Every (thread, register) of the layout's role, in order.
template <class F>
void forEachReg(const FragLayout &l, F f) {
  for (int64_t wgl = 0; wgl < l.warpgroups(); ++wgl)
    for (int64_t warp = 0; warp < 4; ++warp)
      for (int64_t lane = 0; lane < 32; ++lane)
        for (int64_t r = 0; r < l.regsPerThread(); ++r) f(FragThread{lane, warp, wgl}, r);
}

void checkLayout(const FragLayout &l) {
  INFO("kind " << l.kind() << ", shape " << l.shape()[0] << (l.rank() == 2 ? "x" + std::to_string(l.shape()[1]) : "")
               << ", warpgroups " << l.warpgroups());
  const int64_t elements = l.rank() == 2 ? l.shape()[0] * l.shape()[1] : l.shape()[0];
  REQUIRE(l.regsPerThread() > 0);
  REQUIRE(128 * l.warpgroups() * l.regsPerThread() == elements * l.replication());
  std::vector<int64_t> held(elements, 0);
  const std::vector<std::string> text = l.indexText("r_");
  REQUIRE(text.size() == l.rank());
  bool ok = true;
  forEachReg(l, [&](FragThread t, int64_t r) {
    std::vector<int64_t> idx = l.index(r, t);
    if (idx.size() != l.rank()) ok = false;
    for (size_t d = 0; d < idx.size(); ++d) {
      if (idx[d] < 0 || idx[d] >= l.shape()[d]) ok = false;
      if (eval(text[d], r, t) != idx[d]) ok = false;  // text form == C++ form
    }
    if (!ok) return;
    ++held[l.rank() == 2 ? idx[0] * l.shape()[1] + idx[1] : idx[0]];
    // Neighbouring-column pairs: r, r + 1 (r even) share the row, columns c, c + 1, c even.
    if (l.pairsColumns() && r % 2 == 0) {
      std::vector<int64_t> next = l.index(r + 1, t);
      if (next.back() != idx.back() + 1 || idx.back() % 2 != 0) ok = false;
      if (l.rank() == 2 && next[0] != idx[0]) ok = false;
    }
  });
  REQUIRE(ok);
  int64_t bad = -1;  // onto, every element equally often
  for (int64_t e = 0; e < elements && bad < 0; ++e)
    if (held[e] != l.replication()) bad = e;
  INFO("element " << bad << " held " << (bad < 0 ? 0 : held[bad]) << " times");
  REQUIRE(bad < 0);
  // A thread's registers hold distinct elements (with the count above: for
  // Acc the map is a bijection between (thread, register) and the tile).
  std::vector<int64_t> owner(elements, -1);
  forEachReg(l, [&](FragThread t, int64_t r) {
    std::vector<int64_t> idx = l.index(r, t);
    const int64_t e = l.rank() == 2 ? idx[0] * l.shape()[1] + idx[1] : idx[0];
    const int64_t thread = (t.wgl * 4 + t.warp) * 32 + t.lane;
    if (owner[e] == thread) ok = false;
    owner[e] = thread;
  });
  REQUIRE(ok);
}

}  // namespace

TEST_CASE("fragment layouts map (thread, register) onto the tile", "[frag-layout]") {
  for (unsigned wg : {1u, 2u, 3u, 4u}) {
    for (int64_t mPerWg : {64, 128, 192}) {
      const int64_t m = mPerWg * wg;
      for (int64_t n : {8, 16, 24, 32, 64, 128, 256}) checkLayout(FragLayout(FragLayout::Acc, {m, n}, wg));
      checkLayout(FragLayout(FragLayout::Row, {m}, wg));
    }
    for (int64_t n : {8, 16, 32, 64, 128, 256}) checkLayout(FragLayout(FragLayout::Col, {n}, wg));
  }
}

TEST_CASE("row/col vector registers of accumulator registers", "[frag-layout]") {
  for (unsigned wg : {1u, 2u}) {
    for (int64_t m : {64 * (int64_t)wg, 128 * (int64_t)wg}) {
      for (int64_t n : {16, 64, 128}) {
        FragLayout acc(FragLayout::Acc, {m, n}, wg), row(FragLayout::Row, {m}, wg), col(FragLayout::Col, {n}, wg);
        bool ok = true;
        forEachReg(acc, [&](FragThread t, int64_t r) {
          std::vector<int64_t> idx = acc.index(r, t);
          int64_t vr = acc.vectorReg(FragLayout::Row, r), vc = acc.vectorReg(FragLayout::Col, r);
          if (vr < 0 || vr >= row.regsPerThread() || row.index(vr, t)[0] != idx[0]) ok = false;
          if (vc < 0 || vc >= col.regsPerThread() || col.index(vc, t)[0] != idx[1]) ok = false;
          if (eval(acc.vectorRegText(FragLayout::Row, "r_"), r, t) != vr) ok = false;
          if (eval(acc.vectorRegText(FragLayout::Col, "r_"), r, t) != vc) ok = false;
        });
        INFO("acc " << m << "x" << n << " over " << wg);
        REQUIRE(ok);
      }
    }
  }
}

TEST_CASE("layout register counts agree with FragType", "[frag-layout]") {
  mlir::MLIRContext ctx;
  ctx.loadDialect<mlir::qla::QlaDialect>();
  auto f32 = mlir::Float32Type::get(&ctx);
  for (unsigned wg : {1u, 2u}) {
    auto acc = mlir::qla::FragType::get(&ctx, {128 * wg, 64}, f32, mlir::qla::FragType::Acc, wg);
    auto row = mlir::qla::FragType::get(&ctx, {128 * wg}, f32, mlir::qla::FragType::Row, wg);
    auto col = mlir::qla::FragType::get(&ctx, {64}, f32, mlir::qla::FragType::Col, wg);
    for (auto t : {acc, row, col}) {
      FragLayout l = FragLayout::of(t);
      CHECK(l.regsPerThread() == t.getRegsPerThread());
      CHECK(l.kind() == t.getLayout());
      CHECK(l.warpgroups() == wg);
    }
  }
}

// The transposed fragment -> 16-bit shared copy (Emitter::emitStmatrixTrans)
// stores an accumulator-layout fragment [M, N] as tile [N, M] with
// stmatrix.sync.aligned.m8n8.x4.trans. Simulated here from the instruction's
// documented semantics (runtime/include/qla/device/ldstmatrix.cuh): for call
// q, lane l supplies the address of stored row l % 8 of block l / 8; thread t
// holds, in its register m (the packed registers 8q + 2m, 8q + 2m + 1),
// column t / 4, rows 2(t%4), 2(t%4) + 1 of the stored block m. The lane's
// address is what the emitter prints (the origin of its block from the
// layout's index text at lane 0, plus its row); the set of (tile element ->
// fragment element) pairs written must be exactly the transposed map, each
// tile element once, and every address 16-byte aligned within its row.
TEST_CASE("stmatrix x4 trans writes the transposed accumulator map", "[frag-layout]") {
  for (unsigned wg : {1u, 2u}) {
    for (int64_t mPerWg : {64, 128}) {
      for (int64_t n : {16, 32, 48, 64, 128, 256}) {
        const int64_t m = mPerWg * wg;
        FragLayout l(FragLayout::Acc, {m, n}, wg);
        INFO("acc " << m << "x" << n << " over " << wg);
        REQUIRE(l.x4Blocks());
        REQUIRE(l.x4Calls() * 8 == l.regsPerThread());
        const std::vector<std::string> origin = l.indexText("r_", "0");
        std::vector<int> written(n * m, 0);
        bool ok = true;
        for (int64_t wgl = 0; wgl < wg; ++wgl)
          for (int64_t warp = 0; warp < 4; ++warp)
            for (int64_t q = 0; q < l.x4Calls(); ++q) {
              // The addresses of the 32 stored rows: (tile row, first tile column).
              int64_t addrRow[32], addrCol[32];
              for (int64_t lane = 0; lane < 32; ++lane) {
                const int64_t reg = 8 * q + 2 * (lane / 8);  // emitted: 8 * q + 2 * (qla_lane / 8)
                FragThread t{lane, warp, wgl};
                addrRow[lane] = eval(origin[1], reg, t) + lane % 8;  // block origin column + stored row
                addrCol[lane] = eval(origin[0], reg, t);             // block origin row
                if (addrCol[lane] % 8 != 0) ok = false;
              }
              for (int64_t lane = 0; lane < 32; ++lane)
                for (int64_t blk = 0; blk < 4; ++blk)
                  for (int64_t h = 0; h < 2; ++h) {
                    const int64_t a = 2 * (lane % 4) + h, b = lane / 4;  // stored row a, column b of block blk
                    const int64_t tr = addrRow[8 * blk + a], tc = addrCol[8 * blk + a] + b;
                    const std::vector<int64_t> f = l.index(8 * q + 2 * blk + h, FragThread{lane, warp, wgl});
                    if (tr < 0 || tr >= n || tc < 0 || tc >= m) {
                      ok = false;
                      continue;
                    }
                    if (f[0] != tc || f[1] != tr) ok = false;  // tile [j, i] = fragment [i, j]
                    ++written[tr * m + tc];
                  }
            }
        REQUIRE(ok);
        int64_t bad = -1;
        for (int64_t e = 0; e < n * m && bad < 0; ++e)
          if (written[e] != 1) bad = e;
        INFO("tile element " << bad << " written " << (bad < 0 ? 0 : written[bad]) << " times");
        REQUIRE(bad < 0);
      }
    }
  }
  CHECK_FALSE(FragLayout(FragLayout::Acc, {64, 24}, 1).x4Blocks());
  CHECK_FALSE(FragLayout(FragLayout::Acc, {64, 8}, 1).x4Blocks());
}
