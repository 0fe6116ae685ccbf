"""The method protocol: one class per method, its options validated in one place.

A method is a small object, e.g. ``logt.methods.LogT(eta=0.1, M=4, B1=2)``;
``minimize(..., method="logt", options={...})`` builds the same object from a
name and a dict (SciPy's style). Both spell the same thing; the object form
gives each method its own signature, docstring and defaults, the string form
keeps scripts short. Unknown options are an error that names the method.

A method implements three hooks, called by ``logt.minimize`` through a
:class:`logt._run.Run` (the one place that counts oracle calls and
projections, checks every gradient and iterate, records the trace, calls the
callback and writes checkpoints):

* ``prepare(run) -> dict``: resolve the parameters actually used (rounding, a
  rule such as Theorem 1, possibly spending counted oracle calls); JSON-able,
  reported as ``result.params`` and stored in checkpoints;
* ``init_state(run, params, x0) -> dict``: the driver's state at the start
  (numpy arrays and Python scalars only, so it can be checkpointed);
* ``drive(run, params, state) -> x``: run from ``state`` to the end, calling
  ``run.boundary(state, ...)`` between segments (epochs, trace points, or
  chunks of steps); a run resumed from a checkpoint calls ``drive`` with the
  saved state and finishes bit-identical to an uninterrupted run.
"""
import math
import numbers

__all__ = ["Method", "Option", "register", "get_method", "method_names", "REGISTRY", "GUARD_RECHECK_CALLS",
           "trust_scale_recheck"]

REGISTRY = {}
# before a run is called diverged (logt._run's guard) or out of retries on its trust balls (logT's and AC-SA's auto
# rules), one mean gradient of this many samples (at most the calls left; counted) is drawn at the start point, once
# per run: the scales of both are sample means, which can all miss the few samples that carry the gradient
GUARD_RECHECK_CALLS = 10_000


def trust_scale_recheck(run, st, w, phase):
    """A run out of retries on its trust balls (logT's and AC-SA's auto rules): once per run (``st["rechecked"]``),
    the norm of one counted mean gradient at the segment's start ``w`` (:meth:`logt._run.Run.recheck_gradient_norm`)
    when it is at least ``st["fail_g"]``, the scale whose ball would have held the last failed iterate (the run's
    own means had missed the gradient), else None."""
    if st.get("rechecked", False):            # .get: a checkpoint of an older release resumed
        return None
    st["rechecked"] = True
    gnorm, _ = run.recheck_gradient_norm(w, epoch=st["k"], phase=phase)
    return gnorm if gnorm is not None and gnorm >= st.get("fail_g", math.inf) else None


class Option:
    """One option of a method: a default, a checker ``check(value, name) -> value`` and a doc line."""

    __slots__ = ("default", "check", "doc")

    def __init__(self, default, check=None, doc=""):
        self.default = default
        self.check = check
        self.doc = doc


class Method:
    """Base class of logt's methods; see the module docstring.

    Subclasses set ``name`` (the registry key), ``options`` (name -> Option),
    and the documentation fields ``summary``, ``rate``, ``projections``.
    ``uses_minibatches`` says whether the method averages many oracle samples
    per call (a distributed oracle pays off there).
    """

    name = None
    label = None
    options = {}
    summary = ""
    rate = ""
    projections = ""
    uses_minibatches = False

    def __init__(self, **options):
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            valid = ", ".join(sorted(self.options)) or "none"
            raise TypeError(f"method {self.name!r} has no option(s) {', '.join(map(repr, unknown))}; "
                            f"its options are: {valid}")
        vals = {}
        for key, opt in self.options.items():
            v = options.get(key, opt.default)
            if opt.check is not None and v is not None:
                v = opt.check(v, key)
            vals[key] = v
        self.values = vals
        self._check_combination()

    def _check_combination(self):
        """Checks that involve several options (subclasses)."""

    def __getattr__(self, key):
        values = self.__dict__.get("values")
        if values is not None and key in values:
            return values[key]
        raise AttributeError(f"{type(self).__name__!s} has no attribute {key!r}")

    def __repr__(self):
        changed = [f"{k}={v!r}" for k, v in self.values.items() if v != self.options[k].default]
        return f"{type(self).__name__}({', '.join(changed)})"

    def __eq__(self, other):
        return type(self) is type(other) and self.values == other.values

    def __hash__(self):
        return hash((type(self), tuple(sorted((k, repr(v)) for k, v in self.values.items()))))

    # ---- hooks (subclasses) ---------------------------------------------------
    def prepare(self, run):
        """Resolve the parameters actually used; may spend oracle calls through ``run``."""
        return {}

    def init_state(self, run, params, x0):
        raise NotImplementedError

    def drive(self, run, params, state):
        raise NotImplementedError


def register(cls):
    """Class decorator: add a method class to the registry under ``cls.name``."""
    if not cls.name or cls.name in REGISTRY:
        raise ValueError(f"bad or duplicate method name {cls.name!r}")
    REGISTRY[cls.name] = cls
    return cls


def method_names():
    return tuple(REGISTRY)


def get_method(method, options=None):
    """A ``Method`` instance from a name (+ ``options`` dict) or an instance (no ``options``)."""
    if isinstance(method, Method):
        if options:
            raise TypeError(f"pass options either in the method object {method!r} or in options=, not both")
        return method
    if isinstance(method, type) and issubclass(method, Method):
        return method(**(options or {}))
    if not isinstance(method, str):
        raise TypeError(f"method must be a name ({', '.join(REGISTRY)}) or a logt.methods.Method, "
                        f"got {type(method).__name__}")
    cls = REGISTRY.get(method)
    if cls is None:
        raise ValueError(f"unknown method {method!r}; the methods are: {', '.join(REGISTRY)}")
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise TypeError(f"options must be a dict, got {type(options).__name__}")
    return cls(**options)


# ---- option checkers (shared by the methods) ---------------------------------------
def positive_float(v, name):
    """A finite float > 0."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(v).__name__}")
    v = float(v)
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be finite and > 0, got {v!r}")
    return v


def positive_int(v, name):
    """A whole number >= 1 (an integral float such as 4.0 or 1e3 is accepted)."""
    if isinstance(v, bool):
        raise TypeError(f"{name} must be a whole number, got {v!r}")
    if isinstance(v, numbers.Integral):
        v = int(v)
    elif isinstance(v, numbers.Real) and math.isfinite(float(v)) and float(v) == int(float(v)):
        v = int(float(v))
    else:
        if isinstance(v, numbers.Real):
            raise ValueError(f"{name} must be a whole number, got {v!r}")
        raise TypeError(f"{name} must be a whole number, got {type(v).__name__}")
    if v < 1:
        raise ValueError(f"{name} must be >= 1, got {v}")
    return v


def probability(v, name):
    v = positive_float(v, name)
    if not v < 1:
        raise ValueError(f"{name} must be in (0, 1), got {v!r}")
    return v


def one_of(*choices):
    def check(v, name):
        if v not in choices:
            raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {v!r}")
        return v
    return check
