"""Parameter rules, rounding and the closed-form counts of Algorithm 1."""
import math

import pytest

from logt import params


def brute_epochs(T, M, B1):
    """Simulate Algorithm 1's while-condition epoch by epoch."""
    k, used, B = 0, 0, B1
    while used + 2 * M * B <= T:
        used += 2 * M * B
        B *= 2
        k += 1
    return k, used


@pytest.mark.parametrize("L,lam", [(1, 1), (4.1, 0.1), (10, 2), (1, 0.5)])
def test_theorem1_values_and_rounding(L, lam):
    p = params.theorem1(L, lam)
    eta = 1 / (math.sqrt(6) * L)
    assert p.eta == pytest.approx(eta, rel=1e-15)
    assert p.M_exact == pytest.approx(4 * math.sqrt(6) * L / lam, rel=1e-12)
    assert p.B1_exact == pytest.approx(2 * math.sqrt(6) * lam / L, rel=1e-12)
    # rounding rule: up, and at least 1
    assert p.M == max(1, math.ceil(p.M_exact)) and p.M >= p.M_exact
    assert p.B1 == max(1, math.ceil(p.B1_exact)) and p.B1 >= p.B1_exact
    # the un-rounded rule gives M*B1 = 48 (the paper's constant)
    assert p.M_exact * p.B1_exact == pytest.approx(48.0, rel=1e-12)


def test_toy_parameters():
    p = params.theorem1(1.0, 1.0)
    assert (p.M, p.B1) == (10, 5)  # 9.80 -> 10, 4.90 -> 5


def test_rounding_ignores_float_noise():
    assert params._ceil(48.000000000001) == 48
    assert params._ceil(48.01) == 49


@pytest.mark.parametrize("M,B1", [(10, 5), (402, 1), (1, 1), (3, 7)])
def test_counts_match_closed_form_on_grid(M, B1):
    for T in [1, 2 * M * B1 - 1, 2 * M * B1, 3 * M * B1, 10**3, 12345, 10**5, 10**6, 10**7]:
        k, used = brute_epochs(T, M, B1)
        assert params.n_epochs(T, M, B1) == k
        assert params.n_calls(M, B1, k) == used <= T
        assert params.n_projections(M, k) == 2 * M * k
        if k > 0:  # the next epoch would not fit
            assert params.n_calls(M, B1, k + 1) > T
            # paper: k_dag = floor(log2(T/(2 M B1) + 1))
            assert k == math.floor(math.log2(T / (2 * M * B1) + 1))


def test_theorem1_paper_constant_with_exact_48():
    # with M*B1 = 48 (e.g. M=48, B1=1) the epoch condition is 96*(2^k - 1) <= T
    for T in [96, 200, 10**4, 10**6]:
        assert params.n_epochs(T, 48, 1) == math.floor(math.log2(T / 96 + 1))


def test_theorem2_alpha_fixed_point():
    L, lam, delta = 1.0, 1.0, 0.05
    for T in [10**6, 10**8, 10**10]:
        p = params.theorem2(L, lam, T, delta)
        alpha, k = params.theorem2_alpha(T, delta, p.M, p.eta, lam)
        assert p.alpha == alpha
        # consistency: with this alpha at most k epochs happen, and k is the smallest such
        k_dag = math.floor(math.log2(T / (8 * alpha) + 1))
        assert k_dag <= k
        if k > 1:
            a_prev, _ = alpha, None
            dt = delta / (k - 1)
            N = math.ceil(math.log2(4 * p.M * T / (p.eta * lam)))
            a = math.log(8 * p.M / dt)
            b = math.log(4 * N / dt)
            alpha_prev = max(400 * a * a, 1 + 64 * a * a * (b + 4 / 9 * b * b))
            assert math.floor(math.log2(T / (8 * alpha_prev) + 1)) > k - 1
        assert p.B1 == math.ceil(alpha * p.eta * lam)
    # alpha grows only polylogarithmically in T
    a6 = params.theorem2(L, lam, 10**6, delta).alpha
    a10 = params.theorem2(L, lam, 10**10, delta).alpha
    assert a6 < a10 < 4 * a6


@pytest.mark.parametrize("L,lam,exc,word", [
    (1.0, 0.0, ValueError, "lam"), (1.0, -1.0, ValueError, "lam"), (0.5, 1.0, ValueError, "L must be >= lam"),
    (float("nan"), 1.0, ValueError, "L"), (1.0, float("inf"), ValueError, "lam"), (None, 1.0, ValueError, "L"),
])
def test_bad_L_lam(L, lam, exc, word):
    with pytest.raises(exc, match=word):
        params.theorem1(L, lam)


def test_bad_theorem2_delta():
    with pytest.raises(ValueError, match="delta"):
        params.theorem2(1, 1, 10**6, None)
    with pytest.raises(ValueError, match="delta"):
        params.theorem2(1, 1, 10**6, 1.5)


def test_explicit_params_refuse_fractions():
    assert params.explicit(0.1, 3, 2).M == 3
    with pytest.raises(ValueError, match="M"):
        params.explicit(0.1, 2.5, 2)
    with pytest.raises(ValueError, match="B1"):
        params.explicit(0.1, 2, 0)
    with pytest.raises(ValueError, match="eta"):
        params.explicit(-1, 2, 2)


def test_epoch_gd_schedule():
    lengths = params.epoch_gd_schedule(100, 4)
    assert lengths == [4, 8, 16, 32]
    assert sum(lengths) <= 100 < sum(lengths) + 64
