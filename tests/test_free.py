"""Linear minimization oracles and constraint functions of the ball and the box (brute-force references)."""
import itertools

import numpy as np
import pytest

from logt.domains import Box, EuclideanBall, constraint_function, linear_oracle


def test_box_lmo_is_the_best_vertex():
    rng = np.random.default_rng(0)
    lo = np.array([-1.0, 0.5, -3.0, 2.0])
    hi = np.array([1.0, 4.0, -2.0, 2.5])
    box = Box(lo, hi)
    L = linear_oracle(box)
    vertices = np.array(list(itertools.product(*zip(lo, hi))))
    for _ in range(50):
        g = rng.standard_normal(4)
        s = L.lmo(g)
        assert np.all(s >= lo) and np.all(s <= hi)
        assert g @ s == pytest.approx(np.min(vertices @ g), abs=1e-12)
    s = L.lmo(np.zeros(4))                      # g = 0: any point; logt takes clip(0, lo, hi)
    np.testing.assert_array_equal(s, np.clip(0.0, lo, hi))


def test_ball_lmo_closed_form_and_brute_force():
    rng = np.random.default_rng(1)
    c = np.array([[1.0, -2.0], [0.5, 0.0]])
    ball = EuclideanBall((2, 2), 3.0, center=c)
    L = linear_oracle(ball)
    for _ in range(50):
        g = rng.standard_normal((2, 2)) * rng.choice([1e-200, 1.0, 1e200])
        s = L.lmo(g)
        assert np.linalg.norm(s - c) == pytest.approx(3.0)
        u = rng.standard_normal((200, 4))
        u = c.reshape(-1) + 3.0 * u / np.linalg.norm(u, axis=1, keepdims=True)
        assert np.vdot(g, s) <= np.min(u @ g.reshape(-1)) + 1e-12 * np.abs(g).max()
    np.testing.assert_array_equal(L.lmo(np.zeros((2, 2))), c)


def test_constraint_functions_of_ball_and_box():
    rng = np.random.default_rng(2)
    ball = EuclideanBall(3, 2.0, center=[1.0, 0.0, 0.0])
    box = Box([-1.0, -1.0, 0.0], [1.0, 2.0, np.inf])
    for dom in (ball, box):
        c = constraint_function(dom)
        assert c.rho == 1.0
        for _ in range(50):
            x = rng.standard_normal(3) * 3
            v, g = c.value_and_grad(x)
            p = dom.project(x)
            dist = np.linalg.norm(x - p)
            if dom is ball:
                assert v == pytest.approx(np.linalg.norm(x - ball.center) - 2.0)
            else:
                assert v == pytest.approx(dist)
            if v > 0:
                np.testing.assert_allclose(g, (x - p) / dist, atol=1e-12)   # unit normal
            else:
                assert not g.any()


def test_user_domain_lmo_and_constraint_adapters():
    class Simplex:
        shape = (3,)

        def project(self, v, out=None):
            raise NotImplementedError

        def lmo(self, g, out=None):
            s = np.zeros(3)
            s[int(np.argmin(g))] = 1.0
            return s                       # ignores out: the adapter copies

        def constraint(self, x):
            return max(-x.min(), abs(x.sum() - 1.0)), np.ones(3)

    L = linear_oracle(Simplex())
    out = np.empty(3)
    assert L.lmo(np.array([3.0, -1.0, 2.0]), out=out) is out
    np.testing.assert_array_equal(out, [0.0, 1.0, 0.0])
    c = constraint_function(Simplex())
    assert c.rho == 1.0
    assert c.value_and_grad(np.array([0.2, 0.3, 0.5]))[0] == pytest.approx(0.0, abs=1e-15)
