"""Dense NumPy references of the metric-learning objectives (for tests and for measuring optima).

Everything here is exact over a finite pair distribution: ``P[i, j]`` is the
probability that one oracle call draws the ordered pair ``(i, j)`` and
``Y[i, j]`` its label (+1 similar, -1 dissimilar). With ``q_ij = (x_i - x_j)^T W
(x_i - x_j)`` and threshold ``b``,

    F(W, b) = sum_ij P_ij * l(Y_ij * (s b - q_ij)) + (lam / 2) * (||W||_F^2 + [learned] b^2),

``l(z) = log(1 + exp(-z))``, ``s`` the learned threshold's scale (``threshold_scale``,
default 1; with a learned threshold ``b`` is the point's last diagonal entry and the
threshold on ``q`` is ``s b``, as in :class:`logt.oracles.MetricLearning`; ``s = 1`` for a
fixed threshold). The gradient uses the Laplacian identity
``sum_ij C_ij D_ij D_ij^T = X^T (diag(C 1 + C^T 1) - C - C^T) X``, so one
evaluation costs ``O(n^2 + n^2 d + n d^2)`` without forming the ``n^2`` pair
differences. :func:`solve` minimizes ``F`` over ``W`` PSD (and ``b >= 0``)
with accelerated projected gradient (FISTA, backtracking, restart) to a
tolerance on the gradient mapping: the reference optimum the stochastic
solvers are measured against. Memory ``O(n^2)``: meant for ``n`` up to a few
thousand.
"""
import numpy as np
import scipy.sparse as sp

__all__ = ["pair_distribution", "objective", "solve"]


def _dense(X):
    return np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)


def pair_distribution(y, sampling="uniform", neighbors=None):
    """``P`` (n, n) pair probabilities and ``Y`` (n, n) labels of a pair sampler.

    Parameters
    ----------
    y : (n,) array
        Labels (compared by equality).
    sampling : {"uniform", "balanced", "neighbors"}
        * ``"uniform"``: the paper's; ``(i, j)`` uniform over the ``n (n - 1)``
          ordered pairs ``i != j``;
        * ``"balanced"``: similar and dissimilar with probability 1/2 each; a
          similar pair is ``i`` uniform among points that have a class-mate, then
          ``j`` uniform among its class-mates; a dissimilar pair is ``i`` uniform
          over all points, ``j`` uniform among the other classes' points;
        * ``"neighbors"``: similar and dissimilar with probability 1/2 each; ``i``
          uniform among the points with a non-empty list of that kind, ``j``
          uniform among ``i``'s listed same-class neighbours (``neighbors[0]``) or
          other-class neighbours (``neighbors[1]``).
    neighbors : tuple of two (n, k) int arrays, padded with -1
        The neighbour lists of ``sampling="neighbors"``.

    Returns
    -------
    P, Y : (n, n) arrays
        Pair probabilities (summing to 1) and labels (+1 similar, -1 dissimilar).
    """
    y = np.asarray(y)
    n = len(y)
    same = y[:, None] == y[None, :]
    np.fill_diagonal(same, False)
    Y = np.where(same, 1.0, -1.0)
    if sampling == "uniform":
        P = np.full((n, n), 1.0 / (n * (n - 1)))
        np.fill_diagonal(P, 0.0)
        return P, Y
    if sampling == "balanced":
        other = ~same
        np.fill_diagonal(other, False)
        n_same = same.sum(1)
        n_other = other.sum(1)
        elig = n_same > 0
        Ps = np.where(same, 1.0, 0.0) / np.maximum(n_same, 1)[:, None] * (elig / elig.sum())[:, None]
        Pd = np.where(other, 1.0, 0.0) / np.maximum(n_other, 1)[:, None] / n
        return 0.5 * Ps + 0.5 * Pd, Y
    if sampling == "neighbors":
        sim, dis = neighbors
        P = np.zeros((n, n))
        ks = (sim >= 0).sum(1)
        kd = (dis >= 0).sum(1)
        elig = ks > 0
        rows = np.arange(n)[:, None]
        np.add.at(P, (np.broadcast_to(rows, sim.shape)[sim >= 0], sim[sim >= 0]),
                  (0.5 / elig.sum() / np.maximum(ks, 1)[:, None] * np.ones(sim.shape))[sim >= 0])
        np.add.at(P, (np.broadcast_to(rows, dis.shape)[dis >= 0], dis[dis >= 0]),
                  (0.5 / (kd > 0).sum() / np.maximum(kd, 1)[:, None] * np.ones(dis.shape))[dis >= 0])
        return P, Y
    raise ValueError(f"sampling must be 'uniform', 'balanced' or 'neighbors', got {sampling!r}")


def _margins(X, W, b, Y):
    G = X @ W @ X.T
    s = np.diag(G)
    Q = s[:, None] + s[None, :] - 2.0 * G
    return Y * (b - Q)


def objective(X, P, Y, W, b, lam, learn_threshold=True, grad=False, threshold_scale=1.0):
    """``F(W, b)`` (and, with ``grad=True``, ``(F, grad_W, grad_b)``); see the module docstring."""
    X = _dense(X)
    s = float(threshold_scale) if learn_threshold else 1.0
    Z = _margins(X, W, s * b, Y)
    F = float(np.sum(P * np.logaddexp(0.0, -Z))) + 0.5 * lam * float(np.sum(W * W))
    if learn_threshold:
        F += 0.5 * lam * b * b
    if not grad:
        return F
    C = P * Y * np.exp(-np.logaddexp(0.0, Z))          # P * y * sigmoid(-z)
    Lap = np.diag(C.sum(0) + C.sum(1)) - C - C.T
    gW = X.T @ Lap @ X + lam * W
    gW = 0.5 * (gW + gW.T)
    gb = -s * float(C.sum()) + (lam * b if learn_threshold else 0.0)
    return F, gW, gb


def _proj(W, b, learn):
    s, U = np.linalg.eigh(0.5 * (W + W.T))
    Wp = (U * np.maximum(s, 0.0)) @ U.T
    return 0.5 * (Wp + Wp.T), (max(b, 0.0) if learn else b)


def solve(X, P, Y, lam, threshold=1.0, learn_threshold=True, tol=1e-9, max_iter=20_000, W0=None,
          threshold_scale=1.0):
    """Minimize ``F`` over PSD ``W`` (and ``b >= 0`` when learned) by FISTA with backtracking.

    threshold : the fixed ``b`` (``learn_threshold=False``) or the start value of ``b``.
    threshold_scale : ``s`` of a learned threshold (the threshold on ``q`` is ``s b``).
    Stops when the gradient mapping ``||(x - prox(x - g/L)) * L||`` is below
    ``tol * max(1, ||g(0)||)``. Returns ``(W, b, F, info)`` with ``info`` a dict
    (``iterations``, ``grad_mapping``, ``converged``).
    """
    X = _dense(X)
    d = X.shape[1]
    W = np.zeros((d, d)) if W0 is None else np.array(W0, dtype=float)
    b = float(threshold)
    F0, g0, gb0 = objective(X, P, Y, W, b, lam, learn_threshold, grad=True, threshold_scale=threshold_scale)
    scale = max(1.0, np.sqrt(np.sum(g0 * g0) + gb0 * gb0))
    L = 1.0
    Wy, by, t = W.copy(), b, 1.0
    Fx = F0
    info = {"converged": False}
    for it in range(1, max_iter + 1):
        Fy, gW, gb = objective(X, P, Y, Wy, by, lam, learn_threshold, grad=True, threshold_scale=threshold_scale)
        if not learn_threshold:
            gb = 0.0
        while True:
            Wn, bn = _proj(Wy - gW / L, by - gb / L, learn_threshold)
            dW, db = Wn - Wy, bn - by
            Fn = objective(X, P, Y, Wn, bn, lam, learn_threshold, threshold_scale=threshold_scale)
            if Fn <= Fy + np.sum(gW * dW) + gb * db + 0.5 * L * (np.sum(dW * dW) + db * db) + 1e-15 * abs(Fy):
                break
            L *= 2.0
        gm = L * np.sqrt(np.sum(dW * dW) + db * db)
        if Fn > Fx:                       # restart the momentum when the objective goes up
            t = 1.0
            Wy, by = W, b
            L = max(L / 2.0, 1e-12)
            continue
        t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        Wy = Wn + ((t - 1.0) / t_next) * (Wn - W)
        by = bn + ((t - 1.0) / t_next) * (bn - b)
        W, b, Fx, t = Wn, bn, Fn, t_next
        L = max(L / 1.5, 1e-12)
        info = {"iterations": it, "grad_mapping": gm, "converged": gm <= tol * scale}
        if info["converged"]:
            break
    return W, b, Fx, info
