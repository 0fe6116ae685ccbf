"""The method API: method objects, options dicts, deprecated keywords, clear errors."""
import warnings

import numpy as np
import pytest

import logt
from logt.domains import PSDCone
from logt.methods import REGISTRY, EpochGD, LogT, Method, SGD, get_method
from logt.oracles import PSDQuadratic


def toy(d=4):
    return PSDQuadratic(np.zeros((d, d))), PSDCone(d)


def same(a, b):
    assert np.array_equal(a.x, b.x)
    assert a.n_calls == b.n_calls and a.n_projections == b.n_projections
    assert np.array_equal(a.trace["fun"], b.trace["fun"])


@pytest.mark.parametrize("name,cls,opts", [
    ("logt", LogT, {"eta": 0.3, "M": 3, "B1": 2}),
    ("logt", LogT, {"params": "theorem2", "delta": 0.5}),
    ("sgd", SGD, {"average": "uniform"}),
    ("epoch_gd", EpochGD, {"T1": 8, "eta1": 0.5}),
])
def test_object_options_and_deprecated_keywords_agree(name, cls, opts):
    oracle, domain = toy()
    T = 10**6 if opts.get("params") == "theorem2" else 20000
    a = logt.minimize(oracle, domain, T, method=name, options=opts, rng=5)
    b = logt.minimize(oracle, domain, T, method=cls(**opts), rng=5)
    with pytest.warns(DeprecationWarning, match="options="):
        c = logt.minimize(oracle, domain, T, method=name, rng=5, **opts)
    same(a, b)
    same(a, c)
    assert a.method == name


def test_no_warning_without_legacy_keywords():
    oracle, domain = toy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        logt.minimize(oracle, domain, 2000, method="epoch_gd", options={"T1": 4}, rng=0)


def test_unknown_option_names_the_method_and_lists_options():
    with pytest.raises(TypeError, match=r"method 'sgd' has no option\(s\) 'eta'.*average"):
        get_method("sgd", {"eta": 0.1})
    oracle, domain = toy()
    with pytest.raises(TypeError, match="method 'epoch_gd' has no option"):
        logt.minimize(oracle, domain, 1000, method="epoch_gd", options={"M": 3})


def test_legacy_keyword_of_another_method_is_a_clear_error():
    oracle, domain = toy()
    with pytest.raises(ValueError, match=r"T1 is not an option of method 'logt' \(T1 belongs to 'epoch_gd'\)"):
        logt.minimize(oracle, domain, 1000, method="logt", T1=4)
    with pytest.raises(TypeError, match="unexpected keyword"):
        logt.minimize(oracle, domain, 1000, method="logt", stepsize=4)


def test_options_and_method_object_together_is_an_error():
    oracle, domain = toy()
    with pytest.raises(TypeError, match="either in the method object"):
        logt.minimize(oracle, domain, 1000, method=SGD(), options={"average": "last"})
    with pytest.raises(TypeError, match="options must be a dict"):
        logt.minimize(oracle, domain, 1000, method="sgd", options=[("average", "last")])


@pytest.mark.parametrize("opts,exc,word", [
    ({"T1": 0}, ValueError, "T1 must be >= 1"),
    ({"T1": -1}, ValueError, "T1 must be >= 1"),
    ({"T1": 1.5}, ValueError, "T1 must be a whole number"),
    ({"T1": "4"}, TypeError, "T1 must be a whole number"),
    ({"eta1": float("nan")}, ValueError, "eta1 must be finite and > 0"),
    ({"eta1": -1.0}, ValueError, "eta1 must be finite and > 0"),
    ({"eta1": 0.0}, ValueError, "eta1"),
])
def test_epoch_gd_options_validated(opts, exc, word):
    with pytest.raises(exc, match=word):
        EpochGD(**opts)


@pytest.mark.parametrize("opts,word", [
    ({"eta": 0.1}, "needs all of eta, M and B1"),
    ({"eta": 0.1, "M": 2, "B1": 1, "params": "theorem1"}, "not both"),
    ({"params": "theorem2"}, "needs delta"),
    ({"params": "bogus"}, "params must be one of"),
    ({"eta": float("inf"), "M": 2, "B1": 1}, "eta must be finite"),
    ({"eta": 0.1, "M": 2.5, "B1": 1}, "M must be a whole number"),
    ({"params": "theorem2", "delta": 1.5}, "delta must be in"),
])
def test_logt_options_validated(opts, word):
    with pytest.raises(ValueError, match=word):
        LogT(**opts)


def test_integral_float_options_and_T_are_accepted():
    oracle, domain = toy()
    a = logt.minimize(oracle, domain, 1e4, method=LogT(eta=0.3, M=4.0, B1=2.0), rng=1)
    b = logt.minimize(oracle, domain, 10**4, method=LogT(eta=0.3, M=4, B1=2), rng=1)
    same(a, b)


def test_registry_and_repr():
    assert {"logt", "sgd", "epoch_gd"} <= set(REGISTRY)
    for name, cls in REGISTRY.items():
        assert issubclass(cls, Method) and cls.name == name and cls.rate and cls.projections
    assert repr(EpochGD(T1=8)) == "EpochGD(T1=8)"
    assert LogT(eta=1.0, M=2, B1=1) == LogT(eta=1.0, M=2, B1=1) != LogT(eta=2.0, M=2, B1=1)
    assert LogT(eta=1.0, M=2, B1=1).M == 2


def test_message_says_how_much_of_T_was_used():
    oracle, domain = toy()
    r = logt.minimize(oracle, domain, 100_000, rng=0)
    assert r.success
    assert f"used {r.n_calls:,} of T = 100,000 oracle calls" in r.message
    r = logt.minimize(oracle, domain, 100_000, rng=0, callback=lambda s: s.epoch == 2)
    assert not r.success and r.message.startswith("stopped by callback")
    assert r.n_epochs == 2


def test_L_is_optional_for_methods_that_do_not_use_it():
    from logt.oracles import FunctionOracle

    f = FunctionOracle(lambda w, rng: w - 1 + 0.1 * rng.standard_normal(w.shape), (3,), lam=1.0)
    from logt.domains import Box
    r = logt.minimize(f, Box(-2, 2, shape=(3,)), 2000, method="sgd", rng=0)
    np.testing.assert_allclose(r.x, 1.0, atol=0.1)
    with pytest.raises(ValueError, match="needs L"):
        logt.minimize(f, Box(-2, 2, shape=(3,)), 2000, method="logt", options={"params": "theorem1"}, rng=0)
