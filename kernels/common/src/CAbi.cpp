#include "qla/op/CAbi.h"

#include <algorithm>
#include <cstring>

namespace qla::op {

void setError(char *err, size_t len, const std::string &msg) {
  if (!err || !len) return;
  size_t n = std::min(len - 1, msg.size());
  std::memcpy(err, msg.data(), n);
  err[n] = 0;
}

}  // namespace qla::op
