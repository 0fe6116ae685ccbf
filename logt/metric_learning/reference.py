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

The neighbour softmax (the default loss on dense input) is a finite sum over its oracle's candidate lists:
:func:`softmax_objective` evaluates it exactly and :func:`solve_softmax` minimizes it with the same FISTA.
"""
import numpy as np
import scipy.sparse as sp

__all__ = ["pair_distribution", "objective", "solve", "softmax_objective", "solve_softmax"]


MAX_STALLS = 50


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

    def value(W, b, grad=False):
        out = objective(X, P, Y, W, b, lam, learn_threshold, grad=grad, threshold_scale=threshold_scale)
        return (out[0], out[1], out[2] if learn_threshold else 0.0) if grad else out

    return _fista(value, lambda W, b: _proj(W, b, learn_threshold), W, float(threshold), tol, max_iter)


def _fista(value, proj, W, b, tol, max_iter):
    """FISTA with backtracking and restart on ``value(W, b, grad)`` (``F`` or ``(F, grad_W, grad_b)``) over
    ``proj``'s set; the stopping rule of :func:`solve`, or ``MAX_STALLS`` restarts in a row (``F``'s rounding
    is then above what a step could gain: ``converged`` False unless the gradient mapping is within ``tol``).
    Returns ``(W, b, F, info)``."""
    F0, g0, gb0 = value(W, b, grad=True)
    scale = max(1.0, np.sqrt(np.sum(g0 * g0) + gb0 * gb0))
    L = 1.0
    Wy, by, t = W.copy(), b, 1.0
    Fx, stalls = F0, 0
    info = {"converged": False}
    for it in range(1, max_iter + 1):
        Fy, gW, gb = value(Wy, by, grad=True)
        while True:
            Wn, bn = proj(Wy - gW / L, by - gb / L)
            dW, db = Wn - Wy, bn - by
            Fn = value(Wn, bn)
            if Fn <= Fy + np.sum(gW * dW) + gb * db + 0.5 * L * (np.sum(dW * dW) + db * db) + 1e-15 * abs(Fy):
                break
            L *= 2.0
        gm = L * np.sqrt(np.sum(dW * dW) + db * db)
        if Fn > Fx:                       # restart the momentum when the objective goes up
            stalls += 1
            if gm <= tol * scale or stalls > MAX_STALLS:   # at the optimum, or F's rounding hides every descent
                info = {"iterations": it, "grad_mapping": gm, "converged": bool(gm <= tol * scale)}
                break
            t = 1.0
            Wy, by = W, b
            L = max(L / 2.0, 1e-12)
            continue
        stalls = 0
        t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        Wy = Wn + ((t - 1.0) / t_next) * (Wn - W)
        by = bn + ((t - 1.0) / t_next) * (bn - b)
        W, b, Fx, t = Wn, bn, Fn, t_next
        L = max(L / 1.5, 1e-12)
        info = {"iterations": it, "grad_mapping": gm, "converged": gm <= tol * scale}
        if info["converged"]:
            break
    return W, b, Fx, info


def softmax_objective(X, anchors, ptr, cand, n_targets, unit, W, lam, grad=False):
    """The neighbour softmax's ``F(W)`` over its candidate lists (:class:`logt.oracles.SoftmaxMetricLearning`'s
    ``anchors``, ``ptr``, ``candidates``, ``n_targets_per_anchor`` and ``unit`` ``s``), every anchor weighed
    equally::

        F(W) = mean_i [ (1/t_i) sum_{j in T_i} q_ij / s + log sum_{c in C_i} exp(-q_ic / s) ] + (lam/2) ||W||_F^2

    (and with ``grad=True``, ``(F, grad_W)``: ``U^T diag(w) U / (s m) + lam W`` with ``U`` the (M, d) candidate
    differences, ``w = [target] / t_i - p_ic``, ``m`` anchors). Dense NumPy, memory ``O(M d)``."""
    X = _dense(X)
    counts = np.diff(ptr)
    start = np.asarray(ptr[:-1])
    U = X[np.repeat(anchors, counts)] - X[cand]
    q = np.einsum("md,md->m", U @ W, U) / unit
    target = np.arange(len(cand)) - np.repeat(start, counts) < np.repeat(n_targets, counts)
    top = np.maximum.reduceat(-q, start)                          # per-anchor max of -q, for a stable log-sum-exp
    e = np.exp(-q - np.repeat(top, counts))
    lse = top + np.log(np.add.reduceat(e, start))
    per_anchor = np.add.reduceat(np.where(target, q, 0.0), start) / n_targets + lse
    m = len(anchors)
    F = float(per_anchor.mean()) + 0.5 * lam * float(np.sum(W * W))
    if not grad:
        return F
    p = e / np.repeat(np.exp(lse - top), counts)
    w = np.where(target, 1.0 / np.repeat(n_targets, counts), 0.0) - p
    gW = (U.T * w) @ U / (unit * m) + lam * W
    return F, 0.5 * (gW + gW.T)


def solve_softmax(oracle, tol=1e-7, max_iter=20_000):
    """Minimize the neighbour softmax of ``oracle`` (a :class:`logt.oracles.SoftmaxMetricLearning`: its points,
    lists, unit and ``lam``) over PSD ``W`` by the FISTA of :func:`solve`, exactly (every anchor). Returns
    ``(W, F, info)``. At a gradient mapping ``g`` the excess is at most ``g^2 / (2 lam)`` (strong convexity); a
    tolerance much below the default meets ``F``'s rounding first (``converged`` False, ``F`` still exact)."""
    args = (oracle.X, oracle.anchors, oracle.ptr, oracle.candidates, oracle.n_targets_per_anchor, oracle.unit)
    lam = oracle.lam

    def value(W, b, grad=False):
        if not grad:
            return softmax_objective(*args, W, lam)
        F, gW = softmax_objective(*args, W, lam, grad=True)
        return F, gW, 0.0

    d = oracle.X.shape[1]
    W, _, F, info = _fista(value, lambda W, b: _proj(W, b, False), np.zeros((d, d)), 0.0, tol, max_iter)
    return W, F, info
