"""Algorithm 1 of the paper: epochs of extra-gradient steps with doubling mini-batches.

Thin Python: epoch ``k`` makes ``M`` extra-gradient updates with mini-batches
of ``B = B1 * 2**(k-1)``; each update is two oracle calls (``oracle.mean_grad``,
compiled for built-in oracles) and two projections. The interpreter runs only
``2*M*k`` times in total, so it never dominates.
"""
import numpy as np

from logt.methods._stepper import non_finite_error


def run_logt(oracle, domain, T, x0, rng, p, recorder, n_epochs):
    """Run ``n_epochs`` complete epochs with parameters ``p`` (eta, M, B1).

    Returns ``(w, n_calls, n_projections, epochs_run)``.
    """
    eta, M, B = p.eta, p.M, p.B1
    shape = domain.shape
    w = np.array(x0, dtype=np.float64, order="C", copy=True)
    g = np.empty(shape)      # mean gradient at w
    f = np.empty(shape)      # mean gradient at z
    z = np.empty(shape)
    zsum = np.empty(shape)
    calls = projections = 0
    k = 0
    for k in range(1, n_epochs + 1):
        zsum.fill(0.0)
        for t in range(1, M + 1):
            oracle.mean_grad(w, B, rng, out=g)
            calls += B
            if not np.isfinite(g).all():
                raise non_finite_error(f"epoch {k}", t)
            np.multiply(g, -eta, out=z)
            z += w
            domain.project(z, out=z)                 # z = Pi_D(w - eta g)
            projections += 1
            oracle.mean_grad(z, B, rng, out=f)
            calls += B
            if not np.isfinite(f).all():
                raise non_finite_error(f"epoch {k}", t)
            w -= eta * f
            domain.project(w, out=w)                 # w = Pi_D(w - eta f)
            projections += 1
            zsum += z
        np.divide(zsum, M, out=w)                    # in D by convexity: no projection
        B *= 2
        if recorder.record(w, calls, projections, epoch=k):
            break
    return w, calls, projections, k
