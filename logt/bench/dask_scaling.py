"""``python -m logt.bench --only dask``: the mini-batch averages on a 2-worker loopback Dask cluster.

What it measures (all on ``distributed.LocalCluster(n_workers=2, threads_per_worker=1,
processes=True, host="127.0.0.1")``, started and closed here):

1. ``mean_grad`` of the Adult pair oracle at ``B`` = 1e4 .. 1e7: in-process 1 thread,
   in-process 2 threads, ``DaskOracle`` (2 single-threaded workers, 2 chunks) and
   ``ShardedMetricLearning`` (2 shards); interleaved (``harness.compare``), median
   per call; throughput ratios in the same run; bytes moved per call.
2. The same for the toy oracle (5 x 5, in-process is single-threaded).
3. The crossover: the smallest ``B`` (powers of 2) where the Dask call beats the
   in-process 2-thread call on Adult (the default ``local_below`` is set from it).
   The cost of the cluster-independent defaults (``default_n_chunks(B)`` chunks,
   4 shards) against one chunk / shard per worker (2), at ``B = 2**17, 2**19, 2**21``.
4. The cost of the extra installed but unused: ``mean_grad`` in fresh processes
   with and without ``import logt.distributed``, alternated.
5. logT on Adult at ``T = 1e7`` (practical parameters), in-process vs through Dask,
   several seeds: ``F``, wall-clock, synchronization rounds (vs SGD's ``T``).
6. A model for 32 machines at ``T = 1e9`` from the measured per-round latency,
   per-pair cost and bytes per round.

Without ``dask[distributed]`` the section says so and is skipped.
"""
import functools
import math
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import logt
from logt.bench import cases as C
from logt.bench import references as ref
from logt.bench.harness import compare, fmt_time
from logt.domains import PSDCone
from logt.metric_learning import practical_metric_params
from logt.oracles import PSDQuadratic
from logt.oracles.metric import MetricLearning

ADULT_BS = (10**4, 10**5, 10**6, 3 * 10**6, 10**7)
TOY_BS = (10**4, 10**5, 10**6, 10**7)
CROSSOVER_BS = tuple(2**k for k in range(12, 19))
E2E_T, E2E_SEEDS = 10**7, (0, 1, 2, 3)
QUICK_ADULT_BS, QUICK_TOY_BS, QUICK_CROSSOVER_BS = (10**4, 10**5), (10**4, 10**5), (2**13, 2**15)
QUICK_E2E_T, QUICK_E2E_SEEDS = 10**5, (0,)
RULE_BS, QUICK_RULE_BS = (2**17, 2**19, 2**21), (2**17,)
TARGET_VS_2T, TARGET_VS_1T = 0.85, 1.7          # at B >= 1e6 on Adult pairs
MODEL = dict(machines=32, T=10**9, cores_per_machine=2, bandwidth=1.25e9, net_latency=0.5e-3)


def _load():
    return "load average %.2f / %.2f / %.2f" % os.getloadavg()


def _adult(data_dir):
    """Train (CSR, labels), eval (CSR, labels), source."""
    d = ref.find_data_dir(data_dir)
    if d is not None and (d / "a9a.gz").is_file() and (d / "a9a.t.gz").is_file():
        from logt.datasets import load_adult
        X, y, Xe, ye = load_adult(d)
        return X, y, Xe, ye, "real"
    (X, y), (Xe, ye) = ref.a9a_like(0), ref.a9a_like(2)
    return X, y, Xe, ye, "synthetic"


def _make_metric(X, y, n_threads, n_eval_pairs=10, X_eval=None, y_eval=None):
    return MetricLearning(X, y, ref.METRIC_LAM, X_eval=X_eval, y_eval=y_eval,
                          n_eval_pairs=n_eval_pairs, n_threads=n_threads)


def _make_toy():
    return PSDQuadratic(np.zeros((ref.TOY_D, ref.TOY_D)), 1.0)


def _caller(o, w, B, seed=0):
    rng, g = np.random.default_rng(seed), np.empty(o.shape)
    return lambda: o.mean_grad(w, B, rng, g)


def _rounds(B, quick):
    if B >= 10**7:
        return 3, 1
    if B >= 10**6:
        return (3 if quick else 5), 1
    return (5 if quick else 9), None


def _x(r):
    return f"{r:.2f}x" if r == r else "-"


def _kb(b):
    return f"{b / 1024:.0f} kB" if b < 2**20 else f"{b / 2**20:.1f} MB"


def _table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def crossover(times, ref_):
    """Smallest B of the grid from which the Dask call is faster than ``ref_`` at every larger B."""
    out = None
    for B in sorted(times, reverse=True):
        if times[B]["dask"] < times[B][ref_]:
            out = B
        else:
            break
    return out


# ----------------------------------------------------------------- 4. import cost

_IMPORT_PROBE = r"""
import sys, time, statistics
import numpy as np
sys.path.insert(0, {root!r})
import logt
from logt.oracles import PSDQuadratic
if {with_dask}:
    import logt.distributed
o, rng, w = PSDQuadratic(np.zeros((5, 5)), 1.0), np.random.default_rng(0), np.eye(5)
g = np.empty((5, 5))
for _ in range(20):
    o.mean_grad(w, 10**5, rng, g)
ts = []
for _ in range(60):
    t0 = time.perf_counter(); o.mean_grad(w, 10**5, rng, g); ts.append(time.perf_counter() - t0)
print(statistics.median(ts))
"""


def import_cost(repeats, log):
    """Median ``mean_grad`` time (toy, B = 1e5) in fresh processes without / with
    ``import logt.distributed``, alternated; returns (without, with) medians over processes."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    res = {False: [], True: []}
    for r in range(repeats):
        for with_dask in ((False, True) if r % 2 == 0 else (True, False)):
            code = _IMPORT_PROBE.format(root=root, with_dask=with_dask)
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 timeout=300, check=True)
            res[with_dask].append(float(out.stdout.strip()))
    log(f"import cost: without {res[False]}, with {res[True]}")
    return statistics.median(res[False]), statistics.median(res[True])


# ----------------------------------------------------------------- the section

def dask_section(quick, log, data_dir=None):
    try:
        import distributed
    except ImportError:
        return ("### Scaling out on Dask\n\n_skipped: dask[distributed] is not installed "
                "(pip install 'logt[dask]')._")
    from logt.distributed import DEFAULT_LOCAL_BELOW, DaskOracle, ShardedMetricLearning

    t_start = time.perf_counter()
    conditions = [f"start: {_load()}"]
    X, y, Xe, ye, src = _adult(data_dir)
    d = X.shape[1]
    A = np.random.default_rng(5).standard_normal((d, d)) * 0.05
    W = (A + A.T) / 2
    in1, in2 = _make_metric(X, y, 1), _make_metric(X, y, 2)
    toy = _make_toy()
    parts = []
    log("dask: starting a LocalCluster (2 workers x 1 thread, 127.0.0.1)")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None, silence_logs=40) as lc, \
            distributed.Client(lc, timeout=60) as client:
        client.wait_for_workers(2, timeout=60)
        make_adult = functools.partial(_make_metric, X, y, 1)
        dk = DaskOracle(client, make_adult, n_chunks=2, local_below=1, local_oracle=in1, timeout=600)
        sh = ShardedMetricLearning(client, X, y, ref.METRIC_LAM, n_shards=2, n_eval_pairs=10,
                                   n_threads=1, local_below=1, timeout=600)
        dt = DaskOracle(client, _make_toy, n_chunks=2, local_below=1, local_oracle=toy, timeout=600)

        # 1. Adult pairs
        rows, adult = [], {}
        for B in (QUICK_ADULT_BS if quick else ADULT_BS):
            log(f"dask: adult mean_grad B={B:.0e}")
            rounds, number = _rounds(B, quick)
            n0, b0 = dk.n_round_trips, dk.bytes_received + dk.bytes_sent
            t = compare({"in1": _caller(in1, W, B), "in2": _caller(in2, W, B),
                         "dask": _caller(dk, W, B), "sharded": _caller(sh, W, B)},
                        rounds=rounds, number=number, target=0.05)
            nbytes = (dk.bytes_received + dk.bytes_sent - b0) / max(1, dk.n_round_trips - n0)
            adult[B] = t
            r2, r1 = t["in2"] / t["dask"], t["in1"] / t["dask"]
            rs2 = t["in2"] / t["sharded"]
            goal = "-"
            if B >= 10**6:
                ok = r2 >= TARGET_VS_2T and r1 >= TARGET_VS_1T
                goal = (f">= {TARGET_VS_2T:.0%} of 2t and >= {TARGET_VS_1T}x 1t: "
                        f"{'met' if ok else 'MISSED'}")
            rows.append([f"{B:.0e}", fmt_time(t["in1"]), fmt_time(t["in2"]), fmt_time(t["dask"]),
                         fmt_time(t["sharded"]), f"{r2:.0%}", _x(r1), f"{rs2:.0%}",
                         f"{B / t['dask'] / 1e6:.2f}", _kb(nbytes), goal])
        conditions.append(f"after Adult: {_load()}")
        head = ["B", "in-process 1 thr", "in-process 2 thr", "Dask 2x1", "sharded 2x1",
                "Dask vs 2 thr", "Dask vs 1 thr", "sharded vs 2 thr", "Dask Mpairs/s",
                "bytes/call", "target"]
        parts.append(f"#### Adult pair oracle ({src}, d={d}): `mean_grad` median per call\n\n"
                     + _table(head, rows)
                     + "\n\n\"Dask vs 2 thr\" is the Dask call's throughput as a share of the in-process "
                     "2-thread kernel's (time ratio); 2 chunks, `w` sent once per call, the chunk means "
                     "gathered (bytes/call: `w` sent + 2 means received).")

        # 1b. the default chunk / shard rule (independent of the cluster) against one per worker
        from logt.distributed._oracle import default_n_chunks
        dd = DaskOracle(client, make_adult, local_below=1, local_oracle=in1, timeout=600)
        sd = ShardedMetricLearning(client, X, y, ref.METRIC_LAM, n_eval_pairs=10, n_threads=1, local_below=1,
                                   timeout=600)
        rows = []
        for B in (QUICK_RULE_BS if quick else RULE_BS):
            log(f"dask: default chunk rule B=2**{int(math.log2(B))}")
            t = compare({"d2": _caller(dk, W, B), "dd": _caller(dd, W, B), "s2": _caller(sh, W, B),
                         "sd": _caller(sd, W, B)}, rounds=3 if quick else 7, target=0.05)
            rows.append([f"2**{int(math.log2(B))}", default_n_chunks(B), fmt_time(t["d2"]), fmt_time(t["dd"]),
                         _x(t["dd"] / t["d2"]), fmt_time(t["s2"]), fmt_time(t["sd"]), _x(t["sd"] / t["s2"])])
        parts.append("#### The cluster-independent defaults (Adult): per call, against one chunk / shard per worker\n\n"
                     + _table(["B", "default chunks", "Dask 2 chunks", "Dask default", "default / 2",
                               "sharded 2", f"sharded default ({sd.n_shards})", "default / 2"], rows)
                     + "\n\nThe defaults depend on B (chunks) or nothing (shards), never on the cluster, so "
                     "one seed gives the same bits on any cluster; a ratio above 1 is their cost on these "
                     "2 workers.")
        dd.close()
        sd.close()

        # 2. toy
        rows = []
        for B in (QUICK_TOY_BS if quick else TOY_BS):
            log(f"dask: toy mean_grad B={B:.0e}")
            rounds, number = _rounds(B, quick)
            t = compare({"in": _caller(toy, np.eye(5), B), "dask": _caller(dt, np.eye(5), B)},
                        rounds=rounds, number=number, target=0.05)
            rows.append([f"{B:.0e}", fmt_time(t["in"]), fmt_time(t["dask"]), _x(t["in"] / t["dask"])])
        parts.append("#### Toy oracle (5 x 5): `mean_grad` median per call\n\n"
                     + _table(["B", "in-process", "Dask 2x1", "speedup"], rows))

        # 3. crossover + the fixed cost of one round
        log("dask: crossover")
        rows, ts = [], {}
        for B in (QUICK_CROSSOVER_BS if quick else CROSSOVER_BS):
            ts[B] = t = compare({"in1": _caller(in1, W, B), "in2": _caller(in2, W, B),
                                 "dask": _caller(dk, W, B)}, rounds=5 if quick else 9, target=0.05)
            rows.append([B, fmt_time(t["in1"]), fmt_time(t["in2"]), fmt_time(t["dask"]),
                         _x(t["in1"] / t["dask"]), _x(t["in2"] / t["dask"])])
        cross = {ref_: crossover(ts, ref_) for ref_ in ("in1", "in2")}
        lat = compare({"dask": _caller(dt, np.eye(5), 2)}, rounds=9, target=0.05)["dask"]
        parts.append(
            "#### Crossover (Adult): the smallest B from which Dask wins\n\n"
            + _table(["B", "in-process 1 thr", "in-process 2 thr", "Dask 2x1", "vs 1 thr", "vs 2 thr"],
                     rows)
            + f"\n\nDask wins from B = {cross['in1'] or '(not in the grid)'} against one in-process "
            f"thread and from B = {cross['in2'] or '(not in the grid)'} against two (on 2 cores the "
            "cluster has no more cores than the 2-thread kernel: it can only tie). "
            f"Default `local_below` = {DEFAULT_LOCAL_BELOW}. Fixed cost of one round (toy, B = 2, "
            f"2 chunks, back to back): {fmt_time(lat)}.")
        conditions.append(f"after crossover: {_load()}")

        # 5. end to end
        T = QUICK_E2E_T if quick else E2E_T
        seeds = QUICK_E2E_SEEDS if quick else E2E_SEEDS
        ev = _make_metric(X, y, 2, n_eval_pairs=10**4, X_eval=Xe, y_eval=ye)
        p = practical_metric_params(ev.L, ev.lam, T)
        kw = {"eta": p.eta, "M": p.M, "B1": p.B1}
        e2e = {"in": [], "dask": []}
        dke = DaskOracle(client, make_adult, n_chunks=2, local_oracle=ev, timeout=600)
        for s in seeds:
            for name, o in (("in", ev), ("dask", dke)):
                log(f"dask: logT adult T={T:.0e} seed {s} {name}")
                n0, l0, b0 = dke.n_round_trips, dke.n_local_calls, dke.bytes_sent + dke.bytes_received
                t0 = time.perf_counter()
                r = logt.minimize(o, PSDCone(d), T, rng=s, **kw)
                sec = time.perf_counter() - t0
                e2e[name].append({"F": r.fun, "sec": sec, "n_calls": r.n_calls, "P": r.n_projections,
                                  "k": r.n_epochs, "trips": dke.n_round_trips - n0,
                                  "local": dke.n_local_calls - l0,
                                  "bytes": dke.bytes_sent + dke.bytes_received - b0})
        conditions.append(f"after end to end: {_load()}")
        k = e2e["in"][0]["k"]
        expect = 2 * p.M * sum(p.B1 * 2**(e - 1) >= dke.local_below for e in range(1, k + 1))
        rows = []
        for name, label in (("in", "in-process (2 threads)"), ("dask", "Dask 2x1")):
            Fs = [r["F"] for r in e2e[name]]
            sd = statistics.stdev(Fs) if len(Fs) > 1 else float("nan")
            r0 = e2e[name][0]
            rows.append([label, f"{statistics.mean(Fs):.6f} ± {sd:.6f}",
                         fmt_time(statistics.median(r["sec"] for r in e2e[name])), r0["n_calls"], r0["P"],
                         r0["trips"] if name == "dask" else 0,
                         r0["local"] if name == "dask" else 2 * p.M * k,
                         _kb(r0["bytes"]) if name == "dask" else "-"])
        mi = statistics.mean(r["F"] for r in e2e["in"])
        md = statistics.mean(r["F"] for r in e2e["dask"])
        if len(seeds) > 1:
            se = math.sqrt(statistics.variance([r["F"] for r in e2e["in"]]) / len(seeds)
                           + statistics.variance([r["F"] for r in e2e["dask"]]) / len(seeds))
            same = f"|difference| = {abs(md - mi):.2e}, {abs(md - mi) / se:.2f} standard errors"
        else:
            same = f"|difference| = {abs(md - mi):.2e} (one seed: no error bar)"
        trips = e2e["dask"][0]["trips"]
        parts.append(
            f"#### logT on Adult at T = {T:.0e} (eta = 4/L, M = {p.M}, B1 = {p.B1}; "
            f"{len(seeds)} seeds; F on 10^4 a9a.t pairs)\n\n"
            + _table(["run", "final F (mean ± sd)", "wall-clock (median)", "oracle calls",
                      "projections", "sync rounds", "local calls", "bytes moved"], rows)
            + f"\n\nSame F within statistical error: {same}. Synchronization rounds: logT "
            f"{trips} (= 2*M*(epochs with B >= local_below = {dke.local_below}) = {expect}; "
            f"2*M*k = {2 * p.M * k} if every call went out) vs SGD {T:.0e} (one per oracle call; "
            "a distributed SGD step is one gradient, so each step is a round).")

        # 6. model
        big = [B for B in adult if B >= 10**6] or [max(adult)]         # medians over the large B
        c1 = statistics.median(adult[B]["in1"] / B for B in big)       # s per pair, 1 thread
        c2 = statistics.median(adult[B]["in2"] / B for B in big)       # s per pair, 2 threads
        eff = min(1.0, statistics.median(adult[B]["in1"] / 2 / adult[B]["dask"] for B in big))
        t_proj = compare({"p": C.projection_contenders(d, "5pct_negative", impls=("logt",))["logt"]},
                         rounds=5, target=0.02)["p"]
        parts.append(model_section(c1, c2, eff, lat, t_proj, d, p.M, p.B1, DEFAULT_LOCAL_BELOW))
        for o in (dk, sh, dt, dke):
            o.close()
    conditions.append(f"end: {_load()}")

    # 4. import cost (no cluster)
    log("dask: import cost (fresh processes, alternated)")
    wo, wi = import_cost(2 if quick else 6, log)
    parts.append(f"#### The extra installed but unused\n\n`mean_grad` (toy, B = 1e5) in fresh processes, "
                 f"alternated: without `import logt.distributed` {fmt_time(wo)}, with it {fmt_time(wi)} "
                 f"(ratio {wi / wo:.3f}; target within 3%: {'met' if wi / wo <= 1.03 else 'MISSED'}). "
                 "`import logt` does not import dask (tested).")
    head = ("### Scaling out on Dask (2-worker LocalCluster on 127.0.0.1)\n\n"
            f"* Conditions: {os.cpu_count()} logical CPUs shared with other jobs; " + "; ".join(conditions)
            + f"\n* dask/distributed {distributed.__version__}; each worker 1 thread, "
            "in-process contenders interleaved with the Dask calls (rotating order, median per call)."
            f"\n* Section time: {time.perf_counter() - t_start:.0f} s.")
    return head + "\n\n" + "\n\n".join(parts)


def model_section(c1, c2, eff, lat, t_proj, d, M, B1, local_below):
    """Time of logT at ``T = 1e9`` on 32 machines from the measured per-pair cost ``c1`` (s, one
    core; ``c2``: the 2-thread kernel per pair), parallel efficiency ``eff``, per-round
    overhead ``lat`` (s) and projection time ``t_proj`` (s), vs one machine and vs SGD."""
    m = MODEL
    P, T, cores = m["machines"], m["T"], m["cores_per_machine"]
    k = int(math.floor(math.log2(T / (2 * M * B1) + 1)))
    n_calls = 2 * M * B1 * (2**k - 1)
    g_bytes = d * d * 8
    round_bytes = 2 * P * g_bytes                 # w broadcast to P workers + P means back
    t_net = round_bytes / m["bandwidth"]
    dist_epochs = [e for e in range(1, k + 1) if B1 * 2**(e - 1) >= local_below]
    rounds = 2 * M * len(dist_epochs)
    pairs_dist = sum(2 * M * B1 * 2**(e - 1) for e in dist_epochs)
    t_compute = pairs_dist * c1 / (P * cores * eff)
    t_rounds = rounds * (lat + m["net_latency"] + t_net)
    t_local = (n_calls - pairs_dist) * c2
    t_projections = 2 * M * k * t_proj
    total = t_compute + t_rounds + t_local + t_projections
    t_one = n_calls * c2 + t_projections
    sgd_rounds = T * (lat + m["net_latency"])
    rows = [
        ["epochs k / oracle calls used", f"{k} / {n_calls:,}"],
        ["projections 2 M k (on the driver)", f"{2 * M * k} ({t_projections:.2f} s)"],
        [f"synchronization rounds (epochs with B >= {local_below})", f"{rounds}"],
        ["bytes per round at the driver/scheduler (w to 32 workers, 32 means back)", _kb(round_bytes)],
        ["compute on the cluster", f"{t_compute:.1f} s"],
        ["rounds: overhead + latency + transfer", f"{t_rounds:.1f} s"],
        ["small batches in-process", f"{t_local:.2f} s"],
        ["**logT, 32 machines (model)**", f"**{total:.1f} s**"],
        ["logT, one machine (2 threads, measured rate)", f"{t_one:.0f} s"],
        ["SGD at the same T: 1e9 rounds x per-round overhead", f"{sgd_rounds / 86400:.0f} days"],
    ]
    return ("#### Model: 32 machines at T = 1e9 (Adult pair oracle)\n\n"
            + _table(["quantity", "value"], rows)
            + f"\n\nAssumptions: {P} machines x {cores} cores, one worker per machine whose kernel "
            f"uses its cores (one chunk per machine per call); per-pair cost {c1 * 1e9:.0f} ns on one "
            f"core and {c2 * 1e9:.0f} ns with 2 threads (in-process, medians over B >= 1e6 above); "
            f"parallel efficiency {eff:.0%} (2 workers vs twice the 1-thread rate, same medians); "
            f"per-round overhead {lat * 1e3:.1f} ms (measured: a B = 2 Dask call on loopback, "
            f"scheduler included) + {m['net_latency'] * 1e3:.1f} ms network latency; "
            f"{m['bandwidth'] * 8 / 1e9:.0f} Gbit/s at the driver/scheduler; logT's practical "
            f"parameters (M = {M}, B1 = {B1}); a projection {t_proj * 1e3:.2f} ms (measured, "
            "d = 123, 5% negative eigenvalues). SGD's step is one gradient: each step would be a round.")
