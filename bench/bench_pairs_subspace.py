"""The pairs learner's principal subspace from the pairs' distinct points, against the stacked rows it replaces.

``PairsMetricLearner`` on wide input finds its principal directions from the points of its pairs. Pairs drawn
from a pool of labelled points repeat each point in several pairs; the subspace now comes from the distinct
points, each weighted by how often it occurs (``subspace.principal_subspace``'s ``weights``: the same covariance,
so the same directions to rounding), instead of from the ``2 n_pairs`` rows the pairs stack. Both contenders fit
the same pairs (``n_components=64``; the stacked route is the distinct-point route switched off,
``_base.DISTINCT_MAX_SHARE = 0``; one BLAS thread, one round each) on two shapes,

* ``3000f``: 4,000 pairs among 1,750 points of 3,000 features (the range finder on both routes);
* ``800f``: 4,000 pairs among 1,750 points of 800 features (the exact covariance route on both),

each with ``check=False`` (one fit) and ``check=True`` (the default: eight more fits on the check's folds, each
finding its own subspace). The second route of each case checks that both give the same subspace. With
``--benchmark-disable``: 600 pairs among 300 points (a smoke run).

Run:  python -m pytest bench/bench_pairs_subspace.py --benchmark-columns=min
"""
import warnings

import numpy as np
import pytest

from logt import PairsMetricLearner
from logt.metric_learning import _base, subspace as S

_FEATURES = {"3000f": 3000, "800f": 800}


def _pairs(d, n_points, n_pairs):
    g = np.random.default_rng(7)
    y = g.integers(0, 4, n_points)
    X = g.standard_normal((n_points, d)) * np.exp(g.uniform(-1, 1, d))
    X[:, :5] += 0.8 * y[:, None]
    i, j = g.integers(n_points, size=(2, n_pairs))
    keep = i != j
    return np.stack([X[i[keep]], X[j[keep]]], axis=1), np.where(y[i[keep]] == y[j[keep]], 1, -1)


def _fit(P, y, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PairsMetricLearner(n_components=64, rng=0, check=check).fit(P, y)


_DONE = {}      # (name, check, n_points) -> the subspace_ of the route run first


@pytest.mark.parametrize("route", ["distinct points", "stacked rows"])
@pytest.mark.parametrize("check", [False, True], ids=["check=False", "check=True"])
@pytest.mark.parametrize("name", list(_FEATURES))
def test_pairs_subspace(benchmark, monkeypatch, name, check, route):
    n_points, n_pairs = (300, 600) if benchmark.disabled else (1750, 4000)
    P, y = _pairs(_FEATURES[name], n_points, n_pairs)
    monkeypatch.setattr(S, "gram_is_cheaper", lambda *args: False)     # one route for both (the cost rule's
    # choice depends on the number of rows, which is what the distinct points change)
    if route == "stacked rows":
        monkeypatch.setattr(_base, "DISTINCT_MAX_SHARE", 0.0)
    benchmark.group = f"pairs subspace {name}, {len(y)} pairs of {n_points} points, check={check}"
    est = benchmark.pedantic(_fit, args=(P, y, check), rounds=1, iterations=1)
    benchmark.extra_info["rows the directions come from"] = (
        int(_base.distinct_points(P.reshape(-1, P.shape[2]))[0].size) if route == "distinct points" else 2 * len(y))
    benchmark.extra_info["metric_choice_"] = est.metric_choice_
    key = (name, check, n_points)
    if key in _DONE:                                     # the other route's fit: the same subspace, to rounding
        np.testing.assert_allclose(est.subspace_, _DONE.pop(key), atol=1e-9)
    else:
        _DONE[key] = est.subspace_
