"""The metric learners on image data you bring in IDX files (MNIST's format: MNIST, Fashion-MNIST, KMNIST).

Data no default was chosen on: ``subsets`` stratified random subsets of ``rows`` images each (subset ``s``
drawn with seed ``1000 + s``), each split 70/30 (stratified, seed ``s``) and scored as the high-dimensional
sets are (:func:`logt.bench.learners_highdim.evaluate_set`: Euclidean, PCA(64), scikit-learn's NCA(64) on
the raw pixels and on the pixels / max, ``MetricLearner()`` and ``MetricLearner(n_components=64)``; 1-NN and
5-NN accuracy, fit times on one BLAS thread, the fits interleaved). Raw pixels, no preprocessing.

Run::

    python -m logt.bench.learners_idx IMAGES LABELS [--rows 5000] [--subsets 5] [--no-nca]

(for Debian's ``dataset-fashion-mnist``: ``/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz`` and
``train-labels-idx1-ubyte.gz``). Prints one Markdown table per subset and a summary.
"""
import argparse

import numpy as np

from logt.bench.learners_highdim import evaluate_set, format_section
from logt.datasets import load_idx_images

__all__ = ["stratified_subset", "evaluate_subsets", "summary", "main"]


def stratified_subset(y, rows, rng):
    """Sorted indices of ``rows`` of the ``len(y)`` labels ``y``, each class in its share (scikit-learn's
    stratified split, seed ``rng``); all of them when ``rows >= len(y)``."""
    from sklearn.model_selection import train_test_split
    if rows >= len(y):
        return np.arange(len(y))
    idx, _ = train_test_split(np.arange(len(y)), train_size=rows, stratify=y, random_state=rng)
    return np.sort(idx)


def evaluate_subsets(X, y, rows=5000, subsets=5, nca=True, name="idx", log=print):
    """:func:`evaluate_set`'s rows for each of ``subsets`` stratified subsets of ``rows`` rows of ``X`` (n, d),
    ``y`` (n,): a list of row lists, the datasets named ``f"{name}{rows}_s{s}"``."""
    out = []
    for s in range(subsets):
        idx = stratified_subset(y, rows, 1000 + s)
        label = f"{name}{len(idx)}_s{s}"
        log(f"  {label}: {len(idx)} x {X.shape[1]}")
        out.append(evaluate_set(label, X[idx], y[idx], nca=nca, rng=s))
    return out


def _row(rows, method):
    return next((r for r in rows if r["method"] == method), None)


def summary(runs):
    """Markdown lines: for ``MetricLearner()`` and ``MetricLearner(n_components=64)``, on how many subsets it
    is at least each contender in 1-NN and in 5-NN, its worst difference and mean gain, and its fit time
    against NCA's (median ratio)."""
    lines = []
    for method in ("MetricLearner()", "MetricLearner(n_components=64)"):
        if _row(runs[0], method) is None:
            continue
        for rival in ("Euclidean", "PCA(64)", "NCA(64)", "NCA(64), X / max|X|"):
            pairs = [(_row(rows, method), _row(rows, rival)) for rows in runs]
            pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
            if not pairs:
                continue
            diffs = np.array([[a["acc1"] - b["acc1"], a["acc5"] - b["acc5"]] for a, b in pairs])
            text = (f"- `{method}` against {rival}: at least it in 1-NN on {int((diffs[:, 0] >= 0).sum())} "
                    f"and in 5-NN on {int((diffs[:, 1] >= 0).sum())} of {len(pairs)} subsets; mean difference "
                    f"{diffs[:, 0].mean():+.3f} / {diffs[:, 1].mean():+.3f}, worst {diffs[:, 0].min():+.3f} / "
                    f"{diffs[:, 1].min():+.3f}")
            if rival.startswith("NCA") and all(a["seconds"] and b["seconds"] for a, b in pairs):
                text += f"; NCA's fit time / this: {np.median([b['seconds'] / a['seconds'] for a, b in pairs]):.1f}x"
            lines.append(text)
        secs = [_row(rows, method)["seconds"] for rows in runs]
        lines.append(f"- `{method}` fit time: median {np.median(secs):.2f} s, max {max(secs):.2f} s")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m logt.bench.learners_idx", description=__doc__.split("\n")[0])
    parser.add_argument("images", help="IDX file of the images (n, rows, cols), plain or gzip")
    parser.add_argument("labels", help="IDX file of the labels (n,)")
    parser.add_argument("--rows", type=int, default=5000, help="rows per subset (default 5000)")
    parser.add_argument("--subsets", type=int, default=5, help="number of subsets (default 5)")
    parser.add_argument("--no-nca", action="store_true", help="leave out scikit-learn's NCA")
    parser.add_argument("--name", default="idx", help="the data's name in the tables (default idx)")
    args = parser.parse_args(argv)
    if args.rows < 20 or args.subsets < 1:
        parser.error("--rows must be at least 20 and --subsets at least 1")
    X, y = load_idx_images(args.images, args.labels)
    runs = evaluate_subsets(X, y, args.rows, args.subsets, nca=not args.no_nca, name=args.name)
    for s, rows in enumerate(runs):
        print(format_section(rows, title=f"{args.name}, subset {s}",
                             note=f"{rows[0]['dataset']}: a stratified subset (seed {1000 + s}) of {args.images}, "
                                  f"70/30 stratified split (seed {s}), raw values; fit times on one BLAS thread.")
              + "\n")
    print("\n".join(summary(runs)))


if __name__ == "__main__":
    main()
