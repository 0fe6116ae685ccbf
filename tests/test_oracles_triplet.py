"""logt.oracles.triplet.TripletMetricLearning against dense NumPy references of its formulas."""
import math

import numpy as np
import pytest

from logt.oracles import TripletMetricLearning
from logt.oracles.triplet import triplet_list

LAM = 0.1


def _data(n=60, d=5, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) + rng.integers(0, classes, n)[:, None] * 0.0
    y = rng.integers(0, classes, n)
    X = X + y[:, None] * 0.7                       # some class structure
    X /= np.linalg.norm(X, axis=1).max()
    return X, y


def _ref_terms(o, W, t):
    """Dense NumPy: per triplet z, and the mean gradient sigmoid(z)/s (D1 D1^T - D2 D2^T) + lam W."""
    ti, tj, tl = (a[t] for a in o.triplets)
    X = o.X
    D1, D2 = X[ti] - X[tj], X[ti] - X[tl]
    z = (np.einsum("bk,kl,bl->b", D1, W, D1) - np.einsum("bk,kl,bl->b", D2, W, D2)) / o.unit + 1.0
    c = np.exp(-np.logaddexp(0.0, -z)) / o.unit / len(t)          # sigmoid(z) / s / B
    return z, (D1.T * c) @ D1 - (D2.T * c) @ D2 + o.lam * W


def _relerr(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


@pytest.mark.parametrize("path", ["blocks", "points", "auto"])
@pytest.mark.parametrize("d", [1, 5, 17])
def test_gradient_matches_dense_formula(path, d):
    X, y = _data(n=70, d=d)
    o = TripletMetricLearning(X, y, LAM)
    o.point_path = path
    rng = np.random.default_rng(d)
    A = rng.standard_normal((d, d))
    for W in (A @ A.T, A):                         # PSD, and not even symmetric
        for B in (1, 3, 129, 500):                 # below, at and above one block; above n
            t = rng.integers(0, o.n_triplets, B)
            g = o._mean_grad_triplets(W, t)
            assert _relerr(g, _ref_terms(o, 0.5 * (W + W.T), t)[1] - o.lam * 0.5 * (W + W.T) + o.lam * W) < 1e-12


def test_value_is_the_exact_objective_when_the_list_is_short():
    X, y = _data()
    o = TripletMetricLearning(X, y, LAM, n_eval_triplets=10**6)
    assert o.n_eval_triplets == o.n_triplets
    W = np.diag(np.linspace(0.0, 3.0, X.shape[1]))
    z, _ = _ref_terms(o, W, np.arange(o.n_triplets))
    ref = np.logaddexp(0.0, z).mean() + 0.5 * LAM * np.sum(W * W)
    assert o.value(W) == pytest.approx(ref, rel=1e-12)
    assert o.value(np.zeros_like(W)) == pytest.approx(math.log1p(math.e), rel=1e-12)   # z = 1 at W = 0


def test_value_on_a_fixed_sample_when_the_list_is_long():
    X, y = _data(n=120)
    o = TripletMetricLearning(X, y, LAM, n_eval_triplets=50, eval_rng=3)
    assert o.n_eval_triplets == 50 < o.n_triplets
    W = np.eye(X.shape[1])
    assert o.value(W) == o.value(W)                                   # fixed sample
    o2 = TripletMetricLearning(X, y, LAM, n_eval_triplets=50, eval_rng=3)
    assert o2.value(W) == o.value(W)


def test_paths_use_the_same_draws_and_a_seed_is_bit_identical():
    X, y = _data(n=50)
    o = TripletMetricLearning(X, y, LAM)
    W = np.eye(X.shape[1]) * 2.0
    out = {}
    for path in ("blocks", "points"):
        o.point_path = path
        out[path] = o.mean_grad(W, 300, np.random.default_rng(11))
    assert _relerr(out["blocks"], out["points"]) < 1e-12
    o.point_path = "auto"
    a = o.mean_grad(W, 40, np.random.default_rng(5))
    b = o.mean_grad(W, 40, np.random.default_rng(5))
    c = o.mean_grad(W, 40, np.random.default_rng(6))
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_drawn_gradient_is_unbiased():
    X, y = _data(n=40, d=3)
    o = TripletMetricLearning(X, y, LAM)
    W = np.eye(3)
    full = _ref_terms(o, W, np.arange(o.n_triplets))[1]
    rng = np.random.default_rng(0)
    mean = np.mean([o.mean_grad(W, 200, rng) for _ in range(200)], axis=0)
    spread = np.std([o.mean_grad(W, 200, rng) for _ in range(50)], axis=0).max()
    assert np.abs(mean - full).max() < 6 * spread / math.sqrt(200)


def test_smoothness_bound_holds_on_the_full_gradient():
    X, y = _data(n=50, d=4)
    o = TripletMetricLearning(X, y, LAM)
    t = np.arange(o.n_triplets)
    rng = np.random.default_rng(1)
    for _ in range(20):
        W1, W2 = (rng.standard_normal((4, 4)) * 3 for _ in range(2))
        W1, W2 = W1 + W1.T, W2 + W2.T
        dg = o._mean_grad_triplets(W1, t) - o._mean_grad_triplets(W2, t)
        assert np.linalg.norm(dg) <= o.L * np.linalg.norm(W1 - W2) * (1 + 1e-12)
    assert o.G == pytest.approx(o.grad_bound(o.R))


def test_triplet_list_against_brute_force():
    X, y = _data(n=45)
    k, radius = 3, 1.5
    ti, tj, tl = triplet_list(X, y, k, radius)
    D2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    want = set()
    for i in range(len(X)):
        same = [j for j in np.argsort(D2[i], kind="stable") if y[j] == y[i] and j != i][:k]
        other = [j for j in np.argsort(D2[i], kind="stable") if y[j] != y[i]][:k]
        reach = D2[i, same].max() * radius ** 2
        want |= {(i, j, l) for j in same for l in other if D2[i, l] <= reach}
    assert set(zip(ti.tolist(), tj.tolist(), tl.tolist())) == want
    # without the radius: every (target, impostor) combination
    ti, tj, tl = triplet_list(X, y, k, None)
    assert len(ti) == len(X) * k * k


def test_far_classes_fall_back_to_every_impostor():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(20, 2)) * 0.01, rng.normal(size=(20, 2)) * 0.01 + 10.0])
    X /= np.linalg.norm(X, axis=1).max()
    y = np.repeat([0, 1], 20)
    ti, tj, tl = triplet_list(X, y, 3, 1.5)          # the radius keeps nothing: all kept
    assert len(ti) == 40 * 9
    o = TripletMetricLearning(X, y, LAM)
    assert o.n_triplets == 40 * 9


def test_given_triplets_and_their_checks():
    X, y = _data(n=10, d=2)
    o = TripletMetricLearning(X, y, LAM, triplets=([0, 1], [2, 3], [4, 5]))
    assert o.n_triplets == 2
    z, g = _ref_terms(o, np.eye(2), np.array([0, 1]))
    assert _relerr(o._mean_grad_triplets(np.eye(2), [0, 1]), g) < 1e-12
    for bad, msg in [(([0], [0], [1]), "differ"), (([0], [1], [10]), r"\[0, 10\)"),
                     (([0, 1], [2], [3]), "same nonzero length"), (([0.5], [1], [2]), "integer"),
                     ((np.array([], int),) * 3, "nonzero")]:
        with pytest.raises(ValueError, match=msg):
            TripletMetricLearning(X, y, LAM, triplets=bad)


def test_own_parameters_are_checked():
    """The checks of this oracle's own parameters (the data, labels and lam, and the calls, shared with the
    other core: test_metric_core.py)."""
    X, y = _data(n=20, d=3)
    with pytest.raises(ValueError, match="n_neighbors"):
        TripletMetricLearning(X, y, n_neighbors=0)
    with pytest.raises(ValueError, match="impostor_radius"):
        TripletMetricLearning(X, y, impostor_radius=-1.0)
