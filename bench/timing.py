"""Timing shared by the benchmarks. time_graph: warm up on a side stream,
capture `calls` calls in one graph, replay it `replays` times, and report the
median milliseconds per call (and every replay's value). time_eager: for
what a graph cannot hold (autograd steps, host synchronization): `warmup`
calls, then `reps` times `calls` calls between two CUDA events; the median
milliseconds per call (and every repetition's value)."""


def time_eager(fn, calls=5, reps=5, warmup=2):
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(calls):
            fn()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) / calls)
    times.sort()
    return times[len(times) // 2], times


def time_graph(fn, calls=20, replays=15):
    import torch

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        g.replay()
        e1.record()
        torch.cuda.synchronize()
        times.append(e0.elapsed_time(e1) / calls)
    del g
    times.sort()
    return times[len(times) // 2], times
