// KernelInfo: dtype helpers, the line-oriented text form, and the grid
// expression evaluator. No MLIR, no CUDA: usable from an AOT launcher.
#include "qla/runtime/KernelInfo.h"

#include <cctype>
#include <climits>
#include <cstdlib>
#include <sstream>

namespace qla {

//===----------------------------------------------------------------------===//
// Grid expressions
//===----------------------------------------------------------------------===//

namespace {

bool isIdentStart(char c) { return std::isalpha((unsigned char)c) || c == '_'; }
bool isIdentChar(char c) { return std::isalnum((unsigned char)c) || c == '_'; }

bool isIdentifier(const std::string &s) {
  if (s.empty() || !isIdentStart(s[0])) return false;
  for (char c : s)
    if (!isIdentChar(c)) return false;
  return true;
}

bool isIntLiteral(const std::string &s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit((unsigned char)c)) return false;
  return true;
}

// Recursive descent over the grammar
//   expr  := term (('+'|'-') term)*
//   term  := unary (('*'|'/'|'%') unary)*
//   unary := '-' unary | primary
//   primary := INT | IDENT | FN '(' expr ',' expr ')' | '(' expr ')'
// In check-only mode (used by deserialize, which has no dim values) it only
// validates syntax and symbol names, so that e.g. "N/M" is not a division by 0.
class ExprParser {
 public:
  ExprParser(const std::string &text, const std::vector<std::string> &symbols,
             const std::vector<int64_t> *values)
      : s_(text), symbols_(symbols), values_(values) {}

  bool run(int64_t &out, std::string &error) {
    out = 0;
    skipSpace();
    if (pos_ >= s_.size()) fail("empty expression");
    int64_t v = 0;
    if (ok_) v = parseExpr(0);
    skipSpace();
    if (ok_ && pos_ < s_.size()) fail(std::string("unexpected '") + s_[pos_] + "'");
    if (!ok_) {
      error = "grid expression '" + s_ + "': " + err_;
      return false;
    }
    out = v;
    return true;
  }

 private:
  // Nesting bound so that hostile input cannot overflow the stack.
  static constexpr int kMaxDepth = 200;

  void fail(const std::string &msg) {
    if (ok_) {
      ok_ = false;
      err_ = msg;
      if (pos_ < s_.size()) err_ += " at position " + std::to_string(pos_);
    }
  }
  void skipSpace() {
    while (pos_ < s_.size() && std::isspace((unsigned char)s_[pos_])) ++pos_;
  }
  bool accept(char c) {
    skipSpace();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!accept(c)) fail(std::string("expected '") + c + "'");
  }
  bool checkOnly() const { return values_ == nullptr; }

  int64_t arith(char op, int64_t a, int64_t b) {
    int64_t r = 0;
    bool overflow = false;
    switch (op) {
    case '+': overflow = __builtin_add_overflow(a, b, &r); break;
    case '-': overflow = __builtin_sub_overflow(a, b, &r); break;
    case '*': overflow = __builtin_mul_overflow(a, b, &r); break;
    case '/':
    case '%':
    case 'c':  // cdiv
      if (b == 0) {
        if (!checkOnly())
          fail(op == 'c' ? "division by zero in cdiv" : std::string("division by zero in '") + op + "'");
        return 0;
      }
      if (a == INT64_MIN && b == -1) {
        overflow = true;
        break;
      }
      if (op == '/') r = a / b;
      else if (op == '%') r = a % b;
      else {
        r = a / b;
        if (a % b != 0 && ((a < 0) == (b < 0))) ++r;  // round toward +inf
      }
      break;
    }
    if (overflow && !checkOnly()) fail("integer overflow");
    return r;
  }

  int64_t parseExpr(int depth) {
    if (depth > kMaxDepth) {
      fail("expression nested too deeply");
      return 0;
    }
    int64_t v = parseTerm(depth);
    while (ok_) {
      if (accept('+')) v = arith('+', v, parseTerm(depth));
      else if (accept('-')) v = arith('-', v, parseTerm(depth));
      else break;
    }
    return v;
  }
  int64_t parseTerm(int depth) {
    int64_t v = parseUnary(depth);
    while (ok_) {
      char op = 0;
      if (accept('*')) op = '*';
      else if (accept('/')) op = '/';
      else if (accept('%')) op = '%';
      else break;
      int64_t rhs = parseUnary(depth);
      if (!ok_) break;
      v = arith(op, v, rhs);
    }
    return v;
  }
  int64_t parseUnary(int depth) {
    if (depth > kMaxDepth) {
      fail("expression nested too deeply");
      return 0;
    }
    if (accept('-')) return arith('-', 0, parseUnary(depth + 1));
    return parsePrimary(depth);
  }
  int64_t parsePrimary(int depth) {
    skipSpace();
    if (!ok_) return 0;
    if (pos_ >= s_.size()) {
      fail("unexpected end, expected a number, a symbol or '('");
      return 0;
    }
    char c = s_[pos_];
    if (c == '(') {
      ++pos_;
      int64_t v = parseExpr(depth + 1);
      expect(')');
      return v;
    }
    if (std::isdigit((unsigned char)c)) {
      size_t start = pos_;
      int64_t v = 0;
      while (pos_ < s_.size() && std::isdigit((unsigned char)s_[pos_])) {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s_[pos_] - '0', &v)) {
          pos_ = start;
          fail("integer literal too large");
          return 0;
        }
        ++pos_;
      }
      if (pos_ < s_.size() && isIdentChar(s_[pos_])) {
        fail("malformed number");
        return 0;
      }
      return v;
    }
    if (isIdentStart(c)) {
      size_t start = pos_;
      while (pos_ < s_.size() && isIdentChar(s_[pos_])) ++pos_;
      std::string id = s_.substr(start, pos_ - start);
      skipSpace();
      if (pos_ < s_.size() && s_[pos_] == '(') {
        if (id != "cdiv" && id != "min" && id != "max") {
          pos_ = start;
          fail("unknown function '" + id + "' (expected cdiv, min or max)");
          return 0;
        }
        ++pos_;
        int64_t a = parseExpr(depth + 1);
        expect(',');
        int64_t b = ok_ ? parseExpr(depth + 1) : 0;
        expect(')');
        if (!ok_) return 0;
        if (id == "min") return a < b ? a : b;
        if (id == "max") return a > b ? a : b;
        return arith('c', a, b);
      }
      for (size_t i = 0; i < symbols_.size(); ++i)
        if (symbols_[i] == id) return checkOnly() ? 1 : (*values_)[i];
      pos_ = start;
      fail("unknown symbol '" + id + "'");
      return 0;
    }
    fail(std::string("unexpected '") + c + "', expected a number, a symbol or '('");
    return 0;
  }

  const std::string &s_;
  const std::vector<std::string> &symbols_;
  const std::vector<int64_t> *values_;
  size_t pos_ = 0;
  bool ok_ = true;
  std::string err_;
};

bool checkGridExpr(const std::string &expr, const std::vector<std::string> &symbols,
                   std::string &error) {
  int64_t dummy;
  return ExprParser(expr, symbols, nullptr).run(dummy, error);
}

}  // namespace

bool evalGridExpr(const std::string &expr, const std::vector<std::string> &symbols,
                  const std::vector<int64_t> &values, int64_t &out, std::string &error) {
  if (symbols.size() != values.size()) {
    error = "grid expression '" + expr + "': " + std::to_string(symbols.size()) +
            " symbols but " + std::to_string(values.size()) + " values";
    return false;
  }
  return ExprParser(expr, symbols, &values).run(out, error);
}

//===----------------------------------------------------------------------===//
// Text form
//===----------------------------------------------------------------------===//

namespace {

std::string joinList(const std::vector<std::string> &v) {
  if (v.empty()) return "-";  // rank 0: keeps the token count fixed
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + v[i];
  return s;
}

// Whitespace is insignificant in grid expressions; removing it keeps each one
// a single token on the `grid` line.
std::string stripSpaces(const std::string &s) {
  std::string r;
  for (char c : s)
    if (!std::isspace((unsigned char)c)) r += c;
  return r;
}

std::vector<std::string> splitWords(const std::string &line) {
  std::istringstream is(line);
  std::vector<std::string> w;
  std::string t;
  while (is >> t) w.push_back(t);
  return w;
}

std::vector<std::string> splitComma(const std::string &s) {
  std::vector<std::string> r;
  size_t start = 0;
  while (true) {
    size_t p = s.find(',', start);
    r.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) break;
    start = p + 1;
  }
  return r;
}

// Strict decimal integer in [lo, hi].
bool parseInt(const std::string &s, int64_t lo, int64_t hi, int64_t &out) {
  if (s.empty() || s.size() > 19) return false;
  size_t i = (s[0] == '-') ? 1 : 0;
  if (i == s.size()) return false;
  for (size_t k = i; k < s.size(); ++k)
    if (!std::isdigit((unsigned char)s[k])) return false;
  long long v = std::strtoll(s.c_str(), nullptr, 10);
  if (v < lo || v > hi) return false;
  out = v;
  return true;
}

const char *paramKindWord(ParamInfo::Kind k) {
  switch (k) {
  case ParamInfo::Kind::TensorMap: return "tmap";
  case ParamInfo::Kind::Pointer: return "ptr";
  case ParamInfo::Kind::Dim: return "dim";
  case ParamInfo::Kind::Stride: return "stride";
  case ParamInfo::Kind::Scalar: return "scalar";
  }
  return "?";
}

}  // namespace

std::string KernelInfo::serialize() const {
  std::ostringstream os;
  os << "name " << name << "\n";
  for (const auto &t : tensors)
    os << "tensor " << t.name << " " << dtypeName(t.dtype) << " " << (t.isOutput ? "out" : "in")
       << " " << joinList(t.dims) << "\n";
  for (const auto &s : scalars) os << "scalar " << s.name << " " << dtypeName(s.dtype) << "\n";
  for (const auto &d : dimSymbols) os << "dim " << d << "\n";
  for (const auto &p : params) {
    os << "param " << paramKindWord(p.kind) << " " << p.index;
    if (p.kind == ParamInfo::Kind::Stride) os << " " << p.dim;
    if (p.kind == ParamInfo::Kind::TensorMap) {
      os << " box=";
      for (size_t i = 0; i < p.box.size(); ++i) os << (i ? "," : "") << p.box[i];
      os << " swizzle=" << int(p.swizzle);
      if (p.optional) os << " optional";
    }
    os << "\n";
  }
  os << "grid " << stripSpaces(grid[0]) << " " << stripSpaces(grid[1]) << " "
     << stripSpaces(grid[2]) << "\n";
  os << "threads " << threads << "\n";
  os << "cluster " << cluster[0] << " " << cluster[1] << " " << cluster[2] << "\n";
  os << "smem " << dynamicSmemBytes << "\n";
  if (follows) os << "follows\n";
  return os.str();
}

bool KernelInfo::deserialize(const std::string &text, KernelInfo &out, std::string &error) {
  KernelInfo info;
  info.grid = {"", "", ""};
  std::vector<int> paramLines;
  std::vector<int> tensorLines;
  bool seenName = false, seenGrid = false, seenThreads = false, seenCluster = false,
       seenSmem = false;
  int lineNo = 0, gridLine = 0;
  std::string line;
  std::istringstream in(text);

  auto fail = [&](const std::string &msg, int at, const std::string &l) {
    error = (at > 0 ? "kernel info line " + std::to_string(at) : std::string("kernel info")) +
            ": " + msg;
    if (!l.empty()) error += " in '" + l + "'";
    return false;
  };
  auto once = [&](bool &seen, const std::string &key) {
    if (seen) return fail("duplicate '" + key + "'", lineNo, line);
    seen = true;
    return true;
  };

  while (std::getline(in, line)) {
    ++lineNo;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<std::string> w = splitWords(line);
    if (w.empty() || w[0][0] == '#') continue;  // blank lines and comments
    const std::string &key = w[0];
    auto nargs = [&](size_t n) {
      if (w.size() != n + 1)
        return fail("'" + key + "' takes " + std::to_string(n) + " field(s), got " +
                        std::to_string(w.size() - 1),
                    lineNo, line);
      return true;
    };

    if (key == "name") {
      if (!once(seenName, key) || !nargs(1)) return false;
      if (!isIdentifier(w[1])) return fail("kernel name must be an identifier", lineNo, line);
      info.name = w[1];
    } else if (key == "tensor") {
      if (!nargs(4)) return false;
      TensorArgInfo t;
      if (!isIdentifier(w[1])) return fail("tensor name must be an identifier", lineNo, line);
      t.name = w[1];
      if (!parseDType(w[2], t.dtype)) return fail("unknown dtype '" + w[2] + "'", lineNo, line);
      if (w[3] != "in" && w[3] != "out")
        return fail("expected 'in' or 'out', got '" + w[3] + "'", lineNo, line);
      t.isOutput = w[3] == "out";
      if (w[4] != "-") {
        for (const auto &d : splitComma(w[4])) {
          if (!isIdentifier(d) && !isIntLiteral(d))
            return fail("bad dim '" + d + "' (expected a symbol or an integer)", lineNo, line);
          t.dims.push_back(d);
        }
      }
      info.tensors.push_back(std::move(t));
      tensorLines.push_back(lineNo);
    } else if (key == "scalar") {
      if (!nargs(2)) return false;
      ScalarArgInfo s;
      if (!isIdentifier(w[1])) return fail("scalar name must be an identifier", lineNo, line);
      s.name = w[1];
      if (!parseDType(w[2], s.dtype)) return fail("unknown dtype '" + w[2] + "'", lineNo, line);
      info.scalars.push_back(std::move(s));
    } else if (key == "dim") {
      if (!nargs(1)) return false;
      if (!isIdentifier(w[1])) return fail("dim symbol must be an identifier", lineNo, line);
      for (const auto &d : info.dimSymbols)
        if (d == w[1]) return fail("duplicate dim symbol '" + w[1] + "'", lineNo, line);
      info.dimSymbols.push_back(w[1]);
    } else if (key == "param") {
      if (w.size() < 3) return fail("'param' needs a kind and an index", lineNo, line);
      ParamInfo p;
      int64_t v = 0;
      const std::string &kind = w[1];
      if (!parseInt(w[2], 0, INT_MAX, v)) return fail("bad index '" + w[2] + "'", lineNo, line);
      p.index = int(v);
      if (kind == "ptr" || kind == "dim" || kind == "scalar") {
        if (!nargs(2)) return false;
        p.kind = kind == "ptr" ? ParamInfo::Kind::Pointer
                 : kind == "dim" ? ParamInfo::Kind::Dim
                                 : ParamInfo::Kind::Scalar;
      } else if (kind == "stride") {
        if (!nargs(3)) return false;
        p.kind = ParamInfo::Kind::Stride;
        if (!parseInt(w[3], 0, INT_MAX, v)) return fail("bad dim '" + w[3] + "'", lineNo, line);
        p.dim = int(v);
      } else if (kind == "tmap") {
        p.kind = ParamInfo::Kind::TensorMap;
        bool seenBox = false, seenSwizzle = false;
        for (size_t i = 3; i < w.size(); ++i) {
          if (w[i].compare(0, 4, "box=") == 0 && !seenBox) {
            seenBox = true;
            for (const auto &b : splitComma(w[i].substr(4))) {
              if (!parseInt(b, 1, 256, v))
                return fail("box extent '" + b + "' is not in 1..256", lineNo, line);
              p.box.push_back(uint32_t(v));
            }
          } else if (w[i].compare(0, 8, "swizzle=") == 0 && !seenSwizzle) {
            seenSwizzle = true;
            if (!parseInt(w[i].substr(8), 0, 3, v))
              return fail("swizzle must be 0..3 (none, 32B, 64B, 128B)", lineNo, line);
            p.swizzle = Swizzle(v);
          } else if (w[i] == "optional" && !p.optional) {
            p.optional = true;
          } else {
            return fail("unexpected '" + w[i] + "' (expected box=... swizzle=N once each, optionally 'optional')",
                        lineNo, line);
          }
        }
        if (!seenBox) return fail("'param tmap' needs box=", lineNo, line);
      } else {
        return fail("unknown param kind '" + kind + "' (expected tmap, ptr, dim, stride, scalar)",
                    lineNo, line);
      }
      info.params.push_back(std::move(p));
      paramLines.push_back(lineNo);
    } else if (key == "grid") {
      if (!once(seenGrid, key) || !nargs(3)) return false;
      info.grid = {w[1], w[2], w[3]};
      gridLine = lineNo;
    } else if (key == "threads") {
      int64_t v;
      if (!once(seenThreads, key) || !nargs(1)) return false;
      if (!parseInt(w[1], 1, 1024, v)) return fail("threads must be 1..1024", lineNo, line);
      info.threads = int(v);
    } else if (key == "cluster") {
      if (!once(seenCluster, key) || !nargs(3)) return false;
      for (int i = 0; i < 3; ++i) {
        int64_t v;
        if (!parseInt(w[1 + i], 1, 65535, v))
          return fail("cluster dims must be positive integers", lineNo, line);
        info.cluster[i] = int(v);
      }
    } else if (key == "smem") {
      int64_t v;
      if (!once(seenSmem, key) || !nargs(1)) return false;
      if (!parseInt(w[1], 0, INT_MAX, v)) return fail("smem must be a byte count >= 0", lineNo, line);
      info.dynamicSmemBytes = int(v);
    } else if (key == "follows") {
      // Optional (written only when set).
      if (info.follows) return fail("duplicate 'follows' line", lineNo, line);
      if (!nargs(0)) return false;
      info.follows = true;
    } else {
      return fail("unknown key '" + key + "'", lineNo, line);
    }
  }

  // Cross-references, checked once everything is read (order of lines is free).
  // Every key is required: serialize() writes them all, so a missing one means
  // truncated or hand-damaged text.
  const std::pair<bool, const char *> required[] = {{seenName, "name"},   {seenGrid, "grid"},
                                                    {seenThreads, "threads"},
                                                    {seenCluster, "cluster"},
                                                    {seenSmem, "smem"}};
  for (const auto &r : required)
    if (!r.first) return fail(std::string("missing '") + r.second + "' line", 0, "");
  for (size_t i = 0; i < info.tensors.size(); ++i) {
    const auto &t = info.tensors[i];
    for (size_t j = 0; j < i; ++j)
      if (info.tensors[j].name == t.name)
        return fail("duplicate tensor '" + t.name + "'", tensorLines[i], "");
    for (const auto &d : t.dims) {
      if (isIntLiteral(d)) continue;
      bool known = false;
      for (const auto &s : info.dimSymbols) known |= s == d;
      if (!known)
        return fail("tensor '" + t.name + "' uses dim '" + d + "' with no 'dim " + d + "' line",
                    tensorLines[i], "");
    }
  }
  for (size_t i = 0; i < info.params.size(); ++i) {
    const ParamInfo &p = info.params[i];
    int at = paramLines[i];
    std::string what = std::string("param ") + paramKindWord(p.kind) + " " + std::to_string(p.index);
    switch (p.kind) {
    case ParamInfo::Kind::TensorMap:
    case ParamInfo::Kind::Pointer:
    case ParamInfo::Kind::Stride: {
      if (size_t(p.index) >= info.tensors.size())
        return fail(what + ": no tensor " + std::to_string(p.index) + " (have " +
                        std::to_string(info.tensors.size()) + ")", at, "");
      size_t rank = info.tensors[p.index].dims.size();
      if (p.kind == ParamInfo::Kind::Stride && size_t(p.dim) >= rank)
        return fail(what + ": dim " + std::to_string(p.dim) + " out of range for rank " +
                        std::to_string(rank) + " tensor '" + info.tensors[p.index].name + "'", at, "");
      if (p.kind == ParamInfo::Kind::TensorMap && p.box.size() != rank)
        return fail(what + ": box has " + std::to_string(p.box.size()) + " extents but tensor '" +
                        info.tensors[p.index].name + "' has rank " + std::to_string(rank), at, "");
      break;
    }
    case ParamInfo::Kind::Dim:
      if (size_t(p.index) >= info.dimSymbols.size())
        return fail(what + ": no dim symbol " + std::to_string(p.index), at, "");
      break;
    case ParamInfo::Kind::Scalar:
      if (size_t(p.index) >= info.scalars.size())
        return fail(what + ": no scalar " + std::to_string(p.index), at, "");
      break;
    }
  }
  for (int i = 0; i < 3; ++i) {
    std::string e;
    if (!checkGridExpr(info.grid[i], info.dimSymbols, e)) return fail(e, gridLine, "");
  }
  out = std::move(info);
  return true;
}

}  // namespace qla
