"""End to end: wall-clock and final F of logT, SGD, Epoch-GD (``logt.minimize``) and
projected SGD written in NumPy (``np.linalg.eigh`` every step), on the toy and on Adult.

Budgets and logT's Adult parameters are the named constants of
``logt.bench.end_to_end`` (toy: T = 10^6, logT also at 10^7 for equal F; Adult:
T = 2*10^4 for the step-per-call methods, logT at 10^5 with its default params="auto").
Each case runs ONCE (``pedantic(rounds=1, iterations=1)``; the NumPy SGD on the toy
takes ~20 s) and records ``extra_info``: F, T, n_projections, so time-to-equal-
accuracy can be read off the table. With ``--benchmark-disable`` the budgets are
scaled down (toy T = 10^4, Adult T = 200 / 10^4): a smoke run.

Run:  python -m pytest bench/bench_end_to_end.py --benchmark-columns=min
"""
import numpy as np
import pytest

from logt.bench import end_to_end as e2e

IDS = [("toy", c) for c in ("logT", "logT (equal F)", "SGD", "Epoch-GD", "NumPy SGD")] + \
      [("adult", c) for c in ("logT", "SGD", "Epoch-GD", "NumPy SGD")]
PARAMS = [pytest.param(p, c, id=f"{p}-{c}") for p, c in IDS]


@pytest.mark.parametrize("problem, contender", PARAMS)
def test_end_to_end(benchmark, problem, contender):
    case = next(c for c in e2e.cases(quick=benchmark.disabled, problems=(problem,))
                if c["contender"] == contender)
    benchmark.group = f"end to end {case['problem']}"
    benchmark.name = f"{contender} T={case['T']}"
    W, n_proj = benchmark.pedantic(case["run"], rounds=1, iterations=1)
    F = float(case["oracle"].value(W))
    assert np.isfinite(F)
    benchmark.extra_info.update({"F": F, "T": case["T"], "n_projections": n_proj})
