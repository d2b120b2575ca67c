// Entry points of the QLA front end: source text -> checked AST.
//
//   fe::ParseResult r = fe::parseQla(text, "gemm.qla");
//   if (!r.module) { print r.diags; fail; }
//   std::vector<fe::Diagnostic> diags;
//   if (!fe::checkQla(*r.module, {{"BM", "64"}}, diags)) { print diags; fail; }
//   // walk r.module->kernels (see AST.h)
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "qla/frontend/AST.h"

namespace qla::fe {

struct ParseResult {
  std::unique_ptr<Module> module;  // null when diags is not empty
  std::vector<Diagnostic> diags;   // syntax errors (the parser stops at the first)
};

// Resolves `include "NAME"` met in file `from`: fills `path` (the file's
// name in diagnostics; a file is read once per compile, by path) and `text`
// and returns "", or returns why it cannot (shown after `cannot include "NAME": `).
using IncludeResolver = std::function<std::string(const std::string &name, const std::string &from,
                                                  std::string &path, std::string &text)>;

// Lexes and parses a whole file. Never throws on bad input. Without a
// resolver an `include` is an error.
ParseResult parseQla(const std::string &source, const std::string &filename);
ParseResult parseQla(const std::string &source, const std::string &filename, const IncludeResolver &includes);

// Semantic checks, name resolution and constant folding, in place. `defines`
// are the -D overrides of specialization constants: NAME (applies to every
// kernel of the module that declares NAME) or KERNEL.NAME; each VALUE must
// parse as the type of the constant's default (int, float or bool; one of
// bf16 f16 f32 i32 i64 for a dtype constant). Appends
// errors to `diags` and returns true when there were none. Run it once per
// parsed module (to compile with other defines, parse again).
bool checkQla(Module &module, const std::map<std::string, std::string> &defines,
              std::vector<Diagnostic> &diags);

// parseQla + checkQla; null (with diags) on any error.
std::unique_ptr<Module> parseAndCheckQla(const std::string &source, const std::string &filename,
                                         const std::map<std::string, std::string> &defines,
                                         std::vector<Diagnostic> &diags,
                                         const IncludeResolver &includes = IncludeResolver());

// One diagnostic per line.
std::string formatDiagnostics(const std::vector<Diagnostic> &diags);

}  // namespace qla::fe
