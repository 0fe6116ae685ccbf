"""Principal subspace of wide rows (``subspace.principal_subspace``): the Gram route against the route it replaces.

Where ``subspace.gram_is_cheaper`` says so, dense rows with fewer rows than that costs take the exact top-k
eigenvectors of the centred rows' ``(n, n)`` Gram matrix instead of the randomized range finder (above 1,024
features; ``k + 16`` directions, 4 power iterations) or the ``(d, d)`` covariance's (up to 1,024). Both
contenders are timed on the same data, ``k = 64`` (the default's cap):

* ``300 x 3,000``: a many-classes problem of few rows per class (identities-like);
* ``1,050 x 5,000``: the dense5000 set's training rows;
* ``60 x 1,000``: a tiny wide problem (the default's cross-fitted check takes five of these);

and each case checks that both routes find the same directions (principal angles) and variances.

Run:  python -m pytest bench/bench_principal_subspace.py
"""
import numpy as np
import pytest

from logt.metric_learning import subspace as S

_SHAPES = {"300x3000": (300, 3000), "1050x5000": (1050, 5000), "60x1000": (60, 1000)}
_CASES = {}
K = 40


def _case(name):
    if name not in _CASES:
        n, d = _SHAPES[name]
        g = np.random.default_rng(11)
        scales = np.geomspace(30.0, 3.0, K)               # a decaying spectrum: 40 directions above the noise
        basis = np.linalg.qr(g.standard_normal((d, K)))[0].T
        _CASES[name] = 100.0 + (g.standard_normal((n, K)) * scales) @ basis + 0.1 * g.standard_normal((n, d))
    return _CASES[name]


def _route(name, gram):
    return "Gram" if gram else ("range finder" if _SHAPES[name][1] > S.EXACT_MAX_FEATURES else "covariance")


@pytest.mark.parametrize("gram", [True, False], ids=["gram", "other"])
@pytest.mark.parametrize("name", list(_SHAPES))
def test_principal_subspace(benchmark, monkeypatch, name, gram):
    X = _case(name)
    k = min(S.MAX_AUTO_RANK, X.shape[0] - 1)
    assert S.gram_is_cheaper(*X.shape, min(k + S.OVERSAMPLING, *X.shape), 4)      # the rule picks the Gram route
    monkeypatch.setattr(S, "gram_is_cheaper", lambda *args: gram)
    benchmark.group = f"principal subspace {name}, k={k}"
    benchmark.extra_info["route"] = _route(name, gram)
    mean, V, var, total = benchmark(S.principal_subspace, X, k, np.random.default_rng(0))
    monkeypatch.setattr(S, "gram_is_cheaper", lambda *args: not gram)
    _, V2, var2, _ = S.principal_subspace(X, k, np.random.default_rng(0))
    # the leading K directions stand above the noise: both routes find them (the noise directions beyond K are
    # equally principal to within the range finder's approximation)
    cosines = np.linalg.svd(V[:K] @ V2[:K].T, compute_uv=False)
    assert cosines.min() > 1 - 1e-6
    np.testing.assert_allclose(var[:K], var2[:K], rtol=1e-3)
