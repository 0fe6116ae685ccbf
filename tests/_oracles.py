"""Oracles shared by the test modules (tests/test_run.py, tests/test_checkpoint.py)."""
import numpy as np


class RareHeavyOracle:
    """``F(w) = 0.5 ||w - c||^2`` whose gradient rides on rare samples: a sample's gradient is ``w - a``, plus
    ``(a - c) / p`` with probability ``p`` (the mean of ``B`` drawn exactly: a binomial count of rare ones)."""
    lam = 1.0

    def __init__(self, c, a, p):
        self.c, self.a, self.p = np.asarray(c, float), np.asarray(a, float), float(p)
        self.shape = self.c.shape
        self.batches = []

    def mean_grad(self, w, B, rng, out=None):
        self.batches.append(int(B))
        return (w - self.a) + (rng.binomial(B, self.p) / B) * (self.a - self.c) / self.p

    def value(self, w):
        return 0.5 * float(np.sum((w - self.c) ** 2))


def rare_heavy():
    """``(c, oracle)``: the rare-sample problem of the safeguards' tests (``p = 0.001``, ``|c| = 2.3``)."""
    c = np.array([1.0, -2.0, 0.5])
    return c, RareHeavyOracle(c, 1e-6 * c, 1e-3)
