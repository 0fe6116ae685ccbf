"""logt.gradient_noise (the noise measurement at x0) and logt.params.auto_B1 (the auto rule's first batch)."""
import numpy as np
import pytest

import logt
from logt import params as P
from logt.domains import PSDCone
from logt.gradient_noise import BATCHES_PER_ROUND, estimate_gradient_noise
from logt.oracles import PSDQuadratic


class GaussianRun:
    """A stand-in for logt._run.Run: a mean of ``b`` samples is ``mu + N(0, diag(var) / b)`` exactly."""

    def __init__(self, mu, var, seed):
        self.mu, self.var = np.asarray(mu, float), np.asarray(var, float)
        self.shape = self.mu.shape
        self.rng = np.random.default_rng(seed)
        self.n_calls = 0
        self.phases = set()

    def grad(self, x, b, out, phase=None):
        out[...] = self.mu + np.sqrt(self.var / b) * self.rng.standard_normal(self.shape)
        self.n_calls += b
        self.phases.add(phase)
        return out


def test_sigma2_is_unbiased_and_mean_sq_overestimates_by_sigma2_over_N():
    mu = np.array([0.3, -0.2, 0.0, 0.1])
    var = np.array([2.0, 0.5, 1.0, 0.25])          # sigma2 = trace = 3.75
    s2, ms = [], []
    for seed in range(600):
        run = GaussianRun(mu, var, seed)
        det = estimate_gradient_noise(run, np.zeros(4), 3, max_calls=BATCHES_PER_ROUND * 3)   # one round
        assert det["rounds"] == 1 and det["n_samples"] == 24 == run.n_calls
        s2.append(det["sigma2"])
        ms.append(det["mean_sq"])
    s2, ms = np.array(s2), np.array(ms)
    se = s2.std() / np.sqrt(len(s2))
    assert abs(s2.mean() - 3.75) < 4 * se
    expect = float(mu @ mu) + 3.75 / 24
    assert abs(ms.mean() - expect) < 4 * ms.std() / np.sqrt(len(ms))


def test_a_clear_gradient_stops_after_one_round():
    run = GaussianRun(np.full(10, 5.0), np.ones(10), 0)
    det = estimate_gradient_noise(run, np.zeros(10), 2, max_calls=10_000)
    assert det["rounds"] == 1 and det["resolved"] and det["n_samples"] == 2 * BATCHES_PER_ROUND
    assert run.phases == {"the gradient-noise estimate at x0"}


def test_pure_noise_doubles_the_batch_until_the_cap():
    run = GaussianRun(np.zeros(50), np.ones(50), 1)
    det = estimate_gradient_noise(run, np.zeros(50), 2, max_calls=1000)
    r = BATCHES_PER_ROUND
    R = det["rounds"]
    assert det["n_samples"] == r * 2 * (2 ** R - 1) == run.n_calls <= 1000
    assert det["n_samples"] + r * 2 ** (R + 1) > 1000          # the next round would not have fitted
    assert not det["resolved"] and det["n_batches"] == r * R
    assert 0.5 < det["sigma2"] / 50 < 1.5


@pytest.mark.parametrize("sigma2, mean_sq, N, M, expect", [
    (1.0, 10.0, 1000, 3, 1),            # gradient far above the noise: the paper's B1 = 1
    (100.0, 1.0, 1000, 5, 10),          # sigma2 / (2 M mean_sq) = 10, below the cap 100
    (1e6, 1.0, 1000, 5, 100),           # capped: 2 M B1 <= N
    (1.0, 0.0, 1000, 5, 100),           # no signal at all: the cap
    (0.0, 0.0, 1000, 5, 100),
    (np.inf, 1.0, 64, 1, 32),
    (1.0, 1.0, 10, 7, 1),               # cap below 1: still 1
])
def test_auto_B1_closed_form(sigma2, mean_sq, N, M, expect):
    assert P.auto_B1(sigma2, mean_sq, N, M) == expect
    assert P.auto_B1(sigma2, mean_sq, N, M, c=1.4) == expect          # uncapped epochs: c >= 1, the same rule


def test_auto_B1_shrinks_when_the_projection_cap_shortens_the_epochs():
    """c = M eta lam < 1: an epoch removes the fraction r(c) = 1 - ((1 - e^-c)/c)^2 of the bias, so the
    break-even batch is c^2 sigma2 / (3 r(c) M g^2) (k(c) = c^2 r(1) / (2 r(c)), 1/2 at c = 1)."""
    r = lambda c: 1.0 - ((1.0 - np.exp(-c)) / c) ** 2
    for c in (0.05, 0.1, 0.3, 0.7, 0.99):
        k = c * c * r(1.0) / (2.0 * r(c))
        assert P.auto_B1(1e4, 1.0, 10**9, 10, c=c) == int(k * 1e4 / 10)
    ks = [P.auto_B1(1e6, 1.0, 10**12, 10, c=c) for c in np.linspace(0.02, 1.0, 50)]
    assert ks == sorted(ks) and ks[-1] == 50_000
    assert abs(r(1.0) - 0.6004) < 1e-4
    with pytest.raises(ValueError):
        P.auto_B1(1.0, 1.0, 100, 2, c=0.0)


def test_auto_rule_measures_the_noise_and_skips_noise_only_epochs():
    """The 5 x 5 PSD toy with its optimum at x0 = 0: the gradient there is pure noise, so B1 is the cap
    noise_calls // (2 M) and the run makes fewer epochs (projections) than with B1 = 1; a far optimum
    (a clear gradient) keeps B1 = 1."""
    oracle, domain = PSDQuadratic(np.zeros((5, 5))), PSDCone(5)
    res = logt.minimize(oracle, domain, 100_000, rng=2)
    p = res.params
    M = p["epochs"][0][1]
    assert p["B1"] == p["epochs"][0][0] == p["noise_calls"] // (2 * M) > 1
    assert 0 < p["noise_calls"] <= P.AUTO_PILOT_FRAC * 100_000
    assert p["noise_sigma2"] > 0
    planned = P.auto_projections(100_000, M, 1)
    assert res.n_projections < planned
    far = PSDQuadratic(np.diag([50.0, 40.0, 30.0, 20.0, 10.0]))
    res2 = logt.minimize(far, domain, 100_000, rng=2)
    assert res2.params["B1"] == 1 and res2.params["noise_calls"] == 2 * BATCHES_PER_ROUND


def test_tiny_budget_skips_the_measurement():
    oracle, domain = PSDQuadratic(np.zeros((3, 3))), PSDCone(3)
    res = logt.minimize(oracle, domain, 1000, rng=0)       # 1% of T = 10 < one round (16 calls)
    assert res.params["noise_calls"] == 0 and res.params["B1"] == P.AUTO_B1


def _early_stops(dim, seeds, max_calls, **kw):
    """How many of ``seeds`` runs of pure noise (zero gradient, ``dim`` unit-variance coordinates) stop as
    "resolved" before the cap."""
    return sum(estimate_gradient_noise(GaussianRun(np.zeros(dim), np.ones(dim), seed), np.zeros(dim), 2,
                                       max_calls=max_calls, **kw)["resolved"] for seed in range(seeds))


def test_noise_alone_rarely_stops_the_measurement_early():
    """Zero mean gradient (15 noisy coordinates, as the 5 x 5 toy): over 100 seeds no early stop on noise."""
    assert _early_stops(15, 100, 4000) <= 2


def test_noise_in_one_coordinate_rarely_stops_the_measurement_early():
    """Zero gradient, noise in ONE coordinate: ||g_bar||^2 N / sigma2 is chi-square(1), so the former
    RESOLVED = 4 stopped on noise in ~22% of the seeds (a simulation of these rounds); 16 in ~1%."""
    assert _early_stops(1, 200, 1000) <= 8
    assert _early_stops(1, 200, 1000, resolved=4.0) >= 20     # the same test sees the former threshold's false stops
