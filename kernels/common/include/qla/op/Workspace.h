// The device scratch of an operator (the caller allocates it; the operator
// never allocates device memory): regions laid out one after another, each
// starting aligned, then one small dummy region that stands in for absent
// optional tensors and for tensors a launch never touches. Throws op::Error.
#pragma once

#include <cstddef>
#include <vector>

#include "qla/op/Tensor.h"

namespace qla::op {

constexpr size_t kWorkspaceAlign = 256;      // every region starts this aligned
constexpr size_t kWorkspaceDummyBytes = 256; // the dummy region's size

// Offsets of the regions, in the order they are added:
//   WorkspacePlanner ws;  size_t a = ws.add(bytesA), b = ws.add(bytesB);
//   size_t dummy = ws.addDummy();  size_t total = ws.total();
class WorkspacePlanner {
 public:
  explicit WorkspacePlanner(size_t align = kWorkspaceAlign);
  // A region of `bytes` bytes (0 allowed: it gets no bytes); returns its offset.
  size_t add(size_t bytes);
  // The dummy region (kWorkspaceDummyBytes), after every other region.
  size_t addDummy();
  size_t total() const { return end_ > high_ ? end_ : high_; }
  // Regions whose lives do not overlap share bytes: after `m = mark()`, add
  // the regions of one group, `rewind(m)`, then add the other's from the
  // same offset; total() keeps the furthest end either reached.
  size_t mark() const { return end_; }
  void rewind(size_t offset);

 private:
  size_t align_, end_ = 0, high_ = 0;
};

// The caller's workspace: non-null, `align`-byte aligned, at least `need`
// bytes, and [workspace, workspace + need) overlaps none of `args`.
void checkWorkspace(void *workspace, size_t workspaceBytes, size_t need, const std::vector<NamedTensor> &args,
                    size_t align = kWorkspaceAlign);

}  // namespace qla::op
