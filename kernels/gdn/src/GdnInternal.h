// What the GDN forward (Gdn.cpp) and backward (GdnBackward.cpp) operators
// share beyond the generic operator layer (qla::op): the operator's error
// prefix, the input contract, the forward's workspace regions, the kernel
// registry of kernels/gdn and the kernels' signatures. Internal; not installed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "Schedule.h"
#include "qla/gdn.h"
#include "qla/jit.h"
#include "qla/op/Error.h"
#include "qla/op/KernelRegistry.h"
#include "qla/op/Launch.h"
#include "qla/op/Tensor.h"
#include "qla/op/Workspace.h"

namespace qla::gdn::detail {

constexpr const char *kOp = "chunk_gated_delta_rule: ";
constexpr const char *kContractDoc = "kernels/gdn/KERNELS.md";  // the kernels' argument lists

// Throws Error(kOp + msg).
[[noreturn]] void fail(const std::string &msg);

// The public entry points run under this: the shared layer's op::Error
// becomes Error with the operator's prefix.
template <class F>
decltype(auto) guarded(F &&f) {
  return op::rethrowAs<Error>(kOp, std::forward<F>(f));
}

using op::view;  // qla/op/Tensor.h
rt::TensorArg arg(const TensorRef &t);  // op::launchArg(view(t))
bool isHalf(DType d);

// The forward's tensors, in argument order (the optional ones when given);
// `o` is named oName.
std::vector<op::NamedTensor> namedTensors(const ForwardParams &p, const char *oName);

// The contract of the forward's arguments, every check but the outputs'
// disjointness from the inputs (the caller checks that over its own list);
// `o` is named oName in the messages (the backward passes dv there).
void validate(const ForwardParams &p, const char *oName);

// The training-mode checkpoints (the forward's segment start states) as
// both operators take them: f32, shape `want` (the message names it as
// wantText), contiguous, TMA-aligned.
void checkCheckpoints(const TensorRef &c, const std::vector<int64_t> &want, const std::string &wantText);

// The head sizes the kernels take (K and V in {64, 128, 256}): ""
// where (K, V) is one, else the reason (`K = 96 is not supported (...)`).
std::string headDimsError(int64_t K, int64_t V);

// Serving's slot indices, from their host copies (issue 29): one use of a
// pool slot by sequence `seq`, named as the message shows it
// ("final_slots[2]"); a negative slot is none.
struct SlotUse {
  std::string what;
  int64_t seq = 0;
  int32_t slot = -1;
  bool write = false;
};
// "" if every slot is below `slots`, no slot is written by two sequences and
// none that one sequence reads is written by another; else the first
// problem, naming the uses.
std::string slotsError(int64_t slots, const std::vector<SlotUse> &uses);

// A configuration's dtypes and sizes are ones the operator supports (warmup).
void checkConfig(const ForwardConfig &c);

// Byte offsets of the forward's workspace regions.
struct WorkspaceLayout {
  size_t w = 0, u = 0, gc = 0, dummy = 0, total = 0;  // byte offsets; total size
  size_t hs = 0, ls = 0, ph = 0, pl = 0;               // segment states (schedule.split only)
  size_t ts = 0, rk = 0;                               // the fused path's pass 1 inputs (split; rk: l2norm)
  int64_t gcSlots = 0;                                 // GC's last dim: chunk slots × kChunk
  Schedule schedule;
};
// The sizes the cost model plans from, and with cu_seqlens' host copy the
// sequences' lengths (p validated; the backward passes forwardPart of its own).
ForwardShape shapeOf(const ForwardParams &p);

// W, U, GC (then HS, LS, PH, PL with a split, and TS, RK on the fused path)
// added to `ws`; dummy and total unset. fusedMode: as forwardSchedule's (-1:
// the two-kernel path, as the backward's recompute runs it). With `withoutWU`
// W and U are left for the caller to place (the backward lets them share
// bytes with the gradients' partials, which are born after their last reader).
WorkspaceLayout addForwardRegions(op::WorkspacePlanner &ws, DType dtype, const ForwardShape &s, int64_t segmentChunks,
                                  int fusedMode = -1, bool l2norm = false, bool withoutWU = false);

// The kernels of kernels/gdn, compiled once per specialization and process.
op::KernelRegistry &registry();
op::KernelSpec opSpec(const KernelSpec &s);
KernelSpec publicSpec(const op::KernelSlot &s);
const JitKernel &compiled(op::KernelSlot &s);

// Kernel tensor names -> the names the caller knows.
const op::ArgNames &userNames();

// FLA's options run around the operators (GdnOptions.cpp): the in-kernel
// gate and V-first states. Their arguments' checks (part of validate);
// whether a call has any; the scratch they put in front of the operator's;
// the call the operator then runs (on the gate's output, K-first states in
// the scratch); the launches, which run the plain ones (launchForwardImpl,
// launchBackwardImpl) on the rest of the workspace.
void validateOptions(const ForwardParams &p);
bool hasOptions(const ForwardParams &p);
bool hasOptions(const BackwardParams &p);
size_t optionsWorkspaceBytes(const ForwardParams &p);
size_t optionsWorkspaceBytes(const BackwardParams &p);
ForwardParams optionsPart(const ForwardParams &p, void *workspace);
BackwardParams optionsPart(const BackwardParams &p, void *workspace);
void launchWithOptions(const ForwardParams &p, void *workspace, size_t workspaceBytes);
void launchWithOptions(const BackwardParams &p, void *workspace, size_t workspaceBytes);
void launchForwardImpl(const ForwardParams &p, void *workspace, size_t workspaceBytes);
void launchBackwardImpl(const BackwardParams &p, void *workspace, size_t workspaceBytes);

// A plan's line in the log (QLA_LOG=info: the first time each line is
// written in the process, a process-wide set of them; debug: every call).
void logPlan(const std::string &line);

// The path of the backward's recompute for head sizes K, V, as
// forwardSchedule's fusedMode: 1 where the fused gradient kernel takes the
// call (the recompute is gdn_fwd_fused.qla with BWD = 1), else -1 (prepare
// and the state kernel).
int recomputeFusedMode(int64_t K, int64_t V);

}  // namespace qla::gdn::detail
