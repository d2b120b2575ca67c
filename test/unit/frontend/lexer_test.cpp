// Lexer: token kinds, values, locations, and lexical errors.
#include <catch2/catch.hpp>

#include "qla/frontend/Lexer.h"

using namespace qla::fe;

namespace {

std::vector<Token> lex(const std::string &src) {
  std::vector<Diagnostic> diags;
  auto toks = lexQla(src, "t.qla", diags);
  INFO(src);
  REQUIRE(diags.empty());
  return toks;
}

std::vector<Tok> kinds(const std::string &src) {
  std::vector<Tok> k;
  for (const auto &t : lex(src)) k.push_back(t.kind);
  return k;
}

std::string lexError(const std::string &src) {
  std::vector<Diagnostic> diags;
  auto toks = lexQla(src, "t.qla", diags);
  REQUIRE(diags.size() == 1);
  REQUIRE(toks.back().kind == Tok::Eof);
  return diags[0].str();
}

}  // namespace

TEST_CASE("lexer: keywords and identifiers", "[lexer]") {
  auto toks = lex("kernel grid threads cluster let shared frag copy gemm for in pipeline stages unroll "
                  "parallel role warpgroup warpgroups regs channel depth put get if else reduce scan "
                  "cast true false out dim block max min bf16 _x9 Kernel");
  std::vector<Tok> want = {
      Tok::KwKernel, Tok::KwGrid, Tok::KwThreads, Tok::KwCluster, Tok::KwLet, Tok::KwShared,
      Tok::KwFrag, Tok::KwCopy, Tok::KwGemm, Tok::KwFor, Tok::KwIn, Tok::KwPipeline,
      Tok::KwStages, Tok::KwUnroll, Tok::KwParallel, Tok::KwRole, Tok::KwWarpgroup,
      Tok::KwWarpgroups, Tok::KwRegs, Tok::KwChannel, Tok::KwDepth, Tok::KwPut, Tok::KwGet,
      Tok::KwIf, Tok::KwElse, Tok::KwReduce, Tok::KwScan, Tok::KwCast, Tok::KwTrue,
      Tok::KwFalse, Tok::KwOut, Tok::KwDim, Tok::KwBlock, Tok::KwMax, Tok::KwMin,
      Tok::Ident, Tok::Ident, Tok::Ident, Tok::Eof};
  REQUIRE(toks.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) CHECK(toks[i].kind == want[i]);
  CHECK(toks[35].text == "bf16");
  CHECK(toks[36].text == "_x9");
  CHECK(toks[37].text == "Kernel");  // keywords are case-sensitive
}

TEST_CASE("lexer: punctuation", "[lexer]") {
  CHECK(kinds("( ) [ ] { } < > , : ; . .. :+ -> ^T = += -= *= == != <= >= && || ! ? + - * / %") ==
        std::vector<Tok>{Tok::LParen, Tok::RParen, Tok::LBracket, Tok::RBracket, Tok::LBrace, Tok::RBrace,
                         Tok::Less, Tok::Greater, Tok::Comma, Tok::Colon, Tok::Semi, Tok::Dot, Tok::DotDot,
                         Tok::ColonPlus, Tok::Arrow, Tok::CaretT, Tok::Assign, Tok::PlusAssign,
                         Tok::MinusAssign, Tok::StarAssign, Tok::EqEq, Tok::NotEq, Tok::LessEq,
                         Tok::GreaterEq, Tok::AndAnd, Tok::OrOr, Tok::Bang, Tok::Question, Tok::Plus,
                         Tok::Minus, Tok::Star, Tok::Slash, Tok::Percent, Tok::Eof});
  // Without spaces the longest token wins.
  CHECK(kinds("a->b") == std::vector<Tok>{Tok::Ident, Tok::Arrow, Tok::Ident, Tok::Eof});
  CHECK(kinds("b^T") == std::vector<Tok>{Tok::Ident, Tok::CaretT, Tok::Eof});
  CHECK(kinds("m0:+BM") == std::vector<Tok>{Tok::Ident, Tok::ColonPlus, Tok::Ident, Tok::Eof});
  CHECK(kinds("x<=-1") == std::vector<Tok>{Tok::Ident, Tok::LessEq, Tok::Minus, Tok::Int, Tok::Eof});
  CHECK(kinds("block.x") == std::vector<Tok>{Tok::KwBlock, Tok::Dot, Tok::Ident, Tok::Eof});
}

TEST_CASE("lexer: numbers", "[lexer]") {
  auto t = lex("0 42 1.0 .5 1e-6 2.5e3 7E+2 9223372036854775807");
  REQUIRE(t.size() == 9);
  CHECK(t[0].kind == Tok::Int);
  CHECK(t[0].intValue == 0);
  CHECK(t[1].intValue == 42);
  CHECK(t[2].kind == Tok::Float);
  CHECK(t[2].floatValue == 1.0);
  CHECK(t[3].kind == Tok::Float);
  CHECK(t[3].floatValue == 0.5);
  CHECK(t[4].kind == Tok::Float);
  CHECK(t[4].floatValue == Approx(1e-6));
  CHECK(t[5].floatValue == 2500.0);
  CHECK(t[6].kind == Tok::Float);
  CHECK(t[6].floatValue == 700.0);
  CHECK(t[7].kind == Tok::Int);
  CHECK(t[7].intValue == INT64_MAX);
  // A range: "0..n" is 0 '..' n, not the float "0." followed by ".n".
  CHECK(kinds("0..n") == std::vector<Tok>{Tok::Int, Tok::DotDot, Tok::Ident, Tok::Eof});
  CHECK(kinds("1..2") == std::vector<Tok>{Tok::Int, Tok::DotDot, Tok::Int, Tok::Eof});
  CHECK(kinds("0 .. .5") == std::vector<Tok>{Tok::Int, Tok::DotDot, Tok::Float, Tok::Eof});
}

TEST_CASE("lexer: comments and locations", "[lexer]") {
  auto t = lex("// line comment\n  let /* block\n comment */ x = 1 // tail\n\tfoo");
  REQUIRE(t.size() == 6);
  CHECK(t[0].kind == Tok::KwLet);
  CHECK(t[0].loc.line == 2);
  CHECK(t[0].loc.col == 3);
  CHECK(t[0].loc.file == "t.qla");
  CHECK(t[1].text == "x");
  CHECK(t[1].loc.line == 3);
  CHECK(t[1].loc.col == 13);
  CHECK(t[2].kind == Tok::Assign);
  CHECK(t[3].intValue == 1);
  CHECK(t[4].text == "foo");
  CHECK(t[4].loc.line == 4);
  CHECK(t[4].loc.col == 2);  // a tab is one column
  CHECK(t[5].kind == Tok::Eof);
  CHECK(t[5].loc.line == 4);
  CHECK(t[5].loc.col == 5);
}

TEST_CASE("lexer: errors", "[lexer]") {
  CHECK(lexError("let x = 1 $ 2") == "t.qla:1:11: error: invalid character '$'");
  CHECK(lexError("a\n  /* open") == "t.qla:2:3: error: unterminated block comment");
  CHECK(lexError("x = 1e+") == "t.qla:1:5: error: malformed float literal: expected digits after the exponent");
  CHECK(lexError("x = 12ab") == "t.qla:1:5: error: malformed number '12a'");
  CHECK(lexError("99999999999999999999") == "t.qla:1:1: error: integer literal '99999999999999999999' is too large");
  CHECK(lexError("a ^ b") == "t.qla:1:3: error: '^' must be followed by 'T' (transpose)");
  CHECK(lexError("a ^Tx") == "t.qla:1:3: error: '^' must be followed by 'T' (transpose)");
  CHECK(lexError("a & b") == "t.qla:1:3: error: invalid character '&'");
  CHECK(lexError("a\x01") == "t.qla:1:2: error: invalid character 0x01");
}

TEST_CASE("lexer: token spellings", "[lexer]") {
  CHECK(tokSpelling(Tok::KwKernel) == "'kernel'");
  CHECK(tokSpelling(Tok::Arrow) == "'->'");
  CHECK(tokSpelling(Tok::Ident) == "identifier");
  CHECK(tokSpelling(Tok::Eof) == "end of file");
}
