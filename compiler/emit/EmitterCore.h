// The CUDA emitter's state, shared by EmitterCore.cpp (kernel frame, scalars,
// control flow, barriers, TMA) and EmitFragments.cpp (fragments and wgmma).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "dialects/qlanv/IR/QlanvDialect.h"
#include "llvm/ADT/DenseMap.h"
#include "qla/runtime/KernelInfo.h"

namespace mlir::qla {
class FragLayout;
}

namespace qla::compiler {

using mlir::qla::FragLayout;

// The TMA swizzle mode of a tile's swizzle span in bytes (0: none).
Swizzle swizzleOf(unsigned bytes);

class Emitter {
 public:
  Emitter(mlir::func::FuncOp fn, KernelInfo &info, bool lineDirectives = false, bool tmaStores = true,
          bool trace = false, int freshAddressRegs = 128, bool sharedPointers32 = false)
      : fn_(fn), info_(info), lineDirectives_(lineDirectives), tmaStores_(tmaStores), trace_(trace),
        freshAddressRegs_(freshAddressRegs), sharedPointers32_(sharedPointers32) {}
  mlir::LogicalResult emitKernel();
  std::string takeSource() { return std::move(source_); }

  // --- shared helpers (EmitterCore.cpp) ---
  void line(const std::string &s);
  std::string fresh(const std::string &prefix);
  std::string name(mlir::Value v);
  // The .qla name the front end attached to a location (a NameLoc, see
  // IRGen::named), as a C++ identifier stem; empty when there is none.
  static std::string sourceName(mlir::Location loc);
  // The source name of the op defining `v` (or of the block argument), else
  // `fallback`: the prefix for fresh().
  static std::string prefixFor(mlir::Value v, const std::string &fallback);
  void bind(mlir::Value v, const std::string &n) { names_[v] = n; }
  std::string declare(mlir::Value v, const std::string &type, const std::string &expr,
                      const std::string &prefix = "v");
  static std::string cType(mlir::Type t);
  static std::string dtypeCType(mlir::Type t);  // storage type for tiles/tensors
  mlir::LogicalResult emitBlock(mlir::Block &b);
  mlir::LogicalResult emitOp(mlir::Operation *op);      // position, comment, then emitOpCode
  mlir::LogicalResult emitOpCode(mlir::Operation *op);
  void noteLocation(mlir::Operation *op);

  // The warpgroup range executing the current code (role, else the block).
  struct Group {
    int64_t begin = 0, end = 0;
    int64_t barrierId = 0;   // 0 = __syncthreads
    // The role's fresh_addresses(N) (0: none): with the compiler option,
    // the smaller threshold applies to its copies.
    int64_t freshAddressRegs = 0;
  };
  const Group &group() const { return groups_.back(); }
  std::string groupSync() const;

  // Global tensor access (EmitFragments.cpp)
  int tensorIndex(mlir::Value g) const;

  // A global slice accessed tile element by tile element, with what does not
  // change per element hoisted: declared once before the element loop.
  struct TileAccess {
    std::string ptr;                 // element pointer at the slice origin
    std::string ok;                  // the dropped dims are in range
    std::vector<std::string> stride, lo, hi;  // per tile dim: index in range iff lo <= i < hi
    std::string at(const std::vector<std::string> &idx) const;        // pointer expression
    std::string inBounds(const std::vector<std::string> &idx) const;  // condition
  };
  TileAccess openTileAccess(mlir::Value g, mlir::ValueRange offsets, llvm::ArrayRef<int64_t> dropped,
                            mlir::ValueRange limits, llvm::ArrayRef<int64_t> limitDims, bool forWrite);
  // Fragment <-> global copies (element pairs vectorized where they may be;
  // `transpose`: the tile index (row, col) of the fragment is (col, row) of
  // the slice, element by element; `add`: a store that adds into an f32
  // tensor, qla::dev::red_add_f32 / red_add_f32x2).
  mlir::LogicalResult emitFragGlobal(mlir::Value frag, mlir::Value g, mlir::ValueRange offsets,
                                     llvm::ArrayRef<int64_t> dropped, mlir::ValueRange limits,
                                     llvm::ArrayRef<int64_t> limitDims, bool store, bool transpose = false,
                                     bool add = false);
  // A fragment -> 16-bit shared copy with stmatrix .x4 (.trans with `trans`).
  void emitStmatrix(mlir::qla::CopyOp op, bool trans);

  // --- fragments and tensor cores (EmitFragments.cpp) ---
  mlir::LogicalResult emitAllocFrag(mlir::qla::AllocFragOp op);
  mlir::LogicalResult emitFill(mlir::qla::FillOp op);
  mlir::LogicalResult emitLoad(mlir::qla::LoadOp op);
  mlir::LogicalResult emitPrefetch(mlir::qla::PrefetchOp op);
  mlir::LogicalResult emitStore(mlir::qla::StoreOp op);
  mlir::LogicalResult emitCopy(mlir::qla::CopyOp op);
  mlir::LogicalResult emitSharedCopy(mlir::qla::CopyOp op);
  bool fencedAndSynced(mlir::Operation *store);
  mlir::LogicalResult emitCast(mlir::qla::CastOp op);
  mlir::LogicalResult emitReduce(mlir::qla::ReduceOp op);
  mlir::LogicalResult emitColumnReduce(mlir::qla::ReduceOp op);
  void openFreshIds();
  mlir::LogicalResult emitParallel(mlir::qla::ParallelOp op);
  mlir::LogicalResult emitWgmma(mlir::qlanv::WgmmaOp op);
  mlir::LogicalResult emitScan(mlir::qla::ScanOp op);
  void emitSharedGlobalVectors(mlir::Value smem, mlir::qla::SharedType src, const TileAccess &a, int64_t eb);
  mlir::LogicalResult emitInvUnitLower(mlir::qla::InvUnitLowerOp op);
  mlir::LogicalResult emitFragPick(mlir::qla::FragPickOp op);
  mlir::LogicalResult emitSlotPick(mlir::qla::SlotPickOp op);
  mlir::LogicalResult emitGlobalRead(mlir::qla::GlobalReadOp op);
  mlir::LogicalResult emitLoadToShared(mlir::qla::LoadOp op);
  mlir::LogicalResult scratchPointer(mlir::Operation *op, const std::string &name);
  mlir::LogicalResult emitInvUnitLowerRegisters(mlir::qla::InvUnitLowerOp op);
  mlir::LogicalResult emitInvUnitLowerMma(mlir::qla::InvUnitLowerOp op);
  mlir::LogicalResult warpBlockRegs(mlir::qla::InvUnitLowerOp op, int64_t w, int64_t cb, int64_t (&reg)[2][2][2]);
  void emitBlockInverse16();
  void emitLdmatrixTrans(mlir::qla::CopyOp op);
  bool freshAddressesFor(mlir::qla::FragType frag) const;
  // (r0, c0): the origin of the copy's sub-tile (CopyOp box; untransposed).
  void openX4Loop(mlir::qla::FragType frag, mlir::qla::SharedType tile, bool trans, const char *blkName,
                  const char *rowName, std::string &q, std::string &addr, int64_t r0 = 0, int64_t c0 = 0);
  void closeX4Loop();
  bool tmaStoreBox(mlir::qla::StoreOp op, std::vector<uint32_t> &box);
  void waitTmaStoreReads(mlir::Value tile);
  // Shared tiles some TMA store reads (found before emission).
  llvm::DenseSet<mlir::Value> tmaStoreSources_;
  // Staging tiles that each warpgroup of a multi-warpgroup role fills and
  // stores on its own (findWgStaging): tile -> TMA boxes per warpgroup.
  llvm::DenseMap<mlir::Value, int64_t> wgStaging_;
  void findWgStaging();
  // Named barriers beyond the roles' (ids 1 .. roles): per warpgroup, for
  // the staging tiles (wgBarrierBase_ + warpgroup) and the turns
  // (turnBarrierBase_ + warpgroup); warpgroups counted over the block.
  int64_t wgBarrierBase_ = 0, turnBarrierBase_ = 0;
  std::string wgSync() const;  // the executing warpgroup's own barrier
  mlir::LogicalResult emitWgmmaFence(mlir::ValueRange frags);

  // Per-register iteration over a fragment: emits the loop header and binds
  // `row`/`col` expressions (strings) valid inside it, from the fragment's
  // FragLayout (dialects/qla/IR/FragLayout.h).
  struct RegLoop {
    std::string reg;             // loop variable (register index)
    std::vector<std::string> idx;  // tile indices (row[, col]) of that register
  };
  // `names`: source names of the indices (a map's `parallel i, j`), else row/col.
  RegLoop openRegLoop(mlir::qla::FragType t, const std::vector<std::string> &names = {});
  void closeLoop();
  // The group's threads stride over the elements of a shared tile: emits the
  // loop header; returns the (row, col) (or (col)) index variables.
  std::vector<std::string> openTileLoop(mlir::qla::SharedType t);
  std::string declareStr(const std::string &type, const std::string &expr, const std::string &prefix);
  std::string fragElem(mlir::Value frag, const std::string &reg);         // lvalue/rvalue as float
  void fragStore(mlir::Value frag, const std::string &reg, const std::string &value);
  // Register index in a row/col vector for register `reg` of a 2-D acc
  // fragment (FragLayout::vectorRegText).
  std::string vectorRegFor(mlir::qla::FragType vec, mlir::qla::FragType acc, const std::string &reg);

 private:
  mlir::func::FuncOp fn_;
  KernelInfo &info_;
  bool lineDirectives_ = false;
  bool tmaStores_ = true;
  // Tracing (EmitOptions::trace): every barrier and wgmma wait records its
  // start and end, every slot release/fill a point, through the
  // warpgroup's TraceCursor (qla/device/trace.cuh); traceSites_ describes
  // each site id ("id kind role file:line what").
  bool trace_ = false;
  int freshAddressRegs_ = 128;  // EmitOptions::freshAddressRegs
  bool sharedPointers32_ = false;  // EmitOptions::sharedPointers32
  std::vector<std::string> traceSites_;
  std::string roleName_ = "block";
  // The code that records an event at a new site (empty without tracing).
  std::string traceEvent(const std::string &kind, const std::string &what);
  std::string source_;
  // The body, a line at a time with the .qla position it came from (line 0:
  // generated scaffolding), rendered with comments or #line directives.
  struct Line {
    std::string text;
    std::string file;
    unsigned src = 0;
    bool comment = false;  // a `// file.qla:N` comment (not printed with directives)
  };
  std::vector<Line> lines_;
  std::string curFile_;
  unsigned curLine_ = 0;
  void setPosition(mlir::Location loc);
  std::string renderBody(bool directives, unsigned firstLine, const std::string &generatedFile) const;
  int indent_ = 1;
  int counter_ = 0;
  std::set<std::string> reserved_;  // kernel parameter names: fresh() never returns one
  llvm::DenseMap<mlir::Value, std::string> names_;
  std::vector<Group> groups_;
  unsigned lastLine_ = 0;
  std::string file_;

 public:
  // TensorMap parameters: one per (tensor, box, swizzle).
  struct TmaParam {
    int tensor;
    std::vector<uint32_t> box;
    Swizzle swizzle;
    std::string name;
    bool optional = false;  // only TMA stores use it (ParamInfo::optional)
  };
  std::vector<TmaParam> tmaParams_;
  std::vector<std::string> tensorNames_;
  llvm::DenseMap<mlir::Value, int> tensorOf_;
  std::string tmaParamFor(int tensor, const std::vector<uint32_t> &box, Swizzle s, bool forStore = false);
  mlir::LogicalResult emitTmaLoad(mlir::qlanv::TmaLoadOp op);
};

}  // namespace qla::compiler
