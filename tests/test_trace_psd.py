"""TraceBoundedPSD: projection vs an eigh + capped-simplex reference, LMO vs brute force, constraint."""
import numpy as np
import pytest

from logt.domains import (Box, CallableDomain, EuclideanBall, PSDCone, TraceBoundedPSD, constraint_function,
                          linear_oracle, lmo)
from logt._kernels._trace_psd import PSDConstraint


def sym(rng, d, scale=1.0):
    a = rng.standard_normal((d, d)) * scale
    return (a + a.T) / 2


def capped_simplex(l, tau):
    """Euclidean projection of the vector l onto {x >= 0, sum x <= tau} (sort-based reference)."""
    p = np.maximum(l, 0.0)
    if p.sum() <= tau:
        return p
    u = np.sort(l)[::-1]
    c = np.cumsum(u)
    j = np.arange(1, len(u) + 1)
    r = np.nonzero(u - (c - tau) / j > 0)[0][-1]
    theta = (c[r] - tau) / (r + 1)
    return np.maximum(l - theta, 0.0)


def reference_projection(A, tau):
    lam, V = np.linalg.eigh((A + A.T) / 2)
    P = (V * capped_simplex(lam, tau)) @ V.T
    return (P + P.T) / 2


@pytest.mark.parametrize("d", [1, 2, 3, 5, 12, 40])
@pytest.mark.parametrize("tau", [0.1, 1.0, 7.5, 1e3])
def test_projection_matches_reference(d, tau):
    rng = np.random.default_rng(d * 1000 + int(tau * 10))
    D = TraceBoundedPSD(d, tau)
    for _ in range(5):
        A = sym(rng, d, scale=rng.choice([0.01, 1.0, 30.0]))
        P = D.project(A)
        R = reference_projection(A, tau)
        np.testing.assert_allclose(P, R, atol=1e-11 * max(1.0, np.abs(A).max()))
        assert np.array_equal(P, P.T)
        assert np.linalg.eigvalsh(P).min() >= -1e-10 * max(1.0, tau)
        assert np.trace(P) <= tau * (1 + 1e-12) + 1e-12


def test_projection_is_the_nearest_point_variational_inequality():
    """<A - P, Y - P> <= 0 for every Y in D (the projection's defining property), on random feasible Y."""
    rng = np.random.default_rng(3)
    d, tau = 6, 2.0
    D = TraceBoundedPSD(d, tau)
    for _ in range(20):
        A = sym(rng, d, 2.0)
        P = D.project(A)
        for _ in range(20):
            B = rng.standard_normal((d, d))
            Y = B @ B.T
            Y *= rng.uniform(0, tau) / np.trace(Y)
            assert np.vdot(A - P, Y - P) <= 1e-10


def test_projection_special_cases_and_scales():
    D = TraceBoundedPSD(4, 1.0)
    assert np.array_equal(D.project(np.zeros((4, 4))), np.zeros((4, 4)))
    assert np.array_equal(D.project(-np.eye(4)), np.zeros((4, 4)))
    inside = np.diag([0.5, 0.25, 0.0, 0.0])
    np.testing.assert_allclose(D.project(inside), inside, atol=1e-15)
    np.testing.assert_allclose(D.project(np.eye(4)), np.eye(4) / 4, atol=1e-15)   # ties spread evenly
    rng = np.random.default_rng(0)
    A = sym(rng, 4)
    for s in (1e-150, 1e150):
        Ds = TraceBoundedPSD(4, s)
        np.testing.assert_allclose(Ds.project(A * s) / s, D.project(A), atol=1e-12)
    out = A.copy()
    assert D.project(out, out=out) is out
    np.testing.assert_allclose(out, reference_projection(A, 1.0), atol=1e-12)


def test_projection_validates_input():
    D = TraceBoundedPSD(3, 1.0)
    with pytest.raises(ValueError, match="symmetric"):
        D.project(np.arange(9.0).reshape(3, 3))
    with pytest.raises(ValueError, match="NaN"):
        D.project(np.full((3, 3), np.nan))
    with pytest.raises(ValueError, match="shape"):
        D.project(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="tau"):
        TraceBoundedPSD(3, 0.0)
    with pytest.raises(ValueError, match="tau"):
        TraceBoundedPSD(3, float("inf"))
    with pytest.raises(TypeError, match="d must be an int"):
        TraceBoundedPSD(2.5, 1.0)
    with pytest.raises(ValueError, match="d must be"):
        TraceBoundedPSD(0, 1.0)


@pytest.mark.parametrize("d", [1, 2, 5, 30])
def test_lmo_matches_eigh_and_beats_every_feasible_point(d):
    rng = np.random.default_rng(d)
    tau = 3.0
    D = TraceBoundedPSD(d, tau)
    for _ in range(10):
        G = sym(rng, d)
        S = D.lmo(G)
        lam, V = np.linalg.eigh(G)
        assert np.vdot(G, S) == pytest.approx(tau * min(lam[0], 0.0), abs=1e-12)
        # S is in D and is tau v v^T (or 0)
        assert np.trace(S) <= tau + 1e-12 and np.linalg.eigvalsh(S).min() >= -1e-12
        if lam[0] < 0:
            np.testing.assert_allclose(S, tau * np.outer(V[:, 0], V[:, 0]), atol=1e-10)
        # brute force: no random extreme point (tau u u^T, ||u|| = 1, or 0) nor PSD point does better
        for _ in range(200):
            u = rng.standard_normal(d)
            u /= np.linalg.norm(u)
            assert np.vdot(G, S) <= tau * float(u @ G @ u) + 1e-12
        assert np.vdot(G, S) <= 1e-15
    assert np.array_equal(D.lmo(np.eye(d)), np.zeros((d, d)))           # PSD gradient: the minimum is at 0
    assert np.array_equal(D.lmo(np.zeros((d, d))), np.zeros((d, d)))
    # all eigenvalues tied (dsyevr then returns the whole cluster: a regression test for a buffer overrun)
    S = D.lmo(-np.eye(d))
    assert np.vdot(-np.eye(d), S) == pytest.approx(-tau) and np.trace(S) == pytest.approx(tau)
    assert np.linalg.matrix_rank(S, tol=1e-9) == 1


def test_lmo_validates_input():
    D = TraceBoundedPSD(3, 1.0)
    with pytest.raises(ValueError, match="symmetric"):
        D.lmo(np.arange(9.0).reshape(3, 3))
    with pytest.raises(ValueError, match="NaN"):
        D.lmo(np.full((3, 3), np.inf))


@pytest.mark.parametrize("tau", [None, 2.0])
def test_psd_constraint_value_and_subgradient(tau):
    rng = np.random.default_rng(11)
    d = 5
    c = PSDConstraint(d, tau)
    for _ in range(20):
        X = sym(rng, d)
        v, g = c.value_and_grad(X)
        lam = np.linalg.eigvalsh(X)
        expect = -lam[0] if tau is None else max(-lam[0], (np.trace(X) - tau) / np.sqrt(d))
        assert v == pytest.approx(expect, abs=1e-12)
        if v > 0:
            # subgradient inequality c(Y) >= c(X) + <g, Y - X> for random Y
            for _ in range(20):
                Y = sym(rng, d)
                lamY = np.linalg.eigvalsh(Y)
                cY = -lamY[0] if tau is None else max(-lamY[0], (np.trace(Y) - tau) / np.sqrt(d))
                assert cY >= v + np.vdot(g, Y - X) - 1e-10
        else:
            assert not g.any()
    assert c.rho == (1.0 if tau is None else pytest.approx(np.sqrt((1 - 1 / np.sqrt(d)) / 2)))
    for n in (5, 40):                       # tied smallest eigenvalues
        v, g = PSDConstraint(n, tau).value_and_grad(-2.0 * np.eye(n))
        assert v == pytest.approx(2.0 if tau is None else max(2.0, (-2.0 * n - tau) / np.sqrt(n)))
        assert np.vdot(g, g) == pytest.approx(1.0)


def test_dispatch_of_linear_oracles_and_constraints():
    assert isinstance(constraint_function(PSDCone(3)), PSDConstraint)
    assert constraint_function(TraceBoundedPSD(3, 2.0)).tau == 2.0
    with pytest.raises(TypeError, match="unbounded"):
        linear_oracle(PSDCone(3))
    with pytest.raises(TypeError, match="no linear minimization oracle"):
        linear_oracle(CallableDomain(lambda v: v, (3,)))
    with pytest.raises(TypeError, match="no constraint function"):
        constraint_function(CallableDomain(lambda v: v, (3,)))
    with pytest.raises(ValueError, match="compact"):
        linear_oracle(Box(0.0, np.inf, shape=(3,)))
    np.testing.assert_allclose(lmo(EuclideanBall(2, 2.0), np.array([3.0, 4.0])), [-1.2, -1.6])
