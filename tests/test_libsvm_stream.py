"""Issue 12 item 2: load_libsvm streams, checks indices and tokens, names the line."""
import gzip

import numpy as np
import pytest

from logt.datasets import MAX_FEATURE_INDEX, load_libsvm


def _write(tmp_path, data, name="f.svm"):
    p = tmp_path / name
    p.write_bytes(data)
    return p


@pytest.mark.parametrize("data, match", [
    (b"1 1:1\n1 2147483648:1\n", r"line 2"),                  # 2^31: above the int32 limit
    (b"1 1:1\n1 4294967301:1\n", r"line 2"),                  # 2^32 + 5 (was column 4)
    (b"1 1:1\n1 1000000000000:1\n", r"line 2"),               # 1e12 (was an invalid CSR)
    (b"1 1:1\n1 " + b"9" * 30 + b":1\n", r"line 2"),          # 30 digits (was OverflowError)
    (b"1 1:1\n1 2:1\x00\n", r"NUL byte on line 2"),
    (b"1 1:1\n1 2:nan\n", r"non-finite value .* on line 2"),
    (b"1 1:1\n1 2:inf\n", r"non-finite value .* on line 2"),
    (b"1 1:1\n1 2:-Infinity\n", r"line 2"),
    (b"1 1:1\nnan 2:1\n", r"non-finite label .* on line 2"),
    (b"1 1:1\n1 2:1e999\n", r"line 2"),                        # overflows to inf
    (b"# c\n1 1:1\n1 qid:x 2:1\n", r"line 3"),
    (b"1 1:1\n1 2:1 qid:3\n", r"line 2"),                      # qid after a feature
])
def test_bad_tokens_name_the_line(tmp_path, data, match):
    with pytest.raises(ValueError, match=match):
        load_libsvm(_write(tmp_path, data))


def test_index_limit_exact(tmp_path):
    p = _write(tmp_path, f"1 {MAX_FEATURE_INDEX}:2.5\n".encode())
    X, y = load_libsvm(p)
    assert X.shape == (1, MAX_FEATURE_INDEX)
    assert X.indices.dtype == np.int32 and X.indices[0] == MAX_FEATURE_INDEX - 1
    assert X.data[0] == 2.5


def test_comments_and_qid(tmp_path):
    data = (b"# header comment\n"
            b"1 qid:7 1:0.5 3:2 # trailing\n"
            b"\n"
            b"-1 qid:-2 2:1e-3\r\n"
            b"#only a comment\n")
    p = _write(tmp_path, data)
    X, y = load_libsvm(p)
    np.testing.assert_array_equal(X.toarray(), [[0.5, 0, 2], [0, 1e-3, 0]])
    np.testing.assert_array_equal(y, [1, -1])
    X2, y2, q = load_libsvm(p, query_id=True)
    np.testing.assert_array_equal(q, [7, -2])
    assert q.dtype == np.int64
    with pytest.raises(ValueError, match="no qid"):
        load_libsvm(_write(tmp_path, b"1 qid:1 1:1\n2 2:1\n", "g.svm"), query_id=True)


def test_gzip_bomb_stopped_by_max_bytes(tmp_path):
    # 64 MiB of zeros compress to ~64 KiB; max_bytes bounds what is decompressed
    raw = b"1 1:1 " + b"0" * (64 << 20)
    p = _write(tmp_path, gzip.compress(raw, 9), "bomb.gz")
    assert p.stat().st_size < 1 << 20
    with pytest.raises(ValueError, match=r"more than max_bytes=1048576 bytes"):
        load_libsvm(p, max_bytes=1 << 20)
    with pytest.raises(ValueError, match="max_bytes"):
        load_libsvm(p, max_bytes=0)
    with pytest.raises(TypeError, match="max_bytes"):
        load_libsvm(p, max_bytes=1.5)


def test_long_token_memory_is_linear_in_output(tmp_path):
    # a 3 MiB run of digits in one value (was stored at the width of the
    # longest token for every token): parsed on its own, one stored value
    rng = np.random.default_rng(0)
    rows = [f"{i % 2} " + " ".join(f"{j}:{float(rng.standard_normal())!r}" for j in range(1, 6))
            for i in range(2000)]
    rows.append("1 1:0." + "1" * (3 << 20))
    p = _write(tmp_path, ("\n".join(rows) + "\n").encode())
    import tracemalloc
    tracemalloc.start()
    X, y = load_libsvm(p)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert X.shape == (2001, 5) and X.nnz == 2001 * 5 - 4
    np.testing.assert_allclose(X[2000, 0], 0.1111111111111111, rtol=1e-15)
    # the text is read in ~1 MiB pieces: the peak is a few pieces plus the
    # 3 MiB token, never (tokens x longest token) ~ 30 GB
    assert peak < 64 << 20


def test_rows_split_across_chunks_match_line_by_line(tmp_path):
    # > 2 chunks with a line longer than a chunk in the middle; the reference
    # is a line-by-line pure-Python parse
    rng = np.random.default_rng(1)
    lines = []
    for i in range(30000):
        k = 1 + i % 7
        idx = np.sort(rng.choice(100, size=k, replace=False)) + 1
        lines.append(f"{i % 3 - 1} " + " ".join(f"{j}:{v!r}" for j, v in
                                                 zip(idx.tolist(), rng.standard_normal(k).tolist())))
        if i == 15000:
            idx = range(1, 100001)
            lines.append("1 " + " ".join(f"{j}:{j * 0.5!r}" for j in idx))
    text = "\n".join(lines) + "\n"
    assert len(text) > 3 << 20
    p = _write(tmp_path, text.encode())
    X, y = load_libsvm(p)
    ref_rows, ref_cols, ref_vals, ref_y = [], [], [], []
    for r, line in enumerate(lines):
        toks = line.split()
        ref_y.append(float(toks[0]))
        for t in toks[1:]:
            j, v = t.split(":")
            ref_rows.append(r)
            ref_cols.append(int(j) - 1)
            ref_vals.append(float(v))
    np.testing.assert_array_equal(y, ref_y)
    coo = X.tocoo()
    np.testing.assert_array_equal(coo.row, ref_rows)
    np.testing.assert_array_equal(coo.col, ref_cols)
    np.testing.assert_array_equal(coo.data, ref_vals)
