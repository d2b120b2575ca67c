// Regression (was a crash in TmaLoadOp::verify, which called
// getShape().back() on the empty shape of a rank-0 shared tile
// `!qla.smem<bf16>`). TmaLoadOp::verify now rejects an empty shape, and the
// type is rejected earlier still: the parser runs SharedType::verify, so a
// rank-0 tile no longer parses. The function below must fail cleanly at the
// type, not crash.
// RUN: %qla-opt %s -verify-diagnostics

// expected-error @+1 {{tiles have rank 1 or 2, got rank 0}}
func.func @tma_rank0(%g: !qla.global<bf16, 0>, %t: !qla.smem<bf16>) {
  %c0 = arith.constant 0 : index
  %bars = qlanv.barriers {arrivals = 1 : i64} : !qlanv.barriers<1>
  qlanv.tma_load %g[] -> %t, %bars[%c0] : !qla.global<bf16, 0> -> !qla.smem<bf16>, !qlanv.barriers<1>
  return
}
