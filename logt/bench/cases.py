"""The benchmark cases: for each hot path, logt and its references as zero-argument callables.

Shared by the pytest-benchmark files (``bench/``) and the interleaved report
(``python -m logt.bench``), so both time exactly the same code. Each
``*_contenders`` function returns ``{name: fn}`` with logt first; the
references come from :mod:`logt.bench.references`.
"""
import itertools

import numpy as np

from logt.bench import references as ref
from logt.domains import PSDCone
from logt.oracles import PSDQuadratic
from logt.oracles.metric import MetricLearning

PROJECTION_DIMS = (5, 20, 50, 112, 123, 200, 500)
TOY_BS = (10**2, 10**4, 10**6)
METRIC_BS = (64, 1024, 16384)
METRIC_LOOP_MAX_B = 64      # the naive loop only at small B (~1 ms per 64 pairs)
# dense paths of the pair gradient (n = 2000 points, d = 64): B below and above the switch at B = 2n
METRIC_DENSE_N, METRIC_DENSE_D = 2000, 64
METRIC_DENSE_BS = (1024, 8192, 65536)
METRIC_DENSE_IMPLS = ("logt_pairs", "logt_points", "logt_auto", "numpy_dense")
N_INPUTS = 4                # distinct matrices cycled through per projection case


def projection_contenders(d, spectrum, impls=("logt", "numpy_eigh", "scipy_eigh"), mats=None):
    """Callables projecting the next of ``N_INPUTS`` matrices of the given spectrum (cycled).

    logt: one ``PSDCone(d)`` object, warmed up on the inputs (an optimizer projects
    sequences of similar matrices; the adaptive path prediction applies).
    """
    mats = ref.spectrum_matrices(d, spectrum, N_INPUTS) if mats is None else mats
    out = {}
    for impl in impls:
        nxt = itertools.cycle(mats).__next__   # C-level cycling: tiny, equal overhead for all
        if impl == "logt":
            cone, buf = PSDCone(d), np.empty((d, d))
            for A in mats:
                cone.project(A, buf)
            out[impl] = (lambda c, b, f: lambda: c.project(f(), b))(cone, buf, nxt)
        else:
            fn = {"numpy_eigh": ref.numpy_eigh_projection, "scipy_eigh": ref.scipy_eigh_projection}[impl]
            out[impl] = (lambda g, f: lambda: g(f()))(fn, nxt)
    return out


TOY_A = np.zeros((ref.TOY_D, ref.TOY_D))   # the paper's toy
TOY_W = np.eye(ref.TOY_D)
TOY_NOISE = 1.0


def toy_contenders(B, seed=0, impls=("logt", "numpy_chunked", "numpy_raw_bits", "numpy_materialized")):
    """Callables returning the (5, 5) mean of ``B`` toy gradients at ``TOY_W`` (each its own rng)."""
    W, A, s = TOY_W, TOY_A, TOY_NOISE
    out = {}
    for impl in impls:
        rng = np.random.default_rng(seed)
        if impl == "logt":
            o, g = PSDQuadratic(A, s), np.empty_like(W)
            out[impl] = (lambda o, g, r: lambda: o.mean_grad(W, B, r, g))(o, g, rng)
        elif impl == "numpy_chunked":
            buf = np.empty((ref.TOY_D * (ref.TOY_D + 1) // 2, ref.TOY_CHUNK))
            out[impl] = (lambda r, b: lambda: ref.toy_average_chunked(W, A, B, r, s, b))(rng, buf)
        elif impl == "numpy_raw_bits":
            out[impl] = (lambda r: lambda: ref.toy_average_raw_bits(W, A, B, r, s))(rng)
        elif impl == "numpy_materialized":
            out[impl] = (lambda r: lambda: ref.toy_average_materialized(W, A, B, r, s))(rng)
        elif impl == "rng_floor":
            # not a contender: the PCG64 draws alone (m*B/2 raw 64-bit words, the
            # bits logt and numpy_raw_bits consume), a floor for both
            k = (ref.TOY_D * (ref.TOY_D + 1) // 2 * B + 1) // 2
            out[impl] = (lambda bg: lambda: bg.random_raw(k))(rng.bit_generator)
        else:
            raise ValueError(f"unknown toy contender {impl!r}")
    return out


_PROBLEMS = {}


def metric_problem(name, data_dir=None):
    """Cached dict for data set ``name`` ("a9a" / "mushrooms"): ``X`` (CSR), ``Xd``
    (dense), ``y``, ``src`` ("real"/"synthetic"), a fixed symmetric ``W`` and the
    logt oracles ``sparse`` (default threads), ``sparse_1t`` (1 thread), ``dense``."""
    key = (name, str(data_dir))
    if key not in _PROBLEMS:
        X, y, src = ref.metric_data(name, data_dir)
        d = X.shape[1]
        A = np.random.default_rng(5).standard_normal((d, d)) * 0.05
        lam = ref.METRIC_LAM
        _PROBLEMS[key] = dict(
            X=X, Xd=X.toarray(), y=y, src=src, W=(A + A.T) / 2,
            sparse=MetricLearning(X, y, lam, n_eval_pairs=10),
            sparse_1t=MetricLearning(X, y, lam, n_eval_pairs=10, n_threads=1),
            dense=MetricLearning(X.toarray(), y, lam, n_eval_pairs=10))
    return _PROBLEMS[key]


def metric_dense_problem():
    """Cached dict for the dense-path comparison: ``Xd`` (METRIC_DENSE_N x METRIC_DENSE_D
    Gaussian rows scaled into the unit ball, 10 classes, seeded), ``y``, ``W`` and three
    oracles on the same data: ``pairs`` / ``points`` (each path forced) and ``auto``; its contenders
    are :func:`metric_contenders` with ``METRIC_DENSE_IMPLS``."""
    key = ("dense", METRIC_DENSE_N, METRIC_DENSE_D)
    if key not in _PROBLEMS:
        rng = np.random.default_rng(7)
        n, d = METRIC_DENSE_N, METRIC_DENSE_D
        y = rng.integers(0, 10, n)
        X = rng.standard_normal((n, d)) + rng.standard_normal((10, d))[y]
        X /= np.linalg.norm(X, axis=1).max()
        A = rng.standard_normal((d, d)) * 0.05
        p = dict(Xd=X, y=y, W=(A + A.T) / 2, src="synthetic")
        for path in ("pairs", "points", "auto"):
            o = MetricLearning(X, y, ref.METRIC_LAM, n_eval_pairs=10)
            o.point_path = path
            p[path] = o
        _PROBLEMS[key] = p
    return _PROBLEMS[key]


def metric_contenders(p, B, seed=0, impls=("logt_sparse_1t", "logt_sparse", "logt_dense",
                                           "numpy_dense", "numpy_loop")):
    """Callables returning the (d, d) mean gradient of ``B`` random pairs at ``p["W"]``.

    ``logt_<key>`` calls ``p[key].mean_grad`` (an oracle of the problem dict ``p``).

    ``numpy_loop`` is left out when ``B > METRIC_LOOP_MAX_B``.
    """
    W, out = p["W"], {}
    for impl in impls:
        rng = np.random.default_rng(seed)
        if impl.startswith("logt_"):
            o, g = p[impl[5:]], np.empty_like(W)
            out[impl] = (lambda o, g, r: lambda: o.mean_grad(W, B, r, g))(o, g, rng)
        elif impl == "numpy_dense":
            out[impl] = (lambda r: lambda: ref.metric_grad_dense(p["Xd"], p["y"], W, B, r))(rng)
        elif impl == "numpy_loop":
            if B <= METRIC_LOOP_MAX_B:
                out[impl] = (lambda r: lambda: ref.metric_grad_loop(p["Xd"], p["y"], W, B, r))(rng)
        else:
            raise ValueError(f"unknown metric contender {impl!r}")
    return out
