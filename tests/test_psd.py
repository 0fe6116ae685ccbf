"""PSD-cone projection: every kernel path against a numpy.linalg.eigh reference."""
import threading

import numpy as np
import pytest

from logt._kernels._psd import PSDProjector
from logt.domains import PSDCone, project_psd

@pytest.fixture(scope="module", autouse=True)
def _one_blas_thread():
    """numpy's reference eigh with one BLAS thread (two pools fighting over two
    cores is slow); logt still sets up its own per-call limit (blas_active() is
    False here), so that path is exercised too."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield


PATHS = ["auto", "jacobi", "neg", "pos", "full", "chol"]
KINDS = ["random", "psd", "negdef", "rankdef", "repeated", "few_neg", "few_pos", "zero",
         "diagonal", "blockdiag", "tiny_gaps"]


def ref_proj(A):
    """Independent reference: numpy eigh, clip negative eigenvalues."""
    l, V = np.linalg.eigh(A)
    return (V * np.maximum(l, 0.0)) @ V.T


def make(kind, d, rng):
    X = rng.standard_normal((d, d))
    Q, _ = np.linalg.qr(X)
    if kind == "random":
        A = X + X.T
    elif kind == "psd":
        A = X @ X.T + 1e-3 * np.eye(d)
    elif kind == "negdef":
        A = -(X @ X.T) - np.eye(d)
    elif kind == "rankdef":   # PSD of rank ~d/2 (singular: Cholesky must fail)
        B = X[:, : max(1, d // 2)]
        A = B @ B.T
    elif kind == "repeated":  # eigenvalues in {-1, 2} with multiplicity
        l = np.where(np.arange(d) % 3 == 0, -1.0, 2.0)
        A = (Q * l) @ Q.T
    elif kind == "few_neg":   # ~5% negative
        l = rng.uniform(0.1, 1.0, d)
        l[: max(1, d // 20)] *= -1
        A = (Q * l) @ Q.T
    elif kind == "few_pos":   # ~5% positive
        l = -rng.uniform(0.1, 1.0, d)
        l[: max(1, d // 20)] *= -1
        A = (Q * l) @ Q.T
    elif kind == "zero":
        A = np.zeros((d, d))
    elif kind == "diagonal":    # tridiagonal form splits into 1x1 blocks
        A = np.diag(rng.standard_normal(d))
    elif kind == "blockdiag":   # splits into blocks; equal eigenvalues across blocks
        A = np.zeros((d, d))
        h = d // 2
        B = X[:h, :h] + X[:h, :h].T
        A[:h, :h] = B
        A[h:2 * h, h:2 * h] = B
        if d % 2:
            A[-1, -1] = -1.0
    elif kind == "tiny_gaps":   # eigenvalues +-1 +- 1e-13 * k: tight clusters
        l = np.where(np.arange(d) % 2 == 0, -1.0, 1.0) + 1e-13 * np.arange(d)
        A = (Q * l) @ Q.T
    else:
        raise AssertionError(kind)
    return (A + A.T) / 2


def assert_close(P, R, A):
    scale = max(np.linalg.norm(A), np.finfo(float).tiny)
    err = np.linalg.norm(P - R) / scale
    assert err <= 1e-10, err


# every path at every size, except Jacobi beyond d = 40 (a small-matrix solver; slow there)
PATH_SIZES = [(path, d) for path in PATHS for d in [1, 2, 3, 5, 8, 9, 17, 40, 123]
              if not (path == "jacobi" and d > 40)]


@pytest.mark.parametrize("path,d", PATH_SIZES)
@pytest.mark.parametrize("kind", KINDS)
def test_paths_match_reference(d, kind, path):
    rng = np.random.default_rng([d, KINDS.index(kind)])
    A = make(kind, d, rng)
    P = PSDProjector(d)
    R = P._project_with(A, path)
    assert_close(R, ref_proj(A), A)
    assert np.array_equal(R, R.T)
    if kind != "zero":
        if path in ("jacobi", "neg", "pos", "full"):
            assert P._last_path == path
        elif path == "auto" and d <= P.jacobi_max:
            assert P._last_path == "jacobi"


@pytest.mark.parametrize("d", [1, 4, 30, 300])
@pytest.mark.parametrize("s", [1e-150, 1e150, 1e-300, 1e300])
def test_scaled_inputs(d, s):
    rng = np.random.default_rng(d)
    A = make("random", d, rng) * 0.5
    for path in (["auto", "neg", "pos", "full"] if d > 8 else ["auto", "jacobi", "full"]):
        P = PSDProjector(d)
        R = P._project_with(A * s, path)
        assert np.isfinite(R).all()
        assert_close(R / s, ref_proj(A), A)


def test_cholesky_path_taken_on_pd_and_falls_through_otherwise():
    d = 30
    rng = np.random.default_rng(1)
    P = PSDProjector(d)
    A = make("psd", d, rng)
    R = P._project_with(A, "chol")
    assert P._last_path == "chol"
    assert np.array_equal(R, A)          # PD input returned unchanged
    B = make("rankdef", d, rng)          # singular: dpotrf fails -> counted choice
    R = P._project_with(B, "chol")
    assert P._last_path in ("neg", "pos", "full")
    assert_close(R, ref_proj(B), B)
    C = make("random", d, rng)           # half negative -> full
    R = P._project_with(C, "chol")
    assert P._last_path == "full"
    assert_close(R, ref_proj(C), C)
    D = make("few_neg", d, rng)          # few negative -> negatives only
    R = P._project_with(D, "chol")
    assert P._last_path == "neg"
    assert_close(R, ref_proj(D), D)


def test_adaptive_prediction_sequence():
    """Predictions follow the data; wrong predictions still give right answers."""
    d = 60
    rng = np.random.default_rng(2)
    P = PSDCone(d)
    taken = []
    # alternating PSD and half-negative inputs: the prediction is always wrong
    for i in range(6):
        A = make("psd" if i % 2 == 0 else "random", d, rng)
        R = P.project(A)
        taken.append(P._last_path)
        assert_close(R, ref_proj(A), A)
    # PSD: counted 0 negatives -> "neg" (with nothing to add); the next input
    # (half negative) first tries Cholesky, which fails, then goes "full";
    # after it, no Cholesky attempt; the count picks the path every time
    assert taken == ["neg", "full"] * 3
    # a run of few-negative inputs settles on the negatives-only path
    for _ in range(3):
        A = make("few_neg", d, rng)
        R = P.project(A)
        assert_close(R, ref_proj(A), A)
    assert P._last_path == "neg"
    # few-positive inputs: positives only, from the first call
    for _ in range(3):
        A = make("few_pos", d, rng)
        R = P.project(A)
        assert_close(R, ref_proj(A), A)
        assert P._last_path == "pos"
    # already PSD inputs: Cholesky fast path
    for _ in range(3):
        A = make("psd", d, rng)
        R = P.project(A)
        assert_close(R, ref_proj(A), A)
    assert P._last_path == "chol"
    neg, pos = P._prediction
    assert neg == 0


@pytest.mark.parametrize("d", [3, 20, 70])
def test_properties(d):
    rng = np.random.default_rng(10 + d)
    P = PSDCone(d)
    for _ in range(3):
        A = make("random", d, rng)
        R = P.project(A)
        scale = np.linalg.norm(A)
        assert np.array_equal(R, R.T)
        assert np.linalg.eigvalsh(R).min() >= -1e-12 * scale          # PSD
        assert np.linalg.norm(P.project(R) - R) <= 1e-12 * scale      # idempotent
        # variational inequality: <A - P(A), X - P(A)> <= 0 for all PSD X
        for _ in range(5):
            Y = rng.standard_normal((d, d))
            X = Y @ Y.T
            ip = np.sum((A - R) * (X - R))
            assert ip <= 1e-10 * scale * (np.linalg.norm(X) + scale)


def test_special_cases():
    P1 = PSDCone(1)
    assert P1.project(np.array([[-3.0]]))[0, 0] == 0.0
    assert P1.project([[2.5]])[0, 0] == 2.5
    for d in (1, 5, 50):
        Z = PSDCone(d).project(np.zeros((d, d)))
        assert np.array_equal(Z, np.zeros((d, d)))
        assert np.array_equal(project_psd(np.eye(d)), np.eye(d))
        assert np.array_equal(PSDCone(d).project(-np.eye(d)), np.zeros((d, d)))
        assert np.abs(project_psd(-np.eye(d))).max() <= 1e-15


def test_out_and_inplace():
    d = 12
    rng = np.random.default_rng(3)
    A = make("random", d, rng)
    P = PSDCone(d)
    expect = ref_proj(A)
    out = np.empty((d, d))
    r = P.project(A, out=out)
    assert r is out
    assert_close(out, expect, A)
    B = A.copy()
    r = P.project(B, out=B)
    assert r is B
    assert_close(B, expect, A)
    # input not modified when out is separate
    C = A.copy()
    P.project(C)
    assert np.array_equal(C, A)
    # non-contiguous / other-dtype inputs are accepted (converted)
    F = np.asfortranarray(A)
    assert_close(P.project(F), expect, A)
    assert_close(P.project(A.astype(np.float32)), ref_proj(A.astype(np.float32).astype(float)), A)
    assert_close(P.project(A.tolist()), expect, A)
    assert_close(project_psd(A, out=np.empty((d, d))), expect, A)


def test_slightly_asymmetric_is_symmetrized():
    d = 10
    rng = np.random.default_rng(4)
    A = make("random", d, rng)
    E = rng.standard_normal((d, d)) * 1e-12 * np.abs(A).max()
    R = PSDCone(d).project(A + E)
    S = A + (E + E.T) / 2
    assert np.array_equal(R, R.T)
    assert_close(R, ref_proj(S), A)


def test_errors():
    d = 6
    P = PSDCone(d)
    A = make("random", d, np.random.default_rng(5))
    B = A.copy()
    B[0, 1] += 1e-3
    with pytest.raises(ValueError, match="symmetric"):
        P.project(B)
    with pytest.raises(ValueError, match="symmetric"):
        project_psd(B)
    for bad in (np.nan, np.inf, -np.inf):
        C = A.copy()
        C[2, 2] = bad
        with pytest.raises(ValueError, match="NaN or Inf"):
            P.project(C)
    with pytest.raises(ValueError, match="shape"):
        P.project(np.zeros((d, d + 1)))
    with pytest.raises(ValueError, match="shape"):
        P.project(np.zeros((d + 1, d + 1)))       # wrong d
    with pytest.raises(ValueError, match="shape"):
        P.project(np.zeros(d * d))
    with pytest.raises(ValueError, match="square"):
        project_psd(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="square"):
        project_psd(np.zeros(3))
    with pytest.raises(TypeError):
        P.project(A, out=np.zeros((d, d), dtype=np.float32))
    with pytest.raises(ValueError, match="shape"):
        P.project(A, out=np.zeros((d, d + 1)))
    with pytest.raises(ValueError, match="contiguous"):
        P.project(A, out=np.zeros((d, 2 * d))[:, ::2])
    with pytest.raises(TypeError):
        P.project(A, out=[[0.0] * d] * d)
    with pytest.raises(TypeError):
        P.project("not a matrix")
    with pytest.raises(ValueError):
        P._project_with(A, "nope")
    with pytest.raises(ValueError):
        PSDCone(0)
    with pytest.raises(TypeError):
        PSDCone(2.5)
    # failed validation leaves out untouched
    out = np.full((d, d), 7.0)
    with pytest.raises(ValueError):
        P.project(B, out=out)
    assert (out == 7.0).all()


@pytest.mark.parametrize("d", [5, 40])
def test_threads_separate_and_shared(d):
    rng = np.random.default_rng(6)
    mats = [make(k, d, rng) for k in ("random", "psd", "few_neg", "few_pos") * 3]
    refs = [ref_proj(A) for A in mats]
    shared = PSDCone(d)
    errors = []

    def worker(obj, seed):
        order = np.random.default_rng(seed).permutation(len(mats))
        for _ in range(3):
            for i in order:
                R = obj.project(mats[i])
                if np.linalg.norm(R - refs[i]) > 1e-10 * np.linalg.norm(mats[i]):
                    errors.append((seed, i))
            for i in order:
                R = project_psd(mats[i])
                if np.linalg.norm(R - refs[i]) > 1e-10 * np.linalg.norm(mats[i]):
                    errors.append((seed, i, "fn"))

    threads = [threading.Thread(target=worker, args=(shared, s)) for s in range(3)]
    threads += [threading.Thread(target=worker, args=(PSDCone(d), 10 + s)) for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_psdcone_is_compiled_domain_and_protocol():
    from logt._kernels._base import CompiledDomain
    from logt.domains import Domain

    P = PSDCone(4)
    assert isinstance(P, CompiledDomain)
    assert isinstance(P, Domain)
    assert P.shape == (4, 4) and P.size == 16 and P.d == 4
