"""``MetricLearner``: regularized distance metric learning as a scikit-learn style estimator.

Learns a Mahalanobis matrix ``W`` (d x d, PSD) by minimizing the objective of
the paper's Fig. 2 (Jin, Wang, Zhou, NIPS 2009),

    F(W) = E_{(i, j)} [ l(y_ij * (1 - ||x_i - x_j||_W^2)) ] + (lam / 2) * ||W||_F^2,

over the PSD cone with :func:`logt.minimize` (Algorithm 1 by default). See
:class:`logt.oracles.MetricLearning` for the oracle and
:func:`practical_metric_params` for the default step rule.

scikit-learn is optional: the estimator follows its conventions (parameters
stored as given in ``__init__``, ``get_params``/``set_params``, fitted
attributes ending in ``_``, ``NotFittedError``) and, when scikit-learn is
installed, works with ``sklearn.base.clone``, pipelines (``transform``) and its
estimator checks. Names follow metric-learn where the same thing exists
(``components_``, ``get_mahalanobis_matrix``, ``pair_distance``, ``pair_score``).
"""
import inspect
import math
import numbers

import numpy as np
import scipy.sparse as sp

from logt import params as _params
from logt._minimize import METHODS, minimize
from logt._rng import check_rng
from logt.datasets import normalize_rows
from logt.domains import PSDCone
from logt.oracles import MetricLearning

__all__ = ["MetricLearner", "NotFittedError", "practical_metric_params"]

try:  # the same exception scikit-learn's check_is_fitted raises
    from sklearn.exceptions import NotFittedError
except ImportError:  # pragma: no cover - exercised only without scikit-learn
    class NotFittedError(ValueError, AttributeError):
        """Raised when a ``MetricLearner`` is used before ``fit`` (as scikit-learn's)."""


# --- the "practical" parameter rule (measured on mushrooms and a9a; see the docstring) ---
PRACTICAL_ETA_TIMES_L = 4.0
PRACTICAL_M = 8
PRACTICAL_B1 = 4


def practical_metric_params(L, lam, T):
    """Practical parameters of Algorithm 1 for metric learning: ``eta = 4/L``, ``M = 8``, ``B1 = 4``.

    Theorem 1 (``eta = 1/(sqrt(6) L)``, ``M = 4/(eta lam)``, ``B1 = 12 eta lam``)
    with the worst-case ``L = lam + 4 = 4.1`` and ``lam = 0.1`` gives
    ``eta = 0.0996``, ``M = 402``, ``B1 = 1``: 804 projections per epoch, i.e.
    8040 projections for ``T = 10^6``. The bound ``L = lam + 4`` assumes the
    worst case ``||x_i - x_j||^2 = 4`` at the logit loss's largest curvature;
    on real data the curvature along the path is far smaller, so a larger step
    is stable and a few updates per epoch suffice. The rule:

    * ``eta = 4 / L`` (``~0.98`` for ``L = 4.1``; ``1/(lam + 1)`` would be the
      bound for non-negative unit-norm instances, where ``||x_i - x_j||^2 <= 2``);
    * ``M = 8`` extra-gradient updates per epoch (16 projections per epoch);
    * ``B1 = 4``, reduced when needed so that at least one epoch fits in ``T``
      (``2*M*B1 <= T``); the batch then doubles every epoch as in Algorithm 1, so
      ``T`` calls take ``floor(log2(T/64 + 1))`` epochs: 16 projections per
      epoch, 208 for ``T = 10^6`` (Theorem 1: 8040).

    Evidence (``lam = 0.1``, ``F`` on 10^4 test pairs, 2 seeds each; sweeps of
    ``eta L`` x ``M`` x ``B1`` with ``logt.minimize``):

    * mushrooms (seeded 2/3 train split; ``F_* ~ 0.7608`` on those pairs,
      ``F(0) = 0.8105``), ``T = 10^6``, ``eta L in {0.41 (Theorem 1's), 1, 2, 4}``
      x ``M in {4, 8, 16, 32, 64}`` x ``B1 in {1, 8, 64}``: with ``eta L = 4``
      every ``M >= 4`` reached ``F = 0.7608-0.7609`` with 80-1536 projections; with
      Theorem 1's step, ``M <= 16`` ends at 0.764-0.788 and only ``M = 64``
      gets there (768-1536 projections). ``eta L = 4, M = 8, B1 = 4``: 0.76076
      after 208 projections (``T = 10^6``), 0.7608 after 160 (``T = 10^5``).
    * a9a (Adult; ``F`` on a9a.t pairs), ``eta L in {2, 4, 8}`` x ``M in {4, 8, 16}``,
      ``B1 = 4``: ``eta L = 4, M = 8`` gives 0.66553 after 208 projections
      (``T = 10^6``; best of the grid 0.66552), 0.66557 after 160 (``T = 10^5``).
    * ``eta L = 8`` is still stable on both (no better), so ``eta L = 4`` keeps a
      factor-2 margin; ``eta L = 2`` needs about one more epoch for the same ``F``.
      :mod:`logt.experiments.metric` compares the rule with Theorem 1 and the
      baselines (``python -m logt metric``).

    Returns a :class:`logt.params.LogTParams` (``rule="explicit"``).
    """
    L, lam = _params.check_L_lam(L, lam)
    T = _params.check_T(T)
    M = PRACTICAL_M
    if T < 2 * M:
        raise ValueError(f"T={T} is below one epoch of the practical rule (2*M = {2 * M} oracle calls)")
    B1 = max(1, min(PRACTICAL_B1, T // (2 * M)))
    return _params.explicit(PRACTICAL_ETA_TIMES_L / L, M, B1)


def _is_fitted(est):
    return hasattr(est, "components_")


def _check_fitted(est):
    if not _is_fitted(est):
        raise NotFittedError(
            f"This {type(est).__name__} instance is not fitted yet. Call 'fit' with appropriate "
            "arguments before using this estimator.")


def _check_points(X, name, d=None, allow_sparse=True):
    """2-D finite float64 (dense ndarray or CSR); checks the column count against ``d``."""
    if sp.issparse(X):
        if not allow_sparse:
            raise TypeError(f"{name} must be dense")
        X = sp.csr_matrix(X, dtype=np.float64)
        if not np.isfinite(X.data).all():
            raise ValueError(f"{name} contains NaN or Inf")
    else:
        X = np.asarray(X)
        if np.iscomplexobj(X):
            raise ValueError(f"Complex data not supported: {name} must be real")
        if X.dtype == object:
            X = X.astype(np.float64)          # numbers stored as objects; raises for strings
        if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
            raise TypeError(f"{name} must be numeric, got dtype {X.dtype}")
        if X.ndim != 2:
            raise ValueError(f"{name} must be a 2-D array of shape (n_samples, n_features), got shape "
                             f"{X.shape}; reshape your data")
        X = X.astype(np.float64, copy=False)
        if not np.isfinite(X).all():
            raise ValueError(f"{name} contains NaN or Inf")
    if X.shape[1] < 1:
        raise ValueError(f"Found array with 0 feature(s) (shape={X.shape}) while a minimum of 1 is "
                         f"required by MetricLearner ({name}).")
    if d is not None and X.shape[1] != d:
        raise ValueError(f"{name} has {X.shape[1]} features, but MetricLearner was fitted with {d} features")
    return X


class MetricLearner:
    """Regularized distance metric learning with O(log T) projections (the paper's Fig. 2 problem).

    Parameters (stored as given; checked in :meth:`fit`)
    ----------
    method : "logt" (Algorithm 1, default), "sgd" or "epoch_gd" (baselines).
    T : int, budget of stochastic gradients (pair gradients), default 100_000.
    lam : float > 0, the regularization ``lam`` (default 0.1, the paper's).
    params : Algorithm 1's parameters (``method="logt"`` only; ignored otherwise):
        "practical" (default, see :func:`practical_metric_params`: ``eta = 4/L``,
        ``M = 8``, ``B1 = 4``), "theorem1", "theorem2" (needs ``delta``) or a dict
        ``{"eta": ..., "M": ..., "B1": ...}``.
    delta : failure probability for ``params="theorem2"``.
    n_eval_pairs : int, pairs of the training data drawn once to evaluate ``F``
        (``result_.fun`` and ``result_.trace``), default 10_000.
    n_threads : threads of the pair-gradient kernel (see
        :class:`logt.oracles.MetricLearning`); the result does not depend on it.
    normalize : bool, default False. The objective needs ``||x|| <= 1`` (then it
        is ``(lam + 4)``-smooth). With False, ``fit`` raises for a row of norm
        > 1: scale the data yourself, e.g. with
        :func:`logt.datasets.normalize_rows`. With True, every row is scaled to
        unit norm in ``fit``, ``transform`` and the pair methods alike (the metric
        then applies to the scaled points, like a ``Normalizer`` in a pipeline).
    rng : int seed, ``SeedSequence``, ``Generator`` or None: the randomness of
        ``fit`` (pair sampling and evaluation pairs). The same seed gives
        bit-identical fits; a ``Generator`` is advanced by ``fit``.

    Attributes (after ``fit``)
    ----------
    W_ : ndarray (d, d), the learned PSD matrix, exactly ``components_.T @ components_``.
    components_ : ndarray (rank, d), ``L`` with ``W_ = L^T L`` (metric-learn's
        name): ``L = diag(sqrt(s)) U^T`` from the eigendecomposition ``U diag(s) U^T``
        of the returned point, keeping eigenvalues ``s > d * eps * max(s)``
        (the rest, ~0 or round-off negatives, are dropped; ``rank`` may be 0).
    n_features_in_ : d;  n_calls_, n_projections_, n_epochs_ : counts of the run;
    result_ : the :class:`logt.MinimizeResult` (``x`` the raw returned point,
        ``fun`` ``F`` on the evaluation pairs, ``trace``, ``params`` used).

    Pairs
    -----
    ``pairs`` is an array of shape (n_pairs, 2, d) (metric-learn's format).
    :meth:`pair_distance` returns ``||x - x'||_W = sqrt((x-x')^T W (x-x'))``,
    :meth:`pair_score` its negative (higher = more similar), and the model's own
    classifier -- the objective says a pair is similar when ``||x - x'||_W^2 < 1``
    -- is :meth:`decision_function` ``= 1 - ||x - x'||_W^2`` and :meth:`predict`
    (+1 similar, -1 dissimilar).
    """

    def __init__(self, method="logt", T=100_000, lam=0.1, params="practical", delta=None,
                 n_eval_pairs=10_000, n_threads=None, normalize=False, rng=None):
        self.method = method
        self.T = T
        self.lam = lam
        self.params = params
        self.delta = delta
        self.n_eval_pairs = n_eval_pairs
        self.n_threads = n_threads
        self.normalize = normalize
        self.rng = rng

    # ---- scikit-learn protocol -------------------------------------------------
    @classmethod
    def _get_param_names(cls):
        sig = inspect.signature(cls.__init__)
        return sorted(p.name for p in sig.parameters.values()
                      if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))

    def get_params(self, deep=True):
        """The constructor parameters as a dict (``deep`` is accepted for compatibility)."""
        return {k: getattr(self, k) for k in self._get_param_names()}

    def set_params(self, **params):
        """Set constructor parameters; unknown names raise ValueError. Returns self."""
        valid = self._get_param_names()
        for k, v in params.items():
            if k not in valid:
                raise ValueError(f"Invalid parameter {k!r} for estimator {type(self).__name__}. "
                                 f"Valid parameters are: {valid}.")
            setattr(self, k, v)
        return self

    def __repr__(self):
        defaults = {k: p.default for k, p in inspect.signature(type(self).__init__).parameters.items()}
        changed = [f"{k}={v!r}" for k, v in self.get_params().items()
                   if not (isinstance(v, type(defaults[k])) and v == defaults[k]) and v is not defaults[k]]
        return f"{type(self).__name__}({', '.join(changed)})"

    def __sklearn_is_fitted__(self):
        return _is_fitted(self)

    def __sklearn_tags__(self):
        from sklearn.utils import Tags, TargetTags, TransformerTags, InputTags
        return Tags(estimator_type=None, target_tags=TargetTags(required=True),
                    transformer_tags=TransformerTags(preserves_dtype=["float64"]),
                    input_tags=InputTags(sparse=True))

    # ---- fitting -----------------------------------------------------------------
    def _check_hyper(self):
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        _params.check_T(self.T)
        if isinstance(self.lam, bool) or not isinstance(self.lam, numbers.Real) \
                or not (math.isfinite(self.lam) and self.lam > 0):
            raise ValueError(f"lam must be a finite number > 0, got {self.lam!r}")
        if not isinstance(self.normalize, (bool, np.bool_)):
            raise TypeError(f"normalize must be True or False, got {self.normalize!r}")
        p = self.params
        if isinstance(p, dict):
            extra = set(p) - {"eta", "M", "B1"}
            if extra or len(p) != 3:
                raise ValueError(f"params as a dict needs exactly the keys eta, M, B1, got {sorted(p)}")
        elif p not in ("practical", "theorem1", "theorem2"):
            raise ValueError(f"params must be 'practical', 'theorem1', 'theorem2' or a dict "
                             f"{{eta, M, B1}}, got {p!r}")

    def _minimize_kwargs(self, oracle):
        if self.method != "logt":
            return {}
        p = self.params
        if isinstance(p, dict):
            return {"eta": p["eta"], "M": p["M"], "B1": p["B1"]}
        if p == "practical":
            q = practical_metric_params(oracle.L, oracle.lam, self.T)
            return {"eta": q.eta, "M": q.M, "B1": q.B1}
        return {"params": p, "delta": self.delta}

    def fit(self, X, y):
        """Learn ``W`` from instances ``X`` (n, d; dense or sparse) and labels ``y`` (n,).

        Pairs with equal labels are "similar" (``y_ij = +1``). Needs at least 2
        samples, 2 classes, finite values and (unless ``normalize=True``) rows
        of norm <= 1. Returns self.
        """
        self._check_hyper()
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None")
        X = _check_points(X, "X")
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y.ravel()
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D (one label per row of X), got shape {y.shape}")
        if len(y) != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} samples but y has {len(y)} labels")
        if y.dtype.kind in "fc" and not np.isfinite(y).all():
            raise ValueError("y contains NaN or Inf")
        if X.shape[0] < 2:
            raise ValueError(f"Found array with {X.shape[0]} sample(s) (shape={X.shape}) while a minimum "
                             "of 2 is required by MetricLearner: X must have at least 2 samples, "
                             f"got n_samples={X.shape[0]}")
        if self.normalize:
            X = normalize_rows(X)
        gen = check_rng(self.rng)
        eval_seed = int(gen.integers(2**63))
        oracle = MetricLearning(X, y, float(self.lam), n_eval_pairs=self.n_eval_pairs,
                                eval_rng=eval_seed, n_threads=self.n_threads)
        d = X.shape[1]
        res = minimize(oracle, PSDCone(d), self.T, method=self.method, rng=gen,
                       **self._minimize_kwargs(oracle))
        self._set_metric(res.x)
        self.n_features_in_ = d
        self.n_calls_ = res.n_calls
        self.n_projections_ = res.n_projections
        self.n_epochs_ = res.n_epochs
        self.result_ = res
        return self

    def _set_metric(self, W):
        S = 0.5 * (W + W.T)
        s, U = np.linalg.eigh(S)
        tol = S.shape[0] * np.finfo(np.float64).eps * max(float(s.max()), 0.0)
        keep = s > tol
        Lm = (U[:, keep] * np.sqrt(s[keep])).T[::-1]     # largest eigenvalue first
        self.components_ = np.ascontiguousarray(Lm)
        W_ = Lm.T @ Lm
        self.W_ = 0.5 * (W_ + W_.T)

    # ---- using the metric -----------------------------------------------------------
    def get_mahalanobis_matrix(self):
        """The learned PSD matrix ``W`` (d x d), a copy of ``W_``."""
        _check_fitted(self)
        return self.W_.copy()

    def transform(self, X):
        """Map ``X`` (n, d; dense or sparse) to ``X @ L^T`` (n, rank): Euclidean distances there are ``||.||_W``."""
        _check_fitted(self)
        X = _check_points(X, "X", self.n_features_in_)
        if self.normalize:
            X = normalize_rows(X)
        return np.asarray(X @ self.components_.T)

    def fit_transform(self, X, y):
        return self.fit(X, y).transform(X)

    def _pair_diffs(self, pairs):
        _check_fitted(self)
        if sp.issparse(pairs):
            raise TypeError("pairs must be a dense array of shape (n_pairs, 2, n_features)")
        P = np.asarray(pairs)
        if P.ndim != 3 or P.shape[1] != 2:
            raise ValueError(f"pairs must have shape (n_pairs, 2, n_features), got {P.shape}")
        d = self.n_features_in_
        if P.shape[2] != d:
            raise ValueError(f"pairs have {P.shape[2]} features, but MetricLearner was fitted with {d} features")
        a = _check_points(P[:, 0, :], "pairs")
        b = _check_points(P[:, 1, :], "pairs")
        if self.normalize:
            a, b = normalize_rows(a), normalize_rows(b)
        return a - b

    def pair_distance(self, pairs):
        """``||x - x'||_W`` for each pair; ``pairs`` of shape (n_pairs, 2, d). Returns (n_pairs,)."""
        D = self._pair_diffs(pairs)
        return np.linalg.norm(D @ self.components_.T, axis=1)

    def pair_score(self, pairs):
        """``-||x - x'||_W`` (higher means more similar, metric-learn's convention). Returns (n_pairs,)."""
        return -self.pair_distance(pairs)

    def decision_function(self, pairs):
        """``1 - ||x - x'||_W^2``: the margin of the trained model (> 0 predicts "similar")."""
        D = self._pair_diffs(pairs) @ self.components_.T
        return 1.0 - np.einsum("ij,ij->i", D, D)

    def predict(self, pairs):
        """+1 (similar: ``||x - x'||_W^2 < 1``) or -1 for each pair. Returns (n_pairs,) int."""
        return np.where(self.decision_function(pairs) > 0, 1, -1)
