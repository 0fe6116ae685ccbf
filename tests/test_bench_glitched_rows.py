"""The glitched-rows sweeps (logt.bench.glitched_rows): their problems against their own clean rows, the three
fits of a problem, the summary against the rows it summarizes."""
import numpy as np
import pytest
import scipy.sparse as sp

pytest.importorskip("sklearn", reason="the sweep scores with scikit-learn's k-NN")
from logt.bench import glitched_rows as GR        # noqa: E402

try:
    from ._data import require_data_file
except ImportError:
    from _data import require_data_file


@pytest.mark.parametrize("kind", GR.SPARSE_KINDS)
def test_sparse_problem_glitches_only_its_record_and_is_seeded(kind):
    # the real kinds read the shared LIBSVM files, located from the tests' checkout (an installed logt cannot see
    # ../shared beside it): skipped with the reason when they are absent, never silently left out
    data_dir = require_data_file(f"{kind}.gz").parent if kind in ("mushrooms", "a9a") else None
    a = GR.sparse_problem(kind, np.random.default_rng(5), n_test=200, data_dir=data_dir)
    b = GR.sparse_problem(kind, np.random.default_rng(5), n_test=200, data_dir=data_dir)
    assert a[0] == b[0] and all((u != v).nnz == 0 if sp.issparse(u) else np.array_equal(u, v)
                                for u, v in zip(a[1:], b[1:]))
    desc, Xtr, Xg, ytr, Xte, yte, bad = a
    assert sp.isspmatrix_csr(Xtr) and sp.isspmatrix_csr(Xg) and Xg.shape == Xtr.shape
    assert Xte.shape[1] == Xtr.shape[1] and Xte.shape[0] == len(yte) <= 200 and len(ytr) == Xtr.shape[0]
    changed = np.asarray(abs(Xg - Xtr).sum(axis=1)).ravel() > 0
    assert not changed[~bad].any() and changed.sum() >= 0.5 * bad.sum()   # a row's share may miss every nonzero
    glitch = desc.split("glitch=")[1].split()[0]
    assert glitch in GR.GLITCHES and desc.startswith(kind)
    ratio = abs(Xg[bad]).max() / abs(Xtr).max()
    assert ratio > 10 ** 1.5 / 4, ratio                                   # at least one entry blown up
    if glitch != "spikes":
        assert np.array_equal(Xg.indices, Xtr.indices)                     # products keep the pattern
    with pytest.raises(ValueError, match="kind must be one of"):
        GR.sparse_problem("faces", np.random.default_rng(5))


@pytest.mark.parametrize("kind", GR.DENSE_KINDS)
def test_dense_problem_glitches_only_its_record_and_is_seeded(kind):
    a = GR.dense_problem(kind, np.random.default_rng(6), share=(0.05, 0.06), n_test=150)
    b = GR.dense_problem(kind, np.random.default_rng(6), share=(0.05, 0.06), n_test=150)
    assert a[0] == b[0] and all(np.array_equal(u, v) for u, v in zip(a[1:], b[1:]))
    desc, Xtr, Xg, ytr, Xte, yte, bad = a
    assert Xg.shape == Xtr.shape and Xte.shape[1] == Xtr.shape[1] and len(yte) == Xte.shape[0]
    assert desc.startswith(f"{kind} n={len(ytr)} d={Xtr.shape[1]}")
    changed = (Xg != Xtr).any(axis=1)
    assert np.array_equal(changed, bad) or (not changed[~bad].any() and changed.sum() >= 0.9 * bad.sum())
    n_all = {64: 1797, 30: 569, 13: 178}[Xtr.shape[1]] if kind == "lowdim" else len(ytr) + 150
    glitched = bad.sum() + (n_all - len(ytr) - len(yte))                # the test rows returned: not glitched
    assert 0.04 * n_all <= glitched <= 0.07 * n_all
    with pytest.raises(ValueError, match="kind must be one of"):
        GR.dense_problem("faces", np.random.default_rng(6))


@pytest.mark.parametrize("kind", GR.BINARY_GLITCH_KINDS)
def test_binary_glitch_problem_is_seeded_and_its_clean_rows_are_left_alone(kind):
    """The two-valued kinds: seeded, only recorded rows changed (a glitch on a 0 entry changes nothing), and the
    clean training rows flag nothing under the robust norms' departure floor."""
    from logt.metric_learning import outliers
    a = GR.dense_problem(kind, np.random.default_rng(8), share=(0.05, 0.06))
    b = GR.dense_problem(kind, np.random.default_rng(8), share=(0.05, 0.06))
    assert a[0] == b[0] and all(np.array_equal(u, v) for u, v in zip(a[1:], b[1:]))
    desc, Xtr, Xg, ytr, Xte, yte, bad = a
    assert desc.startswith(f"{kind} n={len(ytr)} d={Xtr.shape[1]}") and Xg.shape == Xtr.shape
    assert not (Xg != Xtr).any(axis=1)[~bad].any() and 0.03 * len(ytr) <= bad.sum() <= 0.08 * len(ytr)
    assert not outliers.glitched_rows(Xtr, ytr)[1].any()
    with GR.sd_fallback():
        assert outliers.DEPARTURE_FLOOR is False
    assert outliers.DEPARTURE_FLOOR is True


def test_glitch_sweep_rows_and_summary():
    lines = []
    rows = GR.glitch_sweep(2, seed=3, kinds=("bow", "mixed"), log=lines.append)
    assert len(rows) == 2 and len(lines) == 3
    for r in rows:
        for key in ("euclid", "clean", "before", "now"):
            assert len(r[key]) == 2 and all(0.0 <= v <= 1.0 for v in r[key])
        assert r["clean_repaired"] == 0 and r["repaired"] > 0 and r["n_glitched"] > 0
        assert r["seconds_before"] > 0 and r["seconds_now"] > 0
    # the summary is the rows' means
    now = np.mean([r["now"][0] for r in rows])
    before = np.mean([r["before"][0] for r in rows])
    assert f"before {before:.3f}, now {now:.3f}" in lines[-1]
    assert lines[-1].startswith("2 problems") and "repaired on 2 of 2" in lines[-1]


def test_command_line_without_a_sweep_prints_its_usage():
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-m", "logt.bench.glitched_rows"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 1 and p.stderr.startswith("usage: python -m logt.bench.glitched_rows --dense N")
    assert "--binary N" in p.stderr and "--sd-fallback" in p.stderr
