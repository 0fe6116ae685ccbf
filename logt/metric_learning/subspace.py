"""The principal subspace the metric learners work in when the input has many features.

A full-rank Mahalanobis metric on ``d`` features costs ``O(d^2)`` per sampled pair
and ``O(d^3)`` per PSD projection, and on raw high-dimensional data (pixels, many
noisy or constant features) its whitening amplifies directions that hold only
noise. The learners therefore first map the rows onto their top-``k`` principal
directions (centred, unscaled: the directions of largest spread in the data's own
units) and learn a ``k x k`` metric there; ``components_`` is that metric's factor
composed with the basis, ``(k, d)``.

:func:`principal_subspace` finds the directions exactly from the ``(d, d)`` covariance up to
``EXACT_MAX_FEATURES`` features, or from the rows' ``(n, n)`` Gram matrix on dense input with
fewer rows than that costs (:func:`gram_is_cheaper`; memory ``O(n^2)``, time
``O(n^2 d + n^3)``); otherwise with a randomized range finder (Halko, Martinsson and Tropp
2011), ``n_power_iter`` power iterations on ``k + OVERSAMPLING`` directions, centring
implicitly (sparse input stays sparse): memory ``O(n d)`` for the input plus
``O((n + d)(k + OVERSAMPLING))``, time ``O(n d (k + OVERSAMPLING) n_power_iter)``. Above
``EXACT_MAX_FEATURES`` features it never forms a ``d x d`` array.

:func:`auto_rank` is the default rank (``n_components=None``) of high-dimensional
input; :func:`uses_subspace` says when the default works in a subspace at all, and
:func:`default_principal` gives its principal directions. The default adds the class means'
span outside the principal directions (:func:`class_mean_directions`; their standardized
form, :func:`standardized_mean_directions`, and the principal directions alone, standardized or in
the data's units, only as further candidates of the check, ``FURTHER_CANDIDATES``) and checks the learned metric on
held-out rows (:func:`holdout_split`, :func:`nn1_hits`; cross-fitted on :func:`fold_split`'s
folds, :func:`crossfit_hits`, when the classes are too small to hold rows out) against the
subspace and plain Euclidean distances (:func:`euclidean_rows`), keeping a learned metric only
when the check can tell it apart from them (:func:`choose_candidate`).
"""
import math

import numpy as np
import scipy.sparse as sp
from scipy import linalg
from scipy.linalg import blas

from logt import _threads
from logt.metric_learning import scaling as _scaling

__all__ = ["principal_subspace", "default_principal", "auto_rank", "uses_subspace", "project_rows",
           "loo_1nn_accuracy", "nn1_accuracy", "loo_1nn_hits", "nn1_hits", "choose_candidate", "choose_rank_candidate",
           "ahead_by_se",
           "CANDIDATES", "FURTHER_CANDIDATES", "CHECK_Z", "CROSSFIT_FURTHER_Z",
           "CROSSFIT_BUDGET", "fold_budget", "FOLD_MIN_BUDGET",
           "class_mean_directions", "standardized_mean_directions", "holdout_split", "euclidean_candidate",
           "euclidean_rank", "euclidean_rows",
           "selection_rows", "span_rows",
           "EUCLIDEAN_MAX_ENTRIES", "HOLDOUT_FRAC", "HOLDOUT_MIN", "check_rows", "CHECK_MAX_ROWS", "chance_hits",
           "chance_margin", "near_chance",
           "fold_split", "crossfit_hits", "split_hits", "pick_rows", "CROSSFIT_FOLDS",
           "EXACT_MAX_FEATURES", "OVERSAMPLING", "MAX_AUTO_RANK", "MIN_AUTO_RANK", "AUTO_VARIANCE",
           "gram_is_cheaper", "GRAM_EIGH_COST", "RANGE_PASS_COST", "GRAM_BLOCK"]

EXACT_MAX_FEATURES = 1024     # up to here: eigh of the (d, d) covariance (<= 8 MiB) or the rows' Gram, exact
OVERSAMPLING = 16
MAX_AUTO_RANK = 64            # the default rank's cap (n_components=None)
MIN_AUTO_RANK = 16            # ... and its floor (one dominant feature must not collapse the subspace)
AUTO_VARIANCE = 0.95          # the default rank: the fewest directions holding this share of the variance
# the check's plain-Euclidean candidate: dense input whose components_ for it (euclidean_rows) has at most this many
# entries (64 MiB)
EUCLIDEAN_MAX_ENTRIES = 2 ** 23


def _col_mean(X):
    return np.asarray(X.mean(axis=0)).ravel()


def _matmat(X, mu, B, root_w=None):
    """``(X - 1 mu^T) @ B`` without centring ``X``, each row times ``root_w`` (n,) when given; (n, l)."""
    Y = np.asarray(X @ B) - np.outer(np.ones(X.shape[0]), mu @ B)
    return Y if root_w is None else Y * root_w[:, None]


def _rmatmat(X, mu, Q, root_w=None):
    """``(X - 1 mu^T)^T @ Q`` (``Q``'s rows times ``root_w`` (n,) first, when given); (d, l)."""
    if root_w is not None:
        Q = Q * root_w[:, None]
    return np.asarray(X.T @ Q) - np.outer(mu, Q.sum(axis=0))


GRAM_BLOCK = 512      # _centred_gram centres this many columns at a time


def _centred_blocks(X, mu, root_w=None):
    """``(s, Xc)`` for the column blocks of dense ``X`` (n, d): ``Xc = X[:, s:s + GRAM_BLOCK] - mu[s:...]``,
    centred explicitly (no centred copy of all of ``X``, and no cancellation against a large mean), each row
    times ``root_w`` (n,) when given."""
    for s in range(0, X.shape[1], GRAM_BLOCK):
        Xc = X[:, s:s + GRAM_BLOCK] - mu[s:s + GRAM_BLOCK]
        if root_w is not None:
            Xc *= root_w[:, None]
        yield s, Xc


def _centred_gram(X, mu, root_w=None):
    """Upper triangle of ``Xc Xc^T``, (n, n), ``Xc = X - 1 mu^T`` (rows times ``root_w``) for dense ``X`` (n, d),
    by blocks."""
    n = X.shape[0]
    G = np.zeros((n, n), order="F")
    for _, Xc in _centred_blocks(X, mu, root_w):
        G = blas.dsyrk(1.0, Xc, beta=1.0, c=G, trans=0, lower=0, overwrite_c=1)
    return G


def _centred_rmatmat(X, mu, Q, root_w=None):
    """``Xc^T Q``, (d, l), ``Xc = X - 1 mu^T`` (rows times ``root_w``) for dense ``X`` (n, d), by blocks."""
    out = np.empty((X.shape[1], Q.shape[1]))
    for s, Xc in _centred_blocks(X, mu, root_w):
        out[s:s + Xc.shape[1]] = Xc.T @ Q
    return out


def _fix_signs(V):
    """Each row's largest-magnitude entry positive (a deterministic basis)."""
    j = np.argmax(np.abs(V), axis=1)
    s = np.sign(V[np.arange(V.shape[0]), j])
    s[s == 0] = 1.0
    return V * s[:, None]


def principal_subspace(X, k, rng, n_power_iter=4, weights=None):
    """Top-``k`` principal directions of the rows of ``X`` (centred).

    Parameters
    ----------
    X : (n, d) array or sparse matrix
        Rows are points, in their original units.
    k : int
        Number of directions, ``1 <= k <= d`` (``<= min(n, d)`` above ``EXACT_MAX_FEATURES``).
    rng : numpy.random.Generator
        Source of the randomized range finder's test matrix (not used when
        ``d <= EXACT_MAX_FEATURES`` or on the Gram route).
    n_power_iter : int
        Power iterations of the range finder.
    weights : (n,) array of positive integers, optional
        Row ``i`` stands for ``weights[i]`` equal rows (a point that recurs, e.g. in several pairs): the
        result is that of the rows repeated (their covariance is the same; equal to rounding on the exact
        routes, and on the randomized one where ``n >= k + OVERSAMPLING``) at the cost of the distinct rows.
        ``n`` and ``k``'s bound above count the rows repeated.

    Returns
    -------
    mean : (d,) array
        The column means.
    basis : (k, d) array
        Orthonormal rows, by decreasing variance, signs fixed.
    variances : (k,) array
        The variance (mean squared deviation) along each row of ``basis``.
    total_variance : float
        The sum of the variances of all ``d`` features (``||X - 1 mean^T||_F^2 / n``).
    """
    n_rows, d = X.shape
    k = int(k)
    w = root_w = None
    if weights is not None:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (n_rows,) or not np.all(w >= 1):
            raise ValueError(f"weights must be ({n_rows},) counts >= 1, got shape {w.shape}")
        root_w = np.sqrt(w)
    n = n_rows if w is None else int(round(w.sum()))     # the rows X stands for
    k_max = d if d <= EXACT_MAX_FEATURES else min(n, d)
    if not 1 <= k <= k_max:
        raise ValueError(f"k must be in [1, {k_max}] (d = {d}, n = {n}), got {k}")
    if w is None:
        mu = _col_mean(X)
    else:
        mu = np.asarray(X.T @ w).ravel() / n
    if sp.issparse(X):
        sq = X.multiply(X)
        sq = np.asarray(sq.sum(axis=0) if w is None else sq.T @ w).ravel()
    else:
        sq = np.einsum("ij,ij->j", X, X) if w is None else np.einsum("i,ij,ij->j", w, X, X)
    total = float(max(0.0, (sq.sum() - n * float(mu @ mu))) / n)
    l = min(k + OVERSAMPLING, n_rows, d)
    exact = d <= EXACT_MAX_FEATURES
    if exact and sp.issparse(X):
        X = X.toarray()                                                   # at most EXACT_MAX_FEATURES columns
    gram = not sp.issparse(X) and k <= n_rows and gram_is_cheaper(n_rows, d, l, n_power_iter)
    if exact and not gram:
        Xc = X - mu                                                       # (n, d)
        if root_w is not None:
            Xc *= root_w[:, None]
        C = blas.dsyrk(1.0 / n, Xc.T, trans=0, lower=0)                   # upper triangle of Xc^T Xc / n
        w_, V = linalg.eigh(C, lower=False, subset_by_index=[d - k, d - 1], driver="evr",
                            overwrite_a=True, check_finite=False)
        return mu, _fix_signs(V[:, ::-1].T.copy()), np.maximum(w_[::-1], 0.0), total
    if gram:
        # fewer rows than features: the top-k eigenvectors of the rows' (n, n) Gram matrix (exact) span what the
        # range finder approximates, the centred rows' top-k left singular space; the SVD below gives the directions
        _, Q = linalg.eigh(_centred_gram(X, mu, root_w), lower=False, subset_by_index=[n_rows - k, n_rows - 1],
                           driver="evr", overwrite_a=True, check_finite=False)          # (n, k)
        Bt = _centred_rmatmat(X, mu, Q, root_w)
    else:
        Q, _ = np.linalg.qr(_matmat(X, mu, rng.standard_normal((d, l)), root_w))
        for _ in range(int(n_power_iter)):
            Q, _ = np.linalg.qr(_rmatmat(X, mu, Q, root_w))
            Q, _ = np.linalg.qr(_matmat(X, mu, Q, root_w))
        Bt = _rmatmat(X, mu, Q, root_w)                    # (d, l) = (Q^T Xc)^T
    U, s, _ = np.linalg.svd(Bt, full_matrices=False)
    return mu, _fix_signs(U[:, :k].T.copy()), s[:k] ** 2 / n, total


# the Gram route's rule (gram_is_cheaper), costs in units of one multiply-add of the Gram product (one BLAS thread,
# fitted to timings at (n, d) = (300, 3,000) to (3,000, 1,500)):
GRAM_EIGH_COST = 3.0      # the (n, n) Gram's partial eigendecomposition: this x n^3
RANGE_PASS_COST = 3.1     # one pass of the range finder (a product with the rows, its QR and centring): this x n d l


def gram_is_cheaper(n, d, l, n_power_iter):
    """Whether, for dense (n, d) rows, the Gram route (the rows' ``(n, n)`` Gram matrix, ``n^2 d``
    multiply-adds, and its top eigenvectors, ``GRAM_EIGH_COST n^3``) costs less than the alternative: up to
    ``EXACT_MAX_FEATURES`` features the ``(d, d)`` covariance's (``n d^2 + GRAM_EIGH_COST d^3``: fewer rows
    than features), above it the range finder's ``2 n_power_iter + 2`` passes on ``l`` directions
    (``RANGE_PASS_COST n d l`` each). One BLAS thread, measured against the range finder: 0.02 s against
    0.09 s at (300, 3,000), 0.24 against 0.37 at (1,050, 5,000), 0.26 against 0.17 at (1,400, 2,000). Above
    ``EXACT_MAX_FEATURES`` it needs ``n < 31 l`` (2,480 rows at ``l = 80``): its Gram matrix holds at most
    ``8 n^2`` bytes, 47 MiB."""
    gram = n * n * d + GRAM_EIGH_COST * n ** 3
    if d <= EXACT_MAX_FEATURES:
        return gram < n * d * d + GRAM_EIGH_COST * d ** 3
    return gram < RANGE_PASS_COST * (2 * int(n_power_iter) + 2) * n * d * l


def project_rows(X, mean, basis):
    """``(X - mean) @ basis.T``: the rows' coordinates in the subspace, dense (n, k)."""
    return _matmat(X, mean, np.ascontiguousarray(basis.T))


def uses_subspace(n_samples, n_active):
    """Whether the default (``n_components=None``) learns in a principal subspace.

    It does when the varying features outnumber ``MAX_AUTO_RANK`` twice over or
    exceed the number of samples: there the full-rank metric's ``d^2`` per pair
    and ``d^3`` per projection grow past a ``MAX_AUTO_RANK``-dimensional one's,
    and the target-pair whitening's covariance is rank-deficient or dominated by
    noise directions.
    """
    return n_active > 2 * MAX_AUTO_RANK or n_active >= n_samples


def auto_rank(variances, total_variance, n_samples):
    """The default rank: the fewest leading directions holding ``AUTO_VARIANCE`` of
    the variance, clipped to ``[MIN_AUTO_RANK, MAX_AUTO_RANK]``, at most
    ``n_samples - 1`` and the number of directions given.

    ``variances`` are the leading directions' variances (``MAX_AUTO_RANK`` of them,
    or all), ``total_variance`` the sum over all features.
    """
    v = np.asarray(variances, dtype=np.float64)
    if v.size == 0:
        return 1
    k = MAX_AUTO_RANK
    if total_variance > 0:
        share = np.cumsum(v) / total_variance
        if share[-1] >= AUTO_VARIANCE:
            k = int(np.searchsorted(share, AUTO_VARIANCE) + 1)
    k = max(k, MIN_AUTO_RANK)
    return int(max(1, min(k, MAX_AUTO_RANK, n_samples - 1, v.size)))


def default_principal(X, rng, top=None, weights=None):
    """The default's principal directions of the rows of ``X`` (n, d; dense or sparse): ``(mean (d,),
    basis (k, d))``, the leading ``k = auto_rank(...)`` of the top ``m = min(MAX_AUTO_RANK, n - 1, d)`` (at
    least 1) principal directions (:func:`principal_subspace`, ``rng`` its range finder's generator, used
    above ``EXACT_MAX_FEATURES`` only). ``MetricLearner``'s subspace from every row and, in its
    cross-fitted check, from the rows outside each fold. ``top``: :func:`principal_subspace`'s output for
    these rows, reused when it holds at least ``m`` directions (no second decomposition). ``weights``: as
    :func:`principal_subspace`'s (``n`` counts the rows repeated)."""
    n, d = X.shape
    if weights is not None:
        n = int(round(float(np.sum(weights))))
    m = max(1, min(MAX_AUTO_RANK, n - 1, d))
    if top is not None and top[1].shape[0] >= m:
        mean, basis, var, total = top[0], top[1][:m], top[2][:m], top[3]
    else:
        mean, basis, var, total = principal_subspace(X, m, rng, weights=weights)
    return mean, basis[:auto_rank(var, total, n)]


TIE_RTOL = 32 * np.finfo(np.float64).eps    # D[q, r] within this x (||q||^2 + ||r||^2 + ||r0||^2) of D[q, r0]: tied
CENTRE_ROWS = 4096          # the 1-NN hits centre the references on the median of at most this many of them
NN1_MAX_ENTRIES = 2**21     # a 1-NN block holds at most this many query x reference distances (16 MiB each array)


def _nn1_hits(Zref, cref, Zq, cq, block, skip_self=False, overwrite=False, n_threads=None):
    """Float (m,) in [0, 1]: each query row's 1-NN hit against the references, its nearest reference's label
    equal to its own (1.0) or not (0.0); where several references tie for nearest (within the rounding of the
    distances, ``TIE_RTOL``, a margin per pair of references) the share of them of the query's label, the
    expected hit of a random tie-break.
    Blocked: ``block`` queries at a time, fewer when that would hold more than ``NN1_MAX_ENTRIES`` distances
    (memory ``O(min(n * block, NN1_MAX_ENTRIES))`` per block in flight and, dense, a centred copy of both; 300,000
    rows held 3 GB with 512 queries a block); the same blocks run in threads (:func:`logt._threads.run_blocks`,
    at most ``PARALLEL_MAX_ENTRIES`` distances in flight; ``n_threads``: their number, None: the enclosing
    :func:`logt._threads.search_threads`' or one per CPU), so the same hits on any number; ``skip_self``: ``Zq``
    is ``Zref`` and row ``i`` is not its own neighbour (leave-one-out); ``overwrite``: dense float64 ``Zref`` and ``Zq`` are the caller's fresh copies (rows picked
    by an index), centred in place instead of copied. CSR references are not centred (that would densify them).

    Why shares: on data with repeated points (categorical features, a metric that merges categories) the
    nearest reference is often one of many at the same distance, and a rule such as "the lowest index" makes
    the hit depend on the rows' order: with the rows sorted by class, a collapsed metric (every point tied)
    scored 0.42 against Euclidean's 0.27 on labels unrelated to the features, and the check kept it.

    Why a margin per pair and the median: with one margin from the largest reference norm, and the rows
    centred on the references' mean, one training row with an entry 1e5x its feature's largest made every
    query's near references "tied" (the Euclidean candidate scored like random ties, digits 0.97 -> 0.31, and
    the check kept a worse learned metric)."""
    sparse = sp.issparse(Zref)
    if sparse:                         # CSR references (not with skip_self): the queries are densified
        Zref = sp.csr_matrix(Zref, dtype=np.float64)
        Zq = Zq.toarray() if sp.issparse(Zq) else np.ascontiguousarray(Zq, dtype=np.float64)
    else:
        # centred: the expansion ||r||^2 - 2 q.r loses the distances' digits when the points lie far from the
        # origin relative to their spread (an offset of 1e9 on unit-spread data). On the references'
        # coordinate-wise median, not their mean: one far row moves the mean (every centred row then carries
        # that offset, and its rounding), not the median; integer-valued data stay on their grid (exact ties).
        # Any centre in the bulk keeps the digits: the median of at most CENTRE_ROWS references (every
        # ceil(n / CENTRE_ROWS)-th row, no draw), in blocks of columns of at most NN1_MAX_ENTRIES values (a
        # median over all of 20,000 x 2,000 references cost 0.7 s).
        n_ref, d = Zref.shape
        rows = slice(None, None, -(-n_ref // CENTRE_ROWS) if n_ref > CENTRE_ROWS else 1)
        n_rows = len(range(n_ref)[rows])
        step = max(1, NN1_MAX_ENTRIES // max(n_rows, 1))
        mu = np.zeros(d)
        for a in range(0, d, step):
            mu[a:a + step] = np.median(np.array(Zref[rows, a:a + step], dtype=np.float64), axis=0,
                                       overwrite_input=True)
        Zref = _centred(Zref, mu, overwrite)
        Zq = Zref if skip_self else _centred(Zq, mu, overwrite)
    unit = _scaling.extreme_unit(Zref, Zq)
    if unit != 1.0:                      # squared distances would under- or overflow: exact power-of-two rescale
        Zref = Zref / unit
        Zq = Zref if skip_self else Zq / unit
    if sparse:
        sr = np.asarray(Zref.multiply(Zref).sum(axis=1)).ravel()
        cross = lambda Q: np.asarray(Zref @ Q.T).T                      # noqa: E731
    else:
        sr = np.einsum("ij,ij->i", Zref, Zref)
        cross = lambda Q: Q @ Zref.T                                    # noqa: E731
    sq = np.einsum("ij,ij->i", Zq, Zq)
    sr_tol = TIE_RTOL * sr
    m = Zq.shape[0]
    block = max(1, min(int(block), NN1_MAX_ENTRIES // max(sr.size, 1)))
    workers = _threads.block_workers(n_threads, -(-m // block), m * sr.size, block * sr.size)
    hits = np.zeros(m)

    def blocks(starts):
        for s in starts:
            e = min(m, s + block)
            D = cross(Zq[s:e])                                 # D = ||r||^2 - 2 q.r: the squared distances
            D *= -2.0                                          # less ||q||^2 (the same along a row); in place,
            D += sr                                            # the same bits as sr - 2.0 * cross
            if skip_self:
                D[np.arange(e - s), np.arange(s, e)] = np.inf
            # Ties per pair. Computed, D[q, r] is off by at most about k u (||q||^2 + 2 ||r||^2) (k features,
            # u = eps / 2; the sum ||r||^2 and the product 2 q.r, with 2 |q.r| <= ||q||^2 + ||r||^2), so
            # rounding alone separates D[q, r] from the nearest's D[q, r0] by at most about
            # 2 k u (||q||^2 + ||r||^2 + ||r0||^2): within TIE_RTOL (32 eps = 64 u, the worst case of k <= 32,
            # a typical error sqrt(k) u far beyond) x that sum, r ties with r0. ||r0||^2 <= (||q|| + d0)^2
            # <= 2 ||q||^2 + 2 d0^2 (d0^2 = D[q, r0] + ||q||^2, the nearest's squared distance) bounds r0's
            # norm without picking one of several nearest (the same ties in any row order). A far reference
            # widens its own margin only: a margin from max ||r||^2 made every query's near references tie.
            near = D.min(axis=1)                               # D[q, r0]
            bound = near + TIE_RTOL * (3.0 * sq[s:e] + 2.0 * np.maximum(near + sq[s:e], 0.0))
            D -= sr_tol                                        # D[q, r] - TIE_RTOL ||r||^2, in place
            tied = D <= bound[:, None]
            mine = cref[None, :] == cq[s:e, None]
            hits[s:e] = np.count_nonzero(tied & mine, axis=1) / np.count_nonzero(tied, axis=1)

    _threads.run_blocks(blocks, range(0, m, block), workers)
    return hits


def _centred(Z, mu, overwrite):
    """``Z - mu`` as float64: in place when ``overwrite`` allows it (a writable float64 ndarray), else a copy."""
    if overwrite and isinstance(Z, np.ndarray) and Z.dtype == np.float64 and Z.flags.writeable:
        Z -= mu
        return Z
    return np.asarray(Z, dtype=np.float64) - mu


def loo_1nn_hits(Z, codes, block=512, n_threads=None):
    """Float (n,) in [0, 1]: each row's leave-one-out 1-NN hit among the other rows of ``Z`` (n, k; labels
    ``codes``), ties shared (:func:`_nn1_hits`). Exact, blocked (:func:`_nn1_hits`; ``n_threads`` as there)."""
    _threads.check_n_threads(n_threads)
    if Z.shape[0] < 2:
        return np.zeros(Z.shape[0])
    return _nn1_hits(Z, codes, Z, codes, block, skip_self=True, n_threads=n_threads)


def loo_1nn_accuracy(Z, codes, block=512, n_threads=None):
    """Leave-one-out 1-NN accuracy of the rows ``Z`` (n, k) with labels ``codes`` (n,): the mean of
    :func:`loo_1nn_hits` (0.0 below 2 rows)."""
    return float(np.mean(loo_1nn_hits(Z, codes, block, n_threads))) if Z.shape[0] >= 2 else 0.0


def nn1_hits(Zref, cref, Zq, cq, block=512, overwrite=False, n_threads=None):
    """Float (m,) in [0, 1]: each query row ``Zq`` (m, k; labels ``cq``)'s 1-NN hit among the references
    ``Zref`` (n, k, dense or CSR; labels ``cref``): 1.0 when its nearest reference is of its class, else 0.0;
    references tied for nearest share the hit. Exact, blocked (memory bounded: :func:`_nn1_hits`).
    ``overwrite``: ``Zref`` and ``Zq`` are fresh copies that may be centred in place (the library's checks pass
    rows picked by an index: on wide rows this saves a copy of the references). ``n_threads``: threads over the
    query blocks (:func:`_nn1_hits`; None: the enclosing :func:`logt._threads.search_threads`' count, else one
    per CPU; the hits do not depend on it)."""
    _threads.check_n_threads(n_threads)
    if Zq.shape[0] == 0 or Zref.shape[0] == 0:
        return np.zeros(Zq.shape[0])
    return _nn1_hits(Zref, cref, Zq, cq, block, overwrite=overwrite, n_threads=n_threads)


def nn1_accuracy(Zref, cref, Zq, cq, block=512, n_threads=None):
    """1-NN accuracy of the query rows ``Zq`` (m, k; labels ``cq``) against the references ``Zref``
    (n, k; labels ``cref``): the mean of :func:`nn1_hits` (0.0 without queries or references)."""
    h = nn1_hits(Zref, cref, Zq, cq, block, n_threads=n_threads)
    return float(np.mean(h)) if h.size else 0.0


CANDIDATES = ("learned", "subspace", "euclidean")      # the check's candidates, in the order ties go
# in turn, each replaces the choice so far only when ahead of it
FURTHER_CANDIDATES = ("standardized", "principal", "principal_units")
CHECK_Z = 1.0       # a candidate other than the plainest is kept only when ahead of it by this many standard errors
# a cross-fitted check's further candidates: kept only when ahead of the choice by this many (docs/guide/
# high-dimensional.md, "Further candidates when cross-fitted")
CROSSFIT_FURTHER_Z = 2.0
# the default's cross-fitted check: its fold fits (the learned candidate's and the further candidates') at this share
# of the budget, at least 4,000 calls (docs/guide/high-dimensional.md, "Memory and time")
CROSSFIT_BUDGET = 0.25


def choose_candidate(hits, z=CHECK_Z, further_z=None):
    """The default's check: the name of the metric to keep, from ``hits`` (name -> float (m,), each
    candidate's 1-NN hits on the same checked rows; names from ``CANDIDATES``, "learned" and
    "subspace" always present).

    The plainest candidate ("euclidean" when present, else "subspace") is kept unless the most
    accurate one (ties in ``CANDIDATES`` order) beats it on the same rows by more than ``z`` standard
    errors of the paired difference (the mean of ``h_best - h_plain`` over its standard error): a
    learned metric that the check cannot tell from plain distances does not replace them. On
    raw wide data of few informative directions the three are often within the check's noise (a few
    hundred rows: a standard error near 0.02), and there "the most accurate on these rows" picked
    the worse metric about as often as the better one.

    The further candidates (``FURTHER_CANDIDATES``, optional, ``MetricLearner``'s held-out check):
    "standardized", a metric learned on a subspace extended by :func:`standardized_mean_directions`,
    "principal", a metric learned on the principal directions alone (no class-mean directions), and
    "principal_units", the same directions with their coordinates in the data's units (one common factor, as
    an int ``n_components`` scales them, not standardized), are a further step: in that
    order, each replaces the choice so far only when ahead of it by more than ``z`` standard errors. So a kept
    "standardized" stands unless "principal" beats it by as much: the more accurate of two candidates that both
    beat the plain choice is, on a few hundred rows, a coin toss (one random wide problem of 252 checked rows:
    0.528 against 0.512 on them, 0.493 against 0.564 on new rows).
    ``further_z`` (default ``z``): their margin instead; ``CROSSFIT_FURTHER_Z`` where the check is cross-fitted (a
    few dozen rows: at one standard error they replaced the choice on small problems where they were worse on
    new rows).
    """
    names = [c for c in CANDIDATES if c in hits]
    plain = "euclidean" if "euclidean" in hits else "subspace"
    best = max(names, key=lambda c: (float(np.mean(hits[c])), -names.index(c)))
    choice = best if best != plain and ahead_by_se(hits[best], hits[plain], z) else plain
    for c in FURTHER_CANDIDATES:
        if c in hits and ahead_by_se(hits[c], hits[choice], z if further_z is None else further_z):
            choice = c
    return choice


def choose_rank_candidate(hits, z=CHECK_Z):
    """The check of an int ``n_components``: "learned" (the rank-``k`` metric learned on the top ``k`` principal
    coordinates) unless "subspace" (those coordinates themselves, PCA to ``k``) hits more of the same checked rows
    (``hits``: name -> float (m,), :func:`nn1_hits`); a tie keeps "learned".

    Not :func:`choose_candidate`'s plainest-first rule: there the plain candidate is Euclidean distance, which a
    metric that cannot be told from it loses nothing to; PCA to ``k`` is not that safe. On many classes of unequal
    size under a shared nuisance the checked rows come mostly from the large classes, where both hit every row,
    and PCA kept on such ties fell up to 0.25 below Euclidean k-NN on new rows of the small classes; on 287 wide
    fits (docs/guide/high-dimensional.md, "The check of n_components") this rule left 3 fits below Euclidean by
    more than 0.02, against 9 for the plainest-first one and 22 with the learned metric always kept.

    "default" (optional, the check's third candidate: the default's directions, its metric truncated to rank ``k``)
    then replaces that choice only when ahead of it by more than ``z`` standard errors (:func:`ahead_by_se`)."""
    choice = "subspace" if float(np.mean(hits["subspace"])) > float(np.mean(hits["learned"])) else "learned"
    if "default" in hits and ahead_by_se(hits["default"], hits[choice], z):
        choice = "default"
    return choice


AHEAD_RTOL = 64 * np.finfo(np.float64).eps      # ahead_by_se: a margin this close (relative) to z se is a tie


def ahead_by_se(h_new, h_plain, z=CHECK_Z):
    """Whether per-row hits ``h_new`` beat ``h_plain`` (same rows, (m,)) by more than ``z`` standard errors
    of their paired difference (with fewer than 2 rows: by anything); the rule of :func:`choose_candidate`
    and of the pairs learner's threshold check. A margin equal to ``z`` standard errors up to rounding is not
    ahead: one row won and none lost is exactly one standard error (mean ``1/m``, standard error ``1/m``) on any
    ``m`` rows, and the rounding of the two sides decided it (measured: a further candidate one row of 52 ahead
    kept, and 0.10 worse on new rows)."""
    diff = np.asarray(h_new, dtype=np.float64) - np.asarray(h_plain, dtype=np.float64)
    m = diff.size
    if m < 2:
        return bool(diff.sum() > 0)
    se = float(np.std(diff, ddof=1)) / np.sqrt(m)
    mean = float(np.mean(diff))
    return mean - z * se > AHEAD_RTOL * (abs(mean) + z * se)


def _class_means(X, codes, rows=None):
    """``(means, counts)``: the class means (C, d) of ``X`` (n, d; dense or sparse) over labels ``codes``
    (n,) in ``0..C-1`` and the class sizes (C,), at least 1; ``rows`` (indices, increasing): of those rows
    only (``codes`` still (n,)), as of ``X[rows]`` (the same sums in the same order) without copying them."""
    idx = np.arange(codes.size) if rows is None else rows
    c = codes[idx]
    C = int(c.max()) + 1
    ind = sp.csr_matrix((np.ones(idx.size), (c, idx)), shape=(C, codes.size))
    counts = np.maximum(np.asarray(ind.sum(axis=1)).ravel(), 1.0)
    if sp.issparse(X) or X.flags.c_contiguous:
        S = ind @ X
    else:       # SciPy would copy all of X to C order first (X[:, mask] is Fortran-ordered): by column blocks
        S = np.empty((C, X.shape[1]))
        for j in range(0, X.shape[1], GRAM_BLOCK):
            S[:, j:j + GRAM_BLOCK] = ind @ np.ascontiguousarray(X[:, j:j + GRAM_BLOCK])
    return (S.toarray() if sp.issparse(S) else np.asarray(S)) / counts[:, None], counts


def _outside(M, basis, n_max, rtol):
    """The row space of ``M`` (C, d) outside the orthonormal rows ``basis`` (k, d): orthonormal rows
    ``(m, d)``, ``m <= n_max``, the right singular vectors above ``rtol`` of the largest."""
    M = M.copy()
    for _ in range(2):                            # twice: orthogonal to the basis to rounding
        M -= (M @ basis.T) @ basis
    _, s, Vt = np.linalg.svd(M, full_matrices=False)
    if s.size == 0 or not s[0] > 0.0:
        return np.zeros((0, basis.shape[1]))
    return Vt[s > rtol * s[0]][:max(n_max, 0)]


def _row_indices(rows):
    """``rows`` (None, a bool mask or increasing indices) as increasing indices, or None."""
    if rows is None:
        return None
    rows = np.asarray(rows)
    return np.flatnonzero(rows) if rows.dtype == bool else rows


def class_mean_directions(X, codes, mean, basis, rtol=1e-8, rows=None):
    """The span of the class means outside a basis: orthonormal rows ``(m, d)``, ``m <= C - 1``.

    ``X`` (n, d; dense or sparse) with labels ``codes`` (n,) in ``0..C-1``, ``mean`` (d,) the centre,
    ``basis`` (k, d) orthonormal rows. The class means about ``mean``, weighted by the square roots
    of the class sizes (so they sum to zero: rank at most ``C - 1``), minus their parts in the basis;
    the right singular vectors of what is left, those above ``rtol`` of the largest. The principal
    subspace keeps the directions of largest spread, which on raw data can be features of large
    scale and no class information; the class means are the first-order class information
    (the span of Fisher's discriminant directions), at ``O(n d + C^2 d)``. ``rows`` (a bool mask or
    increasing indices, ``codes`` still (n,)): from those rows only, as from ``X[rows]`` but without a copy.
    """
    means, counts = _class_means(X, codes, _row_indices(rows))
    return _outside((means - mean) * np.sqrt(counts)[:, None], basis, means.shape[0] - 1, rtol)


def standardized_mean_directions(X, codes, mean, basis, rtol=1e-8, rows=None):
    """The class means' discriminant directions in standardized units, outside a basis: orthonormal rows
    ``(m, d)``, ``m <= C - 1`` (arguments as :func:`class_mean_directions`).

    Feature ``j`` of a class mean's offset is divided by ``(s_j + s_0)^2``: ``s_j`` the pooled within-class
    standard deviation, ``s_0`` its median over the features that vary within the classes (the nearest
    shrunken centroids' standardization, Tibshirani et al. 2002), so the direction is the diagonal
    discriminant ``D^-1 (mu_c - mu)`` of a shrunken diagonal covariance ``D``. Where features come in
    incomparable units (scales over decades, few informative features among many noisy ones) the raw
    class means point mostly along large-scale noise features; these do not. ``O(n d + C^2 d)``;
    the default's check keeps a metric learned with them only when it beats its choice without them
    (``MetricLearner``). ``rows``: as in :func:`class_mean_directions` (dense ``X`` is read in blocks of
    those rows; sparse ``X``'s rows are copied).
    """
    idx = _row_indices(rows)
    if idx is not None and sp.issparse(X):
        X, codes, idx = X[idx], codes[idx], None
    means, counts = _class_means(X, codes, idx)
    n_rows = codes.size if idx is None else idx.size
    if sp.issparse(X):                            # counts-like data: the moments' difference, sparse
        ss = np.asarray(X.multiply(X).sum(axis=0)).ravel() - (counts[:, None] * means ** 2).sum(axis=0)
    else:                              # about each class mean (no cancellation), in blocks of 2^22 entries
        ss = np.zeros(X.shape[1])
        step = max(1, 2 ** 22 // max(X.shape[1], 1))
        for i in range(0, n_rows, step):
            b = slice(i, i + step) if idx is None else idx[i:i + step]
            ss += ((X[b] - means[codes[b]]) ** 2).sum(axis=0)
    sd = np.sqrt(np.maximum(ss, 0.0) / max(n_rows - means.shape[0], 1))
    s0 = float(np.median(sd[sd > 0])) if np.any(sd > 0) else 1.0
    M = (means - mean) * np.sqrt(counts)[:, None] / (sd + s0) ** 2
    return _outside(M, basis, means.shape[0] - 1, rtol)


def euclidean_rank(n_samples, n_active, n_features):
    """The rows of ``components_`` for plain Euclidean distances on ``n_features`` input features,
    ``n_active`` of them varying, ``n_samples`` training rows: ``n_active`` (the identity's rows at the
    varying features, :func:`selection_rows`) when that is at most ``EUCLIDEAN_MAX_ENTRIES`` entries, else
    ``min(n_samples - 1, n_active)`` (rows spanning the training rows' differences, :func:`span_rows`) when
    that is, else 0 (no Euclidean candidate)."""
    if n_active * n_features <= EUCLIDEAN_MAX_ENTRIES:
        return n_active
    r = max(min(n_samples - 1, n_active), 1)
    return r if r * n_features <= EUCLIDEAN_MAX_ENTRIES else 0


def euclidean_candidate(X, active):
    """Whether the default's check also tries plain Euclidean distances on ``X`` (n, d): dense input
    whose ``components_`` for them (:func:`euclidean_rows`) has at most ``EUCLIDEAN_MAX_ENTRIES``
    entries (64 MiB; never more than ``X`` itself as float64)."""
    return not sp.issparse(X) and euclidean_rank(X.shape[0], int(np.sum(active)), X.shape[1]) > 0


def selection_rows(active):
    """``(n_active, d)``: the rows of the identity at the varying features; ``X @ rows.T`` keeps them."""
    idx = np.flatnonzero(active)
    E = np.zeros((idx.size, np.size(active)))
    E[np.arange(idx.size), idx] = 1.0
    return E


def span_rows(X, active):
    """``(n - 1, d)``: orthonormal rows (zero at the constant features) whose span holds the differences
    of the rows of ``X`` (n, d; dense).

    The squared distance of any point ``q`` to a row ``x_i`` is ``||P (q - x_i)||^2`` plus the squared
    distance of ``q`` to the span, which is the same for every ``i`` (``P`` the projector onto the span;
    ``x_i - x_j`` lies in it): so Euclidean nearest neighbours among the rows, from anywhere, are the
    nearest neighbours in these coordinates, and ``W = rows^T rows = P`` is plain Euclidean distances
    within the span. Householder QR (LAPACK) of the differences to the first row, ``O(n^2 d)`` time: its
    ``Q`` is orthonormal to rounding whatever the rows' conditioning (heavy-tailed rows spread their
    singular values over many decades, which a Gram matrix's eigendecomposition would lose), and with
    repeated rows it still spans the differences.
    """
    active = np.asarray(active, dtype=bool)
    Xa = np.asarray(X, dtype=np.float64)[:, active]
    rows = np.zeros((max(Xa.shape[0] - 1, 0), active.size))
    if rows.shape[0] == 0:
        return rows
    Q = linalg.qr((Xa[1:] - Xa[0]).T, mode="economic", overwrite_a=True, check_finite=False)[0]
    rows[:, active] = Q.T
    return rows


def euclidean_rows(X, active):
    """``components_`` for plain Euclidean distances on ``X`` (n, d; dense): :func:`selection_rows`
    or :func:`span_rows`, by :func:`euclidean_rank`."""
    n_active = int(np.sum(active))
    if euclidean_rank(X.shape[0], n_active, X.shape[1]) == n_active:
        return selection_rows(active)
    return span_rows(X, active)


HOLDOUT_FRAC = 0.25           # the default's check: this share of each class held out
HOLDOUT_MIN = 20              # fewer held-out rows than this: no split (the check cross-fits, CROSSFIT_FOLDS)
# The full-rank check (few features; MetricLearner._full_rank_check): cross-fitted whenever fewer than this many rows
# would be held out (below ~2,000 rows: every row checked, twice the rows of a 25% hold-out at 4x the fits), the
# fold fits at this share of the final fit's budget; a held-out check's one fit at the full budget (measured:
# docs/guide/metric-learning.md, "The check on few features").
FULL_RANK_HOLDOUT_MIN = 500
FULL_RANK_CHECK_BUDGET = 0.25
CHECK_MAX_ROWS = 2000         # the check compares at most this many held-out rows (an evenly spaced subset)
FOLD_MIN_BUDGET = 4000        # a reduced fold fit's budget is at least this many calls (or the whole budget)


def fold_budget(T, share):
    """The budget of a check's fold fit at ``share`` of the budget ``T`` (oracle calls): ``share T``, at least
    ``min(T, FOLD_MIN_BUDGET)`` (the full-rank check's cross-fitted folds, ``FULL_RANK_CHECK_BUDGET``; a
    default's cross-fitted check, ``CROSSFIT_BUDGET``)."""
    return max(int(T * share), min(T, FOLD_MIN_BUDGET))


def chance_hits(codes, ref, query):
    """The 1-NN hit rate of a neighbour drawn at random from the rows ``ref`` for the rows ``query`` (bool
    masks or indices into ``codes``, int labels ``0..C-1``): ``sum_c r_c q_c`` with ``r``, ``q`` their class
    shares; the level a check's candidate scores when its distances carry nothing about the labels."""
    C = int(codes.max()) + 1
    r = np.bincount(codes[ref], minlength=C) / max(int(np.size(codes[ref])), 1)
    q = np.bincount(codes[query], minlength=C) / max(int(np.size(codes[query])), 1)
    return float(r @ q)


def chance_margin(chance, m, z=2.0):
    """``z`` binomial standard errors of a hit rate ``chance`` on ``m`` rows, ``z sqrt(chance (1 - chance) / m)``
    (``m`` at least 1)."""
    return z * math.sqrt(chance * (1.0 - chance) / max(int(m), 1))


def near_chance(hits, chance, z=2.0):
    """Whether 1-NN hits ``hits`` (float (m,) in [0, 1]) are not above ``chance`` (:func:`chance_hits`) by more
    than ``z`` binomial standard errors (:func:`chance_margin`)."""
    return float(np.mean(hits)) <= chance + chance_margin(chance, np.size(hits), z)


def check_rows(held_out):
    """Indices of the held-out rows the check compares: all of them, or at most ``CHECK_MAX_ROWS``
    evenly spaced ones (in row order), so the check's 1-NN passes cost at most ``CHECK_MAX_ROWS`` x the fit
    rows at any ``n`` (a standard error near 0.01 at the cap)."""
    idx = np.flatnonzero(held_out)
    if idx.size <= CHECK_MAX_ROWS:
        return idx
    return idx[np.linspace(0, idx.size - 1, CHECK_MAX_ROWS).round().astype(np.int64)]


CROSSFIT_FOLDS = 4            # no held-out split: the check cross-fits the learned metric on this many folds


def _by_class(codes, gen):
    """``(order, cls, rank)``: the rows sorted by class, in a random order within each class (one permutation
    drawn from ``gen``), their classes ``codes[order]`` and their ranks within their class (0, 1, ...): the
    stratified draw of :func:`holdout_split` and :func:`fold_split`."""
    perm = gen.permutation(codes.size)
    order = perm[np.argsort(codes[perm], kind="stable")]
    cls = codes[order]
    start = np.concatenate([[0], np.cumsum(np.bincount(codes))[:-1]])
    return order, cls, np.arange(codes.size) - start[cls]


def can_learn(codes):
    """Whether a check's fit has something to learn from rows of labels ``codes`` (int, ``0..C-1``): two
    classes and a class of two rows (a similar and a dissimilar pair). A fold whose other rows fail this (a class
    of one row can leave them with one class) is not fitted: its rows count as misses of the learned metric."""
    counts = np.bincount(codes)
    return bool(np.count_nonzero(counts) >= 2 and counts.max() >= 2)


def fold_split(codes, gen, n_folds=CROSSFIT_FOLDS):
    """Int (n,): each row's fold in ``0..n_folds-1``, stratified: within each class (in a random order, from
    ``gen``) the rows go round the folds from a random first fold, so every class is spread evenly and a
    class of one row lands in a random fold."""
    codes = np.asarray(codes)
    order, cls, rank = _by_class(codes, gen)
    first = gen.integers(n_folds, size=int(codes.max()) + 1)
    folds = np.empty(codes.size, dtype=np.int64)
    folds[order] = (rank + first[cls]) % n_folds
    return folds


def pick_rows(X, rows, columns=None):
    """A copy of the ``rows`` (a bool mask or increasing indices) of ``X`` (n, d; dense, or CSR without
    ``columns``), at the features marked by the bool mask ``columns`` (d,) when given: one copy, never all
    rows at those features first."""
    if columns is None or np.all(columns):
        return X[rows]
    return X[np.ix_(_row_indices(rows), np.flatnonzero(columns))]


def split_hits(A, codes, ref, query, columns=None, block=512):
    """Float (m,): the 1-NN hits (:func:`nn1_hits`) of the rows ``query`` of ``A`` (n, k; labels ``codes``)
    among its rows ``ref`` (bool masks or increasing indices), at the features ``columns`` (:func:`pick_rows`).
    The checks' one way to score rows against others: both are picked here, so they are fresh copies and are
    centred in place (``overwrite``)."""
    return nn1_hits(pick_rows(A, ref, columns), codes[ref], pick_rows(A, query, columns), codes[query], block,
                    overwrite=True)


def crossfit_hits(A, codes, folds, block=512, columns=None):
    """Float (n,) in [0, 1]: each row of ``A`` (n, k; labels ``codes``)'s 1-NN hit (:func:`nn1_hits`) among
    the rows of the other folds (``folds`` from :func:`fold_split`), at the features ``columns`` if given."""
    hits = np.zeros(A.shape[0])
    for f in np.unique(folds):
        te = folds == f
        hits[te] = split_hits(A, codes, ~te, te, columns, block)
    return hits


def holdout_split(codes, gen, frac=HOLDOUT_FRAC, min_rows=HOLDOUT_MIN):
    """Boolean mask (n,) of the rows the metric is fitted on, or None (no split).

    ``floor(frac n_c)`` rows of each class ``c`` (drawn with ``gen``) are held out; None when
    that holds out fewer than ``min_rows`` rows (too few for an accuracy that means anything).
    """
    quota = np.floor(frac * np.bincount(codes)).astype(np.int64)
    if quota.sum() < min_rows:
        return None
    order, cls, rank = _by_class(codes, gen)
    fit = np.ones(codes.size, dtype=bool)
    fit[order[rank < quota[cls]]] = False
    return fit
