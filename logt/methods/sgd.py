"""Projected SGD with step ``eta_t = 1/(lam*t)``: one oracle call and one projection per step."""
import numpy as np

from logt.methods._stepper import STEP_INVERSE, Stepper


def sgd_grid(T, per_octave=4):
    """Trace points: a geometric grid of steps in ``[1, T]`` (``per_octave`` per doubling), always ending at T."""
    num = max(2, int(np.ceil(per_octave * np.log2(max(T, 2)))) + 1)
    return np.unique(np.round(np.geomspace(1, T, num)).astype(np.int64))


def run_sgd(oracle, domain, T, x0, rng, lam, recorder, average="last"):
    """Run ``T`` steps from ``x0`` (in D). Returns ``(x, n_calls, n_projections)``.

    average : "last" returns the last iterate ``w_T`` (the paper's SGD on the toy);
        "uniform" returns the mean of ``w_1..w_T`` (in D by convexity).
    """
    stepper = Stepper(oracle, domain, rng)
    x = np.array(x0, dtype=np.float64, order="C", copy=True)
    xsum = np.zeros_like(x)
    t = 0
    for t_next in sgd_grid(T):
        stepper.run(x, xsum, int(t_next - t), STEP_INVERSE, lam=lam, t0=t, where="sgd")
        t = int(t_next)
        current = x if average == "last" else xsum / t
        if recorder.record(current, t, t) and t < T:
            break
    out = x.copy() if average == "last" else xsum / t
    return out, t, t
