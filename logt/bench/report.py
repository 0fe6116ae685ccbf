"""The speed report (``python -m logt.bench``): every hot path beside the code it must beat.

Kernels are timed INTERLEAVED (:func:`logt.bench.harness.compare`: rounds in a
rotating order, median seconds per call), so each ratio ``reference / logt`` is
measured in one run on the same machine state. All of it runs under one BLAS
thread (``logt.single_threaded_blas``). The end-to-end runs are single runs
(seconds to tens of seconds each), timed back to back.

Each table row carries the issue's target, when it has one, with met / MISSED.
"""
import io
import time

import numpy as np

from logt._threads import single_threaded_blas
from logt.bench import cases as C
from logt.bench import end_to_end as e2e
from logt.bench.harness import compare, fmt_time, machine_info
from logt.bench.references import SPECTRA

SECTIONS = ("projection", "toy", "metric", "e2e", "learners", "dask", "bank", "family", "family2", "family3",
            "large")
# "learners" fits peer learners (minutes) and "dask" starts a local cluster (~2 min): only with --only
# "bank" runs the default call and the baselines on the grid and the named problems (~25 min; --quick ~1 min),
# "family" on the held-out generated family (~15 min), "family2" and "family3" on others drawn later, "large" on
# problems in 200 to 5,000 dimensions (~5 min): only with --only
DEFAULT_SECTIONS = SECTIONS[:4]

# Targets: (reference column, minimum ratio reference/logt).
PROJECTION_TARGETS = {(5, s): 6.0 for s in SPECTRA}
for _d in (112, 123):
    PROJECTION_TARGETS.update({(_d, "5pct_negative"): 2.5, (_d, "psd"): 4.0, (_d, "half_negative"): 1.0})
TOY_TARGET = {10**6: 2.0}                     # vs best plain NumPy (chunked uniform sums)
METRIC_TARGET = {("a9a", 16384): 3.0}         # numpy dense / logt (1 thread)
E2E_TARGET = {"toy": ("logT (equal F)", 100.0), "adult": ("logT", 50.0)}


def _ratio(ref, logt):
    return ref / logt if ref and logt else float("nan")


def _verdict(ratio, goal, extra_ok=True):
    if goal is None:
        return "-"
    ok = ratio >= goal and extra_ok
    return f">= {goal:g}x: {'met' if ok else 'MISSED'}"


def _table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def _x(r):
    return f"{r:.2f}x" if np.isfinite(r) else "-"


def projection_section(quick, log):
    dims = (5, 123) if quick else C.PROJECTION_DIMS
    rows = []
    for d in dims:
        for s in SPECTRA:
            log(f"projection d={d} {s}")
            t = compare(C.projection_contenders(d, s), rounds=5 if quick else 15,
                        target=0.005 if quick else 0.02)
            rn, rs = _ratio(t["numpy_eigh"], t["logt"]), _ratio(t["scipy_eigh"], t["logt"])
            rows.append([f"d={d} {s}", fmt_time(t["logt"]), fmt_time(t["numpy_eigh"]),
                         fmt_time(t["scipy_eigh"]), _x(rn), _x(rs),
                         _verdict(rn, PROJECTION_TARGETS.get((d, s)))])
    head = ["case", "logt", "numpy eigh", "scipy eigh", "numpy/logt", "scipy/logt", "target (vs numpy)"]
    return "### PSD projection (median per call)\n\n" + _table(head, rows)


def toy_section(quick, log):
    rows = []
    for B in C.TOY_BS:
        log(f"toy average B={B}")
        impls = ("logt", "numpy_chunked", "numpy_raw_bits", "rng_floor")
        if not (quick and B >= 10**6):     # the naive (B, 5, 5) array: ~0.5 s per call at 10^6
            impls += ("numpy_materialized",)
        t = compare(C.toy_contenders(B, impls=impls), rounds=5 if quick or B >= 10**6 else 15,
                    target=0.005 if quick else 0.02)
        rc, rr = _ratio(t["numpy_chunked"], t["logt"]), _ratio(t["numpy_raw_bits"], t["logt"])
        rm = _ratio(t.get("numpy_materialized"), t["logt"])
        rows.append([f"B={B:.0e}", fmt_time(t["logt"]), fmt_time(t["numpy_chunked"]),
                     fmt_time(t["numpy_raw_bits"]),
                     fmt_time(t["numpy_materialized"]) if "numpy_materialized" in t else "-",
                     fmt_time(t["rng_floor"]), _x(rc), _x(rr), _x(rm), _verdict(rc, TOY_TARGET.get(B))])
    head = ["case", "logt", "numpy chunked", "numpy raw bits", "numpy materialized", "PCG64 draws alone",
            "chunked/logt", "raw bits/logt", "materialized/logt", "target (vs chunked)"]
    note = ("numpy chunked is the best plain-NumPy code (uniform doubles); numpy raw bits is logt's own "
            "integer-sum algorithm written in NumPy. \"PCG64 draws alone\" is `random_raw` of the "
            "m*B/2 64-bit words both consume, stored to an array as NumPy must (logt draws the "
            "same words through `bitgen_t` without storing them).")
    return ("### Toy oracle: mean of B gradients, d=5 (median per call)\n\n" + _table(head, rows)
            + "\n\n" + note)


def metric_section(quick, log, data_dir=None):
    Bs = (64, 16384) if quick else C.METRIC_BS
    names = ("a9a",) if quick else ("a9a", "mushrooms")
    rows = []
    for name in names:
        p = C.metric_problem(name, data_dir)
        for B in Bs:
            log(f"metric gradient {name} B={B}")
            t = compare(C.metric_contenders(p, B), rounds=5 if quick else 15,
                        target=0.005 if quick else 0.02)
            r1 = _ratio(t["numpy_dense"], t["logt_sparse_1t"])
            r2 = _ratio(t["numpy_dense"], t["logt_sparse"])
            rl = _ratio(t.get("numpy_loop"), t["logt_sparse_1t"])
            rows.append([f"{name} ({p['src']}) B={B}", fmt_time(t["logt_sparse_1t"]),
                         fmt_time(t["logt_sparse"]), fmt_time(t["logt_dense"]),
                         fmt_time(t["numpy_dense"]),
                         fmt_time(t["numpy_loop"]) if "numpy_loop" in t else "-",
                         _x(r1), _x(r2), _x(rl), _verdict(r1, METRIC_TARGET.get((name, B)))])
    head = ["case", "logt sparse 1 thr", f"logt sparse {p['sparse'].n_threads} thr", "logt dense",
            "numpy dense", "numpy loop", "dense/logt(1t)", f"dense/logt({p['sparse'].n_threads}t)",
            "loop/logt(1t)", "target (dense vs logt 1t)"]
    dense_rows = []
    pd = C.metric_dense_problem()
    for B in ((8192,) if quick else C.METRIC_DENSE_BS):
        log(f"metric gradient dense B={B}")
        t = compare(C.metric_contenders(pd, B, impls=C.METRIC_DENSE_IMPLS), rounds=5 if quick else 15,
                    target=0.005 if quick else 0.02)
        dense_rows.append([f"dense {C.METRIC_DENSE_N}x{C.METRIC_DENSE_D} B={B}", fmt_time(t["logt_pairs"]),
                           fmt_time(t["logt_points"]), fmt_time(t["logt_auto"]), fmt_time(t["numpy_dense"]),
                           _x(_ratio(t["logt_pairs"], t["logt_points"])),
                           _x(_ratio(t["numpy_dense"], t["logt_auto"]))])
    dhead = ["case", "logt pairs path", "logt points path", "logt auto", "numpy dense",
             "pairs/points", "numpy/logt auto"]
    return ("### Metric-learning mini-batch gradient, lam=0.1 (median per call)\n\n" + _table(head, rows)
            + "\n\nDense data, the two paths (synthetic, uniform pairs; auto takes points when B >= 2n):\n\n"
            + _table(dhead, dense_rows))


def e2e_section(quick, log, data_dir=None):
    rows = []
    results = {}
    for case in e2e.cases(quick=quick, data_dir=data_dir):
        log(f"end to end {case['problem']} {case['contender']} T={case['T']}")
        try:
            results[(case["problem"], case["contender"])] = (case, e2e.timed(case))
        except Exception as exc:      # a failing contender is reported, not hidden
            results[(case["problem"], case["contender"])] = (case, {"error": f"{type(exc).__name__}: {exc}"})
    for (problem, contender), (case, r) in results.items():
        ref = results.get((problem, "NumPy SGD"), (None, {}))[1]
        if "error" in r:
            rows.append([problem, contender, f"{case['T']:.0e}", "-", "failed", r["error"][:90], "-", "-"])
            continue
        ratio = _ratio(ref.get("seconds"), r["seconds"])
        key = problem.split()[0]
        goal = None
        if E2E_TARGET[key][0] == contender and not quick:   # quick budgets: no verdict
            goal = E2E_TARGET[key][1]
        no_worse = "F" in ref and r["F"] <= ref["F"]
        verdict = _verdict(ratio, goal, no_worse)
        if goal is not None:
            verdict += " (F " + ("<=" if no_worse else ">") + " NumPy SGD's)"
        rows.append([problem, contender, f"{case['T']:.0e}", r["n_projections"], fmt_time(r["seconds"]),
                     f"{r['F']:.6g}", _x(ratio), verdict])
    head = ["problem", "contender", "T", "projections", "wall-clock", "final F",
            "NumPy SGD time / this", "target"]
    note = ("logT: its default rule, params=\"auto\" (no parameter tuned on these problems). "
            f"Single runs, seed {e2e.SEED}.")
    return "### End to end (one run each)\n\n" + _table(head, rows) + "\n\n" + note


def header(info_before, quick):
    blas = "; ".join(info_before["blas"]) or "none found"
    return "\n".join([
        "## logt speed report" + (" (quick)" if quick else ""),
        "",
        f"* CPU: {info_before['cpu']} ({info_before['cpus']} logical CPUs)",
        f"* Python {info_before['python']}, numpy {info_before['numpy']}, scipy {info_before['scipy']}",
        f"* BLAS libraries (default threads): {blas}",
        "* Thread setting: every measurement under 1 BLAS thread (threadpoolctl, "
        "`logt.single_threaded_blas`); logt's sparse metric kernel also shown with its own "
        "default pthreads (min(2, cores)).",
        "* Kernels: interleaved rounds, rotating order, median per call; ratio = reference / logt "
        "from the same run (> 1: logt faster).",
    ])


def run(only=None, quick=False, data_dir=None, log=None):
    """Run the chosen sections; returns the markdown report (str)."""
    sections = DEFAULT_SECTIONS if not only else tuple(only)
    for s in sections:
        if s not in SECTIONS:
            raise ValueError(f"unknown section {s!r}; choose from {SECTIONS}")
    log = log or (lambda msg: None)
    info = machine_info()
    parts = [header(info, quick)]
    t0 = time.perf_counter()
    with single_threaded_blas():
        if "projection" in sections:
            parts.append(projection_section(quick, log))
        if "toy" in sections:
            parts.append(toy_section(quick, log))
        if "metric" in sections:
            parts.append(metric_section(quick, log, data_dir))
        if "e2e" in sections:
            parts.append(e2e_section(quick, log, data_dir))
        if "learners" in sections:
            from logt.bench.learners import section as learners_section
            parts.append(learners_section(quick, log, data_dir)[0])
            from logt.bench.learners_highdim import section as highdim_section
            parts.append(highdim_section(quick, log)[0])
        if "dask" in sections:
            from logt.bench.dask_scaling import dask_section   # imports dask only here
            parts.append(dask_section(quick, log, data_dir))
        if "bank" in sections:
            from logt.bench.bank import bank_section
            parts.append(bank_section(quick, log))
        if "family" in sections:
            from logt.bench.grid import family_section
            parts.append(family_section(quick, log))
        if "family2" in sections:
            from logt.bench.grid import FAMILY2_SEED, family_section
            parts.append(family_section(quick, log, seed=FAMILY2_SEED))
        if "family3" in sections:
            from logt.bench.grid import FAMILY3_SEED, family_section
            parts.append(family_section(quick, log, seed=FAMILY3_SEED))
        if "large" in sections:
            from logt.bench.grid import large_section
            parts.append(large_section(quick, log))
    parts.append(f"_Total time of this report: {time.perf_counter() - t0:.0f} s._")
    buf = io.StringIO()
    buf.write("\n\n".join(parts) + "\n")
    return buf.getvalue()
