"""EuclideanBall, Box and CallableDomain against NumPy formulas."""
import numpy as np
import pytest

from logt._kernels._base import CompiledDomain
from logt.domains import Box, CallableDomain, Domain, EuclideanBall


def ball_ref(v, c, r):
    diff = v - c
    m = np.abs(diff).max()
    n = m * np.linalg.norm(diff / m) if m > 0 else 0.0   # scaled: no overflow at 1e200
    return v.copy() if n <= r else c + diff * (r / n)


@pytest.mark.parametrize("shape", [(1,), (7,), (3, 4)])
def test_ball_matches_formula(shape):
    rng = np.random.default_rng(0)
    c = rng.standard_normal(shape)
    for center in (None, c):
        B = EuclideanBall(shape, radius=1.5, center=center)
        cc = np.zeros(shape) if center is None else c
        assert isinstance(B, CompiledDomain) and isinstance(B, Domain)
        assert B.shape == shape and np.array_equal(B.center, cc)
        for scale in (0.1, 1.0, 10.0, 1e200, 1e-200):
            v = cc + scale * rng.standard_normal(shape)
            r = B.project(v)
            np.testing.assert_allclose(r, ball_ref(v, cc, 1.5), rtol=1e-13, atol=1e-13)
            assert np.linalg.norm(r - cc) <= 1.5 * (1 + 1e-14)


def test_ball_details():
    B = EuclideanBall(3)                     # int shape, unit radius, origin
    v = np.array([3.0, 4.0, 0.0])
    np.testing.assert_allclose(B.project(v), [0.6, 0.8, 0.0], rtol=1e-15)
    assert np.array_equal(B.project(np.zeros(3)), np.zeros(3))
    inside = np.array([0.1, 0.2, 0.3])
    assert np.array_equal(B.project(inside), inside)
    w = v.copy()
    assert B.project(w, out=w) is w and np.allclose(w, [0.6, 0.8, 0.0])
    Bc = EuclideanBall((2,), radius=2.0, center=5.0)   # scalar center broadcasts
    np.testing.assert_allclose(Bc.project([5.0, 10.0]), [5.0, 7.0])
    huge = np.array([1e300, 1e300, 0.0])                # norm would overflow naively
    np.testing.assert_allclose(B.project(huge), [2 ** -0.5, 2 ** -0.5, 0.0], rtol=1e-14)


def test_ball_errors():
    with pytest.raises(ValueError):
        EuclideanBall(3, radius=0.0)
    with pytest.raises(ValueError):
        EuclideanBall(3, radius=np.inf)
    with pytest.raises(TypeError):
        EuclideanBall(3, radius="a")
    with pytest.raises(ValueError):
        EuclideanBall(3, center=[1.0, 2.0])
    with pytest.raises(ValueError):
        EuclideanBall(3, center=[1.0, np.nan, 2.0])
    with pytest.raises(ValueError):
        EuclideanBall(0)
    B = EuclideanBall(3)
    with pytest.raises(ValueError, match="shape"):
        B.project(np.zeros(4))
    with pytest.raises(ValueError, match="NaN"):
        B.project([0.0, np.nan, 0.0])
    with pytest.raises(TypeError):
        B.project(np.zeros(3), out=np.zeros(3, dtype=np.float32))


def test_box_matches_clip():
    rng = np.random.default_rng(1)
    lo = rng.uniform(-2, 0, (3, 4))
    hi = lo + rng.uniform(0, 2, (3, 4))
    hi[0, 0] = lo[0, 0]                      # degenerate interval allowed
    B = Box(lo, hi)
    assert isinstance(B, CompiledDomain) and B.shape == (3, 4)
    for _ in range(5):
        v = 3 * rng.standard_normal((3, 4))
        assert np.array_equal(B.project(v), np.clip(v, lo, hi))
    # scalars broadcast to a shape; infinite bounds
    B2 = Box(-1.0, np.inf, shape=5)
    v = np.array([-3.0, -1.0, 0.0, 2.0, 1e300])
    assert np.array_equal(B2.project(v), np.clip(v, -1.0, np.inf))
    B3 = Box(0.0, [1.0, 2.0, 3.0])
    assert B3.shape == (3,)
    assert np.array_equal(B3.project([5.0, -1.0, 2.5]), [1.0, 0.0, 2.5])
    w = np.array([5.0, -1.0, 2.5])
    assert B3.project(w, out=w) is w and np.array_equal(w, [1.0, 0.0, 2.5])


def test_box_errors():
    with pytest.raises(ValueError, match="lower must be <= upper"):
        Box([0.0, 1.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="shape is required"):
        Box(0.0, 1.0)
    with pytest.raises(ValueError, match="NaN"):
        Box([0.0, np.nan], 1.0)
    with pytest.raises(ValueError):
        Box(np.zeros(3), np.ones(4))
    with pytest.raises(ValueError):
        Box(np.inf, np.inf, shape=2)
    with pytest.raises(ValueError, match="shape"):
        Box(0.0, 1.0, shape=3).project(np.zeros(2))


def test_callable_domain():
    def unit_ball(v):
        n = np.linalg.norm(v)
        return v if n <= 1 else v / n

    D = CallableDomain(unit_ball, 3)
    assert isinstance(D, Domain) and not isinstance(D, CompiledDomain)
    assert D.shape == (3,)
    v = np.array([3.0, 4.0, 0.0])
    r = D.project(v)
    np.testing.assert_allclose(r, [0.6, 0.8, 0.0])
    assert np.array_equal(v, [3.0, 4.0, 0.0])          # caller's array untouched
    out = np.empty(3)
    assert D.project(v, out=out) is out
    np.testing.assert_allclose(out, [0.6, 0.8, 0.0])
    assert D.project(v, out=v) is v
    np.testing.assert_allclose(v, [0.6, 0.8, 0.0])
    # fn that mutates its argument in place is fine
    D2 = CallableDomain(lambda a: np.clip(a, 0, 1, out=a), (2, 2))
    np.testing.assert_allclose(D2.project([[2.0, -1.0], [0.5, 3.0]]), [[1.0, 0.0], [0.5, 1.0]])


def test_callable_domain_errors():
    with pytest.raises(TypeError):
        CallableDomain(3, 2)
    with pytest.raises(ValueError):
        CallableDomain(lambda v: v, 0)
    with pytest.raises(ValueError, match="shape"):
        CallableDomain(lambda v: v[:1], 2).project(np.zeros(2))
    with pytest.raises(ValueError, match="NaN"):
        CallableDomain(lambda v: v * np.nan, 2).project(np.ones(2))
    with pytest.raises(TypeError):
        CallableDomain(lambda v: "x", 2).project(np.ones(2))
    D = CallableDomain(lambda v: v, 2)
    with pytest.raises(ValueError, match="shape"):
        D.project(np.ones(3))
    with pytest.raises(ValueError, match="NaN"):
        D.project([np.inf, 0.0])
    with pytest.raises(TypeError):
        D.project(np.ones(2), out=np.ones(2, dtype=int))
