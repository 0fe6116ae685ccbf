"""Glitched training rows: a share of the rows with entries blown up by orders of magnitude, found and repaired.

The internal scaling (:mod:`logt.metric_learning.scaling`) fits around rows beyond 5x the 99th-percentile row
norm, so it cannot see them once they are more than 1% of the rows. Such rows (a sensor's or a unit's glitch:
some entries of a few percent of the rows multiplied by 1e2-1e6) then set the principal directions, the scaling
squashes every other row, and the default's check falls back to plain distances: on 84 generated problems (1-10%
of the rows glitched) the default's 1-NN accuracy on the clean test rows was 0.665 against 0.831 for the same fit
on the data without the glitches, 0.819 with the repair; on 42 with 10-25%, 0.636 against 0.814, 0.794 with the
repair; on 80 sparse problems 0.847 against 0.920, 0.911 with the repair (docs/guide/high-dimensional.md, "Glitched
rows"; ``python -m logt.bench.glitched_rows``).

The rule (dense input):

1. *Robust row norms*: each feature centred at its median and divided by the spread between its 10th and 90th
   percentiles, or by its *typical departure* when that is larger: the median of ``|x - median|`` over the
   entries that depart from the median (all from at most ``ROBUST_SAMPLE_ROWS`` rows, every
   ``ceil(n / ROBUST_SAMPLE_ROWS)``-th; for a feature none of whose sampled entries departs, the typical
   departure over every row; a constant feature adds 0). A glitch hardly moves these statistics, so the glitched
   rows stand out by their own factor, while a lit entry of a 0/1 feature counts 1 whatever the feature's
   frequency. (Before ``DEPARTURE_FLOOR``, a spread of 0 fell back to the standard deviation, ``sqrt(p (1 - p))``
   for a 0/1 feature lit in a share ``p`` of the rows, and an interpolated 10-90 spread could be 0.1: clean rows
   with a rare feature lit counted 10 and more, and 5 of 642 clean generated sets, all binary or discrete, had
   rows "repaired" to 0: docs/guide/high-dimensional.md, "Two-valued and rare features".)
2. *A gap*: sorted, the norms jump by more than ``GAP_FACTOR`` (4) between two neighbours with ``k`` rows above,
   ``max(GAP_MIN_SHARE n, GAP_MIN_ROWS) <= k <= GAP_MAX_SHARE n`` (1% and 5 rows to 25%); the lowest such gap (the
   most rows above it) flags the rows above it. Fewer rows are the scaling's (its 99th-percentile rule); more
   are a part of the data, not a glitch.
3. *Not a class*: with labels, the flagged rows are left alone when one class holds more of them than chance
   explains (binomial tail below ``LABEL_ALPHA`` / the number of classes): far rows of one class are signal. For
   the pairs learner (:func:`glitched_pair_points`, the pairs' points taken together), when the pairs with a
   flagged point are labelled differently from the others (:func:`pair_label_rows`).
4. *The repair* (:func:`repair_rows`): a flagged row's entries outside their feature's range over the other rows
   are glitched; at most ``WHOLE_ROW_SHARE`` (half) of the row's moved entries glitched, they are replaced by
   the feature's median and the rest of the row keeps its values (and its information); more, the whole row was
   scaled, and it is scaled back to the other rows' median norm, then clipped to their range.

Sparse input (CSR, :func:`sparse_row_magnitudes`, :func:`repair_sparse_rows`): the same gap and label rules on
each row's *robust magnitude*, the root mean square of its stored nonzero entries each divided by its feature's
median absolute nonzero value (the median of all the nonzeros where a feature has fewer than ``SPARSE_POOL_MIN``):
uncentred (zero means absent), and a mean, not a sum, so documents of different lengths are alike. The repair keeps
the sparsity pattern: a glitched entry (outside its feature's range over the other rows, zeros included; the range
of all their entries for a feature none of them has) becomes the feature's median absolute nonzero value (its
sign kept); a row with more than ``WHOLE_ROW_SHARE`` of its nonzeros glitched is divided by the median of its
entries' ratios to those values, then clipped to the range.

Clean data are left alone: on 507 clean sets (the fifteen, the image and low-dimensional sets, every generator of
:mod:`logt.experiments.highdim_data`, Cauchy, Student-t, log-normal and Pareto rows) no row was flagged and the
largest such jump was 2.2; on 84 fresh glitched problems the flagged rows were glitched ones, all of them on 65
(docs/guide/high-dimensional.md, "Glitched rows"). Only training rows are repaired: a glitched row met by
``transform`` maps far from every training row, which the warning says.
"""
import math

import numpy as np
import scipy.sparse as sp
from scipy import stats

from logt.metric_learning.scaling import extreme_unit

__all__ = ["GlitchedRowsWarning", "DEPARTURE_FLOOR", "GAP_FACTOR", "GAP_MIN_SHARE", "GAP_MIN_ROWS", "GAP_MAX_SHARE",
           "ROBUST_SAMPLE_ROWS", "LABEL_ALPHA", "WHOLE_ROW_SHARE", "robust_row_norms", "gap_rows", "one_class_rows",
           "pair_label_rows", "repair_rows", "repair_blocks", "glitched_blocks", "glitched_rows",
           "glitched_pair_points", "repair_message", "SPARSE_POOL_MIN", "sparse_row_magnitudes", "repair_sparse_rows"]

GAP_FACTOR = 4.0            # neighbouring sorted robust norms this far apart: a gap (clean data: at most 2.2)
GAP_MIN_SHARE = 0.01        # at least 1% of the rows above the gap (fewer: the scaling's 99th-percentile rule)
GAP_MIN_ROWS = 5            # and at least 5 rows
GAP_MAX_SHARE = 0.25        # at most 25% of the rows (more: a part of the data)
ROBUST_SAMPLE_ROWS = 1024   # the medians and percentiles from at most this many rows (evenly strided)
LABEL_ALPHA = 1e-3          # flagged rows this unlikely to be as concentrated in one class by chance: left alone
WHOLE_ROW_SHARE = 0.5       # a flagged row with more of its entries glitched: scaled back whole, not entry by entry
SPARSE_POOL_MIN = 5         # a sparse feature with fewer nonzeros: the median of all the nonzeros as its scale
DEPARTURE_FLOOR = True      # each feature's scale at least its typical departure from the median (False: before)
_BLOCK_ENTRIES = 2**22      # robust norms computed over blocks of rows of at most this many entries (32 MiB)


class GlitchedRowsWarning(UserWarning):
    """Some training rows had entries orders of magnitude beyond the other rows' and were repaired for the fit
    (:func:`glitched_rows`, :func:`glitched_pair_points`); raised by :class:`logt.MetricLearner` and
    :class:`logt.PairsMetricLearner`, whose ``n_repaired_`` counts them."""


def robust_row_norms(*blocks):
    """(n,) norms of the rows of the dense ``blocks`` ((n_b, d) each, taken together: ``n = sum n_b``) centred at
    each feature's median and divided by the larger of its 10-90th percentile spread and its typical departure
    (the median ``|x - median|`` of the entries that depart), the medians, percentiles and departures from at most
    about ``ROBUST_SAMPLE_ROWS`` evenly strided rows; for a feature none of whose sampled entries departs, the
    departure over every row (1 for a constant feature). Scale free: ``X * c`` gives the same norms (to rounding).
    Memory: one block of at most ``_BLOCK_ENTRIES`` entries besides the input and the sample."""
    n, d = sum(B.shape[0] for B in blocks), blocks[0].shape[1]
    stride = max(1, math.ceil(n / ROBUST_SAMPLE_ROWS))
    sample = blocks[0][::stride] if len(blocks) == 1 else np.vstack([B[::stride] for B in blocks])
    lo, med, hi = np.percentile(sample, [10.0, 50.0, 90.0], axis=0)
    spread = hi - lo
    step = max(1, _BLOCK_ENTRIES // max(d, 1))
    if DEPARTURE_FLOOR:
        # each feature's typical departure from its median (over the entries that depart): never below it, so a
        # 0/1 feature's lit entry counts 1 whatever its frequency (an interpolated 10-90 spread of 0.1, or the
        # standard deviation of a rare one, made it 10 and clean rows "glitched"); from the sample, and from every
        # row for a feature none of whose sampled entries departs (1 for a constant feature)
        spread = np.maximum(spread, _sample_departure(sample, med))
        unseen = ~(spread > 0.0)
        if unseen.any():
            dep = _median_departure(blocks, unseen, med[unseen])
            spread[unseen] = np.where(dep > 0.0, dep, 1.0)
    else:
        flat = ~(spread > 0.0)
        if flat.any():
            sd = _column_sd(blocks, flat, step)
            spread[flat] = np.where(sd > 0.0, sd, 1.0)
    norms = []
    for X in blocks:
        for a in range(0, X.shape[0], step):
            R = (X[a:a + step] - med) / spread
            norms.append(np.sqrt(np.einsum("ij,ij->i", R, R)))
    return np.concatenate(norms) if norms else np.zeros(0)


def _sample_departure(sample, med):
    """(d,) the median of ``|x - med|`` over each column's entries of ``sample`` (m, d) that depart from ``med``
    (d,); 0 where none departs, and 0 where it cannot exceed the 10-90th percentile spread: at least ~80% of the
    entries lie within the spread of the median, so the departing ones' median can lie beyond it only when more
    than ~60% sit at the median; computed where more than half do (every column below 64 rows). Continuous
    columns skip the medians (a median over every column of a 1,024 x 12,000 sample cost 0.4 s)."""
    m, d = sample.shape
    out = np.zeros(d)
    cols = (sample == med).sum(axis=0) > m // 2 if m >= 64 else np.ones(d, dtype=bool)
    if cols.any():
        out[cols] = _median_departure((sample,), cols, med[cols])
    return out


def _median_departure(blocks, cols, med):
    """(m,) for the ``cols`` ((d,) bool) columns: the median of ``|x - med|`` over every row of the ``blocks``
    whose entry departs from the column's median ``med`` (m,); 0 where none departs. Over the departing entries
    only, as the sparse rule's typical nonzero: most of such a column sits at the median. Columns in chunks of at most ``_BLOCK_ENTRIES`` entries; per chunk one sort of
    its departing entries by (column, value)."""
    idx = np.flatnonzero(cols)
    out = np.zeros(idx.size)
    n = sum(B.shape[0] for B in blocks)
    width = max(1, _BLOCK_ENTRIES // max(n, 1))
    for c0 in range(0, idx.size, width):
        c = idx[c0:c0 + width]
        A = np.concatenate([B[:, c] for B in blocks]) if len(blocks) > 1 else blocks[0][:, c]
        D = np.abs(A - med[c0:c0 + width])
        r, k = np.nonzero(D)
        v = D[r, k]
        order = np.lexsort((v, k))
        v, k = v[order], k[order]
        counts = np.bincount(k, minlength=c.size)
        starts = np.cumsum(counts) - counts
        has = counts > 0
        lo, hi = starts + (counts - 1) // 2, starts + counts // 2
        out[c0:c0 + c.size][has] = 0.5 * (v[lo[has]] + v[hi[has]])      # np.median's middle (or middle two)
    return out


def _column_sd(blocks, cols, step):
    """(m,) standard deviations of the ``cols`` ((d,) bool) columns over every row of the ``blocks``, two passes
    over chunks of ``step`` rows (no copy of the columns)."""
    n = sum(X.shape[0] for X in blocks)
    total = np.zeros(int(cols.sum()))
    for X in blocks:
        for a in range(0, X.shape[0], step):
            total += X[a:a + step, cols].sum(axis=0)
    mean = total / n
    sq = np.zeros_like(mean)
    for X in blocks:
        for a in range(0, X.shape[0], step):
            D = X[a:a + step, cols] - mean
            sq += np.einsum("ij,ij->j", D, D)
    return np.sqrt(sq / n)


def gap_rows(norms):
    """(n,) bool: the rows above the lowest gap of the sorted ``norms`` (a jump by more than ``GAP_FACTOR`` with
    ``k`` rows above it, ``max(ceil(GAP_MIN_SHARE n), GAP_MIN_ROWS) <= k <= floor(GAP_MAX_SHARE n)``); all False
    without one (and below 50 rows, where no ``k`` qualifies)."""
    n = norms.size
    out = np.zeros(n, dtype=bool)
    kmin = max(math.ceil(GAP_MIN_SHARE * n), GAP_MIN_ROWS)
    kmax = math.floor(GAP_MAX_SHARE * n)
    if kmax < kmin:
        return out
    s = np.sort(norms)
    k = np.arange(kmax, kmin - 1, -1)             # most rows above first: the lowest gap
    below, above = s[n - k - 1], s[n - k]
    hit = np.flatnonzero((below > 0.0) & (above > GAP_FACTOR * below))
    if hit.size:
        out = norms > s[n - k[hit[0]] - 1]
    return out


def one_class_rows(codes, rows):
    """Whether the flagged ``rows`` ((n,) bool) are more concentrated in one class than chance explains: for some
    class ``c`` (``codes`` (n,) ints), ``P(Binomial(k, p_c) >= k_c) < LABEL_ALPHA / n_classes`` with ``k`` the
    flagged rows, ``k_c`` those of class ``c`` and ``p_c`` the class's share of all rows."""
    counts = np.bincount(codes)
    flagged = np.bincount(codes[rows], minlength=counts.size)
    k = int(flagged.sum())
    present = counts > 0
    p = counts[present] / codes.size
    tail = stats.binom.sf(flagged[present] - 1, k, p)
    return bool(np.min(tail) < LABEL_ALPHA / int(present.sum()))


def pair_label_rows(y, touched):
    """Whether the pairs with a flagged point (``touched`` (n_pairs,) bool) differ in their labels ``y``
    (n_pairs,) in {-1, +1} from the other pairs more than chance explains: Fisher's exact test on the 2 x 2 table
    (touched or not, similar or not), two-sided p-value below ``LABEL_ALPHA``. A glitch does not change a pair's
    label; far points of one kind (all similar to each other, or dissimilar to the rest) do."""
    sim = y > 0
    table = [[int(np.sum(touched & sim)), int(np.sum(touched & ~sim))],
             [int(np.sum(~touched & sim)), int(np.sum(~touched & ~sim))]]
    return bool(stats.fisher_exact(table).pvalue < LABEL_ALPHA)


def _repair_stats(keep):
    """``(lo, hi, med, target)`` of the other rows ``keep`` (m, d), a copy this function may reorder: each feature's
    minimum, maximum and median, and the median row norm."""
    lo, hi = keep.min(axis=0), keep.max(axis=0)
    target = float(np.median(np.sqrt(np.einsum("ij,ij->i", keep, keep))))
    med = np.median(keep, axis=0, overwrite_input=True)          # keep is ours: partitioned in place
    return lo, hi, med, target


def _repaired(B, lo, hi, med, target):
    """The flagged rows ``B`` (m, d) (a copy, changed in place) repaired with :func:`_repair_stats`'s values."""
    bad = (B < lo) | (B > hi)
    moved = np.maximum(np.count_nonzero(B != med, axis=1), 1)
    whole = np.count_nonzero(bad, axis=1) > WHOLE_ROW_SHARE * moved
    part = bad & ~whole[:, None]
    B[part] = np.broadcast_to(med, B.shape)[part]
    if whole.any():
        norms = np.linalg.norm(B[whole], axis=1)
        f = np.divide(target, norms, out=np.ones_like(norms), where=norms > 0.0)
        B[whole] = np.clip(B[whole] * f[:, None], lo, hi)
    return B


def repair_rows(X, rows):
    """A copy of dense ``X`` (n, d) with its ``rows`` ((n,) bool) repaired from the other rows' statistics.

    An entry outside its feature's range over the other rows is a glitched entry. A row with at most
    ``WHOLE_ROW_SHARE`` of its entries glitched (counted among those that differ from the feature's median over the
    other rows) gets those entries replaced by the medians: the rest of the row keeps its values. A row with more
    (the whole row scaled) is scaled back to the other rows' median norm, then clipped to their range: its direction
    is what is left of it. Memory: two copies of ``X`` at most (the other rows, partitioned for their medians, then
    the result)."""
    return repair_blocks((X,), (rows,))[0]


def repair_blocks(blocks, masks):
    """:func:`repair_rows` on row blocks taken together (the statistics from every block's unflagged rows): a
    list of copies of the ``blocks`` ((n_b, d) each) with their ``masks`` ((n_b,) bool) rows repaired."""
    keep = blocks[0][~masks[0]] if len(blocks) == 1 else np.vstack([X[~m] for X, m in zip(blocks, masks)])
    stats_ = _repair_stats(keep)
    del keep
    out = []
    for X, m in zip(blocks, masks):
        Xr = np.array(X, copy=True)
        Xr[m] = _repaired(X[m], *stats_)
        out.append(Xr)
    return out


def _canonical(X):
    """CSR ``X`` without duplicate entries and with sorted indices (a copy where ``X`` has them)."""
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return X


def _entry_rows(X):
    """(nnz,) row index of each stored entry of CSR ``X``."""
    return np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))


def _group_medians(values, groups, n_groups):
    """(n_groups,) median of ``values`` within each group (``groups`` the group index of each value; NaN for an
    empty group) and (n_groups,) the group sizes; one sort."""
    order = np.lexsort((values, groups))
    v = values[order]
    counts = np.bincount(groups, minlength=n_groups)
    start = np.concatenate(([0], np.cumsum(counts)[:-1]))
    med = np.full(n_groups, np.nan)
    has = counts > 0
    lo = start[has] + (counts[has] - 1) // 2
    hi = start[has] + counts[has] // 2
    med[has] = 0.5 * (v[lo] + v[hi])
    return med, counts


def _sparse_scales(X):
    """(d,) each feature's median absolute nonzero value over the rows of canonical CSR ``X`` (the median over all
    its nonzeros where a feature has fewer than ``SPARSE_POOL_MIN``; 1 with no nonzero at all)."""
    a = np.abs(X.data)
    nz = a > 0.0
    if not nz.any():
        return np.ones(X.shape[1])
    med, counts = _group_medians(a[nz], X.indices[nz], X.shape[1])
    pooled = float(np.median(a[nz]))
    return np.where(counts >= SPARSE_POOL_MIN, med, pooled)


def sparse_row_magnitudes(X):
    """(n,) robust magnitudes of the rows of CSR ``X`` (n, d): the root mean square of each row's nonzero
    entries, each divided by its feature's median absolute nonzero value (:func:`_sparse_scales`); 0 for an empty
    row. Scale free, and a mean: a row's length (its number of nonzeros) does not enter. Memory: a few arrays of
    ``nnz`` entries."""
    X = _canonical(X)
    n = X.shape[0]
    r = X.data / _sparse_scales(X)[X.indices]
    rows = _entry_rows(X)
    sq = np.bincount(rows, weights=r * r, minlength=n)
    count = np.bincount(rows[X.data != 0.0], minlength=n)
    return np.sqrt(sq / np.maximum(count, 1))


def repair_sparse_rows(X, rows):
    """A CSR copy of ``X`` (n, d) with its ``rows`` ((n,) bool) repaired from the other rows' statistics.

    Each feature's range over the other rows (zeros included where one of them lacks it; for a feature none of
    them has, the range of all their entries and 0) and its median absolute nonzero value ``s_j`` over them
    (:func:`_sparse_scales`). A flagged row's stored entry outside its feature's range is glitched. With at most
    ``WHOLE_ROW_SHARE`` of the row's nonzeros glitched, each glitched entry becomes ``sign * s_j`` (the feature
    stays present, with a typical value); with more (the whole row scaled), the row is divided by the median of
    ``|x_j| / s_j`` over its nonzeros (where above 1), then clipped to the range. The sparsity pattern is kept.
    """
    X = sp.csr_matrix(X, copy=True)
    X.sum_duplicates()
    X.eliminate_zeros()                               # a stored zero is an absent entry
    keep = X[np.flatnonzero(~rows)]
    n_keep, d = keep.shape
    s = _sparse_scales(keep)
    data = keep.data
    counts = np.bincount(keep.indices, minlength=d)
    lo = np.zeros(d)
    hi = np.zeros(d)
    if data.size:
        has = counts > 0
        mn = np.full(d, np.inf)
        mx = np.full(d, -np.inf)
        np.minimum.at(mn, keep.indices, data)
        np.maximum.at(mx, keep.indices, data)
        full = counts == n_keep                       # no zero among the other rows
        lo[has] = np.where(full[has], mn[has], np.minimum(mn[has], 0.0))
        hi[has] = np.where(full[has], mx[has], np.maximum(mx[has], 0.0))
        lo[~has] = min(0.0, float(data.min()))
        hi[~has] = max(0.0, float(data.max()))
    ent_rows = _entry_rows(X)
    sel = rows[ent_rows]                              # the flagged rows' (nonzero) entries
    j = X.indices[sel]
    v = X.data[sel]
    r = ent_rows[sel]
    bad = (v < lo[j]) | (v > hi[j])
    n_bad = np.bincount(r, weights=bad, minlength=X.shape[0])
    n_nz = np.bincount(r, minlength=X.shape[0])
    w = (n_bad > WHOLE_ROW_SHARE * np.maximum(n_nz, 1))[r]
    part = bad & ~w
    v[part] = np.sign(v[part]) * s[j[part]]
    if w.any():
        f, _ = _group_medians(np.abs(v[w]) / s[j[w]], r[w], X.shape[0])
        f = np.where(np.isfinite(f) & (f > 1.0), f, 1.0)
        v[w] = np.clip(v[w] / f[r[w]], lo[j[w]], hi[j[w]])
    X.data[sel] = v
    X.eliminate_zeros()
    return X


def glitched_blocks(blocks, is_signal=None):
    """``(repaired, masks)``: the glitched rows of the dense row ``blocks`` ((n_b, d) each, taken together; or one
    CSR block, with :func:`sparse_row_magnitudes` and :func:`repair_sparse_rows`) and the blocks with them repaired
    (module docstring; ``masks`` (n_b,) bool each). Nothing flagged, or ``is_signal(masks)`` true (the label rule),
    gives the ``blocks`` themselves, untouched, and all-False masks. Magnitudes whose squares under- or overflow are
    found and repaired on the blocks over a power of two (exact)."""
    sparse = sp.issparse(blocks[0])
    if sparse and len(blocks) != 1:
        raise ValueError("glitched_blocks takes one sparse block")
    sizes = [B.shape[0] for B in blocks]
    none = [np.zeros(m, dtype=bool) for m in sizes]
    unit = extreme_unit(*blocks)
    scaled = blocks if unit == 1.0 else [B / unit for B in blocks]
    rows = gap_rows(sparse_row_magnitudes(scaled[0]) if sparse else robust_row_norms(*scaled))
    masks = np.split(rows, np.cumsum(sizes)[:-1])
    if not rows.any() or (is_signal is not None and is_signal(masks)):
        return list(blocks), none
    repaired = [repair_sparse_rows(scaled[0], masks[0])] if sparse else repair_blocks(scaled, masks)
    return (repaired if unit == 1.0 else [B * unit for B in repaired]), masks


def glitched_rows(X, codes=None):
    """``(X_repaired, rows)``: the glitched training rows of ``X`` (n, d; dense, or sparse: CSR out) (module
    docstring; (n,) bool) and ``X`` with them repaired (``X`` itself, untouched, when there are none). ``codes``
    (n,) class codes, optional: flagged rows concentrated in one class are left alone."""
    if X.shape[0] < 2:
        return X, np.zeros(X.shape[0], dtype=bool)
    if sp.issparse(X) and X.format != "csr":
        X = X.tocsr()
    signal = None if codes is None else (lambda masks: one_class_rows(np.asarray(codes), masks[0]))
    (Xr,), (rows,) = glitched_blocks((X,), signal)
    return Xr, rows


def glitched_pair_points(a, b, y):
    """``(a_repaired, b_repaired, rows_a, rows_b)``: :func:`glitched_rows` on the pairs' points ``a``, ``b``
    ((n_pairs, d) dense each; a point in several pairs counted in each), the label rule being
    :func:`pair_label_rows` on the pair labels ``y``; ``a`` and ``b`` themselves, untouched, when nothing is
    repaired."""
    if a.shape[0] < 1:
        none = np.zeros(0, dtype=bool)
        return a, b, none, none
    (ar, br), (ra, rb) = glitched_blocks((a, b), lambda masks: pair_label_rows(np.asarray(y), masks[0] | masks[1]))
    return ar, br, ra, rb


def repair_message(n_rows, n, what="training rows", sparse=False):
    """The warning of a fit that repaired ``n_rows`` of its ``n`` training rows (``what``; ``sparse``: CSR input)."""
    if sparse:
        why = ("(a gap in their robust magnitudes: glitches of a sensor or a unit, or counts of documents of very "
               "different lengths? logt.datasets.normalize_rows scales rows to norm 1)")
        how = ("their entries outside the other rows' range were replaced by the features' typical nonzero "
               "values (rows scaled whole: scaled back)")
    else:
        why = "(a gap in their robust norms: glitches of a sensor or a unit?)"
        how = ("their entries outside the other rows' range were replaced by the features' medians (rows scaled "
               "whole: scaled back)")
    return (f"{n_rows} of {n} {what} ({n_rows / n:.1%}) have entries orders of magnitude beyond the "
            f"other rows' {why}; for the fit, {how}, n_repaired_. New rows of this kind are not repaired by "
            "transform or the pair methods and map far from every training row: clean or drop them. "
            "(logt.metric_learning.outliers)")
