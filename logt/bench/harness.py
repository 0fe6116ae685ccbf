"""Interleaved timing: logt and its references measured side by side in one run.

Each case has several contenders (``{"logt": fn, "numpy eigh": fn, ...}``).
For every round, every contender runs ``number`` calls back to back, in a
rotating order, so slow drifts of a shared machine hit all contenders alike.
The report gives the median time per call of each contender and the ratio
``reference / logt`` (> 1 means logt is faster) measured in that same run.
"""
import platform
import statistics
import time


def _calibrate(fn, target=0.02):
    """Calls per round so that one round takes about ``target`` seconds."""
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= target or n >= 1 << 20:
            return max(1, int(n * target / max(dt, 1e-9)))
        n *= 4


def compare(contenders, rounds=15, target=0.02, number=None):
    """Median seconds per call for each contender, interleaved.

    contenders : dict name -> zero-argument callable; the first one is logt.
    Returns dict name -> median seconds per call.
    """
    names = list(contenders)
    for fn in contenders.values():   # warm up (workspaces, caches)
        fn()
    nums = {k: (number or _calibrate(f, target)) for k, f in contenders.items()}
    times = {k: [] for k in names}
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for k in order:
            fn, n = contenders[k], nums[k]
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            times[k].append((time.perf_counter() - t0) / n)
    return {k: statistics.median(v) for k, v in times.items()}


def machine_info():
    """CPU count, CPU model, BLAS libraries and their thread counts (as seen now)."""
    import os

    import numpy
    import scipy

    from logt._threads import blas_info
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    libs = [f"{i.get('internal_api')} {i.get('version')} ({os.path.basename(i.get('filepath', ''))}, "
            f"{i.get('num_threads')} threads)" for i in blas_info()]
    return {"cpus": os.cpu_count(), "cpu": cpu, "python": platform.python_version(),
            "numpy": numpy.__version__, "scipy": scipy.__version__, "blas": libs}


def fmt_time(s):
    if s < 1e-6:
        return f"{s * 1e9:.0f} ns"
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"
