"""Table-driven bad and extreme inputs over the public entry points.

Each case is either ``("raises", ExceptionType, regex)``: the exception type and a
message naming the argument; or ``("ok", check)``: an extreme-but-valid input whose
result ``check`` compares with an independent NumPy reference.
"""
import gzip
import os
import re

import numpy as np
import pytest
import scipy.sparse as sp

import logt
from logt import Box, CallableDomain, EuclideanBall, MetricLearner, PairsMetricLearner, PSDCone, minimize
from logt import project_psd
from logt.datasets import load_libsvm
from logt.methods import REGISTRY
from logt.oracles import FunctionOracle, MetricLearning, PSDQuadratic
from _child import child_env, run_python

CASES = []


def case(name, fn, *expect):
    CASES.append(pytest.param(fn, expect, id=name))


def psd_ref(A):
    A = np.asarray(A, dtype=np.float64)
    S = (A + A.T) / 2
    w, V = np.linalg.eigh(S)
    return (V * np.maximum(w, 0)) @ V.T


def _toy():
    return PSDQuadratic(np.eye(3)) if _psdq_takes_matrix() else PSDQuadratic(3)


def _psdq_takes_matrix():
    try:
        PSDQuadratic(np.eye(3))
        return True
    except Exception:
        return False


def _quad():
    """F(x) = 0.5 ||x - c||^2 on R^3 with exact gradients (L = lam = 1)."""
    c = np.array([0.3, -0.2, 0.1])
    return FunctionOracle(lambda w, rng: w - c, (3,), L=1.0, lam=1.0)


def _run(method, T=400, **kw):
    return lambda: minimize(_quad(), EuclideanBall(3), T, method, **kw)


# ---------------------------------------------------------------- minimize: every method
for m in REGISTRY:
    case(f"{m}-T0", _run(m, T=0), "raises", ValueError, r"\bT\b")
    case(f"{m}-Tneg", _run(m, T=-5), "raises", ValueError, r"\bT\b")
    case(f"{m}-Tfrac", _run(m, T=1.5), "raises", (TypeError, ValueError), r"\bT\b")
    case(f"{m}-Tnan", _run(m, T=float("nan")), "raises", (TypeError, ValueError), r"\bT\b")
    case(f"{m}-Tstr", _run(m, T="100"), "raises", TypeError, r"\bT\b")
    case(f"{m}-Thuge", _run(m, T=2 ** 70), "raises", (ValueError, OverflowError), r"\bT\b")
    case(f"{m}-x0shape", _run(m, x0=np.zeros(4)), "raises", ValueError, r"x0")
    case(f"{m}-x0nan", _run(m, x0=np.array([np.nan, 0, 0])), "raises", ValueError, r"x0")
    case(f"{m}-x0complex", _run(m, x0=np.zeros(3, complex)), "raises", TypeError, r"x0")
    case(f"{m}-x0str", _run(m, x0="abc"), "raises", (TypeError, ValueError), r"x0")
    case(f"{m}-badoption", _run(m, options={"nonsense": 1}), "raises", (TypeError, ValueError), r"nonsense")
    case(f"{m}-lam0", _run(m, lam=0.0), "raises", ValueError, r"lam")
    case(f"{m}-lamnan", _run(m, lam=float("nan")), "raises", ValueError, r"lam")
    case(f"{m}-rngbad", _run(m, rng="seed"), "raises", (TypeError, ValueError), r"rng")
    case(f"{m}-resume-missing", _run(m, resume="/nonexistent/ck.npz"),
         "raises", (logt.CheckpointError, OSError, FileNotFoundError), r"ck\.npz|resume|checkpoint")

case("minimize-unknown-method", _run("newton"), "raises", ValueError, r"newton")
case("minimize-unknown-kw", lambda: minimize(_quad(), EuclideanBall(3), 100, bogus=1),
     "raises", TypeError, r"bogus")
case("minimize-legacy-wrong-method", lambda: minimize(_quad(), EuclideanBall(3), 100, "sgd", T1=4),
     "raises", (ValueError, TypeError), r"T1")
case("minimize-shape-mismatch", lambda: minimize(_quad(), EuclideanBall(4), 100),
     "raises", ValueError, r"shape")
case("minimize-epoch_gd-T1-0", _run("epoch_gd", options={"T1": 0}), "raises", ValueError, r"T1")
case("minimize-epoch_gd-T1-frac", _run("epoch_gd", options={"T1": 1.5}), "raises", (TypeError, ValueError), r"T1")
case("minimize-epoch_gd-eta1-nan", _run("epoch_gd", options={"eta1": float("nan")}), "raises", ValueError, r"eta1")
case("minimize-epoch_gd-eta1-neg", _run("epoch_gd", options={"eta1": -1.0}), "raises", ValueError, r"eta1")
case("minimize-logt-eta-neg", _run("logt", options={"eta": -1.0, "M": 2, "B1": 2}), "raises", ValueError, r"eta")
case("minimize-logt-M0", _run("logt", options={"eta": 0.1, "M": 0, "B1": 2}), "raises", ValueError, r"\bM\b")
case("minimize-logt-B1-0", _run("logt", options={"eta": 0.1, "M": 2, "B1": 0}), "raises", ValueError, r"B1")
case("minimize-logt-params-bad", _run("logt", options={"params": "magic"}), "raises", ValueError, r"params")
case("minimize-sgd-average-bad", _run("sgd", options={"average": "median"}), "raises", ValueError, r"average")
case("minimize-callback-not-callable", _run("sgd", callback=3), "raises", TypeError, r"callback")
case("minimize-checkpoint-every-neg", _run("sgd", checkpoint="/tmp/x.ck", checkpoint_every=-1),
     "raises", ValueError, r"checkpoint_every")


def _corrupt_resume():
    import tempfile
    fd, p = tempfile.mkstemp(suffix=".ck")
    os.write(fd, b"not a checkpoint")
    os.close(fd)
    try:
        minimize(_quad(), EuclideanBall(3), 200, "sgd", resume=p)
    finally:
        os.unlink(p)


case("minimize-resume-corrupt", _corrupt_resume, "raises", logt.CheckpointError, r"checkpoint|corrupt|resume")


def _x0_variants_ok(make):
    def fn():
        x0 = make()
        a = minimize(_quad(), EuclideanBall(3), 400, "sgd", x0=x0, rng=1)
        b = minimize(_quad(), EuclideanBall(3), 400, "sgd", x0=np.array(x0, dtype=np.float64), rng=1)
        np.testing.assert_array_equal(a.x, b.x)
        assert np.all(np.isfinite(a.x)) and a.success
    return fn


case("x0-float32", _x0_variants_ok(lambda: np.array([0.1, 0.2, 0.3], np.float32)), "ok")
case("x0-int", _x0_variants_ok(lambda: np.array([0, 1, 0])), "ok")
case("x0-bigendian", _x0_variants_ok(lambda: np.array([0.1, 0.2, 0.3], ">f8")), "ok")
case("x0-negstride", _x0_variants_ok(lambda: np.array([0.3, 0.2, 0.1])[::-1]), "ok")
case("x0-list", _x0_variants_ok(lambda: [0.1, 0.2, 0.3]), "ok")
case("T-integral-float", lambda: minimize(_quad(), EuclideanBall(3), 1e3, "sgd", rng=0), "ok")

# ---------------------------------------------------------------- project_psd / PSDCone
RNG = np.random.default_rng(0)
_A = RNG.standard_normal((6, 6))
_A = _A + _A.T


def _proj_ok(A_fn, scale=None):
    def fn():
        A = A_fn()
        P = project_psd(A)
        A64 = np.array(A, dtype=np.float64)
        s = max(np.abs(A64).max(), 1e-300)
        R = psd_ref(A64 / s) * s            # scaled: no overflow in the reference
        tol = 1e-10 * max(np.abs(R).max(), np.finfo(float).tiny) + 1e-300
        assert np.all(np.isfinite(P)), P
        np.testing.assert_allclose(P, R, rtol=1e-9, atol=tol)
    return fn


case("psd-native", _proj_ok(lambda: _A.copy()), "ok")
case("psd-fortran", _proj_ok(lambda: np.asfortranarray(_A)), "ok")
case("psd-negstride", _proj_ok(lambda: _A[::-1, ::-1].copy()[::-1, ::-1]), "ok")
case("psd-negstride-view", _proj_ok(lambda: np.ascontiguousarray(_A[::-1])[::-1]), "ok")
case("psd-float32", _proj_ok(lambda: _A.astype(np.float32)), "ok")
case("psd-int", _proj_ok(lambda: np.array([[1, 2], [2, 1]])), "ok")
case("psd-bigendian", _proj_ok(lambda: np.array([[1., 2.], [2., 1.]], ">f8")), "ok")
case("psd-bigendian-6", _proj_ok(lambda: _A.astype(">f8")), "ok")
case("psd-1e308", _proj_ok(lambda: np.diag([1e308, -1e308])), "ok")
case("psd-1e300-dense", _proj_ok(lambda: _A * 1e300), "ok")
case("psd-subnormal", _proj_ok(lambda: np.diag([1e-310, -1e-310])), "ok")
case("psd-tiny-dense", _proj_ok(lambda: _A * 1e-300), "ok")
case("psd-1x1-neg", _proj_ok(lambda: np.array([[-3.0]])), "ok")
case("psd-zero", _proj_ok(lambda: np.zeros((4, 4))), "ok")
case("psd-nan", lambda: project_psd(np.array([[np.nan, 0], [0, 1.]])), "raises", ValueError, r"NaN|finite")
case("psd-inf", lambda: project_psd(np.array([[np.inf, 0], [0, 1.]])), "raises", ValueError, r"NaN|finite|Inf")
case("psd-nonsquare", lambda: project_psd(np.zeros((2, 3))), "raises", ValueError, r"square|shape")
case("psd-1d", lambda: project_psd(np.zeros(4)), "raises", ValueError, r"square|shape|2-D|2d")
case("psd-complex", lambda: project_psd(np.eye(2, dtype=complex)), "raises", TypeError, r"complex|real")
case("psd-str", lambda: project_psd("abc"), "raises", (TypeError, ValueError), r"A|array|float|real")
case("psd-out-shape", lambda: project_psd(np.eye(3), out=np.empty((2, 2))), "raises", ValueError, r"out")
case("psd-out-int", lambda: project_psd(np.eye(3), out=np.empty((3, 3), int)), "raises", (TypeError, ValueError), r"out")
case("psdcone-0", lambda: PSDCone(0), "raises", ValueError, r"d|dimension|size")
case("psdcone-neg", lambda: PSDCone(-2), "raises", ValueError, r"d|dimension|size")
case("psdcone-float", lambda: PSDCone(2.5), "raises", (TypeError, ValueError), r"d|dimension|int")
case("psdcone-project-shape", lambda: PSDCone(3).project(np.eye(2)), "raises", ValueError, r"shape")

# ---------------------------------------------------------------- EuclideanBall / Box / CallableDomain


def _ball_ok(v_fn, r=1.0, c=None):
    def fn():
        v = v_fn()
        b = EuclideanBall(np.shape(v), r, center=c)
        p = b.project(v)
        vv = np.array(v, dtype=np.float64)
        cc = np.zeros_like(vv) if c is None else np.asarray(c, float)
        s = max(np.abs(vv).max(), np.abs(cc).max(), 1e-300)
        dv = vv / s - cc / s                 # scaled difference: no overflow
        with np.errstate(over="ignore"):     # n = inf is the right answer for a huge v (then v is outside)
            n = np.linalg.norm(dv) * s
        ref = vv if n <= r else cc + (dv / np.linalg.norm(dv)) * r
        assert np.all(np.isfinite(p))
        np.testing.assert_allclose(p, ref, rtol=1e-12, atol=1e-300)
    return fn


case("ball-inside", _ball_ok(lambda: np.array([0.1, 0.2])), "ok")
case("ball-outside", _ball_ok(lambda: np.array([3.0, 4.0])), "ok")
case("ball-huge", _ball_ok(lambda: np.full(4, 1.5e308)), "ok")
case("ball-center-huge", _ball_ok(lambda: np.array([1e308, 0.0]), c=np.array([-1e308, 0.0])), "ok")
case("ball-float32", _ball_ok(lambda: np.array([3.0, 4.0], np.float32)), "ok")
case("ball-int", _ball_ok(lambda: np.array([3, 4])), "ok")
case("ball-bigendian", _ball_ok(lambda: np.array([3.0, 4.0], ">f8")), "ok")
case("ball-negstride", _ball_ok(lambda: np.array([4.0, 0.0, 3.0])[::-2]), "ok")
case("ball-subnormal", _ball_ok(lambda: np.array([1e-310, -1e-310])), "ok")
case("ball-radius-neg", lambda: EuclideanBall(3, -1.0), "raises", ValueError, r"radius")
case("ball-radius-nan", lambda: EuclideanBall(3, float("nan")), "raises", ValueError, r"radius")
case("ball-radius-inf", lambda: EuclideanBall(3, float("inf")), "raises", ValueError, r"radius")
case("ball-center-shape", lambda: EuclideanBall(3, 1.0, center=np.zeros(2)), "raises", ValueError, r"center")
case("ball-center-nan", lambda: EuclideanBall(2, 1.0, center=np.array([np.nan, 0])), "raises", ValueError, r"center")
case("ball-shape-0", lambda: EuclideanBall(0), "raises", ValueError, r"shape")
case("ball-project-nan", lambda: EuclideanBall(2).project(np.array([np.nan, 0.])), "raises", ValueError, r"NaN|finite")
case("ball-project-shape", lambda: EuclideanBall(2).project(np.zeros(3)), "raises", ValueError, r"shape")
case("ball-project-complex", lambda: EuclideanBall(2).project(np.zeros(2, complex)), "raises", TypeError, r"complex|real")


def _box_ok(v, lo, hi):
    def fn():
        p = Box(lo, hi, shape=np.shape(v)).project(v)
        np.testing.assert_array_equal(p, np.clip(np.array(v, float), lo, hi))
    return fn


case("box-clip", _box_ok(np.array([-3.0, 0.5, 3.0]), -1.0, 1.0), "ok")
case("box-huge", _box_ok(np.array([-1e308, 1e308]), -1.0, 1.0), "ok")
case("box-bigendian", _box_ok(np.array([-3.0, 0.5], ">f8"), -1.0, 1.0), "ok")
case("box-int", _box_ok(np.array([-3, 0, 3]), -1.0, 1.0), "ok")
case("box-negstride", _box_ok(np.array([-3.0, 0.5, 3.0])[::-1], -1.0, 1.0), "ok")
case("box-lo-gt-hi", lambda: Box(1.0, -1.0, shape=(3,)), "raises", ValueError, r"lower|upper")
case("box-lo-nan", lambda: Box(float("nan"), 1.0, shape=(3,)), "raises", ValueError, r"lower")
case("box-shape-mismatch", lambda: Box(np.zeros(2), np.ones(3)), "raises", ValueError, r"lower|upper|shape")
case("box-project-nan", lambda: Box(-1.0, 1.0, shape=(2,)).project(np.array([np.nan, 0.])), "raises", ValueError, r"NaN|finite")
case("callable-not-callable", lambda: CallableDomain(3, (2,)), "raises", TypeError, r"fn|callable")
case("callable-bad-shape", lambda: CallableDomain(lambda v: v, (0,)), "raises", ValueError, r"shape")
case("callable-returns-wrong-shape",
     lambda: CallableDomain(lambda v: np.zeros(5), (2,)).project(np.zeros(2)), "raises", ValueError, r"shape")
case("callable-returns-nan",
     lambda: CallableDomain(lambda v: v * np.nan, (2,)).project(np.ones(2)), "raises", (ValueError, FloatingPointError), r"NaN|finite")
case("callable-returns-complex",
     lambda: CallableDomain(lambda v: v.astype(complex), (2,)).project(np.ones(2)), "raises", TypeError, r"complex|real")

# ---------------------------------------------------------------- oracles
case("psdq-nan", lambda: PSDQuadratic(np.array([[np.nan, 0], [0, 1.]])), "raises", (ValueError, TypeError), r"NaN|finite|A|target|d")
case("fo-not-callable", lambda: FunctionOracle(5, (3,)), "raises", TypeError, r"fn|callable")
case("fo-shape-0", lambda: FunctionOracle(lambda w, r: w, (0,)), "raises", ValueError, r"shape")
case("fo-L-neg", lambda: FunctionOracle(lambda w, r: w, (3,), L=-1.0), "raises", ValueError, r"\bL\b")
case("fo-lam-nan", lambda: FunctionOracle(lambda w, r: w, (3,), lam=float("nan")), "raises", ValueError, r"lam")
case("fo-G-str", lambda: FunctionOracle(lambda w, r: w, (3,), G="x"), "raises", (TypeError, ValueError), r"\bG\b")
case("fo-grad-nan-run", lambda: minimize(FunctionOracle(lambda w, r: w * np.nan, (3,), L=1., lam=1.),
                                         EuclideanBall(3), 100, "sgd"),
     "raises", (FloatingPointError, ValueError), r"NaN|finite|gradient")
case("fo-grad-shape-run", lambda: minimize(FunctionOracle(lambda w, r: np.zeros(4), (3,), L=1., lam=1.),
                                           EuclideanBall(3), 100, "sgd"),
     "raises", ValueError, r"shape")

XS = np.random.default_rng(1).standard_normal((40, 4))
XS /= np.linalg.norm(XS, axis=1, keepdims=True)
YS = np.arange(40) % 2
case("ml-X-nan", lambda: MetricLearning(np.where(XS > 0.9, np.nan, XS), YS), "raises", ValueError, r"\bX\b")
case("ml-X-1d", lambda: MetricLearning(XS[:, 0], YS), "raises", ValueError, r"\bX\b")
case("ml-y-len", lambda: MetricLearning(XS, YS[:-1]), "raises", ValueError, r"\by\b")
case("ml-y-one-class", lambda: MetricLearning(XS, np.zeros(40)), "raises", ValueError, r"\by\b|class")
case("ml-lam-0", lambda: MetricLearning(XS, YS, lam=0.0), "raises", ValueError, r"lam")
case("ml-lam-nan", lambda: MetricLearning(XS, YS, lam=float("nan")), "raises", ValueError, r"lam")
case("ml-neval-huge", lambda: MetricLearning(XS, YS, n_eval_pairs=10 ** 12), "raises", ValueError, r"n_eval_pairs")
case("ml-neval-0", lambda: MetricLearning(XS, YS, n_eval_pairs=0), "raises", ValueError, r"n_eval_pairs")
case("ml-threads-0", lambda: MetricLearning(XS, YS, n_threads=0), "raises", ValueError, r"n_threads")
case("ml-X-norm", lambda: MetricLearning(XS * 3, YS), "raises", ValueError, r"norm|\bX\b")
case("ml-X-complex", lambda: MetricLearning(XS.astype(complex), YS), "raises", (TypeError, ValueError), r"complex.*\bX\b|\bX\b.*complex")


def _ml_f32_ok():
    o32 = MetricLearning(XS.astype(np.float32), YS, n_eval_pairs=200, eval_rng=0)
    X64 = XS.astype(np.float32).astype(np.float64)
    o64 = MetricLearning(X64 / np.linalg.norm(X64, axis=1).max(), YS, n_eval_pairs=200, eval_rng=0)
    W = np.eye(4) * 0.3
    np.testing.assert_allclose(o32.value(W), o64.value(W), rtol=1e-6)


case("ml-X-float32-unitnorm", _ml_f32_ok, "ok")


def _ml_be_ok():
    a = MetricLearning(XS.astype(">f8"), YS, n_eval_pairs=200, eval_rng=0)
    b = MetricLearning(XS, YS, n_eval_pairs=200, eval_rng=0)
    W = np.eye(4) * 0.3
    assert a.value(W) == b.value(W)


case("ml-X-bigendian", _ml_be_ok, "ok")
case("ml-X-fortran", lambda: np.testing.assert_equal(
    MetricLearning(np.asfortranarray(XS), YS, n_eval_pairs=100, eval_rng=0).value(np.eye(4)),
    MetricLearning(XS, YS, n_eval_pairs=100, eval_rng=0).value(np.eye(4))), "ok")
case("ml-value-shape", lambda: MetricLearning(XS, YS, n_eval_pairs=100).value(np.eye(3)), "raises", ValueError, r"shape|\bW\b")

# ---------------------------------------------------------------- MetricLearner / PairsMetricLearner


def _fit(**kw):
    return lambda: MetricLearner(T=2000, **kw).fit(XS, YS)


case("learner-lam-neg", _fit(lam=-1.0), "raises", ValueError, r"lam")
case("learner-T-neg", lambda: MetricLearner(T=-5).fit(XS, YS), "raises", ValueError, r"\bT\b")
case("learner-T-str", lambda: MetricLearner(T="many").fit(XS, YS), "raises", (TypeError, ValueError), r"\bT\b")
case("learner-method-bad", _fit(method="newton"), "raises", ValueError, r"newton|method")
case("learner-params-bad", _fit(params="magic"), "raises", ValueError, r"params")
case("learner-X-nan", lambda: MetricLearner(T=2000).fit(np.where(XS > 0.9, np.nan, XS), YS), "raises", ValueError, r"\bX\b|NaN")
case("learner-X-nan-remedy", lambda: MetricLearner(T=2000).fit(np.where(XS > 0.9, np.nan, XS), YS), "raises",
     ValueError, r"NaN.*missing values: impute them first \(e\.g\. sklearn\.impute\.SimpleImputer\)")
case("learner-X-inf-remedy", lambda: MetricLearner(T=2000).fit(np.where(XS > 0.9, np.inf, XS), YS), "raises",
     ValueError, r"infinity\. Replace the infinite values")
case("learner-X-sparse-nan", lambda: MetricLearner(T=2000).fit(sp.csr_matrix(np.where(XS > 0.9, np.nan, XS)), YS),
     "raises", ValueError, r"NaN.*impute")
case("learner-X-strings", lambda: MetricLearner(T=2000).fit(np.column_stack([XS[:, :2], np.where(YS > 0, "u", "v")])
                                                            .astype(object), YS),
     "raises", ValueError, r"row 0, column 2 holds the string '[uv]'.*get_dummies.*OneHotEncoder")
case("learner-X-none", lambda: MetricLearner(T=2000).fit(np.array([[1.0, "2"], [None, 3.0]] * 20, dtype=object),
                                                         YS[:40]),
     "raises", ValueError, r"NaN.*impute")
case("learner-y-nan", lambda: MetricLearner(T=2000).fit(XS, np.where(np.arange(len(YS)) == 3, np.nan, YS)),
     "raises", ValueError, r"NaN.*drop the unlabelled rows")
case("learner-y-len", lambda: MetricLearner(T=2000).fit(XS, YS[:-2]), "raises", ValueError, r"\by\b|samples|length")
case("learner-y-mixed", lambda: MetricLearner(T=2000).fit(XS, np.array(["a", 1] * 20, dtype=object)),
     "raises", (TypeError, ValueError), r"\by\b|label")
case("learner-transform-unfitted", lambda: MetricLearner().transform(XS), "raises", logt.NotFittedError, r"fit")
case("learner-transform-shape", lambda: MetricLearner(T=2000, rng=0).fit(XS, YS).transform(np.zeros((3, 5))),
     "raises", ValueError, r"feature|shape|\bX\b")
case("learner-rng-bad", _fit(rng="x"), "raises", (TypeError, ValueError), r"rng")
# magnitudes near float64's limits: a clear error, not an OverflowError (2^1023) or a NaN check (5e307)
for _f in (2.0 ** 1000 * 1.5, 5e307, 2.0 ** 1023, 1.7e308):
    case(f"learner-X-huge-{_f:.1e}", lambda f=_f: MetricLearner(T=2000).fit(f * XS / np.abs(XS).max(), YS),
         "raises", ValueError, r"X's largest magnitude.*float64's maximum.*power of two")
case("learner-X-huge-sparse", lambda: MetricLearner(T=2000).fit(sp.csr_matrix(1e305 * XS), YS),
     "raises", ValueError, r"X's largest magnitude")
for _f in (1e-320, 1e-310):         # subnormal data: the scale's inverse overflows (a NaN metric before)
    case(f"learner-X-subnormal-{_f:.0e}", lambda f=_f: MetricLearner(T=2000).fit(f * XS, YS),
         "raises", ValueError, r"too small to scale.*smallest normal.*power of two")
case("learner-X-subnormal-feature", lambda: MetricLearner(T=2000).fit(XS * np.array([1.0, 1.0, 1e-310, 1.0]), YS),
     "raises", ValueError, r"feature 2's values are too small")
for _f in (1e200, 1e-200):          # W ~ 1e-400 / 1e400: not float64 numbers (zeros / NaN before)
    case(f"learner-W-{_f:.0e}", lambda f=_f: MetricLearner(T=2000, rng=0, check=False).fit(
        f * XS, (XS[:, 0] > 0).astype(int)).get_mahalanobis_matrix(),
        "raises", ValueError, r"get_mahalanobis_matrix.*outside float64's range.*components_")

PAIRS = np.stack([XS[:20], XS[20:]], axis=1)
PY = np.where(np.arange(20) % 2 == 0, 1, -1)
case("pairs-shape", lambda: PairsMetricLearner(T=2000).fit(XS, PY), "raises", ValueError, r"pairs|shape")
case("pairs-y-len", lambda: PairsMetricLearner(T=2000).fit(PAIRS, PY[:-1]), "raises", ValueError, r"\by\b|pairs|length")
case("pairs-y-values", lambda: PairsMetricLearner(T=2000).fit(PAIRS, np.arange(20)), "raises", ValueError, r"\by\b|label|\+1|-1")
case("pairs-nan", lambda: PairsMetricLearner(T=2000).fit(np.where(PAIRS > 0.9, np.nan, PAIRS), PY),
     "raises", ValueError, r"NaN|pairs|finite")
case("pairs-huge", lambda: PairsMetricLearner(T=2000).fit(1e305 * PAIRS, PY), "raises", ValueError,
     r"pairs's largest magnitude.*float64's maximum")
case("pairs-predict-unfitted", lambda: PairsMetricLearner().predict(PAIRS), "raises", logt.NotFittedError, r"fit")
case("pairs-threshold-nan", lambda: PairsMetricLearner(T=2000, rng=0).fit(PAIRS, PY).set_threshold(float("nan")),
     "raises", ValueError, r"threshold")
case("pairs-calibrate-strategy", lambda: PairsMetricLearner(T=2000, rng=0).fit(PAIRS, PY).calibrate_threshold(
    PAIRS, PY, strategy="magic"), "raises", ValueError, r"strategy")
case("pairs-threshold-param", lambda: PairsMetricLearner(threshold="x", T=2000).fit(PAIRS, PY),
     "raises", ValueError, r"threshold")

# ---------------------------------------------------------------- load_libsvm


def _libsvm(content, **kw):
    def fn():
        import tempfile
        d = tempfile.mkdtemp()
        p = os.path.join(d, "f.svm")
        with open(p, "wb") as f:
            f.write(content)
        return load_libsvm(p, **kw)
    return fn


def _libsvm_ok(content, dense, y, **kw):
    def fn():
        X, yy = _libsvm(content, **kw)()
        X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
        np.testing.assert_array_equal(X, np.array(dense, float))
        np.testing.assert_array_equal(yy, y)
    return fn


case("libsvm-missing", lambda: load_libsvm("/nonexistent/file.svm"), "raises", (OSError, FileNotFoundError), r"file\.svm")
case("libsvm-bad-value", _libsvm(b"1 1:abc\n"), "raises", ValueError, r"line 1")
case("libsvm-bad-index", _libsvm(b"1 x:1\n"), "raises", ValueError, r"line 1")
case("libsvm-index-0", _libsvm(b"1 0:1\n"), "raises", ValueError, r"line 1|index")
case("libsvm-index-neg", _libsvm(b"1 -3:1\n"), "raises", ValueError, r"line 1|index")
case("libsvm-index-30digits", _libsvm(b"1 " + b"9" * 30 + b":1\n"), "raises", ValueError, r"line 1|index")
case("libsvm-index-2^32+5", _libsvm(b"1 4294967301:1\n"), "raises", ValueError, r"line 1|index|features")
case("libsvm-bad-label", _libsvm(b"abc 1:1\n"), "raises", ValueError, r"line 1|label")
case("libsvm-nan-value", _libsvm(b"1 1:nan\n"), "raises", ValueError, r"line 1|NaN|finite")
case("libsvm-nul", _libsvm(b"1 1:1\x002\n"), "raises", ValueError, r"line 1|NUL")
case("libsvm-n_features-small", _libsvm(b"1 5:1\n", n_features=3), "raises", ValueError, r"n_features")
case("libsvm-ok-basic", _libsvm_ok(b"1 1:0.5 3:2\n-1 2:1\n", [[0.5, 0, 2], [0, 1, 0]], [1, -1]), "ok")
case("libsvm-ok-comment", _libsvm_ok(b"# header\n1 1:0.5 # c\n", [[0.5]], [1]), "ok")
case("libsvm-ok-qid", _libsvm_ok(b"1 qid:3 2:1\n", [[0, 1]], [1]), "ok")
case("libsvm-unsorted", _libsvm(b"1 3:1 1:2\n"), "raises", ValueError, r"increasing on line 1")
case("libsvm-ok-tiny-value", _libsvm_ok(b"1 1:1e-310\n", [[1e-310]], [1]), "ok")


def _gz_ok():
    import tempfile
    p = os.path.join(tempfile.mkdtemp(), "f.gz")
    with gzip.open(p, "wb") as f:
        f.write(b"1 1:1 2:2\n-1 2:3\n")
    X, y = load_libsvm(p)
    np.testing.assert_array_equal(X.toarray() if hasattr(X, "toarray") else X, [[1, 2], [0, 3]])


case("libsvm-ok-gzip", _gz_ok, "ok")

# ---------------------------------------------------------------- rng


def _same_seed(rng_a, rng_b):
    def fn():
        a = minimize(_quad(), EuclideanBall(3), 300, "sgd", rng=rng_a)
        b = minimize(_quad(), EuclideanBall(3), 300, "sgd", rng=rng_b)
        np.testing.assert_array_equal(a.x, b.x)
    return fn


case("rng-int-vs-seedseq", _same_seed(5, np.random.SeedSequence(5)), "ok")
case("rng-gen", _same_seed(np.random.default_rng(7), np.random.default_rng(7)), "ok")
case("rng-neg", _run("sgd", rng=-1), "raises", ValueError, r"rng|negative")
case("rng-float", _run("sgd", rng=1.5), "raises", (TypeError, ValueError), r"rng")
case("rng-legacy-randomstate", _run("sgd", rng=np.random.RandomState(0)), "raises", TypeError, r"rng")

# ---------------------------------------------------------------- CLI (subprocess)


def _cli(*args, pattern):
    def fn():
        p = run_python(["-m", "logt", *args], env=child_env(drop=("LOGT_DATA_DIR",)))
        assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
        last = p.stderr.strip().splitlines()[-1]
        assert last.startswith("logt: error:") and re.search(pattern, last), last
    return fn


case("cli-toy-Tmin-gt-Tmax", _cli("toy", "--T-max", "10", "--T-min", "50", pattern="--T-min"), "ok")
case("cli-toy-Tmin-0", _cli("toy", "--T-min", "0", pattern="--T-min"), "ok")
case("cli-metric-T-small", _cli("metric", "--dataset", "synthetic", "--T", "10", pattern="--T"), "ok")
case("cli-metric-methods-bad", _cli("metric", "--dataset", "synthetic", "--T", "1e3", "--methods", "zzz",
                                    "--repeats", "1", "--jobs", "1", "--quiet", "--out", "/tmp/logt_bad_cli",
                                    pattern="--methods"), "ok")
case("cli-repeats-frac", _cli("toy", "--repeats", "1.5", pattern="--repeats"), "ok")
case("cli-lam-neg", _cli("metric", "--lam", "-1", pattern="--lam"), "ok")

CASES = [c for c in CASES if c is not None]


@pytest.mark.parametrize("fn, expect", CASES)
def test_bad_input(fn, expect):
    kind = expect[0]
    if kind == "ok":
        fn()
        return
    _, exc, pattern = expect
    with pytest.raises(exc) as ei:
        fn()
    assert re.search(pattern, str(ei.value)), f"{type(ei.value).__name__}: {ei.value}"


def test_table_size():
    assert len(CASES) >= 150
