"""LIBSVM data for the metric-learning experiment (the paper's Fig. 2).

* :func:`load_libsvm` reads LIBSVM / svmlight text (plain or gzip) into a
  ``scipy.sparse.csr_matrix`` with a vectorised NumPy parser;
* :func:`normalize_rows` scales instances to ``||x|| <= 1`` (the paper's
  assumption, which makes the objective ``(lam + 4)``-smooth);
* :func:`binary_labels` maps two label values to classes ``{0, 1}``;
* :func:`load_mushrooms`, :func:`load_adult` load the shared data files and
  :func:`train_test_split_seeded` makes mushrooms' seeded 2/3 - 1/3 split.
"""
import gzip
import os

import numpy as np
import scipy.sparse as sp

from ._rng import check_rng

__all__ = [
    "load_libsvm",
    "normalize_rows",
    "binary_labels",
    "load_mushrooms",
    "load_adult",
    "train_test_split_seeded",
]

_GZIP_MAGIC = b"\x1f\x8b"
_WS = np.zeros(256, dtype=bool)
_WS[[9, 10, 11, 12, 13, 32]] = True      # the bytes that bytes.split() splits on

_partition = getattr(np, "strings", np.char).partition


def _read_bytes(path):
    with open(path, "rb") as fh:
        data = fh.read()
    if data[:2] == _GZIP_MAGIC:
        data = gzip.decompress(data)
    return data


def _first_bad(tokens, lines, convert):
    """Line number (1-based) and text of the first token that ``convert`` rejects."""
    for tok, line in zip(tokens, lines):
        try:
            convert(tok)
        except ValueError:
            return int(line), tok.decode("ascii", "replace")
    return None, None


def load_libsvm(path, n_features=None):
    """Read a LIBSVM / svmlight text file.

    Each non-blank line is ``<label> <index>:<value> ...`` with 1-based,
    strictly increasing indices. The file may be gzip-compressed (detected by
    its magic bytes, not its name). Comments (``#``) and ``qid:`` are not
    supported.

    Parameters
    ----------
    path : str or os.PathLike
    n_features : int, optional
        Number of columns ``d``. Default: the largest index in the file. Pass it
        when a file does not use the last feature (``a9a.t`` needs 123).

    Returns
    -------
    X : scipy.sparse.csr_matrix, float64, shape (n, d)
    y : ndarray, float64, shape (n,)
    """
    if n_features is not None:
        if isinstance(n_features, bool) or not isinstance(n_features, (int, np.integer)):
            raise TypeError(f"n_features must be an int or None, got {type(n_features).__name__}")
        if n_features < 1:
            raise ValueError(f"n_features must be >= 1, got {n_features}")
    data = _read_bytes(path)
    tokens = data.split()
    if not tokens:
        raise ValueError(f"{os.fspath(path)!r} has no samples (empty file)")

    buf = np.frombuffer(data, dtype=np.uint8)
    ws = _WS[buf]
    starts = np.flatnonzero(~ws & np.concatenate(([True], ws[:-1])))
    # 1-based line number of every token
    newlines = np.cumsum(buf == 10)
    tok_line = newlines[starts] + 1
    if len(starts) != len(tokens):       # cannot happen: same whitespace set
        raise RuntimeError("tokenizer mismatch")
    is_label = np.empty(len(tokens), dtype=bool)
    is_label[0] = True
    is_label[1:] = tok_line[1:] != tok_line[:-1]

    tok = np.array(tokens)                # dtype S<maxlen>
    del tokens
    lab_tok, lab_line = tok[is_label], tok_line[is_label]
    try:
        y = lab_tok.astype(np.float64)
    except ValueError:
        line, bad = _first_bad(lab_tok, lab_line, float)
        raise ValueError(f"malformed label {bad!r} on line {line}") from None

    feat, feat_line = tok[~is_label], tok_line[~is_label]
    row = np.cumsum(is_label)[~is_label] - 1
    idx_s, sep, val_s = _partition(feat, b":")
    bad = (sep != b":") | ~np.char.isdigit(idx_s)
    if bad.any():
        k = int(np.argmax(bad))
        raise ValueError(
            f"malformed token {feat[k].decode('ascii', 'replace')!r} on line {feat_line[k]} "
            "(expected <index>:<value>)")
    idx = idx_s.astype(np.int64)
    try:
        val = val_s.astype(np.float64)
    except ValueError:
        line, badv = _first_bad(val_s, feat_line, float)
        raise ValueError(f"malformed value {badv!r} on line {line}") from None
    if idx.size:
        if idx.min() <= 0:
            k = int(np.argmin(idx))
            raise ValueError(f"feature index {idx[k]} <= 0 on line {feat_line[k]} (indices are 1-based)")
        same_row = row[1:] == row[:-1]
        unsorted = same_row & (idx[1:] <= idx[:-1])
        if unsorted.any():
            k = int(np.argmax(unsorted)) + 1
            raise ValueError(f"feature indices are not strictly increasing on line {feat_line[k]}")
    max_idx = int(idx.max()) if idx.size else 0
    if n_features is None:
        n_features = max_idx
    elif max_idx > n_features:
        k = int(np.argmax(idx))
        raise ValueError(
            f"n_features={n_features} is too small: line {feat_line[k]} uses feature index {max_idx}")
    n = len(y)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=n), out=indptr[1:])
    X = sp.csr_matrix((val, (idx - 1).astype(np.int32), indptr), shape=(n, n_features))
    return X, y


def normalize_rows(X):
    """Scale every row of ``X`` (sparse or dense, shape (n, d)) to unit L2 norm.

    Rows of norm 0 stay 0. Returns a new float64 matrix of the same kind
    (CSR for sparse input) with ``||x_i|| <= 1``, as the paper assumes.
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        X.data *= np.repeat(scale, np.diff(X.indptr))
        return X
    X = np.array(X, dtype=np.float64, copy=True)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}")
    norms = np.linalg.norm(X, axis=1)
    scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    X *= scale[:, None]
    return X


def binary_labels(y):
    """Map labels with exactly two distinct values to classes ``{0, 1}`` (int64).

    The smaller value becomes 0: mushrooms' ``1/2`` and a9a's ``-1/+1`` both map
    to ``0/1``. Raises ValueError for one class or more than two.
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y.shape}")
    values, codes = np.unique(y, return_inverse=True)
    if len(values) != 2:
        raise ValueError(f"y must have exactly two distinct labels, got {len(values)}: {values[:5]}")
    return codes.astype(np.int64)


def _data_dir(data_dir):
    if data_dir is None:
        data_dir = os.environ.get("LOGT_DATA_DIR")
        if not data_dir:
            raise ValueError("data_dir not given and LOGT_DATA_DIR is not set")
    return data_dir


def load_mushrooms(data_dir=None, normalize=True):
    """Mushrooms (8124 x 112) from ``<data_dir>/mushrooms.gz``.

    Returns ``(X, y)``: CSR float64 rows scaled to unit norm (if ``normalize``)
    and labels in {0, 1} (1 -> 0 poisonous, 2 -> 1 edible). ``data_dir``
    defaults to the ``LOGT_DATA_DIR`` environment variable.
    """
    X, y = load_libsvm(os.path.join(_data_dir(data_dir), "mushrooms.gz"))
    return (normalize_rows(X) if normalize else X), binary_labels(y)


def load_adult(data_dir=None, normalize=True):
    """Adult (a9a): ``(X_train, y_train, X_test, y_test)``, 32561 and 16281 rows x 123.

    Files ``a9a.gz`` and ``a9a.t.gz`` (read with ``n_features=123``); labels
    -1 -> 0, +1 -> 1; rows scaled to unit norm if ``normalize``.
    """
    d = _data_dir(data_dir)
    Xtr, ytr = load_libsvm(os.path.join(d, "a9a.gz"), n_features=123)
    Xte, yte = load_libsvm(os.path.join(d, "a9a.t.gz"), n_features=123)
    if normalize:
        Xtr, Xte = normalize_rows(Xtr), normalize_rows(Xte)
    return Xtr, binary_labels(ytr), Xte, binary_labels(yte)


def train_test_split_seeded(X, y, test_fraction=1 / 3, rng=0):
    """Seeded random split (the paper uses 2/3 train, 1/3 test for mushrooms).

    A permutation of the rows is drawn from ``check_rng(rng)``; its first
    ``round(n * test_fraction)`` entries form the test set, the rest the
    training set (both keep permuted order). Same seed, same split.

    Returns ``X_train, X_test, y_train, y_test``.
    """
    y = np.asarray(y)
    n = X.shape[0]
    if len(y) != n:
        raise ValueError(f"X has {n} rows but y has {len(y)} entries")
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    n_test = int(round(n * test_fraction))
    if n_test < 1 or n_test > n - 1:
        raise ValueError(f"test_fraction={test_fraction} leaves an empty train or test set for n={n}")
    perm = check_rng(rng).permutation(n)
    te, tr = perm[:n_test], perm[n_test:]
    return X[tr], X[te], y[tr], y[te]
