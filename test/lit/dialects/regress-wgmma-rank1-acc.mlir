// Regression (was a crash or a wrong message, now rejected cleanly): types have no verifier, so a 1-D fragment can carry the
// accumulator layout (only qla.alloc_frag checks layouts). WgmmaOp::verify
// then reads C's shape[1] out of bounds and reports a garbage N, e.g.
// "N must be a multiple of 8 and at most 256, got 93874622029248". The op
// should be rejected for its rank ("C must be 2-D" or similar), and the
// type itself should be rejected by a FragType verifier.
// RUN: %qla-opt %s -verify-diagnostics

func.func @wgmma_rank1_acc(%c: !qla.frag<64xf32, acc x1>) {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %b = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  // expected-error @+1 {{'qlanv.wgmma' op C must}}
  qlanv.wgmma %a, %b, %c {warpgroups = 1 : i64} : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64xf32, acc x1>
  return
}
