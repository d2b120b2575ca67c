// Regression (was a crash or a wrong message, now rejected cleanly): WgmmaOp::verify divides by 64 * warpgroups, so warpgroups = 0
// crashes qla-opt (SIGFPE in the verifier) instead of being rejected.
// RUN: %qla-opt %s -verify-diagnostics

func.func @wgmma_zero_warpgroups() {
  %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %b = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 128>
  %c = qla.alloc_frag : !qla.frag<64x64xf32, acc x1>
  // expected-error @+1 {{'qlanv.wgmma' op}}
  qlanv.wgmma %a, %b, %c {warpgroups = 0 : i64} : !qla.smem<64x64xbf16, swizzle 128>, !qla.smem<64x64xbf16, swizzle 128>, !qla.frag<64x64xf32, acc x1>
  return
}
