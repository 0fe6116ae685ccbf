"""logt.datasets: the LIBSVM parser, the IDX reader, row scaling, labels, shared data files, seeded split."""
import gzip
import struct

import numpy as np
import pytest
import scipy.sparse as sp

from logt.datasets import (binary_labels, load_adult, load_idx, load_idx_images, load_libsvm, load_mushrooms,
                           normalize_rows, train_test_split_seeded)

try:
    from ._data import require_data_dir, require_data_file
except ImportError:
    from _data import require_data_dir, require_data_file

# LIBSVM style: a trailing space before every newline, '+' written out
TEXT = b"+1 1:1 3:0.5 \n-1 2:-2.25e1 \n+1 \n-1 1:1 2:1 3:1 \n"
DENSE = np.array([[1, 0, 0.5], [0, -22.5, 0], [0, 0, 0], [1, 1, 1]], dtype=float)
LABELS = np.array([1.0, -1.0, 1.0, -1.0])


def _write(tmp_path, data, name="f.txt", compress=False):
    p = tmp_path / name
    p.write_bytes(gzip.compress(data) if compress else data)
    return p


@pytest.mark.parametrize("compress", [False, True])
def test_parse_plain_and_gzip(tmp_path, compress):
    # the gzip file has a misleading extension: detection is by magic bytes
    p = _write(tmp_path, TEXT, "data.txt", compress)
    X, y = load_libsvm(p)
    assert sp.isspmatrix_csr(X) and X.dtype == np.float64
    np.testing.assert_array_equal(X.toarray(), DENSE)
    np.testing.assert_array_equal(y, LABELS)


def test_parse_variants(tmp_path):
    # CRLF, tabs, blank lines, no final newline, explicit n_features
    data = b"2\t1:1  4:3\r\n\n1 2:7"
    X, y = load_libsvm(_write(tmp_path, data), n_features=6)
    assert X.shape == (2, 6)
    np.testing.assert_array_equal(X.toarray(), [[1, 0, 0, 3, 0, 0], [0, 7, 0, 0, 0, 0]])
    np.testing.assert_array_equal(y, [2, 1])


def test_parse_matches_sklearn(tmp_path):
    skl = pytest.importorskip("sklearn.datasets")
    rng = np.random.default_rng(3)
    lines = []
    for _ in range(200):
        idx = np.sort(rng.choice(50, size=rng.integers(0, 8), replace=False)) + 1
        vals = rng.standard_normal(len(idx))
        lines.append(f"{rng.integers(-3, 3)} " + " ".join(f"{i}:{float(v)!r}" for i, v in zip(idx, vals)) + " ")
    p = _write(tmp_path, ("\n".join(lines) + "\n").encode())
    X, y = load_libsvm(p, n_features=50)
    X2, y2 = skl.load_svmlight_file(str(p), n_features=50)
    np.testing.assert_array_equal(X.toarray(), X2.toarray())
    np.testing.assert_array_equal(y, y2)


@pytest.mark.parametrize("data, match", [
    (b"", "no samples"),
    (b"  \n\n", "no samples"),
    (b"1 1:1 \n1 2:x \n", "line 2"),
    (b"1 1:1 \n1 0:1 \n", "<= 0"),
    (b"1 1:1 \n1 -3:1 \n", "line 2"),
    (b"1 1:1 \n-1 2 \n", "malformed token '2' on line 2"),
    (b"1 1:1 \nabc 2:1 \n", "malformed label 'abc' on line 2"),
    (b"1 3:1 2:1 \n", "strictly increasing on line 1"),
    (b"1 2:1 2:1 \n", "strictly increasing"),
])
def test_parse_errors(tmp_path, data, match):
    with pytest.raises(ValueError, match=match):
        load_libsvm(_write(tmp_path, data))


def test_n_features_too_small(tmp_path):
    p = _write(tmp_path, b"1 1:1 \n1 5:1 \n")
    with pytest.raises(ValueError, match=r"n_features=4 is too small: line 2 .* 5"):
        load_libsvm(p, n_features=4)
    with pytest.raises(ValueError, match="n_features"):
        load_libsvm(p, n_features=0)
    assert load_libsvm(p, n_features=5)[0].shape == (2, 5)


def test_normalize_rows_sparse_and_dense():
    X = np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 0.0], [0.0, -2.0, 0.0]])
    expect = np.array([[0.6, 0.8, 0.0], [0.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
    np.testing.assert_allclose(normalize_rows(X), expect, rtol=1e-15)
    S = normalize_rows(sp.csr_matrix(X))
    assert sp.isspmatrix_csr(S)
    np.testing.assert_allclose(S.toarray(), expect, rtol=1e-15)
    np.testing.assert_array_equal(X[0], [3.0, 4.0, 0.0])     # input untouched


def test_binary_labels():
    np.testing.assert_array_equal(binary_labels([1, 2, 2, 1]), [0, 1, 1, 0])
    np.testing.assert_array_equal(binary_labels([1.0, -1.0, -1.0]), [1, 0, 0])
    with pytest.raises(ValueError, match="two distinct"):
        binary_labels([1, 1, 1])
    with pytest.raises(ValueError, match="two distinct"):
        binary_labels([0, 1, 2])


def test_split_seeded():
    X = sp.csr_matrix(np.arange(30.0).reshape(15, 2))
    y = np.arange(15)
    Xtr, Xte, ytr, yte = train_test_split_seeded(X, y, rng=7)
    assert Xte.shape == (5, 2) and Xtr.shape == (10, 2)
    assert sorted(np.r_[ytr, yte]) == list(range(15))
    np.testing.assert_array_equal(Xtr.toarray()[:, 0], 2 * ytr)   # rows follow their labels
    again = train_test_split_seeded(X, y, rng=7)
    np.testing.assert_array_equal(again[3], yte)
    assert not np.array_equal(train_test_split_seeded(X, y, rng=8)[3], yte)
    with pytest.raises(ValueError):
        train_test_split_seeded(X, y[:-1])


def _counts(y):
    vals, counts = np.unique(y, return_counts=True)
    return dict(zip(vals.tolist(), counts.tolist()))


def test_shared_files_raw():
    X, y = load_libsvm(require_data_file("mushrooms.gz"))
    assert X.shape == (8124, 112)
    assert _counts(y) == {1.0: 3916, 2.0: 4208}
    assert (np.diff(X.indptr) == 21).all() and (X.data == 1).all()
    X, y = load_libsvm(require_data_file("a9a.gz"))
    assert X.shape == (32561, 123)
    assert _counts(y) == {-1.0: 24720, 1.0: 7841}
    nnz = np.diff(X.indptr)
    assert nnz.min() == 11 and nnz.max() == 14
    p = require_data_file("a9a.t.gz")
    assert load_libsvm(p)[0].shape == (16281, 122)          # the data README's caveat (a9a.t never uses feature 123)
    X, y = load_libsvm(p, n_features=123)
    assert X.shape == (16281, 123)
    assert _counts(y) == {-1.0: 12435, 1.0: 3846}


def test_convenience_loaders():
    d = require_data_dir()
    X, y = load_mushrooms(d)
    assert X.shape == (8124, 112) and _counts(y) == {0: 3916, 1: 4208}
    np.testing.assert_allclose(np.sqrt(X.multiply(X).sum(axis=1)).A.ravel(), 1.0, rtol=1e-14)
    Xtr, ytr, Xte, yte = load_adult(d)
    assert Xtr.shape == (32561, 123) and Xte.shape == (16281, 123)
    assert _counts(ytr) == {0: 24720, 1: 7841} and _counts(yte) == {0: 12435, 1: 3846}
    assert np.sqrt(Xte.multiply(Xte).sum(axis=1)).max() <= 1 + 1e-15


# ---------------------------------------------------------------- IDX (MNIST's format)

IDX_CODES = {"B": 0x08, "b": 0x09, "h": 0x0B, "i": 0x0C, "f": 0x0D, "d": 0x0E}    # struct format -> type code


def idx_bytes(values, shape, fmt):
    """An IDX file written element by element with ``struct`` (big-endian), independent of the reader."""
    head = bytes([0, 0, IDX_CODES[fmt], len(shape)]) + b"".join(struct.pack(">I", n) for n in shape)
    return head + b"".join(struct.pack(">" + fmt, v) for v in values)


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("fmt, values", [("B", [0, 1, 254, 255, 7, 9]), ("b", [-128, 127, 0, -1, 5, 6]),
                                         ("h", [-32768, 32767, 1, 2, 3, 4]), ("i", [-2**31, 2**31 - 1, 0, 1, 2, 3]),
                                         ("f", [1.5, -2.25, 3e38, 0.0, 1e-40, 7.0]),
                                         ("d", [1e308, -5e-324, 0.1, 2.0, 3.0, -0.0])])
def test_load_idx_every_type_plain_and_gzip(tmp_path, fmt, values, compress):
    data = idx_bytes(values, (2, 3), fmt)
    p = _write(tmp_path, data, "images.bin", compress)        # detection by magic bytes, not by name
    got = load_idx(p)
    assert got.shape == (2, 3) and got.dtype.isnative
    want = np.array(values, dtype=np.dtype(">" + fmt).newbyteorder("=")).reshape(2, 3)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype


@pytest.mark.parametrize("data, match", [
    (b"", "not an IDX file"),
    (b"\x01\x00\x08\x01\x00\x00\x00\x01\x05", "not an IDX file"),
    (b"\x00\x00\x07\x01\x00\x00\x00\x01\x05", "unknown IDX type code 0x07"),
    (b"\x00\x00\x08\x00", "no dimensions"),
    (b"\x00\x00\x08\x02\x00\x00\x00\x01", "cut short"),
    (b"\x00\x00\x08\x01\x00\x00\x00\x03\x05\x06", "the file has 2 bytes of data"),
    (b"\x00\x00\x08\x01\x00\x00\x00\x01\x05\x06", "the file has more bytes"),
    (b"\x00\x00\x0c\x01\x00\x00\x00\x02" + b"\x00" * 7, "the file has 7 bytes"),
])
def test_load_idx_errors(tmp_path, data, match):
    with pytest.raises(ValueError, match=match):
        load_idx(_write(tmp_path, data, "bad.idx"))


def test_load_idx_max_bytes_is_checked_from_the_header(tmp_path):
    # a header announcing 2^32 - 1 x 2^32 - 1 bytes: refused before any data are read
    p = _write(tmp_path, b"\x00\x00\x08\x02\xff\xff\xff\xff\xff\xff\xff\xff", "huge.idx", compress=True)
    with pytest.raises(ValueError, match="exceed max_bytes"):
        load_idx(p)
    p = _write(tmp_path, idx_bytes(range(6), (6,), "B"), "six.idx")
    with pytest.raises(ValueError, match="exceed max_bytes=5"):
        load_idx(p, max_bytes=5)
    assert load_idx(p, max_bytes=6).tolist() == list(range(6))
    for bad, err in ((0, ValueError), (True, TypeError), (1.5, TypeError)):
        with pytest.raises(err, match="max_bytes"):
            load_idx(p, max_bytes=bad)


def test_load_idx_images(tmp_path):
    g = np.random.default_rng(0)
    pixels = g.integers(0, 256, (5, 4, 3))
    images = _write(tmp_path, idx_bytes(pixels.ravel().tolist(), (5, 4, 3), "B"), "img.idx", compress=True)
    labels = _write(tmp_path, idx_bytes([3, 1, 4, 1, 5], (5,), "B"), "lab.idx")
    X, y = load_idx_images(images, labels)
    assert X.dtype == np.float64 and X.shape == (5, 12) and y.dtype == np.int64
    np.testing.assert_array_equal(X, pixels.reshape(5, 12))          # the file's units: no rescaling
    np.testing.assert_array_equal(y, [3, 1, 4, 1, 5])
    few = _write(tmp_path, idx_bytes([3, 1, 4], (3,), "B"), "few.idx")
    with pytest.raises(ValueError, match="5 images but .* 3 labels"):
        load_idx_images(images, few)
    with pytest.raises(ValueError, match="labels must be 1-D"):
        load_idx_images(images, _write(tmp_path, idx_bytes(range(10), (5, 2), "B"), "two.idx"))
    with pytest.raises(ValueError, match="whole numbers"):
        load_idx_images(images, _write(tmp_path, idx_bytes([1.5, 1, 2, 3, 4], (5,), "f"), "fl.idx"))
    nan = _write(tmp_path, idx_bytes([np.nan] + [0.0] * 59, (5, 4, 3), "d"), "nan.idx")
    with pytest.raises(ValueError, match="NaN or infinite"):
        load_idx_images(nan, labels)
