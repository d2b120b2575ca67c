// Regression (was a crash or a wrong message, now rejected cleanly): types have no verifier, so a rank-0 shared tile
// `!qla.smem<bf16>` parses (only qla.alloc_shared checks tile ranks), and
// TmaLoadOp::verify calls getShape().back() on its empty shape: qla-opt
// crashes in the verifier instead of reporting an error.
// RUN: %qla-opt %s -verify-diagnostics

func.func @tma_rank0(%g: !qla.global<bf16, 0>, %t: !qla.smem<bf16>) {
  %c0 = arith.constant 0 : index
  %bars = qlanv.barriers {arrivals = 1 : i64} : !qlanv.barriers<1>
  // expected-error @+1 {{'qlanv.tma_load' op}}
  qlanv.tma_load %g[] -> %t, %bars[%c0] : !qla.global<bf16, 0> -> !qla.smem<bf16>, !qlanv.barriers<1>
  return
}
