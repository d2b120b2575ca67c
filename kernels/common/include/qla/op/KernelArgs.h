// What the headers qlac --emit=args generates for a kernel need: the
// argument struct's types (rt::TensorArg, rt::LaunchArgs), the signature
// (op::Signature) with the dtype of a dtype constant under a
// specialization's defines (dtypeOf), and the check that a specialization
// names only the kernel's constants (checkDefines).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "qla/DType.h"
#include "qla/op/Launch.h"
#include "qla/runtime/Driver.h"

namespace qla::op {

// The dtype constant `name`'s value in `defines` ("bf16", ...), else `dflt`;
// throws op::Error on a value that names no dtype.
DType dtypeOf(const std::map<std::string, std::string> &defines, const std::string &name, DType dflt);

// Every define of `spec` names one of the kernel's specialization
// constants; otherwise an internal error naming the spec and the constant.
void checkDefines(const KernelSpec &spec, const std::vector<std::string> &constants);

}  // namespace qla::op
