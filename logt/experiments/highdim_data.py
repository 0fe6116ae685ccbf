"""High-dimensional development data for the metric learners (issue: raw pixels, many features).

Seeded generators of labelled sets that imitate data the learners meet in the wild
and were not developed on: raw images (many constant-zero border pixels, shifts,
pixel values 0..255), dense data with a few informative directions among thousands
of noisy, redundant or constant ones, and sparse bag-of-words counts. Every
generator takes ``rng`` (an int seed or a :class:`numpy.random.Generator`): the
same seed gives the same arrays.

:func:`development_sets` are the sets the learners' high-dimensional defaults were
chosen on; :func:`heldout_sets` (other canvases, shifts, noise levels, dimensions
and seeds) were used for nothing but the final check
(``python -m logt.bench --only learners``, ``docs/guide/high-dimensional.md``);
:func:`images_sets` are raw pixels of two other kinds (rendered :func:`shapes`,
:func:`photo_patches` of photographs); :func:`spectra` and :func:`expression` are two
more families (smooth curves under baseline and scatter nuisance; few samples of thousands of
correlated genes), defined after everything above was settled. :func:`multimodal` (classes made of several
clusters whose means coincide, in a few coordinates among many noisy ones) and :func:`with_outlier_rows` (a few
rows with entries blown up by orders of magnitude) come from a probe of the default on unseen kinds of data.
:func:`sequences` (one-hot letters of DNA-like sequences, classes told apart by a mutated motif and a few biased
positions) joined the moderately wide sweep (130-512 features).
"""
import numpy as np
import scipy.sparse as sp
from scipy import ndimage

from logt._rng import check_rng

__all__ = ["shifted_digits", "dense_classification", "mixed_units", "sparse_classification", "identities", "shapes",
           "photo_patches", "spectra", "expression", "multimodal", "with_outlier_rows", "sequences",
           "SHAPE_KINDS",
           "development_sets", "heldout_sets", "heldout2_sets", "images_sets"]


def _digits():
    from sklearn.datasets import load_digits     # the extra [sklearn]; only the digits images are used
    d = load_digits()
    return d.images.astype(np.float64) / 16.0, d.target.astype(np.int64)


def shifted_digits(n_samples=3500, canvas=28, size=18, max_shift=4, noise=0.0, blur=0.0, rng=0):
    """Raw-pixel images: scikit-learn's 8x8 digits upsampled and pasted at random shifts.

    Each of ``n_samples`` images is one of the 1,797 digits (drawn with replacement),
    upsampled to ``size x size`` pixels (bilinear), its stroke intensity jittered
    (x U(0.7, 1.0)), optionally blurred (Gaussian, ``blur`` pixels) and pasted into a
    ``canvas x canvas`` zero image, centred and shifted by up to ``max_shift``
    pixels in each direction; ``noise`` adds Gaussian pixel noise of that standard
    deviation (in units of the full intensity) inside the pasted box only, so the
    border stays exactly zero. Values are rounded to 0..255 like raw 8-bit images.

    Returns
    -------
    X : (n_samples, canvas**2) float64
        Pixel values in 0..255 (row-major images); border pixels are constant 0.
    y : (n_samples,) int64
        Digit labels 0..9.
    """
    gen = check_rng(rng)
    if not (size <= canvas and 2 * max_shift <= canvas - size):
        raise ValueError(f"size={size} with max_shift={max_shift} does not fit a {canvas}x{canvas} canvas")
    imgs, labels = _digits()
    idx = gen.integers(len(labels), size=n_samples)
    zoom = size / 8.0
    up = np.stack([np.clip(ndimage.zoom(im, zoom, order=1), 0.0, 1.0) for im in imgs])
    X = np.zeros((n_samples, canvas, canvas))
    off0 = (canvas - size) // 2
    shifts = gen.integers(-max_shift, max_shift + 1, size=(n_samples, 2))
    gains = gen.uniform(0.7, 1.0, size=n_samples)
    for r in range(n_samples):
        im = up[idx[r]] * gains[r]
        if blur > 0:
            im = ndimage.gaussian_filter(im, blur)
        if noise > 0:
            im = im + noise * gen.standard_normal(im.shape)
        a, b = off0 + shifts[r, 0], off0 + shifts[r, 1]
        X[r, a:a + size, b:b + size] = np.clip(im, 0.0, 1.0)
    return np.round(255.0 * X.reshape(n_samples, -1)), labels[idx].copy()


def dense_classification(n_samples=2000, n_features=2000, n_informative=10, n_classes=5, class_sep=1.0,
                         n_constant=None, heavy_tailed=False, rng=0):
    """Dense data with a few informative directions among many noisy ones.

    :func:`sklearn.datasets.make_classification` with ``n_informative`` informative
    and as many redundant features, the rest noise; the informative block is
    rotated by a random orthogonal matrix (so the signal is not along the axes),
    features get random scales (log-uniform over three decades), and
    ``n_constant`` columns (default ``n_features // 10``) are constant. With
    ``heavy_tailed`` every feature is passed through ``sinh`` (heavy tails).

    Returns
    -------
    X : (n_samples, n_features) float64
    y : (n_samples,) int64
    """
    from sklearn.datasets import make_classification
    gen = check_rng(rng)
    n_constant = n_features // 10 if n_constant is None else int(n_constant)
    d_var = n_features - n_constant
    X, y = make_classification(n_samples=n_samples, n_features=d_var, n_informative=n_informative,
                               n_redundant=n_informative, n_repeated=0, n_classes=n_classes,
                               n_clusters_per_class=2, class_sep=class_sep, flip_y=0.01,
                               shuffle=False, random_state=int(gen.integers(2**31)))
    m = 2 * n_informative
    Q, _ = np.linalg.qr(gen.standard_normal((m, m)))
    X[:, :m] = X[:, :m] @ Q
    if heavy_tailed:
        X = np.sinh(X)
    X *= 10.0 ** gen.uniform(-1.5, 1.5, size=d_var)
    X = np.hstack([X, np.full((n_samples, n_constant), 3.0)])
    perm = gen.permutation(n_features)
    return np.ascontiguousarray(X[:, perm]), y.astype(np.int64)


def mixed_units(n_samples=900, n_features=400, n_classes=4, n_informative=5, class_sep=1.5, decades=3.0, rng=0):
    """Dense features in unrelated units: a few informative features among many noisy ones, each feature then
    multiplied by ``10^U(-decades, decades)``.

    Labels cycle through the ``n_classes`` classes (row ``i`` has class ``i % n_classes``); every feature is
    standard normal noise, and ``n_informative`` of them (chosen at random) add a class offset (standard normal,
    times ``class_sep``). With ``decades > 0`` the largest variances belong to noise features, so the top
    principal directions miss the classes (the case the third candidate of ``MetricLearner``'s check of an int
    ``n_components`` is for: docs/guide/high-dimensional.md, "The default's directions for n_components");
    ``decades=0``: equal units. A :class:`numpy.random.Generator` passed as ``rng`` is advanced (draws: the
    noise, the informative features, their offsets, the units).

    Returns
    -------
    X : (n_samples, n_features) float64
    y : (n_samples,) int64
    """
    gen = check_rng(rng)
    y = np.arange(n_samples, dtype=np.int64) % n_classes
    X = gen.standard_normal((n_samples, n_features))
    X[:, gen.choice(n_features, n_informative, replace=False)] += gen.standard_normal((n_classes, n_informative))[y] \
        * class_sep
    if decades:
        X *= 10.0 ** gen.uniform(-decades, decades, n_features)
    return X, y


def sparse_classification(n_samples=2000, n_features=5000, n_classes=4, doc_length=60, topic_words=40,
                          topic_share=0.25, rng=0):
    """Bag-of-words-like counts: a Zipf vocabulary plus class-dependent topic words.

    Each document draws a length ~ Poisson(``doc_length``); each word is, with
    probability ``topic_share``, one of its class's ``topic_words`` (disjoint
    random words per class), else a word of the Zipf(1.1) background vocabulary.

    Returns
    -------
    X : (n_samples, n_features) scipy.sparse.csr_matrix of float64 counts
    y : (n_samples,) int64
    """
    gen = check_rng(rng)
    y = gen.integers(n_classes, size=n_samples)
    zipf = 1.0 / np.arange(1, n_features + 1) ** 1.1
    zipf /= zipf.sum()
    vocab = gen.permutation(n_features)
    topics = vocab[:n_classes * topic_words].reshape(n_classes, topic_words)
    background = gen.permutation(n_features)
    rows, cols = [], []
    lengths = np.maximum(1, gen.poisson(doc_length, size=n_samples))
    for i in range(n_samples):
        L = lengths[i]
        is_topic = gen.random(L) < topic_share
        words = background[gen.choice(n_features, size=L, p=zipf)]
        words[is_topic] = topics[y[i], gen.integers(topic_words, size=int(is_topic.sum()))]
        rows.append(np.full(L, i))
        cols.append(words)
    X = sp.csr_matrix((np.ones(int(lengths.sum())), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(n_samples, n_features))
    X.sum_duplicates()
    return X, y.astype(np.int64)


def identities(n_classes=20, per_class=8, n_features=2000, n_nuisance=8, n_identity=20, nuisance=3.0,
               separation=1.0, noise=1.0, pixels=False, rng=0):
    """Many classes of few rows each in many features under a strong shared nuisance (faces-like).

    Row ``x = mu_y + A z + noise * e``: the class means ``mu_c`` lie in a random
    ``n_identity``-dimensional subspace (``separation`` times standard normal coordinates,
    each direction of squared length ``n_features / n_identity``), ``A z`` is a nuisance
    shared by every class along ``n_nuisance`` random directions (``nuisance`` times standard
    normal, total squared length ``n_features``), and ``e`` is isotropic standard normal noise.
    Plain distances are ruled by the nuisance; a metric that removes it separates the classes.
    With ``pixels`` the values are mapped to integers 0..255 (one affine map for all rows).
    Rows come grouped by class, ``per_class`` rows each.

    Returns
    -------
    X : (n_classes * per_class, n_features) float64
    y : (n_classes * per_class,) int64
    """
    gen = check_rng(rng)
    d = int(n_features)
    A = np.linalg.qr(gen.standard_normal((d, n_nuisance)))[0] * np.sqrt(d / n_nuisance)
    B = np.linalg.qr(gen.standard_normal((d, n_identity)))[0] * np.sqrt(d / n_identity)
    mu = separation * gen.standard_normal((n_classes, n_identity)) @ B.T
    y = np.repeat(np.arange(n_classes, dtype=np.int64), per_class)
    X = (mu[y] + nuisance * gen.standard_normal((y.size, n_nuisance)) @ A.T
         + noise * gen.standard_normal((y.size, d)))
    if pixels:
        X = np.round(255.0 * (X - X.min()) / (X.max() - X.min()))
    return X, y


SHAPE_KINDS = ("disk", "ring", "square", "frame", "triangle", "plus", "cross", "bar")


def _shape_mask(kind, canvas, radius, cy, cx, theta):
    """(canvas, canvas) float mask of one outline or filled shape of ``SHAPE_KINDS`` centred at (cy, cx), of
    radius ``radius`` pixels, rotated by ``theta`` radians; strokes ``max(1, radius / 3)`` wide."""
    u, v = np.mgrid[0:canvas, 0:canvas].astype(np.float64)
    u, v = u - cy, v - cx
    a, b = np.cos(theta) * u - np.sin(theta) * v, np.sin(theta) * u + np.cos(theta) * v
    w = max(1.0, radius / 3.0)
    box = np.maximum(np.abs(a), np.abs(b))
    if kind == "disk":
        m = u ** 2 + v ** 2 <= radius ** 2
    elif kind == "ring":
        r = np.hypot(u, v)
        m = (r <= radius) & (r >= radius - w)
    elif kind == "square":
        m = box <= 0.85 * radius
    elif kind == "frame":
        m = (box <= 0.85 * radius) & (box >= 0.85 * radius - w)
    elif kind == "triangle":
        m = (a <= 0.7 * radius) & (a >= -radius) & (np.abs(b) <= 0.6 * (a + radius))
    elif kind in ("plus", "cross"):
        if kind == "cross":                    # the plus turned by 45 degrees
            a, b = (a + b) / np.sqrt(2.0), (a - b) / np.sqrt(2.0)
        m = ((np.abs(a) <= w / 2) & (np.abs(b) <= radius)) | ((np.abs(b) <= w / 2) & (np.abs(a) <= radius))
    else:                                      # "bar"
        m = (np.abs(a) <= w) & (np.abs(b) <= radius)
    return m.astype(np.float64)


def shapes(n_samples=2500, canvas=28, n_classes=8, rotation=0.3, noise=0.1, blur=0.7, gradient=0.5, rng=0):
    """Raw-pixel images of rendered shapes under an illumination gradient (not derived from the digits).

    Each image shows one shape of the first ``n_classes`` of ``SHAPE_KINDS`` (its label) of random
    radius (``canvas / 7`` to ``canvas / 3.2`` pixels) and position, intensity U(0.5, 1), turned by up
    to ``rotation`` radians, blurred (Gaussian, ``blur`` pixels), on a linear brightness ramp of random
    direction and slope up to ``gradient`` (a nuisance that carries no class), with Gaussian pixel
    noise of standard deviation ``noise`` everywhere (units of the full intensity). Values are clipped
    to 0..1 and rounded to 0..255 like raw 8-bit images.

    Returns
    -------
    X : (n_samples, canvas**2) float64
        Pixel values in 0..255 (row-major images).
    y : (n_samples,) int64
        Shape labels ``0..n_classes-1``.
    """
    gen = check_rng(rng)
    if not 12 <= canvas:
        raise ValueError(f"canvas must be at least 12 pixels, got {canvas}")
    if not 2 <= n_classes <= len(SHAPE_KINDS):
        raise ValueError(f"n_classes must be in [2, {len(SHAPE_KINDS)}], got {n_classes}")
    y = gen.integers(n_classes, size=n_samples)
    X = np.empty((n_samples, canvas * canvas))
    ramp_u, ramp_v = np.mgrid[0:canvas, 0:canvas] / canvas
    for i in range(n_samples):
        radius = gen.uniform(canvas / 7.0, canvas / 3.2)
        cy, cx = gen.uniform(radius + 1.0, canvas - radius - 1.0, size=2)
        im = gen.uniform(0.5, 1.0) * _shape_mask(SHAPE_KINDS[y[i]], canvas, radius, cy, cx,
                                                  gen.uniform(-rotation, rotation))
        if blur > 0:
            im = ndimage.gaussian_filter(im, blur)
        angle = gen.uniform(0.0, 2.0 * np.pi)
        im = (im + gradient * gen.uniform() * (np.cos(angle) * ramp_u + np.sin(angle) * ramp_v)
              + noise * gen.standard_normal(im.shape))
        X[i] = np.clip(im, 0.0, 1.0).ravel()
    return np.round(255.0 * X), y.astype(np.int64)


def photo_patches(n_samples=2500, size=20, grid=2, gain=0.3, rng=0):
    """Raw-pixel texture patches of two photographs: which part of which photo a patch comes from.

    scikit-learn's two sample photographs (``load_sample_images``, 427 x 640, shipped with it; reading
    them needs Pillow) in grey (the mean of the colour channels), each cut into a ``grid x grid``
    array of regions, one class per region (``2 grid^2`` classes); each sample is a ``size x size``
    patch at a random position inside its region, its brightness multiplied by U(1 - ``gain``,
    1 + ``gain``), clipped and rounded to 0..255. Natural images have a steep power spectrum: the
    weakest of 64 principal directions holds a few 1e-4 of the strongest's variance.

    Returns
    -------
    X : (n_samples, size**2) float64
        Pixel values in 0..255 (row-major patches).
    y : (n_samples,) int64
        Region labels ``0..2 grid^2 - 1`` (the first photo's regions first, row by row).
    """
    from sklearn.datasets import load_sample_images      # the extra [sklearn] (and Pillow, with [plot])
    gen = check_rng(rng)
    photos = [im.astype(np.float64).mean(axis=2) for im in load_sample_images().images]
    regions = []
    for im in photos:
        h, w = im.shape
        if not 4 <= size < min(h, w) // grid:
            raise ValueError(f"size must be in [4, {min(h, w) // grid}) for grid={grid}, got {size}")
        for a in range(grid):
            for b in range(grid):
                regions.append((im, a * h // grid, (a + 1) * h // grid, b * w // grid, (b + 1) * w // grid))
    y = gen.integers(len(regions), size=n_samples)
    X = np.empty((n_samples, size * size))
    for i in range(n_samples):
        im, a0, a1, b0, b1 = regions[y[i]]
        a, b = gen.integers(a0, a1 - size), gen.integers(b0, b1 - size)
        X[i] = np.clip(im[a:a + size, b:b + size] * gen.uniform(1.0 - gain, 1.0 + gain), 0.0, 255.0).ravel()
    return np.round(X), y.astype(np.int64)


def spectra(n_samples=1000, n_features=1000, n_classes=4, peak=0.05, n_class_peaks=2, noise=1.0, rng=0):
    """Smooth absorbance-like spectra whose classes differ by small narrow peaks under large nuisance.

    ``n_features`` wavelengths on [0, 1]. Each sample is a random mix of 4-8 broad bands shared by all
    classes (widths 0.03-0.15, log-normal amplitudes around 1: composition), plus its class's pattern over
    ``n_class_peaks * n_classes`` narrow peaks (widths 0.005-0.02, amplitudes U(0, ``peak``) per class and
    peak), the whole multiplied by a scatter factor U(0.8, 1.25) and shifted by a baseline (offset N(0, 0.5),
    slope N(0, 0.3), curvature N(0, 0.2)); then white noise of standard deviation ``noise * peak`` at every
    wavelength. The largest variances (baseline, scatter, bands) carry no class information; the classes
    live in low-variance, spatially narrow directions. Labels cycle through the classes and are shuffled.
    A :class:`numpy.random.Generator` passed as ``rng`` is advanced (draws: the bands, their amplitudes, the
    labels, the class peaks and patterns, the baselines and scatter, the noise), so one generator can draw a
    problem's training rows and, with more ``n_samples``, test rows of the same distribution.

    Returns
    -------
    X : (n_samples, n_features) float64
    y : (n_samples,) int64
    """
    if n_features < 2 or n_classes < 2 or n_class_peaks < 1 or peak <= 0 or noise < 0:
        raise ValueError("spectra needs n_features >= 2, n_classes >= 2, n_class_peaks >= 1, peak > 0, "
                         f"noise >= 0; got {n_features}, {n_classes}, {n_class_peaks}, {peak}, {noise}")
    gen = check_rng(rng)
    t = np.linspace(0.0, 1.0, n_features)

    def bumps(centres, widths):
        return np.exp(-0.5 * ((t[None, :] - centres[:, None]) / widths[:, None]) ** 2)

    n_bands = int(gen.integers(4, 9))
    bands = bumps(gen.uniform(0.05, 0.95, n_bands), gen.uniform(0.03, 0.15, n_bands))
    amplitudes = gen.lognormal(0.0, 0.5, (n_samples, n_bands))
    y = np.arange(n_samples, dtype=np.int64) % n_classes
    gen.shuffle(y)
    n_peaks = n_class_peaks * n_classes
    peaks = bumps(gen.uniform(0.1, 0.9, n_peaks), gen.uniform(0.005, 0.02, n_peaks))
    pattern = gen.uniform(0.0, peak, (n_classes, n_peaks))
    X = amplitudes @ bands + pattern[y] @ peaks
    X *= gen.uniform(0.8, 1.25, (n_samples, 1))
    X += gen.normal(0.0, 0.5, (n_samples, 1)) + gen.normal(0.0, 0.3, (n_samples, 1)) * t \
        + gen.normal(0.0, 0.2, (n_samples, 1)) * t ** 2
    X += gen.normal(0.0, noise * peak, (n_samples, n_features))
    return X, y


def expression(n_samples=200, n_features=5000, n_classes=3, n_informative=20, shift=1.0, n_modules=15, batch=0.5,
               counts=False, rng=0):
    """Gene-expression-like profiles: few samples, thousands of correlated genes, a few informative ones.

    Each gene belongs to one of ``n_modules`` co-expressed modules (loading U(0.3, 1) on the module's
    standard normal factor, the rest independent noise: unit variance per gene). ``n_informative`` genes,
    chosen at random (axis-aligned, not rotated), add a class offset N(0, ``shift``^2) per class and gene;
    the samples fall into two batches, one with a per-gene offset N(0, ``batch``^2). The log2 expression is
    then ``mu + sd * value``, per-gene ``mu ~ N(6, 2^2)`` and ``sd`` log-normal around 0.6 (genes of very
    different spread). With ``counts=True`` the values are ``floor(2^expression * s)`` with a per-sample
    library size ``s ~ U(0.5, 2)``: right-skewed counts spanning decades, where the highly expressed genes
    dominate Euclidean distances (``numpy.log1p`` of them is the usual remedy). Labels cycle through the
    classes and are shuffled. A :class:`numpy.random.Generator` passed as ``rng`` is advanced (draws: the
    modules, loadings, spreads and means, the labels, the factors and noise, the informative genes and their
    offsets, the batches, the library sizes), so one generator can draw training and test rows of one
    distribution.

    Returns
    -------
    X : (n_samples, n_features) float64
        log2 expression (``counts=False``) or counts.
    y : (n_samples,) int64
    """
    if n_classes < 2 or not 1 <= n_informative <= n_features or n_modules < 1 or shift < 0 or batch < 0:
        raise ValueError("expression needs n_classes >= 2, 1 <= n_informative <= n_features, n_modules >= 1, "
                         f"shift >= 0, batch >= 0; got {n_classes}, {n_informative}, {n_modules}, {shift}, {batch}")
    gen = check_rng(rng)
    module = gen.integers(n_modules, size=n_features)
    loading = gen.uniform(0.3, 1.0, n_features)
    sd = gen.lognormal(-0.5, 0.5, n_features)
    mu = gen.normal(6.0, 2.0, n_features)
    y = np.arange(n_samples, dtype=np.int64) % n_classes
    gen.shuffle(y)
    X = gen.standard_normal((n_samples, n_modules))[:, module] * loading
    X += gen.standard_normal((n_samples, n_features)) * np.sqrt(1.0 - loading ** 2)
    informative = gen.choice(n_features, n_informative, replace=False)
    X[:, informative] += gen.normal(0.0, shift, (n_classes, n_informative))[y]
    X += np.outer(gen.integers(2, size=n_samples), gen.normal(0.0, batch, n_features))
    X *= sd
    X += mu
    if counts:
        X = np.floor(np.exp2(X) * gen.uniform(0.5, 2.0, (n_samples, 1)))
    return X, y


def multimodal(n_samples=1000, n_features=1500, n_classes=3, n_clusters=3, n_informative=4, sep=3.0, noise=1.0,
               rng=0):
    """Classes made of several clusters whose means coincide (XOR-like), in a few coordinates among many noisy ones.

    Each class has ``n_clusters`` cluster centres in ``n_informative`` coordinates (N(0, ``sep``^2) each, then
    centred per class, so every class's mean is 0); a row is its class's centre of a cluster drawn at random plus
    N(0, 1) there, and N(0, ``noise``^2) in the other ``n_features - n_informative`` coordinates; the columns are
    shuffled once. A metric can separate the classes only through the clusters, never through the class means.
    Labels cycle through the classes and are shuffled. A :class:`numpy.random.Generator` passed as ``rng`` is
    advanced (draws: the centres, the column order, the labels, the clusters, the values), so one generator can
    draw training and test rows of one distribution.

    Returns
    -------
    X : (n_samples, n_features) float64
    y : (n_samples,) int64
    """
    if n_classes < 2 or n_clusters < 2 or not 1 <= n_informative < n_features or sep < 0 or noise < 0:
        raise ValueError("multimodal needs n_classes >= 2, n_clusters >= 2, 1 <= n_informative < n_features, "
                         f"sep >= 0, noise >= 0; got {n_classes}, {n_clusters}, {n_informative}, {sep}, {noise}")
    gen = check_rng(rng)
    centres = gen.standard_normal((n_classes, n_clusters, n_informative)) * sep
    centres -= centres.mean(axis=1, keepdims=True)
    order = gen.permutation(n_features)
    y = np.arange(n_samples, dtype=np.int64) % n_classes
    gen.shuffle(y)
    cluster = gen.integers(n_clusters, size=n_samples)
    X = np.empty((n_samples, n_features))
    X[:, :n_informative] = centres[y, cluster] + gen.standard_normal((n_samples, n_informative))
    X[:, n_informative:] = gen.standard_normal((n_samples, n_features - n_informative)) * noise
    return np.ascontiguousarray(X[:, order]), y


def sequences(n_samples=2000, length=60, n_classes=3, motif_length=8, mutate=0.3, n_biased=6, bias=0.3, rng=0):
    """One-hot sequences of 4 letters (DNA-like), ``4 * length`` binary features, classes marked by a mutated motif.

    Every position has its own background distribution over the 4 letters (Dirichlet(5, 5, 5, 5)), and class 0
    is background only. Each other class ``c`` has a motif of ``motif_length`` letters, written into each of its
    rows at the centre (start ``length // 2 - motif_length // 2``, jittered by -1, 0 or +1), every letter
    replaced by a uniformly drawn one with probability ``mutate``; and ``n_biased`` positions (anywhere, drawn per
    class) with a preferred letter that a row takes with probability ``bias`` (over the motif where they
    overlap). Row ``i``'s letter at position ``p`` is feature ``4 p + letter`` (one 1 per position; splice-junction
    data codes its 4 nucleotides with 3 indicators). Labels cycle through the classes and are shuffled. A
    :class:`numpy.random.Generator` passed as ``rng`` is advanced (draws: the backgrounds, the labels, the
    background letters, then per class its motif, biased positions and letters, jitters, mutations, biased
    letters), so one generator can draw training and test rows of one distribution only by drawing them together.

    Returns
    -------
    X : (n_samples, 4 * length) float64
        0/1 indicators, one per position and letter.
    y : (n_samples,) int64
    """
    if (n_classes < 2 or not 1 <= motif_length <= length - 2 or not 0 <= n_biased <= length
            or not 0.0 <= mutate <= 1.0 or not 0.0 <= bias <= 1.0):
        raise ValueError("sequences needs n_classes >= 2, 1 <= motif_length <= length - 2, 0 <= n_biased <= length, "
                         f"mutate and bias in [0, 1]; got {n_classes}, {motif_length} (length {length}), {n_biased}, "
                         f"{mutate}, {bias}")
    gen = check_rng(rng)
    back = np.cumsum(gen.dirichlet(np.full(4, 5.0), size=length), axis=1)
    y = np.arange(n_samples, dtype=np.int64) % n_classes
    gen.shuffle(y)
    # inverse CDF per position; a draw at the top of the last bin (rounding) is letter 3
    letters = np.minimum((gen.random((n_samples, length))[:, :, None] > back[None, :, :]).sum(axis=2), 3)
    first = length // 2 - motif_length // 2
    for c in range(1, n_classes):
        rows = np.flatnonzero(y == c)
        motif = gen.integers(4, size=motif_length)
        biased, preferred = gen.choice(length, size=n_biased, replace=False), gen.integers(4, size=n_biased)
        start = first + gen.integers(-1, 2, size=rows.size)
        written = np.where(gen.random((rows.size, motif_length)) < mutate,
                           gen.integers(4, size=(rows.size, motif_length)), motif[None, :])
        letters[rows[:, None], start[:, None] + np.arange(motif_length)[None, :]] = written
        take = gen.random((rows.size, n_biased)) < bias
        r, j = np.nonzero(take)
        letters[rows[r], biased[j]] = preferred[j]
    X = np.zeros((n_samples, 4 * length))
    X[np.arange(n_samples)[:, None], 4 * np.arange(length)[None, :] + letters] = 1.0
    return X, y


def with_outlier_rows(X, frac=0.02, scale=1e4, entries=0.1, rng=0):
    """A copy of ``X`` (n, d; dense, or sparse: a CSR copy) with ``max(1, floor(frac n))`` rows, drawn at random,
    whose entries at a random ``entries`` share of the columns (at least one; sparse ``X``: of the row's stored
    entries, at least one where it has any) are multiplied by ``scale``: glitches of a sensor or a unit. More than
    1% of such rows defeat a rule built on the 99th percentile of the row norms. Returns ``(X_out, rows)``, ``rows``
    the outlier rows' indices (sorted). Draws from ``rng`` (advanced when a :class:`numpy.random.Generator`)."""
    if not 0.0 < frac < 1.0 or not 0.0 < entries <= 1.0:
        raise ValueError(f"with_outlier_rows needs 0 < frac < 1 and 0 < entries <= 1, got {frac}, {entries}")
    gen = check_rng(rng)
    sparse = sp.issparse(X)
    X = sp.csr_matrix(X, dtype=np.float64, copy=True) if sparse else np.array(X, dtype=np.float64, copy=True)
    if sparse:
        X.sum_duplicates()
    n, d = X.shape
    rows = np.sort(gen.choice(n, max(1, int(frac * n)), replace=False))
    for r in rows:
        if sparse:
            a, b = X.indptr[r], X.indptr[r + 1]
            if b > a:
                X.data[a + gen.choice(b - a, max(1, int(entries * (b - a))), replace=False)] *= scale
        else:
            X[r, gen.choice(d, max(1, int(entries * d)), replace=False)] *= scale
    return X, rows


def development_sets(rng=0):
    """The sets the high-dimensional defaults were chosen on: ``{name: (X, y)}``."""
    seeds = np.random.SeedSequence(check_rng(rng).integers(2**63)).generate_state(5)
    return {
        "digits28": shifted_digits(3500, canvas=28, size=18, max_shift=4, rng=int(seeds[0])),
        "digits28_noisy": shifted_digits(2500, canvas=28, size=16, max_shift=5, noise=0.15, blur=0.7,
                                         rng=int(seeds[1])),
        "dense2000": dense_classification(2000, 2000, n_informative=8, n_classes=5, rng=int(seeds[2])),
        "dense800_heavy": dense_classification(1500, 800, n_informative=12, n_classes=4, heavy_tailed=True,
                                               rng=int(seeds[3])),
        "bow5000": sparse_classification(2000, 5000, n_classes=4, rng=int(seeds[4])),
    }


def heldout_sets(rng=12345):
    """Held-out sets (other canvases, shifts, noise, dimensions, seeds): the final check only."""
    seeds = np.random.SeedSequence(check_rng(rng).integers(2**63)).generate_state(5)
    return {
        "digits32": shifted_digits(3500, canvas=32, size=20, max_shift=5, noise=0.05, rng=int(seeds[0])),
        "digits24_blur": shifted_digits(3000, canvas=24, size=14, max_shift=3, blur=1.0, rng=int(seeds[1])),
        "dense5000": dense_classification(1500, 5000, n_informative=6, n_classes=3, class_sep=1.5,
                                          rng=int(seeds[2])),
        "dense1000": dense_classification(3000, 1000, n_informative=15, n_classes=6, rng=int(seeds[3])),
        "bow12000": sparse_classification(2500, 12000, n_classes=6, topic_share=0.2, rng=int(seeds[4])),
    }


def heldout2_sets(rng=20261125):
    """A second held-out batch, defined after the first one had informed a change of the default
    (the class-mean directions and the held-out check): run once, for the final check only."""
    seeds = np.random.SeedSequence(check_rng(rng).integers(2**63)).generate_state(5)
    return {
        "digits30_noisy": shifted_digits(3000, canvas=30, size=18, max_shift=5, noise=0.1, blur=0.5,
                                         rng=int(seeds[0])),
        "digits26": shifted_digits(3500, canvas=26, size=16, max_shift=2, rng=int(seeds[1])),
        "dense3000": dense_classification(2500, 3000, n_informative=10, n_classes=4, rng=int(seeds[2])),
        "dense1500_heavy": dense_classification(2000, 1500, n_informative=9, n_classes=5, heavy_tailed=True,
                                                rng=int(seeds[3])),
        "bow8000": sparse_classification(3000, 8000, n_classes=5, topic_share=0.15, rng=int(seeds[4])),
    }


def images_sets(rng=20261127):
    """Two raw-pixel families not derived from the digits (:func:`shapes`, :func:`photo_patches`), two sets
    each, ``{name: (X, y)}``; needs Pillow. Defined after the default was settled and run once for it (they did
    not change it); its random instances informed the scaling of an int ``n_components`` on wide input
    (docs/guide/high-dimensional.md, "Data units for n_components")."""
    seeds = np.random.SeedSequence(check_rng(rng).integers(2**63)).generate_state(4)
    return {
        "shapes28": shapes(2500, canvas=28, n_classes=8, rotation=0.3, noise=0.1, blur=0.7, gradient=0.5,
                           rng=int(seeds[0])),
        "shapes32_ramp": shapes(2000, canvas=32, n_classes=6, rotation=0.8, noise=0.05, blur=0.0, gradient=1.0,
                                rng=int(seeds[1])),
        "patches20": photo_patches(2500, size=20, grid=2, gain=0.2, rng=int(seeds[2])),
        "patches24": photo_patches(3000, size=24, grid=3, gain=0.0, rng=int(seeds[3])),
    }
