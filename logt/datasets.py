"""Data readers: LIBSVM data for the metric-learning experiment (the paper's Fig. 2), IDX image files.

* :func:`load_libsvm` reads LIBSVM / svmlight text (plain or gzip) into a
  ``scipy.sparse.csr_matrix`` with a vectorised NumPy parser;
* :func:`normalize_rows` scales instances to ``||x|| <= 1`` (the paper's
  assumption, which makes the objective ``(lam + 4)``-smooth);
* :func:`binary_labels` maps two label values to classes ``{0, 1}``;
* :func:`load_mushrooms`, :func:`load_adult` load the shared data files and
  :func:`train_test_split_seeded` makes mushrooms' seeded 2/3 - 1/3 split;
* :func:`load_idx` reads an IDX file (MNIST's format, also Fashion-MNIST's and
  KMNIST's; plain or gzip) into an ndarray, :func:`load_idx_images` a pair of
  image and label files into ``(X, y)`` for the metric learners.
"""
import gzip
import os
import re
import zlib

import numpy as np
import scipy.sparse as sp
from numpy.lib.stride_tricks import sliding_window_view

from ._rng import check_rng

__all__ = [
    "MAX_FEATURE_INDEX",
    "load_libsvm",
    "load_idx",
    "load_idx_images",
    "normalize_rows",
    "binary_labels",
    "load_mushrooms",
    "load_adult",
    "train_test_split_seeded",
]

_GZIP_MAGIC = b"\x1f\x8b"
_WS = np.zeros(256, dtype=bool)
_WS[[9, 10, 11, 12, 13, 32]] = True      # the bytes that bytes.split() splits on
_COMMENT = re.compile(rb"#[^\n]*")

#: Largest feature index (1-based) ``load_libsvm`` accepts: the returned CSR
#: matrix stores column indices as int32 (scipy's default, and what logt's
#: kernels use), so an index above 2**31 - 1 is an error, never a wrap-around.
MAX_FEATURE_INDEX = 2**31 - 1

#: Default ``max_bytes``: at most 4 GiB of (decompressed) text is read.
MAX_BYTES_DEFAULT = 4 * 2**30

_CHUNK = 1 << 20          # bytes of text parsed per vectorized step
_WIDE = 40                # longer labels / values / indices are parsed one by one


class _State:
    """What one piece of text leaves to the next (pieces end at a newline, or,
    inside a line longer than a chunk, at whitespace)."""

    def __init__(self):
        self.line = 1             # number of the next piece's first line
        self.cont = False         # the next piece starts inside a row
        self.in_comment = False   # ... inside a '#' comment
        self.last_idx = 0         # last feature index of the continuing row
        self.row_has_feat = False  # the continuing row has a feature or qid already
        self.rows = 0
        self.max_idx = 0          # largest index so far and its line
        self.max_line = 0


def _open_maybe_gzip(path):
    """``(reader, raw)``: the file's bytes, decompressed when it starts with gzip's magic bytes (whatever its
    name), and the underlying file to close."""
    fh = open(path, "rb")
    try:
        head = fh.read(2)
        fh.seek(0)
    except BaseException:
        fh.close()
        raise
    if head == _GZIP_MAGIC:
        return gzip.GzipFile(fileobj=fh, mode="rb"), fh
    return fh, fh


def _pieces(path, max_bytes):
    """Yield the text in pieces of about _CHUNK bytes that end at a newline,
    or at whitespace when one line is longer than a chunk (a single token is
    never split). Counts the (decompressed) bytes against ``max_bytes``."""
    reader, raw = _open_maybe_gzip(path)
    total = 0
    pending, plen = [], 0
    try:
        while True:
            try:
                block = reader.read(_CHUNK)
            except (OSError, EOFError, zlib.error) as exc:
                raise ValueError(f"{os.fspath(path)!r}: corrupt gzip data ({exc})") from None
            if not block:
                break
            total += len(block)
            if max_bytes is not None and total > max_bytes:
                raise ValueError(
                    f"{os.fspath(path)!r} has more than max_bytes={max_bytes} bytes of text "
                    "(decompressed); pass a larger max_bytes (or None) to read it")
            pending.append(block)
            plen += len(block)
            if plen < _CHUNK:
                continue
            data = b"".join(pending)
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                # one line longer than a chunk: cut at its last whitespace
                for ch in b" \t\r\x0b\x0c":
                    cut = max(cut, data.rfind(bytes([ch])) + 1)
            if cut == 0:
                pending, plen = [data], len(data)     # a single long token: read on
                continue
            yield data[:cut]
            rest = data[cut:]
            pending, plen = ([rest], len(rest)) if rest else ([], 0)
        if plen:
            yield b"".join(pending)
    finally:
        reader.close()
        raw.close()


def _token(buf, s, e):
    return bytes(buf[s:e]).decode("ascii", "replace")


def _parse_fixed(buf, starts, lens, dtype, what, lines):
    """Parse the tokens buf[s:s+len] as ``dtype`` (float64 or int64) in C:
    tokens up to _WIDE bytes through a fixed-width view (no copy of the text
    per token beyond its width), longer ones one by one. Raises ValueError
    naming the line of the first token that does not parse."""
    out = np.empty(len(starts), dtype=dtype)
    if len(starts) == 0:
        return out
    wide = lens > _WIDE
    narrow = ~wide
    if narrow.any():
        s_n, l_n = starts[narrow], lens[narrow]
        w = int(l_n.max())
        padded = np.concatenate((buf, np.zeros(w, dtype=np.uint8)))
        g = sliding_window_view(padded, w)[s_n]          # (k, w) uint8 copy
        g[np.arange(w) >= l_n[:, None]] = 0               # NUL padding is stripped
        strs = g.view(f"S{w}").ravel()
        try:
            out[narrow] = strs.astype(dtype)
        except (ValueError, OverflowError):
            for k, t in enumerate(strs):
                try:
                    (float if dtype == np.float64 else int)(t)
                except (ValueError, OverflowError):
                    line = lines[np.flatnonzero(narrow)[k]]
                    raise ValueError(f"malformed {what} {t.decode('ascii', 'replace')!r} "
                                     f"on line {line}") from None
            raise
    for k in np.flatnonzero(wide):
        t = bytes(buf[starts[k]:starts[k] + lens[k]])
        try:
            out[k] = float(t) if dtype == np.float64 else int(t)
        except (ValueError, OverflowError):
            shown = t[:40].decode("ascii", "replace") + ("..." if len(t) > 40 else "")
            raise ValueError(f"malformed {what} {shown!r} on line {lines[k]}") from None
    return out


def _bad(buf, s, e, line, what):
    return ValueError(f"malformed {what} {_token(buf, s, min(e, s + 60))!r} on line {line}")


def _parse_piece(text, st, query_id):
    """Parse one piece; returns (labels, row_nnz, indices, values, qid_rows,
    qid_values) with row_nnz[0] the count of the row continued from the
    previous piece (0 if none). Updates ``st``."""
    line0 = st.line
    n_nl = text.count(b"\n")
    ends_nl = text.endswith(b"\n")
    st.line = line0 + n_nl
    if st.in_comment:
        nl = text.find(b"\n")
        if nl < 0:                      # the whole piece continues a comment
            return np.empty(0), np.zeros(1, np.int64), np.empty(0, np.int64), np.empty(0), None, None
        text = text[nl:]
    if b"#" in text:
        st.in_comment = (not ends_nl) and text.rfind(b"#") > text.rfind(b"\n")
        text = _COMMENT.sub(b"", text)  # keeps every newline: line numbers hold
    else:
        st.in_comment = False
    nul = text.find(b"\x00")
    if nul >= 0:
        line = line0 + text.count(b"\n", 0, nul)
        raise ValueError(f"NUL byte on line {line} (binary data is not LIBSVM text)")

    buf = np.frombuffer(text, dtype=np.uint8)
    ws = _WS[buf]
    nonws = ~ws
    starts = np.flatnonzero(nonws & np.concatenate(([True], ws[:-1])))
    ends = np.flatnonzero(nonws & np.concatenate((ws[1:], [True]))) + 1
    del ws, nonws
    T = len(starts)
    tail_tok = T > 0 and int(starts[-1]) > text.rfind(b"\n")   # tokens after the last newline
    tok_line = np.searchsorted(np.flatnonzero(buf == 10), starts)   # newlines before each token
    lines = tok_line + line0
    is_label = np.empty(T, dtype=bool)
    if T:
        is_label[0] = not (st.cont and tok_line[0] == 0)
        is_label[1:] = tok_line[1:] != tok_line[:-1]
    del tok_line
    row = np.cumsum(is_label) - 1                   # -1: the row continued from before

    colon_pos = np.flatnonzero(buf == 58)
    colon_tok = np.searchsorted(starts, colon_pos, side="right") - 1
    ncolon = np.bincount(colon_tok, minlength=T)
    bad = is_label & (ncolon != 0)
    if bad.any():
        k = int(np.argmax(bad))
        raise ValueError(f"malformed label {_token(buf, starts[k], ends[k])!r} on line {lines[k]} "
                         "(each line starts with its label)")
    feat = ~is_label
    bad = feat & (ncolon != 1)
    if bad.any():
        k = int(np.argmax(bad))
        raise ValueError(f"malformed token {_token(buf, starts[k], ends[k])!r} on line {lines[k]} "
                         "(expected <index>:<value>)")

    # labels
    ls, le, lline = starts[is_label], ends[is_label], lines[is_label]
    y = _parse_fixed(buf, ls, le - ls, np.float64, "label", lline)
    fin = np.isfinite(y)
    if not fin.all():
        k = int(np.argmax(~fin))
        raise ValueError(f"non-finite label {_token(buf, ls[k], le[k])!r} on line {lline[k]}")
    nrows = len(y)

    # features <index>:<value> (the colon is each token's only one)
    colon = np.empty(T, dtype=np.int64)
    colon[colon_tok] = colon_pos
    fs, fe, fc = starts[feat], ends[feat], colon[feat]
    frow, fline = row[feat], lines[feat]
    del starts, ends, colon, colon_pos, colon_tok, ncolon, row, lines, feat, is_label
    nf = len(fs)
    first_in_row = np.empty(nf, dtype=bool)
    if nf:
        first_in_row[0] = not (frow[0] == -1 and st.row_has_feat)
        first_in_row[1:] = frow[1:] != frow[:-1]
    L = fc - fs
    is_qid = L == 3
    q = np.flatnonzero(is_qid)
    if len(q):
        is_qid[q] = (buf[fs[q]] == 113) & (buf[fs[q] + 1] == 105) & (buf[fs[q] + 2] == 100)
    qrows = qvals = None
    qid_rows_local = np.empty(0, dtype=np.int64)
    if is_qid.any():
        bad = is_qid & ~first_in_row
        if bad.any():
            k = int(np.argmax(bad))
            raise ValueError(f"qid token {_token(buf, fs[k], fe[k])!r} on line {fline[k]} must "
                             "directly follow the label")
        q = np.flatnonzero(is_qid)
        qv = _parse_fixed(buf, fc[q] + 1, fe[q] - fc[q] - 1, np.int64, "qid", fline[q])
        qid_rows_local = frow[q]
        if query_id:
            qrows, qvals = frow[q] + st.rows, qv
        keep = ~is_qid
        fs, fe, fc, frow, fline, L = fs[keep], fe[keep], fc[keep], frow[keep], fline[keep], L[keep]
        nf = len(fs)

    # indices: decimal digits only, 1 .. MAX_FEATURE_INDEX, strictly increasing
    idx = np.empty(nf, dtype=np.int64)
    if nf:
        bad = (L == 0) | (fe - fc == 1)
        if bad.any():
            k = int(np.argmax(bad))
            raise ValueError(f"malformed token {_token(buf, fs[k], fe[k])!r} on line {fline[k]} "
                             "(expected <index>:<value>)")
        long_ = L > 18
        w = int(min(L.max(), 18))
        padded = np.concatenate((np.full(w, 48, dtype=np.uint8), buf))
        acc = np.zeros(nf, dtype=np.int64)
        okd = np.ones(nf, dtype=bool)
        for j in range(w):
            # digit j of the index right-aligned in w digits, zero-filled
            pos = fc - w + j
            c = padded[pos + w].astype(np.int64)
            c[pos < fs] = 48
            okd &= (c >= 48) & (c <= 57)
            acc = acc * 10 + (c - 48)
        del padded
        okd[long_] = True
        if not okd.all():
            k = int(np.argmax(~okd))
            raise ValueError(f"malformed token {_token(buf, fs[k], fe[k])!r} on line {fline[k]} "
                             "(the index must be a positive integer)")
        idx[:] = acc
        del acc, okd
        for k in np.flatnonzero(long_):
            digits = bytes(buf[fs[k]:fc[k]])
            if not digits.isdigit():
                raise ValueError(f"malformed token {_token(buf, fs[k], min(fe[k], fs[k] + 60))!r} "
                                 f"on line {fline[k]} (the index must be a positive integer)")
            stripped = digits.lstrip(b"0")
            idx[k] = int(stripped) if len(stripped) <= 18 else MAX_FEATURE_INDEX + 1
        if idx.min() <= 0:
            k = int(np.argmin(idx))
            raise ValueError(f"feature index {idx[k]} <= 0 on line {fline[k]} (indices are 1-based)")
        if idx.max() > MAX_FEATURE_INDEX:
            k = int(np.argmax(idx))
            shown = _token(buf, fs[k], min(fc[k], fs[k] + 60))
            raise ValueError(
                f"feature index {shown} on line {fline[k]} exceeds the limit {MAX_FEATURE_INDEX} "
                "(2**31 - 1: load_libsvm returns int32 CSR column indices)")
        bad = (frow[1:] == frow[:-1]) & (idx[1:] <= idx[:-1])
        if bad.any():
            k = int(np.argmax(bad)) + 1
            raise ValueError(f"feature indices are not strictly increasing on line {fline[k]}")
        if frow[0] == -1 and idx[0] <= st.last_idx:
            raise ValueError(f"feature indices are not strictly increasing on line {fline[0]}")
        k = int(np.argmax(idx))
        if idx[k] > st.max_idx:
            st.max_idx, st.max_line = int(idx[k]), int(fline[k])

    # values
    vals = _parse_fixed(buf, fc + 1, fe - fc - 1, np.float64, "value", fline)
    fin = np.isfinite(vals)
    if not fin.all():
        k = int(np.argmax(~fin))
        raise ValueError(f"non-finite value {_token(buf, fc[k] + 1, fe[k])!r} on line {fline[k]}")

    counts = np.bincount(frow + 1, minlength=nrows + 1).astype(np.int64)
    if ends_nl or not (tail_tok or (n_nl == 0 and st.cont)):
        st.cont = False
        st.last_idx = 0
        st.row_has_feat = False
    else:
        # the last row goes on in the next piece
        last = nrows - 1                         # -1: the row continued from before
        in_last = np.flatnonzero(frow == last)
        has = len(in_last) > 0 or bool(np.any(qid_rows_local == last))
        if last == -1:
            st.row_has_feat = st.row_has_feat or has
            if len(in_last):
                st.last_idx = int(idx[in_last[-1]])
        else:
            st.row_has_feat = has
            st.last_idx = int(idx[in_last[-1]]) if len(in_last) else 0
        st.cont = tail_tok or (n_nl == 0 and st.cont)
    st.rows += nrows
    return y, counts, idx, vals, qrows, qvals


def load_libsvm(path, n_features=None, *, query_id=False, max_bytes=MAX_BYTES_DEFAULT):
    """Read a LIBSVM / svmlight text file.

    Each sample is a line ``<label> [qid:<int>] <index>:<value> ...`` with
    1-based, strictly increasing integer indices; blank lines are skipped,
    ``#`` starts a comment that runs to the end of the line, CRLF line ends
    and tabs are fine. The file may be gzip-compressed (detected by its magic
    bytes, not its name). On valid files the result equals scikit-learn's
    ``load_svmlight_file`` (one-based files), including its ``qid`` rules.

    Parameters
    ----------
    path : str or os.PathLike
    n_features : int, optional
        Number of columns ``d`` (<= MAX_FEATURE_INDEX). Default: the largest
        index in the file. Pass it when a file does not use the last feature
        (``a9a.t`` needs 123).
    query_id : bool, default False
        Also return the ``qid`` of every sample (int64). As in scikit-learn,
        a ``qid:`` token must directly follow the label; ``qid`` is empty when
        no line has one, and (unlike scikit-learn, which would misalign it) a
        file where only some lines have one is an error. Ignored when False.
    max_bytes : int or None, default 4 GiB
        Refuse (ValueError) to read more than this many bytes of text, counted
        after decompression: a bound on time and memory for a gzip bomb.

    Returns
    -------
    X : scipy.sparse.csr_matrix, float64, shape (n, d), int32 indices
    y : ndarray, float64, shape (n,)
    qid : ndarray, int64, shape (n,) or (0,) -- only if ``query_id``

    Errors (ValueError, naming the line): malformed label, token, index or
    value; a NUL byte; ``nan``/``inf`` labels or values; an index <= 0 or
    above ``MAX_FEATURE_INDEX = 2**31 - 1`` (the returned CSR uses int32
    column indices: never a silent wrap-around); indices not strictly
    increasing; a misplaced ``qid``; ``n_features`` too small; an empty file.

    Memory: the text is read and parsed in pieces of ~1 MiB (a line longer
    than that is split at whitespace), so memory is the output (~12 bytes per
    stored value, 8 per row) plus a few MiB, whatever the longest token;
    labels, values and indices longer than 40 bytes are parsed one by one.
    """
    if n_features is not None:
        if isinstance(n_features, bool) or not isinstance(n_features, (int, np.integer)):
            raise TypeError(f"n_features must be an int or None, got {type(n_features).__name__}")
        if n_features < 1:
            raise ValueError(f"n_features must be >= 1, got {n_features}")
        if n_features > MAX_FEATURE_INDEX:
            raise ValueError(f"n_features must be <= {MAX_FEATURE_INDEX} (int32 CSR indices), "
                             f"got {n_features}")
    _check_max_bytes(max_bytes)
    st = _State()
    ys, counts, idxs, vals, qr, qv = [], [], [], [], [], []
    for text in _pieces(path, max_bytes):
        y, c, i, v, qrows, qvals = _parse_piece(text, st, bool(query_id))
        if c[0]:       # features of a row begun in an earlier piece
            next(a for a in reversed(counts) if a.size)[-1] += c[0]
        counts.append(c[1:])
        ys.append(y)
        idxs.append(i)
        vals.append(v)
        if qrows is not None:
            qr.append(qrows)
            qv.append(qvals)
    y = np.concatenate(ys) if ys else np.empty(0)
    if len(y) == 0:
        raise ValueError(f"{os.fspath(path)!r} has no samples (empty file)")
    idx = np.concatenate(idxs)
    val = np.concatenate(vals)
    del idxs, vals
    max_idx = st.max_idx
    if n_features is None:
        n_features = max_idx
    elif max_idx > n_features:
        raise ValueError(f"n_features={n_features} is too small: line {st.max_line} uses "
                         f"feature index {max_idx}")
    n = len(y)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.concatenate(counts), out=indptr[1:])
    idx -= 1
    X = sp.csr_matrix((val, idx.astype(np.int32), indptr), shape=(n, int(n_features)))
    if not query_id:
        return X, y
    if not qr:
        return X, y, np.empty(0, dtype=np.int64)
    qrows = np.concatenate(qr)
    if len(qrows) != n:
        missing = np.setdiff1d(np.arange(n), qrows)[0]
        raise ValueError(f"sample {missing} has no qid while other samples have one "
                         "(query_id=True needs a qid on every line or on none)")
    q = np.empty(n, dtype=np.int64)
    q[qrows] = np.concatenate(qv)
    return X, y, q


#: IDX type codes: the element type of the data, stored big-endian
_IDX_TYPES = {0x08: np.dtype(">u1"), 0x09: np.dtype(">i1"), 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"),
              0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}


def _check_max_bytes(max_bytes):
    if max_bytes is not None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, (int, np.integer)):
            raise TypeError(f"max_bytes must be an int or None, got {type(max_bytes).__name__}")
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be >= 1, got {max_bytes}")


def load_idx(path, *, max_bytes=MAX_BYTES_DEFAULT):
    """Read an IDX file: the format of MNIST, Fashion-MNIST and KMNIST (``*-idx3-ubyte``: images,
    ``*-idx1-ubyte``: labels), plain or gzip-compressed (detected by its magic bytes, not its name).

    Layout: two zero bytes, a type code (0x08 unsigned byte, 0x09 signed byte, 0x0B int16, 0x0C int32,
    0x0D float32, 0x0E float64), the number of dimensions, each dimension as a big-endian uint32, then the
    elements in C order, big-endian.

    Parameters
    ----------
    path : str or os.PathLike
    max_bytes : int or None, default 4 GiB
        Refuse (ValueError) a file whose data (counted after decompression) would exceed this many bytes:
        checked from the header, before the data are read.

    Returns
    -------
    ndarray of the header's shape, in the file's element type (native byte order): uint8 ``(n, rows, cols)``
    for MNIST's images, ``(n,)`` for its labels.

    Errors (ValueError, naming the file): not an IDX header (the first two bytes not zero, an unknown type code,
    no dimensions), a data part shorter or longer than the header says, or more than ``max_bytes``.
    """
    _check_max_bytes(max_bytes)
    name = os.fspath(path)
    f, raw = _open_maybe_gzip(path)
    with raw, f:
        head = f.read(4)
        if len(head) < 4 or head[0] != 0 or head[1] != 0:
            raise ValueError(f"{name!r} is not an IDX file (it does not start with two zero bytes and a type code)")
        if head[2] not in _IDX_TYPES:
            raise ValueError(f"{name!r}: unknown IDX type code 0x{head[2]:02X} (known: "
                             + ", ".join(f"0x{c:02X}" for c in _IDX_TYPES) + ")")
        dtype, ndim = _IDX_TYPES[head[2]], head[3]
        if ndim == 0:
            raise ValueError(f"{name!r}: an IDX header with no dimensions")
        dims_raw = f.read(4 * ndim)
        if len(dims_raw) < 4 * ndim:
            raise ValueError(f"{name!r}: the IDX header is cut short (it announces {ndim} dimensions)")
        shape = tuple(int(v) for v in np.frombuffer(dims_raw, dtype=">u4"))
        size = int(np.prod(shape, dtype=object)) * dtype.itemsize
        if max_bytes is not None and size > max_bytes:
            raise ValueError(f"{name!r}: its data, {size:,} bytes for shape {shape}, exceed max_bytes={max_bytes:,}")
        data = f.read(size + 1)
    if len(data) != size:
        raise ValueError(f"{name!r}: the header says shape {shape} of {dtype.newbyteorder('=').name} "
                         f"({size:,} bytes), the file has {'more' if len(data) > size else f'{len(data):,}'} "
                         "bytes of data")
    return np.frombuffer(data, dtype=dtype).astype(dtype.newbyteorder("="), copy=True).reshape(shape)


def load_idx_images(images, labels, *, max_bytes=MAX_BYTES_DEFAULT):
    """``(X, y)`` from a pair of IDX files (:func:`load_idx`): the images flattened to rows, float64
    ``(n, pixels)`` in the file's units (0..255 for MNIST's bytes: no rescaling), and the labels as int64
    ``(n,)``. A ValueError when the files disagree on ``n``, or the labels are not one number per image."""
    X = load_idx(images, max_bytes=max_bytes)
    y = load_idx(labels, max_bytes=max_bytes)
    if y.ndim != 1:
        raise ValueError(f"{os.fspath(labels)!r}: labels must be 1-D (one per image), got shape {y.shape}")
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"{os.fspath(images)!r} holds {X.shape[0]:,} images but {os.fspath(labels)!r} "
                         f"{y.shape[0]:,} labels")
    if not np.issubdtype(y.dtype, np.integer):
        if not (np.isfinite(y).all() and np.array_equal(y, np.round(y))):
            raise ValueError(f"{os.fspath(labels)!r}: labels must be whole numbers")
    X = X.reshape(X.shape[0], -1).astype(np.float64)
    if not np.isfinite(X).all():
        raise ValueError(f"{os.fspath(images)!r}: the images hold NaN or infinite values")
    return X, y.astype(np.int64)


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
