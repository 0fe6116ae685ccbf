"""scikit-learn is optional: its base classes when installed, small stand-ins otherwise.

With scikit-learn, the estimators derive from ``sklearn.base.BaseEstimator``
(``get_params``/``set_params``, ``clone``, ``repr``, tags, HTML repr) and the
matching mixins, and ``NotFittedError`` is scikit-learn's. Without it the
stand-ins below give the same protocol: parameters read from ``__init__``'s
signature, ``set_params`` rejecting unknown names, a compact ``repr``.
"""
import inspect

try:  # pragma: no branch - which branch runs depends on the environment
    from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin
    from sklearn.exceptions import NotFittedError
    HAVE_SKLEARN = True
except ImportError:  # exercised by tests that hide scikit-learn in a subprocess
    HAVE_SKLEARN = False

    class NotFittedError(ValueError, AttributeError):
        """Raised when an estimator is used before ``fit`` (as scikit-learn's)."""

    class BaseEstimator:
        """Stand-in for ``sklearn.base.BaseEstimator``: the parameter protocol only."""

        @classmethod
        def _get_param_names(cls):
            sig = inspect.signature(cls.__init__)
            return sorted(p.name for p in sig.parameters.values()
                          if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))

        def get_params(self, deep=True):
            """The constructor parameters as a dict (``deep`` is accepted for compatibility)."""
            return {k: getattr(self, k) for k in self._get_param_names()}

        def set_params(self, **params):
            """Set constructor parameters; unknown names raise ValueError. Returns self."""
            valid = self._get_param_names()
            for k, v in params.items():
                if k not in valid:
                    raise ValueError(f"Invalid parameter {k!r} for estimator {type(self).__name__}. "
                                     f"Valid parameters are: {valid}.")
                setattr(self, k, v)
            return self

        def __repr__(self):
            defaults = {k: p.default for k, p in inspect.signature(type(self).__init__).parameters.items()}
            changed = []
            for k, v in self.get_params().items():
                dv = defaults[k]
                same = v is dv or (type(v) is type(dv) and _safe_eq(v, dv))
                if not same:
                    changed.append(f"{k}={v!r}")
            return f"{type(self).__name__}({', '.join(changed)})"

    class ClassifierMixin:
        """Stand-in for ``sklearn.base.ClassifierMixin`` (the estimator type only)."""

        _estimator_type = "classifier"

    class TransformerMixin:
        """Stand-in for ``sklearn.base.TransformerMixin``."""

        def fit_transform(self, X, y=None, **fit_params):
            return self.fit(X, y, **fit_params).transform(X)


def _safe_eq(a, b):
    try:
        return bool(a == b)
    except Exception:      # arrays and other objects without a plain truth value
        return False


__all__ = ["BaseEstimator", "ClassifierMixin", "TransformerMixin", "NotFittedError", "HAVE_SKLEARN"]
