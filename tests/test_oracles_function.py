"""FunctionOracle: a user's Python gradient function as an oracle."""
import numpy as np
import pytest

from logt.oracles import FunctionOracle, Oracle


def noisy_quadratic_grad(c):
    def fn(w, rng):
        return w - c + rng.standard_normal(w.shape)
    return fn


def test_mean_matches_numpy_reference():
    c = np.array([1.0, -2.0, 0.5])
    o = FunctionOracle(noisy_quadratic_grad(c), (3,))
    w = np.array([0.3, 0.2, 0.1])
    B = 50
    out = o.mean_grad(w, B, np.random.default_rng(11))
    # reference: the same B draws, in the same order, averaged by NumPy
    rng = np.random.default_rng(11)
    ref = np.mean([w - c + rng.standard_normal(3) for _ in range(B)], axis=0)
    np.testing.assert_allclose(out, ref, rtol=1e-13, atol=1e-15)
    # determinism
    np.testing.assert_array_equal(out, o.mean_grad(w, B, np.random.default_rng(11)))
    assert not np.array_equal(out, o.mean_grad(w, B, np.random.default_rng(12)))


def test_average_statistics_matrix_shape():
    o = FunctionOracle(lambda w, rng: 2 * w + rng.uniform(-1, 1, size=(2, 2)), (2, 2))
    w = np.eye(2)
    rng = np.random.default_rng(0)
    B, N = 8, 3000
    E = np.array([o.mean_grad(w, B, rng) - 2 * w for _ in range(N)])
    var = 1 / (3 * B)
    assert np.all(np.abs(E.mean(0)) < 5 * np.sqrt(var / N))
    assert np.all(np.abs(E.var(0, ddof=1) - var) < 5 * var * np.sqrt(2 / N))


def test_calls_fn_B_times_with_readonly_point_and_same_rng():
    seen = []

    def fn(w, rng):
        seen.append((w.flags.writeable, rng))
        return np.zeros_like(w)

    o = FunctionOracle(fn, 4)
    rng = np.random.default_rng(0)
    w = np.ones(4)
    o.mean_grad(w, 7, rng)
    assert len(seen) == 7
    assert all(not wr and r is rng for wr, r in seen)
    assert w.flags.writeable  # the caller's array is untouched
    assert o.shape == (4,)


def test_out_buffer_and_alias():
    o = FunctionOracle(lambda w, rng: 3 * w, (2, 3))
    w = np.arange(6.0).reshape(2, 3)
    out = np.empty((2, 3))
    assert o.mean_grad(w, 3, np.random.default_rng(0), out=out) is out
    np.testing.assert_allclose(out, 3 * w)
    w2 = w.copy()
    o.mean_grad(w2, 3, np.random.default_rng(0), out=w2)
    np.testing.assert_allclose(w2, 3 * w)
    with pytest.raises(ValueError, match="out"):
        o.mean_grad(w, 1, np.random.default_rng(0), out=np.empty((3, 2)))
    with pytest.raises(TypeError, match="out"):
        o.mean_grad(w, 1, np.random.default_rng(0), out=np.empty((2, 3), dtype=np.float32))


def test_shape_error_is_clear():
    o = FunctionOracle(lambda w, rng: np.zeros(5), (4,))
    with pytest.raises(ValueError, match=r"shape \(5,\).*expected shape \(4,\)"):
        o.mean_grad(np.zeros(4), 2, np.random.default_rng(0))
    o = FunctionOracle(lambda w, rng: None, (4,))
    with pytest.raises(ValueError, match="shape"):
        o.mean_grad(np.zeros(4), 1, np.random.default_rng(0))
    o = FunctionOracle(lambda w, rng: np.ones(4, dtype=complex), (4,))
    with pytest.raises(TypeError, match="complex"):
        o.mean_grad(np.zeros(4), 1, np.random.default_rng(0))


def test_nan_gradient_passes_through():
    o = FunctionOracle(lambda w, rng: np.full(2, np.nan), 2)
    assert np.isnan(o.mean_grad(np.zeros(2), 3, np.random.default_rng(0))).all()


def test_argument_validation():
    o = FunctionOracle(lambda w, rng: w, (2,))
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="B"):
        o.mean_grad(np.zeros(2), 0, rng)
    with pytest.raises(TypeError, match="B"):
        o.mean_grad(np.zeros(2), 1.0, rng)
    with pytest.raises(TypeError, match="rng"):
        o.mean_grad(np.zeros(2), 1, 123)
    with pytest.raises(ValueError, match="shape"):
        o.mean_grad(np.zeros(3), 1, rng)
    with pytest.raises(ValueError, match="NaN"):
        o.mean_grad(np.array([np.nan, 0.0]), 1, rng)
    with pytest.raises(TypeError, match="fn"):
        FunctionOracle(3, (2,))
    with pytest.raises(TypeError, match="value"):
        FunctionOracle(lambda w, rng: w, (2,), value=1.0)
    with pytest.raises(ValueError, match="shape"):
        FunctionOracle(lambda w, rng: w, (2, 0))
    with pytest.raises(ValueError, match="L"):
        FunctionOracle(lambda w, rng: w, (2,), L=0.0)
    with pytest.raises(ValueError, match="lam"):
        FunctionOracle(lambda w, rng: w, (2,), lam=-1.0)
    with pytest.raises(ValueError, match="G"):
        FunctionOracle(lambda w, rng: w, (2,), G=np.inf)


def test_value_and_constants():
    o = FunctionOracle(lambda w, rng: w, (2,), value=lambda w: 0.5 * w @ w,
                       L=1, lam=0.5, G=2.0)
    assert isinstance(o, Oracle)
    assert o.value(np.array([3.0, 4.0])) == 12.5
    assert isinstance(o.value(np.array([3.0, 4.0])), float)
    with pytest.raises(ValueError, match="shape"):
        o.value(np.zeros(3))
    assert (o.L, o.lam, o.G) == (1.0, 0.5, 2.0)
    bare = FunctionOracle(lambda w, rng: w, (2,))
    assert not hasattr(bare, "value")
    assert bare.L is None and bare.lam is None and bare.G is None
