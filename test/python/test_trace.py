"""qla.trace (python/qla/trace.py), the reader and summarizer of the traces
that qla.trace_dump writes, on a synthetic trace file; no GPU, no libqla.so.

The file is laid out as runtime/src/Driver.cpp (dumpTraces) writes it and
runtime/include/qla/device/trace.cuh fills the buffer: per kernel a header
line `QLATRACE1 <symbol> <site bytes> <words>`, the sites' text, then the
buffer's words (little-endian u64): the block table (MAX_BLOCKS x
BLOCK_WORDS) and the events of the first TRACE_BLOCKS blocks (TRACE_WGS x CAP
words each, `site << 48 | clock`).

The synthetic kernel: one block with events (block 0) and one in the block
table only (block 9, past TRACE_BLOCKS); two warpgroups, a TMA producer
(`load`: wait/waited vin.put) and a consumer (`math`: wait/waited vin.get,
wait/waited wgmma<0>, arrive vin.release), PERIOD clocks per iteration after
a slower ramp-up. A second kernel record with no blocks follows. Checks:

  1. read(): the kernels, their symbols and sites, the block table, the
     events and counts per (block, warpgroup).
  2. summarize(): each warpgroup's step is PERIOD, the waits' medians, the
     share of the step spent waiting, the channel lag from the producer to
     the consumer; also with few iterations (no ramp trimmed).
  3. `python -m qla.trace FILE` prints the same.

    python3 test/python/test_trace.py

Each check prints PASS or FAIL; exit status 1 on any failure.
"""
import array
import io
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

import qla.trace as qt  # noqa: E402  (needs no libqla.so)

PERIOD = 1000
RAMP = 5000          # extra clocks of each of the first two iterations
START_CLK = 1 << 20
SITES = ("0 wait load trace.qla:7 vin.put;1 waited load trace.qla:7 vin.put;"
         "2 wait math trace.qla:13 vin.get;3 waited math trace.qla:13 vin.get;"
         "4 wait math trace.qla:14 wgmma<0>;5 waited math trace.qla:14 wgmma<0>;"
         "6 arrive math trace.qla:13 vin.release;")
# Per iteration, (site, clocks after the iteration's start). summarize()
# gives offsets from a warpgroup's loop site (its most frequent site's first
# event): math's `wait vin.get`, 200 clocks in.
LOAD = [(0, 0), (1, 50)]                                  # put: waits 50
MATH = [(2, 200), (3, 300), (4, 400), (5, 450), (6, 500)]  # get: 100, wgmma: 50

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Checks  # noqa: E402

check = Checks()


def iteration_starts(iterations):
    t, out = START_CLK, []
    for i in range(iterations):
        out.append(t)
        t += PERIOD + (RAMP if i < 2 else 0)
    return out


def events(pattern, iterations):
    return [(s, t + dt) for t in iteration_starts(iterations) for s, dt in pattern]


def kernel_words(iterations):
    words = array.array("Q", bytes(8 * qt.MAX_BLOCKS * qt.BLOCK_WORDS +
                                   8 * qt.TRACE_BLOCKS * qt.TRACE_WGS * qt.CAP))
    streams = {0: events(LOAD, iterations), 1: events(MATH, iterations)}
    # Block 0: start and end (ns), SM, start clock, the warpgroups' counts.
    h = 0 * qt.BLOCK_WORDS
    words[h + 0], words[h + 1], words[h + 2], words[h + 3] = 10_000, 60_000, 3, START_CLK - 100
    for wg, ev in streams.items():
        words[h + 8 + wg] = len(ev)
        base = qt.MAX_BLOCKS * qt.BLOCK_WORDS + (0 * qt.TRACE_WGS + wg) * qt.CAP
        for k, (s, c) in enumerate(ev):
            words[base + k] = s << 48 | c
    # Block 9: in the block table only (no events are kept past TRACE_BLOCKS).
    h = 9 * qt.BLOCK_WORDS
    words[h + 0], words[h + 1], words[h + 2], words[h + 3] = 20_000, 50_000, 5, 7
    words[h + 8] = 4   # counted, not recorded
    return words, streams


def write_trace(path, iterations):
    words, streams = kernel_words(iterations)
    if sys.byteorder != "little":
        words.byteswap()
    with open(path, "wb") as f:
        site = SITES.encode()
        f.write(f"QLATRACE1 qla_synthetic_0123abcd {len(site)} {len(words)}\n".encode())
        f.write(site)
        f.write(words.tobytes())
        # A second kernel: one site, no block ran.
        empty = array.array("Q", bytes(8 * qt.MAX_BLOCKS * qt.BLOCK_WORDS))
        site = b"0 wait block -:0 load;"
        f.write(f"QLATRACE1 qla_other_4567 {len(site)} {len(empty)}\n".encode())
        f.write(site)
        f.write(empty.tobytes())
    return streams


def summary(kt, block=0, timeline=0):
    out = io.StringIO()
    qt.summarize(kt, block, timeline, file=out)
    return out.getvalue()


def main():
    with tempfile.TemporaryDirectory(prefix="qla-trace-test-") as tmp:
        path = os.path.join(tmp, "synthetic.qlatrace")
        iterations = 20
        streams = write_trace(path, iterations)

        # 1. read()
        kts = qt.read(path)
        check("read: two kernels, in order", [k.symbol for k in kts] == ["qla_synthetic_0123abcd", "qla_other_4567"],
              [k.symbol for k in kts])
        kt = kts[0]
        check("read: seven sites", [(s.id, s.kind, s.role, s.where, s.what) for s in kt.sites] == [
            (0, "wait", "load", "trace.qla:7", "vin.put"), (1, "waited", "load", "trace.qla:7", "vin.put"),
            (2, "wait", "math", "trace.qla:13", "vin.get"), (3, "waited", "math", "trace.qla:13", "vin.get"),
            (4, "wait", "math", "trace.qla:14", "wgmma<0>"), (5, "waited", "math", "trace.qla:14", "wgmma<0>"),
            (6, "arrive", "math", "trace.qla:13", "vin.release")], kt.sites)
        check("read: the block table (blocks 0 and 9)",
              kt.blocks == [(10_000, 60_000, 3, START_CLK - 100), (20_000, 50_000, 5, 7)], kt.blocks)
        check("read: events of block 0, warpgroups 0 and 1 only", sorted(kt.events) == [(0, 0), (0, 1)],
              sorted(kt.events))
        check("read: warpgroup 0's events", kt.events.get((0, 0)) == streams[0])
        check("read: warpgroup 1's events", kt.events.get((0, 1)) == streams[1])
        check("read: counts", kt.counts == {(0, 0): 2 * iterations, (0, 1): 5 * iterations}, kt.counts)
        check("read: the second kernel is empty",
              len(kts[1].sites) == 1 and kts[1].blocks == [] and kts[1].events == {}, kts[1])

        # 2. summarize()
        text = summary(kt)
        steps = re.findall(r"-- block 0 warpgroup (\d) \(role (\w+)\): (\d+) events, (\d+) iterations, step (\d+) clk",
                           text)
        check(f"summarize: step {PERIOD} clk in both warpgroups",
              steps == [("0", "load", str(2 * iterations), str(iterations), str(PERIOD)),
                        ("1", "math", str(5 * iterations), str(iterations), str(PERIOD))], text)
        check("summarize: the blocks line", "blocks 2 (first" in text and "2 SMs" in text, text)
        check("summarize: the put's wait (50 clk)", re.search(r"waited vin\.put +trace\.qla:7 +waited +50\b", text),
              text)
        check("summarize: the get's wait (100 clk)",
              re.search(r"\b100 +waited vin\.get +trace\.qla:13 +waited +100\b", text), text)
        check("summarize: the wgmma wait (50 clk)",
              re.search(r"\b250 +waited wgmma<0> +trace\.qla:14 +waited +50\b", text), text)
        check("summarize: waits share of the step",
              f"waits take 150 clk of the {PERIOD} clk step (15%)" in text, text)
        check("summarize: the channel lag (TMA put waited -> get waited)",
              re.search(r"vin +wg0 -> wg1 \(math\): filled→taken +250, consumer came +150 after filled", text), text)
        check("summarize: no warpgroup of another block", "-- block 9" not in text, text)
        tl = summary(kt, timeline=2)
        check("summarize --timeline 2: 2 iterations of 5 + 2 events",
              len(re.findall(r"^ +[23] +\d+  \w", tl, re.M)) == 2 * (len(LOAD) + len(MATH)), tl)
        check("summarize: an empty kernel", summary(kts[1]).strip() == "== qla_other_4567: 1 sites",
              summary(kts[1]))

        # Few iterations: the step and the sites' offsets from all of them.
        few = os.path.join(tmp, "few.qlatrace")
        write_trace(few, 4)
        text = summary(qt.read(few)[0])
        steps = re.findall(r"warpgroup \d \(role \w+\): \d+ events, 4 iterations, step (\d+) clk", text)
        check("summarize, 4 iterations: a step per warpgroup", len(steps) == 2, text)
        check("summarize, 4 iterations: the sites' offsets and waits",
              re.search(r"\b100 +waited vin\.get +trace\.qla:13 +waited +100\b", text)
              and "waits take 150 clk" in text, text)

        # 3. python -m qla.trace
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
        p = subprocess.run([sys.executable, "-m", "qla.trace", path, "--kernel", "synthetic"], env=env,
                           capture_output=True, text=True, timeout=120)
        check("python -m qla.trace FILE --kernel synthetic",
              p.returncode == 0 and f"step {PERIOD} clk" in p.stdout and "qla_other" not in p.stdout,
              p.stdout + p.stderr)
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
