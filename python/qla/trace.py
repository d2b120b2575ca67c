"""Reads the traces that qla.trace_dump writes (kernels compiled with
QLA_TRACE=1 or qlac --trace; docs/internals.md, "Tracing") and summarizes them.

    python -m qla.trace TRACE_FILE [--block B] [--timeline N]

For each traced kernel it prints
  * the blocks: how many ran, their span, mean duration, SMs used, waves;
  * per traced block and warpgroup, the step (the median period of the
    warpgroup's first site, once per loop iteration) and every site's
    median offset within the step, with the median time spent in each wait;
  * the cross-role lags: for each channel, the median time from the
    producer's `filled` (or TMA put) to each consumer's `waited`, per chunk.

Pure Python, no third-party modules: it runs where the trace is read.
"""
from __future__ import annotations

import argparse
import statistics
import struct
import sys
from dataclasses import dataclass, field

# qla/device/trace.cuh
MAX_BLOCKS = 65536
BLOCK_WORDS = 16
TRACE_BLOCKS = 8
TRACE_WGS = 8
CAP = 16384


@dataclass
class Site:
    id: int
    kind: str   # wait / waited / arrive
    role: str
    where: str  # file:line
    what: str   # "<channel>.get", "wgmma<0>", ...


@dataclass
class KernelTrace:
    symbol: str
    sites: list[Site]
    blocks: list[tuple[int, int, int, int]]          # (start ns, end ns, smid, start clock)
    events: dict[tuple[int, int], list[tuple[int, int]]] = field(default_factory=dict)  # (block, wg) -> [(site, clock)]
    counts: dict[tuple[int, int], int] = field(default_factory=dict)


def read(path: str) -> list[KernelTrace]:
    out = []
    with open(path, "rb") as f:
        while True:
            head = f.readline()
            if not head:
                break
            tag, symbol, nsite, nword = head.decode().split()
            if tag != "QLATRACE1":
                raise ValueError(f"{path}: not a QLA trace (header {head!r})")
            text = f.read(int(nsite)).decode()
            words = struct.unpack(f"<{int(nword)}Q", f.read(8 * int(nword)))
            sites = []
            for entry in text.split(";"):
                if entry.strip():
                    i, kind, role, where, what = entry.split(" ", 4)
                    sites.append(Site(int(i), kind, role, where, what))
            kt = KernelTrace(symbol, sites, [])
            for b in range(MAX_BLOCKS):
                h = words[b * BLOCK_WORDS:(b + 1) * BLOCK_WORDS]
                if h[0] == 0:
                    continue
                kt.blocks.append((h[0], h[1], h[2], h[3]))
                if b < TRACE_BLOCKS:
                    for wg in range(TRACE_WGS):
                        n = h[8 + wg]
                        if n == 0:
                            continue
                        base = MAX_BLOCKS * BLOCK_WORDS + (b * TRACE_WGS + wg) * CAP
                        ev = [(w >> 48, w & 0xFFFFFFFFFFFF) for w in words[base:base + min(n, CAP)]]
                        kt.events[(b, wg)] = ev
                        kt.counts[(b, wg)] = n
            out.append(kt)
    return out


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def summarize(kt: KernelTrace, block: int, timeline: int, file=sys.stdout) -> None:
    p = lambda *a: print(*a, file=file)
    p(f"== {kt.symbol}: {len(kt.sites)} sites")
    if kt.blocks:
        t0 = min(b[0] for b in kt.blocks)
        t1 = max(b[1] for b in kt.blocks)
        durs = [b[1] - b[0] for b in kt.blocks if b[1] > b[0]] or [0]  # [1] is 0 where no end was recorded
        sms = {b[2] for b in kt.blocks}
        per_sm = {}
        for b in kt.blocks:
            per_sm.setdefault(b[2], []).append(b)
        waves = max(len(v) for v in per_sm.values())
        busy = [sum(max(b[1] - b[0], 0) for b in v) for v in per_sm.values()]
        p(f"blocks {len(kt.blocks)} (first {MAX_BLOCKS} recorded), span {(t1 - t0) / 1e3:.1f} us, "
          f"block mean {statistics.mean(durs) / 1e3:.1f} us (min {min(durs) / 1e3:.1f}, max {max(durs) / 1e3:.1f}), "
          f"{len(sms)} SMs, up to {waves} blocks per SM, SM busy mean {statistics.mean(busy) / 1e3:.1f} us "
          f"({100 * statistics.mean(busy) / max(t1 - t0, 1):.0f}% of the span)")
    site = {s.id: s for s in kt.sites}
    for (b, wg), ev in sorted(kt.events.items()):
        if b != block or not ev:
            continue
        n = kt.counts[(b, wg)]
        role = site[ev[0][0]].role
        # The loop's first site: the first event of a site that recurs most.
        cnt: dict[int, int] = {}
        for s, _ in ev:
            cnt[s] = cnt.get(s, 0) + 1
        first = next(s for s, _ in ev if cnt[s] == max(cnt.values()))
        starts = [c for s, c in ev if s == first]
        periods = [b2 - a for a, b2 in zip(starts, starts[1:])]
        # Skip the first and last few iterations (ramp-up, drain), where
        # there are enough of them; the same ones below.
        trim = 2 if len(periods) > 8 else 0
        core = periods[trim:len(periods) - trim]
        step = med(core)
        p(f"-- block {b} warpgroup {wg} (role {role}): {n} events{' (capped)' if n > CAP else ''}, "
          f"{len(starts)} iterations, step {step:.0f} clk (median; mean {statistics.mean(core) if core else float('nan'):.0f})")
        # Per site: median offset from the iteration's start, median wait.
        offs: dict[int, list[int]] = {}
        waits: dict[int, list[int]] = {}
        it = -1
        t_start = 0
        pending: dict[str, int] = {}
        for s, c in ev:
            if s == first:
                it += 1
                t_start = c
            if it < trim or it >= len(starts) - trim:  # it is -1 before the loop
                continue
            offs.setdefault(s, []).append(c - t_start)
            st = site[s]
            key = f"{st.where} {st.what}"
            if st.kind == "wait":
                pending[key] = c
            elif st.kind == "waited" and key in pending:
                waits.setdefault(s, []).append(c - pending.pop(key))
        total_wait = 0.0
        for s in sorted(offs, key=lambda s: med(offs[s])):
            st = site[s]
            w = med(waits.get(s, []))
            if st.kind == "waited" and waits.get(s):
                total_wait += statistics.mean(waits[s])
            wtxt = f"  waited {w:6.0f}" if st.kind == "waited" and waits.get(s) else ""
            p(f"   {med(offs[s]):7.0f}  {st.kind:6s} {st.what:14s} {st.where}{wtxt}")
        if step == step and step > 0:
            p(f"   waits take {total_wait:.0f} clk of the {step:.0f} clk step ({100 * total_wait / step:.0f}%)")
        if timeline:
            p(f"   first {timeline} iterations after the ramp (clk from the block's first event):")
            base = ev[0][1]
            it = -1
            for s, c in ev:
                if s == first:
                    it += 1
                if trim <= it < trim + timeline:
                    st = site[s]
                    p(f"     {it:4d} {c - base:9d}  {st.kind:6s} {st.what:14s} {st.where}")
    # Cross-role lags per chunk: a channel's `filled` (compute put) or its
    # producer's `waited ...put` (TMA put: the slot is issued then) to each
    # consumer's `waited ...get`, occurrence by occurrence.
    evs = {wg: ev for (b, wg), ev in kt.events.items() if b == block}
    if not evs:
        return
    chans = sorted({s.what.split(".")[0] for s in kt.sites if "." in s.what})
    p(f"-- block {block}: channel lags (median clk, per chunk, steady state)")
    for ch in chans:
        prod = [(wg, [c for s, c in ev if site[s].what == ch + ".filled"]) for wg, ev in evs.items()]
        prod = [x for x in prod if x[1]]
        if not prod:
            prod = [(wg, [c for s, c in ev if site[s].what == ch + ".put" and site[s].kind == "waited"])
                    for wg, ev in evs.items()]
            prod = [x for x in prod if x[1]]
        if not prod:
            continue
        pwg, pt = prod[0]
        for wg, ev in sorted(evs.items()):
            gt = [c for s, c in ev if site[s].what == ch + ".get" and site[s].kind == "waited"]
            gw = [c for s, c in ev if site[s].what == ch + ".get" and site[s].kind == "wait"]
            if not gt:
                continue
            k = min(len(gt), len(pt))
            steady = range(2, k - 2) if k > 8 else range(k)
            lag = med([gt[i] - pt[i] for i in steady])
            early = med([gw[i] - pt[i] for i in steady])
            when = (f"consumer ready {-early:7.0f} before filled" if early < 0 else
                    f"consumer came {early:7.0f} after filled")
            p(f"   {ch:6s} wg{pwg} -> wg{wg} ({site[ev[0][0]].role}): filled→taken {lag:7.0f}, {when}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m qla.trace", description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--block", type=int, default=0, help="the traced block to detail (0..7)")
    ap.add_argument("--timeline", type=int, default=0, help="print N iterations' events in order")
    ap.add_argument("--kernel", default="", help="only kernels whose symbol contains this")
    a = ap.parse_args(argv)
    for kt in read(a.trace):
        if a.kernel in kt.symbol:
            summarize(kt, a.block, a.timeline)
    return 0


if __name__ == "__main__":
    sys.exit(main())
