"""Regularized distance metric learning (Jin, Wang, Zhou, NIPS 2009): the paper's Fig. 2 oracle and its extensions.

    F(W) = E_{(i, j)} [ l(y_ij * (b - ||x_i - x_j||_W^2)) ] + (lam / 2) * ||W||_F^2,

``||x||_W^2 = x^T W x``, ``l(z) = log(1 + exp(-z))``, ``y_ij = +1`` when ``x_i`` and
``x_j`` have the same label, ``-1`` otherwise. The paper's setting (the
defaults): ``b = 1`` and ``(i, j)`` a uniformly random ordered pair of
distinct training instances. With ``||x|| <= 1``, ``F`` is ``L = lam + 4``
smooth and ``lam``-strongly convex (Frobenius norm).

Extensions (keywords; see :class:`MetricLearning`): balanced or
neighbour-restricted pair sampling, a learned threshold ``b = s * beta`` (the point is
then the (d+1) x (d+1) matrix ``diag(W, beta)``; ``s = threshold_scale``), and pairs given as a list
(:meth:`MetricLearning.from_pairs`, metric-learn's pairs setting).
"""
import math

import numpy as np
import scipy.sparse as sp

from .._kernels._pairs import (MAX_EVAL_PAIRS, MAX_FEATURES, PairGradientCore, PairSampler,
                               _sample_pairs, _workspace_plan)
from .._rng import check_rng
from .._threads import check_n_threads, n_cpus
from . import neighbors as nb
from .neighbors import check_impostor_radius, pair_sq_distances_any

__all__ = ["MetricLearning", "SAMPLINGS", "MAX_FEATURES", "MAX_EVAL_PAIRS", "MAX_NEIGHBOR_ENTRIES",
           "norm_tolerance", "label_codes", "plain_label"]

SAMPLINGS = ("uniform", "balanced", "neighbors")
# n * n_neighbors above this is a ValueError (each neighbour table is 4 bytes per entry)
MAX_NEIGHBOR_ENTRIES = 2**27


def norm_tolerance(dtype, d):
    """Slack allowed above ``||x|| = 1``: ``max(1e-12, d * eps(dtype))`` for floating ``dtype``.

    Unit-norm rows computed in float32 have norms ``1 +- ~d * 6e-8``; the 1e-12
    of float64 would reject them. Integer and bool inputs are exact (1e-12).
    """
    dtype = np.dtype(dtype)
    eps = np.finfo(dtype).eps if dtype.kind == "f" else 0.0
    return max(1e-12, float(d) * float(eps))


def plain_label(label):
    """A label as the Python value it holds (``'a'``, not NumPy 2's ``np.str_('a')``), for messages."""
    return label.item() if isinstance(label, np.generic) else label


def label_codes(y, name="y"):
    """``(classes, codes)`` of 1-D labels ``y`` (``codes`` int32 in ``0..C-1``).

    Labels are compared by equality. Mixed types (e.g. str and int) are a
    TypeError naming ``name`` instead of NumPy's "'<' not supported".
    """
    y = np.asarray(y)
    if y.dtype.kind == "O":
        kinds = {type(v).__name__ for v in y.ravel()}
        is_num = [isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in y.ravel()]
        if len(kinds) > 1 and not all(is_num):
            raise TypeError(f"{name} mixes label types ({', '.join(sorted(kinds))}); "
                            "use labels of one type (e.g. all str or all int)")
    try:
        classes, codes = np.unique(y, return_inverse=True)
    except TypeError as exc:
        raise TypeError(f"{name} holds labels that cannot be compared ({exc}); use labels of one type") from None
    return classes, codes.reshape(-1).astype(np.int32)


def _check_X(X, name):
    """CSR (sorted, int64 indptr, int32 indices, float64 data) or C-contiguous float64 ndarray."""
    if sp.issparse(X):
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D, got shape {X.shape}")
        if X.shape[1] > MAX_FEATURES:
            _workspace_plan(X.shape[1], False, 0, True)          # raises the documented limit
        in_dtype = X.dtype
        if in_dtype.kind == "c":
            raise ValueError(f"{name} is complex; metric learning needs real data")
        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        X.sum_duplicates()          # also sorts the indices
        X.eliminate_zeros()
        if not np.isfinite(X.data).all():
            raise ValueError(f"{name} contains NaN or Inf")
        X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int64)),
                          shape=X.shape)
        X.indptr = X.indptr.astype(np.int64)   # scipy may downcast in the constructor
        X.indices = X.indices.astype(np.int32)
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    else:
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D (a CSR matrix or ndarray), got shape {X.shape}")
        if X.dtype.kind == "c":
            raise ValueError(f"{name} is complex; metric learning needs real data")
        if not (np.issubdtype(X.dtype, np.floating) or np.issubdtype(X.dtype, np.integer)
                or X.dtype == bool):
            raise TypeError(f"{name} must be numeric, got dtype {X.dtype}")
        if X.shape[1] > MAX_FEATURES:
            _workspace_plan(X.shape[1], False, 0, False)         # raises the documented limit
        in_dtype = X.dtype
        X = np.ascontiguousarray(X, dtype=np.float64)
        if not np.isfinite(X).all():
            raise ValueError(f"{name} contains NaN or Inf")
        norms = np.linalg.norm(X, axis=1)
    if X.shape[0] > 2**31 - 1:
        raise ValueError(f"{name} has too many rows ({X.shape[0]} > 2**31 - 1)")
    if X.shape[1] < 1:
        raise ValueError(f"{name} must have at least one column")
    tol = norm_tolerance(in_dtype, X.shape[1])
    if norms.size and norms.max() > 1 + tol:
        k = int(np.argmax(norms))
        raise ValueError(
            f"row {k} of {name} has norm {norms[k]:.9g} > 1; scale the instances with "
            "logt.datasets.normalize_rows, or use logt.MetricLearner, which scales internally "
            "(the smoothness bound L = lam + 4 needs ||x|| <= 1)")
    return X


def _check_y(y, n, name, name_X):
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {y.shape}")
    if len(y) != n:
        raise ValueError(f"{name_X} has {n} rows but {name} has {len(y)} labels")
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        raise ValueError(f"{name} contains NaN or Inf")
    if y.dtype.kind == "c":
        raise ValueError(f"{name} is complex")
    return y


def _check_int(v, name, lo, hi=None):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        if isinstance(v, (float, np.floating)) and float(v).is_integer():
            v = int(v)
        else:
            raise TypeError(f"{name} must be an int, got {v!r}")
    v = int(v)
    if v < lo or (hi is not None and v > hi):
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ValueError(f"{name} must be {rng}, got {v}")
    return v




def _sampler_for(X, codes, sampling, n_neighbors, neighbors, rng_seed, impostor_radius=None):
    if sampling not in SAMPLINGS:
        raise ValueError(f"sampling must be one of {SAMPLINGS}, got {sampling!r}")
    tables = None
    if sampling == "neighbors":
        want_d = impostor_radius is not None
        if neighbors is None:
            if X.shape[0] * n_neighbors > MAX_NEIGHBOR_ENTRIES:
                raise ValueError(f"n_samples * n_neighbors = {X.shape[0] * n_neighbors} exceeds "
                                 f"MAX_NEIGHBOR_ENTRIES = {MAX_NEIGHBOR_ENTRIES}; use fewer neighbours")
            tables = nb.neighbor_tables(X, codes, n_neighbors, rng=rng_seed, return_distances=want_d)
        else:
            tables = tuple(np.asarray(t) for t in neighbors)
            if len(tables) != 2:
                raise ValueError("neighbors must be a pair (sim, dis) of (n, k) index arrays")
            if want_d:       # the distances index X with the tables: validate them first
                PairSampler.from_labels(codes, sampling, neighbors=tables)
                tables += tuple(nb.table_sq_distances(X, t) for t in tables)
        if want_d:
            sim, dis, dsim, ddis = tables
            tables = (sim, nb.restrict_impostors(sim, dis, dsim, ddis, impostor_radius))
    return PairSampler.from_labels(codes, sampling, neighbors=tables), tables


class MetricLearning(PairGradientCore):
    """Stochastic oracle of regularized distance metric learning over d x d matrices ``W``.

    Parameters
    ----------
    X : scipy.sparse CSR matrix or ndarray, shape (n, d)
        Training instances with ``||x_i|| <= 1`` (up to ``d * eps`` of the input
        dtype; use :func:`logt.datasets.normalize_rows`, or
        :class:`logt.MetricLearner`, which scales for you). Sparse input uses the
        sparse kernel, a dense ndarray the BLAS kernel. At most
        ``MAX_FEATURES = 8192`` columns.
    y : array, shape (n,)
        Labels; at least two distinct values (``y_ij`` is label equality).
    lam : float > 0
        Regularization ``lam`` (the paper: 0.1), also the strong convexity.
    X_eval, y_eval : optional
        Data for :meth:`value` (default: the training data); e.g. a test set.
    n_eval_pairs : int in [1, MAX_EVAL_PAIRS = 10^7]
        Number of fixed evaluation pairs for :meth:`value` (the paper: 10^4),
        drawn with the same sampler as the gradient.
    eval_rng : seed for drawing the evaluation pairs (and the neighbour
        candidates), once, at construction.
    n_threads : int, optional
        Threads of the sparse kernel (default ``min(2, usable cores)``); B below
        ~2048 pairs always runs serially. The result does not depend on it
        (fixed chunks summed in a fixed order: bit-identical).
    sampling : "uniform" (the paper's, default), "balanced" or "neighbors"
        (see :mod:`logt._kernels._pairs`): balanced draws similar and dissimilar
        pairs with probability 1/2 each (``i`` uniform, ``j`` uniform among
        ``i``'s class-mates resp. the other classes); neighbors does the same
        among ``i``'s ``n_neighbors`` nearest same-class resp. other-class points.
    n_neighbors : int, neighbours per list for ``sampling="neighbors"`` (default 5).
    neighbors : optional precomputed ``(sim, dis)`` tables for ``sampling="neighbors"``.
    impostor_radius : None (default: every listed other-class neighbour) or a float ``> 0``:
        for ``sampling="neighbors"``, keep of ``i``'s other-class neighbours only those within
        ``impostor_radius`` times the distance of ``i``'s farthest listed same-class neighbour
        (:func:`logt.oracles.neighbors.restrict_impostors`); a point with none left is
        never the ``i`` of a dissimilar pair. Ignored by the other samplings.
    learn_threshold : bool, default False. With True the point is the
        (d+1) x (d+1) matrix ``Z`` whose leading block is ``W`` and whose last
        diagonal entry is ``beta``, the threshold being ``b = threshold_scale * beta``
        (so ``Z`` PSD means ``W`` PSD and ``b >= 0``; the regularizer is
        ``(lam/2) ||Z||_F^2 = (lam/2) (||W||_F^2 + (b/s)^2)``).
    threshold : float, the fixed ``b`` when ``learn_threshold`` is False (default 1, the paper's).
    threshold_scale : float > 0 or "auto", the learned threshold's unit ``s`` (default 1.0).
        "auto": :func:`pair_distance_scale` of the training sampler's pairs (the evaluation
        pairs when there is no separate evaluation set; else ``n_eval_pairs`` pairs drawn
        after them), i.e. the RMS squared pair distance. Unused with a fixed threshold.

    Attributes
    ----------
    shape : (d, d), or (d+1, d+1) with a learned threshold; n_samples : n;
    n_features : d; lam; classes; sampler (the compiled :class:`PairSampler`);
    L : ``lam + 4`` (``||D||^2 <= 4`` since ``||x|| <= 1``), ``lam + (16 + s^2)/4`` with
        a learned threshold (``||diag(D D^T, -s)||_F^2 <= 16 + s^2``); threshold_scale : ``s``;
    R : ``sqrt(2 F(0) / lam)`` with ``F(0) <= log(1 + e^|b|)`` (``log 2`` for a
        learned threshold, which starts at 0): radius of a Frobenius ball
        containing ``W_*``, since ``(lam/2)||W_*||^2 <= F(W_*) <= F(0)``;
    G : bound on ``||g_hat(W)||_F`` for ``||W||_F <= R`` (:meth:`grad_bound`).

    Notes
    -----
    ``mean_grad(W, B, rng)`` draws ``B`` pairs from the sampler (bounded
    integers from the generator's 64-bit stream) and returns
    ``D_B^T diag(c) D_B / B + lam * W``. The output is symmetric when ``W`` is.
    One object serves one call at a time. Objects pickle and deep-copy (the
    copy holds the same data, sampler and evaluation pairs).
    """

    def __init__(self, X, y, lam=0.1, *, X_eval=None, y_eval=None, n_eval_pairs=10_000,
                 eval_rng=0, n_threads=None, sampling="uniform", n_neighbors=5, neighbors=None,
                 learn_threshold=False, threshold=1.0, threshold_scale=1.0, impostor_radius=None):
        lam, n_threads, n_eval_pairs, learn_threshold, threshold = _check_common(
            lam, n_threads, n_eval_pairs, learn_threshold, threshold)
        threshold_scale = check_threshold_scale(threshold_scale)
        impostor_radius = check_impostor_radius(impostor_radius)
        n_neighbors = _check_int(n_neighbors, "n_neighbors", 1, 256)
        X = _check_X(X, "X")
        y = _check_y(y, X.shape[0], "y", "X")
        n, d = X.shape
        if n < 2:
            raise ValueError(f"X must have at least 2 samples, got {n}")
        classes, codes = label_codes(y, "y")
        if len(classes) < 2:
            raise ValueError(f"y must contain at least two classes, got only {plain_label(classes[0])!r}")
        gen = check_rng(eval_rng)
        sampler, tables = _sampler_for(X, codes, sampling, n_neighbors, neighbors, gen, impostor_radius)

        if (X_eval is None) != (y_eval is None):
            raise ValueError("give both X_eval and y_eval, or neither")
        if X_eval is None:
            Xe, esampler = X, sampler
        else:
            Xe = _check_X(X_eval, "X_eval")
            ye = _check_y(y_eval, Xe.shape[0], "y_eval", "X_eval")
            if Xe.shape[1] != d:
                raise ValueError(f"X_eval has {Xe.shape[1]} columns, X has {d}")
            if Xe.shape[0] < 2:
                raise ValueError(f"X_eval must have at least 2 samples, got {Xe.shape[0]}")
            if sp.issparse(X) and not sp.issparse(Xe):
                Xe = _check_X(sp.csr_matrix(Xe), "X_eval")
            elif not sp.issparse(X) and sp.issparse(Xe):
                Xe = np.ascontiguousarray(Xe.toarray())
            eclasses, ecodes = label_codes(ye, "y_eval")
            if len(eclasses) < 2:
                raise ValueError(f"y_eval must contain at least two classes, got only {plain_label(eclasses[0])!r}")
            esampler, _ = _sampler_for(Xe, ecodes, sampling, n_neighbors, None, gen, impostor_radius)
        ei, ej, ey = esampler.draw(n_eval_pairs, gen)
        if threshold_scale == "auto":
            # from pairs of the training sampler: the evaluation pairs when they are those
            si, sj = (ei, ej) if X_eval is None else sampler.draw(n_eval_pairs, gen)[:2]
            threshold_scale = pair_distance_scale(X, si, sj)
        self._finish(X, sampler, Xe, ei, ej, ey, lam, n_threads, learn_threshold, threshold,
                     threshold_scale)
        self.classes = classes
        self.sampling = sampling
        self.n_neighbors = n_neighbors if sampling == "neighbors" else None
        self.neighbors = tables
        self.impostor_radius = impostor_radius if sampling == "neighbors" else None

    @classmethod
    def from_pairs(cls, X, i, j, y_pairs, lam=0.1, *, balanced=True, n_eval_pairs=10_000, eval_rng=0,
                   n_threads=None, learn_threshold=True, threshold=1.0, threshold_scale=1.0):
        """Oracle over GIVEN pairs ``(X[i[p]], X[j[p]])`` with labels ``y_pairs[p]`` in {-1, +1}.

        One oracle call draws a pair uniformly from the list, or, with
        ``balanced=True`` (default), a similar or dissimilar pair with
        probability 1/2 each and then uniformly among those. The evaluation
        pairs are drawn the same way. Other parameters as in the constructor.
        """
        self = cls.__new__(cls)
        lam, n_threads, n_eval_pairs, learn_threshold, threshold = _check_common(
            lam, n_threads, n_eval_pairs, learn_threshold, threshold)
        threshold_scale = check_threshold_scale(threshold_scale)
        X = _check_X(X, "X")
        i = np.asarray(i)
        j = np.asarray(j)
        y_pairs = np.asarray(y_pairs)
        for a, nm in ((i, "i"), (j, "j")):
            if a.ndim != 1 or a.dtype.kind not in "iu":
                raise ValueError(f"{nm} must be a 1-D integer array")
        if y_pairs.shape != i.shape or i.shape != j.shape:
            raise ValueError("i, j and y_pairs must have the same length")
        if not np.isin(y_pairs, (-1, 1)).all():
            raise ValueError("y_pairs must be -1 (dissimilar) or +1 (similar)")
        sampler = PairSampler.from_pairs(i, j, y_pairs.astype(np.float64), X.shape[0], bool(balanced))
        ei, ej, ey = sampler.draw(n_eval_pairs, check_rng(eval_rng))
        if threshold_scale == "auto":
            threshold_scale = pair_distance_scale(X, ei, ej)
        self._finish(X, sampler, X, ei, ej, ey, lam, n_threads, learn_threshold, threshold,
                     threshold_scale)
        self.classes = np.array([-1, 1])
        self.sampling = "list_balanced" if balanced else "list"
        self.n_neighbors = None
        self.neighbors = None
        self.impostor_radius = None
        return self

    def _finish(self, X, sampler, Xe, ei, ej, ey, lam, n_threads, learn_threshold, threshold,
                threshold_scale=1.0):
        self._setup(X, sampler, Xe, ei, ej, ey, lam, int(n_threads), bool(learn_threshold), float(threshold),
                    float(threshold_scale))
        if learn_threshold:
            s2 = float(threshold_scale) ** 2              # ||diag(D D^T, -s)||_F^2 <= 16 + s^2
            self.L = lam + 0.25 * (16.0 + s2)
            f0 = math.log(2.0)
            self._gnorm = math.sqrt(16.0 + s2)
        else:
            self.L = lam + 4.0
            f0 = abs(threshold) + math.log1p(math.exp(-abs(threshold)))     # log(1 + e^|b|)
            self._gnorm = 4.0
        self.R = math.sqrt(2.0 * f0 / lam)
        self.G = self.grad_bound(self.R)
        self.eval_pairs = (ei, ej)
        self.eval_labels = ey
        self.X, self.X_eval = X, Xe

    def grad_bound(self, radius):
        """``4 + lam * radius`` (``sqrt(16 + s^2) + lam * radius`` with a learned threshold):
        bound on ``||g_hat(W)||_F`` for ``||W||_F <= radius``."""
        return self._gnorm + self.lam * float(radius)

    def value(self, W):
        """``F(W)`` estimated on the fixed evaluation pairs: mean logit loss + ``(lam/2) ||W||_F^2``.

        W : ``self.shape`` finite float64 (symmetry not required). The loss is
        computed stably (finite for any finite ``z``); the regularizer may
        overflow to ``inf`` only if ``||W||_F^2`` does.
        """
        W = np.asarray(W, dtype=np.float64)
        loss = self._eval_loss(W)
        return loss + 0.5 * self.lam * float(np.vdot(W, W))

    def split_point(self, Z):
        """``(W, b)`` of a point: ``W`` the leading d x d block, ``b`` the threshold."""
        Z = np.asarray(Z, dtype=np.float64)
        d = self.n_features
        if self.learn_threshold:
            return Z[:d, :d], self.threshold_scale * float(Z[d, d])
        return Z, float(self.threshold)

    # ---- pickling / copying: rebuild from the validated data (C workspaces are per object)
    def __reduce__(self):
        smp = self.sampler
        state = {"X": self.X, "X_eval": self.X_eval, "eval": (self.eval_pairs[0], self.eval_pairs[1],
                                                            self.eval_labels),
                 "lam": self.lam, "n_threads": self.n_threads, "learn_threshold": self.learn_threshold,
                 "threshold": self.threshold, "threshold_scale": self.threshold_scale,
                 "sampler_mode": smp.mode, "sampler_arrays": smp._keep,
                 "point_path": self.point_path,
                 "extra": {k: v for k, v in self.__dict__.items()
                           if k not in ("X", "X_eval", "eval_pairs", "eval_labels")}}
        return (_rebuild, (type(self), state))

    def __repr__(self):
        kind = "sparse" if self.is_sparse else "dense"
        thr = (f"learned threshold (scale {self.threshold_scale:.4g})" if self.learn_threshold
               else f"threshold={self.threshold:g}")
        return (f"MetricLearning(n={self.n_samples}, d={self.n_features}, lam={self.lam}, "
                f"{kind}, sampling={self.sampling!r}, {thr}, n_eval_pairs={self.n_eval_pairs}, "
                f"n_threads={self.n_threads})")


def _check_common(lam, n_threads, n_eval_pairs, learn_threshold, threshold):
    if isinstance(lam, bool) or not isinstance(lam, (int, float, np.integer, np.floating)):
        raise TypeError(f"lam must be a real number, got {type(lam).__name__}")
    lam = float(lam)
    if not (lam > 0 and math.isfinite(lam)):
        raise ValueError(f"lam must be finite and > 0, got {lam}")
    n_threads = check_n_threads(n_threads) or min(2, n_cpus())
    if isinstance(n_eval_pairs, (float, np.floating)) and not isinstance(n_eval_pairs, bool) \
            and math.isfinite(n_eval_pairs) and float(n_eval_pairs).is_integer():
        n_eval_pairs = int(n_eval_pairs)
    if isinstance(n_eval_pairs, bool) or not isinstance(n_eval_pairs, (int, np.integer)) \
            or not 1 <= n_eval_pairs <= MAX_EVAL_PAIRS:
        raise ValueError(f"n_eval_pairs must be an int in [1, MAX_EVAL_PAIRS = {MAX_EVAL_PAIRS:,}] "
                         f"(16 bytes each), got {n_eval_pairs!r}")
    if not isinstance(learn_threshold, (bool, np.bool_)):
        raise TypeError(f"learn_threshold must be True or False, got {learn_threshold!r}")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.integer, np.floating)) \
            or not math.isfinite(threshold):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    return lam, int(n_threads), int(n_eval_pairs), bool(learn_threshold), float(threshold)


def check_threshold_scale(s):
    """``s`` of a learned threshold: "auto" or a finite number > 0 (returned as float); else ValueError."""
    if isinstance(s, str):
        if s != "auto":
            raise ValueError(f"threshold_scale must be a finite number > 0 or 'auto', got {s!r}")
        return s
    if isinstance(s, bool) or not isinstance(s, (int, float, np.integer, np.floating)) \
            or not (math.isfinite(s) and s > 0):
        raise ValueError(f"threshold_scale must be a finite number > 0 or 'auto', got {s!r}")
    return float(s)




def pair_distance_scale(X, i, j):
    """``sqrt(mean_p ||x_i[p] - x_j[p]||^4)``: the RMS squared distance of the pairs ``(i, j)``
    (1.0 when every pair has distance 0). X : (n, d) dense or CSR; i, j : (P,) int indices.

    As the learned threshold's scale ``s`` (``b = s * beta``) it gives ``beta`` the curvature
    ``s^2 sigma'(z)`` of a typical ``D D^T`` direction (``||D D^T||_F = ||D||^2``), so ``b`` no longer
    dominates the smoothness ``L``, and regularizes ``b`` in units of the data's squared distances."""
    d2 = pair_sq_distances_any(X, i, j)
    s = math.sqrt(float(d2 @ d2) / len(d2)) if len(d2) else 0.0
    return s if s > 0.0 and math.isfinite(s) else 1.0


def _rebuild(cls, state):
    self = cls.__new__(cls)
    mode = state["sampler_mode"]
    arrs = state["sampler_arrays"]
    if mode in ("list", "list_balanced"):
        i, j, y = arrs[:3]
        sampler = PairSampler.from_pairs(i, j, y, state["X"].shape[0], mode == "list_balanced")
    elif mode == "neighbors":
        sampler = PairSampler.from_labels(arrs[0], mode, neighbors=(arrs[1], arrs[2]))
    else:
        sampler = PairSampler.from_labels(arrs[0], mode)
    ei, ej, ey = state["eval"]
    self._finish(state["X"], sampler, state["X_eval"], ei, ej, ey, state["lam"], state["n_threads"],
                 state["learn_threshold"], state["threshold"], state.get("threshold_scale", 1.0))
    self.__dict__.update(state["extra"])
    self.point_path = state.get("point_path", "auto")
    return self
