"""Property-based tests (hypothesis): projections against their definitions,
the LIBSVM and IDX readers against independent writers.

Profiles: the default ``ci`` runs 500 examples per property (README's test
command, hence CI; ~15 s for the module); ``HYPOTHESIS_PROFILE=dev`` runs 60.
"""
import gzip
import os

import numpy as np
import pytest
import scipy.sparse as sp

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from logt.datasets import load_idx, load_libsvm  # noqa: E402
from logt.domains import Box, EuclideanBall, TraceBoundedPSD, PSDCone  # noqa: E402
from logt.domains._psd import PSDProjector  # noqa: E402
from logt._kernels._neighbors import pair_sq_distances  # noqa: E402

settings.register_profile("ci", max_examples=500, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=60, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

PATHS = ["auto", "jacobi", "neg", "pos", "full", "chol"]


@st.composite
def sym_matrices(draw, dmax=12):
    """A symmetric matrix Q diag(l) Q^T with clustered / repeated / tiny / huge
    eigenvalues, plus the byte order it is handed over in."""
    d = draw(st.integers(1, dmax))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    kind = draw(st.sampled_from(["random", "repeated", "clustered", "tiny", "huge", "mixed"]))
    scale = draw(st.sampled_from([1.0, 1e-300, 1e-150, 1e150, 1e300, 1e-310]))
    if kind == "random":
        lam = rng.standard_normal(d)
    elif kind == "repeated":
        lam = rng.choice([-1.0, 0.0, 2.0], size=d)
    elif kind == "clustered":
        lam = rng.choice([-1.0, 1.0], size=d) + 1e-13 * rng.standard_normal(d)
    elif kind == "tiny":
        lam = rng.standard_normal(d) * 1e-14
        lam[0] = 1.0
    elif kind == "huge":
        lam = rng.standard_normal(d)
        lam[0] = 1e12
    else:
        lam = rng.standard_normal(d) * 10.0 ** rng.integers(-12, 12, size=d)
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    A = (Q * lam) @ Q.T
    A = (A + A.T) / 2
    m = np.abs(A).max()
    if m > 0:
        A = A / m * scale           # largest entry = scale (no overflow by construction)
    A = (A + A.T) / 2
    order = draw(st.sampled_from(["=", ">", "<"]))
    return A.astype(A.dtype.newbyteorder(order)) if order != "=" else A


def _ref_psd(A):
    """Independent reference: numpy.linalg.eigh on a scaled copy."""
    A = np.asarray(A, dtype=np.float64)
    m = np.abs(A).max()
    if m == 0:
        return np.zeros_like(A)
    B = A / m
    lam, V = np.linalg.eigh(B)
    return ((V * np.maximum(lam, 0)) @ V.T) * m


def _check_psd_projection(A, R):
    An = np.asarray(A, dtype=np.float64)
    m = np.abs(An).max()
    assert R.shape == An.shape and R.dtype == np.float64
    assert np.all(np.isfinite(R))
    assert np.array_equal(R, R.T)
    if m == 0:
        assert not R.any()
        return
    d = An.shape[0]
    tol = 1e-10 * d * m
    # the reference (eigh)
    np.testing.assert_allclose(R, _ref_psd(An), rtol=0, atol=tol)
    # PSD: smallest eigenvalue >= -tol (scaled)
    assert np.linalg.eigvalsh(R / m).min() >= -1e-10 * d
    # variational inequality <A - R, Y - R> <= 0 for Y in the cone (tested at
    # Y = 0, Y = 2R and random PSD Y), i.e. <A - R, R> = 0 and A - R is NSD
    G = (An - R) / m
    Rn = R / m
    assert abs(np.sum(G * Rn)) <= 1e-9 * d * d
    rng = np.random.default_rng(d)
    for _ in range(3):
        Z = rng.standard_normal((d, d))
        Y = Z @ Z.T
        assert np.sum(G * (Y - Rn)) <= 1e-9 * d * d * (1 + np.abs(Y).max())


@given(sym_matrices(), st.sampled_from(PATHS))
def test_psd_every_path(A, path):
    d = A.shape[0]
    P = PSDProjector(d)
    R = P._project_with(A, path)
    _check_psd_projection(A, R)
    # idempotent, up to the rounding of the first projection (relative to max|A|)
    R2 = P._project_with(R, path)
    m = np.abs(np.asarray(A, dtype=np.float64)).max()
    np.testing.assert_allclose(R2, R, rtol=0, atol=1e-10 * d * m)


@given(sym_matrices(dmax=8))
def test_psd_cone_project(A):
    d = A.shape[0]
    R = PSDCone(d).project(A)
    _check_psd_projection(A, R)
    # a native out= gets the same result; a non-native out= is a clear error
    out = np.empty((d, d))
    R3 = PSDCone(d).project(A, out=out)
    assert R3 is out
    np.testing.assert_array_equal(out, R)
    if not A.dtype.isnative:
        with pytest.raises(TypeError, match="out must be a native-byte-order"):
            PSDCone(d).project(A, out=np.empty_like(A))


finite = st.floats(-1e300, 1e300, allow_nan=False, allow_infinity=False, allow_subnormal=True)


@given(st.integers(1, 10).flatmap(lambda n: st.tuples(
    st.lists(finite, min_size=n, max_size=n), st.lists(finite, min_size=n, max_size=n),
    st.floats(1e-200, 1e200))))
def test_ball_projection(args):
    v, c, r = (np.array(args[0]), np.array(args[1]), args[2])
    B = EuclideanBall(len(v), radius=r, center=c)
    P = B.project(v)
    assert np.all(np.isfinite(P))
    s = max(np.abs(v - c / 2 - c / 2).max(), np.abs(P - c).max(), 1e-300)
    dist = np.linalg.norm((P - c) / s) * s
    big = max(np.abs(c).max(), np.abs(v).max())
    slack = 1e-12 * r + 8 * np.finfo(float).eps * big * np.sqrt(len(v)) + 1e-300
    assert dist <= r + slack
    # reference: the closed form (scaled to avoid overflow)
    w = v / 2 - c / 2
    nw = np.linalg.norm(w / max(np.abs(w).max(), 1e-300)) * max(np.abs(w).max(), 1e-300) * 2
    if nw <= r:
        np.testing.assert_array_equal(P, v)
    else:
        ref = c + (w / nw) * 2 * r
        np.testing.assert_allclose(P, ref, rtol=1e-9, atol=1e3 * slack)
    # idempotent (up to rounding at the scale of the centre)
    np.testing.assert_allclose(B.project(P), P, rtol=1e-12, atol=1e3 * slack)


@given(st.integers(1, 10).flatmap(lambda n: st.tuples(
    st.lists(finite, min_size=n, max_size=n), st.lists(finite, min_size=n, max_size=n),
    st.lists(finite, min_size=n, max_size=n))))
def test_box_projection(args):
    v, a, b = (np.array(x) for x in args)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    B = Box(lo, hi)
    P = B.project(v)
    np.testing.assert_array_equal(P, np.minimum(np.maximum(v, lo), hi))
    np.testing.assert_array_equal(B.project(P), P)
    # variational inequality coordinatewise: (v - P)(y - P) <= 0 at both corners
    for y in (lo, hi):
        assert np.all(np.sign(v - P) * np.sign(y - P) <= 0)


@given(sym_matrices(dmax=8), st.floats(1e-3, 1e3))
def test_trace_bounded_psd(A, tau):
    An = np.asarray(A, dtype=np.float64)
    m = np.abs(An).max()
    if m == 0 or not (1e-100 < m < 1e100):
        return                      # tau is O(1): keep the comparison meaningful
    d = An.shape[0]
    D = TraceBoundedPSD(d, tau)
    R = D.project(A)
    # reference: eigh, then the projection of the spectrum onto {l >= 0, sum <= tau}
    lam, V = np.linalg.eigh(An)
    lp = np.maximum(lam, 0)
    if lp.sum() > tau:              # simplex projection by sorting
        u = np.sort(lam)[::-1]
        cs = np.cumsum(u)
        k = np.nonzero(u - (cs - tau) / np.arange(1, d + 1) > 0)[0][-1]
        theta = (cs[k] - tau) / (k + 1)
        lp = np.maximum(lam - theta, 0)
    ref = (V * lp) @ V.T
    sc = max(m, tau)
    np.testing.assert_allclose(R, ref, rtol=0, atol=1e-9 * d * sc)
    assert np.trace(R) <= tau * (1 + 1e-10)
    assert np.linalg.eigvalsh(R).min() >= -1e-9 * d * sc
    np.testing.assert_allclose(D.project(R), R, rtol=0, atol=1e-9 * d * sc)


# --- LIBSVM reader vs an independent writer ---------------------------------

def _write_libsvm(path, X, y, qid=None, comments=False, crlf=False, compress=False):
    """Plain writer: one line per row, repr() of floats, 1-based indices."""
    nl = "\r\n" if crlf else "\n"
    lines = []
    if comments:
        lines.append("# generated by the test writer")
    for i in range(X.shape[0]):
        row = X.getrow(i)
        toks = [repr(float(y[i]))]
        if qid is not None:
            toks.append(f"qid:{int(qid[i])}")
        for j, v in zip(row.indices, row.data):
            toks.append(f"{j + 1}:{float(v)!r}")
        line = " ".join(toks)
        if comments and i % 2:
            line += "  # row %d" % i
        lines.append(line)
    data = (nl.join(lines) + nl).encode("ascii")
    if compress:
        data = gzip.compress(data)
    with open(path, "wb") as fh:
        fh.write(data)


values = st.floats(allow_nan=False, allow_infinity=False, allow_subnormal=True, width=64)


@st.composite
def libsvm_data(draw):
    n = draw(st.integers(1, 30))
    d = draw(st.integers(1, 2**31 - 1)) if draw(st.booleans()) else draw(st.integers(1, 50))
    rows = []
    for _ in range(n):
        k = draw(st.integers(0, min(d, 6)))
        idx = sorted(draw(st.sets(st.integers(0, d - 1), min_size=k, max_size=k)))
        vals = [draw(values.filter(lambda v: v != 0)) for _ in idx]
        rows.append((idx, vals))
    indptr = np.cumsum([0] + [len(r[0]) for r in rows])
    indices = np.array([j for r in rows for j in r[0]], dtype=np.int64)
    data = np.array([v for r in rows for v in r[1]], dtype=np.float64)
    X = sp.csr_matrix((data, indices.astype(np.int32), indptr), shape=(n, d))
    y = np.array([draw(values) for _ in range(n)])
    qid = np.array([draw(st.integers(-2**62, 2**62)) for _ in range(n)]) \
        if draw(st.booleans()) else None
    return X, y, qid


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.data_too_large])
@given(libsvm_data(), st.booleans(), st.booleans(), st.booleans())
def test_libsvm_round_trip(tmp_path, data, comments, crlf, compress):
    X, y, qid = data
    p = tmp_path / "f.svm"
    _write_libsvm(p, X, y, qid, comments, crlf, compress)
    d = X.shape[1]
    out = load_libsvm(p, n_features=d, query_id=True)
    X2, y2, q2 = out
    assert X2.shape == X.shape and X2.indices.dtype == np.int32
    np.testing.assert_array_equal(X2.indptr, X.indptr)
    np.testing.assert_array_equal(X2.indices, X.indices)
    np.testing.assert_array_equal(X2.data, X.data)       # repr round-trips exactly
    np.testing.assert_array_equal(y2, y)
    if qid is None:
        assert q2.shape == (0,)
    else:
        np.testing.assert_array_equal(q2, qid)


_IDX = {0x08: ("B", 0, 255), 0x09: ("b", -128, 127), 0x0B: ("h", -2**15, 2**15 - 1),
        0x0C: ("i", -2**31, 2**31 - 1), 0x0D: ("f", None, None), 0x0E: ("d", None, None)}


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(code=st.sampled_from(sorted(_IDX)), shape=st.lists(st.integers(0, 4), min_size=1, max_size=4),
       compress=st.booleans(), data=st.data())
def test_idx_round_trip(tmp_path, code, shape, compress, data):
    """Any IDX file (every type, 1-4 dimensions, empty ones too, plain or gzip) written element by element with
    struct reads back as the same values and shape."""
    import struct
    fmt, lo, hi = _IDX[code]
    n = int(np.prod(shape))
    if lo is None:
        width = 32 if fmt == "f" else 64
        vals = data.draw(st.lists(st.floats(allow_nan=False, width=width), min_size=n, max_size=n))
    else:
        vals = data.draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n))
    raw = bytes([0, 0, code, len(shape)]) + b"".join(struct.pack(">I", k) for k in shape) \
        + b"".join(struct.pack(">" + fmt, v) for v in vals)
    p = tmp_path / "f.idx"
    p.write_bytes(gzip.compress(raw) if compress else raw)
    got = load_idx(p)
    assert got.shape == tuple(shape) and got.dtype.isnative
    np.testing.assert_array_equal(got.ravel(), np.array(vals, dtype=got.dtype))


# ---------------------------------------------------------------- the dense pair gradient's two paths

@st.composite
def pair_problems(draw):
    n = draw(st.integers(2, 40))
    d = draw(st.integers(1, 24))
    B = draw(st.integers(1, 300))
    seed = draw(st.integers(0, 2**32 - 1))
    learn = draw(st.booleans())
    scale = draw(st.sampled_from([1e-150, 1e-3, 1.0, 1e3, 1e150]))       # W's magnitude
    return n, d, B, seed, learn, scale


@given(pair_problems())
def test_metric_gradient_points_equals_pairs_and_numpy(prob):
    from logt.oracles.metric import MetricLearning
    n, d, B, seed, learn, scale = prob
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= max(1.0, float(np.linalg.norm(X, axis=1).max()))
    y = np.arange(n) % 2                                   # both classes present
    o = MetricLearning(X, y, 0.1, learn_threshold=learn, n_eval_pairs=50, eval_rng=seed)
    A = rng.standard_normal(o.shape)
    Z = scale * (A + A.T) / 2
    i = rng.integers(0, n, B).astype(np.int32)
    j = rng.integers(0, n, B).astype(np.int32)              # i == j allowed (D = 0)
    out = {}
    for path in ("pairs", "points"):
        o.point_path = path
        out[path] = o._mean_grad_pairs(Z, i, j)
        assert np.isfinite(out[path]).all()
        np.testing.assert_array_equal(out[path], out[path].T)
    # dense NumPy formula (stable sigmoid)
    W = Z[:d, :d]
    b = Z[d, d] if learn else 1.0
    D = X[i] - X[j]
    yy = np.where(y[i] == y[j], 1.0, -1.0)
    q = np.einsum("bk,kl,bl->b", D, W, D)
    c = yy * np.exp(-np.logaddexp(0.0, yy * (b - q)))
    ref = (D.T * c) @ D / B + 0.1 * W
    tol = 1e-12 * max(1.0, np.abs(ref).max(), np.abs(c).sum() / B * 4)
    for path in ("pairs", "points"):
        assert np.abs(out[path][:d, :d] - ref).max() <= tol, path
    if learn:
        assert abs(out["pairs"][d, d] - out["points"][d, d]) <= 1e-12 * max(1.0, abs(out["pairs"][d, d]))
    # the objective on the evaluation pairs: both paths agree
    o.point_path = "pairs"
    v1 = o._eval_loss(Z)
    o.point_path = "points"
    v2 = o._eval_loss(Z)
    assert abs(v1 - v2) <= 1e-12 * max(1.0, abs(v1))


# ---------------------------------------------------------------- the neighbour-softmax gradient's two paths

@st.composite
def softmax_problems(draw):
    n = draw(st.integers(3, 40))
    d = draw(st.integers(1, 12))
    n_classes = draw(st.integers(2, 4))
    n_t = draw(st.integers(1, 5))
    n_i = draw(st.integers(1, 30))
    B = draw(st.integers(1, 200))
    seed = draw(st.integers(0, 2**32 - 1))
    scale = draw(st.sampled_from([1e-150, 1e-3, 1.0, 1e3, 1e150]))       # W's magnitude
    dup = draw(st.booleans())                                              # duplicate rows (q = 0)
    return n, d, n_classes, n_t, n_i, B, seed, scale, dup


@given(softmax_problems())
def test_softmax_gradient_paths_equal_numpy(prob):
    from logt.bench.references import softmax_grad_dense
    from logt.oracles import SoftmaxMetricLearning
    n, d, n_classes, n_t, n_i, B, seed, scale, dup = prob
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    if dup:
        X[1::3] = X[0::3][: len(X[1::3])]
    X /= max(1.0, float(np.linalg.norm(X, axis=1).max()))
    y = np.arange(n) % n_classes
    y[0] = y[1]                                            # a class with two points
    o = SoftmaxMetricLearning(X, y, 0.1, n_targets=n_t, n_impostors=n_i, n_eval_anchors=50, eval_rng=seed)
    A = rng.standard_normal(o.shape)
    W = scale * (A @ A.T) / d                              # PSD: the softmax weights stay finite
    a = rng.integers(0, o.n_anchors, B).astype(np.int32)
    out = {}
    for path in ("blocks", "points"):
        o.point_path = path
        out[path] = o._mean_grad_anchors(W, a)
        assert np.isfinite(out[path]).all()
    ref = softmax_grad_dense(X, (o.anchors, o.ptr, o.candidates, o.n_targets_per_anchor), a, W, o.unit, 0.1)
    u2 = float(((X[:, None] - X[None]) ** 2).sum(-1).max()) / o.unit
    tol = 1e-11 * max(1.0, np.abs(ref).max(), 2 * u2)
    for path in ("blocks", "points"):
        assert np.abs(out[path] - ref).max() <= tol, path
    v = o._eval_loss(W)
    assert np.isfinite(v) and v >= -1e-12


@settings(max_examples=300, deadline=None)
@given(sigma2=st.floats(0.0, 1e12), mean_sq=st.floats(0.0, 1e12), n=st.integers(1, 10**7),
       M=st.integers(1, 10**4), c=st.floats(1e-6, 4.0))
def test_auto_B1_bounds_and_monotonicity(sigma2, mean_sq, n, M, c):
    """auto_B1 is in [1, max(1, n // (2M))], grows with the noise and with c, falls with the gradient."""
    from logt import params as P
    b = P.auto_B1(sigma2, mean_sq, n, M, c)
    assert 1 <= b <= max(1, n // (2 * M))
    assert P.auto_B1(2 * sigma2, mean_sq, n, M, c) >= b
    assert P.auto_B1(sigma2, 2 * mean_sq, n, M, c) <= b
    assert P.auto_B1(sigma2, mean_sq, n, M, min(4.0, 2 * c)) >= b


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 12), d=st.integers(0, 9), P=st.integers(0, 30), seed=st.integers(0, 2**32 - 1))
def test_pair_sq_distances_match_numpy(n, d, P, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * rng.choice([1e-150, 1.0, 1e100])
    i, j = rng.integers(0, n, P), rng.integers(0, n, P)
    got = pair_sq_distances(X, i, j)
    ref = ((X[i] - X[j]) ** 2).sum(1) if P else np.zeros(0)
    assert got.shape == (P,)
    assert np.allclose(got, ref, rtol=1e-13, atol=0)


@settings(max_examples=120, deadline=None)
@given(n=st.integers(1, 40), m=st.integers(1, 15), d=st.integers(1, 5), levels=st.integers(1, 4),
       C=st.integers(1, 4), scale=st.sampled_from([2.0 ** -664, 2.0 ** -10, 1.0, 2.0 ** 17, 2.0 ** 664]),
       offset=st.sampled_from([0.0, 2.0 ** 30]), seed=st.integers(0, 2**32 - 1))
def test_nn1_hits_share_ties_exactly_and_ignore_row_order(n, m, d, levels, C, scale, offset, seed):
    """The check's 1-NN hits on points with repeats (a few levels per feature, so many exact ties): each
    query's hit is the share of its label among the references at the smallest distance (an exact reference on
    the integer grid), the same whatever the references' order, offset or scale (powers of two, so the points
    are exactly the grid's: the ties are exact ties)."""
    from logt.metric_learning import subspace as S
    g = np.random.default_rng(seed)
    Ri, Qi = g.integers(levels, size=(n, d)), g.integers(levels, size=(m, d))
    cr, cq = g.integers(C, size=n), g.integers(C, size=m)
    D = ((Qi[:, None, :] - Ri[None, :, :]) ** 2).sum(-1)          # exact integers
    tied = D == D.min(axis=1, keepdims=True)
    want = (tied & (cr[None, :] == cq[:, None])).sum(1) / tied.sum(1)
    R, Q = scale * Ri + offset * scale, scale * Qi + offset * scale
    got = S.nn1_hits(R, cr, Q, cq, block=7)
    assert np.allclose(got, want, rtol=0, atol=1e-12)
    p = g.permutation(n)
    assert np.allclose(S.nn1_hits(R[p], cr[p], Q, cq), want, rtol=0, atol=1e-12)
    if n >= 2:                                                     # leave-one-out on the references
        Dl = ((Ri[:, None, :] - Ri[None, :, :]) ** 2).sum(-1).astype(float)
        np.fill_diagonal(Dl, np.inf)
        tl = Dl == Dl.min(axis=1, keepdims=True)
        wl = (tl & (cr[None, :] == cr[:, None])).sum(1) / tl.sum(1)
        assert np.allclose(S.loo_1nn_hits(R, cr, block=5), wl, rtol=0, atol=1e-12)


@settings(max_examples=200, deadline=None)
@given(n=st.integers(2, 30), d=st.integers(1, 12), nnz=st.integers(0, 120), signed=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_sparse_glitch_magnitudes_and_repair_match_dense_rules(n, d, nnz, signed, seed):
    """Small CSR matrices (duplicates, explicit zeros, empty rows and columns, features with fewer nonzeros than
    SPARSE_POOL_MIN, signed entries over six decades) and any flagged rows leaving one row: the magnitudes and the
    repair equal the rules written out on dense rows (tests/test_outliers.py)."""
    import logt.metric_learning.outliers as O
    from test_outliers import _reference_sparse_magnitudes, _reference_sparse_repair
    g = np.random.default_rng(seed)
    v = 10.0 ** g.uniform(-3, 3, nnz) * (g.choice([-1.0, 1.0], nnz) if signed else 1.0)
    v[g.random(nnz) < 0.05] = 0.0
    X = sp.csr_matrix((v, (g.integers(n, size=nnz), g.integers(d, size=nnz))), shape=(n, d))
    np.testing.assert_allclose(O.sparse_row_magnitudes(X), _reference_sparse_magnitudes(X), rtol=1e-12)
    rows = g.random(n) < g.uniform(0, 0.6)
    rows[g.integers(n)] = False
    Xr = O.repair_sparse_rows(X, rows)
    assert sp.isspmatrix_csr(Xr) and Xr.has_canonical_format
    np.testing.assert_allclose(Xr.toarray(), _reference_sparse_repair(X, rows), rtol=1e-12, atol=0)
    assert np.all((Xr != 0).toarray() <= (X != 0).toarray())                     # no entry added


def _select_reference(G, sqr, sqc, rcode, ccode, rself, cand, k):
    """The k smallest (distance, point index) of each row's same-class and other-class candidates, plainly."""
    D = np.maximum((sqr[:, None] + sqc[None, :]) - 2.0 * G, 0.0)
    sim = np.full((len(G), k), -1, np.int32)
    dis = np.full((len(G), k), -1, np.int32)
    for r in range(len(G)):
        cols = np.array([j for j in range(G.shape[1]) if j != rself[r]], dtype=int)
        for out, mask in ((sim, ccode[cols] == rcode[r]), (dis, ccode[cols] != rcode[r])):
            c = cols[mask]
            best = c[np.lexsort((cand[c], D[r, c]))][:k]
            out[r, :len(best)] = cand[best]
    return sim, dis


@settings(max_examples=300, deadline=None)
@given(rows=st.integers(1, 6), m=st.integers(1, 40), k=st.integers(1, 9), C=st.integers(1, 4),
       grouped=st.booleans(), levels=st.integers(1, 5), bad=st.sampled_from([None, np.inf, -np.inf, np.nan]),
       seed=st.integers(0, 2**32 - 1))
def test_select_block_matches_lexicographic_reference(rows, m, k, C, grouped, levels, bad, seed):
    """The compiled selection (vectorized distances, runs of one class, groups skipped against the k-th
    distance) keeps exactly the lexicographic k smallest, whatever the class order of the candidates and
    however many exact ties; a non-finite product anywhere is a ValueError."""
    from logt._kernels._neighbors import select_block
    rng = np.random.default_rng(seed)
    G = rng.integers(-levels, levels + 1, (rows, m)).astype(float)       # few levels: many exact ties
    sqr = rng.integers(0, 2 * levels, rows).astype(float)
    sqc = rng.integers(0, 2 * levels, m).astype(float)
    ccode = rng.integers(0, C, m).astype(np.int32)
    if grouped:
        ccode.sort()
    rcode = rng.integers(0, C, rows).astype(np.int32)
    rself = rng.integers(-1, m, rows)
    cand = rng.permutation(10 * m)[:m]
    sim, dis = np.empty((rows, k), np.int32), np.empty((rows, k), np.int32)
    if bad is not None:
        G[rng.integers(rows), rng.integers(m)] = bad
        with pytest.raises(ValueError, match="G must be finite"):
            select_block(G, sqr, sqc, rcode, ccode, rself, cand, k, sim, dis)
        return
    select_block(G, sqr, sqc, rcode, ccode, rself, cand, k, sim, dis)
    ref_sim, ref_dis = _select_reference(G, sqr, sqc, rcode, ccode, rself, cand, k)
    np.testing.assert_array_equal(sim, ref_sim)
    np.testing.assert_array_equal(dis, ref_dis)


@settings(max_examples=300, deadline=None)
@given(sizes=st.lists(st.integers(1, 60000), min_size=1, max_size=12), d=st.integers(1, 4096),
       work=st.sampled_from([1e8, 1e10, 5e10, 1e12]), floor=st.integers(1, 3000))
def test_search_cap_is_maximal_within_its_budget(sizes, d, work, floor):
    """logt.oracles.neighbors.search_cap: the whole largest class when the exhaustive search fits ``work``; else a
    cap >= floor whose search fits with cap + 1's not fitting (the largest), or the floor when even it does not."""
    from logt.oracles.neighbors import SELECT_COST, search_cap
    sizes = np.array(sizes)
    n = int(sizes.sum())

    def cost(c):
        return n * int(np.minimum(sizes, c).sum()) * (d + SELECT_COST)

    cap = search_cap(sizes, d, work=work, floor=floor)
    if cost(sizes.max()) <= work:
        assert cap == sizes.max()
    elif cost(floor) > work:
        assert cap == floor
    else:
        assert floor <= cap < sizes.max() and cost(cap) <= work < cost(cap + 1)
