// The QLA lexer: a single pass over the source producing tokens with 1-based
// line/column locations. It stops at the first lexical error (the parser stops
// at the first syntax error too, so later tokens would never be used).
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "qla/frontend/Lexer.h"

namespace qla::fe {

namespace {

const std::unordered_map<std::string, Tok> &keywords() {
  static const std::unordered_map<std::string, Tok> kw = {
      {"kernel", Tok::KwKernel},     {"grid", Tok::KwGrid},
      {"threads", Tok::KwThreads},   {"cluster", Tok::KwCluster},   {"occupancy", Tok::KwOccupancy},
      {"follows", Tok::KwFollows},
      {"let", Tok::KwLet},           {"shared", Tok::KwShared},
      {"frag", Tok::KwFrag},         {"copy", Tok::KwCopy},
      {"gemm", Tok::KwGemm},         {"for", Tok::KwFor},
      {"in", Tok::KwIn},             {"pipeline", Tok::KwPipeline},
      {"stages", Tok::KwStages},     {"unroll", Tok::KwUnroll},
      {"parallel", Tok::KwParallel}, {"role", Tok::KwRole},
      {"warpgroup", Tok::KwWarpgroup}, {"warpgroups", Tok::KwWarpgroups},
      {"regs", Tok::KwRegs},         {"channel", Tok::KwChannel},
      {"depth", Tok::KwDepth},       {"put", Tok::KwPut},
      {"get", Tok::KwGet},           {"if", Tok::KwIf},
      {"else", Tok::KwElse},         {"reduce", Tok::KwReduce},
      {"scan", Tok::KwScan},         {"cast", Tok::KwCast},
      {"true", Tok::KwTrue},         {"false", Tok::KwFalse},
      {"out", Tok::KwOut},           {"dim", Tok::KwDim},
      {"block", Tok::KwBlock},       {"max", Tok::KwMax},
      {"min", Tok::KwMin},           {"var", Tok::KwVar},
      {"until", Tok::KwUntil},       {"inv_unit_lower", Tok::KwInvUnitLower},
      {"fn", Tok::KwFn},             {"include", Tok::KwInclude},
      {"prefetch", Tok::KwPrefetch},
  };
  return kw;
}

bool isIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isIdentChar(char c) { return isIdentStart(c) || isDigit(c); }

class Lexer {
 public:
  Lexer(const std::string &src, const std::string &file, std::vector<Diagnostic> &diags)
      : src_(src), file_(file), diags_(diags) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    while (true) {
      if (!skipSpaceAndComments()) break;
      if (pos_ >= src_.size()) break;
      Token t;
      if (!next(t)) break;
      out.push_back(std::move(t));
    }
    Token eof;
    eof.kind = Tok::Eof;
    eof.loc = here();
    out.push_back(eof);
    return out;
  }

 private:
  SourceLoc here() const { return SourceLoc{file_, line_, col_}; }
  char peek(size_t k = 0) const { return pos_ + k < src_.size() ? src_[pos_ + k] : '\0'; }
  void advance() {
    if (src_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }
  bool error(const SourceLoc &loc, const std::string &msg) {
    diags_.push_back(Diagnostic{loc, msg});
    return false;
  }

  // Returns false after an unterminated block comment.
  bool skipSpaceAndComments() {
    while (pos_ < src_.size()) {
      char c = peek();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
        advance();
      } else if (c == '/' && peek(1) == '/') {
        while (pos_ < src_.size() && peek() != '\n') advance();
      } else if (c == '/' && peek(1) == '*') {
        SourceLoc start = here();
        advance();
        advance();
        while (pos_ < src_.size() && !(peek() == '*' && peek(1) == '/')) advance();
        if (pos_ >= src_.size()) return error(start, "unterminated block comment");
        advance();
        advance();
      } else {
        break;
      }
    }
    return true;
  }

  bool next(Token &t) {
    t.loc = here();
    size_t start = pos_;
    char c = peek();
    if (isIdentStart(c)) {
      while (isIdentChar(peek())) advance();
      t.text = src_.substr(start, pos_ - start);
      auto it = keywords().find(t.text);
      t.kind = it == keywords().end() ? Tok::Ident : it->second;
      return true;
    }
    // A '.' starts a number only when a digit follows (".5"); "0..n" must lex
    // as 0, '..', n, so "1." is not a float either.
    if (isDigit(c) || (c == '.' && isDigit(peek(1)))) return number(t);
    if (c == '"') return string(t);
    return punct(t);
  }

  // "text" on one line, no escapes (the file names of `include`).
  bool string(Token &t) {
    advance();
    size_t start = pos_;
    while (pos_ < src_.size() && peek() != '"' && peek() != '\n') advance();
    if (peek() != '"') return error(t.loc, "unterminated string (a string ends with '\"' on its line)");
    t.kind = Tok::String;
    t.text = src_.substr(start, pos_ - start);
    advance();
    return true;
  }

  bool number(Token &t) {
    size_t start = pos_;
    bool isFloat = false;
    while (isDigit(peek())) advance();
    if (peek() == '.' && isDigit(peek(1))) {
      isFloat = true;
      advance();
      while (isDigit(peek())) advance();
    }
    if (peek() == 'e' || peek() == 'E') {
      size_t k = 1;
      if (peek(1) == '+' || peek(1) == '-') k = 2;
      if (!isDigit(peek(k))) return error(t.loc, "malformed float literal: expected digits after the exponent");
      isFloat = true;
      for (size_t i = 0; i < k; ++i) advance();
      while (isDigit(peek())) advance();
    }
    t.text = src_.substr(start, pos_ - start);
    if (isIdentChar(peek())) return error(t.loc, "malformed number '" + t.text + peek() + "'");
    if (isFloat) {
      t.kind = Tok::Float;
      errno = 0;
      t.floatValue = std::strtod(t.text.c_str(), nullptr);
      if (errno == ERANGE && std::isinf(t.floatValue))
        return error(t.loc, "float literal '" + t.text + "' is out of range");
      return true;
    }
    t.kind = Tok::Int;
    int64_t v = 0;
    for (char d : t.text) {
      if (__builtin_mul_overflow(v, int64_t(10), &v) || __builtin_add_overflow(v, int64_t(d - '0'), &v))
        return error(t.loc, "integer literal '" + t.text + "' is too large");
    }
    t.intValue = v;
    return true;
  }

  bool punct(Token &t) {
    char c = peek(), d = peek(1);
    auto two = [&](Tok k) {
      t.kind = k;
      t.text = src_.substr(pos_, 2);
      advance();
      advance();
      return true;
    };
    auto one = [&](Tok k) {
      t.kind = k;
      t.text = std::string(1, c);
      advance();
      return true;
    };
    switch (c) {
    case '(': return one(Tok::LParen);
    case ')': return one(Tok::RParen);
    case '[': return one(Tok::LBracket);
    case ']': return one(Tok::RBracket);
    case '{': return one(Tok::LBrace);
    case '}': return one(Tok::RBrace);
    case ',': return one(Tok::Comma);
    case ';': return one(Tok::Semi);
    case '?': return one(Tok::Question);
    case '%': return one(Tok::Percent);
    case '/': return one(Tok::Slash);  // comments were skipped before
    case '.': return d == '.' ? two(Tok::DotDot) : one(Tok::Dot);
    case ':': return d == '+' ? two(Tok::ColonPlus) : one(Tok::Colon);
    case '<': return d == '=' ? two(Tok::LessEq) : one(Tok::Less);
    case '>': return d == '=' ? two(Tok::GreaterEq) : one(Tok::Greater);
    case '=': return d == '=' ? two(Tok::EqEq) : one(Tok::Assign);
    case '!': return d == '=' ? two(Tok::NotEq) : one(Tok::Bang);
    case '+': return d == '=' ? two(Tok::PlusAssign) : one(Tok::Plus);
    case '*': return d == '=' ? two(Tok::StarAssign) : one(Tok::Star);
    case '-':
      if (d == '>') return two(Tok::Arrow);
      return d == '=' ? two(Tok::MinusAssign) : one(Tok::Minus);
    case '&':
      if (d == '&') return two(Tok::AndAnd);
      break;
    case '|':
      if (d == '|') return two(Tok::OrOr);
      break;
    case '^':
      // Only `^T` (transpose) exists; "^Tx" would be '^' followed by a name.
      if (d == 'T' && !isIdentChar(peek(2))) return two(Tok::CaretT);
      return error(t.loc, "'^' must be followed by 'T' (transpose)");
    default: break;
    }
    unsigned char uc = (unsigned char)c;
    if (uc < 32 || uc >= 127) {
      char buf[8];
      snprintf(buf, sizeof buf, "0x%02x", uc);
      return error(t.loc, std::string("invalid character ") + buf);
    }
    return error(t.loc, std::string("invalid character '") + c + "'");
  }

  const std::string &src_;
  const std::string &file_;
  std::vector<Diagnostic> &diags_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
};

}  // namespace

std::string tokSpelling(Tok t) {
  switch (t) {
  case Tok::Eof: return "end of file";
  case Tok::Ident: return "identifier";
  case Tok::Int: return "integer";
  case Tok::Float: return "float";
  case Tok::String: return "string";
  case Tok::LParen: return "'('";
  case Tok::RParen: return "')'";
  case Tok::LBracket: return "'['";
  case Tok::RBracket: return "']'";
  case Tok::LBrace: return "'{'";
  case Tok::RBrace: return "'}'";
  case Tok::Less: return "'<'";
  case Tok::Greater: return "'>'";
  case Tok::Comma: return "','";
  case Tok::Colon: return "':'";
  case Tok::Semi: return "';'";
  case Tok::Dot: return "'.'";
  case Tok::DotDot: return "'..'";
  case Tok::ColonPlus: return "':+'";
  case Tok::Arrow: return "'->'";
  case Tok::CaretT: return "'^T'";
  case Tok::Assign: return "'='";
  case Tok::PlusAssign: return "'+='";
  case Tok::MinusAssign: return "'-='";
  case Tok::StarAssign: return "'*='";
  case Tok::EqEq: return "'=='";
  case Tok::NotEq: return "'!='";
  case Tok::LessEq: return "'<='";
  case Tok::GreaterEq: return "'>='";
  case Tok::AndAnd: return "'&&'";
  case Tok::OrOr: return "'||'";
  case Tok::Bang: return "'!'";
  case Tok::Question: return "'?'";
  case Tok::Plus: return "'+'";
  case Tok::Minus: return "'-'";
  case Tok::Star: return "'*'";
  case Tok::Slash: return "'/'";
  case Tok::Percent: return "'%'";
  default: break;
  }
  for (const auto &kv : keywords())
    if (kv.second == t) return "'" + kv.first + "'";
  return "?";
}

std::vector<Token> lexQla(const std::string &source, const std::string &filename,
                          std::vector<Diagnostic> &diags) {
  return Lexer(source, filename, diags).run();
}

}  // namespace qla::fe
