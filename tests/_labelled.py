"""Small labelled point sets for the dense metric oracles' tests (softmax, triplets, their shared core)."""
import numpy as np


def labelled_rows(n=60, d=5, classes=3, seed=0):
    """``(X, y)``: ``n`` Gaussian rows in ``d`` dimensions shifted by ``0.7`` times their class (``classes`` of
    them, drawn first), scaled into the unit ball (the metric oracles' input check)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    X = rng.standard_normal((n, d)) + y[:, None] * 0.7          # some class structure
    X /= np.linalg.norm(X, axis=1).max()
    return X, y
