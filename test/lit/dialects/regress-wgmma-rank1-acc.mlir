// Regression (was a crash): a 1-D fragment could carry the accumulator
// layout, and WgmmaOp::verify then read C's shape[1] out of bounds and
// reported a garbage N ("N must be a multiple of 8 and at most 256, got
// 93874622029248"). The type is now checked where it is parsed
// (FragType::verify through getChecked), so the signature is rejected before
// any op sees it.
// RUN: %qla-opt %s -verify-diagnostics

// expected-error @+1 {{the accumulator layout is 2-D}}
func.func @wgmma_rank1_acc(%c: !qla.frag<64xf32, acc x1>) {
  return
}
