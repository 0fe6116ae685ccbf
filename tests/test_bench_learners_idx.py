"""logt.bench.learners_idx: the learners on IDX image files the user brings (a tiny pair written here)."""
import struct

import numpy as np
import pytest

pytest.importorskip("sklearn", reason="the learner comparison needs scikit-learn (the [sklearn] extra)")
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.neighbors import KNeighborsClassifier  # noqa: E402

from logt.bench import learners_idx as L  # noqa: E402


def _idx_pair(tmp_path):
    X, y = load_digits(return_X_y=True)
    pixels = (X * 15).astype(int)                                    # 8-bit pixels, 0..240
    images, labels = tmp_path / "images-idx3-ubyte", tmp_path / "labels-idx1-ubyte"
    images.write_bytes(bytes([0, 0, 8, 3]) + struct.pack(">III", len(y), 8, 8) + bytes(pixels.ravel().tolist()))
    labels.write_bytes(bytes([0, 0, 8, 1]) + struct.pack(">I", len(y)) + bytes(y.tolist()))
    return images, labels, pixels.astype(float), y


def test_stratified_subset_keeps_the_class_shares():
    y = np.repeat(np.arange(4), [100, 50, 30, 20])
    idx = L.stratified_subset(y, 40, 1000)
    assert len(idx) == 40 and len(np.unique(idx)) == 40 and np.all(np.diff(idx) > 0)
    np.testing.assert_allclose(np.bincount(y[idx]), [20, 10, 6, 4], atol=1)
    np.testing.assert_array_equal(L.stratified_subset(y, 200, 0), np.arange(200))
    np.testing.assert_array_equal(L.stratified_subset(y, 40, 1000), idx)          # seeded


def test_subsets_score_as_an_independent_knn_does(tmp_path):
    images, labels, X, y = _idx_pair(tmp_path)
    runs = L.evaluate_subsets(X, y, rows=300, subsets=2, nca=False, name="digits", log=lambda *a: None)
    assert [r[0]["dataset"] for r in runs] == ["digits300_s0", "digits300_s1"]
    for s, rows in enumerate(runs):
        assert [r["method"] for r in rows] == ["Euclidean", "PCA(64)", "MetricLearner()",
                                               "MetricLearner(n_components=64)"]
        idx = L.stratified_subset(y, 300, 1000 + s)
        Xtr, Xte, ytr, yte = train_test_split(X[idx], y[idx], test_size=0.3, stratify=y[idx], random_state=s)
        want = [KNeighborsClassifier(k).fit(Xtr, ytr).score(Xte, yte) for k in (1, 5)]
        assert [rows[0]["acc1"], rows[0]["acc5"]] == pytest.approx(want, abs=1e-12)
        for r in rows:
            assert 0.0 <= r["acc1"] <= 1.0 and 0.0 <= r["acc5"] <= 1.0
        assert all(r["seconds"] > 0 for r in rows[1:])
    lines = L.summary(runs)
    assert any(line.startswith("- `MetricLearner()` against Euclidean: ") and "of 2 subsets" in line for line in lines)
    assert any(line.startswith("- `MetricLearner(n_components=64)` fit time: median ") for line in lines)


def test_command_line(tmp_path, capsys):
    images, labels, _, _ = _idx_pair(tmp_path)
    L.main([str(images), str(labels), "--rows", "200", "--subsets", "1", "--no-nca", "--name", "digits"])
    out = capsys.readouterr().out
    assert "### digits, subset 0" in out and "| digits200_s0 | MetricLearner() |" in out
    assert "- `MetricLearner()` against PCA(64): at least it in 1-NN on" in out
    with pytest.raises(SystemExit):
        L.main([str(images), str(labels), "--rows", "5"])
