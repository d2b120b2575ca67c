#include "qla/op/Workspace.h"

#include <string>

#include "qla/op/Error.h"

namespace qla::op {

WorkspacePlanner::WorkspacePlanner(size_t align) : align_(align) {}

size_t WorkspacePlanner::add(size_t bytes) {
  const size_t offset = end_;
  end_ = (end_ + bytes + align_ - 1) / align_ * align_;
  return offset;
}

void WorkspacePlanner::rewind(size_t offset) {
  if (offset > end_) fail("WorkspacePlanner::rewind past the end (" + std::to_string(offset) + " > " +
                          std::to_string(end_) + ")");
  if (end_ > high_) high_ = end_;
  end_ = offset;
}

size_t WorkspacePlanner::addDummy() {
  end_ = total();
  const size_t offset = end_;
  end_ += kWorkspaceDummyBytes;
  return offset;
}

void checkWorkspace(void *workspace, size_t workspaceBytes, size_t need, const std::vector<NamedTensor> &args,
                    size_t align) {
  if (!workspace) fail("workspace is a null pointer (it needs " + std::to_string(need) + " bytes)");
  if (reinterpret_cast<uintptr_t>(workspace) % align != 0)
    fail("workspace " + ptrText(workspace) + " is not " + std::to_string(align) + "-byte aligned");
  if (workspaceBytes < need)
    fail("workspace has " + std::to_string(workspaceBytes) + " bytes, needs " + std::to_string(need));
  uintptr_t wlo = reinterpret_cast<uintptr_t>(workspace), whi = wlo + need;
  for (const NamedTensor &n : args) {
    auto [lo, hi] = byteSpan(n.t);
    if (lo < whi && wlo < hi) fail("workspace overlaps " + std::string(n.name) + " in memory");
  }
}

}  // namespace qla::op
