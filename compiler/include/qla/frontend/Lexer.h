// Tokens of the QLA language and the lexer. The parser is the only user that
// matters; the lexer is public so tests (and tools such as a highlighter) can
// call it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "qla/frontend/AST.h"

namespace qla::fe {

enum class Tok : uint8_t {
  Eof,
  Ident,
  Int,
  Float,
  String,  // "text": the file name of an `include`
  // keywords
  KwKernel, KwGrid, KwThreads, KwCluster, KwOccupancy, KwFollows, KwLet, KwShared, KwFrag, KwCopy, KwGemm, KwFor,
  KwIn, KwPipeline, KwStages, KwUnroll, KwParallel, KwRole, KwWarpgroup, KwWarpgroups,
  KwRegs, KwChannel, KwDepth, KwPut, KwGet, KwIf, KwElse, KwReduce, KwScan, KwCast,
  KwTrue, KwFalse, KwOut, KwDim, KwBlock, KwMax, KwMin, KwVar, KwUntil, KwFn, KwInclude, KwInvUnitLower,
  KwPrefetch,
  // punctuation
  LParen, RParen, LBracket, RBracket, LBrace, RBrace, Less, Greater, Comma, Colon, Semi,
  Dot, DotDot, ColonPlus, Arrow, CaretT, Assign, PlusAssign, MinusAssign, StarAssign,
  EqEq, NotEq, LessEq, GreaterEq, AndAnd, OrOr, Bang, Question, Plus, Minus, Star, Slash,
  Percent,
};

// Keywords are the contiguous range KwKernel .. kLastKeyword.
constexpr Tok kLastKeyword = Tok::KwPrefetch;
inline bool isKeyword(Tok t) { return t >= Tok::KwKernel && t <= kLastKeyword; }

// How a token kind is spelled in messages: "'kernel'", "'->'", "identifier", ...
std::string tokSpelling(Tok t);

struct Token {
  Tok kind = Tok::Eof;
  std::string text;  // the source text (empty for Eof; a String's text without its quotes)
  SourceLoc loc;
  int64_t intValue = 0;   // Int
  double floatValue = 0;  // Float
};

// Splits `source` into tokens ending with one Eof token. On a lexical error
// (bad character, unterminated comment, malformed or too large number) it
// appends one diagnostic and returns the tokens so far followed by Eof.
std::vector<Token> lexQla(const std::string &source, const std::string &filename,
                          std::vector<Diagnostic> &diags);

}  // namespace qla::fe
