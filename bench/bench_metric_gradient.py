"""Mini-batch gradient of regularized metric learning (paper Sec. 5, Fig. 2): logt vs NumPy.

The quantity: ``D_B^T diag(c) D_B / B + lam W`` over B random ordered pairs,
``D = x_i - x_j``, ``c = y_ij sigmoid(-y_ij (1 - D^T W D))``, lam = 0.1.

Data: the real a9a (32561 x 123, ~14 nnz/row) and mushrooms (8124 x 112, 21
nnz/row) when found (``LOGT_DATA_DIR`` or ``../shared/data`` next to the repo),
else synthetic binary data of the same shape and nnz, rows scaled to norm 1.

Contenders, one benchmark group per (data set, B):

* ``logt_sparse``  - ``MetricLearning(X_csr).mean_grad``: draws all pairs from the
                     ``bitgen_t``, then a nogil CSR kernel on D's nonzero block
                     (one triangle, pthreads over fixed chunks, n_threads=min(2, cores)).
* ``logt_sparse_1t``- the same with n_threads=1.
* ``logt_dense``   - ``MetricLearning(X_dense).mean_grad``: gather + dgemm + 2 dsyrk.
* ``numpy_dense``  - the NumPy formulation: gather dense rows, ``q = ((D W) * D).sum(1)``,
                     ``(D.T * c) @ D / B + lam W`` (pairs drawn with ``rng.integers``).
* ``numpy_loop``   - a naive per-pair Python loop (B = 64 only).

Run:  python -m pytest bench/bench_metric_gradient.py        (pytest-benchmark tables)
      python -m pytest bench/bench_metric_gradient.py --benchmark-disable   (smoke)
      python bench/bench_metric_gradient.py                  (us/pair and ratios vs numpy_dense)
"""
import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from logt._threads import single_threaded_blas
from logt.datasets import load_adult, load_mushrooms, normalize_rows
from logt.oracles.metric import MetricLearning

LAM = 0.1
BS = [64, 1024, 16384]
REPO = Path(__file__).resolve().parents[1]


def _data_dir():
    for c in (os.environ.get("LOGT_DATA_DIR"), REPO.parent / "shared" / "data"):
        if c and Path(c).is_dir():
            return Path(c)
    return None


def _synthetic(n, d, nnz, seed):
    rng = np.random.default_rng(seed)
    cols = np.argsort(rng.random((n, d)), axis=1)[:, :nnz]
    cols.sort(axis=1)
    X = sp.csr_matrix((np.ones(n * nnz), cols.ravel(), np.arange(0, n * nnz + 1, nnz)), shape=(n, d))
    return normalize_rows(X), rng.integers(0, 2, size=n)


def load(name):
    """(X_csr, y, source) for 'a9a' or 'mushrooms'."""
    d = _data_dir()
    if name == "a9a":
        if d is not None and (d / "a9a.gz").is_file() and (d / "a9a.t.gz").is_file():
            X, y, _, _ = load_adult(d)
            return X, y, "real"
        return (*_synthetic(32561, 123, 14, 0), "synthetic")
    if d is not None and (d / "mushrooms.gz").is_file():
        return (*load_mushrooms(d), "real")
    return (*_synthetic(8124, 112, 21, 1), "synthetic")


def numpy_dense(Xd, y, W, B, rng, lam=LAM):
    n = Xd.shape[0]
    i = rng.integers(0, n, size=B)
    j = rng.integers(0, n - 1, size=B)
    j += j >= i
    D = Xd[i] - Xd[j]
    yy = np.where(y[i] == y[j], 1.0, -1.0)
    z = yy * (1.0 - ((D @ W) * D).sum(axis=1))
    c = yy / (1.0 + np.exp(z))
    return (D.T * c) @ D / B + lam * W


def numpy_loop(Xd, y, W, B, rng, lam=LAM):
    n = Xd.shape[0]
    G = np.zeros_like(W)
    for _ in range(B):
        i = int(rng.integers(n))
        j = int(rng.integers(n - 1))
        j += j >= i
        D = Xd[i] - Xd[j]
        yy = 1.0 if y[i] == y[j] else -1.0
        c = yy / (1.0 + np.exp(yy * (1.0 - D @ W @ D)))
        G += c * np.outer(D, D)
    return G / B + lam * W


def _W(d):
    A = np.random.default_rng(5).standard_normal((d, d)) * 0.05
    return (A + A.T) / 2


_CACHE = {}


def problem(name):
    if name not in _CACHE:
        X, y, src = load(name)
        Xd = X.toarray()
        _CACHE[name] = dict(
            X=X, Xd=Xd, y=y, src=src, W=_W(X.shape[1]),
            sparse=MetricLearning(X, y, LAM, n_eval_pairs=10),
            sparse_1t=MetricLearning(X, y, LAM, n_eval_pairs=10, n_threads=1),
            dense=MetricLearning(Xd, y, LAM, n_eval_pairs=10))
    return _CACHE[name]


def _check(g, W):
    assert g.shape == W.shape and np.isfinite(g).all()
    np.testing.assert_allclose(g, g.T, rtol=0, atol=1e-14)


@pytest.fixture(scope="module", autouse=True)
def _one_blas_thread():
    with single_threaded_blas():
        yield


DATA = ["a9a", "mushrooms"]


@pytest.mark.parametrize("B", BS)
@pytest.mark.parametrize("name", DATA)
@pytest.mark.parametrize("impl", ["sparse", "sparse_1t", "dense"])
def test_logt(benchmark, name, B, impl):
    p = problem(name)
    benchmark.group = f"metric gradient {name} ({p['src']}) B={B}"
    benchmark.name = f"logt_{impl}"
    out = np.empty_like(p["W"])
    g = benchmark(p[impl].mean_grad, p["W"], B, np.random.default_rng(0), out)
    _check(g, p["W"])


@pytest.mark.parametrize("B", BS)
@pytest.mark.parametrize("name", DATA)
def test_numpy_dense(benchmark, name, B):
    p = problem(name)
    benchmark.group = f"metric gradient {name} ({p['src']}) B={B}"
    g = benchmark(numpy_dense, p["Xd"], p["y"], p["W"], B, np.random.default_rng(0))
    _check(g, p["W"])


@pytest.mark.parametrize("name", DATA)
def test_numpy_loop(benchmark, name):
    p = problem(name)
    benchmark.group = f"metric gradient {name} ({p['src']}) B=64"
    g = benchmark.pedantic(numpy_loop, args=(p["Xd"], p["y"], p["W"], 64, np.random.default_rng(0)),
                           rounds=10, warmup_rounds=1)
    assert g.shape == p["W"].shape


def _us_per_pair(f, B, min_time=0.3):
    f()
    reps, best = 1, np.inf
    t_end = time.perf_counter() + min_time
    while True:
        t = time.perf_counter()
        for _ in range(reps):
            f()
        best = min(best, (time.perf_counter() - t) / reps)
        if time.perf_counter() > t_end:
            return best / B * 1e6
        reps = min(reps * 2, 64)


def main():
    """Print best-of us/pair per contender and the ratio numpy_dense / logt_sparse at each B."""
    with single_threaded_blas():
        for name in DATA:
            p = problem(name)
            W, out = p["W"], np.empty_like(p["W"])
            print(f"\n{name} ({p['src']}) n={p['X'].shape[0]} d={p['X'].shape[1]}  [us/pair, best of runs]")
            print(f"{'B':>6} {'sparse':>8} {'sparse1t':>8} {'dense':>8} {'numpy':>8} {'loop':>8}  numpy/sparse")
            for B in BS:
                r = np.random.default_rng(0)
                t = {k: _us_per_pair(lambda k=k: p[k].mean_grad(W, B, r, out), B)
                     for k in ("sparse", "sparse_1t", "dense")}
                t["numpy"] = _us_per_pair(lambda: numpy_dense(p["Xd"], p["y"], W, B, r), B)
                t["loop"] = _us_per_pair(lambda: numpy_loop(p["Xd"], p["y"], W, B, r), B) \
                    if B <= 64 else float("nan")
                print(f"{B:>6} {t['sparse']:8.3f} {t['sparse_1t']:8.3f} {t['dense']:8.3f} "
                      f"{t['numpy']:8.3f} {t['loop']:8.2f}  {t['numpy'] / t['sparse']:6.2f}x")


if __name__ == "__main__":
    sys.exit(main())
