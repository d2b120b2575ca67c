#include "qla/op/KernelArgs.h"

#include <algorithm>

#include "qla/op/Error.h"

namespace qla::op {

DType dtypeOf(const std::map<std::string, std::string> &defines, const std::string &name, DType dflt) {
  auto it = defines.find(name);
  if (it == defines.end()) return dflt;
  DType t = dflt;
  if (!parseDType(it->second, t))
    fail("internal error: the dtype constant " + name + " = '" + it->second + "' names no dtype");
  return t;
}

void checkDefines(const KernelSpec &spec, const std::vector<std::string> &constants) {
  for (const auto &[name, value] : spec.defines)
    if (std::find(constants.begin(), constants.end(), name) == constants.end())
      fail("internal error: " + spec.str() + ": " + spec.file + " has no specialization constant " + name);
}

}  // namespace qla::op
