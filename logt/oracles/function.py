"""Adapting a user's Python stochastic-gradient function to the oracle protocol."""
import math
import numbers

import numpy as np

from logt._kernels._base import _check_out

__all__ = ["FunctionOracle"]


def _check_constant(x, name, *, positive):
    if x is None:
        return None
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a real number or None, got {type(x).__name__}")
    x = float(x)
    if not math.isfinite(x) or (x <= 0 if positive else x < 0):
        bound = "> 0" if positive else ">= 0"
        raise ValueError(f"{name} must be finite and {bound}, got {x!r}")
    return x


def _check_shape(shape):
    if isinstance(shape, numbers.Integral) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        shape = tuple(shape)
    except TypeError:
        raise TypeError(f"shape must be a tuple of ints, got {type(shape).__name__}") from None
    for n in shape:
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
            raise ValueError(f"shape must be a tuple of positive ints, got {shape!r}")
    return tuple(int(n) for n in shape)


class FunctionOracle:
    """Oracle from a Python function ``fn(w, rng) -> g_hat(w)``.

    Parameters
    ----------
    fn : callable
        ``fn(w, rng)`` returns ONE stochastic gradient ``g_hat(w)`` (array_like
        of shape ``shape``, ``E[g_hat(w)] = grad F(w)``), drawing its randomness
        only from ``rng`` (a ``numpy.random.Generator``) so that runs are
        reproducible. ``w`` is passed read-only.
    shape : tuple of ints
        Shape of a point ``w`` (an int ``n`` means ``(n,)``).
    value : callable, optional
        ``value(w) -> float``, ``F(w)``. When given it is exposed as the
        method ``value``; when omitted the oracle has no ``value`` attribute.
    L, lam, G : float, optional
        Smoothness, strong convexity (both > 0) and gradient-norm bound (>= 0)
        of the paper's Theorem 1 / 2; ``None`` (the default) when unknown.

    Notes
    -----
    This is the slow path: :meth:`mean_grad` makes one Python call per sample,
    so ``B`` samples cost ``B`` calls of ``fn`` (microseconds each), and
    ``logt.minimize`` runs its step loop in Python for such oracles. For speed,
    write a compiled oracle (a ``cdef class`` deriving from
    ``logt._kernels._base.CompiledOracle``; see ``logt._kernels._toy``).

    Returned gradients are checked for shape (``ValueError``) but not for
    finiteness: NaN / Inf are passed through for the driver to detect.
    """

    def __init__(self, fn, shape, *, value=None, L=None, lam=None, G=None):
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {type(fn).__name__}")
        if value is not None and not callable(value):
            raise TypeError(f"value must be callable or None, got {type(value).__name__}")
        self.fn = fn
        self.shape = _check_shape(shape)
        self.L = _check_constant(L, "L", positive=True)
        self.lam = _check_constant(lam, "lam", positive=True)
        self.G = _check_constant(G, "G", positive=False)
        if value is not None:
            self._value_fn = value
            self.value = self._value

    def __repr__(self):
        name = getattr(self.fn, "__qualname__", type(self.fn).__name__)
        return f"FunctionOracle({name}, shape={self.shape})"

    def _as_point(self, w, name="w"):
        if np.iscomplexobj(w):
            raise TypeError(f"{name} must be real, got a complex array")
        a = np.asarray(w, dtype=np.float64)
        if a.shape != self.shape:
            raise ValueError(f"{name} must have shape {self.shape}, got {a.shape}")
        if not np.isfinite(a).all():
            raise ValueError(f"{name} contains NaN or Inf")
        return a

    def _value(self, w):
        """``F(w)`` from the user's ``value`` callable, as a float."""
        a = np.array(self._as_point(w), copy=True)
        a.flags.writeable = False
        v = self._value_fn(a.view())
        if np.iscomplexobj(v):
            raise TypeError("value returned a complex number; expected a real F(w)")
        return float(v)

    def mean_grad(self, w, B, rng, out=None):
        """Mean of ``B`` independent stochastic gradients at ``w``.

        w : array of shape ``shape`` (finite); B : int >= 1;
        rng : ``numpy.random.Generator`` passed to every ``fn`` call;
        out : optional float64 C-contiguous writeable array of shape ``shape``.

        Calls ``fn(w, rng)`` ``B`` times (in order), sums in float64 and
        divides by ``B``. Returns ``out`` (a new array when ``out`` is None).
        """
        if isinstance(B, bool) or not isinstance(B, (int, np.integer)):
            raise TypeError(f"B must be an int, got {type(B).__name__}")
        if B < 1:
            raise ValueError(f"B must be >= 1, got {B}")
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        a = self._as_point(w)
        out = _check_out(out, self.shape)
        # fn sees a view of a private read-only copy: numpy refuses to make a view writeable
        # again when its base is read-only, so fn cannot modify the caller's iterate
        base = np.array(a, dtype=np.float64, copy=True)
        base.flags.writeable = False
        wv = base.view()
        acc = np.zeros(self.shape, dtype=np.float64)
        for b in range(int(B)):
            g = self.fn(wv, rng)
            if np.iscomplexobj(g):
                raise TypeError(f"fn returned a complex gradient (sample {b}); expected real")
            try:
                g = np.asarray(g, dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise TypeError(
                    f"fn returned a value that is not a real array (sample {b}): {exc}") from None
            if g.shape != self.shape:
                raise ValueError(
                    f"fn returned a gradient of shape {g.shape} (sample {b}), "
                    f"expected shape {self.shape}")
            acc += g
        np.divide(acc, B, out=out)
        return out
