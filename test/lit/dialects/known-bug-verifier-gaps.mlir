// XFAIL: *
// Known verifier gaps: IR that the language forbids, or that lowers to a
// hang, is accepted. Each case should be rejected; the messages are not
// decided yet, so only the op is matched.
// RUN: %qla-opt %s -split-input-file -verify-diagnostics

// A 2-D fragment indexed [i, i] inside a 1-D parallel: verifyElemAccess
// checks the [i, j] order only when the parallel is 2-D, so the diagonal
// access is accepted (the emitter then maps both indices to one loop).
func.func @diagonal(%a: !qla.frag<64x64xf32>) {
  qla.parallel [64] {
  ^bb0(%i: index):
    // expected-error @+1 {{'qla.elem_read' op}}
    %x = qla.elem_read %a[%i, %i] : !qla.frag<64x64xf32> -> f32
  }
  return
}

// -----

// A swizzle other than 0, 32, 64 or 128 bytes.
func.func @swizzle_100() {
  // expected-error @+1 {{swizzle}}
  %a = qla.alloc_shared : !qla.smem<64x64xbf16, swizzle 100>
  return
}

// -----

// Overlapping roles: warpgroup 1 runs both bodies (the front end rejects
// this, the qla.role verifier does not).
func.func @overlap() attributes {qla.threads = 256 : i64} {
  qla.role "a" warpgroups 0 to 1 regs 0 {
  }
  // expected-error @+1 {{'qla.role' op}}
  qla.role "b" warpgroups 1 to 1 regs 0 {
  }
  return
}

// -----

// A put that leaves a slot tile unwritten: qla-lower-channels arms `full`
// with the bytes of every tile of the slot (2 × 16384) but issues one TMA
// load (16384 bytes), so the consumer waits forever. Writing a tile twice
// completes the barrier with the wrong byte count the other way.
func.func @partial_put(%A: !qla.global<bf16, 2>, %i: index) {
  %ch = qla.channel "ab" : !qla.channel<[!qla.smem<128x64xbf16>, !qla.smem<128x64xbf16>], 2>
  qla.role "load" warpgroups 0 to 0 regs 0 {
    // expected-error @+1 {{'qla.put' op}}
    qla.put %ch {
    ^bb0(%a: !qla.smem<128x64xbf16>, %b: !qla.smem<128x64xbf16>):
      qla.load %A[%i, %i] -> %a : !qla.global<bf16, 2> -> !qla.smem<128x64xbf16>
    } : !qla.channel<[!qla.smem<128x64xbf16>, !qla.smem<128x64xbf16>], 2>
  }
  qla.role "math" warpgroups 1 to 1 regs 0 {
    qla.get %ch {
    ^bb0(%a: !qla.smem<128x64xbf16>, %b: !qla.smem<128x64xbf16>):
    } : !qla.channel<[!qla.smem<128x64xbf16>, !qla.smem<128x64xbf16>], 2>
  }
  return
}
